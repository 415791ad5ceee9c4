"""The HLO evaluator: runs a parsed module with whole-array numpy kernels.

Values are numpy arrays, tuples and tokens (values.py). A computation runs as its
`Plan` (plans.py), compiled once and shared by the evaluators of every device; the
steps of a plan call the handlers of the family modules (HANDLERS, handlers.py). The
first run of a plan goes step by step; later runs call its generated Python function
(plan_code.py); profile mode always runs the steps one by one to time them. Called
computations become `Combiner`s for the kernels (reduce, sort, scatter, map ...): the
computation is evaluated *vectorised*, on whole arrays of scalars at once, when every
instruction is a scalar elementwise op; otherwise it is evaluated element by element.

Collectives go through `hlo.interpreter.collectives` (one thread per device when
replicas x partitions > 1, see `run_devices`). Every kernel ValueError becomes an
HloError at the failing instruction, naming its opcode.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Callable, Iterable, Optional, Sequence

import numpy as np

from ..diagnostics import HloError, error
from ..ir import Computation, Instruction, Module
from ..opcodes import Op, Trait
from .collectives import CollectiveContext
from .combiner import Combiner, binary_ufunc
from .plans import Plan, Plans
from .rng import RngState
from .values import Value, check_arguments, leaves

# What kernels raise for inputs they cannot handle (numbers out of range included, and
# memory the module asks for that the machine does not have).
_KERNEL_ERRORS = (ValueError, ArithmeticError, MemoryError)

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
    observer: when given, the module runs step by step without inlining calls and fusions,
             and observer(inst, value, operands, sites) is called after every instruction
             that computes a value (not those that only pass one through), outside the
             computations that kernels apply per element (reduce, sort, map ...). sites is
             the list of [instruction, iteration] of the calls, fusions, while loops and
             conditionals the instruction runs in, outermost first; iteration counts the
             completed runs of a while loop's body. Whatever the observer raises (other
             than ValueError, ArithmeticError, MemoryError) stops the run.

    After `run`, `self.outfeed` holds the values written by `outfeed` and host `send`.
    An evaluator may run its module many times (plans and constant-derived values
    are built once); the module must not be modified meanwhile.
    """

    def __init__(self, module: Module, *, seed: int = 0, infeed: Iterable = (), device=None,
                 profile: bool = False, plans: Optional[Plans] = None, observer: Optional[Callable] = None):
        self.module = module
        self._seed = seed
        self._rng_state: Optional[RngState] = None
        self.infeed = collections.deque(leaves(tuple(infeed)))
        self.outfeed: list[Value] = []
        self.channels: dict[Optional[int], collections.deque] = collections.defaultdict(collections.deque)
        self._device = device
        self.plans = plans if plans is not None else Plans()  # shared by the devices of a run
        self._combiners: dict[int, Combiner] = {}
        self._prefilled: dict[Plan, list] = {}  # per plan: slots with the static values filled in
        self._compiled: dict[Plan, Callable] = {}  # per plan: its generated code bound to this evaluator
        self._entry_signature: Optional[list] = None
        self.profile: Optional[dict[Instruction, list]] = {} if profile else None
        self._child_time = 0.0
        self.observer = observer
        self.sites: list[list] = []   # (observer) [instruction, iteration] of the enclosing calls and loops

    # -- entry points
    @property
    def rng_state(self) -> RngState:
        """The random state of the `rng` ops (created on first use: seeding costs time)."""
        if self._rng_state is None:
            self._rng_state = RngState(self._seed)
        return self._rng_state

    @property
    def device(self):
        if self._device is None:
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
        plan = self.plans.plan(comp, observed=self.observer is not None)
        if _FP_ERRORS is None:
            with np.errstate(all="ignore"):  # inf and NaN are values like any other here
                return self.execute(plan, args)
        token = _FP_ERRORS.set(_IGNORE_FP_ERRORS)  # np.errstate(all="ignore") without its overhead
        try:
            return self.execute(plan, args)
        finally:
            _FP_ERRORS.reset(token)

    # -- the interpreter loop
    def execute(self, plan: Plan, args: Sequence[Value]) -> Value:
        """Run a plan (of `self.plans`) on argument values: how handlers run called computations."""
        if self.profile is not None:
            return self._execute_stepwise(plan, args, self._run_steps_profiled)
        if self.observer is not None:
            return self._execute_observed(plan, args)
        run = self._compiled.get(plan)
        if run is None:
            if plan.code is None and not plan.ran:
                # Generating code costs more than a run: only for plans that run again.
                plan.ran = True
                return self._execute_stepwise(plan, args, self._run_steps)
            prefilled = self._prefilled.get(plan)
            statics = prefilled if prefilled is not None else self._prefill(plan)
            run = self._compiled[plan] = self.plans.code(plan).bind(self, statics)
        try:
            return run(args)
        except _KERNEL_ERRORS as exc:
            inst = plan.code.failing_instruction(exc.__traceback__) or plan.computation.root
            raise self._kernel_error(inst, exc) from None

    def _execute_stepwise(self, plan: Plan, args: Sequence[Value], run_steps: Callable) -> Value:
        """execute step by step (run_steps: _run_steps, or _run_steps_profiled to time each step)."""
        prefilled = self._prefilled.get(plan)
        values = (prefilled if prefilled is not None else self._prefill(plan)).copy()
        for slot, number in plan.param_slots:
            values[slot] = args[number]
        run_steps(plan.steps, values)
        return values[plan.root_slot]

    def _prefill(self, plan: Plan) -> list:
        """Compute a plan's static slots (once per evaluator)."""
        values: list = [None] * plan.size
        if self.profile is not None:
            self._run_steps_profiled(plan.static_steps, values)
        elif plan.observed:
            self._run_steps_observed(plan.static_steps, values)
        else:
            self._run_steps(plan.static_steps, values)
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

    def _execute_observed(self, plan: Plan, args: Sequence[Value]) -> Value:
        """execute for an observer: the plans of called computations are observed ones (no
        inlining) and a while loop's body run counts as one iteration of its site."""
        if not plan.observed:
            plan = self.plans.plan(plan.computation, plan.batched, observed=True)
        result = self._execute_stepwise(plan, args, self._run_steps_observed)
        site = self.sites[-1] if self.sites else None
        if site is not None and site[0].opcode == Op.WHILE and site[0].attrs["body"] is plan.computation:
            site[1] += 1
        return result

    def _run_steps_observed(self, steps: list, values: list) -> None:
        observe, sites = self.observer, self.sites
        for handler, inst, operands, slot in steps:
            args = [values[i] for i in operands]
            calls = inst.info.has(Trait.RUNS_COMPUTATIONS_AS_CODE) or inst.opcode == Op.FUSION
            if calls:
                sites.append([inst, 0])
            try:
                values[slot] = handler(self, inst, args)
            except _KERNEL_ERRORS as exc:
                raise self._kernel_error(inst, exc) from None
            finally:
                if calls:
                    sites.pop()
            observe(inst, values[slot], args, sites)

    @staticmethod
    def _kernel_error(inst: Instruction, exc: Exception) -> HloError:
        return error(f"{inst.opcode} failed: {exc}", inst.loc)

    # -- called computations
    def combiner(self, comp: Computation) -> Combiner:
        """The computation as a Combiner (vectorised when possible), cached."""
        found = self._combiners.get(id(comp))
        if found is None:
            if self.plans.vectorisable(comp):
                plan = self.plans.plan(comp, batched=True)
                fn = self._vectorised_fn(plan)
            else:
                fn = self._elementwise_fn(comp)
            if self.observer is not None:
                fn = self._unobserved(fn)
            found = Combiner(fn, len(comp.parameters), binary_ufunc(comp), comp.name)
            self._combiners[id(comp)] = found
        return found

    def _unobserved(self, fn: Callable) -> Callable:
        """fn run without the observer: a computation applied per element is part of its caller."""
        def run(*args):
            observer, self.observer = self.observer, None
            try:
                return fn(*args)
            finally:
                self.observer = observer
        return run

    def _vectorised_fn(self, plan: Plan) -> Callable:
        def fn(*args):
            result = self.execute(plan, args)
            return result if isinstance(result, tuple) else (result,)
        return fn

    def _elementwise_fn(self, comp: Computation) -> Callable:
        """Evaluate comp once per element (for computations with non-scalar steps)."""
        plan = self.plans.plan(comp)

        def fn(*args):
            arrays = np.broadcast_arrays(*[np.asarray(a) for a in args])
            shape = arrays[0].shape if arrays else ()
            outs: Optional[list] = None
            for index in np.ndindex(*shape):
                result = self.execute(plan, [np.asarray(a[index]) for a in arrays])
                parts = result if isinstance(result, tuple) else (result,)
                if outs is None:
                    outs = [np.empty(shape, dtype=np.asarray(p).dtype) for p in parts]
                for out, part in zip(outs, parts):
                    out[index] = part
            if outs is None:  # empty batch: results of the right types, no elements
                outs = [np.empty(shape, dtype=s.element_type.dtype) for _, s in comp.root.shape.leaves()]
            return tuple(outs)
        return fn


# --------------------------------------------------------------------------- several devices

def run_devices(module: Module, per_device_args: Sequence[Sequence[Value]], *, replicas: int = 1,
                partitions: int = 1, seed: int = 0, infeed: Iterable = (),
                per_device_infeed: Optional[Sequence[Iterable]] = None,
                profile: bool = False, plans: Optional[Plans] = None,
                context: Optional[CollectiveContext] = None,
                devices: Optional[Sequence[int]] = None) -> list[Evaluator]:
    """Run the entry computation on replicas x partitions devices, one thread each.

    Device d is replica d // partitions, partition d % partitions. Returns the
    device evaluators; `ev.result` holds each device's value and `ev.outfeed` its
    outfeed. The first failing device's error (lowest device number) is raised.
    plans: compiled computations to reuse (from `new_plans()`) when running a module repeatedly.
    context, devices: the collectives' context (one with devices in other processes, e.g.
    hlo.interpreter.mpi_collectives) and the devices to run here; per_device_args (and
    per_device_infeed) then hold the arguments of those devices, in that order.
    """
    ctx = context if context is not None else CollectiveContext(replicas, partitions)
    total = replicas * partitions
    numbers = list(devices) if devices is not None else list(range(total))
    count = len(numbers)
    if len(per_device_args) != count:
        raise ValueError(f"{len(per_device_args)} argument lists for {count} devices")
    for d, args in zip(numbers, per_device_args):
        check_arguments(module.entry, args, f"device {d}: " if total > 1 else "")
    plans = plans if plans is not None else Plans()
    infeed = list(infeed)
    evaluators = [Evaluator(module, seed=seed, device=ctx.device(d // partitions, d % partitions),
                            infeed=per_device_infeed[i] if per_device_infeed is not None else infeed,
                            profile=profile, plans=plans) for i, d in enumerate(numbers)]
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
            ctx.abort(f"device {numbers[d]} failed: {exc}")
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
