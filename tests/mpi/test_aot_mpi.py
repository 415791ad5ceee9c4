"""AOT objects with collectives, linked with the shipped hlo_collectives_mpi.c by mpicc and run
under mpiexec (one device per rank): every device's results are the interpreter's, bit for bit."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hlo
from hlo.analysis.loading import load_module
from hlo.codegen.aot import compile_aot, from_physical_bytes, to_physical_bytes
from hlo.interpreter import run_devices
from hlo.runtime import values_io
from mpi_cases import AOT, CASES, device_inputs
from mpi_helpers import HERE, find_mpiexec

RUNTIME = Path(hlo.__file__).resolve().parent / "runtime" / "c"


def find_mpicc():
    here = os.path.dirname(sys.executable)
    return shutil.which("mpicc", path=here + os.pathsep + os.environ.get("PATH", ""))


@pytest.mark.skipif(find_mpicc() is None, reason="no mpicc")
@pytest.mark.parametrize("name", AOT)
def test_aot_object_with_the_mpi_hooks_gives_the_interpreters_bits(tmp_path, name):
    module = load_module(CASES[name], name)
    devices = module.config.replica_count * module.config.num_partitions
    shapes = [p.shape for p in module.entry.parameters]
    inputs = device_inputs(name)
    args = [[values_io.to_storage(inputs[f"dev{d}_arg{i}"], s) for i, s in enumerate(shapes)] for d in range(devices)]
    expected = [values_io.array_leaves(ev.result) for ev in run_devices(
        module, args, replicas=module.config.replica_count, partitions=module.config.num_partitions)]

    artifacts = compile_aot(module, "m")
    assert "extern hlo_collectives_table* m_collectives;" in artifacts.header
    (tmp_path / "m.o").write_bytes(artifacts.object_code)
    (tmp_path / "m.h").write_text(artifacts.header)
    for d in range(devices):
        data = b"".join(to_physical_bytes(a, s) for a, s in zip(args[d], artifacts.lowered.params))
        (tmp_path / f"in{d}.bin").write_bytes(data)
    program = tmp_path / "program"
    build = subprocess.run([find_mpicc(), "-std=c99", "-O2", "-Wall", "-Werror", f"-I{RUNTIME}",
                            '-DMODULE_HEADER="m.h"', f"-I{tmp_path}", "-DNAME(x)=m##x",
                            str(HERE / "aot_driver.c"), str(RUNTIME / "hlo_collectives_mpi.c"), str(tmp_path / "m.o"),
                            "-lm", "-o", str(program)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([find_mpiexec(), "-n", str(devices), str(program), str(tmp_path)], capture_output=True,
                         text=True, timeout=200)
    assert run.returncode == 0, run.stderr
    for d in range(devices):
        data = (tmp_path / f"out{d}.bin").read_bytes()
        offset = 0
        for j, shape in enumerate(artifacts.lowered.results):
            size = shape.byte_size()
            got = from_physical_bytes(data[offset:offset + size], shape)
            offset += size
            want = expected[d][j]
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes(), f"device {d} result {j}"


@pytest.mark.skipif(find_mpicc() is None, reason="no mpicc")
def test_the_mpi_hooks_refuse_what_they_cannot_reduce(tmp_path):
    module = load_module(CASES["all_reduce_variadic"], "variadic")      # to_apply: a * b + a
    artifacts = compile_aot(module, "m")
    (tmp_path / "m.o").write_bytes(artifacts.object_code)
    (tmp_path / "m.h").write_text(artifacts.header)
    for d in range(4):
        (tmp_path / f"in{d}.bin").write_bytes(b"\0" * sum(s.byte_size() for s in artifacts.lowered.params))
    program = tmp_path / "program"
    subprocess.run([find_mpicc(), "-std=c99", f"-I{RUNTIME}", '-DMODULE_HEADER="m.h"', f"-I{tmp_path}",
                    "-DNAME(x)=m##x", str(HERE / "aot_driver.c"), str(RUNTIME / "hlo_collectives_mpi.c"),
                    str(tmp_path / "m.o"), "-lm", "-o", str(program)], check=True)
    run = subprocess.run([find_mpiexec(), "-n", "4", str(program), str(tmp_path)], capture_output=True, text=True,
                         timeout=200)
    assert run.returncode != 0
    assert re.search(r"rank \d: %r\S* \(variadic:\d+:\d+\): .*another computation", run.stderr), run.stderr
