"""Tests of hlo.interpreter.linear: dot_general, convolution and ConvDims."""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo.attributes import ConvDims, DotDims, Window, WindowDim
from hlo.interpreter.linear import convolution, dot_general
from hlo.shapes import primitive_type

F32 = primitive_type("f32")
F64 = primitive_type("f64")
BF16 = primitive_type("bf16")
S8 = primitive_type("s8")
S32 = primitive_type("s32")
S4 = primitive_type("s4")
U8 = primitive_type("u8")
C64 = primitive_type("c64")


def window(size, stride=None, pad=None, lhs_dilate=None, rhs_dilate=None, reversal=None):
    n = len(size)
    stride = stride or (1,) * n
    pad = pad or ((0, 0),) * n
    lhs_dilate = lhs_dilate or (1,) * n
    rhs_dilate = rhs_dilate or (1,) * n
    reversal = reversal or (False,) * n
    return Window(tuple(WindowDim(*args) for args in zip(
        size, stride, (p[0] for p in pad), (p[1] for p in pad), rhs_dilate, lhs_dilate, reversal)))


# --------------------------------------------------------------------------- ConvDims


def test_conv_dims_parse_nhwc():
    d = ConvDims.parse("b01f_01io->b01f")
    assert (d.input_batch, d.input_feature, d.input_spatial) == (0, 3, (1, 2))
    assert (d.kernel_input_feature, d.kernel_output_feature, d.kernel_spatial) == (2, 3, (0, 1))
    assert (d.output_batch, d.output_feature, d.output_spatial) == (0, 3, (1, 2))


def test_conv_dims_parse_spatial_order_follows_digits():
    d = ConvDims.parse("f10b_i01o->10bf")
    assert d.input_spatial == (2, 1) and d.input_feature == 0 and d.input_batch == 3
    assert d.kernel_spatial == (1, 2)
    assert d.output_spatial == (1, 0) and d.output_batch == 2 and d.output_feature == 3


@pytest.mark.parametrize("text", ["b01f_01io->b01f", "bf01_oi01->bf01", "f01b_i01o->01bf",
                                  "bf_io->bf", "b0f_0io->b0f", "0b21f_i2o10->f012b"])
def test_conv_dims_round_trip(text):
    assert ConvDims.parse(text).to_text() == text
    d = ConvDims.parse(text)
    assert ConvDims.parse(d.to_text()) == d


@pytest.mark.parametrize("text, message", [
    ("b01f_01io", "LHS_RHS->OUT"),
    ("b01f01io->b01f", "LHS_RHS->OUT"),
    ("b01f_01io->b0f", "same rank"),
    ("bb1f_01io->b01f", "twice"),
    ("b00f_01io->b01f", "twice"),
    ("b02f_01io->b01f", "unexpected label"),
    ("b01x_01io->b01f", "unexpected label"),
    ("b01f_01ii->b01f", "twice"),
    ("b01f_01fo->b01f", "unexpected label"),
    ("b0?f_01io->b01f", "custom calls"),
    ("b_i->b", "at least 2"),
])
def test_conv_dims_parse_errors(text, message):
    with pytest.raises(ValueError, match=message):
        ConvDims.parse(text)


# --------------------------------------------------------------------------- dot


def test_dot_contract_both_dim1():
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    b = np.array([[1, 1, 1], [2, 2, 2]], np.float32)
    out = dot_general(a, b, DotDims((), (1,), (), (1,)), F32)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[6, 12], [15, 30]])


def test_dot_batched_identity():
    a = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    eye = np.broadcast_to(np.eye(2, dtype=np.float32), (2, 2, 2))
    out = dot_general(a, eye, DotDims((0,), (2,), (0,), (1,)), F32)
    np.testing.assert_array_equal(out, a)


def test_dot_result_dim_order_batch_then_lhs_then_rhs():
    lhs = np.ones((3, 5, 2), np.float32)      # free 3, contract 5, batch 2
    rhs = np.ones((4, 2, 5), np.float32)      # free 4, batch 2, contract 5
    out = dot_general(lhs, rhs, DotDims((2,), (1,), (1,), (2,)), F32)
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out, np.full((2, 3, 4), 5))


def test_dot_vector_and_outer_product():
    v = np.array([1, 2, 3], np.float32)
    assert dot_general(v, v, DotDims((), (0,), (), (0,)), F32) == 14
    outer = dot_general(v, v[:2], DotDims((), (), (), ()), F32)
    np.testing.assert_array_equal(outer, [[1, 2], [2, 4], [3, 6]])


def test_dot_scalar_results_are_arrays():
    v = np.array([True, False])
    out = dot_general(v, v, DotDims((), (0,), (), (0,)), primitive_type("pred"))
    assert isinstance(out, np.ndarray) and out.dtype == np.bool_ and bool(out)
    out = dot_general(np.float32([2]), np.float32([3]), DotDims((), (0,), (), (0,)), F32)
    assert isinstance(out, np.ndarray) and out.shape == () and out == 6


def test_dot_empty_contraction_gives_zeros():
    out = dot_general(np.ones((2, 0), np.float32), np.ones((0, 3), np.float32),
                      DotDims((), (1,), (), (0,)), F32)
    np.testing.assert_array_equal(out, np.zeros((2, 3)))


def test_dot_zero_sized_free_dim():
    out = dot_general(np.ones((0, 4), np.int32), np.ones((4, 3), np.int32),
                      DotDims((), (1,), (), (0,)), S32)
    assert out.shape == (0, 3) and out.dtype == np.int32


def test_dot_integer_wraps_in_result_type():
    a = np.array([[100, 100]], np.int8)
    b = np.array([[2], [1]], np.int8)
    out = dot_general(a, b, DotDims((), (1,), (), (0,)), S8)
    assert out.dtype == np.int8 and out[0, 0] == np.int8(300 - 256)


def test_dot_s8_operands_s32_result_does_not_wrap():
    a = np.array([[100, 100]], np.int8)
    b = np.array([[2], [1]], np.int8)
    out = dot_general(a, b, DotDims((), (1,), (), (0,)), S32)
    assert out.dtype == np.int32 and out[0, 0] == 300


def test_dot_unsigned_and_subbyte_wrap():
    a = np.array([[200, 100]], np.uint8)
    out = dot_general(a, np.array([[1], [1]], np.uint8), DotDims((), (1,), (), (0,)), U8)
    assert out[0, 0] == 44
    s4 = np.array([[7, 7]], ml_dtypes.int4)
    out = dot_general(s4, np.array([[1], [1]], ml_dtypes.int4), DotDims((), (1,), (), (0,)), S4)
    assert out.dtype == ml_dtypes.int4 and int(out[0, 0]) == -2  # 14 wraps to -2


def test_dot_bf16_accumulates_in_f32_then_rounds():
    # 1 + 256 * 2**-9 = 1.5; each 2**-9 step would vanish in a bf16 accumulator.
    lhs = np.concatenate([[1.0], np.full(256, 2.0 ** -9)]).astype(ml_dtypes.bfloat16)[None, :]
    rhs = np.ones((257, 1), ml_dtypes.bfloat16)
    out = dot_general(lhs, rhs, DotDims((), (1,), (), (0,)), BF16)
    assert out.dtype == ml_dtypes.bfloat16 and float(out[0, 0]) == 1.5


def test_dot_bf16_operands_f32_result():
    lhs = np.array([[1.5, 2.0]], ml_dtypes.bfloat16)
    rhs = np.array([[3.0], [0.25]], ml_dtypes.bfloat16)
    out = dot_general(lhs, rhs, DotDims((), (1,), (), (0,)), F32)
    assert out.dtype == np.float32 and out[0, 0] == 5.0


def test_dot_mixed_operand_types():
    lhs = np.array([[1.5, 2.0]], np.float32)
    rhs = np.array([[2.0], [0.5]], ml_dtypes.bfloat16)
    out = dot_general(lhs, rhs, DotDims((), (1,), (), (0,)), F32)
    assert out[0, 0] == 4.0


def test_dot_complex():
    a = np.array([[1 + 1j, 2]], np.complex64)
    b = np.array([[1j], [1]], np.complex64)
    out = dot_general(a, b, DotDims((), (1,), (), (0,)), C64)
    assert out.dtype == np.complex64 and out[0, 0] == (1 + 1j) * 1j + 2


@pytest.mark.parametrize("dims, message", [
    (DotDims((0,), (1,), (), (0,)), "batch"),
    (DotDims((), (1,), (), (1,)), "differ"),
    (DotDims((), (1, 1), (), (0, 1)), "distinct"),
    (DotDims((), (2,), (), (0,)), "distinct and in"),
])
def test_dot_invalid_dims(dims, message):
    with pytest.raises(ValueError, match=message):
        dot_general(np.ones((2, 3)), np.ones((3, 4)), dims, F64)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_dot_matches_einsum(data):
    nb = data.draw(st.integers(0, 2))
    nc = data.draw(st.integers(0, 2))
    nl = data.draw(st.integers(0, 2))
    nr = data.draw(st.integers(0, 2))
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=nb + nc + nl + nr,
                               max_size=nb + nc + nl + nr))
    b_sizes, c_sizes = sizes[:nb], sizes[nb:nb + nc]
    l_sizes, r_sizes = sizes[nb + nc:nb + nc + nl], sizes[nb + nc + nl:]
    lhs_perm = data.draw(st.permutations(range(nb + nc + nl)))
    rhs_perm = data.draw(st.permutations(range(nb + nc + nr)))
    letters = "abcdefghijkl"
    b_l, c_l = letters[:nb], letters[nb:nb + nc]
    l_l, r_l = letters[nb + nc:nb + nc + nl], letters[nb + nc + nl:nb + nc + nl + nr]
    lhs_labels = [(b_l + c_l + l_l)[p] for p in lhs_perm]
    rhs_labels = [(b_l + c_l + r_l)[p] for p in rhs_perm]
    size_of = dict(zip(letters, b_sizes + c_sizes + l_sizes + r_sizes))
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    lhs = rng.integers(-50, 50, [size_of[c] for c in lhs_labels]).astype(np.int32)
    rhs = rng.integers(-50, 50, [size_of[c] for c in rhs_labels]).astype(np.int32)
    dims = DotDims(tuple(lhs_labels.index(c) for c in b_l), tuple(lhs_labels.index(c) for c in c_l),
                   tuple(rhs_labels.index(c) for c in b_l), tuple(rhs_labels.index(c) for c in c_l))
    # Free dims appear in the order they have in their operand.
    free = "".join(c for c in lhs_labels if c in l_l) + "".join(c for c in rhs_labels if c in r_l)
    expected = np.einsum(f"{''.join(lhs_labels)},{''.join(rhs_labels)}->{b_l + free}",
                         lhs.astype(np.int64), rhs.astype(np.int64))
    out = dot_general(lhs, rhs, dims, S32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)


# --------------------------------------------------------------------------- convolution reference


def naive_convolution(lhs, rhs, win: Window, dims: ConvDims, groups: int, batch_groups: int):
    """Direct transcription of the spec's per-output-element loop (float64/int64)."""
    n = dims.num_spatial
    acc_type = np.int64 if lhs.dtype.kind in "iu" else np.float64
    batch, features = lhs.shape[dims.input_batch], lhs.shape[dims.input_feature]
    out_features = rhs.shape[dims.kernel_output_feature]
    in_sizes = [lhs.shape[d] for d in dims.input_spatial]
    kernel_sizes = [rhs.shape[d] for d in dims.kernel_spatial]
    out_sizes = []
    for size, wd in zip(in_sizes, win.dims):
        base = wd.padding_low + ((size - 1) * wd.base_dilation + 1 if size else 0) + wd.padding_high
        span = (wd.size - 1) * wd.window_dilation + 1
        out_sizes.append(0 if span > base else (base - span) // wd.stride + 1)
    out_shape = [0] * (n + 2)
    out_shape[dims.output_batch] = batch // batch_groups
    out_shape[dims.output_feature] = out_features
    for k, d in enumerate(dims.output_spatial):
        out_shape[d] = out_sizes[k]
    out = np.zeros(out_shape, acc_type)
    cg, og = features // groups, out_features // groups
    nb, ob = batch // batch_groups, out_features // batch_groups
    for b_out in range(batch // batch_groups):
        for f_out in range(out_features):
            g = f_out // og
            b_in = b_out + (f_out // ob) * nb if batch_groups > 1 else b_out
            for pos in itertools.product(*(range(o) for o in out_sizes)):
                acc = 0
                for tap in itertools.product(*(range(k) for k in kernel_sizes)):
                    index, kernel_index, real = [], [], True
                    for d in range(n):
                        wd = win.dims[d]
                        p = pos[d] * wd.stride + tap[d] * wd.window_dilation - wd.padding_low
                        if p < 0 or p % wd.base_dilation or p // wd.base_dilation >= in_sizes[d]:
                            real = False
                            break
                        index.append(p // wd.base_dilation)
                        kernel_index.append(kernel_sizes[d] - 1 - tap[d] if wd.window_reversal
                                            else tap[d])
                    if not real:
                        continue
                    for ki in range(cg):
                        li = [0] * (n + 2)
                        li[dims.input_batch], li[dims.input_feature] = b_in, g * cg + ki
                        ri = [0] * (n + 2)
                        ri[dims.kernel_output_feature], ri[dims.kernel_input_feature] = f_out, ki
                        for d in range(n):
                            li[dims.input_spatial[d]] = index[d]
                            ri[dims.kernel_spatial[d]] = kernel_index[d]
                        acc += acc_type(lhs[tuple(li)]) * acc_type(rhs[tuple(ri)])
                oi = [0] * (n + 2)
                oi[dims.output_batch], oi[dims.output_feature] = b_out, f_out
                for d in range(n):
                    oi[dims.output_spatial[d]] = pos[d]
                out[tuple(oi)] = acc
    return out


# --------------------------------------------------------------------------- convolution cases

B0F = ConvDims.parse("b0f_0io->b0f")
NHWC = ConvDims.parse("b01f_01io->b01f")


def conv1d(values, kernel, **window_args):
    x = np.array(values, np.float32).reshape(1, -1, 1)
    k = np.array(kernel, np.float32).reshape(-1, 1, 1)
    out = convolution(x, k, window((len(kernel),), **window_args), B0F, 1, 1, F32)
    return out.ravel().tolist()


def test_conv_spec_example_same_padding():
    assert conv1d([1, 2, 3, 4, 5], [1, 0, -1], pad=((1, 1),)) == [-2, -2, -2, -2, 4]


def test_conv_spec_example_stride():
    assert conv1d([1, 2, 3, 4, 5], [1, 0, -1], stride=(2,), pad=((1, 1),)) == [-2, -2, 4]


def test_conv_negative_padding_crops_input():
    # pad -1_-1 drops the first and last element: input {2,3,4}, kernel sums pairs.
    assert conv1d([1, 2, 3, 4, 5], [1, 1], pad=((-1, -1),)) == [5, 7]


def test_conv_lhs_dilation_inserts_holes():
    # Dilated input {1,0,2,0,3}; a [1,10] kernel reads neighbours.
    assert conv1d([1, 2, 3], [1, 10], lhs_dilate=(2,)) == [1, 20, 2, 30]


def test_conv_rhs_dilation_spreads_kernel():
    # Taps at offsets 0 and 2: x[i] + 10 x[i+2].
    assert conv1d([1, 2, 3, 4], [1, 10], rhs_dilate=(2,)) == [31, 42]


def test_conv_window_reversal_flips_kernel():
    assert conv1d([1, 2, 3, 4], [1, 10], reversal=(True,)) == [12, 23, 34]
    assert conv1d([1, 2, 3, 4], [1, 10]) == [21, 32, 43]


def test_conv_transposed_style_padding_and_dilation():
    # lhs_dilate=2 and pad 1_1 over {1,2}: base {0,1,0,2,0}, kernel [1,2,3].
    assert conv1d([1, 2], [1, 2, 3], pad=((1, 1),), lhs_dilate=(2,)) == [2, 1 + 6, 4]


def test_conv_window_larger_than_input_gives_empty_output():
    assert conv1d([1, 2], [1, 1, 1]) == []


def test_conv_depthwise_feature_groups():
    # 2 channels, G=2, one output per group: channel c is scaled by kernel c.
    x = np.array([[[1, 10], [2, 20], [3, 30]]], np.float32)       # b0f: [1, 3, 2]
    k = np.array([[[1, 2]], [[1, 3]]], np.float32)                 # 0io: [2, 1, 2]
    out = convolution(x, k, window((2,)), B0F, 2, 1, F32)
    np.testing.assert_array_equal(out[0], [[1 + 2, 2 * 10 + 3 * 20], [2 + 3, 2 * 20 + 3 * 30]])


def test_conv_feature_groups_with_multiplier():
    x = np.array([[[1, 10]]], np.float32)                          # [1, 1, 2]
    k = np.array([[[1, 2, 3, 4]]], np.float32)                     # [1, 1, 4]: O=4, G=2
    out = convolution(x, k, window((1,)), B0F, 2, 1, F32)
    np.testing.assert_array_equal(out.ravel(), [1, 2, 30, 40])


def test_conv_batch_groups():
    # N=2, Bg=2, O=2: output feature j reads only batch element j; output batch 1.
    x = np.array([[[1], [2]], [[10], [20]]], np.float32)          # b0f: [2, 2, 1]
    k = np.array([[[1, 1]], [[1, 2]]], np.float32)                 # 0io: [2, 1, 2]
    out = convolution(x, k, window((2,)), B0F, 1, 2, F32)
    assert out.shape == (1, 1, 2)
    np.testing.assert_array_equal(out[0, 0], [1 * 1 + 2 * 1, 10 * 1 + 20 * 2])


def test_conv_batch_groups_with_group_size_two():
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 4, (4, 3, 2)).astype(np.float32)         # N=4, Bg=2 -> Nb=2
    k = rng.integers(-3, 4, (2, 2, 6)).astype(np.float32)         # O=6 -> 3 per group
    out = convolution(x, k, window((2,)), B0F, 1, 2, F32)
    assert out.shape == (2, 2, 6)
    np.testing.assert_array_equal(out, naive_convolution(x, k, window((2,)), B0F, 1, 2))


def test_conv_nchw_layout_matches_nhwc():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 4, 3)).astype(np.float32)      # NHWC
    k = rng.standard_normal((3, 2, 3, 4)).astype(np.float32)      # HWIO
    w = window((3, 2), stride=(2, 1), pad=((1, 1), (0, 1)))
    nhwc = convolution(x, k, w, NHWC, 1, 1, F32)
    nchw = convolution(x.transpose(0, 3, 1, 2), k.transpose(3, 2, 0, 1), w,
                       ConvDims.parse("bf01_oi01->bf01"), 1, 1, F32)
    np.testing.assert_allclose(nchw.transpose(0, 2, 3, 1), nhwc, rtol=1e-5, atol=1e-5)


def test_conv_weight_gradient_labels():
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (3, 4, 5, 2)).astype(np.float32)      # f01b
    k = rng.integers(-3, 4, (3, 2, 2, 2)).astype(np.float32)      # i01o
    dims = ConvDims.parse("f01b_i01o->01bf")
    w = window((2, 2), pad=((0, 1), (0, 1)), rhs_dilate=(2, 2))
    out = convolution(x, k, w, dims, 1, 1, F32)
    np.testing.assert_array_equal(out, naive_convolution(x, k, w, dims, 1, 1))


def test_conv_no_spatial_dims_is_a_matmul():
    x = np.array([[1, 2], [3, 4]], np.float32)                     # bf
    k = np.array([[1, 0, 1], [0, 1, 1]], np.float32)              # io
    out = convolution(x, k, Window(()), ConvDims.parse("bf_io->bf"), 1, 1, F32)
    np.testing.assert_array_equal(out, x @ k)


def test_conv_integer_wraps():
    x = np.full((1, 3, 1), 100, np.int8)
    k = np.ones((3, 1, 1), np.int8)
    out = convolution(x, k, window((3,)), B0F, 1, 1, S8)
    assert out.dtype == np.int8 and out.ravel().tolist() == [300 - 256]
    out = convolution(x, k, window((3,)), B0F, 1, 1, S32)
    assert out.dtype == np.int32 and out.ravel().tolist() == [300]


def test_conv_bf16_operands():
    x = np.array([1.0] + [2.0 ** -9] * 256, ml_dtypes.bfloat16).reshape(1, 257, 1)
    k = np.ones((257, 1, 1), ml_dtypes.bfloat16)
    out = convolution(x, k, window((257,)), B0F, 1, 1, BF16)
    assert out.dtype == ml_dtypes.bfloat16 and float(out.ravel()[0]) == 1.5
    out = convolution(x, k, window((257,)), B0F, 1, 1, F32)
    assert out.dtype == np.float32 and out.ravel()[0] == 1.5


def test_conv_large_batch_is_chunked(monkeypatch):
    import hlo.interpreter.linear as linear
    monkeypatch.setattr(linear, "_PATCH_BUDGET", 16)
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (6, 4, 2)).astype(np.float32)
    k = rng.integers(-3, 4, (3, 2, 4)).astype(np.float32)
    w = window((3,), pad=((1, 1),))
    np.testing.assert_array_equal(convolution(x, k, w, B0F, 1, 2, F32),
                                  naive_convolution(x, k, w, B0F, 1, 2))


@pytest.mark.parametrize("lhs_shape, rhs_shape, groups, batch_groups, message", [
    ((1, 4, 3), (2, 2, 1), 1, 1, "lhs features"),
    ((1, 4, 2), (2, 1, 3), 2, 1, "not divisible"),
    ((3, 4, 2), (2, 2, 2), 1, 2, "divisible by batch_group_count"),
    ((2, 4, 2), (2, 1, 2), 2, 2, "cannot both"),
    ((1, 4, 2), (3, 2, 2), 1, 1, "window size"),
    ((1, 4), (2, 2, 2), 1, 1, "rank-3"),
])
def test_conv_invalid(lhs_shape, rhs_shape, groups, batch_groups, message):
    with pytest.raises(ValueError, match=message):
        convolution(np.ones(lhs_shape, np.float32), np.ones(rhs_shape, np.float32),
                    window((2,)), B0F, groups, batch_groups, F32)


def test_conv_padding_removing_everything_is_invalid():
    with pytest.raises(ValueError, match="removes more"):
        conv1d([1, 2], [1], pad=((-2, -1),))


# --------------------------------------------------------------------------- property test


@st.composite
def conv_cases(draw):
    n = draw(st.integers(1, 2))
    mode = draw(st.sampled_from(["plain", "features", "batch"]))
    groups = draw(st.integers(1, 2)) if mode == "features" else 1
    batch_groups = draw(st.integers(1, 2)) if mode == "batch" else 1
    batch = batch_groups * draw(st.integers(1, 2))
    in_features = draw(st.integers(1, 2))
    out_features = groups * batch_groups * draw(st.integers(1, 2))
    dims_list = []
    for _ in range(n):
        size = draw(st.integers(1, 3))
        lhs_dilate = draw(st.integers(1, 2))
        rhs_dilate = draw(st.integers(1, 2))
        in_size = draw(st.integers(1, 4))
        base = (in_size - 1) * lhs_dilate + 1
        low = draw(st.integers(-min(2, base - 1), 2))
        high = draw(st.integers(-min(2, base - 1 + min(low, 0)), 2))
        dims_list.append((in_size, WindowDim(size, draw(st.integers(1, 2)), low, high, rhs_dilate,
                                             lhs_dilate, draw(st.booleans()))))
    labels = "b" + "".join(str(k) for k in range(n)) + "f"
    lhs_labels = "".join(draw(st.permutations(labels)))
    rhs_labels = "".join(draw(st.permutations(labels.replace("b", "i").replace("f", "o"))))
    out_labels = "".join(draw(st.permutations(labels)))
    dims = ConvDims.parse(f"{lhs_labels}_{rhs_labels}->{out_labels}")
    win = Window(tuple(wd for _, wd in dims_list))
    lhs_shape = [0] * (n + 2)
    lhs_shape[dims.input_batch], lhs_shape[dims.input_feature] = batch, in_features * groups
    rhs_shape = [0] * (n + 2)
    rhs_shape[dims.kernel_input_feature] = in_features
    rhs_shape[dims.kernel_output_feature] = out_features
    for k, (in_size, wd) in enumerate(dims_list):
        lhs_shape[dims.input_spatial[k]] = in_size
        rhs_shape[dims.kernel_spatial[k]] = wd.size
    seed = draw(st.integers(0, 10_000))
    return lhs_shape, rhs_shape, win, dims, groups, batch_groups, seed


@settings(max_examples=60, deadline=None)
@given(conv_cases())
def test_conv_matches_naive_loops(case):
    lhs_shape, rhs_shape, win, dims, groups, batch_groups, seed = case
    rng = np.random.default_rng(seed)
    lhs = rng.integers(-5, 6, lhs_shape).astype(np.int32)
    rhs = rng.integers(-5, 6, rhs_shape).astype(np.int32)
    expected = naive_convolution(lhs, rhs, win, dims, groups, batch_groups)
    out = convolution(lhs, rhs, win, dims, groups, batch_groups, S32)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, expected)
    out_f = convolution(lhs.astype(np.float32), rhs.astype(np.float32), win, dims, groups,
                        batch_groups, F32)
    np.testing.assert_array_equal(out_f, expected.astype(np.float32))
