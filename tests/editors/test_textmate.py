"""The TextMate grammar of editors/vscode tokenises HLO as VS Code does, leaving no text unmatched.

tokenize.js runs the grammar with vscode-textmate and vscode-oniguruma (the engine and
regular-expression library of VS Code), installed from npm into tests/editors/node_modules
on first use. The tests skip only when Node.js or npm is missing.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hlo.shapes import PRIMITIVE_TYPES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GRAMMAR = ROOT / "editors" / "vscode" / "syntaxes" / "hlo.tmLanguage.json"
HLO_FILES = sorted((ROOT / "samples").glob("*.hlo")) + sorted((ROOT / "tests" / "data" / "corpus").glob("*.hlo"))


@pytest.fixture(scope="module")
def node() -> str:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("Node.js and npm are needed to run the TextMate grammar")
    modules = HERE / "node_modules"
    if not ((modules / "vscode-textmate").is_dir() and (modules / "vscode-oniguruma").is_dir()):
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE, check=True,
                       capture_output=True, timeout=300)
    return node


def tokenize(node: str, *files: Path, dump: bool = False) -> subprocess.CompletedProcess:
    args = [node, str(HERE / "tokenize.js")] + (["--dump"] if dump else []) + [str(GRAMMAR)] + [str(f) for f in files]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_every_hlo_file_is_tokenised_without_unmatched_text(node):
    assert len(HLO_FILES) >= 4
    result = tokenize(node, *HLO_FILES)
    assert result.returncode in (0, 1), result.stderr
    report = json.loads(result.stdout)
    unmatched = {f: r["unmatched"] for f, r in report["files"].items() if r["unmatched"]}
    assert report["unmatched"] == 0, unmatched
    assert set(report["files"]) == {str(f) for f in HLO_FILES}


SCOPES_SAMPLE = """\
HloModule m, entry_computation_layout={(f32[2,3]{1,0})->f32[2,3]{1,0}}
ENTRY %main (p: f32[2,3]) -> f32[2,3] { // a line comment
  %p = f32[2,3]{1,0:T(8,128)} parameter(0)
  %c = bf16[] constant(-inf), metadata={op_name="a\\"b" source_line=3}
  ROOT %conv = f32[1,2]{1,0} convolution(%p, %p), window={size=3x3 pad=0_1x1_0}, dim_labels=b01f_01io->b01f /* x */
}
"""


def _scopes(node: str, tmp_path: Path) -> dict[str, list[str]]:
    sample = tmp_path / "scopes.hlo"
    sample.write_text(SCOPES_SAMPLE)
    result = tokenize(node, sample, dump=True)
    assert result.returncode == 0, result.stderr
    found: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        token = json.loads(line)
        found.setdefault(token["text"], token["scopes"][1:])
    return found


def test_scopes_of_the_pieces_of_hlo(node, tmp_path):
    scopes = _scopes(node, tmp_path)
    expected = {
        "HloModule": "keyword.other.module.hlo", "ENTRY": "storage.modifier.entry.hlo",
        "ROOT": "storage.modifier.root.hlo", "%main": "entity.name.function.computation.hlo",
        "conv": "variable.other.hlo", "p": "variable.parameter.hlo",
        "entry_computation_layout": "entity.other.attribute-name.hlo", "f32": "storage.type.primitive.hlo",
        "bf16": "storage.type.primitive.hlo", "parameter": "support.function.opcode.hlo",
        "convolution": "support.function.opcode.hlo", "-inf": "constant.numeric.float.special.hlo",
        "3x3": "constant.numeric.window.hlo", "0_1x1_0": "constant.numeric.padding.hlo",
        "b01f_01io->b01f": "constant.other.dim-labels.hlo", "// a line comment": "comment.line.double-slash.hlo",
        "T": "entity.name.tag.layout.hlo", "128": "constant.numeric.layout.hlo",
        "\\\"": "constant.character.escape.hlo", "->": "keyword.operator.arrow.hlo",
    }
    for text, scope in expected.items():
        assert scope in scopes.get(text, []), (text, scopes.get(text))
    assert "comment.block.hlo" in scopes["/*"] and "comment.block.hlo" in scopes[" x "]


def test_the_grammar_knows_every_primitive_type():
    grammar = json.loads(GRAMMAR.read_text())
    shape_rule = grammar["repository"]["shapes"]["patterns"][0]["begin"]
    names = set(re.search(r"\(([^()]*)\)", shape_rule).group(1).split("|"))
    assert names == set(PRIMITIVE_TYPES)


def test_the_extension_contributes_the_language_and_grammar():
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    language = package["contributes"]["languages"][0]
    assert language["id"] == "hlo" and ".hlo" in language["extensions"]
    assert package["contributes"]["grammars"][0]["scopeName"] == json.loads(GRAMMAR.read_text())["scopeName"]
    config = json.loads((ROOT / "editors" / "vscode" / language["configuration"]).read_text())
    assert config["comments"] == {"lineComment": "//", "blockComment": ["/*", "*/"]}
    assert ["(", ")"] in config["brackets"] and ["{", "}"] in config["brackets"]
    assert "hlo-lsp" in (ROOT / "editors" / "vscode" / "extension.js").read_text() + json.dumps(package)
