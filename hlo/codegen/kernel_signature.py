"""What a kernel computes, known before it is emitted: so that repeats are not emitted again.

A model repeats its layers, and a layer repeats its elementwise fusions: most of a module's
kernels are equal to one emitted before. `kernel_signature(inst, assignment)` says what the
kernel of a top-level instruction computes, from what its emitter reads:

* the instruction's structure: opcode, shape with layout, attributes, backend config,
  frontend attributes, operand shapes with layouts, and the structure of the computations
  it calls (fused computations, reducers, comparators), with names left out (metadata too:
  it names the layer);
* the buffers it touches, by role (output leaf k, operand i's leaf k, scratch): which roles
  share a buffer, each buffer's kind (and whether an entry parameter or result may share
  memory with another), its shape and the view's shape, the scratch size, whether the
  instruction updates its operand in place; a scalar constant operand's value (it is
  emitted as a literal).

Two instructions with the same signature get the same kernel, called with each one's
buffers in the kernel's argument order (`roles`). Anything the signature cannot describe
(an operand whose value is a tuple of buffers) gives None: the kernel is emitted.
"""
from __future__ import annotations

import hashlib
from typing import Optional

from ..attributes import format_attribute
from ..ir import Computation, Instruction
from ..literal import format_literal
from ..opcodes import OPCODES
from ..shapes import format_shape
from .buffers import Assignment, Buffer, BufferKind, leaves_of, resolve

Role = tuple   # ("out", k) | ("op", i, k) | ("scratch",)


def buffer_roles(inst: Instruction, assignment: Assignment) -> Optional[list[tuple[Role, Buffer]]]:
    """(role, buffer) of every buffer the instruction's kernel may touch; None if an operand's
    value is not a buffer."""
    roles = [(("out", k), leaf) for k, leaf in enumerate(leaves_of(assignment.values[id(inst)]))]
    for i, operand in enumerate(inst.operands):
        value = assignment.values.get(id(operand))
        if not isinstance(value, Buffer):
            return None
        roles.append((("op", i, 0), value))
    scratch = assignment.scratch.get(id(inst))
    if scratch is not None:
        roles.append((("scratch",), scratch))
    if not all(isinstance(leaf, Buffer) for _, leaf in roles):
        return None
    return roles


def kernel_signature(inst: Instruction, assignment: Assignment, memo: dict) -> Optional[str]:
    """A hash of what inst's kernel computes (see the module doc), or None.
    memo: computation signatures by id, shared across one module's instructions."""
    roles = buffer_roles(inst, assignment)
    if roles is None:
        return None
    pieces = [_instruction_text(inst, memo, operands=[format_shape(o.shape) for o in inst.operands])]
    pieces.append(f"in_place={id(inst) in assignment.in_place};reused={assignment.reused.get(id(inst))}")
    shared = (set(assignment.aliases.values()), set(assignment.aliases))
    first_role: dict[int, int] = {}
    for n, (role, leaf) in enumerate(roles):
        buf = resolve(leaf)
        same_as = first_role.setdefault(id(buf), n)
        pieces.append(f"{role}:{same_as}:{_buffer_text(leaf, buf, shared)}")
    return hashlib.sha256("\n".join(pieces).encode()).hexdigest()


def _buffer_text(leaf: Buffer, buf: Buffer, shared: tuple) -> str:
    kind = buf.kind.value
    if (buf.kind is BufferKind.PARAM and buf.number in shared[0]) or \
            (buf.kind is BufferKind.RESULT and buf.number in shared[1]):
        kind += "(shared)"
    text = f"{kind};{type(leaf).__name__};{format_shape(leaf.shape)};{format_shape(buf.shape)};{buf.size}"
    if buf.kind is BufferKind.CONSTANT and buf.constant is not None and not buf.shape.rank:
        text += ";" + format_literal(buf.constant.attrs["literal"])   # emitted as a literal
    return text


def _instruction_text(inst: Instruction, memo: dict, operands: list[str]) -> str:
    """One instruction without names: opcode, shape, operands (as given), attributes."""
    info = OPCODES[inst.opcode]
    specs = {spec.name: spec for spec in info.attrs}
    attrs = []
    for name in sorted(inst.attrs):
        value = inst.attrs[name]
        spec = specs.get(name)
        if isinstance(value, Computation):
            attrs.append(f"{name}=<{computation_signature(value, memo)}>")
        elif isinstance(value, (list, tuple)) and value and all(isinstance(c, Computation) for c in value):
            attrs.append(f"{name}=<" + ",".join(computation_signature(c, memo) for c in value) + ">")
        elif name == "literal":
            attrs.append("literal=" + format_literal(value))
        elif spec is not None:
            attrs.append(format_attribute(spec, value))
        else:
            attrs.append(f"{name}={value!r}")
    frontend = inst.frontend_attributes.canonical() if inst.frontend_attributes is not None else ""
    return (f"{inst.opcode} {format_shape(inst.shape) if inst.shape is not None else ''} ({', '.join(operands)}) "
            f"{' '.join(attrs)} backend_config={inst.backend_config!r} frontend={frontend}")


def computation_signature(comp: Computation, memo: dict) -> str:
    """The computation's instructions in order, operands by position, without names."""
    found = memo.get(id(comp))
    if found is not None:
        return found
    position = {id(inst): n for n, inst in enumerate(comp.instructions)}
    lines = []
    for inst in comp.instructions:
        operands = [f"#{position[id(o)]}" if id(o) in position else f"?{format_shape(o.shape)}" for o in inst.operands]
        lines.append(_instruction_text(inst, memo, operands))
    lines.append(f"root=#{position.get(id(comp.root))}")
    signature = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    memo[id(comp)] = signature
    return signature
