"""Representative corpus cases (copied to tests/data/corpus) against XLA:CPU's outputs.

Each case runs NAME.hlo (and NAME.opt.hlo, XLA's optimised dump, where present)
on NAME.inputs.npz and compares with NAME.expected.npz using the MANIFEST's
tolerances, exactly as the hlo-conformance tool does: integer and pred outputs
exactly, floats within atol + rtol*|expected| with NaN where NaN is expected.
"""
import pytest

from corpus_cases import MODULES, assert_matches_expected, case_arguments, load_module, outputs


@pytest.mark.parametrize("filename", MODULES)
def test_corpus_case(filename):
    module = load_module(filename)
    assert_matches_expected(filename, outputs(module, case_arguments(module, filename)))


def test_the_selection_covers_the_intended_features():
    names = {m.split(".")[0] for m in MODULES}
    assert {"mlp_forward", "cnn_forward", "causal_attention", "fori_loop_newton", "sort_argsort",
            "gather_scatter", "integer_bit_ops", "bf16_matmul", "complex_fft", "cholesky_lapack_customcall",
            "rng_bit_generator_algos", "cond_switch"} <= names
    assert len([m for m in MODULES if m.endswith(".opt.hlo")]) >= 3
