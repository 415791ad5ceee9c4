"""Property tests: the evaluator's numpy fast paths compute exactly what the kernels do."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hlo import parse_module
from hlo.attributes import DotDims
from hlo.diagnostics import HloError
from hlo.interpreter import Evaluator, arithmetic, linear, windows
from hlo.interpreter.combiner import Combiner
from hlo.interpreter.data_movement import bitcast
from hlo.interpreter.elementwise import (
    _FAST_BINARY,
    _FAST_FLOAT_UNARY,
    FAST_FLOAT_BINARY,
    extremum_given,
    run_unary,
)
from hlo.interpreter.linear import _matmul_form
from hlo.interpreter.values import broadcast_view
from hlo.interpreter.windows import _ufunc_reduce
from hlo.shapes import Layout, Shape, type_of_dtype

SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 1e-45, 3.4e38]


def float_arrays(dtype, shape):
    elements = st.one_of(st.sampled_from(SPECIALS), st.floats(width=np.dtype(dtype).itemsize * 8))
    return hnp.arrays(dtype, shape, elements=elements)


def bits(a: np.ndarray) -> np.ndarray:
    return a.view({4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal bit patterns, except that any NaN matches any NaN."""
    nan = np.isnan(a)
    return bool((nan == np.isnan(b)).all() and (bits(a)[~nan] == bits(b)[~nan]).all())


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_ieee_maximum_minimum_match_the_kernel(op, dtype, data):
    x = data.draw(float_arrays(dtype, 7))
    y = data.draw(float_arrays(dtype, 7))
    fast = FAST_FLOAT_BINARY[op](x, y)
    kernel = arithmetic.BINARY[op](x, y, type_of_dtype(np.dtype(dtype)))
    assert fast.dtype == kernel.dtype and same_values(fast, kernel)


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_float_arithmetic_matches_the_kernel(op, data):
    x = data.draw(float_arrays(np.float32, 6))
    y = data.draw(float_arrays(np.float32, 6))
    ufunc, _ = _FAST_BINARY[op]
    with np.errstate(all="ignore"):
        fast = ufunc(x, y)
    assert same_values(fast, arithmetic.BINARY[op](x, y, type_of_dtype(x.dtype)))


@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "maximum", "and", "xor"])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint32, np.int64])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_integer_fast_paths_wrap_like_the_kernel(op, dtype, data):
    x = data.draw(hnp.arrays(dtype, 6))
    y = data.draw(hnp.arrays(dtype, 6))
    ufunc, _ = _FAST_BINARY[op]
    with np.errstate(all="ignore"):
        fast = ufunc(x, y)
    np.testing.assert_array_equal(fast, arithmetic.BINARY[op](x, y, type_of_dtype(x.dtype)))


DOT_CASES = [
    ((4, 3), (3, 5), DotDims((), (1,), (), (0,))),
    ((4, 3), (5, 3), DotDims((), (1,), (), (1,))),
    ((3,), (3, 5), DotDims((), (0,), (), (0,))),
    ((4, 3), (3,), DotDims((), (1,), (), (0,))),
    ((2, 6, 3), (3, 5), DotDims((), (2,), (), (0,))),
    ((2, 4, 3), (2, 3, 5), DotDims((0,), (2,), (0,), (1,))),
    ((2, 7, 4, 3), (2, 7, 5, 3), DotDims((0, 1), (3,), (0, 1), (3,))),
    ((2, 3, 4), (2, 3, 5), DotDims((0,), (1,), (0,), (1,))),
    ((2, 4, 3), (2, 3), DotDims((0,), (2,), (0,), (1,))),
]


@pytest.mark.parametrize("lhs_shape, rhs_shape, dims", DOT_CASES)
def test_matmul_form_matches_dot_general(lhs_shape, rhs_shape, dims):
    rng = np.random.default_rng(0)
    lhs = rng.standard_normal(lhs_shape).astype(np.float32)
    rhs = rng.standard_normal(rhs_shape).astype(np.float32)
    fast = _matmul_form(lhs, rhs, dims)
    assert fast is not None
    expected = linear.dot_general(lhs, rhs, dims, type_of_dtype(np.float32))
    assert np.shape(fast) == expected.shape
    np.testing.assert_allclose(fast, expected, rtol=1e-5, atol=1e-5)


def test_matmul_form_declines_other_dimension_numbers():
    x = np.zeros((2, 3, 4), np.float32)
    assert _matmul_form(x, x, DotDims((2,), (1,), (2,), (1,))) is None  # batch dim not leading
    assert _matmul_form(x, x, DotDims((), (0, 1), (), (0, 1))) is None  # two contracting dims


def _combiner(ufunc):
    def fn(a, b):
        return (ufunc(a, b),)
    return Combiner(fn, 2, ufunc)


@pytest.mark.parametrize("ufunc", [np.add, np.maximum, np.minimum, np.multiply])
@settings(max_examples=40, deadline=None)
@given(x=hnp.arrays(np.float64, (3, 4), elements=st.floats(-1e6, 1e6)), axis=st.sampled_from([(0,), (1,), (0, 1)]))
def test_ufunc_reduce_matches_the_kernel(ufunc, x, axis):
    init = np.array({np.add: 0.0, np.maximum: -np.inf, np.minimum: np.inf, np.multiply: 1.0}[ufunc])
    fast = _ufunc_reduce(x, init, axis, ufunc)
    kernel = windows.reduce([x], [init], axis, _combiner(ufunc))[0]
    np.testing.assert_allclose(fast, kernel, rtol=1e-12)


def test_reduce_max_prefers_positive_zero_and_min_negative_zero():
    x = np.array([[-0.0, 0.0, -1.0], [-0.0, -0.0, -2.0]], np.float32)
    mx = _ufunc_reduce(x, np.array(-np.inf, np.float32), (1,), np.maximum)
    mn = _ufunc_reduce(-x, np.array(np.inf, np.float32), (1,), np.minimum)
    assert list(np.signbit(mx)) == [False, True]   # max{-0,+0,-1} = +0; max{-0,-0,-2} = -0
    assert list(np.signbit(mn)) == [True, False]   # min{+0,-0,1} = -0; min{+0,+0,2} = +0


def test_ufunc_reduce_declines_empty_and_mixed_inputs():
    assert _ufunc_reduce(np.zeros((0, 3)), np.array(0.0), (0,), np.maximum) is None
    assert _ufunc_reduce(np.zeros(3, np.float32), np.array(0.0), (0,), np.add) is None


@settings(max_examples=50, deadline=None)
@given(dims=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_bitcast_to_the_permuted_default_layout_is_a_transpose(dims, data):
    rank = len(dims)
    minor_to_major = tuple(data.draw(st.permutations(range(rank))))
    x = np.arange(int(np.prod(dims)), dtype=np.int32).reshape(dims)
    major_to_minor = tuple(reversed(minor_to_major))
    src = Shape.array("s32", dims, Layout(minor_to_major))
    dst = Shape.array("s32", [dims[d] for d in major_to_minor])  # default layout
    np.testing.assert_array_equal(bitcast(x, src, dst), x.transpose(major_to_minor))
    # ... and back again
    np.testing.assert_array_equal(bitcast(bitcast(x, src, dst), dst, src), x)


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_broadcast_view_equals_broadcast_to(data):
    out = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    expanded = [data.draw(st.sampled_from([1, n])) for n in out]
    x = np.arange(int(np.prod(expanded)), dtype=np.float32).reshape(expanded)
    view = broadcast_view(x, tuple(out))
    np.testing.assert_array_equal(view, np.broadcast_to(x, out))
    assert view.shape == tuple(out)


def test_integer_reductions_keep_their_type_and_wrap():
    x = np.array([[2**31 - 1, 1], [5, 6]], np.int32)
    total = _ufunc_reduce(x, np.array(0, np.int32), (1,), np.add)
    assert total.dtype == np.int32
    np.testing.assert_array_equal(total, [-2**31, 11])
    flags = _ufunc_reduce(np.array([[True, False], [False, False]]), np.array(False), (1,), np.bitwise_or)
    assert flags.dtype == np.bool_ and list(flags) == [True, False]


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("constant", [0.0, -0.0, 6.0, -np.inf, np.nan])
@settings(max_examples=30, deadline=None)
@given(x=float_arrays(np.float32, 9))
def test_extremum_with_a_broadcast_constant_matches_the_kernel(op, constant, x):
    c = np.broadcast_to(np.float32(constant), x.shape)
    for args in ((x, c), (c, x)):
        fast = FAST_FLOAT_BINARY[op](*args)
        kernel = arithmetic.BINARY[op](*[np.ascontiguousarray(a) for a in args], type_of_dtype(x.dtype))
        assert same_values(fast, kernel), (args, fast, kernel)


@pytest.mark.parametrize("op", sorted(_FAST_FLOAT_UNARY))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_float_functions_match_the_kernel_bit_for_bit(op, dtype, data):
    x = data.draw(float_arrays(dtype, 8))
    class Inst:  # just what run_unary reads
        opcode = op
        shape = Shape.array(type_of_dtype(np.dtype(dtype)), (8,))

    with np.errstate(all="ignore"):
        fast = run_unary(None, Inst, [x])
        kernel = arithmetic.UNARY[op](x, type_of_dtype(np.dtype(dtype)))
    assert fast.dtype == kernel.dtype and same_values(fast, kernel)


# --------------------------------------------------------------------------- generated plan code

@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("constant", [0.0, -0.0, 6.0, -np.inf, np.nan])
@settings(max_examples=30, deadline=None)
@given(x=float_arrays(np.float32, 9))
def test_extremum_specialised_for_a_known_operand_matches_the_kernel(op, constant, x):
    for shape in ((1,), (), (9,)):  # a compact broadcast, a scalar, a zero-stride view
        c = np.broadcast_to(np.float32(constant), shape)
        kernel = extremum_given(FAST_FLOAT_BINARY[op], c)
        for args in ((x, c), (c, x)):
            with np.errstate(all="ignore"):
                fast = np.asarray(kernel(*args))
            full = [np.ascontiguousarray(np.broadcast_to(a, x.shape)) for a in args]
            expected = arithmetic.BINARY[op](*full, type_of_dtype(x.dtype))
            assert same_values(fast, expected), (args, fast, expected)


SPECIALISED_MODULE = """
HloModule specialised

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

relu {
  x = f32[3,4] parameter(0)
  zero = f32[] constant(0)
  zeros = f32[3,4] broadcast(zero), dimensions={}
  ROOT r = f32[3,4] maximum(x, zeros)
}

ENTRY main {
  x = f32[3,4] parameter(0)
  bias = f32[4] parameter(1)
  w = f32[4,2] parameter(2)
  rowscale = f32[3] parameter(3)
  b = f32[3,4] broadcast(bias), dimensions={1}
  sum = f32[3,4] add(x, b)
  r = f32[3,4] call(sum), to_apply=relu
  rs = f32[3,4] broadcast(rowscale), dimensions={0}
  scaled = f32[3,4] multiply(r, rs)
  e = f32[3,4] exponential(scaled)
  ninf = f32[] constant(-inf)
  rowmax = f32[3] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  zero = f32[] constant(0)
  total = f32[] reduce(e, zero), dimensions={0,1}, to_apply=add_f32
  mx = f32[] reduce(rowmax, ninf), dimensions={0}, to_apply=max_f32
  both = f32[] add(total, mx)
  d = f32[3,2] dot(e, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[2,3] transpose(d), dimensions={1,0}
  flat = f32[6] reshape(t)
  lt = pred[3,4] compare(x, b), direction=LT
  sel = f32[3,4] select(lt, x, b)
  neg = f32[3,4] negate(sel)
  mn = f32[3,4] minimum(neg, x)
  ROOT out = (f32[6], f32[], f32[3], f32[3,4], f32[3,4]) tuple(flat, both, rowmax, mn, r)
}
"""


def _specialised_inputs(seed: int):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    x[0, :2] = [-0.0, 0.0]
    bias = np.array([0.0, -0.0, 0.5, np.nan], np.float32)
    return [x, bias, rng.standard_normal((4, 2)).astype(np.float32), rng.standard_normal(3).astype(np.float32)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_code_computes_what_the_step_by_step_loop_does(seed):
    module = parse_module(SPECIALISED_MODULE, "specialised.hlo")
    args = _specialised_inputs(seed)
    ev = Evaluator(module)
    stepwise = ev.run(args)  # the first run goes step by step, the next ones run generated code
    compiled = ev.run(args)
    assert ev.plans.plan(module.entry).code is not None
    assert len(compiled) == len(stepwise) == 5
    for fast, slow in zip(compiled, stepwise):
        assert type(fast) is np.ndarray and fast.dtype == slow.dtype and fast.shape == slow.shape
        assert same_values(fast, slow)
    relu = compiled[4]
    assert not np.signbit(relu[0, :2]).any()  # max(-0, +0) is +0


def test_generated_entry_code_calls_numpy_directly():
    module = parse_module(SPECIALISED_MODULE, "specialised.hlo")
    ev = Evaluator(module)
    for _ in range(2):
        ev.run(_specialised_inputs(0))
    source = ev.plans.plan(module.entry).code.source
    run_body = source.split("def run(args):")[1]
    assert "(ev," not in run_body, source  # no handler calls left for these ops
    assert "reshape((1, 4))" not in source  # a trailing broadcast is left to numpy


def test_errors_in_generated_code_point_at_the_failing_instruction():
    text = """
HloModule m

ENTRY main {
  x = f32[4] parameter(0)
  n = s32[] parameter(1)
  y = f32[4] negate(x)
  ROOT s = f32[4] set-dimension-size(y, n), dimensions={0}
}
"""
    module = parse_module(text, "m.hlo")
    ev = Evaluator(module)
    x = np.zeros(4, np.float32)
    np.testing.assert_array_equal(ev.run([x, np.array(4, np.int32)]), x)
    with pytest.raises(HloError) as info:
        ev.run([x, np.array(5, np.int32)])  # beyond the size of the dimension
    message = str(info.value)
    assert "set-dimension-size failed" in message and "m.hlo:8:" in message, message


def test_scalar_results_of_generated_code_are_arrays():
    text = """
HloModule m

ENTRY main {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] add(a, b)
  e = f32[] exponential(s)
  c = pred[] compare(a, b), direction=LT
  ROOT t = (f32[], f32[], pred[]) tuple(s, e, c)
}
"""
    ev = Evaluator(parse_module(text, "m.hlo"))
    for _ in range(2):
        out = ev.run([np.array(1, np.float32), np.array(2, np.float32)])
    assert all(type(v) is np.ndarray and v.ndim == 0 for v in out)
    assert out[0] == 3 and out[2]


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_integer_extremum_with_a_constant_operand_in_generated_code(op):
    """Generated code writes max/min of integers as numpy's (the IEEE float kernel is for floats)."""
    module = parse_module(f"""HloModule m
ENTRY e {{
  x = s32[4] parameter(0)
  z = s32[] constant(0)
  b = s32[4] broadcast(z), dimensions={{}}
  ROOT r = s32[4] {op}(x, b)
}}""")
    ev = Evaluator(module)
    x = np.array([-1, 2, -3, 4], np.int32)
    expected = np.maximum(x, 0) if op == "maximum" else np.minimum(x, 0)
    for _ in range(3):  # the second run builds the generated code
        np.testing.assert_array_equal(ev.run([x]), expected)

