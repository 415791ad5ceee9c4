"""Buffer assignment: which memory holds every array value of the module.

The entry computation and everything it reaches through control flow (while,
conditional, call) is walked in emission order; each visited instruction gets a
position. Every array leaf an instruction defines gets a `Buffer`; parameters,
get-tuple-element, tuple, bitcast and call results alias existing buffers, and
constants live in read-only globals. A buffer is live from its definition to its
last use; a buffer defined outside a while loop and used inside it stays live to
the loop's end. Temporaries are packed first-fit into one 64-byte aligned arena
(buffers with disjoint live ranges share memory). Entry result leaves defined by
the module are written straight into the caller's result buffers, and a
dynamic-update-slice whose operand dies there updates that buffer in place.
A result leaf aliased with a parameter leaf (input_output_alias) may share that
parameter's memory: it is written directly only when the parameter is no longer read
once the result's writer starts (or is read by that writer only at the index written);
otherwise it goes through temp memory and is copied at the end, after every copy that
reads a parameter.

BUFFER_RULES maps the opcodes whose value is not simply a new buffer (aliases, control
flow, in-place updates) to `rule(assigner, inst, param_values) -> value`, registered
beside each rule below; the working memory an emitter needs comes from its registration
in EMITTERS (`scratch_bytes`).
"""
from __future__ import annotations

import enum
import heapq
from dataclasses import dataclass, field
from typing import Optional

from ..ir import Computation, Instruction, Module
from ..opcodes import Op, Trait
from ..registry import OpRegistry
from ..shapes import Shape
from .emitters import EMITTERS

ALIGN = 64
BUFFER_RULES = OpRegistry("buffer rule")


class BufferKind(enum.Enum):
    ARENA = "arena"          # temp memory, packed with others whose live ranges do not overlap
    PARAM = "param"          # an entry parameter leaf
    RESULT = "result"        # an entry result leaf
    CONSTANT = "constant"    # a read-only global
    ALIAS = "alias"          # another buffer seen with another shape (bitcast)


@dataclass(eq=False)
class Buffer:
    """Memory for one array leaf: in the arena, a parameter, a result or a constant."""

    shape: Shape
    kind: BufferKind = BufferKind.ARENA
    number: int = 0               # parameter leaf / result leaf number
    offset: int = 0               # arena offset
    start: int = 0
    end: int = 0
    constant: Optional[Instruction] = None

    @property
    def size(self) -> int:
        return self.shape.byte_size()


@dataclass
class Assignment:
    values: dict = field(default_factory=dict)        # id(inst) -> Buffer or tuple of values
    while_swaps: dict = field(default_factory=dict)   # id(while) -> {leaf k: temp Buffer}
    scratch: dict = field(default_factory=dict)       # id(inst) -> Buffer of working memory
    in_place: set = field(default_factory=set)        # id(inst) updated in its operand's buffer
    reused: dict = field(default_factory=dict)        # id(inst) -> operand whose buffer it overwrites
    result_copies: list = field(default_factory=list)  # (result j, source Buffer)
    result_stages: list = field(default_factory=list)  # (temp Buffer, aliased param Buffer) copied before result copies
    aliases: dict = field(default_factory=dict)        # result leaf j -> parameter leaf i (input_output_alias)
    results: list = field(default_factory=list)       # result leaf shapes
    params: list = field(default_factory=list)        # parameter leaf shapes
    temp_bytes: int = 0

    def value(self, inst: Instruction):
        return self.values[id(inst)]


def leaves_of(value) -> list:
    if isinstance(value, tuple):
        out = []
        for v in value:
            out.extend(leaves_of(v))
        return out
    return [value]


def _new_value(shape: Shape, pos: int, all_buffers: list):
    if shape.is_tuple:
        return tuple(_new_value(s, pos, all_buffers) for s in shape.tuple_shapes)
    buf = Buffer(shape, start=pos, end=pos)
    all_buffers.append(buf)
    return buf


class _Assigner:
    def __init__(self, module: Module):
        self.module = module
        self.a = Assignment()
        self.pos = 0
        self.buffers: list[Buffer] = []
        self.loops: list[set] = []   # buffers used inside each active while
        self.loop_start = -1         # position where the innermost active while began
        self.loop_body = None        # the innermost active while's body computation
        self.definer: dict = {}      # id(arena Buffer) -> instruction that first writes it
        self.param_buffers: list = []

    def run(self) -> Assignment:
        entry = self.module.entry
        params = []
        number = 0
        for p in sorted(entry.parameters, key=lambda p: p.attrs["parameter_number"]):
            value, number = self._param_value(p.shape, number)
            params.append(value)
        self.param_buffers = [leaf for p in params for leaf in leaves_of(p)]
        self.a.aliases = alias_leaves(self.module)
        self.aliased_producers = _aliased_producers(entry.root, set(self.a.aliases))
        self.a.params = [b.shape for b in self.param_buffers]
        self.visit(entry, params)
        self._bind_results(entry)
        self._pack()
        return self.a

    def _param_value(self, shape: Shape, number: int):
        if shape.is_tuple:
            out = []
            for s in shape.tuple_shapes:
                v, number = self._param_value(s, number)
                out.append(v)
            return tuple(out), number
        return Buffer(shape, kind=BufferKind.PARAM, number=number), number + 1

    def use(self, value) -> None:
        for buf in map(resolve, leaves_of(value)):
            buf.end = max(buf.end, self.pos)
            for used in self.loops:
                used.add(buf)

    def visit(self, comp: Computation, param_values: list) -> None:
        values = self.a.values
        for inst in comp.post_order():
            self.pos += 1
            for op in inst.operands:
                self.use(values[id(op)])
            self._add_scratch(inst)
            rule = BUFFER_RULES.get(inst.opcode)
            if rule is not None:
                values[id(inst)] = rule(self, inst, param_values)
            else:
                values[id(inst)] = self._elementwise_reuse(inst) or self.new_value(inst.shape)
            for leaf in map(resolve, leaves_of(values[id(inst)])):
                if leaf.kind is BufferKind.ARENA:
                    self.definer.setdefault(id(leaf), inst)

    def new_value(self, shape: Shape):
        """Fresh buffers for every leaf of shape, defined at the current position."""
        return _new_value(shape, self.pos, self.buffers)

    def _add_scratch(self, inst: Instruction) -> None:
        scratch_bytes = EMITTERS.details(inst.opcode).get("scratch_bytes")
        size = scratch_bytes(inst) if scratch_bytes is not None else 0
        if size:
            buf = Buffer(Shape.array("u8", (size,)), start=self.pos, end=self.pos)
            self.buffers.append(buf)
            self.a.scratch[id(inst)] = buf

    # -- reusing an operand's buffer
    def _elementwise_reuse(self, inst: Instruction):
        """The buffer of an operand that dies here and that inst reads only at the index it
        writes (elementwise chains): inst then computes in place. None when there is none."""
        if inst.shape.is_tuple or not inst.info.is_elementwise:
            return None
        return self.reusable_operand(inst, range(len(inst.operands)))

    def reusable_operand(self, inst: Instruction, positions):
        if id(inst) in self.aliased_producers:
            return None   # a fresh buffer written only by inst: it can then be the aliased parameter's
        for k in positions:
            operand = inst.operands[k]
            source = self.a.values[id(operand)]
            if (isinstance(source, Buffer) and source.kind is BufferKind.ARENA
                    and operand.shape.dims == inst.shape.dims
                    and operand.shape.element_type.byte_size == inst.shape.element_type.byte_size
                    and operand.shape.minor_to_major() == inst.shape.minor_to_major()
                    and all(u is inst for u in operand.users) and not _names_other_buffers(operand)
                    and sum(op is operand for op in inst.operands) == 1 and source.start > self.loop_start
                    and id(operand) not in self.a.in_place):
                self.a.reused[id(inst)] = k
                return source
        return None

    def maybe_in_place(self, inst, operand):
        """operand's buffer when inst may update it in place (operand dies here, or it is the loop
        state inst replaces), else a new one."""
        source = self.a.values[id(operand)]
        if (isinstance(source, Buffer) and source.kind is BufferKind.ARENA and len(operand.users) == 1
                and not _names_other_buffers(operand) and source.start > self.loop_start):
            self.a.in_place.add(id(inst))
            return source
        if self._updates_loop_state(inst, operand, source):
            self.a.in_place.add(id(inst))
            return source
        return self.new_value(inst.shape)

    def _updates_loop_state(self, inst, operand, source) -> bool:
        """Whether inst turns leaf k of the innermost while's state into leaf k of the next state
        and nothing else in the body reads leaf k: then it writes the state buffer itself (a loop
        appending to a carried array, e.g. a KV cache or a scan's outputs, copies nothing)."""
        body = self.loop_body
        if (body is None or not isinstance(source, Buffer) or source.kind is not BufferKind.ARENA
                or operand.opcode != Op.GET_TUPLE_ELEMENT or len(operand.users) != 1
                or inst.shape.minor_to_major() != operand.shape.minor_to_major()):
            return False
        param, k = operand.operands[0], operand.attrs["index"]
        root = body.root
        if param.opcode != Op.PARAMETER or all(p is not param for p in body.parameters) \
                or root.opcode != Op.TUPLE or k >= len(root.operands) or root.operands[k] is not inst \
                or sum(o is inst for o in root.operands) != 1:
            return False
        readers = [u for u in param.users if u.opcode != Op.GET_TUPLE_ELEMENT or u.attrs["index"] == k]
        return len(readers) == 1 and readers[0] is operand

    # -- results and packing
    def _bind_results(self, entry: Computation) -> None:
        root_value = self.a.values[id(entry.root)]
        claimed = set()
        leaves = leaves_of(root_value)
        copy_sources = {id(resolve(leaf)) for leaf in leaves if resolve(leaf).kind is BufferKind.PARAM}
        # The root's own leaf shapes: a buffer reused from an operand may hold another element type.
        for j, (leaf, (_, shape)) in enumerate(zip(leaves, entry.root.shape.leaves())):
            self.a.results.append(shape)
            target = resolve(leaf)
            if target.kind is BufferKind.ARENA and id(target) not in claimed and target.shape.compatible(leaf.shape) \
                    and target.shape.minor_to_major() == leaf.shape.minor_to_major() \
                    and self._safe_in_place(j, target, copy_sources):
                target.kind, target.number = BufferKind.RESULT, j
                claimed.add(id(target))
            else:
                if target.kind is BufferKind.ARENA:
                    target.end = self.pos + 1   # read by the final copy
                self.a.result_copies.append((j, self._staged(j, leaf)))
        # Copies into aliased results overwrite parameters: they go after every copy reading one.
        self.a.result_copies.sort(key=lambda c: c[0] in self.a.aliases)

    def _safe_in_place(self, j: int, target: Buffer, copy_sources: set) -> bool:
        """Whether result j may be computed straight into its buffer when that buffer is the
        aliased parameter's: the parameter is not read once the result starts being written,
        except by the writer itself at the very index it writes (x = x + 1 updates)."""
        if j not in self.a.aliases:
            return True
        param = self.param_buffers[self.a.aliases[j]]
        if id(param) in copy_sources:
            return False
        if param.end < target.start:
            return True
        writer = self.definer.get(id(target))
        return param.end == target.start and writer is not None and self._reads_elementwise(writer, param)

    def _reads_elementwise(self, inst: Instruction, param: Buffer) -> bool:
        if inst.shape.is_tuple:
            return False
        if inst.opcode == Op.FUSION:
            body = inst.attrs["calls"]
            if body.root.opcode == Op.TUPLE:
                return False
            positions = {p.attrs["parameter_number"] for p in body.parameters if _read_only_elementwise(p, body.root)}
        elif inst.info.is_elementwise:
            positions = set(range(len(inst.operands)))
        else:
            return False
        for k, operand in enumerate(inst.operands):
            reads_param = any(resolve(b) is param for b in leaves_of(self.a.values[id(operand)]))
            if reads_param and (k not in positions or operand.shape.dims != inst.shape.dims
                                or operand.shape.minor_to_major() != inst.shape.minor_to_major()):
                return False
        return True

    def _staged(self, j: int, leaf):
        """A parameter copied into an aliased result is first saved in a temp when that
        parameter is itself aliased to another result (which may overwrite it first)."""
        source = resolve(leaf)
        if j not in self.a.aliases or source.kind is not BufferKind.PARAM or self.a.aliases[j] == source.number \
                or source.number not in self.a.aliases.values():
            return leaf
        temp = Buffer(leaf.shape, start=self.pos + 1, end=self.pos + 1)
        self.buffers.append(temp)
        self.a.result_stages.append((temp, leaf))
        return temp

    def _pack(self) -> None:
        """First fit by start of life. Buffers come in order of start, so one that ended before
        the current start overlaps no later one either: it leaves the live set for good (which
        keeps packing linear in the number of buffers, not quadratic)."""
        live: list[tuple[int, int, Buffer]] = []   # heap by end of life
        top = 0
        arena = sorted((b for b in self.buffers if b.kind is BufferKind.ARENA), key=lambda b: (b.start, -b.size))
        for n, buf in enumerate(arena):
            while live and live[0][0] < buf.start:
                heapq.heappop(live)
            size = _aligned(max(buf.size, 1))
            offset = 0
            for p in sorted((entry[2] for entry in live), key=lambda p: p.offset):
                if offset + size <= p.offset:
                    break
                offset = max(offset, p.offset + _aligned(max(p.size, 1)))
            buf.offset = offset
            heapq.heappush(live, (buf.end, n, buf))
            top = max(top, offset + size)
        self.a.temp_bytes = top


# --------------------------------------------------------------------------- buffer rules
# rule(assigner, inst, param_values) -> the instruction's value (a Buffer or a tuple of
# values). `aliases=True`: the value names buffers other instructions define.

@BUFFER_RULES.register(Op.PARAMETER, aliases=True)
def _parameter(assigner: _Assigner, inst, param_values):
    return param_values[inst.attrs["parameter_number"]]


@BUFFER_RULES.register(Op.CONSTANT, aliases=True)
def _constant(assigner: _Assigner, inst, _):
    return Buffer(inst.shape, kind=BufferKind.CONSTANT, constant=inst, start=assigner.pos, end=assigner.pos)


@BUFFER_RULES.register(Op.TUPLE, aliases=True)
def _tuple(assigner: _Assigner, inst, _):
    return tuple(assigner.a.values[id(op)] for op in inst.operands)


@BUFFER_RULES.register(Op.GET_TUPLE_ELEMENT, aliases=True)
def _get_tuple_element(assigner: _Assigner, inst, _):
    return assigner.a.values[id(inst.operands[0])][inst.attrs["index"]]


@BUFFER_RULES.register(Op.CALL, aliases=True)
def _call(assigner: _Assigner, inst, _):
    callee = inst.attrs["to_apply"]
    assigner.visit(callee, [assigner.a.values[id(op)] for op in inst.operands])
    return assigner.a.values[id(callee.root)]


def _names_other_buffers(inst: Instruction) -> bool:
    return bool(BUFFER_RULES.details(inst.opcode).get("aliases"))


@BUFFER_RULES.register(Op.BITCAST)
def _bitcast(assigner: _Assigner, inst, _):
    source = assigner.a.values[id(inst.operands[0])]
    if inst.operands[0].shape.element_type is inst.shape.element_type and isinstance(source, Buffer) \
            and resolve(source).kind is not BufferKind.CONSTANT:
        return _Alias(inst.shape, source)
    return assigner.new_value(inst.shape)


@BUFFER_RULES.register(Op.WHILE)
def _while(assigner: _Assigner, inst, _):
    state = _while_state(assigner, inst)
    start = assigner.pos
    used: set = set()
    assigner.loops.append(used)
    outer_start, assigner.loop_start = assigner.loop_start, start
    outer_body, assigner.loop_body = assigner.loop_body, inst.attrs["body"]
    assigner.visit(inst.attrs["condition"], [state])
    assigner.use(assigner.a.values[id(inst.attrs["condition"].root)])
    body = inst.attrs["body"]
    assigner.visit(body, [state])
    assigner.pos += 1
    root_value = assigner.a.values[id(body.root)]
    assigner.use(root_value)
    state_leaves = leaves_of(state)
    swaps = {}
    for k, leaf in enumerate(leaves_of(root_value)):
        if leaf in state_leaves and state_leaves.index(leaf) != k:
            swaps[k] = assigner.new_value(leaf.shape)
    assigner.a.while_swaps[id(inst)] = swaps
    assigner.pos += 1
    assigner.loops.pop()
    assigner.loop_start = outer_start
    assigner.loop_body = outer_body
    for buf in used | set(state_leaves) | set(swaps.values()):
        if buf.start <= start:
            buf.end = max(buf.end, assigner.pos)
        for outer in assigner.loops:
            outer.add(buf)
    return state


def _while_state(assigner: _Assigner, inst):
    """The loop state's buffers: new ones, except that an element the body passes on unchanged and
    that starts as an entry parameter (not aliased with a result) or a constant is that buffer
    itself. Nothing writes it (in-place updates take arena buffers only), so the copy into the state
    on every run and the state's memory are saved: a decoding loop carries its model's weights."""
    init = assigner.a.values[id(inst.operands[0])]
    if not inst.shape.is_tuple or not isinstance(init, tuple):
        return assigner.new_value(inst.shape)
    donated = set(assigner.a.aliases.values())
    taken: set = set()
    state = []
    for k, (shape, source) in enumerate(zip(inst.shape.tuple_shapes, init)):
        target = resolve(source) if isinstance(source, Buffer) else None
        if target is not None and id(target) not in taken and _passed_on(inst, k, shape) \
                and _same_layout(source.shape, shape) and (target.kind is BufferKind.CONSTANT or (
                    target.kind is BufferKind.PARAM and target.number not in donated)):
            taken.add(id(target))
            state.append(source)
        else:
            state.append(assigner.new_value(shape))
    return tuple(state)


def _passed_on(inst: Instruction, k: int, shape: Shape) -> bool:
    """Whether the while body's result element k is its parameter's element k, every view of it
    laid out as the while's element k."""
    body, condition = inst.attrs["body"], inst.attrs["condition"]
    root = body.root
    if not shape.is_array or root.opcode != Op.TUPLE or k >= len(root.operands) or len(body.parameters) != 1:
        return False
    element = root.operands[k]
    param = body.parameters[0]
    if element.opcode != Op.GET_TUPLE_ELEMENT or element.operands[0] is not param or element.attrs["index"] != k:
        return False
    views = [element.shape, param.shape.tuple_shapes[k]]
    views += [p.shape.tuple_shapes[k] for p in condition.parameters if p.shape.is_tuple]
    return all(_same_layout(v, shape) for v in views)


def _same_layout(a: Shape, b: Shape) -> bool:
    return a.is_array and b.is_array and a.dims == b.dims and a.element_type is b.element_type \
        and a.minor_to_major() == b.minor_to_major()


@BUFFER_RULES.register(Op.CONDITIONAL)
def _conditional(assigner: _Assigner, inst, _):
    out = assigner.new_value(inst.shape)
    for k, branch in enumerate(branch_computations(inst)):
        assigner.visit(branch, [assigner.a.values[id(inst.operands[k + 1])]])
        assigner.pos += 1
        assigner.use(assigner.a.values[id(branch.root)])
    assigner.use(out)
    return out


@BUFFER_RULES.register(Op.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(assigner: _Assigner, inst, _):
    return assigner.maybe_in_place(inst, inst.operands[0])


@BUFFER_RULES.register(Op.FUSION)
def _fusion(assigner: _Assigner, inst, _):
    root = inst.attrs["calls"].root
    target = root.operands[0] if root.opcode == Op.DYNAMIC_UPDATE_SLICE else None
    if target is not None and target.opcode == Op.PARAMETER and len(target.users) == 1:
        operand = inst.operands[target.attrs["parameter_number"]]
        if sum(op is operand for op in inst.operands) == 1:
            return assigner.maybe_in_place(inst, operand)
    updated = _loop_state_updates(assigner, inst)
    if updated:
        return _with_state_buffers(assigner, inst, updated)
    if root.opcode != Op.TUPLE:
        body = inst.attrs["calls"]
        positions = [p.attrs["parameter_number"] for p in body.parameters
                     if _read_only_elementwise(p, root)]
        reused = assigner.reusable_operand(inst, positions)
        if reused is not None:
            return reused
    return assigner.new_value(inst.shape)


# Fusions around these are emitted another way (a product or reduction into the output first, an
# update of operand 0): their outputs may be written before every element of a parameter is read.
_WRITES_OUTPUTS_EARLY = (Trait.OUTPUT_FUSION_HERO, Trait.REDUCTION_FUSION_HERO, Trait.UPDATES_IN_PLACE)


def _loop_state_updates(assigner: _Assigner, fusion: Instruction) -> dict[int, Buffer]:
    """{output j: state buffer} for the fusion's outputs that can be computed into the innermost
    while's state in place: output j becomes state element k, is computed element by element from
    the fused parameter holding element k (read at the index written, by output j alone), and
    nothing else in the body reads element k (a scan accumulating gradients copies nothing)."""
    body = assigner.loop_body
    if body is None or body.root.opcode != Op.TUPLE or len(body.parameters) != 1:
        return {}
    fused = fusion.attrs["calls"]
    if any(i.info.has(t) for i in fused.instructions for t in _WRITES_OUTPUTS_EARLY):
        return {}
    outputs = _fusion_outputs(fusion, fused)
    updates = {}
    for j, (value, result) in enumerate(outputs):
        k = _state_position(body.root, value)
        if k is None:
            continue
        p = _state_operand(body.parameters[0], fusion, k)
        if p is None:
            continue
        source = assigner.a.values[id(fusion.operands[p])]
        if isinstance(source, Buffer) and source.kind is BufferKind.ARENA and _same_layout(source.shape, result.shape) \
                and _only_output_reading(fused, p, j):
            updates[j] = source
    return updates


def _fusion_outputs(fusion: Instruction, fused) -> list[tuple[Instruction, Instruction]]:
    """(the value a user sees, the fused instruction computing it) per output; [] for nested tuples."""
    if not fusion.shape.is_tuple:
        return [(fusion, fused.root)]
    if fused.root.opcode != Op.TUPLE or not all(s.is_array for s in fusion.shape.tuple_shapes):
        return []
    views = {u.attrs["index"]: u for u in fusion.users if u.opcode == Op.GET_TUPLE_ELEMENT}
    return [(views[j], out) for j, out in enumerate(fused.root.operands) if j in views]


def _state_position(root: Instruction, value: Instruction) -> Optional[int]:
    positions = [k for k, element in enumerate(root.operands) if element is value]
    return positions[0] if len(positions) == 1 else None


def _state_operand(param: Instruction, fusion: Instruction, k: int) -> Optional[int]:
    """The fusion's operand position reading state element k, when that read is the body's only one."""
    readers = [u for u in param.users if u.opcode != Op.GET_TUPLE_ELEMENT or u.attrs["index"] == k]
    if len(readers) != 1 or readers[0].opcode != Op.GET_TUPLE_ELEMENT or len(readers[0].users) != 1:
        return None
    positions = [p for p, operand in enumerate(fusion.operands) if operand is readers[0]]
    return positions[0] if len(positions) == 1 else None


def _only_output_reading(fused, number: int, j: int) -> bool:
    """Whether fused parameter `number` reaches output j only, through same-shape elementwise ops
    (so each element is read at the index written, before it is written, and by nothing else)."""
    param = next(p for p in fused.parameters if p.attrs["parameter_number"] == number)
    root = fused.root
    out = root.operands[j] if root.opcode == Op.TUPLE else root
    if param.shape.dims != out.shape.dims:
        return False
    pending, seen = [param], {id(param)}
    while pending:
        node = pending.pop()
        if root.opcode == Op.TUPLE and any(o is node for k, o in enumerate(root.operands) if k != j):
            return False
        for user in node.users:
            if user is root and root.opcode == Op.TUPLE:
                continue
            if not user.info.is_elementwise or user.shape.dims != out.shape.dims:
                return False
            if id(user) not in seen:
                seen.add(id(user))
                pending.append(user)
    return True


def _with_state_buffers(assigner: _Assigner, fusion: Instruction, updated: dict[int, Buffer]):
    if not fusion.shape.is_tuple:
        return updated[0]
    return tuple(updated[j] if j in updated else assigner.new_value(shape)
                 for j, shape in enumerate(fusion.shape.tuple_shapes))


# --------------------------------------------------------------------------- helpers

def _leaf_number(shape: Shape, index) -> Optional[int]:
    """The depth-first leaf number of shape's subshape at index (None when it is not an array leaf)."""
    number = 0
    for k in index:
        if not shape.is_tuple or not 0 <= k < len(shape.tuple_shapes):
            return None
        number += sum(len(list(s.leaves())) for s in shape.tuple_shapes[:k])
        shape = shape.tuple_shapes[k]
    return None if shape.is_tuple else number


def _aliased_producers(root: Instruction, aliased: set) -> set:
    """ids of the instructions (through root tuples) that produce aliased result leaves."""
    out, number = set(), 0

    def walk(inst):
        nonlocal number
        if inst.opcode == Op.TUPLE:
            for op in inst.operands:
                walk(op)
            return
        count = len(list(inst.shape.leaves()))
        if any(j in aliased for j in range(number, number + count)):
            out.add(id(inst))
        number += count

    walk(root)
    return out


def alias_leaves(module: Module) -> dict:
    """input_output_alias as {result leaf j: parameter leaf i}, for leaves of equal shape and layout."""
    entry = module.entry
    params = sorted(entry.parameters, key=lambda p: p.attrs["parameter_number"])
    firsts, count = [], 0
    for p in params:
        firsts.append(count)
        count += len(list(p.shape.leaves()))
    out = {}
    for alias in module.config.input_output_alias:
        if not 0 <= alias.parameter < len(params):
            continue
        j = _leaf_number(entry.root.shape, tuple(alias.output_index))
        i = _leaf_number(params[alias.parameter].shape, tuple(alias.parameter_index))
        if j is None or i is None:
            continue
        result = entry.root.shape.subshape(tuple(alias.output_index))
        param = params[alias.parameter].shape.subshape(tuple(alias.parameter_index))
        if result.dims == param.dims and result.element_type is param.element_type \
                and result.minor_to_major() == param.minor_to_major():
            out[j] = firsts[alias.parameter] + i
    return out


def _read_only_elementwise(param: Instruction, root: Instruction) -> bool:
    """Every use of the fused parameter reaches the root through same-shape elementwise ops."""
    if param.shape.dims != root.shape.dims:
        return False
    pending, seen = [param], set()
    while pending:
        node = pending.pop()
        for user in node.users:
            if id(user) in seen:
                continue
            seen.add(id(user))
            if not user.info.is_elementwise or user.shape.dims != root.shape.dims:
                return False
            pending.append(user)
    return True


class _Alias(Buffer):
    """A buffer viewed with another shape (bitcast): same memory as `target`."""

    def __init__(self, shape: Shape, target: Buffer):
        super().__init__(shape, kind=BufferKind.ALIAS)
        self.target = target

    def __hash__(self):
        return id(self)


def resolve(buf: Buffer) -> Buffer:
    while isinstance(buf, _Alias):
        buf = buf.target
    return buf


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def branch_computations(inst: Instruction) -> list[Computation]:
    if inst.attrs.get("branch_computations"):
        return list(inst.attrs["branch_computations"])
    return [inst.attrs["true_computation"], inst.attrs["false_computation"]]


def assign_buffers(module: Module) -> Assignment:
    return _Assigner(module).run()
