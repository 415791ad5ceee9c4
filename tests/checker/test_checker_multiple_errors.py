"""Every error of a module is reported at once, in source order; check_instruction
checks single instructions for passes."""
import pytest

from hlo import HloError, parse_module
from hlo.analysis.checker import check_instruction, check_module
from hlo.ir import Instruction
from hlo.shapes import Shape

SEVERAL = """HloModule several

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(2)
  ROOT %s = f32[] add(%a, %a)
}

ENTRY %main (x: f32[2,3], y: f32[3]) -> f32[3,2] {
  %x = f32[2,3] parameter(0)
  %y = f32[3] parameter(1)
  %z = f32[2,3] add(%x, %y)
  %w = f32[3,2] add(%x, %x)
  %t = f32[2,3] transpose(%x), dimensions={1,0}
  ROOT %r = f32[2] reduce(%x, %y), dimensions={1}, to_apply=%add
}
"""


def test_every_error_is_reported_in_source_order(check):
    assert check(SEVERAL) == [
        ["5:3: computation %add has 2 parameters, which must be numbered 0..1, but %b is parameter(2); there is no "
         "parameter(1)"],
        ["9:38: computation %main is declared to return f32[3,2] but its ROOT %r produces f32[2]",
         "note 15:8: the ROOT of %main is here"],
        ["12:25: operands of 'add' must have identical dimensions (HLO has no implicit broadcasting; use an explicit "
         "broadcast): operand 0 is f32[2,3] but operand 1 is f32[3]",
         "note 11:3: operand 1 is %y, defined here with shape f32[3]"],
        ["13:3: shape mismatch: 'add' produces f32[2,3] but the instruction is written as f32[3,2]"],
        ["14:3: shape mismatch: 'transpose' produces f32[3,2] but the instruction is written as f32[2,3]"],
        ["15:31: operand 1 (init value) of 'reduce' must be a scalar, but it is f32[3]",
         "note 11:3: operand 1 is %y, defined here with shape f32[3]"],
    ]


def test_rendered_diagnostics_show_source_line_caret_and_notes():
    with pytest.raises(HloError) as info:
        check_module(parse_module(SEVERAL, "several.hlo"))
    rendered = info.value.render().split("\n")
    assert rendered[:9] == [
        "several.hlo:5:3: error: computation %add has 2 parameters, which must be numbered 0..1, but %b is "
        "parameter(2); there is no parameter(1)",
        "    %b = f32[] parameter(2)",
        "    ^",
        "several.hlo:9:38: error: computation %main is declared to return f32[3,2] but its ROOT %r produces f32[2]",
        "  ENTRY %main (x: f32[2,3], y: f32[3]) -> f32[3,2] {",
        "                                       ^",
        "several.hlo:15:8: note: the ROOT of %main is here",
        "    ROOT %r = f32[2] reduce(%x, %y), dimensions={1}, to_apply=%add",
        "         ^",
    ]


def test_a_bad_callee_is_reported_once():
    text = """HloModule m

%f (a: f32[4]) -> f32[4] {
  ROOT %a = f32[4] parameter(1)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %c1 = f32[4] call(%x), to_apply=%f
  ROOT %c2 = f32[4] call(%c1), to_apply=%f
}
"""
    with pytest.raises(HloError) as info:
        check_module(parse_module(text, "test.hlo"))
    assert [d.message for d in info.value.diagnostics] == [
        "computation %f has 1 parameter, which must be numbered 0..0, but %a is parameter(1); there is no "
        "parameter(0)"]


VALID = """HloModule m

%f (a: f32[4]) -> f32[4] {
  ROOT %a = f32[4] parameter(0)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %n = f32[4] negate(%x)
  ROOT %c = f32[4] call(%n), to_apply=%f
}
"""


def test_check_instruction_accepts_a_valid_instruction():
    module = parse_module(VALID)
    for inst in module.instructions():
        check_instruction(inst)


def test_check_instruction_reports_what_a_pass_broke():
    module = parse_module(VALID)
    entry = module.entry
    x = entry.by_name()["x"]
    wrong = Instruction("wrong", "add", Shape.array("f32", [2]), [x, x])
    entry.add(wrong)
    with pytest.raises(HloError) as info:
        check_instruction(wrong)
    assert info.value.message == "shape mismatch: 'add' produces f32[4] but the instruction is written as f32[2]"
    assert info.value.diagnostics[0].loc is None


def test_check_instruction_reports_a_broken_callee():
    module = parse_module(VALID)
    callee = module.computation("f")
    callee.root.attrs["parameter_number"] = 3
    with pytest.raises(HloError) as info:
        check_instruction(module.entry.root)
    assert info.value.message == "computation %f has invalid parameter numbers"
