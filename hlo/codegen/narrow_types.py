"""Element types of fewer than 16 bits beyond s8/u8: 8- and 4-bit floats and 1-, 2- and 4-bit integers.

Every such element takes one byte of memory, as in ml_dtypes' numpy arrays (the
interpreter's values and the JIT's buffers):

* s1..s4 and u1..u4 hold their value in the byte's low bits (the upper ones zero); in
  registers they are i1..i4, whose wrap-around arithmetic is the type's.
* f8e5m2, f8e4m3, f8e4m3fn, f8e4m3fnuz, f8e4m3b11fnuz, f8e5m2fnuz, f8e3m4, f8e8m0fnu and
  f4e2m1fn hold their code; in registers they are the f32 of their value (exact), like
  f16 and bf16, rounded back after every op. Decoding is a 256-entry table of values.
  Encoding an f32 is ml_dtypes' own rounding (nearest, ties to even, each format's
  overflow to inf, NaN or its largest value, no negative zero in the fnuz formats, no
  zero or sign in e8m0) captured as a step function: for |x|'s bits, the number of
  breakpoints at or below them (a branch-free binary search of a sorted table) picks the
  code, from one table for positive and one for negative x. A NaN code decodes to a NaN
  tagged with that code, which encoding gives back (copies and bitcasts keep every NaN
  code); any other NaN becomes the format's NaN.
  The tables come from ml_dtypes itself, found once per type by bisection.
"""
from __future__ import annotations

import functools

import numpy as np
from llvmlite import ir

from ..shapes import PrimitiveType

I8, I32, F32 = ir.IntType(8), ir.IntType(32), ir.FloatType()
POSITIVE_INF_BITS = 0x7F800000
NAN_TAG = 0x100           # a decoded NaN carries 0x100 | its code in its payload's low bits


def is_table_float(t: PrimitiveType) -> bool:
    return t.is_float and t.bits <= 8


def is_sub_byte_int(t: PrimitiveType) -> bool:
    return (t.is_signed_int or t.is_unsigned_int) and t.bits < 8


# --------------------------------------------------------------------------- tables (numpy, once per type)

def _encode(dtype, values: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(values, np.float32).astype(dtype).view(np.uint8) & 0xFF


@functools.lru_cache(maxsize=None)
def tables(t: PrimitiveType):
    """(decoded values f32[256], breakpoints u32[2^p], positive codes u8[2^p + 1],
    negative codes u8[2^p + 1], (code of NaN, code of -NaN))."""
    dtype = t.dtype
    mask = (1 << t.bits) - 1
    codes = np.arange(256, dtype=np.uint8) & mask
    with np.errstate(all="ignore"):
        values = codes.view(dtype).astype(np.float32)
    nan_codes = np.isnan(values)   # decoded to quiet NaNs tagged with their code (NAN_TAG)
    sign = np.where(codes.view(dtype).astype(np.float32).view(np.uint32) >> 31 == 1, 0x80000000, 0)
    values[nan_codes] = (sign[nan_codes] | 0x7FC00000 | NAN_TAG | codes[nan_codes]).astype(np.uint32).view(np.float32)
    finite = np.abs(values[np.isfinite(values)])
    seeds = np.unique(np.concatenate([finite.view(np.uint32), [0, POSITIVE_INF_BITS, 1]]).astype(np.int64))
    seeds = np.unique(np.clip(np.concatenate([seeds - 1, seeds, seeds + 1, _midpoints(finite)]), 0,
                              POSITIVE_INF_BITS))
    breaks = np.union1d(_breakpoints(dtype, seeds, 1.0), _breakpoints(dtype, seeds, -1.0))
    size = 1 << int(np.ceil(np.log2(len(breaks) + 1)))
    padded = np.full(size, 0xFFFFFFFF, np.uint32)
    padded[:len(breaks)] = breaks
    starts = np.concatenate([[0], breaks]).astype(np.uint32).view(np.float32)   # one x per step
    step_codes = [np.full(size + 1, 0, np.uint8) for _ in range(2)]
    for table, sign in zip(step_codes, (1.0, -1.0)):
        table[:len(starts)] = _encode(dtype, sign * starts)
    nan = np.array([np.nan, -np.nan], np.float32)
    nan[1] = -np.abs(nan[0])
    return values, padded, step_codes[0], step_codes[1], tuple(int(c) for c in _encode(dtype, nan))


def _midpoints(finite: np.ndarray) -> np.ndarray:
    ordered = np.unique(finite.astype(np.float64))
    middle = ((ordered[1:] + ordered[:-1]) / 2).astype(np.float32).view(np.uint32).astype(np.int64)
    return np.concatenate([middle - 1, middle, middle + 1])


def _breakpoints(dtype, seeds: np.ndarray, sign: float) -> np.ndarray:
    """Every x-bits value b where the code of sign * x changes (the code at b differs from
    the code just below), between consecutive seeds; one change per gap is assumed (seeds
    surround every representable value and midpoint) and checked by the tests."""
    def code(bits):
        return _encode(dtype, sign * np.asarray(bits, np.uint32).view(np.float32))

    seeds = np.asarray(seeds, np.int64)
    at = code(seeds)
    gaps = np.nonzero(at[1:] != at[:-1])[0]
    lo, hi = seeds[gaps], seeds[gaps + 1]
    low_code = at[gaps]
    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        same = code(mid) == low_code
        lo, hi = np.where(same, mid, lo), np.where(same, hi, mid)
    return hi.astype(np.uint32)


# --------------------------------------------------------------------------- LLVM

def _global(module: ir.Module, name: str, array: np.ndarray, element: ir.Type) -> ir.GlobalVariable:
    found = module.globals.get(name)
    if found is not None:
        return found
    ty = ir.ArrayType(element, len(array))
    g = ir.GlobalVariable(module, ty, name=name)
    g.global_constant = True
    g.linkage = "internal"
    g.align = 64
    g.initializer = ir.Constant(ty, [ir.Constant(element, float(v) if element == F32 else int(v)) for v in array])
    return g


def _load(b: ir.IRBuilder, table: ir.GlobalVariable, index, element: ir.Type):
    pointer = b.gep(table, [ir.Constant(ir.IntType(64), 0), index], inbounds=True, source_etype=table.value_type)
    return b.load(pointer, typ=element)


def decode(b: ir.IRBuilder, code, t: PrimitiveType):
    """The f32 value of an element's code (an i8 from memory)."""
    values = tables(t)[0]
    table = _global(b.module, f"hlo.{t.name}.values", values, F32)
    index = b.zext(b.and_(code, ir.Constant(I8, (1 << t.bits) - 1)), ir.IntType(64))
    return _load(b, table, index, F32)


def encode(b: ir.IRBuilder, value, t: PrimitiveType):
    """The i8 code of an f32 value, rounded as ml_dtypes rounds it."""
    _, breaks, positive, negative, (nan_code, negative_nan_code) = tables(t)
    module = b.module
    break_table = _global(module, f"hlo.{t.name}.breaks", breaks, I32)
    codes = [_global(module, f"hlo.{t.name}.codes.{s}", c, I8) for s, c in (("pos", positive), ("neg", negative))]
    bits = b.bitcast(value, I32)
    magnitude = b.and_(bits, ir.Constant(I32, 0x7FFFFFFF))
    count = ir.Constant(ir.IntType(64), 0)
    step = len(breaks) // 2
    while step:
        probe = _load(b, break_table, b.add(count, ir.Constant(ir.IntType(64), step - 1)), I32)
        count = b.select(b.icmp_unsigned("<=", probe, magnitude), b.add(count, ir.Constant(ir.IntType(64), step)),
                         count)
        step //= 2
    negative_x = b.icmp_signed("<", bits, ir.Constant(I32, 0))
    code = b.select(negative_x, _load(b, codes[1], count, I8), _load(b, codes[0], count, I8))
    return b.select(b.fcmp_unordered("uno", value, value), _nan_code(b, bits, negative_x, t), code)


def _nan_code(b: ir.IRBuilder, bits, negative, t: PrimitiveType):
    """The code of a NaN: its own when it came from decoding one of t's NaN codes (so that
    copies and bitcasts keep it), else the format's NaN of that sign."""
    _, _, _, _, (nan_code, negative_nan_code) = tables(t)
    default = b.select(negative, ir.Constant(I8, negative_nan_code), ir.Constant(I8, nan_code))
    # the mantissa below the quiet bit is exactly NAN_TAG | code (arithmetic keeps a NaN's payload)
    tagged = b.icmp_unsigned("==", b.and_(bits, ir.Constant(I32, 0x3FFF00)), ir.Constant(I32, NAN_TAG))
    own = b.trunc(bits, I8)
    own_is_nan = b.fcmp_unordered("uno", decode(b, own, t), decode(b, own, t))
    return b.select(b.and_(tagged, own_is_nan), own, default)


def round_to_table_float(b: ir.IRBuilder, value, t: PrimitiveType):
    """An f32 value rounded to t (its nearest value of t, as f32)."""
    return decode(b, encode(b, value, t), t)
