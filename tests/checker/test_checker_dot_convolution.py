"""Checker errors of dot and convolution: dimension numbers, sizes, result types,
windows, feature groups and dim_labels."""
import pytest

H = "HloModule m\n"
CONV = H + """ENTRY %main (x: f32[1,5,5,4], w: f32[3,3,4,6]) -> f32[1,3,3,6] {
  %x = f32[1,5,5,4] parameter(0)
  %w = f32[3,3,4,6] parameter(1)
  ROOT %c = f32[1,3,3,6] convolution(%x, %w), ATTRS
}
"""

CASES = {
    "contracting sizes": (H + """ENTRY %main (a: f32[2,3], b: f32[4,5]) -> f32[2,5] {
  %a = f32[2,3] parameter(0)
  %b = f32[4,5] parameter(1)
  ROOT %d = f32[2,5] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""", ["5:61: contracting dimensions must have equal sizes: lhs dimension 1 of f32[2,3] has size 3 but rhs "
      "dimension 0 of f32[4,5] has size 4"]),

    "contracting dimension out of range": (H + """ENTRY %main (a: f32[2,3], b: f32[3,5]) -> f32[2,5] {
  %a = f32[2,3] parameter(0)
  %b = f32[3,5] parameter(1)
  ROOT %d = f32[2,5] dot(%a, %b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
""", ["5:35: lhs_contracting_dims={2}: dimension 2 is out of range for lhs f32[2,3] (valid: 0..1)"]),

    "batch dimension count": (H + """ENTRY %main (a: f32[5,2,3], b: f32[5,3,4]) -> f32[5,2,4] {
  %a = f32[5,2,3] parameter(0)
  %b = f32[5,3,4] parameter(1)
  ROOT %d = f32[5,2,4] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_contracting_dims={1}
}
""", ["5:37: lhs_batch_dims={0} and rhs_batch_dims={} must have the same number of entries"]),

    "dimension listed twice": (H + """ENTRY %main (a: f32[3,3], b: f32[3,3]) -> f32[3] {
  %a = f32[3,3] parameter(0)
  %b = f32[3,3] parameter(1)
  ROOT %d = f32[3] dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={0}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
""", ["5:53: lhs dimension 0 is listed more than once in lhs_batch_dims={0} and lhs_contracting_dims={0}"]),

    "narrowing integer result": (H + """ENTRY %main (a: s32[2,3], b: s32[3,5]) -> s8[2,5] {
  %a = s32[2,3] parameter(0)
  %b = s32[3,5] parameter(1)
  ROOT %d = s8[2,5] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""", ["5:8: the result type s8 of 'dot' must not be narrower than the operand type s32"]),

    "dot result dimensions": (H + """ENTRY %main (a: f32[2,3], b: f32[3,5]) -> f32[5,2] {
  %a = f32[2,3] parameter(0)
  %b = f32[3,5] parameter(1)
  ROOT %d = f32[5,2] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""", ["5:8: shape mismatch: 'dot' produces f32[2,5] but the instruction is written as f32[5,2]"]),

    "dot operand types": (H + """ENTRY %main (a: f32[2,3], b: s8[3,5]) -> f32[2,5] {
  %a = f32[2,3] parameter(0)
  %b = s8[3,5] parameter(1)
  ROOT %d = f32[2,5] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""", ["5:30: operands of 'dot' must have the same element type: operand 0 is f32[2,3] but operand 1 is s8[3,5]",
      "note 4:3: operand 1 is %b, defined here with shape s8[3,5]"]),

    "feature groups": (CONV.replace("ATTRS", "window={size=3x3}, dim_labels=b01f_01io->b01f, feature_group_count=2"),
                       ["5:42: the input has 4 features and feature_group_count=2, so the kernel needs 2 input "
                        "features, but the kernel f32[3,3,4,6] has 4",
                        "note 4:3: operand 1 is %w, defined here with shape f32[3,3,4,6]"]),

    "window size against kernel": (CONV.replace("ATTRS", "window={size=2x2}, dim_labels=b01f_01io->b01f"),
                                   ["5:47: window size of spatial dimension 0 is 2 but the kernel f32[3,3,4,6] has "
                                    "size 3 there"]),

    "window rank": (CONV.replace("ATTRS", "window={size=3}, dim_labels=b01f_01io->b01f"),
                    ["5:47: window has 1 dimension but dim_labels b01f_01io->b01f have 2 spatial dimensions"]),

    "strided output": (CONV.replace("ATTRS", "window={size=3x3 stride=2x2}, dim_labels=b01f_01io->b01f"),
                       ["5:8: shape mismatch: 'convolution' produces f32[1,2,2,6] but the instruction is written as "
                        "f32[1,3,3,6]"]),

    "both group counts": (CONV.replace("ATTRS", "window={size=3x3}, dim_labels=b01f_01io->b01f, "
                                                "feature_group_count=2, batch_group_count=2"),
                          ["5:117: feature_group_count=2 and batch_group_count=2 cannot both be greater than 1"]),

    "operand rank against dim_labels": (H + """ENTRY %main (x: f32[1,5,4], w: f32[3,3,4,6]) -> f32[1,3,3,6] {
  %x = f32[1,5,4] parameter(0)
  %w = f32[3,3,4,6] parameter(1)
  ROOT %c = f32[1,3,3,6] convolution(%x, %w), window={size=3x3}, dim_labels=b01f_01io->b01f
}
""", ["5:66: dim_labels b01f_01io->b01f describe rank-4 operands, but operand 0 (input) is f32[1,5,4]",
      "note 3:3: operand 0 is %x, defined here with shape f32[1,5,4]"]),
}


@pytest.mark.parametrize("name", CASES)
def test_malformed_dot_and_convolution(expect_error, name):
    text, expected = CASES[name]
    expect_error(text, expected)


def test_preferred_element_types_are_accepted(check):
    assert check(H + """ENTRY %main (a: bf16[2,3], b: bf16[3,5], c: s8[2,3], d: s8[3,5]) -> s32[2,5] {
  %a = bf16[2,3] parameter(0)
  %b = bf16[3,5] parameter(1)
  %c = s8[2,3] parameter(2)
  %d = s8[3,5] parameter(3)
  %f = f32[2,5] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %i = s32[2,5] dot(%c, %d), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""") == []
