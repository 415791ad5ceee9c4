"""The LLVM function being emitted: its builder, an alloca block, loops and the memo of values.

Values computed inside an inner loop or branch must not be reused after it, so the memo
of computed values (elemental.py) is a stack of scopes: every loop, branch and scalar
computation pushes one (`scope()`).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Optional

from llvmlite import ir

from ..shapes import Shape
from .types import I64, add_i64, mul_i64


def const64(v: int):
    return ir.Constant(I64, int(v))


def major_to_minor(shape: Shape) -> list[int]:
    return list(reversed(shape.minor_to_major()))


def row_major_offset(b: ir.IRBuilder, index, sizes) -> ir.Value:
    """The linear position of `index` in a row-major array of `sizes` (i64)."""
    linear = const64(0)
    for i, size in zip(index, sizes):
        linear = add_i64(b, mul_i64(b, linear, size), i)
    return linear


def new_loop_id(module: ir.Module, hint: str, value: Optional[bool] = None, *more: str):
    """A new loop id (metadata for a loop's back edge; loop ids refer to themselves) carrying a
    hint, e.g. llvm.loop.unroll.disable, or llvm.loop.vectorize.enable with True or False, and
    any further hints without a value."""
    count = getattr(module, "_hlo_loop_ids", 0) + 1
    module._hlo_loop_ids = count
    operands = [ir.MetaDataString(module, hint)]
    if value is not None:
        operands.append(ir.Constant(ir.IntType(1), int(value)))
    hints = [module.add_metadata(operands)] + [module.add_metadata([ir.MetaDataString(module, h)]) for h in more]
    tag = module.add_metadata([ir.MetaDataString(module, f"hlo.loop.{count}")])   # keeps each id distinct
    loop = module.add_metadata(hints + [tag])
    loop.operands = (loop,) + tuple(loop.operands)
    loop.keeps_rolled = ROLLED in (hint, *more)   # FunctionContext.loop keeps the loops around it rolled
    return loop


ROLLED = "llvm.loop.unroll.disable"


class FunctionContext:
    """The function being emitted: its builder, an alloca block, loop helpers and the memo."""

    def __init__(self, module: ir.Module, function: ir.Function):
        self.module = module
        self.function = function
        self.alloca_block = function.append_basic_block("allocas")
        start = function.append_basic_block("start")
        self.b = ir.IRBuilder(start)
        self.alloca_builder = ir.IRBuilder(self.alloca_block)
        self.start_block = start
        self.memo_scopes: list[dict] = [{}]
        self.globals: dict = {}
        # > 0 while emitting a reduction's combiner: float adds/multiplies may be
        # reassociated, which lets LLVM keep several (vector) accumulators.
        self.reassociate = 0
        self._open_loops: list[list] = []   # per loop being emitted: [whether a loop inside is kept rolled]

    def finish(self) -> None:
        self.alloca_builder.branch(self.start_block)

    def alloca(self, ty: ir.Type, name: str = "acc"):
        return self.alloca_builder.alloca(ty, name=name)

    # -- memo
    @contextmanager
    def scope(self):
        """A memo scope: values computed inside are forgotten at its end."""
        self.memo_scopes.append({})
        try:
            yield
        finally:
            self.memo_scopes.pop()

    def memo_get(self, key):
        for scope in reversed(self.memo_scopes):
            if key in scope:
                return scope[key]
        return None

    def memo_put(self, key, value) -> None:
        self.memo_scopes[-1][key] = value

    # -- control flow
    def _blocks(self, name: str, *parts: str) -> list:
        return [self.function.append_basic_block(f"{name}.{part}") for part in parts]

    def _enter_loop(self, name: str):
        """The header, body and exit blocks of a loop, positioned at the header."""
        header, body, done = self._blocks(name, "header", "body", "done")
        self.b.branch(header)
        self.b.position_at_end(header)
        return header, body, done

    def _close_loop(self, header, done, loop_id=None) -> None:
        back_edge = self.b.branch(header)
        if loop_id is not None:
            back_edge.set_metadata("llvm.loop", loop_id)
        self.b.position_at_end(done)

    @contextmanager
    def loop(self, count, name: str = "i", start=None, step: int = 1, loop_id=None):
        """for (i = start; i < count; i += step): yields i (i64) inside the body; loop_id: metadata
        for the loop's back edge (e.g. do not unroll). One known step from 0 is no loop: i is 0 (a
        window's or a shape's dims of size 1 left LLVM nests of one-trip loops to clean up)."""
        b = self.b
        if isinstance(count, int) and count == 1 and (start is None or (isinstance(start, int) and start == 0)):
            with self.scope():
                yield const64(0)
            return
        count = count if isinstance(count, ir.Value) else const64(count)
        start = const64(0) if start is None else (start if isinstance(start, ir.Value) else const64(start))
        pre = b.block
        header, body, done = self._enter_loop(name)
        index = b.phi(I64, name=name)
        index.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", index, count), body, done)
        b.position_at_end(body)
        self._open_loops.append([False])
        with self.scope():
            yield index
        rolled_inside = self._open_loops.pop()[0]
        if loop_id is None and rolled_inside:
            # Copies of a loop kept rolled (vectorised) gain nothing, and unrolled small loops
            # around it multiplied LLVM's work (a 2 x 8 nest around a sum: 41x the code).
            loop_id = new_loop_id(self.module, ROLLED)
        if self._open_loops and getattr(loop_id, "keeps_rolled", False):
            self._open_loops[-1][0] = True
        index.add_incoming(b.add(index, const64(step), flags=["nsw"]), b.block)
        self._close_loop(header, done, loop_id)

    @contextmanager
    def while_loop(self, condition: Callable[[], ir.Value], name: str = "while"):
        """while (condition()) { body }: condition is emitted in the loop header."""
        header, body, done = self._enter_loop(name)
        with self.scope():
            self.b.cbranch(condition(), body, done)
            self.b.position_at_end(body)
            yield
        self._close_loop(header, done)

    @contextmanager
    def if_then(self, condition, name: str = "if"):
        b = self.b
        if isinstance(condition, ir.Constant) and condition.constant == 1:   # always: no branch
            with self.scope():
                yield
            return
        then, done = self._blocks(name, "then", "done")
        b.cbranch(condition, then, done)
        b.position_at_end(then)
        with self.scope():
            yield
        b.branch(done)
        b.position_at_end(done)

    def loop_nest(self, dims, order=None, loop_id=None, roll_outer: bool = False):
        """Nested loops over dims (outermost first in `order`, default 0..n-1); a context manager.
        loop_id(): metadata for each loop's back edge, when given. roll_outer: every loop but the
        innermost is kept rolled (a copy or output nest: unrolled small outer loops only copied
        the loop inside, up to ten times LLVM's work)."""
        return _LoopNest(self, dims, order, loop_id, roll_outer)


class _LoopNest:
    def __init__(self, ctx: FunctionContext, dims, order, loop_id=None, roll_outer: bool = False):
        self.ctx, self.dims, self.loop_id, self.roll_outer = ctx, list(dims), loop_id, roll_outer
        self.order = list(order) if order is not None else list(range(len(self.dims)))
        self.stack = []

    def __enter__(self):
        index = [const64(0)] * len(self.dims)
        for k, d in enumerate(self.order):
            outer = self.roll_outer and k < len(self.order) - 1
            loop_id = new_loop_id(self.ctx.module, ROLLED) if outer else (self.loop_id() if self.loop_id else None)
            cm = self.ctx.loop(self.dims[d], name=f"d{d}", loop_id=loop_id)
            index[d] = cm.__enter__()
            self.stack.append(cm)
        return tuple(index)

    def __exit__(self, *exc):
        for cm in reversed(self.stack):
            cm.__exit__(*exc)
        return False
