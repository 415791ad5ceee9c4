"""IR -> canonical HLO text.

The output is what XLA's default printer writes (`%` names, result shapes with
layouts, operands without shapes, `/*index=N*/` every fifth operand, attributes
in XLA's order with defaults omitted, metadata and backend config kept), except
that constants are always printed in full so that parse(print(m)) == m.
Printing is a fixed point: print(parse(print(m))) == print(m).
"""
from __future__ import annotations

from ..attributes import format_attribute, is_default
from ..generic_attributes import format_generic_attribute
from ..ir import Computation, Instruction, Module
from ..literal import format_literal
from ..opcodes import OPCODES, Op, Trait, ops_with
from ..shapes import format_shape
from ..textutil import escape_string, matching_brace_end
from .. import values as V


# --------------------------------------------------------------------------- instructions

_ASYNC_WRAPPERS = ops_with(Trait.ASYNC_WRAPPER)  # printed as `X-start` etc. when they wrap one X

def format_instruction(inst: Instruction, is_root: bool = False) -> str:
    opcode, attrs_source = _printed_opcode(inst)
    prefix = "ROOT " if is_root else ""
    head = f"{prefix}%{inst.name} = {format_shape(inst.shape) if inst.shape is not None else ''} {opcode}("
    if inst.opcode == Op.PARAMETER:
        head += str(inst.attrs["parameter_number"])
    elif inst.opcode == Op.CONSTANT:
        head += format_literal(inst.attrs["literal"])
    else:
        head += _format_operands(inst.operands)
    head += ")"
    attrs = _format_attributes(inst, attrs_source)
    return head + "".join(", " + a for a in attrs)


def _format_operands(operands) -> str:
    parts = []
    for i, op in enumerate(operands):
        prefix = f"/*index={i}*/" if i and i % 5 == 0 else ""
        parts.append(f"{prefix}%{op.name}")
    return ", ".join(parts)


def _printed_opcode(inst: Instruction):
    """Opcode text and the instruction whose opcode attributes are printed (async sugar)."""
    if inst.opcode in _ASYNC_WRAPPERS:
        comp = inst.attrs.get("calls")
        if comp is not None and comp.async_wrapped and comp.root is not None:
            suffix = inst.opcode[len("async"):]
            return comp.root.opcode + suffix, (comp.root if suffix == "-start" else None)
    return inst.opcode, inst


def _format_attributes(inst: Instruction, attrs_source) -> list[str]:
    out = []
    if attrs_source is not None and attrs_source is not inst:
        # Async sugar `X-start`: the async-start's own attributes, then X's.
        out.extend(_opcode_attributes(inst, skip=("calls",)))
    if attrs_source is not None:
        out.extend(_opcode_attributes(attrs_source))
    out.extend(_generic_attributes(inst))
    return out


def _opcode_attributes(inst: Instruction, skip=()) -> list[str]:
    """Non-default opcode attributes in the table's order, called computations last."""
    info = OPCODES[inst.opcode]
    out, computations = [], []
    for spec in info.attrs:
        if spec.name not in inst.attrs or spec.name in skip:
            continue
        value = inst.attrs[spec.name]
        if is_default(spec, value):
            continue
        late = spec.is_computation or spec.name in _PRINTED_AFTER_COMPUTATIONS
        (computations if late else out).append(format_attribute(spec, value))
    out.extend(computations)
    return out


# XLA prints `to_apply=%f, is_composite=true` for composite calls.
_PRINTED_AFTER_COMPUTATIONS = frozenset({"is_composite"})


def _generic_attributes(inst: Instruction) -> list[str]:
    out = []
    if inst.sharding is not None:
        out.append("sharding=" + format_generic_attribute("sharding", inst.sharding))
    if inst.frontend_attributes is not None and inst.frontend_attributes.items:
        out.append("frontend_attributes=" + inst.frontend_attributes.canonical())
    if inst.control_predecessors:
        out.append("control-predecessors={" + ", ".join("%" + p.name for p in inst.control_predecessors) + "}")
    if inst.statistics is not None:
        out.append("statistics=" + format_generic_attribute("statistics", inst.statistics))
    if inst.origin is not None:
        out.append("origin=" + format_generic_attribute("origin", inst.origin))
    if inst.parameter_replication is not None:
        out.append("parameter_replication={" + ",".join("true" if b else "false"
                                                        for b in inst.parameter_replication) + "}")
    if inst.metadata is not None and inst.metadata.is_printed():
        out.append("metadata=" + inst.metadata.canonical())
    if inst.backend_config:
        out.append("backend_config=" + _format_backend_config(inst.backend_config))
    return out


def _format_backend_config(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}") and _balanced(stripped):
        return text
    return '"' + escape_string(text) + '"'


def _balanced(text: str) -> bool:
    return matching_brace_end(text, 0) == len(text)


# --------------------------------------------------------------------------- computations and modules

def format_computation(comp: Computation) -> str:
    params = ", ".join(f"{p.name}: {format_shape(p.shape, with_layout=False)}" for p in comp.parameters)
    result = format_shape(comp.root.shape, with_layout=False) if comp.root is not None and comp.root.shape else "()"
    entry = "ENTRY " if comp.is_entry else ""
    lines = [f"{entry}%{comp.name} ({params}) -> {result} {{"]
    for inst in comp.instructions:
        lines.append("  " + format_instruction(inst, inst is comp.root))
    tail = "}"
    if comp.execution_thread != "main":
        tail += f', execution_thread="{escape_string(comp.execution_thread)}"'
    lines.append(tail)
    return "\n".join(lines)


def format_module_header(module: Module) -> str:
    cfg = module.config
    parts = [f"HloModule {module.name}"]
    if cfg.is_scheduled:
        parts.append("is_scheduled=true")
    if cfg.input_output_alias:
        entries = ", ".join(f"{_index(a.output_index)}: ({a.parameter}, {_index(a.parameter_index)}, {a.kind})"
                            for a in cfg.input_output_alias)
        parts.append("input_output_alias={ " + entries + " }")
    if cfg.buffer_donor:
        parts.append("buffer_donor={ " + ", ".join(f"({p}, {_index(i)})" for p, i in cfg.buffer_donor) + " }")
    if cfg.alias_passthrough_params:
        parts.append("alias_passthrough_params=true")
    layout = cfg.entry_computation_layout or (module.entry_program_shape() if module.entry and module.entry.root else None)
    if layout is not None:
        params = ", ".join((f"/*index={i}*/" if i and i % 5 == 0 else "") + format_shape(s)
                           for i, s in enumerate(layout.parameters))
        parts.append("entry_computation_layout={(" + params + ")->" + format_shape(layout.result) + "}")
    for name in ("allow_spmd_sharding_propagation_to_parameters", "allow_spmd_sharding_propagation_to_output"):
        flags = getattr(cfg, name)
        if flags is not None and (len(flags) != 1 or flags[0]):
            parts.append(f"{name}={{{','.join('true' if f else 'false' for f in flags)}}}")
    if cfg.replica_count != 1:
        parts.append(f"replica_count={cfg.replica_count}")
    if cfg.num_partitions != 1:
        parts.append(f"num_partitions={cfg.num_partitions}")
    if cfg.frontend_attributes is not None and cfg.frontend_attributes.items:
        parts.append("frontend_attributes=" + cfg.frontend_attributes.canonical())
    if cfg.origin_recovery_table is not None:
        parts.append("origin_recovery_table=" + V.format_value(cfg.origin_recovery_table))
    text = ", ".join(parts)
    if cfg.stack_frame_index:
        text += "\n" + _format_stack_frames(cfg.stack_frame_index)
    return text


def _format_stack_frames(tables) -> str:
    lines = []
    for name, entries in tables:
        lines.append(name)
        for index, value in entries:
            lines.append(f"{index} {V.format_value(value)}")
    return "\n".join(lines)


def _index(index) -> str:
    return "{" + ",".join(map(str, index)) + "}"


def format_module(module: Module) -> str:
    """The canonical text of a module (ends with a newline)."""
    chunks = [format_module_header(module)]
    for comp in module.computations:
        if comp.async_wrapped:
            continue
        chunks.append(format_computation(comp))
    return "\n\n".join(chunks) + "\n"


print_module = format_module
