"""Valid modules using every opcode check clean, before and after printing."""
from pathlib import Path

import pytest

from hlo import format_module, parse_module
from hlo.analysis.checker import check_module
from hlo.opcodes import OPCODES

VALID = sorted((Path(__file__).parent / "data" / "valid").glob("*.hlo"))


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_module_checks_clean(path):
    check_module(parse_module(path.read_text(), path.name))


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_printed_module_checks_clean(path):
    printed = format_module(parse_module(path.read_text(), path.name))
    check_module(parse_module(printed, "printed.hlo"))


def test_valid_modules_use_every_opcode():
    used = set()
    for path in VALID:
        used |= {inst.opcode for inst in parse_module(path.read_text(), path.name).instructions()}
    assert sorted(set(OPCODES) - used) == []


CORPUS = sorted((Path(__file__).resolve().parents[1] / "data" / "corpus").glob("*.hlo"))


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_jax_and_xla_optimised_modules_check_clean(path):
    """Modules emitted by JAX and optimised by XLA (layouts, bitcasts, kCustom fusions) are valid."""
    check_module(parse_module(path.read_text(), path.name))
