"""The name index: every name of a document, where it is defined and used, tolerant of broken text."""
from __future__ import annotations

from pathlib import Path

import pytest

from hlo.lsp.index import COMPUTATION, DECLARATION, DEFINITION, INSTRUCTION, USE, build_index

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "samples").glob("*.hlo")) + sorted((ROOT / "tests" / "data" / "corpus").glob("*.hlo"))

TEXT = """\
HloModule m, entry_computation_layout={(f32[2]{0})->f32[2]{0}}

%body (p: (s32[], f32[2])) -> (s32[], f32[2]) {
  %p = (s32[], f32[2]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %v = f32[2]{0} get-tuple-element(%p), index=1
  ROOT %t = (s32[], f32[2]) tuple(%i, %v), control-predecessors={%v}
}, execution_thread="main"

%cond (p: (s32[], f32[2])) -> pred[] {
  %p = (s32[], f32[2]) parameter(0)
  ROOT %c = pred[] constant(true)
}

ENTRY %main (v: f32[2]) -> f32[2] {
  %v = f32[2]{0} parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[2]) tuple(%zero, %v)
  %loop = (s32[], f32[2]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[2]{0} get-tuple-element(%loop), index=1
}
"""


def test_structure_of_a_module():
    index = build_index(TEXT)
    assert [c.name for c in index.computations] == ["body", "cond", "main"]
    assert [c.is_entry for c in index.computations] == [False, False, True]
    body = index.computations[0]
    assert [i.name for i in body.instructions] == ["p", "i", "v", "t"]
    assert [i.opcode for i in body.instructions] == ["parameter", "get-tuple-element", "get-tuple-element", "tuple"]
    assert body.instructions[3].is_root
    assert TEXT[body.close] == "}" and TEXT[body.end - 1] == '"'   # the tail attribute belongs to it
    assert [p.name for p in body.params] == ["p"] and body.params[0].role == DECLARATION
    t = body.instructions[3]
    assert TEXT[t.shape_start:t.shape_end] == "(s32[], f32[2])"
    assert [o.name for o in t.operands] == ["i", "v"]
    assert [a.name for a in t.attributes] == ["control-predecessors"]
    assert TEXT[t.attributes[0].value_start:t.attributes[0].value_end] == "{%v}"


def test_every_occurrence_spells_its_name_and_uses_resolve_in_scope():
    index = build_index(TEXT)
    for occ in index.occurrences:
        assert TEXT[occ.start:occ.end] == occ.name
    main_v = index.computations[2].instruction_named("v")
    uses = [o for o in index.occurrences_of(main_v.definition) if o.role == USE]
    assert [TEXT.count("\n", 0, o.start) + 1 for o in uses] == [18]      # not %body's %v
    body_v = index.computations[0].instruction_named("v")
    assert [o.context for o in index.occurrences_of(body_v.definition) if o.role == USE] == [
        "operand", "control-predecessors"]
    calls = [o for o in index.occurrences if o.kind == COMPUTATION and o.role == USE]
    assert [(o.name, o.context) for o in calls] == [("cond", "condition"), ("body", "body")]


def test_queries_by_offset():
    index = build_index(TEXT)
    at = TEXT.index("%init = ") + 1
    occ = index.occurrence_at(at)
    assert (occ.name, occ.kind, occ.role) == ("init", INSTRUCTION, DEFINITION)
    assert index.occurrence_at(at + len("init")) is occ      # just after the name still counts
    use = index.occurrence_at(TEXT.index("while(%init)") + 8)
    assert index.definition_of(use) is occ
    assert index.instruction_at(TEXT.index("condition=")).name == "loop"
    assert index.computation_at(TEXT.index("%zero")).name == "main"
    assert index.occurrence_at(TEXT.index("HloModule")) is None


def test_names_without_percent_and_bare_identifiers():
    text = "HloModule m\n\nENTRY main {\n  a = f32[] parameter(0)\n  ROOT b = f32[] negate(a)\n}\n"
    index = build_index(text)
    main = index.computations[0]
    assert [i.name for i in main.instructions] == ["a", "b"]
    assert [o.name for o in main.instructions[1].operands] == ["a"]


def test_tolerates_broken_lines():
    broken = TEXT.replace("%i = s32[] get-tuple-element(%p), index=0", '%i = s32[] get-tuple-element(%p, "oops')
    broken = broken.replace("%zero = s32[] constant(0)", "%zero = s32[] constant(0")   # unclosed
    broken = broken.replace("ROOT %c = pred[] constant(true)\n}", "ROOT %c = pred[] constant(true)\n")  # no '}'
    index = build_index(broken)
    assert [c.name for c in index.computations] == ["body", "cond", "main"]
    main = index.computations[2]
    assert [i.name for i in main.instructions] == ["v", "zero", "init", "loop", "out"]
    assert [o.name for o in main.instructions[-1].operands] == ["loop"]
    assert [o.name for o in main.instruction_named("init").operands] == ["zero", "v"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_use_in_the_corpus_resolves(path):
    text = path.read_text()
    index = build_index(text)
    assert index.computations
    for occ in index.occurrences:
        assert text[occ.start:occ.end] == occ.name
        if occ.role == USE:
            assert index.definition_of(occ) is not None, (occ, text[occ.start - 30:occ.end])
    for inst in index.instructions:
        assert inst.opcode is not None and inst.operands_close > inst.operands_open
