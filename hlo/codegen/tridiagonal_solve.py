"""`tridiagonal_solve_perturbed_ffi` in compiled code: jaxlib's perturbed tridiagonal solve.

The steps of hlo/interpreter/tridiagonal_solve.py (which says what the target computes), in
the same order and element type, for every system of the batch: elimination with partial
pivoting keeping U's three diagonals in scratch memory, then back substitution with
xLAGTS's pivot perturbation. Operands are read whatever their layouts (elem.value).
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np
from llvmlite import ir

from ..diagnostics import error, written_name
from ..ir import Instruction
from ..opcodes import Op
from ..shapes import real_type_of
from . import scalar_ops
from .buffers import leaves_of
from .function_context import const64
from .special_kernels import CUSTOM_CALL_SCRATCH, CUSTOM_CALLS
from .types import I1, I8, compute_type, constant_of, store_element

TARGET = "tridiagonal_solve_perturbed_ffi"
_TYPES = ("f32", "f64", "c64", "c128")


def _check(inst: Instruction) -> None:
    shapes = [o.shape for o in inst.operands]
    problem = None
    if len(shapes) != 4:
        problem = f"expects 4 operands (dl, d, du, b), got {len(shapes)}"
    elif len({s.element_type for s in shapes}) != 1 or shapes[0].element_type.name not in _TYPES:
        problem = "the operands must have one element type among f32, f64, c64, c128"
    elif shapes[3].rank < 2 or not all(tuple(s.dims) == tuple(shapes[3].dims[:-1]) for s in shapes[:3]):
        problem = "dl, d and du must be [..., n] and b [..., n, k]"
    elif inst.shape.is_tuple or inst.shape.dims != shapes[3].dims or inst.shape.element_type != shapes[3].element_type:
        problem = "the result must have b's shape"
    if problem:
        raise error(f"custom-call %{written_name(inst.loc, inst.name)}: {TARGET}: {problem}", inst.loc)


def scratch_bytes(inst: Instruction) -> int:
    """U's three diagonals, x (row-major n x k) and one row."""
    _check(inst)
    b = inst.operands[3].shape
    n, k = b.dims[-2:]
    return (3 * n + n * k + k) * b.element_type.byte_size + 64


class _Solver:
    def __init__(self, low, inst: Instruction):
        self.low, self.inst, self.b, self.ctx = low, inst, low.b, low.ctx
        shape = inst.operands[3].shape
        self.n, self.k = shape.dims[-2:]
        self.t, self.r = shape.element_type, real_type_of(shape.element_type)
        self.ty, self.rty = compute_type(self.t), compute_type(self.r)
        info = np.finfo(np.dtype(self.r.dtype))
        small = info.dtype.type(1) / info.max
        safemin = info.tiny if small < info.tiny else small * (1 + info.eps)
        self.eps, self.safemin, self.bignum = (ir.Constant(self.rty, float(v)) for v in (info.eps, safemin, 1 / safemin))
        base = low.pointer(low.a.scratch[id(inst)])
        size = self.t.byte_size
        self.u = base
        self.x = self.b.gep(base, [const64(3 * self.n * size)], source_etype=I8)
        self.row = self.b.gep(base, [const64((3 * self.n + self.n * self.k) * size)], source_etype=I8)
        self.out = leaves_of(low.a.values[id(inst)])[0]

    # -- scalars
    def op(self, op: Op, *args):
        if op == Op.DIVIDE and self.t.is_complex:
            return self.complex_divide(*args)
        return scalar_ops.emit(self.ctx, self.inst, op, self.t, list(args))

    def complex_divide(self, x, y):
        """Smith's division, as numpy's (no overflow or underflow for tiny or huge divisors)."""
        b = self.b
        (xr, xi), (yr, yi) = scalar_ops.parts(b, x), scalar_ops.parts(b, y)
        ar, ai = self.abs_real(yr), self.abs_real(yi)
        zero, one = ir.Constant(self.rty, 0.0), ir.Constant(self.rty, 1.0)
        real_larger = b.fcmp_ordered(">=", ar, ai)
        both_zero = b.and_(b.fcmp_ordered("==", ar, zero), b.fcmp_ordered("==", ai, zero))
        rat = b.fdiv(yi, yr)                    # |yr| >= |yi|
        scale = b.fdiv(one, b.fadd(yr, b.fmul(yi, rat)))
        first = (b.fmul(b.fadd(xr, b.fmul(xi, rat)), scale), b.fmul(b.fsub(xi, b.fmul(xr, rat)), scale))
        by_zero = (b.fdiv(xr, ar), b.fdiv(xi, ar))
        rat2 = b.fdiv(yr, yi)                   # |yi| > |yr|
        scale2 = b.fdiv(one, b.fadd(yi, b.fmul(yr, rat2)))
        second = (b.fmul(b.fadd(b.fmul(xr, rat2), xi), scale2), b.fmul(b.fsub(b.fmul(xi, rat2), xr), scale2))
        parts = [b.select(real_larger, b.select(both_zero, z, f), s) for z, f, s in zip(by_zero, first, second)]
        return scalar_ops.make_complex(b, self.ty, *parts)

    def abs(self, v):
        return scalar_ops.emit(self.ctx, self.inst, Op.ABS, self.t if self.t.is_complex else self.r, [v])

    def real_part(self, v):
        return self.b.extract_value(v, 0) if self.t.is_complex else v

    def is_zero(self, v):
        if not self.t.is_complex:
            return self.b.fcmp_ordered("==", v, ir.Constant(self.rty, 0.0))
        re, im = scalar_ops.parts(self.b, v)
        zero = ir.Constant(self.rty, 0.0)
        return self.b.and_(self.b.fcmp_ordered("==", re, zero), self.b.fcmp_ordered("==", im, zero))

    def plus_real(self, v, s):
        if not self.t.is_complex:
            return self.b.fadd(v, s)
        re, im = scalar_ops.parts(self.b, v)
        return scalar_ops.make_complex(self.b, self.ty, self.b.fadd(re, s), im)

    def times_real(self, v, s):
        if not self.t.is_complex:
            return self.b.fmul(v, s)
        re, im = scalar_ops.parts(self.b, v)
        return scalar_ops.make_complex(self.b, self.ty, self.b.fmul(re, s), self.b.fmul(im, s))

    def copysign(self, magnitude, sign_of):
        fn = scalar_ops.declare_overloaded(self.ctx.module, "llvm.copysign", self.rty, [magnitude, magnitude])
        return self.b.call(fn, [magnitude, self.real_part(sign_of)])

    def larger(self, a, c):
        """std::max(a, c) on reals."""
        return self.b.select(self.b.fcmp_ordered("<", a, c), c, a)

    def less(self, a, c):
        return self.b.fcmp_ordered("<", a, c)

    def slot(self, value, ty=None):
        slot = self.ctx.alloca(ty or value.type, "tsolve")
        self.b.store(value, slot)
        return slot

    # -- memory
    def at(self, base, offset):
        return self.b.gep(base, [offset if isinstance(offset, ir.Value) else const64(offset)], source_etype=self.ty)

    def u_at(self, i, j):
        return self.at(self.u, self.b.add(self.b.mul(self.index(i), const64(3)), const64(j)))

    def x_at(self, i, c):
        return self.at(self.x, self.b.add(self.b.mul(self.index(i), const64(self.k)), c))

    def load(self, pointer):
        return self.b.load(pointer, typ=self.ty)

    @staticmethod
    def index(i):
        return i if isinstance(i, ir.Value) else const64(i)

    @contextmanager
    def columns(self):
        with self.ctx.loop(self.k, "tsolve.c") as c:
            yield c

    def branch(self, condition):
        """if / else as two guarded blocks: (then, otherwise) context managers."""
        return self.ctx.if_then(condition, "tsolve.then"), self.ctx.if_then(self.b.not_(condition), "tsolve.else")

    # -- the algorithm
    def emit(self) -> None:
        if self.n == 0 or self.k == 0:
            return   # an empty result
        batch_dims = self.inst.operands[3].shape.dims[:-2]
        with self.ctx.loop_nest(batch_dims) as batch:
            self.batch = tuple(batch)
            if self.n == 1:
                self.single()
            else:
                self.eliminate()
                self.back_substitute()
            with self.ctx.loop(self.n, "tsolve.i") as i:
                with self.columns() as c:
                    store_element(self.b, self.load(self.x_at(i, c)), self.low.pointer(self.out), self.out.shape,
                                  self.batch + (i, c))

    def diagonal(self, which: int, i):
        return self.low.elem.value(self.inst.operands[which], self.batch + (self.index(i),))

    def rhs(self, i, c):
        return self.low.elem.value(self.inst.operands[3], self.batch + (self.index(i), c))

    def single(self) -> None:
        with self.columns() as c:
            self.b.store(self.rhs(0, c), self.at(self.row, c))
        pivot = self.diagonal(1, 0)
        pivot = self.maybe_perturb(self.b.fmul(self.eps, self.abs(pivot)), pivot)
        with self.columns() as c:
            self.b.store(self.op(Op.DIVIDE, self.load(self.at(self.row, c)), pivot), self.x_at(0, c))

    def eliminate(self) -> None:
        b, n = self.b, self.n
        with self.ctx.loop(3 * n, "tsolve.zero") as i:
            b.store(constant_of(self.t, 0), self.at(self.u, i))
        d0, du0 = self.diagonal(1, 0), self.diagonal(2, 0)
        b.store(d0, self.u_at(0, 0))
        b.store(du0, self.u_at(0, 1))
        self.max_abs_u = self.slot(self.larger(self.abs(d0), self.abs(du0)))
        self.scale1 = self.slot(b.fadd(self.abs(d0), self.abs(du0)))
        with self.columns() as c:
            b.store(self.rhs(0, c), self.x_at(0, c))
        with self.ctx.loop(n - 1, "tsolve.k") as k:
            self.elimination_step(k, b.add(k, const64(1)))

    def elimination_step(self, k, k1) -> None:
        b = self.b
        not_last = b.icmp_signed("<", k, const64(self.n - 2))
        d1, du1, sub = self.diagonal(1, k1), self.diagonal(2, k1), self.diagonal(0, k1)
        b.store(d1, self.u_at(k1, 0))
        scale2 = b.fadd(self.abs(sub), self.abs(d1))
        scale2 = b.select(not_last, b.fadd(scale2, self.abs(du1)), scale2)
        zero_sub, nonzero_sub = self.branch(self.is_zero(sub))
        with zero_sub:
            b.store(scale2, self.scale1)
            b.store(du1, self.u_at(k1, 1))
            b.store(constant_of(self.t, 0), self.u_at(k, 2))
            with self.columns() as c:
                b.store(self.rhs(k1, c), self.x_at(k1, c))
        with nonzero_sub:
            pivot = self.load(self.u_at(k, 0))
            piv1 = b.select(self.is_zero(pivot), ir.Constant(self.rty, 0.0),
                            b.fdiv(self.abs(pivot), b.load(self.scale1)))
            piv2 = b.fdiv(self.abs(sub), scale2)
            keep, exchange = self.branch(b.fcmp_ordered("<=", piv2, piv1))
            with keep:
                self.keep_rows(k, k1, pivot, sub, du1, scale2)
            with exchange:
                self.exchange_rows(k, k1, pivot, sub, d1, du1, not_last)
        with self.ctx.if_then(not_last, "tsolve.max"):
            largest = b.load(self.max_abs_u)
            for j in range(3):
                largest = self.larger(largest, self.abs(self.load(self.u_at(k, j))))
            b.store(largest, self.max_abs_u)

    def keep_rows(self, k, k1, pivot, sub, du1, scale2) -> None:
        b = self.b
        b.store(scale2, self.scale1)
        factor = self.op(Op.DIVIDE, sub, pivot)
        below = self.u_at(k1, 0)
        b.store(self.op(Op.SUBTRACT, self.load(below), self.op(Op.MULTIPLY, factor, self.load(self.u_at(k, 1)))),
                below)
        b.store(du1, self.u_at(k1, 1))
        b.store(constant_of(self.t, 0), self.u_at(k, 2))
        with self.columns() as c:
            b.store(self.op(Op.SUBTRACT, self.rhs(k1, c), self.op(Op.MULTIPLY, factor, self.load(self.x_at(k, c)))),
                    self.x_at(k1, c))

    def exchange_rows(self, k, k1, pivot, sub, d1, du1, not_last) -> None:
        b = self.b
        factor = self.op(Op.DIVIDE, pivot, sub)
        upper = self.load(self.u_at(k, 1))
        b.store(sub, self.u_at(k, 0))
        b.store(self.op(Op.SUBTRACT, upper, self.op(Op.MULTIPLY, factor, d1)), self.u_at(k1, 0))
        b.store(d1, self.u_at(k, 1))
        with self.ctx.if_then(not_last, "tsolve.fill"):
            b.store(du1, self.u_at(k, 2))
            b.store(self.op(Op.MULTIPLY, self.op(Op.NEGATE, factor), du1), self.u_at(k1, 1))
        with self.columns() as c:
            old = self.load(self.x_at(k, c))
            rhs = self.rhs(k1, c)
            b.store(self.op(Op.SUBTRACT, old, self.op(Op.MULTIPLY, factor, rhs)), self.x_at(k1, c))
            b.store(rhs, self.x_at(k, c))
        b.store(b.fadd(self.abs(self.load(self.u_at(k1, 0))), self.abs(self.load(self.u_at(k1, 1)))), self.scale1)

    def back_substitute(self) -> None:
        b, n = self.b, self.n
        largest = self.larger(b.load(self.max_abs_u), self.abs(self.load(self.u_at(n - 1, 0))))
        perturb = b.fmul(self.eps, largest)
        with self.ctx.loop(n, "tsolve.back") as step:
            k = b.sub(const64(n - 1), step)
            k1, k2 = b.add(k, const64(1)), b.add(k, const64(2))
            has1, has2 = b.icmp_signed("<", k1, const64(n)), b.icmp_signed("<", k2, const64(n))
            u1, u2 = self.load(self.u_at(k, 1)), self.load(self.u_at(k, 2))
            with self.columns() as c:
                value = self.load(self.x_at(k, c))
                b.store(value, self.at(self.row, c))
                with self.ctx.if_then(has1, "tsolve.minus1"):
                    b.store(self.op(Op.SUBTRACT, self.load(self.at(self.row, c)),
                                    self.op(Op.MULTIPLY, u1, self.load(self.x_at(k1, c)))), self.at(self.row, c))
                with self.ctx.if_then(has2, "tsolve.minus2"):
                    b.store(self.op(Op.SUBTRACT, self.load(self.at(self.row, c)),
                                    self.op(Op.MULTIPLY, u2, self.load(self.x_at(k2, c)))), self.at(self.row, c))
            pivot = self.load(self.u_at(k, 0))
            signed = self.copysign(perturb, pivot)
            pivot = self.maybe_perturb(b.select(has1, signed, perturb), pivot)
            inverse = self.op(Op.DIVIDE, constant_of(self.t, 1), pivot)
            with self.columns() as c:
                b.store(self.op(Op.MULTIPLY, self.load(self.at(self.row, c)), inverse), self.x_at(k, c))

    def maybe_perturb(self, perturb, pivot):
        """The pivot after xLAGTS's perturbation; scales the row in scratch when it is tiny."""
        b, ctx = self.b, self.ctx
        one = ir.Constant(self.rty, 1.0)
        pivot_slot = self.slot(pivot)
        with ctx.if_then(self.less(self.abs(pivot), one), "tsolve.perturb"):
            magnitude = self.abs_real(perturb)
            magnitude = b.select(self.less(magnitude, self.safemin), self.safemin, magnitude)
            step = self.slot(self.copysign(magnitude, pivot))
            max_factor = self.row_max()
            size = self.slot(self.abs(pivot))
            going = self.slot(ir.Constant(I1, 1))
            with ctx.while_loop(lambda: b.and_(self.less(b.load(size), one), b.load(going)), "tsolve.perturb_loop"):
                current = b.load(size)
                tiny, normal = self.branch(self.less(current, self.safemin))
                with tiny:
                    bump, scale = self.branch(b.or_(b.fcmp_ordered("==", current, ir.Constant(self.rty, 0.0)),
                                                    b.fcmp_ordered(">", b.fmul(max_factor, self.safemin), current)))
                    with bump:
                        self.bump(pivot_slot, step)
                    with scale:
                        b.store(self.times_real(self.load(pivot_slot), self.bignum), pivot_slot)
                        with self.columns() as c:
                            b.store(self.times_real(self.load(self.at(self.row, c)), self.bignum), self.at(self.row, c))
                        b.store(ir.Constant(I1, 0), going)
                with normal:
                    bump, stop = self.branch(b.fcmp_ordered(">", max_factor, b.fmul(current, self.bignum)))
                    with bump:
                        self.bump(pivot_slot, step)
                    with stop:
                        b.store(ir.Constant(I1, 0), going)
                b.store(self.abs(self.load(pivot_slot)), size)
        return self.load(pivot_slot)

    def bump(self, pivot_slot, step) -> None:
        b = self.b
        b.store(self.plus_real(self.load(pivot_slot), b.load(step)), pivot_slot)
        b.store(b.fmul(b.load(step), ir.Constant(self.rty, 2.0)), step)

    def abs_real(self, v):
        return scalar_ops.emit(self.ctx, self.inst, Op.ABS, self.r, [v])

    def row_max(self):
        """max |row[c]| folded as std::max from row[0] (0 for no columns)."""
        b = self.b
        if self.k == 0:
            return ir.Constant(self.rty, 0.0)
        acc = self.slot(self.abs(self.load(self.at(self.row, 0))))
        with self.columns() as c:
            b.store(self.larger(b.load(acc), self.abs(self.load(self.at(self.row, c)))), acc)
        return b.load(acc)


def emit_tridiagonal_solve_perturbed(low, inst: Instruction) -> None:
    _check(inst)
    _Solver(low, inst).emit()


CUSTOM_CALLS[TARGET] = emit_tridiagonal_solve_perturbed
CUSTOM_CALL_SCRATCH[TARGET] = scratch_bytes
