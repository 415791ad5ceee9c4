"""The in-memory HLO module: Module, Computation, Instruction, with use-def links.

Instructions keep their operands in order and their users (one entry per use), and
their control predecessors and successors; computations keep their instructions in
program (text) order. Every edit costs time proportional to what it touches, not to the
size of the computation: replacing uses visits the uses, removing or inserting an
instruction is recorded and the order list is rebuilt once, on the next read. Opcode-specific attributes live in
`Instruction.attrs` with the typed values the parser produced (see
hlo/attributes.py); attributes any instruction may carry (metadata, sharding,
frontend attributes, backend config, control predecessors ...) have fields of
their own. Every node remembers where it came from (`loc`).
"""
from __future__ import annotations

import itertools

from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from .diagnostics import SourceLoc
from .opcodes import AttrKind, OPCODES, Op, OpInfo
from .shapes import Shape


class EditClock:
    """A count of edits: every computation and instruction remembers the count at its last edit,
    so a pass can tell what changed since it last looked (hlo/passes/incremental.py). An
    instruction has two: `edited` (it was made, or its operands or control predecessors changed)
    and `uses_edited` (its users, control successors or root status changed). Edits made through
    this module's methods are counted; a pass that edits fields in place (`inst.shape = ...`) is
    not, and says so (`Pass.incremental`).

    Counts come from one iterator (`_TICKS`): next() on it is atomic, so threads that edit
    modules at the same time (the language server's two analysers) never get a count twice or
    a count below one a pass has already seen, which would let it skip an edit. (A read-add-
    store of a class attribute is atomic on CPython 3.11 only because no thread switch falls
    between its bytecodes; the iterator does not depend on that.)"""
    now = 0


_TICKS = itertools.count(1)


def touch(comp: Optional["Computation"]) -> None:
    """Record an edit of `comp` (None: an instruction outside any computation, nothing to record)."""
    if comp is not None:
        _tick(comp)


def touch_instruction(inst: Optional["Instruction"]) -> None:
    """Record an edit of `inst` (what it computes from) and of its computation."""
    if inst is not None:
        inst.edited = _tick(inst.parent)


def touch_uses(inst: Optional["Instruction"]) -> None:
    """Record an edit of the uses of `inst` and of its computation."""
    if inst is not None:
        inst.uses_edited = _tick(inst.parent)


def _tick(comp: Optional["Computation"]) -> int:
    """The count of the edit being recorded, given to `comp` (if any)."""
    now = EditClock.now = next(_TICKS)
    if comp is not None:
        comp.edited = now
    return now


def remove_use(users: list, user) -> None:
    """users.remove(user), searching from the end: the use removed is usually a recent one (a value
    many instructions use, such as a broadcast constant, would otherwise cost a scan of all its
    uses each time). Entries of one user are the same object, so which of them goes is the same."""
    for i in range(len(users) - 1, -1, -1):
        if users[i] is user:
            del users[i]
            return
    raise ValueError(f"{user!r} is not a user")


# opcode -> {attribute naming called computations: whether it holds a list of them}
_CALLED_ATTRIBUTES = {name: {a.name: a.kind is AttrKind.COMPUTATION_LIST for a in info.attrs
                             if a.kind is AttrKind.COMPUTATION or a.kind is AttrKind.COMPUTATION_LIST}
                      for name, info in OPCODES.items()}
# opcodes whose instructions call computations
CALLING_OPCODES = frozenset(name for name, kinds in _CALLED_ATTRIBUTES.items() if kinds)


class Instruction:
    __slots__ = ("name", "opcode", "shape", "operands", "attrs", "users", "parent", "loc",
                 "metadata", "sharding", "frontend_attributes", "backend_config",
                 "_control_predecessors", "control_successors", "statistics", "origin", "parameter_replication",
                 "operand_locs", "attr_locs", "edited", "uses_edited", "__weakref__")

    def __init__(self, name: str, opcode: str, shape: Optional[Shape], operands=(), attrs=None,
                 loc: Optional[SourceLoc] = None):
        self.name = name
        self.opcode = opcode
        self.shape = shape
        self.operands: list[Instruction] = []
        self.attrs: dict[str, Any] = {} if attrs is None else dict(attrs)
        self.users: list[Instruction] = []
        self.parent: Optional[Computation] = None
        self.loc = loc
        self.metadata = None             # hlo.attributes.Metadata or None
        self.sharding = None             # generic value (printed back canonically) or None
        self.frontend_attributes = None  # hlo.attributes.FrontendAttributes or None
        self.backend_config: Optional[str] = None
        self._control_predecessors: list[Instruction] = []
        self.control_successors: list[Instruction] = []  # kept by the control_predecessors setter
        self.statistics = None
        self.origin = None
        self.parameter_replication = None
        self.operand_locs: list[Optional[SourceLoc]] = []
        self.attr_locs: dict[str, SourceLoc] = {}
        self.edited = self.uses_edited = 0  # EditClock.now at the last edits
        if operands:
            self._take_operands(operands)

    def _take_operands(self, operands) -> None:
        """append_operand for each of the operands of a new instruction, with one edit count."""
        ops = self.operands = list(operands)
        now = EditClock.now = next(_TICKS)
        self.edited = now
        for op in ops:
            op.users.append(self)
            op.uses_edited = now
            if op.parent is not None:
                op.parent.edited = now

    # -- info
    @property
    def info(self) -> OpInfo:
        return OPCODES[self.opcode]

    def __repr__(self) -> str:
        return f"<{self.opcode} %{self.name}>"

    @property
    def parameter_number(self) -> int:
        return self.attrs["parameter_number"]

    @property
    def literal(self):
        return self.attrs["literal"]

    def called_computations(self) -> list["Computation"]:
        """Computations this instruction calls, in attribute order."""
        kinds = _CALLED_ATTRIBUTES.get(self.opcode)
        if not kinds:
            return []
        out = []
        for name, value in self.attrs.items():
            is_list = kinds.get(name)
            if is_list is None or value is None:
                continue
            if is_list:
                out.extend(value)
            else:
                out.append(value)
        return out

    # -- use-def maintenance
    def append_operand(self, op: "Instruction") -> None:
        self.operands.append(op)
        op.users.append(self)
        now = EditClock.now = next(_TICKS)  # touch_instruction(self), touch_uses(op), inlined: a hot path
        self.edited = op.uses_edited = now
        if self.parent is not None:
            self.parent.edited = now
        if op.parent is not None:
            op.parent.edited = now

    def set_operands(self, operands) -> None:
        touch_instruction(self)
        for op in self.operands:
            remove_use(op.users, self)
            touch_uses(op)
        self.operands = []
        for op in operands:
            self.append_operand(op)

    def replace_operand(self, index: int, new: "Instruction") -> None:
        touch_instruction(self)
        old = self.operands[index]
        touch_uses(old)
        touch_uses(new)
        remove_use(old.users, self)
        self.operands[index] = new
        new.users.append(self)

    def replace_all_uses_with(self, new: "Instruction") -> None:
        """Point every user (control successors and the computation root too) at `new` instead of self.

        Costs time proportional to the uses, whatever the size of the computation."""
        users, self.users = self.users, []
        touch_uses(self)
        touch_uses(new)
        seen: set[int] = set()
        for user in users:
            if id(user) in seen:  # a user appears once per use: its slots are all replaced the first time
                continue
            seen.add(id(user))
            touch_instruction(user)
            operands = user.operands
            for i, op in enumerate(operands):
                if op is self:
                    operands[i] = new
                    new.users.append(user)
        parent = self.parent
        for successor in list(self.control_successors):
            if parent is not None and successor.parent is parent:
                successor.control_predecessors = [new if p is self else p for p in successor.control_predecessors]
        if parent is not None and parent.root is self:
            parent.root = new

    # -- control dependencies: the setter keeps the predecessors' control_successors in step
    @property
    def control_predecessors(self) -> list["Instruction"]:
        return self._control_predecessors

    @control_predecessors.setter
    def control_predecessors(self, predecessors) -> None:
        touch_instruction(self)
        for old in self._control_predecessors:
            old.control_successors.remove(self)
            touch_uses(old)
        self._control_predecessors = list(predecessors)
        for new in self._control_predecessors:
            new.control_successors.append(self)
            touch_uses(new)

    def clone(self, operands, name: Optional[str] = None) -> "Instruction":
        """A copy of this instruction (not yet in any computation) over other operands."""
        copy = Instruction(name or self.name, self.opcode, self.shape, operands, self.attrs, self.loc)
        copy.copy_generic_attributes_from(self)
        copy.parameter_replication = self.parameter_replication
        copy.attr_locs = dict(self.attr_locs)
        copy.operand_locs = list(self.operand_locs)
        return copy

    def copy_generic_attributes_from(self, other: "Instruction") -> None:
        self.metadata = other.metadata
        self.sharding = other.sharding
        self.frontend_attributes = other.frontend_attributes
        self.backend_config = other.backend_config
        self.statistics = other.statistics
        self.origin = other.origin


class Computation:
    """A list of instructions in program order, its root, and where it was written.

    `instructions` is a plain list. `add(..., before=x)` and `remove` only record the
    change (constant time), and the list is rebuilt on its next read, so that a pass
    making many edits between reads costs time linear in the size of the computation.
    """

    def __init__(self, name: str, loc: Optional[SourceLoc] = None):
        self.name = name
        self._instructions: list[Instruction] = []
        self._removed: Optional[set[int]] = None                     # ids removed since the last rebuild
        self._inserted: Optional[dict[int, list[Instruction]]] = None  # id(x) -> instructions to put before x
        self._root: Optional[Instruction] = None
        self.edited = 0  # EditClock.now at the last edit (set just below)
        touch(self)
        self._in_order_at = -1  # `edited` when the list was last found in post order
        self.parent: Optional[Module] = None
        self.is_entry = False
        self.execution_thread = "main"
        self.loc = loc
        self.signature_loc: Optional[SourceLoc] = None
        self.declared_result_shape: Optional[Shape] = None  # from the text's signature, if any
        self.async_wrapped = False   # created for async sugar (X-start); printed as sugar
        self._names = None  # (edited, instruction names, their suffixes), for NameUniquer.for_module

    def __repr__(self) -> str:
        return f"<computation %{self.name}>"

    @property
    def root(self) -> Optional[Instruction]:
        return self._root

    @root.setter
    def root(self, inst: Optional[Instruction]) -> None:
        touch_uses(self._root)
        self._root = inst
        touch_uses(inst)
        touch(self)

    @property
    def instructions(self) -> list[Instruction]:
        """The instructions in program order (operands before users)."""
        if self._removed is not None or self._inserted is not None:
            self._rebuild()
        return self._instructions

    @instructions.setter
    def instructions(self, instructions) -> None:
        touch(self)
        self._instructions = list(instructions)
        self._removed = self._inserted = None
        self._in_order_at = -1  # any order: post_order looks at every instruction again

    @property
    def parameters(self) -> list[Instruction]:
        params = [i for i in self.instructions if i.opcode == Op.PARAMETER]
        return sorted(params, key=lambda p: p.attrs["parameter_number"])

    def parameter_shapes(self) -> list[Shape]:
        return [p.shape for p in self.parameters]

    def add(self, inst: Instruction, before: Optional[Instruction] = None) -> Instruction:
        """Append (or insert before `before`, an instruction of this computation) an instruction."""
        now = EditClock.now = next(_TICKS)  # touch(self), touch_instruction(inst), inlined: parsing adds
        self.edited = inst.edited = now          # every instruction through here
        if self._removed is not None and id(inst) in self._removed:
            self._rebuild()  # added back after a removal: its old place must go first
        if before is None:
            inst.parent = self
            self._instructions.append(inst)
            return inst
        if before.parent is not self and not self._holds(before):
            raise ValueError(f"cannot insert before %{before.name}: it is not in computation %{self.name}")
        inst.parent = self
        if self._inserted is None:
            self._inserted = {}
        self._inserted.setdefault(id(before), []).append(inst)
        return inst

    def remove(self, inst: Instruction) -> None:
        """Remove an instruction that has no users."""
        assert not inst.users, f"removing {inst.name} which still has users"
        touch(self)
        if inst.parent is not self and not self._holds(inst):
            raise ValueError(f"%{inst.name} is not in computation %{self.name}")
        for op in inst.operands:
            remove_use(op.users, inst)
            touch_uses(op)
        inst.operands = []
        if self._removed is None:
            self._removed = set()
        self._removed.add(id(inst))
        inst.parent = None

    def _holds(self, inst: Instruction) -> bool:
        """Whether `inst` is in the list though its parent says otherwise (a linear scan, for that odd case)."""
        return any(i is inst for i in self.instructions)

    def _rebuild(self) -> None:
        """Apply the recorded insertions and removals to the instruction list."""
        removed = self._removed or ()
        inserted = self._inserted
        order: list[Instruction] = []
        if inserted:
            for inst in self._instructions:
                if id(inst) in inserted:
                    _emit_with_insertions(inst, inserted, removed, order)
                elif id(inst) not in removed:
                    order.append(inst)
        else:
            order = [inst for inst in self._instructions if id(inst) not in removed]
        self._instructions = order
        self._removed = self._inserted = None

    def by_name(self) -> dict[str, Instruction]:
        return {i.name: i for i in self.instructions}

    def post_order(self) -> list[Instruction]:
        """Instructions with every operand before its users (stable w.r.t. text order)."""
        instructions = self.instructions
        if self._in_order_at == self.edited or self._still_in_post_order(instructions):
            self._in_order_at = self.edited  # known in order until the next edit
            return list(instructions)  # what the search below gives for a list already in order
        seen: set[int] = set()
        order: list[Instruction] = []
        for start in instructions:
            stack = [(start, False)]
            while stack:
                inst, expanded = stack.pop()
                if id(inst) in seen:
                    continue
                if expanded:
                    seen.add(id(inst))
                    order.append(inst)
                    continue
                stack.append((inst, True))
                for op in reversed(inst.operands + inst.control_predecessors):
                    if id(op) not in seen:
                        stack.append((op, False))
        return order


    def _still_in_post_order(self, instructions: list[Instruction]) -> bool:
        """Whether the list is in post order, looking only at the instructions edited since it last
        was: insertions and removals keep the order of the others, and an instruction whose operands
        or control predecessors did not change still comes after them (the setter of `instructions`,
        which may reorder, makes the next call look at every instruction)."""
        since = self._in_order_at
        if since < 0:
            return _in_post_order(instructions)
        recent = [inst for inst in instructions if inst.edited > since]
        if not recent:
            return True
        position = {id(inst): k for k, inst in enumerate(instructions)}
        if len(position) != len(instructions):
            return False  # an instruction listed twice: left to the search
        for inst in recent:
            k = position[id(inst)]
            for op in inst.operands:
                if position.get(id(op), k) >= k:
                    return False
            for op in inst._control_predecessors:
                if position.get(id(op), k) >= k:
                    return False
        return True


def _in_post_order(instructions: list[Instruction]) -> bool:
    """Whether every operand and control predecessor comes before its user in the list."""
    seen: set[int] = set()
    add = seen.add
    for inst in instructions:
        for op in inst.operands:
            if id(op) not in seen:
                return False
        if inst._control_predecessors:
            for op in inst._control_predecessors:
                if id(op) not in seen:
                    return False
        add(id(inst))
    return len(seen) == len(instructions)  # (an instruction listed twice is left to the search)


def _emit_with_insertions(inst: Instruction, inserted: dict, removed, order: list) -> None:
    """Append to `order` what was inserted before `inst` (and, in turn, before those), then `inst`."""
    stack = [(inst, iter(inserted.pop(id(inst), ())))]
    while stack:
        node, waiting = stack[-1]
        first = next(waiting, None)
        if first is not None:
            stack.append((first, iter(inserted.pop(id(first), ()))))
            continue
        stack.pop()
        if id(node) not in removed:
            order.append(node)


@dataclass
class ProgramShape:
    parameters: list[Shape]
    result: Shape


@dataclass
class AliasEntry:
    output_index: tuple[int, ...]
    parameter: int
    parameter_index: tuple[int, ...]
    kind: str = "may-alias"


@dataclass
class ModuleConfig:
    """Header attributes of a module."""
    is_scheduled: Optional[bool] = None
    input_output_alias: list[AliasEntry] = field(default_factory=list)
    buffer_donor: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    alias_passthrough_params: bool = False
    entry_computation_layout: Optional[ProgramShape] = None
    allow_spmd_sharding_propagation_to_parameters: Optional[tuple[bool, ...]] = None
    allow_spmd_sharding_propagation_to_output: Optional[tuple[bool, ...]] = None
    replica_count: int = 1
    num_partitions: int = 1
    frontend_attributes: Any = None
    origin_recovery_table: Any = None
    stack_frame_index: Any = None


class Module:
    def __init__(self, name: str):
        self.name = name
        self.computations: list[Computation] = []
        self.entry: Optional[Computation] = None
        self.config = ModuleConfig()
        self.source = None  # hlo.diagnostics.SourceFile the module was parsed from

    def __repr__(self) -> str:
        return f"<HloModule {self.name}>"

    def add_computation(self, comp: Computation, before: Optional[Computation] = None) -> Computation:
        comp.parent = self
        if before is None:
            self.computations.append(comp)
        else:
            self.computations.insert(self.computations.index(before), comp)
        return comp

    def computation(self, name: str) -> Computation:
        for c in self.computations:
            if c.name == name:
                return c
        raise KeyError(name)

    def instructions(self) -> Iterator[Instruction]:
        for c in self.computations:
            yield from c.instructions

    def entry_program_shape(self) -> ProgramShape:
        return ProgramShape(self.entry.parameter_shapes(), self.entry.root.shape)

    def remove_unreachable_computations(self) -> bool:
        """Drop computations nothing reachable from the entry calls."""
        reachable = set()
        stack = [self.entry]
        while stack:
            comp = stack.pop()
            if id(comp) in reachable:
                continue
            reachable.add(id(comp))
            for inst in comp.instructions:
                if inst.opcode in CALLING_OPCODES:
                    stack.extend(inst.called_computations())
        before = len(self.computations)
        self.computations = [c for c in self.computations if id(c) in reachable]
        return len(self.computations) != before

    def callees_first(self) -> list[Computation]:
        """Computations ordered so that every callee comes before its callers."""
        order: list[Computation] = []
        seen: set[int] = set()

        def visit(comp: Computation):
            if id(comp) in seen:
                return
            seen.add(id(comp))
            for inst in [inst for inst in comp.instructions if inst.opcode in CALLING_OPCODES]:
                for callee in inst.called_computations():
                    visit(callee)
            order.append(comp)

        for comp in self.computations:
            visit(comp)
        return order


# --------------------------------------------------------------------------- names



class NameUniquer:
    """Hands out names unique within a module, XLA style: `add`, `add.1`, `add.2`."""

    def __init__(self, taken=()):
        self._next: dict[str, int] = {}
        self._taken: set[str] = set()
        for name in taken:
            self.reserve(name)

    def reserve(self, name: str) -> None:
        self._taken.add(name)
        base, dot, digits = name.rpartition(".")
        if dot and digits.isdecimal():  # `add.12`: the next `add` is add.13 at least
            n = int(digits) + 1
            if n > self._next.get(base, 1):
                self._next[base] = n

    def unique(self, wanted: str) -> str:
        taken = self._taken
        if wanted not in taken:
            self.reserve(wanted)
            return wanted
        base, _ = _split_suffix(wanted)
        n = self._next.get(base, 1)
        name = f"{base}.{n}"
        while name in taken:
            n += 1
            name = f"{base}.{n}"
        taken.add(name)
        self._next[base] = n + 1
        return name

    @staticmethod
    def for_module(module: Module) -> "NameUniquer":
        uniquer = NameUniquer()
        taken, following = uniquer._taken, uniquer._next
        names = [c.name for c in module.computations]
        taken.update(names)
        _raise_suffixes(following, names)
        for comp in module.computations:
            inst_names, suffixes = _instruction_names(comp)
            taken.update(inst_names)
            for base, n in suffixes.items():
                if n > following.get(base, 1):
                    following[base] = n
        return uniquer


def _instruction_names(comp: Computation) -> tuple[list[str], dict[str, int]]:
    """The names of comp's instructions and, per base name, the suffix after the largest (as
    NameUniquer._next), kept until the computation is next edited: a pipeline asks for the names
    of the whole module once per pass that adds instructions, and most computations do not change
    between two passes. (Renaming an instruction in place is an edit of its computation: the one
    pass that does it, fusion naming fused parameters, sets the computation's instructions after.)"""
    known = comp._names
    if known is not None and known[0] == comp.edited:
        return known[1], known[2]
    names = [i.name for i in comp.instructions]
    suffixes: dict[str, int] = {}
    _raise_suffixes(suffixes, names)
    comp._names = (comp.edited, names, suffixes)
    return names, suffixes


def _raise_suffixes(following: dict[str, int], names) -> None:
    """NameUniquer.reserve's update of the next suffixes, for many names."""
    for name in names:
        base, dot, digits = name.rpartition(".")
        if dot and digits.isdecimal():
            n = int(digits) + 1
            if n > following.get(base, 1):
                following[base] = n


def _split_suffix(name: str) -> tuple[str, Optional[int]]:
    """`add.12` -> ('add', 12); `add` -> ('add', None) (as the pattern `(.*?)\\.(\\d+)` would split it)."""
    base, dot, digits = name.rpartition(".")
    if dot and digits.isdecimal():
        return base, int(digits)
    return name, None
