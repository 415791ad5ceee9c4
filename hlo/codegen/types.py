"""LLVM types of HLO element types, and loads/stores of elements in dense buffers.

In registers an element lives in its *compute* type: pred as i1, integers as iN
(signedness is known from the HLO type, not the LLVM type), f16/bf16 as float
holding a value already rounded to the narrow type, f32/f64 as float/double.
In memory every element takes its storage width (pred one byte, bf16 two bytes; the
8- and 4-bit floats and the sub-byte integers one byte: narrow_types.py).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ..diagnostics import error, written_name
from ..shapes import PrimitiveType, Shape
from .narrow_types import decode, encode, is_sub_byte_int, is_table_float, round_to_table_float

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F16 = ir.HalfType()
F32 = ir.FloatType()
F64 = ir.DoubleType()
PTR = ir.PointerType()

NARROW_FLOATS = ("f16", "bf16")


def is_supported_type(t: PrimitiveType) -> bool:
    if t.is_pred:
        return True
    if t.is_integral:
        return t.bits in (8, 16, 32, 64) or is_sub_byte_int(t)
    if t.is_float:
        return t.name in ("f16", "bf16", "f32", "f64") or is_table_float(t)
    return t.is_complex


def check_shape_supported(shape: Shape, inst) -> None:
    """HloError at inst's location when a leaf has an element type the backend lacks."""
    for _, leaf in shape.leaves():
        t = leaf.element_type
        if t is not None and t.is_array_type and not is_supported_type(t):
            raise error(f"the cpu backend does not support element type {t.name} "
                        f"(in {inst.opcode} %{written_name(inst.loc, inst.name)})", inst.loc)


C64 = ir.LiteralStructType([F32, F32])
C128 = ir.LiteralStructType([F64, F64])


def compute_type(t: PrimitiveType) -> ir.Type:
    """Register type of an element; complex numbers are {re, im} structs (numpy's layout)."""
    if t.is_complex:
        return C64 if t.name == "c64" else C128
    if t.is_pred:
        return I1
    if t.is_integral:
        return ir.IntType(t.bits)
    if t.name == "f64":
        return F64
    return F32


def storage_type(t: PrimitiveType) -> ir.Type:
    if t.is_pred or is_sub_byte_int(t) or is_table_float(t):   # one byte each (narrow_types.py)
        return I8
    if t.name == "f16":
        return F16
    if t.name == "bf16":
        return I16
    return compute_type(t)


def round_to(b: ir.IRBuilder, value, t: PrimitiveType):
    """Round an f32 compute value to the narrow type t (no-op for other types)."""
    if t.name == "f16":
        return b.fpext(b.fptrunc(value, F16), F32)
    if t.name == "bf16":
        bits16 = f32_to_bf16(b, value)
        rounded = bf16_to_f32(b, bits16)
        rounded.hlo_bf16_bits = bits16   # rounding it again (storing it) gives these bits: f32_to_bf16
        return rounded
    if is_table_float(t):
        return round_to_table_float(b, value, t)
    return value


def f32_to_bf16(b: ir.IRBuilder, value):
    """Round-to-nearest-even f32 -> bf16 bits; NaN stays a quiet NaN. A value round_to made is
    already rounded (quiet if a NaN): its bits are given back without a second rounding, which
    LLVM cannot see is the identity (the NaN test stays), 9 of the ~16 instructions of a bf16 op."""
    known = getattr(value, "hlo_bf16_bits", None)
    if known is not None:
        return known
    bits = b.bitcast(value, I32)
    rounded = _nearest_even_bf16(b, bits)
    nan = b.fcmp_unordered("uno", value, value)
    quiet = b.or_(bits, ir.Constant(I32, 0x00400000))
    chosen = b.select(nan, quiet, rounded)
    return b.trunc(b.lshr(chosen, ir.Constant(I32, 16)), I16)


def _nearest_even_bf16(b: ir.IRBuilder, bits):
    """f32 bits plus 0x7FFF and the last kept bit: the top 16 bits are then rounded to nearest even."""
    lsb = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    return b.add(bits, b.add(ir.Constant(I32, 0x7FFF), lsb))


def round_bf16_arithmetic(b: ir.IRBuilder, value):
    """round_to(value, bf16) for the result of one IEEE add/subtract/multiply/divide of bf16
    operands, without the NaN test (5 vector instructions instead of 8). Its NaN, if any, is a
    quieted operand NaN or the default NaN: quiet, with the low 16 bits zero as every bf16 value
    has them, so adding at most 0x8000 neither carries into the exponent nor clears the mantissa."""
    bits16 = b.trunc(b.lshr(_nearest_even_bf16(b, b.bitcast(value, I32)), ir.Constant(I32, 16)), I16)
    result = bf16_to_f32(b, bits16)
    result.hlo_bf16_bits = bits16
    return result


def bf16_to_f32(b: ir.IRBuilder, bits16):
    return b.bitcast(b.shl(b.zext(bits16, I32), ir.Constant(I32, 16)), F32)


def to_storage(b: ir.IRBuilder, value, t: PrimitiveType):
    if t.is_pred or is_sub_byte_int(t):
        return b.zext(value, I8)
    if is_table_float(t):
        return encode(b, value, t)
    if t.name == "f16":
        return b.fptrunc(value, F16)
    if t.name == "bf16":
        return f32_to_bf16(b, value)
    return value


def from_storage(b: ir.IRBuilder, value, t: PrimitiveType):
    if t.is_pred:
        return b.icmp_unsigned("!=", value, ir.Constant(I8, 0))
    if is_sub_byte_int(t):
        return b.trunc(value, ir.IntType(t.bits))
    if is_table_float(t):
        return decode(b, value, t)
    if t.name == "f16":
        return b.fpext(value, F32)
    if t.name == "bf16":
        return bf16_to_f32(b, value)
    return value


def strides(shape: Shape) -> list[int]:
    """Element strides of each logical dimension in the shape's physical order."""
    out = [0] * shape.rank
    step = 1
    for d in shape.minor_to_major():
        out[d] = step
        step *= shape.dims[d]
    return out


def linear_offset(b: ir.IRBuilder, shape: Shape, index):
    """Physical element offset (i64) of a logical multi-dimensional index."""
    offset = ir.Constant(I64, 0)
    for value, stride in zip(index, strides(shape)):
        if stride == 0 or shape.rank == 0:
            continue
        offset = add_i64(b, offset, mul_i64(b, value, stride))
    return offset


def _known(value) -> Optional[int]:
    return value.constant if isinstance(value, ir.Constant) and isinstance(value.constant, int) else None


def mul_i64(b: ir.IRBuilder, value, factor: int):
    """value * factor, folded when it is known (llvmlite's builder folds nothing: every index of a
    one-step loop would cost LLVM an instruction to clean up)."""
    known = _known(value)
    if known is not None:
        return ir.Constant(I64, known * factor)
    return value if factor == 1 else b.mul(value, ir.Constant(I64, factor))


def add_i64(b: ir.IRBuilder, x, y):
    """x + y, folded when either is a known 0 or both are known."""
    kx, ky = _known(x), _known(y)
    if kx is not None and ky is not None:
        return ir.Constant(I64, kx + ky)
    if kx == 0:
        return y
    return x if ky == 0 else b.add(x, y)


def element_pointer(b: ir.IRBuilder, base, shape: Shape, index):
    t = shape.element_type
    return b.gep(base, [linear_offset(b, shape, index)], inbounds=True, source_etype=storage_type(t))


def load_element(b: ir.IRBuilder, base, shape: Shape, index):
    t = shape.element_type
    raw = b.load(element_pointer(b, base, shape, index), typ=storage_type(t))
    return from_storage(b, raw, t)


def store_element(b: ir.IRBuilder, value, base, shape: Shape, index) -> None:
    t = shape.element_type
    b.store(to_storage(b, value, t), element_pointer(b, base, shape, index))


def constant_of(t: PrimitiveType, value):
    """An LLVM constant in compute type from a python/numpy scalar."""
    ty = compute_type(t)
    if t.is_complex:
        part = F32 if t.name == "c64" else F64
        z = complex(value)
        return ir.Constant(ty, [ir.Constant(part, z.real), ir.Constant(part, z.imag)])
    if t.is_pred:
        return ir.Constant(I1, int(bool(value)))
    if t.is_integral:
        v = int(value)
        return ir.Constant(ty, v & ((1 << t.bits) - 1))
    return ir.Constant(ty, float(value))
