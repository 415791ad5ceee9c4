"""Fuzzing: mutated modules only ever raise HloError, and quickly.

The seeds are the valid modules in tests/data/parser/. Mutations drop,
duplicate, swap and replace tokens, truncate, insert random bytes or random
unicode, and nest braces/parentheses deeply. For every input, parse_module
(and the checker, when a module parses) must either succeed or raise HloError
-- never another exception -- within the per-input time limit.

The default run tries ~1500 inputs; the slow run (-m slow) tries 20,000. A third
run drives what the tools call (hlo.analysis.loading.diagnose: parse with recovery, then check
the partly built module) over these seeds and the checker's valid modules, which use
every opcode.
"""
from __future__ import annotations

import random
import re
import time
from pathlib import Path

import pytest

from hlo.diagnostics import HloError
from hlo.text.parser import clear_parse_cache, parse_module
from hlo.text.printer import format_module

SEEDS = sorted((Path(__file__).resolve().parent.parent / "data" / "parser").glob("*.hlo"))
CHECKER_SEEDS = sorted((Path(__file__).resolve().parent.parent / "checker" / "data" / "valid").glob("*.hlo"))
TIME_LIMIT = 2.0
_TOKEN = re.compile(r'%?[A-Za-z0-9_.\-]+|"(?:\\.|[^"\\])*"|\s+|.', re.S)
_PUNCT = list("{}()[],=:*?#<>-/\"%") + ["->", "<=", "/*", "*/", "//", "...", "{...}", "\n", "ROOT", "ENTRY",
                                       "HloModule", "f32[]", "s32[2]{0}", "nan", "-inf", "0x1", "T(1,0)", "}}}"]


def _checker():
    try:
        from hlo.analysis.checker import check_module
    except ImportError:
        return None
    return check_module


CHECK = _checker()


def mutate(text: str, rng: random.Random) -> str:
    tokens = _TOKEN.findall(text)
    kind = rng.randrange(9)
    if kind == 0 and tokens:  # drop tokens
        for _ in range(rng.randint(1, 3)):
            if tokens:
                del tokens[rng.randrange(len(tokens))]
    elif kind == 1 and tokens:  # duplicate a token
        i = rng.randrange(len(tokens))
        tokens.insert(i, tokens[i])
    elif kind == 2 and len(tokens) > 1:  # swap two tokens
        i, j = rng.randrange(len(tokens)), rng.randrange(len(tokens))
        tokens[i], tokens[j] = tokens[j], tokens[i]
    elif kind == 3 and tokens:  # replace a token
        tokens[rng.randrange(len(tokens))] = rng.choice(_PUNCT + tokens)
    elif kind == 4:  # truncate
        return text[:rng.randrange(len(text) + 1)]
    elif kind == 5:  # random bytes
        pos = rng.randrange(len(text) + 1)
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8))).decode("latin-1")
        return text[:pos] + junk + text[pos:]
    elif kind == 6:  # random unicode, including surrogates and control characters
        pos = rng.randrange(len(text) + 1)
        junk = "".join(chr(rng.choice([rng.randrange(0x20, 0x7F), rng.randrange(0x80, 0x3000),
                                       rng.randrange(0xD800, 0xE000), rng.randrange(0x10000, 0x110000),
                                       rng.randrange(0, 0x20)])) for _ in range(rng.randint(1, 6)))
        return text[:pos] + junk + text[pos:]
    elif kind == 7:  # deep nesting
        pos = rng.randrange(len(text) + 1)
        opener, closer = rng.choice([("{", "}"), ("(", ")"), ("[", "]"), ("{ {", "} }")])
        depth = rng.choice([50, 500, 3000])
        balanced = rng.random() < 0.5
        return text[:pos] + opener * depth + ("1" + closer * depth if balanced else "") + text[pos:]
    else:  # several token-level mutations at once
        for _ in range(rng.randint(2, 5)):
            text = mutate(text, rng)
        return text
    return "".join(tokens)


def run_one(text: str) -> None:
    start = time.perf_counter()
    try:
        module = parse_module(text, "fuzz.hlo")
        format_module(module)
        if CHECK is not None:
            CHECK(module)
    except HloError as exc:
        exc.render()
    except RecursionError as exc:  # deep nesting must be an HloError too
        raise AssertionError(f"RecursionError on input:\n{text[:2000]}") from exc
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc} on input:\n{text[:2000]}") from exc
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_LIMIT, f"took {elapsed:.2f}s on input:\n{text[:2000]}"


def fuzz(count: int, seed: int) -> None:
    rng = random.Random(seed)
    seeds = [p.read_text() for p in SEEDS]
    assert seeds, "no seed modules in tests/data/parser"
    for _ in range(count):
        run_one(mutate(rng.choice(seeds), rng))
    clear_parse_cache()


def test_seeds_are_valid():
    for path in SEEDS:
        module = parse_module(path.read_text(), str(path))
        printed = format_module(module)
        assert format_module(parse_module(printed)) == printed


def test_fuzz_quick():
    fuzz(1500, seed=1)


@pytest.mark.slow
def test_fuzz_thorough():
    fuzz(20000, seed=2)


def run_one_loading(text: str) -> None:
    from hlo.analysis.loading import diagnose
    start = time.perf_counter()
    try:
        diagnosis = diagnose(text, "fuzz.hlo")
        if diagnosis.diagnostics:
            HloError(diagnosis.diagnostics).render()
        elif diagnosis.module is not None:
            format_module(diagnosis.module)
    except Exception as exc:
        raise AssertionError(f"{type(exc).__name__}: {exc} on input:\n{text[:2000]}") from exc
    elapsed = time.perf_counter() - start
    assert elapsed < TIME_LIMIT, f"took {elapsed:.2f}s on input:\n{text[:2000]}"


def test_fuzz_loading_with_recovery():
    rng = random.Random(3)
    seeds = [p.read_text() for p in SEEDS + CHECKER_SEEDS]
    assert len(seeds) > len(SEEDS), "no seed modules in tests/checker/data/valid"
    for _ in range(2000):
        run_one_loading(mutate(rng.choice(seeds), rng))
    clear_parse_cache()
