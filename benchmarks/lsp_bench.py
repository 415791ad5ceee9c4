"""Responsiveness of hlo-lsp on a 10,000-instruction (or, with --instructions 100000, a 100,000-line) file.

Starts the server as an editor does (a subprocess speaking JSON-RPC over stdio),
opens a generated module of (by default) 10,000 instructions written the way XLA
dumps them (fusions, reductions with to_apply, metadata on every line), then
measures, as medians over several runs:

* edit -> diagnostics: the time from a didChange (an incremental one-line edit,
  alternately changing a constant and breaking a shape, each making a text never
  seen before) to the first publishDiagnostics for that version (the debounce
  delay included); target <= 1.5 s up to 10,000 instructions, <= 2 s above (issue 12:
  100,000 lines within 2 s of an edit); the largest (the first edit after opening,
  which waits for the name index of the first analysis) is printed too;
* edit -> full re-analysis: the time to the second publishDiagnostics of that
  version (the full analysis that follows the quick incremental one), and whether
  the two differed;
* hover right after each edit (while the full analysis runs), then, once the
  server is idle, hover on operand names; target <= 100 ms;
* completion: round trip of textDocument/completion for the names in scope in an
  operand list at the end of the largest computation, and for opcodes; target
  <= 100 ms.

Times are wall-clock round trips, as an editor sees them (on a machine shared with
other work they grow with its load).

    python benchmarks/lsp_bench.py [--instructions N] [--edits E] [--requests R]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

from hlo.lsp.client import LspClient

URI = "file:///bench/large.hlo"
DIAGNOSTICS_TARGET_S = 1.5        # up to 10,000 instructions
LARGE_DIAGNOSTICS_TARGET_S = 2.0  # above: issue 12's 100,000 lines within 2 s of an edit
REQUEST_TARGET_S = 0.100

_REGION = """%region_{i} (a.{i}: f32[], b.{i}: f32[]) -> f32[] {{
  %a.{i} = f32[] parameter(0)
  %b.{i} = f32[] parameter(1)
  ROOT %sum.{i} = f32[] add(%a.{i}, %b.{i})
}}
"""
_FUSION = """%fused_{i} (p0.{i}: f32[64,32], p1.{i}: f32[64,32]) -> f32[64,32] {{
  %p0.{i} = f32[64,32]{{1,0}} parameter(0)
  %p1.{i} = f32[64,32]{{1,0}} parameter(1)
  %mul.f{i} = f32[64,32]{{1,0}} multiply(%p0.{i}, %p1.{i})
  ROOT %tanh.f{i} = f32[64,32]{{1,0}} tanh(%mul.f{i})
}}
"""


def _md(op: str, line: int) -> str:
    return f'metadata={{op_name="jit(f)/layer/{op}" source_file="/src/model.py" source_line={line}}}'


def _block(i: int, x: str) -> tuple[list[str], str]:
    """Ten instructions consuming and producing an f32[64,32] value."""
    lines = [
        f"%c.{i} = f32[] constant(0.5), {_md('const', i)}",
        f"%bc.{i} = f32[64,32]{{1,0}} broadcast(%c.{i}), dimensions={{}}, {_md('broadcast', i)}",
        f"%mul.{i} = f32[64,32]{{1,0}} multiply(%{x}, %bc.{i}), {_md('mul', i)}",
        f"%add.{i} = f32[64,32]{{1,0}} add(%mul.{i}, %{x}), {_md('add', i)}",
        f"%t.{i} = f32[32,64]{{1,0}} transpose(%add.{i}), dimensions={{1,0}}, {_md('transpose', i)}",
        f"%dot.{i} = f32[64,64]{{1,0}} dot(%add.{i}, %t.{i}), lhs_contracting_dims={{1}}, "
        f"rhs_contracting_dims={{0}}, {_md('dot', i)}",
        f"%sl.{i} = f32[64,32]{{1,0}} slice(%dot.{i}), slice={{[0:64], [0:32]}}, {_md('slice', i)}",
        f"%red.{i} = f32[64]{{0}} reduce(%sl.{i}, %c.{i}), dimensions={{1}}, to_apply=%region_{i % 8}",
        f"%fus.{i} = f32[64,32]{{1,0}} fusion(%sl.{i}, %{x}), kind=kLoop, calls=%fused_{i % 8}, {_md('fusion', i)}",
        f"%neg.{i} = f32[64,32]{{1,0}} negate(%fus.{i}), {_md('neg', i)}",
    ]
    return lines, f"neg.{i}"


def build_module(instructions: int) -> tuple[str, int]:
    """Module text with at least `instructions` instructions, and the exact count."""
    parts = ["HloModule bench, entry_computation_layout={(f32[64,32]{1,0})->f32[64,32]{1,0}}\n"]
    count = 0
    for i in range(8):
        parts.append(_REGION.format(i=i))
        parts.append(_FUSION.format(i=i))
        count += 7
    body = ["ENTRY %main (x: f32[64,32]) -> f32[64,32] {", "  %x = f32[64,32]{1,0} parameter(0)"]
    count += 1
    x, i = "x", 0
    while count < instructions - 1:
        lines, x = _block(i, x)
        body.extend("  " + line for line in lines)
        count += len(lines)
        i += 1
    body.append(f"  ROOT %out = f32[64,32]{{1,0}} copy(%{x})")
    body.append("}")
    count += 1
    parts.append("\n".join(body) + "\n")
    return "\n".join(parts), count


def _position(text: str, needle: str, delta: int = 0) -> dict:
    offset = text.index(needle) + delta
    line = text.count("\n", 0, offset)
    return {"line": line, "character": offset - (text.rfind("\n", 0, offset) + 1)}


def _edit(text: str, block: int, version: int) -> tuple[dict, bool]:
    """A one-line incremental change in block `block` (every edit makes a text never seen before):
    even versions change a constant's value, odd ones break an instruction's shape."""
    if version % 2 == 0:
        needle, old, new = f"  %c.{block} = f32[] constant(", "0.5", "0.25"
    else:
        needle, old, new = f"  %add.{block} = ", "f32[64,32]", "f32[64,33]"
    offset = text.index(needle) + len(needle)
    assert text.startswith(old, offset)
    line = text.count("\n", 0, offset)
    column = offset - (text.rfind("\n", 0, offset) + 1)
    change = {"range": {"start": {"line": line, "character": column},
                        "end": {"line": line, "character": column + len(old)}}, "text": new}
    return change, version % 2 == 1


def _wait_until_quiet(client: LspClient, seconds: float, limit: float = 60.0) -> None:
    """Wait until the server has sent nothing for `seconds` (its background work is done)."""
    deadline = time.monotonic() + limit
    count = len(client.notifications)
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        if len(client.notifications) != count:
            count, quiet_since = len(client.notifications), time.monotonic()
        elif time.monotonic() - quiet_since >= seconds:
            return


def _timed(client: LspClient, method: str, params: dict) -> tuple[float, object]:
    start = time.perf_counter()
    result = client.request(method, params)
    return time.perf_counter() - start, result


def _median_ms(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.1f} ms (max {max(times) * 1000:.1f})"


def measure(instructions: int, edits: int, requests: int, log_file: str = "") -> dict:
    text, count = build_module(instructions)
    print(f"module: {count} instructions, {len(text) / 1e6:.2f} MB, {text.count(chr(10))} lines")
    results: dict[str, list] = {"open": [], "edit": [], "full": [], "quick_differs": [], "hover": [],
                                "hover_after_edit": [], "complete_names": [], "complete_opcodes": []}
    command = [sys.executable, "-m", "hlo.lsp.server"] + (["--log-file", log_file, "--log-level", "INFO"]
                                                          if log_file else [])
    with LspClient(command) as client:
        client.initialize()
        start = time.perf_counter()
        client.open(URI, text, version=1)
        client.wait_notification("textDocument/publishDiagnostics", lambda p: p.get("version") == 1, timeout=120)
        results["open"].append(time.perf_counter() - start)

        middle = count // 20  # edits go to instructions in the middle of the entry computation
        for version in range(2, edits + 2):
            change, breaks = _edit(text, middle + version, version)
            mark = len(client.notifications)
            start = time.perf_counter()
            client.change(URI, version, [change])
            params = client.wait_notification("textDocument/publishDiagnostics",
                                              lambda p, v=version: p.get("version") == v, timeout=60, after=mark)
            results["edit"].append(time.perf_counter() - start)
            if breaks and not params["diagnostics"]:
                raise AssertionError(f"edit {version} broke a shape but no diagnostic came")
            # a hover while the full analysis of the new text runs
            pos = _position(text, f"%mul.{middle + 1}, %neg.{middle}", 1)
            results["hover_after_edit"].append(_timed(client, "textDocument/hover",
                                                      {"textDocument": {"uri": URI}, "position": pos})[0])
            # the full analysis publishes again (after the quick diagnostics); the user pauses until then
            first = client.notifications.index(next(n for n in client.notifications[mark:]
                                                    if n.get("params", {}).get("version") == version))
            final = client.wait_notification("textDocument/publishDiagnostics",
                                             lambda p, v=version: p.get("version") == v, timeout=60, after=first + 1)
            received = next(n for n in client.notifications[first + 1:] if n.get("params") is final)["received_at"]
            results["full"].append(received - start)
            if final["diagnostics"] != params["diagnostics"]:
                results["quick_differs"].append(version)

        _wait_until_quiet(client, 2.5)  # the full analysis of the last edit, then the idle garbage collection
        for k in range(requests):
            i = (k * 37) % (count // 10 - 2) + 1
            pos = _position(text, f"add(%mul.{i}, %neg.{i - 1})", 5)
            seconds, result = _timed(client, "textDocument/hover", {"textDocument": {"uri": URI}, "position": pos})
            if not result:
                raise AssertionError(f"no hover at {pos}")
            results["hover"].append(seconds)

        names_pos = _position(text, "ROOT %out = f32[64,32]{1,0} copy(", len("ROOT %out = f32[64,32]{1,0} copy("))
        opcode_pos = _position(text, "ROOT %out = f32[64,32]{1,0} ", len("ROOT %out = f32[64,32]{1,0} "))
        for _ in range(requests):
            seconds, result = _timed(client, "textDocument/completion",
                                     {"textDocument": {"uri": URI}, "position": names_pos})
            if not result["items"]:
                raise AssertionError("no instruction names offered")
            results["complete_names"].append(seconds)
            seconds, result = _timed(client, "textDocument/completion",
                                     {"textDocument": {"uri": URI}, "position": opcode_pos})
            if not any(item["label"] == "copy" for item in result["items"]):
                raise AssertionError("no opcodes offered")
            results["complete_opcodes"].append(seconds)
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=10_000)
    ap.add_argument("--edits", type=int, default=8)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--log-file", default="", help="let the server log its timings here")
    args = ap.parse_args(argv)
    r = measure(args.instructions, args.edits, args.requests, args.log_file)
    edit = statistics.median(r["edit"])
    target = DIAGNOSTICS_TARGET_S if args.instructions <= 10_000 else LARGE_DIAGNOSTICS_TARGET_S
    hover = statistics.median(r["hover"])
    completion = max(statistics.median(r["complete_names"]), statistics.median(r["complete_opcodes"]))
    print(f"open -> diagnostics:            {r['open'][0]:.2f} s")
    print(f"edit -> diagnostics:            {edit:.2f} s median of {len(r['edit'])} "
          f"(max {max(r['edit']):.2f} s; target <= {target} s)")
    print(f"edit -> full re-analysis:       {statistics.median(r['full']):.2f} s median (max {max(r['full']):.2f} s); "
          f"quick diagnostics differed from the full ones for {len(r['quick_differs'])} of {len(r['edit'])} edits")
    print(f"hover:                          {_median_ms(r['hover'])} (target <= 100 ms)")
    print(f"hover during the re-analysis:   {_median_ms(r['hover_after_edit'])}")
    print(f"completion, names in scope:     {_median_ms(r['complete_names'])} (target <= 100 ms)")
    print(f"completion, opcodes:            {_median_ms(r['complete_opcodes'])} (target <= 100 ms)")
    ok = edit <= target and hover <= REQUEST_TARGET_S and completion <= REQUEST_TARGET_S
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
