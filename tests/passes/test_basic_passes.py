"""The pass registry and the pipeline syntax (what dce, cse, tuple-simplifier, call-inliner and
optimization-barrier-expander do is in tests/golden/passes/basic_passes.hlo)."""
import pytest

from hlo import HloError
from hlo.passes.pass_manager import FixedPoint, available_passes, parse_pipeline


def test_registry_lists_names_and_descriptions():
    passes = available_passes()
    for name in ("dce", "cse", "tuple-simplifier", "call-inliner"):
        assert passes[name].name == name and passes[name].description


def test_pipeline_syntax():
    assert parse_pipeline("cse, fixpoint(dce,tuple-simplifier) ,dce") == [
        "cse", FixedPoint(["dce", "tuple-simplifier"]), "dce"]


@pytest.mark.parametrize("text,message", [
    ("nope", "unknown pass 'nope'"),
    ("fixpoint(dce", "missing ')'"),
    ("dce)", "unbalanced ')'"),
    ("fixpoint dce", "fixpoint must be followed by '('"),
    ("", "the pipeline is empty"),
])
def test_pipeline_errors(text, message):
    with pytest.raises(HloError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_pipeline(text)


