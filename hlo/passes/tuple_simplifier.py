"""tuple-simplifier: fold get-tuple-element of a tuple, and tuples rebuilt from one tuple."""
from __future__ import annotations

from ..ir import Module
from .base import Pass, register
from .rewrite import simplify_tuples


@register
class TupleSimplifier(Pass):
    name = "tuple-simplifier"
    description = "gte(tuple(a, b), 1) -> b; tuple(gte(t, 0), ..., gte(t, n-1)) -> t."

    incremental = True

    def run(self, module: Module) -> bool:
        return self.each_computation(list(module.computations), simplify_tuples)
