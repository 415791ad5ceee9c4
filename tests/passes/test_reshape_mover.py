"""reshape-mover: the expected output per rule is in tests/golden/passes/reshape_mover.hlo;
here, random transpose chains keep their values and end in a single transpose."""
from hypothesis import given, settings
from hypothesis import strategies as st

from hlo.passes.pass_manager import available_passes
from pass_testing import PassTester

optimise = PassTester("reshape-mover,dce", seeds=(0, 1), ints=(-5, 5)).optimise


def test_registered():
    assert available_passes()["reshape-mover"].description


@settings(max_examples=25, deadline=None)
@given(perm=st.permutations([0, 1, 2]), ops=st.lists(st.sampled_from(["add", "multiply", "maximum"]),
                                                      min_size=1, max_size=3))
def test_random_transpose_chains_keep_their_values(perm, ops):
    dims = (2, 3, 4)
    tdims = tuple(dims[p] for p in perm)
    shape = "f32[" + ",".join(map(str, tdims)) + "]"
    lines = [f"  p{i} = f32[2,3,4] parameter({i})" for i in range(len(ops) + 1)]
    lines += [f"  t{i} = {shape} transpose(p{i}), dimensions={{{','.join(map(str, perm))}}}"
              for i in range(len(ops) + 1)]
    acc = "t0"
    for i, op in enumerate(ops):
        lines.append(f"  e{i} = {shape} {op}({acc}, t{i + 1})")
        acc = f"e{i}"
    lines.append(f"  ROOT n = {shape} negate({acc})")
    text = "HloModule m\nENTRY e {\n" + "\n".join(lines) + "\n}\n"
    after, _ = optimise(text)
    if list(perm) != [0, 1, 2]:
        # Everything elementwise ran before the single remaining transpose, the root.
        assert after.entry.root.opcode == "transpose"
        assert [i.opcode for i in after.entry.instructions].count("transpose") == 1
