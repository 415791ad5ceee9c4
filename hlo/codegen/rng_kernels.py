"""rng and rng-get-and-update-state as XLA:CPU compiles them.

XLA:CPU keeps one 128-bit counter per compiled module (a global starting at 0x7012395;
`rng-get-and-update-state, delta=N` returns it as u64[2] (low, high) and adds N), and
its RngExpander turns `rng` into Philox-4x32 bits drawn at that counter:

* the op takes the counter and advances it by its number of 32-bit words (elements x
  bits / 32); word w of its bits is lane w % 4 of Philox-4x32-10 at counter + w // 4
  (a 128-bit add) under the op's key (a 64-bit constant mixed from the op's ordinal in
  the module); a 64-bit element i takes words 2i (low) and 2i + 1 (high);
* uniform floats: the top mantissa-width bits as an integer, times 2^-mantissa, then
  x * (b - a) + a; uniform integers: bits % (b - a) (unsigned), added to a in two
  halves; narrower types are drawn as their 32-bit type and converted;
* normal: uniform [0, 1) pairs over the shape with one dimension split in halves
  (the first even one, else the largest), then Box-Muller (u1 = max(x0, 1e-7),
  r = sqrt(-2 log u1), angle = 2 pi x1: r sin, r cos), then mean + sigma * value.

Like XLA's, the values depend on how often the module ran: a second run draws new ones.
Both ops are emitted in the driver (`in_driver`), never in a kernel of their own: the counter
is the entry's, and each op's key comes from its ordinal among the driver's rng ops (a kernel
deduplicated by its signature would share one key between equal-shaped ops).
"""
from __future__ import annotations

import math
import weakref

from llvmlite import ir

from ..diagnostics import error
from ..ir import Instruction
from ..opcodes import Op
from ..shapes import PrimitiveType, primitive_type
from . import scalar_ops
from .emitters import EMITTERS
from .function_context import const64, major_to_minor, row_major_offset
from .types import F64, I64, compute_type, store_element

INITIAL_COUNTER = 0x7012395          # XLA:CPU's initial rng state (llvm_util.cc)
I32 = ir.IntType(32)
I128 = ir.IntType(128)
PHILOX_W32A, PHILOX_W32B = 0x9E3779B9, 0xBB67AE85
PHILOX_M4X32A, PHILOX_M4X32B = 0xD2511F53, 0xCD9E8D57
KEY_MIX = 0x9E3779B97F4A7C15
_KEYS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()   # llvm module -> {id(rng): ordinal}


def _state(low) -> ir.GlobalVariable:
    """The module's counter. Every LLVM module of one compile that uses it defines the same
    weak (linkonce_odr) symbol, so that code split over several modules shares one."""
    name = f"{low.fn.name}_rng_state"
    found = low.llmod.globals.get(name)
    if found is not None:
        return found
    g = ir.GlobalVariable(low.llmod, I128, name=name)
    g.linkage = "linkonce_odr"
    g.initializer = ir.Constant(I128, INITIAL_COUNTER)
    g.align = 16
    return g


def get_and_update(low, delta: int):
    """The counter before adding delta (an i128 value); the global gets counter + delta."""
    b = low.b
    state = _state(low)
    old = b.load(state)
    b.store(b.add(old, ir.Constant(I128, delta & ((1 << 64) - 1))), state)
    return old


@EMITTERS.register(Op.RNG_GET_AND_UPDATE_STATE, in_driver=True)
def emit_rng_get_and_update_state(low, inst: Instruction) -> None:
    b = low.b
    old = get_and_update(low, inst.attrs["delta"])
    out = low.a.values[id(inst)]
    pointer = low.pointer(out)
    for k in range(2):
        word = b.trunc(b.lshr(old, ir.Constant(I128, 64 * k)), I64)
        store_element(b, word, pointer, out.shape, (const64(k),))


# --------------------------------------------------------------------------- Philox bits

def philox_word(b: ir.IRBuilder, counter, key: int, word):
    """32-bit word `word` (i64) of the Philox stream at the 128-bit `counter` under `key`."""
    block = b.add(counter, b.zext(b.lshr(word, const64(2)), I128))
    x = [b.trunc(b.lshr(block, ir.Constant(I128, 32 * k)), I32) for k in range(4)]
    k0, k1 = key & 0xFFFFFFFF, key >> 32
    for _ in range(10):
        p0 = b.mul(b.zext(x[0], I64), const64(PHILOX_M4X32A))
        p1 = b.mul(b.zext(x[2], I64), const64(PHILOX_M4X32B))
        hi0, lo0 = b.trunc(b.lshr(p0, const64(32)), I32), b.trunc(p0, I32)
        hi1, lo1 = b.trunc(b.lshr(p1, const64(32)), I32), b.trunc(p1, I32)
        x = [b.xor(b.xor(hi1, x[1]), ir.Constant(I32, k0)), lo1,
             b.xor(b.xor(hi0, x[3]), ir.Constant(I32, k1)), lo0]
        k0, k1 = (k0 + PHILOX_W32A) & 0xFFFFFFFF, (k1 + PHILOX_W32B) & 0xFFFFFFFF
    lane = b.trunc(b.and_(word, const64(3)), ir.IntType(2))
    chosen = x[3]
    for k in (2, 1, 0):
        chosen = b.select(b.icmp_unsigned("==", lane, ir.Constant(ir.IntType(2), k)), x[k], chosen)
    return chosen


def random_bits(b: ir.IRBuilder, counter, key: int, position, bits: int):
    """The `bits`-wide (32 or 64) random integer of element `position` (i64)."""
    if bits == 32:
        return philox_word(b, counter, key, position)
    first = b.mul(position, const64(2))
    low_word = b.zext(philox_word(b, counter, key, first), I64)
    high_word = b.zext(philox_word(b, counter, key, b.add(first, const64(1))), I64)
    return b.or_(low_word, b.shl(high_word, const64(32)))


# --------------------------------------------------------------------------- distributions

def _wide_type(t: PrimitiveType) -> PrimitiveType:
    """The type an rng of element type t is drawn in (narrow types as their 32-bit kind)."""
    if t.bits >= 32 and not t.is_pred:
        return t
    if t.is_float:
        return primitive_type("f32")
    return primitive_type("u32" if t.is_unsigned_int else "s32")


def _uniform_float(b, bits, lo, hi, t: PrimitiveType):
    ty = compute_type(t)
    width = 64 if ty == F64 else 32
    mantissa = 52 if width == 64 else 23
    integer = b.lshr(bits, ir.Constant(bits.type, width - mantissa))
    unit = b.fmul(b.uitofp(integer, ty), ir.Constant(ty, math.ldexp(1.0, -mantissa)))
    return b.fadd(b.fmul(unit, b.fsub(hi, lo)), lo)


def _uniform_int(b, bits, lo, hi):
    span = b.sub(hi, lo)
    safe = b.select(b.icmp_unsigned("==", span, ir.Constant(span.type, 0)), ir.Constant(span.type, 1), span)
    dist = b.select(b.icmp_unsigned("==", span, ir.Constant(span.type, 0)), bits, b.urem(bits, safe))
    half = b.lshr(dist, ir.Constant(dist.type, 1))
    return b.add(b.add(lo, half), b.sub(dist, half))


def split_halves(dims: tuple) -> tuple[int, tuple]:
    """XLA's SplitShapeIntoHalves: (split dim, the uniform pairs' shape with a new dim of 2
    after it)."""
    if not dims:
        return 0, (2,)
    even = [d for d, n in enumerate(dims) if n % 2 == 0]
    split = even[0] if even else max(range(len(dims)), key=lambda d: (dims[d], -d))
    pairs = list(dims)
    pairs[split] = (dims[split] + 1) // 2
    pairs.insert(split + 1, 2)
    return split, tuple(pairs)


def _normal(ctx, counter, key: int, index, dims: tuple, t: PrimitiveType):
    """A standard normal value of output element `index` (compute type of t: f32/f64)."""
    b = ctx.b
    ty = compute_type(t)
    width = 64 if ty == F64 else 32
    split, pairs = split_halves(dims)
    if dims:
        half = b.udiv(index[split], const64(2))
        second = b.icmp_unsigned("==", b.urem(index[split], const64(2)), const64(1))
        base = list(index[:split]) + [half]
        rest = list(index[split + 1:])
    else:
        base, rest, second = [], [], ir.Constant(ir.IntType(1), 0)
    zero, one = ir.Constant(ty, 0.0), ir.Constant(ty, 1.0)

    def uniform(pair: int):
        position = row_major_offset(b, base + [const64(pair)] + rest, pairs)
        return _uniform_float(b, random_bits(b, counter, key, position, width), zero, one, t)

    x0, x1 = uniform(0), uniform(1)
    u1 = b.call(scalar_ops.declare_overloaded(ctx.module, "llvm.maxnum", ty, [x0, x0]),
                [x0, ir.Constant(ty, 1.0e-7)])
    angle = b.fmul(ir.Constant(ty, 2.0 * math.pi), x1)
    radius = b.call(scalar_ops.declare_overloaded(ctx.module, "llvm.sqrt", ty, [u1]),
                    [b.fmul(ir.Constant(ty, -2.0), scalar_ops.call_math(ctx, Op.LOG, [u1], ty))])
    sin = scalar_ops.call_math(ctx, Op.SINE, [angle], ty)
    cos = scalar_ops.call_math(ctx, Op.COSINE, [angle], ty)
    return b.fmul(b.select(second, cos, sin), radius)


def _op_key(low, inst: Instruction) -> int:
    """A fixed 64-bit key per rng op of the module (XLA mixes the op's id the same way)."""
    keys = _KEYS.setdefault(low.llmod, {})
    ordinal = keys.setdefault(id(inst), len(keys) + 1)
    return ((ordinal * KEY_MIX) & ((1 << 64) - 1)) >> 32


@EMITTERS.register(Op.RNG, in_driver=True)
def emit_rng(low, inst: Instruction) -> None:
    b, elem = low.b, low.elem
    out = low.a.values[id(inst)]
    t = inst.shape.element_type
    wide = _wide_type(t)
    normal = inst.attrs["distribution"] == "rng_normal"
    if normal and not t.is_float:
        raise error(f"rng_normal needs a floating-point result, %{inst.name} is {t.name}", inst.loc)
    if not (t.is_float or t.is_integral or t.is_pred):
        raise error(f"the cpu backend does not support rng of {t.name} (%{inst.name})", inst.loc)
    dims = tuple(inst.shape.dims)
    count = math.prod(dims)
    counter = get_and_update(low, count * (wide.bits // 32))
    key = _op_key(low, inst)
    a_op, b_op = inst.operands[:2]
    lo = scalar_ops.convert(b, elem.value(a_op, ()), a_op.shape.element_type, wide)
    hi = scalar_ops.convert(b, elem.value(b_op, ()), b_op.shape.element_type, wide)
    pointer = low.pointer(out)
    with low.ctx.loop_nest(out.shape.dims, major_to_minor(out.shape), roll_outer=True) as index:
        if normal:
            value = b.fadd(lo, b.fmul(hi, _normal(low.ctx, counter, key, index, dims, wide)))
        else:
            position = row_major_offset(b, index, dims)
            bits = random_bits(b, counter, key, position, wide.bits)
            value = _uniform_float(b, bits, lo, hi, wide) if wide.is_float else _uniform_int(b, bits, lo, hi)
        store_element(b, scalar_ops.convert(b, value, wide, t), pointer, out.shape, index)

