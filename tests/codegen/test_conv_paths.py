"""Convolutions of training steps through the blocked multiply: transposed (base-dilated), reversed
windows, the kernel gradients JAX writes (batch and feature swapped, huge windows), grouped and
depthwise convolutions; compiled against the interpreter, with AVX2 forced as well."""
import numpy as np
import pytest
from target_cases import AVX2, RAW, check as check_targets, private_cache, rand as rand_typed  # noqa: F401

from hlo import parse_module
from hlo.codegen import JitExecutable
from hlo.interpreter import run
from hlo.codegen.contraction import top_level_plan

BOTH = (RAW, AVX2)


def rand(*dims, seed=0):
    return rand_typed(np.float32, *dims, seed=seed)


def check(text, *arrays, options=BOTH):
    check_targets(text, *arrays, options=options)


def conv(lhs, rhs, out, attrs):
    return f"""HloModule m
ENTRY e {{
  x = f32[{','.join(map(str, lhs))}] parameter(0)
  k = f32[{','.join(map(str, rhs))}] parameter(1)
  ROOT y = f32[{','.join(map(str, out))}] convolution(x, k), {attrs}
}}
"""


def planned(text) -> bool:
    return top_level_plan(parse_module(text, "conv.hlo").entry.root, None) is not None


@pytest.mark.parametrize("lhs,rhs,out,attrs", [
    # haiku ConvTranspose forward: 7x7 -> 14x14, kernel 3x3, lhs_dilate 2
    ((4, 7, 7, 32), (3, 3, 16, 32), (4, 14, 14, 16), "window={size=3x3 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=b01f_01oi->b01f"),
    # its kernel gradient: batch and feature swapped, a 14x14 window over the dilated input
    ((4, 7, 7, 32), (4, 14, 14, 16), (3, 3, 16, 32), "window={size=14x14 pad=2_1x2_1 lhs_dilate=2x2}, dim_labels=f01b_i01o->01fb"),
    # a strided convolution's kernel gradient (rhs dilation)
    ((4, 14, 14, 16), (4, 7, 7, 32), (3, 3, 16, 32), "window={size=7x7 pad=0_1x0_1 rhs_dilate=2x2}, dim_labels=f01b_i01o->01bf"),
    # input gradient of a strided convolution: reversed window, lhs dilation
    ((2, 6, 6, 24), (3, 3, 16, 24), (2, 12, 12, 16), "window={size=3x3 pad=1_2x1_2 lhs_dilate=2x2 rhs_reversal=1x1}, dim_labels=b01f_01oi->b01f"),
    # 1-D, lhs dilation 3 and window dilation 2 together, odd sizes
    ((3, 11, 8), (4, 8, 12), (3, 30, 12), "window={size=4 pad=3_2 lhs_dilate=3 rhs_dilate=2}, dim_labels=b0f_0io->b0f"),
])
def test_transposed_and_gradient_convolutions(lhs, rhs, out, attrs):
    text = conv(lhs, rhs, out, attrs)
    assert planned(text)
    check(text, rand(*lhs), rand(*rhs, seed=1))


def test_reversed_window_alone():
    text = conv((2, 9, 9, 16), (3, 3, 16, 8), (2, 7, 7, 8), "window={size=3x3 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f")
    assert planned(text)
    check(text, rand(2, 9, 9, 16), rand(3, 3, 16, 8, seed=1))


def int_conv(lhs, rhs, out, attrs, t="s8", acc="s32"):
    return conv(lhs, rhs, out, attrs).replace("f32[", f"{t}[").replace(f"ROOT y = {t}[", f"ROOT y = {acc}[")


def extreme_ints(dtype, *dims, seed=0):
    """Values drawn from the type's extremes and zero: the largest sums the plan allows."""
    info = np.iinfo(dtype)
    return np.random.default_rng(seed).choice([info.min, info.max, 0, 1, -1 if info.min else 2], dims).astype(dtype)


@pytest.mark.parametrize("t,dtype,acc", [("s8", np.int8, "s32"), ("u8", np.uint8, "u32"), ("s8", np.int8, "s64")])
def test_int8_convolution_runs_exactly_through_the_f32_multiply(t, dtype, acc):
    # qwix's quantised CNN: s8 x s8 -> s32, 3x3 over 16 channels (144 products per sum)
    text = int_conv((4, 16, 16, 16), (3, 3, 16, 32), (4, 8, 8, 32),
                    "window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f", t, acc)
    assert planned(text)
    check_targets(text, extreme_ints(dtype, 4, 16, 16, 16), extreme_ints(dtype, 3, 3, 16, 32, seed=1),
                  options=BOTH, exact=True)


def test_int8_contractions_too_deep_for_exact_f32_sums_keep_integer_loops():
    # 3x3x1024 products of up to 128 * 128: partial sums can pass 2^24
    text = int_conv((1, 4, 4, 1024), (3, 3, 1024, 8), (1, 2, 2, 8), "window={size=3x3}, dim_labels=b01f_01io->b01f")
    assert not planned(text)
    small = int_conv((1, 8, 8, 64), (3, 3, 64, 8), (1, 6, 6, 8), "window={size=3x3}, dim_labels=b01f_01io->b01f")
    assert planned(small)
    s16 = int_conv((1, 4, 4, 8), (3, 3, 8, 8), (1, 2, 2, 8), "window={size=3x3}, dim_labels=b01f_01io->b01f", "s16")
    assert not planned(s16)


def test_int8_dot_into_s32():
    text = """HloModule m
ENTRY e {
  a = s8[40,300] parameter(0)
  b = s8[300,70] parameter(1)
  ROOT d = s32[40,70] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""
    assert planned(text)
    check_targets(text, extreme_ints(np.int8, 40, 300), extreme_ints(np.int8, 300, 70, seed=1),
                  options=BOTH, exact=True)


@pytest.mark.parametrize("lhs,rhs,out,attrs", [
    # conv_transpose_upsample's second layer: three output features stay elemental
    ((1, 16, 16, 6), (4, 4, 6, 3), (1, 34, 34, 3), "window={size=4x4 pad=3_3x3_3 lhs_dilate=2x2}, dim_labels=b01f_01io->b01f"),
    # stride with base dilation, reversed window on one dimension
    ((2, 7, 5, 3), (3, 2, 3, 2), (2, 7, 14, 2),
     "window={size=3x2 stride=2x1 pad=2_1x1_1 lhs_dilate=2x3 rhs_reversal=1x0}, dim_labels=b01f_01io->b01f"),
    # negative low padding, dilation 3: the first taps of every window land before the input
    ((1, 9, 2), (5, 2, 1), (1, 19, 1), "window={size=5 pad=-2_0 lhs_dilate=3}, dim_labels=b0f_0io->b0f"),
    # padding wider than the window: the outer outputs read no input at all (zeros)
    ((1, 3, 3), (2, 3, 2), (1, 13, 2), "window={size=2 pad=5_4 lhs_dilate=2}, dim_labels=b0f_0io->b0f"),
    # window dilation with base dilation keeps the tested taps
    ((3, 11, 2), (4, 2, 3), (3, 30, 3), "window={size=4 pad=3_2 lhs_dilate=3 rhs_dilate=2}, dim_labels=b0f_0io->b0f"),
    # grouped, base-dilated in one dimension only, features first in the input's layout
    ((1, 4, 5, 6), (2, 3, 2, 2), (1, 4, 11, 2),
     "window={size=2x3 pad=0_0x1_1 lhs_dilate=1x2}, dim_labels=bf01_01io->b01f, feature_group_count=2"),
])
def test_elemental_transposed_convolutions_step_over_the_holes(lhs, rhs, out, attrs):
    # base-dilated convolutions the multiply does not take: the taps loop steps by the dilation
    text = conv(lhs, rhs, out, attrs)
    assert not planned(text)
    check(text, rand(*lhs), rand(*rhs, seed=1))


def test_elemental_padding_reads_zeros_as_the_interpreter_does():
    # a zero read from the padding times an infinite weight is NaN, as in the interpreter (and
    # XLA:CPU), not a skipped tap
    text = conv((1, 3, 1), (3, 1, 1), (1, 3, 1), "window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f")
    assert not planned(text)
    x = np.ones((1, 3, 1), np.float32)
    k = np.array([np.inf, 1, 1], np.float32).reshape(3, 1, 1)
    for options in BOTH:
        got = JitExecutable(parse_module(text), options).run(x, k)[0].ravel()
        np.testing.assert_array_equal(got, run(parse_module(text), x, k)[0].ravel())
        assert np.isnan(got[0])
