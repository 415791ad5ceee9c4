"""Tests of the elementwise kernels: hand-computed values and XLA edge cases."""
import math
import struct
import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo.interpreter import numerics
from hlo.interpreter.arithmetic import BINARY, UNARY
from hlo.interpreter.conversions import bitcast_convert, convert, reduce_precision, stochastic_convert
from hlo.interpreter.data_movement import iota
from hlo.interpreter.elementwise import clamp, compare, select
from hlo.shapes import PRIMITIVE_TYPES, Shape, primitive_type

P = primitive_type
NAN, INF = float("nan"), float("inf")
INT_TYPES = [t for t in PRIMITIVE_TYPES.values() if t.is_integral]
FLOAT_TYPES = [t for t in PRIMITIVE_TYPES.values() if t.is_float]
SMALL = settings(max_examples=60, deadline=None)


def A(values, name):
    """An array of HLO type `name` holding `values` (exact for the test values used)."""
    t = P(name)
    if t.is_pred:
        return np.array(values, dtype=bool)
    if t.is_unsigned_int:
        return np.array(values, dtype=np.uint64).astype(t.dtype)
    if t.is_signed_int:
        return np.array(values, dtype=np.int64).astype(t.dtype)
    if t.is_complex:
        return np.array(values, dtype=np.complex128).astype(t.dtype)
    return np.array(values, dtype=np.float64).astype(np.float32 if t.bits < 32 else t.dtype).astype(t.dtype)


def f32_bits(*words):
    return np.array(words, dtype=np.uint32).view(np.float32)


def _same_floats(x, y):
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    nan = np.isnan(x)
    assert np.array_equal(nan, np.isnan(y)), (x, y)
    assert np.array_equal(np.where(nan, 0, x), np.where(nan, 0, y)), (x, y)
    assert np.array_equal(np.signbit(x) | nan, np.signbit(y) | nan), ("signed zeros differ", x, y)


def same(actual, expected):
    """Exact equality: dtype, shape, values, signed zeros; any NaN equals any NaN."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "c":
        _same_floats(actual.real, expected.real)
        _same_floats(actual.imag, expected.imag)
    elif numerics.type_of(actual).is_float:
        _same_floats(actual.astype(np.float64), expected.astype(np.float64))
    else:
        assert np.array_equal(actual, expected), (actual, expected)


def un(op, values, name, result=None):
    return UNARY[op](A(values, name), P(result or name))


def bi(op, x, y, name, result=None):
    return BINARY[op](A(x, name), A(y, name), P(result or name))


# --------------------------------------------------------------------------- dispatch tables


def test_tables_cover_every_elementwise_opcode():
    assert set(UNARY) == {
        "abs", "ceil", "floor", "count-leading-zeros", "popcnt", "imag", "real", "is-finite", "negate",
        "not", "round-nearest-afz", "round-nearest-even", "sign", "copy", "cbrt", "cosine", "sine", "tan",
        "tanh", "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "rsqrt", "sqrt",
        "erf", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"}
    assert set(BINARY) == {
        "add", "subtract", "multiply", "divide", "remainder", "power", "atan2", "complex", "maximum",
        "minimum", "and", "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical"}


FLOAT_UNARY = ["abs", "ceil", "floor", "negate", "round-nearest-afz", "round-nearest-even", "sign", "copy",
               "cbrt", "cosine", "sine", "tan", "tanh", "exponential", "exponential-minus-one", "log",
               "log-plus-one", "logistic", "rsqrt", "sqrt", "erf", "acos", "acosh", "asin", "asinh", "atan",
               "atanh", "cosh", "sinh", "real", "imag"]
INT_UNARY = ["abs", "negate", "sign", "not", "popcnt", "count-leading-zeros", "copy"]


@pytest.mark.parametrize("t", FLOAT_TYPES, ids=str)
def test_every_float_unary_op_runs_on_every_float_type(t):
    x = A([0.5, 1.0, 2.0], "f32").astype(t.dtype)
    for op in FLOAT_UNARY:
        out = UNARY[op](x, t)
        assert out.dtype == t.dtype and out.shape == (3,), op
    assert UNARY["is-finite"](x, P("pred")).dtype == np.bool_
    for op in ["add", "subtract", "multiply", "divide", "remainder", "power", "atan2", "maximum", "minimum"]:
        assert BINARY[op](x, x, t).dtype == t.dtype, op


@pytest.mark.parametrize("t", INT_TYPES, ids=str)
def test_every_int_op_runs_on_every_int_type(t):
    x = A([0, 1], t.name)
    for op in INT_UNARY:
        assert UNARY[op](x, t).dtype == t.dtype, op
    for op in ["add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum", "and",
               "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical"]:
        assert BINARY[op](x, x, t).dtype == t.dtype, op


@pytest.mark.parametrize("op,name", [
    ("ceil", "c64"), ("floor", "s32"), ("round-nearest-afz", "c128"), ("is-finite", "c64"),
    ("cbrt", "c64"), ("erf", "c64"), ("count-leading-zeros", "f32"), ("popcnt", "pred"), ("not", "f32"),
    ("negate", "pred"), ("sqrt", "s32"), ("exponential", "u8"), ("real", "s32")])
def test_unary_rejects_unsupported_types(op, name):
    result = "pred" if op == "is-finite" else name
    with pytest.raises(ValueError):
        UNARY[op](A([1], name), P(result))


@pytest.mark.parametrize("op,name", [
    ("subtract", "pred"), ("divide", "pred"), ("power", "pred"), ("shift-left", "pred"),
    ("remainder", "c64"), ("and", "f32"), ("or", "c64"),
    ("shift-right-logical", "f32"), ("atan2", "s32"), ("complex", "s32"), ("complex", "bf16")])
def test_binary_rejects_unsupported_types(op, name):
    with pytest.raises(ValueError):
        BINARY[op](A([1], name), A([1], name), P(name))


def test_complex_maximum_and_minimum_compare_real_parts_as_xla_cpu():
    # XLA:CPU's results for these pairs: real parts decide, the left operand wins a tie.
    x = np.array([1 + 1j, 1 + 2j, 2 - 1j, np.nan, 3], np.complex64)
    y = np.array([1 + 2j, 1 + 1j, 2 + 1j, 1, 2 + 5j], np.complex64)
    np.testing.assert_array_equal(BINARY["maximum"](x, y, P("c64")), [1 + 1j, 1 + 2j, 2 - 1j, 1, 3])
    np.testing.assert_array_equal(BINARY["minimum"](x, y, P("c64")), [1 + 1j, 1 + 2j, 2 - 1j, 1, 2 + 5j])


def test_result_type_and_operand_type_are_checked():
    with pytest.raises(ValueError):
        UNARY["abs"](A([1 + 1j], "c64"), P("c64"))  # abs of c64 is f32
    with pytest.raises(ValueError):
        BINARY["add"](A([1], "s32"), A([1], "s64"), P("s32"))
    same(UNARY["abs"](A([1], "s32"), "s32"), A([1], "s32"))  # type names are accepted too


# --------------------------------------------------------------------------- integer arithmetic


@pytest.mark.parametrize("name,x,y,expected", [
    ("s8", 127, 1, -128), ("u8", 255, 1, 0), ("s4", 7, 1, -8), ("u4", 15, 1, 0), ("s2", 1, 1, -2),
    ("u2", 3, 2, 1), ("s1", -1, -1, 0), ("u1", 1, 1, 0), ("s64", 2**63 - 1, 1, -2**63), ("u64", 2**64 - 1, 2, 1),
    ("s16", -32768, -1, 32767), ("u32", 2**32 - 1, 2**32 - 1, 2**32 - 2)])
def test_add_wraps(name, x, y, expected):
    same(bi("add", [x], [y], name), A([expected], name))


@pytest.mark.parametrize("name,x,y,expected", [
    ("s8", -128, 1, 127), ("u8", 0, 1, 255), ("s4", -8, 1, 7), ("u4", 0, 1, 15), ("u64", 0, 1, 2**64 - 1)])
def test_subtract_wraps(name, x, y, expected):
    same(bi("subtract", [x], [y], name), A([expected], name))


@pytest.mark.parametrize("name,x,y,expected", [
    ("s32", 65536, 65536, 0), ("s4", 3, 3, -7), ("u4", 5, 5, 9), ("s8", -128, -1, -128),
    ("s64", 2**62, 4, 0), ("u64", 2**63 + 1, 3, 2**63 + 3), ("s2", -2, -1, -2)])
def test_multiply_wraps(name, x, y, expected):
    same(bi("multiply", [x], [y], name), A([expected], name))


def test_integer_divide_edge_cases():
    same(bi("divide", [7, -7, 5, -2**31], [2, 2, 0, -1], "s32"), A([3, -3, -1, -2**31], "s32"))
    same(bi("divide", [7, 0], [0, 0], "u8"), A([255, 255], "u8"))
    same(bi("divide", [-8, 5, -5], [-1, 0, 2], "s4"), A([-8, -1, -2], "s4"))
    same(bi("divide", [-2**63, -2**63, 9], [-1, 2, 0], "s64"), A([-2**63, -2**62, -1], "s64"))
    same(bi("divide", [2**64 - 1, 5], [0, 2], "u64"), A([2**64 - 1, 2], "u64"))
    same(bi("divide", [1], [0], "u1"), A([1], "u1"))


def test_integer_remainder_edge_cases():
    same(bi("remainder", [7, -7, 7, -7], [3, 3, -3, -3], "s32"), A([1, -1, 1, -1], "s32"))
    same(bi("remainder", [5, -5, -128, -128], [0, 0, -1, 3], "s8"), A([5, -5, 0, -2], "s8"))
    same(bi("remainder", [-2**63, 2**63 - 1], [-1, 0], "s64"), A([0, 2**63 - 1], "s64"))
    same(bi("remainder", [7, 200], [0, 7], "u8"), A([7, 4], "u8"))
    same(bi("remainder", [-8, 7], [-1, -2], "s4"), A([0, 1], "s4"))


def test_integer_power():
    same(bi("power", [2, 3, 5], [10, 0, -1], "s32"), A([1024, 1, 0], "s32"))
    # Negative exponents: 1 -> 1, -1 -> +-1 by parity, everything else 0; 0^0 = 1.
    same(bi("power", [1, -1, -1, 2, 0, 0, -2], [-5, -1, -2, -1, -1, 0, 0], "s32"), A([1, -1, 1, 0, 0, 1, 1], "s32"))
    same(bi("power", [2, -2, 3], [31, 31, 4], "s32"), A([-2**31, -2**31, 81], "s32"))
    same(bi("power", [3, 2], [4, 3], "s4"), A([1, -8], "s4"))  # 81 mod 16 = 1; 8 wraps to -8
    same(bi("power", [2, 3, 0], [8, 5, 0], "u8"), A([0, 243, 1], "u8"))
    same(bi("power", [3], [64], "u64"), A([pow(3, 64, 2**64)], "u64"))  # every exponent bit counts


def test_integer_maximum_minimum_respect_signedness():
    same(bi("maximum", [-1, 5, -8], [1, -3, 7], "s8"), A([1, 5, 7], "s8"))
    same(bi("minimum", [-1, 5, -8], [1, -3, 7], "s4"), A([-1, -3, -8], "s4"))
    same(bi("maximum", [255, 0], [1, 3], "u8"), A([255, 3], "u8"))
    same(bi("minimum", [2**64 - 1], [1], "u64"), A([1], "u64"))


def test_bitwise_ops():
    same(bi("and", [0xF0, 0x0F], [0x3C, 0x3C], "u8"), A([0x30, 0x0C], "u8"))
    same(bi("or", [0xF0, 0x01], [0x0F, 0x01], "u8"), A([0xFF, 0x01], "u8"))
    same(bi("xor", [-1, 5], [3, 3], "s8"), A([-4, 6], "s8"))
    same(bi("xor", [-8, 7], [7, -1], "s4"), A([-1, -8], "s4"))
    same(un("not", [5, -1, 0], "s8"), A([-6, 0, -1], "s8"))
    same(un("not", [0, 5], "u4"), A([15, 10], "u4"))
    same(un("not", [0, 1], "u1"), A([1, 0], "u1"))


def test_shifts_saturate_and_read_amounts_unsigned():
    same(bi("shift-left", [1, 1, 1, 3], [3, 7, 8, -1], "s8"), A([8, -128, 0, 0], "s8"))
    same(bi("shift-right-arithmetic", [-8, 8, -8, 8], [1, 1, 40, 40], "s32"), A([-4, 4, -1, 0], "s32"))
    same(bi("shift-right-arithmetic", [-8, -8], [-1, 2**31 - 1], "s32"), A([-1, -1], "s32"))
    same(bi("shift-right-logical", [-128, 64, 1], [7, 1, 9], "s8"), A([1, 32, 0], "s8"))
    same(bi("shift-right-arithmetic", [0x80, 0x40, 0x80], [1, 1, 8], "u8"), A([0xC0, 0x20, 0xFF], "u8"))
    same(bi("shift-right-logical", [2**64 - 1, 2**63], [63, 64], "u64"), A([1, 0], "u64"))
    same(bi("shift-left", [1, 1], [63, 64], "s64"), A([-2**63, 0], "s64"))
    same(bi("shift-right-arithmetic", [-2**63], [63], "s64"), A([-1], "s64"))
    same(bi("shift-left", [1, 1, 1], [3, 4, -1], "s4"), A([-8, 0, 0], "s4"))
    same(bi("shift-right-arithmetic", [-8, -8, 7], [2, 5, 5], "s4"), A([-2, -1, 0], "s4"))
    same(bi("shift-right-logical", [-8, 15], [1, 4], "s4"), A([4, 0], "s4"))


def test_integer_unary_ops():
    same(un("abs", [-3, 0, 7, -128], "s8"), A([3, 0, 7, -128], "s8"))  # abs(INT_MIN) wraps
    same(un("abs", [-8, -1], "s4"), A([-8, 1], "s4"))
    same(un("abs", [255], "u8"), A([255], "u8"))
    same(un("negate", [1, -128, 0], "s8"), A([-1, -128, 0], "s8"))
    same(un("negate", [1, 0], "u8"), A([255, 0], "u8"))
    same(un("negate", [-8, 3], "s4"), A([-8, -3], "s4"))
    same(un("sign", [-5, 0, 7, -2**31], "s32"), A([-1, 0, 1, -1], "s32"))
    same(un("sign", [-8, 0, 7], "s4"), A([-1, 0, 1], "s4"))
    same(un("sign", [0, 200], "u8"), A([0, 1], "u8"))
    same(un("copy", [1, 2], "s16"), A([1, 2], "s16"))


def test_popcnt_and_clz_per_width():
    same(un("popcnt", [-1, 0, 7], "s8"), A([8, 0, 3], "s8"))
    same(un("popcnt", [7, 2**32 - 1], "u32"), A([3, 32], "u32"))
    same(un("popcnt", [-1, 2**63 - 1], "s64"), A([64, 63], "s64"))
    same(un("popcnt", [-1, 5], "s4"), A([4, 2], "s4"))
    same(un("popcnt", [3], "u2"), A([2], "u2"))
    same(un("popcnt", [-1], "s2"), A([-2], "s2"))  # 2 does not fit in s2: wraps like LLVM's i2 ctpop
    same(un("count-leading-zeros", [0, 1, -1, 256], "s32"), A([32, 31, 0, 23], "s32"))
    same(un("count-leading-zeros", [1, 0, 128], "u8"), A([7, 8, 0], "u8"))
    same(un("count-leading-zeros", [0, 1, -1, 7], "s4"), A([4, 3, 0, 1], "s4"))
    same(un("count-leading-zeros", [0, 1, 2**63], "u64"), A([64, 63, 0], "u64"))
    same(un("count-leading-zeros", [0, 1], "u1"), A([1, 0], "u1"))


def test_pred_arithmetic_is_logic():
    x, y = [False, False, True, True], [False, True, False, True]
    same(bi("add", x, y, "pred"), A([False, True, True, True], "pred"))
    same(bi("multiply", x, y, "pred"), A([False, False, False, True], "pred"))
    same(bi("maximum", x, y, "pred"), A([False, True, True, True], "pred"))
    same(bi("minimum", x, y, "pred"), A([False, False, False, True], "pred"))
    same(bi("and", x, y, "pred"), A([False, False, False, True], "pred"))
    same(bi("or", x, y, "pred"), A([False, True, True, True], "pred"))
    same(bi("xor", x, y, "pred"), A([False, True, True, False], "pred"))
    same(un("not", [True, False], "pred"), A([False, True], "pred"))


# --------------------------------------------------------------------------- float arithmetic


@pytest.mark.parametrize("name", ["f32", "f64", "bf16", "f16"])
def test_maximum_minimum_propagate_nan_and_order_zeros(name):
    same(bi("maximum", [1, NAN, -0.0, 0.0, -0.0, 3], [2, 0, 0.0, -0.0, -0.0, NAN], name),
         A([2, NAN, 0.0, 0.0, -0.0, NAN], name))
    same(bi("minimum", [1, NAN, -0.0, 0.0, 0.0, -INF], [2, 0, 0.0, -0.0, 0.0, NAN], name),
         A([1, NAN, -0.0, -0.0, 0.0, NAN], name))


def test_float_add_subtract_multiply_divide_ieee():
    same(bi("add", [1, INF, -0.0, -0.0], [2.5, -INF, -0.0, 0.0], "f32"), A([3.5, NAN, -0.0, 0.0], "f32"))
    same(bi("subtract", [1, INF], [0.5, INF], "f64"), A([0.5, NAN], "f64"))
    same(bi("multiply", [-0.0, INF, 3], [5, 0, 0.5], "f32"), A([-0.0, NAN, 1.5], "f32"))
    same(bi("divide", [1, -1, 0, 1, 7], [0, 0, 0, -0.0, 2], "f32"), A([INF, -INF, NAN, -INF, 3.5], "f32"))


def test_float_remainder_is_fmod():
    same(bi("remainder", [-5.5, 5.5, 1, INF, 3.25], [2, -2, 0, 2, INF], "f32"), A([-1.5, 1.5, NAN, NAN, 3.25], "f32"))
    same(bi("remainder", [-0.0, 7], [3, 7], "f64"), A([-0.0, 0.0], "f64"))


def test_float_power_follows_c_pow():
    same(bi("power", [2, NAN, 1, -8, 0, -0.0, -INF, 4], [10, 0, NAN, 1 / 3, -1, -1, 0.5, 0.5], "f32"),
         A([1024, 1, 1, NAN, INF, -INF, INF, 2], "f32"))


def test_atan2_follows_c():
    same(bi("atan2", [1, -1, 0.0, -0.0, 0.0, -0.0, INF, -1], [1, 0, -0.0, 0.0, 0.0, -0.0, -INF, INF], "f64"),
         A([math.pi / 4, -math.pi / 2, math.pi, -0.0, 0.0, -math.pi, 3 * math.pi / 4, -0.0], "f64"))
    same(bi("atan2", [1], [1], "f32"), A([math.atan2(1, 1)], "f32"))
    same(bi("atan2", [NAN], [1], "f32"), A([NAN], "f32"))


def test_rounding_ops():
    xs = [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, -0.4, 0.49999999999999994, 2.0**52 + 1, NAN, -INF]
    same(un("round-nearest-afz", xs, "f64"), A([-3, -2, -1, 1, 2, 3, -0.0, 0, 2.0**52 + 1, NAN, -INF], "f64"))
    same(un("round-nearest-even", xs, "f64"), A([-2, -2, -0.0, 0, 2, 2, -0.0, 0, 2.0**52 + 1, NAN, -INF], "f64"))
    same(un("round-nearest-afz", [-2.5, 0.5, 1.5], "bf16"), A([-3, 1, 2], "bf16"))
    same(un("ceil", [-1.5, 0.2, 3, -0.5, -0.0, INF], "f32"), A([-1, 1, 3, -0.0, -0.0, INF], "f32"))
    same(un("floor", [-1.5, 0.2, 3, -0.5, -0.0, NAN], "f32"), A([-2, 0, 3, -1, -0.0, NAN], "f32"))


def test_sign_abs_negate_on_floats():
    same(un("sign", [-3, -0.0, 0.0, 2, NAN, -INF], "f32"), A([-1, -0.0, 0.0, 1, NAN, -1], "f32"))
    same(un("abs", [-0.0, -INF, -2, NAN], "f16"), A([0.0, INF, 2, NAN], "f16"))
    same(un("negate", [0.0, -1, INF], "bf16"), A([-0.0, 1, -INF], "bf16"))
    assert not np.signbit(un("negate", [0.0], "f8e4m3fnuz").astype(np.float32))[0]  # fnuz has no -0
    same(un("is-finite", [NAN, 7, NAN, -1, INF, -INF], "f32", "pred"), A([0, 1, 0, 1, 0, 0], "pred"))
    same(un("is-finite", [NAN, 448], "f8e4m3fn", "pred"), A([0, 1], "pred"))


def test_transcendental_special_values():
    same(un("exponential", [0, -INF, INF, 1000], "f32"), A([1, 0, INF, INF], "f32"))
    same(un("log", [1, 0, -1, INF], "f32"), A([0, -INF, NAN, INF], "f32"))
    same(un("log-plus-one", [0, -1, -2, -0.0], "f64"), A([0, -INF, NAN, -0.0], "f64"))
    same(un("exponential-minus-one", [0, -INF, -0.0], "f64"), A([0, -1, -0.0], "f64"))
    same(un("sqrt", [-0.0, 4, -1, INF], "f32"), A([-0.0, 2, NAN, INF], "f32"))
    same(un("rsqrt", [0.0, -0.0, INF, 4, -4], "f32"), A([INF, -INF, 0, 0.5, NAN], "f32"))
    same(un("cbrt", [-8, 27, -0.0, -INF], "f32"), A([-2, 3, -0.0, -INF], "f32"))
    same(un("tanh", [INF, -INF, 0], "f32"), A([1, -1, 0], "f32"))
    same(un("erf", [0, INF, -INF, NAN], "f32"), A([0, 1, -1, NAN], "f32"))
    same(un("cosine", [0, INF], "f32"), A([1, NAN], "f32"))
    same(un("sine", [-0.0, INF], "f32"), A([-0.0, NAN], "f32"))
    same(un("tan", [0], "f32"), A([0], "f32"))
    same(un("cosh", [0, INF, -INF], "f32"), A([1, INF, INF], "f32"))
    same(un("sinh", [0, -INF], "f32"), A([0, -INF], "f32"))
    same(un("acos", [1, 2], "f64"), A([0, NAN], "f64"))
    same(un("acosh", [1, 0.5], "f64"), A([0, NAN], "f64"))
    same(un("asin", [1], "f64"), A([math.pi / 2], "f64"))
    same(un("asinh", [0], "f64"), A([0], "f64"))
    same(un("atan", [1, INF], "f64"), A([math.pi / 4, math.pi / 2], "f64"))
    same(un("atanh", [0, 1, 2], "f64"), A([0, INF, NAN], "f64"))


def test_f32_transcendentals_are_rounded_from_double():
    same(un("exponential", [1], "f32"), A([math.e], "f32"))
    same(un("sine", [1], "f32"), A([math.sin(1)], "f32"))
    same(un("erf", [0.5], "f32"), A([math.erf(0.5)], "f32"))
    same(un("logistic", [0, 2, -2], "f32"), A([0.5, 1 / (1 + math.exp(-2)), 1 / (1 + math.exp(2))], "f32"))
    same(un("logistic", [-1000, 1000, NAN, -INF], "f32"), A([0, 1, NAN, 0], "f32"))


def test_narrow_floats_compute_in_f32_and_round_once():
    # bf16 spacing at 1 is 2^-7: 1 + 2^-8 is a tie (-> 1), 1 + 3*2^-8 is a tie (-> even 1 + 2^-6).
    same(bi("add", [1, 1], [2.0**-8, 3 * 2.0**-8], "bf16"), A([1, 1 + 2.0**-6], "bf16"))
    same(un("exponential", [1], "bf16"), A([2.71875], "bf16"))
    same(bi("add", [60000], [10000], "f16"), A([INF], "f16"))
    same(bi("add", [448, 448], [64, 16], "f8e4m3fn"), A([NAN, 448], "f8e4m3fn"))  # no inf: overflow is NaN
    same(bi("multiply", [57344], [2], "f8e5m2"), A([INF], "f8e5m2"))
    same(un("sqrt", [2], "f8e4m3fn"), A([1.375], "f8e4m3fn"))
    same(bi("add", [1, 2], [2, 2], "f8e8m0fnu"), A([4, 4], "f8e8m0fnu"))  # 3 rounds to 4
    same(bi("add", [1.5], [0.5], "f4e2m1fn"), A([2], "f4e2m1fn"))


def test_denormals_are_not_flushed():
    tiny = f32_bits(1)  # smallest f32 subnormal
    same(bi("add", tiny, tiny, "f32"), f32_bits(2))
    same(bi("multiply", A([2.0**-126], "f32"), A([0.5], "f32"), "f32"), A([2.0**-127], "f32"))
    same(un("abs", [-(2.0**-24)], "f16"), A([2.0**-24], "f16"))


# --------------------------------------------------------------------------- complex


def test_complex_arithmetic_and_components():
    x, y = A([1 + 2j, 3 - 1j], "c64"), A([2 - 1j, 0 + 1j], "c64")
    same(BINARY["add"](x, y, P("c64")), A([3 + 1j, 3 + 0j], "c64"))
    same(BINARY["multiply"](x, y, P("c64")), A([4 + 3j, 1 + 3j], "c64"))
    same(BINARY["divide"](A([4 + 3j], "c128"), A([2 - 1j], "c128"), P("c128")), A([1 + 2j], "c128"))
    same(un("abs", [3 + 4j, -2j], "c64", "f32"), A([5, 2], "f32"))
    same(un("real", [1 + 2j, 3 - 4j], "c64", "f32"), A([1, 3], "f32"))
    same(un("imag", [1 + 2j, 3 - 4j], "c128", "f64"), A([2, -4], "f64"))
    same(un("real", [1.5], "f32"), A([1.5], "f32"))
    same(un("imag", [1.5], "bf16"), A([0], "bf16"))
    same(un("sign", [3 + 4j, 0j], "c64"), A([0.6 + 0.8j, 0j], "c64"))
    same(un("negate", [1 - 2j], "c64"), A([-1 + 2j], "c64"))
    same(un("sqrt", [-4 + 0j], "c128"), A([2j], "c128"))
    same(un("log", [-1 + 0j], "c128"), A([math.pi * 1j], "c128"))


def test_complex_transcendentals():
    np.testing.assert_allclose(un("exponential", [math.pi * 1j], "c128"), [-1 + 0j], atol=1e-15)
    np.testing.assert_allclose(un("exponential-minus-one", [1e-10 + 1e-10j], "c128"), [1e-10 + 1e-10j], rtol=1e-9)
    np.testing.assert_allclose(un("log-plus-one", [1e-10j], "c128"), [1e-20 / 2 + 1e-10j], rtol=1e-9)
    np.testing.assert_allclose(un("rsqrt", [-4 + 0j], "c64"), [-0.5j], atol=1e-7)
    np.testing.assert_allclose(un("logistic", [0j], "c64"), [0.5 + 0j])
    np.testing.assert_allclose(un("tanh", [1 + 0j], "c64"), [math.tanh(1)], rtol=1e-6)
    for op in ["cosine", "sine", "tan", "acos", "acosh", "asin", "asinh", "atan", "atanh", "cosh", "sinh"]:
        assert un(op, [0.5 + 0.25j], "c64").dtype == np.complex64, op


def test_complex_power_and_atan2():
    same(bi("power", [2 + 0j, 1 + 0j, NAN + 0j, INF + 0j, INF + 0j], [2 + 0j, NAN + 0j, 0j, 2 + 0j, -1 + 0j], "c128"),
         A([4 + 0j, 1 + 0j, 1 + 0j, INF + 0j, 0j], "c128"))
    np.testing.assert_allclose(bi("atan2", [1 + 0j], [1 + 0j], "c128"), [math.pi / 4 + 0j], atol=1e-15)


def test_complex_op_builds_complex_from_parts():
    same(BINARY["complex"](A([1, 0, INF], "f32"), A([2, -1, 0], "f32"), P("c64")), A([1 + 2j, complex(0, -1), INF + 0j], "c64"))
    with pytest.raises(ValueError):
        BINARY["complex"](A([1], "f32"), A([1], "f32"), P("c128"))


# --------------------------------------------------------------------------- compare


def test_compare_float_all_directions():
    x, y = A([1, NAN, -0.0, 2, NAN], "f32"), A([2, NAN, 0.0, 2, 1], "f32")
    expected = {"EQ": [0, 0, 1, 1, 0], "NE": [1, 1, 0, 0, 1], "LT": [1, 0, 0, 0, 0],
                "LE": [1, 0, 1, 1, 0], "GT": [0, 0, 0, 0, 0], "GE": [0, 0, 1, 1, 0]}
    for direction, want in expected.items():
        same(compare(x, y, direction), A(want, "pred"))
        same(compare(x, y, direction, "FLOAT"), A(want, "pred"))


@pytest.mark.parametrize("name", ["f32", "f64", "bf16", "f16", "f8e5m2", "f8e4m3"])
def test_compare_totalorder(name):
    t = P(name)
    neg_nan = -np.abs(A([NAN], "f32"))  # sign bit set
    ordered = np.concatenate([neg_nan, A([-INF, -1, -0.0, 0.0, 1, INF, NAN], "f32")]).astype(t.dtype)
    x, y = np.repeat(ordered, len(ordered)), np.tile(ordered, len(ordered))
    i, j = np.repeat(np.arange(8), 8), np.tile(np.arange(8), 8)
    for direction, op in [("LT", np.less), ("LE", np.less_equal), ("GT", np.greater), ("GE", np.greater_equal),
                          ("EQ", np.equal), ("NE", np.not_equal)]:
        same(compare(x, y, direction, "TOTALORDER"), op(i, j))


def test_compare_totalorder_spec_example_and_e8m0():
    same(compare(A([1, NAN, -0.0], "f32"), A([2, NAN, 0.0], "f32"), "LT", "TOTALORDER"), A([1, 0, 1], "pred"))
    same(compare(A([0.5, 4, NAN], "f8e8m0fnu"), A([1, 2, 2.0**127], "f8e8m0fnu"), "LT", "TOTALORDER"),
         A([1, 0, 0], "pred"))


def test_compare_integer_default_types():
    same(compare(A([-1, 5], "s8"), A([1, 5], "s8"), "LT"), A([1, 0], "pred"))
    same(compare(A([255, 5], "u8"), A([1, 5], "u8"), "GT"), A([1, 0], "pred"))
    same(compare(A([-8, 7], "s4"), A([7, -8], "s4"), "LT"), A([1, 0], "pred"))
    same(compare(A([15, 0], "u4"), A([0, 15], "u4"), "GE"), A([1, 0], "pred"))
    same(compare(A([False, True], "pred"), A([True, True], "pred"), "LT"), A([1, 0], "pred"))
    same(compare(A([2**64 - 1], "u64"), A([0], "u64"), "GT", "UNSIGNED"), A([1], "pred"))
    same(compare(A([-2**63], "s64"), A([2**63 - 1], "s64"), "LT", "SIGNED"), A([1], "pred"))


def test_compare_complex_and_bad_requests():
    x, y = A([1 + 2j, 1 + 2j, NAN], "c64"), A([1 + 2j, 1 - 2j, NAN], "c64")
    same(compare(x, y, "EQ"), A([1, 0, 0], "pred"))
    same(compare(x, y, "NE"), A([0, 1, 1], "pred"))
    for bad in [lambda: compare(x, y, "LT"), lambda: compare(A([1], "s32"), A([1], "s32"), "LT", "TOTALORDER"),
                lambda: compare(A([1], "f32"), A([1], "f32"), "LT", "SIGNED"),
                lambda: compare(A([1], "f32"), A([1], "f32"), "XX"),
                lambda: compare(A([1], "f32"), A([1], "f64"), "EQ")]:
        with pytest.raises(ValueError):
            bad()


# --------------------------------------------------------------------------- select / clamp


def test_select():
    same(select(A([1, 0, 0, 1], "pred"), A([1, 2, 3, 4], "s32"), A([100, 200, 300, 400], "s32")),
         A([1, 200, 300, 4], "s32"))
    same(select(A(True, "pred"), A([1, 2], "bf16"), A([3, 4], "bf16")), A([1, 2], "bf16"))
    with pytest.raises(ValueError):
        select(A([1], "s32"), A([1], "s32"), A([2], "s32"))


def test_clamp():
    same(clamp(A(0, "s32"), A([-1, 5, 9], "s32"), A(6, "s32")), A([0, 5, 6], "s32"))
    same(clamp(A([0, 0, 5], "u8"), A([3, 9, 1], "u8"), A([2, 4, 2], "u8")), A([2, 4, 2], "u8"))  # lo > hi -> hi
    same(clamp(A(-1, "f32"), A([NAN, -5, 0.5, 5], "f32"), A(1, "f32")), A([NAN, -1, 0.5, 1], "f32"))
    same(clamp(A([NAN, 0], "f32"), A([0.5, 0.5], "f32"), A([1, NAN], "f32")), A([NAN, NAN], "f32"))
    same(clamp(A(0.0, "f32"), A([-0.0], "f32"), A(1, "f32")), A([0.0], "f32"))
    same(clamp(A(-1, "bf16"), A([3], "bf16"), A(2, "bf16")), A([2], "bf16"))
    same(clamp(A(-2, "s4"), A([-8, 7], "s4"), A(3, "s4")), A([-2, 3], "s4"))
    same(clamp(A(False, "pred"), A([True, False], "pred"), A(True, "pred")), A([True, False], "pred"))
    # complex: XLA:CPU's real-part maximum and minimum
    same(clamp(A([0j, 0j], "c64"), A([1j, 5], "c64"), A([2j, 3], "c64")), A([0j, 3], "c64"))


# --------------------------------------------------------------------------- convert


def test_convert_float_to_int_truncates_and_saturates():
    same(convert(A([-1.7, 2.9, 300, NAN], "f32"), "f32", "s8"), A([-1, 2, 127, 0], "s8"))
    same(convert(A([3e9, -3e9, INF, -INF, NAN, -0.9], "f32"), "f32", "s32"),
         A([2**31 - 1, -2**31, 2**31 - 1, -2**31, 0, 0], "s32"))
    same(convert(A([-1, 300, 255.9, NAN], "f32"), "f32", "u8"), A([0, 255, 255, 0], "u8"))
    same(convert(A([2.0**63, -(2.0**63), 2.0**62, 1e300], "f64"), "f64", "s64"),
         A([2**63 - 1, -2**63, 2**62, 2**63 - 1], "s64"))
    same(convert(A([2.0**64, 2.0**63, -1], "f32"), "f32", "u64"), A([2**64 - 1, 2**63, 0], "u64"))
    same(convert(A([10, -10, 3.5], "f32"), "f32", "s4"), A([7, -8, 3], "s4"))
    same(convert(A([0.5, 1.7, 5, -1], "f32"), "f32", "u1"), A([0, 1, 1, 0], "u1"))
    same(convert(A([65504, -65504], "f16"), "f16", "s16"), A([32767, -32768], "s16"))
    same(convert(A([448, NAN], "f8e4m3fn"), "f8e4m3fn", "u8"), A([255, 0], "u8"))


def test_convert_int_to_float_rounds_to_nearest_even():
    same(convert(A([16777217, 16777219, -3], "s32"), "s32", "f32"), A([16777216, 16777220, -3], "f32"))
    same(convert(A([2**53 + 1], "s64"), "s64", "f64"), A([2.0**53], "f64"))
    same(convert(A([2**64 - 1], "u64"), "u64", "f32"), A([2.0**64], "f32"))
    same(convert(A([257, 70000], "s32"), "s32", "bf16"), A([256, 70144], "bf16"))
    same(convert(A([70000], "s32"), "s32", "f16"), A([INF], "f16"))
    same(convert(A([17, 1000], "s32"), "s32", "f8e4m3fn"), A([16, NAN], "f8e4m3fn"))
    same(convert(A([-8, 7], "s4"), "s4", "f32"), A([-8, 7], "f32"))


def test_convert_int_to_int_wraps_and_extends():
    same(convert(A([300, -1, 128], "s32"), "s32", "s8"), A([44, -1, -128], "s8"))
    same(convert(A([-1], "s32"), "s32", "u8"), A([255], "u8"))
    same(convert(A([255], "u8"), "u8", "s8"), A([-1], "s8"))
    same(convert(A([-1], "s8"), "s8", "u32"), A([2**32 - 1], "u32"))  # sign extension first
    same(convert(A([200], "u8"), "u8", "s32"), A([200], "s32"))
    same(convert(A([7, 8, 17, -9], "s32"), "s32", "s4"), A([7, -8, 1, 7], "s4"))
    same(convert(A([-1, -8], "s4"), "s4", "u4"), A([15, 8], "u4"))
    same(convert(A([-8], "s4"), "s4", "s64"), A([-8], "s64"))
    same(convert(A([15], "u4"), "u4", "s4"), A([-1], "s4"))
    same(convert(A([2**64 - 1], "u64"), "u64", "s64"), A([-1], "s64"))
    same(convert(A([3], "u2"), "u2", "s1"), A([-1], "s1"))


def test_convert_pred():
    same(convert(A([0, -0.0, 0.5, NAN, INF], "f32"), "f32", "pred"), A([0, 0, 1, 1, 1], "pred"))
    same(convert(A([0, -3, 256], "s32"), "s32", "pred"), A([0, 1, 1], "pred"))
    same(convert(A([True, False], "pred"), "pred", "f32"), A([1, 0], "f32"))
    same(convert(A([True, False], "pred"), "pred", "s4"), A([1, 0], "s4"))
    same(convert(A([True], "pred"), "pred", "c64"), A([1 + 0j], "c64"))


def test_convert_float_to_float_rounding():
    same(convert(A([1 + 2.0**-8, 1 + 3 * 2.0**-8, 1 + 2.0**-8 + 2.0**-20, 3.4e38], "f32"), "f32", "bf16"),
         A([1, 1 + 2.0**-6, 1 + 2.0**-7, INF], "bf16"))
    same(convert(A([448, 464, 480, 500, INF, -INF, NAN, 1.0625, 1.1875, 2.0**-9, 2.0**-11], "f32"), "f32", "f8e4m3fn"),
         A([448, 448, NAN, NAN, NAN, NAN, NAN, 1, 1.25, 2.0**-9, 0], "f8e4m3fn"))
    same(convert(A([1e6, NAN, 57344, 61440], "f32"), "f32", "f8e5m2"), A([INF, NAN, 57344, INF], "f8e5m2"))
    assert convert(A([-0.0, INF, 1e6], "f32"), "f32", "f8e4m3fnuz").view(np.uint8).tolist() == [0, 0x80, 0x80]
    same(convert(A([1e-7], "f32"), "f32", "f16"), A([2.0**-23], "f16"))  # subnormal result kept
    same(convert(A([1e300, 1 / 3], "f64"), "f64", "f32"), np.array([INF, np.float32(1 / 3)], np.float32))
    same(convert(A([1 + 2.0**-8 + 2.0**-40], "f64"), "f64", "bf16"), A([1], "bf16"))  # via f32, like XLA literals
    same(convert(A([65504], "f16"), "f16", "bf16"), A([65536], "bf16"))
    same(convert(A([2.0**-133], "bf16"), "bf16", "f32"), A([2.0**-133], "f32"))
    same(convert(A([0.5, 4], "f8e8m0fnu"), "f8e8m0fnu", "f4e2m1fn"), A([0.5, 4], "f4e2m1fn"))
    same(convert(A([7, 100], "f32"), "f32", "f4e2m1fn"), A([6, 6], "f4e2m1fn"))  # saturating type
    same(convert(A([3, 0.75], "f32"), "f32", "f8e8m0fnu"), A([4, 1], "f8e8m0fnu"))


def test_convert_complex():
    same(convert(A([1.5 + 2j, -2.7 - 1j], "c64"), "c64", "f32"), A([1.5, -2.7], "f32"))
    same(convert(A([1.5 + 2j, -2.7 - 1j], "c64"), "c64", "s32"), A([1, -2], "s32"))
    same(convert(A([0 + 2j, 1j * 0 + 1], "c64"), "c64", "pred"), A([0, 1], "pred"))  # real part only
    same(convert(A([1.5, -0.0], "f32"), "f32", "c64"), np.array([1.5, complex(-0.0, 0)], np.complex64))
    same(convert(A([7], "s32"), "s32", "c128"), A([7 + 0j], "c128"))
    same(convert(A([1 / 3 + 1e300j], "c128"), "c128", "c64"), np.array([np.complex64(complex(np.float32(1 / 3), INF))]))
    same(convert(A([1.5], "bf16"), "bf16", "c64"), A([1.5 + 0j], "c64"))


def test_convert_checks_operand_type():
    with pytest.raises(ValueError):
        convert(A([1], "s32"), "f32", "s8")
    same(convert(A([1, 2], "s8"), "s8", "s8"), A([1, 2], "s8"))


# --------------------------------------------------------------------------- bitcast-convert


def test_bitcast_convert_examples():
    same(bitcast_convert(A(1.0, "f32"), "f32", "s32"), A(1065353216, "s32"))
    same(bitcast_convert(A([1.0], "f32"), "f32", "u8"), A([[0, 0, 128, 63]], "u8"))
    same(bitcast_convert(A([0, 0, 128, 63], "u8"), "u8", "f32"), A(1.0, "f32"))
    same(bitcast_convert(A([0x0000000200000001], "u64"), "u64", "u32"), A([[1, 2]], "u32"))
    same(bitcast_convert(A([[1, 2], [3, 4]], "u32"), "u32", "u64"), A([2**33 + 1, 2**34 + 3], "u64"))
    same(bitcast_convert(A(1.0, "f32"), "f32", "f16"), A([0, 1.875], "f16"))
    same(bitcast_convert(A([-1], "s8"), "s8", "u8"), A([255], "u8"))
    same(bitcast_convert(A([0, 2, 1], "u8"), "u8", "pred"), A([0, 1, 1], "pred"))
    same(bitcast_convert(A([True, False], "pred"), "pred", "s8"), A([1, 0], "s8"))
    halves = bitcast_convert(A([1 + 2j], "c128"), "c128", "c64")
    assert halves.shape == (1, 2) and halves.dtype == np.complex64
    same(bitcast_convert(halves, "c64", "c128"), A([1 + 2j], "c128"))
    same(bitcast_convert(A(np.zeros((0, 2)), "u32"), "u32", "u64"), A(np.zeros(0), "u64"))


def test_bitcast_convert_sub_byte_packing_is_little_endian():
    same(bitcast_convert(A([0x12], "u8"), "u8", "s4"), A([[2, 1]], "s4"))
    same(bitcast_convert(A([[-1, 1]], "s4"), "s4", "u8"), A([0x1F], "u8"))
    same(bitcast_convert(A([0b11100100], "u8"), "u8", "u2"), A([[0, 1, 2, 3]], "u2"))
    same(bitcast_convert(A([1, 0, 0, 0, 0, 0, 0, 1], "u1"), "u1", "u8"), A(0x81, "u8"))
    same(bitcast_convert(A(0x21, "u8"), "u8", "f4e2m1fn"), A([0.5, 1.0], "f4e2m1fn"))
    same(bitcast_convert(A([-8, 7], "s4"), "s4", "u4"), A([8, 7], "u4"))
    same(bitcast_convert(A([6.0, -0.0], "f4e2m1fn"), "f4e2m1fn", "s4"), A([7, -8], "s4"))
    same(bitcast_convert(A([0xF] * 16, "u4"), "u4", "s64"), A(-1, "s64"))


@pytest.mark.parametrize("frm,to,shape", [("f64", "c64", (2,)), ("c64", "f64", (1,)), ("u8", "f32", (3,)),
                                          ("u8", "f32", ()), ("s4", "u8", (3,)), ("f8e4m3fn", "u16", (4, 3)),
                                          ("f4e2m1fn", "u8", (3,)), ("s2", "u8", (2,))])
def test_bitcast_convert_rejects_bad_requests(frm, to, shape):
    with pytest.raises(ValueError):
        bitcast_convert(np.zeros(shape, dtype=P(frm).dtype), frm, to)


def test_bitcast_convert_checks_operand_dtype_and_scalars_gain_a_dim():
    with pytest.raises(ValueError):
        bitcast_convert(np.zeros(2, np.int16), "u8", "s8")
    assert bitcast_convert(A(0, "f32"), "f32", "u8").shape == (4,)
    assert bitcast_convert(A(0, "u8"), "u8", "u4").shape == (2,)


_BITCAST_TYPES = [t for t in PRIMITIVE_TYPES.values() if t.is_array_type]


def _bitcast_pairs():
    pairs = []
    for a in _BITCAST_TYPES:
        for b in _BITCAST_TYPES:
            wide, narrow = max(a.bits, b.bits), min(a.bits, b.bits)
            if a.is_complex == b.is_complex and wide % narrow == 0 and not a.is_pred and not b.is_pred:
                pairs.append((a, b))
    return pairs


def _raw_bits(x, t):
    """Bit patterns as Python-comparable uint8 bytes (complex) or uint64."""
    if t.is_complex:
        return np.ascontiguousarray(x).view(np.uint8)
    return numerics.bit_patterns(x, t)


@SMALL
@given(pair=st.sampled_from(_bitcast_pairs()), seed=st.integers(0, 2**32 - 1), n=st.integers(0, 3))
def test_bitcast_convert_round_trips(pair, seed, n):
    a, b = pair
    rng = np.random.default_rng(seed)
    ratio = b.bits // a.bits if b.bits > a.bits else 1
    shape = (n, ratio) if b.bits > a.bits else (n,)
    if a.is_complex:
        raw = rng.integers(0, 256, size=int(np.prod(shape)) * a.bits // 8, dtype=np.uint8)
        x = raw.view(a.dtype).reshape(shape)
    else:
        patterns = (rng.integers(0, 2**63, size=shape, dtype=np.uint64) * 2
                    + rng.integers(0, 2, size=shape, dtype=np.uint64))
        x = numerics.from_bit_patterns(patterns, a)
    y = bitcast_convert(x, a, b)
    back = bitcast_convert(y, b, a)
    assert back.shape == x.shape and back.dtype == x.dtype
    assert np.array_equal(_raw_bits(back, a), _raw_bits(x, a))


# --------------------------------------------------------------------------- reduce-precision


def test_reduce_precision_spec_examples():
    same(reduce_precision(A([3.14159, 1 + 2.0**-11, 1 + 3 * 2.0**-11], "f32"), 8, 10),
         A([3.140625, 1.0, 1.001953125], "f32"))
    same(reduce_precision(A([70000, 1e-5, 6.1e-5, -70000, 65504], "f32"), 5, 10), A([INF, 0, 0, -INF, 65504], "f32"))


def test_reduce_precision_bit_patterns():
    out = reduce_precision(f32_bits(0x3F808000, 0x3F818000, 0x3F808001, 0x7F7FFFFF, 0x3F800FFF), 8, 7)
    assert out.view(np.uint32).tolist() == [0x3F800000, 0x3F820000, 0x3F810000, 0x7F800000, 0x3F800000]
    nan_payload = f32_bits(0x7FC00001, 0xFFC00000)
    assert reduce_precision(nan_payload, 5, 10).view(np.uint32).tolist() == [0x7FC00001, 0xFFC00000]
    assert reduce_precision(nan_payload, 5, 0).view(np.uint32).tolist() == [0x7F800000, 0x7F800000]
    same(reduce_precision(A([1, 2, -3, -1, 1.5], "f32"), 1, 23), A([0, INF, -INF, -0.0, 0], "f32"))
    # m=0: the last kept bit is the exponent's lowest bit, so 1.5 (odd exponent) rounds up, 3 (even) down.
    same(reduce_precision(A([1.75, 1.25, 1.5, 3], "f32"), 8, 0), A([2, 1, 2, 2], "f32"))


def test_reduce_precision_other_types():
    same(reduce_precision(A([1 / 3, 1e-40, 1e39], "f64"), 8, 23), A([float(np.float32(1 / 3)), 0, INF], "f64"))
    same(reduce_precision(A([1.125, 1.375, 1.25], "bf16"), 5, 2), A([1, 1.5, 1.25], "bf16"))
    same(reduce_precision(A([2.0**-24, 1.5], "f16"), 5, 10), A([0, 1.5], "f16"))  # no subnormals
    same(reduce_precision(A([2.0**-24], "f16"), 8, 10), A([2.0**-24], "f16"))
    with pytest.raises(ValueError):
        reduce_precision(A([1], "f32"), 0, 3)
    with pytest.raises(ValueError):
        reduce_precision(A([1], "s32"), 8, 7)


@SMALL
@given(st.lists(st.floats(min_value=-(2.0**127), max_value=2.0**127, width=32), min_size=1, max_size=20))
def test_reduce_precision_to_bf16_layout_matches_bf16_rounding(values):
    x = np.array(values, dtype=np.float32)
    x = x[np.abs(x) >= 2.0**-126]  # reduce-precision has no subnormals
    same(reduce_precision(x, 8, 7), x.astype(ml_dtypes.bfloat16).astype(np.float32))


# --------------------------------------------------------------------------- stochastic-convert


def test_stochastic_convert():
    x = A([2.5, 2.5, -2.5, 0.75, 0.75, 3, NAN, INF, -INF, 3e9, -1e10], "f32")
    r = A([0x7FFFFFFF, 0x80000000, 0, 0xBFFFFFFF, 0xC0000000, 0, 0, 0, 0, 0, 0], "u32")
    same(stochastic_convert(x, r, "s32"), A([3, 2, -3, 1, 0, 3, 0, 2**31 - 1, -2**31, 2**31 - 1, -2**31], "s32"))
    same(stochastic_convert(A([-127.5, -127.5, 127.5, 200], "f32"), A([0, 2**32 - 1, 0, 0], "u32"), "s8"),
         A([-128, -127, 127, 127], "s8"))
    same(stochastic_convert(A([0.5, 0.5], "f16"), A([0x7FFF, 0x8000], "u16"), "s16"), A([1, 0], "s16"))
    same(stochastic_convert(A([1.25, -7.5], "bf16"), A([0x3FFF, 0x7FFF], "u16"), "s4"), A([2, -8], "s4"))
    same(stochastic_convert(A([0.5], "f64"), A([2**63 - 1], "u64"), "s64"), A([1], "s64"))
    with pytest.raises(ValueError):
        stochastic_convert(A([0.5], "f32"), A([0], "u16"), "s32")
    with pytest.raises(ValueError):
        stochastic_convert(A([0.5], "f32"), A([0], "u32"), "u32")


# --------------------------------------------------------------------------- iota


def test_iota():
    same(iota(Shape.array("s32", (4, 8)), 0), np.repeat(np.arange(4, dtype=np.int32)[:, None], 8, axis=1))
    same(iota(Shape.array("s32", (4, 8)), 1), np.tile(np.arange(8, dtype=np.int32), (4, 1)))
    same(iota(Shape.array("f32", (3,)), 0), A([0, 1, 2], "f32"))
    same(iota(Shape.array("c64", (2, 1)), 0), A([[0j], [1 + 0j]], "c64"))
    same(iota(Shape.array("s4", (10,)), 0), A([0, 1, 2, 3, 4, 5, 6, 7, -8, -7], "s4"))
    same(iota(Shape.array("f8e4m3fn", (18,)), 0)[16:], A([16, 16], "f8e4m3fn"))  # 17 ties to even
    assert iota(Shape.array("u8", (2, 0, 3)), 2).shape == (2, 0, 3)
    for bad in [(Shape.array("pred", (3,)), 0), (Shape.array("s32", (3,)), 1), (Shape.array("s32", ()), 0)]:
        with pytest.raises(ValueError):
            iota(*bad)


# --------------------------------------------------------------------------- no warnings leak


def test_no_numpy_warnings_leak():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = A([0, -1, INF, NAN, 1e38], "f32")
        for op in ["log", "sqrt", "rsqrt", "exponential", "acosh", "atanh", "round-nearest-afz", "logistic"]:
            UNARY[op](f, P("f32"))
        BINARY["divide"](f, A([0] * 5, "f32"), P("f32"))
        BINARY["power"](f, A([-1] * 5, "f32"), P("f32"))
        BINARY["multiply"](f, f, P("f32"))
        convert(f, "f32", "s32")
        convert(A([1e300], "f64"), "f64", "f32")
        BINARY["multiply"](A(2**62, "s64"), A(4, "s64"), P("s64"))
        BINARY["divide"](A(-2**63, "s64"), A(-1, "s64"), P("s64"))
        BINARY["add"](A(2**64 - 1, "u64"), A(1, "u64"), P("u64"))
        UNARY["abs"](A([0j, NAN * 1j], "c64"), P("f32"))
        UNARY["sign"](A([0j], "c64"), P("c64"))


def test_rank0_inputs_give_rank0_arrays():
    out = BINARY["add"](A(1, "s32"), A(2, "s32"), P("s32"))
    assert isinstance(out, np.ndarray) and out.shape == () and out == 3
    out = UNARY["exponential"](A(0, "bf16"), P("bf16"))
    assert isinstance(out, np.ndarray) and out.shape == () and out.dtype == ml_dtypes.bfloat16


# --------------------------------------------------------------------------- properties


def _wrap_python(v, t):
    v &= (1 << t.bits) - 1
    if t.is_signed_int and v >= 1 << (t.bits - 1):
        v -= 1 << t.bits
    return v


def _int_case():
    return st.sampled_from(INT_TYPES).flatmap(lambda t: st.tuples(
        st.just(t),
        st.lists(st.integers(*numerics.int_range(t)), min_size=1, max_size=8),
        st.lists(st.integers(*numerics.int_range(t)), min_size=8, max_size=8)))


@SMALL
@given(_int_case())
def test_integer_arithmetic_matches_python(case):
    t, xs, ys = case
    ys = ys[:len(xs)]
    x, y = A(xs, t.name), A(ys, t.name)
    for op, fn in [("add", lambda a, b: a + b), ("subtract", lambda a, b: a - b), ("multiply", lambda a, b: a * b),
                   ("and", lambda a, b: a & b), ("or", lambda a, b: a | b), ("xor", lambda a, b: a ^ b)]:
        same(BINARY[op](x, y, t), A([_wrap_python(fn(a, b), t) for a, b in zip(xs, ys)], t.name))
    quotients, remainders = [], []
    for a, b in zip(xs, ys):
        if b == 0:
            q, r = -1, a
        else:
            q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
            r = a - q * b
        quotients.append(_wrap_python(q, t))
        remainders.append(_wrap_python(r, t))
    same(BINARY["divide"](x, y, t), A(quotients, t.name))
    same(BINARY["remainder"](x, y, t), A(remainders, t.name))


@SMALL
@given(_int_case())
def test_shifts_match_python_on_bit_patterns(case):
    t, xs, ys = case
    ys = [y % (t.bits + 2) for y in ys[:len(xs)]]  # mostly in range, some saturating
    x, y = A(xs, t.name), A([_wrap_python(v, t) for v in ys], t.name)
    amounts = [v & ((1 << t.bits) - 1) for v in (_wrap_python(v, t) for v in ys)]
    pattern = [a & ((1 << t.bits) - 1) for a in xs]
    signed = [_wrap_python(p, primitive_type("s" + str(t.bits))) for p in pattern]
    shl = [_wrap_python(p << s, t) if s < t.bits else 0 for p, s in zip(pattern, amounts)]
    shr = [_wrap_python(p >> s, t) if s < t.bits else 0 for p, s in zip(pattern, amounts)]
    sra = [_wrap_python(v >> min(s, t.bits - 1), t) for v, s in zip(signed, amounts)]
    same(BINARY["shift-left"](x, y, t), A(shl, t.name))
    same(BINARY["shift-right-logical"](x, y, t), A(shr, t.name))
    same(BINARY["shift-right-arithmetic"](x, y, t), A(sra, t.name))


@SMALL
@given(_int_case(), st.sampled_from(INT_TYPES))
def test_convert_between_integers_wraps_like_python(case, to):
    t, xs, _ = case
    same(convert(A(xs, t.name), t, to), A([_wrap_python(v, to) for v in xs], to.name))


def _f32_total_key(word):
    (v,) = struct.unpack("<i", struct.pack("<I", word))
    return v ^ 0x7FFFFFFF if v < 0 else v


@SMALL
@given(st.lists(st.integers(0, 2**32 - 1), min_size=2, max_size=16))
def test_totalorder_matches_reference_on_random_f32_patterns(words):
    x, y = f32_bits(*words), f32_bits(*reversed(words))
    keys_x, keys_y = [_f32_total_key(w) for w in words], [_f32_total_key(w) for w in reversed(words)]
    same(compare(x, y, "LT", "TOTALORDER"), np.array([a < b for a, b in zip(keys_x, keys_y)]))
    same(compare(x, y, "EQ", "TOTALORDER"), np.array([a == b for a, b in zip(words, reversed(words))]))


@SMALL
@given(st.lists(st.floats(allow_nan=False, width=32), min_size=1, max_size=10), st.floats(-10, 10, width=32),
       st.floats(-10, 10, width=32))
def test_clamp_equals_numpy_clip_without_nans(values, a, b):
    lo, hi = min(a, b), max(a, b)
    x = np.array(values, np.float32)
    expected = np.clip(x, np.float32(lo), np.float32(hi))
    np.testing.assert_array_equal(clamp(np.float32(lo), x, np.float32(hi)), expected)
