"""hlo-run: run an HLO module on numpy inputs with the interpreter."""
from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from typing import Optional

import click
import numpy as np

from hlo.analysis.loading import load_module
from hlo.diagnostics import error
from hlo.runtime import resources, values_io
from hlo.runtime.mpi import DEFAULT_COLLECTIVE_TIMEOUT
from hlo.interpreter import new_plans, run_devices
from hlo.interpreter.collectives import CollectiveContext
from hlo.ir import Module
from hlo.passes.sharding_propagation import is_sharded
from hlo.passes.spmd_partitioner import device_count
from hlo.progress import Progress
from hlo.spmd_run import assemble_outputs, partition_module, run_partitioned, shard_inputs
from hlo_cli import distributed as mpi
from hlo_cli import npz_inputs
from hlo_cli.common import UsageError, did_you_mean, read_text, tool_main, version_option, write_atomic
from hlo_cli.results import print_results

BACKENDS = ("interpreter", "cpu", "aot")
COMPARED_BACKENDS = ("interpreter", "cpu")   # --compare and --check-finite observe values as they are made
PLANNED_BACKENDS = ()
PROFILE_TOP = 20
CHECK_FOUND = 3     # --compare: the outputs differ; --check-finite: a NaN or Inf was made

HELP = """Run MODULE (an .hlo file, '-' for stdin) and print its result as HLO literal text.

\b
Inputs are numpy arrays keyed arg0..argN in entry-parameter order (a tuple-shaped
parameter takes one key per array leaf), from --inputs FILE.npz, e.g. written by
np.savez(FILE, arg0=x, arg1=y), and/or --input arg1=FILE.npy; --random-inputs
fills every missing one. Outputs are written as out0..outM (tuple results
flattened depth-first); missing folders of the output path are created.
bf16 and f8 values travel as raw bits (uint16 / uint8 arrays, x.view(np.uint16));
ml_dtypes arrays saved with np.save are read too.

\b
A tuple result prints one array per line (out0: ..., out1: ...); arrays of more
than 1000 elements print summarised with '...', as numpy prints them (--full
prints every element).

\b
With --replicas N x --partitions M > 1 devices (default: the module's
replica_count / num_partitions), device d is replica d // M, partition d % M;
an input key dev{d}_arg{i} is used by device d only (a plain arg{i} by every
device) and outputs are written as dev{d}_out{i}.

\b
--infeed FILE.npz feeds the infeed ops: its arrays are taken in key order
(infeed0, infeed1, ...), one per array leaf of each infeed's data shape.
--outfeed FILE.npz receives what outfeed ops write, as outfeed0, outfeed1, ...
(dev{d}_outfeed{i} with several devices).

\b
A sharded program as jax.jit writes it (sharding= or Shardy attributes, shard_map
regions; not yet partitioned) is partitioned first and runs on its devices (the
count from --partitions, else the module's mesh or shardings), taking and giving
global arrays: arg0..argN and out0..outM are whole arrays, as in jax.

\b
Under MPI (mpiexec -n N hlo-run ..., or hlo-run --launch N ...) every rank runs
its share of the devices (device d on rank d // (devices / N)); rank 0 reads the
inputs and writes the outputs, which are those of a run in one process.
"""


@click.command(help=HELP, context_settings={"help_option_names": ["-h", "--help"]})
@version_option
@click.argument("module_file", metavar="MODULE")
@click.option("--inputs", "inputs_file", metavar="FILE.npz", help="Input arrays keyed arg0..argN.")
@click.option("--input", "input_items", metavar="KEY=FILE.npy", multiple=True,
              help="One input array, e.g. arg1=x.npy (repeatable; overrides --inputs).")
@click.option("--random-inputs", is_flag=True, help="Generate every input not given (normal floats, small ints).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --random-inputs and of the rng op.")
@click.option("-o", "--output", metavar="OUT.npz", help="Write the outputs here (atomically).")
@click.option("--print/--no-print", "print_result", default=True, show_default=True,
              help="Print the result as HLO literal text.")
@click.option("--full", is_flag=True, help="Print every element of large arrays (default: summarised).")
@click.option("--backend", default="interpreter", show_default=True, help="Execution backend: interpreter, cpu (compiled to native code with LLVM; "
              "compiled objects are cached in ~/.cache/hlo-toolchain), or aot (hlo-aot's object and header, linked "
              "with a C driver by the system's compiler and run in a process of its own).")
@click.option("--replicas", type=click.IntRange(min=1), help="Number of replicas (default: the module's).")
@click.option("--partitions", type=click.IntRange(min=1), help="Number of partitions (default: the module's).")
@click.option("--infeed", "infeed_file", metavar="FILE.npz", help="Arrays for the infeed ops.")
@click.option("--outfeed", "outfeed_file", metavar="FILE.npz", help="Write the outfeed values here.")
@click.option("--time", "repeat", type=click.IntRange(min=1), metavar="N",
              help="Run N times and report the median time.")
@click.option("--profile", is_flag=True, help=f"Report the {PROFILE_TOP} instructions taking the most time "
              "(--backend cpu: a compile that times every kernel, with its source line).")
@click.option("--compare", "compare_backend", metavar="BACKEND",
              help="Also run on BACKEND and report the first instruction whose value differs (exit 3 if any output does).")
@click.option("--rtol", type=click.FloatRange(min=0), help="--compare: relative tolerance (default by element type).")
@click.option("--atol", type=click.FloatRange(min=0), help="--compare: absolute tolerance (default by element type).")
@click.option("--check-finite", is_flag=True,
              help="Report the first instruction that makes a NaN or Inf from finite operands (exit 3 if one does).")
@click.option("--verify/--no-verify", default=True, show_default=True, help="Check the module before running.")
@click.option("--threads", type=click.IntRange(min=1), metavar="N",
              help="--backend cpu: threads for large dot and convolution kernels (default: every core).")
@click.option("--features", metavar="F", help="--backend cpu: LLVM target features for the host CPU, e.g. "
              "-avx512f,-avx512bw,-avx512dq,-avx512vl,-avx512cd to run the AVX2 code paths on an AVX-512 host.")
@click.option("--time-compile", is_flag=True,
              help="--backend cpu: print the compile's phases (pipeline, lowering, LLVM, loading) and cache hits.")
@click.option("-q", "--quiet", is_flag=True, help="No progress line on stderr (it shows, on a terminal, for work "
              "taking over a second).")
@click.option("--max-memory", metavar="SIZE", help="Refuse, at its instruction, any array or buffer larger than "
              "SIZE (e.g. 512M, 4G; default: the memory available).")
@click.option("--launch", "launch_ranks", type=click.IntRange(min=1), metavar="N",
              help="Start N MPI ranks (mpiexec) on this command; see docs/DISTRIBUTED.md.")
@click.option("--distributed", is_flag=True,
              help="Run as one rank of an MPI job (the default when started by mpiexec with several ranks).")
@click.option("--collective-timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              default=DEFAULT_COLLECTIVE_TIMEOUT, show_default=True,
              help="Give up on a collective whose other devices have not come after this long.")
@tool_main
def main(module_file: str, inputs_file: Optional[str], input_items: tuple[str, ...], random_inputs: bool,
         seed: int, output: Optional[str], print_result: bool, backend: str, replicas: Optional[int],
         partitions: Optional[int], infeed_file: Optional[str], outfeed_file: Optional[str],
         repeat: Optional[int], profile: bool, verify: bool, threads: Optional[int], time_compile: bool,
         quiet: bool, max_memory: Optional[str], full: bool = False,
         launch_ranks: Optional[int] = None, distributed: bool = False,
         collective_timeout: float = DEFAULT_COLLECTIVE_TIMEOUT, compare_backend: Optional[str] = None,
         rtol: Optional[float] = None, atol: Optional[float] = None, check_finite: bool = False,
         features: Optional[str] = None) -> None:
    _check_backend(backend)
    checking = _check_options(compare_backend, rtol, atol, check_finite, repeat, profile, output, infeed_file,
                              outfeed_file, launch_ranks, distributed)
    for side in (backend, compare_backend) if checking else ():
        if side is not None and side not in COMPARED_BACKENDS:
            raise UsageError(f"--compare and --check-finite observe the backends {' and '.join(COMPARED_BACKENDS)}, "
                             f"not {side}")
    if max_memory is not None:
        try:
            resources.set_memory_limit(resources.parse_memory_size(max_memory))
        except ValueError as exc:
            raise UsageError(f"--max-memory: {exc}") from None
    if (threads is not None or time_compile) and backend != "cpu":
        raise UsageError("--threads and --time-compile need --backend cpu")
    if features is not None and backend not in ("cpu", "aot"):
        raise UsageError("--features needs --backend cpu or aot")
    if launch_ranks is not None:
        sys.exit(mpi.launch(launch_ranks, sys.argv[1:]))
    name, text = read_text(module_file)
    with Progress("loading", quiet=quiet) as progress:
        module = load_module(text, name, verify=verify, progress=progress)
    if distributed or mpi.launched_by_mpi():
        if profile:
            raise UsageError("--profile is not available under MPI: profile in one process")
        request = _Request(module, name, text, inputs_file, input_items, random_inputs, seed, output, print_result,
                           backend, replicas, partitions, infeed_file, outfeed_file, repeat, threads,
                           collective_timeout, full)
        mpi.run_job(_distributed_job(request))
        return
    if is_sharded(module):
        _run_global(module, module_file, inputs_file, input_items, random_inputs, seed, partitions, backend,
                    repeat, output, print_result, full=full)
        return
    replicas = module.config.replica_count if replicas is None else replicas
    partitions = module.config.num_partitions if partitions is None else partitions
    devices = replicas * partitions

    given, sources = _gather_inputs(inputs_file, input_items)
    per_device_args = _arguments(module, given, devices, random_inputs, seed)
    infeeds = _infeeds(infeed_file, devices)

    if checking:
        if devices != 1:
            raise UsageError(f"--compare and --check-finite run one device; this module runs on {devices}")
        sys.exit(_run_check(module, per_device_args[0], backend, compare_backend, rtol, atol, seed))
    if backend == "aot":
        _run_aot(module, per_device_args, devices, repeat, profile, output, print_result, outfeed_file, infeeds,
                 [module_file, inputs_file, infeed_file] + sources, full, features)
        return
    if backend == "cpu":
        _run_compiled(module, per_device_args, devices, repeat, profile, output, print_result,
                      outfeed_file, infeeds, [module_file, inputs_file, infeed_file] + sources, threads,
                      time_compile, quiet, full=full, features=features)
        return

    plans = new_plans()

    def run_once(with_profile: bool = False):
        context = CollectiveContext(replicas, partitions, collective_timeout)
        return run_devices(module, per_device_args, replicas=replicas, partitions=partitions, seed=seed,
                           per_device_infeed=infeeds, profile=with_profile, plans=plans, context=context)

    evaluators = run_once(profile)
    if repeat:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run_once()
            times.append(time.perf_counter() - start)
        click.echo(f"time: median {statistics.median(times) * 1e3:.3f} ms over {repeat} run(s) "
                   f"(min {min(times) * 1e3:.3f} ms)", err=True)
    if profile:
        click.echo(_profile_table(evaluators), err=True)

    protected = [module_file, inputs_file, infeed_file] + sources
    if output:
        _write_npz(output, _outputs(evaluators), protected)
    if outfeed_file:
        _write_npz(outfeed_file, _outfeeds(evaluators), protected + [output])
    if print_result:
        _print_results(module, evaluators, full)


def _run_global(module: Module, module_file: str, inputs_file: Optional[str], input_items: tuple[str, ...],
                random_inputs: bool, seed: int, partitions: Optional[int], backend: str, repeat: Optional[int],
                output: Optional[str], print_result: bool, full: bool = False) -> None:
    """A global sharded program: partition it, run every device, give back global arrays."""
    if backend != "interpreter":
        raise UsageError("a sharded program runs on several devices: use --backend interpreter")
    needed = device_count(module)
    if partitions is not None and needed > 1 and partitions != needed:
        raise UsageError(f"the module's shardings place it on {needed} devices; --partitions {partitions} "
                         f"does not match (leave --partitions out, or give {needed})")
    given, sources = _gather_inputs(inputs_file, input_items)
    args = _arguments(module, given, 1, random_inputs, seed)[0]
    result = run_partitioned(module, args, partitions, seed=seed)
    if repeat:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            run_partitioned(module, args, partitions, seed=seed)
            times.append(time.perf_counter() - start)
        click.echo(f"time: median {statistics.median(times) * 1e3:.3f} ms over {repeat} run(s) "
                   f"(partitioning included; min {min(times) * 1e3:.3f} ms)", err=True)
    shape = module.entry.root.shape
    value = tuple(result) if shape.is_tuple else result
    if output:
        _write_npz(output, values_io.output_arrays(value), [module_file, inputs_file] + sources)
    if print_result:
        print_results([(None, value)], shape, full)


def _run_compiled(module: Module, per_device_args: list, devices: int, repeat: Optional[int], profile: bool,
                  output: Optional[str], print_result: bool, outfeed_file: Optional[str], infeeds,
                  protected: list, threads: Optional[int] = None, time_compile: bool = False,
                  quiet: bool = False, full: bool = False, features: Optional[str] = None) -> None:
    """--backend cpu: compile (or load from the cache), run, report like the interpreter.
    Timed runs (--time) write into reused result arrays, as a serving loop would."""
    from hlo.codegen import CodegenOptions, JitExecutable, ProgressBar  # lazy: llvmlite, only for --backend cpu
    from hlo.codegen.profiling import format_profile  # lazy: with the lines above
    if outfeed_file or infeeds:
        raise UsageError("--infeed and --outfeed need --backend interpreter")
    if devices != module.config.replica_count * module.config.num_partitions:
        raise UsageError(f"--backend cpu runs the module's replica_count x num_partitions devices "
                         f"({module.config.replica_count} x {module.config.num_partitions}); leave out "
                         f"--replicas and --partitions")
    if devices != 1:
        if features is not None:
            raise UsageError("--features compiles one device; leave it out for "
                             f"{devices} devices")
        if profile:
            raise UsageError("--backend cpu --profile profiles one device; use --backend interpreter for "
                             f"{devices} devices")
        _run_compiled_devices(module, per_device_args, output, print_result, protected, threads, full)
        return
    executable = JitExecutable(module, CodegenOptions(profile=profile, features=features), threads=threads,
                               progress=None if quiet else ProgressBar())
    if time_compile:
        click.echo(executable.stats.table(), err=True)
    args = per_device_args[0]
    start = time.perf_counter()
    leaves = executable.run(*args)
    wall = time.perf_counter() - start
    if repeat:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            executable.run(*args, reuse_results=True)
            times.append(time.perf_counter() - start)
        cached = " (from cache)" if executable.from_cache else ""
        click.echo(f"compile: {executable.compile_seconds * 1e3:.3f} ms{cached}", err=True)
        click.echo(f"time: median {statistics.median(times) * 1e3:.3f} ms over {repeat} run(s) "
                   f"(min {min(times) * 1e3:.3f} ms)", err=True)
        wall = statistics.median(times)
    if profile:   # counts and times add up over the first run and the timed ones
        click.echo(format_profile(executable.profile_rows(), PROFILE_TOP, wall), err=True)
    _report_leaves(module, leaves, output, print_result, protected, full)


def _run_aot(module: Module, per_device_args: list, devices: int, repeat: Optional[int], profile: bool,
             output: Optional[str], print_result: bool, outfeed_file: Optional[str], infeeds, protected: list,
             full: bool, features: Optional[str]) -> None:
    """--backend aot: the module's hlo-aot object run by a C driver, results reported as the others do."""
    from hlo.codegen import CodegenOptions  # lazy: llvmlite, only for the compiled backends
    from hlo.codegen.aot_run import AotRunFailed, AotUnavailable, run_aot  # lazy: as above
    given = [name for name, value in (("--time", repeat), ("--profile", profile), ("--outfeed", outfeed_file),
                                      ("--infeed", infeeds)) if value]
    if given:
        raise UsageError(f"{', '.join(given)} cannot be combined with --backend aot; use --backend cpu")
    if devices != 1:
        raise UsageError(f"--backend aot runs one device; this module runs on {devices} (the AOT object's "
                         "collectives call hooks its user provides: docs/AOT.md)")
    try:
        leaves = run_aot(module, per_device_args[0], CodegenOptions(features=features))
    except AotUnavailable as exc:
        raise UsageError(str(exc)) from None
    except AotRunFailed as exc:
        raise RuntimeError(f"--backend aot: {exc}") from None
    _report_leaves(module, leaves, output, print_result, protected, full)


def _report_leaves(module: Module, leaves: list, output: Optional[str], print_result: bool, protected: list,
                   full: bool) -> None:
    """One device's result leaves, as the root's value: written to -o, printed."""
    shape = module.entry.root.shape
    value = _rebuild(shape, iter(leaves))
    if output:
        _write_npz(output, values_io.output_arrays(value), protected)
    if print_result:
        print_results([(None, value)], shape, full)


def _run_compiled_devices(module: Module, per_device_args: list, output: Optional[str], print_result: bool,
                          protected: list, threads: Optional[int], full: bool) -> None:
    """--backend cpu on several devices: one compiled copy per device thread, collectives through the hooks."""
    from hlo.codegen.collective_runtime import run_compiled_devices  # lazy: llvmlite, only for --backend cpu
    replicas, partitions = module.config.replica_count, module.config.num_partitions
    leaves = run_compiled_devices(module, per_device_args, replicas=replicas, partitions=partitions, threads=threads)
    shape = module.entry.root.shape
    results = [_DeviceValue(_rebuild(shape, iter(device)), d // partitions, d % partitions)
               for d, device in enumerate(leaves)]
    if output:
        _write_npz(output, _outputs(results), protected)
    if print_result:
        _print_results(module, results, full)


@dataclass
class _DeviceValue:
    """One device's result, shaped for the output helpers (as an Evaluator is)."""
    result: object
    replica_id: int
    partition_id: int

    @property
    def device(self):
        return self


# --------------------------------------------------------------------------- under MPI

@dataclass
class _Request:
    """An hlo-run command line, as a distributed run needs it."""
    module: Module
    name: str
    text: str
    inputs_file: Optional[str]
    input_items: tuple[str, ...]
    random_inputs: bool
    seed: int
    output: Optional[str]
    print_result: bool
    backend: str
    replicas: Optional[int]
    partitions: Optional[int]
    infeed_file: Optional[str]
    outfeed_file: Optional[str]
    repeat: Optional[int]
    threads: Optional[int]
    timeout: float
    full: bool = False


def _distributed_job(r: _Request) -> mpi.Job:
    """hlo-run's inputs and outputs around a run over MPI ranks (hlo_cli.distributed)."""
    if is_sharded(r.module):
        return _distributed_global_job(r)
    replicas = r.module.config.replica_count if r.replicas is None else r.replicas
    partitions = r.module.config.num_partitions if r.partitions is None else r.partitions
    devices = replicas * partitions

    def prepare():
        given, _ = _gather_inputs(r.inputs_file, r.input_items)
        return _arguments(r.module, given, devices, r.random_inputs, r.seed), _infeeds(r.infeed_file, devices)

    def finish(results, timings):
        _report_timing(r, timings)
        protected = [r.name, r.inputs_file, r.infeed_file] + [i.partition("=")[2] for i in r.input_items]
        if r.output:
            _write_npz(r.output, _outputs(results), protected)
        if r.outfeed_file:
            _write_npz(r.outfeed_file, _outfeeds(results), protected + [r.output])
        if r.print_result:
            _print_results(r.module, results, r.full)

    return _job(r, r.module, replicas, partitions, prepare, finish)


def _distributed_global_job(r: _Request) -> mpi.Job:
    """A sharded global program: every rank partitions it; global arrays in and out on rank 0."""
    spmd, n, ctx = partition_module(r.module, r.partitions)

    def prepare():
        given, _ = _gather_inputs(r.inputs_file, r.input_items)
        args = _arguments(r.module, given, 1, r.random_inputs, r.seed)[0]
        return shard_inputs(spmd, args, n), None

    def finish(results, timings):
        _report_timing(r, timings)
        shape = ctx.module.entry.root.shape
        value = assemble_outputs(spmd, [x.result for x in results], n, shape)
        value = tuple(value) if shape.is_tuple else value
        if r.output:
            _write_npz(r.output, values_io.output_arrays(value), [r.name, r.inputs_file])
        if r.print_result:
            print_results([(None, value)], shape, r.full)

    return _job(r, spmd, 1, n, prepare, finish)


def _job(r: _Request, module: Module, replicas: int, partitions: int, prepare, finish) -> mpi.Job:
    options = {"backend": r.backend, "replicas": replicas, "partitions": partitions, "seed": r.seed,
               "collective-timeout": r.timeout, "random-inputs": r.random_inputs, "time": r.repeat}
    job = mpi.Job(module, r.text, r.name, replicas, partitions, options, r.timeout, prepare, finish,
                  seed=r.seed, repeat=r.repeat)
    if r.backend == "cpu":
        if (replicas, partitions) != (module.config.replica_count, module.config.num_partitions):
            raise UsageError("--backend cpu runs the module's replica_count x num_partitions devices; "
                             "leave out --replicas and --partitions")
        job.run_local = mpi.compiled_runner(r.threads)
    return job


def _report_timing(r: _Request, timings: list[float]) -> None:
    if r.repeat and timings:
        click.echo(f"time: median {statistics.median(timings) * 1e3:.3f} ms over {r.repeat} run(s) on rank 0 "
                   f"(min {min(timings) * 1e3:.3f} ms)", err=True)


def _rebuild(shape, leaves):
    if shape.is_tuple:
        return tuple(_rebuild(s, leaves) for s in shape.tuple_shapes)
    return next(leaves)


def _check_options(compare_backend, rtol, atol, check_finite, repeat, profile, output, infeed_file, outfeed_file,
                   launch_ranks, distributed) -> bool:
    """Whether this is a --compare or --check-finite run (refusing what they do not combine with)."""
    if compare_backend is None and (rtol is not None or atol is not None):
        raise UsageError("--rtol and --atol need --compare")
    if compare_backend is not None:
        _check_backend(compare_backend)
        if check_finite:
            raise UsageError("--compare and --check-finite are separate runs: give one of them")
    if compare_backend is None and not check_finite:
        return False
    given = [name for name, value in (("--time", repeat), ("--profile", profile), ("-o", output),
                                      ("--infeed", infeed_file), ("--outfeed", outfeed_file),
                                      ("--launch", launch_ranks), ("--distributed", distributed)) if value]
    if given:
        raise UsageError(f"{'--compare' if compare_backend else '--check-finite'} does not combine with "
                         f"{', '.join(given)}")
    return True


def _run_check(module: Module, args: list, backend: str, compare_backend: Optional[str], rtol, atol,
               seed: int) -> int:
    """--compare / --check-finite: print the report; the exit status (0, or 3 when something was found)."""
    if is_sharded(module):
        raise UsageError("--compare and --check-finite run one device; partition the module first")
    if compare_backend is not None:
        from hlo.tools.compare import compare, format_comparison  # lazy: llvmlite when a side compiles
        result = compare(module, args, (backend, compare_backend), rtol, atol, seed)
        click.echo(format_comparison(result))
        return 0 if result.agree else CHECK_FOUND
    from hlo.tools.finite import check_finite, format_finite_check  # lazy: as above
    check = check_finite(module, args, backend, seed)
    click.echo(format_finite_check(check))
    return 0 if check.clean else CHECK_FOUND


def _check_backend(backend: str) -> None:
    if backend in BACKENDS:
        return
    if backend in PLANNED_BACKENDS:
        raise UsageError(f"backend '{backend}' is not available yet; use --backend interpreter")
    raise UsageError(f"unknown backend '{backend}'{did_you_mean(backend, BACKENDS)}; available: {', '.join(BACKENDS)}")


# --------------------------------------------------------------------------- inputs

def _load(path: str) -> dict[str, np.ndarray]:
    return npz_inputs.load_arrays(path)


def _gather_inputs(inputs_file: Optional[str], items: tuple[str, ...]) -> tuple[dict, list[str]]:
    """{key: array} from --inputs and --input, and the files they came from."""
    given: dict[str, np.ndarray] = {}
    sources: list[str] = []
    if inputs_file:
        arrays = _load(inputs_file)
        if "" in arrays:
            raise UsageError(f"--inputs {inputs_file}: expected an .npz file of arrays keyed arg0..argN")
        given.update(arrays)
    for item in items:
        key, sep, path = item.partition("=")
        if not sep or not key or not path:
            raise UsageError(f"--input {item!r}: expected KEY=FILE.npy, e.g. arg0=x.npy")
        key = f"arg{key}" if key.isdigit() else key
        given[key] = npz_inputs.load_array(path)
        sources.append(path)
    return given, sources


def _arguments(module: Module, given: dict, devices: int, random_inputs: bool, seed: int) -> list[list]:
    """One argument list per device, checked against the entry parameters."""
    npz_inputs.check_inputs(module, given)
    entry = module.entry
    params = entry.parameters
    shapes = [p.shape for p in params]
    counts = [values_io.leaf_count(s) for s in shapes]
    total = sum(counts)
    _reject_unknown_keys(module, given, devices, total)
    rng = np.random.default_rng(seed)
    per_device = []
    for d in range(devices):
        leaves = []
        for i in range(total):
            param = params[_param_of_leaf(counts, i)]
            key = f"dev{d}_arg{i}" if f"dev{d}_arg{i}" in given else f"arg{i}"
            if key in given:
                leaves.append(given[key])
            elif random_inputs:
                leaves.append(None)
                values_io.check_drawable(param.shape, f"parameter {param.attrs['parameter_number']} "
                                                      f"(%{param.name})", param.loc)
                resources.check_allocation(param.shape.byte_size() + 8 * _elements(param.shape),
                                           f"a random input for parameter {param.attrs['parameter_number']}",
                                           param.loc)
            else:
                where = f"arg{i}" if devices == 1 else f"arg{i} (or dev{d}_arg{i})"
                raise error(f"no input for parameter {param.attrs['parameter_number']} (%{param.name}) "
                            f"of shape {param.shape.without_layout()}: give {where} with --inputs or "
                            f"--input, or use --random-inputs", param.loc)
        values = _assemble_with_random(shapes, leaves, rng)
        per_device.append(values)
    return per_device


def _assemble_with_random(shapes, leaves: list, rng: np.random.Generator) -> list:
    out, it = [], iter(leaves)
    for shape in shapes:
        out.append(_fill(shape, it, rng))
    return out


def _fill(shape, it, rng):
    if shape.is_tuple:
        return tuple(_fill(s, it, rng) for s in shape.tuple_shapes)
    if shape.is_token:
        return values_io.random_value(shape, rng)
    leaf = next(it)
    if leaf is None:
        return values_io.random_value(shape, rng)
    return values_io.to_storage(leaf, shape)


def _elements(shape) -> int:
    """Elements of a value (random inputs are drawn as 8-byte numbers first)."""
    return sum(s.element_count() for _, s in shape.leaves() if s.is_array)


def _param_of_leaf(counts: list[int], leaf: int) -> int:
    for p, n in enumerate(counts):
        if leaf < n:
            return p
        leaf -= n
    return len(counts) - 1


def _reject_unknown_keys(module: Module, given: dict, devices: int, total: int) -> None:
    entry = module.entry
    for key in given:
        parsed = values_io.split_key(key)
        ok = parsed is not None and parsed[1] == "arg" and parsed[2] < total and (
            parsed[0] is None or parsed[0] < devices)
        if not ok:
            expected = f"arg0..arg{total - 1}" if total else "no inputs"
            if devices > 1 and total:
                expected += f" or dev0_arg0..dev{devices - 1}_arg{total - 1}"
            raise error(f"input '{key}' matches no parameter of the entry computation %{entry.name} "
                        f"(expected {expected})", entry.signature_loc or entry.loc)


def _infeeds(infeed_file: Optional[str], devices: int) -> Optional[list[list]]:
    if not infeed_file:
        return None
    arrays = _load(infeed_file)
    shared, own = [], {d: [] for d in range(devices)}
    for key in sorted(arrays, key=lambda k: (values_io.split_key(k) or (None, k, 0))[2]):
        parsed = values_io.split_key(key)
        if parsed is not None and parsed[0] is not None:
            if parsed[0] < devices:
                own[parsed[0]].append(arrays[key])
        else:
            shared.append(arrays[key])
    return [own[d] if own[d] else shared for d in range(devices)]


# --------------------------------------------------------------------------- outputs

def _prefix(d: int, evaluators) -> str:
    return f"dev{d}_" if len(evaluators) > 1 else ""


def _outputs(evaluators) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for d, ev in enumerate(evaluators):
        arrays.update(values_io.output_arrays(ev.result, _prefix(d, evaluators)))
    return arrays


def _outfeeds(evaluators) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for d, ev in enumerate(evaluators):
        leaves = values_io.array_leaves(tuple(ev.outfeed))
        for i, leaf in enumerate(leaves):
            arrays[f"{_prefix(d, evaluators)}outfeed{i}"] = values_io.from_storage(leaf)
    return arrays


def _write_npz(path: str, arrays: dict, protected: list) -> None:
    try:
        write_atomic(path, values_io.npz_bytes(arrays), inputs=[p for p in protected if p])
    except OSError as exc:  # a missing folder, no permission, a directory as target: the user's to fix
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from None


def _print_results(module: Module, evaluators, full: bool) -> None:
    headings = [f"device {d} (replica {ev.device.replica_id}, partition {ev.device.partition_id}):"
                if len(evaluators) > 1 else None for d, ev in enumerate(evaluators)]
    print_results([(h, ev.result) for h, ev in zip(headings, evaluators)], module.entry.root.shape, full)


def _profile_table(evaluators) -> str:
    """The instructions with the most own time, summed over devices."""
    totals: dict = {}
    for ev in evaluators:
        for inst, (count, seconds) in (ev.profile or {}).items():
            entry = totals.setdefault(inst, [0, 0.0])
            entry[0] += count
            entry[1] += seconds
    grand = sum(s for _, s in totals.values()) or 1e-12
    rows = sorted(totals.items(), key=lambda kv: -kv[1][1])[:PROFILE_TOP]
    lines = [f"profile: {len(totals)} instructions executed, {grand * 1e3:.3f} ms in total "
             f"(own time, excluding called computations)",
             f"{'ms':>10} {'%':>6} {'count':>7}  {'opcode':<22} instruction"]
    for inst, (count, seconds) in rows:
        where = f"%{inst.name}" + (f" in %{inst.parent.name}" if inst.parent is not None else "")
        lines.append(f"{seconds * 1e3:10.3f} {100 * seconds / grand:6.1f} {count:7d}  {inst.opcode:<22} {where}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
