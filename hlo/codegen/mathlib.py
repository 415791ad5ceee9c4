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
in f64 internally (wider range reduction, exact log2*y). OPCODE_FUNCTIONS maps
HLO opcodes to these names. Special values follow C99/libm: NaN propagates,
exp/expm1 overflow to inf and underflow through the subnormals, log(0) = -inf,
log(<0) = NaN, tanh/erf/logistic saturate exactly, pow follows C99 Annex F.

Accuracy (max error in ulps against a float64 / long double reference, and the
input ranges where it holds) is in ACCURACY and docs/MATH.md, measured by
benchmarks/math_accuracy.py and enforced by tests/codegen/test_mathlib.py with
the measurement helpers at the end of this module (JIT kernels applying each
function to a numpy array, references, stratified sweeps, ulp error).

Polynomial coefficients are minimax fits (Remez exchange in 50-digit mpmath,
docs/MATH.md shows how) of the reduced functions named next to each table.
"""
from __future__ import annotations

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


def _exp(o: _Ops, x):
    w = o.w
    xc = o.clamp(x, w.exp_lo, w.exp_hi)
    n = o.rint(o.mul(xc, o.f(LOG2E)))
    r = _reduce_ln2(o, xc, n, w.ln2_hi, w.ln2_lo)
    p = o.add(o.muladd(o.mul(r, r), o.poly(r, w.exp_q), r), o.f(1.0))
    y = _scale_by_pow2(o, p, o.to_int(n))
    return o.select(o.isnan(x), x, y)


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


def emit_expm1(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """e^x - 1, accurate near 0."""
    return _expm1(_Ops(builder, x.type), x)


def _tanh(o: _Ops, x):
    t = _expm1(o, o.mul(o.fabs(x), o.f(-2.0)))  # in [-1, 0]
    th = o.div(o.neg(t), o.add(t, o.f(2.0)))
    return o.copysign(th, x)


def emit_tanh(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """tanh x = -expm1(-2|x|) / (expm1(-2|x|) + 2), with x's sign."""
    return _tanh(_Ops(builder, x.type), x)


def _logistic(o: _Ops, x):
    t = _exp(o, o.neg(o.fabs(x)))  # e^-|x| in (0, 1]: never overflows
    numerator = o.select(o.cmp(">=", x, o.f(0.0)), o.f(1.0), t)
    return o.div(numerator, o.add(o.f(1.0), t))


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


def emit_log(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Natural logarithm."""
    o = _Ops(builder, x.type)
    return _log_specials(o, x, _log_core(o, x))


def emit_log1p(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """log(1 + x), accurate near 0: log(u) + (x - (u - 1))/u for u = 1 + x rounded."""
    o = _Ops(builder, x.type)
    u = o.add(x, o.f(1.0))
    correction = o.div(o.sub(x, o.sub(u, o.f(1.0))), u)
    y = _log_specials(o, u, _log_core(o, u, correction))
    y = o.select(o.cmp("==", x, o.f(0.0)), x, y)  # keeps -0
    return o.select(o.isnan(x), x, y)


# --------------------------------------------------------------------------- erf

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


def _trig(o: _Ops, x, which: str):
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
    if which == "tan":
        y = o.select(odd, o.neg(o.div(c, s)), o.div(s, c))
    else:
        if which == "cos":
            q = b.add(q, o.i(1))
            odd = b.not_(odd)
        y = o.select(odd, c, s)
        sign = b.shl(b.and_(q, o.i(2)), o.i(o.w.bits - 2))
        y = o.flip_sign(y, sign)
    if which != "cos":
        y = o.select(o.cmp("<", o.fabs(x), o.f(o.w.sin_tiny)), x, y)  # exact and keeps -0
    return o.select(o.cmp("==", o.fabs(x), o.f(float("inf"))), o.f(float("nan")), y)


def emit_sin(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Sine (accuracy bound for |x| < 2^48; see ACCURACY)."""
    return _trig(_Ops(builder, x.type), x, "sin")


def emit_cos(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Cosine (accuracy bound for |x| < 2^48; see ACCURACY)."""
    return _trig(_Ops(builder, x.type), x, "cos")


def emit_tan(builder: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """Tangent (accuracy bound for |x| < 2^48; see ACCURACY)."""
    return _trig(_Ops(builder, x.type), x, "tan")


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


def emit_pow(builder: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    """x^y with C99 special cases."""
    o = _Ops(builder, x.type)
    if o.w.bits == 32:
        return _pow_f32(o, x, y)
    return _pow_f64(o, x, y)


# --------------------------------------------------------------------------- registry

UNARY: dict[str, Callable] = {
    "exp": emit_exp, "log": emit_log, "log1p": emit_log1p, "expm1": emit_expm1, "tanh": emit_tanh,
    "logistic": emit_logistic, "erf": emit_erf, "sin": emit_sin, "cos": emit_cos, "tan": emit_tan,
}
BINARY: dict[str, Callable] = {"pow": emit_pow}
FUNCTIONS: dict[str, Callable] = {**UNARY, **BINARY}

# HLO opcode -> function name here.
OPCODE_FUNCTIONS = {
    "exponential": "exp", "log": "log", "log-plus-one": "log1p", "exponential-minus-one": "expm1",
    "tanh": "tanh", "logistic": "logistic", "erf": "erf", "sine": "sin", "cosine": "cos", "tan": "tan",
    "power": "pow",
}


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


# --------------------------------------------------------------------------- measurement
# Used by tests/codegen/test_mathlib.py and benchmarks/math_accuracy.py: JIT kernels that
# apply a function to arrays, high-precision references, stratified input sweeps and the
# error in ulps. numpy and llvmlite.binding are imported lazily: emitting IR needs neither.

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


def _np_dtype(dtype):
    import numpy as np
    return np.dtype(dtype)


def _target_machine(extra_features: str = ""):
    """Host target machine (host CPU and features, 512-bit vectors where available);
    extra_features (e.g. "-fma") are appended to the host feature string."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    features = llvm.get_host_cpu_features().flatten()
    if "+avx512f" in features.split(","):
        features += ",-prefer-256-bit"  # let LLVM use 512-bit vectors
    if extra_features:
        features += "," + extra_features
    target = llvm.Target.from_triple(llvm.get_process_triple())
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features, opt=3, jit=True)


def kernel_name(name: str, dtype) -> str:
    return f"{name}_{_np_dtype(dtype).name}"


def kernel_module(functions) -> ir.Module:
    """One `void NAME_DTYPE(T* x, [T* y,] T* out, i64 n)` loop per (name, dtype) in functions,
    calling math_function (so each loop is what the backend's fused loops look like)."""
    module = ir.Module(name="mathlib_kernels")
    i64 = ir.IntType(64)
    for name, dtype in functions:
        ty = ir.DoubleType() if _np_dtype(dtype).itemsize == 8 else ir.FloatType()
        arity = 2 if name in BINARY else 1
        ptr = ty.as_pointer()
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * (arity + 1) + [i64]),
                         name=kernel_name(name, dtype))
        for arg in fn.args[:-1]:
            arg.add_attribute("noalias")
        entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
        b = ir.IRBuilder(entry)
        count = fn.args[-1]
        b.cbranch(b.icmp_signed(">", count, ir.Constant(i64, 0)), loop, done)
        b.position_at_end(loop)
        index = b.phi(i64)
        index.add_incoming(ir.Constant(i64, 0), entry)
        args = [b.load(b.gep(p, [index], inbounds=True)) for p in fn.args[:arity]]
        value = b.call(math_function(module, name, ty), args)
        b.store(value, b.gep(fn.args[arity], [index], inbounds=True))
        following = b.add(index, ir.Constant(i64, 1))
        index.add_incoming(following, loop)
        b.cbranch(b.icmp_signed("<", following, count), loop, done)
        b.position_at_end(done)
        b.ret_void()
    return module


class MathKernels:
    """JIT-compiled (MCJIT, host CPU, O3 with loop and SLP vectorisation) kernels of
    kernel_module(functions); `optimized_ir` is the IR after optimisation.
    extra_features: appended to the host's (e.g. "-fma,-avx512f" to measure other targets)."""

    def __init__(self, functions, extra_features: str = ""):
        import ctypes

        import llvmlite.binding as llvm
        self.functions = [(name, _np_dtype(dtype)) for name, dtype in functions]
        tm = _target_machine(extra_features)
        ref = llvm.parse_assembly(str(kernel_module(self.functions)))
        ref.triple = llvm.get_process_triple()
        ref.data_layout = str(tm.target_data)
        ref.verify()
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(ref, pb)
        self.optimized_ir = str(ref)
        self._engine = llvm.create_mcjit_compiler(ref, tm)
        self._engine.finalize_object()
        self._entry = {}
        for name, dtype in self.functions:
            c_ptr = ctypes.POINTER(ctypes.c_double if dtype.itemsize == 8 else ctypes.c_float)
            arity = 2 if name in BINARY else 1
            prototype = ctypes.CFUNCTYPE(None, *([c_ptr] * (arity + 1)), ctypes.c_int64)
            address = self._engine.get_function_address(kernel_name(name, dtype))
            self._entry[(name, dtype)] = (prototype(address), c_ptr)

    def __call__(self, name: str, dtype, *args, out=None):
        """name(*args) elementwise on 1-D arrays of dtype (into `out` when given)."""
        import numpy as np
        dtype = _np_dtype(dtype)
        arrays = [np.ascontiguousarray(a, dtype=dtype) for a in args]
        if out is None:
            out = np.empty_like(arrays[0])
        fn, c_ptr = self._entry[(name, dtype)]
        fn(*[a.ctypes.data_as(c_ptr) for a in arrays + [out]], out.size)
        return out


def _erf_reference(x, hp):
    """erf in hp (float64 or long double): 2/sqrt(pi) e^(-x^2) sum_n (2x^2)^n x / (1*3*...*(2n+1)),
    a series of positive terms (no cancellation); |x| >= 7 gives +-1."""
    import numpy as np
    a = np.minimum(np.abs(x.astype(hp)), hp(7))
    order = np.argsort(a)  # larger |x| need more terms: iterate on a shrinking suffix
    a_sorted = a[order]
    two_x2 = 2 * a_sorted * a_sorted
    term = a_sorted.copy()
    total = a_sorted.copy()
    start = 0
    for n in range(1, 400):
        term[start:] *= two_x2[start:] / (2 * n + 1)
        total[start:] += term[start:]
        converged = term[start:] <= total[start:] * hp(2.0) ** -70
        if converged.all():
            break
        start += int(np.argmin(converged))
    series = np.empty_like(total)
    series[order] = total
    two_over_sqrt_pi = hp(2) / np.sqrt(np.arccos(hp(-1)))
    erf = np.minimum(two_over_sqrt_pi * np.exp(-a * a) * series, hp(1))
    erf = np.where(np.abs(x) >= 7, hp(1), erf)
    return np.where(np.isnan(x), hp("nan"), np.copysign(erf, x.astype(hp)))


def reference(name: str, *args):
    """The function in higher precision: float64 for f32 inputs, long double for f64."""
    import numpy as np
    hp = np.float64 if args[0].dtype == np.float32 else np.longdouble
    xs = [np.asarray(a).astype(hp) for a in args]
    x = xs[0]
    with np.errstate(all="ignore"):
        if name == "logistic":
            e = np.exp(-np.abs(x))
            return np.where(x >= 0, 1 / (1 + e), e / (1 + e))
        if name == "erf":
            return _erf_reference(x, hp)
        if name == "pow":
            return np.power(x, xs[1])
        return {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "tanh": np.tanh,
                "sin": np.sin, "cos": np.cos, "tan": np.tan}[name](x)


def ulp_errors(got, ref, dtype):
    """|got - ref| in ulps of dtype at ref (ulp of the exact value's binade; subnormal ulp
    below). Infinities count as 2^(emax+1); NaN matching NaN is 0, NaN vs number is inf."""
    import numpy as np
    dtype = _np_dtype(dtype)
    info = np.finfo(dtype)
    hp = ref.dtype
    got = got.astype(hp)
    if not (np.isfinite(got).all() and np.isfinite(ref).all()):
        big = np.ldexp(hp.type(1), info.maxexp)
        ref, got = np.clip(ref, -big, big), np.clip(got, -big, big)
    _, e = np.frexp(ref)
    # ref = m 2^e with m in [1/2, 1): ulp = 2^(e - nmant - 1), but never below the subnormal
    # spacing 2^(minexp - nmant) (e = minexp + 1); frexp(0) has e = 0
    e = np.maximum(np.where(ref == 0, info.minexp + 1, e), info.minexp + 1)
    scale = info.nmant + 1 - e  # 2^scale = 1 / ulp
    with np.errstate(invalid="ignore"):
        err = np.ldexp(np.abs(got - ref), scale).astype(np.float64)
    got_nan, ref_nan = np.isnan(got), np.isnan(ref)
    err[got_nan & ref_nan] = 0
    err[got_nan ^ ref_nan] = np.inf
    return err


# Sweep domains: (lo, hi) per function and width; 'main' intervals also get linear samples.
_DOMAINS = {
    ("exp", 32): (-104.0, 89.0), ("exp", 64): (-746.0, 710.0),
    ("expm1", 32): (-30.0, 89.0), ("expm1", 64): (-40.0, 710.0),
    ("log", 32): (0.0, float("inf")), ("log", 64): (0.0, float("inf")),
    ("log1p", 32): (-1.0, float("inf")), ("log1p", 64): (-1.0, float("inf")),
    ("tanh", 32): (-12.0, 12.0), ("tanh", 64): (-25.0, 25.0),
    ("logistic", 32): (-110.0, 30.0), ("logistic", 64): (-750.0, 50.0),
    ("erf", 32): (-5.0, 5.0), ("erf", 64): (-7.0, 7.0),
    ("sin", 32): (-2.0 ** 48, 2.0 ** 48), ("sin", 64): (-2.0 ** 48, 2.0 ** 48),
    ("cos", 32): (-2.0 ** 48, 2.0 ** 48), ("cos", 64): (-2.0 ** 48, 2.0 ** 48),
    ("tan", 32): (-2.0 ** 48, 2.0 ** 48), ("tan", 64): (-2.0 ** 48, 2.0 ** 48),
}
# Linear sweeps where most uses are (log-stratified samples cover the rest of each binade).
_MAIN = {"exp": (-20.0, 20.0), "expm1": (-2.0, 2.0), "log": (0.0, 10.0), "log1p": (-1.0, 4.0),
         "tanh": (-5.0, 5.0), "logistic": (-20.0, 20.0), "erf": (-4.0, 4.0), "sin": (-10.0, 10.0),
         "cos": (-10.0, 10.0), "tan": (-10.0, 10.0)}


def _stratified(dtype, n, lo, hi, rng):
    """n values in [lo, hi] with |x| spread evenly over the binades (subnormals included)
    and uniform bits within each binade; signs as the interval allows."""
    import numpy as np
    info = np.finfo(dtype)
    ity = np.uint32 if dtype.itemsize == 4 else np.uint64
    mant = info.nmant
    top = min(max(abs(lo), abs(hi)), float(info.max))
    top_field = int(np.frexp(top)[1]) - info.minexp + 1
    fields = rng.integers(0, max(top_field, 1) + 1, size=n).astype(ity)
    bits = (fields << ity(mant)) | (rng.integers(0, 1 << mant, size=n, dtype=np.uint64).astype(ity))
    x = bits.view(dtype).copy()
    if lo < 0 < hi:
        x = np.where(rng.integers(0, 2, size=n) == 1, -x, x)
    elif hi <= 0:
        x = -x
    x = x[(x >= lo) & (x <= hi) & np.isfinite(x)]
    return x


def sample_inputs(name: str, dtype, n: int, seed: int = 0):
    """Inputs for the accuracy sweep of `name`: tuple of arrays of about n values each."""
    import numpy as np
    dtype = _np_dtype(dtype)
    rng = np.random.default_rng(seed)
    bits = dtype.itemsize * 8
    if name == "pow":
        return _pow_inputs(dtype, n, rng)
    lo, hi = _DOMAINS[(name, bits)]
    parts = [_stratified(dtype, n // 2 + n // 8, lo, hi, rng)]
    mlo, mhi = _MAIN[name]
    parts.append(rng.uniform(max(lo, mlo), min(hi, mhi), size=n - n // 2).astype(dtype))
    x = np.concatenate(parts)[:n]
    return (x[x > -1] if name == "log1p" else x,)


def _pow_inputs(dtype, n, rng):
    """x log-stratified over all positive finite values, y such that y*log2(x) covers the
    whole result range (underflow to overflow); a quarter with negative x and integer y,
    a quarter with y uniform in [-8, 8]."""
    import numpy as np
    info = np.finfo(dtype)
    span = (info.minexp - info.nmant - 8, info.maxexp + 4)
    x = np.abs(_stratified(dtype, 2 * n, 0.0, float(info.max), rng))[:n]
    x = x[x > 0]
    m = x.size
    log2x = np.log2(x.astype(np.float64))
    target = rng.uniform(*span, size=m)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(log2x != 0, target / log2x, rng.uniform(-8, 8, size=m)).astype(dtype)
    quarter = m // 4
    y[:quarter] = rng.uniform(-8, 8, size=quarter).astype(dtype)
    small = rng.uniform(0.25, 4, size=quarter).astype(dtype)
    x[quarter:2 * quarter] = -small
    y[quarter:2 * quarter] = rng.integers(-40, 40, size=quarter).astype(dtype)
    return x.astype(dtype), y.astype(dtype)


def measure(kernels: MathKernels, name: str, dtype, n: int, seed: int = 0):
    """(max ulp error, arguments of the worst case) of kernels' `name` over sample_inputs."""
    import numpy as np
    args = sample_inputs(name, dtype, n, seed)
    err = ulp_errors(kernels(name, dtype, *args), reference(name, *args), dtype)
    worst = int(np.argmax(err))
    return float(err[worst]), tuple(a[worst] for a in args)
