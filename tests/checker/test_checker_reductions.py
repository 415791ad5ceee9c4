"""Checker errors of reduce, reduce-window, select-and-scatter, map, sort and topk:
dimensions, windows and the signatures of the called computations."""
import pytest

H = """HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%ge (x: f32[], y: f32[]) -> pred[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %c = pred[] compare(%x, %y), direction=GE
}

"""

CASES = {
    "reduce dimension out of range": (H + """ENTRY %main (x: f32[4,6]) -> f32[4] {
  %x = f32[4,6] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[4] reduce(%x, %z), dimensions={2}, to_apply=%add
}
""", ["18:36: dimensions={2}: dimension 2 is out of range for the input f32[4,6] (valid: 0..1)"]),

    "reducer element type": (H + """ENTRY %main (x: s32[4,6]) -> s32[4] {
  %x = s32[4,6] parameter(0)
  %z = s32[] constant(0)
  ROOT %r = s32[4] reduce(%x, %z), dimensions={1}, to_apply=%add
}
""", ["18:52: to_apply computation %add: its result is f32[] but input 0 has element type s32, so it must be s32[]",
      "note 6:8: the ROOT of %add is here"]),

    "reducer parameter count": (H + """ENTRY %main (x: f32[4,6], y: f32[4,6]) -> f32[4] {
  %x = f32[4,6] parameter(0)
  %y = f32[4,6] parameter(1)
  %z = f32[] constant(0)
  ROOT %r = f32[4] reduce(%x, %y, %z, %z), dimensions={1}, to_apply=%add
}
""", ["19:60: to_apply computation %add must take 4 parameters (2 accumulators then 2 values), but it takes 2",
      "note 3:1: %add is defined here"]),

    "init value is not a scalar": (H + """ENTRY %main (x: f32[4,6], v: f32[6]) -> f32[4] {
  %x = f32[4,6] parameter(0)
  %v = f32[6] parameter(1)
  ROOT %r = f32[4] reduce(%x, %v), dimensions={1}, to_apply=%add
}
""", ["18:31: operand 1 (init value) of 'reduce' must be a scalar, but it is f32[6]",
      "note 17:3: operand 1 is %v, defined here with shape f32[6]"]),

    "init value type": (H + """ENTRY %main (x: f32[4,6]) -> f32[4] {
  %x = f32[4,6] parameter(0)
  %z = s32[] constant(0)
  ROOT %r = f32[4] reduce(%x, %z), dimensions={1}, to_apply=%add
}
""", ["18:31: init value 0 of 'reduce' is s32[] but must be f32[] (a scalar of input 0's element type)",
      "note 17:3: operand 1 is %z, defined here with shape s32[]"]),

    "reduce-window rank": (H + """ENTRY %main (x: f32[4,6]) -> f32[2,2] {
  %x = f32[4,6] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[2,2] reduce-window(%x, %z), window={size=2}, to_apply=%add
}
""", ["18:45: window has 1 dimension but the input f32[4,6] has 2"]),

    "reduce-window stride": (H + """ENTRY %main (x: f32[4,6]) -> f32[2,2] {
  %x = f32[4,6] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[2,2] reduce-window(%x, %z), window={size=2x3 stride=2x0}, to_apply=%add
}
""", ["18:45: window stride of dimension 1 must be positive, got 0"]),

    "select must return pred": (H + """ENTRY %main (x: f32[4,6], s: f32[2,2]) -> f32[4,6] {
  %x = f32[4,6] parameter(0)
  %s = f32[2,2] parameter(1)
  %z = f32[] constant(0)
  ROOT %r = f32[4,6] select-and-scatter(%x, %s, %z), window={size=2x3 stride=2x3}, select=%add, scatter=%add
}
""", ["19:84: select computation %add must return pred[], but returns f32[]",
      "note 6:8: the ROOT of %add is here"]),

    "select-and-scatter source": (H + """ENTRY %main (x: f32[4,6], src: f32[2,3]) -> f32[4,6] {
  %x = f32[4,6] parameter(0)
  %src = f32[2,3] parameter(1)
  %z = f32[] constant(0)
  ROOT %r = f32[4,6] select-and-scatter(%x, %src, %z), window={size=2x3 stride=2x3}, select=%ge, scatter=%add
}
""", ["19:45: the source of 'select-and-scatter' must have the shape of the windowed operand, f32[2,2], but it is "
      "f32[2,3]",
      "note 17:3: operand 1 is %src, defined here with shape f32[2,3]"]),

    "sort comparator arity": (H + """ENTRY %main (x: f32[4,6], i: s32[4,6]) -> (f32[4,6], s32[4,6]) {
  %x = f32[4,6] parameter(0)
  %i = s32[4,6] parameter(1)
  ROOT %r = (f32[4,6], s32[4,6]) sort(%x, %i), dimensions={1}, to_apply=%ge
}
""", ["18:64: to_apply computation %ge must take 4 parameters (two per operand), but it takes 2",
      "note 9:1: %ge is defined here"]),

    "sort comparator result": (H + """ENTRY %main (x: f32[6]) -> f32[6] {
  %x = f32[6] parameter(0)
  ROOT %r = f32[6] sort(%x), dimensions={0}, to_apply=%add
}
""", ["17:46: comparator %add of 'sort' must return pred[], but returns f32[]",
      "note 6:8: the ROOT of %add is here"]),

    "map arity": (H + """ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %r = f32[4] map(%x, %x, %x), dimensions={0}, to_apply=%add
}
""", ["17:53: to_apply computation %add must take 3 parameters (one per operand), but it takes 2",
      "note 3:1: %add is defined here"]),

    "topk k": (H + """ENTRY %main (x: f32[4,6]) -> (f32[4,7], s32[4,7]) {
  %x = f32[4,6] parameter(0)
  ROOT %r = (f32[4,7], s32[4,7]) topk(%x), k=7
}
""", ["17:44: k=7 must be in [0, 6], the size of the last dimension of f32[4,6]"]),
}


@pytest.mark.parametrize("name", CASES)
def test_malformed_reductions(expect_error, name):
    text, expected = CASES[name]
    expect_error(text, expected)
