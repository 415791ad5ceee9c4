"""Every pass, the default pipeline and random pass sequences keep every corpus module
valid and computing XLA's results (the project's copies of the corpus, tests/data/corpus)."""
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from corpus_cases import (MODULES, SHARED, SHARED_MODULES, DATA, assert_matches_expected, case_arguments,
                          load_module, outputs)
from hlo.passes.pass_manager import available_passes
from hlo.passes.pipelines import pipeline_text
from pass_testing import run_checked

PASSES = sorted(available_passes())


def transform_and_compare(filename: str, pipeline: str, data=DATA) -> None:
    module = load_module(filename, data)
    args = case_arguments(module, filename, data)
    run_checked(module, pipeline)
    assert_matches_expected(filename, outputs(module, args), data)


@pytest.mark.parametrize("filename", MODULES)
@pytest.mark.parametrize("pass_name", PASSES)
def test_pass_preserves_meaning(pass_name, filename):
    transform_and_compare(filename, f"{pass_name},dce")


@pytest.mark.parametrize("filename", MODULES)
def test_default_pipeline_preserves_meaning(filename):
    transform_and_compare(filename, pipeline_text("default"))


@pytest.mark.slow
@pytest.mark.skipif(not SHARED_MODULES, reason="the shared corpus is not beside this checkout")
@pytest.mark.parametrize("filename", SHARED_MODULES)
@pytest.mark.parametrize("pipeline", [f"{p},dce" for p in PASSES] + ["default"])
def test_shared_corpus_preserves_meaning(pipeline, filename):
    transform_and_compare(filename, pipeline_text("default") if pipeline == "default" else pipeline, SHARED)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(filename=st.sampled_from(MODULES), sequence=st.lists(st.sampled_from(PASSES), min_size=1, max_size=6))
def test_random_pass_sequences_preserve_meaning(filename, sequence):
    transform_and_compare(filename, ",".join(sequence))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(filename=st.sampled_from(MODULES), sequence=st.lists(st.sampled_from(PASSES), min_size=1, max_size=4))
def test_random_pass_sequences_quick(filename, sequence):
    transform_and_compare(filename, ",".join(sequence))
