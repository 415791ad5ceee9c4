"""Fixpoint groups skip what did not change (hlo/passes/incremental.py) without changing results.

The IR counts edits (hlo.ir.EditClock): these tests check which edits each method records,
that the tracker revisits exactly the computations edited (or calling edited ones), and, the
property that matters, that every pipeline gives the same module with the skipping as
without it on every corpus module (and on the shared models when the checkout has them).
"""
from __future__ import annotations

import pytest

from corpus_cases import DATA, MODULES
from hlo import format_module, parse_module
from hlo.ir import EditClock
from hlo.passes import incremental
from hlo.passes.pass_manager import run_pipeline
from hlo.passes.pipelines import pipeline_text
from hlo.text.parser import clear_parse_cache

from fastpath_cases import SHARED_TEXTS

_SHARED_MODULES = [p for p in SHARED_TEXTS if not p.name.endswith((".opt.hlo", ".debug.hlo"))]

_TEXT = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  p = f32[4] parameter(0)
  z = f32[] constant(0)
  n = f32[4] negate(p)
  m = f32[4] multiply(n, n)
  ROOT r = f32[] reduce(m, z), dimensions={0}, to_apply=add
}
"""


def _module():
    module = parse_module(_TEXT)
    return module, {i.name: i for c in module.computations for i in c.instructions}


def test_replacing_uses_records_operands_and_uses():
    module, inst = _module()
    before = EditClock.now
    n, m, p = inst["n"], inst["m"], inst["p"]
    n.replace_all_uses_with(p)
    assert m.edited > before            # reads another value now
    assert n.uses_edited > before and p.uses_edited > before
    assert inst["r"].edited <= before   # further down: unchanged itself
    assert module.entry.edited > before
    assert module.computation("add").edited <= before


def test_removing_records_the_operands_uses_and_root_changes_record_both_roots():
    module, inst = _module()
    entry = module.entry
    inst["n"].replace_all_uses_with(inst["p"])
    before = EditClock.now
    entry.remove(inst["n"])
    assert inst["p"].uses_edited > before and inst["p"].edited <= before
    before = EditClock.now
    entry.root = inst["m"]
    assert inst["m"].uses_edited > before and inst["r"].uses_edited > before


def test_the_post_order_is_checked_again_after_an_edit():
    module, inst = _module()
    entry = module.entry
    assert [i.name for i in entry.post_order()] == ["p", "z", "n", "m", "r"]
    entry.instructions = [inst["m"], inst["p"], inst["z"], inst["n"], inst["r"]]  # out of order
    assert [i.name for i in entry.post_order()] == ["p", "n", "m", "z", "r"]  # searched again, not the old answer


def test_the_tracker_revisits_edited_computations_and_their_callers():
    module, inst = _module()
    tracker = incremental.ChangeTracker()
    visited = []

    def visit(comp):
        visited.append(comp.name)
        return False

    tracker.each_computation("p", module.computations, visit)
    tracker.each_computation("p", module.computations, visit)
    assert visited == ["add", "e"]                    # nothing changed: nothing visited again
    adder = module.computation("add")
    adder.root.replace_all_uses_with(adder.root)      # an edit of the callee
    tracker.each_computation("p", module.computations, visit)
    assert visited == ["add", "e", "add", "e"]        # the caller too: what it calls changed
    tracker.forget_all()
    tracker.each_computation("p", module.computations, visit)
    assert visited[-2:] == ["add", "e"]


def _pipeline_text(text: str, name: str, skipping: bool, monkeypatch) -> str:
    with monkeypatch.context() as patch:
        if not skipping:  # a tracker that remembers nothing: every pass looks at everything
            patch.setattr(incremental.ChangeTracker, "each_computation",
                          lambda self, pass_name, comps, process: any([process(c) for c in list(comps)]))
            patch.setattr(incremental.ChangeTracker, "instruction_marks", lambda self, pass_name: {})
        clear_parse_cache()
        module = parse_module(text)
        run_pipeline(module, pipeline_text(name), verify_each=False)
        return format_module(module)


@pytest.mark.parametrize("filename", MODULES)
def test_skipping_unchanged_parts_gives_the_same_module(filename, monkeypatch):
    text = (DATA / filename).read_text()
    assert _pipeline_text(text, "default", True, monkeypatch) == _pipeline_text(text, "default", False, monkeypatch)


@pytest.mark.slow
@pytest.mark.skipif(not _SHARED_MODULES, reason="the shared corpus is not beside this checkout")
@pytest.mark.parametrize("path", _SHARED_MODULES, ids=lambda p: p.name)
def test_skipping_gives_the_same_module_on_the_shared_corpus_and_models(path, monkeypatch):
    text = path.read_text()
    assert _pipeline_text(text, "default", True, monkeypatch) == _pipeline_text(text, "default", False, monkeypatch)
