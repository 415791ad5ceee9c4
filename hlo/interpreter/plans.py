"""Plans: computations compiled for the evaluator.

Each computation is compiled once into a `Plan`: its live instructions in an order
where operands come first, each with the handler for its opcode (HANDLERS) and the
slots of its operands. Calls and fusions are inlined, pass-through ops cost nothing,
and values computed from constants alone are computed once per evaluator. A plan then
becomes one generated Python function (plan_code.py): one line per step, no dispatch
loop, and where the declared types make it exact, the numpy call itself instead of the
handler (the handlers' writers, see handlers.py).

An *observed* plan (for an Evaluator with an observer) keeps calls and fusions as steps
of their own and broadcasts whole, so that every instruction's value is there to look at.

A called computation whose every instruction is a scalar elementwise op is also planned
*batched* (`vectorisable`): evaluated on whole arrays of scalars at once, for the kernels
that apply it per element (reduce, sort, scatter, map ...).
"""
from __future__ import annotations

import collections
import threading
from typing import Any, Callable, Optional

from ..analysis.effects import has_side_effect
from ..ir import Computation, Instruction
from ..opcodes import OPCODES, Category, Op, Trait, has_trait, ops_with
from ..runtime.resources import check_allocation
from ..shapes import Shape
from .data_movement import broadcast_compact
from .dynamic import dynamic_handler, involves_dynamic
from .handlers import HANDLERS, Source, identity, unsupported
from .plan_code import PlanCode, Specialiser
from .values import as_array

# Categories of ops whose value depends on their operands alone.
_PURE_CATEGORIES = frozenset({Category.ELEMENTWISE, Category.DATA_MOVEMENT, Category.INDEXING,
                              Category.DOT_CONV, Category.REDUCTION})


class Plan:
    """A computation compiled for execution.

    Values live in numbered slots. `static_steps` compute the slots that depend on
    constants only (run once per evaluator: constant folding at run time, which
    pays in loop bodies), `steps` all the others, in dependency order. A step is
    (handler, instruction, operand slots, result slot). Calls and fusions are
    inlined, instructions that pass a value through unchanged share their
    operand's slot, a reshape of a reshape reads the original, steps whose value
    nothing needs are dropped, and broadcasts that only feed elementwise ops leave
    the broadcasting to numpy: fewer steps, less per-instruction overhead.
    """

    __slots__ = ("computation", "batched", "observed", "steps", "static_steps", "param_slots", "root_slot", "size",
                 "code", "ran")

    def __init__(self, comp: Computation, batched: bool, observed: bool = False):
        builder = _PlanBuilder(batched, observed)
        self.batched = batched
        self.observed = observed
        self.code: Optional[PlanCode] = None  # the steps as generated Python, built on the second run
        self.ran = False  # whether an evaluator has run the plan (step by step) yet
        params = {p.attrs["parameter_number"]: builder.new_slot(p.shape) for p in comp.parameters}
        self.computation = comp
        self.root_slot = builder.add_computation(comp, params)
        self.param_slots = [(slot, number) for number, slot in params.items()]
        self.static_steps, self.steps = builder.finish(self.root_slot)
        self.size = builder.size


# --------------------------------------------------------------------------- building plans

class _PlanBuilder:
    def __init__(self, batched: bool, observed: bool = False):
        self.batched = batched
        self.observed = observed
        self.size = 0
        self.steps: list[tuple] = []
        self.static: set[int] = set()
        self.dims: dict[int, tuple[int, ...]] = {}             # slot -> dims of the array it holds
        self.tuple_parts: dict[int, tuple[int, ...]] = {}      # slot of a tuple step -> its operand slots
        self.reshape_source: dict[int, int] = {}               # slot of a reshape step -> slot it reads

    def new_slot(self, shape: Optional[Shape] = None) -> int:
        slot = self.size
        self.size += 1
        if shape is not None and not shape.is_tuple:
            self.dims[slot] = tuple(shape.dims)
        return slot

    def add_computation(self, comp: Computation, param_slots: dict[int, int]) -> int:
        """Add steps for comp's live instructions; the slot of its root."""
        live = _live_instructions(comp)
        slot_of: dict[int, int] = {}
        for inst in comp.post_order():
            if id(inst) not in live:
                continue
            if inst.opcode == Op.PARAMETER:
                slot_of[id(inst)] = param_slots[inst.attrs["parameter_number"]]
            else:
                slot_of[id(inst)] = self.add_instruction(inst, [slot_of[id(op)] for op in inst.operands])
        return slot_of[id(comp.root)]

    def add_instruction(self, inst: Instruction, operands: list[int]) -> int:
        if HANDLERS.details(inst.opcode).get("inline") and not self.observed:
            (callee,) = inst.called_computations()
            return self.add_computation(callee, dict(enumerate(operands)))
        alias = self._alias(inst, operands)
        if alias is not None:
            return alias
        dynamic = involves_dynamic(inst)
        if inst.opcode == Op.RESHAPE and operands[0] in self.reshape_source and not dynamic:
            source = self.reshape_source[operands[0]]
            if self.dims.get(source) == tuple(inst.shape.dims):
                return source  # reshaped back to where it came from
            operands = [source]
        out = self.new_slot(inst.shape)
        handler = _handler_for(inst, self.batched)
        if not self.batched and _allocates(inst):
            handler = _with_memory_check(inst, handler)
        self.steps.append((handler, inst, tuple(operands), out))
        if self._is_static(inst, operands):
            self.static.add(out)
        if inst.opcode == Op.TUPLE:
            self.tuple_parts[out] = tuple(operands)
        elif inst.opcode == Op.RESHAPE and not dynamic:
            self.reshape_source[out] = operands[0]
        return out

    def _alias(self, inst: Instruction, operands: list[int]) -> Optional[int]:
        """The operand slot holding inst's value when inst passes it through unchanged."""
        op = inst.opcode
        if has_trait(op, Trait.PASS_THROUGH):
            return operands[0]
        if op == Op.GET_TUPLE_ELEMENT:
            parts = self.tuple_parts.get(operands[0])
            return parts[inst.attrs["index"]] if parts is not None else None
        if not operands or not has_trait(op, Trait.SAME_VALUE_IF_SAME_SHAPE) or involves_dynamic(inst):
            return None
        source, result = inst.operands[0].shape, inst.shape
        if source is None or result is None or source.is_tuple or result.is_tuple:
            return None
        if source.element_type is not result.element_type or source.dims != result.dims:
            return None
        if self.batched and result.rank == 0:
            return operands[0]  # vectorised computations: the identity on a batch of scalars
        same_value = _SAME_VALUE_WHEN.get(op)
        return operands[0] if same_value is not None and same_value(inst) else None

    def _is_static(self, inst: Instruction, operands: list[int]) -> bool:
        if has_trait(inst.opcode, Trait.RUN_INDEPENDENT_LEAF):
            return True
        info = OPCODES.get(inst.opcode)
        return (info is not None and bool(operands) and info.category in _PURE_CATEGORIES
                and all(o in self.static for o in operands) and not _calls_impure(inst))

    def finish(self, root: int) -> tuple[list[tuple], list[tuple]]:
        """(static steps, other steps) that the root or a side effect needs, in order."""
        needed = {root}
        kept = []
        for step in reversed(self.steps):
            if step[3] in needed or has_side_effect(step[1]):
                kept.append(step)
                needed.update(step[2])
        kept.reverse()
        if not self.batched and not self.observed:
            kept = _compact_broadcasts(kept, root)
        return [s for s in kept if s[3] in self.static], [s for s in kept if s[3] not in self.static]


def _dimensions_in_order(inst: Instruction) -> bool:
    return tuple(inst.attrs.get("dimensions", ())) == tuple(range(inst.shape.rank))


def _same_layout(inst: Instruction) -> bool:
    return inst.operands[0].shape.minor_to_major() == inst.shape.minor_to_major()


# When an op whose operand and result shapes are equal passes its operand through (the ops
# of Trait.SAME_VALUE_IF_SAME_SHAPE not listed, reverse, only do so on rank-0 batches).
_SAME_VALUE_WHEN: dict[Op, Callable[[Instruction], bool]] = {
    Op.RESHAPE: lambda inst: True,
    Op.CONVERT: lambda inst: True,
    Op.BROADCAST: _dimensions_in_order,
    Op.TRANSPOSE: _dimensions_in_order,
    Op.BITCAST: _same_layout,
}


def _compact_broadcasts(steps: list[tuple], root: int) -> list[tuple]:
    """Let broadcasts that only feed elementwise ops produce their operand with size-1
    dimensions instead of a full array: numpy broadcasts it inside the consumer."""
    users: dict[int, list[tuple]] = collections.defaultdict(list)
    for step in steps:
        for slot in step[2]:
            users[slot].append(step)
    candidates = {step[3] for step in steps if step[1].opcode == Op.BROADCAST and not involves_dynamic(step[1])} - {root}

    def feeds_only_elementwise(slot: int) -> bool:
        return bool(users[slot]) and all(
            HANDLERS.details(user[1].opcode).get("broadcasts") and any(o not in candidates for o in user[2])
            for user in users[slot])

    compact = {slot for slot in candidates if feeds_only_elementwise(slot)}
    return [(broadcast_compact, inst, ops, out) if out in compact else (handler, inst, ops, out)
            for handler, inst, ops, out in steps]


def _calls_impure(inst: Instruction) -> bool:
    """True if a computation inst calls contains anything but pure ops."""
    stack, seen = list(inst.called_computations()), set()
    while stack:
        comp = stack.pop()
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        for i in comp.instructions:
            info = OPCODES.get(i.opcode)
            if info is None or not (info.category in _PURE_CATEGORIES or info.category is Category.LEAF
                                    or HANDLERS.details(i.opcode).get("pure_if_callees_are")):
                return True
            stack.extend(i.called_computations())
    return False


def _live_instructions(comp: Computation) -> set[int]:
    """ids of the instructions the root or a side effect depends on."""
    stack = [comp.root] + [i for i in comp.instructions if has_side_effect(i)]
    live: set[int] = set()
    while stack:
        inst = stack.pop()
        if id(inst) in live:
            continue
        live.add(id(inst))
        stack.extend(inst.operands)
        stack.extend(inst.control_predecessors)
    return live


def _handler_for(inst: Instruction, batched: bool) -> Callable:
    if batched and has_trait(inst.opcode, Trait.SCALAR_IDENTITY):
        if inst.opcode == Op.BITCAST and inst.shape.element_type is not inst.operands[0].shape.element_type:
            return HANDLERS[Op.BITCAST_CONVERT]  # a scalar bitcast between types of one width
        return identity
    handler = HANDLERS.get(inst.opcode, unsupported)
    if not batched and involves_dynamic(inst):  # runtime sizes below the bounds (dynamic.py)
        return dynamic_handler(inst, handler) or handler
    return handler


# --------------------------------------------------------------------------- memory

# Results smaller than this are made without asking: the check would cost more than they do.
CHECKED_BYTES = 1 << 16
_NO_ALLOCATION = (ops_with(Trait.NO_CODE) | ops_with(Trait.PASS_THROUGH) | ops_with(Trait.RUNS_COMPUTATIONS_AS_CODE)
                  | ops_with(Trait.ASYNC_WRAPPER))


def _allocates(inst: Instruction) -> bool:
    """True if the step makes a result big enough to check against the memory limit first."""
    return (inst.opcode not in _NO_ALLOCATION and inst.shape is not None
            and inst.shape.byte_size() > CHECKED_BYTES)


def _with_memory_check(inst: Instruction, handler: Callable) -> Callable:
    """The handler, after checking that the result fits in memory (resources.py); it has no
    writer, so plans call it rather than a numpy expression."""
    nbytes = inst.shape.byte_size()
    what = f"the result {inst.shape.without_layout()} of '{inst.opcode}'"

    def run(ev, inst, ops):
        check_allocation(nbytes, what, inst.loc)
        return handler(ev, inst, ops)
    return run


# --------------------------------------------------------------------------- vectorised computations

def _is_scalar_shape(shape: Shape) -> bool:
    if shape.is_tuple:
        return all(_is_scalar_shape(s) for s in shape.tuple_shapes)
    return shape.is_token or shape.rank == 0


def vectorisable(comp: Computation, seen: Optional[set] = None) -> bool:
    """True if evaluating comp on arrays of scalars gives the per-element results: every
    instruction is a scalar elementwise op, the identity on scalars, or computes nothing
    (parameters, constants, tuples)."""
    seen = set() if seen is None else seen
    if id(comp) in seen:
        return True
    seen.add(id(comp))
    for inst in comp.instructions:
        if inst.shape is None or not _is_scalar_shape(inst.shape):
            return False
        if any(op.shape is None or not _is_scalar_shape(op.shape) for op in inst.operands):
            return False
        info = OPCODES.get(inst.opcode)
        if info is None:
            return False
        if inst.opcode == Op.CALL:
            if not vectorisable(inst.attrs["to_apply"], seen):
                return False
        elif not (info.is_elementwise or info.has(Trait.SCALAR_IDENTITY) or info.has(Trait.NO_CODE)):
            return False
    return True


# --------------------------------------------------------------------------- generated code

def _specialiser(batched: bool) -> Specialiser:
    """PlanCode's specialise: a step as the expression its handler's writer gives, where
    the declared types make it exactly what the handler computes (the handlers take the
    same fast paths after checking the same types at run time); None keeps the handler call.
    Batched plans hold batches of scalars: only writers that do not look at shapes apply."""
    def specialise(step: tuple, args: list[str], bind: Callable[[Any], str], setup: Callable[[str], str],
                   statics: frozenset) -> Optional[str]:
        handler, inst, operands, _ = step
        writer = getattr(handler, "writer", None)
        if writer is None:
            return None
        if writer.any_value:
            return writer.write(Source(inst, args, (), bind, setup))
        shape = inst.shape
        in_shapes = [op.shape for op in inst.operands]
        if batched or shape is None or not shape.is_array or any(s is None or not s.is_array for s in in_shapes):
            return None
        static_args = [a for a, slot in zip(args, operands) if slot in statics]
        expr = writer.write(Source(inst, args, [s.element_type.dtype for s in in_shapes], bind, setup, static_args))
        if expr is not None and shape.rank == 0 and not writer.gives_array:
            expr = f"{bind(as_array)}({expr})"  # numpy ufuncs give 0-d results as scalars
        return expr
    return specialise


_SPECIALISE = {False: _specialiser(False), True: _specialiser(True)}


# --------------------------------------------------------------------------- the plan cache

class Plans:
    """Plans and vectorisability, shared by the evaluators of every device.

    Valid while the module is not modified."""

    def __init__(self):
        self._plans: dict[tuple[int, bool], Plan] = {}
        self._vectorisable: dict[int, bool] = {}
        self._attributes: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def plan(self, comp: Computation, batched: bool = False, observed: bool = False) -> Plan:
        key = (comp, batched, observed)  # (computations hash by identity)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._plans[key] = Plan(comp, batched, observed)
        return plan

    def code(self, plan: Plan) -> PlanCode:
        """The plan's steps as one generated Python function (built once)."""
        if plan.code is None:
            with self._lock:
                if plan.code is None:
                    plan.code = PlanCode(plan.steps, plan.param_slots, plan.root_slot,
                                         _SPECIALISE[plan.batched], plan.computation.name)
        return plan.code

    def attribute(self, inst: Instruction, build: Callable) -> Any:
        """build(inst) (e.g. DotDims.of), computed once per instruction."""
        key = (id(inst), build)
        value = self._attributes.get(key)
        if value is None:
            value = self._attributes[key] = build(inst)
        return value

    def vectorisable(self, comp: Computation) -> bool:
        known = self._vectorisable.get(id(comp))
        if known is None:
            known = self._vectorisable[id(comp)] = vectorisable(comp)
        return known


def new_plans() -> Plans:
    """An empty plan cache to share between runs of one (unchanged) module."""
    return Plans()
