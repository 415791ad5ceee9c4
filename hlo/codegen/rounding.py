"""reduce-precision and stochastic-convert, computed element by element (ELEMENT_GENERATORS).

Both follow the interpreter (hlo/interpreter/conversions.py), which follows XLA's
evaluator: f16/bf16 values are processed as their f32 value and rounded back.

reduce-precision works on the bits of the f32/f64 value: round the mantissa to
`mantissa_bits` (to nearest, ties to even: add 0111...1 plus the last kept bit, then
clear the dropped bits; a carry into the exponent is right), then, when the exponent is
narrower, overflow to a signed infinity and underflow (at or below the smallest normal
number of the small format: it has no subnormals) to a signed zero. A NaN input stays
that NaN, except that a format without mantissa bits cannot hold one (+inf).

stochastic-convert rounds |x| up when the random bits are below the fraction scaled to
2^bits, saturating to the integer range (NaN gives 0).
"""
from __future__ import annotations

from llvmlite import ir

from ..diagnostics import error
from ..opcodes import Op
from ..shapes import PrimitiveType
from . import scalar_ops
from .elemental import ELEMENT_GENERATORS
from .types import F64, compute_type, round_to


def _int(bits: int, value: int) -> ir.Constant:
    return ir.Constant(ir.IntType(bits), value & ((1 << bits) - 1))


def reduce_precision_bits(b: ir.IRBuilder, x, exponent_bits: int, mantissa_bits: int):
    """x (float or double) rounded through the small format, in the same LLVM type."""
    nbits = 64 if x.type == F64 else 32
    src_m = 52 if nbits == 64 else 23
    src_e = nbits - 1 - src_m
    ity = ir.IntType(nbits)
    bits = b.bitcast(x, ity)
    if mantissa_bits < src_m:
        drop = src_m - mantissa_bits
        last_kept = b.lshr(b.and_(bits, _int(nbits, 1 << drop)), _int(nbits, drop))
        bias = b.add(last_kept, _int(nbits, (1 << (drop - 1)) - 1))
        bits = b.and_(b.add(bits, bias), _int(nbits, ~((1 << drop) - 1)))
    if exponent_bits < src_e:
        exp_mask = ((1 << src_e) - 1) << src_m
        src_bias = (1 << (src_e - 1)) - 1
        small_bias = (1 << (exponent_bits - 1)) - 1
        exponent = b.and_(bits, _int(nbits, exp_mask))
        overflow = b.icmp_unsigned(">", exponent, _int(nbits, (src_bias + small_bias) << src_m))
        underflow = b.icmp_unsigned("<=", exponent, _int(nbits, (src_bias - small_bias) << src_m))
        signed_zero = b.and_(bits, _int(nbits, 1 << (nbits - 1)))
        bits = b.select(overflow, b.or_(signed_zero, _int(nbits, exp_mask)), bits)
        bits = b.select(underflow, signed_zero, bits)
    out = b.bitcast(bits, x.type)
    nan = b.fcmp_unordered("uno", x, x)
    return b.select(nan, x if mantissa_bits > 0 else ir.Constant(x.type, float("inf")), out)


@ELEMENT_GENERATORS.register(Op.REDUCE_PRECISION)
def reduce_precision(elem, inst, index):
    t = inst.shape.element_type
    x = elem.value(inst.operands[0], index)
    rounded = reduce_precision_bits(elem.b, x, inst.attrs["exponent_bits"], inst.attrs["mantissa_bits"])
    return round_to(elem.b, rounded, t)


@ELEMENT_GENERATORS.register(Op.STOCHASTIC_CONVERT)
def stochastic_convert(elem, inst, index):
    operand, random = inst.operands
    if not inst.shape.element_type.is_signed_int:
        raise error(f"the cpu backend compiles stochastic-convert to signed integers only, as XLA does "
                    f"(%{inst.name} gives {inst.shape.element_type.name})", inst.loc)
    x = elem.value(operand, index)
    r = elem.value(random, index)
    return stochastic_round(elem.ctx, x, r, random.shape.element_type, inst.shape.element_type)


def stochastic_round(ctx, x, random, random_type: PrimitiveType, to: PrimitiveType):
    """x (a float compute value) to the signed integer type `to`, rounding |x| up when
    random (unsigned, random_type.bits wide) < floor(fraction * 2^bits)."""
    b = ctx.b
    v = x if x.type == F64 else b.fpext(x, F64)
    bits = random_type.bits
    magnitude = scalar_ops.declare_overloaded(ctx.module, "llvm.fabs", F64, [v])
    floor = scalar_ops.declare_overloaded(ctx.module, "llvm.floor", F64, [v])
    size = b.call(magnitude, [v])
    whole = b.call(floor, [size])
    fraction = b.fsub(size, whole)
    finite = b.fcmp_ordered("<", size, ir.Constant(F64, float("inf")))
    scaled = b.call(floor, [b.fmul(fraction, ir.Constant(F64, float(2 ** bits)))])
    threshold = b.fptoui(b.select(finite, scaled, ir.Constant(F64, 0.0)), ir.IntType(64))
    random64 = b.zext(random, ir.IntType(64)) if bits < 64 else random
    round_up = b.icmp_unsigned("<", random64, threshold)
    lo, hi = -(1 << (to.bits - 1)), (1 << (to.bits - 1)) - 1
    in_range = b.and_(b.fcmp_ordered("<", v, ir.Constant(F64, float(hi))),
                      b.fcmp_ordered(">", v, ir.Constant(F64, float(lo))))
    safe_whole = b.select(in_range, whole, ir.Constant(F64, 0.0))
    rounded = b.add(b.fptosi(safe_whole, ir.IntType(64)), b.zext(round_up, ir.IntType(64)))
    negative = b.icmp_signed("<", b.bitcast(v, ir.IntType(64)), ir.Constant(ir.IntType(64), 0))
    signed = b.select(negative, b.neg(rounded), rounded)
    i64 = ir.IntType(64)
    out = b.select(b.fcmp_ordered(">=", v, ir.Constant(F64, float(hi))), ir.Constant(i64, hi), signed)
    out = b.select(b.fcmp_ordered("<=", v, ir.Constant(F64, float(lo))), ir.Constant(i64, lo), out)
    out = b.select(b.fcmp_unordered("uno", v, v), ir.Constant(i64, 0), out)
    ty = compute_type(to)
    return b.trunc(out, ty) if ty.width < 64 else out

