"""flatten-call-graph: the call-site invariant, cloning, and interpreter equivalence (expected
outputs in tests/golden/passes/flatten_call_graph.hlo)."""
import numpy as np

import hlo
from hlo import parse_module
from hlo.passes.flatten_call_graph import CONTROL_FLOW_ATTRS, control_flow_sites
from hlo.passes.rewrite import clone_computation
from hlo.ir import NameUniquer
from pass_testing import PassTester

FLATTEN_CALL_GRAPH = PassTester("flatten-call-graph", exact=True)
optimised, assert_same_outputs = FLATTEN_CALL_GRAPH.optimised, FLATTEN_CALL_GRAPH.assert_same_outputs


def assert_flat(module):
    for sites in control_flow_sites(module).values():
        assert len(sites) == 1, [(i.name, a) for i, a, _ in sites]


LOOPS_AND_BRANCHES = """HloModule m
max {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] maximum(x, y)
}
body {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[3] get-tuple-element(s), index=1
  w = f32[3] sine(v)
  ROOT r = (s32[], f32[3]) tuple(j, w)
}
cond {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  four = s32[] constant(4)
  ROOT lt = pred[] compare(i, four), direction=LT
}
branch {
  v = f32[3] parameter(0)
  z = f32[] constant(-inf)
  m = f32[] reduce(v, z), dimensions={0}, to_apply=max
  ROOT b = f32[3] broadcast(m), dimensions={}
}
ENTRY e {
  p = f32[3] parameter(0)
  k = s32[] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[3]) tuple(zero, p)
  w1 = (s32[], f32[3]) while(init), condition=cond, body=body
  w2 = (s32[], f32[3]) while(w1), condition=cond, body=body
  v = f32[3] get-tuple-element(w2), index=1
  ROOT c = f32[3] conditional(k, v, p), branch_computations={branch, branch}
}
"""


def test_while_bodies_and_repeated_branches_get_their_own_copies():
    module, changed = optimised(LOOPS_AND_BRANCHES)
    assert changed
    assert_flat(module)
    names = {c.name for c in module.computations}
    assert names == {"max", "body", "body.clone", "cond", "cond.clone", "branch", "branch.clone", "e"}
    w2 = module.entry.by_name()["w2"]
    assert w2.attrs["body"].name == "body.clone" and w2.attrs["condition"].name == "cond.clone"
    cond = module.entry.root
    assert [b.name for b in cond.attrs["branch_computations"]] == ["branch", "branch.clone"]
    # the reduction's to_apply stays shared
    assert cond.attrs["branch_computations"][1].by_name()["m.clone"].attrs["to_apply"].name == "max"
    rng = np.random.default_rng(0)
    before = parse_module(LOOPS_AND_BRANCHES)
    for k in (0, 1, 7):
        x = rng.standard_normal(3).astype(np.float32)
        np.testing.assert_array_equal(hlo.run(module, x, np.int32(k))[0], hlo.run(before, x, np.int32(k))[0])


def test_clone_computation_keeps_structure_and_control_dependencies():
    module = parse_module("""HloModule m
f {
  a = f32[] parameter(0)
  n = f32[] negate(a)
  ROOT e = f32[] exponential(a), control-predecessors={n}
}
ENTRY main {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=f
}
""")
    f = module.computation("f")
    copy, mapping = clone_computation(f, NameUniquer.for_module(module), module)
    assert [c.name for c in module.computations] == ["f", "f.clone", "main"]
    assert [i.name for i in copy.instructions] == ["a.clone", "n.clone", "e.clone"]
    assert copy.root.control_predecessors == [mapping[id(f.by_name()["n"])]]
    assert set(CONTROL_FLOW_ATTRS) == {"call", "while", "conditional"}


# --------------------------------------------------------------------------- property

from hypothesis import given, settings, strategies as st  # noqa: E402


@st.composite
def call_dags(draw):
    """Computations f0..fn-1, each calling some lower-numbered ones; the entry calls several."""
    count = draw(st.integers(1, 5))
    comps = []
    for k in range(count):
        lines = [f"  a{k} = f32[] parameter(0)", f"  s{k}_0 = f32[] sine(a{k})"]
        last = f"s{k}_0"
        callees = draw(st.lists(st.integers(0, k - 1), max_size=3)) if k else []
        for n, callee in enumerate(callees):
            lines.append(f"  c{k}_{n} = f32[] call({last}), to_apply=f{callee}")
            last = f"c{k}_{n}"
        lines.append(f"  ROOT r{k} = f32[] add({last}, a{k})")
        comps.append(f"f{k} {{\n" + "\n".join(lines) + "\n}")
    entry = ["  p = f32[] parameter(0)"]
    last = "p"
    for n, callee in enumerate(draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=4))):
        entry.append(f"  e{n} = f32[] call({last}), to_apply=f{callee}")
        last = f"e{n}"
    entry.append(f"  ROOT out = f32[] negate({last})")
    return "HloModule m\n" + "\n".join(comps) + "\nENTRY main {\n" + "\n".join(entry) + "\n}\n"


@settings(max_examples=40, deadline=None)
@given(call_dags())
def test_random_call_graphs_become_trees_with_the_same_meaning(text):
    module, _ = optimised(text, "flatten-call-graph,dce")
    assert_flat(module)
    assert_same_outputs(text, "flatten-call-graph,dce", seeds=(0,))
