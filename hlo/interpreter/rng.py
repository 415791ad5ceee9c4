"""The rng family: `rng-bit-generator`, `rng` and `rng-get-and-update-state` (kernels and handlers).

`rng-bit-generator` is a pure function of its state and is reproduced bit-exactly
from XLA's expansion (RngBitGeneratorExpander + the Threefry-2x32 and Philox-4x32
generators of xla/hlo/builder/lib/prng.cc):

* state[0] is always the 64-bit key and is returned unchanged.
* rng_three_fry (state u64[2]): state[1] is a 64-bit counter; each generated
  Threefry block consumes one counter value, split into (low, high) 32-bit words.
* rng_philox (state u64[2] or u64[3]): the counter is 128 bits, (state[1], state[2])
  as (low, high) for u64[3]; for u64[2] XLA uses (state[1], state[0]) and stores
  back only the low word. Each Philox block yields four 32-bit words.
* rng_default is Philox on XLA:CPU.
* Outputs narrower than 32 bits keep the low bits of a 32-bit word; 64-bit outputs
  are built from two 32-bit words (low word first).

`rng` is stateful and not reproducible across XLA backends; here it draws from a
seeded numpy Generator owned by an `RngState`, which also holds the 128-bit global
counter that XLA:CPU returns from `rng-get-and-update-state`.
"""
from __future__ import annotations

import numpy as np

from ..opcodes import Op
from ..shapes import PrimitiveType
from .handlers import HANDLERS

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1

# Threefry-2x32 constants (Salmon et al. 2011), 20 rounds as in XLA.
_THREEFRY_PARITY = 0x1BD11BDA
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))

# Philox-4x32-10 constants.
_PHILOX_W32A = 0x9E3779B9
_PHILOX_W32B = 0xBB67AE85
_PHILOX_M4X32A = 0xD2511F53
_PHILOX_M4X32B = 0xCD9E8D57
_PHILOX_ROUNDS = 10

# Initial value of XLA:CPU's global 128-bit rng_state variable (llvm_util.cc).
XLA_CPU_INITIAL_RNG_COUNTER = 0x7012395


# --------------------------------------------------------------------------- words


def _split_u64(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) 32-bit words of a uint64 array."""
    x = np.asarray(x, dtype=np.uint64)
    return (x & np.uint64(_MASK32)).astype(np.uint32), (x >> np.uint64(32)).astype(np.uint32)


def _join_u32(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """uint64 array whose words are (low, high)."""
    return low.astype(np.uint64) | (high.astype(np.uint64) << np.uint64(32))


def _key_words(key: int) -> tuple[int, int]:
    return key & _MASK32, key >> 32


# --------------------------------------------------------------------------- threefry


def _rotate_left(v: np.ndarray, distance: int) -> np.ndarray:
    return (v << np.uint32(distance)) | (v >> np.uint32(32 - distance))


def threefry2x32(key: tuple[int, int], x0: np.ndarray, x1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with 20 rounds: encrypts the word pairs (x0, x1) under key (k0, k1).

    Same function as XLA's ThreeFry2x32 and JAX's threefry2x32 primitive.
    """
    k0, k1 = int(key[0]) & _MASK32, int(key[1]) & _MASK32
    ks = (k0, k1, _THREEFRY_PARITY ^ k0 ^ k1)
    shape = np.shape(x0)
    # Key schedule in Python ints and words at least 1-d: numpy warns when uint32
    # *scalars* wrap around, never when arrays do.
    x0 = np.array(x0, dtype=np.uint32, ndmin=1) + np.uint32(ks[0])
    x1 = np.array(x1, dtype=np.uint32, ndmin=1) + np.uint32(ks[1])
    for group in range(1, 6):
        for rotation in _THREEFRY_ROTATIONS[(group - 1) % 2]:
            x0 = x0 + x1
            x1 = x0 ^ _rotate_left(x1, rotation)
        # Key injection after every four rounds, with the group number added.
        x0 = x0 + np.uint32(ks[group % 3])
        x1 = x1 + np.uint32((ks[(group + 1) % 3] + group) & _MASK32)
    return x0.reshape(shape), x1.reshape(shape)


def _split_dim(dims: tuple[int, ...]) -> int:
    """The dimension XLA halves for 32-bit Threefry: first even one, else the largest."""
    for i, d in enumerate(dims):
        if d % 2 == 0:
            return i
    return max(range(len(dims)), key=lambda i: (dims[i], -i))


def _threefry_u32(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """32-bit Threefry words of shape dims and the advanced counter.

    Each Threefry block gives two words, so XLA generates a half-size array along one
    dimension and interleaves the two outputs along it (x0 at even, x1 at odd
    positions), dropping the last one when that dimension is odd.
    """
    if not dims:
        x0, _ = _threefry_blocks(key, counter, 1)
        return x0.reshape(()), (counter + 1) & _MASK64
    axis = _split_dim(dims)
    half = list(dims)
    half[axis] = (dims[axis] + 1) // 2
    count = int(np.prod(half))
    x0, x1 = _threefry_blocks(key, counter, count)
    pairs = np.stack([x0.reshape(half), x1.reshape(half)], axis=axis + 1)
    full = list(dims)
    full[axis] = 2 * half[axis]
    words = pairs.reshape(full)
    words = words[tuple(slice(0, d) for d in dims)]
    return np.ascontiguousarray(words), (counter + count) & _MASK64


def _threefry_blocks(key: int, counter: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Threefry outputs for the 64-bit counters counter, counter+1, ..., counter+count-1."""
    counters = np.uint64(counter) + np.arange(count, dtype=np.uint64)
    low, high = _split_u64(counters)
    return threefry2x32(_key_words(key), low, high)


def _threefry_u64(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    count = int(np.prod(dims, dtype=np.int64))
    x0, x1 = _threefry_blocks(key, counter, count)
    return _join_u32(x0, x1).reshape(dims), (counter + count) & _MASK64


# --------------------------------------------------------------------------- philox


def philox4x32(key: tuple[int, int], x: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """Philox-4x32 with 10 rounds on the four word arrays x under key (k0, k1)."""
    k0, k1 = int(key[0]) & _MASK32, int(key[1]) & _MASK32
    x0, x1, x2, x3 = (np.asarray(w, dtype=np.uint32) for w in x)
    for _ in range(_PHILOX_ROUNDS):
        p0 = x0.astype(np.uint64) * np.uint64(_PHILOX_M4X32A)
        p1 = x2.astype(np.uint64) * np.uint64(_PHILOX_M4X32B)
        hi0, lo0 = (p0 >> np.uint64(32)).astype(np.uint32), p0.astype(np.uint32)
        hi1, lo1 = (p1 >> np.uint64(32)).astype(np.uint32), p1.astype(np.uint32)
        x0, x1, x2, x3 = hi1 ^ x1 ^ np.uint32(k0), lo1, hi0 ^ x3 ^ np.uint32(k1), lo0
        k0 = (k0 + _PHILOX_W32A) & _MASK32
        k1 = (k1 + _PHILOX_W32B) & _MASK32
    return x0, x1, x2, x3


def _philox_blocks(key: int, counter: int, num_words: int) -> tuple[np.ndarray, int]:
    """ceil(num_words/4) Philox blocks, flattened block by block, and the new counter.

    The 128-bit counter is incremented as XLA does it: the low 64 bits wrap and carry
    one into the high 64 bits (which themselves wrap).
    """
    count = -(-num_words // 4)
    low, high = counter & _MASK64, counter >> 64
    lows = np.uint64(low) + np.arange(count, dtype=np.uint64)
    highs = np.where(lows < np.uint64(low), np.uint64((high + 1) & _MASK64), np.uint64(high))
    words = philox4x32(_key_words(key), (*_split_u64(lows), *_split_u64(highs)))
    new_low = (low + count) & _MASK64
    new_high = (high + (1 if new_low < low else 0)) & _MASK64
    return np.stack(words, axis=1).reshape(-1), new_low | (new_high << 64)


def _philox_u32(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    n = int(np.prod(dims, dtype=np.int64))
    words, new_counter = _philox_blocks(key, counter, n)
    return words[:n].reshape(dims), new_counter


def _philox_u64(key: int, counter: int, dims: tuple[int, ...]) -> tuple[np.ndarray, int]:
    n = int(np.prod(dims, dtype=np.int64))
    words, new_counter = _philox_blocks(key, counter, 2 * n)
    values = _join_u32(words[0::2], words[1::2])
    return values[:n].reshape(dims), new_counter


# --------------------------------------------------------------------------- rng-bit-generator

_ALGORITHMS = {"rng_default": "philox", "rng_philox": "philox", "rng_three_fry": "three_fry"}


def _normalise_algorithm(algorithm: str) -> str:
    name = algorithm.lower()
    if not name.startswith("rng_"):
        name = "rng_" + name
    if name not in _ALGORITHMS:
        raise ValueError(f"rng-bit-generator: unknown algorithm {algorithm!r}")
    return _ALGORITHMS[name]


def _state_words(state: np.ndarray, algorithm: str) -> list[int]:
    state = np.asarray(state)
    if state.ndim != 1 or state.dtype.kind not in "iu" or state.dtype.itemsize != 8:
        raise ValueError(f"rng-bit-generator: state must be a rank-1 64-bit integer array, "
                         f"got {state.dtype}{list(state.shape)}")
    allowed = (2,) if algorithm == "three_fry" else (2, 3)
    if state.shape[0] not in allowed:
        raise ValueError(f"rng-bit-generator: {algorithm} needs a state of "
                         f"{' or '.join(map(str, allowed))} u64 words, got {state.shape[0]}")
    return [int(w) for w in state.view(np.uint64)]


def _output_bits(out_type: PrimitiveType) -> int:
    if out_type.is_unsigned_int:
        return out_type.bits
    # XLA's expansion only yields unsigned words (other types fail its verifier); we
    # also accept same-width signed/float types as a reinterpretation of those bits.
    if (out_type.is_signed_int or out_type.is_float) and out_type.bits in (8, 16, 32, 64):
        return out_type.bits
    raise ValueError(f"rng-bit-generator: unsupported output element type {out_type.name}")


def _as_output_type(words: np.ndarray, out_type: PrimitiveType, bits: int) -> np.ndarray:
    """Keep the low `bits` bits of each word and store them as out_type."""
    if bits in (8, 16, 32, 64):
        unsigned = words.astype(np.dtype(f"uint{bits}"))
        return unsigned.view(out_type.dtype)
    return (words & np.uint32((1 << bits) - 1)).astype(out_type.dtype)


def rng_bit_generator(algorithm: str, state: np.ndarray, shape: tuple[int, ...],
                      out_type: PrimitiveType) -> tuple[np.ndarray, np.ndarray]:
    """The HLO op rng-bit-generator: (new state, random bits of `shape` and `out_type`).

    Bit-exact with XLA:CPU. The new state has the dtype and shape of `state`.
    """
    algo = _normalise_algorithm(algorithm)
    words = _state_words(state, algo)
    bits = _output_bits(out_type)
    dims = tuple(int(d) for d in shape)
    key = words[0]
    if algo == "three_fry":
        generate = _threefry_u64 if bits == 64 else _threefry_u32
        values, counter = generate(key, words[1], dims)
        new_words = [key, counter]
    else:
        # A u64[2] Philox state has no high counter word: XLA reuses the key for it.
        high = words[2] if len(words) == 3 else words[0]
        generate = _philox_u64 if bits == 64 else _philox_u32
        values, counter = generate(key, words[1] | (high << 64), dims)
        new_words = [key, counter & _MASK64, counter >> 64][:len(words)]
    new_state = np.array(new_words, dtype=np.uint64).view(np.asarray(state).dtype)
    return new_state, _as_output_type(values, out_type, bits)


# --------------------------------------------------------------------------- rng / state


class RngState:
    """The random state an evaluator owns for one module run.

    generator: seeded numpy Generator used by the stateful `rng` op.
    counter:   XLA:CPU's global 128-bit counter read by rng-get-and-update-state.
    """

    def __init__(self, seed: int = 0, counter: int = XLA_CPU_INITIAL_RNG_COUNTER):
        self.generator = np.random.default_rng(seed)
        self.counter = counter & _MASK128

    def get_and_update(self, delta: int) -> np.ndarray:
        """u64[2] (low, high) of the current counter; then adds delta to it.

        XLA adds delta zero-extended from 64 bits, so a negative delta wraps.
        """
        old = self.counter
        self.counter = (old + (int(delta) & _MASK64)) & _MASK128
        return np.array([old & _MASK64, old >> 64], dtype=np.uint64)


def rng_get_and_update_state(rng_state: RngState, delta: int) -> np.ndarray:
    """The HLO op rng-get-and-update-state(), delta=N."""
    return rng_state.get_and_update(delta)


def _scalar_float(x) -> float:
    return float(np.asarray(x).astype(np.float64).reshape(()))


def _scalar_int(x) -> int:
    arr = np.asarray(x).reshape(())
    if arr.dtype.kind in "biu":
        return int(arr.item())
    return int(arr.astype(np.int64))


def _uniform_float(a: float, b: float, dims, out_type: PrimitiveType, rng_state: RngState) -> np.ndarray:
    def draw(n: int) -> np.ndarray:
        return (a + (b - a) * rng_state.generator.random(n)).astype(out_type.dtype)

    n = int(np.prod(dims, dtype=np.int64))
    values = draw(n)
    if a < b and np.isfinite(b - a):
        # Rounding to a narrow type can land on b; XLA redraws those elements.
        bad = ~((values >= a) & (values < b))
        while bad.any():
            values[bad] = draw(int(bad.sum()))
            bad = ~((values >= a) & (values < b))
    return values.reshape(dims)


def _uniform_int(a: int, b: int, dims, out_type: PrimitiveType, rng_state: RngState) -> np.ndarray:
    if b <= a:
        # Empty interval: implementation defined; return a rather than fail.
        return np.broadcast_to(np.array(a).astype(out_type.dtype), dims).copy()
    draw_dtype = out_type.dtype if out_type.dtype.kind in "iu" else np.int64
    values = rng_state.generator.integers(a, b, size=dims, dtype=draw_dtype)
    return np.asarray(values).astype(out_type.dtype)


def rng_uniform(a, b, shape: tuple[int, ...], out_type: PrimitiveType, rng_state: RngState) -> np.ndarray:
    """The HLO op rng(a, b), distribution=rng_uniform: independent draws from [a, b).

    Floats: continuous uniform (b <= a gives a + (b - a) * U[0, 1)). Integers and
    pred: discrete uniform over a, ..., b - 1 (an empty range gives a).
    """
    dims = tuple(int(d) for d in shape)
    if out_type.is_float:
        return _uniform_float(_scalar_float(a), _scalar_float(b), dims, out_type, rng_state)
    if out_type.is_integral or out_type.is_pred:
        return _uniform_int(_scalar_int(a), _scalar_int(b), dims, out_type, rng_state)
    raise ValueError(f"rng uniform: unsupported element type {out_type.name}")


def rng_normal(mu, sigma, shape: tuple[int, ...], out_type: PrimitiveType, rng_state: RngState) -> np.ndarray:
    """The HLO op rng(mu, sigma), distribution=rng_normal: independent N(mu, sigma^2) draws."""
    if not out_type.is_float:
        raise ValueError(f"rng normal: element type must be floating point, got {out_type.name}")
    dims = tuple(int(d) for d in shape)
    normal = rng_state.generator.standard_normal(dims)
    return np.asarray(_scalar_float(mu) + _scalar_float(sigma) * normal).astype(out_type.dtype)


# --------------------------------------------------------------------------- handlers

@HANDLERS.register(Op.RNG)
def run_rng(ev, inst, ops):
    t = inst.shape.element_type
    if inst.attrs["distribution"] == "rng_normal":
        return rng_normal(ops[0], ops[1], inst.shape.dims, t, ev.rng_state)
    return rng_uniform(ops[0], ops[1], inst.shape.dims, t, ev.rng_state)


@HANDLERS.register(Op.RNG_BIT_GENERATOR)
def run_rng_bit_generator(ev, inst, ops):
    out = inst.shape.tuple_shapes[1]
    return rng_bit_generator(inst.attrs["algorithm"], ops[0], out.dims, out.element_type)


@HANDLERS.register(Op.RNG_GET_AND_UPDATE_STATE)
def run_rng_get_and_update_state(ev, inst, ops):
    return rng_get_and_update_state(ev.rng_state, inst.attrs["delta"])
