"""Records -> IR: Module, Computation and Instruction objects, with every error collected.

`Builder` resolves names (operands and called computations must be defined
before use), converts attributes with the opcode table, builds literals, expands
async sugar (`X-start` wraps X in a computation), rewrites legacy selects, and
infers shapes left out of the text with hlo.shape_inference. Errors go to a
DiagnosticSink so that one parse reports them all.
"""
from __future__ import annotations

import difflib
from typing import Optional

from .. import values as V
from ..attributes import (FrontendAttributes, Metadata, convert_attribute, to_shape, to_shape_index, METADATA_FIELD_RE)
from ..generic_attributes import check_generic_attribute
from ..diagnostics import Diagnostic, DiagnosticSink, HloError, SourceFile, SourceLoc
from ..ir import AliasEntry, Computation, Instruction, Module, NameUniquer, ProgramShape
from ..literal import Literal, literal_from_value
from ..opcodes import GENERIC_ATTRIBUTES, OPCODES, Op, Trait, ops_with, split_async_sugar, wrapped_attr_specs
from ..shape_inference import infer_shape
from ..shapes import PRIMITIVE_TYPES, Shape
from .lexer import skip_space, tokenize
from .recovery import parse_records
from .records import CompRec, HeaderRec, InstrRec, LiteralOperand, OperandRef

_GENERIC = frozenset(GENERIC_ATTRIBUTES)
_new_tuple = tuple.__new__  # SourceLoc(file, offset) without the named tuple's Python-level __new__
_LITERAL_OPERAND = ops_with(Trait.LITERAL_OPERAND)  # a number or literal where operands go
_LITERAL = object()  # Builder.operand(): the operand is a literal value
_SELECT = Op.SELECT
_RAW_BRACES = V.RawBraces
_plain_metadata = METADATA_FIELD_RE.fullmatch  # metadata of known fields, kept verbatim


def _required(specs) -> tuple[str, ...]:
    return tuple(spec.name for spec in specs.values() if spec.required)


_SPECS = {opcode: info.attr_map for opcode, info in OPCODES.items()}
_REQUIRED = {opcode: _required(specs) for opcode, specs in _SPECS.items()}


class Builder:
    """Builds one Module from its records; every error goes to `sink`."""

    def __init__(self, source: SourceFile):
        self.source = source
        self.sink = DiagnosticSink()
        self.module: Optional[Module] = None
        self.computations: dict[str, Computation] = {}
        self.anon_counter = 0
        # (id(spec), id(value)) -> (value, typed value): the fast path gives lines writing the same
        # value one value object (fastpath.py), converted once here when the result is immutable
        self.converted: dict[tuple[int, int], tuple] = {}
        self.literals: dict[tuple, tuple] = {}  # (id(shape), _literal_key) -> (shape, Literal)

    def loc(self, offset: int) -> SourceLoc:
        return SourceLoc(self.source, offset if offset > 0 else 0)

    def err(self, message: str, offset: int, note: str = None, note_offset: int = None) -> None:
        notes = [Diagnostic(note, self.loc(note_offset), "note")] if note and note_offset is not None else []
        self.sink.add(Diagnostic(message, self.loc(offset), "error", notes))

    # ---- module
    def build(self, header: Optional[HeaderRec], comps: list[CompRec]) -> Module:
        entry_rec = next((c for c in comps if c.is_entry), comps[-1])
        name = header.name if header else "module_" + entry_rec.name
        module = self.module = Module(name)
        module.source = self.source
        entries = [c for c in comps if c.is_entry]
        for extra in entries[1:]:
            self.err("more than one ENTRY computation", extra.pos, "the first ENTRY is here", entries[0].pos)
        for rec in comps:
            comp = self.computation(rec)
            if comp is not None:
                module.add_computation(comp)
        if entry_rec.name in self.computations:
            module.entry = self.computations[entry_rec.name]
            module.entry.is_entry = True
        if header:
            self.header_attrs(header)
        self.uniquify_names()
        return module

    def header_attrs(self, header: HeaderRec) -> None:
        cfg = self.module.config
        seen = set()
        for name, value, pos in header.attrs:
            if name in seen:
                self.err(f"module attribute '{name}' given more than once", pos)
                continue
            seen.add(name)
            try:
                self.header_attr(cfg, name, value, pos)
            except ValueError as exc:
                self.err(f"module attribute '{name}': {exc}", pos)
            except HloError as exc:
                self.sink.extend(exc)
        cfg.stack_frame_index = header.stack_frames

    def header_attr(self, cfg, name, value, pos) -> None:
        if name == "is_scheduled":
            cfg.is_scheduled = _bool(value)
        elif name == "replica_count":
            cfg.replica_count = _positive_int(value)
        elif name == "num_partitions":
            cfg.num_partitions = _positive_int(value)
        elif name == "alias_passthrough_params":
            cfg.alias_passthrough_params = _bool(value)
        elif name == "entry_computation_layout":
            if not (isinstance(value, V.Braced) and len(value.items) == 1
                    and isinstance(value.items[0], V.ProgramShapeValue)):
                raise ValueError("expected {(parameter shapes)->result shape}")
            ps = value.items[0]
            cfg.entry_computation_layout = ProgramShape([to_shape(p) for p in ps.params.items], to_shape(ps.result))
        elif name == "input_output_alias":
            cfg.input_output_alias = [_alias_entry(item) for item in _braced_items(value)]
        elif name == "buffer_donor":
            cfg.buffer_donor = [_donor(item) for item in _braced_items(value)]
        elif name in ("allow_spmd_sharding_propagation_to_parameters", "allow_spmd_sharding_propagation_to_output"):
            flags = (value,) if isinstance(value, bool) else tuple(_bool(v) for v in _braced_items(value))
            setattr(cfg, name, flags)
        elif name == "frontend_attributes":
            cfg.frontend_attributes = _frontend(value, self.source)
        elif name == "origin_recovery_table":
            cfg.origin_recovery_table = value
        else:
            raise ValueError("unknown module attribute; allowed: is_scheduled, input_output_alias, buffer_donor, "
                             "alias_passthrough_params, entry_computation_layout, "
                             "allow_spmd_sharding_propagation_to_parameters, "
                             "allow_spmd_sharding_propagation_to_output, replica_count, num_partitions, "
                             "frontend_attributes, origin_recovery_table")

    def uniquify_names(self) -> None:
        """XLA renames instructions that share a name across computations: first one wins."""
        names = [c.name for c in self.module.computations]
        names += [i.name for c in self.module.computations for i in c.instructions]
        if len(set(names)) == len(names):
            return  # (the usual case: nothing to rename)
        uniquer = NameUniquer([c.name for c in self.module.computations])
        unique = uniquer.unique
        for comp in self.module.computations:
            for inst in comp.instructions:
                inst.name = unique(inst.name)

    # ---- computations
    def computation(self, rec: CompRec, anonymous: bool = False) -> Optional[Computation]:
        if not anonymous and rec.name in self.computations:
            self.err(f"computation '{rec.name}' is defined twice", rec.pos,
                     "first definition is here", self.computations[rec.name].loc.offset)
            return None
        comp = Computation(rec.name, self.loc(rec.pos))
        if not rec.instructions:
            self.err(f"computation '{rec.name}' has no instructions", rec.pos)
        scope: dict[str, Instruction] = {}
        later = _Defined(rec)
        roots = [i for i in rec.instructions if i.is_root]
        for extra in roots[1:]:
            self.err(f"computation '{rec.name}' has more than one ROOT", extra.pos,
                     "the first ROOT is here", roots[0].pos)
        for irec in rec.instructions:
            inst = self.instruction(irec, comp, scope, later)
            if inst is not None and irec.is_root and comp.root is None:
                comp.root = inst
        if comp.root is None and comp.instructions:
            comp.root = comp.instructions[-1]
        if rec.signature is not None:
            comp.declared_result_shape = rec.signature[1]
            comp.signature_loc = self.loc(rec.signature[2])
        seen_attrs = set()
        for name, value, pos in rec.attrs:
            if name == "execution_thread" and isinstance(value, V.Str) and name not in seen_attrs:
                comp.execution_thread = value.text
            elif name == "execution_thread" and name not in seen_attrs:
                self.err('execution_thread= takes a string, e.g. execution_thread="host"', pos)
            elif name in seen_attrs:
                self.err(f"computation attribute '{name}' given more than once", pos)
            else:
                self.err(f"unexpected computation attribute '{name}'; only execution_thread= is allowed", pos)
            seen_attrs.add(name)
        if not anonymous:
            self.computations[rec.name] = comp
        return comp

    def resolve_computation(self, value) -> Computation:
        if isinstance(value, V.InlineComputation):
            self.anon_counter += 1
            rec = CompRec(False, f"_.{self.anon_counter}" if self.anon_counter > 1 else "_", value.offset, None,
                          list(value.instructions), [])
            comp = self.computation(rec, anonymous=True)
            comp.name = NameUniquer([c.name for c in self.module.computations]).unique("inlined")
            self.module.add_computation(comp, before=None)
            self.computations[comp.name] = comp
            return comp
        name = value.name if isinstance(value, V.Ref) else value.text
        comp = self.computations.get(name)
        if comp is None:
            raise ValueError(f"computation '{name}' is not defined (computations must be defined before use)")
        return comp

    # ---- instructions
    def instruction(self, rec: InstrRec, comp: Computation, scope: dict, later: "_Defined",
                    name: Optional[str] = None) -> Optional[Instruction]:
        name = name or rec.name
        source = self.source
        opcode = rec.opcode
        operands = []
        locs = []
        ok = True
        literals = False  # literal values where instruction operands go
        for op in (rec.operands if opcode not in _LITERAL_OPERAND else ()):
            if type(op) is OperandRef and op.shape is None:  # the usual `%name`
                target = scope.get(op.name)
                if target is not None:
                    operands.append(target)
                    locs.append(_new_tuple(SourceLoc, (source, op.pos)))
                    continue
            operand = self.operand(op, rec, comp, scope, later)
            if operand is None:
                ok = False
            elif operand is _LITERAL:
                literals = True
            else:
                operands.append(operand)
                locs.append(_new_tuple(SourceLoc, (source, op.pos)))
        if name in scope:
            self.err(f"instruction name '%{name}' is already defined in computation '{comp.name}'", rec.pos,
                     "previous definition is here", scope[name].loc.offset)
            return None
        if name in PRIMITIVE_TYPES or (name[:2] == "__" and not name.startswith("__xla_")):
            self.err(f"illegal instruction name '{name}'", rec.pos)
        sugar = None
        if opcode not in OPCODES:
            sugar = split_async_sugar(opcode)
            if sugar is None:
                self.unknown_opcode(rec)
                return None
        inst = Instruction(name, opcode, rec.shape, loc=_new_tuple(SourceLoc, (source, rec.pos)))
        inst.operands = operands
        for target in operands:
            target.users.append(inst)
        inst.operand_locs = locs
        if literals or opcode in _LITERAL_OPERAND:
            ok = self.leaf_operand(inst, rec) and ok
        if rec.attrs or sugar is not None:
            self.attributes(inst, rec, scope, sugar)
        elif _REQUIRED[opcode]:
            self.required_attributes(inst, rec, _REQUIRED[opcode], ())
        if sugar is not None:
            self.expand_async_sugar(inst, sugar, comp)
        if opcode == _SELECT and ok and _legacy_select(inst):
            inst = self.canonical_select(inst, comp, scope)
        comp.add(inst)
        scope[name] = inst
        if inst.shape is None and ok:
            self.infer_shape(inst)
        return inst

    def operand(self, op, rec: InstrRec, comp: Computation, scope: dict, later: "_Defined"):
        """The instruction an operand record names or builds (None after an error), or _LITERAL for a
        literal value where instruction operands go."""
        kind = type(op)
        if kind is OperandRef:
            target = scope.get(op.name)
            if target is None:
                self.undefined_operand(op, rec, later)
            elif op.shape is not None and target.shape is not None and not op.shape.compatible(target.shape):
                self.err(f"operand '%{op.name}' is written with shape {op.shape} but has shape "
                         f"{target.shape}", op.pos, "defined here", target.loc.offset)
            return target
        if kind is InstrRec:  # nested instruction: gets a generated name
            return self.instruction(op, comp, scope, later, _nested_name(op.opcode, scope))
        return _LITERAL

    # Old dumps (and XLA's builder) allow a scalar predicate selecting whole arrays, and tuple
    # operands; the verifier no longer does. They become a broadcast predicate and one select
    # per tuple element (ops-2, Select), so everything after the parser sees strict HLO.
    def canonical_select(self, inst: Instruction, comp: Computation, scope: dict) -> Instruction:
        pred, on_true, on_false = inst.operands
        for op in list(inst.operands):
            op.users.remove(inst)
        inst.operands = []
        return self.select_of(pred, on_true, on_false, inst, comp, scope, name=inst.name)

    def select_of(self, pred, on_true, on_false, like: Instruction, comp: Computation, scope: dict,
                  name: Optional[str] = None) -> Instruction:
        """select(pred, on_true, on_false) in strict form; the result is named `name` (and left for
        the caller to add) when given, every other new instruction gets a generated name."""
        def add(opcode, shape, operands, attrs=None, final_name=None):
            new = Instruction(final_name or _nested_name(opcode, scope), opcode, shape, operands, attrs or {},
                              loc=like.loc)
            if final_name is None:
                comp.add(new)
                scope[new.name] = new
            return new

        shape = on_true.shape
        if shape.is_tuple:
            parts = []
            for k, sub in enumerate(shape.tuple_shapes):
                t = add(Op.GET_TUPLE_ELEMENT, sub, [on_true], {"index": k})
                f = add(Op.GET_TUPLE_ELEMENT, on_false.shape.tuple_shapes[k], [on_false], {"index": k})
                parts.append(self.select_of(pred, t, f, like, comp, scope))
            return add(Op.TUPLE, shape, parts, final_name=name)
        if pred.shape.rank == 0 and shape.rank > 0:
            pred = add(Op.BROADCAST, Shape.array(pred.shape.element_type, shape.dims).with_default_layouts(), [pred],
                       {"dimensions": ()})
        return add(Op.SELECT, shape, [pred, on_true, on_false], final_name=name)

    def undefined_operand(self, op: OperandRef, rec: InstrRec, defined: "_Defined") -> None:
        later = defined.positions()
        if op.name in later and later[op.name] > rec.pos:
            self.err(f"'%{op.name}' is used before it is defined", op.pos, "defined here", later[op.name])
        elif op.name in self.computations:
            self.err(f"'%{op.name}' is a computation, not an instruction of this computation", op.pos)
        else:
            close = difflib.get_close_matches(op.name, list(later), n=1)
            hint = f"; did you mean '%{close[0]}'?" if close else ""
            self.err(f"use of undefined instruction '%{op.name}'{hint}", op.pos)

    def unknown_opcode(self, rec: InstrRec) -> None:
        close = difflib.get_close_matches(rec.opcode, list(OPCODES), n=1)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        self.err(f"unknown opcode '{rec.opcode}'{hint}", rec.opcode_pos)

    def leaf_operand(self, inst: Instruction, rec: InstrRec) -> bool:
        """parameter(N) and constant(literal): the number/literal where operands go."""
        opcode = inst.opcode
        if opcode == Op.PARAMETER:
            ops = rec.operands
            if len(ops) != 1 or type(ops[0]) is not LiteralOperand or not _is_plain_int(ops[0].value):
                self.err("parameter takes one integer: parameter(N)", rec.opcode_pos)
                return False
            number = int(ops[0].value)
            inst.attrs["parameter_number"] = number
            if number < 0:
                self.err("parameter number must be non-negative", rec.opcode_pos)
            return True
        if opcode == Op.CONSTANT:
            ops = rec.operands
            if len(ops) != 1 or type(ops[0]) is not LiteralOperand:
                self.err("constant takes one literal: constant(value)", rec.opcode_pos)
                return False
            if inst.shape is None:
                self.err("constant needs its shape written before the opcode", rec.opcode_pos)
                return False
            try:
                inst.attrs["literal"] = self.literal(inst.shape, ops[0].value)
            except ValueError as exc:
                self.literal_error(inst, rec, exc)
                return False
            return True
        self.err(f"'{opcode}' takes instruction operands, not literal values", rec.opcode_pos)
        return False

    def literal(self, shape: Shape, value) -> Literal:
        """literal_from_value(shape, value), converted once per shape object and written value
        (dumps repeat small constants); each instruction gets an array of its own."""
        key = _literal_key(value)
        if key is None:
            return literal_from_value(shape, value)
        key = (id(shape), key)
        known = self.literals.get(key)
        if known is None or known[0] is not shape:
            known = self.literals[key] = (shape, literal_from_value(shape, value))
        template = known[1]
        if template.array is None or template.elements is not None:
            return literal_from_value(shape, value)
        return Literal(shape, template.array.copy())

    def literal_error(self, inst: Instruction, rec: InstrRec, exc: ValueError) -> None:
        text = self.source.text
        open_paren = text.find("(", rec.opcode_pos)
        start = skip_space(text, open_paren + 1) if open_paren >= 0 else rec.opcode_pos
        index = getattr(exc, "index", None)
        where = _literal_element_offset(text, start, index) if index is not None else start
        self.err(f"bad literal for {inst.shape}: {exc}", where)

    def attributes(self, inst: Instruction, rec: InstrRec, scope: dict, sugar) -> None:
        opcode = inst.opcode
        specs = wrapped_attr_specs(opcode) if sugar is not None else _SPECS[opcode]
        source = self.source
        attr_locs = inst.attr_locs  # (also what was seen: the instruction is new)
        for name, value, pos in rec.attrs:
            if name in attr_locs:
                self.err(f"attribute '{name}' is given more than once", pos, "first given here",
                         attr_locs[name].offset)
                continue
            attr_locs[name] = _new_tuple(SourceLoc, (source, pos))
            try:
                if name == "metadata" and type(value) is _RAW_BRACES and _plain_metadata(value.text):
                    inst.metadata = Metadata(value.text)  # the usual case of _metadata(), inline
                elif name in _GENERIC:
                    self.generic_attribute(inst, name, value, scope)
                elif name in specs:
                    inst.attrs[name] = self.convert(specs[name], value)
                elif name == "result_accuracy" and opcode in OPCODES and OPCODES[opcode].transcendental:
                    inst.attrs[name] = check_generic_attribute(name, value)
                else:
                    self.unknown_attribute(inst, name, pos, specs)
            except ValueError as exc:
                self.err(f"attribute '{name}': {exc}", pos)
            except HloError as exc:
                self.sink.extend(exc)
        required = _required(specs) if sugar is not None else _REQUIRED[opcode]
        if required:
            self.required_attributes(inst, rec, required, attr_locs)

    def convert(self, spec, value):
        """convert_attribute(spec, value), once per value object when the typed value is immutable."""
        key = (id(spec), id(value))
        known = self.converted.get(key)
        if known is not None and known[0] is value:
            return known[1]
        typed = convert_attribute(spec, value, self.resolve_computation)
        if _immutable(typed):
            self.converted[key] = (value, typed)
        return typed

    def required_attributes(self, inst, rec, required: tuple[str, ...], seen) -> None:
        for name in required:
            if name not in seen and name not in inst.attrs:
                self.err(f"'{inst.opcode}' requires attribute '{name}='", rec.opcode_pos)

    def unknown_attribute(self, inst: Instruction, name: str, pos: int, specs) -> None:
        allowed = sorted(specs)
        close = difflib.get_close_matches(name, allowed + sorted(_GENERIC), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        listed = ", ".join(allowed) if allowed else "none besides the generic ones"
        self.err(f"unexpected attribute '{name}' for opcode '{inst.opcode}'{hint}; allowed: {listed}", pos)

    def generic_attribute(self, inst: Instruction, name: str, value, scope: dict) -> None:
        if name == "metadata":
            inst.metadata = _metadata(value, self.source)
        elif name == "frontend_attributes":
            inst.frontend_attributes = _frontend(value, self.source)
        elif name == "backend_config":
            if isinstance(value, (V.Str, V.RawBraces)):
                inst.backend_config = value.text
            else:
                raise ValueError("expected a string or a {json} dict")
        elif name == "control-predecessors":
            preds = []
            for item in _braced_items(value):
                ref = item.name if isinstance(item, V.Ref) else item.text if isinstance(item, V.Ident) else None
                if ref is None or ref not in scope:
                    shown = f"'%{ref}'" if ref is not None else f"'{_show(item)}'"
                    raise ValueError(f"control predecessor {shown} is not an instruction defined earlier in "
                                     f"this computation")
                preds.append(scope[ref])
            inst.control_predecessors = preds
        elif name == "sharding":
            inst.sharding = check_generic_attribute(name, value)
        elif name == "statistics":
            inst.statistics = check_generic_attribute(name, value)
        elif name == "origin":
            inst.origin = check_generic_attribute(name, value)
        elif name == "parameter_replication":
            inst.parameter_replication = tuple(_bool(v) for v in _braced_items(value))

    def expand_async_sugar(self, inst: Instruction, sugar, comp: Computation) -> None:
        """`X-start(ops), X-attrs` -> async-start calling a one-instruction computation of X."""
        wrapped_op, suffix = sugar
        if suffix != "-start":
            written, inst.opcode = inst.opcode, Op.ASYNC_UPDATE if suffix == "-update" else Op.ASYNC_DONE
            start = inst.operands[0] if inst.operands else None
            if start is not None and "calls" in start.attrs:
                inst.attrs["calls"] = start.attrs["calls"]
                runs = getattr(getattr(start.attrs["calls"], "root", None), "opcode", wrapped_op)
                if runs != wrapped_op:  # (XLA's parser refuses it too)
                    self.err(f"'{written}' must follow an asynchronous '{wrapped_op}', but its operand "
                             f"%{start.name} runs '{runs}'", inst.loc.offset)
            return
        inst.opcode = Op.ASYNC_START
        wrapped_attrs = {k: inst.attrs.pop(k) for k in list(inst.attrs) if k in OPCODES[wrapped_op].attr_map}
        body = Computation(NameUniquer(self.computations).unique(f"{inst.name}.async_wrapped"), inst.loc)
        body.async_wrapped = True
        body.execution_thread = inst.attrs.get("async_execution_thread", "main")
        for i, op in enumerate(inst.operands):
            p = Instruction(f"param_{i}", Op.PARAMETER, op.shape, loc=inst.loc)
            p.attrs["parameter_number"] = i
            body.add(p)
        result_shape = None
        if inst.shape is not None and inst.shape.is_tuple and len(inst.shape.tuple_shapes) >= 2:
            result_shape = inst.shape.tuple_shapes[1]
        wrapped = Instruction(wrapped_op, wrapped_op, result_shape, list(body.instructions), wrapped_attrs,
                              loc=inst.loc)
        wrapped.copy_generic_attributes_from(inst)
        body.add(wrapped)
        body.root = wrapped
        self.module.add_computation(body, before=None)
        self.computations[body.name] = body
        inst.attrs["calls"] = body

    def infer_shape(self, inst: Instruction) -> None:
        try:
            inst.shape = infer_shape(inst)
        except ValueError as exc:
            self.err(f"cannot infer the shape of '{inst.opcode}': {exc}", inst.loc.offset)
        except HloError as exc:
            self.sink.extend(exc)
        except Exception as exc:  # a bug in shape inference must not escape as a non-HloError
            self.err(f"cannot infer the shape of '{inst.opcode}' (internal error: {type(exc).__name__}: {exc}); "
                     f"write the result shape", inst.loc.offset)


class _Defined:
    """Where the instructions of a computation's records are defined, by name: only error
    messages ask ("used before it is defined", "did you mean"), so it is made on first use."""

    def __init__(self, rec: CompRec):
        self.rec = rec
        self._positions: Optional[dict[str, int]] = None

    def positions(self) -> dict[str, int]:
        if self._positions is None:
            self._positions = {i.name: i.pos for i in self.rec.instructions}
        return self._positions


def _legacy_select(inst: Instruction) -> bool:
    """A select with a scalar predicate over arrays, or over tuples (see canonical_select)."""
    if len(inst.operands) != 3 or any(op.shape is None for op in inst.operands):
        return False
    pred, on_true, _ = inst.operands
    return on_true.shape.is_tuple or (pred.shape.is_array and pred.shape.rank == 0 and on_true.shape.rank > 0)


def _nested_name(opcode: str, scope: dict) -> str:
    name = f"{opcode}.anon"
    n = 1
    while name in scope:
        name = f"{opcode}.anon.{n}"
        n += 1
    return name


def _is_plain_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _literal_element_offset(text: str, start: int, index: int) -> int:
    """Offset of the index-th element (row-major) of the literal written at start."""
    count = -1
    depth = 0
    paren = 0
    try:
        for tok in tokenize(text[start:], False, None):
            t = tok.type
            if t == "LBRACE" or t == "INT_LIST":
                depth += 1
                if t == "INT_LIST":
                    return start + tok.start_pos
            elif t == "RBRACE":
                depth -= 1
                if depth <= 0:
                    break
            elif t == "LPAR":
                if paren == 0:
                    count += 1
                    if count == index:
                        return start + tok.start_pos
                paren += 1
            elif t == "RPAR":
                paren -= 1
                if paren < 0:
                    break
            elif t not in ("COMMA", "ELLIPSIS") and paren == 0:
                count += 1
                if count == index:
                    return start + tok.start_pos
    except HloError:
        pass
    return start


def _show(v) -> str:
    try:
        return V.format_value(v)
    except Exception:
        return repr(v)


def _bool(v) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got '{_show(v)}'")
    return v


def _positive_int(v) -> int:
    if not _is_plain_int(v) or v < 1:
        raise ValueError(f"expected a positive integer, got '{_show(v)}'")
    return int(v)


def _braced_items(v):
    if not isinstance(v, V.Braced):
        raise ValueError(f"expected a list in braces, got '{_show(v)}'")
    return v.items


def _alias_entry(item) -> AliasEntry:
    if not (isinstance(item, V.Mapping) and isinstance(item.value, V.Paren) and len(item.value.items) in (2, 3)):
        raise ValueError("expected entries like {0}: (0, {}, may-alias)")
    items = item.value.items
    kind = items[2].text if len(items) == 3 and isinstance(items[2], V.Ident) else "may-alias"
    if len(items) == 3 and not isinstance(items[2], V.Ident):
        raise ValueError("the alias kind is may-alias or must-alias")
    if kind not in ("may-alias", "must-alias"):
        raise ValueError(f"alias kind must be may-alias or must-alias, not '{kind}'")
    if not _is_plain_int(items[0]) or items[0] < 0:
        raise ValueError(f"expected a parameter number, got '{_show(items[0])}'")
    return AliasEntry(to_shape_index(item.key), int(items[0]), to_shape_index(items[1]), kind)


def _donor(item):
    if not (isinstance(item, V.Paren) and len(item.items) == 2 and _is_plain_int(item.items[0])):
        raise ValueError("expected entries like (0, {})")
    return int(item.items[0]), to_shape_index(item.items[1])


_MAX_KEYED_ELEMENTS = 64


def _literal_key(value):
    """A key for the literals cache that equal written values (and only they) share: integers, nonzero
    floats (0.0 == -0.0) and short lists of integers, with their types (True == 1); None for others."""
    kind = type(value)
    if kind is int or (kind is float and value != 0.0):
        return kind, value
    if kind is list and len(value) <= _MAX_KEYED_ELEMENTS and all(type(x) is int for x in value):
        return kind, tuple(value)
    return None


def _immutable(value) -> bool:
    """Numbers, strings and (nested) tuples of them: values any number of instructions may share."""
    kind = type(value)
    if kind is tuple:
        return all(_immutable(v) for v in value)
    return kind is int or kind is str or kind is bool or kind is float


def _metadata(value, source: SourceFile) -> Metadata:
    """metadata={...}: kept verbatim; validated with one regular expression (fully parsed if that fails)."""
    if not isinstance(value, V.RawBraces):
        raise ValueError("expected {op_name=\"...\" ...}")
    if not METADATA_FIELD_RE.fullmatch(value.text):
        fields = parse_braced_fields(value.text, source=source, offset=value.offset)
        Metadata.check_fields(fields)
        return Metadata(value.text, fields)
    return Metadata(value.text)


def _frontend(value, source: SourceFile) -> FrontendAttributes:
    if not isinstance(value, V.RawBraces):
        raise ValueError("expected {key=\"value\", ...}")
    items = parse_braced_fields(value.text, raw_dict_values=True, source=source, offset=value.offset)
    FrontendAttributes.check_items(items)
    return FrontendAttributes(value.text, items)


def parse_braced_fields(raw: str, raw_dict_values: bool = False, source: Optional[SourceFile] = None,
                        offset: int = 0) -> dict:
    """Fields of a lazily kept `{key=value ...}` text (metadata, frontend attributes).

    Errors point into `source` at `offset` + their position in raw when a source is given.
    """
    own = SourceFile("<attribute>", raw)
    try:
        braced = parse_records(raw, own, start="braced", raw_dict_values=raw_dict_values, max_errors=1)
    except HloError as exc:
        if source is None:
            raise
        raise HloError([Diagnostic(d.message, source.loc(offset + (d.loc.offset if d.loc else 0)), d.severity,
                                   d.notes) for d in exc.diagnostics]) from None
    out = {}
    for item in braced.items:
        if isinstance(item, V.Keyed):
            v = item.value
            if isinstance(v, V.Str):
                v = v.text
            elif isinstance(v, V.Braced):
                v = tuple(v.items)
            if item.key in out:
                _raise_at(source, offset, raw, item, f"'{item.key}' is given more than once")
            out[item.key] = v
        elif not (isinstance(item, V.Braced) and not item.items):
            _raise_at(source, offset, raw, item, f"expected key=value, got '{_show(item)}'")
    return out


def _raise_at(source, offset, raw, item, message):
    loc = source.loc(offset) if source is not None else None
    raise HloError([Diagnostic(message, loc)])
