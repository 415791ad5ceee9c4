"""The JIT's collective runtime: the hook table of a compiled module, in Python.

A `CollectiveHooks` serves one device: its `device_id` and `collective` hooks
(hlo/runtime/c/hlo_collectives.h) are ctypes callbacks that read the call's description
and run it through the interpreter's collectives (hlo.interpreter.collectives.DeviceView):
the same membership rules, the same fold in group order, and the same transport as the
interpreter, threads meeting in this process or MPI ranks
(hlo.interpreter.mpi_collectives). So a compiled program gives the interpreter's
collective results bit for bit, in one process or over MPI.

    hooks = CollectiveHooks(context.device(replica, partition))
    hooks.install(executable)          # points <entry>_collectives at the table
    leaves = hooks.run(executable, *arrays)   # raises the failure of a collective, if any
"""
from __future__ import annotations

import ctypes
import threading
from typing import Optional

import numpy as np

from ..analysis.loading import load_module
from ..attributes import ReplicaGroups
from ..diagnostics import HloError, error
from ..interpreter import Evaluator
from ..interpreter.collectives import CollectiveContext, device_groups, group_mode
from ..opcodes import Op
from ..shapes import PRIMITIVE_TYPES
from .collectives import ELEMENT_TYPES, KINDS, table_global_name
from .jit import JitExecutable

_I64P = ctypes.POINTER(ctypes.c_int64)


class Description(ctypes.Structure):
    """struct hlo_collective."""
    _fields_ = [("kind", ctypes.c_int32), ("element_type", ctypes.c_int32), ("element_bytes", ctypes.c_int32),
                ("reduction", ctypes.c_int32), ("channel_id", ctypes.c_int64),
                ("use_global_device_ids", ctypes.c_int32), ("num_replicas", ctypes.c_int32),
                ("num_partitions", ctypes.c_int32), ("num_groups", ctypes.c_int32), ("num_pairs", ctypes.c_int32),
                ("reserved", ctypes.c_int32), ("group_starts", _I64P), ("ids", _I64P), ("pairs", _I64P),
                ("outer", ctypes.c_int64), ("inner_bytes", ctypes.c_int64), ("count", ctypes.c_int64),
                ("index", ctypes.c_int64), ("name", ctypes.c_char_p), ("to_apply", ctypes.c_char_p)]


DEVICE_ID = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p)
HOOK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(Description), ctypes.c_void_p,
                        ctypes.c_void_p)


class Table(ctypes.Structure):
    """struct hlo_collectives_table."""
    _fields_ = [("context", ctypes.c_void_p), ("device_id", DEVICE_ID), ("collective", HOOK)]


_TYPE = {code: name for name, code in ELEMENT_TYPES.items()}


class CollectiveHooks:
    """The hook table of one device (keep the object alive while compiled code may call it)."""

    def __init__(self, device):
        self.device = device
        self.failure: Optional[BaseException] = None
        self._device_id = DEVICE_ID(self._flat_id)
        self._collective = HOOK(self._run_collective)
        self.table = Table(None, self._device_id, self._collective)
        self._combiners: dict[bytes, object] = {}

    def combiner(self, op):
        """The call's to_apply computation, as the interpreter runs it (one evaluator per device:
        an evaluator serves one thread)."""
        text = op.to_apply or b""
        found = self._combiners.get(text)
        if found is None:
            module = load_module(text.decode(), "<to_apply>")
            found = self._combiners[text] = Evaluator(module).combiner(module.entry)
        return found

    def install(self, executable) -> None:
        """Point the executable's <entry>_collectives at this table (if it has collectives)."""
        address = executable._engine.get_global_value_address(table_global_name(executable.NAME))
        if address:
            ctypes.c_void_p.from_address(address).value = ctypes.addressof(self.table)

    def run(self, executable, *arrays, **options) -> list:
        """executable.run, then the failure of a collective (an HloError at its instruction)."""
        self.failure = None
        leaves = executable.run(*arrays, **options)
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        return leaves

    # -- the hooks (C calls these: no exception may escape)

    def _flat_id(self, _context) -> int:
        return self.device.flat_id

    def _run_collective(self, _context, description, source, target) -> int:
        op = description.contents
        try:
            self.device.instruction = _name(op)
            with np.errstate(all="ignore"):     # inf and NaN are values like any other, as in the interpreter
                _KIND[op.kind](self, op, source, target)
            return 0
        except HloError as exc:
            self.failure = exc
        except (ValueError, ArithmeticError) as exc:   # what the interpreter's collectives raise
            self.failure = error(f"{_name(op)}: {exc}")
        except BaseException as exc:  # noqa: BLE001 (reported by run(), never lost in C)
            self.failure = exc
        return 1


# --------------------------------------------------------------------------- each kind

def _all_reduce(hooks, op, source, target) -> None:
    dtype = _dtype(op)
    x = _view(source, op.count, dtype)
    result = hooks.device.all_reduce([x], _groups(op), _channel(op), op.use_global_device_ids == 1,
                                     hooks.combiner(op))[0]
    _view(target, op.count, dtype)[...] = result


def _all_gather(hooks, op, source, target) -> None:
    x = _view(source, op.outer * op.inner_bytes, np.uint8).reshape(op.outer, op.inner_bytes)
    result = hooks.device.all_gather([x], 1, _groups(op), _channel(op), op.use_global_device_ids == 1)[0]
    _view(target, result.size, np.uint8).reshape(result.shape)[...] = result


def _reduce_scatter(hooks, op, source, target) -> None:
    dtype = _dtype(op)
    inner = op.inner_bytes // op.element_bytes
    n = _group_size(hooks.device, op)
    x = _view(source, op.outer * n * inner, dtype).reshape(op.outer, n * inner)
    result = hooks.device.reduce_scatter([x], 1, _groups(op), _channel(op), op.use_global_device_ids == 1,
                                         hooks.combiner(op))[0]
    _view(target, op.outer * inner, dtype).reshape(op.outer, inner)[...] = result


def _all_to_all(hooks, op, source, target) -> None:
    n = _group_size(hooks.device, op)
    size = op.outer * n * op.inner_bytes
    x = _view(source, size, np.uint8).reshape(op.outer, n * op.inner_bytes)
    result = hooks.device.all_to_all([x], 1, _groups(op), _channel(op))[0]
    _view(target, size, np.uint8).reshape(result.shape)[...] = result


def _collective_permute(hooks, op, source, target) -> None:
    pairs = [(op.pairs[2 * k], op.pairs[2 * k + 1]) for k in range(op.num_pairs)]
    result = hooks.device.collective_permute(_view(source, op.count, np.uint8), pairs, _channel(op))
    _view(target, op.count, np.uint8)[...] = result


def _collective_broadcast(hooks, op, source, target) -> None:
    result = hooks.device.collective_broadcast([_view(source, op.count, np.uint8)], _groups(op), _channel(op))[0]
    _view(target, op.count, np.uint8)[...] = result


_COLLECTIVES = {Op.ALL_REDUCE: _all_reduce, Op.ALL_GATHER: _all_gather, Op.REDUCE_SCATTER: _reduce_scatter,
                Op.ALL_TO_ALL: _all_to_all, Op.COLLECTIVE_PERMUTE: _collective_permute,
                Op.COLLECTIVE_BROADCAST: _collective_broadcast}
_KIND = {KINDS[op]: run for op, run in _COLLECTIVES.items()}     # description.kind -> how to run it


# --------------------------------------------------------------------------- reading a description

def _name(op) -> str:
    return op.name.decode(errors="replace") if op.name else f"collective #{op.index}"


def _view(address: int, count: int, dtype) -> np.ndarray:
    """count elements of dtype at address, without a copy."""
    dtype = np.dtype(dtype)
    if count == 0:
        return np.empty(0, dtype)
    raw = (ctypes.c_uint8 * (count * dtype.itemsize)).from_address(address)
    return np.frombuffer(raw, dtype=dtype, count=count)


def _dtype(op) -> np.dtype:
    name = _TYPE.get(op.element_type)
    if name is None:
        raise ValueError(f"no reduction for element type code {op.element_type}")
    return PRIMITIVE_TYPES[name].dtype


def _groups(op) -> Optional[ReplicaGroups]:
    if op.num_groups == 0:
        return None
    starts = [op.group_starts[g] for g in range(op.num_groups + 1)]
    return ReplicaGroups(tuple(tuple(op.ids[i] for i in range(starts[g], starts[g + 1]))
                               for g in range(op.num_groups)))


def _channel(op) -> Optional[int]:
    return None if op.channel_id < 0 else op.channel_id


def _group_size(device, op) -> int:
    """How many members this device's group has (the blocks its buffers split into)."""
    global_ids = None if op.use_global_device_ids < 0 else op.use_global_device_ids == 1
    mode = group_mode(_channel(op), global_ids)
    groups = _groups(op)
    ids = tuple(tuple(g) for g in groups.groups) if groups is not None else ()
    ctx = device.context
    members = device_groups(mode, ids, ctx.num_replicas, ctx.num_partitions)
    return len(members[device.flat_id])


# --------------------------------------------------------------------------- several devices

def run_compiled_devices(module, per_device_args, *, replicas: int = 1, partitions: int = 1,
                         context: Optional[CollectiveContext] = None, devices=None, threads: Optional[int] = None,
                         executables: Optional[list] = None) -> list[list[np.ndarray]]:
    """Run a compiled module on devices, one thread each (as hlo.interpreter.run_devices does),
    its collectives through `context` (threads in this process by default; an
    hlo.interpreter.mpi_collectives context for MPI ranks). Returns each device's result leaves.

    executables: a list of one (JitExecutable, CollectiveHooks) per device; an empty list is
    filled on the first call, and the next calls with it run the same executables again."""
    ctx = context if context is not None else CollectiveContext(replicas, partitions)
    numbers = list(devices) if devices is not None else list(range(replicas * partitions))
    if executables is None:
        executables = []
    if not executables:
        for d in numbers:
            executable = JitExecutable(module, threads=threads)
            hooks = CollectiveHooks(ctx.device(d // partitions, d % partitions))
            hooks.install(executable)
            executables.append((executable, hooks))
    results: dict[int, list] = {}
    errors: dict[int, BaseException] = {}

    def work(i: int) -> None:
        executable, hooks = executables[i]
        try:
            results[i] = hooks.run(executable, *per_device_args[i])
        except BaseException as exc:  # reported to the caller below
            errors[i] = exc
            ctx.abort(f"device {numbers[i]} failed: {exc}")

    if len(numbers) == 1:
        work(0)
    else:
        pool = [threading.Thread(target=work, args=(i,), daemon=True, name=f"hlo-compiled-device-{d}")
                for i, d in enumerate(numbers)]
        for t in pool:
            t.start()
        for t in pool:
            while t.is_alive():
                t.join(0.05)
    if errors:
        raise errors[min(errors)]
    return [results[i] for i in range(len(numbers))]
