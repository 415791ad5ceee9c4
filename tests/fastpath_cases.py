"""Texts and mutated instruction lines for the tests of the line fast path (the parser's and the
language server's name index): every instruction line of the project's test texts and, when the
checkout has them, of the shared corpus and models, and a mutator that breaks lines in the ways
that matter to a line reader (characters and words dropped, doubled, swapped or replaced by ones
it looks at)."""
from __future__ import annotations

import random
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SHARED = TESTS.parents[1] / "shared"
TEXTS = sorted([*(TESTS / "data" / "corpus").glob("*.hlo"), *(TESTS / "data" / "parser").glob("*.hlo"),
                *(TESTS / "golden").rglob("*.hlo"), *(TESTS / "checker" / "data").rglob("*.hlo")])
SHARED_TEXTS = sorted([*(SHARED / "corpus").glob("*.hlo"), *(SHARED / "models").glob("*.hlo")])
INSTRUCTION_LINE = re.compile(r"^[ \t]*(?:ROOT[ \t]+)?%?[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*=.*$", re.M)


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _lines() -> list[str]:
    lines = []
    for path in TEXTS + SHARED_TEXTS[:12]:
        lines += INSTRUCTION_LINE.findall(read(path))
    return sorted(set(lines))


LINES = _lines()
_WORD = re.compile(r'%?[A-Za-z0-9_.\-]+|"(?:\\.|[^"\\])*"|\s+|.')
_PIECES = list("{}()[],=:*?#<>-/\"'%_.\\ \t") + [
    "ROOT ", "%x", "x", "nan", "inf", "-inf", "true", "false", "f32", "f32[]", "f32[2]{0}", "s32[2]", "pred[]",
    "{0}", "{1,0}", "{}", "{[0:2]}", "{[0:2:1], [1:3]}", "/*index=5*/", "/* c */", "// c", "-0", "0.5", "1e3",
    "3x3", "0_1x1_0", "b01f_01io->b01f", "kLoop", "constant", "parameter", "({1, 2})", "({ {1}, {2} })",
    "metadata=", "backend_config=", "\"s\\\"t\"", "ENTRY", "HloModule", ", ", "\r", "\n", "}", "{\n"]


def mutate_line(line: str, rng: random.Random) -> str:
    if rng.random() < 0.5:  # a character
        chars = list(line)
        i = rng.randrange(len(chars) + 1)
        op = rng.randrange(3)
        if op == 0 and i < len(chars):
            del chars[i]
        elif op == 1:
            chars.insert(i, rng.choice(_PIECES))
        elif i < len(chars):
            chars[i] = rng.choice(_PIECES)
        return "".join(chars)
    words = _WORD.findall(line)
    for _ in range(rng.randint(1, 2)):
        i, j = rng.randrange(len(words)), rng.randrange(len(words))
        op = rng.randrange(4)
        if op == 0:
            del words[i]
        elif op == 1:
            words.insert(i, words[j])
        elif op == 2:
            words[i], words[j] = words[j], words[i]
        else:
            words[i] = rng.choice(_PIECES)
        if not words:
            return ""
    return "".join(words)


def module_of(lines: list[str]) -> str:
    return "HloModule m\n\nENTRY e {\n" + "\n".join(lines) + "\n}\n"


def mutated_modules(count: int, seed: int):
    """`count` small modules, each one or two instruction lines of which one is mutated."""
    rng = random.Random(seed)
    for _ in range(count):
        line = mutate_line(rng.choice(LINES), rng)
        yield module_of([line] if rng.random() < 0.5 else [line, rng.choice(LINES)])
