"""The evaluator on small hand-written modules, one opcode family at a time.

Expected values are worked out by hand in the comments next to them.
"""
import numpy as np
import pytest

from hlo import HloError, parse_module, run
from hlo.interpreter import Evaluator, run_devices
from hlo.interpreter.evaluator import TOKEN, _HANDLERS, binary_ufunc, bitcast
from hlo.opcodes import OPCODES
from hlo.shapes import Layout, Shape

F32 = np.float32


def run1(text, *args, **kw):
    """The single result array of a module."""
    out = run(text, *args, **kw)
    assert len(out) == 1
    return out[0]


def line_of(text: str, snippet: str) -> int:
    """1-based number of the first line of text containing snippet."""
    return next(n for n, line in enumerate(text.splitlines(), 1) if snippet in line)


def assert_located(err: HloError, text: str, snippet: str) -> None:
    assert err.diagnostics[0].loc.line == line_of(text, snippet), err.render()


def module(body: str, *computations: str) -> str:
    return "HloModule m\n\n" + "\n\n".join(computations) + "\n\nENTRY e {\n" + body + "\n}\n"


ADD = """add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}"""


# --------------------------------------------------------------------------- dispatch table

def test_every_opcode_has_a_handler():
    missing = set(OPCODES) - set(_HANDLERS)
    # parameters are bound, not executed; collective-reduce has no public semantics
    assert missing == {"parameter", "collective-reduce"}


def test_unsupported_opcode_is_a_located_error():
    text = module("""  p = f32[4] parameter(0)
  ROOT r = f32[4] collective-reduce(p), to_apply=add""", ADD)
    with pytest.raises(HloError) as info:
        run(text, np.zeros(4, F32))
    assert "collective-reduce" in info.value.message
    assert_located(info.value, text, "collective-reduce(p)")


# --------------------------------------------------------------------------- elementwise and data movement

def test_elementwise_chain():
    text = module("""  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  s = f32[3] add(x, y)
  m = f32[3] multiply(s, y)
  c = pred[3] compare(m, x), direction=GT
  ROOT r = s32[3] convert(c)""")
    # s = {3, 1, 0}; m = {6, -1, 0}; m > x = {6>1, -1>2, 0>3} = {1, 0, 0}
    np.testing.assert_array_equal(run1(text, np.array([1, 2, 3], F32), np.array([2, -1, -3], F32)), [1, 0, 0])


def test_maximum_minimum_follow_ieee_signed_zeros_and_nan():
    text = module("""  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  mx = f32[4] maximum(x, y)
  mn = f32[4] minimum(x, y)
  ROOT t = (f32[4], f32[4]) tuple(mx, mn)""")
    x = np.array([-0.0, 0.0, np.nan, 1.0], F32)
    y = np.array([0.0, -0.0, 1.0, np.nan], F32)
    mx, mn = run(text, x, y)
    assert list(np.signbit(mx[:2])) == [False, False]  # max(-0, +0) = +0 either way round
    assert list(np.signbit(mn[:2])) == [True, True]    # min(-0, +0) = -0
    assert np.isnan(mx[2:]).all() and np.isnan(mn[2:]).all()


def test_integer_arithmetic_wraps():
    text = module("""  x = s32[2] parameter(0)
  y = s32[2] parameter(1)
  ROOT a = s32[2] add(x, y)""")
    out = run1(text, np.array([2**31 - 1, -5], np.int32), np.array([1, 3], np.int32))
    np.testing.assert_array_equal(out, [-2**31, -2])


def test_broadcast_reshape_transpose_slice_concatenate_reverse_pad():
    text = module("""  v = f32[3] parameter(0)
  b = f32[2,3] broadcast(v), dimensions={1}
  t = f32[3,2] transpose(b), dimensions={1,0}
  r = f32[6] reshape(t)
  s = f32[3] slice(r), slice={[1:6:2]}
  rv = f32[3] reverse(s), dimensions={0}
  c = f32[6] concatenate(s, rv), dimensions={0}
  z = f32[] constant(9)
  ROOT p = f32[9] pad(c, z), padding=1_2_0""")
    # b = {{1,2,3},{1,2,3}}; t = {{1,1},{2,2},{3,3}}; r = {1,1,2,2,3,3}
    # s = r[1], r[3], r[5] = {1,2,3}; rv = {3,2,1}; c = {1,2,3,3,2,1}
    out = run1(text, np.array([1, 2, 3], F32))
    np.testing.assert_array_equal(out, [9, 1, 2, 3, 3, 2, 1, 9, 9])


def test_broadcast_with_unsorted_dimensions():
    text = module("""  m = f32[2,3] parameter(0)
  ROOT b = f32[3,4,2] broadcast(m), dimensions={2,0}""")
    m = np.arange(6, dtype=F32).reshape(2, 3)
    out = run1(text, m)
    # out[i, k, j] = m[j, i]
    np.testing.assert_array_equal(out, np.broadcast_to(m.T[:, None, :], (3, 4, 2)))


def test_iota_and_tuples():
    text = module("""  i = s32[2,3] iota(), iota_dimension=1
  i0 = s32[] constant(7)
  t = (s32[2,3], s32[]) tuple(i, i0)
  ROOT g = s32[2,3] get-tuple-element(t), index=0""")
    np.testing.assert_array_equal(run1(text), [[0, 1, 2], [0, 1, 2]])


def test_dynamic_slice_clamps_and_update_slice():
    text = module("""  x = s32[5] parameter(0)
  i = s32[] parameter(1)
  d = s32[2] dynamic-slice(x, i), dynamic_slice_sizes={2}
  ROOT u = s32[5] dynamic-update-slice(x, d, i)""")
    x = np.array([10, 11, 12, 13, 14], np.int32)
    # start 7 clamps to 3: d = {13, 14}; writing it back at 3 leaves x unchanged
    np.testing.assert_array_equal(run1(text, x, np.int32(7)), x)
    # start 1: d = {11, 12}, written back at 1
    np.testing.assert_array_equal(run1(text, x, np.int32(1)), x)


def test_get_dimension_size():
    text = module("""  x = f32[3,7] parameter(0)
  ROOT n = s32[] get-dimension-size(x), dimensions={1}""")
    assert run1(text, np.zeros((3, 7), F32)) == 7


# --------------------------------------------------------------------------- bitcast and layouts

def test_bitcast_reinterprets_the_physical_buffer():
    text = module("""  x = f32[2,3]{0,1} parameter(0)
  ROOT b = f32[3,2]{1,0} bitcast(x)""")
    # layout {0,1}: dim 0 is minor, so the buffer holds x column by column:
    # x = {{0,1,2},{3,4,5}} -> buffer 0,3,1,4,2,5 -> read row-major as 3x2
    x = np.arange(6, dtype=F32).reshape(2, 3)
    np.testing.assert_array_equal(run1(text, x), [[0, 3], [1, 4], [2, 5]])


def test_bitcast_to_a_column_major_result():
    # buffer 0..5 row-major; the result f32[2,3]{0,1} reads it column by column
    x = np.arange(6, dtype=F32)
    out = bitcast(x, Shape.array("f32", (6,)), Shape.array("f32", (2, 3), Layout((0, 1))))
    np.testing.assert_array_equal(out, [[0, 2, 4], [1, 3, 5]])


def test_bitcast_with_default_layouts_is_reshape_and_may_change_type():
    text = module("""  x = f32[2,2] parameter(0)
  ROOT b = s32[4] bitcast(x)""")
    x = np.array([[1.0, -2.0], [0.5, 0.0]], F32)
    np.testing.assert_array_equal(run1(text, x), x.reshape(-1).view(np.int32))


def test_bitcast_that_changes_the_byte_size_is_a_located_error():
    text = module("""  x = f32[4] parameter(0)
  ROOT b = f32[5] bitcast(x)""")
    with pytest.raises(HloError) as info:
        run(text, np.zeros(4, F32))
    assert info.value.message.startswith("bitcast failed")
    assert_located(info.value, text, "bitcast(x)")


# --------------------------------------------------------------------------- control flow

LOOP = module("""  zero = s32[] constant(0)
  acc = f32[] constant(1)
  init = (s32[], f32[]) tuple(zero, acc)
  ROOT w = (s32[], f32[]) while(init), condition=cond, body=body""",
              """cond {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}""", """body {
  s = (s32[], f32[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[] get-tuple-element(s), index=1
  one = s32[] constant(1)
  two = f32[] constant(2)
  i1 = s32[] add(i, one)
  v1 = f32[] multiply(v, two)
  ROOT t = (s32[], f32[]) tuple(i1, v1)
}""")


def test_while_loop():
    i, v = run(LOOP)
    assert i == 5 and v == 32  # five doublings of 1


def test_while_loop_computes_static_values_once():
    ev = Evaluator(parse_module(LOOP, "loop"), profile=True)
    assert ev.run([])[1] == 32
    counts = {inst.name: record[0] for inst, record in ev.profile.items()}
    assert counts["one"] == counts["two"] == counts["n"] == 1  # constants: once, not per iteration
    assert counts["i1"] == 5


def test_plans_inline_calls_and_skip_pass_through_instructions():
    text = module("""  x = f32[2] parameter(0)
  r = f32[1,2] reshape(x)
  b = f32[1,2] broadcast(r), dimensions={0,1}
  back = f32[2] reshape(b)
  c = f32[2] copy(back)
  ROOT n = f32[2] call(c), to_apply=neg""", """neg {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p)
}""")
    mod = parse_module(text, "m")
    ev = Evaluator(mod)
    np.testing.assert_array_equal(ev.run([np.array([1, 2], F32)]), [-1, -2])
    plan = ev._plans.plan(mod.entry)
    assert [step[1].opcode for step in plan.steps] == ["negate"]


BRANCHES = ["""neg {
  x = f32[] parameter(0)
  ROOT n = f32[] negate(x)
}""", """ident {
  ROOT x = f32[] parameter(0)
}""", """flr {
  x = f32[] parameter(0)
  ROOT f = f32[] floor(x)
}"""]


@pytest.mark.parametrize("index, expected", [(0, -1.5), (1, 2.5), (2, 3.0), (7, 3.0), (-1, 3.0)])
def test_indexed_conditional_runs_the_last_branch_when_out_of_range(index, expected):
    text = module("""  i = s32[] parameter(0)
  a = f32[] constant(1.5)
  b = f32[] constant(2.5)
  c = f32[] constant(3.75)
  ROOT r = f32[] conditional(i, a, b, c), branch_computations={neg, ident, flr}""", *BRANCHES)
    assert run1(text, np.int32(index)) == expected


@pytest.mark.parametrize("pred, expected", [(True, -2.0), (False, 5.0)])
def test_predicated_conditional(pred, expected):
    text = module("""  p = pred[] parameter(0)
  a = f32[] constant(2)
  b = f32[] constant(5)
  ROOT r = f32[] conditional(p, a, b), true_computation=neg, false_computation=ident""", *BRANCHES[:2])
    assert run1(text, np.bool_(pred)) == expected


def test_call_and_fusion_evaluate_their_computation():
    text = module("""  x = f32[2] parameter(0)
  c = f32[2] call(x, x), to_apply=twice
  ROOT f = f32[2] fusion(c), kind=kLoop, calls=fused""", """twice {
  a = f32[2] parameter(0)
  b = f32[2] parameter(1)
  ROOT s = f32[2] add(a, b)
}""", """fused {
  p = f32[2]{0} parameter(0)
  b = f32[1,2]{1,0} bitcast(p)
  c = f32[1,2]{0,1} copy(b)
  ROOT r = f32[2]{0} bitcast(c)
}""")
    # copy to layout {0,1} then bitcast: for a 1x2 array both layouts hold the same order
    np.testing.assert_array_equal(run1(text, np.array([1, 2], F32)), [2, 4])


def test_map_with_a_vectorised_computation():
    text = module("""  x = f32[3] parameter(0)
  y = f32[3] parameter(1)
  ROOT m = f32[3] map(x, y), dimensions={0}, to_apply=add""", ADD)
    np.testing.assert_array_equal(run1(text, np.array([1, 2, 3], F32), np.array([10, 20, 30], F32)),
                                  [11, 22, 33])


def test_map_with_a_non_scalar_step_is_evaluated_per_element():
    # the mapped computation builds a vector and sums it: f(x) = 3 * x
    text = module("""  x = f32[4] parameter(0)
  ROOT m = f32[4] map(x), dimensions={0}, to_apply=triple""", ADD, """triple {
  x = f32[] parameter(0)
  v = f32[3] broadcast(x), dimensions={}
  z = f32[] constant(0)
  ROOT s = f32[] reduce(v, z), dimensions={0}, to_apply=add
}""")
    np.testing.assert_array_equal(run1(text, np.array([1, 2, -1, 0.5], F32)), [3, 6, -3, 1.5])


def test_variadic_reduce_argmax():
    text = module("""  v = f32[5] parameter(0)
  i = s32[5] iota(), iota_dimension=0
  ninf = f32[] constant(-inf)
  zero = s32[] constant(0)
  ROOT r = (f32[], s32[]) reduce(v, i, ninf, zero), dimensions={0}, to_apply=argmax""", """argmax {
  av = f32[] parameter(0)
  ai = s32[] parameter(1)
  bv = f32[] parameter(2)
  bi = s32[] parameter(3)
  gt = pred[] compare(av, bv), direction=GT
  eq = pred[] compare(av, bv), direction=EQ
  lt = pred[] compare(ai, bi), direction=LT
  tie = pred[] and(eq, lt)
  keep = pred[] or(gt, tie)
  v = f32[] select(keep, av, bv)
  i = s32[] select(keep, ai, bi)
  ROOT t = (f32[], s32[]) tuple(v, i)
}""")
    value, index = run(text, np.array([3, 9, 1, 9, 2], F32))
    assert value == 9 and index == 1  # the first of the two maxima


def test_reduce_with_a_ufunc_computation_and_init():
    text = module("""  x = f32[2,3] parameter(0)
  ten = f32[] constant(10)
  ROOT r = f32[2] reduce(x, ten), dimensions={1}, to_apply=add""", ADD)
    np.testing.assert_array_equal(run1(text, np.arange(6, dtype=F32).reshape(2, 3)), [13, 22])


def test_sort_with_comparator_keeps_values_paired():
    text = module("""  k = s32[4] parameter(0)
  v = f32[4] parameter(1)
  ROOT s = (s32[4], f32[4]) sort(k, v), dimensions={0}, is_stable=true, to_apply=less""", """less {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = f32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}""")
    keys, values = run(text, np.array([3, 1, 3, 0], np.int32), np.array([30, 10, 31, 0], F32))
    np.testing.assert_array_equal(keys, [0, 1, 3, 3])
    np.testing.assert_array_equal(values, [0, 10, 30, 31])  # stable: 30 before 31


def test_scatter_add_with_duplicate_indices():
    text = module("""  x = f32[4] parameter(0)
  idx = s32[3,1] parameter(1)
  upd = f32[3] parameter(2)
  ROOT s = f32[4] scatter(x, idx, upd), update_window_dims={}, inserted_window_dims={0},
      scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=add""", ADD)
    out = run1(text, np.zeros(4, F32), np.array([[1], [3], [1]], np.int32), np.array([1, 2, 4], F32))
    np.testing.assert_array_equal(out, [0, 5, 0, 2])


def test_scan_prefix_sum():
    text = module("""  x = f32[3] parameter(0)
  z = f32[] constant(0)
  ROOT s = (f32[3], f32[]) scan(x, z), dimensions={0}, num_carries=1, to_apply=step""", """step {
  x = f32[] parameter(0)
  c = f32[] parameter(1)
  s = f32[] add(x, c)
  ROOT t = (f32[], f32[]) tuple(s, s)
}""")
    outs, carry = run(text, np.array([1, 2, 3], F32))
    np.testing.assert_array_equal(outs, [1, 3, 6])
    assert carry == 6


# --------------------------------------------------------------------------- custom calls

def test_topk_custom_call():
    text = module("""  x = f32[5] parameter(0)
  ROOT t = (f32[2], s32[2]) custom-call(x), custom_call_target="TopK", called_computations={gt}""", """gt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GT
}""")
    values, indices = run(text, np.array([1, 5, 3, 5, 0], F32))
    np.testing.assert_array_equal(values, [5, 5])
    np.testing.assert_array_equal(indices, [1, 3])


def test_lapack_potrf_custom_call():
    text = module("""  a = f32[2,2]{0,1} parameter(0)
  ROOT c = (f32[2,2]{0,1}, s32[]) custom-call(a), custom_call_target="lapack_spotrf_ffi",
      operand_layout_constraints={f32[2,2]{0,1}}, api_version=API_VERSION_TYPED_FFI,
      backend_config={uplo = 76 : ui8}""")
    factor, info = run(text, np.array([[4, 2], [2, 5]], F32))
    # lower factor of {{4,2},{2,5}}: {{2,0},{1,2}}; the upper triangle keeps the input
    np.testing.assert_allclose(np.tril(factor), [[2, 0], [1, 2]])
    assert info == 0


def test_unknown_custom_call_target_names_target_and_location():
    text = module("""  x = f32[2] parameter(0)
  ROOT c = f32[2] custom-call(x), custom_call_target="my_kernel\"""")
    with pytest.raises(HloError) as info:
        run(text, np.zeros(2, F32))
    assert '"my_kernel"' in info.value.message
    assert_located(info.value, text, "custom-call(x)")


def test_elided_constant_data_is_an_error():
    text = module("""  c = f32[1000] constant({...})
  ROOT n = f32[1000] negate(c)""")
    with pytest.raises(HloError) as info:
        run(text)
    assert "elided" in info.value.message
    assert_located(info.value, text, "constant({...})")


def test_unused_elided_constant_is_not_evaluated():
    text = module("""  c = f32[1000] constant({...})
  ROOT z = f32[] constant(1)""")
    assert run1(text) == 1


# --------------------------------------------------------------------------- host transfers and tokens

def test_infeed_and_outfeed():
    text = module("""  tok = token[] after-all()
  in = ((f32[2], s32[]), token[]) infeed(tok)
  d = (f32[2], s32[]) get-tuple-element(in), index=0
  t2 = token[] get-tuple-element(in), index=1
  x = f32[2] get-tuple-element(d), index=0
  n = f32[2] negate(x)
  out = token[] outfeed(n, t2), outfeed_shape=f32[2]{0}
  ROOT r = s32[] get-tuple-element(d), index=1""")
    ev = Evaluator(parse_module(text, "feed"), infeed=[np.array([1, 2], F32), np.int32(7)])
    assert ev.run([]) == 7
    assert len(ev.outfeed) == 1
    np.testing.assert_array_equal(ev.outfeed[0], [-1, -2])


def test_empty_infeed_is_a_located_error():
    text = module("""  tok = token[] after-all()
  ROOT in = (f32[2], token[]) infeed(tok)""")
    with pytest.raises(HloError) as info:
        run(text)
    assert "infeed queue is empty" in info.value.message
    assert_located(info.value, text, "infeed(tok)")


def test_send_and_recv_on_one_device():
    text = module("""  x = f32[2] parameter(0)
  tok = token[] after-all()
  r = (f32[2], u32[], token[]) recv(tok), channel_id=3
  s = (f32[2], u32[], token[]) send(x, tok), channel_id=3
  sd = token[] send-done(s), channel_id=3
  rd = (f32[2], token[]) recv-done(r), channel_id=3
  ROOT v = f32[2] get-tuple-element(rd), index=0""")
    np.testing.assert_array_equal(run1(text, np.array([4, 5], F32)), [4, 5])


def test_token_values():
    text = module("""  a = token[] after-all()
  x = f32[] constant(1)
  ROOT d = f32[] add-dependency(x, a)""")
    assert run1(text) == 1
    assert repr(TOKEN) == "token"


# --------------------------------------------------------------------------- async forms

def test_async_start_done_and_copy_start_done():
    text = module("""  x = f32[2] parameter(0)
  s = ((f32[2]), f32[2], s32[]) async-start(x), calls=neg
  u = ((f32[2]), f32[2], s32[]) async-update(s)
  d = f32[2] async-done(u)
  cs = (f32[2], f32[2], u32[]) copy-start(d)
  ROOT cd = f32[2] copy-done(cs)""", """neg {
  p = f32[2] parameter(0)
  ROOT n = f32[2] negate(p)
}""")
    np.testing.assert_array_equal(run1(text, np.array([1, -3], F32)), [-1, 3])


def test_async_collectives_on_one_device():
    text = module("""  x = f32[2] parameter(0)
  s = f32[2] all-reduce-start(x), replica_groups={}, to_apply=add
  ar = f32[2] all-reduce-done(s)
  gs = (f32[2], f32[2]) all-gather-start(ar), replica_groups={}, dimensions={0}
  ROOT ag = f32[2] all-gather-done(gs)""", ADD)
    np.testing.assert_array_equal(run1(text, np.array([1, 2], F32)), [1, 2])


# --------------------------------------------------------------------------- several devices

def test_all_reduce_and_replica_id_over_two_replicas():
    text = """HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[2] parameter(0)
  s = f32[2] all-reduce(x), replica_groups={}, to_apply=add
  id = u32[] replica-id()
  ROOT t = (f32[2], u32[]) tuple(s, id)
}
"""
    per_device = run(text, per_device_inputs=[[np.array([1, 2], F32)], [np.array([10, 20], F32)]])
    assert len(per_device) == 2
    for d, (total, rid) in enumerate(per_device):
        np.testing.assert_array_equal(total, [11, 22])
        assert rid == d


def test_failing_device_raises_its_error():
    text = """HloModule m, replica_count=2

ENTRY e {
  x = f32[2] parameter(0)
  ROOT b = f32[3] bitcast(x)
}
"""
    mod = parse_module(text, "m")
    with pytest.raises(HloError):
        run_devices(mod, [[np.zeros(2, F32)], [np.zeros(2, F32)]], replicas=2)


# --------------------------------------------------------------------------- randomness

def test_rng_uniform_stays_in_range_and_is_seeded():
    text = module("""  a = f32[] constant(2)
  b = f32[] constant(3)
  ROOT r = f32[100] rng(a, b), distribution=rng_uniform""")
    first = run1(text, seed=1)
    assert ((first >= 2) & (first < 3)).all()
    np.testing.assert_array_equal(first, run1(text, seed=1))


def test_rng_get_and_update_state_advances():
    text = module("""  a = u64[2] rng-get-and-update-state(), delta=5
  b = u64[2] rng-get-and-update-state(), delta=1
  ROOT t = (u64[2], u64[2]) tuple(a, b)""")
    a, b = run(text)
    assert int(b[0]) - int(a[0]) == 5 or int(a[0]) - int(b[0]) == 5


# --------------------------------------------------------------------------- arguments

def test_argument_with_wrong_shape_names_the_parameter():
    text = module("""  x = f32[2] parameter(0)
  y = f32[3] parameter(1)
  ROOT a = f32[2] negate(x)""")
    with pytest.raises(HloError) as info:
        run(text, np.zeros(2, F32), np.zeros(4, F32))
    msg = info.value.message
    assert "parameter 1 (%y)" in msg and "f32[3]" in msg and "f32[4]" in msg
    assert_located(info.value, text, "y = f32[3] parameter(1)")


def test_argument_with_wrong_dtype_and_missing_argument():
    text = module("""  x = s32[2] parameter(0)
  ROOT a = s32[2] negate(x)""")
    with pytest.raises(HloError) as info:
        run(text, np.zeros(2, np.int64))
    assert "expected s32[2], given s64[2]" in info.value.message
    with pytest.raises(HloError) as info:
        run(text)
    assert "takes 1 argument(s), 0 given" in info.value.message


def test_bf16_parameters_accept_raw_bits():
    text = module("""  x = bf16[2] parameter(0)
  ROOT c = f32[2] convert(x)""")
    raw = np.array([0x3F80, 0xC040], np.uint16)  # 1.0 and -3.0 in bf16
    np.testing.assert_array_equal(run1(text, raw), [1.0, -3.0])


# --------------------------------------------------------------------------- profiling and combiners

def test_profile_records_own_time_per_instruction():
    ev = Evaluator(parse_module(LOOP, "loop"), profile=True)
    ev.run([])
    counts = {inst.name: record[0] for inst, record in ev.profile.items()}
    assert counts["w"] == 1
    assert counts["i1"] == 5 and counts["lt"] == 6
    assert all(seconds >= 0 for _, seconds in ev.profile.values())


def test_binary_ufunc_detection():
    mod = parse_module(module("""  ROOT z = f32[] constant(0)""", ADD, """sub {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] subtract(a, b)
}""", """swapped {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(b, a)
}"""), "m")
    assert binary_ufunc(mod.computation("add")) is np.add
    assert binary_ufunc(mod.computation("sub")) is None
    assert binary_ufunc(mod.computation("swapped")) is None


# --------------------------------------------------------------------------- more opcode families

def test_ragged_dot_groups_rows():
    text = module("""  x = f32[4,2] parameter(0)
  w = f32[2,2,3] parameter(1)
  gs = u32[2] parameter(2)
  ROOT r = f32[4,3] ragged-dot(x, w, gs), lhs_contracting_dims={1}, rhs_contracting_dims={1},
      lhs_ragged_dims={0}, rhs_group_dims={0}""")
    x = np.array([[1, 0], [0, 1], [1, 1], [2, 2]], F32)
    w = np.array([[[1, 2, 3], [4, 5, 6]], [[10, 20, 30], [40, 50, 60]]], F32)
    # group sizes {1, 2}: row 0 uses w[0], rows 1-2 use w[1], row 3 lies past the groups
    out = run1(text, x, w, np.array([1, 2], np.uint32))
    np.testing.assert_array_equal(out, [[1, 2, 3], [40, 50, 60], [50, 70, 90], [0, 0, 0]])


def test_scaled_dot_dequantises_by_blocks():
    text = module("""  l = f32[1,4] parameter(0)
  r = f32[1,4] parameter(1)
  ls = f32[1,2] parameter(2)
  rs = f32[1,1] parameter(3)
  ROOT d = f32[1,1] scaled-dot(l, r, ls, rs), lhs_contracting_dims={1}, rhs_contracting_dims={1}""")
    # lhs scales {2, 3} cover blocks of 2: lhs' = {2,2,3,3}; rhs' = {1,2,3,4}; dot = 2+4+9+12
    out = run1(text, np.ones((1, 4), F32), np.array([[1, 2, 3, 4]], F32), np.array([[2, 3]], F32),
               np.ones((1, 1), F32))
    assert out[0, 0] == 27


def test_dynamic_reshape_and_set_dimension_size_with_static_sizes():
    text = module("""  x = f32[6] parameter(0)
  two = s32[] constant(2)
  three = s32[] constant(3)
  r = f32[2,3] dynamic-reshape(x, two, three)
  ROOT s = f32[2,3] set-dimension-size(r, three), dimensions={1}""")
    np.testing.assert_array_equal(run1(text, np.arange(6, dtype=F32)), [[0, 1, 2], [3, 4, 5]])


def test_dynamic_sizes_below_the_bound_are_reported():
    text = module("""  x = f32[6] parameter(0)
  n = s32[] constant(4)
  ROOT s = f32[<=6] set-dimension-size(x, n), dimensions={0}""")
    with pytest.raises(HloError) as info:
        run(text, np.zeros(6, F32))
    assert "dynamic dimension sizes are not supported" in info.value.message


def test_reduce_window_and_select_and_scatter():
    text = module("""  x = f32[4] parameter(0)
  z = f32[] constant(0)
  rw = f32[3] reduce-window(x, z), window={size=2}, to_apply=add
  src = f32[2] constant({10, 20})
  ss = f32[4] select-and-scatter(x, src, z), window={size=2 stride=2}, select=ge, scatter=add
  ROOT t = (f32[3], f32[4]) tuple(rw, ss)""", ADD, """ge {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=GE
}""")
    rw, ss = run(text, np.array([1, 5, 2, 7], F32))
    np.testing.assert_array_equal(rw, [6, 7, 9])       # sums of neighbours
    np.testing.assert_array_equal(ss, [0, 10, 0, 20])  # each window's maximum gets its source value


def test_gather_rows():
    text = module("""  x = f32[3,2] parameter(0)
  i = s32[2,1] parameter(1)
  ROOT g = f32[2,2] gather(x, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0},
      index_vector_dim=1, slice_sizes={1,2}""")
    x = np.array([[1, 2], [3, 4], [5, 6]], F32)
    np.testing.assert_array_equal(run1(text, x, np.array([[2], [0]], np.int32)), [[5, 6], [1, 2]])


def test_topk_op_and_linear_algebra():
    text = module("""  x = f32[4] parameter(0)
  a = f32[2,2] parameter(1)
  t = (f32[2], s32[2]) topk(x), k=2, largest=true
  c = f32[2,2] cholesky(a), lower=true
  b = f32[2,1] constant({{2}, {5}})
  s = f32[2,1] triangular-solve(c, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  ROOT r = ((f32[2], s32[2]), f32[2,2], f32[2,1]) tuple(t, c, s)""")
    values, indices, factor, solution = run(text, np.array([3, 9, 1, 4], F32),
                                            np.array([[4, 2], [2, 5]], F32))
    np.testing.assert_array_equal(values, [9, 4])
    np.testing.assert_array_equal(indices, [1, 3])
    np.testing.assert_allclose(factor, [[2, 0], [1, 2]])
    np.testing.assert_allclose(solution, [[1], [2]])  # {{2,0},{1,2}} x = {2,5}: x = {1, 2}


def test_fft_and_complex():
    text = module("""  re = f32[4] parameter(0)
  im = f32[4] constant({0, 0, 0, 0})
  z = c64[4] complex(re, im)
  ROOT f = c64[4] fft(z), fft_type=FFT, fft_length={4}""")
    out = run1(text, np.array([1, 1, 1, 1], F32))
    np.testing.assert_allclose(out, [4, 0, 0, 0], atol=1e-6)


def test_rng_bit_generator_is_a_pure_function_of_its_state():
    text = module("""  s = u64[2] parameter(0)
  ROOT r = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_three_fry""")
    state = np.array([1, 2], np.uint64)
    first, second = run(text, state), run(text, state)
    np.testing.assert_array_equal(first[1], second[1])
    assert first[0][0] == 1  # the key word is returned unchanged


def test_clamp_and_reduce_precision():
    text = module("""  x = f32[3] parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  c = f32[3] clamp(lo, x, hi)
  ROOT r = f32[3] reduce-precision(c), exponent_bits=5, mantissa_bits=2""")
    # clamp -> {0, 0.6, 1}; 0.6 with 2 mantissa bits rounds to 0.625
    np.testing.assert_array_equal(run1(text, np.array([-3, 0.6, 7], F32)), [0, 0.625, 1])


COLLECTIVES = """HloModule m, replica_count=2

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[4] parameter(0)
  rs = f32[2] reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=add
  a2a = f32[4] all-to-all(x), replica_groups={}, dimensions={0}
  cb = f32[4] collective-broadcast(x), replica_groups={{1,0}}
  ps = (f32[4], f32[4], u32[], u32[]) collective-permute-start(x), source_target_pairs={{0,1},{1,0}}
  pd = f32[4] collective-permute-done(ps)
  ROOT t = (f32[2], f32[4], f32[4], f32[4]) tuple(rs, a2a, cb, pd)
}
"""


def test_collectives_over_two_replicas():
    x0, x1 = np.array([1, 2, 3, 4], F32), np.array([10, 20, 30, 40], F32)
    (rs0, a2a0, cb0, p0), (rs1, a2a1, cb1, p1) = run(COLLECTIVES, per_device_inputs=[[x0], [x1]])
    np.testing.assert_array_equal(rs0, [11, 22])          # first half of the sum
    np.testing.assert_array_equal(rs1, [33, 44])
    np.testing.assert_array_equal(a2a0, [1, 2, 10, 20])   # block 0 of each replica
    np.testing.assert_array_equal(a2a1, [3, 4, 30, 40])
    np.testing.assert_array_equal(cb0, x1)                # the group's first member is replica 1
    np.testing.assert_array_equal(cb1, x1)
    np.testing.assert_array_equal(p0, x1)
    np.testing.assert_array_equal(p1, x0)
