"""The verifier: shape rules and structural invariants of a module, every error at once.

`check_module(module)` raises one HloError listing everything wrong with the module,
in source order, each diagnostic located at the instruction, operand or attribute at
fault with notes pointing at the related definitions (the operand's instruction, the
called computation, its parameter or ROOT). `check_instruction(inst)` checks a single
instruction; passes call it on what they build.

What is checked:
* per instruction: operand count, every shape rule of hlo/shape_inference/ (types,
  dimension numbers, windows, padding, called-computation signatures, tuple indices,
  no implicit broadcasting ...), and that the written shape equals the inferred one
  (layouts ignored), plus well-formed layouts;
* per computation: parameters numbered 0..N-1 without duplicates or gaps, a ROOT that
  belongs to it, operands from the same computation, the declared signature result;
* per module: an ENTRY computation, entry_computation_layout and input_output_alias
  consistent with the entry computation.
"""
from __future__ import annotations

from typing import Optional

from ..attributes import format_int_list
from ..diagnostics import Diagnostic, DiagnosticSink, SourceLoc
from ..literal import Literal
from ..opcodes import OPCODES, Op, Trait, ops_with
from ..shape_inference import (ShapeError, ShapeTokens, compatible, display_opcode, fmt, infer_shape,
                               numbered_parameters, subshape)


def check_module(module) -> None:
    """Raise HloError listing every problem of `module`; return None if it is valid."""
    sink = DiagnosticSink()
    if module.entry is None:
        sink.add(Diagnostic("the module has no ENTRY computation", None))
    valid = ValidInstructions()
    for comp in module.computations:
        _check_computation(comp, sink, valid)
    _check_entry_layout(module, sink)
    _check_io_aliasing(module, sink)
    _raise_in_source_order(sink)


def check_instruction(inst) -> None:
    """Raise HloError if `inst` breaks a shape rule or its written shape is not the inferred one."""
    sink = DiagnosticSink()
    _check_instruction(inst, sink, report_secondary=True)
    _raise_in_source_order(sink)


def _raise_in_source_order(sink: DiagnosticSink) -> None:
    sink.diagnostics.sort(key=lambda d: (d.loc is None, d.loc.offset if d.loc is not None else 0))
    sink.raise_if_any()


def _error(message: str, loc: Optional[SourceLoc], *notes: tuple[str, Optional[SourceLoc]]) -> Diagnostic:
    return Diagnostic(message, loc, "error", [Diagnostic(text, nloc, "note") for text, nloc in notes if nloc])


# --------------------------------------------------------------------------- instructions


def _check_instruction(inst, sink: DiagnosticSink, report_secondary: bool = False) -> bool:
    """Check one instruction; whether it passed every check."""
    if inst.opcode not in OPCODES:
        sink.add(_error(f"unknown opcode '{inst.opcode}'", inst.loc))
        return False
    if inst.shape is None:
        sink.add(_error(f"%{inst.name} has no shape", inst.loc))
        return False
    if not _layouts_ok(inst, sink):
        return False
    try:
        inferred = infer_shape(inst)
    except ShapeError as exc:
        if report_secondary or not exc.secondary:
            sink.add(_located(inst, exc))
        return False
    except ValueError as exc:
        sink.add(_error(str(exc), inst.loc))
        return False
    if not compatible(inferred, inst.shape):
        sink.add(_error(f"shape mismatch: '{display_opcode(inst)}' produces {fmt(inferred)} but the instruction "
                        f"is written as {fmt(inst.shape)}", inst.loc))
        return False
    return True


# Always checked in full: the shape rules of async ops read the instructions they wrap, not only
# their opcode, shapes and attributes (called computations are compared by identity: they do
# not change while a module is checked). Of a constant's literal, the checks read only its shape.
_NOT_MEMOIZED = ops_with(Trait.ASYNC_WRAPPER)


class ValidInstructions:
    """Instructions found valid in one check of a module, by everything their checks read: opcode,
    shape, operand shapes and attribute values (with their types, so that True and 1 differ).
    Large modules repeat the same few kinds of instruction: each is checked in full once."""

    def __init__(self):
        self.shapes = ShapeTokens()
        self.keys: set = set()
        self.token_by_id: dict[int, int] = {}  # id(shape) -> token + 1 (self.shapes keeps the shape alive)

    def token(self, shape) -> int:
        """ShapeTokens' token of `shape`, plus one (so that every known token is true)."""
        token = self.token_by_id[id(shape)] = self.shapes(shape) + 1
        return token

    def key(self, inst):
        """The memo key of `inst`, or None when it cannot have one (it may still be unhashable)."""
        opcode = inst.opcode
        shape = inst.shape
        if opcode in _NOT_MEMOIZED or shape is None:
            return None
        token, known = self.token, self.token_by_id.get
        attrs = inst.attrs
        try:
            if attrs:
                attrs = tuple([(name, Literal, token(value.shape)) if type(value) is Literal
                               else (name, type(value), value) for name, value in attrs.items()])
            else:
                attrs = ()
            return (opcode, known(id(shape)) or token(shape),
                    tuple([known(id(op.shape)) or token(op.shape) for op in inst.operands]), attrs)
        except TypeError:  # an unhashable shape (a broken module): no memo
            return None


def _located(inst, exc: ShapeError) -> Diagnostic:
    """The diagnostic of a shape rule violation, at the operand or attribute it names."""
    loc = inst.loc
    notes = []
    if exc.operand is not None and 0 <= exc.operand < len(inst.operands):
        i = exc.operand
        if i < len(inst.operand_locs) and inst.operand_locs[i] is not None:
            loc = inst.operand_locs[i]
        operand = inst.operands[i]
        notes.append((f"operand {i} is %{operand.name}, defined here with shape {fmt(operand.shape)}", operand.loc))
    if exc.attribute is not None and inst.attr_locs.get(exc.attribute) is not None:
        loc = inst.attr_locs[exc.attribute]
    related = exc.related
    if related is not None and getattr(related, "loc", None) is not None:
        notes.append((exc.note or f"%{related.name} is defined here", related.loc))
    return _error(exc.message, loc, *notes)


def _layouts_ok(inst, sink: DiagnosticSink) -> bool:
    for _, leaf in inst.shape.leaves():
        layout = leaf.layout
        if layout is None or not leaf.element_type.is_array_type:
            continue
        if sorted(layout.minor_to_major) != list(range(leaf.rank)):
            sink.add(_error(f"layout {format_int_list(layout.minor_to_major)} of {fmt(leaf)} must list each of its "
                            f"{leaf.rank} dimensions exactly once (minor to major)", inst.loc))
            return False
    return True


# --------------------------------------------------------------------------- computations


def _check_computation(comp, sink: DiagnosticSink, valid: ValidInstructions) -> None:
    if not comp.instructions:
        sink.add(_error(f"computation %{comp.name} has no instructions", comp.loc))
        return
    _check_parameter_numbers(comp, sink)
    _check_root(comp, sink)
    key_of, keys = valid.key, valid.keys
    for inst in comp.instructions:
        for operand in inst.operands:
            if operand.parent is not comp:
                _report_foreign_operands(comp, inst, sink)
                break
        key = key_of(inst)
        if key is not None:
            try:
                if key in keys:
                    continue
            except TypeError:  # an attribute value that cannot be hashed: no memo
                key = None
        if _check_instruction(inst, sink) and key is not None:
            keys.add(key)


def _check_parameter_numbers(comp, sink: DiagnosticSink) -> None:
    """Parameters must be numbered 0..N-1, each number once."""
    by_number: dict[int, object] = {}
    for p in (i for i in comp.instructions if i.opcode == Op.PARAMETER):
        number = p.attrs.get("parameter_number")
        if number in by_number:
            first = by_number[number]
            sink.add(_error(f"parameter number {number} is used twice in computation %{comp.name}", p.loc,
                            (f"%{first.name} is parameter({number}) already", first.loc)))
        elif isinstance(number, int):
            by_number[number] = p
    count = len(by_number)
    missing = [n for n in range(count) if n not in by_number]
    for number, p in sorted(by_number.items()):
        if not 0 <= number < count:
            gap = f"; there is no parameter({missing[0]})" if missing else ""
            sink.add(_error(f"computation %{comp.name} has {count} parameter{'s' if count != 1 else ''}, which must "
                            f"be numbered 0..{count - 1}, but %{p.name} is parameter({number}){gap}", p.loc))


def _check_root(comp, sink: DiagnosticSink) -> None:
    root = comp.root
    if root is None or not any(i is root for i in comp.instructions):
        sink.add(_error(f"computation %{comp.name} has no ROOT instruction of its own", comp.loc))
        return
    declared = comp.declared_result_shape
    if declared is not None and root.shape is not None and not compatible(declared, root.shape):
        sink.add(_error(f"computation %{comp.name} is declared to return {fmt(declared)} but its ROOT %{root.name} "
                        f"produces {fmt(root.shape)}", comp.signature_loc or comp.loc,
                        (f"the ROOT of %{comp.name} is here", root.loc)))


def _report_foreign_operands(comp, inst, sink: DiagnosticSink) -> None:
    for i, operand in enumerate(inst.operands):
        if operand.parent is not comp:
            where = f"computation %{operand.parent.name}" if operand.parent is not None else "no computation"
            loc = inst.operand_locs[i] if i < len(inst.operand_locs) and inst.operand_locs[i] else inst.loc
            sink.add(_error(f"operand {i} of %{inst.name} is %{operand.name}, which belongs to {where}, not to "
                            f"%{comp.name}", loc))


# --------------------------------------------------------------------------- module


def _header_loc(module, attribute: str) -> Optional[SourceLoc]:
    """Where `attribute=` is written in the module header (the ENTRY computation otherwise)."""
    source = module.source
    if source is not None:
        first = min((c.loc.offset for c in module.computations if c.loc is not None), default=len(source.text))
        pos = source.text.find(attribute + "=", 0, first)
        if pos >= 0:
            return source.loc(pos)
    return module.entry.loc if module.entry is not None else None


def _check_entry_layout(module, sink: DiagnosticSink) -> None:
    layout = module.config.entry_computation_layout
    entry = module.entry
    if layout is None or entry is None or entry.root is None:
        return
    params = numbered_parameters(entry)
    if params is None:
        return  # reported by the parameter-number check
    loc = _header_loc(module, "entry_computation_layout")
    if len(layout.parameters) != len(params):
        count = len(layout.parameters)
        sink.add(_error(f"entry_computation_layout gives {count} parameter shape{'s' if count != 1 else ''} but ENTRY "
                        f"%{entry.name} has {len(params)} parameters", loc, (f"%{entry.name} is defined here",
                                                                            entry.loc)))
    else:
        for i, (shape, p) in enumerate(zip(layout.parameters, params)):
            if p.shape is not None and not compatible(shape, p.shape):
                sink.add(_error(f"entry_computation_layout gives parameter {i} the shape {fmt(shape)} but %{p.name} = "
                                f"parameter({i}) of ENTRY %{entry.name} is {fmt(p.shape)}", loc,
                                (f"%{p.name} is defined here", p.loc)))
    root = entry.root
    if root.shape is not None and not compatible(layout.result, root.shape):
        sink.add(_error(f"entry_computation_layout gives the result shape {fmt(layout.result)} but the ROOT "
                        f"%{root.name} of ENTRY %{entry.name} produces {fmt(root.shape)}", loc,
                        (f"the ROOT of %{entry.name} is here", root.loc)))


def _check_io_aliasing(module, sink: DiagnosticSink) -> None:
    cfg = module.config
    entry = module.entry
    if entry is None or entry.root is None or not (cfg.input_output_alias or cfg.buffer_donor):
        return
    params = numbered_parameters(entry)
    if params is None:
        return  # reported by the parameter-number check
    loc = _header_loc(module, "input_output_alias")
    for alias in cfg.input_output_alias:
        output = subshape(entry.root.shape, alias.output_index)
        if output is None:
            sink.add(_error(f"input_output_alias: {format_int_list(alias.output_index)} is not an index into the "
                            f"result {fmt(entry.root.shape)} of ENTRY %{entry.name}", loc))
            continue
        param = _aliased_parameter(module, params, alias.parameter, alias.parameter_index, "input_output_alias",
                                   loc, sink)
        if param is not None and output.byte_size() != param.byte_size():
            sink.add(_error(f"input_output_alias: output {format_int_list(alias.output_index)} is {fmt(output)} but "
                            f"parameter {alias.parameter} at {format_int_list(alias.parameter_index)} is {fmt(param)}; "
                            f"aliased buffers must have the same size", loc))
    donor_loc = _header_loc(module, "buffer_donor")
    for number, index in cfg.buffer_donor:
        _aliased_parameter(module, params, number, index, "buffer_donor", donor_loc, sink)


def _aliased_parameter(module, params, number, index, what, loc, sink):
    if not 0 <= number < len(params):
        sink.add(_error(f"{what}: parameter {number} does not exist; ENTRY %{module.entry.name} has "
                        f"{len(params)} parameters", loc))
        return None
    shape = subshape(params[number].shape, index)
    if shape is None:
        sink.add(_error(f"{what}: {format_int_list(index)} is not an index into parameter {number} "
                        f"{fmt(params[number].shape)}", loc))
    return shape
