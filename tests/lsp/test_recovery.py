"""hlo.text.parser.parse_module_with_recovery: the best module and every diagnostic, never an exception."""
from __future__ import annotations

from hlo import format_module, parse_module
from hlo.text.parser import parse_module_with_recovery

TEXT = """\
HloModule r

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  %neg = f32[4]{0} negate(%x)
  ROOT %r = f32[] reduce(%neg, %zero), dimensions={0}, to_apply=%add
}
"""


def test_a_clean_text_gives_the_same_module_as_parse_module():
    module, diagnostics = parse_module_with_recovery(TEXT, "r.hlo")
    assert diagnostics == []
    assert format_module(module) == format_module(parse_module(TEXT))


def test_a_broken_instruction_leaves_the_rest_of_the_module():
    broken = TEXT.replace("%neg = f32[4]{0} negate(%x)", "%neg = f32[4]{0} negate(%x")
    module, diagnostics = parse_module_with_recovery(broken, "r.hlo")
    assert [d.loc.line for d in diagnostics] == [12, 13]
    assert "')'" in diagnostics[0].message
    assert "undefined instruction '%neg'" in diagnostics[1].message   # the language server prunes this one
    main = module.computation("main")
    assert [i.name for i in main.instructions] == ["x", "zero", "r"]   # %neg is gone, the rest is built
    assert module.computation("add").root.name == "s"


def test_builder_errors_come_with_the_module():
    text = TEXT.replace("negate(%x)", "negate(%y)")
    module, diagnostics = parse_module_with_recovery(text, "r.hlo")
    assert module is not None and len(diagnostics) == 1
    assert "use of undefined instruction '%y'" in diagnostics[0].message
    assert diagnostics[0].loc.offset == text.index("%y")


def test_an_unclosed_last_computation_is_closed():
    text = TEXT[:TEXT.rindex("}")]
    module, diagnostics = parse_module_with_recovery(text, "r.hlo")
    assert "'}' is missing" in diagnostics[0].message
    assert [i.name for i in module.computation("main").instructions] == ["x", "zero", "neg", "r"]


def test_nothing_to_build():
    assert parse_module_with_recovery("   \n", "e.hlo")[0] is None
    module, diagnostics = parse_module_with_recovery("HloModule only_a_header\n", "h.hlo")
    assert module is None and diagnostics
