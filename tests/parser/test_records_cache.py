"""The records of a text are cached by the text's hash and length, and a hit is only taken for
the same text (hlo/text/parser.py)."""
from __future__ import annotations

from hlo.text import parser
from hlo.text.parser import clear_parse_cache, parse_module

_TEXT = "HloModule m\n\nENTRY %e {\n  ROOT %p = f32[2]{0} parameter(0)\n}\n"


def test_the_same_text_reuses_its_records_and_builds_a_new_module():
    clear_parse_cache()
    first, second = parse_module(_TEXT), parse_module(_TEXT)
    assert first is not second and first.entry.root is not second.entry.root
    assert len(parser._CACHE) == 1


def test_an_entry_under_the_same_key_for_another_text_is_not_taken():
    clear_parse_cache()
    other = _TEXT.replace("f32", "s32")
    key = (len(_TEXT), hash(_TEXT))
    real = parse_module(other)
    parser._CACHE[key] = (*parser._CACHE.popitem()[1][:2], other)  # a collision: other's records under _TEXT's key
    parser._cache_chars = len(other)
    module = parse_module(_TEXT)
    assert str(module.entry.root.shape) == "f32[2]{0}" and str(real.entry.root.shape) == "s32[2]{0}"
    assert parser._CACHE[key][2] == _TEXT and parser._cache_chars == len(_TEXT)
