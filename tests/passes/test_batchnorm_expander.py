"""batchnorm-expander: expected output per op, interpreter equivalence on random inputs."""
from dataclasses import replace

import pytest

from hlo.passes.pass_manager import available_passes
from pass_testing import PassTester, body

# Parameters named v* are variances: positive.
BATCHNORM_EXPANDER = PassTester("batchnorm-expander,tuple-simplifier,dce",
                                positive=lambda param: param.name.startswith("v"))


def expand(text: str, rtol=1e-4, atol=1e-4):
    after, changed = replace(BATCHNORM_EXPANDER, rtol=rtol, atol=atol).optimise(text)
    assert changed
    assert not any(i.opcode.startswith("batch-norm") for i in after.instructions())
    return after


def test_registered():
    assert available_passes()["batchnorm-expander"].description


def test_inference_expands_to_per_feature_scale_and_shift():
    after = expand("""HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  m = f32[3] parameter(3)
  v = f32[3] parameter(4)
  ROOT y = f32[2,3] batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1
}
""")
    assert body(after) == """ENTRY %e (x: f32[2,3], s: f32[3], o: f32[3], m: f32[3], v: f32[3]) -> f32[2,3] {
  %x = f32[2,3]{1,0} parameter(0)
  %s = f32[3]{0} parameter(1)
  %o = f32[3]{0} parameter(2)
  %m = f32[3]{0} parameter(3)
  %v = f32[3]{0} parameter(4)
  %constant = f32[] constant(0.001)
  %broadcast = f32[3]{0} broadcast(%constant), dimensions={}
  %add = f32[3]{0} add(%v, %broadcast)
  %rsqrt = f32[3]{0} rsqrt(%add)
  %multiply = f32[3]{0} multiply(%s, %rsqrt)
  %multiply.1 = f32[3]{0} multiply(%m, %multiply)
  %subtract = f32[3]{0} subtract(%o, %multiply.1)
  %broadcast.1 = f32[2,3]{1,0} broadcast(%multiply), dimensions={1}
  %multiply.2 = f32[2,3]{1,0} multiply(%x, %broadcast.1)
  %broadcast.2 = f32[2,3]{1,0} broadcast(%subtract), dimensions={1}
  ROOT %add.1 = f32[2,3]{1,0} add(%multiply.2, %broadcast.2)
}
"""


def test_training_expands_with_an_add_computation():
    after = expand("""HloModule m
ENTRY e {
  x = f32[2,3] parameter(0)
  s = f32[3] parameter(1)
  o = f32[3] parameter(2)
  ROOT y = (f32[2,3], f32[3], f32[3]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
}
""")
    assert body(after) == """%scalar_add_computation (scalar_lhs: f32[], scalar_rhs: f32[]) -> f32[] {
  %scalar_lhs = f32[] parameter(0)
  %scalar_rhs = f32[] parameter(1)
  ROOT %add = f32[] add(%scalar_lhs, %scalar_rhs)
}

ENTRY %e (x: f32[2,3], s: f32[3], o: f32[3]) -> (f32[2,3], f32[3], f32[3]) {
  %x = f32[2,3]{1,0} parameter(0)
  %s = f32[3]{0} parameter(1)
  %o = f32[3]{0} parameter(2)
  %constant = f32[] constant(0)
  %constant.1 = f32[] constant(0.001)
  %broadcast = f32[2,3]{1,0} broadcast(%constant.1), dimensions={}
  %constant.2 = f32[] constant(2)
  %broadcast.1 = f32[2,3]{1,0} broadcast(%s), dimensions={1}
  %broadcast.2 = f32[2,3]{1,0} broadcast(%o), dimensions={1}
  %multiply = f32[2,3]{1,0} multiply(%x, %x)
  %reduce = f32[3]{0} reduce(%x, %constant), dimensions={0}, to_apply=%scalar_add_computation
  %reduce.1 = f32[3]{0} reduce(%multiply, %constant), dimensions={0}, to_apply=%scalar_add_computation
  %broadcast.3 = f32[3]{0} broadcast(%constant.2), dimensions={}
  %divide = f32[3]{0} divide(%reduce, %broadcast.3)
  %broadcast.4 = f32[2,3]{1,0} broadcast(%divide), dimensions={1}
  %broadcast.5 = f32[3]{0} broadcast(%constant.2), dimensions={}
  %divide.1 = f32[3]{0} divide(%reduce.1, %broadcast.5)
  %multiply.1 = f32[3]{0} multiply(%divide, %divide)
  %subtract = f32[3]{0} subtract(%divide.1, %multiply.1)
  %broadcast.6 = f32[2,3]{1,0} broadcast(%subtract), dimensions={1}
  %add.1 = f32[2,3]{1,0} add(%broadcast.6, %broadcast)
  %rsqrt = f32[2,3]{1,0} rsqrt(%add.1)
  %subtract.1 = f32[2,3]{1,0} subtract(%x, %broadcast.4)
  %multiply.2 = f32[2,3]{1,0} multiply(%subtract.1, %rsqrt)
  %multiply.3 = f32[2,3]{1,0} multiply(%multiply.2, %broadcast.1)
  %add.2 = f32[2,3]{1,0} add(%multiply.3, %broadcast.2)
  ROOT %tuple = (f32[2,3]{1,0}, f32[3]{0}, f32[3]{0}) tuple(%add.2, %divide, %subtract)
}
"""


@pytest.mark.parametrize("feature_index", [0, 1, 3])
def test_training_any_feature_index(feature_index):
    dims = [4, 3, 2, 5]
    feature = dims[feature_index]
    shape = "f32[" + ",".join(map(str, dims)) + "]"
    expand(f"""HloModule m
ENTRY e {{
  x = {shape} parameter(0)
  s = f32[{feature}] parameter(1)
  o = f32[{feature}] parameter(2)
  ROOT y = ({shape}, f32[{feature}], f32[{feature}]) batch-norm-training(x, s, o), epsilon=0.01, feature_index={feature_index}
}}
""")


@pytest.mark.parametrize("feature_index", [0, 2])
def test_grad_matches_the_op(feature_index):
    dims = [3, 4, 5]
    feature = dims[feature_index]
    shape = "f32[" + ",".join(map(str, dims)) + "]"
    expand(f"""HloModule m
ENTRY e {{
  x = {shape} parameter(0)
  s = f32[{feature}] parameter(1)
  m = f32[{feature}] parameter(2)
  v = f32[{feature}] parameter(3)
  dy = {shape} parameter(4)
  ROOT g = ({shape}, f32[{feature}], f32[{feature}]) batch-norm-grad(x, s, m, v, dy), epsilon=0.001, feature_index={feature_index}
}}
""")


def test_f64_and_one_add_computation_per_element_type():
    after = expand("""HloModule m
ENTRY e {
  x = f64[4,2] parameter(0)
  s = f64[2] parameter(1)
  o = f64[2] parameter(2)
  t = (f64[4,2], f64[2], f64[2]) batch-norm-training(x, s, o), epsilon=0.001, feature_index=1
  y = f64[4,2] get-tuple-element(t), index=0
  t2 = (f64[4,2], f64[2], f64[2]) batch-norm-training(y, s, o), epsilon=0.001, feature_index=1
  ROOT y2 = f64[4,2] get-tuple-element(t2), index=0
}
""", rtol=1e-8, atol=1e-8)
    assert [c.name for c in after.computations] == ["scalar_add_computation", "e"]


def test_inside_a_called_computation():
    after = expand("""HloModule m
norm {
  x = f32[3,2] parameter(0)
  s = f32[2] parameter(1)
  o = f32[2] parameter(2)
  m = f32[2] parameter(3)
  v = f32[2] parameter(4)
  ROOT y = f32[3,2] batch-norm-inference(x, s, o, m, v), epsilon=0.5, feature_index=1
}
ENTRY e {
  x = f32[3,2] parameter(0)
  s = f32[2] parameter(1)
  o = f32[2] parameter(2)
  m = f32[2] parameter(3)
  v = f32[2] parameter(4)
  ROOT c = f32[3,2] call(x, s, o, m, v), to_apply=norm
}
""")
    assert [c.name for c in after.computations] == ["norm", "e"]
