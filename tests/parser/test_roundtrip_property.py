"""Property tests: printing is a fixed point and literals round-trip bit for bit.

* Random small modules (random element types, shapes, layouts, literals and
  attribute values over a subset of opcodes) print to a text that parses back
  to a module printing identically, with bit-identical constants.
* Every float type's values survive print -> parse exactly: all 2^8 / 2^16
  encodings of the 8- and 16-bit types (and the 16 of f4e2m1fn), random f32 and
  f64 bit patterns, NaN payloads and signs, and -0.0.

Negative zero: XLA prints -0.0 as `-0` and reads `-0` back as the integer 0,
losing the sign. Here the lexer keeps `-0` distinct (V.NEG_ZERO): it is 0 for
integer types and -0.0 for float types, so the printer's `-0` round-trips.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hlo.textutil import format_float
from hlo.text.parser import parse_module
from hlo.text.printer import format_module
from hlo.shapes import PRIMITIVE_TYPES

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fixed_point(text: str):
    first = parse_module(text)
    printed = format_module(first)
    second = parse_module(printed)
    assert format_module(second) == printed
    return first, second, printed


def constants_equal(a, b) -> None:
    for x, y in zip(a.instructions(), b.instructions()):
        assert x.opcode == y.opcode
        if x.opcode == "constant":
            assert x.attrs["literal"] == y.attrs["literal"]  # bit equality


# --------------------------------------------------------------------------- float formatting

FLOAT_TYPES_8 = ["f8e5m2", "f8e4m3", "f8e4m3fn", "f8e4m3b11fnuz", "f8e3m4", "f8e5m2fnuz", "f8e4m3fnuz", "f8e8m0fnu"]


def all_encodings(type_name: str) -> np.ndarray:
    et = PRIMITIVE_TYPES[type_name]
    if et.bits == 4:
        return np.arange(16, dtype=np.uint8).view(et.dtype)
    uint = {1: np.uint8, 2: np.uint16}[et.dtype.itemsize]
    return np.arange(2 ** (8 * et.dtype.itemsize), dtype=np.int64).astype(uint).view(et.dtype)


def reparse(type_name: str, values: np.ndarray) -> np.ndarray:
    """Values printed as a constant's elements, then parsed back."""
    elements = ", ".join(format_float(v, type_name) for v in values)
    text = f"HloModule m\nENTRY e {{\n  ROOT c = {type_name}[{len(values)}] constant({{{elements}}})\n}}\n"
    first, second, _ = fixed_point(text)
    return second.entry.root.attrs["literal"].array


@pytest.mark.parametrize("type_name", FLOAT_TYPES_8 + ["f4e2m1fn", "f16", "bf16"])
def test_every_encoding_of_small_float_types_round_trips(type_name):
    values = all_encodings(type_name)
    back = reparse(type_name, values)
    uint = np.uint8 if values.dtype.itemsize == 1 else np.uint16
    got, want = back.view(uint), values.view(uint)
    with np.errstate(invalid="ignore"):
        nan = np.isnan(values.astype(np.float64))
    if type_name in ("f8e4m3b11fnuz", "f8e5m2fnuz", "f8e4m3fnuz", "f8e8m0fnu"):
        # A single NaN encoding: every NaN input is that encoding already.
        assert len(set(want[nan].tolist())) == 1
    assert got.tolist() == want.tolist()


@SETTINGS
@given(st.lists(st.integers(0, 2 ** 32 - 1), min_size=1, max_size=20))
def test_f32_bits_round_trip(bits):
    values = np.array(bits, dtype=np.uint32).view(np.float32)
    back = reparse("f32", values)
    assert back.view(np.uint32).tolist() == bits


@SETTINGS
@given(st.lists(st.integers(0, 2 ** 64 - 1), min_size=1, max_size=20))
def test_f64_bits_round_trip(bits):
    values = np.array(bits, dtype=np.uint64).view(np.float64)
    back = reparse("f64", values)
    assert back.view(np.uint64).tolist() == bits


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2 ** 32 - 1), st.integers(0, 2 ** 32 - 1)), min_size=1, max_size=8))
def test_c64_bits_round_trip(pairs):
    flat = np.array([b for p in pairs for b in p], dtype=np.uint32)
    values = flat.view(np.complex64)
    parts = ", ".join(f"({format_float(v.real, 'f32')}, {format_float(v.imag, 'f32')})" for v in values)
    text = f"HloModule m\nENTRY e {{\n  ROOT c = c64[{len(values)}] constant({{{parts}}})\n}}\n"
    _, second, _ = fixed_point(text)
    assert second.entry.root.attrs["literal"].array.view(np.uint32).tolist() == flat.tolist()


def test_negative_zero_is_kept_for_floats_and_is_zero_for_integers():
    for type_name in ["f16", "bf16", "f32", "f64", "f8e5m2", "f8e4m3fn"]:
        zero = np.zeros(1, dtype=PRIMITIVE_TYPES[type_name].dtype)
        negative = -zero
        assert format_float(negative[0], type_name) == "-0"
        assert np.signbit(reparse(type_name, negative).astype(np.float64)).tolist() == [True]
    text = "HloModule m\nENTRY e {\n  ROOT c = s32[2] constant({-0, 0})\n}\n"
    _, second, printed = fixed_point(text)
    assert "constant({0, 0})" in printed


def test_nan_payload_and_sign_spellings():
    cases = {"f32": [0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFBFFFFF], "f16": [0x7E00, 0x7C01, 0xFC01],
             "bf16": [0x7FC0, 0x7F81], "f8e5m2": [0x7E, 0x7D, 0xFF], "f8e4m3": [0x7C, 0x79],
             "f8e3m4": [0x78, 0x71]}
    expected = {"f32": ["nan", "-nan", "nan(0x1)", "-nan(0x3fffff)"], "f16": ["nan", "nan(0x1)", "-nan(0x1)"],
                "bf16": ["nan", "nan(0x1)"], "f8e5m2": ["nan", "nan(0x1)", "-nan(0x3)"],
                "f8e4m3": ["nan", "nan(0x1)"], "f8e3m4": ["nan", "nan(0x1)"]}
    for type_name, bits in cases.items():
        et = PRIMITIVE_TYPES[type_name]
        uint = {1: np.uint8, 2: np.uint16, 4: np.uint32}[et.dtype.itemsize]
        values = np.array(bits, dtype=uint).view(et.dtype)
        assert [format_float(v, type_name) for v in values] == expected[type_name]
        assert reparse(type_name, values).view(uint).tolist() == bits


# --------------------------------------------------------------------------- random modules

ARRAY_TYPES = ["pred", "s4", "s8", "s32", "s64", "u8", "u32", "u64", "f16", "bf16", "f32", "f64", "c64",
               "f8e4m3fn", "f8e5m2"]


@st.composite
def shapes(draw, max_rank=3):
    type_name = draw(st.sampled_from(ARRAY_TYPES))
    dims = draw(st.lists(st.integers(0, 3), max_size=max_rank))
    return type_name, dims


@st.composite
def layouts(draw, rank):
    if rank == 0 or draw(st.booleans()):
        return ""
    perm = draw(st.permutations(range(rank)))
    extras = ""
    if draw(st.booleans()):
        tiles = draw(st.lists(st.lists(st.sampled_from(["1", "2", "8", "128", "*"]), min_size=1, max_size=2),
                              min_size=1, max_size=2))
        extras += "T" + "".join("(" + ",".join(t) + ")" for t in tiles)
    if draw(st.booleans()):
        extras += f"E({draw(st.integers(1, 32))})"
    if draw(st.booleans()):
        extras += f"S({draw(st.integers(1, 3))})"
    return "{" + ",".join(map(str, perm)) + (":" + extras if extras else "") + "}"


def shape_text(type_name, dims, layout=""):
    return f"{type_name}[{','.join(map(str, dims))}]{layout}"


@st.composite
def scalars(draw, type_name):
    et = PRIMITIVE_TYPES[type_name]
    if et.is_pred:
        return draw(st.sampled_from(["true", "false", "0", "1"]))
    if et.is_integral:
        lo, hi = (-(1 << (et.bits - 1)), (1 << (et.bits - 1)) - 1) if et.is_signed_int else (0, (1 << et.bits) - 1)
        return str(draw(st.integers(lo, hi)))
    if et.is_complex:
        part = st.floats(width=32, allow_nan=False, allow_infinity=False)
        return f"({draw(part)!r}, {draw(part)!r})"
    special = draw(st.sampled_from(["", "", "", "nan", "-nan", "inf", "-inf", "-0"]))
    if special and (special in ("-0",) or type_name not in ("f8e4m3fn",) or "nan" in special):
        return special
    if type_name == "f8e4m3fn":
        return repr(float(draw(st.sampled_from([0.5, -1.5, 448.0, 0.015625]))))
    width = 16 if type_name in ("f16", "bf16", "f8e5m2") else 32 if type_name == "f32" else 64
    value = draw(st.floats(width=width, allow_nan=False, allow_infinity=False))
    if type_name == "bf16":
        value = float(np.float32(value).astype(ml_dtypes.bfloat16))
    if type_name == "f8e5m2":
        value = float(np.float16(value).astype(ml_dtypes.float8_e5m2))
    return repr(value)


@st.composite
def literals(draw, type_name, dims):
    if not dims:
        return draw(scalars(type_name))

    def level(depth):
        items = [level(depth + 1) if depth + 1 < len(dims) else draw(scalars(type_name))
                 for _ in range(dims[depth])]
        sep = draw(st.sampled_from([", ", " ", ","]))
        return "{" + sep.join(items) + "}"
    return level(0)


NAMES = st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=0x2FF, exclude_characters="\\"),
                max_size=8)


@st.composite
def generic_attributes(draw):
    out = []
    if draw(st.booleans()):
        op_name = draw(NAMES).replace('"', '\\"')
        out.append(f'metadata={{op_type="T" op_name="{op_name}" source_line={draw(st.integers(0, 99))}}}')
    if draw(st.booleans()):
        out.append(draw(st.sampled_from(["sharding={replicated}", "sharding={maximal device=1}",
                                         "sharding={devices=[2,1]0,1}", "sharding={devices=[4]<=[2,2]T(1,0)}"])))
    if draw(st.booleans()):
        out.append(f'frontend_attributes={{k{draw(st.integers(0, 9))}="v",j={{"x":[1,{{"y":"}}"}}]}}}}')
    if draw(st.booleans()):
        out.append('backend_config={"a":{"b":"c"}}')
    return "".join(", " + a for a in out)


@st.composite
def instructions(draw, index, params):
    """One instruction line using some earlier parameters, and its (type, dims)."""
    kind = draw(st.sampled_from(["constant", "broadcast", "transpose", "slice", "pad", "reshape", "copy",
                                 "negate", "iota", "concatenate", "reverse"]))
    name = f"%i{index}"
    type_name, dims = draw(shapes())
    attrs = draw(generic_attributes())
    if kind == "constant":
        lit = draw(literals(type_name, dims))
        layout = draw(layouts(len(dims)))
        return f"{name} = {shape_text(type_name, dims, layout)} constant({lit}){attrs}", (type_name, dims)
    if kind == "iota":
        if not dims or type_name in ("pred", "c64"):
            type_name, dims = "s32", [2]
        return (f"{name} = {shape_text(type_name, dims)} iota(), iota_dimension={draw(st.integers(0, len(dims) - 1))}"
                f"{attrs}"), (type_name, dims)
    ptype, pdims, pname = draw(st.sampled_from(params))
    src = shape_text(ptype, pdims)
    if kind == "broadcast":
        extra = draw(st.lists(st.integers(1, 3), max_size=2))
        out = list(pdims) + extra
        return (f"{name} = {shape_text(ptype, out)} broadcast({pname}), dimensions={{{','.join(map(str, range(len(pdims))))}}}"
                f"{attrs}"), (ptype, out)
    if kind in ("transpose", "reverse"):
        perm = draw(st.permutations(range(len(pdims))))
        out = [pdims[p] for p in perm] if kind == "transpose" else pdims
        return (f"{name} = {shape_text(ptype, out)} {kind}({pname}), dimensions={{{','.join(map(str, perm))}}}"
                f"{attrs}"), (ptype, out)
    if kind == "slice":
        ranges, out = [], []
        for d in pdims:
            start = draw(st.integers(0, d))
            limit = draw(st.integers(start, d))
            stride = draw(st.integers(1, 3))
            ranges.append(f"[{start}:{limit}:{stride}]" if draw(st.booleans()) else f"[{start}:{limit}]")
            out.append(len(range(start, limit, stride if ranges[-1].count(":") == 2 else 1)))
        return f"{name} = {shape_text(ptype, out)} slice({pname}), slice={{{', '.join(ranges)}}}{attrs}", (ptype, out)
    if kind == "pad":
        if not pdims:
            return f"{name} = {src} copy({pname}){attrs}", (ptype, pdims)
        cfg = [(draw(st.integers(-1, 2)), draw(st.integers(-1, 2)), draw(st.integers(0, 2))) for _ in pdims]
        out = [max(0, d + lo + hi + max(d - 1, 0) * it) for d, (lo, hi, it) in zip(pdims, cfg)]
        padding = "x".join(f"{lo}_{hi}_{it}" if draw(st.booleans()) or it else f"{lo}_{hi}" for lo, hi, it in cfg)
        return (f"%z{index} = {ptype}[] constant(0)\n  {name} = {shape_text(ptype, out)} pad({pname}, %z{index}), "
                f"padding={padding}{attrs}"), (ptype, out)
    if kind == "reshape":
        n = int(np.prod(pdims)) if pdims else 1
        return f"{name} = {ptype}[{n}] reshape({pname}){attrs}", (ptype, [n])
    if kind == "concatenate":
        if not pdims:
            return f"{name} = {src} negate({pname}){attrs}", (ptype, pdims)
        out = [pdims[0] * 2] + list(pdims[1:])
        return (f"{name} = {shape_text(ptype, out)} concatenate({pname}, {src} {pname}), dimensions={{0}}"
                f"{attrs}"), (ptype, out)
    return f"{name} = {src} {kind}({pname}){attrs}", (ptype, pdims)


@st.composite
def modules(draw):
    params = []
    lines = []
    for i in range(draw(st.integers(1, 3))):
        type_name, dims = draw(shapes())
        layout = draw(layouts(len(dims)))
        lines.append(f"%p{i} = {shape_text(type_name, dims, layout)} parameter({i})")
        params.append((type_name, dims, f"%p{i}"))
    results = []
    for i in range(draw(st.integers(1, 6))):
        line, (type_name, dims) = draw(instructions(i, params))
        lines.append(line)
        results.append(shape_text(type_name, dims))
    names = ", ".join(f"%i{i}" for i in range(len(results)))
    lines.append(f"ROOT %t = ({', '.join(results)}) tuple({names})")
    header = draw(st.sampled_from(["HloModule m", "HloModule m, is_scheduled=true",
                                   "HloModule m, replica_count=2, num_partitions=2"]))
    return header + "\n\nENTRY %e {\n  " + "\n  ".join(lines) + "\n}\n"


@SETTINGS
@given(modules())
def test_random_modules_print_to_a_fixed_point(text):
    first, second, _ = fixed_point(text)
    constants_equal(first, second)
    for a, b in zip(first.instructions(), second.instructions()):
        assert a.shape == b.shape
        assert a.attrs.keys() == b.attrs.keys()
