"""algsimp, the algebraic simplifier (XLA's AlgebraicSimplifier).

simplifier.py   the pass: sweeps computations and applies the rules of each opcode
context.py      RewriteContext: the builders rules make new instructions with
rules.py        RULES, the registry of rules by opcode (the contract a rule follows)
facts.py        what rules ask about values, reducers and dimensions
arithmetic.py, select_compare.py, conversions.py, reshapes.py, slices.py, dot.py,
reductions.py   the rules, by the kind of op they rewrite

A new rule is a function in the module of its op's kind, registered beside its definition
with `@RULES.register(Op.X)`; docs/ALGSIMP.md lists every rule with its conditions.
"""
