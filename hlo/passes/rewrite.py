"""Small building blocks passes share: making instructions, constants and replacements.

A pass creates instructions with `Rewriter(module)`, which hands out XLA-style
unique names (`add.3`) and inserts new instructions before the one they replace,
so computations stay in a valid (operands-first) order.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..ir import Computation, Instruction, Module, NameUniquer
from ..literal import Literal
from ..shapes import Shape


class Rewriter:
    def __init__(self, module: Module):
        self.module = module
        self.names = NameUniquer.for_module(module)

    def add(self, comp: Computation, opcode: str, shape: Shape, operands=(), attrs=None,
            before: Optional[Instruction] = None, name: Optional[str] = None,
            like: Optional[Instruction] = None) -> Instruction:
        """A new instruction in `comp`, inserted before `before` (or appended).

        `like`: an instruction whose metadata and source location the new one inherits.
        """
        inst = Instruction(self.names.unique(name or opcode), opcode, shape, operands, attrs,
                           loc=like.loc if like is not None else None)
        if like is not None:
            inst.metadata = like.metadata
        return comp.add(inst, before=before)

    def constant(self, comp: Computation, array, shape: Shape, before: Optional[Instruction] = None,
                 like: Optional[Instruction] = None) -> Instruction:
        literal = Literal.from_array(np.asarray(array), shape)
        return self.add(comp, "constant", shape, (), {"literal": literal}, before=before, name="constant",
                        like=like)

    def new_computation(self, name: str) -> Computation:
        comp = Computation(self.names.unique(name))
        return comp


def fusion_computations(module: Module) -> set[int]:
    """ids of the computations fusion instructions call (and everything those call)."""
    out: set[int] = set()
    stack = [inst.attrs["calls"] for inst in module.instructions() if inst.opcode == "fusion"]
    while stack:
        comp = stack.pop()
        if id(comp) in out:
            continue
        out.add(id(comp))
        for inst in comp.instructions:
            stack.extend(inst.called_computations())
    return out


def unfused_computations(module: Module) -> list[Computation]:
    """The computations passes rewrite: every one except fusion bodies (as XLA's passes skip them)."""
    fused = fusion_computations(module)
    return [comp for comp in module.computations if id(comp) not in fused]


def replace(old: Instruction, new: Instruction) -> None:
    """Make every user of `old` use `new`, then drop `old` if nothing needs it any more."""
    if old is new:
        return
    old.replace_all_uses_with(new)
    comp = old.parent
    if comp is not None and not old.users and old is not comp.root:
        referenced = any(old in other.control_predecessors for other in comp.instructions)
        if not referenced and old.opcode != "parameter":
            comp.remove(old)
