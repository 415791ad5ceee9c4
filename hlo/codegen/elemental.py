"""Per-element IR generation: the value of an instruction at a multi-dimensional index.

`ElementalEmitter.value(inst, index)` returns the LLVM value (compute type, see
types.py) of `inst` at `index` (a tuple of i64 values). Materialised instructions
are loaded from their buffers; fused instructions are computed on the spot,
recursing into their producers, so one fusion becomes one loop nest. Data movement
ops (broadcast, transpose, reshape, slice, pad, concatenate, reverse, dynamic-slice,
gather) are index arithmetic; reduce, reduce-window, dot and convolution emit their
inner loops at the point of use with accumulators held in allocas (mem2reg turns
them into registers).

Values computed inside an inner loop must not be reused after it, so the memo of
computed values is a stack of scopes pushed around every emitted loop.
"""
from __future__ import annotations

import math
from contextlib import contextmanager
from typing import Callable, Optional

from llvmlite import ir

from ..attributes import ConvDims, DotDims, GatherDims
from ..diagnostics import error
from ..ir import Computation, Instruction
from ..shapes import F32 as _F32, F64 as _F64, PrimitiveType, Shape
from . import scalar_ops
from .types import I1, I64, compute_type, constant_of, load_element, round_to
from ..opcodes import Op


def const64(v: int):
    return ir.Constant(I64, int(v))


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

    def finish(self) -> None:
        self.alloca_builder.branch(self.start_block)

    def alloca(self, ty: ir.Type, name: str = "acc"):
        return self.alloca_builder.alloca(ty, name=name)

    @contextmanager
    def loop(self, count, name: str = "i", start=None, step: int = 1):
        """for (i = start; i < count; i += step): yields i (i64) inside the body."""
        b = self.b
        count = count if isinstance(count, ir.Value) else const64(count)
        start = const64(0) if start is None else (start if isinstance(start, ir.Value) else const64(start))
        pre = b.block
        header = self.function.append_basic_block(f"{name}.header")
        body = self.function.append_basic_block(f"{name}.body")
        done = self.function.append_basic_block(f"{name}.done")
        b.branch(header)
        b.position_at_end(header)
        index = b.phi(I64, name=name)
        index.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", index, count), body, done)
        b.position_at_end(body)
        self.memo_scopes.append({})
        try:
            yield index
        finally:
            self.memo_scopes.pop()
        index.add_incoming(b.add(index, const64(step), flags=["nsw"]), b.block)
        b.branch(header)
        b.position_at_end(done)

    @contextmanager
    def if_then(self, condition, name: str = "if"):
        b = self.b
        then = self.function.append_basic_block(f"{name}.then")
        done = self.function.append_basic_block(f"{name}.done")
        b.cbranch(condition, then, done)
        b.position_at_end(then)
        self.memo_scopes.append({})
        try:
            yield
        finally:
            self.memo_scopes.pop()
        b.branch(done)
        b.position_at_end(done)

    @contextmanager
    def while_loop(self, condition: Callable[[], ir.Value], name: str = "while"):
        """while (condition()) { body }: condition is emitted in the loop header."""
        b = self.b
        header = self.function.append_basic_block(f"{name}.header")
        body = self.function.append_basic_block(f"{name}.body")
        done = self.function.append_basic_block(f"{name}.done")
        b.branch(header)
        b.position_at_end(header)
        self.memo_scopes.append({})
        b.cbranch(condition(), body, done)
        b.position_at_end(body)
        try:
            yield
        finally:
            self.memo_scopes.pop()
        b.branch(header)
        b.position_at_end(done)

    def loop_nest(self, dims, order=None):
        """Nested loops over dims (outermost first in `order`, default 0..n-1); a context manager."""
        return _LoopNest(self, dims, order)

    def memo_get(self, key):
        for scope in reversed(self.memo_scopes):
            if key in scope:
                return scope[key]
        return None

    def memo_put(self, key, value) -> None:
        self.memo_scopes[-1][key] = value


class _LoopNest:
    def __init__(self, ctx: FunctionContext, dims, order):
        self.ctx, self.dims = ctx, list(dims)
        self.order = list(order) if order is not None else list(range(len(self.dims)))
        self.stack = []

    def __enter__(self):
        index = [const64(0)] * len(self.dims)
        for d in self.order:
            cm = self.ctx.loop(self.dims[d], name=f"d{d}")
            index[d] = cm.__enter__()
            self.stack.append(cm)
        return tuple(index)

    def __exit__(self, *exc):
        for cm in reversed(self.stack):
            cm.__exit__(*exc)
        return False


def major_to_minor(shape: Shape) -> list[int]:
    return list(reversed(shape.minor_to_major()))


def _key(index) -> tuple:
    return tuple(id(v) if not isinstance(v, ir.Constant) else ("c", v.constant) for v in index)


class ElementalEmitter:
    """Computes instruction values element by element; see the module docstring.

    buffer_of(inst) -> pointer or None: where a materialised instruction lives.
    bindings: parameter instructions of fused/scalar computations -> generator(index).
    """

    def __init__(self, ctx: FunctionContext, buffer_of: Callable[[Instruction], Optional[ir.Value]]):
        self.ctx = ctx
        self.buffer_of = buffer_of
        self.bindings: dict[int, Callable] = {}

    @property
    def b(self) -> ir.IRBuilder:
        return self.ctx.b

    # -- entry points
    def value(self, inst: Instruction, index):
        key = (id(inst), _key(index))
        cached = self.ctx.memo_get(key)
        if cached is not None:
            return cached
        result = self._compute(inst, tuple(index))
        self.ctx.memo_put(key, result)
        return result

    def bind_fusion(self, fusion: Instruction) -> None:
        """Make the fused computation's parameters read the fusion's operands."""
        body = fusion.attrs["calls"]
        for param in body.parameters:
            operand = fusion.operands[param.attrs["parameter_number"]]
            self.bindings[id(param)] = (lambda op: lambda index: self.value(op, index))(operand)

    def call_scalar(self, comp: Computation, args: list) -> list:
        """Emit a scalar computation inline on LLVM scalar values; its root leaves' values."""
        for param in comp.parameters:
            arg = args[param.attrs["parameter_number"]]
            self.bindings[id(param)] = (lambda v: lambda index: v)(arg)
        self.ctx.memo_scopes.append({})
        try:
            root = comp.root
            if root.opcode == Op.TUPLE:
                return [self.value(op, ()) for op in root.operands]
            return [self.value(root, ())]
        finally:
            self.ctx.memo_scopes.pop()

    # -- dispatch
    def _compute(self, inst: Instruction, index):
        binding = self.bindings.get(id(inst))
        if binding is not None:
            return binding(index)
        pointer = self.buffer_of(inst)
        if pointer is not None:
            return load_element(self.b, pointer, inst.shape, index)
        return self._compute_uncached(inst, index)

    def _compute_uncached(self, inst: Instruction, index):
        """The value computed from the operands (never loaded from inst's own buffer)."""
        op = inst.opcode
        method = getattr(self, "_op_" + op.replace("-", "_"), None)
        if method is not None:
            return method(inst, index)
        if op in scalar_ops.UNARY or op in scalar_ops.BINARY:
            args = [self.value(o, index) for o in inst.operands]
            t = inst.operands[0].shape.element_type
            return scalar_ops.emit(self.ctx, inst, op, t, args)
        raise error(f"the cpu backend cannot compute '{op}' element by element "
                    f"(%{inst.name})", inst.loc)

    # -- leaves
    def _op_constant(self, inst, index):
        literal = inst.attrs["literal"]
        array = literal.array
        t = inst.shape.element_type
        if inst.shape.rank == 0:
            scalar = array.reshape(())
            if t.is_complex:
                return constant_of(t, complex(scalar))
            return constant_of(t, scalar.item() if t.name not in ("bf16", "f16") else float(scalar))
        return load_element(self.b, self._constant_global(inst), inst.shape, index)

    def _constant_global(self, inst):
        found = self.ctx.globals.get(id(inst))
        if found is not None:
            return found
        import numpy as np
        shape = inst.shape
        array = np.asarray(inst.attrs["literal"].array)
        physical = np.transpose(array, list(reversed(shape.minor_to_major()))) if shape.rank else array
        data = np.ascontiguousarray(physical).tobytes()
        ty = ir.ArrayType(ir.IntType(8), len(data))
        g = ir.GlobalVariable(self.ctx.module, ty, name=f"const.{len(self.ctx.globals)}.{inst.name}")
        g.global_constant = True
        g.linkage = "internal"
        g.align = 64
        g.initializer = ir.Constant(ty, bytearray(data))
        self.ctx.globals[id(inst)] = g
        return g

    def _op_iota(self, inst, index):
        position = index[inst.attrs["iota_dimension"]]
        return self._from_i64(position, inst.shape.element_type)

    def _from_i64(self, value, t: PrimitiveType):
        b = self.b
        ty = compute_type(t)
        if t.is_float:
            return round_to(b, b.sitofp(value, ty), t)
        if t.is_pred:
            return b.icmp_signed("!=", value, const64(0))
        return b.trunc(value, ty) if ty.width < 64 else value

    # -- elementwise with attributes
    def _op_compare(self, inst, index):
        x, y = (self.value(o, index) for o in inst.operands)
        t = inst.operands[0].shape.element_type
        return scalar_ops.compare(self.b, x, y, t, inst.attrs["direction"], inst.attrs.get("type"))

    def _op_select(self, inst, index):
        p, on_true, on_false = inst.operands
        pred = self.value(p, index if p.shape.rank else ())
        return self.b.select(pred, self.value(on_true, index), self.value(on_false, index))

    def _op_clamp(self, inst, index):
        lo, x, hi = inst.operands
        t = x.shape.element_type
        lo_v = self.value(lo, index if lo.shape.rank else ())
        hi_v = self.value(hi, index if hi.shape.rank else ())
        v = scalar_ops.max_min(self.b, "maximum", lo_v, self.value(x, index), t)
        return scalar_ops.max_min(self.b, "minimum", v, hi_v, t)

    def _op_convert(self, inst, index):
        src = inst.operands[0]
        return scalar_ops.convert(self.b, self.value(src, index), src.shape.element_type, inst.shape.element_type)

    def _op_bitcast_convert(self, inst, index):
        src = inst.operands[0]
        frm, to = src.shape.element_type, inst.shape.element_type
        b = self.b
        if frm.bits < to.bits:  # the operand's extra minor dimension holds the pieces, low first
            wide = ir.IntType(to.bits)
            bits = ir.Constant(wide, 0)
            for k in range(to.bits // frm.bits):
                piece = scalar_ops.to_bits(b, self.value(src, tuple(index) + (const64(k),)), frm)
                bits = b.or_(bits, b.shl(b.zext(piece, wide), ir.Constant(wide, k * frm.bits)))
            return scalar_ops.from_bits(b, bits, to)
        if frm.bits > to.bits:  # the result's extra minor dimension selects the piece
            wide = ir.IntType(frm.bits)
            whole = scalar_ops.to_bits(b, self.value(src, tuple(index[:-1])), frm)
            shift = b.mul(b.trunc(index[-1], wide) if frm.bits < 64 else index[-1], ir.Constant(wide, to.bits))
            piece = b.trunc(b.lshr(whole, shift), ir.IntType(to.bits))
            return scalar_ops.from_bits(b, piece, to)
        stored = scalar_ops.to_bits(b, self.value(src, index), frm)
        return scalar_ops.from_bits(b, stored, to)

    def _op_complex(self, inst, index):
        re, im = (self.value(o, index) for o in inst.operands)
        return scalar_ops.make_complex(self.b, compute_type(inst.shape.element_type), re, im)

    def _op_real(self, inst, index):
        v = self.value(inst.operands[0], index)
        return self.b.extract_value(v, 0) if inst.operands[0].shape.element_type.is_complex else v

    def _op_imag(self, inst, index):
        src = inst.operands[0]
        v = self.value(src, index)
        if src.shape.element_type.is_complex:
            return self.b.extract_value(v, 1)
        return ir.Constant(v.type, 0.0)

    def _op_copy(self, inst, index):
        return self.value(inst.operands[0], index)

    def _op_map(self, inst, index):
        args = [self.value(o, index) for o in inst.operands]
        return self.call_scalar(inst.attrs["to_apply"], args)[0]

    def _op_reduce_precision(self, inst, index):
        raise error("the cpu backend does not support reduce-precision", inst.loc)

    # -- data movement as index arithmetic
    def _op_broadcast(self, inst, index):
        dims = inst.attrs.get("dimensions", ())
        return self.value(inst.operands[0], tuple(index[d] for d in dims))

    def _op_transpose(self, inst, index):
        perm = inst.attrs["dimensions"]
        src = [None] * len(perm)
        for i, p in enumerate(perm):
            src[p] = index[i]
        return self.value(inst.operands[0], tuple(src))

    def _op_reshape(self, inst, index):
        src = inst.operands[0]
        return self.value(src, self._relinearize(index, inst.shape, list(range(inst.shape.rank)),
                                                 src.shape, list(range(src.shape.rank))))

    def _op_bitcast(self, inst, index):
        src = inst.operands[0]
        frm, to = src.shape.element_type, inst.shape.element_type
        if frm.bits != to.bits:
            raise error(f"the cpu backend does not support bitcast between {frm.name} and {to.name}", inst.loc)
        value = self.value(src, self._relinearize(index, inst.shape, major_to_minor(inst.shape),
                                                  src.shape, major_to_minor(src.shape)))
        if frm is to:
            return value
        return scalar_ops.from_bits(self.b, scalar_ops.to_bits(self.b, value, frm), to)

    def _relinearize(self, index, out_shape: Shape, out_order, in_shape: Shape, in_order):
        """The in_shape index with the same linear position (dims taken in the given orders)."""
        b = self.b
        if list(out_shape.dims) == list(in_shape.dims) and out_order == in_order:
            return tuple(index)
        linear = const64(0)
        for d in out_order:
            linear = b.add(b.mul(linear, const64(out_shape.dims[d])), index[d])
        result = [const64(0)] * in_shape.rank
        for d in reversed(in_order):
            size = in_shape.dims[d]
            if size == 1:
                continue
            result[d] = b.urem(linear, const64(size))
            linear = b.udiv(linear, const64(size))
        return tuple(result)

    def _op_slice(self, inst, index):
        b = self.b
        src = []
        for i, (start, _limit, stride) in zip(index, inst.attrs["slice"]):
            v = i if stride == 1 else b.mul(i, const64(stride))
            src.append(v if start == 0 else b.add(v, const64(start)))
        return self.value(inst.operands[0], tuple(src))

    def _op_reverse(self, inst, index):
        dims = set(inst.attrs["dimensions"])
        src = tuple(self.b.sub(const64(inst.shape.dims[d] - 1), i) if d in dims else i
                    for d, i in enumerate(index))
        return self.value(inst.operands[0], src)

    def _op_pad(self, inst, index):
        b = self.b
        operand, padding_value = inst.operands
        inside = ir.Constant(I1, 1)
        src = []
        for d, (i, (lo, _hi, interior)) in enumerate(zip(index, inst.attrs["padding"])):
            t = b.sub(i, const64(lo))
            step = interior + 1
            q = t if step == 1 else b.sdiv(t, const64(step))
            ok = b.and_(b.icmp_signed(">=", t, const64(0)), b.icmp_signed("<", q, const64(operand.shape.dims[d])))
            if step != 1:
                ok = b.and_(ok, b.icmp_signed("==", b.srem(t, const64(step)), const64(0)))
            inside = b.and_(inside, ok)
            src.append(b.select(ok, q, const64(0)))
        pad = self.value(padding_value, ())
        return self._guarded(inside, lambda: self.value(operand, tuple(src)), pad, inst.shape.element_type)

    def _guarded(self, condition, compute, otherwise, t: PrimitiveType):
        """compute() where condition holds, else `otherwise`, with real control flow."""
        ctx, b = self.ctx, self.b
        slot = ctx.alloca(compute_type(t), "guard")
        b.store(otherwise, slot)
        with ctx.if_then(condition, "guard"):
            b.store(compute(), slot)
        return b.load(slot)

    def _op_concatenate(self, inst, index):
        b, ctx = self.b, self.ctx
        dim = inst.attrs["dimensions"][0]
        slot = ctx.alloca(compute_type(inst.shape.element_type), "concat")
        done = ctx.function.append_basic_block("concat.done")
        offset = 0
        for operand in inst.operands:
            size = operand.shape.dims[dim]
            here = ctx.function.append_basic_block("concat.part")
            nxt = ctx.function.append_basic_block("concat.next")
            b.cbranch(b.icmp_signed("<", index[dim], const64(offset + size)), here, nxt)
            b.position_at_end(here)
            ctx.memo_scopes.append({})
            src = list(index)
            src[dim] = b.sub(index[dim], const64(offset))
            b.store(self.value(operand, tuple(src)), slot)
            ctx.memo_scopes.pop()
            b.branch(done)
            b.position_at_end(nxt)
            offset += size
        b.branch(done)
        b.position_at_end(done)
        return b.load(slot)

    def _start_indices(self, inst, first: int, operand_shape: Shape, sizes):
        """Clamped dynamic start indices (i64) read from scalar operands first.. ."""
        b = self.b
        starts = []
        for d in range(operand_shape.rank):
            op = inst.operands[first + d]
            v = scalar_ops.to_i64(b, self.value(op, ()), op.shape.element_type)
            hi = const64(operand_shape.dims[d] - sizes[d])
            v = b.select(b.icmp_signed("<", v, const64(0)), const64(0), v)
            starts.append(b.select(b.icmp_signed(">", v, hi), hi, v))
        return starts

    def _op_dynamic_slice(self, inst, index):
        operand = inst.operands[0]
        starts = self._start_indices(inst, 1, operand.shape, inst.shape.dims)
        return self.value(operand, tuple(self.b.add(s, i) for s, i in zip(starts, index)))

    def _op_dynamic_update_slice(self, inst, index):
        b = self.b
        operand, update = inst.operands[:2]
        starts = self._start_indices(inst, 2, operand.shape, update.shape.dims)
        inside = ir.Constant(I1, 1)
        src = []
        for d, (i, s) in enumerate(zip(index, starts)):
            rel = b.sub(i, s)
            ok = b.and_(b.icmp_signed(">=", rel, const64(0)), b.icmp_signed("<", rel, const64(update.shape.dims[d])))
            inside = b.and_(inside, ok)
            src.append(b.select(ok, rel, const64(0)))
        t = inst.shape.element_type
        return self._guarded(inside, lambda: self.value(update, tuple(src)), self.value(operand, index), t)

    def _op_gather(self, inst, index):
        b = self.b
        operand, indices = inst.operands
        g = GatherDims.of(inst)
        sizes = inst.attrs["slice_sizes"]
        out_rank = inst.shape.rank
        batch_dims = [d for d in range(out_rank) if d not in g.offset_dims]
        # The start-index vector of this output element's batch position.
        batch_index = [index[d] for d in batch_dims]
        ind_rank = indices.shape.rank
        index_vector_dim = g.index_vector_dim
        ind_idx = list(batch_index)
        if index_vector_dim < ind_rank:
            ind_idx.insert(index_vector_dim, None)
        starts = [const64(0)] * operand.shape.rank
        for k, od in enumerate(g.start_index_map):
            position = [const64(k) if v is None else v for v in ind_idx]
            v = scalar_ops.to_i64(b, self.value(indices, tuple(position)), indices.shape.element_type)
            hi = const64(operand.shape.dims[od] - sizes[od])
            v = b.select(b.icmp_signed("<", v, const64(0)), const64(0), v)
            starts[od] = b.select(b.icmp_signed(">", v, hi), hi, v)
        # Batching dims of the operand take the matching index batch position.
        batch_positions = [d for d in range(ind_rank) if d != index_vector_dim]
        for od, idim in zip(g.operand_batching_dims, g.start_indices_batching_dims):
            starts[od] = batch_index[batch_positions.index(idim)]
        window_dims = [d for d in range(operand.shape.rank)
                       if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims]
        src = list(starts)
        for od, out_d in zip(window_dims, g.offset_dims):
            src[od] = b.add(starts[od], index[out_d])
        return self.value(operand, tuple(src))

    # -- reductions and contractions (inner loops at the point of use)
    def _op_reduce(self, inst, index):
        values = self.reduce_values(inst, index)
        return values if inst.shape.is_tuple else values[0]

    def _op_get_tuple_element(self, inst, index):
        """A leaf of a multi-result op computed element by element (variadic reduce)."""
        source = inst.operands[0]
        if source.opcode not in ("reduce", "reduce-window") or self.buffer_of(source) is not None:
            raise error(f"the cpu backend cannot compute get-tuple-element of '{source.opcode}' "
                        f"element by element", inst.loc)
        return self.value(source, index)[inst.attrs["index"]]

    def reduce_values(self, inst, index) -> list:
        """All results of a (possibly variadic) reduce at an output index."""
        ctx, b = self.ctx, self.b
        n = len(inst.operands) // 2
        inputs, inits = inst.operands[:n], inst.operands[n:]
        reduced = sorted(inst.attrs["dimensions"])
        in_shape = inputs[0].shape
        kept = [d for d in range(in_shape.rank) if d not in reduced]
        types = [i.shape.element_type for i in inputs]
        slots = [ctx.alloca(compute_type(t), "acc") for t in types]
        for slot, init in zip(slots, inits):
            b.store(self.value(init, ()), slot)
        order = [d for d in major_to_minor(in_shape) if d in reduced]
        with ctx.loop_nest([in_shape.dims[d] for d in reduced], [reduced.index(d) for d in order]) as inner:
            src = [None] * in_shape.rank
            for d, v in zip(kept, index):
                src[d] = v
            for d, v in zip(reduced, inner):
                src[d] = v
            current = [b.load(s) for s in slots]
            new = [self.value(x, tuple(src)) for x in inputs]
            ctx.reassociate += 1
            try:
                combined = self.call_scalar(inst.attrs["to_apply"], current + new)
            finally:
                ctx.reassociate -= 1
            for slot, v in zip(slots, combined):
                b.store(v, slot)
        return [b.load(s) for s in slots]

    def _op_reduce_window(self, inst, index):
        ctx, b = self.ctx, self.b
        n = len(inst.operands) // 2
        operands, inits = inst.operands[:n], inst.operands[n:]
        shape = operands[0].shape
        window = inst.attrs["window"]
        slots = [ctx.alloca(compute_type(o.shape.element_type), "acc") for o in operands]
        for slot, init in zip(slots, inits):
            b.store(self.value(init, ()), slot)
        with ctx.loop_nest([wd.size for wd in window.dims]) as w:
            inside = ir.Constant(I1, 1)
            src = []
            for d, (o, k, wd) in enumerate(zip(index, w, window.dims)):
                pos = b.sub(b.add(b.mul(o, const64(wd.stride)), b.mul(k, const64(wd.window_dilation))),
                            const64(wd.padding_low))
                q = pos if wd.base_dilation == 1 else b.sdiv(pos, const64(wd.base_dilation))
                ok = b.and_(b.icmp_signed(">=", pos, const64(0)),
                            b.icmp_signed("<", q, const64(shape.dims[d])))
                if wd.base_dilation != 1:
                    ok = b.and_(ok, b.icmp_signed("==", b.srem(pos, const64(wd.base_dilation)), const64(0)))
                inside = b.and_(inside, ok)
                src.append(b.select(ok, q, const64(0)))
            with ctx.if_then(inside, "window"):
                current = [b.load(slot) for slot in slots]
                values = [self.value(o, tuple(src)) for o in operands]
                for slot, v in zip(slots, self.call_scalar(inst.attrs["to_apply"], current + values)):
                    b.store(v, slot)
        results = [b.load(slot) for slot in slots]
        return results if inst.shape.is_tuple else results[0]

    def _op_dot(self, inst, index):
        ctx, b = self.ctx, self.b
        lhs, rhs = inst.operands
        dd = DotDims.of(inst)
        t = inst.shape.element_type
        lhs_free = dd.lhs_free(lhs.shape.rank)
        rhs_free = dd.rhs_free(rhs.shape.rank)
        nb = len(dd.lhs_batch)
        li, ri = [None] * lhs.shape.rank, [None] * rhs.shape.rank
        for k, (l, r) in enumerate(zip(dd.lhs_batch, dd.rhs_batch)):
            li[l] = ri[r] = index[k]
        for k, d in enumerate(lhs_free):
            li[d] = index[nb + k]
        for k, d in enumerate(rhs_free):
            ri[d] = index[nb + len(lhs_free) + k]
        slot = ctx.alloca(compute_type(t), "acc")
        b.store(constant_of(t, 0), slot)
        sizes = [lhs.shape.dims[d] for d in dd.lhs_contracting]
        with ctx.loop_nest(sizes) as c:
            for k, (l, r) in enumerate(zip(dd.lhs_contracting, dd.rhs_contracting)):
                li[l] = ri[r] = c[k]
            x = self._convert_to(self.value(lhs, tuple(li)), lhs.shape.element_type, t)
            y = self._convert_to(self.value(rhs, tuple(ri)), rhs.shape.element_type, t)
            ctx.reassociate += 1
            b.store(self._multiply_add(b.load(slot), x, y, t), slot)
            ctx.reassociate -= 1
        return round_to(b, b.load(slot), t)

    def _convert_to(self, value, frm: PrimitiveType, to: PrimitiveType):
        if frm is to:
            return value
        return scalar_ops.convert(self.b, value, frm, to)

    def _multiply_add(self, acc, x, y, t: PrimitiveType):
        b = self.b
        if t.is_complex:
            product = scalar_ops._complex_op(self.ctx, None, "multiply", t, [x, y])
            return scalar_ops._complex_op(self.ctx, None, "add", t, [acc, product])
        if t.is_pred:
            return b.or_(acc, b.and_(x, y))
        if t.is_float:
            flags = ["contract", "reassoc"] if self.ctx.reassociate else ["contract"]
            return b.fadd(acc, b.fmul(x, y, flags=flags), flags=flags)
        return b.add(acc, b.mul(x, y))

    def _op_convolution(self, inst, index):
        ctx, b = self.ctx, self.b
        lhs, rhs = inst.operands
        cd = inst.attrs["dim_labels"]
        if not isinstance(cd, ConvDims):
            cd = ConvDims.parse(str(cd))
        window = inst.attrs.get("window")
        groups = inst.attrs.get("feature_group_count", 1) or 1
        if (inst.attrs.get("batch_group_count", 1) or 1) != 1:
            raise error("the cpu backend does not support convolution with batch_group_count > 1", inst.loc)
        t = inst.shape.element_type
        n_sp = cd.num_spatial
        wdims = window.dims if window is not None else ()
        in_features = lhs.shape.dims[cd.input_feature] // groups
        out_features = rhs.shape.dims[cd.kernel_output_feature]
        per_group_out = out_features // groups
        out_f = index[cd.output_feature]
        group = b.sdiv(out_f, const64(per_group_out)) if groups > 1 else None
        slot = ctx.alloca(compute_type(t), "acc")
        b.store(constant_of(t, 0), slot)
        sizes = [rhs.shape.dims[cd.kernel_spatial[k]] for k in range(n_sp)] + [in_features]
        with ctx.loop_nest(sizes) as loops:
            li, ri = [None] * lhs.shape.rank, [None] * rhs.shape.rank
            li[cd.input_batch] = index[cd.output_batch]
            feature = loops[n_sp]
            li[cd.input_feature] = feature if group is None else b.add(b.mul(group, const64(in_features)), feature)
            ri[cd.kernel_input_feature] = feature
            ri[cd.kernel_output_feature] = out_f
            inside = ir.Constant(I1, 1)
            for k in range(n_sp):
                wd = wdims[k] if k < len(wdims) else None
                stride, pad_lo = (wd.stride, wd.padding_low) if wd else (1, 0)
                wdil, bdil = (wd.window_dilation, wd.base_dilation) if wd else (1, 1)
                kpos = loops[k]
                ksize = rhs.shape.dims[cd.kernel_spatial[k]]
                kernel_index = b.sub(const64(ksize - 1), kpos) if wd and wd.window_reversal else kpos
                ri[cd.kernel_spatial[k]] = kernel_index
                pos = b.sub(b.add(b.mul(index[cd.output_spatial[k]], const64(stride)),
                                  b.mul(kpos, const64(wdil))), const64(pad_lo))
                q = pos if bdil == 1 else b.sdiv(pos, const64(bdil))
                ok = b.and_(b.icmp_signed(">=", pos, const64(0)),
                            b.icmp_signed("<", q, const64(lhs.shape.dims[cd.input_spatial[k]])))
                if bdil != 1:
                    ok = b.and_(ok, b.icmp_signed("==", b.srem(pos, const64(bdil)), const64(0)))
                inside = b.and_(inside, ok)
                li[cd.input_spatial[k]] = b.select(ok, q, const64(0))
            with ctx.if_then(inside, "conv"):
                x = self._convert_to(self.value(lhs, tuple(li)), lhs.shape.element_type, t)
                y = self._convert_to(self.value(rhs, tuple(ri)), rhs.shape.element_type, t)
                b.store(self._multiply_add(b.load(slot), x, y, t), slot)
        return round_to(b, b.load(slot), t)

    # -- fft as a direct DFT (O(N^2) per transform, in double precision)
    def _op_fft(self, inst, index):
        ctx, b = self.ctx, self.b
        operand = inst.operands[0]
        kind = inst.attrs["fft_type"]
        lengths = list(inst.attrs["fft_length"])
        rank = inst.shape.rank
        first = rank - len(lengths)
        f64 = ir.DoubleType()
        re_slot, im_slot = ctx.alloca(f64, "fft.re"), ctx.alloca(f64, "fft.im")
        b.store(ir.Constant(f64, 0.0), re_slot)
        b.store(ir.Constant(f64, 0.0), im_slot)
        sign = 1.0 if kind in ("IFFT", "IRFFT") else -1.0
        with ctx.loop_nest(lengths) as n:
            src = list(index[:first]) + list(n)
            phase = ir.Constant(f64, 0.0)
            for k, m, size in zip(index[first:], n, lengths):
                turn = b.srem(b.mul(k, m), const64(size))  # exact: angles from integer turns
                phase = b.fadd(phase, b.fdiv(b.sitofp(turn, f64), ir.Constant(f64, float(size))))
            angle = b.fmul(phase, ir.Constant(f64, sign * 2 * math.pi))
            cos = scalar_ops.call_math(ctx, "cosine", [angle], f64)
            sin = scalar_ops.call_math(ctx, "sine", [angle], f64)
            re, im = self._fft_input(inst, operand, src, first, lengths)
            b.store(b.fadd(b.load(re_slot), b.fsub(b.fmul(re, cos), b.fmul(im, sin))), re_slot)
            b.store(b.fadd(b.load(im_slot), b.fadd(b.fmul(re, sin), b.fmul(im, cos))), im_slot)
        re, im = b.load(re_slot), b.load(im_slot)
        if kind in ("IFFT", "IRFFT"):
            scale = ir.Constant(f64, 1.0 / math.prod(lengths))
            re, im = b.fmul(re, scale), b.fmul(im, scale)
        t = inst.shape.element_type
        if kind == "IRFFT":
            return scalar_ops.convert(b, re, _F64, t)
        part = _F64 if t.name == "c128" else _F32
        cast = (lambda v: v) if part is _F64 else (lambda v: b.fptrunc(v, ir.FloatType()))
        return scalar_ops.make_complex(b, compute_type(t), cast(re), cast(im))

    def _fft_input(self, inst, operand, src, first, lengths):
        """(re, im) in f64 of the transform's input at src (IRFFT: Hermitian extension)."""
        b = self.b
        t = operand.shape.element_type
        f64 = ir.DoubleType()
        if not t.is_complex:
            return scalar_ops.convert(b, self.value(operand, tuple(src)), t, _F64), ir.Constant(f64, 0.0)
        from ..shapes import real_type_of
        part = real_type_of(t)
        if inst.attrs["fft_type"] != "IRFFT":
            re, im = scalar_ops.parts(b, self.value(operand, tuple(src)))
            return scalar_ops.convert(b, re, part, _F64), scalar_ops.convert(b, im, part, _F64)
        last = src[-1]
        stored = operand.shape.dims[-1]
        mirrored = b.icmp_signed(">=", last, const64(stored))
        flipped = list(src)
        for d in range(first, len(src)):
            size = const64(lengths[d - first])
            flipped[d] = b.srem(b.sub(size, src[d]), size)
        position = tuple(b.select(mirrored, f, s) for f, s in zip(flipped, src))
        re, im = scalar_ops.parts(b, self.value(operand, position))
        re, im = scalar_ops.convert(b, re, part, _F64), scalar_ops.convert(b, im, part, _F64)
        return re, b.select(mirrored, b.fneg(im), im)
