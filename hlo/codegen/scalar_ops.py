"""Scalar semantics of elementwise HLO ops on LLVM values, matching the interpreter.

Integer corner cases follow XLA: x/0 = -1 (all ones unsigned), INT_MIN/-1 = INT_MIN,
x%0 = x, shifts by >= the width give 0 (or the sign fill for arithmetic shifts).
Float max/min propagate NaN and order -0 < +0. f16/bf16 are computed in f32 and
rounded back after every op (types.round_to). Transcendentals use the in-IR
approximations of mathlib.py when present, else LLVM intrinsics / libm calls.
"""
from __future__ import annotations

from llvmlite import ir

from ..diagnostics import error
from ..shapes import PrimitiveType
from .types import F32, F64, I1, I64, compute_type, round_to
from ..opcodes import Op

UNARY = {"abs", "ceil", "floor", "count-leading-zeros", "popcnt", "is-finite", "negate", "not",
         "round-nearest-afz", "round-nearest-even", "sign", "cbrt", "cosine", "sine", "tan", "tanh",
         "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "rsqrt", "sqrt",
         "erf", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"}
BINARY = {"add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum", "and",
          "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical", "atan2"}

# opcode -> libm name of the double version (float: + "f"), used where mathlib has none
_LIBM = {
    "cbrt": ("cbrt",), "cosine": ("cos",), "sine": ("sin",), "tan": ("tan",), "tanh": ("tanh",),
    "exponential": ("exp",), "exponential-minus-one": ("expm1",), "log": ("log",),
    "log-plus-one": ("log1p",), "erf": ("erf",), "acos": ("acos",), "acosh": ("acosh",),
    "asin": ("asin",), "asinh": ("asinh",), "atan": ("atan",), "atanh": ("atanh",), "cosh": ("cosh",),
    "sinh": ("sinh",), "power": ("pow",), "atan2": ("atan2",),
}


def _mathlib_function(ctx, op: str, ty: ir.Type):
    """mathlib's always-inline approximation of op on ty, when mathlib provides it."""
    try:
        from . import mathlib
    except ImportError:  # the approximations are optional: libm is the fallback
        return None
    name = getattr(mathlib, "OPCODE_FUNCTIONS", {}).get(op)
    if name is None:
        return None
    return mathlib.math_function(ctx.module, name, ty)


def call_math(ctx, op: str, args: list, ty: ir.Type):
    """A transcendental on f32/f64 values: mathlib's vectorisable approximation, else libm."""
    b = ctx.b
    fn = _mathlib_function(ctx, op, ty)
    if fn is None:
        name = _LIBM[op][0] + ("f" if ty == F32 else "")
        fn = ctx.module.globals.get(name)
        if fn is None:
            fn = ir.Function(ctx.module, ir.FunctionType(ty, [ty] * len(args)), name=name)
    return b.call(fn, args)


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


def emit(ctx, inst, op: str, t: PrimitiveType, args: list):
    """The result of elementwise `op` on operands of type t (compute-type values)."""
    b = ctx.b
    if t.is_pred:
        return _pred_op(b, inst, op, args)
    if t.is_integral:
        return _int_op(ctx, inst, op, t, args)
    if t.is_float:
        if op == Op.IS_FINITE:
            return _is_finite(ctx, args[0], t)
        return round_to(b, _float_op(ctx, inst, op, t, args), t)
    if t.is_complex:
        return _complex_op(ctx, inst, op, t, args)
    raise error(f"the cpu backend does not support {op} on {t.name}", inst.loc)


def _unsupported(inst, op, t):
    return error(f"the cpu backend does not support '{op}' on {t}", inst.loc)


def _pred_op(b, inst, op, args):
    table = {"add": b.or_, "or": b.or_, "maximum": b.or_, "multiply": b.and_, "and": b.and_,
             "minimum": b.and_, "xor": b.xor}
    if op == Op.NOT:
        return b.not_(args[0])
    if op in table:
        return table[op](*args)
    raise _unsupported(inst, op, "pred")


def _int_op(ctx, inst, op, t: PrimitiveType, args):
    b = ctx.b
    ty = compute_type(t)
    signed = t.is_signed_int
    zero, ones = const(ty, 0), const(ty, -1)
    if op in ("add", "subtract", "multiply", "and", "or", "xor"):
        fn = {"add": b.add, "subtract": b.sub, "multiply": b.mul, "and": b.and_, "or": b.or_,
              "xor": b.xor}[op]
        return fn(*args)
    if op in ("maximum", "minimum"):
        return max_min(b, op, args[0], args[1], t)
    if op == Op.NEGATE:
        return b.sub(zero, args[0])
    if op == Op.NOT:
        return b.xor(args[0], ones)
    if op == Op.ABS:
        x = args[0]
        return b.select(b.icmp_signed("<", x, zero), b.sub(zero, x), x) if signed else x
    if op == Op.SIGN:
        x = args[0]
        if not signed:
            return b.zext(b.icmp_unsigned("!=", x, zero), ty)
        pos = b.zext(b.icmp_signed(">", x, zero), ty)
        neg = b.zext(b.icmp_signed("<", x, zero), ty)
        return b.sub(pos, neg)
    if op == Op.POPCNT:
        return _intrinsic(ctx, "llvm.ctpop", ty, [args[0]])
    if op == Op.COUNT_LEADING_ZEROS:
        return _intrinsic(ctx, "llvm.ctlz", ty, [args[0], const(I1, 0)])
    if op in ("divide", "remainder"):
        return _int_div_rem(b, op, args[0], args[1], ty, signed)
    if op in ("shift-left", "shift-right-logical", "shift-right-arithmetic"):
        x, y = args
        oob = b.icmp_unsigned(">=", y, const(ty, t.bits))
        safe = b.select(oob, zero, y)
        if op == Op.SHIFT_LEFT:
            return b.select(oob, zero, b.shl(x, safe))
        if op == Op.SHIFT_RIGHT_LOGICAL:
            return b.select(oob, zero, b.lshr(x, safe))
        fill = b.select(b.icmp_signed("<", x, zero), ones, zero)
        return b.select(oob, fill, b.ashr(x, safe))
    if op == Op.POWER:
        return _int_power(ctx, args[0], args[1], ty, signed)
    raise _unsupported(inst, op, t.name)


def _int_div_rem(b, op, x, y, ty, signed):
    zero, one, ones = const(ty, 0), const(ty, 1), const(ty, -1)
    y_zero = b.icmp_unsigned("==", y, zero)
    if not signed:
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


def _int_power(ctx, base, exponent, ty, signed):
    """Exponentiation by squaring over the exponent's bits, wrapping; negative exponents per XLA."""
    b = ctx.b
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
    # NaN-propagating, -0 < +0: LLVM's maximum/minimum intrinsics have exactly these semantics.
    name = "llvm.maximum" if op == Op.MAXIMUM else "llvm.minimum"
    return b.call(declare_overloaded(b.module, name, x.type, [x, y]), [x, y])


def _is_finite(ctx, x, t):
    b = ctx.b
    fabs = _intrinsic(ctx, "llvm.fabs", x.type, [x])
    return b.fcmp_ordered("<", fabs, const(x.type, float("inf")))


def _float_op(ctx, inst, op, t: PrimitiveType, args):
    b = ctx.b
    ty = args[0].type
    if op in ("add", "multiply") and ctx.reassociate and t.name in ("f32", "f64"):
        return (b.fadd if op == Op.ADD else b.fmul)(*args, flags=["reassoc"])
    simple = {"add": b.fadd, "subtract": b.fsub, "multiply": b.fmul, "divide": b.fdiv, "remainder": b.frem}
    if op in simple:
        return simple[op](*args)
    if op in ("maximum", "minimum"):
        return max_min(b, op, args[0], args[1], t)
    x = args[0]
    if op == Op.NEGATE:
        return b.fneg(x)
    intrinsic = {"abs": "llvm.fabs", "ceil": "llvm.ceil", "floor": "llvm.floor", "sqrt": "llvm.sqrt",
                 "round-nearest-even": "llvm.rint", "round-nearest-afz": "llvm.round"}.get(op)
    if intrinsic:
        return _intrinsic(ctx, intrinsic, ty, [x])
    if op == Op.SIGN:
        nonzero = b.uitofp(b.fcmp_unordered("une", x, const(ty, 0.0)), ty)
        signed = _intrinsic(ctx, "llvm.copysign", ty, [nonzero, x])
        return b.select(b.fcmp_unordered("uno", x, x), x, signed)
    if op == Op.RSQRT:
        return b.fdiv(const(ty, 1.0), _intrinsic(ctx, "llvm.sqrt", ty, [x]))
    if op == Op.LOGISTIC:
        fn = _mathlib_function(ctx, op, ty)
        if fn is not None:
            return b.call(fn, [x])
        e = call_math(ctx, "exponential", [b.fneg(_intrinsic(ctx, "llvm.fabs", ty, [x]))], ty)
        one = const(ty, 1.0)
        positive = b.fdiv(one, b.fadd(one, e))
        return b.select(b.fcmp_ordered(">=", x, const(ty, 0.0)), positive, b.fdiv(e, b.fadd(one, e)))
    if op in _LIBM:
        return call_math(ctx, op, list(args), ty)
    raise _unsupported(inst, op, t.name)


def parts(b, z):
    return b.extract_value(z, 0), b.extract_value(z, 1)


def make_complex(b, ty, re, im):
    return b.insert_value(b.insert_value(ir.Constant(ty, ir.Undefined), re, 0), im, 1)


def _complex_op(ctx, inst, op, t: PrimitiveType, args):
    """Complex arithmetic on {re, im} structs (the ops the corpus' complex code needs)."""
    b = ctx.b
    ty = compute_type(t)
    (a, c) = parts(b, args[0])
    if op == Op.NEGATE:
        return make_complex(b, ty, b.fneg(a), b.fneg(c))
    if op == Op.ABS:
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
    if op == Op.EXPONENTIAL:
        e = call_math(ctx, "exponential", [a], a.type)
        return make_complex(b, ty, b.fmul(e, call_math(ctx, "cosine", [c], a.type)),
                            b.fmul(e, call_math(ctx, "sine", [c], a.type)))
    if len(args) == 2:
        x, y = parts(b, args[1])
        if op == Op.ADD:
            return make_complex(b, ty, b.fadd(a, x), b.fadd(c, y))
        if op == Op.SUBTRACT:
            return make_complex(b, ty, b.fsub(a, x), b.fsub(c, y))
        if op == Op.MULTIPLY:
            return make_complex(b, ty, b.fsub(b.fmul(a, x), b.fmul(c, y)), b.fadd(b.fmul(a, y), b.fmul(c, x)))
        if op == Op.DIVIDE:
            denominator = b.fadd(b.fmul(x, x), b.fmul(y, y))
            re = b.fdiv(b.fadd(b.fmul(a, x), b.fmul(c, y)), denominator)
            im = b.fdiv(b.fsub(b.fmul(c, x), b.fmul(a, y)), denominator)
            return make_complex(b, ty, re, im)
    raise _unsupported(inst, op, t.name)


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
            kx, ky = _total_order_key(b, x, t), _total_order_key(b, y, t)
            return b.icmp_signed(cmp, kx, ky)
        if direction == "NE":
            return b.fcmp_unordered(cmp, x, y)
        return b.fcmp_ordered(cmp, x, y)
    if t.is_pred:
        return b.icmp_unsigned(cmp, x, y)
    unsigned = (compare_type == "UNSIGNED") or (compare_type is None and t.is_unsigned_int)
    return (b.icmp_unsigned if unsigned else b.icmp_signed)(cmp, x, y)


def _total_order_key(b, x, t):
    ity = ir.IntType(x.type.width if isinstance(x.type, ir.IntType) else (64 if x.type == F64 else 32))
    bits = b.bitcast(x, ity)
    flip = b.lshr(b.ashr(bits, const(ity, ity.width - 1)), const(ity, 1))
    return b.xor(bits, flip)


def to_i64(b, value, t: PrimitiveType):
    if value.type.width == 64:
        return value
    return b.sext(value, I64) if t.is_signed_int else b.zext(value, I64)


def to_bits(b, value, t: PrimitiveType):
    """The raw storage bits of a compute value as an integer."""
    from .types import to_storage
    stored = to_storage(b, value, t)
    if isinstance(stored.type, ir.IntType):
        return stored
    return b.bitcast(stored, ir.IntType(t.bits))


def from_bits(b, bits, t: PrimitiveType):
    from .types import from_storage, storage_type
    sty = storage_type(t)
    stored = bits if isinstance(sty, ir.IntType) else b.bitcast(bits, sty)
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
    from ..shapes import real_type_of
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
