"""XLA:CPU as an oracle, in a child process (jax optional; the project never imports it).

`XlaRunner().run(text, inputs, replicas, leaf_types)` compiles HLO text with jaxlib as
benchmarks/xla_reference.py does (HLO -> StableHLO -> XLA:CPU, with `replicas` devices) and
returns ("ran", outputs per device), ("refused", XLA's message) or ("crashed", why): XLA's
parser and dynamic-shape support abort the process on some inputs, so it runs in a child
that is restarted when it dies. This file is also the child's program: it imports nothing
from the project (run as a script, it could not).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

import numpy as np


def jax_available() -> bool:
    try:
        import importlib.util
        return importlib.util.find_spec("jax") is not None and importlib.util.find_spec("jaxlib") is not None
    except (ImportError, ValueError):
        return False


class XlaRunner:
    """A child process running XLA:CPU on request (one at a time)."""

    def __init__(self, timeout: float = 120.0):
        self.timeout = timeout
        self._child: Optional[subprocess.Popen] = None
        self._dir = tempfile.mkdtemp(prefix="hlo-fuzz-xla-")

    def _start(self) -> subprocess.Popen:
        if self._child is None or self._child.poll() is not None:
            env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
            self._child = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                           stderr=subprocess.DEVNULL, text=True, env=env)
        return self._child

    def run(self, text: str, inputs: list[list[np.ndarray]], replicas: int, leaf_types: list[str]):
        request = Path(self._dir) / "request"
        request.mkdir(exist_ok=True)
        (request / "module.hlo").write_text(text)
        arrays = {f"dev{d}_arg{i}": np.asarray(a) for d, args in enumerate(inputs) for i, a in enumerate(args)}
        np.savez(request / "inputs.npz", **arrays)
        (request / "spec.json").write_text(json.dumps({"replicas": replicas, "leaf_types": leaf_types}))
        child = self._start()
        try:
            child.stdin.write(str(request) + "\n")
            child.stdin.flush()
            line = _read_line(child, self.timeout)
        except (BrokenPipeError, OSError):
            line = None
        if not line:
            self.close()
            return "crashed", "XLA's process died"
        verdict = json.loads(line)
        if verdict["status"] != "ran":
            return verdict["status"], verdict.get("message", "")
        data = np.load(request / "outputs.npz")
        outputs = [[data[f"dev{d}_out{i}"] for i in range(verdict["count"])] for d in range(replicas)]
        return "ran", outputs

    def close(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.wait()
            self._child = None


def _read_line(child: subprocess.Popen, timeout: float) -> Optional[str]:
    import selectors
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ)
    ready = selector.select(timeout)
    selector.close()
    return child.stdout.readline() if ready else None


# --------------------------------------------------------------------------- the child

def _serve() -> None:
    import jax
    jax.config.update("jax_enable_x64", True)
    for line in sys.stdin:
        request = Path(line.strip())
        try:
            verdict = _run_request(request)
        except Exception as exc:  # noqa: BLE001 - XLA's refusal, whatever its kind
            verdict = {"status": "refused", "message": " | ".join(str(exc).strip().split("\n")[:3])[:700]}
        sys.stdout.write(json.dumps(verdict) + "\n")
        sys.stdout.flush()


def _run_request(request: Path) -> dict:
    spec = json.loads((request / "spec.json").read_text())
    text = (request / "module.hlo").read_text()
    inputs = dict(np.load(request / "inputs.npz"))
    outputs = run_text(text, inputs, spec["replicas"], spec["leaf_types"])
    np.savez(request / "outputs.npz", **outputs)
    return {"status": "ran", "count": len([k for k in outputs if k.startswith("dev0_")])}


def run_text(text: str, inputs: dict, replicas: int, leaf_types: list[str]) -> dict:
    """Compile and run with XLA:CPU: inputs devD_argI (bf16 as raw bits) -> outputs devD_outI."""
    import jax
    import ml_dtypes
    from jax._src import compiler as jax_compiler
    from jax._src.lib import xla_client
    from jax.sharding import Mesh, NamedSharding, PartitionSpec
    from jaxlib import _hlo

    module = _hlo.hlo_module_from_text(text)
    computation = _hlo.XlaComputation(module.as_serialized_hlo_module_proto())
    mlir = xla_client._xla.mlir.xla_computation_to_mlir_module(computation)
    devices = jax.devices("cpu")[:replicas]
    options = jax_compiler.get_compile_options(num_replicas=replicas, num_partitions=1)
    executable = devices[0].client.compile_and_load(mlir, xla_client.DeviceList(tuple(devices)), options)

    def arg(d: int, i: int):
        a = np.array(inputs[f"dev{d}_arg{i}"])
        name = ML_DTYPES.get(leaf_types[i])
        if name is not None and a.dtype.kind == "u":  # raw bits, as files hold them
            a = a.view(getattr(ml_dtypes, name))
        return a[()] if a.ndim == 0 else a  # (a 0-d array as a dynamic size crashes XLA:CPU; a scalar does not)

    count = len(leaf_types)
    if replicas == 1:
        results = executable.execute([jax.device_put(arg(0, i), devices[0]) for i in range(count)])
        return {f"dev0_out{i}": _to_file(np.asarray(r)) for i, r in enumerate(results)}
    mesh = Mesh(np.array(devices), ("d",))
    sharding = NamedSharding(mesh, PartitionSpec("d"))
    args = []
    for i in range(count):
        shards = [jax.device_put(np.asarray(arg(d, i))[None], devices[d]) for d in range(replicas)]
        args.append(jax.make_array_from_single_device_arrays((replicas,) + shards[0].shape[1:], sharding, shards))
    per_output = executable.execute_sharded(args).disassemble_into_single_device_arrays()
    return {f"dev{d}_out{i}": _to_file(np.asarray(r[d])) for i, r in enumerate(per_output) for d in range(replicas)}


# HLO float types numpy lacks, by their ml_dtypes names (files hold their raw bits).
ML_DTYPES = {"bf16": "bfloat16", "f8e5m2": "float8_e5m2", "f8e4m3": "float8_e4m3", "f8e4m3fn": "float8_e4m3fn",
             "f8e4m3b11fnuz": "float8_e4m3b11fnuz", "f8e3m4": "float8_e3m4", "f8e5m2fnuz": "float8_e5m2fnuz",
             "f8e4m3fnuz": "float8_e4m3fnuz", "f8e8m0fnu": "float8_e8m0fnu"}


def _to_file(a: np.ndarray) -> np.ndarray:
    """What the project's files hold (values_io.file_dtype): ml_dtypes floats as their raw bits,
    sub-byte integers (int4, uint2, ...) as int8 / uint8 numbers (np.savez can store neither)."""
    if a.dtype.name.startswith(("int", "uint")) and a.dtype.kind == "V":
        return a.astype(np.uint8 if a.dtype.name.startswith("u") else np.int8)
    return a.view(f"u{a.dtype.itemsize}") if a.dtype.kind == "V" or a.dtype.name in ML_DTYPES.values() else a


if __name__ == "__main__":
    _serve()
