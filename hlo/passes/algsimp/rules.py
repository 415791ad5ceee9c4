"""The registry of algsimp's rewrite rules (XLA's AlgebraicSimplifier), one function per rule.

A rule is `rule(ctx, inst) -> Instruction | None`: it returns the instruction that
computes the same value as `inst` (an existing one, or one it built with the builders
of `ctx`, see context.py), `inst` itself when it changed `inst` in place, or None when
it does not apply. A rule decides before it builds, so that a rule that does not apply
leaves nothing behind.

Each rule is registered beside its definition with the opcodes it rewrites:

    @RULES.register(Op.NEGATE, Op.NOT)
    def double_negation(ctx, inst): ...

The rules of an opcode are tried in the order they were registered: the order of the
definitions in a module, and for rules in several modules the order in which
simplifier.py imports the modules. docs/ALGSIMP.md lists every rule with its conditions.

Float semantics follow XLA: `x + 0 -> x` is done for +0 and -0 (for x = -0.0 and a
+0.0 constant the result changes only in the sign of a zero), while rules that
would change NaN or infinity results (`x * 0 -> 0`, `x - x -> 0`, `x == x -> true`)
are restricted to integer types.
"""
from __future__ import annotations

from ...registry import OpRegistry

RULES = OpRegistry("algebraic simplification rule", many=True)
