"""The HLO interpreter: run a module on numpy arrays.

    run(module_or_text, *arrays, replicas=None, partitions=None,
        per_device_inputs=None, infeed=None, seed=0)

returns the result's array leaves (tuple results flattened depth-first) as a
list of numpy arrays in their storage dtypes (ml_dtypes for bf16/f8), or, when
replicas x partitions > 1, one such list per device (device d = replica
d // partitions, partition d % partitions). `Evaluator` gives finer control
(profiling, outfeed, calling single computations); `run_devices` runs several
devices and returns their evaluators.

Every opcode's handler is in `HANDLERS` (or recorded there as unsupported, with the
reason): the family modules below register theirs on import.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..analysis.loading import load_module
from ..ir import Module
from ..runtime.values_io import array_leaves, to_storage
# The family modules: each registers its handlers in HANDLERS when imported.
from . import (collectives, control, data_movement, elementwise, indexing, lapack, linalg,  # noqa: F401
               linear, rng, sorting, transfers, tridiagonal_solve, windows)
from .control import CUSTOM_CALL_TARGETS, register_custom_call
from .evaluator import Evaluator, run_devices
from .handlers import HANDLERS
from .plans import new_plans
from .values import check_arguments

__all__ = ["run", "Evaluator", "run_devices", "new_plans", "register_custom_call", "CUSTOM_CALL_TARGETS",
           "HANDLERS", "check_arguments"]


def run(module_or_text, *arrays, replicas: Optional[int] = None, partitions: Optional[int] = None,
        per_device_inputs: Optional[Sequence[Sequence]] = None, infeed: Optional[Sequence] = None,
        seed: int = 0):
    """Run a module (or HLO text) on arrays, one per entry parameter.

    Arrays may use the file conventions of hlo.runtime.values_io (bf16 as
    uint16 raw bits ...); anything else must have the parameter's storage dtype.
    replicas/partitions default to the module's replica_count/num_partitions.
    per_device_inputs: one argument list per device (instead of `arrays` for all).
    infeed: arrays consumed in order by the infeed ops (each device gets a copy).
    Text is checked first; a Module is taken as checked (hlo.check_module).
    Raises hlo.HloError for malformed modules, mismatched inputs and runtime errors.
    """
    module = _as_module(module_or_text)
    replicas = module.config.replica_count if replicas is None else replicas
    partitions = module.config.num_partitions if partitions is None else partitions
    count = replicas * partitions
    shapes = [p.shape for p in module.entry.parameters]
    if per_device_inputs is None:
        per_device_inputs = [arrays] * count
    elif arrays:
        raise ValueError("give either arrays or per_device_inputs, not both")
    args = [[to_storage(a, s) for a, s in zip(inputs, shapes)] + list(inputs[len(shapes):])
            for inputs in per_device_inputs]
    evaluators = run_devices(module, args, replicas=replicas, partitions=partitions, seed=seed,
                             infeed=infeed or ())
    results = [array_leaves(ev.result) for ev in evaluators]
    return results[0] if count == 1 else results


def _as_module(module_or_text) -> Module:
    """A Module as given (the caller has checked it), or text parsed and checked: a shape
    written wrong would otherwise give a wrong answer instead of an error."""
    if isinstance(module_or_text, Module):
        return module_or_text
    return load_module(module_or_text, "<module>")
