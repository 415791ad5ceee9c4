"""Reading a module's text for a tool: a file or standard input, checked to be HLO text.

Three mistakes get a message saying what the input is and what to give instead:
a binary file (an .npz, an object file...), StableHLO or MHLO text (what JAX's
`lowered.as_text()` prints by default: MLIR, not HLO), and nothing typed on a terminal.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from hlo.diagnostics import SourceFile, error

# What a binary file given as a module most likely is, by its first bytes.
_MAGIC = [
    (b"PK\x03\x04", "a zip archive (an .npz file?): inputs go to --inputs FILE.npz"),
    (b"PK\x05\x06", "a zip archive (an .npz file?): inputs go to --inputs FILE.npz"),
    (b"\x93NUMPY", "an .npy array: inputs go to --input arg0=FILE.npy"),
    (b"\x7fELF", "an ELF object or executable"),
    (b"\x80", "a Python pickle"),
]

_COMMENT_OR_BLANK = re.compile(r"\s*(//[^\n]*)?(\n|$)")
_MLIR_START = re.compile(r'\s*(module\b|func\.func\b|#[\w.$-]+\s*=|"builtin\.module"|"func\.func")')
_MHLO_OP = re.compile(r'=\s*"?mhlo\.[a-z_]+')

HOW_TO_GET_HLO = ('get HLO text from JAX with jax.jit(f).lower(*args).as_text(dialect="hlo"), '
                  "or from an XLA dump (XLA_FLAGS=--xla_dump_to=DIR writes DIR/*.before_optimizations.txt)")


class InputUsageError(Exception):
    """A module input that cannot be read at all (no location to point at)."""


def read_text(path: str) -> tuple[str, str]:
    """(display name, text) of a module file, or of standard input for '-'.

    HloError (located) for binary files and for StableHLO/MHLO text; InputUsageError for
    a file that cannot be opened."""
    if path == "-":
        if sys.stdin.isatty():
            click.echo("reading HLO text from the terminal; end it with Ctrl-D "
                       "(or give a file: --help shows how)", err=True)
        name, data = "<stdin>", sys.stdin.buffer.read()
    else:
        try:
            name, data = path, Path(path).read_bytes()
        except IsADirectoryError:
            raise InputUsageError(f"cannot read {path}: it is a folder; give an .hlo file") from None
        except OSError as exc:
            raise InputUsageError(f"cannot read {path}: {exc.strerror}") from None
    text = _decoded(name, data)
    reject_mlir(name, text)
    return name, text


def _decoded(name: str, data: bytes) -> str:
    """UTF-8 text, or a located error saying the file is binary (and what it looks like)."""
    guess = next((what for magic, what in _MAGIC if data.startswith(magic)), None)
    nul = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        if nul < 0 and guess is None:   # text with a stray byte (Latin-1?): point at it
            raise error(f"the file is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}",
                        _loc(name, text, data, exc.start)) from None
        nul = exc.start if nul < 0 else min(nul, exc.start)
    if nul < 0 and guess is None:
        return text
    nul = max(nul, 0)
    what = f"; it looks like {guess}" if guess else ""
    raise error(f"this is a binary file, not UTF-8 HLO text (byte 0x{data[nul]:02x} at offset {nul}){what}",
                _loc(name, text, data, nul)) from None


def _loc(name: str, text: str, data: bytes, byte_offset: int):
    """The location of a byte offset in the text decoded with replacement characters."""
    return SourceFile(name, text).loc(len(data[:byte_offset].decode("utf-8", errors="replace")))


def mlir_dialect(text: str) -> str | None:
    """'StableHLO', 'MHLO' or 'MLIR' when the text is MLIR rather than HLO, else None."""
    if not _MLIR_START.match(text, _code_start(text)):
        return None
    if "stablehlo." in text:
        return "StableHLO"
    if _MHLO_OP.search(text):
        return "MHLO"
    return "MLIR"


def reject_mlir(name: str, text: str) -> None:
    """A located error for StableHLO/MHLO text, saying how to get HLO text instead."""
    dialect = mlir_dialect(text)
    if dialect is None:
        return
    kind = "MLIR" if dialect == "MLIR" else f"{dialect} (MLIR)"
    raise error(f"this is {kind} text, not HLO text; {HOW_TO_GET_HLO}",
                SourceFile(name, text).loc(_code_start(text)))


def _code_start(text: str) -> int:
    """The offset of the first character that is not blank or in a // comment."""
    pos = 0
    while True:
        blank = _COMMENT_OR_BLANK.match(text, pos)
        if blank is None or blank.end() == pos:
            break
        pos = blank.end()
    return pos + len(text[pos:pos + 200]) - len(text[pos:pos + 200].lstrip(" \t"))
