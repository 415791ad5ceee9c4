"""Vectorisable approximations of transcendental functions, emitted as LLVM IR.

LLVM lowers `exp`, `log`, `sin` ... to scalar libm calls that the loop vectoriser
cannot widen (30x slower than vector code here). This module emits them instead
as straight-line, branch-free IR: range reduction (Cody-Waite constants,
frexp/ldexp by bit manipulation), a minimax polynomial evaluated with
`llvm.fmuladd`, and `select`s for the special values, so that a loop calling
them vectorises.

Two ways to use it, both for f32/f64 scalars and for vectors of them:

    y = emit_exp(builder, x)                   # inline IR at the builder
    fn = math_function(module, "exp", x.type)  # internal alwaysinline @hlo.exp.f32
    y = builder.call(fn, [x])                  # inlined before the vectoriser runs

Functions: exp, log, log1p, expm1, tanh, logistic, erf, sin, cos, tan (unary) and
pow (binary); helpers emit_frexp / emit_ldexp. f32 pow and f32 sin/cos/tan work
in f64 internally (wider range reduction, exact log2*y). FUNCTIONS maps the
names to the emitters (scalar_ops.MATHLIB_FUNCTIONS maps HLO opcodes to the names).
Special values follow C99/libm: NaN propagates,
exp/expm1 overflow to inf and underflow through the subnormals, log(0) = -inf,
log(<0) = NaN, tanh/erf/logistic saturate exactly, pow follows C99 Annex F.

Accuracy (max error in ulps against a float64 / long double reference, and the
input ranges where it holds) is in ACCURACY and docs/MATH.md, measured by
benchmarks/math_accuracy.py (JIT kernels applying each function to a numpy array,
references, stratified sweeps, ulp error) and enforced by tests/codegen/test_mathlib.py
with the same measurement.

Polynomial coefficients are minimax fits (Remez exchange in 50-digit mpmath,
docs/MATH.md shows how) of the reduced functions named next to each table.
"""
from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

# --------------------------------------------------------------------------- constants

LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
TWO_OVER_PI = 0.6366197723675814
# pi/2 as the sum of three doubles (each the rounded remainder of the previous).
PIO2 = (1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33)


@dataclass(frozen=True)
class _Width:
    """Facts and coefficient tables of one float width."""

    bits: int
    mant_bits: int          # explicit mantissa bits
    bias: int
    ln2_hi: float           # ln2 with trailing zero bits: n*ln2_hi is exact for |n| < 2^(width-hi bits)
    ln2_lo: float
    exp_lo: float           # exp(exp_lo) rounds to 0, exp(exp_hi) overflows
    exp_hi: float
    expm1_lo: float         # expm1(x) rounds to -1 below this
    expm1_hi: float         # clamp keeping 2^(n-1) finite; expm1 overflows above
    sin_tiny: float         # sin(x) rounds to x below this
    sqrt_half_bits: int
    exp_q: tuple            # (e^r - 1 - r)/r^2 on |r| <= ln2/2
    log_r: tuple            # (log((1+s)/(1-s))/s - 2)/s^2 in z = s^2, s^2 <= (3-2*sqrt2)^2
    sin_s: tuple            # (sin r - r)/r^3 in z = r^2, |r| <= pi/4
    cos_c: tuple            # (cos r - 1 + r^2/2)/r^4 in z = r^2
    erf_a: tuple            # erf(x)/x in z = x^2, x in [0, 1]
    erf_a0_lo: float        # erf_a[0] - (erf_a[0] rounded to this width)
    erf_hi: float           # erf(x) rounds to 1 above this (clamp of the erfc branch)
    erfc_center: tuple      # per piece: t = x - center
    erfc_split: float       # x below: first piece, else second (f64 only)
    erfc_g: tuple           # per piece: exp(x^2)*erfc(x) in t, minimax in absolute erfc error


F32 = _Width(
    bits=32, mant_bits=23, bias=127,
    ln2_hi=0.693145751953125, ln2_lo=1.428606765330187e-06,
    exp_lo=-104.0, exp_hi=89.0, expm1_lo=-30.0, expm1_hi=88.8, sin_tiny=2.0 ** -12,
    sqrt_half_bits=0x3F3504F3,
    exp_q=(0.5000000013379545, 0.16666666532367688, 0.041666465527623785, 0.008333360714371737,
           0.0013933597584655623, 0.0001985779957720597),
    log_r=(0.6666668509998345, 0.3998876404802299, 0.29580511676209204),
    sin_s=(-0.1666666666381726, 0.008333331863659003, -0.0001984008196781378, 2.7249411184024675e-06),
    cos_c=(0.041666666664301015, -0.0013888887666142602, 2.480059784146906e-05, -2.730068539933503e-07),
    erf_a=(1.1283791657267128, -0.3761262582421308, 0.11283585148406229, -0.026853811927888313,
           0.005188327673700397, -0.0008010193533785524, 7.853861088974778e-05),
    erf_a0_lo=5.9205106373028116e-08,
    erf_hi=4.0, erfc_center=(2.5,), erfc_split=4.0,
    erfc_g=((0.21080631297744615, -0.0743473707917538, 0.024939361311674433, -0.008000936651091145,
             0.002461316617701564, -0.0007361388159046232, 0.0002193926798094296, -5.543664832103679e-05,
             1.081729246805108e-05, -5.9944760712014135e-06, 2.343244875125474e-06),),
)

F64 = _Width(
    bits=64, mant_bits=52, bias=1023,
    ln2_hi=0.6931471805598903, ln2_lo=5.497923018708371e-14,
    exp_lo=-746.0, exp_hi=710.0, expm1_lo=-40.0, expm1_hi=709.8, sin_tiny=2.0 ** -27,
    sqrt_half_bits=0x3FE6A09E667F3BCD,
    exp_q=(0.5, 0.1666666666666667, 0.041666666666666616, 0.008333333333326167, 0.0013888888888917957,
           0.0001984126987472075, 2.480158724574152e-05, 2.7557255514300346e-06, 2.755734962084805e-07,
           2.5105173597718e-08, 2.0889373341260575e-09),
    log_r=(0.6666666666666666, 0.4000000000000088, 0.28571428570801927, 0.22222222392057886,
           0.18181795606713405, 0.15386241369290582, 0.1326873193801664, 0.13087026274351785),
    sin_s=(-0.16666666666666666, 0.008333333333333331, -0.00019841269841265027, 2.7557319219313417e-06,
           -2.5052106224404795e-08, 1.6058530460900768e-10, -7.586634576417055e-13),
    cos_c=(0.041666666666666664, -0.0013888888888888887, 2.4801587301584632e-05, -2.7557319221393507e-07,
           2.087675578816992e-09, -1.1470460468437119e-11, 4.7458492611362646e-14),
    erf_a=(1.1283791670955126, -0.3761263890318352, 0.11283791670944185, -0.026866170643111448,
           0.00522397760611833, -0.0008548325929308515, 0.0001205529357674167, -1.492471229925613e-05,
           1.6447131540297694e-06, -1.6206313540173915e-07, 1.3710979522503812e-08, -7.779466963980758e-10),
    erf_a0_lo=7.093300710044314e-18,
    erf_hi=6.0, erfc_center=(1.75, 4.25), erfc_split=2.5,
    erfc_g=((0.28497223473743644, -0.13097634551448806, 0.055763630087065266, -0.022259995241174817,
             0.008404319208637665, -0.0030209746555260927, 0.001039204496604917, -0.00034353332470487543,
             0.0001095055205387926, -3.375541249964953e-05, 1.0085601446598472e-05, -2.9281447208098905e-06,
             8.298634434464838e-07, -2.2660243513805138e-07, 5.7612642855799506e-08, -1.7998112732176305e-08,
             6.245551294978822e-09),
            (0.12934527478603014, -0.028944331414597648, 0.006331866271884675, -0.0013559331679347953,
             0.00028457517207353556, -5.859549391878546e-05, 1.1848049377070453e-05, -2.354618534228142e-06,
             4.6032338485997426e-07, -8.852973039896084e-08, 1.673163014141144e-08, -3.151901310572522e-09,
             5.986647401923011e-10, -9.759240774538085e-11, 1.3614627125226976e-11, -4.769515631508361e-12,
             1.1669876224977939e-12)),
)

# f32 pow works in f64 but needs only ~2^-36 relative error in log (R of degree 4 in s^2) and
# f32's exp polynomial.
POW32_LOG_R = (0.6666666655408089, 0.4000012209548447, 0.28550797600882516, 0.23330993699317454)
POW32_EXP_Q = F32.exp_q


# --------------------------------------------------------------------------- functions by name

FUNCTIONS: dict[str, Callable] = {}   # name -> emit_<name>(builder, *args): filled by @_function
BINARY: set[str] = set()              # the functions of two arguments


def _function(name: str, arity: int = 1):
    """Make the decorated emitter the function `name` (math_function and the tests find it here)."""
    def register(emitter: Callable) -> Callable:
        FUNCTIONS[name] = emitter
        if arity == 2:
            BINARY.add(name)
        return emitter
    return register


# --------------------------------------------------------------------------- typed IR helpers

class _Ops:
    """IR arithmetic on one float type (scalar or vector) and its same-width integer type."""

    def __init__(self, builder: ir.IRBuilder, ty: ir.Type):
        elem = ty.element if isinstance(ty, ir.VectorType) else ty
        if isinstance(elem, ir.DoubleType):
            self.w = F64
        elif isinstance(elem, ir.FloatType):
            self.w = F32
        else:
            raise TypeError(f"mathlib handles f32/f64 scalars and vectors, not {ty}")
        self.b = builder
        self.ty = ty
        self.lanes = ty.count if isinstance(ty, ir.VectorType) else None
        self.ity = self._shaped(ir.IntType(self.w.bits))
        self.bool_ty = self._shaped(ir.IntType(1))

    def _shaped(self, elem: ir.Type) -> ir.Type:
        return ir.VectorType(elem, self.lanes) if self.lanes else elem

    def sibling(self, bits: int) -> _Ops:
        """Ops on the other float width with the same lane count."""
        elem = ir.DoubleType() if bits == 64 else ir.FloatType()
        return _Ops(self.b, self._shaped(elem))

    # constants
    def f(self, value: float) -> ir.Constant:
        return ir.Constant(self.ty, float(value))

    def i(self, value: int) -> ir.Constant:
        """An integer constant of the float's width (two's complement wrap)."""
        bits = self.w.bits
        value = int(value) & ((1 << bits) - 1)
        return ir.Constant(self.ity, value - (1 << bits) if value >> (bits - 1) else value)

    # intrinsics
    def _intrinsic(self, base: str, ty: ir.Type, args: list) -> ir.Value:
        elem = ty.element if isinstance(ty, ir.VectorType) else ty
        suffix = "f64" if isinstance(elem, ir.DoubleType) else "f32"
        if isinstance(ty, ir.VectorType):
            suffix = f"v{ty.count}{suffix}"
        module = self.b.module
        name = f"{base}.{suffix}"
        fn = module.globals.get(name)
        if fn is None:
            fn = ir.Function(module, ir.FunctionType(ty, [ty] * len(args)), name=name)
        return self.b.call(fn, args)

    def fma(self, a, b, c):
        """Fused a*b + c, one rounding (exactness steps rely on it)."""
        return self._intrinsic("llvm.fma", self.ty, [a, b, c])

    def muladd(self, a, b, c):
        """a*b + c, fused where the target has FMA (polynomials)."""
        return self._intrinsic("llvm.fmuladd", self.ty, [a, b, c])

    def rint(self, x):
        return self._intrinsic("llvm.rint", self.ty, [x])

    def floor(self, x):
        return self._intrinsic("llvm.floor", self.ty, [x])

    def fabs(self, x):
        return self._intrinsic("llvm.fabs", self.ty, [x])

    def copysign(self, mag, sign):
        return self._intrinsic("llvm.copysign", self.ty, [mag, sign])

    # arithmetic
    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def neg(self, a):
        return self.b.fneg(a)

    def poly(self, t, coeffs):
        """Horner evaluation of sum(coeffs[k] * t**k)."""
        acc = self.f(coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self.muladd(acc, t, self.f(c))
        return acc

    def estrin(self, t, coeffs, t2=None):
        """sum(coeffs[k] * t**k) in Estrin's form: pairs c0 + c1*t in parallel, combined with
        t^2, t^4, ...: a dependency chain of log2(len) multiply-adds instead of len."""
        powers = {1: t, 2: t2 if t2 is not None else self.mul(t, t)}

        def power(k):
            if k not in powers:
                powers[k] = self.mul(power(k // 2), power(k // 2))
            return powers[k]

        def part(cs):
            if len(cs) == 1:
                return self.f(cs[0])
            if len(cs) == 2:
                return self.muladd(self.f(cs[1]), t, self.f(cs[0]))
            half = 1 << ((len(cs) - 1).bit_length() - 1)
            return self.muladd(part(cs[half:]), power(half), part(cs[:half]))
        return part(tuple(coeffs))

    def poly_select(self, t, first, tables):
        """Horner with each coefficient chosen per lane: tables[0] where `first`, else tables[1]."""
        lo, hi = tables
        acc = self.select(first, self.f(lo[-1]), self.f(hi[-1]))
        for a, b in zip(reversed(lo[:-1]), reversed(hi[:-1])):
            acc = self.muladd(acc, t, self.select(first, self.f(a), self.f(b)))
        return acc

    # comparisons (ordered: false on NaN) and selection
    def cmp(self, op: str, a, b):
        return self.b.fcmp_ordered(op, a, b)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def select(self, cond, a, b):
        return self.b.select(cond, a, b)

    def clamp(self, x, lo: float, hi: float):
        """min(max(x, lo), hi) with NaN mapped to hi (callers select NaN out afterwards)."""
        x = self.select(self.cmp("<", x, self.f(hi)), x, self.f(hi))
        return self.select(self.cmp(">", x, self.f(lo)), x, self.f(lo))

    # bits and integers
    def bits(self, x):
        return self.b.bitcast(x, self.ity)

    def from_bits(self, i):
        return self.b.bitcast(i, self.ty)

    def to_int(self, x):
        """fptosi; x must be finite and in range (NaN/inf would give poison)."""
        return self.b.fptosi(x, self.ity)

    def to_float(self, i):
        return self.b.sitofp(i, self.ty)

    def pow2(self, n):
        """2^n for an integer n in the normal exponent range."""
        biased = self.b.add(n, self.i(self.w.bias))
        return self.from_bits(self.b.shl(biased, self.i(self.w.mant_bits)))

    def flip_sign(self, x, mask):
        """x with its sign bit xor-ed with mask's (an integer of the same width)."""
        return self.from_bits(self.b.xor(self.bits(x), mask))


def _sibling_value(o: _Ops, x, bits: int):
    """Convert x between f32 and f64 (same lanes)."""
    other = o.sibling(bits)
    if bits > o.w.bits:
        return o.b.fpext(x, other.ty)
    return o.b.fptrunc(x, other.ty)


# --------------------------------------------------------------------------- frexp / ldexp

def emit_frexp(builder: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(m, e) with x = m * 2^e, |m| in [0.5, 1) (subnormals included); e an integer of
    x's width. For 0, inf and NaN: m = x, e = 0 (as C frexp)."""
    o = _Ops(builder, x.type)
    w = o.w
    tiny = o.cmp("<", o.fabs(x), o.f(2.0 ** (1 - w.bias)))
    scaled = o.select(tiny, o.mul(x, o.f(2.0 ** (w.mant_bits + 1))), x)
    adjust = o.select(tiny, o.i(-(w.mant_bits + 1)), o.i(0))
    ix = o.bits(scaled)
    exp_field = o.b.and_(o.b.lshr(ix, o.i(w.mant_bits)), o.i(2 * w.bias + 1))
    e = o.b.add(o.b.sub(exp_field, o.i(w.bias - 1)), adjust)
    keep = o.i(~(((2 * w.bias + 1)) << w.mant_bits) & ((1 << w.bits) - 1))
    m = o.from_bits(o.b.or_(o.b.and_(ix, keep), o.i((w.bias - 1) << w.mant_bits)))
    special = o.b.or_(o.cmp("==", x, o.f(0.0)), o.b.not_(o.cmp("<", o.fabs(x), o.f(float("inf")))))
    return o.select(special, x, m), o.select(special, o.i(0), e)


def emit_ldexp(builder: ir.IRBuilder, x: ir.Value, n: ir.Value) -> ir.Value:
    """x * 2^n (n an integer of x's width), rounded once, for every n (as C ldexp)."""
    o = _Ops(builder, x.type)
    w = o.w
    b = o.b
    max_e, min_e = w.bias, 1 - w.bias
    step_down = w.bias - 1 - w.mant_bits - 1  # scale by 2^-step_down keeps a normal value normal-ish
    n = b.select(b.icmp_signed(">", n, o.i(3 * max_e)), o.i(3 * max_e), n)
    n = b.select(b.icmp_signed("<", n, o.i(-3 * max_e)), o.i(-3 * max_e), n)
    for _ in range(2):  # bring n into the normal range in at most two exact scalings each way
        up = b.icmp_signed(">", n, o.i(max_e))
        x = o.select(up, o.mul(x, o.f(2.0 ** max_e)), x)
        n = b.select(up, b.sub(n, o.i(max_e)), n)
        down = b.icmp_signed("<", n, o.i(min_e))
        x = o.select(down, o.mul(x, o.f(2.0 ** -step_down)), x)
        n = b.select(down, b.add(n, o.i(step_down)), n)
    n = b.select(b.icmp_signed(">", n, o.i(max_e)), o.i(max_e), n)
    n = b.select(b.icmp_signed("<", n, o.i(min_e)), o.i(min_e), n)
    return o.mul(x, o.pow2(n))


# --------------------------------------------------------------------------- exp family

def _reduce_ln2(o: _Ops, x, n, ln2_hi: float, ln2_lo: float):
    """x - n*ln2 with ln2 = hi + lo (n*hi exact, so the first step is exact)."""
    r = o.muladd(n, o.f(-ln2_hi), x)
    return o.muladd(n, o.f(-ln2_lo), r)


def _scale_by_pow2(o: _Ops, p, n):
    """p * 2^n in two exact-or-once-rounded steps (n may exceed the normal range by 2x)."""
    half = o.b.ashr(n, o.i(1))
    return o.mul(o.mul(p, o.pow2(half)), o.pow2(o.b.sub(n, half)))


def _round_by_shifter(o: _Ops, y):
    """(n, shifted): n = y rounded to an integer (|y| < 2^(mant_bits - 1)), as a float, and y +
    the shifter whose low bits hold n. One add instead of a round and a convert (shorter chains:
    loops of exp-like functions are bound by their latency); NaN stays NaN."""
    shifter = o.f(1.5 * 2.0 ** o.w.mant_bits)
    shifted = o.add(y, shifter)
    return o.sub(shifted, shifter), shifted


def _shifted_int(o: _Ops, shifted):
    """n of _round_by_shifter as an integer (the shifter's bits taken off)."""
    return o.b.sub(o.bits(shifted), o.bits(o.f(1.5 * 2.0 ** o.w.mant_bits)))


def _clamp_keeping_nan(o: _Ops, x, lo: float, hi: float):
    x = o.select(o.cmp(">", x, o.f(hi)), o.f(hi), x)
    return o.select(o.cmp("<", x, o.f(lo)), o.f(lo), x)


def _exp(o: _Ops, x):
    """NaN flows through the clamp, the reduction and the polynomial to the result."""
    w = o.w
    xc = _clamp_keeping_nan(o, x, w.exp_lo, w.exp_hi)
    n, shifted = _round_by_shifter(o, o.mul(xc, o.f(LOG2E)))
    r = _reduce_ln2(o, xc, n, w.ln2_hi, w.ln2_lo)
    r2 = o.mul(r, r)
    p = o.add(o.muladd(r2, o.estrin(r, w.exp_q, r2), r), o.f(1.0))
    return _scale_by_pow2(o, p, _shifted_int(o, shifted))


@_function("exp")
def emit_exp(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e^x."""
    return _exp(_Ops(builder, x.type), x)


def _expm1(o: _Ops, x):
    w = o.w
    xc = o.clamp(x, w.expm1_lo, w.expm1_hi)
    n = o.rint(o.mul(xc, o.f(LOG2E)))
    r = _reduce_ln2(o, xc, n, w.ln2_hi, w.ln2_lo)
    p = o.muladd(o.mul(r, r), o.poly(r, w.exp_q), r)  # e^r - 1
    # 2^n*p + (2^n - 1) = 2*(h*p + (h - 1/2)) with h = 2^(n-1): finite up to the overflow
    h = o.pow2(o.b.sub(o.to_int(n), o.i(1)))
    y = o.mul(o.muladd(h, p, o.sub(h, o.f(0.5))), o.f(2.0))
    y = o.select(o.cmp("==", n, o.f(0.0)), p, y)
    y = o.select(o.cmp("==", x, o.f(0.0)), x, y)  # keeps -0
    return o.select(o.isnan(x), x, y)


@_function("expm1")
def emit_expm1(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e^x - 1, accurate near 0."""
    return _expm1(_Ops(builder, x.type), x)


def _tanh(o: _Ops, x):
    """tanh |x| = -t / (t + 2) with t = e^u - 1, u = -2|x| in [expm1_lo, 0], then x's sign bit
    xor-ed in. e^u - 1 = 2^n * p + (2^n - 1) is one fused multiply-add (exact when n = 0), p's
    polynomial runs in Estrin's form, and n and 2^n come from one multiply-add with a magic
    constant (no rint or float-to-int conversion). Nothing selects the NaN out: a NaN x stays a
    NaN through every step (the clamp lets it through), so a loop of tanh is ~20 vector ops.
    For f32, u - n*ln2 is one multiply-add with ln2 rounded to f32: |n| <= 43 makes its error
    at most 8e-8 in u, under 0.1 ulp of the result wherever n != 0 (tanh's slope there is small)."""
    w = o.w
    u = o.mul(o.fabs(x), o.f(-2.0))
    u = o.select(o.cmp("<", u, o.f(w.expm1_lo)), o.f(w.expm1_lo), u)   # tanh rounds to 1 below
    magic = 1.5 * 2.0 ** w.mant_bits + w.bias    # k's low mantissa bits hold n + bias
    k = o.muladd(u, o.f(LOG2E), o.f(magic))
    n = o.sub(k, o.f(magic))
    scale = o.from_bits(o.b.shl(o.bits(k), o.i(w.mant_bits)))   # 2^n
    r = o.muladd(n, o.f(-LN2), u) if w.bits == 32 else _reduce_ln2(o, u, n, w.ln2_hi, w.ln2_lo)
    r2 = o.mul(r, r)
    p = o.muladd(r2, o.estrin(r, w.exp_q, r2), r)    # e^r - 1
    t = o.fma(scale, p, o.sub(scale, o.f(1.0)))      # e^u - 1, in [-1, 0]
    magnitude = o.div(o.sub(o.f(0.0), t), o.add(t, o.f(2.0)))   # 0 - t: +0 for t = +-0
    return o.flip_sign(magnitude, o.b.and_(o.bits(x), o.i(1 << (w.bits - 1))))


@_function("tanh")
def emit_tanh(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """tanh x = -expm1(-2|x|) / (expm1(-2|x|) + 2), with x's sign."""
    return _tanh(_Ops(builder, x.type), x)


def _logistic(o: _Ops, x):
    t = _exp(o, o.neg(o.fabs(x)))  # e^-|x| in (0, 1]: never overflows
    numerator = o.select(o.cmp(">=", x, o.f(0.0)), o.f(1.0), t)
    return o.div(numerator, o.add(o.f(1.0), t))


@_function("logistic")
def emit_logistic(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """1 / (1 + e^-x), as e^x / (1 + e^x) for x < 0 so tiny results keep their precision."""
    return _logistic(_Ops(builder, x.type), x)


# --------------------------------------------------------------------------- log family

def _split_log_argument(o: _Ops, x, subnormals=True):
    """(k, f) with x = 2^k * (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), f exact, for finite x > 0
    (garbage otherwise: callers select the special values). Subnormals are scaled first."""
    w = o.w
    b = o.b
    if subnormals:
        tiny = o.cmp("<", x, o.f(2.0 ** (1 - w.bias)))
        x = o.select(tiny, o.mul(x, o.f(2.0 ** (w.mant_bits + 1))), x)
    ix = b.sub(o.bits(x), o.i(w.sqrt_half_bits))  # exponent field now counts from sqrt(1/2)
    k = b.ashr(ix, o.i(w.mant_bits))
    if subnormals:
        k = b.add(k, o.select(tiny, o.i(-(w.mant_bits + 1)), o.i(0)))
    m_bits = b.add(b.and_(ix, o.i((1 << w.mant_bits) - 1)), o.i(w.sqrt_half_bits))
    return k, o.sub(o.from_bits(m_bits), o.f(1.0))


def _log_core(o: _Ops, x, correction=None, log_r=None, subnormals=True):
    """log(x) for finite x > 0 (plus correction, a small term added before the final sums).

    x = 2^k * (1 + f); s = f/(2+f); log(1+f) = f - (hfsq - s*(hfsq + R(s^2))), hfsq = f^2/2."""
    w = o.w
    k, f = _split_log_argument(o, x, subnormals)
    s = o.div(f, o.add(f, o.f(2.0)))
    z = o.mul(s, s)
    r = o.mul(z, o.poly(z, log_r or w.log_r))
    hfsq = o.mul(o.mul(f, f), o.f(0.5))
    kf = o.to_float(k)
    small = o.muladd(kf, o.f(w.ln2_lo), o.muladd(s, o.add(hfsq, r), correction or o.f(0.0)))
    return o.muladd(kf, o.f(w.ln2_hi), o.sub(f, o.sub(hfsq, small)))


def _log_specials(o: _Ops, x, y):
    """log's special values: +inf -> +inf, 0 -> -inf, < 0 -> NaN, NaN -> NaN."""
    y = o.select(o.cmp("==", x, o.f(float("inf"))), x, y)
    y = o.select(o.cmp("==", x, o.f(0.0)), o.f(float("-inf")), y)
    y = o.select(o.cmp("<", x, o.f(0.0)), o.f(float("nan")), y)
    return o.select(o.isnan(x), x, y)


@_function("log")
def emit_log(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Natural logarithm."""
    o = _Ops(builder, x.type)
    return _log_specials(o, x, _log_core(o, x))


@_function("log1p")
def emit_log1p(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """log(1 + x), accurate near 0: log(u) + (x - (u - 1))/u for u = 1 + x rounded."""
    o = _Ops(builder, x.type)
    u = o.add(x, o.f(1.0))
    correction = o.div(o.sub(x, o.sub(u, o.f(1.0))), u)
    y = _log_specials(o, u, _log_core(o, u, correction))
    y = o.select(o.cmp("==", x, o.f(0.0)), x, y)  # keeps -0
    return o.select(o.isnan(x), x, y)


# --------------------------------------------------------------------------- erf

@_function("erf")
def emit_erf(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Error function: x*A(x^2) for |x| < 1, else 1 - e^(-x^2) * g(|x|) (g ~ e^(x^2) erfc)."""
    o = _Ops(builder, x.type)
    w = o.w
    a = o.fabs(x)
    # a*A(z) = a*c0_hi + a*(c0_lo + z*A1(z)): the big product is rounded only once
    tail = o.muladd(o.mul(a, a), o.poly(o.mul(a, a), w.erf_a[1:]), o.f(w.erf_a0_lo))
    small = o.muladd(a, o.f(w.erf_a[0]), o.mul(a, tail))
    ac = o.clamp(a, 1.0, w.erf_hi)
    if len(w.erfc_g) == 1:
        g = o.poly(o.sub(ac, o.f(w.erfc_center[0])), w.erfc_g[0])
    else:
        first = o.cmp("<", ac, o.f(w.erfc_split))
        center = o.select(first, o.f(w.erfc_center[0]), o.f(w.erfc_center[1]))
        g = o.poly_select(o.sub(ac, center), first, w.erfc_g)
    erfc = o.mul(_exp(o, o.neg(o.mul(ac, ac))), g)
    big = o.sub(o.f(1.0), erfc)
    y = o.copysign(o.select(o.cmp("<", a, o.f(1.0)), small, big), x)
    return o.select(o.isnan(x), x, y)


# --------------------------------------------------------------------------- sin / cos / tan

def _reduce_pio2(o: _Ops, x):
    """(r, q): x = q*pi/2 + r (mod 2pi) with |r| <= ~pi/4, in o's type (f64 for best range).

    Cody-Waite with pi/2 = PIO2[0] + PIO2[1] + PIO2[2] and fma: the first step is exact,
    so r keeps full relative precision while k = rint(x*2/pi) is exact (|x| < 2^50)."""
    k = o.rint(o.mul(x, o.f(TWO_OVER_PI)))
    r = o.fma(k, o.f(-PIO2[0]), x)
    r = o.fma(k, o.f(-PIO2[1]), r)
    r = o.fma(k, o.f(-PIO2[2]), r)
    quadrant = o.sub(k, o.mul(o.floor(o.mul(k, o.f(0.25))), o.f(4.0)))  # k mod 4, exact
    quadrant = o.select(o.cmp("<", quadrant, o.f(4.0)), quadrant, o.f(0.0))  # inf/NaN -> 0 (no poison)
    return r, quadrant


def _sin_cos_poly(o: _Ops, r):
    """(sin r, cos r) for |r| <= pi/4."""
    w = o.w
    z = o.mul(r, r)
    s = o.muladd(o.mul(z, r), o.poly(z, w.sin_s), r)
    c = o.muladd(o.mul(z, z), o.poly(z, w.cos_c), o.muladd(z, o.f(-0.5), o.f(1.0)))
    return s, c


class _Trig(enum.Enum):
    SIN = enum.auto()
    COS = enum.auto()
    TAN = enum.auto()


def _trig(o: _Ops, x, which: _Trig):
    """sin, cos or tan of x: reduction in f64 (also for f32), polynomial in x's type."""
    if o.w.bits == 32:
        wide = o.sibling(64)
        r, quadrant = _reduce_pio2(wide, _sibling_value(o, x, 64))
        r = _sibling_value(wide, r, 32)
        q = o.b.fptosi(quadrant, o.ity)
    else:
        r, quadrant = _reduce_pio2(o, x)
        q = o.to_int(quadrant)
    s, c = _sin_cos_poly(o, r)
    b = o.b
    odd = b.icmp_unsigned("!=", b.and_(q, o.i(1)), o.i(0))
    if which is _Trig.TAN:
        y = o.select(odd, o.neg(o.div(c, s)), o.div(s, c))
    else:
        if which is _Trig.COS:
            q = b.add(q, o.i(1))
            odd = b.not_(odd)
        y = o.select(odd, c, s)
        sign = b.shl(b.and_(q, o.i(2)), o.i(o.w.bits - 2))
        y = o.flip_sign(y, sign)
    if which is not _Trig.COS:
        y = o.select(o.cmp("<", o.fabs(x), o.f(o.w.sin_tiny)), x, y)  # exact and keeps -0
    return o.select(o.cmp("==", o.fabs(x), o.f(float("inf"))), o.f(float("nan")), y)


@_function("sin")
def emit_sin(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Sine (accuracy bound for |x| < 2^48; see ACCURACY)."""
    return _trig(_Ops(builder, x.type), x, _Trig.SIN)


@_function("cos")
def emit_cos(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Cosine (accuracy bound for |x| < 2^48; see ACCURACY)."""
    return _trig(_Ops(builder, x.type), x, _Trig.COS)


@_function("tan")
def emit_tan(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Tangent (accuracy bound for |x| < 2^48; see ACCURACY)."""
    return _trig(_Ops(builder, x.type), x, _Trig.TAN)


# --------------------------------------------------------------------------- pow

def _pow_specials(o: _Ops, x, y, result):
    """C99 Annex F on top of result = |x|^y (which already gets 0/inf bases and infinite
    exponents right): sign for negative bases with odd integer y, NaN for negative finite
    bases with non-integer y, pow(x, +-0) = pow(1, y) = pow(-1, +-inf) = 1."""
    b = o.b
    y_int = o.cmp("==", o.rint(y), y)
    half = o.mul(y, o.f(0.5))
    y_odd = b.and_(y_int, o.cmp("!=", o.rint(half), half))
    negative = b.icmp_signed("<", o.bits(x), o.i(0))
    result = o.select(b.and_(negative, y_odd), o.neg(result), result)
    finite_negative = b.and_(o.cmp("<", x, o.f(0.0)), o.cmp(">", x, o.f(float("-inf"))))
    result = o.select(b.and_(finite_negative, b.not_(y_int)), o.f(float("nan")), result)
    minus_one_inf = b.and_(o.cmp("==", x, o.f(-1.0)), o.cmp("==", o.fabs(y), o.f(float("inf"))))
    one = b.or_(b.or_(o.cmp("==", x, o.f(1.0)), o.cmp("==", y, o.f(0.0))), minus_one_inf)
    return o.select(one, o.f(1.0), result)


def _log_extremes(o: _Ops, ax, log):
    """log of |x| with log(0) = -inf, log(inf) = inf, NaN kept."""
    log = o.select(o.cmp("==", ax, o.f(0.0)), o.f(float("-inf")), log)
    log = o.select(o.cmp("==", ax, o.f(float("inf"))), ax, log)
    return o.select(o.isnan(ax), ax, log)


def _pow_f32(o: _Ops, x, y):
    """f32 pow in f64: y*log|x| has ~2^-40 relative error, far below f32's half ulp."""
    d = o.sibling(64)
    xd, yd = _sibling_value(o, x, 64), _sibling_value(o, y, 64)
    ax = d.fabs(xd)
    log = _log_extremes(d, ax, _log_core(d, ax, log_r=POW32_LOG_R, subnormals=False))  # none in f64
    t = d.mul(yd, log)
    tc = d.clamp(t, -120.0, 100.0)  # e^-120 and e^100 are beyond f32's range
    n = d.rint(d.mul(tc, d.f(LOG2E)))
    r = _reduce_ln2(d, tc, n, F64.ln2_hi, F64.ln2_lo)
    p = d.add(d.muladd(d.mul(r, r), d.poly(r, POW32_EXP_Q), r), d.f(1.0))
    e = d.mul(p, d.pow2(d.to_int(n)))
    e = d.select(d.isnan(t), t, e)
    return _pow_specials(o, x, y, _sibling_value(d, e, 32))


TWO_THIRDS = (0.6666666666666666, 3.700743415417188e-17)  # 2/3 as a double-double


def _two_sum(o: _Ops, a, b):
    """(s, e) with s = fl(a + b) and a + b = s + e exactly."""
    s = o.add(a, b)
    bb = o.sub(s, a)
    return s, o.add(o.sub(a, o.sub(s, bb)), o.sub(b, bb))


def _fast_two_sum(o: _Ops, a, b):
    """_two_sum for |a| >= |b|."""
    s = o.add(a, b)
    return s, o.sub(b, o.sub(s, a))


def _log_double_double(o: _Ops, ax):
    """log(ax) as hi + lo, relative error ~2^-64, for finite ax > 0 (f64).

    As _log_core, but log(m) = 2s + (2/3)s^3 + s^5*P2(s^2) with s, s^3 and the
    first two terms carried as double-doubles."""
    w = o.w
    k, f = _split_log_argument(o, ax)
    d_hi, d_lo = _fast_two_sum(o, o.f(2.0), f)
    s_hi = o.div(f, d_hi)
    s_lo = o.div(o.sub(o.fma(o.neg(s_hi), d_hi, f), o.mul(s_hi, d_lo)), d_hi)
    z_hi = o.mul(s_hi, s_hi)
    z_lo = o.muladd(o.add(s_hi, s_hi), s_lo, o.fma(s_hi, s_hi, o.neg(z_hi)))
    c_hi = o.mul(z_hi, s_hi)
    c_lo = o.add(o.fma(z_hi, s_hi, o.neg(c_hi)), o.muladd(z_hi, s_lo, o.mul(z_lo, s_hi)))
    u_hi = o.mul(c_hi, o.f(TWO_THIRDS[0]))
    u_lo = o.add(o.fma(c_hi, o.f(TWO_THIRDS[0]), o.neg(u_hi)),
                 o.muladd(c_hi, o.f(TWO_THIRDS[1]), o.mul(c_lo, o.f(TWO_THIRDS[0]))))
    tail = o.mul(o.mul(c_hi, z_hi), o.poly(z_hi, w.log_r[1:]))
    l_hi, e1 = _fast_two_sum(o, o.add(s_hi, s_hi), u_hi)
    l_lo = o.add(e1, o.add(o.add(s_lo, s_lo), o.add(u_lo, tail)))
    kf = o.to_float(k)
    big_hi, e2 = _two_sum(o, o.mul(kf, o.f(w.ln2_hi)), l_hi)
    lo = o.add(e2, o.muladd(kf, o.f(w.ln2_lo), l_lo))
    return _fast_two_sum(o, big_hi, lo)


def _pow_f64(o: _Ops, x, y):
    """f64 pow: t = y*log|x| as a double-double (error ~2^-55 |t|), then e^t."""
    w = o.w
    b = o.b
    ax = o.fabs(x)
    l_hi, l_lo = _log_double_double(o, ax)
    l_hi = _log_extremes(o, ax, l_hi)
    t_hi = o.mul(y, l_hi)
    t_lo = o.muladd(y, l_lo, o.fma(y, l_hi, o.neg(t_hi)))
    in_range = b.and_(o.cmp(">", t_hi, o.f(w.exp_lo)), o.cmp("<", t_hi, o.f(w.exp_hi)))
    t_lo = o.select(in_range, t_lo, o.f(0.0))  # NaN when t_hi is infinite
    tc = o.clamp(t_hi, w.exp_lo, w.exp_hi)
    n = o.rint(o.mul(tc, o.f(LOG2E)))
    r = o.add(o.muladd(n, o.f(-w.ln2_hi), tc), o.muladd(n, o.f(-w.ln2_lo), t_lo))
    p = o.add(o.muladd(o.mul(r, r), o.poly(r, w.exp_q), r), o.f(1.0))
    e = _scale_by_pow2(o, p, o.to_int(n))
    e = o.select(o.isnan(t_hi), t_hi, e)
    return _pow_specials(o, x, y, e)


@_function("pow", arity=2)
def emit_pow(builder: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x^y with C99 special cases."""
    o = _Ops(builder, x.type)
    if o.w.bits == 32:
        return _pow_f32(o, x, y)
    return _pow_f64(o, x, y)


# --------------------------------------------------------------------------- functions as LLVM functions

def _type_suffix(ty: ir.Type) -> str:
    elem = ty.element if isinstance(ty, ir.VectorType) else ty
    base = "f64" if isinstance(elem, ir.DoubleType) else "f32"
    return f"v{ty.count}{base}" if isinstance(ty, ir.VectorType) else base


def math_function(module: ir.Module, name: str, ty: ir.Type) -> ir.Function:
    """The internal, always-inline function @hlo.<name>.<type> computing `name` on ty
    (created on first use): calls to it are inlined before vectorisation."""
    emitter = FUNCTIONS[name]
    fn_name = f"hlo.{name}.{_type_suffix(ty)}"
    fn = module.globals.get(fn_name)
    if fn is not None:
        return fn
    arity = 2 if name in BINARY else 1
    fn = ir.Function(module, ir.FunctionType(ty, [ty] * arity), name=fn_name)
    fn.linkage = "internal"
    for attr in ("alwaysinline", "nounwind", "readnone"):
        fn.attributes.add(attr)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    builder.ret(emitter(builder, *fn.args))
    return fn


# --------------------------------------------------------------------------- documented accuracy
# benchmarks/math_accuracy.py measures the functions (JIT kernels applying each to numpy
# arrays, high-precision references, stratified sweeps, the error in ulps);
# tests/codegen/test_mathlib.py enforces these bounds with the same measurement.

@dataclass(frozen=True)
class Bound:
    """A documented accuracy bound: max error in ulps for inputs in `domain`."""

    max_ulp: float
    domain: str


# Documented bounds in ulps (f32, f64): the measured maxima of the full sweeps on an FMA
# host, plus margin (benchmarks/math_accuracy.py prints the measured values; tests fail
# when a sweep exceeds these). Without FMA hardware the maxima stay within them (docs/MATH.md).
def _bounds(name: str, f32: float, f64: float, domain32: str, domain64: str) -> dict:
    return {(name, "float32"): Bound(f32, domain32), (name, "float64"): Bound(f64, domain64)}


_TRIG_DOMAIN = "\\|x\\| < 2^48 (each binade) + [-10, 10]; beyond 2^50 meaningless"
_POW_DOMAIN = ("x > 0 (each binade) with y*log2(x) from underflow to overflow; "
               "x in [-4, -1/4] with integer y; y in [-8, 8]")
ACCURACY: dict[tuple[str, str], Bound] = {
    **_bounds("exp", 1.5, 1.5, "[-104, 89] + [-20, 20]; outside exactly 0 / inf",
              "[-746, 710] + [-20, 20]; outside exactly 0 / inf"),
    **_bounds("log", 1.0, 1.0, "all x > 0 incl. subnormals + (0, 10]", "all x > 0 incl. subnormals + (0, 10]"),
    **_bounds("log1p", 1.5, 1.5, "all x > -1 + (-1, 4]", "all x > -1 + (-1, 4]"),
    **_bounds("expm1", 1.5, 2.5, "[-30, 89] + [-2, 2]; outside exactly -1 / inf",
              "[-40, 710] + [-2, 2]; outside exactly -1 / inf"),
    **_bounds("tanh", 3.0, 3.0, "[-12, 12] + [-5, 5]; outside exactly +-1", "[-25, 25] + [-5, 5]; outside exactly +-1"),
    **_bounds("logistic", 3.0, 3.0, "[-110, 30] + [-20, 20]", "[-750, 50] + [-20, 20]"),
    **_bounds("erf", 1.5, 1.5, "[-5, 5] + [-4, 4]; outside exactly +-1", "[-7, 7] + [-4, 4]; outside exactly +-1"),
    **_bounds("sin", 2.0, 2.0, _TRIG_DOMAIN, _TRIG_DOMAIN),
    **_bounds("cos", 2.0, 2.0, _TRIG_DOMAIN, _TRIG_DOMAIN),
    **_bounds("tan", 4.0, 3.5, _TRIG_DOMAIN, _TRIG_DOMAIN),
    **_bounds("pow", 1.0, 1.5, _POW_DOMAIN, _POW_DOMAIN),
}
