"""rng-bit-generator-expander: rng-bit-generator as plain HLO bit arithmetic.

Like XLA's RngBitGeneratorExpander, each rng-bit-generator becomes a `call` of a
generator computation built once per (algorithm, state shape, output shape).
The computation computes the same bits as the op (XLA's prng library; see
hlo/interpreter/rng.py for the algorithms) with u32/u64 add, xor, shifts,
multiply, convert, iota, broadcast, reshape, slice, concatenate and select:

* state[0] is the key; the result state is (key, advanced counter).
* rng_three_fry: Threefry-2x32 (20 rounds) on the 64-bit counter state[1]
  plus each element's row-major index. 32-bit outputs are generated for half
  of one dimension (the first even one, else the largest) and the two output
  words of each block are interleaved along it; 64-bit outputs join the two
  words (low first); narrower outputs keep the low bits of 32-bit words.
* rng_philox / rng_default: Philox-4x32 (10 rounds) on the 128-bit counter
  (state[1], state[2]), or (state[1], state[0]) for a u64[2] state, whose new
  value then keeps only the low word. Block i uses counter + i; the four words of
  each block are laid out in order (pairs of words for 64-bit outputs).

Signed and floating-point outputs reinterpret the unsigned bits of their width.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..diagnostics import error
from ..ir import Computation, Instruction, Module
from ..opcodes import Op
from ..shapes import PRIMITIVE_TYPES, PrimitiveType, Shape
from .base import Pass, register
from .rewrite import Rewriter, replace, unfused_instructions

U32 = PRIMITIVE_TYPES["u32"]
U64 = PRIMITIVE_TYPES["u64"]
PRED = PRIMITIVE_TYPES["pred"]

_THREEFRY_PARITY = 0x1BD11BDA
_THREEFRY_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PHILOX_W32A, _PHILOX_W32B = 0x9E3779B9, 0xBB67AE85
_PHILOX_M4X32A, _PHILOX_M4X32B = 0xD2511F53, 0xCD9E8D57
_PHILOX_ROUNDS = 10

# rng_default is Philox on XLA:CPU.
_ALGORITHMS = {"rng_default": "philox", "rng_philox": "philox", "rng_three_fry": "three_fry"}


@register
class RngBitGeneratorExpander(Pass):
    name = "rng-bit-generator-expander"
    description = "Replace rng-bit-generator by a call of a Threefry/Philox computation in plain HLO ops."
    edits_tracked = True  # (base.py)

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        generators: dict[tuple, Computation] = {}
        rngs = unfused_instructions(module, lambda inst: inst.opcode == Op.RNG_BIT_GENERATOR)
        for inst in rngs:
            expand(inst, rewriter, generators)
        return bool(rngs)


def expand(rng: Instruction, rewriter: Rewriter, generators: dict[tuple, Computation]) -> Instruction:
    """Replace `rng` by a call of its generator computation (created on first use)."""
    algorithm = _ALGORITHMS[rng.attrs["algorithm"].lower()]
    state_shape, data_shape = rng.operands[0].shape, rng.shape.tuple_shapes[1]
    _check_supported(rng, algorithm, state_shape, data_shape)
    key = (algorithm, str(state_shape), str(rng.shape))
    if key not in generators:
        generator = build_generator(rewriter, algorithm, state_shape, rng.shape)
        rng.parent.parent.add_computation(generator, before=rng.parent)
        generators[key] = generator
    call = rewriter.add(rng.parent, Op.CALL, rng.shape, [rng.operands[0]], {"to_apply": generators[key]},
                        before=rng, like=rng)
    call.frontend_attributes = rng.frontend_attributes
    call.sharding = rng.sharding
    replace(rng, call)
    return call


def _check_supported(rng: Instruction, algorithm: str, state_shape: Shape, data_shape: Shape) -> None:
    words = {"three_fry": (2,), "philox": (2, 3)}[algorithm]
    et = state_shape.element_type if not state_shape.is_tuple else None
    if et is None or not et.is_integral or et.bits != 64 or state_shape.rank != 1 or state_shape.dims[0] not in words:
        raise error(f"rng-bit-generator-expander: {rng.attrs['algorithm']} needs a state of "
                    f"{' or '.join(f'u64[{n}]' for n in words)}, got {state_shape}", rng.loc)
    if data_shape.is_tuple or data_shape.is_dynamic or _output_bits(data_shape.element_type) is None:
        raise error(f"rng-bit-generator-expander: cannot expand an rng-bit-generator producing {data_shape}",
                    rng.loc)


def _output_bits(et: PrimitiveType) -> Optional[int]:
    """Bits per output element, or None when the type cannot hold generated bits."""
    if et.is_unsigned_int:
        return et.bits
    if (et.is_signed_int or et.is_float) and et.bits in (8, 16, 32, 64):
        return et.bits
    return None


# --------------------------------------------------------------------------- emitting HLO

class Emitter:
    """Appends instructions to one computation; binary ops broadcast a scalar operand."""

    def __init__(self, rewriter: Rewriter, comp: Computation):
        self.rewriter = rewriter
        self.comp = comp
        self._broadcasts: dict[tuple, Instruction] = {}
        self._constants: dict[tuple, Instruction] = {}

    def add(self, opcode: str, shape: Shape, operands=(), attrs=None, name: Optional[str] = None) -> Instruction:
        return self.rewriter.add(self.comp, opcode, shape.with_default_layouts(), operands, attrs, name=name)

    def parameter(self, shape: Shape, name: str) -> Instruction:
        return self.rewriter.add(self.comp, Op.PARAMETER, shape, (), {"parameter_number": 0}, name=name)

    def constant(self, value: int, et: PrimitiveType) -> Instruction:
        key = (value, et.name)
        if key not in self._constants:
            shape = Shape.array(et, ()).with_default_layouts()
            self._constants[key] = self.rewriter.constant(self.comp, np.array(value, dtype=et.dtype), shape)
        return self._constants[key]

    def broadcast(self, scalar: Instruction, dims: tuple[int, ...]) -> Instruction:
        if scalar.shape.dims == dims:
            return scalar
        key = (id(scalar), dims)
        if key not in self._broadcasts:
            self._broadcasts[key] = self.add(Op.BROADCAST, Shape.array(scalar.shape.element_type, dims),
                                             [scalar], {"dimensions": ()})
        return self._broadcasts[key]

    def binary(self, opcode: str, a: Instruction, b: Instruction, attrs=None) -> Instruction:
        dims = a.shape.dims if a.shape.rank >= b.shape.rank else b.shape.dims
        a, b = self.broadcast(a, dims), self.broadcast(b, dims)
        et = PRED if opcode == Op.COMPARE else a.shape.element_type
        return self.add(opcode, Shape.array(et, dims), [a, b], attrs)

    def plus(self, a, b):
        return self.binary(Op.ADD, a, b)

    def xor(self, a, b):
        return self.binary(Op.XOR, a, b)

    def shift_left(self, a: Instruction, n: int) -> Instruction:
        return self.binary(Op.SHIFT_LEFT, a, self.constant(n, a.shape.element_type))

    def shift_right(self, a: Instruction, n: int) -> Instruction:
        return self.binary(Op.SHIFT_RIGHT_LOGICAL, a, self.constant(n, a.shape.element_type))

    def convert(self, a: Instruction, et: PrimitiveType) -> Instruction:
        if a.shape.element_type is et:
            return a
        return self.add(Op.CONVERT, Shape.array(et, a.shape.dims), [a])

    def reshape(self, a: Instruction, dims) -> Instruction:
        dims = tuple(dims)
        if a.shape.dims == dims:
            return a
        return self.add(Op.RESHAPE, Shape.array(a.shape.element_type, dims), [a])

    def slice(self, a: Instruction, ranges) -> Instruction:
        """Unit-stride slice; ranges: (start, limit) per dimension."""
        dims = [hi - lo for lo, hi in ranges]
        return self.add(Op.SLICE, Shape.array(a.shape.element_type, dims), [a],
                        dict(slice=tuple((lo, hi, 1) for lo, hi in ranges)))

    def concatenate(self, parts: list[Instruction], dim: int) -> Instruction:
        dims = list(parts[0].shape.dims)
        dims[dim] = sum(p.shape.dims[dim] for p in parts)
        return self.add(Op.CONCATENATE, Shape.array(parts[0].shape.element_type, dims), parts, {"dimensions": (dim,)})

    def iota(self, et: PrimitiveType, dims, dim: int) -> Instruction:
        return self.add(Op.IOTA, Shape.array(et, dims), (), {"iota_dimension": dim})

    def split_u64(self, a: Instruction) -> tuple[Instruction, Instruction]:
        """(low, high) 32-bit words."""
        return self.convert(a, U32), self.convert(self.shift_right(a, 32), U32)

    def join_u32(self, low: Instruction, high: Instruction) -> Instruction:
        return self.binary(Op.OR, self.convert(low, U64), self.shift_left(self.convert(high, U64), 32))

    def element(self, vector: Instruction, index: int) -> Instruction:
        """Scalar element `index` of a rank-1 array."""
        return self.reshape(self.slice(vector, [(index, index + 1)]), ())


def build_generator(rewriter: Rewriter, algorithm: str, state_shape: Shape, result_shape: Shape) -> Computation:
    """(state) -> (new state, bits) computing exactly what rng-bit-generator computes."""
    comp = rewriter.new_computation(f"rng_{algorithm}")
    e = Emitter(rewriter, comp)
    data_shape = result_shape.tuple_shapes[1]
    param = e.parameter(state_shape, "state")
    state = param
    if state_shape.element_type is not U64:
        state = e.add(Op.BITCAST_CONVERT, state_shape.with_element_type(U64), [param])
    key = e.element(state, 0)
    if algorithm == "three_fry":
        generate = threefry_bits_64 if data_shape.element_type.bits == 64 else threefry_bits_32
        bits, new_counter = generate(e, key, e.element(state, 1), data_shape.dims)
        counter_words = [new_counter]
    else:
        high = e.element(state, 2) if state_shape.dims[0] == 3 else key
        generate = philox_bits_64 if data_shape.element_type.bits == 64 else philox_bits_32
        bits, new_low, new_high = generate(e, key, e.element(state, 1), high, data_shape.dims)
        counter_words = [new_low, new_high] if state_shape.dims[0] == 3 else [new_low]
    new_state = e.concatenate([e.reshape(w, (1,)) for w in [key] + counter_words], 0)
    if state_shape.element_type is not U64:
        new_state = e.add(Op.BITCAST_CONVERT, state_shape, [new_state])
    value = as_output_type(e, bits, data_shape.element_type)
    # The last instructions are new and used only by the result: give them the result's layouts.
    new_state.shape, value.shape = state_shape, data_shape
    comp.root = rewriter.add(comp, Op.TUPLE, result_shape, [new_state, value])
    return comp


def as_output_type(e: Emitter, words: Instruction, et: PrimitiveType) -> Instruction:
    """Keep the low bits of each u32/u64 word and reinterpret them as `et`."""
    bits = _output_bits(et)
    unsigned = PRIMITIVE_TYPES[f"u{bits}"]
    value = e.convert(words, unsigned)
    if unsigned is not et:
        value = e.add(Op.BITCAST_CONVERT, Shape.array(et, value.shape.dims), [value])
    return value


# --------------------------------------------------------------------------- threefry

def threefry2x32(e: Emitter, key: tuple[Instruction, Instruction], x0: Instruction, x1: Instruction
                 ) -> tuple[Instruction, Instruction]:
    """Threefry-2x32, 20 rounds, on word arrays x0, x1 under scalar key words."""
    k0, k1 = key
    ks = (k0, k1, e.xor(e.xor(e.constant(_THREEFRY_PARITY, U32), k0), k1))
    x0, x1 = e.plus(x0, ks[0]), e.plus(x1, ks[1])
    for group in range(1, 6):
        for rotation in _THREEFRY_ROTATIONS[(group - 1) % 2]:
            x0 = e.plus(x0, x1)
            rotated = e.binary(Op.OR, e.shift_left(x1, rotation), e.shift_right(x1, 32 - rotation))
            x1 = e.xor(x0, rotated)
        # Key injection; the round number is added to the scalar key word (same bits mod 2^32).
        x0 = e.plus(x0, ks[group % 3])
        x1 = e.plus(x1, e.plus(ks[(group + 1) % 3], e.constant(group, U32)))
    return x0, x1


def threefry_counters(e: Emitter, counter: Instruction, dims: tuple[int, ...]) -> Instruction:
    """u64 array of dims: counter + row-major index of each element."""
    value = e.broadcast(counter, dims)
    stride = 1
    for i in reversed(range(len(dims))):
        if dims[i] < 2:
            continue
        index = e.iota(U64, dims, i)
        if stride != 1:
            index = e.binary(Op.MULTIPLY, index, e.constant(stride, U64))
        value = e.plus(value, index)
        stride *= dims[i]
    return value


def _key_words(e: Emitter, key: Instruction) -> tuple[Instruction, Instruction]:
    return e.split_u64(key)


def threefry_split_dim(dims: tuple[int, ...]) -> int:
    """The dimension halved for 32-bit outputs: the first even one, else the (first) largest."""
    for i, d in enumerate(dims):
        if d % 2 == 0:
            return i
    return max(range(len(dims)), key=lambda i: (dims[i], -i))


def threefry_bits_32(e: Emitter, key: Instruction, counter: Instruction, dims: tuple[int, ...]):
    """(u32 words of dims, new counter)."""
    if not dims:
        x0, x1 = e.split_u64(counter)
        y0, _ = threefry2x32(e, _key_words(e, key), x0, x1)
        return y0, e.plus(counter, e.constant(1, U64))
    axis = threefry_split_dim(dims)
    half = dims[:axis] + ((dims[axis] + 1) // 2, 1) + dims[axis + 1:]
    x0, x1 = e.split_u64(threefry_counters(e, counter, half))
    y0, y1 = threefry2x32(e, _key_words(e, key), x0, x1)
    pairs = e.concatenate([y0, y1], axis + 1)
    even = dims[:axis] + (2 * half[axis],) + dims[axis + 1:]
    words = e.reshape(pairs, even)
    if even != dims:
        words = e.slice(words, [(0, d) for d in dims])
    return words, e.plus(counter, e.constant(int(np.prod(half)), U64))


def threefry_bits_64(e: Emitter, key: Instruction, counter: Instruction, dims: tuple[int, ...]):
    """(u64 values of dims, new counter)."""
    x0, x1 = e.split_u64(threefry_counters(e, counter, dims))
    y0, y1 = threefry2x32(e, _key_words(e, key), x0, x1)
    return e.join_u32(y0, y1), e.plus(counter, e.constant(int(np.prod(dims, dtype=np.int64)), U64))


# --------------------------------------------------------------------------- philox

def philox4x32(e: Emitter, key: tuple[Instruction, Instruction], x: list[Instruction]) -> list[Instruction]:
    """Philox-4x32, 10 rounds, on four word arrays under scalar key words."""
    k0, k1 = key
    x0, x1, x2, x3 = x
    for round_ in range(_PHILOX_ROUNDS):
        if round_:
            k0 = e.plus(k0, e.constant(_PHILOX_W32A, U32))
            k1 = e.plus(k1, e.constant(_PHILOX_W32B, U32))
        lo0, hi0 = e.split_u64(e.binary(Op.MULTIPLY, e.convert(x0, U64), e.constant(_PHILOX_M4X32A, U64)))
        lo1, hi1 = e.split_u64(e.binary(Op.MULTIPLY, e.convert(x2, U64), e.constant(_PHILOX_M4X32B, U64)))
        x0, x1, x2, x3 = e.xor(e.xor(hi1, x1), k0), lo1, e.xor(e.xor(hi0, x3), k1), lo0
    return [x0, x1, x2, x3]


def _add_u128(e: Emitter, low: Instruction, high: Instruction, delta: Instruction):
    """(low + delta, high + carry) on u64 words; delta may be an array."""
    new_low = e.plus(low, delta)
    carry = e.binary(Op.COMPARE, new_low, low, {"direction": "LT"})
    new_high = e.add(Op.SELECT, Shape.array(U64, new_low.shape.dims),
                     [carry, e.broadcast(e.plus(high, e.constant(1, U64)), new_low.shape.dims),
                      e.broadcast(high, new_low.shape.dims)])
    return new_low, new_high


def philox_words(e: Emitter, key: Instruction, low: Instruction, high: Instruction, num_words: int):
    """Four u32[blocks] word arrays for counters (low, high) + 0, 1, ... and the new counter."""
    blocks = -(-num_words // 4)
    lows, highs = _add_u128(e, low, high, e.iota(U64, (blocks,), 0))
    words = philox4x32(e, _key_words(e, key), [*e.split_u64(lows), *e.split_u64(highs)])
    new_low, new_high = _add_u128(e, low, high, e.constant(blocks, U64))
    return words, blocks, new_low, new_high


def _interleave(e: Emitter, columns: list[Instruction], rows: int, count: int, dims: tuple[int, ...]) -> Instruction:
    """Row-major [rows, len(columns)] table of the columns, first `count` entries, shaped dims."""
    table = e.concatenate([e.reshape(c, (rows, 1)) for c in columns], 1)
    flat = e.reshape(table, (rows * len(columns),))
    if rows * len(columns) != count:
        flat = e.slice(flat, [(0, count)])
    return e.reshape(flat, dims)


def philox_bits_32(e: Emitter, key: Instruction, low: Instruction, high: Instruction, dims: tuple[int, ...]):
    count = int(np.prod(dims, dtype=np.int64))
    words, blocks, new_low, new_high = philox_words(e, key, low, high, count)
    return _interleave(e, words, blocks, count, dims), new_low, new_high


def philox_bits_64(e: Emitter, key: Instruction, low: Instruction, high: Instruction, dims: tuple[int, ...]):
    count = int(np.prod(dims, dtype=np.int64))
    words, blocks, new_low, new_high = philox_words(e, key, low, high, 2 * count)
    values = [e.join_u32(words[0], words[1]), e.join_u32(words[2], words[3])]
    return _interleave(e, values, blocks, count, dims), new_low, new_high
