"""The evaluator on small hand-written modules, one opcode family at a time.

Expected values are worked out by hand in the comments next to them.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo import HloError, parse_module, run
from hlo.interpreter import HANDLERS, Evaluator, run_devices
from hlo.interpreter.combiner import binary_ufunc
from hlo.interpreter.data_movement import bitcast
from hlo.opcodes import Op
from hlo.runtime.values_io import TOKEN
from hlo.shapes import Layout, Shape, primitive_type

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
    assert HANDLERS.missing() == []
    # parameters are bound, not executed; collective-reduce has no public semantics
    assert set(HANDLERS.reasons()) == {Op.PARAMETER, Op.COLLECTIVE_REDUCE}


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
    with pytest.raises(HloError) as info:   # a Module is run unchecked: the interpreter's own error
        run(parse_module(text, "<module>"), np.zeros(4, F32))
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
    plan = ev.plans.plan(mod.entry)
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


def test_a_while_loop_with_an_outfeed_runs_even_when_its_value_is_unused():
    # liveness asks hlo.analysis.effects, which looks into the loop's computations
    text = module("""  i = s32[] constant(0)
  w = s32[] while(i), condition=cond, body=body
  ROOT r = f32[] constant(1)""", """cond {
  c = s32[] parameter(0)
  two = s32[] constant(2)
  ROOT lt = pred[] compare(c, two), direction=LT
}""", """body {
  b = s32[] parameter(0)
  tok = token[] after-all()
  out = token[] outfeed(b, tok), outfeed_shape=s32[]
  one = s32[] constant(1)
  ROOT next = s32[] add(b, one)
}""")
    ev = Evaluator(parse_module(text, "loop"))
    assert ev.run([]) == 1
    assert [int(v) for v in ev.outfeed] == [0, 1]


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


def test_dynamic_sizes_below_the_bound_are_runtime_sizes():
    text = module("""  x = f32[6] parameter(0)
  n = s32[] constant(4)
  ROOT s = f32[<=6] set-dimension-size(x, n), dimensions={0}""")
    np.testing.assert_array_equal(run1(text, np.arange(6, dtype=F32)), [0, 1, 2, 3])


def test_dynamic_sizes_beyond_the_bound_are_reported():
    text = module("""  x = f32[6] parameter(0)
  n = s32[] constant(7)
  ROOT s = f32[<=6] set-dimension-size(x, n), dimensions={0}""")
    with pytest.raises(HloError) as info:
        run(text, np.zeros(6, F32))
    assert "outside [0, 6]" in info.value.message


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


# --------------------------------------------------------------------------- pass-through ops

def test_opt_barrier_and_domain_pass_their_operand_through():
    text = module("""  x = f32[2] parameter(0)
  i = s32[] constant(4)
  t = (f32[2], s32[]) tuple(x, i)
  b = (f32[2], s32[]) opt-barrier(t)
  v = f32[2] get-tuple-element(b), index=0
  d = f32[2] domain(v), domain={kind="sharding", entry={maximal device=0}, exit={replicated}}
  n = f32[2] negate(d)
  k = s32[] get-tuple-element(b), index=1
  ROOT r = (f32[2], s32[]) tuple(n, k)""")
    values, k = run(text, np.array([1.5, -2], F32))
    np.testing.assert_array_equal(values, [-1.5, 2])
    assert k == 4


# --------------------------------------------------------------------------- batch norm through HLO text

# x (feature_index=1): column 0 = {1, 1, 4}: mean 2, variance (1+1+4)/3 = 2; with epsilon 2,
# sqrt(var + eps) = 2 and x_hat = {-0.5, -0.5, 1}. Column 1 = {5, 5, 5}: mean 5, variance 0, x_hat 0.
BN_X = np.array([[1, 5], [1, 5], [4, 5]], F32)


def test_batch_norm_training_hand_computed():
    text = module("""  x = f32[3,2] parameter(0)
  s = f32[2] constant({1, 3})
  o = f32[2] constant({10, -1})
  ROOT t = (f32[3,2], f32[2], f32[2]) batch-norm-training(x, s, o), epsilon=2, feature_index=1""")
    y, mean, var = run(text, BN_X)
    # column 0: 1 * x_hat + 10 = {9.5, 9.5, 11}; column 1: 3 * 0 - 1 = -1
    np.testing.assert_allclose(y, [[9.5, -1], [9.5, -1], [11, -1]], rtol=1e-6)
    np.testing.assert_allclose(mean, [2, 5], rtol=1e-6)
    np.testing.assert_allclose(var, [2, 0], atol=1e-6)


def test_batch_norm_inference_hand_computed():
    # operand order: operand, scale, offset, mean, variance
    text = module("""  x = f32[3,2] parameter(0)
  s = f32[2] constant({3, 1})
  o = f32[2] constant({1, 0})
  m = f32[2] constant({2, 4})
  v = f32[2] constant({2, 14})
  ROOT y = f32[3,2] batch-norm-inference(x, s, o, m, v), epsilon=2, feature_index=1""")
    # column 0: 3 * {-0.5, -0.5, 1} + 1 = {-0.5, -0.5, 4}; column 1: (5 - 4) / sqrt(16) = 0.25
    np.testing.assert_allclose(run1(text, BN_X), [[-0.5, 0.25], [-0.5, 0.25], [4, 0.25]], rtol=1e-6)


def test_batch_norm_grad_hand_computed():
    text = module("""  x = f32[3,2] parameter(0)
  s = f32[2] constant({1, 2})
  m = f32[2] constant({2, 5})
  v = f32[2] constant({2, 0})
  dy = f32[3,2] parameter(1)
  ROOT g = (f32[3,2], f32[2], f32[2]) batch-norm-grad(x, s, m, v, dy), epsilon=2, feature_index=1""")
    dy = np.array([[1, 1], [0, 1], [2, 1]], F32)
    gx, gs, go = run(text, BN_X, dy)
    # column 0: grad_offset = sum dy = 3; grad_scale = sum dy * x_hat = -0.5 + 0 + 2 = 1.5;
    # grad_x = scale / 2 * (dy - mean(dy) - x_hat * mean(dy * x_hat))
    #        = 0.5 * ({1, 0, 2} - 1 - {-0.5, -0.5, 1} * 0.5) = {0.125, -0.375, 0.25}
    # column 1: x_hat = 0, dy constant: grad_x = 0, grad_scale = 0, grad_offset = 3
    np.testing.assert_allclose(gx, [[0.125, 0], [-0.375, 0], [0.25, 0]], atol=1e-6)
    np.testing.assert_allclose(gs, [1.5, 0], atol=1e-6)
    np.testing.assert_allclose(go, [3, 3], atol=1e-6)


# --------------------------------------------------------------------------- identities (property tests)

PROPERTY = settings(max_examples=40, deadline=None)


def _dims_text(dims) -> str:
    return ",".join(str(d) for d in dims)


@st.composite
def _array_and_refactoring(draw):
    """An array of rank 1-4 and another list of dims with the same element count."""
    dims = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    count = int(np.prod(dims))
    # refactor the element count: split it into prime factors and regroup them at random
    factors, n, f = [], count, 2
    while n > 1:
        while n % f == 0:
            factors.append(f)
            n //= f
        f += 1
    factors = draw(st.permutations(factors))
    cuts = sorted(draw(st.sets(st.integers(1, max(len(factors) - 1, 1)), max_size=3)))
    groups = [factors[a:b] for a, b in zip([0] + cuts, cuts + [len(factors)])]
    other = [int(np.prod(g)) for g in groups if g] or [1]
    if draw(st.booleans()):
        other.insert(draw(st.integers(0, len(other))), 1)  # a degenerate dimension
    return np.arange(count, dtype=F32).reshape(dims), other


@PROPERTY
@given(_array_and_refactoring())
def test_reshape_round_trip_is_identity_and_keeps_row_major_order(case):
    x, other = case
    text = module(f"""  x = f32[{_dims_text(x.shape)}] parameter(0)
  r = f32[{_dims_text(other)}] reshape(x)
  ROOT back = f32[{_dims_text(x.shape)}] reshape(r)""")
    np.testing.assert_array_equal(run1(text, x), x)
    one_way = module(f"""  x = f32[{_dims_text(x.shape)}] parameter(0)
  ROOT r = f32[{_dims_text(other)}] reshape(x)""")
    # reshape reads and writes elements in row-major order: the flat sequence is unchanged
    np.testing.assert_array_equal(run1(one_way, x).ravel(), np.arange(x.size, dtype=F32))


@PROPERTY
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4).flatmap(
    lambda dims: st.tuples(st.just(dims), st.permutations(range(len(dims))), st.permutations(range(len(dims))))))
def test_transpose_composition_is_the_composed_permutation(case):
    dims, p, q = case
    x = np.arange(int(np.prod(dims)), dtype=F32).reshape(dims)
    t1 = [dims[i] for i in p]
    t2 = [t1[i] for i in q]
    composed = [p[i] for i in q]  # transpose(transpose(x, p), q)[..] = transpose(x, p o q)
    text = module(f"""  x = f32[{_dims_text(dims)}] parameter(0)
  a = f32[{_dims_text(t1)}] transpose(x), dimensions={{{_dims_text(p)}}}
  b = f32[{_dims_text(t2)}] transpose(a), dimensions={{{_dims_text(q)}}}
  c = f32[{_dims_text(t2)}] transpose(x), dimensions={{{_dims_text(composed)}}}
  ROOT t = (f32[{_dims_text(t2)}], f32[{_dims_text(t2)}]) tuple(b, c)""")
    b, c = run(text, x)
    np.testing.assert_array_equal(b, c)
    # and by the definition: out[i_0..i_n] = x[j] with j[perm[k]] = i_k
    np.testing.assert_array_equal(b, np.transpose(x, composed))
    inverse = list(np.argsort(composed))
    undo = module(f"""  x = f32[{_dims_text(t2)}] parameter(0)
  ROOT u = f32[{_dims_text(dims)}] transpose(x), dimensions={{{_dims_text(inverse)}}}""")
    np.testing.assert_array_equal(run1(undo, b), x)


@PROPERTY
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3).flatmap(
    lambda dims: st.tuples(st.just(dims), st.sets(st.integers(0, len(dims) - 1)))))
def test_reverse_twice_is_identity_and_slices_concatenate_back(case):
    dims, rev = case
    x = np.arange(int(np.prod(dims)), dtype=F32).reshape(dims)
    d = _dims_text(dims)
    rdims = _dims_text(sorted(rev))
    cut = dims[0] // 2
    head, tail = [cut] + list(dims[1:]), [dims[0] - cut] + list(dims[1:])
    full = ",".join(f"[0:{n}]" for n in dims[1:])
    text = module(f"""  x = f32[{d}] parameter(0)
  r = f32[{d}] reverse(x), dimensions={{{rdims}}}
  rr = f32[{d}] reverse(r), dimensions={{{rdims}}}
  h = f32[{_dims_text(head)}] slice(rr), slice={{[0:{cut}]{"," + full if full else ""}}}
  t = f32[{_dims_text(tail)}] slice(rr), slice={{[{cut}:{dims[0]}]{"," + full if full else ""}}}
  c = f32[{d}] concatenate(h, t), dimensions={{0}}
  ROOT o = (f32[{d}], f32[{d}]) tuple(r, c)""")
    r, c = run(text, x)
    np.testing.assert_array_equal(r, np.flip(x, tuple(sorted(rev))) if rev else x)
    np.testing.assert_array_equal(c, x)


# --------------------------------------------------------------------------- every elementwise opcode through HLO text
#
# The kernels have their own exhaustive tests (test_elementwise.py); these run each elementwise
# opcode, with the edge cases the spec appendices settle, through the evaluator as a module, so
# dispatch, fast paths and generated entry code are covered too. Expected values by hand.

NAN, INF = float("nan"), float("inf")
PI = float(np.float32(np.pi))
LN2 = float(np.log(2))
E_ = float(np.e)
S32_MIN, S32_MAX = -2**31, 2**31 - 1

# (opcode, operand types, result type, operands, expected, extra attributes)
ELEMENTWISE_CASES = [
    ("abs", ["f32"], "f32", [[-2, -0.0, -INF]], [2, 0.0, INF], ""),
    ("abs", ["s8"], "s8", [[-5, -128]], [5, -128], ""),                     # abs(INT_MIN) wraps
    ("ceil", ["f32"], "f32", [[1.2, -1.2, -0.5]], [2, -1, -0.0], ""),
    ("floor", ["f32"], "f32", [[1.8, -1.2, 0.5]], [1, -2, 0], ""),
    ("cbrt", ["f32"], "f32", [[27, -8, -0.0]], [3, -2, -0.0], ""),
    ("cosine", ["f32"], "f32", [[0, PI]], [1, -1], ""),
    ("sine", ["f32"], "f32", [[0, PI / 2, -0.0]], [0, 1, -0.0], ""),
    ("tan", ["f32"], "f32", [[0, PI / 4]], [0, 1], ""),
    ("tanh", ["f32"], "f32", [[0, INF, -INF]], [0, 1, -1], ""),
    ("cosh", ["f64"], "f64", [[0, LN2]], [1, 1.25], ""),                   # (2 + 1/2) / 2
    ("sinh", ["f64"], "f64", [[0, LN2]], [0, 0.75], ""),                   # (2 - 1/2) / 2
    ("exponential", ["f32"], "f32", [[0, 1, -INF]], [1, E_, 0], ""),
    ("exponential-minus-one", ["f64"], "f64", [[0, LN2, -INF]], [0, 1, -1], ""),
    ("log", ["f32"], "f32", [[1, E_, 0, -1]], [0, 1, -INF, NAN], ""),
    ("log-plus-one", ["f64"], "f64", [[0, E_ - 1, -1]], [0, 1, -INF], ""),
    ("logistic", ["f32"], "f32", [[0, INF, -INF]], [0.5, 1, 0], ""),
    ("rsqrt", ["f32"], "f32", [[4, 0.25, 0]], [0.5, 2, INF], ""),
    ("sqrt", ["f32"], "f32", [[4, -1, -0.0]], [2, NAN, -0.0], ""),
    ("erf", ["f32"], "f32", [[0, INF, -INF]], [0, 1, -1], ""),
    ("acos", ["f64"], "f64", [[1, -1, 2]], [0, np.pi, NAN], ""),
    ("asin", ["f64"], "f64", [[1, 0]], [np.pi / 2, 0], ""),
    ("atan", ["f64"], "f64", [[1, INF]], [np.pi / 4, np.pi / 2], ""),
    ("acosh", ["f64"], "f64", [[1, 0.5]], [0, NAN], ""),
    ("asinh", ["f64"], "f64", [[0, -0.0]], [0, -0.0], ""),
    ("atanh", ["f64"], "f64", [[0, 1, 2]], [0, INF, NAN], ""),
    ("negate", ["f32"], "f32", [[1, 0.0, -0.0]], [-1, -0.0, 0.0], ""),
    ("negate", ["s32"], "s32", [[5, S32_MIN]], [-5, S32_MIN], ""),          # wraps
    ("sign", ["f32"], "f32", [[-3, -0.0, NAN, 2, 0.0]], [-1, -0.0, NAN, 1, 0.0], ""),
    ("sign", ["s32"], "s32", [[-7, 0, 9]], [-1, 0, 1], ""),
    ("round-nearest-afz", ["f32"], "f32", [[2.5, -2.5, 0.4, -0.5]], [3, -3, 0, -1], ""),
    ("round-nearest-even", ["f32"], "f32", [[2.5, -2.5, 3.5, -0.5]], [2, -2, 4, -0.0], ""),
    ("is-finite", ["f32"], "pred", [[INF, NAN, 1, -INF]], [False, False, True, False], ""),
    ("count-leading-zeros", ["s32"], "s32", [[0, 1, -1, 65536]], [32, 31, 0, 15], ""),
    ("count-leading-zeros", ["u8"], "u8", [[0, 1, 128]], [8, 7, 0], ""),
    ("popcnt", ["u8"], "u8", [[0xFF, 0x0F, 0]], [8, 4, 0], ""),
    ("popcnt", ["s32"], "s32", [[-1, 6]], [32, 2], ""),
    ("not", ["s8"], "s8", [[0, -1, 5]], [-1, 0, -6], ""),
    ("not", ["pred"], "pred", [[True, False]], [False, True], ""),
    ("real", ["c64"], "f32", [[1 + 2j, -3 - 4j]], [1, -3], ""),
    ("imag", ["c64"], "f32", [[1 + 2j, -3 - 4j]], [2, -4], ""),
    ("copy", ["f32"], "f32", [[1, -0.0]], [1, -0.0], ""),
    # binary: integer division and remainder by zero and INT_MIN / -1 (spec: x/0 = -1, unsigned max;
    # x%0 = x; INT_MIN/-1 = INT_MIN; INT_MIN%-1 = 0), truncation toward zero
    ("add", ["s32", "s32"], "s32", [[S32_MAX, -5], [1, 3]], [S32_MIN, -2], ""),
    ("subtract", ["u8", "u8"], "u8", [[1, 200], [2, 100]], [255, 100], ""),
    ("multiply", ["s8", "s8"], "s8", [[16, -128, 3], [16, -1, -4]], [0, -128, -12], ""),
    ("add", ["pred", "pred"], "pred", [[True, True, False], [True, False, False]], [True, True, False], ""),
    ("divide", ["s32", "s32"], "s32", [[7, -7, 5, -5, S32_MIN], [2, 2, 0, 0, -1]], [3, -3, -1, -1, S32_MIN], ""),
    ("divide", ["u32", "u32"], "u32", [[7, 9], [0, 2]], [2**32 - 1, 4], ""),
    ("divide", ["f32", "f32"], "f32", [[1, -1, 0], [0, 0, 0]], [INF, -INF, NAN], ""),
    ("remainder", ["s32", "s32"], "s32", [[7, -7, 5, S32_MIN], [3, 3, 0, -1]], [1, -1, 5, 0], ""),
    ("remainder", ["u8", "u8"], "u8", [[7, 200], [0, 7]], [7, 4], ""),
    ("remainder", ["f32", "f32"], "f32", [[-7, 7, 1], [3, 0, INF]], [-1, NAN, 1], ""),
    ("power", ["s32", "s32"], "s32", [[2, 2, -1, -1, 0], [10, -1, -3, -2, 0]], [1024, 0, -1, 1, 1], ""),
    ("power", ["f32", "f32"], "f32", [[2, 0, 1, -8], [-1, -1, NAN, 1 / 3]], [0.5, INF, 1, NAN], ""),
    ("atan2", ["f32", "f32"], "f32", [[1, 0, -0.0], [1, -1, 1]], [np.pi / 4, np.pi, -0.0], ""),
    ("maximum", ["f32", "f32"], "f32", [[NAN, 1, -0.0, 0.0], [1, NAN, 0.0, -0.0]], [NAN, NAN, 0.0, 0.0], ""),
    ("minimum", ["f32", "f32"], "f32", [[NAN, 1, -0.0, 0.0], [1, NAN, 0.0, -0.0]], [NAN, NAN, -0.0, -0.0], ""),
    ("maximum", ["u32", "u32"], "u32", [[2**31, 1], [1, 2]], [2**31, 2], ""),
    ("minimum", ["s8", "s8"], "s8", [[-1, 5], [1, -128]], [-1, -128], ""),
    ("and", ["u8", "u8"], "u8", [[0xF0, 0x0F], [0x3C, 0x3C]], [0x30, 0x0C], ""),
    ("or", ["u8", "u8"], "u8", [[0xF0, 0x01], [0x0F, 0x01]], [0xFF, 0x01], ""),
    ("xor", ["s8", "s8"], "s8", [[-1, 5], [3, 3]], [-4, 6], ""),
    # shifts: amounts read unsigned; >= the bit width gives 0 (left, logical) or the sign (arithmetic)
    ("shift-left", ["s32", "s32"], "s32", [[1, 1, 1, 3], [31, 32, -1, 1]], [S32_MIN, 0, 0, 6], ""),
    ("shift-right-arithmetic", ["s32", "s32"], "s32", [[-8, -8, 8, -8], [1, 32, 99, -1]], [-4, -1, 0, -1], ""),
    ("shift-right-logical", ["s32", "s32"], "s32", [[-8, -1, 64], [28, 32, 3]], [15, 0, 8], ""),
    ("shift-right-logical", ["u8", "u8"], "u8", [[0x80, 0xFF], [7, 8]], [1, 0], ""),
    ("complex", ["f32", "f32"], "c64", [[1, -0.5], [2, 3]], [1 + 2j, -0.5 + 3j], ""),
    # compare: every direction, and TOTALORDER: -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN
    ("compare", ["f32", "f32"], "pred", [[1, 2, NAN], [2, 2, NAN]], [False, True, False], ", direction=EQ"),
    ("compare", ["f32", "f32"], "pred", [[1, 2, NAN], [2, 2, NAN]], [True, False, True], ", direction=NE"),
    ("compare", ["s32", "s32"], "pred", [[1, 2, -3], [2, 2, 3]], [True, False, True], ", direction=LT"),
    ("compare", ["u32", "u32"], "pred", [[1, 2, 2**32 - 1], [2, 2, 3]], [True, True, False], ", direction=LE"),
    ("compare", ["f32", "f32"], "pred", [[1, 2, NAN], [2, 2, 0]], [False, False, False], ", direction=GT"),
    ("compare", ["f32", "f32"], "pred", [[1, 2, -0.0], [2, 2, 0.0]], [False, True, True], ", direction=GE"),
    ("compare", ["f32", "f32"], "pred", [[-0.0, NAN, -NAN, 1, -INF], [0.0, INF, -INF, NAN, -INF]],
     [True, False, True, True, False], ", direction=LT, type=TOTALORDER"),
    ("compare", ["f32", "f32"], "pred", [[-0.0, NAN, 0.0], [0.0, NAN, 0.0]], [False, True, True],
     ", direction=EQ, type=TOTALORDER"),
    ("compare", ["f32", "f32"], "pred", [[NAN, -NAN], [INF, -INF]], [True, False], ", direction=GT, type=TOTALORDER"),
]


def _hlo_array(values, type_name):
    """values as an array of the HLO type (integers wrap into it, as two's complement bit patterns)."""
    dtype = primitive_type(type_name).dtype
    if dtype == np.bool_:
        return np.array(values, np.bool_)
    return np.array(values, np.int64).astype(dtype)


@pytest.mark.parametrize("op, types, result, operands, expected, attrs", ELEMENTWISE_CASES,
                         ids=[f"{c[0]}-{c[1][0]}{c[5].replace(', ', '-')}" for c in ELEMENTWISE_CASES])
def test_elementwise_opcode_through_the_evaluator(op, types, result, operands, expected, attrs):
    n = len(expected)
    params = "\n".join(f"  p{i} = {t}[{n}] parameter({i})" for i, t in enumerate(types))
    names = ", ".join(f"p{i}" for i in range(len(types)))
    text = module(f"""{params}
  ROOT r = {result}[{n}] {op}({names}){attrs}""")
    args = [_hlo_array(v, t) if t not in ("f32", "f64", "c64") else
            np.array(v, {"f32": np.float32, "f64": np.float64, "c64": np.complex64}[t])
            for v, t in zip(operands, types)]
    out = run1(text, *args)
    assert out.shape == (n,)
    want = np.array(expected)
    if out.dtype.kind == "f":
        got = out.astype(np.float64)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7, equal_nan=True)
        zeros = want == 0
        np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]))  # signed zeros
    elif out.dtype.kind == "c":
        np.testing.assert_array_equal(out, want.astype(out.dtype))
    else:
        np.testing.assert_array_equal(out.astype(np.int64) if out.dtype != np.bool_ else out, want)


# conversions, reduce-precision and bitcast-convert: the result type is not the operand type

def test_convert_float_to_int_saturates_truncates_and_maps_nan_to_zero():
    text = module("""  x = f32[7] parameter(0)
  s = s32[7] convert(x)
  u = u8[7] convert(x)
  ROOT t = (s32[7], u8[7]) tuple(s, u)""")
    s, u = run(text, np.array([NAN, INF, -INF, 3e9, -2.7, 2.9, 300], F32))
    np.testing.assert_array_equal(s, [0, S32_MAX, S32_MIN, S32_MAX, -2, 2, 300])
    np.testing.assert_array_equal(u, [0, 255, 0, 255, 0, 2, 255])      # negative -> 0, big -> 255


def test_convert_between_floats_rounds_to_nearest_even_and_overflows_to_inf():
    text = module("""  x = f32[4] parameter(0)
  b = bf16[4] convert(x)
  ROOT f = f32[4] convert(b)""")
    # 1 + 2^-8 ties to 1 (even); 1 + 3 * 2^-8 ties to 1 + 2^-6 (even); 3.4e38 is past bf16's max
    out = run1(text, np.array([1.00390625, 1.01171875, NAN, 3.4e38], F32))
    np.testing.assert_array_equal(out[[0, 1, 3]], [1.0, 1.015625, INF])
    assert np.isnan(out[2])


def test_reduce_precision_rounds_overflows_and_flushes():
    text = module("""  x = f32[5] parameter(0)
  ROOT r = f32[5] reduce-precision(x), exponent_bits=5, mantissa_bits=10""")
    # f16's range: 65520 rounds up past 65504 to inf; 1e-8 lies below f16's normal range -> 0;
    # 1/3 keeps 10 mantissa bits: 0x3EAAA800 -> 0.333251953125; NaN stays NaN
    out = run1(text, np.array([65520, 1e-8, 1 / 3, NAN, 65519], F32))
    np.testing.assert_array_equal(out[[0, 1, 2, 4]], [INF, 0, 0.333251953125, 65504])
    assert np.isnan(out[3])


def test_bitcast_convert_across_widths():
    text = module("""  x = f32[2] parameter(0)
  n = u16[2,2] bitcast-convert(x)
  w = f32[2] bitcast-convert(n)
  d = f64[] constant(1)
  s = s32[2] bitcast-convert(d)
  ROOT t = (u16[2,2], f32[2], s32[2]) tuple(n, w, s)""")
    narrow, wide, halves = run(text, np.array([1.0, -2.0], F32))
    # 1.0f = 0x3F800000, -2.0f = 0xC0000000; narrower results add a minor dimension, low half first
    np.testing.assert_array_equal(narrow, [[0x0000, 0x3F80], [0x0000, 0xC000]])
    np.testing.assert_array_equal(wide, [1.0, -2.0])
    np.testing.assert_array_equal(halves, [0, 0x3FF00000])              # 1.0 = 0x3FF0000000000000


# --------------------------------------------------------------------------- the Python API

API_MODULE = """HloModule m

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

ENTRY e {
  x = f32[2] parameter(0)
  k = f32[] parameter(1)
  y = f32[2] broadcast(k), dimensions={}
  v = f32[2] multiply(x, y)
  s = f32[2] all-reduce(v), replica_groups={}, to_apply=add
  r = u32[] replica-id()
  p = u32[] partition-id()
  ROOT t = (f32[2], (u32[], u32[])) tuple(s, (u32[], u32[]) tuple(r, p))
}
"""


def test_run_api_single_device_takes_text_or_module_and_plain_python_values():
    for source in (API_MODULE, parse_module(API_MODULE, "api")):
        out = run(source, [1, 2], 3.0)  # a list and a Python float become f32 arrays
        assert isinstance(out, list) and len(out) == 3  # tuple result flattened depth-first
        assert all(isinstance(a, np.ndarray) for a in out)
        np.testing.assert_array_equal(out[0], [3, 6])
        assert out[0].dtype == np.float32 and out[1].dtype == np.uint32 and out[1].shape == ()
        assert (int(out[1]), int(out[2])) == (0, 0)


def test_run_api_replicas_and_partitions_keywords():
    # the same arguments on every device: the all-reduce over the 4 replicas of a partition sums 4 copies
    per_device = run(API_MODULE, np.array([1, 2], F32), np.float32(0.5), replicas=4, partitions=2)
    assert len(per_device) == 8
    for d, (total, rid, pid) in enumerate(per_device):
        np.testing.assert_array_equal(total, [2, 4])             # 4 * {0.5, 1}
        assert (int(rid), int(pid)) == (d // 2, d % 2)
    # per-device inputs: replica d multiplies by d, so every replica sums {1,2} * (0 + 1 + 2)
    per_device = run(API_MODULE, replicas=3,
                     per_device_inputs=[[np.array([1, 2], F32), np.float32(d)] for d in range(3)])
    assert [list(out[0]) for out in per_device] == [[3, 6]] * 3
    with pytest.raises(ValueError, match="2 argument lists for 3 devices"):
        run(API_MODULE, replicas=3, per_device_inputs=[[np.zeros(2, F32), np.float32(1)]] * 2)
    with pytest.raises(ValueError, match="either arrays or per_device_inputs"):
        run(API_MODULE, np.zeros(2, F32), np.float32(1), per_device_inputs=[[np.zeros(2, F32), np.float32(1)]])


def test_run_api_checks_text_before_running_it():
    text = """HloModule m
ENTRY e {
  a = s32[4] parameter(0)
  z = s32[] constant(0)
  ROOT p = s32[6] pad(a, z), padding=-1_1_1
}
"""
    with pytest.raises(HloError) as info:
        run(text, np.arange(4, dtype=np.int32))
    assert "<module>:5:8: error: shape mismatch: 'pad' produces s32[7]" in info.value.render()
