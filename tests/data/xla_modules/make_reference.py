"""Make the reference data of the XLA-style modules in this folder (needs jax; run by hand).

    python tests/data/xla_modules/make_reference.py [NAME ...]

Each NAME.hlo starts with comment lines that say what it tests:

    // XLA-TEST: run | refuse | refuse-at-run
    // CAUSE: the cause of issue 16 it covers
    // INPUT argK: a numpy expression for that input (others are random, seeded by the name)
    // DEVICES: N            (replicas; inputs and outputs per device)
    // ERROR: text of the diagnostic our tools give (refuse cases)
    // EXPECTED: hand-computed   (expected values from HAND_COMPUTED below, not from XLA)

For `run` modules this writes NAME.inputs.npz and NAME.expected.npz, XLA:CPU's outputs
(jax's CPU client, compiled as benchmarks/xla_reference.py compiles), bf16 as raw bits;
for refuse modules it checks that XLA refuses them too. MANIFEST.json records for every
module what XLA did. XLA runs in a child process per module: its parser aborts the
process on some malformed input.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

HEADER = re.compile(r"^\s*//\s*([A-Z-]+(?: arg\d+)?):\s?(.*?)\s*$")


def header(text: str) -> dict:
    """The `// KEY: value` lines before the module (INPUT lines gathered in a dict)."""
    info: dict = {"inputs": {}}
    for line in text.lstrip("\ufeff").splitlines():
        m = HEADER.match(line)
        if not m:
            if line.strip() and not line.strip().startswith("//"):
                break
            continue
        key, value = m.group(1), m.group(2)
        if key.startswith("INPUT "):
            info["inputs"][key.split()[1]] = value
        else:
            info[key] = value
    return info


def make_inputs(name: str, text: str, info: dict) -> dict:
    """arg0..argN (devK_argN with several devices): random by shape unless an INPUT line says."""
    from hlo import parse_module
    from hlo.runtime import values_io

    module = parse_module(text.lstrip("\ufeff"), name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    devices = int(info.get("DEVICES", 1))
    arrays = {}
    for d in range(devices):
        leaves = []
        for p in sorted(module.entry.parameters, key=lambda p: p.attrs["parameter_number"]):
            for _, shape in p.shape.leaves():
                value = values_io.random_value(shape, rng)
                if shape.element_type.is_float:  # spread over a few units
                    value = (value.astype(np.float32) * 3).astype(value.dtype)
                leaves.append(value)
        for i, leaf in enumerate(leaves):
            expr = info["inputs"].get(f"arg{i}")
            value = eval(expr, {"np": np}) if expr else leaf  # (the module's own header: trusted)
            key = f"dev{d}_arg{i}" if devices > 1 else f"arg{i}"
            arrays[key] = np.asarray(value)
    return arrays


def to_file(arrays: dict) -> dict:
    """bf16 and f8 arrays as raw bits, as the corpus stores them."""
    out = {}
    for k, a in arrays.items():
        a = np.asarray(a)
        out[k] = a.view(np.uint16) if a.dtype.name == "bfloat16" else a
    return out


# --------------------------------------------------------------------------- XLA in a child process

def xla_worker(name: str, leaf_types: list[str]) -> None:
    """Child process: run or refuse one module with XLA; print a JSON verdict (XLA:CPU through
    hlo/fuzz/xla_runner.py, loaded from its file: the child needs none of the project)."""
    text = (HERE / f"{name}.hlo").read_text(encoding="utf-8").lstrip("\ufeff")
    info = header(text)
    devices = int(info.get("DEVICES", 1))
    if devices > 1:  # (only then: XLA:CPU's dynamic padding crashes with several devices)
        os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    import importlib.util
    spec = importlib.util.spec_from_file_location("xla_runner", ROOT / "hlo" / "fuzz" / "xla_runner.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    import jax
    jax.config.update("jax_enable_x64", True)
    from jaxlib import _hlo
    try:
        _hlo.hlo_module_from_text(text)
    except Exception as exc:  # noqa: BLE001 - XLA's verdict, whatever it is
        print(json.dumps({"xla": "refused", "message": str(exc).split("\n")[1] if "\n" in str(exc) else str(exc)}))
        return
    path = HERE / f"{name}.inputs.npz"
    inputs = {(k if k.startswith("dev") else f"dev0_{k}"): v for k, v in np.load(path).items()} if path.exists() else {}
    try:
        outputs = runner.run_text(text, inputs, devices, leaf_types)
    except Exception as exc:  # noqa: BLE001
        print(json.dumps({"xla": "refused", "message": str(exc).split("\n")[0][:300]}))
        return
    if devices == 1:
        outputs = {k[len("dev0_"):]: v for k, v in outputs.items()}
    np.savez(HERE / f"{name}.xla.npz", **outputs)
    print(json.dumps({"xla": "ran"}))


def parameter_types(text: str) -> list[str]:
    """The element type of each array leaf of the entry parameters, in order."""
    from hlo import parse_module
    module = parse_module(text.lstrip("\ufeff"), "module")
    return [leaf.element_type.name for p in sorted(module.entry.parameters, key=lambda p: p.attrs["parameter_number"])
            for _, leaf in p.shape.leaves()]


# --------------------------------------------------------------------------- hand-computed references

def _mesh_transposed_device_ids(inputs: dict) -> dict:
    """mesh['x'=2,'y'=2], device_ids=([2,2]T(1,0)) {'x'}: the devices [[0,2],[1,3]] along 'x'
    give the groups {0,1} and {2,3}; an all-gather concatenates the group's inputs in order."""
    groups = [[0, 1], [2, 3]]
    out = {}
    for group in groups:
        gathered = np.concatenate([inputs[f"dev{m}_arg0"] for m in group])
        for m in group:
            out[f"dev{m}_out0"] = gathered
    return out


HAND_COMPUTED = {"mesh_transposed_device_ids": _mesh_transposed_device_ids}


# --------------------------------------------------------------------------- driver

def make(name: str) -> dict:
    text = (HERE / f"{name}.hlo").read_text(encoding="utf-8")
    info = header(text)
    kind = info["XLA-TEST"]
    entry = {"name": name, "kind": kind, "cause": info.get("CAUSE", ""), "devices": int(info.get("DEVICES", 1))}
    if kind in ("run", "refuse-at-run"):
        inputs = make_inputs(name, text, info)
        np.savez(HERE / f"{name}.inputs.npz", **to_file(inputs))
    if info.get("EXPECTED") == "hand-computed":
        np.savez(HERE / f"{name}.expected.npz", **to_file(HAND_COMPUTED[name](inputs)))
        entry["xla"] = "hand-computed"
        return entry
    types = json.dumps(parameter_types(text)) if kind != "refuse" else "[]"
    child = subprocess.run([sys.executable, __file__, "--xla-worker", name, types], capture_output=True, text=True)
    lines = [ln for ln in child.stdout.splitlines() if ln.startswith("{")]
    verdict = json.loads(lines[-1]) if lines else {"xla": "aborted", "message": child.stderr.strip()[-300:]}
    entry["xla"] = verdict["xla"]
    if "message" in verdict:
        entry["xla_message"] = verdict["message"]
    produced = HERE / f"{name}.xla.npz"
    if kind == "run":
        if verdict["xla"] != "ran":
            raise SystemExit(f"{name}: XLA did not run it: {verdict}")
        os.replace(produced, HERE / f"{name}.expected.npz")
    elif verdict["xla"] == "ran":
        produced.unlink(missing_ok=True)
        raise SystemExit(f"{name}: XLA accepts a module marked {kind}")
    return entry


def main(names: list[str]) -> None:
    manifest_path = HERE / "MANIFEST.json"
    manifest = {e["name"]: e for e in json.loads(manifest_path.read_text())} if manifest_path.exists() else {}
    for name in names or sorted(p.stem for p in HERE.glob("*.hlo")):
        try:
            manifest[name] = make(name)
        except SystemExit as exc:  # report and go on with the others
            print(f"{name}: FAILED: {exc}")
            continue
        print(f"{name}: {manifest[name]['xla']}")
    manifest_path.write_text(json.dumps([manifest[k] for k in sorted(manifest)], indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--xla-worker"]:
        xla_worker(sys.argv[2], json.loads(sys.argv[3]))
    else:
        main(sys.argv[1:])
