"""while-loop-simplifier: remove loops that run at most once and dead loop-carried elements.

As the parts of XLA's WhileLoopSimplifier that matter most:

* Trip count 0 (the condition is false on the initial value): the loop becomes
  its init operand. Trip count 1: the loop becomes a call of its body on the
  init, which is inlined. The trip count is found by running the condition (and
  the body's update of what the condition reads) through the interpreter on
  constant initial values, at most `limit` + 1 times; loops whose condition has
  side effects are kept, and so are trip-count-1 loops whose body has some.
* Dead tuple elements: an element the condition does not read (directly or
  through other elements), that no side effect and no other kept element
  depends on, and that nobody reads after the loop is removed from the state.
  Groups of elements that only feed each other are removed together when each
  member is unused after the loop or passed through unchanged (its value after
  the loop is then its initial value). As in XLA this needs a tuple-shaped
  state, a body whose root is a tuple and whose parameters are read only
  through get-tuple-element.

Loops with control dependencies are left alone. The old loop's users read a
tuple rebuilt from the new loop (tuple-simplifier folds it away).

Also provides `known_trip_count` and `rebuild_while`, shared with
while-loop-invariant-code-motion.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..ir import Computation, Instruction, Module
from ..shapes import Shape
from .call_inliner import inline_call
from .constant_folding import EvaluationError, evaluate_cone, literal_value
from .dce import has_side_effect as _has_own_side_effect
from .flatten_call_graph import clone_name
from .pass_manager import Pass, register
from .rewrite import Rewriter, replace


@register
class WhileLoopSimplifier(Pass):
    name = "while-loop-simplifier"
    description = "Remove loops with trip count 0 or 1 and loop-carried tuple elements nothing needs."

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        loops = [i for c in module.callees_first() for i in c.instructions if i.opcode == "while"]
        changed = False
        for loop in loops:
            if loop.parent is None or not _removable(loop):
                continue
            if try_remove_while_loop(loop, rewriter):
                changed = True
                continue
            changed |= try_remove_dead_elements(loop, rewriter)
        if changed and module.entry is not None:
            module.remove_unreachable_computations()
        return changed


def _removable(inst: Instruction) -> bool:
    return not inst.control_predecessors and not any(inst in i.control_predecessors
                                                     for i in inst.parent.instructions)


def has_side_effect(inst: Instruction) -> bool:
    """A side effect in the instruction or anywhere in the computations it calls (fusions, maps ...)."""
    return _has_own_side_effect(inst) or any(computation_has_side_effect(c) for c in inst.called_computations())


def computation_has_side_effect(comp: Computation) -> bool:
    return any(has_side_effect(i) for i in comp.instructions)


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
    if not cond_param.shape.is_tuple or body.root.opcode != "tuple":
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
        if inst is param or has_side_effect(inst):
            return None
        if inst.opcode == "get-tuple-element" and inst.operands[0] is param:
            out.add(inst.attrs["index"])
            continue
        stack.extend(inst.operands)
    return out


def _constant_init_elements(init: Instruction, indices: Sequence[int]) -> Optional[dict]:
    values = {}
    for i in indices:
        if init.opcode == "tuple":
            value = literal_value(init.operands[i])
        elif init.opcode == "constant" and init.attrs["literal"].is_tuple and not init.attrs["literal"].elided:
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
            if u.opcode == "get-tuple-element" and u.attrs["index"] in state}


def try_remove_while_loop(loop: Instruction, rewriter: Rewriter) -> bool:
    count = known_trip_count(loop, 1)
    if count is None:
        return False
    comp = loop.parent
    if count == 0:
        replace(loop, loop.operands[0])
        return True
    body = loop.attrs["body"]
    if computation_has_side_effect(body):
        return False
    call = rewriter.add(comp, "call", loop.shape, [loop.operands[0]], {"to_apply": body}, before=loop,
                        name=loop.name, like=loop)
    loop.replace_all_uses_with(call)
    comp.remove(loop)
    inline_call(call, rewriter.names)
    return True


# --------------------------------------------------------------------------- dead elements

def dead_state_indices(loop: Instruction) -> list[int]:
    """State elements that can be removed (see the module docstring)."""
    cond: Computation = loop.attrs["condition"]
    body: Computation = loop.attrs["body"]
    if not _rewritable(loop):
        return []
    size = len(loop.shape.tuple_shapes)
    cond_param, body_param = cond.parameters[0], body.parameters[0]
    if size == 0 or any(u.opcode != "get-tuple-element" for p in (cond_param, body_param) for u in p.users):
        return []
    root = body.root
    used_after = _indices_used_after(loop, size)
    candidates = {i for i in range(size) if i not in used_after or _passes_through(root, body_param, i)}
    tracked = [i for c in (body, cond) for i in c.post_order() if i not in (cond_param, body_param, root)]
    deps = _candidate_dependencies(tracked, (cond_param, body_param), candidates)
    sinks = [i for i in tracked if has_side_effect(i)] + [cond.root]
    reach_sinks = set().union(*(deps.get(id(s), set()) for s in sinks))
    affect_others: set[int] = set()
    for i in range(size):
        output_deps = deps.get(id(root.operands[i]), set())
        affect_others |= output_deps - {i} if i in candidates else output_deps
    dead = {i for i in range(size) if i not in used_after and i not in affect_others and i not in reach_sinks}
    for group in _connected_groups(tracked, root, (cond_param, body_param), size):
        if all(i in candidates and i not in reach_sinks for i in group):
            dead |= group
    return sorted(dead)


def _rewritable(loop: Instruction) -> bool:
    body: Computation = loop.attrs["body"]
    return (loop.shape.is_tuple and body.root.opcode == "tuple" and not body.root.users
            and len(body.root.operands) == len(loop.shape.tuple_shapes))


def _indices_used_after(loop: Instruction, size: int) -> set[int]:
    if loop is loop.parent.root or any(u.opcode != "get-tuple-element" for u in loop.users):
        return set(range(size))
    return {u.attrs["index"] for u in loop.users}


def _passes_through(root: Instruction, param: Instruction, index: int) -> bool:
    out = root.operands[index]
    return out.opcode == "get-tuple-element" and out.operands[0] is param and out.attrs["index"] == index


def _candidate_dependencies(tracked: list[Instruction], params, candidates: set[int]) -> dict[int, set[int]]:
    """id(inst) -> the candidate state indices it depends on within one iteration."""
    deps: dict[int, set[int]] = {}
    for inst in tracked:  # operands come first (post order)
        if inst.opcode == "get-tuple-element" and inst.operands[0] in params:
            index = inst.attrs["index"]
            deps[id(inst)] = {index} if index in candidates else set()
        else:
            deps[id(inst)] = set().union(*(deps.get(id(op), set()) for op in inst.operands))
    return deps


def _connected_groups(tracked: list[Instruction], root: Instruction, params, size: int) -> list[set[int]]:
    """State indices grouped by the connected components of the instructions that read/produce them."""
    parent: dict[int, int] = {id(i): id(i) for i in tracked}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: int, b: int) -> None:
        parent[find(a)] = find(b)

    for inst in tracked:
        if inst.opcode == "get-tuple-element" and inst.operands[0] in params:
            output = root.operands[inst.attrs["index"]]
            if output is not inst and id(output) in parent:
                union(id(output), id(inst))
        else:
            for op in inst.operands:
                if id(op) in parent:
                    union(id(op), id(inst))
    groups: dict[int, set[int]] = {}
    for i in range(size):
        if id(root.operands[i]) in parent:
            groups.setdefault(find(id(root.operands[i])), set()).add(i)
        else:
            groups.setdefault(-1 - i, set()).add(i)  # not analysable: a group of its own
    for inst in tracked:
        if inst.opcode == "get-tuple-element" and inst.operands[0] in params:
            groups.setdefault(find(id(inst)), set()).add(inst.attrs["index"])
    return list(groups.values())


def try_remove_dead_elements(loop: Instruction, rewriter: Rewriter) -> bool:
    dead = dead_state_indices(loop)
    if not dead:
        return False
    keep = [i for i in range(len(loop.shape.tuple_shapes)) if i not in set(dead)]
    rebuild_while(loop, rewriter, keep)
    return True


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
    new_init = rewriter.add(comp, "tuple", new_shape, init_elements, before=loop, like=init)
    new_loop = rewriter.add(comp, "while", new_shape, [new_init], {"condition": new_cond, "body": new_body},
                            before=loop, name=loop.name, like=loop)
    new_loop.frontend_attributes = loop.frontend_attributes
    new_loop.backend_config = loop.backend_config
    results = [rewriter.add(comp, "get-tuple-element", old_shapes[i], [new_loop], {"index": index_map[i]},
                            before=loop, like=loop)
               if i in index_map else _element(comp, init, i, rewriter, loop)
               for i in range(len(old_shapes))]
    rebuilt = rewriter.add(comp, "tuple", loop.shape, results, before=loop, like=loop)
    replace(loop, rebuilt)
    return new_loop, body_map


def _element(comp: Computation, tup: Instruction, index: int, rewriter: Rewriter, before: Instruction):
    if tup.opcode == "tuple":
        return tup.operands[index]
    return rewriter.add(comp, "get-tuple-element", tup.shape.tuple_shapes[index], [tup], {"index": index},
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
    new_param = Instruction(clone_name(param.name, names), "parameter", new_shape,
                            attrs={"parameter_number": 0}, loc=param.loc)
    new_param.copy_generic_attributes_from(param)
    new_param.sharding = None
    copy.add(new_param)
    mapping: dict[int, Instruction] = {}
    dropped: set[int] = set()
    is_body = root_keep is not None

    def gte(index: int, shape: Shape, like: Optional[Instruction] = None) -> Instruction:
        return rewriter.add(copy, "get-tuple-element", shape, [new_param], {"index": index}, like=like or param)

    old_view: Optional[Instruction] = None
    if any(u.opcode != "get-tuple-element" for u in param.users):
        elements = [gte(index_map[i], param.shape.tuple_shapes[i]) for i in range(old_size)]
        old_view = rewriter.add(copy, "tuple", param.shape, elements, like=param)
    mapping[id(param)] = old_view if old_view is not None else new_param
    base = len(root_keep or ())
    extras = [gte(base + k, new_shape.tuple_shapes[base + k]) for k in range(extra_count)]

    for inst in comp.instructions:
        if inst is param or (is_body and inst is comp.root):
            continue
        if inst.opcode == "get-tuple-element" and inst.operands[0] is param:
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
        root = Instruction(clone_name(old_root.name, names), "tuple", new_shape, elements, loc=old_root.loc)
        root.metadata = old_root.metadata
        copy.root = copy.add(root)
    else:
        copy.root = mapping[id(comp.root)]
    return copy, mapping
