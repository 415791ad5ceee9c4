"""Hover, go to definition, references, rename, document symbols and folding ranges.

Every function takes an Analysis (the document's text, recovered module and name
index) and character offsets, and returns offsets; the server turns them into LSP
positions. Names are found through the index (hlo.lsp.index), shapes and called
computations through the IR when the parser could build the instruction.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional

from ..opcodes import OPCODES, GENERIC_ATTRIBUTES, AttrSpec, split_async_sugar, wrapped_attr_specs
from ..shapes import format_shape
from ..shapes import PRIMITIVE_TYPES
from .analysis import Analysis
from .index import (COMPUTATION, INSTRUCTION, LITERAL_OPERAND_OPCODES, USE, CompEntry, DocumentIndex, InstrEntry,
                    Occurrence)
from .operands import operand_count_text, operand_specs
from .text import comments

_MAX_LISTED = 5


# --------------------------------------------------------------------------- hover


@dataclass
class HoverResult:
    markdown: str
    start: int
    end: int


def hover(analysis: Analysis, offset: int) -> Optional[HoverResult]:
    index = analysis.index
    occ = index.occurrence_at(offset)
    if occ is not None:
        if occ.kind == COMPUTATION:
            comp = index.computation_named(occ.name)
            if comp is None:
                return HoverResult(f"computation `%{occ.name}` is not defined", occ.start, occ.end)
            text = _computation_hover(analysis, comp)
            return HoverResult(text, occ.start, occ.end)
        inst = index.instruction_of(occ)
        if occ.role == USE:
            text = _operand_hover(analysis, occ, inst)
        else:
            text = _instruction_hover(analysis, inst) if inst is not None else f"parameter `{occ.name}`"
        return HoverResult(text, occ.start, occ.end)
    inst = index.instruction_at(offset)
    if inst is None:
        return None
    if inst.opcode is not None and inst.opcode_start <= offset <= inst.opcode_start + len(inst.opcode):
        return HoverResult(opcode_markdown(inst.opcode), inst.opcode_start, inst.opcode_start + len(inst.opcode))
    for attr in inst.attributes:
        if attr.start <= offset < attr.value_start:
            return HoverResult(_attribute_hover(inst.opcode, attr.name), attr.start, attr.value_start - 1)
    if inst.shape_start <= offset <= inst.shape_end:
        return HoverResult(_instruction_hover(analysis, inst), inst.shape_start, inst.shape_end)
    return None


def _shape_text(analysis: Analysis, inst: InstrEntry) -> tuple[str, bool]:
    """(the instruction's shape, whether it was inferred rather than written)."""
    ir = analysis.instruction_ir(inst)
    if ir is not None and ir.shape is not None:
        return format_shape(ir.shape), inst.shape_start < 0
    if inst.shape_start >= 0:
        return " ".join(analysis.text[inst.shape_start:inst.shape_end].split()), False
    return "?", False


def _instruction_hover(analysis: Analysis, inst: InstrEntry) -> str:
    text = analysis.text
    shape, inferred = _shape_text(analysis, inst)
    operands = ", ".join("%" + o.name for o in inst.operands)
    if inst.opcode in LITERAL_OPERAND_OPCODES and inst.operands_close > inst.operands_open:
        operands = " ".join(text[inst.operands_open + 1:inst.operands_close].split())
        if len(operands) > 60:
            operands = operands[:57] + "..."
    root = "ROOT " if inst.is_root else ""
    lines = [_code(f"{root}%{inst.name} = {shape} {inst.opcode or '?'}({operands})")]
    if inferred:
        lines.append("*shape inferred (not written in the text)*")
    if inst.opcode is not None:
        lines.append(_opcode_line(inst.opcode))
    if inst.attributes:
        shown = [f"`{_clip(text[a.start:a.value_end])}`" for a in inst.attributes]
        lines.append("Attributes: " + " · ".join(shown))
    users = _users(analysis.index, inst)
    if users:
        listed = ", ".join(f"`%{u.name}` (line {_line(analysis, u.start)})" for u in users[:_MAX_LISTED])
        more = f" and {len(users) - _MAX_LISTED} more" if len(users) > _MAX_LISTED else ""
        lines.append(f"Used by {listed}{more}")
    return "\n\n".join(lines)


def _operand_hover(analysis: Analysis, occ: Occurrence, inst: Optional[InstrEntry]) -> str:
    if inst is None:
        return f"`%{occ.name}` is not defined in this computation"
    shape, _ = _shape_text(analysis, inst)
    lines = [_code(f"%{inst.name}: {shape}"),
             f"Defined on line {_line(analysis, inst.start)} by `{inst.opcode or '?'}`"
             f" in computation `%{inst.computation.name}`"]
    return "\n\n".join(lines)


def _computation_hover(analysis: Analysis, comp: CompEntry) -> str:
    lines = [_code(computation_signature(analysis, comp))]
    what = "ENTRY computation" if comp.is_entry else "Computation"
    lines.append(f"{what} with {len(comp.instructions)} instruction{'s' if len(comp.instructions) != 1 else ''}")
    callers = [o for o in analysis.index.occurrences_of(comp.definition) if o.role == USE]
    if callers:
        described = []
        for use in callers[:_MAX_LISTED]:
            caller = analysis.index.instruction_at(use.start)
            who = f"`%{caller.name}` " if caller is not None else ""
            described.append(f"{who}({use.context}=, line {_line(analysis, use.start)})")
        more = f" and {len(callers) - _MAX_LISTED} more" if len(callers) > _MAX_LISTED else ""
        lines.append("Called by " + ", ".join(described) + more)
    return "\n\n".join(lines)


def computation_signature(analysis: Analysis, comp: CompEntry) -> str:
    """`%name (p: shape, ...) -> shape`, from the IR (parameters in number order) or the header text."""
    ir = analysis.computation_ir(comp)
    entry = "ENTRY " if comp.is_entry else ""
    if ir is not None and all(p.shape is not None for p in ir.parameters):
        params = ", ".join(f"{_source_name(analysis, p)}: {format_shape(p.shape, with_layout=False)}"
                           for p in ir.parameters)
        root = ir.root.shape if ir.root is not None and ir.root.shape is not None else ir.declared_result_shape
        result = format_shape(root, with_layout=False) if root is not None else "?"
        return f"{entry}%{comp.name} ({params}) -> {result}"
    end = comp.header_end - 1 if comp.header_end > 0 else comp.definition.end
    return " ".join(analysis.text[comp.start:end].split())


_NAME_AT = re.compile(r"%?([A-Za-z_][A-Za-z0-9_.\-]*)")


def _source_name(analysis: Analysis, inst) -> str:
    """An IR instruction's name as the text spells it (the parser renames duplicates across computations)."""
    if inst.loc is not None:
        m = _NAME_AT.match(analysis.text, inst.loc.offset)
        if m:
            return m.group(1)
    return inst.name


def opcode_markdown(opcode: str) -> str:
    """What an opcode is: description, operands, attributes (from the opcode table)."""
    lines = [_opcode_line(opcode)]
    specs = operand_specs(opcode)
    if specs is not None:
        listed = ", ".join(f"`{s.label()}`" for s in specs)
        lines.append(f"Operands ({operand_count_text(opcode)}): {listed or 'none'}")
    attrs = _attr_specs(opcode)
    if attrs:
        lines.append("Attributes: " + ", ".join(f"`{a.name}`" + (" (required)" if a.required else "")
                                                 for a in attrs.values()))
    return "\n\n".join(lines)


def _opcode_line(opcode: str) -> str:
    sugar = split_async_sugar(opcode)
    if sugar is not None:
        wrapped = OPCODES[sugar[0]]
        return f"**{opcode}** — asynchronous form (`{sugar[1][1:]}`) of `{sugar[0]}`: {wrapped.description}"
    info = OPCODES.get(opcode)
    if info is None:
        return f"**{opcode}** — unknown opcode"
    return f"**{opcode}** — {info.description}"


def _attr_specs(opcode: Optional[str]) -> dict[str, AttrSpec]:
    if opcode is None:
        return {}
    try:
        return wrapped_attr_specs(opcode)
    except KeyError:
        return {}


def _attribute_hover(opcode: Optional[str], name: str) -> str:
    spec = _attr_specs(opcode).get(name)
    if spec is None:
        if name in GENERIC_ATTRIBUTES:
            return f"**{name}** — an attribute any instruction may carry"
        return f"**{name}** — not an attribute of `{opcode}`"
    facts = [spec.kind.value]
    if spec.required:
        facts.append("required")
    elif spec.default not in (None, (), ""):
        facts.append(f"default {spec.default}")
    if spec.enum_values:
        facts.append("one of " + ", ".join(spec.enum_values))
    return f"**{name}** ({'; '.join(facts)}) — attribute of `{opcode}`"


def _users(index: DocumentIndex, inst: InstrEntry) -> list[InstrEntry]:
    users = []
    for occ in index.occurrences_of(inst.definition):
        if occ.role == USE:
            user = index.instruction_at(occ.start)
            if user is not None and user not in users:
                users.append(user)
    return users


def _code(line: str) -> str:
    return f"```hlo\n{line}\n```"


def _line(analysis: Analysis, offset: int) -> int:
    """1-based line number of an offset."""
    return analysis.lines("utf-16").line_of(offset) + 1


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def names_in_scope(analysis: Analysis, offset: int) -> Iterator[tuple[str, Callable[[], str]]]:
    """(name, shape function) of the instructions defined before offset in its computation, nearest first
    (a generator: completion takes only what it shows)."""
    comp = analysis.index.computation_at(offset)
    if comp is None:
        return
    instructions = comp.instructions
    for i in range(bisect.bisect_left(instructions, offset, key=lambda inst: inst.start) - 1, -1, -1):
        inst = instructions[i]
        yield inst.name, lambda inst=inst: _shape_text(analysis, inst)[0]


# --------------------------------------------------------------------------- navigation


def definition(analysis: Analysis, offset: int) -> Optional[tuple[int, int]]:
    index = analysis.index
    occ = index.occurrence_at(offset)
    if occ is None:
        return None
    target = index.definition_of(occ)
    return (target.start, target.end) if target is not None else None


def references(analysis: Analysis, offset: int, include_declaration: bool = True) -> list[tuple[int, int]]:
    index = analysis.index
    occ = index.occurrence_at(offset)
    if occ is None:
        return []
    return [(o.start, o.end) for o in index.occurrences_of(occ)
            if include_declaration or o.role == USE]


class RenameError(Exception):
    """A rename that cannot be done (the message says why)."""


_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


def prepare_rename(analysis: Analysis, offset: int) -> Optional[tuple[int, int, str]]:
    """(start, end, current name) of the renameable name at offset, or None."""
    occ = analysis.index.occurrence_at(offset)
    if occ is None:
        return None
    return occ.start, occ.end, occ.name


def rename(analysis: Analysis, offset: int, new_name: str) -> list[tuple[int, int, str]]:
    """Edits (start, end, new text) renaming the name at offset everywhere it is used."""
    index = analysis.index
    occ = index.occurrence_at(offset)
    if occ is None:
        raise RenameError("no instruction or computation name here")
    new_name = new_name[1:] if new_name.startswith("%") else new_name
    if not _VALID_NAME.fullmatch(new_name):
        raise RenameError(f"'{new_name}' is not a valid HLO name (letters, digits, '_', '.', '-'; "
                          f"not starting with a digit)")
    if new_name == occ.name:
        return []
    _check_free(index, occ, new_name)
    return [(o.start, o.end, new_name) for o in index.occurrences_of(occ)]


def _check_free(index: DocumentIndex, occ: Occurrence, new_name: str) -> None:
    if occ.kind == COMPUTATION:
        if index.computation_named(new_name) is not None:
            raise RenameError(f"a computation named '{new_name}' already exists")
        return
    if new_name in PRIMITIVE_TYPES:
        raise RenameError(f"'{new_name}' is a primitive type, not allowed as an instruction name")
    comp = index.computations[occ.scope]
    clash = comp.instruction_named(new_name)
    if clash is not None or any(p.name == new_name for p in comp.params):
        raise RenameError(f"computation '{comp.name}' already has an instruction named '{new_name}'")


# --------------------------------------------------------------------------- outline


@dataclass
class Symbol:
    name: str
    detail: str
    kind: str                  # "computation" or "instruction"
    start: int
    end: int
    name_start: int
    name_end: int
    children: list["Symbol"] = field(default_factory=list)


def document_symbols(analysis: Analysis) -> list[Symbol]:
    out = []
    for comp in analysis.index.computations:
        children = []
        for inst in comp.instructions:
            shape, _ = _shape_text(analysis, inst)
            detail = f"{'ROOT ' if inst.is_root else ''}{shape} {inst.opcode or '?'}"
            children.append(Symbol(inst.name, detail, INSTRUCTION, inst.start, inst.end, inst.definition.start,
                                   inst.definition.end))
        end = comp.end if comp.end > comp.start else comp.definition.end
        out.append(Symbol(comp.name, _clip(computation_signature(analysis, comp), 120), COMPUTATION, comp.start,
                          end, comp.definition.start, comp.definition.end, children))
    return out


@dataclass
class Fold:
    start_line: int            # 0-based
    end_line: int
    kind: str = "region"       # "region" or "comment"


def folding_ranges(analysis: Analysis, encoding: str = "utf-16") -> list[Fold]:
    lines = analysis.lines(encoding)
    index = analysis.index
    folds = []
    if index.header is not None:
        _add_fold(folds, lines.line_of(index.header[0]), lines.line_of(index.header[1]), "region")
    for comp in index.computations:
        close = comp.close if comp.close >= 0 else comp.end
        _add_fold(folds, lines.line_of(comp.start), lines.line_of(close), "region")
        for inst in comp.instructions:  # instructions written over several lines
            _add_fold(folds, lines.line_of(inst.start), lines.line_of(inst.end), "region")
    _comment_folds(analysis.text, lines, folds)
    return folds


def _comment_folds(text: str, lines, folds: list[Fold]) -> None:
    run_start = run_end = None
    for c in comments(text):
        first, last = lines.line_of(c.start), lines.line_of(c.end)
        if c.text.startswith("/*"):
            _add_fold(folds, first, last, "comment")
            continue
        if not text[lines.line_start(first):c.start].isspace() and lines.line_start(first) != c.start:
            continue  # a comment at the end of a statement
        if run_end is not None and first == run_end + 1:
            run_end = first
        else:
            if run_start is not None:
                _add_fold(folds, run_start, run_end, "comment")
            run_start = run_end = first
    if run_start is not None:
        _add_fold(folds, run_start, run_end, "comment")


def _add_fold(folds: list[Fold], first: int, last: int, kind: str) -> None:
    if last > first:
        folds.append(Fold(first, last, kind))

