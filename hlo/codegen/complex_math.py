"""Complex transcendentals (COMPLEX_OPS of scalar_ops.py), computed in double precision.

The interpreter computes complex functions with numpy in c128 and rounds to the result
type; here the same functions are built from real ones on (re, im) in f64 and rounded
once. Formulas (z = a + bi):

    sqrt   t = sqrt((|a| + |z|) / 2): (t, b / 2t) for a >= 0, else (|b| / 2t, ±t)
    log    (log |z|, atan2(b, a));   log1p: log |1 + z| via log1p near 0
    expm1  (expm1(a) cos b - 2 sin^2(b/2), e^a sin b)
    sin, cos from the real ones, sinh z = -i sin(iz), cosh z = cos(iz); tanh from (sinh 2a + i sin 2b) /
    (cosh 2a + cos 2b), which tends to ±1 for large |a|; tan z = -i tanh(iz)
    asinh  log(w + sqrt(w^2 + 1)) with w = ±z in the right half-plane (no cancellation);
    asin z = -i asinh(iz), acos z = pi/2 - asin z; atanh = (log1p z - log1p(-z)) / 2,
    atan z = -i atanh(iz); acosh = log(z + sqrt(z + 1) sqrt(z - 1))
    power  exp(y log x), with XLA's special cases (x^0 = 1^y = 1, 0^y, inf^real)
    atan2  -i log((x + iy) / sqrt(x^2 + y^2)), as XLA's evaluator
    sign z / |z| (0 at 0), rsqrt 1 / sqrt z, logistic 1 / (1 + e^-z)
"""
from __future__ import annotations

import math

from llvmlite import ir

from ..opcodes import Op
from .scalar_ops import COMPLEX_OPS, call_math, declare_overloaded, make_complex, parts
from .types import F64, compute_type

ZERO, ONE = ir.Constant(F64, 0.0), ir.Constant(F64, 1.0)


class Complex:
    """Complex arithmetic in f64 on (re, im) pairs with one builder."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.b = ctx.b

    def real(self, op: Op, *args):
        return call_math(self.ctx, op, list(args), F64)

    def intrinsic(self, name: str, *args):
        return self.b.call(declare_overloaded(self.ctx.module, name, F64, list(args)), list(args))

    def hypot(self, x, y):
        fn = self.ctx.module.globals.get("hypot")
        if fn is None:
            fn = ir.Function(self.ctx.module, ir.FunctionType(F64, [F64, F64]), name="hypot")
        return self.b.call(fn, [x, y])

    def const(self, v: float):
        return ir.Constant(F64, v)

    # -- arithmetic
    def add(self, z, w):
        return self.b.fadd(z[0], w[0]), self.b.fadd(z[1], w[1])

    def sub(self, z, w):
        return self.b.fsub(z[0], w[0]), self.b.fsub(z[1], w[1])

    def mul(self, z, w):
        b = self.b
        return (b.fsub(b.fmul(z[0], w[0]), b.fmul(z[1], w[1])), b.fadd(b.fmul(z[0], w[1]), b.fmul(z[1], w[0])))

    def div(self, z, w):
        b = self.b
        d = b.fadd(b.fmul(w[0], w[0]), b.fmul(w[1], w[1]))
        re = b.fdiv(b.fadd(b.fmul(z[0], w[0]), b.fmul(z[1], w[1])), d)
        im = b.fdiv(b.fsub(b.fmul(z[1], w[0]), b.fmul(z[0], w[1])), d)
        return re, im

    def neg(self, z):
        return self.b.fneg(z[0]), self.b.fneg(z[1])

    def select(self, cond, z, w):
        return self.b.select(cond, z[0], w[0]), self.b.select(cond, z[1], w[1])

    # -- functions
    def exp(self, z):
        e = self.real(Op.EXPONENTIAL, z[0])
        return self.b.fmul(e, self.real(Op.COSINE, z[1])), self.b.fmul(e, self.real(Op.SINE, z[1]))

    def sqrt(self, z):
        a, c = z
        r = self.hypot(a, c)
        t = self.intrinsic("llvm.sqrt", self.b.fmul(self.b.fadd(self.intrinsic("llvm.fabs", a), r), self.const(0.5)))
        two_t = self.b.fmul(t, self.const(2.0))
        right = (t, self.b.fdiv(c, two_t))
        left = (self.b.fdiv(self.intrinsic("llvm.fabs", c), two_t), self.intrinsic("llvm.copysign", t, c))
        value = self.select(self.b.fcmp_unordered("uge", a, ZERO), right, left)
        return self.select(self.b.fcmp_ordered("==", r, ZERO), (ZERO, c), value)

    def log(self, z):
        return self.real(Op.LOG, self.hypot(*z)), self.real(Op.ATAN2, z[1], z[0])

    def log1p(self, z):
        b = self.b
        a, c = z
        shifted = b.fadd(a, ONE)
        near = b.fmul(self.real(Op.LOG_PLUS_ONE, b.fadd(b.fmul(a, b.fadd(a, self.const(2.0))), b.fmul(c, c))),
                      self.const(0.5))
        far = self.real(Op.LOG, self.hypot(shifted, c))
        small = b.fcmp_ordered("<", self.hypot(a, c), self.const(0.5))
        return b.select(small, near, far), self.real(Op.ATAN2, c, shifted)


def _i(c: Complex, z):
    """i z."""
    return c.b.fneg(z[1]), z[0]


def _minus_i(c: Complex, z):
    """-i z."""
    return z[1], c.b.fneg(z[0])


def _tanh(c: Complex, z):
    b = c.b
    a, y = z
    two_a, two_y = b.fmul(a, c.const(2.0)), b.fmul(y, c.const(2.0))
    d = b.fadd(c.real(Op.COSH, two_a), c.real(Op.COSINE, two_y))
    near = (b.fdiv(c.real(Op.SINH, two_a), d), b.fdiv(c.real(Op.SINE, two_y), d))
    # |a| > 20: cosh 2a = e^{2|a|} / 2 to double precision (and would overflow further out)
    tail = b.fmul(c.real(Op.SINE, two_y),
                  b.fmul(c.const(2.0), c.real(Op.EXPONENTIAL, b.fmul(c.intrinsic("llvm.fabs", a), c.const(-2.0)))))
    far = (c.intrinsic("llvm.copysign", ONE, a), tail)
    return c.select(b.fcmp_ordered(">", c.intrinsic("llvm.fabs", a), c.const(20.0)), far, near)


def _asinh(c: Complex, z):
    b = c.b
    flip = b.fcmp_ordered("<", z[0], ZERO)
    w = c.select(flip, c.neg(z), z)
    square = c.mul(w, w)
    r = c.log(c.add(w, c.sqrt((b.fadd(square[0], ONE), square[1]))))
    return c.select(flip, c.neg(r), r)


def _atanh(c: Complex, z):
    b = c.b
    d = c.sub(c.log1p(z), c.log1p(c.neg(z)))
    return b.fmul(d[0], c.const(0.5)), b.fmul(d[1], c.const(0.5))


def _power(c: Complex, x, y):
    b = c.b
    value = c.exp(c.mul(y, c.log(x)))
    x_zero = b.and_(b.fcmp_ordered("==", x[0], ZERO), b.fcmp_ordered("==", x[1], ZERO))
    y_real = b.fcmp_ordered("==", y[1], ZERO)
    y_positive_real = b.and_(y_real, b.fcmp_ordered(">", y[0], ZERO))
    nan = c.const(float("nan"))
    value = c.select(x_zero, c.select(y_positive_real, (ZERO, ZERO), (nan, nan)), value)
    x_inf = b.and_(b.fcmp_ordered("==", x[0], c.const(float("inf"))), b.fcmp_ordered("==", x[1], ZERO))
    value = c.select(b.and_(x_inf, y_positive_real), x, value)
    y_negative_real = b.and_(y_real, b.fcmp_ordered("<", y[0], ZERO))
    value = c.select(b.and_(x_inf, y_negative_real), (ZERO, ZERO), value)
    one = b.or_(b.and_(b.fcmp_ordered("==", x[0], ONE), b.fcmp_ordered("==", x[1], ZERO)),
                b.and_(b.fcmp_ordered("==", y[0], ZERO), b.fcmp_ordered("==", y[1], ZERO)))
    return c.select(one, (ONE, ZERO), value)


def _atan2(c: Complex, y, x):
    numerator = c.add(x, _i(c, y))
    square = c.add(c.mul(x, x), c.mul(y, y))
    return _minus_i(c, c.log(c.div(numerator, c.sqrt(square))))


def _sign(c: Complex, z):
    b = c.b
    m = c.hypot(*z)
    safe = b.select(b.fcmp_ordered("==", m, ZERO), ONE, m)
    return c.select(b.fcmp_ordered("==", m, ZERO), (ZERO, ZERO), (b.fdiv(z[0], safe), b.fdiv(z[1], safe)))


def _expm1(c: Complex, z):
    b = c.b
    a, y = z
    s = c.real(Op.SINE, b.fmul(y, c.const(0.5)))
    re = b.fsub(b.fmul(c.real(Op.EXPONENTIAL_MINUS_ONE, a), c.real(Op.COSINE, y)), b.fmul(c.const(2.0), b.fmul(s, s)))
    return re, b.fmul(c.real(Op.EXPONENTIAL, a), c.real(Op.SINE, y))


def _trig(c: Complex, op: Op, z):
    a, y = z
    b = c.b
    sa, ca = c.real(Op.SINE, a), c.real(Op.COSINE, a)
    shy, chy = c.real(Op.SINH, y), c.real(Op.COSH, y)
    if op == Op.SINE:
        return b.fmul(sa, chy), b.fmul(ca, shy)
    return b.fmul(ca, chy), b.fneg(b.fmul(sa, shy))


_UNARY = {
    Op.SQRT: lambda c, z: c.sqrt(z),
    Op.RSQRT: lambda c, z: c.div((ONE, ZERO), c.sqrt(z)),
    Op.LOG: lambda c, z: c.log(z),
    Op.LOG_PLUS_ONE: lambda c, z: c.log1p(z),
    Op.EXPONENTIAL_MINUS_ONE: _expm1,
    Op.SINE: lambda c, z: _trig(c, Op.SINE, z),
    Op.COSINE: lambda c, z: _trig(c, Op.COSINE, z),
    Op.TAN: lambda c, z: _minus_i(c, _tanh(c, _i(c, z))),
    Op.SINH: lambda c, z: _minus_i(c, _trig(c, Op.SINE, _i(c, z))),   # sinh z = -i sin(iz)
    Op.COSH: lambda c, z: _trig(c, Op.COSINE, _i(c, z)),               # cosh z = cos(iz)
    Op.TANH: _tanh,
    Op.ASINH: _asinh,
    Op.ASIN: lambda c, z: _minus_i(c, _asinh(c, _i(c, z))),
    Op.ACOS: lambda c, z: _acos(c, z),
    Op.ATANH: _atanh,
    Op.ATAN: lambda c, z: _minus_i(c, _atanh(c, _i(c, z))),
    Op.ACOSH: lambda c, z: c.log(c.add(z, c.mul(c.sqrt((c.b.fadd(z[0], ONE), z[1])),
                                                c.sqrt((c.b.fsub(z[0], ONE), z[1]))))),
    Op.SIGN: _sign,
    Op.LOGISTIC: lambda c, z: c.div((ONE, ZERO), c.add((ONE, ZERO), c.exp(c.neg(z)))),
}
_BINARY = {Op.POWER: _power, Op.ATAN2: _atan2}


def _acos(c: Complex, z):
    s = _minus_i(c, _asinh(c, _i(c, z)))
    return c.b.fsub(c.const(math.pi / 2), s[0]), c.b.fneg(s[1])


def _wide(b, value):
    re, im = parts(b, value)
    if re.type == F64:
        return re, im
    return b.fpext(re, F64), b.fpext(im, F64)


@COMPLEX_OPS.register(_UNARY, _BINARY)
def _complex_function(ctx, op, t, args):
    c = Complex(ctx)
    b = ctx.b
    wide = [_wide(b, a) for a in args]
    re, im = _UNARY[op](c, wide[0]) if op in _UNARY else _BINARY[op](c, *wide)
    ty = compute_type(t)
    part = ty.elements[0]
    if part != F64:
        re, im = b.fptrunc(re, part), b.fptrunc(im, part)
    return make_complex(b, ty, re, im)
