"""Text utilities every layer may use: C string escapes, XLA's spelling of floats, brace matching.

Depends on nothing above `shapes` (the float spelling needs the element types).
"""
from __future__ import annotations

import functools
import math
import re

import ml_dtypes
import numpy as np

from .shapes import PRIMITIVE_TYPES, PrimitiveType


# --------------------------------------------------------------------------- strings

_C_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b",
              "\f": "\\f", "\v": "\\v"}


def escape_string(s: str) -> str:
    """C-escape like absl::CEscape (non-ASCII bytes as octal escapes of their UTF-8)."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return s
    out = []
    for ch in s:
        if ch in _C_ESCAPES:
            out.append(_C_ESCAPES[ch])
        elif ch.isascii() and ch.isprintable():
            out.append(ch)
        else:
            out.extend("\\%03o" % b for b in ch.encode("utf-8", "surrogatepass"))
    return "".join(out)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "a": "\a", "b": "\b",
            "f": "\f", "v": "\v", "?": "?"}
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.S)


def unescape(body: str) -> str:
    """The text of a C-escaped string body (\\xNN and octal escapes of UTF-8 bytes reassembled)."""
    if "\\" not in body:
        return body

    def repl(m):
        e = m.group(1)
        if e[0] == "x":
            return chr(int(e[1:], 16))
        if e[0].isdigit():
            return chr(int(e, 8) & 0xFF)
        return _ESCAPES.get(e, e)
    raw = _ESCAPE_RE.sub(repl, body)
    try:  # byte escapes of UTF-8 sequences: reassemble the characters
        return raw.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return raw


# --------------------------------------------------------------------------- floats

def uint_of(et: PrimitiveType):
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[et.dtype.itemsize]


# Types whose NaNs carry a payload (IEEE-style encodings): mantissa bits per type.
NAN_PAYLOAD_BITS = {"f16": 10, "bf16": 7, "f32": 23, "f64": 52, "f8e5m2": 2, "f8e4m3": 3, "f8e3m4": 4}
# Types with a NaN whose sign bit is meaningful but no payload.
SIGNED_NAN_ONLY = {"f8e4m3fn"}


@functools.lru_cache(maxsize=None)
def max_digits10(type_name: str) -> int:
    if type_name == "f64":
        return 17
    if type_name == "f32":
        return 9
    nmant = ml_dtypes.finfo(PRIMITIVE_TYPES[type_name].dtype).nmant + 1
    return math.ceil(nmant * math.log10(2) + 1)


def format_float(v, type_name: str = "f32") -> str:
    """XLA's RoundTripFpToString: %g with digits10, else max_digits10 (f16 and smaller: max_digits10)."""
    f = float(v)
    if math.isnan(f):
        return _format_nan(v, type_name)
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    if type_name in ("f32", "f64"):
        short = "%.*g" % (6 if type_name == "f32" else 15, f)
        if _round_trips(short, f, type_name):
            return short
        return "%.*g" % (9 if type_name == "f32" else 17, f)
    digits = max_digits10(type_name)
    text = "%.*g" % (digits, f)
    # f8e8m0fnu's conversion from double does not round to nearest in the last digit,
    # so its values may need more digits to read back the same (tests check every
    # encoding of every small type).
    while type_name == "f8e8m0fnu" and digits < 17 and not _round_trips(text, f, type_name):
        digits += 1
        text = "%.*g" % (digits, f)
    return text


def _round_trips(text: str, f: float, type_name: str) -> bool:
    if type_name == "f64":
        return float(text) == f
    dtype = PRIMITIVE_TYPES[type_name].dtype
    return np.asarray(float(text)).astype(dtype) == np.asarray(f).astype(dtype)


def _format_nan(v, type_name: str) -> str:
    """`nan`, `-nan` or `nan(0x...)` (payload printed unless it is the default quiet NaN's)."""
    et = PRIMITIVE_TYPES[type_name]
    arr = np.asarray(v)
    if arr.dtype != et.dtype:
        arr = arr.astype(et.dtype)
    total = et.dtype.itemsize * 8
    bits = int(arr.reshape(()).view(uint_of(et)))
    mant = NAN_PAYLOAD_BITS.get(type_name)
    has_sign = mant is not None or type_name in SIGNED_NAN_ONLY
    sign = "-" if has_sign and bits >> (total - 1) & 1 else ""
    if mant is not None:
        payload = bits & ((1 << mant) - 1)
        if payload != 1 << (mant - 1):
            return f"{sign}nan(0x{payload:x})"
    return f"{sign}nan"


# --------------------------------------------------------------------------- braces

_BRACE_OR_STRING = re.compile(r'[{}]|"(?:\\.|[^"\\])*"')


def matching_brace_end(text: str, start: int = 0) -> int:
    """Offset just past the `}` matching the `{` at start; braces in strings are ignored.

    -1 when the brace is never closed; -2 - offset when a string starting at offset is
    unterminated (so callers can point at it)."""
    depth = 0
    search = _BRACE_OR_STRING.search
    pos = start
    while True:
        m = search(text, pos)
        if m is None:
            return -1
        ch = m.group()
        pos = m.end()
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return pos
        elif len(ch) == 1:  # an unterminated string
            return -2 - m.start()
