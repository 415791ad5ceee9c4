"""The rewrite rules of `algsimp` (XLA's AlgebraicSimplifier), one function per rule.

A rule is `rule(ctx, inst) -> Instruction | None`: it returns the instruction that
computes the same value as `inst` (an existing one, or one it built with the
builders of `ctx`, see hlo/passes/algsimp.py), `inst` itself when it changed
`inst` in place, or None when it does not apply. A rule decides before it builds,
so that a rule that does not apply leaves nothing behind. `RULES` maps each opcode
to its rules, tried in order. docs/ALGSIMP.md lists every rule with its conditions.

Float semantics follow XLA: `x + 0 -> x` is done for +0 and -0 (for x = -0.0 and a
+0.0 constant the result changes only in the sign of a zero), while rules that
would change NaN or infinity results (`x * 0 -> 0`, `x - x -> 0`, `x == x -> true`)
are restricted to integer types.
"""
from __future__ import annotations

import math
from typing import Optional

import ml_dtypes
import numpy as np

from ..attributes import DotDims
from ..interpreter.elementwise import compare as compare_kernel
from ..ir import Computation, Instruction
from ..shapes import PrimitiveType, Shape
from ..opcodes import Op

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
        component = {"c64": "f32", "c128": "f64"}
        frm_part = _type_named(component[frm.name]) if frm.is_complex else frm
        return cast_preserves_values(frm_part, _type_named(component[to.name]))
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


def _type_named(name: str) -> PrimitiveType:
    from ..shapes import PRIMITIVE_TYPES
    return PRIMITIVE_TYPES[name]


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
    "add": lambda t: 0,
    "multiply": lambda t: 1,
    "maximum": lowest_value,
    "minimum": highest_value,
    "and": all_bits_set,
    "or": lambda t: False if t.is_pred else 0,
    "xor": lambda t: False if t.is_pred else 0,
}


def scalar_binary_reducer(comp: Computation) -> Optional[tuple[str, bool]]:
    """(opcode, swapped) when `comp` is `op(p0, p1)` (swapped: `op(p1, p0)`) over two scalars."""
    params = comp.parameters
    root = comp.root
    if len(params) != 2 or root is None or len(root.operands) != 2 or root.opcode not in _BINARY_ELEMENTWISE:
        return None
    if any(not p.shape.is_scalar for p in params) or not root.shape.is_scalar:
        return None
    if root.operands == [params[0], params[1]]:
        return root.opcode, False
    if root.operands == [params[1], params[0]]:
        return root.opcode, True
    return None


_BINARY_ELEMENTWISE = {"add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum",
                       "and", "or", "xor", "atan2", "shift-left", "shift-right-arithmetic",
                       "shift-right-logical"}
_COMMUTATIVE = {"add", "multiply", "maximum", "minimum", "and", "or", "xor"}


def init_is_identity(reducer: Optional[tuple[str, bool]], init: Instruction) -> bool:
    if reducer is None or reducer[0] not in _IDENTITY:
        return False
    t = init.shape.element_type
    if reducer[0] in ("and", "or", "xor") and not (t.is_pred or t.is_integral):
        return False
    return is_all(init, _IDENTITY[reducer[0]](t))


# =========================================================================== shape helpers


def is_zero_elements(inst: Instruction) -> bool:
    return inst.shape.is_array and inst.shape.element_count() == 0


def broadcast_dims(inst: Instruction) -> tuple[int, ...]:
    """A broadcast's `dimensions` (the attribute may be omitted for a scalar operand)."""
    return tuple(inst.attrs.get("dimensions", ()))


def inverse_permutation(perm) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for i, p in enumerate(perm):
        inv[p] = i
    return tuple(inv)


def is_identity_permutation(perm) -> bool:
    return tuple(perm) == tuple(range(len(perm)))


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


# =========================================================================== elementwise arithmetic


def _without_identity(ctx, inst, identity, commutative: bool):
    """The other operand of a binary op whose right operand (or, if `commutative`, either) is all `identity`."""
    a, b = inst.operands
    if is_all(b, identity) and ctx.can_replace(inst, a):
        return a
    if commutative and is_all(a, identity) and ctx.can_replace(inst, b):
        return b
    return None


def add_zero(ctx, inst):
    """A + 0 -> A, 0 + A -> A (all types; floats: +0 and -0, as XLA)."""
    return _without_identity(ctx, inst, 0, commutative=True)


def subtract_self(ctx, inst):
    """A - A -> 0 for integers (not floats: inf - inf and NaN - NaN are NaN)."""
    a, b = inst.operands
    if a is b and inst.shape.element_type.is_integral:
        return ctx.splat(0, inst.shape)
    return None


def subtract_zero(ctx, inst):
    """A - 0 -> A."""
    return _without_identity(ctx, inst, 0, commutative=False)


def multiply_one(ctx, inst):
    """A * 1 -> A, 1 * A -> A (exact for every type)."""
    return _without_identity(ctx, inst, 1, commutative=True)


def multiply_zero(ctx, inst):
    """A * 0 -> 0, 0 * A -> 0 for integers only (floats: NaN * 0 and inf * 0 are NaN)."""
    if not inst.shape.element_type.is_integral:
        return None
    a, b = inst.operands
    for zero in (a, b):
        if is_all(zero, 0) and ctx.can_replace(inst, zero):
            return zero
    return None


def multiply_negations(ctx, inst):
    """(-A) * (-B) -> A * B (in place)."""
    a, b = inst.operands
    if a.opcode == Op.NEGATE and b.opcode == Op.NEGATE:
        inst.set_operands([a.operands[0], b.operands[0]])
        return inst
    return None


def divide_one(ctx, inst):
    """A / 1 -> A."""
    return _without_identity(ctx, inst, 1, commutative=False)


def power_special_exponents(ctx, inst):
    """pow(A, 0) -> 1, pow(A, 1) -> A, pow(A, 2) -> A*A, pow(A, 3) -> A*(A*A),
    pow(A, -1) -> 1/A (float and complex only: integer pow with a negative exponent is not 1/A)."""
    a, b = inst.operands
    if is_all(b, 0):
        return ctx.splat(1, inst.shape)
    if is_all(b, 1) and ctx.can_replace(inst, a):
        return a
    if is_all(b, 2):
        return ctx.add("multiply", inst.shape, [a, a], final=True)
    if is_all(b, 3):
        square = ctx.add("multiply", inst.shape, [a, a])
        return ctx.add("multiply", inst.shape, [a, square], final=True)
    t = inst.shape.element_type
    if is_all(b, -1) and (t.is_float or t.is_complex) and a.shape.element_type == t:
        return ctx.add("divide", inst.shape, [ctx.splat(1, a.shape), a], final=True)
    return None


def and_identities(ctx, inst):
    """A & true -> A, A & false -> false (pred); A & ~0 -> A, A & 0 -> 0 (integers)."""
    a, b = inst.operands
    t = inst.shape.element_type
    if t.is_pred or t.is_integral:
        for x, other in ((a, b), (b, a)):
            if is_all(other, all_bits_set(t)) and ctx.can_replace(inst, x):
                return x
    for zero in (b, a):
        if is_all(zero, 0) and ctx.can_replace(inst, zero):
            return zero
    return None


def or_identities(ctx, inst):
    """A | true -> true, A | false -> A (pred); A | ~0 -> ~0, A | 0 -> A (integers)."""
    a, b = inst.operands
    t = inst.shape.element_type
    if t.is_pred or t.is_integral:
        for ones in (b, a):
            if is_all(ones, all_bits_set(t)) and ctx.can_replace(inst, ones):
                return ones
    for x, other in ((a, b), (b, a)):
        if is_all(other, 0) and ctx.can_replace(inst, x):
            return x
    return None


def xor_identities(ctx, inst):
    """A ^ A -> 0 (false), A ^ 0 -> A."""
    a, b = inst.operands
    if a is b:
        return ctx.splat(0, inst.shape)
    for x, other in ((a, b), (b, a)):
        if is_all(other, 0) and ctx.can_replace(inst, x):
            return x
    return None


def minmax_same_operands(ctx, inst):
    """max(A, A) -> A, min(A, A) -> A."""
    a, b = inst.operands
    if a is b and ctx.can_replace(inst, a):
        return a
    return None


def minmax_neutral_bound(ctx, inst):
    """max(A, lowest) -> A, min(A, highest) -> A: integers, and floats (lowest = -inf,
    highest = +inf, or the finite extremes for types without infinities); exact
    because maximum/minimum propagate NaN."""
    t = inst.shape.element_type
    if not (t.is_integral or t.is_float):
        return None
    bound = lowest_value(t) if inst.opcode == Op.MAXIMUM else highest_value(t)
    a, b = inst.operands
    for x, other in ((a, b), (b, a)):
        if is_all(other, bound) and ctx.can_replace(inst, x):
            return x
    return None


def minmax_nested(ctx, inst):
    """max(max(A, B), B) -> max(A, B) (any operand order inside), max(A, max(A, B)) -> max(A, B);
    the same for min."""
    a, b = inst.operands
    if a.opcode == inst.opcode and b in a.operands and ctx.can_replace(inst, a):
        return a
    if b.opcode == inst.opcode and b.operands[0] is a and ctx.can_replace(inst, b):
        return b
    return None


def clamp_of_clamp(ctx, inst):
    """clamp(lo, clamp(lo, X, hi), hi) -> clamp(lo, X, hi)."""
    lo, x, hi = inst.operands
    if x.opcode == Op.CLAMP and x.operands[0] is lo and x.operands[2] is hi and ctx.can_replace(inst, x):
        return x
    return None


def exp_of_zero(ctx, inst):
    """exp(0) -> 1."""
    if is_all(inst.operands[0], 0):
        return ctx.splat(1, inst.shape)
    return None


def double_negation(ctx, inst):
    """negate(negate(A)) -> A; not(not(A)) -> A."""
    inner = inst.operands[0]
    if inner.opcode == inst.opcode and ctx.can_replace(inst, inner.operands[0]):
        return inner.operands[0]
    return None


def abs_of_non_negative(ctx, inst):
    """abs(A) -> A when A is known to be >= 0, e.g. abs(abs(A)) for floats (not for signed
    integers: abs(INT_MIN) is negative)."""
    a = inst.operands[0]
    if is_non_negative(a) and ctx.can_replace(inst, a):
        return a
    return None


def real_imag_of_real(ctx, inst):
    """real(A) -> A and imag(A) -> 0 when A is not complex; real/imag(complex(R, I)) -> R / I."""
    a = inst.operands[0]
    if a.opcode == Op.COMPLEX:
        part = a.operands[0 if inst.opcode == Op.REAL else 1]
        return part if ctx.can_replace(inst, part) else None
    if a.shape.element_type.is_complex:
        return None
    if inst.opcode == Op.REAL:
        return a if ctx.can_replace(inst, a) else None
    return ctx.splat(0, inst.shape)


def complex_of_parts(ctx, inst):
    """complex(real(C), imag(C)) -> C."""
    r, i = inst.operands
    if r.opcode == Op.REAL and i.opcode == Op.IMAG and r.operands[0] is i.operands[0] \
            and ctx.can_replace(inst, r.operands[0]):
        return r.operands[0]
    return None


# =========================================================================== select and compare


def select_same_branches(ctx, inst):
    """select(P, A, A) -> A."""
    _, a, b = inst.operands
    if a is b and ctx.can_replace(inst, a):
        return a
    return None


def select_constant_predicate(ctx, inst):
    """select(true, A, B) -> A, select(false, A, B) -> B."""
    p, a, b = inst.operands
    v = splat_value(p)
    if v is None:
        return None
    chosen = a if bool(v) else b
    return chosen if ctx.can_replace(inst, chosen) else None


def select_of_not(ctx, inst):
    """select(not(P), A, B) -> select(P, B, A)."""
    p, a, b = inst.operands
    if p.opcode == Op.NOT:
        return ctx.add("select", inst.shape, [p.operands[0], b, a], final=True)
    return None


def select_pred_constants(ctx, inst):
    """On pred: select(P, true, false) -> P, select(P, false, true) -> not(P)."""
    if not inst.shape.element_type.is_pred:
        return None
    p, a, b = inst.operands
    if is_all(a, True) and is_all(b, False) and ctx.can_replace(inst, p):
        return p
    if is_all(a, False) and is_all(b, True) and ctx.same_shape(inst.shape, p.shape):
        return ctx.add("not", inst.shape, [p], final=True)
    return None


_NEGATED = {"EQ": False, "NE": True, "LT": True, "GT": True, "LE": False, "GE": False}


def compare_same_operands(ctx, inst):
    """compare(A, A): EQ/GE/LE -> true, NE/LT/GT -> false, integers only (NaN != NaN)."""
    a, b = inst.operands
    if a is b and a.shape.element_type.is_integral:
        return ctx.splat(not _NEGATED[inst.attrs["direction"]], inst.shape)
    return None


def compare_constants(ctx, inst):
    """compare of two splat constants (constants or broadcasts of constants whose elements are
    all equal) -> a splat of the folded result. Other constant compares are left to
    constant-folding."""
    a, b = inst.operands
    va, vb = splat_value(a), splat_value(b)
    if va is None or vb is None or a.shape.element_type != b.shape.element_type:
        return None
    try:
        result = compare_kernel(np.asarray(va), np.asarray(vb), inst.attrs["direction"], inst.attrs.get("type"))
    except ValueError:  # e.g. an ordering compare of complex values: not ours to diagnose
        return None
    return ctx.splat(bool(result), inst.shape)


def compare_unsigned_with_zero(ctx, inst):
    """Unsigned: X < 0 -> false, X >= 0 -> true, 0 > X -> false, 0 <= X -> true."""
    a, b = inst.operands
    if not a.shape.element_type.is_unsigned_int:
        return None
    direction = inst.attrs["direction"]
    if is_all(b, 0) and direction in ("LT", "GE"):
        return ctx.splat(direction == "GE", inst.shape)
    if is_all(a, 0) and direction in ("GT", "LE"):
        return ctx.splat(direction == "LE", inst.shape)
    return None


def compare_pred_with_constant(ctx, inst):
    """On pred operands: A != false -> A, A == true -> A (either side)."""
    a, b = inst.operands
    if not a.shape.element_type.is_pred:
        return None
    neutral = {"NE": False, "EQ": True}.get(inst.attrs["direction"])
    if neutral is None:
        return None
    for x, other in ((a, b), (b, a)):
        if is_all(other, neutral) and ctx.can_replace(inst, x):
            return x
    return None


# =========================================================================== conversions and copies


def convert_same_type(ctx, inst):
    """convert(A) to A's own element type -> A."""
    a = inst.operands[0]
    if a.shape.element_type == inst.shape.element_type and ctx.can_replace(inst, a):
        return a
    return None


def convert_round_trip(ctx, inst):
    """convert(convert(A, T1), T0) -> A when A has type T0 and T0 -> T1 is lossless
    (s8 -> s32 -> s8, f16 -> f32 -> f16, ...; XLA's IsConvertPairNoOp)."""
    inner = inst.operands[0]
    if inner.opcode != Op.CONVERT:
        return None
    a = inner.operands[0]
    if a.shape.element_type == inst.shape.element_type \
            and cast_preserves_values(a.shape.element_type, inner.shape.element_type) \
            and ctx.can_replace(inst, a):
        return a
    return None


def operand_of_same_shape(ctx, inst):
    """An op producing its operand's own shape leaves it as it is -> A: bitcast-convert(A) to A's own
    type, reshape(A) to A's shape, slice(A) covering all of A, dynamic-slice(A, ...) of A's whole
    shape (the clamped start is 0)."""
    a = inst.operands[0]
    return a if ctx.can_replace(inst, a) else None


def bitcast_convert_chain(ctx, inst):
    """bitcast-convert(bitcast-convert(A)) -> bitcast-convert(A) when that is a valid
    bitcast-convert (A -> result widths and dimensions line up)."""
    inner = inst.operands[0]
    if inner.opcode != Op.BITCAST_CONVERT:
        return None
    a = inner.operands[0]
    if not _bitcast_convert_fits(a.shape, inst.shape):
        return None
    if a.shape.element_type == inst.shape.element_type and ctx.can_replace(inst, a):
        return a
    return ctx.add("bitcast-convert", inst.shape, [a], final=True)


def _bitcast_convert_fits(frm: Shape, to: Shape) -> bool:
    fb, tb = frm.element_type.bits, to.element_type.bits
    if fb == tb:
        return frm.dims == to.dims
    if fb > tb:
        return to.dims == frm.dims + (fb // tb,) and fb % tb == 0
    return tb % fb == 0 and frm.dims == to.dims + (tb // fb,)


def copy_or_bitcast_noop(ctx, inst):
    """copy(A) -> A and bitcast(A) -> A when the shapes are equal, layouts included
    (a copy that changes the layout is kept). A copy at the entry root with a sharding stays."""
    a = inst.operands[0]
    if inst.opcode == Op.COPY and inst.sharding is not None and ctx.is_entry_root(inst):
        return None
    if inst.opcode == Op.BITCAST and a.shape.element_type != inst.shape.element_type:
        return None
    return a if ctx.can_replace(inst, a) else None


def copy_of_copy(ctx, inst):
    """copy(copy(A)) -> copy(A) (or A when A already has the final layout)."""
    inner = inst.operands[0]
    if inner.opcode != Op.COPY:
        return None
    a = inner.operands[0]
    if ctx.can_replace(inst, a):
        return a
    return ctx.add("copy", inst.shape, [a], final=True)


def bitcast_of_bitcast(ctx, inst):
    """bitcast(bitcast(A)) -> bitcast(A) (or A when the shapes are equal)."""
    inner = inst.operands[0]
    if inner.opcode != Op.BITCAST:
        return None
    a = inner.operands[0]
    if a.shape.element_type == inst.shape.element_type and ctx.can_replace(inst, a):
        return a
    return ctx.add("bitcast", inst.shape, [a], final=True)


def reduce_precision_noop(ctx, inst):
    """reduce-precision to the operand type's own exponent and mantissa widths -> operand."""
    a = inst.operands[0]
    t = a.shape.element_type
    if not t.is_float:
        return None
    info = ml_dtypes.finfo(t.dtype)
    if inst.attrs["exponent_bits"] == info.nexp and inst.attrs["mantissa_bits"] == info.nmant \
            and ctx.can_replace(inst, a):
        return a
    return None


# =========================================================================== reshape, transpose, broadcast


def reshape_of_reshape(ctx, inst):
    """reshape(reshape(A)) -> reshape(A)."""
    inner = inst.operands[0]
    if inner.opcode != Op.RESHAPE:
        return None
    return ctx.add("reshape", inst.shape, [inner.operands[0]], final=True)


def reshape_of_broadcast(ctx, inst):
    """reshape(broadcast(X)) -> broadcast(X) when the reshape leaves X's dimensions intact
    (always for a scalar X)."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST:
        return None
    x = inner.operands[0]
    dims = tuple(broadcast_dims(inner))
    if list(dims) != sorted(dims):
        return None
    new_dims = map_dims_through_reshape(inner.shape.dims, inst.shape.dims, dims)
    if new_dims is None:
        return None
    return ctx.add("broadcast", inst.shape, [x], {"dimensions": tuple(new_dims)}, final=True)


def reshape_zero_elements(ctx, inst):
    """A reshape to a zero-element shape -> an empty constant."""
    if inst.shape.element_count() != 0 or inst.operands[0].opcode == Op.CONSTANT:
        return None
    empty = np.zeros(inst.shape.dims, dtype=inst.shape.element_type.dtype)
    return ctx.constant_array(empty, inst.shape, final=True)


def transpose_identity(ctx, inst):
    """transpose(A) with the identity permutation -> A (same layout required)."""
    a = inst.operands[0]
    if is_identity_permutation(inst.attrs["dimensions"]) and ctx.can_replace(inst, a):
        return a
    return None


def transpose_of_transpose(ctx, inst):
    """transpose(transpose(A, p1), p2) -> transpose(A, p1[p2[i]])."""
    inner = inst.operands[0]
    if inner.opcode != Op.TRANSPOSE:
        return None
    p1, p2 = inner.attrs["dimensions"], inst.attrs["dimensions"]
    perm = tuple(p1[p2[i]] for i in range(len(p2)))
    a = inner.operands[0]
    if is_identity_permutation(perm) and ctx.can_replace(inst, a):
        return a
    return ctx.add("transpose", inst.shape, [a], {"dimensions": perm}, final=True)


def transpose_of_degenerate_dims(ctx, inst):
    """A transpose that only moves dimensions of size 1 -> reshape."""
    perm = inst.attrs["dimensions"]
    dims = inst.shape.dims
    kept = [perm[i] for i in range(len(perm)) if dims[i] != 1]
    if len(kept) == len(perm) or kept != sorted(kept):
        return None
    return ctx.add("reshape", inst.shape, [inst.operands[0]], final=True)


def transpose_of_broadcast(ctx, inst):
    """transpose(broadcast(X)) -> broadcast(X) when the transpose keeps X's dimensions in order."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST:
        return None
    dims = tuple(broadcast_dims(inner))
    if list(dims) != sorted(dims):
        return None
    inv = inverse_permutation(inst.attrs["dimensions"])
    new_dims = tuple(inv[d] for d in dims)
    if list(new_dims) != sorted(new_dims):
        return None
    return ctx.add("broadcast", inst.shape, [inner.operands[0]], {"dimensions": new_dims}, final=True)


def broadcast_as_reshape(ctx, inst):
    """broadcast(X) adding no elements -> reshape(X) (sorted dimensions) or transpose(X)
    (same rank, unsorted dimensions)."""
    x = inst.operands[0]
    dims = tuple(broadcast_dims(inst))
    if inst.shape.element_count() != x.shape.element_count():
        return None
    if list(dims) == sorted(dims):
        if ctx.can_replace(inst, x):
            return x
        return ctx.add("reshape", inst.shape, [x], final=True)
    if inst.shape.rank == x.shape.rank:
        return ctx.add("transpose", inst.shape, [x], {"dimensions": inverse_permutation(dims)}, final=True)
    return None


def broadcast_of_broadcast(ctx, inst):
    """broadcast(broadcast(X, d1), d2) -> broadcast(X, d2[d1[i]])."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST:
        return None
    outer = broadcast_dims(inst)
    dims = tuple(outer[d] for d in broadcast_dims(inner))
    return ctx.add("broadcast", inst.shape, [inner.operands[0]], {"dimensions": dims}, final=True)


def broadcast_of_degenerate_reshape(ctx, inst):
    """broadcast(reshape(X)) where the reshape only inserts size-1 dimensions -> broadcast(X)."""
    inner = inst.operands[0]
    if inner.opcode != Op.RESHAPE:
        return None
    change = ones_inserted_or_deleted(inner.operands[0].shape.dims, inner.shape.dims)
    if change is None or change[0]:
        return None
    inserted = set(change[1])
    dims = tuple(d for i, d in enumerate(broadcast_dims(inst)) if i not in inserted)
    return ctx.add("broadcast", inst.shape, [inner.operands[0]], {"dimensions": dims}, final=True)


def broadcast_of_iota(ctx, inst):
    """broadcast(iota) -> iota along the mapped dimension."""
    inner = inst.operands[0]
    if inner.opcode != Op.IOTA:
        return None
    dim = broadcast_dims(inst)[inner.attrs["iota_dimension"]]
    return ctx.add("iota", inst.shape, [], {"iota_dimension": dim}, final=True)


def broadcast_drop_degenerate_dims(ctx, inst):
    """broadcast(X) with size-1 dimensions in X -> broadcast(reshape(X) without them)."""
    x = inst.operands[0]
    if 1 not in x.shape.dims:
        return None
    dims = tuple(d for d, n in zip(broadcast_dims(inst), x.shape.dims) if n != 1)
    return ctx.add("broadcast", inst.shape, [ctx.squeeze(x)], {"dimensions": dims}, final=True)


def iota_trivial(ctx, inst):
    """iota whose iota dimension has size <= 1 -> zeros."""
    if inst.shape.dims[inst.attrs["iota_dimension"]] <= 1:
        return ctx.splat(0, inst.shape)
    return None


# =========================================================================== slice, reverse, pad, concatenate


def slice_of_slice(ctx, inst):
    """slice(slice(A)) -> one slice of A (strides multiply)."""
    inner = inst.operands[0]
    if inner.opcode != Op.SLICE:
        return None
    ranges = []
    for (s2, _, t2), (s1, _, t1), n in zip(inst.attrs["slice"], inner.attrs["slice"], inst.shape.dims):
        start, stride = s1 + s2 * t1, t1 * t2
        ranges.append((start, start + (n - 1) * stride + 1, stride) if n else (0, 0, 1))
    return ctx.add("slice", inst.shape, [inner.operands[0]], {"slice": tuple(ranges)}, final=True)


def slice_of_broadcast(ctx, inst):
    """slice(broadcast(X)) -> broadcast(slice(X)), or broadcast(X) when only the broadcast's
    new dimensions are sliced."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST:
        return None
    x = inner.operands[0]
    dims = broadcast_dims(inner)
    ranges = tuple(inst.attrs["slice"][d] for d in dims)
    if all(r == (0, n, 1) for r, n in zip(ranges, x.shape.dims)):
        return ctx.add("broadcast", inst.shape, [x], {"dimensions": tuple(dims)}, final=True)
    sliced = ctx.add("slice", ctx.array_shape(x.shape.element_type, [slice_dim_size(*r) for r in ranges]),
                     [x], {"slice": ranges})
    return ctx.add("broadcast", inst.shape, [sliced], {"dimensions": tuple(dims)}, final=True)


def slice_of_pad(ctx, inst):
    """slice(pad(X, v)): only padding -> broadcast(v); exactly X -> X; inside X -> slice(X)."""
    pad = inst.operands[0]
    if pad.opcode != Op.PAD:
        return None
    x, value = pad.operands
    undoes, inside, starts, limits = True, True, [], []
    for (start, limit, stride), (lo, hi, interior), size in zip(inst.attrs["slice"], pad.attrs["padding"],
                                                               pad.shape.dims):
        if limit <= lo or start >= size - hi:
            return ctx.add("broadcast", inst.shape, [value], {"dimensions": ()}, final=True)
        undoes &= start == lo and stride - 1 == interior
        inside &= start >= lo and limit <= size - hi and interior == 0 and stride == 1
        starts.append(start - lo)
        limits.append(limit - lo)
    if undoes and ctx.can_replace(inst, x):
        return x
    if inside:
        ranges = tuple((s, l, 1) for s, l in zip(starts, limits))
        return ctx.add("slice", inst.shape, [x], {"slice": ranges}, final=True)
    return None


def slice_of_concatenate(ctx, inst):
    """An unstrided slice of a concatenate reading a single operand -> that operand or a slice
    of it; reading a run of operands -> a slice of their concatenate."""
    concat = inst.operands[0]
    if concat.opcode != Op.CONCATENATE or any(r[2] != 1 for r in inst.attrs["slice"]):
        return None
    dim = concat.attrs["dimensions"][0]
    start, limit, _ = inst.attrs["slice"][dim]
    offset, first, last, first_offset = 0, None, None, 0
    for i, piece in enumerate(concat.operands):
        size = piece.shape.dims[dim]
        if first is None and offset <= start < offset + size:
            first, first_offset = i, offset
        offset += size
        if first is not None and offset >= limit:
            last = i
            break
    if first is None or last is None or (first == 0 and last == len(concat.operands) - 1):
        return None
    pieces = concat.operands[first:last + 1]
    if len(pieces) == 1 and ctx.can_replace(inst, pieces[0]):
        return pieces[0]
    source = pieces[0]
    if len(pieces) > 1:
        dims = list(pieces[0].shape.dims)
        dims[dim] = sum(p.shape.dims[dim] for p in pieces)
        source = ctx.add("concatenate", ctx.array_shape(inst.shape.element_type, dims), pieces,
                         {"dimensions": (dim,)})
    ranges = list(inst.attrs["slice"])
    ranges[dim] = (start - first_offset, limit - first_offset, 1)
    return ctx.add("slice", inst.shape, [source], {"slice": tuple(ranges)}, final=True)


def reverse_trivial(ctx, inst):
    """reverse(A) over dimensions of size 1 only -> A."""
    a = inst.operands[0]
    if all(inst.shape.dims[d] == 1 for d in inst.attrs["dimensions"]) and ctx.can_replace(inst, a):
        return a
    return None


def reverse_of_reverse(ctx, inst):
    """reverse(reverse(A, d1), d2) -> A when d1 = d2, else reverse(A, d1 xor d2)."""
    inner = inst.operands[0]
    if inner.opcode != Op.REVERSE:
        return None
    dims = tuple(sorted(set(inst.attrs["dimensions"]) ^ set(inner.attrs["dimensions"])))
    a = inner.operands[0]
    if not dims:
        return a if ctx.can_replace(inst, a) else None
    return ctx.add("reverse", inst.shape, [a], {"dimensions": dims}, final=True)


def reverse_of_broadcast(ctx, inst):
    """reverse(broadcast(X)) over dimensions the broadcast added -> broadcast(X) (the values do
    not vary along them)."""
    inner = inst.operands[0]
    if inner.opcode != Op.BROADCAST or set(inst.attrs["dimensions"]) & set(broadcast_dims(inner)):
        return None
    return ctx.add("broadcast", inst.shape, [inner.operands[0]], {"dimensions": broadcast_dims(inner)},
                   final=True)


def pad_of_empty(ctx, inst):
    """pad(X, v) with zero-element X -> broadcast(v)."""
    if not is_zero_elements(inst.operands[0]):
        return None
    return ctx.add("broadcast", inst.shape, [inst.operands[1]], {"dimensions": ()}, final=True)


def pad_interior_on_unit_dims(ctx, inst):
    """Interior padding of a size-1 dimension has no effect: clear it."""
    x = inst.operands[0]
    padding = inst.attrs["padding"]
    cleared = tuple((lo, hi, 0 if n == 1 else interior) for (lo, hi, interior), n in zip(padding, x.shape.dims))
    if cleared == tuple(padding):
        return None
    return ctx.add("pad", inst.shape, list(inst.operands), {"padding": cleared}, final=True)


def pad_noop(ctx, inst):
    """pad with an all-zero configuration -> operand."""
    x = inst.operands[0]
    if all(p == (0, 0, 0) for p in inst.attrs["padding"]) and ctx.can_replace(inst, x):
        return x
    return None


def concatenate_single(ctx, inst):
    """concatenate(A) -> A."""
    if len(inst.operands) == 1 and ctx.can_replace(inst, inst.operands[0]):
        return inst.operands[0]
    return None


def concatenate_drop_empty(ctx, inst):
    """Zero-element operands of a concatenate are dropped."""
    ops = inst.operands
    kept = [op for op in ops if not is_zero_elements(op)]
    if len(kept) == len(ops) or len(ops) == 1:
        return None
    if len(kept) <= 1:
        only = kept[0] if kept else ops[0]
        return only if ctx.can_replace(inst, only) else None
    return ctx.add("concatenate", inst.shape, kept, dict(inst.attrs), final=True)


def concatenate_flatten(ctx, inst):
    """concatenate(A, concatenate(B, C)) on the same dimension -> concatenate(A, B, C)."""
    dim = inst.attrs["dimensions"]
    flat = []
    for op in inst.operands:
        flat.extend(op.operands if op.opcode == Op.CONCATENATE and op.attrs["dimensions"] == dim else [op])
    if len(flat) == len(inst.operands):
        return None
    return ctx.add("concatenate", inst.shape, flat, dict(inst.attrs), final=True)


def concatenate_adjacent_slices(ctx, inst):
    """Adjacent unstrided slices of one operand, contiguous along the concatenate dimension,
    become one slice."""
    dim = inst.attrs["dimensions"][0]
    ops = inst.operands
    groups: list[list[Instruction]] = []
    for op in ops:
        prev = groups[-1][-1] if groups else None
        if prev is not None and _continues_slice(prev, op, dim):
            groups[-1].append(op)
        else:
            groups.append([op])
    if len(groups) == len(ops):
        return None
    new_ops = []
    for group in groups:
        if len(group) == 1:
            new_ops.append(group[0])
            continue
        first, last = group[0], group[-1]
        ranges = list(first.attrs["slice"])
        ranges[dim] = (ranges[dim][0], last.attrs["slice"][dim][1], 1)
        dims = list(first.shape.dims)
        dims[dim] = ranges[dim][1] - ranges[dim][0]
        new_ops.append(ctx.add("slice", ctx.array_shape(first.shape.element_type, dims), [first.operands[0]],
                               {"slice": tuple(ranges)}))
    if len(new_ops) == 1 and ctx.can_replace(inst, new_ops[0]):
        return new_ops[0]
    return ctx.add("concatenate", inst.shape, new_ops, dict(inst.attrs), final=True)


def _continues_slice(prev: Instruction, op: Instruction, dim: int) -> bool:
    if prev.opcode != Op.SLICE or op.opcode != Op.SLICE or prev.operands[0] is not op.operands[0]:
        return False
    a, b = prev.attrs["slice"], op.attrs["slice"]
    if any(r[2] != 1 for r in a) or any(r[2] != 1 for r in b):
        return False
    return b[dim][0] == a[dim][1] and all(a[k][0] == b[k][0] for k in range(len(a)) if k != dim)


def concatenate_with_broadcast_scalar(ctx, inst):
    """concatenate(broadcast(s), X) -> pad(X, s) (low padding), concatenate(X, broadcast(s))
    -> pad(X, s) (high padding)."""
    if len(inst.operands) != 2:
        return None
    a, b = inst.operands
    dim = inst.attrs["dimensions"][0]
    for filler, x, low in ((a, b, True), (b, a, False)):
        if filler.opcode == Op.BROADCAST and filler.operands[0].shape.is_scalar:
            size = filler.shape.dims[dim]
            padding = tuple(((size, 0, 0) if low else (0, size, 0)) if k == dim else (0, 0, 0)
                            for k in range(inst.shape.rank))
            return ctx.add("pad", inst.shape, [x, filler.operands[0]], {"padding": padding}, final=True)
    return None


def concatenate_repeated_unit(ctx, inst):
    """concatenate(A, A, ..., A) with A of size 1 along the dimension -> broadcast(reshape(A))."""
    ops = inst.operands
    dim = inst.attrs["dimensions"][0]
    if len(ops) < 2 or any(op is not ops[0] for op in ops) or ops[0].shape.dims[dim] != 1:
        return None
    a = ops[0]
    kept = [k for k in range(a.shape.rank) if k != dim]
    squeezed = ctx.add("reshape", ctx.array_shape(a.shape.element_type, [a.shape.dims[k] for k in kept]), [a])
    return ctx.add("broadcast", inst.shape, [squeezed], {"dimensions": tuple(kept)}, final=True)


# =========================================================================== dynamic slices, sort, map


def dynamic_slice_constant_starts(ctx, inst):
    """dynamic-slice with constant starts -> slice (starts clamped into bounds, as XLA does)."""
    a, starts = inst.operands[0], inst.operands[1:]
    if a.opcode == Op.CONSTANT or len(starts) != a.shape.rank:
        return None
    ranges = []
    for s, n, size in zip(starts, inst.shape.dims, a.shape.dims):
        v = splat_value(s) if s.opcode == Op.CONSTANT and s.shape.element_type.is_integral else None
        if v is None or int(v) < 0:
            return None
        begin = min(int(v), size - n)
        ranges.append((begin, begin + n, 1))
    return ctx.add("slice", inst.shape, [a], {"slice": tuple(ranges)}, final=True)


def dynamic_update_slice_whole(ctx, inst):
    """dynamic-update-slice(A, U, ...) with U as large as A -> U; with an empty U -> A."""
    a, update = inst.operands[0], inst.operands[1]
    if ctx.can_replace(inst, update):
        return update
    if is_zero_elements(update) and ctx.can_replace(inst, a):
        return a
    return None


def sort_trivial(ctx, inst):
    """sort along a dimension of size <= 1 -> its operand (a tuple of the operands)."""
    a = inst.operands[0]
    dim = inst.attrs["dimensions"][0]
    if a.shape.element_count() != 0 and a.shape.dims[dim] > 1:
        return None
    if len(inst.operands) == 1:
        return a if ctx.can_replace(inst, a) else None
    return ctx.add("tuple", inst.shape, list(inst.operands), final=True)


def map_trivial(ctx, inst):
    """map whose computation returns a parameter -> that operand; a scalar constant -> broadcast;
    a single elementwise op over the parameters -> that op on the operands."""
    comp = inst.attrs["to_apply"]
    root = comp.root
    if root.opcode == Op.PARAMETER:
        x = inst.operands[root.parameter_number]
        return x if ctx.can_replace(inst, x) else None
    if root.opcode == Op.CONSTANT and root.shape.is_scalar:
        const = ctx.constant_array(root.literal.array, root.shape)
        return ctx.broadcast_to(const, inst.shape, final=True)
    if not root.info.is_elementwise or not root.operands or any(op.opcode != Op.PARAMETER for op in root.operands):
        return None
    operands = [inst.operands[op.parameter_number] for op in root.operands]
    return ctx.add(root.opcode, inst.shape, operands, dict(root.attrs), final=True)


# =========================================================================== dot


def _dot_algorithm_supported(inst) -> bool:
    return inst.attrs.get("algorithm") in (None, "unset", "dot_f32_f32_f32")


def dot_zero_elements(ctx, inst):
    """A dot with a zero-element operand or result -> broadcast(0)."""
    if any(is_zero_elements(x) for x in (inst, *inst.operands)):
        return ctx.splat(0, inst.shape)
    return None


def _normalize_operand(ctx, x, batch, contracting, t):
    """x transposed to (batch, free, contracting) order and converted to type t."""
    free = [d for d in range(x.shape.rank) if d not in batch and d not in contracting]
    perm = list(batch) + free + list(contracting)
    x = ctx.transpose(x, perm)
    return ctx.convert(x, t)


def dot_without_contraction(ctx, inst):
    """A dot without contracting dimensions -> multiply(broadcast(lhs'), broadcast(rhs')), where
    ' puts batch dimensions first and converts to the result type."""
    dn = DotDims.of(inst)
    if dn.lhs_contracting or not _dot_algorithm_supported(inst):
        return None
    lhs, rhs = inst.operands
    t = inst.shape.element_type
    nb = len(dn.lhs_batch)
    lhs_free = lhs.shape.rank - nb
    new_lhs = _normalize_operand(ctx, lhs, dn.lhs_batch, (), t)
    new_rhs = _normalize_operand(ctx, rhs, dn.rhs_batch, (), t)
    out = ctx.array_shape(t, inst.shape.dims)
    lhs_dims = tuple(range(lhs.shape.rank))
    rhs_dims = tuple(range(nb)) + tuple(range(nb + lhs_free, inst.shape.rank))
    new_lhs = ctx.broadcast_dims(new_lhs, out, lhs_dims)
    new_rhs = ctx.broadcast_dims(new_rhs, out, rhs_dims)
    return ctx.add("multiply", inst.shape, [new_lhs, new_rhs], final=True)


def dot_as_reduce(ctx, inst):
    """A dot whose operands both have only batch and contracting dimensions (vector . vector and
    its batched forms) -> reduce(multiply(lhs', rhs'), add) over the contracting dimensions,
    accumulating floats in f32 (f64 stays f64), as XLA:CPU's strength reduction."""
    dn = DotDims.of(inst)
    lhs, rhs = inst.operands
    if not dn.lhs_contracting or not _dot_algorithm_supported(inst):
        return None
    if len(dn.lhs_batch) + len(dn.lhs_contracting) != lhs.shape.rank \
            or len(dn.rhs_batch) + len(dn.rhs_contracting) != rhs.shape.rank:
        return None
    t = inst.shape.element_type
    if t.is_pred:
        return None
    acc_type = (_type_named("f64") if t.name == "f64" else _type_named("f32")) if t.is_float else t
    new_lhs = _normalize_operand(ctx, lhs, dn.lhs_batch, dn.lhs_contracting, t)
    new_rhs = _normalize_operand(ctx, rhs, dn.rhs_batch, dn.rhs_contracting, t)
    product = ctx.add("multiply", new_lhs.shape, [new_lhs, new_rhs])
    product = ctx.convert(product, acc_type)
    nb = len(dn.lhs_batch)
    reduce_dims = tuple(range(nb, nb + len(dn.lhs_contracting)))
    zero = ctx.constant_scalar(0, acc_type)
    summed = ctx.add("reduce", ctx.array_shape(acc_type, inst.shape.dims), [product, zero],
                     {"dimensions": reduce_dims, "to_apply": ctx.scalar_computation("add", acc_type)})
    if acc_type == t:
        return ctx.replace_shape(summed, inst.shape)
    return ctx.add("convert", inst.shape, [summed], final=True)


def dot_drop_degenerate_dims(ctx, inst):
    """Dimensions of size 1 are reshaped away from both operands; the dot on the squeezed
    operands is reshaped back to the result shape (XLA's RemoveDegenerateDimensionFromDot)."""
    lhs, rhs = inst.operands
    if 1 not in lhs.shape.dims and 1 not in rhs.shape.dims:
        return None
    dn = DotDims.of(inst)
    lhs_map = _squeeze_map(lhs.shape.dims)
    rhs_map = _squeeze_map(rhs.shape.dims)
    keep = lambda dims, m: tuple(m[d] for d in dims if m[d] is not None)
    lb, lc = keep(dn.lhs_batch, lhs_map), keep(dn.lhs_contracting, lhs_map)
    rb, rc = keep(dn.rhs_batch, rhs_map), keep(dn.rhs_contracting, rhs_map)
    new_lhs = ctx.squeeze(lhs)
    new_rhs = ctx.squeeze(rhs)
    out_dims = ([new_lhs.shape.dims[d] for d in lb]
                + [n for d, n in enumerate(new_lhs.shape.dims) if d not in lb and d not in lc]
                + [n for d, n in enumerate(new_rhs.shape.dims) if d not in rb and d not in rc])
    attrs = dict(inst.attrs)
    attrs.update(lhs_batch_dims=lb, lhs_contracting_dims=lc, rhs_batch_dims=rb, rhs_contracting_dims=rc)
    t = inst.shape.element_type
    if tuple(out_dims) == inst.shape.dims:
        return ctx.add("dot", inst.shape, [new_lhs, new_rhs], attrs, final=True)
    dot = ctx.add("dot", ctx.array_shape(t, out_dims), [new_lhs, new_rhs], attrs)
    return ctx.add("reshape", inst.shape, [dot], final=True)


def _squeeze_map(dims) -> list[Optional[int]]:
    out, k = [], 0
    for n in dims:
        out.append(None if n == 1 else k)
        k += n != 1
    return out


# =========================================================================== reduce


def reduce_empty(ctx, inst):
    """A reduce with a zero-element input or result -> broadcast(init) (a tuple of them when
    variadic)."""
    n = len(inst.operands) // 2
    inputs, inits = inst.operands[:n], inst.operands[n:]
    result_shapes = inst.shape.tuple_shapes if inst.shape.is_tuple else (inst.shape,)
    if not (is_zero_elements(inputs[0]) or result_shapes[0].element_count() == 0):
        return None
    if not inst.shape.is_tuple:
        return ctx.broadcast_to(inits[0], inst.shape, final=True)
    parts = [ctx.broadcast_to(init, s) for init, s in zip(inits, result_shapes)]
    return ctx.add("tuple", inst.shape, parts, final=True)


def reduce_keeps_element_count(ctx, inst):
    """A reduce over no dimensions or only size-1 dimensions: -> reshape(X) when init is an
    identity of the reducer (add/0, multiply/1, maximum/lowest, minimum/highest, and/all-ones,
    or/0, xor/0); otherwise, when the reducer is one binary op of its parameters,
    -> op(broadcast(init), reshape(X)) with the reducer's operand order. (XLA drops the reducer
    unconditionally, relying on init being an identity.)"""
    if len(inst.operands) != 2:
        return None
    x, init = inst.operands
    if inst.shape.element_count() != x.shape.element_count():
        return None
    reducer = scalar_binary_reducer(inst.attrs["to_apply"])
    if init_is_identity(reducer, init):
        return ctx.replace_shape(x, inst.shape)
    if reducer is None:
        return None
    opcode, swapped = reducer
    values = ctx.reshape(x, inst.shape.dims)
    acc = ctx.broadcast_to(init, ctx.array_shape(init.shape.element_type, inst.shape.dims))
    operands = [values, acc] if swapped else [acc, values]
    return ctx.add(opcode, inst.shape, operands, final=True)


def reduce_of_broadcast(ctx, inst):
    """reduce(broadcast(X)):
    - max/min/and/or over every dimension of a broadcast scalar -> op(X, init);
    - over dimensions that all come from X -> broadcast(reduce(X));
    - add over dimensions the broadcast added -> broadcast(init + X * N), N the number of
      copies summed (exact for integers, rounding differs for floats, as in XLA)."""
    if len(inst.operands) != 2:
        return None
    arg, init = inst.operands
    if arg.opcode != Op.BROADCAST:
        return None
    x = arg.operands[0]
    bdims = broadcast_dims(arg)
    rdims = tuple(inst.attrs["dimensions"])
    reducer = scalar_binary_reducer(inst.attrs["to_apply"])
    opcode = reducer[0] if reducer else None
    if opcode in ("maximum", "minimum", "and", "or") and x.shape.is_scalar and len(rdims) == arg.shape.rank:
        return ctx.add(opcode, inst.shape, [x, init], final=True)
    if rdims and all(d in bdims for d in rdims):
        xdims = tuple(bdims.index(d) for d in rdims)
        kept = [k for k in range(x.shape.rank) if k not in xdims]
        reduced = ctx.add("reduce", ctx.array_shape(inst.shape.element_type, [x.shape.dims[k] for k in kept]),
                          [x, init], {"dimensions": tuple(sorted(xdims)), "to_apply": inst.attrs["to_apply"]})
        new_dims = tuple(bdims[k] - sum(1 for d in rdims if d < bdims[k]) for k in kept)
        return ctx.add("broadcast", inst.shape, [reduced], {"dimensions": new_dims}, final=True)
    t = inst.shape.element_type
    if opcode != Op.ADD or t.is_pred or list(bdims) != sorted(bdims) or any(d in bdims for d in rdims):
        return None
    copies = math.prod(arg.shape.dims[d] for d in rdims)
    scaled = ctx.add("multiply", x.shape.with_default_layouts(), [x, ctx.splat(copies, x.shape)])
    total = ctx.add("add", scaled.shape, [ctx.broadcast_to(init, scaled.shape), scaled])
    kept = [k for k in range(arg.shape.rank) if k not in rdims]
    new_dims = tuple(kept.index(d) for d in bdims)
    return ctx.add("broadcast", inst.shape, [total], {"dimensions": new_dims}, final=True)


def reduce_of_transpose(ctx, inst):
    """reduce(transpose(X)) -> reduce(X) over the permuted dimensions, followed by a transpose
    when the kept dimensions change order."""
    if len(inst.operands) != 2:
        return None
    arg, init = inst.operands
    if arg.opcode != Op.TRANSPOSE:
        return None
    if not (inst.shape.rank < 2 or user_count(arg) == 1 or all(u.opcode == Op.REDUCE for u in arg.users)):
        return None
    perm = arg.attrs["dimensions"]
    x = arg.operands[0]
    new_rdims = tuple(sorted(perm[d] for d in inst.attrs["dimensions"]))
    kept = [d for d in perm if d not in new_rdims]  # x dims in result order
    in_x_order = sorted(kept)
    attrs = {"dimensions": new_rdims, "to_apply": inst.attrs["to_apply"]}
    if kept == in_x_order:
        return ctx.add("reduce", inst.shape, [x, init], attrs, final=True)
    reduced = ctx.add("reduce", ctx.array_shape(inst.shape.element_type, [x.shape.dims[d] for d in in_x_order]),
                      [x, init], attrs)
    return ctx.add("transpose", inst.shape, [reduced], {"dimensions": tuple(in_x_order.index(d) for d in kept)},
                   final=True)


# =========================================================================== the table

RULES = {
    "add": [add_zero],
    "subtract": [subtract_self, subtract_zero],
    "multiply": [multiply_one, multiply_zero, multiply_negations],
    "divide": [divide_one],
    "power": [power_special_exponents],
    "and": [and_identities],
    "or": [or_identities],
    "xor": [xor_identities],
    "maximum": [minmax_same_operands, minmax_neutral_bound, minmax_nested],
    "minimum": [minmax_same_operands, minmax_neutral_bound, minmax_nested],
    "clamp": [clamp_of_clamp],
    "exponential": [exp_of_zero],
    "negate": [double_negation],
    "not": [double_negation],
    "abs": [abs_of_non_negative],
    "real": [real_imag_of_real],
    "imag": [real_imag_of_real],
    "complex": [complex_of_parts],
    "select": [select_same_branches, select_constant_predicate, select_of_not, select_pred_constants],
    "compare": [compare_constants, compare_same_operands, compare_unsigned_with_zero, compare_pred_with_constant],
    "convert": [convert_same_type, convert_round_trip],
    "bitcast-convert": [operand_of_same_shape, bitcast_convert_chain],
    "copy": [copy_or_bitcast_noop, copy_of_copy],
    "bitcast": [copy_or_bitcast_noop, bitcast_of_bitcast],
    "reduce-precision": [reduce_precision_noop],
    "reshape": [reshape_zero_elements, operand_of_same_shape, reshape_of_reshape, reshape_of_broadcast],
    "transpose": [transpose_identity, transpose_of_transpose, transpose_of_degenerate_dims,
                  transpose_of_broadcast],
    "broadcast": [broadcast_as_reshape, broadcast_of_degenerate_reshape, broadcast_of_iota, broadcast_of_broadcast,
                  broadcast_drop_degenerate_dims],
    "iota": [iota_trivial],
    "slice": [operand_of_same_shape, slice_of_slice, slice_of_pad, slice_of_broadcast, slice_of_concatenate],
    "reverse": [reverse_trivial, reverse_of_reverse, reverse_of_broadcast],
    "pad": [pad_of_empty, pad_interior_on_unit_dims, pad_noop],
    "concatenate": [concatenate_single, concatenate_drop_empty, concatenate_flatten, concatenate_adjacent_slices,
                    concatenate_with_broadcast_scalar, concatenate_repeated_unit],
    "dynamic-slice": [operand_of_same_shape, dynamic_slice_constant_starts],
    "dynamic-update-slice": [dynamic_update_slice_whole],
    "sort": [sort_trivial],
    "map": [map_trivial],
    "dot": [dot_zero_elements, dot_without_contraction, dot_as_reduce, dot_drop_degenerate_dims],
    "reduce": [reduce_empty, reduce_keeps_element_count, reduce_of_broadcast, reduce_of_transpose],
}
