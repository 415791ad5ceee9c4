"""hlo-opt's pass options: --passes, --pipeline, --list-passes, --print-after*, --print-changed, --time-passes,
--stats, --emit=hlo|dot, -o, --no-verify-each and how a pass that breaks the module is reported."""
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from hlo import format_module, parse_module
from hlo.text.dot import quote
from hlo.passes.base import REGISTRY, Pass
from hlo.passes.pass_manager import available_passes, run_pipeline
from hlo.passes.pipelines import PIPELINES, _render, missing_passes, pipeline_text
from hlo.shapes import Shape
from hlo_cli.hlo_opt import main

MODULE = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  two = f32[] constant(2)
  b = f32[4] broadcast(two), dimensions={}
  mul = f32[4] multiply(x, b)
  unused = f32[4] negate(y)
  add = f32[4] add(mul, y)
  ROOT neg = f32[4] negate(add)
}
"""

TWO_COMPUTATIONS = """HloModule m
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  e = f32[4,8] exponential(x)
  z = f32[] constant(0)
  ROOT r = f32[4] reduce(e, z), dimensions={1}, to_apply=sum
}
"""

DUMP_HEADER = re.compile(r"^// ----- module after (\S+) \(run (\d+)\), (changed|unchanged) -----$", re.M)


def run(args, stdin=MODULE):
    return CliRunner().invoke(main, args, input=stdin)


def dumps(stderr: str) -> list[tuple[str, str, str]]:
    """(pass, state, module text) for every module printed after a pass."""
    parts = DUMP_HEADER.split(stderr)
    return [(parts[i], parts[i + 2], parts[i + 3].removeprefix("\n")) for i in range(1, len(parts) - 1, 4)]


def assert_user_error(result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


# --------------------------------------------------------------------------- pipelines

def test_pipeline_default_fuses_and_cleans_up():
    result = run(["-", "--pipeline=default"])
    assert result.exit_code == 0, result.output
    module = parse_module(result.stdout)
    assert format_module(module) == result.stdout
    assert [i.opcode for i in module.entry.instructions] == ["parameter", "parameter", "fusion"]


def test_pipeline_text_names_only_registered_passes():
    text = PIPELINES["default"]
    assert text == pipeline_text("default")
    assert text.startswith("call-inliner,") and text.endswith("fusion,dce")
    assert missing_passes("default") == [] or all(p not in text.split(",") for p in missing_passes("default"))


def test_pipelines_leave_out_unregistered_passes():
    spec = ["a", ("b", "c"), ("d",), "e"]
    assert _render(spec, {"a", "c", "e"}) == "a,fixpoint(c),e"
    assert _render(spec, set()) == ""


def test_unknown_pipeline_and_conflicting_options_are_user_errors():
    assert_user_error(run(["-", "--pipeline=nope"]), "unknown pipeline 'nope'")
    assert_user_error(run(["-", "--pipeline=default", "--passes=dce"]), "--passes and --pipeline are exclusive")


def test_list_passes_shows_fusion_and_the_pipelines():
    result = run(["--list-passes"], None)
    assert result.exit_code == 0
    assert re.search(r"^  fusion +Fuse producers", result.stdout, re.M)
    assert f"  default: {pipeline_text('default')}" in result.stdout


# The passes the hlo-opt issue asks for, spelled as the issue spells them.
REQUIRED_PASSES = ["dce", "cse", "constant-folding", "algsimp", "call-inliner", "flatten-call-graph",
                   "tuple-simplifier", "while-loop-simplifier", "while-loop-invariant-code-motion",
                   "conditional-simplifier", "reshape-mover", "transpose-folding", "dot-decomposer",
                   "batchnorm-expander", "sort-simplifier", "zero-sized-hlo-elimination",
                   "rng-bit-generator-expander", "fusion"]


def test_list_passes_documents_every_pass():
    listing = run(["--list-passes"], None).stdout
    passes = available_passes()
    assert set(REQUIRED_PASSES) <= set(passes)
    for name, cls in passes.items():
        assert re.search(rf"^  {re.escape(name)} +{re.escape(cls.description)}$", listing, re.M), name
    default = pipeline_text("default").replace("fixpoint(", "").replace(")", "").split(",")
    assert set(REQUIRED_PASSES) <= set(default)


def test_passes_option_runs_the_pipeline_text():
    result = run(["-", "--passes=fixpoint(dce,cse),fusion"])
    assert result.exit_code == 0, result.output
    module = parse_module(MODULE)
    run_pipeline(module, "fixpoint(dce,cse),fusion")
    assert result.stdout == format_module(module)
    assert "unused" not in result.stdout and "kind=kLoop" in result.stdout


def test_output_file_with_emit_hlo(tmp_path):
    out = tmp_path / "out.hlo"
    result = run(["-", "--passes=dce", "--emit=hlo", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert out.read_text() == run(["-", "--passes=dce"]).stdout
    assert "unused" not in out.read_text()


# --------------------------------------------------------------------------- checking after each pass

class _BreakShapes(Pass):
    """Test pass: writes a wrong shape on `add` (the checker must name it)."""
    name = "test-break-shapes"
    description = "Give 'add' a wrong shape."
    saved = None

    def run(self, module) -> bool:
        add = next(i for i in module.entry.instructions if i.name == "add")
        _BreakShapes.saved = add.shape
        add.shape = Shape.array(add.shape.element_type, (5,)).with_default_layouts()
        return True


class _RepairShapes(Pass):
    """Test pass: undoes _BreakShapes."""
    name = "test-repair-shapes"
    description = "Give 'add' its shape back."

    def run(self, module) -> bool:
        add = next(i for i in module.entry.instructions if i.name == "add")
        add.shape = _BreakShapes.saved
        return True


@pytest.fixture
def shape_breaking_passes(monkeypatch):
    monkeypatch.setitem(REGISTRY, _BreakShapes.name, _BreakShapes)
    monkeypatch.setitem(REGISTRY, _RepairShapes.name, _RepairShapes)


def test_a_pass_leaving_an_invalid_module_is_reported_by_name(shape_breaking_passes):
    result = run(["-", "--passes=dce,test-break-shapes,test-repair-shapes"])
    assert_user_error(result, "error: pass 'test-break-shapes' left an invalid module:\n")
    assert "shape mismatch: 'add' produces f32[4] but the instruction is written as f32[5]" in result.stderr
    assert result.stdout == ""


def test_no_verify_each_skips_the_checker_between_passes(shape_breaking_passes):
    result = run(["-", "--passes=dce,test-break-shapes,test-repair-shapes", "--no-verify-each"])
    assert result.exit_code == 0, result.output
    assert result.stdout == run(["-", "--passes=dce"]).stdout


def test_the_module_is_checked_when_the_passes_are_done(shape_breaking_passes):
    result = run(["-", "--passes=dce,test-break-shapes", "--no-verify-each"])
    assert_user_error(result, "error: the pipeline left an invalid module (hlo-opt --verify-each names the pass")
    assert "shape mismatch: 'add' produces f32[4] but the instruction is written as f32[5]" in result.stderr


def test_verify_each_is_off_by_default_outside_the_test_suite(shape_breaking_passes, monkeypatch):
    monkeypatch.delenv("HLO_VERIFY_EACH")
    result = run(["-", "--passes=dce,test-break-shapes,test-repair-shapes"])
    assert result.exit_code == 0, result.output
    result = run(["-", "--passes=dce,test-break-shapes,test-repair-shapes", "--verify-each"])
    assert_user_error(result, "error: pass 'test-break-shapes' left an invalid module:\n")


# --------------------------------------------------------------------------- printing after passes

def test_print_after_all_prints_every_pass_canonically():
    result = run(["-", "--passes=fixpoint(dce,cse),fusion"])
    plain = result.stdout
    result = run(["-", "--passes=fixpoint(dce,cse),fusion", "--print-after-all"])
    assert result.exit_code == 0, result.output
    assert result.stdout == plain  # instrumentation never touches the result
    printed = dumps(result.stderr)
    assert [(name, state) for name, state, _ in printed] == [
        ("dce", "changed"), ("cse", "unchanged"), ("dce", "unchanged"), ("cse", "unchanged"), ("fusion", "changed")]
    for _, _, text in printed:
        assert format_module(parse_module(text)) == text
    assert "unused" not in printed[0][2] and "fusion(" in printed[-1][2]
    assert printed[-1][2] == plain


def test_print_after_selected_passes_is_repeatable():
    result = run(["-", "--passes=dce,cse,fusion", "--print-after=fusion", "--print-after", "dce"])
    assert result.exit_code == 0, result.output
    assert [name for name, _, _ in dumps(result.stderr)] == ["dce", "fusion"]


def test_print_after_unknown_pass_is_a_user_error():
    assert_user_error(run(["-", "--passes=dce", "--print-after=nope"]), "--print-after: unknown pass 'nope'")


def test_print_changed_prints_unified_diffs_of_changing_passes():
    result = run(["-", "--passes=dce,cse,fusion", "--print-changed"])
    assert result.exit_code == 0, result.output
    err = result.stderr
    assert "--- before dce (run 1)\n+++ after dce (run 1)\n" in err
    assert "-  %unused = f32[4]{0} negate(%y)\n" in err
    assert "before cse" not in err  # cse changed nothing
    assert "+++ after fusion (run 1)\n" in err
    assert "+  ROOT %fusion = f32[4]{0} fusion(%y, %x), kind=kLoop, calls=%fused_computation\n" in err
    assert re.search(r"^@@ -\d+(,\d+)? \+\d+(,\d+)? @@", err, re.M)


def test_instrumentation_needs_a_pipeline():
    assert_user_error(run(["-", "--time-passes"]), "need --passes or --pipeline")
    assert_user_error(run(["-", "--print-after-all"]), "need --passes or --pipeline")


# --------------------------------------------------------------------------- timing and statistics

def test_time_passes_prints_a_table_per_pass():
    result = run(["-", "--passes=fixpoint(dce,cse),fusion", "--time-passes"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == "pass timings:"
    assert lines[1].split() == ["pass", "runs", "changed", "seconds", "%"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert set(rows) == {"dce", "cse", "fusion", "total"}
    assert rows["dce"][1:3] == ["2", "1"] and rows["cse"][1:3] == ["2", "0"] and rows["fusion"][1:3] == ["1", "1"]
    assert rows["total"][1:3] == ["5", "2"]
    assert float(rows["total"][3]) >= float(rows["fusion"][3]) >= 0
    assert result.stdout == run(["-", "--passes=fixpoint(dce,cse),fusion"]).stdout


def test_stats_counts_instructions_by_opcode_before_and_after():
    result = run(["-", "--passes=dce,fusion", "--stats"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.stderr.splitlines()[2:]}
    assert rows["negate"] == ["2", "0", "-2"]
    assert rows["parameter"] == ["2", "2", "+0"]
    assert rows["fusion"] == ["0", "1", "+1"]
    assert rows["total"] == ["8", "3", "-5"]


def test_stats_without_passes_reports_the_module():
    result = run(["-", "--stats"])
    assert result.exit_code == 0
    assert re.search(r"^  total +8 +8 +\+0$", result.stderr, re.M)


# --------------------------------------------------------------------------- graphviz

def _dot_structure(text: str) -> None:
    """Checks the parts of the dot grammar we emit: one digraph, balanced braces,
    every statement a node, an edge, a subgraph line or an attribute."""
    assert text.startswith('digraph "') and text.rstrip().endswith("}")
    depth = 0
    for line in text.splitlines()[1:]:
        stripped = line.strip()
        stripped = re.sub(r'"(?:[^"\\]|\\.)*"', '""', stripped)  # quoted strings are opaque
        depth += stripped.count("{") - stripped.count("}")
        assert depth >= -1
        assert (re.fullmatch(r"n\d+ \[.*\];", stripped) or re.fullmatch(r"n\d+ -> n\d+( \[.*\])?;", stripped)
                or re.fullmatch(r"subgraph cluster_\d+ \{", stripped) or stripped == "}"
                or re.fullmatch(r"(\w+=(\w+|\"\")[;,]? ?)+", stripped)
                or re.fullmatch(r"(node|edge) \[.*\];", stripped)), line
    assert depth == -1  # the digraph's own closing brace


def test_emit_dot_draws_fusions_as_clusters():
    result = run(["-", "--passes=dce,fusion", "--emit=dot"])
    assert result.exit_code == 0, result.output
    text = result.stdout
    _dot_structure(text)
    assert text.count("subgraph cluster_") == 1
    assert 'label="fusion\\nfusion (kLoop)\\nf32[4]{0}";' in text
    assert '[label="mul\\nmultiply\\nf32[4]{0}"' in text
    nodes = dict(re.findall(r'(n\d+) \[label="([^\\"]+)\\n', text))
    edges = {(nodes[a], nodes[b]) for a, b in re.findall(r"(n\d+) -> (n\d+)", text)}
    assert ("mul", "add") in edges and ("add", "neg") in edges  # operand -> user
    assert ("x", "param_1") in edges and ("y", "param_0") in edges  # fusion operands feed its parameters


def test_emit_dot_of_a_named_computation_and_to_a_file(tmp_path):
    out = tmp_path / "g.dot"
    result = run(["-", "--emit=dot", "--computation=sum", "-o", str(out)], TWO_COMPUTATIONS)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    _dot_structure(text)
    assert text.startswith('digraph "m: sum" {')
    assert "reduce" not in text and '"s\\nadd\\nf32[]"' in text


def test_emit_dot_errors():
    assert_user_error(run(["-", "--emit=dot", "--computation=nope"], TWO_COMPUTATIONS),
                      "no computation named 'nope'")
    assert_user_error(run(["-", "--computation=sum"], TWO_COMPUTATIONS), "--computation selects what --emit=dot draws")
    result = run(["-", "--emit=svg"])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_dot_strings_are_escaped():
    assert quote('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_graphviz_accepts_the_drawing():
    for args, text in ((["--pipeline=default"], TWO_COMPUTATIONS), (["--passes=fusion"], MODULE)):
        drawing = run(["-", "--emit=dot", *args], text).stdout
        done = subprocess.run(["dot", "-Tsvg"], input=drawing, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert "<svg" in done.stdout


def test_pass_errors_are_reported_without_traceback():
    assert_user_error(run(["-", "--passes=fusion,nope"]), "unknown pass 'nope'")
