"""The opcode table is the only place that knows opcodes by name.

Outside hlo/opcodes.py no list, tuple, set or dict literal holds an opcode's name as a
string, no list, tuple or set literal holds two or more `Op` members, and no comparison
tests an opcode against a string: code asks the table (`info.has(Trait.X)`, the groups in
hlo.opcodes) or compares with one member of the `Op` enum. (Dicts keyed by `Op` members,
per-opcode data such as an LLVM intrinsic's name, are allowed.)
Each registry that must cover every opcode does so, or records why not.
"""
import ast
from pathlib import Path

import pytest

from hlo.opcodes import OPCODES

ROOT = Path(__file__).resolve().parents[2]

# Strings that spell an opcode's name but mean something else where they appear.
NOT_OPCODES = {
    ("hlo/attributes.py", "pad"): "the pad= field of a window",
    ("hlo/generic_attributes.py", "domain"): "the domain= attribute of the domain instruction",
}
LIBRARY = sorted(p for folder in ("hlo", "cli") for p in (ROOT / folder).rglob("*.py")
                 if p != ROOT / "hlo" / "opcodes.py")


def opcode_strings(path: Path):
    """(line, what) for each collection or comparison naming opcodes as strings."""
    rel = str(path.relative_to(ROOT))
    tree = ast.parse(path.read_text())

    def is_opcode(node) -> bool:
        return (isinstance(node, ast.Constant) and node.value in OPCODES
                and (rel, node.value) not in NOT_OPCODES)
    for node in ast.walk(tree):
        elements = None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elements = node.elts
        elif isinstance(node, ast.Dict):
            elements = [k for k in node.keys if k is not None]
        if elements is not None:
            names = [e.value for e in elements if is_opcode(e)]
            if names:
                yield node.lineno, f"{type(node).__name__.lower()} of opcode names {names[:4]}"
            members = [ast.unparse(e) for e in elements if _is_op_member(e)]
            if len(members) >= 2 and not isinstance(node, ast.Dict):
                yield node.lineno, f"{type(node).__name__.lower()} of opcodes {members[:4]}: a trait group of the table"
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            names = [c.value for c in operands if is_opcode(c)]
            if names:
                yield node.lineno, f"comparison with the string {names[0]!r}"


def _is_op_member(node) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Op"


def count_opcode_strings() -> int:
    return sum(1 for p in LIBRARY for _ in opcode_strings(p))


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_opcode_names_outside_the_table(path):
    found = [f"line {line}: {what}" for line, what in opcode_strings(path)]
    assert not found, f"{path.relative_to(ROOT)} knows opcodes by name; use hlo.opcodes:\n  " + "\n  ".join(found)
