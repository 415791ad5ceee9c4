"""Lines that write the same attribute value share it (fastpath.py reads a value once per text,
the builder converts a value object once when the result is immutable): errors are still
reported at every line that has one, and instructions never share anything mutable."""
from __future__ import annotations

import pytest

from hlo.diagnostics import HloError
from hlo.text.parser import clear_parse_cache, parse_module

_LINES = "\n".join(f"  %b.{i} = f32[4,3]{{1,0}} broadcast(%p), dimensions={{0}}" for i in range(3))


def _module(body: str) -> str:
    return "HloModule m\n\nENTRY %e {\n  %p = f32[4]{0} parameter(0)\n" + body + "\n  ROOT %t = (f32[4,3]) tuple(%b.0)\n}\n"


def test_repeated_values_are_read_alike_on_every_line():
    clear_parse_cache()
    module = parse_module(_module(_LINES))
    broadcasts = [i for i in module.entry.instructions if i.name.startswith("b.")]
    assert [b.attrs["dimensions"] for b in broadcasts] == [(0,)] * 3
    assert len({id(b.attrs) for b in broadcasts}) == 3  # each its own attribute dict
    assert len({id(b.attr_locs["dimensions"]) for b in broadcasts}) == 3
    assert [b.attr_locs["dimensions"].line for b in broadcasts] == [5, 6, 7]


def test_a_repeated_bad_value_is_reported_on_every_line():
    bad = "\n".join(f"  %b.{i} = f32[4,3]{{1,0}} broadcast(%p), dimensions={{0,x}}" for i in range(3))
    clear_parse_cache()
    with pytest.raises(HloError) as info:
        parse_module(_module(bad), "t.hlo")
    lines = [d.loc.line for d in info.value.diagnostics if "dimensions" in d.message]
    assert lines == [5, 6, 7]


def test_a_value_converted_once_still_fails_where_its_attribute_does_not_take_it():
    # `{0}` is a fine broadcast dimension list and the same text is an error as a slice: each line is judged
    text = _module(_LINES + "\n  %s = f32[1]{0} slice(%p), slice={0}")
    clear_parse_cache()
    with pytest.raises(HloError) as info:
        parse_module(text, "t.hlo")
    assert [d.loc.line for d in info.value.diagnostics] == [8]


def _constants(lines: list[str]):
    text = "HloModule m\n\nENTRY %e {\n" + "\n".join(f"  %c.{i} = {line}" for i, line in enumerate(lines)) + \
        f"\n  ROOT %t = () tuple()\n}}\n"
    clear_parse_cache()
    module = parse_module(text)
    return [i.attrs["literal"] for i in module.entry.instructions if i.name.startswith("c.")]


def test_constants_written_alike_get_equal_literals_of_their_own():
    literals = _constants(["f32[] constant(0.5)", "f32[] constant(0.5)", "s32[4]{0} constant({1, 2, 3, 4})",
                           "s32[4]{0} constant({1, 2, 3, 4})"])
    assert [l.array.tolist() for l in literals] == [0.5, 0.5, [1, 2, 3, 4], [1, 2, 3, 4]]
    assert len({id(l) for l in literals}) == 4 and len({id(l.array) for l in literals}) == 4
    literals[2].array[0] = 7  # (no instruction shares another's array)
    assert literals[3].array.tolist() == [1, 2, 3, 4]


def test_values_that_compare_equal_but_differ_are_not_confused():
    # 0.0 == -0.0 and True == 1 in Python; the literals they make differ
    literals = _constants(["f32[] constant(0)", "f32[] constant(-0)", "f32[] constant(0.0)", "f32[] constant(-0.0)",
                           "pred[] constant(true)", "pred[] constant(1)", "s32[] constant(1)", "f32[] constant(1)",
                           "f32[] constant(1.0)", "f64[] constant(1)"])
    signs = [str(l.array) for l in literals[:4]]
    assert signs == ["0.0", "-0.0", "0.0", "-0.0"]
    assert [l.array.dtype.name for l in literals[4:]] == ["bool", "bool", "int32", "float32", "float32", "float64"]
    assert [l.array.item() for l in literals[4:]] == [True, True, 1, 1.0, 1.0, 1.0]


def test_a_bad_constant_is_reported_on_every_line():
    text = "HloModule m\n\nENTRY %e {\n" + "\n".join(f"  %c.{i} = s8[] constant(300)" for i in range(3)) + \
        "\n  ROOT %t = () tuple()\n}\n"
    clear_parse_cache()
    with pytest.raises(HloError) as info:
        parse_module(text, "t.hlo")
    assert [d.loc.line for d in info.value.diagnostics] == [4, 5, 6]
