"""Modules in the style of XLA's own tests (tests/data/xla_modules), run as XLA:CPU runs them.

Each module's header says what it checks (see make_reference.py there): `run` modules must
give XLA:CPU's outputs, saved beside them (or hand-computed where XLA:CPU cannot run them),
through the interpreter and, where the module compiles, the cpu backend; `refuse` modules
must be refused by the parser and checker with the message in their `// ERROR:` line, at a
location, as XLA refuses them; `refuse-at-run` modules load but are refused when run.
A dynamic output is compared over its runtime size (XLA's buffers hold padding after it).
"""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from hlo import HloError
from hlo.analysis.loading import load_module
from hlo.interpreter import run_devices
from hlo.runtime import values_io
from hlo.text.printer import format_module

DATA = Path(__file__).resolve().parents[1] / "data" / "xla_modules"
MANIFEST = {e["name"]: e for e in json.loads((DATA / "MANIFEST.json").read_text())}
RUN = sorted(n for n, e in MANIFEST.items() if e["kind"] == "run")
REFUSE = sorted(n for n, e in MANIFEST.items() if e["kind"] == "refuse")
REFUSE_AT_RUN = sorted(n for n, e in MANIFEST.items() if e["kind"] == "refuse-at-run")
# The compiled backend compiles single-device programs with static shapes only (docs/ARCHITECTURE.md).
NOT_COMPILED = re.compile(r"does not support '|not compiled")


def text_of(name: str) -> str:
    return (DATA / f"{name}.hlo").read_text(encoding="utf-8")


def error_line(name: str) -> str:
    return re.search(r"^// ERROR: (.*?)\s*$", text_of(name), re.M).group(1)


def arguments(module, name: str, devices: int) -> list[list]:
    inputs = values_io.load_arrays(str(DATA / f"{name}.inputs.npz"))
    shapes = [p.shape for p in sorted(module.entry.parameters, key=lambda p: p.attrs["parameter_number"])]
    count = sum(values_io.leaf_count(s) for s in shapes)

    def key(d, i):
        return f"dev{d}_arg{i}" if devices > 1 else f"arg{i}"
    return [values_io.assemble(shapes, [inputs[key(d, i)] for i in range(count)]) for d in range(devices)]


def expected_outputs(name: str) -> dict:
    return values_io.load_arrays(str(DATA / f"{name}.expected.npz"))


def assert_close(got: np.ndarray, want: np.ndarray, key: str) -> None:
    got, want = values_io.from_storage(np.asarray(got)), values_io.from_storage(np.asarray(want))
    if got.shape != want.shape:  # a dynamic output: XLA's buffer holds padding past the runtime size
        assert got.ndim == want.ndim and all(g <= w for g, w in zip(got.shape, want.shape)), key
        want = want[tuple(slice(0, n) for n in got.shape)]
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=key)
        return
    narrow = want.dtype.itemsize < 4 or got.dtype.itemsize < 4
    tolerance = 1e-2 if narrow else 1e-5
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tolerance, atol=tolerance,
                               err_msg=key)


def test_the_modules_cover_every_cause_of_issue_16():
    causes = {e["cause"] for e in MANIFEST.values()}
    assert causes >= {"dynamic-shapes", "mixed-element-types", "placement-and-sharding", "mesh-replica-groups",
                      "reduction-order", "parser-refusals", "bad-input"}
    assert len(MANIFEST) >= 40 and len(RUN) >= 20 and len(REFUSE) + len(REFUSE_AT_RUN) >= 15


@pytest.mark.parametrize("name", RUN)
def test_interpreter_gives_xla_results(name):
    entry = MANIFEST[name]
    module = load_module(text_of(name), f"{name}.hlo")
    devices = entry["devices"]
    evaluators = run_devices(module, arguments(module, name, devices), replicas=devices)
    want = expected_outputs(name)
    for d, ev in enumerate(evaluators):
        prefix = f"dev{d}_" if devices > 1 else ""
        got = values_io.output_arrays(ev.result, prefix)
        assert sorted(got) == sorted(k for k in want if k.startswith(prefix))
        for key in got:
            assert_close(got[key], want[key], f"{name} {key}")


@pytest.mark.parametrize("name", RUN)
def test_printed_module_reads_back_the_same(name):
    module = load_module(text_of(name), f"{name}.hlo")
    text = format_module(module)
    assert format_module(load_module(text, f"{name}.printed.hlo")) == text


@pytest.mark.parametrize("name", [n for n in RUN if MANIFEST[n]["devices"] == 1])
def test_cpu_backend_gives_xla_results_or_refuses_at_the_instruction(name, tmp_path, monkeypatch):
    from hlo.codegen import JitExecutable  # lazy: llvmlite only for this test
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    module = load_module(text_of(name), f"{name}.hlo")
    try:
        executable = JitExecutable(module)
    except HloError as err:
        assert NOT_COMPILED.search(err.message) and err.diagnostics[0].loc is not None, err.render()
        return
    leaves = executable.run(*arguments(module, name, 1)[0])
    want = expected_outputs(name)
    assert len(leaves) == len(want)
    for i, leaf in enumerate(leaves):
        assert_close(leaf, want[f"out{i}"], f"{name} out{i}")


@pytest.mark.parametrize("name", REFUSE)
def test_refused_as_xla_refuses(name):
    assert MANIFEST[name]["xla"] in ("refused", "aborted")
    with pytest.raises(HloError) as info:
        load_module(text_of(name), f"{name}.hlo")
    messages = [d.message for d in info.value.diagnostics]
    assert any(error_line(name) in m for m in messages), messages
    assert all(d.loc is not None for d in info.value.diagnostics)


@pytest.mark.parametrize("name", REFUSE_AT_RUN)
def test_refused_when_run_as_xla_refuses(name):
    assert MANIFEST[name]["xla"] in ("refused", "aborted")
    module = load_module(text_of(name), f"{name}.hlo")
    with pytest.raises(HloError) as info:
        run_devices(module, arguments(module, name, 1))
    assert error_line(name) in info.value.message and info.value.diagnostics[0].loc is not None
