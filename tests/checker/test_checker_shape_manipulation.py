"""Checker errors of data-movement ops: broadcast, reshape, transpose, slice,
concatenate, pad, tuples, dynamic slices, reverse, bitcast, iota."""
import pytest

H = "HloModule m\n"

CASES = {
    "broadcast size": (H + """ENTRY %main (x: f32[3]) -> f32[2,4] {
  %x = f32[3] parameter(0)
  ROOT %b = f32[2,4] broadcast(%x), dimensions={1}
}
""", ["4:37: 'broadcast' maps operand dimension 0 (size 3) to result dimension 1, which has size 4 in f32[2,4]; "
      "sizes must be equal"]),

    "broadcast rank": (H + """ENTRY %main (x: f32[3]) -> f32[2,3] {
  %x = f32[3] parameter(0)
  ROOT %b = f32[2,3] broadcast(%x), dimensions={0,1}
}
""", ["4:37: 'broadcast' needs one entry in dimensions= per operand dimension: the operand is f32[3] (rank 1) "
      "but dimensions={0,1} has 2"]),

    "reshape element count": (H + """ENTRY %main (x: f32[2,3]) -> f32[4,2] {
  %x = f32[2,3] parameter(0)
  ROOT %r = f32[4,2] reshape(%x)
}
""", ["4:8: 'reshape' must keep the element count: the operand f32[2,3] has 6 elements but the result f32[4,2] "
      "has 8"]),

    "reshape element type": (H + """ENTRY %main (x: f32[2,3]) -> s32[6] {
  %x = f32[2,3] parameter(0)
  ROOT %r = s32[6] reshape(%x)
}
""", ["4:8: shape mismatch: 'reshape' produces f32[6] but the instruction is written as s32[6]"]),

    "transpose permutation": (H + """ENTRY %main (x: f32[2,3,4]) -> f32[4,3,2] {
  %x = f32[2,3,4] parameter(0)
  ROOT %t = f32[4,3,2] transpose(%x), dimensions={2,1,1}
}
""", ["4:39: transpose dimensions={2,1,1} must be a permutation of 0..2 (the operand is f32[2,3,4])"]),

    "transpose result": (H + """ENTRY %main (x: f32[2,3]) -> f32[2,3] {
  %x = f32[2,3] parameter(0)
  ROOT %t = f32[2,3] transpose(%x), dimensions={1,0}
}
""", ["4:8: shape mismatch: 'transpose' produces f32[3,2] but the instruction is written as f32[2,3]"]),

    "slice limit": (H + """ENTRY %main (x: f32[8]) -> f32[3] {
  %x = f32[8] parameter(0)
  ROOT %s = f32[3] slice(%x), slice={[2:10:3]}
}
""", ["4:31: slice range [2:10:3] of dimension 0 must satisfy 0 <= start <= limit <= 8 (the operand is f32[8])"]),

    "slice strided size": (H + """ENTRY %main (x: f32[8]) -> f32[3] {
  %x = f32[8] parameter(0)
  ROOT %s = f32[3] slice(%x), slice={[1:8:3]}
}
""", []),

    "concatenate other dimension": (H + """ENTRY %main (x: f32[2,3], y: f32[3,3]) -> f32[2,6] {
  %x = f32[2,3] parameter(0)
  %y = f32[3,3] parameter(1)
  ROOT %c = f32[2,6] concatenate(%x, %y), dimensions={1}
}
""", ["5:38: operands of 'concatenate' must have equal dimensions except dimension 1: operand 0 is f32[2,3] but "
      "operand 1 is f32[3,3]",
      "note 4:3: operand 1 is %y, defined here with shape f32[3,3]"]),

    "pad value type": (H + """ENTRY %main (x: f32[3]) -> f32[1] {
  %x = f32[3] parameter(0)
  %z = s32[] constant(0)
  ROOT %p = f32[1] pad(%x, %z), padding=0_-2
}
""", ["5:28: operands of 'pad' must have the same element type: operand 0 is f32[3] but operand 1 (padding value) "
      "is s32[]",
      "note 4:3: operand 1 is %z, defined here with shape s32[]"]),

    "pad negative size": (H + """ENTRY %main (x: f32[3]) -> f32[0] {
  %x = f32[3] parameter(0)
  %z = f32[] constant(0)
  ROOT %p = f32[0] pad(%x, %z), padding=-2_-2
}
""", ["5:33: padding -2_-2_0 of dimension 0 (size 3) gives a negative size -1"]),

    "tuple index": (H + """ENTRY %main (x: f32[2,3]) -> (f32[2,3], f32[]) {
  %x = f32[2,3] parameter(0)
  %z = f32[] constant(0)
  %t = (f32[2,3], f32[]) tuple(%x, %z)
  %g = f32[] get-tuple-element(%t), index=2
  ROOT %r = (f32[2,3], f32[]) tuple(%x, %g)
}
""", ["6:37: index=2 is out of range for the 2-element tuple (f32[2,3], f32[])",
      "note 5:3: operand 0 is %t, defined here with shape (f32[2,3], f32[])"]),

    "get-tuple-element of an array": (H + """ENTRY %main (x: f32[2]) -> f32[] {
  %x = f32[2] parameter(0)
  ROOT %g = f32[] get-tuple-element(%x), index=0
}
""", ["4:37: 'get-tuple-element' needs a tuple operand, but operand 0 is f32[2]",
      "note 3:3: operand 0 is %x, defined here with shape f32[2]"]),

    "dynamic-slice size": (H + """ENTRY %main (x: f32[4,4], i: s32[]) -> f32[2,5] {
  %x = f32[4,4] parameter(0)
  %i = s32[] parameter(1)
  ROOT %d = f32[2,5] dynamic-slice(%x, %i, %i), dynamic_slice_sizes={2,5}
}
""", ["5:49: dynamic_slice_sizes={2,5}: size 5 of dimension 1 must be in [0, 4]"]),

    "dynamic-slice index count": (H + """ENTRY %main (x: f32[4,4], i: s32[]) -> f32[2,2] {
  %x = f32[4,4] parameter(0)
  %i = s32[] parameter(1)
  ROOT %d = f32[2,2] dynamic-slice(%x, %i), dynamic_slice_sizes={2,2}
}
""", ["5:8: 'dynamic-slice' needs 2 scalar start indices (one per operand dimension), got 1"]),

    "dynamic-update-slice too large": (H + """ENTRY %main (x: f32[4], u: f32[5], i: s32[]) -> f32[4] {
  %x = f32[4] parameter(0)
  %u = f32[5] parameter(1)
  %i = s32[] parameter(2)
  ROOT %d = f32[4] dynamic-update-slice(%x, %u, %i)
}
""", ["6:45: the update f32[5] is larger than the operand f32[4] in dimension 0",
      "note 4:3: operand 1 is %u, defined here with shape f32[5]"]),

    "reverse dimension": (H + """ENTRY %main (x: f32[4,4]) -> f32[4,4] {
  %x = f32[4,4] parameter(0)
  ROOT %r = f32[4,4] reverse(%x), dimensions={0,2}
}
""", ["4:35: dimensions={0,2}: dimension 2 is out of range for the operand f32[4,4] (valid: 0..1)"]),

    "bitcast size": (H + """ENTRY %main (x: f32[2,3]) -> f32[5] {
  %x = f32[2,3] parameter(0)
  ROOT %b = f32[5] bitcast(%x)
}
""", ["4:28: 'bitcast' must keep the buffer size: the operand f32[2,3] has 192 bits but the result f32[5] has 160",
      "note 3:3: operand 0 is %x, defined here with shape f32[2,3]"]),

    "iota dimension": (H + """ENTRY %main () -> s32[4] {
  ROOT %i = s32[4] iota(), iota_dimension=1
}
""", ["3:28: iota_dimension=1 is out of range for s32[4] (valid: 0..0)"]),

}


@pytest.mark.parametrize("name", CASES)
def test_malformed_shape_manipulation(check, name):
    text, expected = CASES[name]
    assert check(text) == ([expected] if expected else [])
