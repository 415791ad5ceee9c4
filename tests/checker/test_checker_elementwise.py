"""Checker errors of elementwise ops: broadcasting, element types, compare, select,
clamp, bitcast-convert."""
import pytest

CASES = {
    "implicit broadcast": ("""HloModule m
ENTRY %main (x: f32[2,3], y: f32[3]) -> f32[2,3] {
  %x = f32[2,3] parameter(0)
  %y = f32[3] parameter(1)
  ROOT %a = f32[2,3] add(%x, %y)
}
""", ["5:30: operands of 'add' must have identical dimensions (HLO has no implicit broadcasting; use an "
      "explicit broadcast): operand 0 is f32[2,3] but operand 1 is f32[3]",
      "note 4:3: operand 1 is %y, defined here with shape f32[3]"]),

    "scalar mixed with array": ("""HloModule m
ENTRY %main (x: f32[4], s: f32[]) -> f32[4] {
  %x = f32[4] parameter(0)
  %s = f32[] parameter(1)
  ROOT %m = f32[4] maximum(%s, %x)
}
""", ["5:32: operands of 'maximum' must have identical dimensions (HLO has no implicit broadcasting; use an "
      "explicit broadcast): operand 0 is f32[] but operand 1 is f32[4]",
      "note 3:3: operand 1 is %x, defined here with shape f32[4]"]),

    "mixed element types": ("""HloModule m
ENTRY %main (x: f32[4], y: s32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = s32[4] parameter(1)
  ROOT %m = f32[4] multiply(%x, %y)
}
""", ["5:33: operands of 'multiply' must have the same element type: operand 0 is f32[4] but operand 1 is s32[4]",
      "note 4:3: operand 1 is %y, defined here with shape s32[4]"]),

    "mixed float precision": ("""HloModule m
ENTRY %main (x: f32[4], y: bf16[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = bf16[4] parameter(1)
  ROOT %s = f32[4] subtract(%x, %y)
}
""", ["5:33: operands of 'subtract' must have the same element type: operand 0 is f32[4] but operand 1 is bf16[4]",
      "note 4:3: operand 1 is %y, defined here with shape bf16[4]"]),

    "not on floats": ("""HloModule m
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] not(%x)
}
""", ["4:24: 'not' needs pred or integer elements, but operand 0 is f32[4]",
      "note 3:3: operand 0 is %x, defined here with shape f32[4]"]),

    "floor on integers": ("""HloModule m
ENTRY %main (x: s32[4]) -> s32[4] {
  %x = s32[4] parameter(0)
  ROOT %f = s32[4] floor(%x)
}
""", ["4:26: 'floor' needs floating-point elements, but operand 0 is s32[4]",
      "note 3:3: operand 0 is %x, defined here with shape s32[4]"]),

    "shift on floats": ("""HloModule m
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %s = f32[4] shift-left(%x, %x)
}
""", ["4:31: 'shift-left' needs integer elements, but operand 0 is f32[4]",
      "note 3:3: operand 0 is %x, defined here with shape f32[4]"]),

    "compare is pred": ("""HloModule m
ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  ROOT %c = f32[4] compare(%x, %y), direction=LT
}
""", ["5:8: shape mismatch: 'compare' produces pred[4] but the instruction is written as f32[4]"]),

    "compare type": ("""HloModule m
ENTRY %main (x: s32[4]) -> pred[4] {
  %x = s32[4] parameter(0)
  ROOT %c = pred[4] compare(%x, %x), direction=EQ, type=UNSIGNED
}
""", ["4:52: compare type=UNSIGNED does not fit s32 operands; expected SIGNED"]),

    "select predicate of other dimensions": ("""HloModule m
ENTRY %main (p: pred[2], x: f32[4], y: f32[4]) -> f32[4] {
  %p = pred[2] parameter(0)
  %x = f32[4] parameter(1)
  %y = f32[4] parameter(2)
  ROOT %s = f32[4] select(%p, %x, %y)
}
""", ["6:27: the predicate of 'select' must have the dimensions of its values (HLO has no implicit "
      "broadcasting): operand 0 is pred[2] but operand 1 is f32[4]",
      "note 3:3: operand 0 is %p, defined here with shape pred[2]"]),

    "clamp bound shape": ("""HloModule m
ENTRY %main (lo: f32[2], x: f32[4], hi: f32[]) -> f32[4] {
  %lo = f32[2] parameter(0)
  %x = f32[4] parameter(1)
  %hi = f32[] parameter(2)
  ROOT %c = f32[4] clamp(%lo, %x, %hi)
}
""", ["6:26: operand 0 (min) of 'clamp' must be a scalar or have the operand's dimensions: it is f32[2] but "
      "operand 1 is f32[4]",
      "note 3:3: operand 0 is %lo, defined here with shape f32[2]"]),

    "bitcast-convert to a wider type": ("""HloModule m
ENTRY %main (x: f32[4]) -> f64[3] {
  %x = f32[4] parameter(0)
  ROOT %b = f64[3] bitcast-convert(%x)
}
""", ["4:36: 'bitcast-convert' from f32 to f64 packs 2 elements into one, so the operand's last dimension must be "
      "2, but the operand is f32[4]",
      "note 3:3: operand 0 is %x, defined here with shape f32[4]"]),

    "convert keeps dimensions": ("""HloModule m
ENTRY %main (x: f32[4]) -> s32[2,2] {
  %x = f32[4] parameter(0)
  ROOT %c = s32[2,2] convert(%x)
}
""", ["4:8: shape mismatch: 'convert' produces s32[4] but the instruction is written as s32[2,2]"]),

    "complex from f16": ("""HloModule m
ENTRY %main (x: f16[4]) -> c64[4] {
  %x = f16[4] parameter(0)
  ROOT %c = c64[4] complex(%x, %x)
}
""", ["4:28: 'complex' builds c64 from f32 or c128 from f64 parts, but its operands are f16[4]",
      "note 3:3: operand 0 is %x, defined here with shape f16[4]"]),

    "operand count": ("""HloModule m
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %a = f32[4] add(%x, %x, %x)
}
""", ["4:32: 'add' expects 2 operands, got 3",
      "note 3:3: operand 2 is %x, defined here with shape f32[4]"]),
}


@pytest.mark.parametrize("name", CASES)
def test_malformed_elementwise(expect_error, name):
    text, expected = CASES[name]
    expect_error(text, expected)


def test_abs_of_complex_is_real(check):
    assert check("""HloModule m
ENTRY %main (c: c64[3]) -> f32[3] {
  %c = c64[3] parameter(0)
  ROOT %a = f32[3] abs(%c)
}
""") == []


def test_clamp_accepts_scalar_bounds(check):
    assert check("""HloModule m
ENTRY %main (lo: s32[], x: s32[3], hi: s32[]) -> s32[3] {
  %lo = s32[] parameter(0)
  %x = s32[3] parameter(1)
  %hi = s32[] parameter(2)
  ROOT %c = s32[3] clamp(%lo, %x, %hi)
}
""") == []
