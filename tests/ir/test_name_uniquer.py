"""NameUniquer.for_module keeps each computation's names until the computation is edited: after
edits it hands out what a uniquer built from scratch hands out."""
from __future__ import annotations

from hlo import parse_module
from hlo.ir import Instruction, NameUniquer
from hlo.opcodes import Op

_TEXT = """HloModule m

add.7 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT add.3 = f32[] add(a, b)
}

ENTRY e {
  p = f32[4] parameter(0)
  negate.12 = f32[4] negate(p)
  ROOT add.4 = f32[4] add(negate.12, p)
}
"""


def _from_scratch(module) -> NameUniquer:
    for comp in module.computations:
        comp._names = None
    return NameUniquer.for_module(module)


def _same(a: NameUniquer, b: NameUniquer) -> bool:
    return a._taken == b._taken and {k: v for k, v in a._next.items() if v > 1} == \
        {k: v for k, v in b._next.items() if v > 1}


def test_names_after_edits_are_those_of_a_fresh_uniquer():
    module = parse_module(_TEXT)
    entry = module.entry
    first = NameUniquer.for_module(module)
    assert first.unique("add.3") == "add.8" and first.unique("negate.12") == "negate.13"
    inst = entry.by_name()
    entry.add(Instruction("negate.40", Op.NEGATE, inst["p"].shape, [inst["p"]]), before=inst["add.4"])
    again = NameUniquer.for_module(module)
    assert _same(again, _from_scratch(module))
    assert again.unique("negate.12") == "negate.41"
    entry.remove(entry.by_name()["negate.40"])
    assert NameUniquer.for_module(module).unique("negate.12") == "negate.13"


def test_an_unedited_module_gives_the_same_names_twice():
    module = parse_module(_TEXT)
    assert _same(NameUniquer.for_module(module), NameUniquer.for_module(module))
    assert _same(NameUniquer.for_module(module), _from_scratch(module))
