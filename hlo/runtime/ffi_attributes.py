"""Attribute dictionaries of typed-FFI custom calls (their `backend_config`), as both backends read them.

JAX's LAPACK custom calls (`lapack_spotrf_ffi` ...) carry their options as an MLIR attribute
dictionary, `{uplo = 76 : ui8, mode = 86 : ui8}`; character options are ASCII codes.
"""
from __future__ import annotations

import re
from typing import Optional

_ATTR_TOKEN = re.compile(r"""
    \s*(?:
      (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<number>[-+]?(?:0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?))
    | (?P<ident>[A-Za-z_#!][\w.$#-]*)
    | (?P<punct>[{}\[\]=,:<>()])
    )""", re.VERBOSE)


_MLIR_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{2})|(.))", re.DOTALL)
_MLIR_SIMPLE_ESCAPES = {"n": "\n", "t": "\t"}


def _unescape_mlir_string(body: str) -> str:
    """MLIR string escapes: \\\\, \\", \\n, \\t and \\XX hex bytes (UTF-8 sequences)."""
    one_char_per_byte = body.encode("utf-8").decode("latin-1")
    unescaped = _MLIR_ESCAPE.sub(
        lambda m: chr(int(m[1], 16)) if m[1] else _MLIR_SIMPLE_ESCAPES.get(m[2], m[2]),
        one_char_per_byte)
    return unescaped.encode("latin-1").decode("utf-8", errors="replace")


class _AttrParser:
    """Recursive-descent parser for the subset of MLIR attribute syntax JAX emits."""

    def __init__(self, text: str):
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            match = _ATTR_TOKEN.match(text, pos)
            if not match or match.end() == pos:
                raise ValueError(f"backend_config: cannot parse {text[pos:pos + 20]!r}")
            kind = match.lastgroup
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.i = 0

    def peek(self) -> Optional[str]:
        return self.tokens[self.i][1] if self.i < len(self.tokens) else None

    def take(self, expected: Optional[str] = None) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise ValueError("backend_config: unexpected end of attribute text")
        token = self.tokens[self.i]
        if expected is not None and token[1] != expected:
            raise ValueError(f"backend_config: expected {expected!r}, found {token[1]!r}")
        self.i += 1
        return token

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def parse_dict(self) -> dict:
        self.take("{")
        result: dict[str, Any] = {}
        while self.peek() != "}":
            kind, key = self.take()
            if kind == "string":
                key = _unescape_mlir_string(key[1:-1])
            elif kind != "ident":
                raise ValueError(f"backend_config: bad attribute name {key!r}")
            if self.peek() == "=":
                self.take("=")
                result[key] = self.parse_value()
            else:
                result[key] = True  # unit attribute
            if self.peek() == ",":
                self.take(",")
            elif self.peek() != "}":
                raise ValueError(f"backend_config: expected ',' or '}}', found {self.peek()!r}")
        self.take("}")
        return result

    def parse_value(self) -> Any:
        value = self.parse_atom()
        if self.peek() == ":":
            self.take(":")
            type_name = self.skip_type()
            if type_name == "i1" and isinstance(value, int):
                value = bool(value)
        return value

    def skip_type(self) -> str:
        """Consumes a type such as ui8, f32 or tensor<2xi64>; returns its head name."""
        _, name = self.take()
        if self.peek() == "<":
            self.skip_angles()
        return name

    def skip_angles(self) -> None:
        depth = 0
        while True:
            _, tok = self.take()
            depth += tok == "<"
            depth -= tok == ">"
            if depth == 0:
                return

    def parse_list(self, close: str) -> list:
        items = []
        while self.peek() != close:
            items.append(self.parse_value())
            if self.peek() == ",":
                self.take(",")
        self.take(close)
        return items

    def parse_atom(self) -> Any:
        kind, tok = self.take()
        if kind == "string":
            return _unescape_mlir_string(tok[1:-1])
        if kind == "number":
            if re.fullmatch(r"[-+]?0x[0-9a-fA-F]+", tok):
                return int(tok, 16)
            return int(tok) if re.fullmatch(r"[-+]?\d+", tok) else float(tok)
        if tok == "{":
            self.i -= 1
            return self.parse_dict()
        if tok == "[":
            return self.parse_list("]")
        if kind == "ident":
            if tok in ("true", "false"):
                return tok == "true"
            if tok in ("inf", "nan"):
                return float(tok)
            if tok == "unit":
                return True
            if tok in ("array", "dense") and self.peek() == "<":
                return self.parse_array_like(tok)
        raise ValueError(f"backend_config: unsupported attribute value {tok!r}")

    def parse_array_like(self, head: str) -> Any:
        """array<i64: 1, 2> -> [1, 2]; dense<[1, 2]> -> [1, 2]; dense<3> -> 3."""
        self.take("<")
        if head == "array":
            self.skip_type()
            items = []
            if self.peek() == ":":
                self.take(":")
                items = self.parse_list(">")
            else:
                self.take(">")
            return items
        value = self.parse_atom()
        self.take(">")
        return value


def parse_mlir_attr_dict(text: str) -> dict:
    """Parse an MLIR attribute dictionary such as `{uplo = 76 : ui8, mode = 1 : i32}`.

    Values become Python ints, floats, bools (true/false, i1 integers, unit
    attributes), strings, lists (`[..]`, `array<i64: ..>`) and nested dicts. Type
    suffixes are dropped. Empty text gives {}; outer braces may be omitted.
    """
    text = (text or "").strip()
    if not text:
        return {}
    if not text.startswith("{"):
        text = "{" + text + "}"
    parser = _AttrParser(text)
    result = parser.parse_dict()
    if not parser.at_end():
        raise ValueError(f"backend_config: trailing text after attribute dictionary: {text!r}")
    return result


def backend_config_dict(backend_config) -> dict:
    """The options of a typed-FFI custom call (an already decoded dict is returned as it is)."""
    if isinstance(backend_config, dict):
        return backend_config
    return parse_mlir_attr_dict(backend_config or "")


def lapack_char_option(config: dict, name: str, allowed: str, target: str,
               default: Optional[str] = None) -> str:
    """A LAPACK character option stored as its ASCII code (e.g. uplo = 76 -> 'L')."""
    if name not in config:
        if default is None:
            raise ValueError(f"{target}: backend_config lacks attribute {name!r}")
        return default
    value = config[name]
    char = chr(value) if isinstance(value, int) else str(value)
    if char not in allowed:
        raise ValueError(f"{target}: attribute {name}={value!r} is not one of {list(allowed)}")
    return char
