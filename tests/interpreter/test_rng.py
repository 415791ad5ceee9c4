"""Tests for hlo.interpreter.rng: rng-bit-generator (bit-exact with XLA:CPU), rng, and
rng-get-and-update-state."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo.interpreter.rng import (
    XLA_CPU_INITIAL_RNG_COUNTER,
    RngState,
    philox4x32,
    rng_bit_generator,
    rng_get_and_update_state,
    rng_normal,
    rng_uniform,
    threefry2x32,
)
from hlo.shapes import primitive_type

U8, U16, U32, U64 = (primitive_type(n) for n in ("u8", "u16", "u32", "u64"))
M64 = (1 << 64) - 1


def u64_state(*words):
    return np.array(words, dtype=np.uint64)


def words_of(x):
    return [int(v) for v in np.asarray(x).reshape(-1)]


# --------------------------------------------------------------------------- known answers

def test_threefry2x32_random123_known_answers():
    assert words_of(threefry2x32((0, 0), [0], [0])) == [0x6B200159, 0x99BA4EFE]
    assert words_of(threefry2x32((M64 >> 32, M64 >> 32), [0xFFFFFFFF], [0xFFFFFFFF])) == [0x1CB996FC, 0xBB002BE7]
    assert words_of(threefry2x32((0x13198A2E, 0x03707344), [0x243F6A88], [0x85A308D3])) == [0xC4923A9C, 0x483DF7A0]


def test_philox4x32_random123_known_answers():
    assert words_of(philox4x32((0, 0), ([0], [0], [0], [0]))) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = [0xFFFFFFFF]
    assert words_of(philox4x32((0xFFFFFFFF, 0xFFFFFFFF), (ones,) * 4)) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]
    assert words_of(philox4x32((0xA4093822, 0x299F31D0), ([0x243F6A88], [0x85A308D3], [0x13198A2E], [0x03707344]))) == \
        [0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1]


def test_threefry2x32_keeps_scalar_shape():
    x0, x1 = threefry2x32((0, 0), 0, 0)
    assert x0.shape == () and x1.shape == () and x0.dtype == np.uint32


# --------------------------------------------------------------------------- corpus: rng_bit_generator_algos
# Input u32[4] {1,2,3,4} bitcast to u64[2]; every algorithm asked for u32[3,5].

CORPUS_STATE_U32 = np.array([1, 2, 3, 4], dtype=np.uint32)
CORPUS_PHILOX_STATE = [1, 2, 7, 4]
CORPUS_PHILOX_BITS = [
    [512747620, 1298009047, 1267190206, 761827841, 1383286907],
    [1639995030, 2756207988, 2154813423, 2586587831, 3476143680],
    [1796768528, 312929065, 595050331, 3179752574, 3495892623],
]
CORPUS_THREEFRY_STATE = [1, 2, 12, 4]
CORPUS_THREEFRY_BITS = [
    [1576285164, 2249660814, 740599976, 2425682526, 2436392515],
    [1335360347, 2260235687, 3981753173, 3953550934, 3812192618],
    [2959620048, 1759477693, 3014899208, 3167314751, 1878941568],
]


@pytest.mark.parametrize("algorithm, state, bits", [
    ("rng_philox", CORPUS_PHILOX_STATE, CORPUS_PHILOX_BITS),
    ("rng_three_fry", CORPUS_THREEFRY_STATE, CORPUS_THREEFRY_BITS),
    ("rng_default", CORPUS_PHILOX_STATE, CORPUS_PHILOX_BITS),  # CPU default is Philox
])
def test_corpus_rng_bit_generator_algos(algorithm, state, bits):
    new_state, out = rng_bit_generator(algorithm, CORPUS_STATE_U32.view(np.uint64), (3, 5), U32)
    assert new_state.dtype == np.uint64 and out.dtype == np.uint32 and out.shape == (3, 5)
    assert new_state.view(np.uint32).tolist() == state
    assert out.tolist() == bits


# --------------------------------------------------------------------------- corpus: rng_threefry (JAX lowering)
# rng_threefry.hlo spells JAX's threefry2x32 in plain HLO ops; our core must agree.
# Key (0, 1234) split into 5 keys: key i = threefry(key, hi=0, lo=i); out5 is key 0.
# out0 = uniform f32[64] from key 0: bits = x0 ^ x1 of threefry(key0, 0, iota).

JAX_KEY = (0, 1234)
JAX_SPLIT_KEY0 = [1264997412, 2518116175]
JAX_UNIFORM_HEAD = [0.1704474687576294, 0.6354105472564697, 0.6434385776519775, 0.03006911277770996,
                    0.09292256832122803, 0.7497279644012451, 0.41484153270721436, 0.4327569007873535,
                    0.023134350776672363, 0.7225083112716675, 0.42380034923553467, 0.3080800771713257,
                    0.28713202476501465, 0.11464083194732666, 0.6140329837799072, 0.9434928894042969]


def test_threefry_core_matches_jax_split_and_uniform():
    k1, k2 = threefry2x32(JAX_KEY, np.zeros(5, np.uint32), np.arange(5, dtype=np.uint32))
    assert [int(k1[0]), int(k2[0])] == JAX_SPLIT_KEY0
    b1, b2 = threefry2x32(tuple(JAX_SPLIT_KEY0), np.zeros(64, np.uint32), np.arange(64, dtype=np.uint32))
    mantissa = ((b1 ^ b2) >> np.uint32(9)) | np.uint32(0x3F800000)
    uniform = mantissa.view(np.float32) - np.float32(1)
    np.testing.assert_array_equal(uniform[:16], np.array(JAX_UNIFORM_HEAD, dtype=np.float32))


# --------------------------------------------------------------------------- threefry layout

def threefry_words(key, counters):
    counters = np.asarray(counters, dtype=np.uint64)
    lo = (counters & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = (counters >> np.uint64(32)).astype(np.uint32)
    return threefry2x32((key & 0xFFFFFFFF, key >> 32), lo, hi)


KEY = 0x0123456789ABCDEF


def test_threefry_u32_even_dim_interleaves_block_outputs():
    new_state, out = rng_bit_generator("rng_three_fry", u64_state(KEY, 10), (4,), U32)
    x0, x1 = threefry_words(KEY, [10, 11])
    assert out.tolist() == [x0[0], x1[0], x0[1], x1[1]]
    assert new_state.tolist() == [KEY, 12]


def test_threefry_u32_odd_length_drops_last_word():
    new_state, out = rng_bit_generator("rng_three_fry", u64_state(KEY, 0), (3,), U32)
    x0, x1 = threefry_words(KEY, [0, 1])
    assert out.tolist() == [x0[0], x1[0], x0[1]]
    assert new_state.tolist() == [KEY, 2]


def test_threefry_u32_splits_first_even_dimension():
    # (2, 3): dim 0 is even, half shape (1, 3); rows are x0 and x1.
    _, out = rng_bit_generator("rng_three_fry", u64_state(KEY, 5), (2, 3), U32)
    x0, x1 = threefry_words(KEY, [5, 6, 7])
    assert out.tolist() == [list(x0), list(x1)]


def test_threefry_u32_no_even_dimension_splits_largest():
    # (3, 5): split dim 1 -> half shape (3, 3), counters row-major over it.
    _, out = rng_bit_generator("rng_three_fry", u64_state(KEY, 0), (3, 5), U32)
    x0, x1 = threefry_words(KEY, range(9))
    expected = np.stack([x0.reshape(3, 3), x1.reshape(3, 3)], axis=2).reshape(3, 6)[:, :5]
    np.testing.assert_array_equal(out, expected)


def test_threefry_u32_scalar_uses_one_block():
    new_state, out = rng_bit_generator("rng_three_fry", u64_state(KEY, 7), (), U32)
    x0, _ = threefry_words(KEY, [7])
    assert out.shape == () and int(out) == x0[0]
    assert new_state.tolist() == [KEY, 8]


def test_threefry_u64_one_block_per_element_low_word_first():
    new_state, out = rng_bit_generator("rng_three_fry", u64_state(KEY, 3), (2, 2), U64)
    x0, x1 = threefry_words(KEY, [3, 4, 5, 6])
    expected = x0.astype(np.uint64) | (x1.astype(np.uint64) << np.uint64(32))
    np.testing.assert_array_equal(out.reshape(-1), expected)
    assert new_state.tolist() == [KEY, 7]


def test_threefry_counter_wraps_at_64_bits():
    new_state, out = rng_bit_generator("rng_three_fry", u64_state(KEY, M64), (2,), U64)
    x0, x1 = threefry_words(KEY, [M64, 0])
    assert out.tolist() == [int(x0[0]) | int(x1[0]) << 32, int(x0[1]) | int(x1[1]) << 32]
    assert new_state.tolist() == [KEY, 1]


# --------------------------------------------------------------------------- philox layout

def philox_block(key, counter128):
    words = [(counter128 >> (32 * i)) & 0xFFFFFFFF for i in range(4)]
    return words_of(philox4x32((key & 0xFFFFFFFF, key >> 32), tuple([w] for w in words)))


def test_philox_u32_state3_counter_and_round_robin_words():
    new_state, out = rng_bit_generator("rng_philox", u64_state(KEY, 40, 9), (6,), U32)
    counter = 40 | 9 << 64
    assert out.tolist() == philox_block(KEY, counter) + philox_block(KEY, counter + 1)[:2]
    assert new_state.tolist() == [KEY, 42, 9]


def test_philox_state2_uses_key_as_high_counter_word():
    new_state, out = rng_bit_generator("rng_philox", u64_state(KEY, 40), (4,), U32)
    assert out.tolist() == philox_block(KEY, 40 | KEY << 64)
    assert new_state.tolist() == [KEY, 41]


def test_philox_counter_carries_into_high_word():
    new_state, out = rng_bit_generator("rng_philox", u64_state(KEY, M64, 5), (8,), U32)
    assert out.tolist() == philox_block(KEY, M64 | 5 << 64) + philox_block(KEY, 6 << 64)
    assert new_state.tolist() == [KEY, 1, 6]


def test_philox_state2_carry_is_dropped_from_new_state():
    new_state, out = rng_bit_generator("rng_philox", u64_state(KEY, M64), (8,), U32)
    assert out.tolist()[4:] == philox_block(KEY, (KEY + 1) << 64)
    assert new_state.tolist() == [KEY, 1]


def test_philox_u64_pairs_words_low_first():
    new_state, out = rng_bit_generator("rng_philox", u64_state(KEY, 0, 0), (3,), U64)
    w = philox_block(KEY, 0) + philox_block(KEY, 1)
    assert out.tolist() == [w[0] | w[1] << 32, w[2] | w[3] << 32, w[4] | w[5] << 32]
    assert new_state.tolist() == [KEY, 2, 0]


# --------------------------------------------------------------------------- output types

@pytest.mark.parametrize("algorithm", ["rng_philox", "rng_three_fry"])
@pytest.mark.parametrize("name, mask", [("u8", 0xFF), ("u16", 0xFFFF), ("u4", 0xF), ("u1", 1)])
def test_narrow_outputs_keep_low_bits_of_u32(algorithm, name, mask):
    state = u64_state(KEY, 99)
    s32, wide = rng_bit_generator(algorithm, state, (3, 4), U32)
    s_narrow, narrow = rng_bit_generator(algorithm, state, (3, 4), primitive_type(name))
    assert narrow.dtype == primitive_type(name).dtype
    np.testing.assert_array_equal(narrow.astype(np.uint32), wide & np.uint32(mask))
    np.testing.assert_array_equal(s32, s_narrow)


@pytest.mark.parametrize("name, unsigned", [("s32", U32), ("f32", U32), ("s64", U64), ("f64", U64),
                                            ("s16", U16), ("bf16", U16), ("s8", U8)])
def test_same_width_outputs_reinterpret_unsigned_bits(name, unsigned):
    state = u64_state(KEY, 1, 2)
    _, bits = rng_bit_generator("rng_philox", state, (5,), unsigned)
    _, out = rng_bit_generator("rng_philox", state, (5,), primitive_type(name))
    assert out.dtype == primitive_type(name).dtype
    np.testing.assert_array_equal(out.view(bits.dtype), bits)


def test_state_dtype_is_preserved():
    state = np.array([-1, 5], dtype=np.int64)
    new_state, _ = rng_bit_generator("rng_three_fry", state, (2,), U32)
    assert new_state.dtype == np.int64 and new_state.tolist() == [-1, 6]


def test_empty_output_leaves_counter():
    new_state, out = rng_bit_generator("rng_three_fry", u64_state(KEY, 4), (3, 0), U32)
    assert out.shape == (3, 0) and new_state.tolist() == [KEY, 4]
    new_state, out = rng_bit_generator("rng_philox", u64_state(KEY, 4, 0), (0,), U64)
    assert out.shape == (0,) and new_state.tolist() == [KEY, 4, 0]


@pytest.mark.parametrize("algorithm, state, out_type", [
    ("rng_mersenne", u64_state(1, 2), U32),
    ("rng_three_fry", u64_state(1, 2, 3), U32),
    ("rng_philox", u64_state(1), U32),
    ("rng_philox", np.array([1, 2], dtype=np.uint32), U32),
    ("rng_philox", u64_state(1, 2), primitive_type("pred")),
    ("rng_philox", u64_state(1, 2), primitive_type("c64")),
    ("rng_philox", u64_state(1, 2), primitive_type("s4")),
])
def test_invalid_rng_bit_generator_raises_value_error(algorithm, state, out_type):
    with pytest.raises(ValueError):
        rng_bit_generator(algorithm, state, (2,), out_type)


# --------------------------------------------------------------------------- rng-bit-generator properties

algorithms = st.sampled_from(["rng_default", "rng_philox", "rng_three_fry"])
words64 = st.integers(0, M64)
small_shapes = st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple)
out_types = st.sampled_from([U8, U16, U32, U64, primitive_type("s32"), primitive_type("f64")])


@settings(max_examples=60, deadline=None)
@given(algorithms, words64, words64, small_shapes, out_types)
def test_bit_generator_is_deterministic_and_typed(algorithm, key, counter, shape, out_type):
    state = u64_state(key, counter)
    s1, b1 = rng_bit_generator(algorithm, state, shape, out_type)
    s2, b2 = rng_bit_generator(algorithm, state, shape, out_type)
    assert b1.shape == shape and b1.dtype == out_type.dtype
    assert s1.shape == state.shape and s1.dtype == state.dtype
    assert b1.tobytes() == b2.tobytes()
    np.testing.assert_array_equal(s1, s2)
    assert int(s1[0]) == key  # the key never changes
    assert (s1.tolist() != state.tolist()) == (int(np.prod(shape)) > 0)


@settings(max_examples=40, deadline=None)
@given(words64, words64, st.integers(0, 4), st.integers(0, 9))
def test_philox_consecutive_calls_continue_the_stream(key, counter, blocks, tail):
    # Whole blocks of four words: two calls give the same words as one longer call.
    state = u64_state(key, counter, 0)
    mid_state, first = rng_bit_generator("rng_philox", state, (4 * blocks,), U32)
    _, second = rng_bit_generator("rng_philox", mid_state, (tail,), U32)
    _, whole = rng_bit_generator("rng_philox", state, (4 * blocks + tail,), U32)
    np.testing.assert_array_equal(np.concatenate([first, second]), whole)


@settings(max_examples=40, deadline=None)
@given(words64, words64, st.integers(0, 6), st.integers(0, 6))
def test_threefry_u64_consecutive_calls_continue_the_stream(key, counter, n, m):
    state = u64_state(key, counter)
    mid_state, first = rng_bit_generator("rng_three_fry", state, (n,), U64)
    _, second = rng_bit_generator("rng_three_fry", mid_state, (m,), U64)
    _, whole = rng_bit_generator("rng_three_fry", state, (n + m,), U64)
    np.testing.assert_array_equal(np.concatenate([first, second]), whole)


# --------------------------------------------------------------------------- rng-get-and-update-state

def test_get_and_update_state_starts_at_xla_cpu_value_and_advances():
    rng = RngState()
    assert rng_get_and_update_state(rng, 4096).tolist() == [XLA_CPU_INITIAL_RNG_COUNTER, 0]
    assert rng_get_and_update_state(rng, 1).tolist() == [XLA_CPU_INITIAL_RNG_COUNTER + 4096, 0]
    assert rng.get_and_update(0).tolist() == [XLA_CPU_INITIAL_RNG_COUNTER + 4097, 0]


def test_get_and_update_state_is_128_bit():
    rng = RngState(counter=M64)
    out = rng.get_and_update(2)
    assert out.dtype == np.uint64 and out.shape == (2,) and out.tolist() == [M64, 0]
    assert rng.get_and_update(0).tolist() == [1, 1]
    wrap = RngState(counter=(1 << 128) - 1)
    wrap.get_and_update(1)
    assert wrap.get_and_update(0).tolist() == [0, 0]


def test_get_and_update_state_negative_delta_is_zero_extended():
    rng = RngState(counter=0)
    rng.get_and_update(-1)
    assert rng.get_and_update(0).tolist() == [M64, 0]


# --------------------------------------------------------------------------- rng uniform / normal

def test_rng_uniform_float_range_dtype_and_determinism():
    a, b = np.float32(-2), np.float32(3)
    x = rng_uniform(a, b, (1000,), primitive_type("f32"), RngState(7))
    y = rng_uniform(a, b, (1000,), primitive_type("f32"), RngState(7))
    z = rng_uniform(a, b, (1000,), primitive_type("f32"), RngState(8))
    assert x.dtype == np.float32 and x.shape == (1000,)
    assert (x >= -2).all() and (x < 3).all()
    np.testing.assert_array_equal(x, y)
    assert not np.array_equal(x, z)
    assert abs(float(x.mean()) - 0.5) < 0.3


def test_rng_uniform_state_advances_between_calls():
    rng = RngState(1)
    f32 = primitive_type("f32")
    first = rng_uniform(np.float32(0), np.float32(1), (16,), f32, rng)
    second = rng_uniform(np.float32(0), np.float32(1), (16,), f32, rng)
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("name", ["bf16", "f16", "f8e4m3fn"])
def test_rng_uniform_narrow_float_never_rounds_up_to_b(name):
    t = primitive_type(name)
    out = rng_uniform(np.zeros((), t.dtype), np.ones((), t.dtype), (4000,), t, RngState(3))
    assert out.dtype == t.dtype and out.shape == (4000,)
    values = out.astype(np.float64)
    assert (values >= 0).all() and (values < 1).all()


def test_rng_uniform_float_empty_interval_gives_a():
    out = rng_uniform(np.float64(2.5), np.float64(2.5), (3,), primitive_type("f64"), RngState())
    assert out.tolist() == [2.5, 2.5, 2.5]


@pytest.mark.parametrize("name, a, b", [("s32", -3, 4), ("u8", 250, 256 - 1), ("s64", -(1 << 62), 1 << 62),
                                        ("u64", (1 << 64) - 5, (1 << 64) - 1), ("s4", -8, 7), ("u16", 0, 1)])
def test_rng_uniform_int_half_open_range(name, a, b):
    t = primitive_type(name)
    out = rng_uniform(np.array(a, t.dtype), np.array(b, t.dtype), (500,), t, RngState(5))
    assert out.dtype == t.dtype and out.shape == (500,)
    values = [int(v) for v in out.reshape(-1)]
    assert min(values) >= a and max(values) < b
    if b - a <= 16:
        assert set(values) == set(range(a, b))  # every value of a small range shows up


def test_rng_uniform_int_empty_interval_gives_a():
    s32 = primitive_type("s32")
    out = rng_uniform(np.int32(5), np.int32(5), (2, 2), s32, RngState())
    assert out.dtype == np.int32 and out.tolist() == [[5, 5], [5, 5]]


def test_rng_uniform_pred():
    pred = primitive_type("pred")
    out = rng_uniform(np.bool_(False), np.bool_(True), (10,), pred, RngState())
    assert out.dtype == np.bool_ and not out.any()  # [false, true) holds only false


def test_rng_uniform_scalar_shape():
    out = rng_uniform(np.float32(0), np.float32(1), (), primitive_type("f32"), RngState())
    assert out.shape == () and out.dtype == np.float32


def test_rng_normal_moments_dtype_and_determinism():
    f64 = primitive_type("f64")
    x = rng_normal(np.float64(10), np.float64(2), (20000,), f64, RngState(11))
    y = rng_normal(np.float64(10), np.float64(2), (20000,), f64, RngState(11))
    np.testing.assert_array_equal(x, y)
    assert x.dtype == np.float64
    assert abs(float(x.mean()) - 10) < 0.1 and abs(float(x.std()) - 2) < 0.1


def test_rng_normal_bf16():
    t = primitive_type("bf16")
    out = rng_normal(np.zeros((), t.dtype), np.ones((), t.dtype), (4, 5), t, RngState())
    assert out.dtype == ml_dtypes.bfloat16 and out.shape == (4, 5)
    assert np.isfinite(out.astype(np.float32)).all()


@pytest.mark.parametrize("name", ["s32", "pred", "c64"])
def test_rng_normal_needs_float(name):
    t = primitive_type(name)
    with pytest.raises(ValueError):
        rng_normal(np.zeros((), t.dtype), np.ones((), t.dtype), (2,), t, RngState())


def test_rng_uniform_rejects_complex():
    t = primitive_type("c64")
    with pytest.raises(ValueError):
        rng_uniform(np.zeros((), t.dtype), np.ones((), t.dtype), (2,), t, RngState())


@settings(max_examples=40, deadline=None)
@given(st.integers(-1000, 1000), st.integers(1, 1000), st.integers(0, 2**32 - 1),
       st.sampled_from(["f32", "f64", "s32", "s64", "bf16"]))
def test_rng_uniform_in_range_property(a, width, seed, name):
    t = primitive_type(name)
    b = a + width
    out = rng_uniform(np.array(a, t.dtype), np.array(b, t.dtype), (7, 3), t, RngState(seed))
    assert out.shape == (7, 3) and out.dtype == t.dtype
    lo, hi = float(np.array(a, t.dtype).astype(np.float64)), float(np.array(b, t.dtype).astype(np.float64))
    if lo >= hi:  # the bounds round to the same value in a narrow type: the range is empty
        return
    values = out.astype(np.float64)
    assert (values >= lo).all() and (values < hi).all()
