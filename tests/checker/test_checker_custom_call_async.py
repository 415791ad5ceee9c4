"""Checker errors of custom-call (layout constraints, aliasing) and of the
asynchronous wrappers (async-start/update/done and their sugar, copy-start/done)."""
import pytest

H = "HloModule m\n\n"
BODY = """%body (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  ROOT %e = f32[4] exponential(%a)
}

"""

CASES = {
    "layout constraint count": (H + """ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %c = f32[4] custom-call(%x, %y), custom_call_target="foo", operand_layout_constraints={f32[4]{0}}
}
""", ["6:67: operand_layout_constraints lists 1 shape but 'custom-call' has 2 operands"]),

    "layout constraint shape": (H + """ENTRY %main (x: f32[4], y: f32[2,2]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[2,2] parameter(1)
  ROOT %c = f32[4] custom-call(%x, %y), custom_call_target="foo", operand_layout_constraints={f32[4]{0}, f32[4]{0}}
}
""", ["6:67: operand_layout_constraints gives operand 1 the shape f32[4] but the operand is f32[2,2]",
      "note 5:3: operand 1 is %y, defined here with shape f32[2,2]"]),

    "aliasing shapes": (H + """ENTRY %main (x: f32[4]) -> (f32[4], s32[]) {
  %x = f32[4] parameter(0)
  ROOT %c = (f32[4], s32[]) custom-call(%x), custom_call_target="foo", output_to_operand_aliasing={{1}: (0, {})}
}
""", ["5:72: output_to_operand_aliasing: result {1} is s32[] but operand 0 at {} is f32[4]; aliased buffers need "
      "equal shapes"]),

    "aliasing output index": (H + """ENTRY %main (x: f32[4]) -> (f32[4], s32[]) {
  %x = f32[4] parameter(0)
  ROOT %c = (f32[4], s32[]) custom-call(%x), custom_call_target="foo", output_to_operand_aliasing={{2}: (0, {})}
}
""", ["5:72: output_to_operand_aliasing: {2} is not an index into the result (f32[4], s32[])"]),

    "aliasing operand number": (H + """ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] custom-call(%x), custom_call_target="foo", output_to_operand_aliasing={{}: (1, {})}
}
""", ["5:63: output_to_operand_aliasing names operand 1, but 'custom-call' has 1 operand"]),

    "sugar done shape": (H + """ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %s = ((f32[4]), f32[8], s32[]) custom-call-start(%x), custom_call_target="foo"
  ROOT %d = f32[4] custom-call-done(%s)
}
""", ["6:8: shape mismatch: 'custom-call-done' produces f32[8] but the instruction is written as f32[4]"]),

    "async-start operands": (H + BODY + """ENTRY %main (x: f32[4]) -> ((f32[4], f32[4]), f32[4], s32[]) {
  %x = f32[4] parameter(0)
  ROOT %s = ((f32[4], f32[4]), f32[4], s32[]) async-start(%x, %x), calls=%body
}
""", ["10:68: calls computation %body must take 2 parameters ('async-start' passes 2 operands), but it takes 1",
      "note 3:1: %body is defined here"]),

    "async-done operand": (H + BODY + """ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %t = ((f32[4]), f32[4], s32[]) parameter(1)
  ROOT %d = f32[4] async-done(%t), calls=%body
}
""", ["11:31: operand 0 of 'async-done' must be an async-start or async-update, but it is a 'parameter'",
      "note 10:3: operand 0 is %t, defined here with shape ((f32[4]), f32[4], s32[])"]),

    "copy-done operand": (H + """ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %d = f32[4] copy-done(%x)
}
""", ["5:30: operand 0 of 'copy-done' must be the (destination, source, context) tuple of a copy-start, but it is "
      "f32[4]",
      "note 4:3: operand 0 is %x, defined here with shape f32[4]"]),
}


@pytest.mark.parametrize("name", CASES)
def test_malformed_custom_call_and_async(expect_error, name):
    text, expected = CASES[name]
    expect_error(text, expected)


def test_async_start_result_and_done_both_reported(check):
    found = check(H + BODY + """ENTRY %main (x: f32[4]) -> f32[8] {
  %x = f32[4] parameter(0)
  %s = ((f32[4]), f32[8], s32[]) async-start(%x), calls=%body
  ROOT %d = f32[8] async-done(%s), calls=%body
}
""")
    assert found == [
        ["10:51: element 1 of the result of 'async-start' is f32[8] but %body returns f32[4]",
         "note 5:8: the ROOT of %body is here"],
        ["11:36: element 1 of the operand of 'async-done' is f32[8] but %body returns f32[4]",
         "note 5:8: the ROOT of %body is here"],
    ]


def test_custom_call_result_is_authoritative(check):
    assert check(H + """ENTRY %main (x: f32[4]) -> (f32[7,7], u8[]) {
  %x = f32[4] parameter(0)
  ROOT %c = (f32[7,7], u8[]) custom-call(%x), custom_call_target="anything", api_version=API_VERSION_TYPED_FFI
}
""") == []


def test_async_update_and_done_take_the_computation_of_their_start(check):
    assert check(H + BODY + """ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %s = ((f32[4]), f32[4], s32[]) async-start(%x), calls=%body
  %u = ((f32[4]), f32[4], s32[]) async-update(%s)
  %v = ((f32[4]), f32[4], s32[]) async-update(%u)
  ROOT %d = f32[4] async-done(%v)
}
""") == []
