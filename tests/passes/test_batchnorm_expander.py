"""batchnorm-expander: every feature index, and the gradient, compute what the ops do (the expected
output per op is in tests/golden/passes/batchnorm_expander.hlo)."""
from dataclasses import replace

import pytest

from hlo.passes.pass_manager import available_passes
from pass_testing import PassTester

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


