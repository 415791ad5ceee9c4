"""Scalar semantics of elementwise HLO ops on LLVM values, matching the interpreter.

Integer corner cases follow XLA: x/0 = -1 (all ones unsigned), INT_MIN/-1 = INT_MIN,
x%0 = x, shifts by >= the width give 0 (or the sign fill for arithmetic shifts).
Float max/min propagate NaN and order -0 < +0. f16/bf16 are computed in f32 and
rounded back after every op (types.round_to). Transcendentals use the in-IR
approximations of mathlib.py when present, else libm calls.

Each op's code is registered per class of element type, beside its definition:
PRED_OPS, INTEGER_OPS, FLOAT_OPS and COMPLEX_OPS map an opcode to
`fn(ctx, op, t, args) -> value` (ctx: function_context.FunctionContext; args in compute
type, see types.py). `emit` dispatches; OPS is every opcode emitted here, which
elemental.py computes element by element. A new elementwise opcode needs only its
entry in the opcode table, its interpreter kernel and its registrations here.
"""
from __future__ import annotations

from llvmlite import ir

from ..diagnostics import error
from ..opcodes import BINARY_ELEMENTWISE, OPCODES, UNARY_ELEMENTWISE, Op, ResultType, Trait
from ..registry import OpRegistry
from ..shapes import PrimitiveType, real_type_of
from . import mathlib
from .types import (F32, F64, I1, I64, compute_type, from_storage, round_bf16_arithmetic, round_to, storage_type,
                    to_storage)

PRED_OPS = OpRegistry("pred scalar op")
INTEGER_OPS = OpRegistry("integer scalar op")
FLOAT_OPS = OpRegistry("floating-point scalar op")
COMPLEX_OPS = OpRegistry("complex scalar op")

# opcode -> mathlib's vectorisable approximation (mathlib.py)
MATHLIB_FUNCTIONS: dict[Op, str] = {
    Op.EXPONENTIAL: "exp", Op.LOG: "log", Op.LOG_PLUS_ONE: "log1p", Op.EXPONENTIAL_MINUS_ONE: "expm1",
    Op.TANH: "tanh", Op.LOGISTIC: "logistic", Op.ERF: "erf", Op.SINE: "sin", Op.COSINE: "cos", Op.TAN: "tan",
    Op.POWER: "pow",
}
# opcode -> libm name of the double version (float: + "f"), where mathlib has none
LIBM_FUNCTIONS: dict[Op, str] = {
    Op.CBRT: "cbrt", Op.ACOS: "acos", Op.ACOSH: "acosh", Op.ASIN: "asin", Op.ASINH: "asinh", Op.ATAN: "atan",
    Op.ATANH: "atanh", Op.COSH: "cosh", Op.SINH: "sinh", Op.ATAN2: "atan2",
}


def call_math(ctx, op: Op, args: list, ty: ir.Type):
    """A transcendental on f32/f64 values: mathlib's vectorisable approximation, else libm."""
    name = MATHLIB_FUNCTIONS.get(op)
    if name is not None:
        fn = mathlib.math_function(ctx.module, name, ty)
    else:
        name = LIBM_FUNCTIONS[op] + ("f" if ty == F32 else "")
        fn = ctx.module.globals.get(name)
        if fn is None:
            fn = ir.Function(ctx.module, ir.FunctionType(ty, [ty] * len(args)), name=name)
    return ctx.b.call(fn, args)


def _suffix(ty: ir.Type) -> str:
    if ty == F32:
        return "f32"
    if ty == F64:
        return "f64"
    return f"i{ty.width}"


def declare_overloaded(module: ir.Module, name: str, ty: ir.Type, args: list) -> ir.Function:
    """An LLVM intrinsic overloaded on one scalar type (llvmlite knows few signatures)."""
    full = f"{name}.{_suffix(ty)}"
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, [a.type for a in args]), name=full)
    return fn


def _intrinsic(ctx, name: str, ty: ir.Type, args: list):
    return ctx.b.call(declare_overloaded(ctx.module, name, ty, args), args)


def const(ty: ir.Type, value):
    return ir.Constant(ty, value)


# --------------------------------------------------------------------------- dispatch

def _registry_of(t: PrimitiveType):
    if t.is_pred:
        return PRED_OPS
    if t.is_integral:
        return INTEGER_OPS
    if t.is_float:
        return FLOAT_OPS
    if t.is_complex:
        return COMPLEX_OPS
    return None


def emit(ctx, inst, op: Op, t: PrimitiveType, args: list):
    """The result of elementwise `op` on operands of type t (compute-type values).

    inst (for the location of errors) may be None."""
    registry = _registry_of(t)
    if registry is None:
        raise error(f"the cpu backend does not support {op} on {t.name}", inst.loc)
    handler = registry.get(op)
    if handler is None:
        raise error(f"the cpu backend does not support '{op}' on {t.name}", inst.loc)
    result = handler(ctx, op, t, args)
    if t.name == "bf16" and OPCODES[op].has(Trait.IEEE_BASIC):
        return round_bf16_arithmetic(ctx.b, result)   # its NaN stays a NaN without the test
    if t.is_float and OPCODES[op].result_type is not ResultType.PRED:
        return round_to(ctx.b, result, t)   # f16/bf16 results are rounded after every op
    return result


# --------------------------------------------------------------------------- pred

@PRED_OPS.register(Op.NOT)
def _pred_not(ctx, op, t, args):
    return ctx.b.not_(args[0])


@PRED_OPS.register(Op.ADD, Op.OR, Op.MAXIMUM)
def _pred_or(ctx, op, t, args):
    return ctx.b.or_(*args)


@PRED_OPS.register(Op.MULTIPLY, Op.AND, Op.MINIMUM)
def _pred_and(ctx, op, t, args):
    return ctx.b.and_(*args)


@PRED_OPS.register(Op.XOR)
def _pred_xor(ctx, op, t, args):
    return ctx.b.xor(*args)


# --------------------------------------------------------------------------- integers

_INT_BINARY = {Op.ADD: ir.IRBuilder.add, Op.SUBTRACT: ir.IRBuilder.sub, Op.MULTIPLY: ir.IRBuilder.mul,
               Op.AND: ir.IRBuilder.and_, Op.OR: ir.IRBuilder.or_, Op.XOR: ir.IRBuilder.xor}


@INTEGER_OPS.register(_INT_BINARY)
def _int_wrapping(ctx, op, t, args):
    return _INT_BINARY[op](ctx.b, *args)


@INTEGER_OPS.register(Op.MAXIMUM, Op.MINIMUM)
@FLOAT_OPS.register(Op.MAXIMUM, Op.MINIMUM)
def _max_min(ctx, op, t, args):
    return max_min(ctx.b, op, args[0], args[1], t)


@INTEGER_OPS.register(Op.NEGATE)
def _int_negate(ctx, op, t, args):
    return ctx.b.sub(const(compute_type(t), 0), args[0])


@INTEGER_OPS.register(Op.NOT)
def _int_not(ctx, op, t, args):
    return ctx.b.xor(args[0], const(compute_type(t), -1))


@INTEGER_OPS.register(Op.ABS)
def _int_abs(ctx, op, t, args):
    b, x, zero = ctx.b, args[0], const(compute_type(t), 0)
    return b.select(b.icmp_signed("<", x, zero), b.sub(zero, x), x) if t.is_signed_int else x


@INTEGER_OPS.register(Op.SIGN)
def _int_sign(ctx, op, t, args):
    b, x = ctx.b, args[0]
    ty = compute_type(t)
    zero = const(ty, 0)
    if not t.is_signed_int:
        return b.zext(b.icmp_unsigned("!=", x, zero), ty)
    pos = b.zext(b.icmp_signed(">", x, zero), ty)
    neg = b.zext(b.icmp_signed("<", x, zero), ty)
    return b.sub(pos, neg)


@INTEGER_OPS.register(Op.POPCNT)
def _int_popcnt(ctx, op, t, args):
    return _intrinsic(ctx, "llvm.ctpop", compute_type(t), [args[0]])


@INTEGER_OPS.register(Op.COUNT_LEADING_ZEROS)
def _int_clz(ctx, op, t, args):
    return _intrinsic(ctx, "llvm.ctlz", compute_type(t), [args[0], const(I1, 0)])


@INTEGER_OPS.register(Op.DIVIDE, Op.REMAINDER)
def _int_div_rem(ctx, op, t, args):
    b, (x, y) = ctx.b, args
    ty = compute_type(t)
    zero, one, ones = const(ty, 0), const(ty, 1), const(ty, -1)
    y_zero = b.icmp_unsigned("==", y, zero)
    if not t.is_signed_int:
        safe = b.select(y_zero, one, y)
        if op == Op.DIVIDE:
            return b.select(y_zero, ones, b.udiv(x, safe))
        return b.select(y_zero, x, b.urem(x, safe))
    minus_one = b.icmp_signed("==", y, ones)
    safe = b.select(b.or_(y_zero, minus_one), one, y)
    if op == Op.DIVIDE:
        q = b.select(minus_one, b.sub(zero, x), b.sdiv(x, safe))
        return b.select(y_zero, ones, q)
    r = b.select(minus_one, zero, b.srem(x, safe))
    return b.select(y_zero, x, r)


@INTEGER_OPS.register(Op.SHIFT_LEFT, Op.SHIFT_RIGHT_LOGICAL, Op.SHIFT_RIGHT_ARITHMETIC)
def _int_shift(ctx, op, t, args):
    b, (x, y) = ctx.b, args
    ty = compute_type(t)
    zero, ones = const(ty, 0), const(ty, -1)
    oob = b.icmp_unsigned(">=", y, const(ty, t.bits))
    safe = b.select(oob, zero, y)
    if op == Op.SHIFT_LEFT:
        return b.select(oob, zero, b.shl(x, safe))
    if op == Op.SHIFT_RIGHT_LOGICAL:
        return b.select(oob, zero, b.lshr(x, safe))
    fill = b.select(b.icmp_signed("<", x, zero), ones, zero)
    return b.select(oob, fill, b.ashr(x, safe))


@INTEGER_OPS.register(Op.POWER)
def _int_power(ctx, op, t, args):
    """Exponentiation by squaring over the exponent's bits, wrapping; negative exponents per XLA."""
    b, (base, exponent) = ctx.b, args
    ty = compute_type(t)
    signed = t.is_signed_int
    zero, one = const(ty, 0), const(ty, 1)
    acc_slot = ctx.alloca(ty, "pow.acc")
    base_slot = ctx.alloca(ty, "pow.base")
    e_slot = ctx.alloca(ty, "pow.e")
    b.store(one, acc_slot)
    b.store(base, base_slot)
    e0 = b.select(b.icmp_signed("<", exponent, zero), zero, exponent) if signed else exponent
    b.store(e0, e_slot)
    with ctx.loop(ty.width, name="pow"):
        e = b.load(e_slot)
        acc = b.load(acc_slot)
        bb = b.load(base_slot)
        odd = b.icmp_unsigned("!=", b.and_(e, one), zero)
        b.store(b.select(odd, b.mul(acc, bb), acc), acc_slot)
        b.store(b.mul(bb, bb), base_slot)
        b.store(b.lshr(e, one), e_slot)
    result = b.load(acc_slot)
    if not signed:
        return result
    negative_exp = b.icmp_signed("<", exponent, zero)
    is_one = b.icmp_signed("==", base, one)
    is_minus_one = b.icmp_signed("==", base, const(ty, -1))
    odd = b.icmp_unsigned("!=", b.and_(exponent, one), zero)
    neg_result = b.select(is_one, one, b.select(is_minus_one, b.select(odd, const(ty, -1), one), zero))
    return b.select(negative_exp, neg_result, result)


def max_min(b, op, x, y, t: PrimitiveType):
    if t.is_pred:
        return b.or_(x, y) if op == Op.MAXIMUM else b.and_(x, y)
    if t.is_integral:
        cmp = ">=" if op == Op.MAXIMUM else "<="
        fn = b.icmp_signed if t.is_signed_int else b.icmp_unsigned
        return b.select(fn(cmp, x, y), x, y)
    if t.is_complex:   # as XLA:CPU: by the real parts, the left one winning a tie (a NaN loses every comparison)
        keeps_left = b.fcmp_ordered(">=" if op == Op.MAXIMUM else "<=", b.extract_value(x, 0), b.extract_value(y, 0))
        return b.select(keeps_left, x, y)
    # NaN-propagating, -0 < +0: LLVM's maximum/minimum intrinsics have exactly these semantics.
    name = "llvm.maximum" if op == Op.MAXIMUM else "llvm.minimum"
    return b.call(declare_overloaded(b.module, name, x.type, [x, y]), [x, y])


# --------------------------------------------------------------------------- floating point

@FLOAT_OPS.register(Op.IS_FINITE)
def _is_finite(ctx, op, t, args):
    x = args[0]
    fabs = _intrinsic(ctx, "llvm.fabs", x.type, [x])
    return ctx.b.fcmp_ordered("<", fabs, const(x.type, float("inf")))


_FLOAT_BINARY = {Op.ADD: ir.IRBuilder.fadd, Op.SUBTRACT: ir.IRBuilder.fsub, Op.MULTIPLY: ir.IRBuilder.fmul,
                 Op.DIVIDE: ir.IRBuilder.fdiv, Op.REMAINDER: ir.IRBuilder.frem}
# Reassociable inside a reduction's combiner (FunctionContext.reassociate).
_REASSOCIABLE_TYPES = frozenset({"f32", "f64"})


@FLOAT_OPS.register(_FLOAT_BINARY)
def _float_arithmetic(ctx, op, t, args):
    fn = _FLOAT_BINARY[op]
    if ctx.reassociate and OPCODES[op].has(Trait.ASSOCIATIVE) and t.name in _REASSOCIABLE_TYPES:
        return fn(ctx.b, *args, flags=["reassoc"])
    return fn(ctx.b, *args)


@FLOAT_OPS.register(Op.NEGATE)
def _float_negate(ctx, op, t, args):
    return ctx.b.fneg(args[0])


# opcode -> the LLVM intrinsic computing it
_FLOAT_INTRINSICS = {Op.ABS: "llvm.fabs", Op.CEIL: "llvm.ceil", Op.FLOOR: "llvm.floor", Op.SQRT: "llvm.sqrt",
                     Op.ROUND_NEAREST_EVEN: "llvm.rint", Op.ROUND_NEAREST_AFZ: "llvm.round"}


@FLOAT_OPS.register(_FLOAT_INTRINSICS)
def _float_intrinsic(ctx, op, t, args):
    return _intrinsic(ctx, _FLOAT_INTRINSICS[op], args[0].type, [args[0]])


@FLOAT_OPS.register(Op.SIGN)
def _float_sign(ctx, op, t, args):
    b, x = ctx.b, args[0]
    ty = x.type
    nonzero = b.uitofp(b.fcmp_unordered("une", x, const(ty, 0.0)), ty)
    signed = _intrinsic(ctx, "llvm.copysign", ty, [nonzero, x])
    return b.select(b.fcmp_unordered("uno", x, x), x, signed)


@FLOAT_OPS.register(Op.RSQRT)
def _float_rsqrt(ctx, op, t, args):
    x = args[0]
    return ctx.b.fdiv(const(x.type, 1.0), _intrinsic(ctx, "llvm.sqrt", x.type, [x]))


@FLOAT_OPS.register(MATHLIB_FUNCTIONS, LIBM_FUNCTIONS)
def _float_transcendental(ctx, op, t, args):
    return call_math(ctx, op, list(args), args[0].type)


# --------------------------------------------------------------------------- complex numbers
# {re, im} structs; the ops the corpus' complex code needs.

def parts(b, z):
    return b.extract_value(z, 0), b.extract_value(z, 1)


def make_complex(b, ty, re, im):
    return b.insert_value(b.insert_value(ir.Constant(ty, ir.Undefined), re, 0), im, 1)


@COMPLEX_OPS.register(Op.NEGATE)
def _complex_negate(ctx, op, t, args):
    b = ctx.b
    a, c = parts(b, args[0])
    return make_complex(b, compute_type(t), b.fneg(a), b.fneg(c))


@COMPLEX_OPS.register(Op.ABS)
def _complex_abs(ctx, op, t, args):
    """|a + ci| = big * sqrt(1 + (small/big)^2): no overflow for large parts."""
    b = ctx.b
    a, c = parts(b, args[0])
    fabs = lambda v: _intrinsic(ctx, "llvm.fabs", v.type, [v])
    big = b.call(declare_overloaded(ctx.module, "llvm.maxnum", a.type, [a, c]), [fabs(a), fabs(c)])
    small = b.call(declare_overloaded(ctx.module, "llvm.minnum", a.type, [a, c]), [fabs(a), fabs(c)])
    ratio = b.fdiv(small, big)
    scaled = b.fmul(big, _intrinsic(ctx, "llvm.sqrt", a.type, [b.fadd(const(a.type, 1.0), b.fmul(ratio, ratio))]))
    zero = b.fcmp_ordered("==", big, const(a.type, 0.0))
    inf = b.fcmp_ordered("==", big, const(a.type, float("inf")))
    nan = b.fcmp_unordered("uno", a, c)
    finite = b.select(nan, const(a.type, float("nan")), b.select(zero, const(a.type, 0.0), scaled))
    return b.select(inf, big, finite)


@COMPLEX_OPS.register(Op.EXPONENTIAL)
def _complex_exp(ctx, op, t, args):
    b = ctx.b
    a, c = parts(b, args[0])
    e = call_math(ctx, Op.EXPONENTIAL, [a], a.type)
    return make_complex(b, compute_type(t), b.fmul(e, call_math(ctx, Op.COSINE, [c], a.type)),
                        b.fmul(e, call_math(ctx, Op.SINE, [c], a.type)))


@COMPLEX_OPS.register(Op.ADD, Op.SUBTRACT)
def _complex_add_subtract(ctx, op, t, args):
    b = ctx.b
    (a, c), (x, y) = parts(b, args[0]), parts(b, args[1])
    fn = b.fadd if op == Op.ADD else b.fsub
    return make_complex(b, compute_type(t), fn(a, x), fn(c, y))


@COMPLEX_OPS.register(Op.MULTIPLY)
def _complex_multiply(ctx, op, t, args):
    b = ctx.b
    (a, c), (x, y) = parts(b, args[0]), parts(b, args[1])
    return make_complex(b, compute_type(t), b.fsub(b.fmul(a, x), b.fmul(c, y)), b.fadd(b.fmul(a, y), b.fmul(c, x)))


@COMPLEX_OPS.register(Op.DIVIDE)
def _complex_divide(ctx, op, t, args):
    b = ctx.b
    (a, c), (x, y) = parts(b, args[0]), parts(b, args[1])
    denominator = b.fadd(b.fmul(x, x), b.fmul(y, y))
    re = b.fdiv(b.fadd(b.fmul(a, x), b.fmul(c, y)), denominator)
    im = b.fdiv(b.fsub(b.fmul(c, x), b.fmul(a, y)), denominator)
    return make_complex(b, compute_type(t), re, im)


@COMPLEX_OPS.register(Op.MAXIMUM, Op.MINIMUM)
def _complex_maximum_minimum(ctx, op, t, args):
    return max_min(ctx.b, op, args[0], args[1], t)


# Every opcode emitted here: elemental.py computes them from their operands' values.
OPS = PRED_OPS.handled() | INTEGER_OPS.handled() | FLOAT_OPS.handled() | COMPLEX_OPS.handled()
assert OPS <= UNARY_ELEMENTWISE | BINARY_ELEMENTWISE, OPS - (UNARY_ELEMENTWISE | BINARY_ELEMENTWISE)


# --------------------------------------------------------------------------- compare and conversions

_PREDICATES = {"EQ": "==", "NE": "!=", "GE": ">=", "GT": ">", "LE": "<=", "LT": "<"}


def compare(b, x, y, t: PrimitiveType, direction: str, compare_type):
    cmp = _PREDICATES[direction]
    if t.is_complex:
        (a, c), (p, q) = parts(b, x), parts(b, y)
        if direction == "EQ":
            return b.and_(b.fcmp_ordered("==", a, p), b.fcmp_ordered("==", c, q))
        return b.or_(b.fcmp_unordered("!=", a, p), b.fcmp_unordered("!=", c, q))
    if t.is_float:
        if compare_type == "TOTALORDER":
            kx, ky = total_order_key(b, x, t), total_order_key(b, y, t)
            return b.icmp_signed(cmp, kx, ky)
        if direction == "NE":
            return b.fcmp_unordered(cmp, x, y)
        return b.fcmp_ordered(cmp, x, y)
    if t.is_pred:
        return b.icmp_unsigned(cmp, x, y)
    unsigned = (compare_type == "UNSIGNED") or (compare_type is None and t.is_unsigned_int)
    return (b.icmp_unsigned if unsigned else b.icmp_signed)(cmp, x, y)


def total_order_key(b, x, t):
    ity = ir.IntType(x.type.width if isinstance(x.type, ir.IntType) else (64 if x.type == F64 else 32))
    bits = b.bitcast(x, ity)
    flip = b.lshr(b.ashr(bits, const(ity, ity.width - 1)), const(ity, 1))
    return b.xor(bits, flip)


def to_i64(b, value, t: PrimitiveType):
    if value.type.width == 64:
        return value
    return b.sext(value, I64) if t.is_signed_int else b.zext(value, I64)


def to_bits(b, value, t: PrimitiveType):
    """The raw bits of a compute value as a t.bits-wide integer."""
    stored = to_storage(b, value, t)
    if isinstance(stored.type, ir.IntType):
        return stored if stored.type.width == t.bits else b.trunc(stored, ir.IntType(t.bits))
    return b.bitcast(stored, ir.IntType(t.bits))


def from_bits(b, bits, t: PrimitiveType):
    sty = storage_type(t)
    if isinstance(sty, ir.IntType):
        stored = bits if bits.type.width == sty.width else b.zext(bits, sty)   # sub-byte types: a byte
    else:
        stored = b.bitcast(bits, sty)
    return from_storage(b, stored, t)


def convert(b, value, frm: PrimitiveType, to: PrimitiveType):
    """HLO convert with XLA's saturation (float -> int truncates, saturates, NaN -> 0)."""
    if frm is to:
        return value
    dst = compute_type(to)
    if frm.is_complex or to.is_complex:
        return _convert_complex(b, value, frm, to)
    if to.is_pred:
        if frm.is_float:
            return b.fcmp_unordered("une", value, const(value.type, 0.0))
        return b.icmp_unsigned("!=", value, const(value.type, 0))
    if frm.is_pred:
        if to.is_float:
            return b.uitofp(value, dst)
        return b.zext(value, dst)
    if frm.is_float and to.is_float:
        if value.type == dst:
            return round_to(b, value, to)
        if dst == F64:
            return b.fpext(value, F64)
        return round_to(b, b.fptrunc(value, F32), to)
    if frm.is_float:
        return _float_to_int(b, value, to)
    if to.is_float:
        src_fn = b.sitofp if frm.is_signed_int else b.uitofp
        if dst == F64:
            return src_fn(value, F64)
        return round_to(b, src_fn(value, F32), to)
    # int -> int: wrap
    if dst.width < value.type.width:
        return b.trunc(value, dst)
    if dst.width > value.type.width:
        return b.sext(value, dst) if frm.is_signed_int else b.zext(value, dst)
    return value


def _convert_complex(b, value, frm: PrimitiveType, to: PrimitiveType):
    if frm.is_complex and to.is_complex:
        re, im = parts(b, value)
        part = real_type_of(frm)
        return make_complex(b, compute_type(to), convert(b, re, part, real_type_of(to)),
                            convert(b, im, part, real_type_of(to)))
    if frm.is_complex:  # keep the real part
        return convert(b, parts(b, value)[0], real_type_of(frm), to)
    part = real_type_of(to)
    re = convert(b, value, frm, part)
    return make_complex(b, compute_type(to), re, ir.Constant(compute_type(part), 0.0))


def _float_to_int(b, value, to: PrimitiveType):
    dst = compute_type(to)
    fty = value.type
    bits = to.bits
    lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if to.is_signed_int else (0, (1 << bits) - 1))
    fhi, flo = const(fty, float(hi)), const(fty, float(lo))
    too_big = b.fcmp_ordered(">=", value, fhi)
    too_small = b.fcmp_ordered("<=", value, flo)
    nan = b.fcmp_unordered("uno", value, value)
    safe = b.select(b.or_(b.or_(too_big, too_small), nan), const(fty, 0.0), value)
    inside = b.fptosi(safe, dst) if to.is_signed_int else b.fptoui(safe, dst)
    out = b.select(too_big, const(dst, hi), b.select(too_small, const(dst, lo), inside))
    return b.select(nan, const(dst, 0), out)
