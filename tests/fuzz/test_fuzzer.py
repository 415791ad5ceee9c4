"""The differential fuzzer (hlo/fuzz), a short campaign of it, and the regressions it found.

tools/hlo_fuzz.py runs the long campaigns; here a few dozen generated programs must pass
every check (round trip, passes, pipeline, JIT, one AOT build), a few hundred damaged texts
must go through the tools without a traceback or a hang, and each module under
regressions/ (a program a campaign once found wrong, reduced) must pass the checks, and each
text under mutation_regressions/ (a damaged text that once gave a traceback) must go through.
"""
from pathlib import Path

import numpy as np
import pytest

from hlo.codegen.aot_run import c_compiler as compiler
from hlo.fuzz.mutation import exercise, mutate
from hlo.fuzz.oracles import check, choose_passes
from hlo.fuzz.program import generate, program_from_text
from hlo.fuzz.registry import GENERATORS
from hlo.opcodes import OPCODES

REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.hlo"))
MUTATION_REGRESSIONS = sorted((Path(__file__).parent / "mutation_regressions").glob("*.hlo"))


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))


def test_every_opcode_has_a_generator_or_a_reason():
    missing = GENERATORS.missing(OPCODES)
    assert not missing, f"opcodes the fuzzer neither generates nor explains: {missing}"


def test_generation_of_a_product_of_many_large_values():
    # seed 6823 reduces with multiply over many elements: its bound overflowed the floats
    assert generate(6823).text


def test_generation_is_deterministic():
    a, b = generate(17), generate(17)
    assert a.text == b.text and all(np.array_equal(x, y) for x, y in zip(a.inputs[0], b.inputs[0]))


@pytest.mark.parametrize("seed", range(24))
def test_generated_programs_pass_every_check(seed):
    program = generate(seed)
    outcome = check(program, choose_passes(np.random.default_rng(seed), 2), jit=True,
                    aot=seed == 3 and compiler() is not None)
    assert not outcome.findings, "\n".join(str(f) for f in outcome.findings) + "\n" + program.text


def test_damaged_texts_give_results_or_located_errors():
    rng = np.random.default_rng(5)
    sources = [generate(100 + i).text for i in range(10)]
    failures = []
    for _ in range(300):
        text = mutate(sources[int(rng.integers(0, len(sources)))], rng, sources[0])
        verdict = exercise(text, rng, seconds=30.0)
        if not verdict.ok:
            failures.append(f"{verdict.stage}: {verdict.detail}\n--- input:\n{text}")
    assert not failures, failures[0]


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regressions_found_by_the_fuzzer(path):
    outcome = check(program_from_text(path.read_text()), choose_passes(np.random.default_rng(0), 4), jit=True)
    assert not outcome.findings, "\n".join(str(f) for f in outcome.findings)


@pytest.mark.parametrize("path", MUTATION_REGRESSIONS, ids=[p.stem for p in MUTATION_REGRESSIONS])
def test_damaged_texts_that_once_failed(path):
    verdict = exercise(path.read_text(), np.random.default_rng(0), seconds=30.0)
    assert verdict.ok, f"{verdict.stage}: {verdict.detail}"
