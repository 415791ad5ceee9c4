"""Checker errors of collectives: shard counts, replica groups, reducers, pairs."""
import pytest

SUM = """
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""

CASES = {
    "all-gather shard count": ("HloModule m, replica_count=4\n" + SUM + """
ENTRY %main (x: f32[8,4]) -> f32[8,8] {
  %x = f32[8,4] parameter(0)
  ROOT %g = f32[8,8] all-gather(%x), replica_groups={}, dimensions={1}
}
""", ["11:33: 'all-gather' concatenates 4 shards of operand 0 f32[8,4] along dimension 1, giving size 16, but the "
      "result is written as f32[8,8]",
      "note 10:3: operand 0 is %x, defined here with shape f32[8,4]"]),

    "all-gather dimension": ("HloModule m\n" + SUM + """
ENTRY %main (x: f32[8]) -> f32[16] {
  %x = f32[8] parameter(0)
  ROOT %g = f32[16] all-gather(%x), replica_groups={{0,1}}, dimensions={1}
}
""", ["11:61: dimensions={1}: dimension 1 is out of range for the operand f32[8] (valid: 0..0)"]),

    "repeated device": ("HloModule m\n" + SUM + """
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %r = f32[8] all-reduce(%x), replica_groups={{0,1},{1,2}}, to_apply=%sum
}
""", ["11:36: replica_groups names device 1 more than once"]),

    "missing device": ("HloModule m\n" + SUM + """
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %g = f32[8] all-gather(%x), replica_groups={{0,2}}, dimensions={0}
}
""", ["11:36: replica_groups must name the devices 0..1 exactly once, but 1 is missing"]),

    "groups against replica count": ("HloModule m, replica_count=8\n" + SUM + """
ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %r = f32[8] all-reduce(%x), replica_groups={{0,1},{2,3}}, to_apply=%sum
}
""", ["11:36: replica_groups name 4 devices but the module runs 8 replicas"]),

    "uneven groups": ("HloModule m\n" + SUM + """
ENTRY %main (x: f32[8]) -> f32[16] {
  %x = f32[8] parameter(0)
  ROOT %g = f32[16] all-gather(%x), replica_groups={{0,1},{2}}, dimensions={0}
}
""", ["11:37: the replica groups of 'all-gather' must all have the same size"]),

    "reduce-scatter divisibility": ("HloModule m\n" + SUM + """
ENTRY %main (x: f32[6]) -> f32[1] {
  %x = f32[6] parameter(0)
  ROOT %r = f32[1] reduce-scatter(%x), replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%sum
}
""", ["11:35: 'reduce-scatter' splits dimension 0 of operand 0 f32[6] into 4 shards, but 6 is not divisible by 4",
      "note 10:3: operand 0 is %x, defined here with shape f32[6]"]),

    "reduce-scatter result": ("HloModule m\n" + SUM + """
ENTRY %main (x: f32[8]) -> f32[4] {
  %x = f32[8] parameter(0)
  ROOT %r = f32[4] reduce-scatter(%x), replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%sum
}
""", ["11:8: shape mismatch: 'reduce-scatter' produces f32[2] but the instruction is written as f32[4]"]),

    "all-reduce reducer type": ("HloModule m\n" + SUM + """
ENTRY %main (x: s32[8]) -> s32[8] {
  %x = s32[8] parameter(0)
  ROOT %r = s32[8] all-reduce(%x), replica_groups={}, to_apply=%sum
}
""", ["11:55: to_apply computation %sum: its result is f32[] but operand 0 has element type s32, so it must be s32[]",
      "note 6:8: the ROOT of %sum is here"]),

    "all-reduce result": ("HloModule m\n" + SUM + """
ENTRY %main (x: f32[8]) -> f32[4] {
  %x = f32[8] parameter(0)
  ROOT %r = f32[4] all-reduce(%x), replica_groups={}, to_apply=%sum
}
""", ["11:8: shape mismatch: 'all-reduce' produces f32[8] but the instruction is written as f32[4]"]),

    "collective-permute duplicate source": ("""HloModule m

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %p = f32[8] collective-permute(%x), source_target_pairs={{0,1},{0,2}}
}
""", ["5:44: source 0 appears more than once in source_target_pairs"]),

    "all-to-all divisibility": ("""HloModule m

ENTRY %main (x: f32[6]) -> f32[6] {
  %x = f32[6] parameter(0)
  ROOT %a = f32[6] all-to-all(%x), replica_groups={{0,1,2,3}}, dimensions={0}
}
""", ["5:31: 'all-to-all' splits dimension 0 of f32[6] into 4 blocks, but 6 is not divisible by 4",
      "note 4:3: operand 0 is %x, defined here with shape f32[6]"]),

    "all-gather-done operand": ("""HloModule m

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  ROOT %d = f32[8] all-gather-done(%x)
}
""", ["5:36: operand 0 of 'all-gather-done' must be the tuple produced by all-gather-start, but it is f32[8]",
      "note 4:3: operand 0 is %x, defined here with shape f32[8]"]),

    "replica-id type": ("""HloModule m

ENTRY %main () -> s32[] {
  ROOT %r = s32[] replica-id()
}
""", ["4:8: shape mismatch: 'replica-id' produces u32[] but the instruction is written as s32[]"]),
}


@pytest.mark.parametrize("name", CASES)
def test_malformed_collectives(expect_error, name):
    text, expected = CASES[name]
    expect_error(text, expected)


def test_shard_count_is_derived_from_the_written_shape_when_the_module_does_not_say(check):
    assert check("HloModule m\n" + SUM + """
ENTRY %main (x: f32[8,4]) -> (f32[8,12], f32[8,4]) {
  %x = f32[8,4] parameter(0)
  %g = f32[8,12] all-gather(%x), replica_groups={}, dimensions={1}
  %r = f32[8,4] all-reduce(%x), replica_groups={{0},{1,2}}, to_apply=%sum
  ROOT %t = (f32[8,12], f32[8,4]) tuple(%g, %r)
}
""") == []
