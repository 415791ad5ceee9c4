"""algsimp rules for select and compare: constant or negated predicates, equal branches,
comparisons of constants, of a value with itself, of unsigned values with zero, of preds."""
from __future__ import annotations

import numpy as np

from ...interpreter.elementwise import compare as compare_kernel
from ...opcodes import Op
from .facts import is_all, splat_value
from .rules import RULES


# =========================================================================== select


@RULES.register(Op.SELECT)
def select_same_branches(ctx, inst):
    """select(P, A, A) -> A."""
    _, a, b = inst.operands
    if a is b and ctx.can_replace(inst, a):
        return a
    return None


@RULES.register(Op.SELECT)
def select_constant_predicate(ctx, inst):
    """select(true, A, B) -> A, select(false, A, B) -> B."""
    p, a, b = inst.operands
    v = splat_value(p)
    if v is None:
        return None
    chosen = a if bool(v) else b
    return chosen if ctx.can_replace(inst, chosen) else None


@RULES.register(Op.SELECT)
def select_of_not(ctx, inst):
    """select(not(P), A, B) -> select(P, B, A)."""
    p, a, b = inst.operands
    if p.opcode == Op.NOT:
        return ctx.add(Op.SELECT, inst.shape, [p.operands[0], b, a], final=True)
    return None


@RULES.register(Op.SELECT)
def select_pred_constants(ctx, inst):
    """On pred: select(P, true, false) -> P, select(P, false, true) -> not(P)."""
    if not inst.shape.element_type.is_pred:
        return None
    p, a, b = inst.operands
    if is_all(a, True) and is_all(b, False) and ctx.can_replace(inst, p):
        return p
    if is_all(a, False) and is_all(b, True) and ctx.same_shape(inst.shape, p.shape):
        return ctx.add(Op.NOT, inst.shape, [p], final=True)
    return None


# =========================================================================== compare


@RULES.register(Op.COMPARE)
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


_NEGATED = {"EQ": False, "NE": True, "LT": True, "GT": True, "LE": False, "GE": False}


@RULES.register(Op.COMPARE)
def compare_same_operands(ctx, inst):
    """compare(A, A): EQ/GE/LE -> true, NE/LT/GT -> false, integers only (NaN != NaN)."""
    a, b = inst.operands
    if a is b and a.shape.element_type.is_integral:
        return ctx.splat(not _NEGATED[inst.attrs["direction"]], inst.shape)
    return None


@RULES.register(Op.COMPARE)
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


@RULES.register(Op.COMPARE)
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
