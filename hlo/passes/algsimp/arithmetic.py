"""algsimp rules for elementwise arithmetic: identities (x+0, x*1, x&~0 ...), powers with
small exponents, min/max bounds and nesting, double negation, real/imag/complex parts."""
from __future__ import annotations

from ...opcodes import Op
from .facts import all_bits_set, highest_value, is_all, is_non_negative, lowest_value
from .rules import RULES


def _without_identity(ctx, inst, identity, commutative: bool):
    """The other operand of a binary op whose right operand (or, if `commutative`, either) is all `identity`."""
    a, b = inst.operands
    if is_all(b, identity) and ctx.can_replace(inst, a):
        return a
    if commutative and is_all(a, identity) and ctx.can_replace(inst, b):
        return b
    return None


@RULES.register(Op.ADD)
def add_zero(ctx, inst):
    """A + 0 -> A, 0 + A -> A (all types; floats: +0 and -0, as XLA)."""
    return _without_identity(ctx, inst, 0, commutative=True)


@RULES.register(Op.SUBTRACT)
def subtract_self(ctx, inst):
    """A - A -> 0 for integers (not floats: inf - inf and NaN - NaN are NaN)."""
    a, b = inst.operands
    if a is b and inst.shape.element_type.is_integral:
        return ctx.splat(0, inst.shape)
    return None


@RULES.register(Op.SUBTRACT)
def subtract_zero(ctx, inst):
    """A - 0 -> A."""
    return _without_identity(ctx, inst, 0, commutative=False)


@RULES.register(Op.MULTIPLY)
def multiply_one(ctx, inst):
    """A * 1 -> A, 1 * A -> A (exact for every type)."""
    return _without_identity(ctx, inst, 1, commutative=True)


@RULES.register(Op.MULTIPLY)
def multiply_zero(ctx, inst):
    """A * 0 -> 0, 0 * A -> 0 for integers only (floats: NaN * 0 and inf * 0 are NaN)."""
    if not inst.shape.element_type.is_integral:
        return None
    a, b = inst.operands
    for zero in (a, b):
        if is_all(zero, 0) and ctx.can_replace(inst, zero):
            return zero
    return None


@RULES.register(Op.MULTIPLY)
def multiply_negations(ctx, inst):
    """(-A) * (-B) -> A * B (in place)."""
    a, b = inst.operands
    if a.opcode == Op.NEGATE and b.opcode == Op.NEGATE:
        inst.set_operands([a.operands[0], b.operands[0]])
        return inst
    return None


@RULES.register(Op.DIVIDE)
def divide_one(ctx, inst):
    """A / 1 -> A."""
    return _without_identity(ctx, inst, 1, commutative=False)


@RULES.register(Op.POWER)
def power_special_exponents(ctx, inst):
    """pow(A, 0) -> 1, pow(A, 1) -> A, pow(A, 2) -> A*A, pow(A, 3) -> A*(A*A),
    pow(A, -1) -> 1/A (float and complex only: integer pow with a negative exponent is not 1/A)."""
    a, b = inst.operands
    if is_all(b, 0):
        return ctx.splat(1, inst.shape)
    if is_all(b, 1) and ctx.can_replace(inst, a):
        return a
    if is_all(b, 2):
        return ctx.add(Op.MULTIPLY, inst.shape, [a, a], final=True)
    if is_all(b, 3):
        square = ctx.add(Op.MULTIPLY, inst.shape, [a, a])
        return ctx.add(Op.MULTIPLY, inst.shape, [a, square], final=True)
    t = inst.shape.element_type
    if is_all(b, -1) and (t.is_float or t.is_complex) and a.shape.element_type == t:
        return ctx.add(Op.DIVIDE, inst.shape, [ctx.splat(1, a.shape), a], final=True)
    return None


@RULES.register(Op.AND)
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


@RULES.register(Op.OR)
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


@RULES.register(Op.XOR)
def xor_identities(ctx, inst):
    """A ^ A -> 0 (false), A ^ 0 -> A."""
    a, b = inst.operands
    if a is b:
        return ctx.splat(0, inst.shape)
    for x, other in ((a, b), (b, a)):
        if is_all(other, 0) and ctx.can_replace(inst, x):
            return x
    return None


@RULES.register(Op.MAXIMUM, Op.MINIMUM)
def minmax_same_operands(ctx, inst):
    """max(A, A) -> A, min(A, A) -> A."""
    a, b = inst.operands
    if a is b and ctx.can_replace(inst, a):
        return a
    return None


@RULES.register(Op.MAXIMUM, Op.MINIMUM)
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


@RULES.register(Op.MAXIMUM, Op.MINIMUM)
def minmax_nested(ctx, inst):
    """max(max(A, B), B) -> max(A, B) (any operand order inside), max(A, max(A, B)) -> max(A, B);
    the same for min."""
    a, b = inst.operands
    if a.opcode == inst.opcode and b in a.operands and ctx.can_replace(inst, a):
        return a
    if b.opcode == inst.opcode and b.operands[0] is a and ctx.can_replace(inst, b):
        return b
    return None


@RULES.register(Op.CLAMP)
def clamp_of_clamp(ctx, inst):
    """clamp(lo, clamp(lo, X, hi), hi) -> clamp(lo, X, hi)."""
    lo, x, hi = inst.operands
    if x.opcode == Op.CLAMP and x.operands[0] is lo and x.operands[2] is hi and ctx.can_replace(inst, x):
        return x
    return None


@RULES.register(Op.EXPONENTIAL)
def exp_of_zero(ctx, inst):
    """exp(0) -> 1."""
    if is_all(inst.operands[0], 0):
        return ctx.splat(1, inst.shape)
    return None


@RULES.register(Op.NEGATE, Op.NOT)
def double_negation(ctx, inst):
    """negate(negate(A)) -> A; not(not(A)) -> A."""
    inner = inst.operands[0]
    if inner.opcode == inst.opcode and ctx.can_replace(inst, inner.operands[0]):
        return inner.operands[0]
    return None


@RULES.register(Op.ABS)
def abs_of_non_negative(ctx, inst):
    """abs(A) -> A when A is known to be >= 0, e.g. abs(abs(A)) for floats (not for signed
    integers: abs(INT_MIN) is negative)."""
    a = inst.operands[0]
    if is_non_negative(a) and ctx.can_replace(inst, a):
        return a
    return None


@RULES.register(Op.REAL, Op.IMAG)
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


@RULES.register(Op.COMPLEX)
def complex_of_parts(ctx, inst):
    """complex(real(C), imag(C)) -> C."""
    r, i = inst.operands
    if r.opcode == Op.REAL and i.opcode == Op.IMAG and r.operands[0] is i.operands[0] \
            and ctx.can_replace(inst, r.operands[0]):
        return r.operands[0]
    return None
