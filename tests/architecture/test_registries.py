"""Every opcode has a shape rule and an interpreter handler, and either a code generator or
an explicit, documented reason why the compiled backend does not take it."""
from hlo.opcodes import OPCODES


def test_every_opcode_has_a_shape_rule():
    from hlo.shape_inference import SHAPE_RULES
    assert SHAPE_RULES.missing() == []


def test_every_opcode_has_an_interpreter_handler():
    from hlo.interpreter import HANDLERS
    assert HANDLERS.missing() == []


def test_every_opcode_compiles_or_says_why_not():
    from hlo.codegen import EMITTERS
    assert EMITTERS.missing() == []
    for op, reason in EMITTERS.reasons().items():
        assert reason.startswith("not compiled, because "), (op, reason)


def test_reasons_are_in_the_docs():
    """docs/ARCHITECTURE.md lists every opcode the compiled backend does not take, with its reason."""
    from pathlib import Path
    from hlo.codegen import EMITTERS
    docs = (Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md").read_text()
    for op, reason in EMITTERS.reasons().items():
        assert f"`{op}`" in docs, f"{op} is not compiled but docs/ARCHITECTURE.md does not say so"
