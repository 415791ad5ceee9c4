"""transpose-folding: the expected output per rule is in tests/golden/passes/transpose_folding.hlo;
here, random permutations fold exactly when the free dimensions stay in order."""
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.passes.pass_manager import available_passes
from pass_testing import PassTester

optimise = PassTester("transpose-folding,dce", seeds=(0, 1), rtol=1e-5, atol=1e-5).optimise


def test_registered():
    assert available_passes()["transpose-folding"].description


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
