"""transpose-folding: expected output per rule, interpreter equivalence on random inputs."""
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.passes.pass_manager import available_passes
from pass_testing import PassTester, assert_unchanged, body

optimise = PassTester("transpose-folding,dce", seeds=(0, 1), rtol=1e-5, atol=1e-5).optimise


def test_registered():
    assert available_passes()["transpose-folding"].description


def test_transposed_matrix_operands_fold_into_contracting_dims():
    after, changed = optimise("""HloModule m
ENTRY e {
  a = f32[4,3] parameter(0)
  b = f32[5,4] parameter(1)
  ta = f32[3,4] transpose(a), dimensions={1,0}
  tb = f32[4,5] transpose(b), dimensions={1,0}
  ROOT d = f32[3,5] dot(ta, tb), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
""")
    assert changed
    assert body(after) == """ENTRY %e (a: f32[4,3], b: f32[5,4]) -> f32[3,5] {
  %a = f32[4,3]{1,0} parameter(0)
  %b = f32[5,4]{1,0} parameter(1)
  ROOT %d = f32[3,5]{1,0} dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={1}
}
"""


def test_batch_dims_are_permuted_too():
    after, _ = optimise("""HloModule m
ENTRY e {
  a = f32[4,2,3] parameter(0)
  b = f32[2,4,5] parameter(1)
  ta = f32[2,3,4] transpose(a), dimensions={1,2,0}
  ROOT d = f32[2,3,5] dot(ta, b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
""")
    assert body(after) == """ENTRY %e (a: f32[4,2,3], b: f32[2,4,5]) -> f32[2,3,5] {
  %a = f32[4,2,3]{2,1,0} parameter(0)
  %b = f32[2,4,5]{2,1,0} parameter(1)
  ROOT %d = f32[2,3,5]{2,1,0} dot(%a, %b), lhs_batch_dims={1}, lhs_contracting_dims={0}, rhs_batch_dims={0}, rhs_contracting_dims={1}
}
"""


def test_transpose_reordering_free_dims_does_not_fold():
    text = """HloModule m
ENTRY e {
  a = f32[3,4,5] parameter(0)
  b = f32[5,6] parameter(1)
  ta = f32[4,3,5] transpose(a), dimensions={1,0,2}
  ROOT d = f32[4,3,6] dot(ta, b), lhs_contracting_dims={2}, rhs_contracting_dims={0}
}
"""
    assert_unchanged(text, "transpose-folding")


def test_transpose_with_other_users_folds_and_stays():
    after, _ = optimise("""HloModule m
ENTRY e {
  a = f32[4,3] parameter(0)
  b = f32[4,5] parameter(1)
  ta = f32[3,4] transpose(a), dimensions={1,0}
  d = f32[3,5] dot(ta, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[3,5], f32[3,4]) tuple(d, ta)
}
""")
    assert body(after) == """ENTRY %e (a: f32[4,3], b: f32[4,5]) -> (f32[3,5], f32[3,4]) {
  %a = f32[4,3]{1,0} parameter(0)
  %b = f32[4,5]{1,0} parameter(1)
  %ta = f32[3,4]{1,0} transpose(%a), dimensions={1,0}
  %d = f32[3,5]{1,0} dot(%a, %b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT %t = (f32[3,5]{1,0}, f32[3,4]{1,0}) tuple(%d, %ta)
}
"""


def test_convolution_input_and_kernel_transposes_fold_into_dim_labels():
    after, _ = optimise("""HloModule m
ENTRY e {
  x = f32[1,5,5,2] parameter(0)
  k = f32[3,3,2,4] parameter(1)
  tx = f32[1,2,5,5] transpose(x), dimensions={0,3,1,2}
  tk = f32[4,2,3,3] transpose(k), dimensions={3,2,0,1}
  ROOT c = f32[1,4,3,3] convolution(tx, tk), window={size=3x3}, dim_labels=bf01_oi01->bf01
}
""")
    assert body(after) == """ENTRY %e (x: f32[1,5,5,2], k: f32[3,3,2,4]) -> f32[1,4,3,3] {
  %x = f32[1,5,5,2]{3,2,1,0} parameter(0)
  %k = f32[3,3,2,4]{3,2,1,0} parameter(1)
  ROOT %c = f32[1,4,3,3]{3,2,1,0} convolution(%x, %k), window={size=3x3}, dim_labels=b01f_01io->bf01
}
"""


def test_strided_padded_convolution_with_transposed_input():
    optimise("""HloModule m
ENTRY e {
  x = f32[6,2,7,3] parameter(0)
  k = f32[2,3,3,4] parameter(1)
  tx = f32[2,3,6,7] transpose(x), dimensions={1,3,0,2}
  ROOT c = f32[2,4,3,4] convolution(tx, k), window={size=2x3 stride=2x2 pad=0_1x1_1}, dim_labels=bf01_01io->bf01
}
""")


@settings(max_examples=30, deadline=None)
@given(perm=st.permutations([0, 1, 2]), contracting=st.integers(0, 2))
def test_random_lhs_permutations_fold_only_when_valid(perm, contracting):
    base = (2, 3, 4)
    tdims = tuple(base[p] for p in perm)
    k = tdims[contracting]
    free = [d for i, d in enumerate(tdims) if i != contracting]
    text = f"""HloModule m
ENTRY e {{
  a = f32[2,3,4] parameter(0)
  b = f32[{k},5] parameter(1)
  ta = f32[{','.join(map(str, tdims))}] transpose(a), dimensions={{{','.join(map(str, perm))}}}
  ROOT d = f32[{','.join(map(str, free))},5] dot(ta, b), lhs_contracting_dims={{{contracting}}}, rhs_contracting_dims={{0}}
}}
"""
    after, changed = optimise(text)
    free_sources = [perm[i] for i in range(3) if i != contracting]
    assert changed == (free_sources == sorted(free_sources) and list(perm) != [0, 1, 2])
