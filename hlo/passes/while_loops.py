"""While-loop surgery shared by while-loop-simplifier and while-loop-invariant-code-motion:
finding the loops, computing a trip count from constant initial values, and
rebuilding a loop with a different state.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..analysis.effects import computation_has_side_effect, has_side_effect_anywhere
from ..ir import Computation, Instruction, Module
from ..opcodes import Op
from ..shapes import Shape
from .analysis import EvaluationError, evaluate_cone, literal_value
from .rewrite import Rewriter, clone_name, replace


def while_loops(module: Module) -> list[Instruction]:
    """Every while instruction, those of callees (inner loops) first."""
    loop = Op.WHILE  # (looked up once: this scans every instruction)
    return [i for c in module.callees_first() for i in c.instructions if i.opcode == loop]


# --------------------------------------------------------------------------- trip count

def known_trip_count(loop: Instruction, limit: int = 1) -> Optional[int]:
    """The loop's trip count if it can be computed from constant initial values and is <= limit."""
    cond: Computation = loop.attrs["condition"]
    body: Computation = loop.attrs["body"]
    if computation_has_side_effect(cond):
        return None
    indices = _state_closure(cond, body)
    if indices is None:
        return None
    state = _constant_init_elements(loop.operands[0], indices)
    if state is None:
        return None
    for count in range(limit + 1):
        try:
            keep_going = evaluate_cone([cond.root], _bind(cond, state))[0]
            if not bool(keep_going):
                return count
            if count == limit:
                return None
            updates = evaluate_cone([body.root.operands[i] for i in indices], _bind(body, state))
        except EvaluationError:
            return None
        state = dict(zip(indices, updates))
    return None


def _state_closure(cond: Computation, body: Computation) -> Optional[list[int]]:
    """Indices of the state elements the condition depends on, through the body's updates.

    None when that cannot be told (non-tuple state, parameter read other than by
    get-tuple-element, side effects in the body's updates).
    """
    cond_param, body_param = cond.parameters[0], body.parameters[0]
    if not cond_param.shape.is_tuple or body.root.opcode != Op.TUPLE:
        return None
    needed = _read_indices(cond.root, cond_param)
    if needed is None:
        return None
    todo = list(needed)
    while todo:
        index = todo.pop()
        reads = _read_indices(body.root.operands[index], body_param)
        if reads is None:
            return None
        for k in reads - needed:
            needed.add(k)
            todo.append(k)
    return sorted(needed)


def _read_indices(target: Instruction, param: Instruction) -> Optional[set[int]]:
    """State indices `target` reads; None if it reads the state other than via gte or has side effects."""
    out: set[int] = set()
    seen: set[int] = set()
    stack = [target]
    while stack:
        inst = stack.pop()
        if id(inst) in seen:
            continue
        seen.add(id(inst))
        if inst is param or has_side_effect_anywhere(inst):
            return None
        if inst.opcode == Op.GET_TUPLE_ELEMENT and inst.operands[0] is param:
            out.add(inst.attrs["index"])
            continue
        stack.extend(inst.operands)
    return out


def _constant_init_elements(init: Instruction, indices: Sequence[int]) -> Optional[dict]:
    values = {}
    for i in indices:
        if init.opcode == Op.TUPLE:
            value = literal_value(init.operands[i])
        elif init.opcode == Op.CONSTANT and init.attrs["literal"].is_tuple and not init.attrs["literal"].elided:
            element = init.attrs["literal"].elements[i]
            value = None if element.elided or element.is_tuple else element.array
        else:
            value = None
        if value is None:
            return None
        values[i] = value
    return values


def _bind(comp: Computation, state: dict) -> dict:
    param = comp.parameters[0]
    return {id(u): state[u.attrs["index"]] for u in param.users
            if u.opcode == Op.GET_TUPLE_ELEMENT and u.attrs["index"] in state}


# --------------------------------------------------------------------------- rebuilding loops

def rebuild_while(loop: Instruction, rewriter: Rewriter, keep: list[int],
                  extras: Sequence[Instruction] = ()) -> tuple[Instruction, dict[int, Instruction]]:
    """Replace `loop` by one whose state is elements `keep` of the old state followed by `extras`.

    `extras` are instructions of the loop's computation; the new body passes them
    through unchanged. Removed elements must be dead in the condition and body
    (their reads are dropped with everything depending on them). The old loop's
    users get a tuple of the old shape: kept elements from the new loop, removed
    ones from the init. Returns the new loop and the map from id(old body
    instruction) to its copy in the new body.
    """
    comp: Computation = loop.parent
    module = rewriter.module
    init = loop.operands[0]
    old_shapes = loop.shape.tuple_shapes
    new_shape = Shape.tuple_of([old_shapes[i] for i in keep] + [e.shape for e in extras])
    index_map = {old: new for new, old in enumerate(keep)}
    cond = loop.attrs["condition"]
    body = loop.attrs["body"]
    new_cond, _ = _restate(cond, new_shape, index_map, len(old_shapes), rewriter)
    new_body, body_map = _restate(body, new_shape, index_map, len(old_shapes), rewriter, root_keep=keep,
                                  extra_count=len(extras))
    module.add_computation(new_cond, before=cond)
    module.add_computation(new_body, before=body)

    init_elements = [_element(comp, init, i, rewriter, loop) for i in keep] + list(extras)
    new_init = rewriter.add(comp, Op.TUPLE, new_shape, init_elements, before=loop, like=init)
    new_loop = rewriter.add(comp, Op.WHILE, new_shape, [new_init], {"condition": new_cond, "body": new_body},
                            before=loop, name=loop.name, like=loop)
    new_loop.frontend_attributes = loop.frontend_attributes
    new_loop.backend_config = loop.backend_config
    results = [rewriter.add(comp, Op.GET_TUPLE_ELEMENT, old_shapes[i], [new_loop], {"index": index_map[i]},
                            before=loop, like=loop)
               if i in index_map else _element(comp, init, i, rewriter, loop)
               for i in range(len(old_shapes))]
    rebuilt = rewriter.add(comp, Op.TUPLE, loop.shape, results, before=loop, like=loop)
    replace(loop, rebuilt)
    return new_loop, body_map


def _element(comp: Computation, tup: Instruction, index: int, rewriter: Rewriter, before: Instruction):
    if tup.opcode == Op.TUPLE:
        return tup.operands[index]
    return rewriter.add(comp, Op.GET_TUPLE_ELEMENT, tup.shape.tuple_shapes[index], [tup], {"index": index},
                        before=before, like=tup)


def _restate(comp: Computation, new_shape: Shape, index_map: dict[int, int], old_size: int, rewriter: Rewriter,
             root_keep: Optional[list[int]] = None, extra_count: int = 0):
    """A copy of a loop condition/body whose parameter has `new_shape`.

    Reads of kept elements are renumbered, reads of removed ones dropped with
    their dependents; other uses of the whole parameter read a tuple of the old
    shape rebuilt from the new parameter (only possible when nothing is removed).
    For a body (root_keep given) the root becomes the kept root elements
    followed by the extra elements passed through.
    """
    names = rewriter.names
    param = comp.parameters[0]
    copy = Computation(clone_name(comp.name, names), comp.loc)
    copy.execution_thread = comp.execution_thread
    new_param = Instruction(clone_name(param.name, names), Op.PARAMETER, new_shape,
                            attrs={"parameter_number": 0}, loc=param.loc)
    new_param.copy_generic_attributes_from(param)
    new_param.sharding = None
    copy.add(new_param)
    mapping: dict[int, Instruction] = {}
    dropped: set[int] = set()
    is_body = root_keep is not None

    def gte(index: int, shape: Shape, like: Optional[Instruction] = None) -> Instruction:
        return rewriter.add(copy, Op.GET_TUPLE_ELEMENT, shape, [new_param], {"index": index}, like=like or param)

    old_view: Optional[Instruction] = None
    if any(u.opcode != Op.GET_TUPLE_ELEMENT for u in param.users):
        elements = [gte(index_map[i], param.shape.tuple_shapes[i]) for i in range(old_size)]
        old_view = rewriter.add(copy, Op.TUPLE, param.shape, elements, like=param)
    mapping[id(param)] = old_view if old_view is not None else new_param
    base = len(root_keep or ())
    extras = [gte(base + k, new_shape.tuple_shapes[base + k]) for k in range(extra_count)]

    for inst in comp.instructions:
        if inst is param or (is_body and inst is comp.root):
            continue
        if inst.opcode == Op.GET_TUPLE_ELEMENT and inst.operands[0] is param:
            index = inst.attrs["index"]
            if index not in index_map:
                dropped.add(id(inst))
                continue
            new = inst.clone([new_param], clone_name(inst.name, names))
            new.attrs["index"] = index_map[index]
        elif any(id(op) in dropped for op in inst.operands):
            dropped.add(id(inst))
            continue
        else:
            new = inst.clone([mapping[id(op)] for op in inst.operands], clone_name(inst.name, names))
        copy.add(new)
        mapping[id(inst)] = new
    for inst in comp.instructions:
        if id(inst) in mapping and inst is not param:
            mapping[id(inst)].control_predecessors = [mapping[id(p)] for p in inst.control_predecessors
                                                      if id(p) in mapping]
    if is_body:
        old_root = comp.root
        elements = [mapping[id(old_root.operands[i])] for i in root_keep] + extras
        root = Instruction(clone_name(old_root.name, names), Op.TUPLE, new_shape, elements, loc=old_root.loc)
        root.metadata = old_root.metadata
        copy.root = copy.add(root)
    else:
        copy.root = mapping[id(comp.root)]
    return copy, mapping
