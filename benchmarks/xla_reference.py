"""XLA:CPU as a reference for the benchmarks: HLO text in, a callable on arrays out (jax optional)."""
from __future__ import annotations

from typing import Callable

import numpy as np


def xla_compiler() -> Callable[[str], Callable] | None:
    """A function HLO text -> callable(*arrays) on XLA:CPU, or None when jax is not importable."""
    try:
        import jax
        from jax._src import compiler as jax_compiler
        from jax._src.lib import xla_client
        from jaxlib import _hlo
    except ImportError:
        return None
    backend = jax.devices("cpu")[0].client
    try:   # jaxlib binds its LAPACK kernels (scipy's LAPACK) only when jax lowers a LAPACK call:
        from jaxlib import lapack   # without this, a module with LAPACK custom calls crashes XLA
        lapack._lapack.initialize()
    except (ImportError, AttributeError):
        pass

    def compile_text(text: str) -> Callable:
        module = _hlo.hlo_module_from_text(text)
        computation = _hlo.XlaComputation(module.as_serialized_hlo_module_proto())
        mlir = xla_client._xla.mlir.xla_computation_to_mlir_module(computation)
        devices = xla_client.DeviceList(tuple(jax.devices("cpu")[:1]))
        options = jax_compiler.get_compile_options(num_replicas=1, num_partitions=1)
        executable = backend.compile_and_load(mlir, devices, options)
        device = jax.devices("cpu")[0]

        def run(*arrays):
            buffers = [jax.device_put(a, device) for a in arrays]
            outputs = executable.execute(buffers)
            for out in outputs:
                out.block_until_ready()
            return [np.asarray(out) for out in outputs]
        return run
    return compile_text
