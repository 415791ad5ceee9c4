"""The HLO evaluator: runs a parsed module with whole-array numpy kernels.

Values are numpy arrays in the storage dtype of their element type (logical,
row-major order whatever the layout), Python tuples for tuple shapes and the
`TOKEN` object for tokens. Values are never modified in place, so ops that do
not change data (copy, opt-barrier, add-dependency ...) return their operand.

Each computation is compiled once into a `_Plan`: its live instructions in an
order where operands come first, each with the handler for its opcode (one
small method per opcode or opcode family, found through `_HANDLERS`) and the
slots of its operands; calls and fusions are inlined, pass-through ops cost
nothing, and values computed from constants alone are computed once per
evaluator. A plan then becomes one generated Python function (plan.py): one
line per step, no dispatch loop, and where the declared types make it exact,
the numpy call itself instead of the handler (`_specialise`); profile mode runs
the steps one by one to time them. Called computations become `Combiner`s for
the kernels (reduce, sort, scatter, map ...): the computation is evaluated *vectorised*, on whole
arrays of scalars at once, when every instruction is a scalar elementwise op;
otherwise it is evaluated element by element. Where numpy computes exactly
what XLA does (IEEE f32/f64 arithmetic, wrapping integer arithmetic, matrix
products, reductions by add/max/min ...), handlers call numpy directly rather
than the general kernels.

Layouts only matter for `bitcast`, which reinterprets the physical buffer.
Collectives go through `hlo.interpreter.collectives` (one thread per device
when replicas x partitions > 1, see `run_devices`). Every kernel ValueError
becomes an HloError at the failing instruction, naming its opcode.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from ..attributes import ConvDims, DotDims, GatherDims, ReplicaGroups, ScatterDims, Window, WindowDim
from ..diagnostics import HloError, error
from ..ir import Computation, Instruction, Module
from ..opcodes import Category, OPCODES, Op
from ..shapes import Shape, primitive_type, type_of_dtype
from . import elementwise, indexing, linalg, linear, rng, sorting, windows
from .combiner import Combiner
from .plan import PlanCode
from ..runtime.values_io import TOKEN, Token

Value = Any  # np.ndarray | tuple[Value, ...] | Token




# --------------------------------------------------------------------------- value helpers

def leaves(value: Value) -> list:
    """Array (and token) leaves of a value, depth-first."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def zeros_of(shape: Shape) -> Value:
    """A zero value of `shape` (used for context elements of async tuples)."""
    if shape.is_tuple:
        return tuple(zeros_of(s) for s in shape.tuple_shapes)
    if shape.is_token or not shape.element_type.is_array_type:
        return TOKEN
    return np.zeros(shape.dims, dtype=shape.element_type.dtype)


def describe_value(value: Value) -> str:
    """HLO-like spelling of a value's type, for messages: f32[2,3], (s32[], pred[4])."""
    if isinstance(value, tuple):
        return "(" + ", ".join(describe_value(v) for v in value) + ")"
    if isinstance(value, Token):
        return "token[]"
    arr = np.asarray(value)
    try:
        name = type_of_dtype(arr.dtype).name
    except KeyError:
        name = str(arr.dtype)
    return f"{name}[{','.join(map(str, arr.shape))}]"


def value_matches(value: Value, shape: Shape) -> bool:
    """True if a value has exactly the element types and dimensions of `shape`."""
    if shape.is_tuple:
        return (isinstance(value, tuple) and len(value) == len(shape.tuple_shapes)
                and all(value_matches(v, s) for v, s in zip(value, shape.tuple_shapes)))
    if shape.is_token:
        return isinstance(value, Token)
    return (isinstance(value, np.ndarray) and value.dtype == shape.element_type.dtype
            and tuple(value.shape) == tuple(shape.dims))


def _as_array(x) -> np.ndarray:
    return x if type(x) is np.ndarray else np.asarray(x)


def _as_tuple_if(shape: Shape, results: Sequence[np.ndarray]) -> Value:
    """A kernel's list of results as the instruction's value (a tuple for tuple shapes)."""
    return tuple(results) if shape.is_tuple else results[0]


def _scalar_int(x) -> int:
    return int(np.asarray(x).reshape(-1)[0])


# --------------------------------------------------------------------------- plans

class _Plan:
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

    __slots__ = ("computation", "batched", "steps", "static_steps", "param_slots", "root_slot", "size", "code",
                 "ran")

    def __init__(self, comp: Computation, batched: bool):
        builder = _PlanBuilder(batched)
        self.batched = batched
        self.code: Optional[PlanCode] = None  # the steps as generated Python, built on the second run
        self.ran = False  # whether an evaluator has run the plan (step by step) yet
        params = {p.attrs["parameter_number"]: builder.new_slot(p.shape) for p in comp.parameters}
        self.computation = comp
        self.root_slot = builder.add_computation(comp, params)
        self.param_slots = [(slot, number) for number, slot in params.items()]
        self.static_steps, self.steps = builder.finish(self.root_slot)
        self.size = builder.size


# Instructions computed from these leaves alone give the same value in every run.
_STATIC_LEAVES = frozenset({"constant", "iota", "replica-id", "partition-id"})
_PURE_CATEGORIES = frozenset({Category.ELEMENTWISE, Category.DATA_MOVEMENT, Category.INDEXING,
                              Category.DOT_CONV, Category.REDUCTION})
_PASS_THROUGH = frozenset({"copy", "opt-barrier", "domain", "add-dependency"})


class _PlanBuilder:
    def __init__(self, batched: bool):
        self.batched = batched
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
        if inst.opcode in ("call", "fusion"):
            callee = inst.attrs["to_apply"] if inst.opcode == Op.CALL else inst.attrs["calls"]
            return self.add_computation(callee, dict(enumerate(operands)))
        alias = self._alias(inst, operands)
        if alias is not None:
            return alias
        if inst.opcode == Op.RESHAPE and operands[0] in self.reshape_source:
            source = self.reshape_source[operands[0]]
            if self.dims.get(source) == tuple(inst.shape.dims):
                return source  # reshaped back to where it came from
            operands = [source]
        out = self.new_slot(inst.shape)
        self.steps.append((_handler_for(inst, self.batched), inst, tuple(operands), out))
        if self._is_static(inst, operands):
            self.static.add(out)
        if inst.opcode == Op.TUPLE:
            self.tuple_parts[out] = tuple(operands)
        elif inst.opcode == Op.RESHAPE:
            self.reshape_source[out] = operands[0]
        return out

    def _alias(self, inst: Instruction, operands: list[int]) -> Optional[int]:
        """The operand slot holding inst's value when inst passes it through unchanged."""
        op = inst.opcode
        if op in _PASS_THROUGH:
            return operands[0]
        if op == Op.GET_TUPLE_ELEMENT:
            parts = self.tuple_parts.get(operands[0])
            return parts[inst.attrs["index"]] if parts is not None else None
        if not operands or op not in ("reshape", "broadcast", "transpose", "bitcast", "convert", "reverse"):
            return None
        source, result = inst.operands[0].shape, inst.shape
        if source is None or result is None or source.is_tuple or result.is_tuple:
            return None
        if source.element_type is not result.element_type or source.dims != result.dims:
            return None
        if self.batched and result.rank == 0:
            return operands[0]  # vectorised computations: the identity on a batch of scalars
        if op in ("reshape", "convert"):
            return operands[0]
        if op in ("broadcast", "transpose"):
            return operands[0] if tuple(inst.attrs.get("dimensions", ())) == tuple(range(result.rank)) else None
        if op == Op.BITCAST:
            return operands[0] if source.minor_to_major() == result.minor_to_major() else None
        return None

    def _is_static(self, inst: Instruction, operands: list[int]) -> bool:
        if inst.opcode in _STATIC_LEAVES:
            return True
        info = OPCODES.get(inst.opcode)
        return (info is not None and bool(operands) and info.category in _PURE_CATEGORIES
                and all(o in self.static for o in operands) and not _calls_impure(inst))

    def finish(self, root: int) -> tuple[list[tuple], list[tuple]]:
        """(static steps, other steps) that the root or a side effect needs, in order."""
        needed = {root}
        kept = []
        for step in reversed(self.steps):
            if step[3] in needed or _has_side_effect(step[1]):
                kept.append(step)
                needed.update(step[2])
        kept.reverse()
        if not self.batched:
            kept = _compact_broadcasts(kept, root)
        return [s for s in kept if s[3] in self.static], [s for s in kept if s[3] not in self.static]


# Ops whose handlers and kernels compute with numpy broadcasting: given one operand of
# the full shape, the others may have size-1 dimensions and the result is still full.
_NUMPY_BROADCASTING = frozenset(elementwise.BINARY) | {"compare", "select"}


def _compact_broadcasts(steps: list[tuple], root: int) -> list[tuple]:
    """Let broadcasts that only feed elementwise ops produce their operand with size-1
    dimensions instead of a full array: numpy broadcasts it inside the consumer."""
    users: dict[int, list[tuple]] = collections.defaultdict(list)
    for step in steps:
        for slot in step[2]:
            users[slot].append(step)
    candidates = {step[3] for step in steps if step[1].opcode == Op.BROADCAST} - {root}

    def feeds_only_elementwise(slot: int) -> bool:
        return bool(users[slot]) and all(
            user[1].opcode in _NUMPY_BROADCASTING and any(o not in candidates for o in user[2])
            for user in users[slot])

    compact = {slot for slot in candidates if feeds_only_elementwise(slot)}
    return [(Evaluator._h_broadcast_compact, inst, ops, out) if out in compact else (handler, inst, ops, out)
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
            if info is None or not (info.category in _PURE_CATEGORIES or i.opcode in _STATIC_LEAVES
                                    or i.opcode in ("parameter", "call", "fusion", "map", "sort")):
                return True
            stack.extend(i.called_computations())
    return False


def _has_side_effect(inst: Instruction) -> bool:
    info = OPCODES.get(inst.opcode)
    if info is not None and info.side_effect:
        return True
    return inst.opcode in ("send", "send-done") or bool(inst.attrs.get("custom_call_has_side_effect"))


def _live_instructions(comp: Computation) -> set[int]:
    """ids of the instructions the root or a side effect depends on."""
    stack = [comp.root] + [i for i in comp.instructions if _has_side_effect(i)]
    live: set[int] = set()
    while stack:
        inst = stack.pop()
        if id(inst) in live:
            continue
        live.add(id(inst))
        stack.extend(inst.operands)
        stack.extend(inst.control_predecessors)
    return live


# Data-movement ops that are the identity on a rank-0 value: in a vectorised
# computation they pass a whole batch of scalars through unchanged.
_SCALAR_IDENTITY_OPS = frozenset({"broadcast", "reshape", "transpose", "copy", "bitcast", "reverse",
                                  "opt-barrier", "domain"})


def _handler_for(inst: Instruction, batched: bool) -> Callable:
    if batched and inst.opcode in _SCALAR_IDENTITY_OPS:
        if inst.opcode == Op.BITCAST and inst.shape.element_type is not inst.operands[0].shape.element_type:
            return Evaluator._h_bitcast_convert  # a scalar bitcast between types of one width
        return Evaluator._h_identity
    handler = _HANDLERS.get(inst.opcode)
    if handler is None:
        return Evaluator._h_unsupported
    return handler


def _is_scalar_shape(shape: Shape) -> bool:
    if shape.is_tuple:
        return all(_is_scalar_shape(s) for s in shape.tuple_shapes)
    return shape.is_token or shape.rank == 0


def _vectorisable(comp: Computation, seen: Optional[set] = None) -> bool:
    """True if evaluating comp on arrays of scalars gives the per-element results."""
    seen = set() if seen is None else seen
    if id(comp) in seen:
        return True
    seen.add(id(comp))
    for inst in comp.instructions:
        if inst.shape is None or not _is_scalar_shape(inst.shape):
            return False
        if any(op.shape is None or not _is_scalar_shape(op.shape) for op in inst.operands):
            return False
        op = inst.opcode
        info = OPCODES.get(op)
        if info is None:
            return False
        if op == Op.CALL:
            if not _vectorisable(inst.attrs["to_apply"], seen):
                return False
        elif not (info.category is Category.ELEMENTWISE or op in _SCALAR_IDENTITY_OPS
                  or op in ("parameter", "constant", "tuple", "get-tuple-element")):
            return False
    return True


_UFUNC_OF_ROOT = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
                  "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or,
                  "xor": np.bitwise_xor}


def binary_ufunc(comp: Computation) -> Optional[np.ufunc]:
    """The numpy ufunc a computation amounts to: a single binary op of its two
    parameters, in order (e.g. add(p0, p1) -> np.add); else None.

    Note: np.maximum/np.minimum order -0 and +0 as equal, where XLA has -0 < +0.
    """
    params = comp.parameters
    root = comp.root
    if len(params) != 2 or root.opcode not in _UFUNC_OF_ROOT or root.operands != params:
        return None
    shapes = [p.shape for p in params] + [root.shape]
    if any(s.is_tuple or s.rank != 0 for s in shapes):
        return None
    t = root.shape.element_type
    if any(s.element_type is not t for s in shapes):
        return None
    if root.opcode in ("and", "or", "xor") and not (t.is_integral or t.is_pred):
        return None
    if root.opcode in ("maximum", "minimum") and t.is_complex:
        return None
    return _UFUNC_OF_ROOT[root.opcode]


class _Plans:
    """Plans and vectorisability, shared by the evaluators of every device.

    Valid while the module is not modified."""

    def __init__(self):
        self._plans: dict[tuple[int, bool], _Plan] = {}
        self._vectorisable: dict[int, bool] = {}
        self._attributes: dict[tuple, Any] = {}
        self._lock = threading.Lock()

    def plan(self, comp: Computation, batched: bool = False) -> _Plan:
        key = (comp, batched)  # (computations hash by identity)
        plan = self._plans.get(key)
        if plan is None:
            with self._lock:
                plan = self._plans.get(key)
                if plan is None:
                    plan = self._plans[key] = _Plan(comp, batched)
        return plan

    def code(self, plan: _Plan) -> PlanCode:
        """The plan's steps as one generated Python function (built once)."""
        if plan.code is None:
            with self._lock:
                if plan.code is None:
                    specialise = _specialise_batched if plan.batched else _specialise
                    plan.code = PlanCode(plan.steps, plan.param_slots, plan.root_slot, specialise,
                                         plan.computation.name)
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
            known = self._vectorisable[id(comp)] = _vectorisable(comp)
        return known


def new_plans() -> _Plans:
    """An empty plan cache to share between runs of one (unchanged) module."""
    return _Plans()


# --------------------------------------------------------------------------- custom calls

CustomCallHandler = Callable[["Evaluator", Instruction, list], Value]
CUSTOM_CALL_TARGETS: dict[str, CustomCallHandler] = {}


def register_custom_call(target: str, handler: CustomCallHandler) -> None:
    """Make `custom_call_target=target` runnable: handler(evaluator, inst, operands) -> value."""
    CUSTOM_CALL_TARGETS[target] = handler


def _lapack_handler(kernel: Callable) -> CustomCallHandler:
    def handler(ev: "Evaluator", inst: Instruction, ops: list) -> Value:
        specs = [leaf for _, leaf in inst.shape.leaves()]
        results = kernel(ops, specs, inst.backend_config, inst.frontend_attributes)
        return _as_tuple_if(inst.shape, results)
    return handler


def _topk_custom_call(ev: "Evaluator", inst: Instruction, ops: list) -> Value:
    """XLA:CPU's "TopK" target: (values, s32 indices) of the k largest along the last dim."""
    if not inst.shape.is_tuple or len(inst.shape.tuple_shapes) != 2 or len(ops) != 1:
        raise ValueError("TopK takes one operand and returns a (values, indices) tuple")
    k = inst.shape.tuple_shapes[0].dims[-1]
    largest = True
    comps = inst.attrs.get("called_computations") or ()
    if comps and comps[0].root.opcode == Op.COMPARE:
        largest = comps[0].root.attrs.get("direction") in ("GT", "GE")
    return sorting.topk(ops[0], k, largest)


for _target, _kernel in linalg.LAPACK_TARGETS.items():
    register_custom_call(_target, _lapack_handler(_kernel))
register_custom_call("TopK", _topk_custom_call)


# --------------------------------------------------------------------------- the evaluator

_HANDLERS: dict[str, Callable] = {}


def _handles(*opcodes: str):
    def register(fn):
        for op in opcodes:
            _HANDLERS[op] = fn
        return fn
    return register


# Binary ops numpy computes exactly as XLA does for these dtypes (IEEE arithmetic,
# two's-complement wrapping): the evaluator calls numpy directly for them.
_IEEE_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128))
_NATIVE_INTS = frozenset(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                                np.uint8, np.uint16, np.uint32, np.uint64))
_FAST_BINARY = {
    "add": (np.add, _IEEE_FLOATS | _NATIVE_INTS),
    "subtract": (np.subtract, _IEEE_FLOATS | _NATIVE_INTS),
    "multiply": (np.multiply, _IEEE_FLOATS | _NATIVE_INTS),
    "divide": (np.divide, _IEEE_FLOATS),
    "maximum": (np.maximum, _NATIVE_INTS),
    "minimum": (np.minimum, _NATIVE_INTS),
    "and": (np.bitwise_and, _NATIVE_INTS | {np.dtype(np.bool_)}),
    "or": (np.bitwise_or, _NATIVE_INTS | {np.dtype(np.bool_)}),
    "xor": (np.bitwise_xor, _NATIVE_INTS | {np.dtype(np.bool_)}),
}


_UINT_OF_FLOAT = {np.dtype(np.float32): np.dtype(np.uint32), np.dtype(np.float64): np.dtype(np.uint64)}


def _ieee_extremum(ufunc: np.ufunc, merge_bits: np.ufunc, is_max: bool) -> Callable:
    """IEEE-754-2019 maximum/minimum (NaN propagates, -0 < +0) of f32/f64 arrays.

    numpy's np.maximum/np.minimum propagate NaN but return one operand *by position*
    when -0 meets +0. Calling them with both operand orders gives both zeros there
    and the same value everywhere else, so merging the two results' bits (AND keeps
    +0 for maximum, OR keeps -0 for minimum) gives the IEEE result. (Two NaNs merge
    into a NaN as long as they are quiet, as numpy produces them.) One call is
    enough when an operand is a broadcast constant (relu's max(x, 0), clamps)."""
    def kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        for constant in (y, x):
            c = _broadcast_constant(constant)
            if c is None:
                continue
            if c != 0:  # also NaN: no zero can tie with c
                return _as_array(ufunc(x, y))
            if is_max and not np.signbit(c):  # max(v, +0) is never -0
                return _as_array(ufunc(x, y)) + c
            break
        uint = _UINT_OF_FLOAT[x.dtype]
        first, second = np.asarray(ufunc(x, y)), np.asarray(ufunc(y, x))
        return merge_bits(first.view(uint), second.view(uint)).view(x.dtype)

    def given_constant(c) -> Optional[Callable]:
        """The kernel's one-call form when an operand is the constant c, or None."""
        if c != 0:
            return ufunc
        if is_max and not np.signbit(c):
            return lambda x, y: ufunc(x, y) + c
        return None

    kernel.given_constant = given_constant
    return kernel


def _extremum_given(kernel: Callable, operand: np.ndarray) -> Callable:
    """kernel (an _ieee_extremum) specialised for one operand's value, known in advance."""
    c = _broadcast_constant(operand)
    return (kernel.given_constant(c) if c is not None else None) or kernel


def _broadcast_constant(a: np.ndarray):
    """The one value of an array that is a single value broadcast (all strides 0, or a
    single element that numpy broadcasts), else None."""
    if a.size == 1 or (a.size and not any(a.strides)):
        return a[(0,) * a.ndim]
    return None


_FAST_FLOAT_BINARY = {
    "maximum": _ieee_extremum(np.maximum, np.bitwise_and, True),
    "minimum": _ieee_extremum(np.minimum, np.bitwise_or, False),
}
_FAST_UNARY = {
    "negate": (np.negative, _IEEE_FLOATS | _NATIVE_INTS),
}
# Float functions as the elementwise kernels compute them (bit for bit): exact ones
# in the operand's type, the others in f64 and rounded once to f32.
_FAST_FLOAT_UNARY = {
    "exponential": (np.exp, True), "log": (np.log, True), "tanh": (np.tanh, True),
    "sine": (np.sin, True), "cosine": (np.cos, True), "log-plus-one": (np.log1p, True),
    "exponential-minus-one": (np.expm1, True),
    "sqrt": (np.sqrt, False), "abs": (np.abs, False), "floor": (np.floor, False), "ceil": (np.ceil, False),
}
_F32 = np.dtype(np.float32)
_COMPARE_UFUNCS = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal,
                   "GT": np.greater, "LE": np.less_equal, "LT": np.less}
_REAL_FLOATS = frozenset(np.dtype(t) for t in (np.float32, np.float64))


# What kernels raise for inputs they cannot handle (numbers out of range included).
_KERNEL_ERRORS = (ValueError, ArithmeticError)

# np.errstate(all="ignore") costs microseconds per entry; setting numpy's error-state
# context variable directly (what errstate does inside) costs a tenth of that.
try:
    from numpy._core._ufunc_config import _extobj_contextvar as _FP_ERRORS
    from numpy._core._ufunc_config import _make_extobj
    _IGNORE_FP_ERRORS = _make_extobj(all="ignore")
except (ImportError, TypeError):  # another numpy: use np.errstate
    _FP_ERRORS = None


class Evaluator:
    """Evaluates a module for one device.

    module:  the parsed module (hlo.ir.Module).
    seed:    seeds the stateful `rng` op.
    infeed:  arrays consumed in order by `infeed` (an infeed of a tuple shape takes
             one array per leaf) and by host-transfer `recv`.
    device:  a collectives DeviceView; None means a single device (1 replica, 1 partition).
    profile: when True, `self.profile` maps each executed instruction to
             [executions, seconds of its own time (excluding called computations)].

    After `run`, `self.outfeed` holds the values written by `outfeed` and host `send`.
    An evaluator may run its module many times (plans and constant-derived values
    are built once); the module must not be modified meanwhile.
    """

    def __init__(self, module: Module, *, seed: int = 0, infeed: Iterable = (), device=None,
                 profile: bool = False, plans: Optional[_Plans] = None):
        self.module = module
        self._seed = seed
        self._rng_state: Optional[rng.RngState] = None
        self.infeed = collections.deque(leaves(tuple(infeed)))
        self.outfeed: list[Value] = []
        self.channels: dict[Optional[int], collections.deque] = collections.defaultdict(collections.deque)
        self._device = device
        self._plans = plans if plans is not None else _Plans()
        self._combiners: dict[int, Combiner] = {}
        self._prefilled: dict[_Plan, list] = {}  # per plan: slots with the static values filled in
        self._compiled: dict[_Plan, Callable] = {}  # per plan: its generated code bound to this evaluator
        self._entry_signature: Optional[list] = None
        self.profile: Optional[dict[Instruction, list]] = {} if profile else None
        self._child_time = 0.0

    # -- entry points
    @property
    def rng_state(self) -> rng.RngState:
        """The random state of the `rng` ops (created on first use: seeding costs time)."""
        if self._rng_state is None:
            self._rng_state = rng.RngState(self._seed)
        return self._rng_state

    @property
    def device(self):
        if self._device is None:
            from .collectives import CollectiveContext
            self._device = CollectiveContext(1, 1).device(0, 0)
        return self._device

    def run(self, arguments: Sequence[Value]) -> Value:
        """Evaluate the entry computation on `arguments` (one value per parameter)."""
        if not self._arrays_match_entry(arguments):
            check_arguments(self.module.entry, arguments)  # the full check, which explains any mismatch
        return self.call(self.module.entry, arguments)

    def _arrays_match_entry(self, arguments: Sequence[Value]) -> bool:
        """Quick check for the common case: one array of the exact dtype and dims per parameter."""
        if self._entry_signature is None:
            params = self.module.entry.parameters
            if any(p.shape.is_tuple or not p.shape.is_array for p in params):
                return False
            self._entry_signature = [(p.shape.element_type.dtype, tuple(p.shape.dims)) for p in params]
        signature = self._entry_signature
        if len(arguments) != len(signature):
            return False
        for a, (dtype, dims) in zip(arguments, signature):  # (a loop: cheaper than all() here)
            if type(a) is not np.ndarray or a.shape != dims or (a.dtype is not dtype and a.dtype != dtype):
                return False
        return True

    def call(self, comp: Computation, args: Sequence[Value]) -> Value:
        """Evaluate a computation on argument values."""
        if _FP_ERRORS is None:
            with np.errstate(all="ignore"):  # inf and NaN are values like any other here
                return self._execute(self._plans.plan(comp), args)
        plan = self._plans.plan(comp)
        token = _FP_ERRORS.set(_IGNORE_FP_ERRORS)  # np.errstate(all="ignore") without its overhead
        try:
            return self._execute(plan, args)
        finally:
            _FP_ERRORS.reset(token)

    # -- the interpreter loop
    def _execute(self, plan: _Plan, args: Sequence[Value]) -> Value:
        if self.profile is not None:
            return self._execute_stepwise(plan, args, self._run_steps_profiled)
        run = self._compiled.get(plan)
        if run is None:
            if plan.code is None and not plan.ran:
                # Generating code costs more than a run: only for plans that run again.
                plan.ran = True
                return self._execute_stepwise(plan, args, self._run_steps)
            prefilled = self._prefilled.get(plan)
            statics = prefilled if prefilled is not None else self._prefill(plan)
            run = self._compiled[plan] = self._plans.code(plan).bind(self, statics)
        try:
            return run(args)
        except _KERNEL_ERRORS as exc:
            inst = plan.code.failing_instruction(exc.__traceback__) or plan.computation.root
            raise self._kernel_error(inst, exc) from None

    def _execute_stepwise(self, plan: _Plan, args: Sequence[Value], run_steps: Callable) -> Value:
        """_execute step by step (run_steps: _run_steps, or _run_steps_profiled to time each step)."""
        prefilled = self._prefilled.get(plan)
        values = (prefilled if prefilled is not None else self._prefill(plan)).copy()
        for slot, number in plan.param_slots:
            values[slot] = args[number]
        run_steps(plan.steps, values)
        return values[plan.root_slot]

    def _prefill(self, plan: _Plan) -> list:
        """Compute a plan's static slots (once per evaluator)."""
        values: list = [None] * plan.size
        if self.profile is None:
            self._run_steps(plan.static_steps, values)
        else:
            self._run_steps_profiled(plan.static_steps, values)
        self._prefilled[plan] = values
        return values

    def _run_steps(self, steps: list, values: list) -> None:
        step = None
        try:
            for step in steps:
                handler, inst, operands, slot = step
                values[slot] = handler(self, inst, [values[i] for i in operands])
        except _KERNEL_ERRORS as exc:
            raise self._kernel_error(step[1], exc) from None

    def _run_steps_profiled(self, steps: list, values: list) -> None:
        """_run_steps, recording each instruction's own time (its time minus that
        of the instructions it ran in called computations)."""
        clock = time.perf_counter
        for handler, inst, operands, slot in steps:
            outer_child_time, self._child_time = self._child_time, 0.0
            start = clock()
            try:
                values[slot] = handler(self, inst, [values[i] for i in operands])
            except _KERNEL_ERRORS as exc:
                raise self._kernel_error(inst, exc) from None
            elapsed = clock() - start
            record = self.profile.setdefault(inst, [0, 0.0])
            record[0] += 1
            record[1] += elapsed - self._child_time
            self._child_time = outer_child_time + elapsed

    @staticmethod
    def _kernel_error(inst: Instruction, exc: Exception) -> HloError:
        return error(f"{inst.opcode} failed: {exc}", inst.loc)

    # -- called computations
    def combiner(self, comp: Computation) -> Combiner:
        """The computation as a Combiner (vectorised when possible), cached."""
        found = self._combiners.get(id(comp))
        if found is None:
            if self._plans.vectorisable(comp):
                plan = self._plans.plan(comp, batched=True)
                fn = self._vectorised_fn(plan)
            else:
                fn = self._elementwise_fn(comp)
            found = Combiner(fn, len(comp.parameters), binary_ufunc(comp), comp.name)
            self._combiners[id(comp)] = found
        return found

    def _vectorised_fn(self, plan: _Plan) -> Callable:
        def fn(*args):
            result = self._execute(plan, args)
            return result if isinstance(result, tuple) else (result,)
        return fn

    def _elementwise_fn(self, comp: Computation) -> Callable:
        """Evaluate comp once per element (for computations with non-scalar steps)."""
        plan = self._plans.plan(comp)

        def fn(*args):
            arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
            shape = arrays[0].shape if arrays else ()
            outs: Optional[list] = None
            for index in np.ndindex(*shape):
                result = self._execute(plan, [np.asarray(a[index]) for a in arrays])
                parts = result if isinstance(result, tuple) else (result,)
                if outs is None:
                    outs = [np.empty(shape, dtype=np.asarray(p).dtype) for p in parts]
                for out, part in zip(outs, parts):
                    out[index] = part
            if outs is None:  # empty batch: results of the right types, no elements
                outs = [np.empty(shape, dtype=s.element_type.dtype) for _, s in comp.root.shape.leaves()]
            return tuple(outs)
        return fn

    # ----------------------------------------------------------------------- leaves

    def _h_unsupported(self, inst, ops):
        raise error(f"the interpreter does not support '{inst.opcode}'", inst.loc)

    def _h_identity(self, inst, ops):
        return ops[0]

    @_handles("constant")
    def _h_constant(self, inst, ops):
        lit = inst.attrs["literal"]
        if _is_elided(lit):
            raise error(f"constant %{inst.name}: its data was elided ({{...}}) in the text, "
                        "so the module cannot be run", inst.loc)
        return lit.value()

    @_handles("iota")
    def _h_iota(self, inst, ops):
        return elementwise.iota(inst.shape, inst.attrs["iota_dimension"])

    @_handles("replica-id")
    def _h_replica_id(self, inst, ops):
        return np.array(self.device.replica_id, dtype=np.uint32)

    @_handles("partition-id")
    def _h_partition_id(self, inst, ops):
        return np.array(self.device.partition_id, dtype=np.uint32)

    # ----------------------------------------------------------------------- elementwise

    def _h_unary(self, inst, ops):
        x = ops[0]
        fast = _FAST_UNARY.get(inst.opcode)
        if fast is not None and x.dtype in fast[1]:
            return _as_array(fast[0](x))
        if x.dtype in _REAL_FLOATS and inst.opcode in _FAST_FLOAT_UNARY:
            fn, in_f64 = _FAST_FLOAT_UNARY[inst.opcode]
            if in_f64 and x.dtype == _F32:
                return _as_array(fn(x.astype(np.float64))).astype(_F32)
            return _as_array(fn(x))
        return elementwise.UNARY[inst.opcode](x, inst.shape.element_type)

    def _h_binary(self, inst, ops):
        x, y = ops
        if x.dtype == y.dtype:
            fast = _FAST_BINARY.get(inst.opcode)
            if fast is not None and x.dtype in fast[1]:
                return _as_array(fast[0](x, y))
            if x.dtype in _REAL_FLOATS and inst.opcode in _FAST_FLOAT_BINARY:
                return _FAST_FLOAT_BINARY[inst.opcode](x, y)
        return elementwise.BINARY[inst.opcode](x, y, inst.shape.element_type)

    @_handles("copy", "opt-barrier", "add-dependency", "domain")
    def _h_pass_through(self, inst, ops):
        return ops[0]  # values are immutable: a copy can share the array

    @_handles("compare")
    def _h_compare(self, inst, ops):
        x, y = ops
        direction = inst.attrs["direction"]
        kind = inst.attrs.get("type")
        if x.dtype == y.dtype and (
                (kind in (None, "FLOAT") and x.dtype in _REAL_FLOATS)
                or (kind is None and x.dtype in _NATIVE_INTS)):
            return _as_array(_COMPARE_UFUNCS[direction](x, y))
        return elementwise.compare(x, y, direction, kind)

    @_handles("select")
    def _h_select(self, inst, ops):
        pred, on_true, on_false = ops
        if pred.dtype == np.bool_ and on_true.dtype == on_false.dtype and on_true.dtype.kind != "V":
            return _as_array(np.where(pred, on_true, on_false))
        return elementwise.select(pred, on_true, on_false)

    @_handles("clamp")
    def _h_clamp(self, inst, ops):
        lo, x, hi = ops
        if lo.ndim > x.ndim or hi.ndim > x.ndim:  # vectorised scalars with the batch in lo/hi
            lo, x, hi = np.broadcast_arrays(lo, x, hi)
        return elementwise.clamp(lo, x, hi)

    @_handles("convert")
    def _h_convert(self, inst, ops):
        return elementwise.convert(ops[0], inst.operands[0].shape.element_type, inst.shape.element_type)

    @_handles("bitcast-convert")
    def _h_bitcast_convert(self, inst, ops):
        return elementwise.bitcast_convert(ops[0], inst.operands[0].shape.element_type,
                                           inst.shape.element_type)

    @_handles("reduce-precision")
    def _h_reduce_precision(self, inst, ops):
        return elementwise.reduce_precision(ops[0], inst.attrs["exponent_bits"], inst.attrs["mantissa_bits"])

    @_handles("stochastic-convert")
    def _h_stochastic_convert(self, inst, ops):
        return elementwise.stochastic_convert(ops[0], ops[1], inst.shape.element_type)

    # ----------------------------------------------------------------------- data movement

    @_handles("broadcast")
    def _h_broadcast(self, inst, ops):
        return broadcast_view(self._h_broadcast_compact(inst, ops), inst.shape.dims)

    def _h_broadcast_compact(self, inst, ops):
        """The broadcast's operand with the result's rank, new dimensions of size 1: what
        numpy's own broadcasting needs (used when only elementwise ops consume it)."""
        x = ops[0]
        dims = tuple(inst.attrs.get("dimensions", ()))
        out_dims = inst.shape.dims
        if len(dims) != x.ndim:
            raise ValueError(f"dimensions={list(dims)} has {len(dims)} entries for an operand of rank {x.ndim}")
        if list(dims) != sorted(dims):
            order = sorted(range(len(dims)), key=lambda i: dims[i])
            x, dims = x.transpose(order), tuple(dims[i] for i in order)
        expanded = [1] * len(out_dims)
        for i, d in enumerate(dims):
            expanded[d] = x.shape[i]
            # (XLA's verifier wants equal sizes; a size-1 dim is expanded like BroadcastInDim does)
            if x.shape[i] != out_dims[d] and x.shape[i] != 1:
                raise ValueError(f"operand dimension {i} (size {x.shape[i]}) maps to result dimension {d} "
                                 f"of size {out_dims[d]}")
        return x.reshape(expanded)

    @_handles("reshape")
    def _h_reshape(self, inst, ops):
        return ops[0].reshape(inst.shape.dims)

    @_handles("dynamic-reshape")
    def _h_dynamic_reshape(self, inst, ops):
        sizes = [_scalar_int(s) for s in ops[1:]]
        if tuple(sizes) != tuple(inst.shape.dims):
            raise ValueError(f"runtime sizes {sizes} differ from the bounds {list(inst.shape.dims)}; "
                             "dynamic dimension sizes are not supported by the interpreter")
        return ops[0].reshape(inst.shape.dims)

    @_handles("transpose")
    def _h_transpose(self, inst, ops):
        return ops[0].transpose(inst.attrs["dimensions"])

    @_handles("reverse")
    def _h_reverse(self, inst, ops):
        return np.flip(ops[0], tuple(inst.attrs["dimensions"]))

    @_handles("slice")
    def _h_slice(self, inst, ops):
        ranges = inst.attrs["slice"]
        return indexing.slice_array(ops[0], [r[0] for r in ranges], [r[1] for r in ranges],
                                    [r[2] for r in ranges])

    @_handles("concatenate")
    def _h_concatenate(self, inst, ops):
        return np.concatenate(ops, axis=inst.attrs["dimensions"][0])

    @_handles("pad")
    def _h_pad(self, inst, ops):
        return windows.pad(ops[0], ops[1], inst.attrs["padding"])

    @_handles("tuple")
    def _h_tuple(self, inst, ops):
        return tuple(ops)

    @_handles("get-tuple-element")
    def _h_get_tuple_element(self, inst, ops):
        return ops[0][inst.attrs["index"]]

    @_handles("bitcast")
    def _h_bitcast(self, inst, ops):
        return bitcast(ops[0], inst.operands[0].shape, inst.shape)

    @_handles("get-dimension-size")
    def _h_get_dimension_size(self, inst, ops):
        return np.array(ops[0].shape[inst.attrs["dimensions"][0]], dtype=np.int32)

    @_handles("set-dimension-size")
    def _h_set_dimension_size(self, inst, ops):
        dim = inst.attrs["dimensions"][0]
        size = _scalar_int(ops[1])
        if size != ops[0].shape[dim]:
            raise ValueError(f"runtime size {size} of dimension {dim} differs from its bound "
                             f"{ops[0].shape[dim]}; dynamic dimension sizes are not supported "
                             "by the interpreter")
        return ops[0]

    # ----------------------------------------------------------------------- indexing

    @_handles("dynamic-slice")
    def _h_dynamic_slice(self, inst, ops):
        return indexing.dynamic_slice(ops[0], _start_indices(ops[1:]), inst.attrs["dynamic_slice_sizes"])

    @_handles("dynamic-update-slice")
    def _h_dynamic_update_slice(self, inst, ops):
        return indexing.dynamic_update_slice(ops[0], ops[1], _start_indices(ops[2:]))

    @_handles("gather")
    def _h_gather(self, inst, ops):
        return indexing.gather(ops[0], ops[1], self._plans.attribute(inst, GatherDims.of),
                               tuple(inst.attrs["slice_sizes"]), tuple(inst.shape.dims))

    @_handles("scatter")
    def _h_scatter(self, inst, ops):
        n = (len(ops) - 1) // 2
        results = indexing.scatter(list(ops[:n]), ops[n], list(ops[n + 1:]),
                                   self._plans.attribute(inst, ScatterDims.of),
                                   self.combiner(inst.attrs["to_apply"]),
                                   inst.attrs.get("indices_are_sorted", False),
                                   inst.attrs.get("unique_indices", False))
        return _as_tuple_if(inst.shape, results)

    # ----------------------------------------------------------------------- dot / convolution

    @_handles("dot")
    def _h_dot(self, inst, ops):
        lhs, rhs = ops
        dims = self._plans.attribute(inst, DotDims.of)
        if lhs.dtype == rhs.dtype == inst.shape.element_type.dtype and lhs.dtype in _IEEE_FLOATS:
            product = _matmul_form(lhs, rhs, dims)
            if product is not None:
                return _as_array(product)
        return linear.dot_general(lhs, rhs, dims, inst.shape.element_type)

    @_handles("ragged-dot")
    def _h_ragged_dot(self, inst, ops):
        return ragged_dot(ops[0], ops[1], ops[2], DotDims.of(inst), inst.attrs["lhs_ragged_dims"],
                          inst.attrs.get("rhs_group_dims", ()), inst.shape.element_type)

    @_handles("scaled-dot")
    def _h_scaled_dot(self, inst, ops):
        return scaled_dot(ops[0], ops[1], ops[2], ops[3], DotDims.of(inst), inst.shape.element_type)

    @_handles("convolution")
    def _h_convolution(self, inst, ops):
        dims: ConvDims = inst.attrs["dim_labels"]
        window = inst.attrs.get("window")
        if window is None:  # no window= : the kernel's full extent, stride 1, no padding
            window = Window(tuple(WindowDim(ops[1].shape[d]) for d in dims.kernel_spatial))
        return linear.convolution(ops[0], ops[1], window, dims, inst.attrs.get("feature_group_count", 1),
                                  inst.attrs.get("batch_group_count", 1), inst.shape.element_type)

    # ----------------------------------------------------------------------- reductions

    @_handles("reduce")
    def _h_reduce(self, inst, ops):
        n = len(ops) // 2
        combiner = self.combiner(inst.attrs["to_apply"])
        if n == 1 and combiner.ufunc is not None:
            total = _ufunc_reduce(ops[0], ops[1], tuple(inst.attrs["dimensions"]), combiner.ufunc)
            if total is not None:
                return total
        results = windows.reduce(ops[:n], ops[n:], inst.attrs["dimensions"], combiner)
        return _as_tuple_if(inst.shape, results)

    @_handles("reduce-window")
    def _h_reduce_window(self, inst, ops):
        n = len(ops) // 2
        window = inst.attrs.get("window") or Window(tuple(WindowDim(1) for _ in range(ops[0].ndim)))
        results = windows.reduce_window(ops[:n], ops[n:], window, self.combiner(inst.attrs["to_apply"]))
        return _as_tuple_if(inst.shape, results)

    @_handles("select-and-scatter")
    def _h_select_and_scatter(self, inst, ops):
        window = inst.attrs.get("window") or Window(tuple(WindowDim(1) for _ in range(ops[0].ndim)))
        return windows.select_and_scatter(ops[0], ops[1], ops[2], window,
                                          self.combiner(inst.attrs["select"]),
                                          self.combiner(inst.attrs["scatter"]))

    # ----------------------------------------------------------------------- control flow

    @_handles("call", "fusion")
    def _h_call(self, inst, ops):
        callee = inst.attrs["to_apply"] if inst.opcode == Op.CALL else inst.attrs["calls"]
        return self._execute(self._plans.plan(callee), ops)

    @_handles("while")
    def _h_while(self, inst, ops):
        condition = self._plans.plan(inst.attrs["condition"])
        body = self._plans.plan(inst.attrs["body"])
        state = ops[0]
        while bool(self._execute(condition, (state,))):
            state = self._execute(body, (state,))
        return state

    @_handles("conditional")
    def _h_conditional(self, inst, ops):
        selector = np.asarray(ops[0])
        branches = inst.attrs.get("branch_computations")
        if selector.dtype == np.bool_:
            index = 0 if bool(selector) else 1
            if not branches:
                branches = (inst.attrs["true_computation"], inst.attrs["false_computation"])
        else:
            index = _scalar_int(selector)
            if not 0 <= index < len(branches):
                index = len(branches) - 1  # out of range runs the last branch, as in XLA
        return self._execute(self._plans.plan(branches[index]), (ops[1 + index],))

    @_handles("map")
    def _h_map(self, inst, ops):
        result = self.combiner(inst.attrs["to_apply"])(*ops)[0]
        dtype = inst.shape.element_type.dtype
        return np.broadcast_to(np.asarray(result).astype(dtype, copy=False), inst.shape.dims)

    @_handles("sort")
    def _h_sort(self, inst, ops):
        results = sorting.sort(list(ops), inst.attrs["dimensions"][0], self.combiner(inst.attrs["to_apply"]),
                               inst.attrs.get("is_stable", False))
        return _as_tuple_if(inst.shape, results)

    @_handles("topk")
    def _h_topk(self, inst, ops):
        return sorting.topk(ops[0], inst.attrs["k"], inst.attrs.get("largest", True))

    @_handles("scan")
    def _h_scan(self, inst, ops):
        return self._scan(inst, ops)

    def _scan(self, inst, ops):
        k = inst.attrs["num_carries"]
        dim = inst.attrs["dimensions"][0]
        inputs, carries = list(ops[:len(ops) - k]), tuple(ops[len(ops) - k:])
        length = inputs[0].shape[dim] if inputs else 0
        plan = self._plans.plan(inst.attrs["to_apply"])
        steps = range(length - 1, -1, -1) if inst.attrs.get("is_reverse") else range(length)
        per_step: dict[int, list] = {}
        for t in steps:
            result = self._execute(plan, [np.take(x, t, axis=dim) for x in inputs] + list(carries))
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

    # ----------------------------------------------------------------------- linear algebra

    @_handles("fft")
    def _h_fft(self, inst, ops):
        return linalg.fft(ops[0], inst.attrs["fft_type"], inst.attrs["fft_length"])

    @_handles("cholesky")
    def _h_cholesky(self, inst, ops):
        return linalg.cholesky(ops[0], inst.attrs.get("lower", False))

    @_handles("triangular-solve")
    def _h_triangular_solve(self, inst, ops):
        transpose = inst.attrs.get("transpose_a", "NO_TRANSPOSE")
        if transpose == "TRANSPOSE_INVALID":
            transpose = "NO_TRANSPOSE"
        a = inst.attrs
        return linalg.triangular_solve(ops[0], ops[1], a.get("left_side", False), a.get("lower", False),
                                       a.get("unit_diagonal", False), transpose)

    @_handles("batch-norm-training")
    def _h_batch_norm_training(self, inst, ops):
        return tuple(linalg.batch_norm_training(*ops, inst.attrs["epsilon"], inst.attrs["feature_index"]))

    @_handles("batch-norm-inference")
    def _h_batch_norm_inference(self, inst, ops):
        return linalg.batch_norm_inference(*ops, inst.attrs["epsilon"], inst.attrs["feature_index"])

    @_handles("batch-norm-grad")
    def _h_batch_norm_grad(self, inst, ops):
        return tuple(linalg.batch_norm_grad(*ops, inst.attrs["epsilon"], inst.attrs["feature_index"]))

    # ----------------------------------------------------------------------- randomness

    @_handles("rng")
    def _h_rng(self, inst, ops):
        t = inst.shape.element_type
        if inst.attrs["distribution"] == "rng_normal":
            return rng.rng_normal(ops[0], ops[1], inst.shape.dims, t, self.rng_state)
        return rng.rng_uniform(ops[0], ops[1], inst.shape.dims, t, self.rng_state)

    @_handles("rng-bit-generator")
    def _h_rng_bit_generator(self, inst, ops):
        out = inst.shape.tuple_shapes[1]
        return rng.rng_bit_generator(inst.attrs["algorithm"], ops[0], out.dims, out.element_type)

    @_handles("rng-get-and-update-state")
    def _h_rng_get_and_update_state(self, inst, ops):
        return rng.rng_get_and_update_state(self.rng_state, inst.attrs["delta"])

    # ----------------------------------------------------------------------- host transfers, tokens

    @_handles("after-all")
    def _h_after_all(self, inst, ops):
        return TOKEN

    @_handles("infeed")
    def _h_infeed(self, inst, ops):
        data_shape = inst.shape.tuple_shapes[0]
        return (self._take_infeed(inst, data_shape), TOKEN)

    def _take_infeed(self, inst: Instruction, shape: Shape) -> Value:
        if shape.is_tuple:
            return tuple(self._take_infeed(inst, s) for s in shape.tuple_shapes)
        if shape.is_token:
            return TOKEN
        if not self.infeed:
            raise error(f"{inst.opcode} %{inst.name}: the infeed queue is empty (it needs a value of "
                        f"shape {shape})", inst.loc)
        from ..runtime.values_io import to_storage
        value = to_storage(self.infeed.popleft(), shape)
        if not value_matches(value, shape):
            raise error(f"{inst.opcode} %{inst.name}: the next infeed value is {describe_value(value)}, "
                        f"expected {shape.without_layout()}", inst.loc)
        return value

    @_handles("outfeed")
    def _h_outfeed(self, inst, ops):
        self.outfeed.append(ops[0])
        return TOKEN

    @_handles("send")
    def _h_send(self, inst, ops):
        if inst.attrs.get("is_host_transfer"):
            self.outfeed.append(ops[0])
        else:
            self.channels[inst.attrs.get("channel_id")].append(ops[0])
        return (ops[0], np.zeros((), np.uint32), TOKEN)

    @_handles("send-done")
    def _h_send_done(self, inst, ops):
        return TOKEN

    @_handles("recv")
    def _h_recv(self, inst, ops):
        return zeros_of(inst.shape)

    @_handles("recv-done")
    def _h_recv_done(self, inst, ops):
        data_shape = inst.shape.tuple_shapes[0]
        if inst.attrs.get("is_host_transfer"):
            return (self._take_infeed(inst, data_shape), TOKEN)
        queue = self.channels[inst.attrs.get("channel_id")]
        if not queue:
            raise error(f"recv-done %{inst.name}: nothing was sent on channel "
                        f"{inst.attrs.get('channel_id')} before it (the program would deadlock)", inst.loc)
        return (queue.popleft(), TOKEN)

    # ----------------------------------------------------------------------- custom calls

    @_handles("custom-call")
    def _h_custom_call(self, inst, ops):
        target = inst.attrs["custom_call_target"]
        handler = CUSTOM_CALL_TARGETS.get(target)
        if handler is None:
            raise error(f"custom-call target \"{target}\" is not known to the interpreter "
                        f"(known: LAPACK targets such as lapack_spotrf_ffi, and TopK)",
                        inst.attr_locs.get("custom_call_target", inst.loc))
        return handler(self, inst, ops)

    # ----------------------------------------------------------------------- async wrappers

    @_handles("async-start")
    def _h_async_start(self, inst, ops):
        result = self._execute(self._plans.plan(inst.attrs["calls"]), ops)
        return _async_tuple(inst.shape, tuple(ops), result)

    @_handles("async-update")
    def _h_async_update(self, inst, ops):
        return ops[0]

    @_handles("async-done")
    def _h_async_done(self, inst, ops):
        return ops[0][1]

    @_handles("copy-start")
    def _h_copy_start(self, inst, ops):
        return _async_tuple(inst.shape, ops[0], ops[0])

    @_handles("copy-done")
    def _h_copy_done(self, inst, ops):
        return ops[0][0]

    # ----------------------------------------------------------------------- collectives

    def _collective_args(self, inst):
        a = inst.attrs
        return _replica_groups(a.get("replica_groups")), a.get("channel_id"), a.get("use_global_device_ids", False)

    @_handles("all-reduce", "all-reduce-start")
    def _h_all_reduce(self, inst, ops):
        groups, channel, global_ids = self._collective_args(inst)
        results = self.device.all_reduce(list(ops), groups, channel, global_ids,
                                         self.combiner(inst.attrs["to_apply"]))
        return tuple(results) if len(ops) > 1 or inst.shape.is_tuple else results[0]

    @_handles("all-gather", "all-gather-start")
    def _h_all_gather(self, inst, ops):
        groups, channel, global_ids = self._collective_args(inst)
        results = self.device.all_gather(list(ops), inst.attrs["dimensions"][0], groups, channel, global_ids)
        if inst.opcode == Op.ALL_GATHER_START:
            return _collective_start_value(inst.shape, ops, results)
        return tuple(results) if inst.shape.is_tuple else results[0]

    @_handles("reduce-scatter")
    def _h_reduce_scatter(self, inst, ops):
        groups, channel, global_ids = self._collective_args(inst)
        results = self.device.reduce_scatter(list(ops), inst.attrs["dimensions"][0], groups, channel,
                                             global_ids, self.combiner(inst.attrs["to_apply"]))
        return tuple(results) if inst.shape.is_tuple else results[0]

    @_handles("all-to-all")
    def _h_all_to_all(self, inst, ops):
        groups, channel, _ = self._collective_args(inst)
        dims = inst.attrs.get("dimensions")
        split = dims[0] if dims else None
        results = self.device.all_to_all(list(ops), split, groups, channel)
        return tuple(results) if inst.shape.is_tuple else results[0]

    @_handles("ragged-all-to-all")
    def _h_ragged_all_to_all(self, inst, ops):
        groups, channel, _ = self._collective_args(inst)
        return self.device.ragged_all_to_all(*ops, groups, channel)

    @_handles("collective-broadcast")
    def _h_collective_broadcast(self, inst, ops):
        groups, channel, _ = self._collective_args(inst)
        results = self.device.collective_broadcast(list(ops), groups, channel)
        return tuple(results) if inst.shape.is_tuple else results[0]

    @_handles("collective-permute", "collective-permute-start")
    def _h_collective_permute(self, inst, ops):
        if inst.attrs.get("slice_sizes"):
            raise error(f"{inst.opcode} with slice_sizes (in-place form) is not supported by the interpreter",
                        inst.loc)
        pairs = [tuple(p) for p in inst.attrs["source_target_pairs"]]
        channel = inst.attrs.get("channel_id")
        if len(ops) == 1:
            results = [self.device.collective_permute(ops[0], pairs, channel)]
        else:  # the combined form: one exchange for every operand
            results = list(self.device.collective_permute(list(ops), pairs, channel))
        if inst.opcode == Op.COLLECTIVE_PERMUTE_START:
            return _collective_start_value(inst.shape, ops, results)
        return tuple(results) if len(ops) > 1 else results[0]

    @_handles("all-reduce-done", "all-gather-done", "collective-permute-done")
    def _h_collective_done(self, inst, ops):
        start = inst.operands[0]
        if start.shape.compatible(inst.shape):
            return ops[0]
        return ops[0][1]


for _op in elementwise.UNARY:
    _HANDLERS.setdefault(_op, Evaluator._h_unary)
for _op in elementwise.BINARY:
    _HANDLERS.setdefault(_op, Evaluator._h_binary)


# --------------------------------------------------------------------------- helpers of handlers

def _is_elided(lit) -> bool:
    if lit.is_tuple:
        return any(_is_elided(e) for e in lit.elements)
    return lit.elided


_REDUCIBLE = {
    np.add: _IEEE_FLOATS | _NATIVE_INTS, np.multiply: _IEEE_FLOATS | _NATIVE_INTS,
    np.maximum: _REAL_FLOATS | _NATIVE_INTS, np.minimum: _REAL_FLOATS | _NATIVE_INTS,
    np.bitwise_and: _NATIVE_INTS | {np.dtype(np.bool_)}, np.bitwise_or: _NATIVE_INTS | {np.dtype(np.bool_)},
    np.bitwise_xor: _NATIVE_INTS | {np.dtype(np.bool_)},
}


def _ufunc_reduce(x: np.ndarray, init: np.ndarray, dims: tuple[int, ...], ufunc: np.ufunc
                  ) -> Optional[np.ndarray]:
    """reduce(x, init) with a computation that is `ufunc`, as one numpy reduction, for
    the dtypes where numpy computes exactly what XLA does; None where it does not apply."""
    if not _ufunc_reducible(x.dtype, init.dtype, x.size, init.ndim, ufunc):
        return None
    return _exact_ufunc_reduce(x, init, dims, ufunc)


def _ufunc_reducible(x_dtype, init_dtype, size: int, init_rank: int, ufunc: np.ufunc) -> bool:
    return x_dtype == init_dtype and x_dtype in _REDUCIBLE.get(ufunc, ()) and size > 0 and init_rank == 0


def _exact_ufunc_reduce(x: np.ndarray, init: np.ndarray, dims: tuple[int, ...], ufunc: np.ufunc) -> np.ndarray:
    """_ufunc_reduce where _ufunc_reducible holds."""
    total = _as_array(ufunc.reduce(x, axis=dims, dtype=x.dtype))  # (numpy would widen small ints)
    if x.dtype in _REAL_FLOATS and ufunc in (np.maximum, np.minimum):
        total = _signed_zero_extremum(x, dims, total, ufunc is np.maximum)
        if init == (-np.inf if ufunc is np.maximum else np.inf):
            return total  # the identity: max(-inf, t) = t, NaN and signed zeros included
        return _FAST_FLOAT_BINARY["maximum" if ufunc is np.maximum else "minimum"](
            broadcast_view(init.reshape((1,) * total.ndim), total.shape), total)
    return _as_array(ufunc(init, total))


def _signed_zero_extremum(x: np.ndarray, dims, total: np.ndarray, is_max: bool) -> np.ndarray:
    """Fix the sign of zero maxima/minima: +0 beats -0 in a maximum, -0 in a minimum."""
    zero = total == 0
    if not zero.any():
        return total
    sign = np.signbit(x)
    wanted = ~sign if is_max else sign
    found = np.logical_or.reduce((x == 0) & wanted, axis=dims)
    signed_zero = x.dtype.type(0.0) if is_max else x.dtype.type(-0.0)
    other_zero = -signed_zero
    return np.where(zero, np.where(found, signed_zero, other_zero), total)


def _matmul_template(lhs_rank: int, rhs_rank: int, dims: DotDims) -> Optional[str]:
    """The dot as one np.matmul when its dimension numbers are a (batched) matrix
    product up to a swap of the last two axes of an operand: a Python expression
    of `matmul`, `{0}` (lhs) and `{1}` (rhs); else None.

    Only for operands already of the result's float type, where dot_general would
    make the same BLAS call on the same values."""
    b = len(dims.lhs_batch)
    batch = tuple(range(b))
    if (dims.lhs_batch != batch or dims.rhs_batch != batch or len(dims.lhs_contracting) != 1
            or len(dims.rhs_contracting) != 1):
        return None
    lc, rc = dims.lhs_contracting[0], dims.rhs_contracting[0]
    if b == 0 and lc == lhs_rank - 1 and rhs_rank <= 2:  # [..., k] @ [k, n]: matmul broadcasts
        return "matmul({0}, {1})" if rc == 0 or rhs_rank == 1 else "matmul({0}, {1}.T)"
    if lhs_rank != b + 2 or rhs_rank not in (b + 1, b + 2):
        return None
    if lc not in (b, b + 1) or rc not in (b, b + 1):
        return None
    lhs = "{0}.swapaxes(-1, -2)" if lc == b else "{0}"
    if rhs_rank == b + 1:
        return f"matmul({lhs}, {{1}}[..., None])[..., 0]" if rc == b else None
    rhs = "{1}.swapaxes(-1, -2)" if rc == b + 1 else "{1}"
    return f"matmul({lhs}, {rhs})"


_MATMUL_FORMS: dict[str, Callable] = {}


def _matmul_form(lhs: np.ndarray, rhs: np.ndarray, dims: DotDims) -> Optional[np.ndarray]:
    """The dot as one np.matmul (see _matmul_template), or None."""
    template = _matmul_template(lhs.ndim, rhs.ndim, dims)
    if template is None:
        return None
    form = _MATMUL_FORMS.get(template)
    if form is None:
        form = _MATMUL_FORMS[template] = eval("lambda a, b: " + template.format("a", "b"), {"matmul": np.matmul})
    return form(lhs, rhs)


def broadcast_view(x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """np.broadcast_to(x, dims) for x of the same rank, as a read-only zero-stride view
    built directly (np.broadcast_to costs several microseconds)."""
    if not x.flags.c_contiguous:
        return np.broadcast_to(x, dims)
    strides = [0 if n == 1 else st for n, st in zip(x.shape, x.strides)]
    view = np.ndarray(dims, x.dtype, buffer=x, strides=strides)
    view.flags.writeable = False
    return view


def _start_indices(ops: Sequence[np.ndarray]) -> list[int]:
    """Start indices from scalar operands (or the older single index-vector operand)."""
    starts: list[int] = []
    for s in ops:
        starts.extend(int(v) for v in np.asarray(s).reshape(-1).tolist())
    return starts


def _replica_groups(value) -> Optional[ReplicaGroups]:
    if value is None or (isinstance(value, ReplicaGroups) and not value.groups):
        return None
    if isinstance(value, ReplicaGroups):
        return value
    return ReplicaGroups(tuple(tuple(g) for g in value)) if value else None


def _async_tuple(shape: Shape, operands: Value, result: Value) -> Value:
    """The value of an async start: (operands, result, context...) per its shape."""
    if not shape.is_tuple or len(shape.tuple_shapes) < 2:
        return result
    return (operands, result) + tuple(zeros_of(s) for s in shape.tuple_shapes[2:])


def _collective_start_value(shape: Shape, operands: Sequence, results: Sequence) -> Value:
    """all-gather-start / collective-permute-start: (operand(s), result(s), context...)."""
    if not shape.is_tuple:
        return results[0]
    ops_value = tuple(operands) if len(operands) > 1 else operands[0]
    res_value = tuple(results) if len(results) > 1 else results[0]
    return _async_tuple(shape, ops_value, res_value)


def bitcast(x: np.ndarray, from_shape: Shape, to_shape: Shape) -> np.ndarray:
    """Reinterpret x's physical buffer (its layout's order) with to_shape's dims, type and layout."""
    src_order = tuple(reversed(from_shape.minor_to_major()))  # major to minor
    physical = np.ascontiguousarray(x.transpose(src_order)) if x.ndim > 1 else np.ascontiguousarray(x)
    to_type = to_shape.element_type
    if physical.dtype != to_type.dtype:
        from_type = from_shape.element_type
        if from_type.bits < 8 or to_type.bits < 8:
            if from_type.bits != to_type.bits:
                raise ValueError(f"cannot bitcast {from_type.name} to {to_type.name}: sub-byte widths differ")
            physical = elementwise.bitcast_convert(physical, from_type, to_type)
        else:
            if physical.nbytes != to_shape.element_count() * to_type.byte_size:
                raise ValueError(f"bitcast from {from_shape} to {to_shape} changes the byte size")
            physical = physical.reshape(-1).view(np.uint8 if to_type.is_pred else to_type.dtype)
            if to_type.is_pred:
                physical = physical != 0
    elif physical.size != to_shape.element_count():
        raise ValueError(f"bitcast from {from_shape} to {to_shape} changes the element count")
    dst_order = tuple(reversed(to_shape.minor_to_major()))
    physical = physical.reshape([to_shape.dims[d] for d in dst_order])
    inverse = [0] * len(dst_order)
    for position, d in enumerate(dst_order):
        inverse[d] = position
    return physical.transpose(inverse) if len(inverse) > 1 else physical


def ragged_dot(lhs: np.ndarray, rhs: np.ndarray, group_sizes: np.ndarray, dims: DotDims,
               ragged_dims: Sequence[int], group_dims: Sequence[int], result_type) -> np.ndarray:
    """HLO ragged-dot: the lhs ragged dimension is cut into consecutive groups of
    `group_sizes` rows; entries past the last group are zero."""
    if len(ragged_dims) != 1:
        raise ValueError(f"ragged-dot needs exactly one lhs_ragged_dims entry, got {list(ragged_dims)}")
    sizes = np.asarray(group_sizes).astype(np.int64)
    if sizes.ndim != 1:
        raise ValueError("ragged-dot with per-row (vectorised) group_sizes is not supported by the interpreter")
    ragged = ragged_dims[0]
    bounds = np.concatenate([[0], np.cumsum(sizes)])

    def in_group(j: int, array: np.ndarray, axis: int) -> np.ndarray:
        """Mask (broadcastable to array) of the positions of group j along axis."""
        positions = np.arange(array.shape[axis])
        shape = [1] * array.ndim
        shape[axis] = array.shape[axis]
        return ((positions >= bounds[j]) & (positions < bounds[j + 1])).reshape(shape)

    zero = np.zeros((), lhs.dtype)
    if ragged in dims.lhs_contracting:  # one output slice per group, contracting its k-range
        return np.stack([linear.dot_general(np.where(in_group(j, lhs, ragged), lhs, zero), rhs, dims,
                                            result_type) for j in range(len(sizes))])
    if ragged in dims.lhs_batch:  # an ordinary batched dot; batch entries past the groups are 0
        out = linear.dot_general(lhs, rhs, dims, result_type)
        axis = list(dims.lhs_batch).index(ragged)
        covered = np.zeros(out.shape[axis], dtype=bool)
        covered[:min(int(bounds[-1]), out.shape[axis])] = True
        shape = [1] * out.ndim
        shape[axis] = out.shape[axis]
        return np.where(covered.reshape(shape), out, np.zeros((), out.dtype))
    if len(group_dims) != 1:
        raise ValueError("ragged-dot with a non-contracting ragged dim needs one rhs_group_dims entry")
    g = group_dims[0]

    def without_g(ds):
        return tuple(d - (d > g) for d in ds)

    inner = DotDims(dims.lhs_batch, dims.lhs_contracting, without_g(dims.rhs_batch),
                    without_g(dims.rhs_contracting))
    free = [d for d in range(lhs.ndim) if d not in dims.lhs_batch and d not in dims.lhs_contracting]
    out_axis = len(dims.lhs_batch) + free.index(ragged)
    total = None
    for j in range(len(sizes)):
        part = linear.dot_general(lhs, np.take(rhs, j, axis=g), inner, result_type)
        if total is None:
            total = np.zeros_like(part)
        total = np.where(in_group(j, part, out_axis), part, total)
    if total is None:
        raise ValueError("ragged-dot needs at least one group")
    return total


def scaled_dot(lhs, rhs, lhs_scale, rhs_scale, dims: DotDims, result_type) -> np.ndarray:
    """HLO scaled-dot: dequantise each operand by its block scales, then dot."""
    f32 = primitive_type("f32")

    def dequantise(data: np.ndarray, scale: np.ndarray) -> np.ndarray:
        values = elementwise.convert(data, type_of_dtype(data.dtype), f32)
        factors = elementwise.convert(scale, type_of_dtype(scale.dtype), f32)
        if factors.ndim != values.ndim:
            raise ValueError(f"scale rank {factors.ndim} differs from operand rank {values.ndim}")
        for axis, (n, s) in enumerate(zip(values.shape, factors.shape)):
            if s != n:
                if s == 0 or n % s:
                    raise ValueError(f"scale dimension {axis} of size {s} does not divide {n}")
                factors = np.repeat(factors, n // s, axis=axis)
        return elementwise.convert(values * factors, f32, result_type)

    return linear.dot_general(dequantise(lhs, lhs_scale), dequantise(rhs, rhs_scale), dims, result_type)


# --------------------------------------------------------------------------- generated code

def _specialise(step: tuple, args: list[str], bind: Callable[[Any], str], setup: Callable[[str], str],
                statics: frozenset) -> Optional[str]:
    """A step as a direct numpy expression of its operands' variables `args`, for
    PlanCode, when the declared types make it exactly what the handler computes
    (the handlers take the same fast paths after checking the same types at run
    time); None keeps the handler call."""
    handler, inst, operands, _ = step
    if handler is Evaluator._h_tuple:
        return "(" + "".join(a + ", " for a in args) + ")"
    if handler is Evaluator._h_get_tuple_element:
        return f"{args[0]}[{int(inst.attrs['index'])}]"
    shape = inst.shape
    in_shapes = [op.shape for op in inst.operands]
    if shape is None or not shape.is_array or any(s is None or not s.is_array for s in in_shapes):
        return None
    in_types = [s.element_type.dtype for s in in_shapes]
    emit = _EMITTERS.get(handler)
    expr = emit(inst, args, in_types, bind) if emit is not None else None
    if handler is Evaluator._h_binary and inst.opcode in _FAST_FLOAT_BINARY and expr is not None:
        static = [a for a, slot in zip(args, operands) if slot in statics]
        if static:  # max(x, 0) and the like: decide once per evaluator how to compute it
            kernel = setup(f"{bind(_extremum_given)}({bind(_FAST_FLOAT_BINARY[inst.opcode])}, {static[0]})")
            expr = f"{kernel}({args[0]}, {args[1]})"
    if expr is not None and shape.rank == 0 and handler not in _KEEPS_ARRAYS:
        expr = f"{bind(_as_array)}({expr})"  # numpy ufuncs give 0-d results as scalars
    return expr


def _specialise_batched(step: tuple, args: list[str], bind: Callable[[Any], str], setup: Callable[[str], str],
                        statics: frozenset) -> Optional[str]:
    """Vectorised computations: values are batches of scalars, so only the handlers
    that do not look at shapes are written out."""
    handler = step[0]
    if handler is Evaluator._h_identity or handler is Evaluator._h_pass_through:
        return args[0]
    if handler is Evaluator._h_tuple or handler is Evaluator._h_get_tuple_element:
        return _specialise(step, args, bind, setup, statics)
    return None


def _emit_unary(inst, args, in_types, bind) -> Optional[str]:
    dtype = in_types[0]
    fast = _FAST_UNARY.get(inst.opcode)
    if fast is not None and dtype in fast[1]:
        return f"{bind(fast[0])}({args[0]})"
    if dtype in _REAL_FLOATS and inst.opcode in _FAST_FLOAT_UNARY:
        fn, in_f64 = _FAST_FLOAT_UNARY[inst.opcode]
        if in_f64 and dtype == _F32:
            return f"{bind(fn)}({args[0]}.astype({bind(np.float64)})).astype({bind(_F32)})"
        return f"{bind(fn)}({args[0]})"
    return None


def _emit_binary(inst, args, in_types, bind) -> Optional[str]:
    if in_types[0] != in_types[1]:
        return None
    fast = _FAST_BINARY.get(inst.opcode)
    if fast is not None and in_types[0] in fast[1]:
        return f"{bind(fast[0])}({args[0]}, {args[1]})"
    if in_types[0] in _REAL_FLOATS and inst.opcode in _FAST_FLOAT_BINARY:
        return f"{bind(_FAST_FLOAT_BINARY[inst.opcode])}({args[0]}, {args[1]})"
    return None


def _emit_compare(inst, args, in_types, bind) -> Optional[str]:
    kind = inst.attrs.get("type")
    x, y = in_types
    if x == y and ((kind in (None, "FLOAT") and x in _REAL_FLOATS) or (kind is None and x in _NATIVE_INTS)):
        return f"{bind(_COMPARE_UFUNCS[inst.attrs['direction']])}({args[0]}, {args[1]})"
    return None


def _emit_select(inst, args, in_types, bind) -> Optional[str]:
    pred, on_true, on_false = in_types
    if pred == np.bool_ and on_true == on_false and on_true.kind != "V":
        return f"{bind(np.where)}({', '.join(args)})"
    return None


def _emit_reshape(inst, args, in_types, bind) -> Optional[str]:
    return f"{args[0]}.reshape({tuple(inst.shape.dims)!r})"


def _emit_transpose(inst, args, in_types, bind) -> Optional[str]:
    return f"{args[0]}.transpose({tuple(inst.attrs['dimensions'])!r})"


def _compact_broadcast_expression(inst, arg: str) -> Optional[str]:
    """_h_broadcast_compact as an expression, when its dimensions are in order and fit."""
    dims = tuple(inst.attrs.get("dimensions", ()))
    source, out_dims = inst.operands[0].shape.dims, inst.shape.dims
    if len(dims) != len(source) or list(dims) != sorted(dims):
        return None
    expanded = [1] * len(out_dims)
    for i, d in enumerate(dims):
        if source[i] != out_dims[d] and source[i] != 1:
            return None  # let the handler report it
        expanded[d] = source[i]
    if tuple(expanded) == tuple(source):
        return arg
    return f"{arg}.reshape({tuple(expanded)!r})"


def _emit_broadcast_compact(inst, args, in_types, bind) -> Optional[str]:
    """Where the new dimensions all lead, numpy's broadcasting (which aligns trailing
    dimensions) needs no reshape: the operand itself will do."""
    source = tuple(inst.operands[0].shape.dims)
    dims = tuple(inst.attrs.get("dimensions", ()))
    rank = inst.shape.rank
    if dims == tuple(range(rank - len(source), rank)) and source == tuple(inst.shape.dims[rank - len(source):]):
        return args[0]
    return _compact_broadcast_expression(inst, args[0])


def _emit_broadcast(inst, args, in_types, bind) -> Optional[str]:
    compact = _compact_broadcast_expression(inst, args[0])
    if compact is None:
        return None
    return f"{bind(broadcast_view)}({compact}, {tuple(inst.shape.dims)!r})"


def _emit_dot(inst, args, in_types, bind) -> Optional[str]:
    lhs, rhs = in_types
    if not (lhs == rhs == inst.shape.element_type.dtype and lhs in _IEEE_FLOATS):
        return None
    template = _matmul_template(inst.operands[0].shape.rank, inst.operands[1].shape.rank, DotDims.of(inst))
    if template is None:
        return None
    return template.replace("matmul", bind(np.matmul)).format(*args)


def _emit_reduce(inst, args, in_types, bind) -> Optional[str]:
    if len(args) != 2:
        return None
    ufunc = binary_ufunc(inst.attrs["to_apply"])
    x_shape, init_shape = inst.operands[0].shape, inst.operands[1].shape
    if ufunc is None or not _ufunc_reducible(in_types[0], in_types[1], x_shape.element_count(),
                                             init_shape.rank, ufunc):
        return None
    dims = tuple(int(d) for d in inst.attrs["dimensions"])
    return f"{bind(_exact_ufunc_reduce)}({args[0]}, {args[1]}, {dims!r}, {bind(ufunc)})"


_EMITTERS: dict[Callable, Callable] = {
    Evaluator._h_unary: _emit_unary, Evaluator._h_binary: _emit_binary, Evaluator._h_compare: _emit_compare,
    Evaluator._h_select: _emit_select, Evaluator._h_reshape: _emit_reshape,
    Evaluator._h_transpose: _emit_transpose, Evaluator._h_broadcast: _emit_broadcast,
    Evaluator._h_broadcast_compact: _emit_broadcast_compact, Evaluator._h_dot: _emit_dot,
    Evaluator._h_reduce: _emit_reduce,
}
# Handlers whose expressions always give arrays, 0-d ones included.
_KEEPS_ARRAYS = frozenset({Evaluator._h_reshape, Evaluator._h_transpose, Evaluator._h_broadcast,
                           Evaluator._h_broadcast_compact})


# --------------------------------------------------------------------------- arguments

def check_arguments(comp: Computation, arguments: Sequence[Value], context: str = "") -> None:
    """HloError unless there is one argument per parameter with its exact type and dims.

    context prefixes the message (e.g. "device 1: ")."""
    params = comp.parameters
    if len(arguments) != len(params):
        loc = params[len(arguments)].loc if len(arguments) < len(params) else (comp.signature_loc or comp.loc)
        missing = (f"; parameter {len(arguments)} (%{params[len(arguments)].name}) has no value"
                   if len(arguments) < len(params) else "")
        raise error(f"{context}computation %{comp.name} takes {len(params)} argument(s), "
                    f"{len(arguments)} given{missing}", loc)
    for param, value in zip(params, arguments):
        if not value_matches(value, param.shape):
            raise error(f"{context}argument for parameter {param.attrs['parameter_number']} (%{param.name}) "
                        f"does not match: expected {param.shape.without_layout()}, given "
                        f"{describe_value(value)}", param.loc)


# --------------------------------------------------------------------------- several devices

def run_devices(module: Module, per_device_args: Sequence[Sequence[Value]], *, replicas: int = 1,
                partitions: int = 1, seed: int = 0, infeed: Iterable = (),
                per_device_infeed: Optional[Sequence[Iterable]] = None,
                profile: bool = False, plans: Optional[_Plans] = None) -> list[Evaluator]:
    """Run the entry computation on replicas x partitions devices, one thread each.

    Device d is replica d // partitions, partition d % partitions. Returns the
    device evaluators; `ev.result` holds each device's value and `ev.outfeed` its
    outfeed. The first failing device's error (lowest device number) is raised.
    plans: compiled computations to reuse (from `new_plans()`) when running a module repeatedly.
    """
    from .collectives import CollectiveContext
    count = replicas * partitions
    if len(per_device_args) != count:
        raise ValueError(f"{len(per_device_args)} argument lists for {count} devices")
    for d, args in enumerate(per_device_args):
        check_arguments(module.entry, args, f"device {d}: " if count > 1 else "")
    ctx = CollectiveContext(replicas, partitions)
    plans = plans if plans is not None else _Plans()
    infeed = list(infeed)
    evaluators = [Evaluator(module, seed=seed, device=ctx.device(d // partitions, d % partitions),
                            infeed=per_device_infeed[d] if per_device_infeed is not None else infeed,
                            profile=profile, plans=plans) for d in range(count)]
    if count == 1:
        evaluators[0].result = evaluators[0].run(per_device_args[0])
        return evaluators
    errors: dict[int, BaseException] = {}
    done = threading.Event()

    def work(d: int) -> None:
        try:
            evaluators[d].result = evaluators[d].run(per_device_args[d])
        except BaseException as exc:  # reported to the caller below
            errors[d] = exc
            ctx.abort(f"device {d} failed: {exc}")
            done.set()

    threads = [threading.Thread(target=work, args=(d,), daemon=True, name=f"hlo-device-{d}")
               for d in range(count)]
    for t in threads:
        t.start()
    _wait_for(threads, done)
    if errors:
        raise errors[min(errors)]
    return evaluators


def _wait_for(threads: list[threading.Thread], failed: threading.Event, grace: float = 2.0) -> None:
    """Join every thread; once one device failed, give the others `grace` seconds
    (they may be waiting in a collective for the failed one) and leave them."""
    for t in threads:
        while t.is_alive():
            t.join(0.05)
            if failed.is_set():
                deadline = time.monotonic() + grace
                for other in threads:
                    other.join(max(0.0, deadline - time.monotonic()))
                return
