"""hlo-diff: compare two modules by graph structure, not by names.

Instructions are matched within pairs of computations, in phases:

1. identical subgraphs: every instruction gets a structural key (opcode, shape with
   layout, attributes, called computations by their own structural key, and the keys of
   its operands, recursively); instructions whose key occurs as often on both sides are
   paired in program order;
2. anchors: the roots, and parameters by number;
3. propagation to a fixed point: from a matched pair to operands at the same position
   with the same opcode, and to users with the same opcode that use the pair at the same
   operand positions;
4. what remains: repeated keys in program order, then instructions with the same opcode
   and shape (ignoring layout) that are the only such ones left on both sides, then
   callers (while, call, fusion ...) of the same opcode that are the only ones left.

Names are never consulted, so renamed or renumbered instructions match. Computations are
matched from the entries down, through the called computations of matched instructions,
then by structural key. A matched pair is *unchanged* when shape, layout, attributes and
operands (as matched instructions) agree, otherwise *changed* with the differences listed;
unmatched instructions are *added* or *removed*. Metadata is not compared.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Optional

from ..attributes import format_attribute, format_generic_attribute, is_default
from ..ir import Computation, Instruction, Module
from ..literal import format_literal
from ..opcodes import Op
from ..shapes import format_shape
from ..text.printer import format_instruction
from ..textutil import matching_brace_end

UNCHANGED, CHANGED, ADDED, REMOVED = "unchanged", "changed", "added", "removed"
MATCHED = "matched"


@dataclass
class Change:
    what: str       # "shape", "layout", "attribute NAME", "operand I", "operand count", "header NAME"
    a: str
    b: str

    def __str__(self) -> str:
        return f"{self.what}: {self.a} -> {self.b}"

    def to_json(self) -> dict:
        return {"what": self.what, "a": self.a, "b": self.b}


@dataclass
class InstructionDiff:
    status: str                      # unchanged, changed, added, removed
    a: Optional[Instruction]
    b: Optional[Instruction]
    changes: list[Change] = field(default_factory=list)

    @property
    def renamed(self) -> bool:
        return self.a is not None and self.b is not None and self.a.name != self.b.name


@dataclass
class ComputationDiff:
    status: str                      # matched, added, removed
    a: Optional[Computation]
    b: Optional[Computation]
    rows: list[InstructionDiff] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for r in self.rows if r.status == status)

    @property
    def equal(self) -> bool:
        return self.status == MATCHED and all(r.status == UNCHANGED for r in self.rows)

    @property
    def title(self) -> str:
        if self.a is not None and self.b is not None and self.a.name != self.b.name:
            return f"%{self.a.name} -> %{self.b.name}"
        return f"%{(self.b or self.a).name}"


@dataclass
class ModuleDiff:
    a: Module
    b: Module
    computations: list[ComputationDiff]
    header: list[Change] = field(default_factory=list)

    @property
    def equal(self) -> bool:
        return not self.header and all(c.equal for c in self.computations)

    def totals(self) -> dict[str, int]:
        out = {s: 0 for s in (UNCHANGED, CHANGED, ADDED, REMOVED)}
        for comp in self.computations:
            for row in comp.rows:
                out[row.status] += 1
        out["renamed"] = sum(1 for c in self.computations for r in c.rows if r.renamed)
        return out

    def changed_computations(self) -> list[ComputationDiff]:
        return [c for c in self.computations if not c.equal]


# --------------------------------------------------------------------------- structural keys

def attribute_texts(inst: Instruction, callee_text: Callable[[Computation], str]) -> dict[str, str]:
    """The instruction's non-default attributes as text, called computations spelled by `callee_text`."""
    out: dict[str, str] = {}
    if inst.opcode == Op.PARAMETER:
        out["parameter_number"] = str(inst.attrs["parameter_number"])
    elif inst.opcode == Op.CONSTANT:
        out["literal"] = format_literal(inst.attrs["literal"])
    for spec in inst.info.attrs:
        value = inst.attrs.get(spec.name)
        if spec.name not in inst.attrs or is_default(spec, value):
            continue
        if spec.is_computation:
            if isinstance(value, (list, tuple)):
                out[spec.name] = "{" + ", ".join(callee_text(c) for c in value) + "}"
            else:
                out[spec.name] = callee_text(value)
        else:
            out[spec.name] = format_attribute(spec, value).partition("=")[2]
    if inst.sharding is not None:
        out["sharding"] = format_generic_attribute("sharding", inst.sharding)
    if inst.frontend_attributes is not None and inst.frontend_attributes.items:
        out["frontend_attributes"] = inst.frontend_attributes.canonical()
    if inst.backend_config:
        out["backend_config"] = inst.backend_config
    return out


class StructuralKeys:
    """Interned structural keys of the instructions and computations of one or more modules:
    equal keys mean equal subgraphs (up to names)."""

    def __init__(self):
        self._ids: dict[tuple, int] = {}
        self.inst: dict[int, int] = {}
        self.comp: dict[int, int] = {}

    def _intern(self, key: tuple) -> int:
        return self._ids.setdefault(key, len(self._ids))

    def add(self, module: Module) -> None:
        for comp in module.callees_first():
            for inst in comp.post_order():
                attrs = attribute_texts(inst, lambda c: f"#{self.comp.get(id(c), -1)}")
                local = (inst.opcode, format_shape(inst.shape) if inst.shape is not None else "", tuple(attrs.items()))
                self.inst[id(inst)] = self._intern((local, tuple(self.inst[id(op)] for op in inst.operands)))
            root = self.inst[id(comp.root)] if comp.root is not None else -1
            self.comp[id(comp)] = self._intern(("computation", root,
                                                tuple(sorted(self.inst[id(i)] for i in comp.instructions))))


# --------------------------------------------------------------------------- matching instructions

class _Matcher:
    """Pairs instructions of computation `ca` with instructions of `cb`."""

    def __init__(self, ca: Computation, cb: Computation, keys: StructuralKeys):
        self.ca, self.cb, self.keys = ca, cb, keys
        self.a_to_b: dict[int, Instruction] = {}
        self.b_to_a: dict[int, Instruction] = {}
        self.order_a = {id(i): n for n, i in enumerate(ca.instructions)}
        self.order_b = {id(i): n for n, i in enumerate(cb.instructions)}
        self.pending: list[tuple[Instruction, Instruction]] = []

    def pair(self, a: Instruction, b: Instruction) -> bool:
        if id(a) in self.a_to_b or id(b) in self.b_to_a or a.opcode != b.opcode:
            return False
        self.a_to_b[id(a)] = b
        self.b_to_a[id(b)] = a
        self.pending.append((a, b))
        return True

    def run(self) -> dict[int, Instruction]:
        groups_a, groups_b = self._groups(self.ca), self._groups(self.cb)
        for key, items in groups_a.items():          # 1. identical subgraphs, equally often
            if len(items) == len(groups_b.get(key, ())):
                for a, b in zip(items, groups_b[key]):
                    self.pair(a, b)
        if self.ca.root is not None and self.cb.root is not None:   # 2. anchors
            self.pair(self.ca.root, self.cb.root)
        params_b = {p.parameter_number: p for p in self.cb.parameters}
        for p in self.ca.parameters:
            if p.parameter_number in params_b:
                self.pair(p, params_b[p.parameter_number])
        self.propagate()                             # 3.
        for key, items in groups_a.items():          # 4. repeated keys in program order
            left_a = [a for a in items if id(a) not in self.a_to_b]
            left_b = [b for b in groups_b.get(key, ()) if id(b) not in self.b_to_a]
            for a, b in zip(left_a, left_b):
                self.pair(a, b)
        self.propagate()
        self._pair_unique_by(lambda i: (i.opcode, format_shape(i.shape, with_layout=False) if i.shape else ""))
        self.propagate()
        # a loop, call or fusion whose shape changed (a pass rewrote its state): the only one left
        self._pair_unique_by(lambda i: (i.opcode, len(i.called_computations())) if i.called_computations() else None)
        self.propagate()
        return self.a_to_b

    def _groups(self, comp: Computation) -> dict[int, list[Instruction]]:
        groups: dict[int, list[Instruction]] = defaultdict(list)
        for inst in comp.instructions:
            groups[self.keys.inst[id(inst)]].append(inst)
        return groups

    def _pair_unique_by(self, key: Callable) -> None:
        left_a: dict = defaultdict(list)
        left_b: dict = defaultdict(list)
        for a in self.ca.instructions:
            if id(a) not in self.a_to_b:
                left_a[key(a)].append(a)
        for b in self.cb.instructions:
            if id(b) not in self.b_to_a:
                left_b[key(b)].append(b)
        for k, items in left_a.items():
            if k is not None and len(items) == 1 and len(left_b.get(k, ())) == 1:
                self.pair(items[0], left_b[k][0])

    def propagate(self) -> None:
        """Down to operands first (reliable: same position), then up to users, one pair at a time."""
        deferred: list[tuple[Instruction, Instruction]] = []
        while self.pending or deferred:
            if self.pending:
                a, b = self.pending.pop(0)
                if len(a.operands) == len(b.operands):
                    for oa, ob in zip(a.operands, b.operands):
                        if oa.parent is self.ca and ob.parent is self.cb:
                            self.pair(oa, ob)
                deferred.append((a, b))
            else:
                self._up(*deferred.pop(0))

    def _up(self, a: Instruction, b: Instruction) -> None:
        for ua in sorted(a.users, key=lambda u: self.order_a.get(id(u), 0)):
            if id(ua) in self.a_to_b or ua.parent is not self.ca:
                continue
            positions = [i for i, op in enumerate(ua.operands) if op is a]
            candidates = [ub for ub in b.users if ub.opcode == ua.opcode and id(ub) not in self.b_to_a
                          and ub.parent is self.cb and len(ub.operands) == len(ua.operands)
                          and all(ub.operands[i] is b for i in positions)]
            if candidates:
                self.pair(ua, min(candidates, key=lambda ub: (-self._likeness(ua, ub), self.order_b.get(id(ub), 0))))

    def _likeness(self, a: Instruction, b: Instruction) -> int:
        """How alike two instructions of the same opcode are: same subgraph, then same shape and attributes."""
        if self.keys.inst[id(a)] == self.keys.inst[id(b)]:
            return 4
        same_shape = a.shape is not None and b.shape is not None and \
            format_shape(a.shape, with_layout=False) == format_shape(b.shape, with_layout=False)
        same_attrs = attribute_texts(a, _no_callee) == attribute_texts(b, _no_callee)
        return 2 * same_attrs + same_shape


def _no_callee(_comp) -> str:
    return ""


# --------------------------------------------------------------------------- differences

def _instruction_changes(a: Instruction, b: Instruction, inst_match: dict[int, Instruction],
                         comp_match: dict[int, Computation]) -> list[Change]:
    changes = []
    sa, sb = a.shape, b.shape
    if sa is not None and sb is not None:
        if format_shape(sa, with_layout=False) != format_shape(sb, with_layout=False):
            changes.append(Change("shape", format_shape(sa), format_shape(sb)))
        elif format_shape(sa) != format_shape(sb):
            changes.append(Change("layout", format_shape(sa), format_shape(sb)))
    attrs_a = attribute_texts(a, lambda c: f"%{c.name}")
    attrs_b = attribute_texts(b, lambda c: f"%{c.name}")
    callees_equal = _callees_equal(a, b, comp_match)
    for name in list(attrs_a) + [n for n in attrs_b if n not in attrs_a]:
        va, vb = attrs_a.get(name, "(default)"), attrs_b.get(name, "(default)")
        spec = a.info.attr_map.get(name)
        if spec is not None and spec.is_computation and name in attrs_a and name in attrs_b and callees_equal:
            continue
        if va != vb:
            changes.append(Change(f"attribute {name}", va, vb))
    if len(a.operands) != len(b.operands):
        changes.append(Change("operand count", str(len(a.operands)), str(len(b.operands))))
    for i, (oa, ob) in enumerate(zip(a.operands, b.operands)):
        if inst_match.get(id(oa)) is not ob:
            changes.append(Change(f"operand {i}", f"%{oa.name}", f"%{ob.name}"))
    return changes


def _callees_equal(a: Instruction, b: Instruction, comp_match: dict[int, Computation]) -> bool:
    ca, cb = a.called_computations(), b.called_computations()
    return len(ca) == len(cb) and all(comp_match.get(id(x)) is y for x, y in zip(ca, cb))


def _rows(ca: Computation, cb: Computation, inst_match: dict[int, Instruction],
          comp_match: dict[int, Computation]) -> list[InstructionDiff]:
    """Rows in b's program order; a removed instruction follows the row of the matched
    instruction before it in a's order."""
    matched_b = {}
    for a in ca.instructions:
        b = inst_match.get(id(a))
        if b is not None:
            matched_b[id(b)] = a
    removed_after: dict[int, list[Instruction]] = defaultdict(list)   # id(a anchor) or 0 -> removed
    anchor = 0
    for a in ca.instructions:
        if id(a) in inst_match:
            anchor = id(a)
        else:
            removed_after[anchor].append(a)
    rows = [InstructionDiff(REMOVED, a, None) for a in removed_after.get(0, [])]
    for b in cb.instructions:
        a = matched_b.get(id(b))
        if a is None:
            rows.append(InstructionDiff(ADDED, None, b))
            continue
        changes = _instruction_changes(a, b, inst_match, comp_match)
        rows.append(InstructionDiff(CHANGED if changes else UNCHANGED, a, b, changes))
        rows.extend(InstructionDiff(REMOVED, r, None) for r in removed_after.get(id(a), []))
    return rows


def diff_modules(a: Module, b: Module) -> ModuleDiff:
    """The structural difference from module `a` to module `b`."""
    keys = StructuralKeys()
    keys.add(a)
    keys.add(b)
    comp_match: dict[int, Computation] = {}
    comp_match_b: dict[int, Computation] = {}
    inst_matches: dict[int, dict[int, Instruction]] = {}
    queue: list[tuple[Computation, Computation]] = []
    if a.entry is not None and b.entry is not None:
        queue.append((a.entry, b.entry))

    def match_pair(ca: Computation, cb: Computation) -> None:
        if id(ca) in comp_match or id(cb) in comp_match_b:
            return
        comp_match[id(ca)] = cb
        comp_match_b[id(cb)] = ca
        inst_matches[id(ca)] = _Matcher(ca, cb, keys).run()

    while True:
        while queue:
            ca, cb = queue.pop(0)
            if id(ca) in comp_match or id(cb) in comp_match_b:
                continue
            match_pair(ca, cb)
            for ia in ca.instructions:
                ib = inst_matches[id(ca)].get(id(ia))
                if ib is not None:
                    queue.extend(zip(ia.called_computations(), ib.called_computations()))
        # computations not reached from matched callers: identical ones first, then unique by signature
        left_a = [c for c in a.computations if id(c) not in comp_match]
        left_b = [c for c in b.computations if id(c) not in comp_match_b]
        found = _pair_leftover_computations(left_a, left_b, keys)
        if not found:
            break
        queue.extend(found)

    diffs: list[ComputationDiff] = []
    for cb in b.computations:
        ca = comp_match_b.get(id(cb))
        if ca is None:
            diffs.append(ComputationDiff(ADDED, None, cb, [InstructionDiff(ADDED, None, i) for i in cb.instructions]))
        else:
            diffs.append(ComputationDiff(MATCHED, ca, cb, _rows(ca, cb, inst_matches[id(ca)], comp_match)))
    for ca in a.computations:
        if id(ca) not in comp_match:
            diffs.append(ComputationDiff(REMOVED, ca, None, [InstructionDiff(REMOVED, i, None) for i in ca.instructions]))
    return ModuleDiff(a, b, diffs, _header_changes(a, b))


def _signature(comp: Computation) -> tuple:
    return (tuple(format_shape(p.shape, with_layout=False) for p in comp.parameters),
            format_shape(comp.root.shape, with_layout=False) if comp.root is not None and comp.root.shape else "")


def _pair_leftover_computations(left_a, left_b, keys: StructuralKeys) -> list[tuple[Computation, Computation]]:
    for key in (lambda c: keys.comp[id(c)], _signature):
        groups_a: dict = defaultdict(list)
        groups_b: dict = defaultdict(list)
        for c in left_a:
            groups_a[key(c)].append(c)
        for c in left_b:
            groups_b[key(c)].append(c)
        found = [(x, y) for k, items in groups_a.items() if len(items) == len(groups_b.get(k, ()))
                 for x, y in zip(items, groups_b[k])]
        if found:
            return found
    return []


def _header_changes(a: Module, b: Module) -> list[Change]:
    out = []
    def spell(v) -> str:
        return "(unset)" if v is None else str(v).lower() if isinstance(v, bool) else str(v)

    for name in ("replica_count", "num_partitions", "is_scheduled"):
        va, vb = getattr(a.config, name), getattr(b.config, name)
        if va != vb:
            out.append(Change(f"header {name}", spell(va), spell(vb)))
    alias = lambda m: "; ".join(f"{e.output_index}:{e.parameter},{e.parameter_index},{e.kind}"   # noqa: E731
                                for e in m.config.input_output_alias)
    if alias(a) != alias(b):
        out.append(Change("header input_output_alias", alias(a) or "(none)", alias(b) or "(none)"))
    return out


# --------------------------------------------------------------------------- reports

def instruction_text(inst: Instruction) -> str:
    """The instruction's canonical line without its metadata (as it reads in a diff)."""
    root = inst.parent is not None and inst.parent.root is inst
    text = format_instruction(inst, root)
    start = text.find(", metadata={")
    if start >= 0:
        end = matching_brace_end(text, start + len(", metadata="))
        if end > 0:
            text = text[:start] + text[end:]
    return text


_COLOURS = {ADDED: "\033[32m", REMOVED: "\033[31m", CHANGED: "\033[33m", "head": "\033[1m", "dim": "\033[2m"}
_RESET = "\033[0m"
_MARKS = {ADDED: "+", REMOVED: "-", CHANGED: "~", UNCHANGED: " "}


def format_text(diff: ModuleDiff, name_a: str = "a", name_b: str = "b", color: bool = False,
                show_unchanged: bool = False) -> str:
    """The diff as text: one section per computation that differs; nothing when equal."""
    def paint(kind: str, text: str) -> str:
        return f"{_COLOURS[kind]}{text}{_RESET}" if color else text

    if diff.equal and not show_unchanged:
        return ""
    lines = [paint("head", f"--- {name_a}"), paint("head", f"+++ {name_b}")]
    for change in diff.header:
        lines.append(paint(CHANGED, f"~ {change}"))
    for comp in diff.computations:
        if comp.equal and not show_unchanged:
            continue
        if comp.status == MATCHED:
            counts = ", ".join(f"{comp.count(s)} {s}" for s in (UNCHANGED, CHANGED, ADDED, REMOVED))
            lines.append(paint("head", f"computation {comp.title}: {counts}"))
        else:
            lines.append(paint("head", f"computation {comp.title}: {comp.status} ({len(comp.rows)} instructions)"))
        for row in comp.rows:
            if row.status == UNCHANGED and not show_unchanged:
                continue
            inst = row.b if row.b is not None else row.a
            was = f"   (was %{row.a.name})" if row.renamed and row.status != UNCHANGED else ""
            lines.append(paint(row.status, f"  {_MARKS[row.status]} {instruction_text(inst)}") + paint("dim", was)
                         if row.status != UNCHANGED else f"    {instruction_text(inst)}")
            for change in row.changes:
                lines.append(paint("dim", f"      {change}"))
    t = diff.totals()
    lines.append(f"{t[CHANGED]} changed, {t[ADDED]} added, {t[REMOVED]} removed, {t[UNCHANGED]} unchanged "
                 f"instructions ({t['renamed']} renamed) in {len(diff.changed_computations())} of "
                 f"{len(diff.computations)} computations")
    return "\n".join(lines) + "\n"


def to_json(diff: ModuleDiff, name_a: str = "a", name_b: str = "b") -> dict:
    def inst(i: Optional[Instruction]):
        return None if i is None else {"name": i.name, "text": instruction_text(i)}

    return {
        "a": name_a, "b": name_b, "equal": diff.equal, "totals": diff.totals(),
        "header": [c.to_json() for c in diff.header],
        "computations": [{
            "status": c.status, "equal": c.equal,
            "a": c.a.name if c.a is not None else None, "b": c.b.name if c.b is not None else None,
            "counts": {s: c.count(s) for s in (UNCHANGED, CHANGED, ADDED, REMOVED)},
            "instructions": [{"status": r.status, "a": inst(r.a), "b": inst(r.b),
                              "changes": [ch.to_json() for ch in r.changes]} for r in c.rows],
        } for c in diff.computations],
    }


def format_json(diff: ModuleDiff, name_a: str = "a", name_b: str = "b") -> str:
    return json.dumps(to_json(diff, name_a, name_b), indent=1) + "\n"


def pass_change_report(before: Module, after: Module, label: str, color: bool = False) -> str:
    """What hlo-opt --print-changed=structural prints after a pass that changed the module."""
    diff = diff_modules(before, after)
    if diff.equal:
        return f"// ----- {label}: changed, but structurally equal (names or metadata only) -----\n"
    return f"// ----- {label} -----\n" + format_text(diff, f"before {label}", f"after {label}", color)
