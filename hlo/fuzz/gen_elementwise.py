"""Generators of the elementwise ops, driven by the opcode table's operand and result types.

Exactness (builder.py) decides what may be combined: continuous ops (arithmetic, maximum,
transcendental functions, conversions between floats) take any number operand; ops that
jump (comparisons, rounding, sign, conversion to integers, shifts and bit operations)
take only exact ones, so that a last-bit difference between implementations never turns
into a different branch.
"""
from __future__ import annotations

from typing import Optional

from ..opcodes import OPCODES, Op, ResultType, TypeClass
from ..shapes import PRIMITIVE_TYPES, PrimitiveType, TypeKind, real_type_of
from .builder import (ARITHMETIC_TYPES, INF, STORAGE_TYPES, Comp, Val, array_shape, fits_exactly, largest,
                      significand_bits)
from .registry import GENERATORS, random_dims, random_type

_CLASS_OF = {TypeKind.PRED: TypeClass.PRED, TypeKind.SIGNED: TypeClass.SINT, TypeKind.UNSIGNED: TypeClass.UINT,
             TypeKind.FLOAT: TypeClass.FLOAT, TypeKind.COMPLEX: TypeClass.COMPLEX}


def takes(op: str, t: PrimitiveType) -> bool:
    """True if elementwise op `op` accepts operands of type t (the table's operand types)."""
    allowed = OPCODES[op].operand_types
    return allowed is None or bool(allowed & _CLASS_OF[t.kind])


def _operand(comp: Comp, rng, op: str, computable: bool) -> Optional[Val]:
    found = comp.pick(rng, lambda v: v.shape.is_array and not v.raw and v.type in ARITHMETIC_TYPES
                      and takes(op, v.type) and (v.computable or not computable))
    if found is None and rng.random() < 0.5:
        types = [t for t in ARITHMETIC_TYPES if takes(op, t)]
        if types:
            found = comp.make(rng, array_shape(random_type(rng, types), random_dims(rng)))
    return found


def _result_type(op: str, t: PrimitiveType) -> PrimitiveType:
    kind = OPCODES[op].result_type
    if kind is ResultType.PRED:
        return PRIMITIVE_TYPES["pred"]
    if kind is ResultType.REAL_PART:
        return real_type_of(t)
    return t


def _result(comp: Comp, op: str, operands: list[Val], t: PrimitiveType, attrs: str, bound: float, frac: int,
            continuous: bool = True, dims=None) -> Val:
    exact = all(o.exact for o in operands) and (t.is_pred or t.is_integral or fits_exactly(t, bound, frac)) \
        and continuous
    shape = array_shape(t, operands[0].dims if dims is None else dims)
    return comp.add(op, shape, operands, attrs, bound=bound if exact else INF, frac=frac, exact=exact)


# --------------------------------------------------------------------------- unary

@GENERATORS.register(Op.ABS, Op.NEGATE, Op.REAL, Op.IMAG, Op.COPY)
def magnitude_preserving(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _operand(comp, rng, op, computable=False)
    if x is None:
        return None
    # |a + bi| is a square root: rounded (one implementation's last bit may differ)
    rounded = op == Op.ABS and x.type.is_complex
    return _result(comp, op, [x], _result_type(op, x.type), "", x.bound, x.frac, continuous=not rounded)


@GENERATORS.register(Op.SIGN, Op.FLOOR, Op.CEIL, Op.ROUND_NEAREST_AFZ, Op.ROUND_NEAREST_EVEN, Op.IS_FINITE,
                     Op.NOT, Op.POPCNT, Op.COUNT_LEADING_ZEROS)
def stepping_unary(comp: Comp, rng, op: str) -> Optional[Val]:
    """Ops whose result jumps: exact operands only."""
    x = _operand(comp, rng, op, computable=True)
    if x is None:
        return None
    t = _result_type(op, x.type)
    bound = 1.0 if op == Op.SIGN or t.is_pred else (x.bound + 1 if x.type.is_float else largest(t))
    if op == Op.POPCNT or op == Op.COUNT_LEADING_ZEROS:
        bound = float(t.bits)
    # (the sign of a complex number is z / |z|: rounded)
    return _result(comp, op, [x], t, "", bound, 0, continuous=not x.type.is_complex)


@GENERATORS.register([o for o, info in OPCODES.items() if info.transcendental], Op.ATAN)
def transcendental(comp: Comp, rng, op: str) -> Optional[Val]:
    """exp, log, sin, ... of exact values (a rounding difference near a pole or a branch cut
    would be magnified): never exact; NaN where the argument is out of the domain."""
    x = _operand(comp, rng, op, computable=True)
    if x is None or not (x.type.is_float or x.type.is_complex) or x.type.bits < 16:
        return None
    return _result(comp, op, [x], _result_type(op, x.type), "", INF, 0, continuous=False)


@GENERATORS.register(Op.REDUCE_PRECISION)
def reduce_precision(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _operand(comp, rng, op, computable=True)
    if x is None or not x.type.is_float:
        return None
    exponent, mantissa = int(rng.integers(2, 9)), int(rng.integers(0, 11))
    return _result(comp, op, [x], x.type, f", exponent_bits={exponent}, mantissa_bits={mantissa}", x.bound, x.frac,
                   continuous=False)


# --------------------------------------------------------------------------- binary

def _second(comp: Comp, rng, x: Val, computable: bool) -> Val:
    y = comp.value_of(rng, array_shape(x.type, x.dims), computable=computable)
    return y


@GENERATORS.register(Op.ADD, Op.SUBTRACT, Op.MULTIPLY, Op.MAXIMUM, Op.MINIMUM, Op.COMPLEX, weight=3)
def arithmetic(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _operand(comp, rng, op, computable=False)
    if x is None:
        return None
    y = _second(comp, rng, x, computable=False)
    if op == Op.MULTIPLY:
        bound, frac = x.bound * y.bound, x.frac + y.frac
    elif op == Op.MAXIMUM or op == Op.MINIMUM:
        bound, frac = max(x.bound, y.bound), max(x.frac, y.frac)
    else:
        bound, frac = x.bound + y.bound, max(x.frac, y.frac)
    t = x.type
    if op == Op.COMPLEX:
        t = PRIMITIVE_TYPES["c64"] if x.type.name == "f32" else PRIMITIVE_TYPES["c128"] if x.type.name == "f64" else None
        if t is None:
            return None
    if (op == Op.MAXIMUM or op == Op.MINIMUM) and x.type.is_float and not (x.computable and y.computable):
        return None  # (which NaN or signed zero wins must not depend on last-bit differences)
    if t.is_integral and bound > largest(t):
        bound = largest(t)  # integers wrap: still exact
    return _result(comp, op, [x, y], t, "", bound, frac)


@GENERATORS.register(Op.AND, Op.OR, Op.XOR, Op.SHIFT_LEFT, Op.SHIFT_RIGHT_ARITHMETIC, Op.SHIFT_RIGHT_LOGICAL,
                     Op.REMAINDER, Op.POWER, Op.ATAN2, Op.DIVIDE)
def other_binary(comp: Comp, rng, op: str) -> Optional[Val]:
    exact_only = True  # (dividing by, or raising, an inexact value near zero magnifies its rounding)
    x = _operand(comp, rng, op, computable=exact_only)
    if x is None or (x.type.bits < 16 and x.type.is_float):
        return None
    y = _second(comp, rng, x, computable=exact_only)
    t = x.type
    if op == Op.POWER and t.is_integral and not (y.computable and y.bound < 64):
        return None  # (XLA:CPU reads only an integer exponent's low 6 bits: arithmetic.py)
    if t.is_integral or t.is_pred:
        bound = x.bound if op == Op.REMAINDER else largest(t)
        return _result(comp, op, [x, y], t, "", bound, 0)
    if op == Op.REMAINDER:  # fmod of exact values is exact
        return _result(comp, op, [x, y], t, "", x.bound, max(x.frac, y.frac))
    return _result(comp, op, [x, y], t, "", INF, 0, continuous=False)


@GENERATORS.register(Op.COMPARE, weight=2)
def compare(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _operand(comp, rng, op, computable=True)
    if x is None:
        return None
    y = _second(comp, rng, x, computable=True)
    directions = ("EQ", "NE", "LT", "LE", "GT", "GE") if not x.type.is_complex else ("EQ", "NE")
    direction = directions[int(rng.integers(0, len(directions)))]
    attrs = f", direction={direction}"
    if x.type.is_float and rng.random() < 0.3:
        attrs += ", type=TOTALORDER"
    return _result(comp, op, [x, y], PRIMITIVE_TYPES["pred"], attrs, 1.0, 0)


@GENERATORS.register(Op.SELECT, weight=2)
def select(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _operand(comp, rng, op, computable=False)
    if x is None:
        return None
    y = _second(comp, rng, x, computable=False)
    pred_shape = array_shape(PRIMITIVE_TYPES["pred"], x.dims if rng.random() < 0.8 else ())
    p = comp.value_of(rng, pred_shape, computable=True)
    exact = x.exact and y.exact
    v = comp.add(op, array_shape(x.type, x.dims), [p, x, y], bound=max(x.bound, y.bound) if exact else INF,
                 frac=max(x.frac, y.frac), exact=exact)
    return v


@GENERATORS.register(Op.CLAMP)
def clamp(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _operand(comp, rng, op, computable=True)
    if x is None or x.type.is_complex or x.type.is_pred:
        return None
    bound_shape = array_shape(x.type, () if rng.random() < 0.5 else x.dims)
    low = comp.value_of(rng, bound_shape, computable=True)
    high = comp.value_of(rng, bound_shape, computable=True)
    return _result(comp, op, [low, x, high], x.type, "", max(x.bound, low.bound, high.bound),
                   max(x.frac, low.frac, high.frac), dims=x.dims)


# --------------------------------------------------------------------------- conversions

@GENERATORS.register(Op.CONVERT, weight=2)
def convert(comp: Comp, rng, op: str) -> Optional[Val]:
    x = comp.pick(rng, lambda v: v.shape.is_array and not v.raw and v.type in ARITHMETIC_TYPES + STORAGE_TYPES)
    if x is None:
        return None
    targets = ARITHMETIC_TYPES + STORAGE_TYPES
    t = targets[int(rng.integers(0, len(targets)))]
    if (x.type.is_complex and not t.is_complex) or (t in STORAGE_TYPES and not x.computable):
        return None
    if not x.computable and (t.is_integral or t.is_pred):
        return None  # float -> int jumps at integers
    bound, frac = x.bound, x.frac
    exact = x.exact and (t.is_pred or (t.is_integral and bound <= largest(t)) or fits_exactly(t, bound, frac))
    if t.is_integral:
        exact = x.exact  # truncation and saturation of exact values are exact too
        bound, frac = min(bound, largest(t)), 0
    if t.is_pred:
        bound, frac = 1.0, 0
    return comp.add(op, array_shape(t, x.dims), [x], bound=bound if exact else INF, frac=frac, exact=exact)


@GENERATORS.register(Op.BITCAST_CONVERT)
def bitcast_convert(comp: Comp, rng, op: str) -> Optional[Val]:
    """Bits reinterpreted (same width, or split into / joined from a last dimension): raw."""
    x = comp.pick(rng, lambda v: v.shape.is_array and v.exact and v.type.bits >= 8 and not v.type.is_pred
                  and not v.type.is_complex)
    if x is None:
        return None
    same = [t for t in ARITHMETIC_TYPES if t.bits == x.type.bits and not t.is_pred and not t.is_complex]
    t = same[int(rng.integers(0, len(same)))]
    dims = x.dims
    if rng.random() < 0.3 and x.type.bits >= 16:
        narrower = [u for u in ARITHMETIC_TYPES if u.bits * 2 == x.type.bits and not u.is_pred and not u.is_complex]
        if narrower:
            t = narrower[int(rng.integers(0, len(narrower)))]
            dims = x.dims + (2,)
    return comp.add(op, array_shape(t, dims), [x], exact=True, raw=True, bound=INF)


@GENERATORS.register(Op.STOCHASTIC_CONVERT)
def stochastic_convert(comp: Comp, rng, op: str) -> Optional[Val]:
    x = comp.pick(rng, lambda v: v.computable and v.type.name in ("f32", "f64"))
    if x is None:
        return None
    bits = PRIMITIVE_TYPES[f"u{x.type.bits}"]
    random_bits = comp.value_of(rng, array_shape(bits, x.dims), computable=True)
    targets = [PRIMITIVE_TYPES[n] for n in ("s8", "s16", "s32")]  # (XLA converts to signed integers only)
    t = targets[int(rng.integers(0, len(targets)))]
    comp.module.features.add("stochastic-rounding")
    return comp.add(op, array_shape(t, x.dims), [x, random_bits], exact=True, bound=largest(t),
                    frac=0 if t.is_integral else significand_bits(t))
