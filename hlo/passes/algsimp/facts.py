"""What algsimp's rules ask about instructions: constant values, value ranges, lossless
conversions, reducers and their identities, and dimension bookkeeping for reshapes and slices.
"""
from __future__ import annotations

import math
from typing import Optional

import ml_dtypes
import numpy as np

from ...ir import Computation, Instruction
from ...opcodes import BINARY_ELEMENTWISE, OPCODES, Op, ResultType, TypeClass
from ...shapes import PrimitiveType, real_type_of


# =========================================================================== facts about values


def user_count(inst: Instruction) -> int:
    """Distinct users (an instruction using `inst` twice counts once, as in XLA)."""
    return len({id(u) for u in inst.users})


def splat_value(inst: Instruction):
    """The single value of a constant (possibly behind broadcasts) whose elements are all
    bitwise equal (so +0/-0 mixes are not splats, NaN splats are), as a numpy scalar;
    None otherwise."""
    while inst.opcode == Op.BROADCAST:
        inst = inst.operands[0]
    if inst.opcode != Op.CONSTANT:
        return None
    literal = inst.attrs.get("literal")
    if literal is None or literal.elided or literal.is_tuple or literal.array.size == 0:
        return None
    array = literal.array
    first = array.flat[0]
    if array.size > 1 and np.full(array.shape, first, dtype=array.dtype).tobytes() != array.tobytes():
        return None
    return first


def is_all(inst: Instruction, value) -> bool:
    """XLA's IsAll: `inst` is a constant (behind broadcasts) whose elements all equal `value`.
    For floats -0.0 equals 0, as in C++."""
    v = splat_value(inst)
    if v is None:
        return False
    dtype = np.asarray(v).dtype
    if dtype == np.bool_:
        return bool(v) == bool(value)
    if dtype.kind in "iu" or dtype.name in _SMALL_INT_NAMES:
        return isinstance(value, (int, bool, np.integer)) and int(v) == int(value)
    return complex(v) == complex(value)


_SMALL_INT_NAMES = {"int1", "int2", "int4", "uint1", "uint2", "uint4"}


def all_bits_set(t: PrimitiveType):
    """The value with every bit set: true for pred, -1 for signed, the maximum for unsigned."""
    if t.is_pred:
        return True
    if t.is_signed_int:
        return -1
    return int(ml_dtypes.iinfo(t.dtype).max)


def lowest_value(t: PrimitiveType):
    """LiteralUtil::MinValue: -inf for floats with infinities, else the lowest finite value."""
    if t.is_float:
        return -math.inf if has_infinity(t) else float(ml_dtypes.finfo(t.dtype).min)
    return int(ml_dtypes.iinfo(t.dtype).min)


def highest_value(t: PrimitiveType):
    """LiteralUtil::MaxValue: +inf for floats with infinities, else the largest finite value."""
    if t.is_float:
        return math.inf if has_infinity(t) else float(ml_dtypes.finfo(t.dtype).max)
    return int(ml_dtypes.iinfo(t.dtype).max)


def has_infinity(t: PrimitiveType) -> bool:
    with np.errstate(all="ignore"):
        return bool(np.isinf(np.array(np.inf, np.float32).astype(t.dtype).astype(np.float32)))


def cast_preserves_values(frm: PrimitiveType, to: PrimitiveType) -> bool:
    """XLA's primitive_util::CastPreservesValues: converting frm -> to loses nothing."""
    if frm == to or frm.is_pred:
        return True
    if to.is_pred:
        return False
    if to.is_complex:
        return cast_preserves_values(real_type_of(frm), real_type_of(to))
    if frm.is_complex:
        return False
    if frm.is_float and to.is_float:
        a, b = ml_dtypes.finfo(frm.dtype), ml_dtypes.finfo(to.dtype)
        return ((not has_infinity(frm) or has_infinity(to)) and a.nmant <= b.nmant and a.nexp <= b.nexp
                and a.minexp - a.nmant >= b.minexp - b.nmant and a.maxexp <= b.maxexp)
    if not frm.is_integral:
        return False
    from_bits = frm.bits - 1 if frm.is_signed_int else frm.bits
    if to.is_float:
        info = ml_dtypes.finfo(to.dtype)
        return from_bits <= info.nmant + 1 and frm.bits - 1 < info.maxexp
    if frm.is_signed_int and to.is_unsigned_int:
        return False
    return from_bits <= (to.bits - 1 if to.is_signed_int else to.bits)


def is_non_negative(inst: Instruction) -> bool:
    """A conservative subset of XLA's IsNonNegative (real types only)."""
    if any(op.shape.is_array and op.shape.element_type.is_complex for op in inst.operands):
        return False
    t = inst.shape.element_type if inst.shape.is_array else None
    if t is None:
        return False
    op = inst.opcode
    if op == Op.MULTIPLY:
        return inst.operands[0] is inst.operands[1] and not t.is_signed_int
    if op == Op.EXPONENTIAL:
        return True
    if op == Op.ABS:
        return not t.is_signed_int or is_non_negative(inst.operands[0])
    if op == Op.BROADCAST:
        return is_non_negative(inst.operands[0])
    if op == Op.CONSTANT and inst.shape.rank == 0 and t.is_arithmetic and not t.is_complex:
        v = splat_value(inst)
        return v is not None and not np.isnan(float(v)) and not np.signbit(float(v))
    if op == Op.IOTA:
        n = inst.shape.dims[inst.attrs["iota_dimension"]]
        return not t.is_signed_int or t.bits >= 64 or n <= 2 ** (t.bits - 1)
    if op == Op.MAXIMUM:
        return is_non_negative(inst.operands[0]) or is_non_negative(inst.operands[1])
    if op == Op.MINIMUM:
        return is_non_negative(inst.operands[0]) and is_non_negative(inst.operands[1])
    if op == Op.SELECT:
        return is_non_negative(inst.operands[1]) and is_non_negative(inst.operands[2])
    return False


# =========================================================================== reducers


_IDENTITY = {  # reducer opcode -> function of the element type giving its identity
    Op.ADD: lambda t: 0,
    Op.MULTIPLY: lambda t: 1,
    Op.MAXIMUM: lowest_value,
    Op.MINIMUM: highest_value,
    Op.AND: all_bits_set,
    Op.OR: lambda t: False if t.is_pred else 0,
    Op.XOR: lambda t: False if t.is_pred else 0,
}


def scalar_binary_reducer(comp: Computation) -> Optional[tuple[str, bool]]:
    """(opcode, swapped) when `comp` is `op(p0, p1)` (swapped: `op(p1, p0)`) over two scalars."""
    params = comp.parameters
    root = comp.root
    if len(params) != 2 or root is None or len(root.operands) != 2 or root.opcode not in BINARY_ELEMENTWISE:
        return None
    if any(not p.shape.is_scalar for p in params) or not root.shape.is_scalar:
        return None
    # A reducer maps (T, T) to T: not compare (pred), complex (T's complex type) ...
    if root.info.result_type is not ResultType.SAME or root.shape.element_type != params[0].shape.element_type:
        return None
    if root.operands == [params[0], params[1]]:
        return root.opcode, False
    if root.operands == [params[1], params[0]]:
        return root.opcode, True
    return None


def init_is_identity(reducer: Optional[tuple[str, bool]], init: Instruction) -> bool:
    if reducer is None or reducer[0] not in _IDENTITY:
        return False
    t = init.shape.element_type
    if type_class(t) not in OPCODES[reducer[0]].operand_types:  # and/or/xor of floats: no bits to set
        return False
    return is_all(init, _IDENTITY[reducer[0]](t))


def type_class(t: PrimitiveType) -> TypeClass:
    """The class of element types `t` belongs to (for the table's operand types)."""
    if t.is_pred:
        return TypeClass.PRED
    if t.is_signed_int:
        return TypeClass.SINT
    if t.is_unsigned_int:
        return TypeClass.UINT
    return TypeClass.COMPLEX if t.is_complex else TypeClass.FLOAT


# =========================================================================== shape helpers


def is_zero_elements(inst: Instruction) -> bool:
    return inst.shape.is_array and inst.shape.element_count() == 0


def broadcast_dims(inst: Instruction) -> tuple[int, ...]:
    """A broadcast's `dimensions` (the attribute may be omitted for a scalar operand)."""
    return tuple(inst.attrs.get("dimensions", ()))


def map_dims_through_reshape(src: tuple[int, ...], dst: tuple[int, ...], src_dims) -> Optional[list[int]]:
    """For each dim in `src_dims` (increasing), the reshape-output dim holding the same index
    (same size and same product of the dims before it), in increasing order; None if some
    dim is modified by the reshape. Row-major reshapes keep such a dim's index intact."""
    if 0 in src or math.prod(src) != math.prod(dst):
        return None
    out: list[int] = []
    for d in src_dims:
        prefix = math.prod(src[:d])
        start = out[-1] + 1 if out else 0
        match = next((j for j in range(start, len(dst))
                      if dst[j] == src[d] and math.prod(dst[:j]) == prefix), None)
        if match is None:
            return None
        out.append(match)
    return out


def ones_inserted_or_deleted(src: tuple[int, ...], dst: tuple[int, ...]):
    """(deleted src dims, inserted dst dims) when a reshape src -> dst only removes or adds
    dimensions of size 1; None otherwise (XLA's ReshapeMerelyInsertsOrDeletes1SizedDimensions)."""
    deleted, inserted = [], []
    i = j = 0
    while i < len(src) or j < len(dst):
        if i < len(src) and j < len(dst) and src[i] == dst[j]:
            i, j = i + 1, j + 1
        elif i < len(src) and src[i] == 1:
            deleted.append(i)
            i += 1
        elif j < len(dst) and dst[j] == 1:
            inserted.append(j)
            j += 1
        else:
            return None
    return deleted, inserted


def slice_dim_size(start: int, limit: int, stride: int) -> int:
    return max(0, -(-(limit - start) // stride))
