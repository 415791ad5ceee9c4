"""A fused computation while fusion grows it, one producer at a time.

`FusedComputation` keeps what fusion edits and asks about a fused computation: its
parameters in the order of the fusion's operands (renumbered once, when the run ends),
the order of its instructions (an InstructionOrder, so that inserting before the first
user costs the same whatever the size), and the facts its decisions read (set by the
fuser). The Computation's own instruction list is written once, by `finish`.
"""
from __future__ import annotations

from typing import Any, Optional

from ..ir import Computation, Instruction, NameUniquer, remove_use
from ..opcodes import Op
from .instruction_order import InstructionOrder


class FusedComputation:
    __slots__ = ("body", "params", "facts", "heroes", "_order", "added", "dropped")

    def __init__(self, body: Computation, order: Optional[InstructionOrder] = None):
        self.body = body
        self.params: list[Instruction] = body.parameters  # by place = number while the run lasts
        self.facts: Any = None                  # the fuser's BodyFacts, once asked for
        self.heroes: Optional[tuple[int, ...]] = None  # places of the parameters a dot reads, once asked for
        self._order = order
        self.added: list[Instruction] = []      # parameters added by the fusion being made
        self.dropped: list[Instruction] = []    # and dropped

    @staticmethod
    def new(body: Computation) -> "FusedComputation":
        return FusedComputation(body, InstructionOrder(()))

    @property
    def order(self) -> InstructionOrder:
        if self._order is None:
            self._order = InstructionOrder(self.body.instructions)
        return self._order

    def instructions(self) -> list[Instruction]:
        """The instructions in their current order."""
        return self._order.instructions() if self._order is not None else self.body.instructions

    def add(self, inst: Instruction, before: Optional[Instruction] = None) -> Instruction:
        self.order.insert(inst, before)
        inst.parent = self.body
        return inst

    def first_user(self, params: list[Instruction]) -> Optional[Instruction]:
        return self.order.first_of(u for p in params for u in p.users)

    def new_parameter(self, like: Instruction) -> Instruction:
        """A parameter standing for `like`, the fusion's newest operand, before every other
        instruction so that any may use it (named when the run ends)."""
        param = Instruction("param", Op.PARAMETER, like.shape, (), {"parameter_number": len(self.params)})
        self.add(param, before=self.order.first_operation)
        self.params.append(param)
        self.added.append(param)
        return param

    def drop_operands(self, fusion: Instruction, slots: list[int]) -> None:
        """Remove fused operands and their (unused now) parameters."""
        params, operands = self.params, fusion.operands
        for slot in sorted(slots, reverse=True):
            param = params[slot]
            self.dropped.append(param)
            self.order.remove(param)
            param.parent = None
            remove_use(operands[slot].users, fusion)  # one entry per use
            del operands[slot]
            del params[slot]
        self.heroes = None

    def finish(self, names: NameUniquer) -> None:
        """Number and name the parameters as XLA's dumps do (param_0, param_1 ..., unique in the
        module), then write the instruction list: parameters first, the rest operands first."""
        for number, param in enumerate(self.params):
            param.attrs["parameter_number"] = number
            param.name = names.unique(f"param_{number}")
        ordered = self.instructions()
        params = [i for i in ordered if i.opcode == Op.PARAMETER]
        self.body.instructions = ordered
        self.body.instructions = params + [i for i in self.body.post_order() if i.opcode != Op.PARAMETER]
