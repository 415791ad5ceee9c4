"""The control family: call, fusion, while, conditional, map, scan, custom-call, the async
wrappers and copy-start/copy-done.

Plans inline calls and fusions (their handler only runs where a plan did not); the other
ops run their called computations through the evaluator (`ev.execute` on a plan, or
`ev.combiner` for computations applied per element). A custom call runs the handler
registered for its target: the LAPACK targets (lapack.py) and "TopK" (sorting.py).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..diagnostics import error, written_name
from ..ir import Instruction
from ..opcodes import Op
from .handlers import HANDLERS
from .values import Value, async_start_value, scalar_int, zeros_of


# --------------------------------------------------------------------------- custom-call targets

CustomCallHandler = Callable[[Any, Instruction, list], Value]
CUSTOM_CALL_TARGETS: dict[str, CustomCallHandler] = {}


def register_custom_call(target: str, handler: CustomCallHandler) -> None:
    """Make `custom_call_target=target` runnable: handler(evaluator, inst, operands) -> value."""
    CUSTOM_CALL_TARGETS[target] = handler


@HANDLERS.register(Op.CUSTOM_CALL)
def run_custom_call(ev, inst, ops):
    target = inst.attrs["custom_call_target"]
    handler = CUSTOM_CALL_TARGETS.get(target)
    if handler is None:
        raise error(f"custom-call %{written_name(inst.loc, inst.name)}: target \"{target}\" is not known to the "
                    f"interpreter (known: LAPACK targets such as lapack_spotrf_ffi, and TopK)",
                    inst.attr_locs.get("custom_call_target", inst.loc))
    return handler(ev, inst, ops)


# --------------------------------------------------------------------------- calls and loops

@HANDLERS.register(Op.CALL, Op.FUSION, inline=True, pure_if_callees_are=True)
def run_call(ev, inst, ops):
    (callee,) = inst.called_computations()
    return ev.execute(ev.plans.plan(callee), ops)


@HANDLERS.register(Op.WHILE)
def run_while(ev, inst, ops):
    condition = ev.plans.plan(inst.attrs["condition"])
    body = ev.plans.plan(inst.attrs["body"])
    state = ops[0]
    while bool(ev.execute(condition, (state,))):
        state = ev.execute(body, (state,))
    return state


@HANDLERS.register(Op.CONDITIONAL)
def run_conditional(ev, inst, ops):
    selector = np.asarray(ops[0])
    branches = inst.attrs.get("branch_computations")
    if selector.dtype == np.bool_:
        index = 0 if bool(selector) else 1
        if not branches:
            branches = (inst.attrs["true_computation"], inst.attrs["false_computation"])
    else:
        index = scalar_int(selector)
        if not 0 <= index < len(branches):
            index = len(branches) - 1  # out of range runs the last branch, as in XLA
    return ev.execute(ev.plans.plan(branches[index]), (ops[1 + index],))


@HANDLERS.register(Op.MAP, pure_if_callees_are=True)
def run_map(ev, inst, ops):
    result = ev.combiner(inst.attrs["to_apply"])(*ops)[0]
    dtype = inst.shape.element_type.dtype
    return np.broadcast_to(np.asarray(result).astype(dtype, copy=False), inst.shape.dims)


@HANDLERS.register(Op.SCAN)
def run_scan(ev, inst, ops):
    k = inst.attrs["num_carries"]
    dim = inst.attrs["dimensions"][0]
    inputs, carries = list(ops[:len(ops) - k]), tuple(ops[len(ops) - k:])
    length = inputs[0].shape[dim] if inputs else 0
    plan = ev.plans.plan(inst.attrs["to_apply"])
    steps = range(length - 1, -1, -1) if inst.attrs.get("is_reverse") else range(length)
    per_step: dict[int, list] = {}
    for t in steps:
        result = ev.execute(plan, [np.take(x, t, axis=dim) for x in inputs] + list(carries))
        parts = result if isinstance(result, tuple) else (result,)
        outputs, carries = parts[:len(parts) - k], tuple(parts[len(parts) - k:])
        per_step[t] = list(outputs)
    output_shapes = inst.shape.tuple_shapes[:len(inst.shape.tuple_shapes) - k] if inst.shape.is_tuple \
        else (inst.shape,)
    stacked = [np.stack([per_step[t][j] for t in range(length)], axis=dim) if length
               else zeros_of(s) for j, s in enumerate(output_shapes)]
    if not inst.shape.is_tuple:
        return stacked[0]
    return tuple(stacked) + carries


# --------------------------------------------------------------------------- async wrappers

@HANDLERS.register(Op.ASYNC_START)
def run_async_start(ev, inst, ops):
    result = ev.execute(ev.plans.plan(inst.attrs["calls"]), ops)
    return async_start_value(inst.shape, tuple(ops), result)


@HANDLERS.register(Op.ASYNC_UPDATE)
def run_async_update(ev, inst, ops):
    return ops[0]


@HANDLERS.register(Op.ASYNC_DONE)
def run_async_done(ev, inst, ops):
    return ops[0][1]


@HANDLERS.register(Op.COPY_START)
def run_copy_start(ev, inst, ops):
    return async_start_value(inst.shape, ops[0], ops[0])


@HANDLERS.register(Op.COPY_DONE)
def run_copy_done(ev, inst, ops):
    return ops[0][0]
