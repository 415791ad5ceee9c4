"""Completion and signature help from the text around the cursor, and the operand table behind them."""
from __future__ import annotations

import pytest

from hlo.lsp.completion import complete, signature_help
from hlo.lsp.operands import OPERAND_ROLES, active_operand, operand_specs
from hlo.opcodes import OPCODES
from hlo.shapes import PRIMITIVE_TYPES

TEXT = """\
HloModule c

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(%a, %b)
}

ENTRY %main (x: f32[4,8]) -> f32[4] {
  %x = f32[4,8]{1,0} parameter(0)
  %ninf = f32[] constant(-inf)
  CURSOR
}
"""


def at(line: str):
    """(text, offset) with `line` in place of CURSOR, the cursor at its '|'."""
    text = TEXT.replace("CURSOR", line.replace("|", ""))
    return text, text.index(line.replace("|", "")) + line.index("|")


def labels(line: str) -> list[str]:
    text, offset = at(line)
    return [item.label for item in complete(text, offset).items]


def test_contexts():
    assert sorted(labels("%r = f32[4]{0} red|")) == ["reduce", "reduce-precision", "reduce-scatter", "reduce-window"]
    assert labels("%r = f32[4]{0} reduce(%x, %|") == ["%ninf", "%x"]
    assert labels("%r = f32[4]{0} reduce(%x, %ninf), |")[:2] == ["dimensions", "to_apply"]   # required first
    assert labels("%r = f32[4]{0} reduce(%x, %ninf), dimensions={1}, to|") == ["to_apply"]
    assert labels("%r = f32[4]{0} reduce(%x, %ninf), dimensions={1}, to_apply=%|") == ["%max", "%main"]
    assert labels("%c = pred[4,8] compare(%x, %x), direction=L|") == ["LE", "LT"]
    assert labels("%t = (f32[], u|") == [t for t in PRIMITIVE_TYPES if t.startswith("u")]
    assert labels("%t = (f32[], s3|") == ["s32"]
    assert labels("%r = f32[4] constant(|") == []
    assert labels("// %r = f32[4]{0} red|") == []
    assert labels('%r = f32[4] custom-call(), custom_call_target="red|') == []


def test_a_braced_attribute_value_is_not_the_operand_list():
    # an open '{' after the operands once counted as "inside the operand list": instruction names were offered
    assert labels("%c = f32[4,8] conditional(%x, %x, %x), branch_computations={%max, %|") == ["%max", "%main"]
    assert labels("%c = f32[4,8] conditional(%x, %x, %x), branch_computations={%|") == ["%max", "%main"]
    assert labels("%r = f32[4]{0} reduce(%x, %ninf), dimensions={|") == []
    text, offset = at("%r = f32[4]{0} reduce(%x, %ninf), dimensions={|")
    assert signature_help(text, offset) is None
    assert labels("%t = (f32[4,8], f32[]) tuple((%x), %|") == ["%ninf", "%x"]   # nested parentheses: still inside


def test_right_after_the_equal_sign_types_come_before_opcodes():
    found = labels("%r = |")
    assert found[:len(PRIMITIVE_TYPES)] == list(PRIMITIVE_TYPES)
    assert set(OPCODES) <= set(found) or len(found) == 200


def test_replacement_range_covers_the_typed_word():
    text, offset = at("%r = f32[4]{0} reduce(%x, %ni|")
    item = complete(text, offset).items[0]
    assert text[item.replace_start:item.replace_end] == "%ni" and item.insert_text == "%ninf"


def test_signature_help_counts_operands():
    text, offset = at("%r = f32[4]{0} reduce(%x, %ninf, |")
    found = signature_help(text, offset)
    assert found.label == "reduce(inputs...: T_i[d], identical dims, init_values...: T_i[], one per input)"
    assert found.active_parameter == 1
    start, end, _ = found.parameters[1]
    assert found.label[start:end].startswith("init_values")
    text, offset = at("%s = f32[4,8] dynamic-slice(%x, |")
    assert signature_help(text, offset).active_parameter == 1
    text, offset = at("%s = f32[4,8] negate(%x)|")
    assert signature_help(text, offset) is None


def test_operand_roles_agree_with_the_opcode_table():
    for opcode, specs in OPERAND_ROLES.items():
        info = OPCODES[opcode]
        if info.arity is not None and opcode not in ("parameter", "constant", "rng"):
            assert len(specs) == info.arity and not any(s.repeated for s in specs), opcode
    for opcode in OPCODES:
        assert operand_specs(opcode) is not None
    assert [s.name for s in operand_specs("custom-call-start")] == ["operands"]


@pytest.mark.parametrize("index,total,expected", [(0, 7, 0), (2, 7, 0), (3, 7, 1), (4, 7, 2), (6, 7, 2)])
def test_active_operand_of_scatter(index, total, expected):
    assert active_operand(operand_specs("scatter"), index, total) == expected
