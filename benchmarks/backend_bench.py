"""The compiled CPU backend against numpy (and XLA:CPU when jax is installed), one thread.

Each workload is generated here as HLO text, compiled with hlo.codegen.JitExecutable,
checked against a numpy reference (assert_allclose) and then timed: N runs of ours and
N of numpy's, alternated so both share the machine's noise, reported as medians with
the ratio numpy / ours (> 1 means the compiled code is faster). Workloads:

    matmul256/512/1024   f32 dot (GFLOP/s)
    threads              matmul1024 on two threads against one (speedup)
    chain                tanh(a*x+b)*c on 16M f32 (numpy plain expression and with out=); also
                         "ours reused-out": run(reuse_results=True), which writes the result
                         arrays of the previous run again, against the faster numpy variant
                         (out=) -- a plain run() pays fresh pages for its 64 MB result on every
                         call, as the plain expression does
    rowsum / colsum      sums over each axis of a 4096x4096 f32 matrix (GB/s)
    conv2d               NHWC 1x56x56x64 * HWIO 3x3x64x64, SAME padding (numpy im2col; GFLOP/s)
    mlp                  64x784 -> 512 -> 512 -> 10, relu on the hidden layers
    compile              cold compile (empty disk cache) and warm load of every corpus module

When `jax` is importable the same HLO text is also compiled by XLA:CPU (one thread:
XLA_FLAGS=--xla_cpu_multi_thread_eigen=false and the process pinned to one core) and
that ratio (XLA time / ours) is printed too; otherwise 'jax not installed'.

    python benchmarks/backend_bench.py [--runs N] [--quick] [--only NAME] [--corpus DIR]
        [--features=-avx512f] [--clock cpu]

--features compiles our code for other target features (e.g. `-avx512f` runs the AVX2 kernels on an
AVX-512 host); --clock cpu times by the CPU time of the process instead of wall time.

The script re-executes itself with OPENBLAS_NUM_THREADS=1 and OMP_NUM_THREADS=1 when
they are not set, so numpy's BLAS is single-threaded as our code is. The JIT's disk
cache is pointed at a temporary directory for the whole run.
"""
from __future__ import annotations

import os
import sys

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# With AVX-512 switched off for our code (--features=-avx512f...), numpy's OpenBLAS runs its
# Haswell (AVX2) kernels and XLA:CPU is held to AVX2: every implementation on the same instructions.


def _features_argument(argv: list) -> str:
    for i, arg in enumerate(argv):
        if arg.startswith("--features="):
            return arg.split("=", 1)[1]
        if arg == "--features" and i + 1 < len(argv):
            return argv[i + 1]
    return ""


_AVX2_ONLY = "-avx512f" in _features_argument(sys.argv).split(",")
_WANTED = {v: "1" for v in _THREAD_VARS}
if _AVX2_ONLY:
    _WANTED["OPENBLAS_CORETYPE"] = "Haswell"
    _WANTED["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false --xla_cpu_max_isa=AVX2"
if any(os.environ.get(k) != v for k, v in _WANTED.items()):
    # BLAS reads these when numpy is first imported: set them and start again.
    os.environ.update(_WANTED)
    os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]])

import argparse  # noqa: E402
import ctypes  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from itertools import pairwise  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT / "tests" / "data" / "corpus"
try:
    import hlo  # noqa: F401
except ImportError:  # not installed: use the checkout this script is in
    sys.path.insert(0, str(ROOT))

from hlo import parse_module  # noqa: E402
from hlo.codegen import CodegenOptions  # noqa: E402
from hlo.codegen.jit import JitExecutable  # noqa: E402

COMPILE_TARGET_SECONDS = 3.0
# Set by main(): the target options every workload compiles with, and the clock it is timed by.
SETTINGS = {"options": CodegenOptions(), "clock": time.perf_counter}
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
WORKLOADS = ("matmul", "threads", "chain", "rowsum", "colsum", "conv2d", "mlp", "compile")


# --------------------------------------------------------------------------- HLO generators

def matmul_hlo(n: int) -> str:
    return f"""HloModule matmul_{n}

ENTRY main {{
  a = f32[{n},{n}] parameter(0)
  b = f32[{n},{n}] parameter(1)
  ROOT d = f32[{n},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


def chain_hlo(n: int) -> str:
    return f"""HloModule chain_{n}

ENTRY main {{
  x = f32[{n}] parameter(0)
  a = f32[] parameter(1)
  b = f32[] parameter(2)
  c = f32[] parameter(3)
  ab = f32[{n}] broadcast(a), dimensions={{}}
  bb = f32[{n}] broadcast(b), dimensions={{}}
  cb = f32[{n}] broadcast(c), dimensions={{}}
  ax = f32[{n}] multiply(ab, x)
  axb = f32[{n}] add(ax, bb)
  t = f32[{n}] tanh(axb)
  ROOT r = f32[{n}] multiply(t, cb)
}}
"""


def sum_hlo(n: int, axis: int) -> str:
    return f"""HloModule sum_axis{axis}_{n}

add_f32 {{
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}}

ENTRY main {{
  m = f32[{n},{n}] parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[{n}] reduce(m, zero), dimensions={{{axis}}}, to_apply=add_f32
}}
"""


def conv2d_hlo(hw: int, cin: int, cout: int) -> str:
    return f"""HloModule conv2d_{hw}x{cin}x{cout}

ENTRY main {{
  x = f32[1,{hw},{hw},{cin}] parameter(0)
  k = f32[3,3,{cin},{cout}] parameter(1)
  ROOT y = f32[1,{hw},{hw},{cout}] convolution(x, k), window={{size=3x3 pad=1_1x1_1}}, dim_labels=b01f_01io->b01f
}}
"""


def mlp_hlo(batch: int, sizes: tuple[int, ...]) -> str:
    """Dense layers sizes[0] -> ... -> sizes[-1]; relu after every layer but the last."""
    # Names avoid s1/s2/u4...: those spell element types.
    params = [f"  x = f32[{batch},{sizes[0]}] parameter(0)"]
    body, current, number = [], "x", 1
    for layer, (fan_in, fan_out) in enumerate(pairwise(sizes)):
        w, b = f"weight{layer}", f"bias{layer}"
        params.append(f"  {w} = f32[{fan_in},{fan_out}] parameter({number})")
        params.append(f"  {b} = f32[{fan_out}] parameter({number + 1})")
        number += 2
        shape = f"f32[{batch},{fan_out}]"
        body.append(f"  dot{layer} = {shape} dot({current}, {w}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
        body.append(f"  biasb{layer} = {shape} broadcast({b}), dimensions={{1}}")
        body.append(f"  sum{layer} = {shape} add(dot{layer}, biasb{layer})")
        current = f"sum{layer}"
        if layer < len(sizes) - 2:
            body.append(f"  zeros{layer} = {shape} broadcast(zero), dimensions={{}}")
            body.append(f"  relu{layer} = {shape} maximum(sum{layer}, zeros{layer})")
            current = f"relu{layer}"
    body[-1] = body[-1].replace(f"  {current} =", f"  ROOT {current} =", 1)
    lines = params + ["  zero = f32[] constant(0)"] + body
    return "HloModule mlp\n\nENTRY main {\n" + "\n".join(lines) + "\n}\n"


# --------------------------------------------------------------------------- numpy references

def chain_numpy(x, a, b, c):
    return np.tanh(a * x + b) * c


def chain_numpy_out(x, a, b, c, out):
    np.multiply(x, a, out=out)
    np.add(out, b, out=out)
    np.tanh(out, out=out)
    np.multiply(out, c, out=out)
    return out


def conv2d_im2col(x, k):
    """SAME 3x3 cross-correlation of NHWC x with an HWIO kernel as one matmul over patches."""
    n, h, w, cin = x.shape
    kh, kw, _, cout = k.shape
    padded = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    cols = np.empty((n, h, w, kh, kw, cin), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            cols[:, :, :, i, j, :] = padded[:, i:i + h, j:j + w, :]
    return (cols.reshape(n * h * w, kh * kw * cin) @ k.reshape(kh * kw * cin, cout)).reshape(n, h, w, cout)


def mlp_numpy(x, *layers):
    h = x
    pairs = list(zip(layers[0::2], layers[1::2]))
    for index, (w, b) in enumerate(pairs):
        h = h @ w + b
        if index < len(pairs) - 1:
            h = np.maximum(h, np.float32(0))
    return h


# --------------------------------------------------------------------------- XLA:CPU (optional)

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


# --------------------------------------------------------------------------- timing

@dataclass
class Row:
    name: str
    ours: float
    numpy_times: dict[str, float] = field(default_factory=dict)
    xla: float | None = None
    ours_reused: float | None = None  # run(reuse_results=True): no fresh result pages per run
    work: str = ""  # e.g. "96.3 GFLOP/s" for ours


def median_times(functions: list[Callable], runs: int) -> list[float]:
    """Median time (wall, or CPU with --clock cpu) of each function over `runs` rounds; each round
    calls them in turn."""
    clock = SETTINGS["clock"]
    samples = [[] for _ in functions]
    for f in functions:
        f()  # warm-up: first-touch pages, lazy bindings
    for _ in range(runs):
        for index, f in enumerate(functions):
            start = clock()
            f()
            samples[index].append(clock() - start)
    return [statistics.median(s) for s in samples]


def compile_hlo(text: str, threads: int = 1) -> JitExecutable:
    return JitExecutable(parse_module(text, "<bench>"), SETTINGS["options"], threads=threads)


def check(name: str, ours, reference, rtol: float, atol: float) -> None:
    np.testing.assert_allclose(ours, reference, rtol=rtol, atol=atol, err_msg=f"{name}: compiled result differs")


def bench(name: str, text: str, args: list, references: dict[str, Callable], runs: int, xla,
          rtol: float = 1e-4, atol: float = 1e-4, flops: float = 0.0, nbytes: float = 0.0,
          reuse_result: bool = False) -> Row:
    """Compile, verify against the first reference, then time ours, every reference and XLA
    (and, with reuse_result, ours writing into the result arrays of its previous run)."""
    executable = compile_hlo(text)
    expected = next(iter(references.values()))()
    check(name, executable.run(*args)[0], expected, rtol, atol)
    functions = [lambda: executable.run(*args)] + list(references.values())
    if reuse_result:
        def reused():
            return executable.run(*args, reuse_results=True)
        check(name + " (reused results)", reused()[0], expected, rtol, atol)
        functions.append(reused)
    xla_run = None
    if xla is not None:
        xla_run = xla(text)
        check(name + " (XLA)", xla_run(*args)[0], expected, rtol, atol)
        functions.append(lambda: xla_run(*args))
    times = median_times(functions, runs)
    row = Row(name, times[0], dict(zip(references, times[1:1 + len(references)])))
    if xla_run is not None:
        row.xla = times[-1]
    if reuse_result:
        row.ours_reused = times[1 + len(references)]
    if flops:
        row.work = f"{flops / row.ours / 1e9:7.1f} GFLOP/s"
    elif nbytes:
        row.work = f"{nbytes / row.ours / 1e9:7.2f} GB/s"
    return row


def print_row(row: Row, xla_note: str) -> None:
    """One line: our time, each numpy variant's with its ratio, XLA's (or why it is missing)."""
    parts = [f"{row.name:<10} ours {row.ours * 1e3:9.3f} ms"]
    for label, t in row.numpy_times.items():
        parts.append(f"{label} {t * 1e3:9.3f} ms  ratio {t / row.ours:5.2f}x")
    if row.ours_reused is not None:
        ratios = ", ".join(f"{t / row.ours_reused:5.2f}x vs {label}" for label, t in row.numpy_times.items())
        parts.append(f"ours reused-out {row.ours_reused * 1e3:9.3f} ms  ratio {ratios}")
    if row.xla is not None:
        parts.append(f"xla {row.xla * 1e3:9.3f} ms  ratio {row.xla / row.ours:5.2f}x")
    else:
        parts.append(f"xla: {xla_note}")
    if row.work:
        parts.append(row.work)
    print(" | ".join(parts), flush=True)


# --------------------------------------------------------------------------- workloads

def random_f32(rng, *shape, scale: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def matmul_rows(sizes, runs, xla, rng):
    for n in sizes:
        a, b = random_f32(rng, n, n), random_f32(rng, n, n)
        yield bench(f"matmul{n}", matmul_hlo(n), [a, b], {"numpy": lambda a=a, b=b: a @ b}, runs, xla,
                    rtol=1e-3, atol=1e-3 * np.sqrt(n), flops=2.0 * n ** 3)


def thread_rows(n, runs, rng):
    """matmul n with two threads against one: the JIT's parallel column parts (on all cores,
    also when the rest of the script is pinned to one for XLA)."""
    a, b = random_f32(rng, n, n), random_f32(rng, n, n)
    pinned = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    if pinned is not None:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    clock, SETTINGS["clock"] = SETTINGS["clock"], time.perf_counter   # CPU time would add the threads up
    try:
        one, two = compile_hlo(matmul_hlo(n), threads=1), compile_hlo(matmul_hlo(n), threads=2)
        np.testing.assert_array_equal(one.run(a, b)[0], two.run(a, b)[0])
        t1, t2 = median_times([lambda: one.run(a, b), lambda: two.run(a, b)], runs)
    finally:
        SETTINGS["clock"] = clock
        if pinned is not None:
            os.sched_setaffinity(0, pinned)
    flops = 2.0 * n ** 3
    print(f"threads    matmul{n} 1 thread {t1 * 1e3:9.3f} ms ({flops / t1 / 1e9:5.1f} GFLOP/s) | 2 threads "
          f"{t2 * 1e3:9.3f} ms ({flops / t2 / 1e9:5.1f} GFLOP/s) | speedup {t1 / t2:4.2f}x", flush=True)
    return []


def chain_rows(n, runs, xla, rng):
    x = random_f32(rng, n)
    a, b, c = np.float32(0.75), np.float32(-0.25), np.float32(1.5)
    out = np.empty_like(x)
    references = {"numpy": lambda: chain_numpy(x, a, b, c), "numpy out=": lambda: chain_numpy_out(x, a, b, c, out)}
    yield bench("chain", chain_hlo(n), [x, a, b, c], references, runs, xla, rtol=1e-5, atol=1e-6,
                nbytes=8.0 * n, reuse_result=True)


def sum_rows(n, axis, runs, xla, rng):
    m = random_f32(rng, n, n)
    name = "rowsum" if axis == 1 else "colsum"
    yield bench(name, sum_hlo(n, axis), [m], {"numpy": lambda: m.sum(axis=axis)}, runs, xla,
                rtol=1e-4, atol=1e-3 * np.sqrt(n), nbytes=4.0 * n * n)


def conv2d_rows(hw, channels, runs, xla, rng):
    x, k = random_f32(rng, 1, hw, hw, channels), random_f32(rng, 3, 3, channels, channels, scale=0.1)
    yield bench("conv2d", conv2d_hlo(hw, channels, channels), [x, k], {"numpy im2col": lambda: conv2d_im2col(x, k)},
                runs, xla, rtol=1e-3, atol=1e-3, flops=2.0 * hw * hw * channels * channels * 9)


def mlp_rows(batch, sizes, runs, xla, rng):
    x = random_f32(rng, batch, sizes[0])
    layers = []
    for fan_in, fan_out in pairwise(sizes):
        layers += [random_f32(rng, fan_in, fan_out, scale=1 / np.sqrt(fan_in)), random_f32(rng, fan_out, scale=0.1)]
    yield bench("mlp", mlp_hlo(batch, sizes), [x, *layers], {"numpy": lambda: mlp_numpy(x, *layers)}, runs, xla,
                rtol=1e-3, atol=1e-3)


def compile_times(corpus: Path, cache_root: Path) -> list[tuple[str, float, float, float]]:
    """(name, parse s, cold s, warm s) per NAME.hlo (not NAME.opt.hlo); cold uses a fresh empty cache
    directory, warm a second JitExecutable of the same module that loads the cached object."""
    results = []
    for path in sorted(corpus.glob("*.hlo")):
        if path.name.endswith(".opt.hlo"):
            continue
        text = path.read_text()
        os.environ["XDG_CACHE_HOME"] = str(cache_root / path.stem)  # empty: a real compile
        start = time.perf_counter()
        module = parse_module(text, str(path))
        parse_seconds = time.perf_counter() - start
        cold = JitExecutable(module, SETTINGS["options"])
        warm = JitExecutable(parse_module(text, str(path)), SETTINGS["options"])
        assert not cold.from_cache and warm.from_cache, f"{path.name}: disk cache did not behave as expected"
        results.append((path.stem, parse_seconds, cold.compile_seconds, warm.compile_seconds))
    return results


def print_compile_times(results) -> None:
    if not results:
        print("compile    no NAME.hlo modules found", flush=True)
        return
    for name, parse, cold, warm in results:
        flag = "" if cold < COMPILE_TARGET_SECONDS else f"  (over {COMPILE_TARGET_SECONDS:g} s)"
        print(f"compile    {name:<32} parse {parse * 1e3:7.2f} ms  cold {cold:7.3f} s  warm {warm * 1e3:8.2f} ms{flag}",
              flush=True)
    colds = [cold for _, _, cold, _ in results]
    over = sum(c >= COMPILE_TARGET_SECONDS for c in colds)
    print(f"compile    {len(results)} modules: median cold {statistics.median(colds):.3f} s, max cold {max(colds):.3f} s, "
          f"total cold {sum(colds):.2f} s, max warm {max(w for *_, w in results) * 1e3:.2f} ms, "
          f"{over} over {COMPILE_TARGET_SECONDS:g} s", flush=True)


# --------------------------------------------------------------------------- main

def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", "-n", type=int, default=11, help="timed runs per implementation (median)")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run, not a measurement")
    parser.add_argument("--only", choices=WORKLOADS, help="run one workload")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="directory of NAME.hlo for 'compile'")
    parser.add_argument("--no-xla", action="store_true", help="leave XLA:CPU out even when jax is installed")
    parser.add_argument("--features", help="LLVM target features for our code, e.g. -avx512f (AVX2 paths on an "
                                           "AVX-512 host); XLA and numpy keep the host's")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall time, or CPU time of this process (steadier on a loaded machine)")
    return parser.parse_args(argv)


def pin_to_one_core() -> None:
    """XLA:CPU starts a thread per core; pinning keeps every implementation on one core
    (the 'threads' workload lifts it for its own threads)."""
    try:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    except (AttributeError, OSError):
        pass


def main(argv=None) -> int:
    args = parse_args(argv)
    SETTINGS["options"] = CodegenOptions(features=args.features) if args.features else CodegenOptions()
    SETTINGS["clock"] = CLOCKS[args.clock]
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")
    # Pinned before jax starts its client: threads inherit the affinity of the thread that
    # creates them, so XLA's own thread pool stays on the one core too.
    xla = None
    if not args.no_xla:
        pin_to_one_core()
        xla = xla_compiler()
    rng = np.random.default_rng(0)
    q = args.quick
    print(f"backend_bench: runs={args.runs} quick={q} OPENBLAS_NUM_THREADS={os.environ['OPENBLAS_NUM_THREADS']} "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')} XLA_FLAGS={os.environ.get('XLA_FLAGS', '')} "
          f"numpy {np.__version__} cores={os.cpu_count()} "
          f"xla={'yes' if xla else 'left out' if args.no_xla else 'jax not installed'} "
          f"features={args.features or 'host'} clock={args.clock}", flush=True)
    with tempfile.TemporaryDirectory(prefix="backend_bench_") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "workloads")  # never reuse or pollute the user's cache
        plan = {
            "matmul": lambda: matmul_rows((32, 64) if q else (256, 512, 1024), args.runs, xla, rng),
            "threads": lambda: thread_rows(128 if q else 1024, args.runs, rng),
            "chain": lambda: chain_rows(1 << 16 if q else 1 << 24, args.runs, xla, rng),
            "rowsum": lambda: sum_rows(256 if q else 4096, 1, args.runs, xla, rng),
            "colsum": lambda: sum_rows(256 if q else 4096, 0, args.runs, xla, rng),
            "conv2d": lambda: conv2d_rows(8 if q else 56, 8 if q else 64, args.runs, xla, rng),
            "mlp": lambda: mlp_rows(8 if q else 64, (32, 16, 16, 10) if q else (784, 512, 512, 10), args.runs, xla, rng),
        }
        for name, rows in plan.items():
            if args.only in (None, name):
                for row in rows():
                    print_row(row, "left out" if args.no_xla else "jax not installed")
        if args.only in (None, "compile"):
            print_compile_times(compile_times(args.corpus, Path(tmp) / "compile"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
