"""An instruction order that a pass edits many times: insert before, remove, which comes first.

`InstructionOrder` keeps the instructions of one computation in a linked list with
integer labels that grow along the list (order maintenance: an insertion takes the
label halfway between its neighbours, and the whole list is relabelled when two
neighbours run out of room, which happens rarely). Inserting, removing and comparing
cost the same whatever the size of the computation; `instructions()` lists them in
order. Fusion uses it while it grows fused computations one producer at a time.
"""
from __future__ import annotations

from typing import Iterable, Optional

from ..ir import Instruction
from ..opcodes import Op

_GAP = 1 << 20


class InstructionOrder:
    def __init__(self, instructions: Iterable[Instruction]):
        self._next: dict[int, Optional[Instruction]] = {}
        self._prev: dict[int, Optional[Instruction]] = {}
        self._label: dict[int, int] = {}
        self._head: Optional[Instruction] = None
        self._tail: Optional[Instruction] = None
        self.first_operation: Optional[Instruction] = None  # the first instruction that is not a parameter
        for inst in instructions:
            self.insert(inst)

    def __contains__(self, inst: Instruction) -> bool:
        return id(inst) in self._label

    def label(self, inst: Instruction) -> int:
        return self._label[id(inst)]

    def first_of(self, instructions: Iterable[Instruction]) -> Optional[Instruction]:
        """The one of `instructions` that comes first (None if there are none)."""
        return min(instructions, key=self.label, default=None)

    def instructions(self) -> list[Instruction]:
        order = []
        inst = self._head
        while inst is not None:
            order.append(inst)
            inst = self._next[id(inst)]
        return order

    def insert(self, inst: Instruction, before: Optional[Instruction] = None) -> None:
        """Put `inst` right before `before` (at the end when None)."""
        prev = self._tail if before is None else self._prev[id(before)]
        self._link(inst, prev, before)
        low = self._label[id(prev)] if prev is not None else None
        high = self._label[id(before)] if before is not None else None
        if low is None:
            label = 0 if high is None else high - _GAP
        elif high is None:
            label = low + _GAP
        else:
            label = (low + high) // 2
            if label == low:
                self._relabel()
                label = None
        if label is not None:
            self._label[id(inst)] = label
        if inst.opcode != Op.PARAMETER and (self.first_operation is None
                                            or self.label(inst) < self.label(self.first_operation)):
            self.first_operation = inst

    def remove(self, inst: Instruction) -> None:
        prev, following = self._prev.pop(id(inst)), self._next.pop(id(inst))
        del self._label[id(inst)]
        if prev is None:
            self._head = following
        else:
            self._next[id(prev)] = following
        if following is None:
            self._tail = prev
        else:
            self._prev[id(following)] = prev
        if inst is self.first_operation:
            self.first_operation = following
            while self.first_operation is not None and self.first_operation.opcode == Op.PARAMETER:
                self.first_operation = self._next[id(self.first_operation)]

    def _link(self, inst: Instruction, prev: Optional[Instruction], following: Optional[Instruction]) -> None:
        self._prev[id(inst)] = prev
        self._next[id(inst)] = following
        if prev is None:
            self._head = inst
        else:
            self._next[id(prev)] = inst
        if following is None:
            self._tail = inst
        else:
            self._prev[id(following)] = inst

    def _relabel(self) -> None:
        for position, inst in enumerate(self.instructions()):
            self._label[id(inst)] = position * _GAP
