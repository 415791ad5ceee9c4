"""Shape rules of ops that run computations: map, scan, call, while, conditional, fusion,
custom-call, the async wrappers (async-start/update/done and their sugar), copy-start/done."""
from __future__ import annotations

from typing import Optional

from ..attributes import format_int_list
from ..opcodes import Op, Trait, ops_with
from ..shapes import PRED, S32, U32, Shape
from .computations import (callee, check_operands_match_parameters, check_returns_pred, need_params, parameter_note,
                           parameter_numbered, root_note, signature_for)
from .core import (SHAPE_RULES, OpView, array_shape, compatible, counted, dims_in_range, fmt, scalar_shape,
                   subshape)


# --------------------------------------------------------------------------- computations applied element by element


@SHAPE_RULES.register(Op.MAP)
def _map(op: OpView) -> Shape:
    shapes = [op.array(i) for i in range(op.n)]
    op.equal_dims(shapes)
    dims = op.int_list("dimensions")
    if dims and list(dims) != list(range(shapes[0].rank)):
        raise op.fail(f"'map' applies to every dimension: dimensions= must be "
                      f"{format_int_list(range(shapes[0].rank))}, got {format_int_list(dims)}", attribute="dimensions")
    comp, params, result = callee(op, "to_apply")
    need_params(op, comp, params, op.n, "to_apply", "one per operand")
    for k, (p, s) in enumerate(zip(params, shapes)):
        if not compatible(p, scalar_shape(s.element_type)):
            raise op.fail(f"to_apply computation %{comp.name}: parameter {k} is {fmt(p)} but operand {k} has "
                          f"element type {s.element_type}, so it must be {fmt(scalar_shape(s.element_type))}",
                          attribute="to_apply", **parameter_note(comp, k))
    if not (result.is_array and result.rank == 0):
        raise op.fail(f"to_apply computation %{comp.name} of 'map' must return a scalar, but returns {fmt(result)}",
                      attribute="to_apply", **root_note(comp))
    return array_shape(result.element_type, shapes[0].dims)


@SHAPE_RULES.register(Op.SCAN)
def _scan(op: OpView) -> Shape:
    carries = op.int_attr("num_carries")
    if not 0 <= carries <= op.n:
        raise op.fail(f"num_carries={carries} must be in [0, {op.n}] (the operand count)", attribute="num_carries")
    count = op.n - carries
    d = op.one_dimension()
    inputs = [op.array(i, "input") for i in range(count)]
    for s in inputs:
        dims_in_range(op, [d], s.rank, "dimensions", f"the input {fmt(s)}")
    length = inputs[0].dims[d] if inputs else None
    for i, s in enumerate(inputs):
        if s.dims[d] != length:
            raise op.fail(f"the inputs of 'scan' must have the same size along dimension {d}: operand 0 is "
                          f"{fmt(inputs[0])} but operand {i} is {fmt(s)}", operand=i)
    comp, params, result = callee(op, "to_apply")
    need_params(op, comp, params, op.n, "to_apply", f"{count} inputs then {carries} carries")
    for i in range(op.n):
        shape = op.shapes[i]
        want = array_shape(shape.element_type, shape.dims[:d] + shape.dims[d + 1:]) if i < count else shape
        if not compatible(params[i], want):
            raise op.fail(f"to_apply computation %{comp.name}: parameter {i} is {fmt(params[i])} but must be "
                          f"{fmt(want)}", attribute="to_apply", **parameter_note(comp, i))
    return _scan_result(op, comp, result, carries, d, length)


def _scan_result(op: OpView, comp, result: Shape, carries: int, d: int, length: Optional[int]) -> Shape:
    """The body's outputs stacked along dimension d, then the final carries."""
    count = op.n - carries
    parts = list(result.tuple_shapes) if result.is_tuple else [result]
    if len(parts) < carries:
        raise op.fail(f"to_apply computation %{comp.name} returns {len(parts)} values but there are {carries} "
                      f"carries", attribute="to_apply", **root_note(comp))
    outputs, new_carries = parts[:len(parts) - carries], parts[len(parts) - carries:]
    for k, (new, old) in enumerate(zip(new_carries, op.shapes[count:])):
        if not compatible(new, old):
            raise op.fail(f"to_apply computation %{comp.name} returns carry {k} as {fmt(new)} but it starts as "
                          f"{fmt(old)}", attribute="to_apply", **root_note(comp))
    if length is None:
        raise op.fail("'scan' needs at least one input to scan over")
    stacked = []
    for o in outputs:
        if not o.is_array or o.rank < d:
            raise op.fail(f"to_apply computation %{comp.name} returns the output {fmt(o)}, which cannot be "
                          f"stacked along dimension {d}", attribute="to_apply", **root_note(comp))
        stacked.append(array_shape(o.element_type, o.dims[:d] + (length,) + o.dims[d:]))
    if not result.is_tuple and carries == 0:
        return stacked[0]
    return Shape.tuple_of(stacked + list(new_carries))


# --------------------------------------------------------------------------- calls and control flow


@SHAPE_RULES.register(Op.CALL)
def _call(op: OpView) -> Shape:
    comp, params, result = callee(op, "to_apply")
    need_params(op, comp, params, op.n, "to_apply", f"'call' passes {counted(op.n, 'operand')}")
    check_operands_match_parameters(op, comp, params, "to_apply")
    return result


@SHAPE_RULES.register(Op.WHILE)
def _while(op: OpView) -> Shape:
    init = op.shapes[0]
    results = {}
    for attribute in ("condition", "body"):
        comp, params, result = callee(op, attribute)
        need_params(op, comp, params, 1, attribute)
        check_operands_match_parameters(op, comp, params, attribute)
        results[attribute] = (comp, result)
    cond, cond_result = results["condition"]
    check_returns_pred(op, cond, cond_result, "condition", f"condition computation %{cond.name}")
    body, body_result = results["body"]
    if not compatible(body_result, init):
        raise op.fail(f"body computation %{body.name} must return the loop state {fmt(init)}, but returns "
                      f"{fmt(body_result)}", attribute="body", **root_note(body))
    return init


@SHAPE_RULES.register(Op.CONDITIONAL)
def _conditional(op: OpView) -> Shape:
    branches, names, attrs = _branches(op)
    op.need_operands(len(branches) + 1, "the selector and one operand per branch")
    result = None
    for j, (comp, name, attribute) in enumerate(zip(branches, names, attrs)):
        params, root = signature_for(comp, attribute)
        if len(params) != 1:
            raise op.fail(f"{name} computation %{comp.name} must take 1 parameter, but it takes {len(params)}",
                          attribute=attribute, related=comp)
        if not compatible(op.shapes[j + 1], params[0]):
            raise op.fail(f"operand {j + 1} of 'conditional' has shape {fmt(op.shapes[j + 1])} but the parameter of "
                          f"{name} computation %{comp.name} has shape {fmt(params[0])}", operand=j + 1,
                          related=parameter_numbered(comp, 0), note=f"the parameter of %{comp.name} is declared here")
        if result is None:
            result = root
        elif not compatible(root, result):
            raise op.fail(f"all branches of 'conditional' must return the same shape: %{branches[0].name} returns "
                          f"{fmt(result)} but %{comp.name} returns {fmt(root)}", attribute=attribute,
                          **root_note(comp))
    return result


def _branches(op: OpView) -> tuple[list, list[str], list[str]]:
    """(branch computations, their names in messages, the attributes naming them), after checking
    the selector: an s32 branch index (or a pred with two branches), or a pred for true/false."""
    selector = op.shapes[0]
    if op.has("branch_computations"):
        if op.has("true_computation") or op.has("false_computation"):
            raise op.fail("'conditional' takes either branch_computations= or true_computation=/false_computation=, "
                          "not both", attribute="branch_computations")
        branches = list(op.attr("branch_computations"))
        names = [f"branch_computations[{j}]" for j in range(len(branches))]
        attrs = ["branch_computations"] * len(branches)
        if compatible(selector, scalar_shape(PRED)):  # (XLA's parser refuses this form too)
            raise op.fail("a 'conditional' on a pred[] takes true_computation= and false_computation=, not "
                          "branch_computations=", attribute="branch_computations")
        if not compatible(selector, scalar_shape(S32)):
            raise op.fail(f"the branch index of 'conditional' with branch_computations= must be s32[], but operand 0 "
                          f"is {fmt(selector)}", operand=0)
        if not branches:
            raise op.fail("'conditional' needs at least one branch computation", attribute="branch_computations")
    else:
        attrs = ["true_computation", "false_computation"]
        branches = [op.computation(a) for a in attrs]
        names = attrs
        if not compatible(selector, scalar_shape(PRED)):
            raise op.fail(f"the predicate of 'conditional' with true_computation=/false_computation= must be "
                          f"pred[], but operand 0 is {fmt(selector)}", operand=0)
    return branches, names, attrs


# --------------------------------------------------------------------------- fusion and custom calls


@SHAPE_RULES.register(Op.FUSION)
def _fusion(op: OpView) -> Shape:
    comp, params, result = callee(op, "calls")
    if len(params) > op.n:
        raise op.fail(f"fused computation %{comp.name} takes {counted(len(params), 'parameter')} but 'fusion' "
                      f"passes only {counted(op.n, 'operand')}", attribute="calls", related=comp)
    check_operands_match_parameters(op, comp, params, "fused")
    if op.written is not None and not compatible(op.written, result):
        raise op.fail(f"'fusion' is written as {fmt(op.written)} but its fused computation %{comp.name} returns "
                      f"{fmt(result)}", **root_note(comp))
    _check_aliasing(op, result)
    return result


def _check_aliasing(op: OpView, result: Shape) -> None:
    for entry in op.inst.attrs.get("output_to_operand_aliasing") or ():
        where = {"attribute": "output_to_operand_aliasing"}
        if not 0 <= entry.operand < op.n:
            raise op.fail(f"output_to_operand_aliasing names operand {entry.operand}, but '{op.opcode}' has "
                          f"{counted(op.n, 'operand')}", **where)
        out_index, operand_index = format_int_list(entry.output_index), format_int_list(entry.operand_index)
        out = subshape(result, entry.output_index)
        operand = subshape(op.shapes[entry.operand], entry.operand_index)
        if out is None:
            raise op.fail(f"output_to_operand_aliasing: {out_index} is not an index into the result {fmt(result)}",
                          **where)
        if operand is None:
            raise op.fail(f"output_to_operand_aliasing: {operand_index} is not an index into operand "
                          f"{entry.operand} {fmt(op.shapes[entry.operand])}", **where)
        if not compatible(out, operand):
            raise op.fail(f"output_to_operand_aliasing: result {out_index} is {fmt(out)} but operand "
                          f"{entry.operand} at {operand_index} is {fmt(operand)}; aliased buffers need "
                          f"equal shapes", **where)


@SHAPE_RULES.register(Op.CUSTOM_CALL)
def _custom_call(op: OpView) -> Shape:
    result = op.need_written()
    constraints = op.inst.attrs.get("operand_layout_constraints")
    if constraints is not None:
        if len(constraints) != op.n:
            raise op.fail(f"operand_layout_constraints lists {counted(len(constraints), 'shape')} but 'custom-call' "
                          f"has {counted(op.n, 'operand')}", attribute="operand_layout_constraints")
        for i, constraint in enumerate(constraints):
            if not compatible(constraint, op.shapes[i]):
                raise op.fail(f"operand_layout_constraints gives operand {i} the shape {fmt(constraint)} but the "
                              f"operand is {fmt(op.shapes[i])}", attribute="operand_layout_constraints", operand=i)
    if op.has("to_apply") and op.has("called_computations"):
        raise op.fail("'custom-call' takes to_apply= or called_computations=, not both", attribute="to_apply")
    _check_aliasing(op, result)
    return result


# --------------------------------------------------------------------------- asynchronous ops


def _async_computation(op: OpView):
    comp = op.inst.attrs.get("calls")
    if comp is None and op.opcode != Op.ASYNC_START and op.n:
        comp = _started_computation(op.inst.operands[0])
    if comp is None:
        raise op.fail(f"'{op.opcode}' requires attribute 'calls='", attribute="calls")
    params, result = signature_for(comp, "calls")
    return comp, params, result


def _started_computation(inst):
    """The computation an async chain runs: from the operand back through async-update to the start."""
    seen = 0
    while inst is not None and seen < 1000:
        if inst.attrs.get("calls") is not None:
            return inst.attrs["calls"]
        if inst.opcode != Op.ASYNC_UPDATE or not inst.operands:
            return None
        inst, seen = inst.operands[0], seen + 1
    return None


def _check_async_shape(op: OpView, shape: Shape, comp, params: list[Shape], result: Shape, what: str) -> None:
    if not (shape.is_tuple and len(shape.tuple_shapes) >= 2):
        raise op.fail(f"{what} must be a tuple ((operands), result, context...) with at least 2 elements, but it is "
                      f"{fmt(shape)}")
    if not compatible(shape.tuple_shapes[0], Shape.tuple_of(params)):
        raise op.fail(f"element 0 of {what} is {fmt(shape.tuple_shapes[0])} but the parameters of %{comp.name} are "
                      f"{fmt(Shape.tuple_of(params))}", attribute="calls", related=comp)
    if not compatible(shape.tuple_shapes[1], result):
        raise op.fail(f"element 1 of {what} is {fmt(shape.tuple_shapes[1])} but %{comp.name} returns {fmt(result)}",
                      attribute="calls", **root_note(comp))


@SHAPE_RULES.register(Op.ASYNC_START)
def _async_start(op: OpView) -> Shape:
    comp, params, result = _async_computation(op)
    others = [i for i in getattr(comp, "instructions", ()) if i.opcode != Op.PARAMETER and i is not comp.root]
    if others:  # (XLA's verifier: an asynchronous computation wraps one instruction)
        raise op.fail(f"the computation %{comp.name} that 'async-start' runs must hold only its parameters and its "
                      f"root, but it also has %{others[0].name}", attribute="calls", related=comp)
    need_params(op, comp, params, op.n, "calls", f"'async-start' passes {counted(op.n, 'operand')}")
    check_operands_match_parameters(op, comp, params, "the async")
    if op.written is None:
        return Shape.tuple_of([Shape.tuple_of(params), result])
    _check_async_shape(op, op.written, comp, params, result, "the result of 'async-start'")
    return op.written


# What an async-update or async-done continues.
_IN_FLIGHT = ops_with(Trait.ASYNC_WRAPPER) - {Op.ASYNC_DONE}


def _async_operand(op: OpView, comp) -> None:
    source = op.inst.operands[0]
    if source.opcode not in _IN_FLIGHT:
        raise op.fail(f"operand 0 of '{op.opcode}' must be an async-start or async-update, but it is a "
                      f"'{source.opcode}'", operand=0)
    source_comp = source.attrs.get("calls")
    if source_comp is not None and source_comp is not comp:
        raise op.fail(f"'{op.opcode}' calls %{comp.name} but its operand runs %{source_comp.name}", attribute="calls",
                      operand=0)


def _continued(op: OpView) -> Shape:
    """The checked (operands, result, context...) tuple an async-update or async-done continues."""
    comp, params, result = _async_computation(op)
    _async_operand(op, comp)
    _check_async_shape(op, op.shapes[0], comp, params, result, f"the operand of '{op.inst.opcode}'")
    return op.shapes[0]


@SHAPE_RULES.register(Op.ASYNC_UPDATE)
def _async_update(op: OpView) -> Shape:
    return _continued(op)


@SHAPE_RULES.register(Op.ASYNC_DONE)
def _async_done(op: OpView) -> Shape:
    return _continued(op).tuple_shapes[1]


# --------------------------------------------------------------------------- asynchronous copies


@SHAPE_RULES.register(Op.COPY_START)
def _copy_start(op: OpView) -> Shape:
    operand = op.shapes[0]
    written = op.written
    if written is not None and written.is_tuple and len(written.tuple_shapes) == 3:
        # Destination and source may differ in layout / memory space only.
        return Shape.tuple_of([operand, operand, written.tuple_shapes[2]])
    return Shape.tuple_of([operand, operand, scalar_shape(U32)])


@SHAPE_RULES.register(Op.COPY_DONE)
def _copy_done(op: OpView) -> Shape:
    context = op.shapes[0]
    if not (context.is_tuple and len(context.tuple_shapes) >= 2):
        raise op.fail(f"operand 0 of 'copy-done' must be the (destination, source, context) tuple of a copy-start, "
                      f"but it is {fmt(context)}", operand=0)
    dest, src = context.tuple_shapes[0], context.tuple_shapes[1]
    if not compatible(dest, src):
        raise op.fail(f"the destination {fmt(dest)} and source {fmt(src)} of the copy must have the same shape",
                      operand=0)
    return dest
