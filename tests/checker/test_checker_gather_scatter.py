"""Checker errors of gather and scatter dimension numbers."""
import pytest

H = """HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

"""
GATHER = H + """ENTRY %main (t: f32[3,3], i: s32[2,1]) -> f32[2,3] {
  %t = f32[3,3] parameter(0)
  %i = s32[2,1] parameter(1)
  ROOT %g = f32[2,3] gather(%t, %i), ATTRS
}
"""
SCATTER = H + """ENTRY %main (t: f32[3,3], i: s32[2,1], u: UPDATES) -> f32[3,3] {
  %t = f32[3,3] parameter(0)
  %i = s32[2,1] parameter(1)
  %u = UPDATES parameter(2)
  ROOT %s = f32[3,3] scatter(%t, %i, %u), ATTRS, to_apply=%add
}
"""
ROWS = "update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1"


def gather(attrs: str) -> str:
    return GATHER.replace("ATTRS", attrs)


def scatter(updates: str, attrs: str = ROWS) -> str:
    return SCATTER.replace("UPDATES", updates).replace("ATTRS", attrs)


CASES = {
    "slice size too large": (
        gather("offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
               "slice_sizes={1,4}"),
        ["12:122: slice_sizes={1,4}: size 4 of dimension 1 must be in [0, 3]"]),
    "start_index_map length": (
        gather("offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0,1}, index_vector_dim=1, "
               "slice_sizes={1,3}"),
        ["12:81: start_index_map={0,1} has 2 entries but the index vectors (dimension 1 of the indices) have 1"]),
    "collapsed slice size": (
        gather("offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
               "slice_sizes={2,3}"),
        ["12:122: slice_sizes={2,3}: dimension 0 is collapsed or batching, so its slice size must be 0 or 1, "
         "not 2"]),
    "unsorted offset_dims": (
        gather("offset_dims={1,0}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, "
               "slice_sizes={1,3}"),
        ["12:38: offset_dims={1,0} must be sorted in increasing order"]),
    "index_vector_dim out of range": (
        gather("offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=3, "
               "slice_sizes={1,3}"),
        ["12:102: index_vector_dim=3 must be in [0, 2] for the indices s32[2,1]"]),
    "uncovered operand dimension": (
        gather("offset_dims={1}, collapsed_slice_dims={}, start_index_map={0}, index_vector_dim=1, "
               "slice_sizes={1,3}"),
        ["12:38: every operand dimension must be an offset, collapsed or batching dimension: offset_dims has 1, "
         "collapsed_slice_dims 0 and operand_batching_dims 0 entries, but the operand f32[3,3] has rank 2"]),
    "update window too large": (
        scatter("f32[2,4]"),
        ["13:38: update window dimension 1 of f32[2,4] has size 4, more than the 3 of the matching operand "
         "dimension",
         "note 12:3: operand 2 is %u, defined here with shape f32[2,4]"]),
    "scatter dimension size": (
        scatter("f32[5,3]"),
        ["13:38: scatter dimension 0 of the updates f32[5,3] has size 5 but the matching dimension of the indices "
         "s32[2,1] has size 2",
         "note 12:3: operand 2 is %u, defined here with shape f32[5,3]"]),
    "updates rank": (
        scatter("f32[2,3,1]"),
        ["13:38: updates f32[2,3,1] must have rank 2 (1 update window dims + 1 scatter dims of the indices "
         "s32[2,1])",
         "note 12:3: operand 2 is %u, defined here with shape f32[2,3,1]"]),
    "scatter_dims_to_operand_dims range": (
        scatter("f32[2,3]", ROWS.replace("scatter_dims_to_operand_dims={0}", "scatter_dims_to_operand_dims={3}")),
        ["13:93: scatter_dims_to_operand_dims={3}: dimension 3 is out of range for the operand f32[3,3] "
         "(valid: 0..1)"]),
    "uncovered scatter operand dimension": (
        scatter("f32[2,3]", ROWS.replace("inserted_window_dims={0}", "inserted_window_dims={}")),
        ["13:43: every operand dimension must be an update window, inserted or batching dimension: "
         "update_window_dims has 1, inserted_window_dims 0 and input_batching_dims 0 entries, but the operand "
         "f32[3,3] has rank 2"]),
    "scatter update type": (
        scatter("s32[2,3]"),
        ["13:38: updates 0 of 'scatter' must have the element type of operand 0: operand 0 is f32[3,3] but "
         "operand 2 (updates) is s32[2,3]",
         "note 12:3: operand 2 is %u, defined here with shape s32[2,3]"]),
}


@pytest.mark.parametrize("name", CASES)
def test_malformed_gather_and_scatter(expect_error, name):
    text, expected = CASES[name]
    expect_error(text, expected)


def test_gather_with_batching_dims_checks_sizes(expect_error):
    text = H + """ENTRY %main (x: f32[4,5,7], i: s32[3,2,1]) -> f32[3,2,7] {
  %x = f32[4,5,7] parameter(0)
  %i = s32[3,2,1] parameter(1)
  ROOT %g = f32[3,2,7] gather(%x, %i), offset_dims={2}, collapsed_slice_dims={1}, start_index_map={1}, operand_batching_dims={0}, start_indices_batching_dims={0}, index_vector_dim=2, slice_sizes={1,1,7}
}
"""
    expect_error(text, ["12:131: batching dimensions must have equal sizes: operand dimension 0 has size 4 but "
                        "indices dimension 0 has size 3"])
