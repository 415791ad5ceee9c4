"""hlo-diff: structural matching (names never count), the reports, the exit statuses, and
hlo-opt --print-changed=structural."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import hlo
from hlo.passes.pass_manager import PassRunner, parse_pipeline
from hlo.passes.pipelines import pipeline_text
from hlo.tools.diff import diff_modules, format_text
from hlo.tools.diff_html import format_html
from hlo_cli.hlo_diff import main
from hlo_cli.hlo_opt import main as hlo_opt

CORPUS = Path(__file__).resolve().parents[1] / "data" / "corpus"
SAMPLES = Path(__file__).resolve().parents[2] / "samples"

BASE = """HloModule m

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

ENTRY %main (a: f32[4,8], b: f32[4,8]) -> f32[4] {
  %a = f32[4,8]{1,0} parameter(0)
  %b = f32[4,8]{1,0} parameter(1)
  %m = f32[4,8]{1,0} multiply(%a, %b)
  %d = f32[4,8]{1,0} subtract(%m, %b)
  %z = f32[] constant(0)
  ROOT %r = f32[4]{0} reduce(%d, %z), dimensions={1}, to_apply=%add
}
"""


def parse(text, name="m"):
    return hlo.parse_module(text, name)


def renamed(text: str) -> str:
    """The module with every instruction and computation renamed and renumbered (backwards)."""
    module = parse(text)
    insts = list(module.instructions())
    for n, comp in enumerate(module.computations):
        comp.name = f"comp_{len(module.computations) - n}_renamed"
    for k, inst in enumerate(insts):
        inst.name = f"value.{len(insts) - k}"
    return hlo.format_module(module)


def diff(a: str, b: str):
    return diff_modules(parse(a, "a"), parse(b, "b"))


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.hlo")) + sorted(SAMPLES.glob("*.hlo")), ids=lambda p: p.name)
def test_a_module_equals_itself_renamed(path):
    text = path.read_text()
    other = renamed(text)
    assert other != text
    d = diff(text, other)
    assert d.equal, format_text(d)
    assert d.totals()["renamed"] > 0
    assert format_text(d) == ""


def test_reports_shape_layout_attribute_and_operand_changes():
    changed = (BASE.replace("%m = f32[4,8]{1,0} multiply", "%m = f32[4,8]{0,1} multiply")
               .replace("subtract(%m, %b)", "subtract(%b, %m)")
               .replace("ROOT %r = f32[4]{0} reduce(%d, %z), dimensions={1}",
                        "ROOT %r = f32[8]{0} reduce(%d, %z), dimensions={0}")
               .replace("-> f32[4] {", "-> f32[8] {"))
    d = diff(BASE, changed)
    rows = {r.b.name: r for c in d.computations for r in c.rows if r.b is not None}
    assert [str(c) for c in rows["m"].changes] == ["layout: f32[4,8]{1,0} -> f32[4,8]{0,1}"]
    assert [str(c) for c in rows["d"].changes] == ["operand 0: %m -> %b", "operand 1: %b -> %m"]
    assert [c.what for c in rows["r"].changes] == ["shape", "attribute dimensions"]
    assert rows["a"].status == "unchanged" and rows["z"].status == "unchanged"
    assert not d.equal


def test_added_and_removed_instructions_and_computations():
    other = (BASE.replace("%d = f32[4,8]{1,0} subtract(%m, %b)", "%e = f32[4,8]{1,0} exponential(%m)\n"
                          "  %d = f32[4,8]{1,0} subtract(%e, %b)")
             .replace("%z = f32[] constant(0)\n", "%z = f32[] constant(0)\n  %unused = f32[] negate(%z)\n"))
    d = diff(BASE, other)
    entry = next(c for c in d.computations if c.b is not None and c.b.name == "main")
    assert entry.count("added") == 2 and entry.count("removed") == 0
    assert [r.b.name for r in entry.rows if r.status == "added"] == ["e", "unused"]
    text = format_text(d, "a.hlo", "b.hlo")
    assert "+ %e = f32[4,8]{1,0} exponential(%m)" in text
    assert "operand 0: %m -> %e" in text
    # the reverse direction: removed
    back = diff(other, BASE)
    assert sum(c.count("removed") for c in back.computations) == 2
    # the reducer swapped for another computation: matched through the reduce that calls it
    swapped = BASE.replace("to_apply=%add", "to_apply=%add2").replace(
        "ENTRY", "%add2 (p: f32[], q: f32[]) -> f32[] {\n  %p = f32[] parameter(0)\n  %q = f32[] parameter(1)\n"
                 "  ROOT %mx = f32[] maximum(%p, %q)\n}\n\nENTRY")
    d = diff(BASE, swapped)
    status = {(c.a.name if c.a else None, c.b.name if c.b else None): c for c in d.computations}
    reducer = status[("add", "add2")]
    assert [(r.status, (r.a or r.b).opcode) for r in reducer.rows if r.status != "unchanged"] == \
        [("removed", "add"), ("added", "maximum")]
    assert status[(None, "add")].status == "added"      # the old reducer, now called by nobody
    assert status[("main", "main")].equal


def test_matches_by_structure_not_by_name():
    """Swapping two names must not make the instructions match each other."""
    swapped = BASE.replace("%m = f32[4,8]{1,0} multiply(%a, %b)", "%TMP = f32[4,8]{1,0} multiply(%a, %b)") \
        .replace("%d = f32[4,8]{1,0} subtract(%m, %b)", "%m = f32[4,8]{1,0} subtract(%TMP, %b)") \
        .replace("reduce(%d, %z)", "reduce(%m, %z)")
    d = diff(BASE, swapped)
    assert d.equal
    pairs = {r.a.name: r.b.name for c in d.computations for r in c.rows}
    assert pairs["m"] == "TMP" and pairs["d"] == "m"


def _pass_diffs(path: Path):
    """(pass name, diff) for every pass of the default pipeline that changed the module."""
    module = parse(path.read_text(), path.name)
    before = [hlo.format_module(module)]
    found = []

    def observe(event, mod):
        if event.changed:
            after = hlo.format_module(mod)
            found.append((event.name, diff_modules(parse(before[0], "before"), parse(after, "after"))))
            before[0] = after
        else:
            assert hlo.format_module(mod) == before[0]
    PassRunner(True, [observe]).run(module, parse_pipeline(pipeline_text("default")))
    return found


@pytest.mark.parametrize("name", ["causal_attention", "fori_loop_newton", "scan_rnn", "cnn_forward", "mlp_forward",
                                  "while_collatz_vmap"])
def test_every_change_of_the_default_pipeline_is_found(name):
    found = _pass_diffs(CORPUS / f"{name}.hlo")
    assert found
    for pass_name, d in found:
        assert not d.equal, f"{pass_name} changed the module but hlo-diff found nothing"
    by_pass = {}
    for pass_name, d in found:
        by_pass.setdefault(pass_name, []).append(d)
    if "fusion" in by_pass:
        d = by_pass["fusion"][0]
        added = [r.b for c in d.computations for r in c.rows if r.status == "added"]
        assert any(i.opcode == "fusion" for i in added)
        assert any(c.status == "added" for c in d.computations)      # the fused computations
    if "dce" in by_pass:
        for d in by_pass["dce"]:
            t = d.totals()
            assert t["removed"] > 0 and t["added"] == 0 and t["changed"] == 0


def test_while_loop_simplifier_change_is_matched_through_the_loop():
    found = dict(_pass_diffs(CORPUS / "fori_loop_newton.hlo"))
    d = found["while-loop-simplifier"]
    entry = next(c for c in d.computations if c.b is not None and c.b.name == "main.6")
    loop = next(r for r in entry.rows if r.b is not None and r.b.opcode == "while")
    assert loop.status == "changed" and loop.a.name == "while.10"
    assert "shape" in [c.what for c in loop.changes]
    body = next(c for c in d.computations if c.b is not None and c.b.name == "region_0.2.clone")
    assert body.status == "matched" and body.a.name == "region_0.2"
    removed = [r.a.name for r in body.rows if r.status == "removed"]
    assert "get-tuple-element.5" in removed and "add.10" in removed


# --------------------------------------------------------------------------- the command

def invoke(args, **kw):
    return CliRunner().invoke(main, [str(a) for a in args], **kw)


@pytest.fixture
def files(tmp_path):
    a, b, same = tmp_path / "a.hlo", tmp_path / "b.hlo", tmp_path / "same.hlo"
    a.write_text(BASE)
    b.write_text(BASE.replace("multiply(%a, %b)", "add(%a, %b)"))
    same.write_text(renamed(BASE))
    return a, b, same


def test_exit_statuses_as_diff(files, tmp_path):
    a, b, same = files
    equal = invoke([a, same])
    assert equal.exit_code == 0 and equal.output == ""
    different = invoke([a, b])
    assert different.exit_code == 1
    assert "--- " in different.output and "+ %m = f32[4,8]{1,0} add(%a, %b)" in different.output
    assert "- %m = f32[4,8]{1,0} multiply(%a, %b)" in different.output
    assert invoke([a, tmp_path / "missing.hlo"]).exit_code == 2
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT x = f32[] bogus()\n}\n")
    result = invoke([a, bad])
    assert result.exit_code == 2 and "bad.hlo:3" in result.output
    assert invoke([a, b, "--json", "--html"]).exit_code == 2
    assert invoke([a, b, "-q"]).output == ""


def test_json_and_html_reports(files, tmp_path):
    a, b, _ = files
    result = invoke([a, b, "--json"])
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert report["equal"] is False and report["totals"]["added"] == 1 and report["totals"]["removed"] == 1
    entry = next(c for c in report["computations"] if c["b"] == "main")
    assert {i["status"] for i in entry["instructions"]} >= {"added", "removed", "changed", "unchanged"}
    page = tmp_path / "diff.html"
    assert invoke([a, b, "--html", "-o", page]).exit_code == 1
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and 'class="added"' in html
    assert format_html(diff_modules(parse(BASE), parse(renamed(BASE)))).count("The modules are equal") == 1


def test_colour_only_when_asked(files):
    a, b, _ = files
    assert "\033[" not in invoke([a, b]).output
    assert "\033[32m" in invoke([a, b, "--color", "always"]).output


def test_hlo_opt_print_changed_structural(tmp_path):
    path = CORPUS / "mlp_forward.hlo"
    result = CliRunner().invoke(hlo_opt, [str(path), "--pipeline", "default", "--print-changed=structural",
                                          "-o", str(tmp_path / "out.hlo")])
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert "// ----- fusion (run 1) -----" in err
    assert "computation %fused_computation: added" in err
    assert "@@" not in err            # not a unified diff
    plain = CliRunner().invoke(hlo_opt, [str(path), "--pipeline", "default", "--print-changed",
                                         "-o", str(tmp_path / "out2.hlo")])
    assert plain.exit_code == 0 and "@@" in plain.stderr
