"""Per-element IR generation: the value of an instruction at a multi-dimensional index.

`ElementalEmitter.value(inst, index)` returns the LLVM value (compute type, see
types.py) of `inst` at `index` (a tuple of i64 values). Materialised instructions
are loaded from their buffers; fused instructions are computed on the spot,
recursing into their producers, so one fusion becomes one loop nest.

ELEMENT_GENERATORS maps an opcode to `generate(elem, inst, index) -> value` (elem: the
ElementalEmitter), registered beside each definition below: elementwise ops
(scalar_ops.py does the arithmetic), data movement ops as index arithmetic (broadcast,
transpose, reshape, slice, pad, concatenate, reverse, dynamic-slice, gather), and
reduce, reduce-window, dot and convolution with their inner loops emitted at the
point of use, accumulators held in allocas (mem2reg turns them into registers). With
a tuple result, the generators of reduce and reduce-window (detail `all_results=True`)
return the list of all results.

Values computed inside an inner loop must not be reused after it, so the memo of
computed values is a stack of scopes pushed around every emitted loop
(function_context.py).
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Callable, Optional

import numpy as np
from llvmlite import ir

from ..attributes import ConvDims, DotDims, GatherDims
from ..diagnostics import error, written_name
from ..ir import Computation, Instruction
from ..opcodes import Op
from ..registry import OpRegistry
from ..shapes import PrimitiveType, Shape, real_type_of
from . import index_digits, scalar_ops
from .emitters import EMITTERS, unsupported_error
from .function_context import FunctionContext, const64, major_to_minor, row_major_offset
from .types import I1, add_i64, compute_type, constant_of, load_element, mul_i64, round_to

ELEMENT_GENERATORS = OpRegistry("element generator")


def _key(index) -> tuple:
    return tuple(id(v) if not isinstance(v, ir.Constant) else ("c", v.constant) for v in index)


class ElementalEmitter:
    """Computes instruction values element by element; see the module docstring.

    buffer_of(inst) -> pointer or None: where a materialised instruction lives.
    bindings: parameter instructions of fused/scalar computations -> generator(index).
    """

    def __init__(self, ctx: FunctionContext, buffer_of: Callable[[Instruction], Optional[ir.Value]]):
        self.ctx = ctx
        self.buffer_of = buffer_of
        self.bindings: dict[int, Callable] = {}
        self.digits = index_digits.IndexDigits()   # loop indices as digits: reshapes without division

    @property
    def b(self) -> ir.IRBuilder:
        return self.ctx.b

    # -- entry points
    def value(self, inst: Instruction, index):
        key = (id(inst), _key(index))
        cached = self.ctx.memo_get(key)
        if cached is not None:
            return cached
        result = self._compute(inst, tuple(index))
        self.ctx.memo_put(key, result)
        return result

    def bind_fusion(self, fusion: Instruction) -> None:
        """Make the fused computation's parameters read the fusion's operands."""
        body = fusion.attrs["calls"]
        for param in body.parameters:
            operand = fusion.operands[param.attrs["parameter_number"]]
            self.bindings[id(param)] = (lambda op: lambda index: self.value(op, index))(operand)

    def call_scalar(self, comp: Computation, args: list) -> list:
        """Emit a scalar computation inline on LLVM scalar values; its root leaves' values."""
        for param in comp.parameters:
            arg = args[param.attrs["parameter_number"]]
            self.bindings[id(param)] = (lambda v: lambda index: v)(arg)
        with self.ctx.scope():
            root = comp.root
            if root.opcode == Op.TUPLE:
                return [self.value(op, ()) for op in root.operands]
            return [self.value(root, ())]

    def _compute(self, inst: Instruction, index):
        binding = self.bindings.get(id(inst))
        if binding is not None:
            return binding(index)
        pointer = self.buffer_of(inst)
        if pointer is not None:
            return load_element(self.b, pointer, inst.shape, index)
        return self.compute(inst, index)

    def compute(self, inst: Instruction, index):
        """The value computed from the operands (never loaded from inst's own buffer)."""
        generate = ELEMENT_GENERATORS.get(inst.opcode)
        if generate is None:
            if EMITTERS.reason(inst.opcode):
                raise unsupported_error(inst)
            raise error(f"the cpu backend cannot compute '{inst.opcode}' element by element "
                        f"(%{written_name(inst.loc, inst.name)})", inst.loc)
        return generate(self, inst, index)

    # -- helpers shared by several generators
    def constant_global(self, inst: Instruction):
        """The read-only global holding a constant's literal in its layout's physical order."""
        found = self.ctx.globals.get(id(inst))
        if found is not None:
            return found
        shape = inst.shape
        array = np.asarray(inst.attrs["literal"].array)
        physical = np.transpose(array, list(reversed(shape.minor_to_major()))) if shape.rank else array
        data = np.ascontiguousarray(physical).tobytes()
        ty = ir.ArrayType(ir.IntType(8), len(data))
        g = ir.GlobalVariable(self.ctx.module, ty, name=f"const.{len(self.ctx.globals)}.{inst.name}")
        g.global_constant = True
        g.linkage = "internal"
        g.align = 64
        g.initializer = ir.Constant(ty, bytearray(data))
        self.ctx.globals[id(inst)] = g
        return g

    def relinearize(self, index, out_shape: Shape, out_order, in_shape: Shape, in_order):
        """The in_shape index with the same linear position (dims taken in the given orders)."""
        b = self.b
        if list(out_shape.dims) == list(in_shape.dims) and out_order == in_order:
            return tuple(index)
        cut = index_digits.relinearize(b, self.digits, [index[d] for d in out_order],
                                       [out_shape.dims[d] for d in out_order], [in_shape.dims[d] for d in in_order])
        if cut is not None:
            result = [None] * in_shape.rank
            for d, v in zip(in_order, cut):
                result[d] = v
            return tuple(result)
        linear = row_major_offset(b, [index[d] for d in out_order], [out_shape.dims[d] for d in out_order])
        result = [const64(0)] * in_shape.rank
        for d in reversed(in_order):
            size = in_shape.dims[d]
            if size == 1:
                continue
            result[d] = b.urem(linear, const64(size))
            linear = b.udiv(linear, const64(size))
        return tuple(result)

    def guarded(self, condition, compute, otherwise, t: PrimitiveType):
        """compute() where condition holds, else `otherwise`, with real control flow."""
        ctx, b = self.ctx, self.b
        slot = ctx.alloca(compute_type(t), "guard")
        b.store(otherwise, slot)
        with ctx.if_then(condition, "guard"):
            b.store(compute(), slot)
        return b.load(slot)

    def start_indices(self, inst, first: int, operand_shape: Shape, sizes):
        """Clamped dynamic start indices (i64) read from scalar operands first.. ."""
        b = self.b
        starts = []
        for d in range(operand_shape.rank):
            op = inst.operands[first + d]
            v = scalar_ops.to_i64(b, self.value(op, ()), op.shape.element_type)
            starts.append(self.clamp_index(v, operand_shape.dims[d] - sizes[d]))
        return starts

    def clamp_index(self, v, hi: int):
        """v clamped into [0, hi]."""
        b = self.b
        hi = const64(hi)
        v = b.select(b.icmp_signed("<", v, const64(0)), const64(0), v)
        return b.select(b.icmp_signed(">", v, hi), hi, v)

    def window_source(self, inside, out, k, stride: int, dilation: int, padding_low: int, base_dilation: int,
                      size: int, out_size: int, window_size: int):
        """Where window position k of output position `out` reads an input dimension of `size`:
        (inside and-ed with whether it is a real input element, the clamped input index). When
        every window of the out_size outputs lies inside the input (no padding reached, no base
        dilation), inside is returned as it is: no test for LLVM to carry or remove."""
        b = self.b
        pos = add_i64(b, add_i64(b, mul_i64(b, out, stride), mul_i64(b, k, dilation)), const64(-padding_low))
        last = (out_size - 1) * stride + (window_size - 1) * dilation - padding_low
        if base_dilation == 1 and padding_low <= 0 and last < size:
            return inside, pos
        q = pos if base_dilation == 1 else b.sdiv(pos, const64(base_dilation))
        ok = b.and_(b.icmp_signed(">=", pos, const64(0)), b.icmp_signed("<", q, const64(size)))
        if base_dilation != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(pos, const64(base_dilation)), const64(0)))
        return _and(b, inside, ok), b.select(ok, q, const64(0))

    def convert_to(self, value, frm: PrimitiveType, to: PrimitiveType):
        if frm is to:
            return value
        return scalar_ops.convert(self.b, value, frm, to)

    def multiply_add(self, acc, x, y, t: PrimitiveType):
        b = self.b
        if t.is_complex:
            product = scalar_ops.emit(self.ctx, None, Op.MULTIPLY, t, [x, y])
            return scalar_ops.emit(self.ctx, None, Op.ADD, t, [acc, product])
        if t.is_pred:
            return b.or_(acc, b.and_(x, y))
        if t.is_float:
            flags = ["contract", "reassoc"] if self.ctx.reassociate else ["contract"]
            return b.fadd(acc, b.fmul(x, y, flags=flags), flags=flags)
        return b.add(acc, b.mul(x, y))


def dot_operand_indices(dd: DotDims, lhs_rank: int, rhs_rank: int, out_index, contracting=None):
    """The lhs and rhs indices read for output element `out_index` of a dot, with the
    contracting dimensions at `contracting` (left None when not given)."""
    lhs_free, rhs_free = dd.lhs_free(lhs_rank), dd.rhs_free(rhs_rank)
    nb = len(dd.lhs_batch)
    li, ri = [None] * lhs_rank, [None] * rhs_rank
    for k, (l, r) in enumerate(zip(dd.lhs_batch, dd.rhs_batch)):
        li[l] = ri[r] = out_index[k]
    for k, d in enumerate(lhs_free):
        li[d] = out_index[nb + k]
    for k, d in enumerate(rhs_free):
        ri[d] = out_index[nb + len(lhs_free) + k]
    if contracting is not None:
        for k, (l, r) in enumerate(zip(dd.lhs_contracting, dd.rhs_contracting)):
            li[l] = ri[r] = contracting[k]
    return li, ri


# --------------------------------------------------------------------------- leaves

def _and(b: ir.IRBuilder, x, y):
    """x and y, where x may be the constant true a window starts from."""
    return y if isinstance(x, ir.Constant) and x.constant == 1 else b.and_(x, y)


@ELEMENT_GENERATORS.register(Op.CONSTANT)
def constant(elem, inst, index):
    array = inst.attrs["literal"].array
    t = inst.shape.element_type
    if inst.shape.rank == 0:
        scalar = array.reshape(())
        if t.is_complex:
            return constant_of(t, complex(scalar))
        return constant_of(t, float(scalar) if t.is_float else scalar.item())
    return load_element(elem.b, elem.constant_global(inst), inst.shape, index)


@ELEMENT_GENERATORS.register(Op.IOTA)
def iota(elem, inst, index):
    b = elem.b
    position = index[inst.attrs["iota_dimension"]]
    t = inst.shape.element_type
    ty = compute_type(t)
    if t.is_float:
        return round_to(b, b.sitofp(position, ty), t)
    if t.is_complex:  # (position, 0)
        part = ty.elements[0]
        return scalar_ops.make_complex(b, ty, b.sitofp(position, part), ir.Constant(part, 0.0))
    if t.is_pred:
        return b.icmp_signed("!=", position, const64(0))
    if t.is_complex:
        part = real_type_of(t)
        return scalar_ops.make_complex(b, ty, b.sitofp(position, compute_type(part)),
                                       ir.Constant(compute_type(part), 0.0))
    return b.trunc(position, ty) if ty.width < 64 else position


# --------------------------------------------------------------------------- elementwise

@ELEMENT_GENERATORS.register(scalar_ops.OPS)
def elementwise(elem, inst, index):
    """The ops scalar_ops.py emits from their operands' values at the same index."""
    args = [elem.value(o, index) for o in inst.operands]
    return scalar_ops.emit(elem.ctx, inst, inst.opcode, inst.operands[0].shape.element_type, args)


@ELEMENT_GENERATORS.register(Op.COMPARE)
def compare(elem, inst, index):
    x, y = (elem.value(o, index) for o in inst.operands)
    t = inst.operands[0].shape.element_type
    return scalar_ops.compare(elem.b, x, y, t, inst.attrs["direction"], inst.attrs.get("type"))


@ELEMENT_GENERATORS.register(Op.SELECT)
def select(elem, inst, index):
    p, on_true, on_false = inst.operands
    pred = elem.value(p, index if p.shape.rank else ())
    return elem.b.select(pred, elem.value(on_true, index), elem.value(on_false, index))


@ELEMENT_GENERATORS.register(Op.CLAMP)
def clamp(elem, inst, index):
    lo, x, hi = inst.operands
    t = x.shape.element_type
    lo_v = elem.value(lo, index if lo.shape.rank else ())
    hi_v = elem.value(hi, index if hi.shape.rank else ())
    v = scalar_ops.max_min(elem.b, Op.MAXIMUM, lo_v, elem.value(x, index), t)
    return scalar_ops.max_min(elem.b, Op.MINIMUM, v, hi_v, t)


@ELEMENT_GENERATORS.register(Op.CONVERT)
def convert(elem, inst, index):
    src = inst.operands[0]
    return scalar_ops.convert(elem.b, elem.value(src, index), src.shape.element_type, inst.shape.element_type)


@ELEMENT_GENERATORS.register(Op.BITCAST_CONVERT)
def bitcast_convert(elem, inst, index):
    src = inst.operands[0]
    frm, to = src.shape.element_type, inst.shape.element_type
    b = elem.b
    if frm.bits < to.bits:  # the operand's extra minor dimension holds the pieces, low first
        wide = ir.IntType(to.bits)
        bits = ir.Constant(wide, 0)
        for k in range(to.bits // frm.bits):
            piece = scalar_ops.to_bits(b, elem.value(src, tuple(index) + (const64(k),)), frm)
            bits = b.or_(bits, b.shl(b.zext(piece, wide), ir.Constant(wide, k * frm.bits)))
        return scalar_ops.from_bits(b, bits, to)
    if frm.bits > to.bits:  # the result's extra minor dimension selects the piece
        wide = ir.IntType(frm.bits)
        whole = scalar_ops.to_bits(b, elem.value(src, tuple(index[:-1])), frm)
        shift = b.mul(b.trunc(index[-1], wide) if frm.bits < 64 else index[-1], ir.Constant(wide, to.bits))
        piece = b.trunc(b.lshr(whole, shift), ir.IntType(to.bits))
        return scalar_ops.from_bits(b, piece, to)
    stored = scalar_ops.to_bits(b, elem.value(src, index), frm)
    return scalar_ops.from_bits(b, stored, to)


@ELEMENT_GENERATORS.register(Op.COMPLEX)
def complex_(elem, inst, index):
    re, im = (elem.value(o, index) for o in inst.operands)
    return scalar_ops.make_complex(elem.b, compute_type(inst.shape.element_type), re, im)


@ELEMENT_GENERATORS.register(Op.REAL)
def real(elem, inst, index):
    v = elem.value(inst.operands[0], index)
    return elem.b.extract_value(v, 0) if inst.operands[0].shape.element_type.is_complex else v


@ELEMENT_GENERATORS.register(Op.IMAG)
def imag(elem, inst, index):
    src = inst.operands[0]
    v = elem.value(src, index)
    if src.shape.element_type.is_complex:
        return elem.b.extract_value(v, 1)
    return ir.Constant(v.type, 0.0)


@ELEMENT_GENERATORS.register(Op.COPY)
def copy(elem, inst, index):
    return elem.value(inst.operands[0], index)


@ELEMENT_GENERATORS.register(Op.MAP)
def map_(elem, inst, index):
    args = [elem.value(o, index) for o in inst.operands]
    return elem.call_scalar(inst.attrs["to_apply"], args)[0]


# --------------------------------------------------------------------------- data movement as index arithmetic

@ELEMENT_GENERATORS.register(Op.BROADCAST)
def broadcast(elem, inst, index):
    dims = inst.attrs.get("dimensions", ())
    return elem.value(inst.operands[0], tuple(index[d] for d in dims))


@ELEMENT_GENERATORS.register(Op.TRANSPOSE)
def transpose(elem, inst, index):
    perm = inst.attrs["dimensions"]
    src = [None] * len(perm)
    for i, p in enumerate(perm):
        src[p] = index[i]
    return elem.value(inst.operands[0], tuple(src))


@ELEMENT_GENERATORS.register(Op.RESHAPE)
def reshape(elem, inst, index):
    src = inst.operands[0]
    return elem.value(src, elem.relinearize(index, inst.shape, list(range(inst.shape.rank)),
                                            src.shape, list(range(src.shape.rank))))


@ELEMENT_GENERATORS.register(Op.BITCAST)
def bitcast(elem, inst, index):
    src = inst.operands[0]
    frm, to = src.shape.element_type, inst.shape.element_type
    if frm.bits != to.bits:
        raise error(f"the cpu backend does not support bitcast between {frm.name} and {to.name}", inst.loc)
    value = elem.value(src, elem.relinearize(index, inst.shape, major_to_minor(inst.shape),
                                             src.shape, major_to_minor(src.shape)))
    if frm is to:
        return value
    return scalar_ops.from_bits(elem.b, scalar_ops.to_bits(elem.b, value, frm), to)


@ELEMENT_GENERATORS.register(Op.SLICE)
def slice_(elem, inst, index):
    b = elem.b
    src = []
    for i, (start, _limit, stride) in zip(index, inst.attrs["slice"]):
        v = i if stride == 1 else b.mul(i, const64(stride))
        src.append(v if start == 0 else b.add(v, const64(start)))
    return elem.value(inst.operands[0], tuple(src))


@ELEMENT_GENERATORS.register(Op.REVERSE)
def reverse(elem, inst, index):
    dims = set(inst.attrs["dimensions"])
    src = tuple(elem.b.sub(const64(inst.shape.dims[d] - 1), i) if d in dims else i
                for d, i in enumerate(index))
    return elem.value(inst.operands[0], src)


@ELEMENT_GENERATORS.register(Op.PAD)
def pad(elem, inst, index):
    b = elem.b
    operand, padding_value = inst.operands
    inside = ir.Constant(I1, 1)
    src = []
    for d, (i, (lo, _hi, interior)) in enumerate(zip(index, inst.attrs["padding"])):
        t = b.sub(i, const64(lo))
        step = interior + 1
        q = t if step == 1 else b.sdiv(t, const64(step))
        ok = b.and_(b.icmp_signed(">=", t, const64(0)), b.icmp_signed("<", q, const64(operand.shape.dims[d])))
        if step != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(t, const64(step)), const64(0)))
        inside = b.and_(inside, ok)
        src.append(b.select(ok, q, const64(0)))
    padding = elem.value(padding_value, ())
    return elem.guarded(inside, lambda: elem.value(operand, tuple(src)), padding, inst.shape.element_type)


@ELEMENT_GENERATORS.register(Op.CONCATENATE)
def concatenate(elem, inst, index):
    b, ctx = elem.b, elem.ctx
    dim = inst.attrs["dimensions"][0]
    slot = ctx.alloca(compute_type(inst.shape.element_type), "concat")
    done = ctx.function.append_basic_block("concat.done")
    offset = 0
    for operand in inst.operands:
        size = operand.shape.dims[dim]
        here = ctx.function.append_basic_block("concat.part")
        nxt = ctx.function.append_basic_block("concat.next")
        b.cbranch(b.icmp_signed("<", index[dim], const64(offset + size)), here, nxt)
        b.position_at_end(here)
        with ctx.scope():
            src = list(index)
            src[dim] = b.sub(index[dim], const64(offset))
            b.store(elem.value(operand, tuple(src)), slot)
        b.branch(done)
        b.position_at_end(nxt)
        offset += size
    b.branch(done)
    b.position_at_end(done)
    return b.load(slot)


# --------------------------------------------------------------------------- indexing

@ELEMENT_GENERATORS.register(Op.DYNAMIC_SLICE)
def dynamic_slice(elem, inst, index):
    operand = inst.operands[0]
    starts = elem.start_indices(inst, 1, operand.shape, inst.shape.dims)
    return elem.value(operand, tuple(elem.b.add(s, i) for s, i in zip(starts, index)))


@ELEMENT_GENERATORS.register(Op.DYNAMIC_UPDATE_SLICE)
def dynamic_update_slice(elem, inst, index):
    b = elem.b
    operand, update = inst.operands[:2]
    starts = elem.start_indices(inst, 2, operand.shape, update.shape.dims)
    inside = ir.Constant(I1, 1)
    src = []
    for d, (i, s) in enumerate(zip(index, starts)):
        rel = b.sub(i, s)
        ok = b.and_(b.icmp_signed(">=", rel, const64(0)), b.icmp_signed("<", rel, const64(update.shape.dims[d])))
        inside = b.and_(inside, ok)
        src.append(b.select(ok, rel, const64(0)))
    t = inst.shape.element_type
    return elem.guarded(inside, lambda: elem.value(update, tuple(src)), elem.value(operand, index), t)


@ELEMENT_GENERATORS.register(Op.GATHER)
def gather(elem, inst, index):
    b = elem.b
    operand, indices = inst.operands
    g = GatherDims.of(inst)
    sizes = inst.attrs["slice_sizes"]
    out_rank = inst.shape.rank
    batch_dims = [d for d in range(out_rank) if d not in g.offset_dims]
    # The start-index vector of this output element's batch position.
    batch_index = [index[d] for d in batch_dims]
    ind_rank = indices.shape.rank
    index_vector_dim = g.index_vector_dim
    ind_idx = list(batch_index)
    if index_vector_dim < ind_rank:
        ind_idx.insert(index_vector_dim, None)
    starts = [const64(0)] * operand.shape.rank
    for k, od in enumerate(g.start_index_map):
        position = [const64(k) if v is None else v for v in ind_idx]
        v = scalar_ops.to_i64(b, elem.value(indices, tuple(position)), indices.shape.element_type)
        starts[od] = elem.clamp_index(v, operand.shape.dims[od] - sizes[od])
    # Batching dims of the operand take the matching index batch position.
    batch_positions = [d for d in range(ind_rank) if d != index_vector_dim]
    for od, idim in zip(g.operand_batching_dims, g.start_indices_batching_dims):
        starts[od] = batch_index[batch_positions.index(idim)]
    window_dims = [d for d in range(operand.shape.rank)
                   if d not in g.collapsed_slice_dims and d not in g.operand_batching_dims]
    src = list(starts)
    for od, out_d in zip(window_dims, g.offset_dims):
        src[od] = b.add(starts[od], index[out_d])
    return elem.value(operand, tuple(src))


# --------------------------------------------------------------------------- reductions (inner loops at the point of use)

@ELEMENT_GENERATORS.register(Op.REDUCE, all_results=True)
def reduce(elem, inst, index):
    """A reduce's value at an output index (of a variadic reduce: the list of all its results)."""
    ctx, b = elem.ctx, elem.b
    n = len(inst.operands) // 2
    inputs, inits = inst.operands[:n], inst.operands[n:]
    reduced = sorted(inst.attrs["dimensions"])
    in_shape = inputs[0].shape
    kept = [d for d in range(in_shape.rank) if d not in reduced]
    types = [i.shape.element_type for i in inputs]
    slots = [ctx.alloca(compute_type(t), "acc") for t in types]
    for slot, init in zip(slots, inits):
        b.store(elem.value(init, ()), slot)
    order = [d for d in major_to_minor(in_shape) if d in reduced]
    with ctx.loop_nest([in_shape.dims[d] for d in reduced], [reduced.index(d) for d in order]) as inner:
        src = [None] * in_shape.rank
        for d, v in zip(kept, index):
            src[d] = v
        for d, v in zip(reduced, inner):
            src[d] = v
        current = [b.load(s) for s in slots]
        new = [elem.value(x, tuple(src)) for x in inputs]
        ctx.reassociate += 1
        try:
            combined = elem.call_scalar(inst.attrs["to_apply"], current + new)
        finally:
            ctx.reassociate -= 1
        for slot, v in zip(slots, combined):
            b.store(v, slot)
    results = [b.load(s) for s in slots]
    return results if inst.shape.is_tuple else results[0]


@ELEMENT_GENERATORS.register(Op.REDUCE_WINDOW, all_results=True)
def reduce_window(elem, inst, index):
    ctx, b = elem.ctx, elem.b
    n = len(inst.operands) // 2
    operands, inits = inst.operands[:n], inst.operands[n:]
    shape = operands[0].shape
    window = inst.attrs["window"]
    out_dims = (inst.shape.tuple_shapes[0] if inst.shape.is_tuple else inst.shape).dims
    slots = [ctx.alloca(compute_type(o.shape.element_type), "acc") for o in operands]
    for slot, init in zip(slots, inits):
        b.store(elem.value(init, ()), slot)
    # A window along the contiguous dimension keeps its loops: unrolled, they left the output loop
    # innermost, which LLVM then vectorised with gathers (a row sum as tree-reduction-rewriter writes
    # it ran at half the speed). Windows across it (pooling) unroll: the output loop reads in order.
    along_minor = shape.rank > 0 and window.dims[shape.minor_to_major()[0]].size > 1
    rolled = (lambda: index_digits.no_unroll(ctx.module)) if along_minor else None
    with ctx.loop_nest([wd.size for wd in window.dims], loop_id=rolled) as w:
        inside = ir.Constant(I1, 1)
        src = []
        for d, (o, k, wd) in enumerate(zip(index, w, window.dims)):
            inside, position = elem.window_source(inside, o, k, wd.stride, wd.window_dilation, wd.padding_low,
                                                  wd.base_dilation, shape.dims[d], out_dims[d], wd.size)
            src.append(position)
        with ctx.if_then(inside, "window"):
            current = [b.load(slot) for slot in slots]
            values = [elem.value(o, tuple(src)) for o in operands]
            ctx.reassociate += 1   # as reduce's: the window's sum may be kept in several (vector) partial sums
            try:
                combined = elem.call_scalar(inst.attrs["to_apply"], current + values)
            finally:
                ctx.reassociate -= 1
            for slot, v in zip(slots, combined):
                b.store(v, slot)
    results = [b.load(slot) for slot in slots]
    return results if inst.shape.is_tuple else results[0]


@ELEMENT_GENERATORS.register(Op.GET_TUPLE_ELEMENT)
def get_tuple_element(elem, inst, index):
    """A leaf of a multi-result op computed element by element (variadic reduce)."""
    source = inst.operands[0]
    if not ELEMENT_GENERATORS.details(source.opcode).get("all_results") or elem.buffer_of(source) is not None:
        raise error(f"the cpu backend cannot compute get-tuple-element of '{source.opcode}' "
                    f"element by element", inst.loc)
    return elem.value(source, index)[inst.attrs["index"]]


# --------------------------------------------------------------------------- contractions (inner loops at the point of use)

@ELEMENT_GENERATORS.register(Op.DOT)
def dot(elem, inst, index):
    ctx, b = elem.ctx, elem.b
    lhs, rhs = inst.operands
    dd = DotDims.of(inst)
    t = inst.shape.element_type
    slot = ctx.alloca(compute_type(t), "acc")
    b.store(constant_of(t, 0), slot)
    sizes = [lhs.shape.dims[d] for d in dd.lhs_contracting]
    with ctx.loop_nest(sizes) as c:
        li, ri = dot_operand_indices(dd, lhs.shape.rank, rhs.shape.rank, index, c)
        x = elem.convert_to(elem.value(lhs, tuple(li)), lhs.shape.element_type, t)
        y = elem.convert_to(elem.value(rhs, tuple(ri)), rhs.shape.element_type, t)
        ctx.reassociate += 1
        b.store(elem.multiply_add(b.load(slot), x, y, t), slot)
        ctx.reassociate -= 1
    return round_to(b, b.load(slot), t)


@ELEMENT_GENERATORS.register(Op.CONVOLUTION)
def convolution(elem, inst, index):
    ctx, b = elem.ctx, elem.b
    lhs, rhs = inst.operands
    cd = inst.attrs["dim_labels"]
    if not isinstance(cd, ConvDims):
        cd = ConvDims.parse(str(cd))
    window = inst.attrs.get("window")
    groups = inst.attrs.get("feature_group_count", 1) or 1
    if (inst.attrs.get("batch_group_count", 1) or 1) != 1:
        raise error("the cpu backend does not support convolution with batch_group_count > 1", inst.loc)
    t = inst.shape.element_type
    n_sp = cd.num_spatial
    wdims = window.dims if window is not None else ()
    in_features = lhs.shape.dims[cd.input_feature] // groups
    out_features = rhs.shape.dims[cd.kernel_output_feature]
    per_group_out = out_features // groups
    out_f = index[cd.output_feature]
    group = b.sdiv(out_f, const64(per_group_out)) if groups > 1 else None
    slot = ctx.alloca(compute_type(t), "acc")
    b.store(constant_of(t, 0), slot)
    with ExitStack() as nest:
        taps = [nest.enter_context(_window_taps(elem, wdims[k] if k < len(wdims) else None,
                                                index[cd.output_spatial[k]], rhs.shape.dims[cd.kernel_spatial[k]],
                                                lhs.shape.dims[cd.input_spatial[k]],
                                                inst.shape.dims[cd.output_spatial[k]], f"k{k}"))
                for k in range(n_sp)]
        feature = nest.enter_context(ctx.loop(in_features, name="feature"))
        li, ri = [None] * lhs.shape.rank, [None] * rhs.shape.rank
        li[cd.input_batch] = index[cd.output_batch]
        li[cd.input_feature] = feature if group is None else b.add(b.mul(group, const64(in_features)), feature)
        ri[cd.kernel_input_feature] = feature
        ri[cd.kernel_output_feature] = out_f
        inside = ir.Constant(I1, 1)
        for k, (kpos, tap_test) in enumerate(taps):
            ri[cd.kernel_spatial[k]] = kpos
            inside, li[cd.input_spatial[k]] = tap_test(inside)
        x = elem.convert_to(elem.value(lhs, tuple(li)), lhs.shape.element_type, t)
        if not (isinstance(inside, ir.Constant) and inside.constant == 1):
            x = b.select(inside, x, constant_of(t, 0))
        y = elem.convert_to(elem.value(rhs, tuple(ri)), rhs.shape.element_type, t)
        b.store(elem.multiply_add(b.load(slot), x, y, t), slot)
    return round_to(b, b.load(slot), t)


def steps_over_holes(wd) -> bool:
    """Whether a convolution's window dimension loops over the input elements it covers rather
    than over its taps (base dilation without window dilation): a loop with bounds known at run
    time, kept rolled, so O3's unrolling gains nothing on it (driver.kernel_opt_level)."""
    return wd is not None and wd.base_dilation > 1 and wd.window_dilation == 1


@contextmanager
def _window_taps(elem, wd, out, ksize: int, in_size: int, out_size: int, name: str):
    """The loop over one spatial dimension's window taps for output position `out`: yields (the
    kernel index, tap_test), where tap_test(inside) gives (inside and-ed with whether the tap reads
    a real input element, the input index). With base dilation (a transposed convolution) the
    loop runs over the input elements the window covers instead, the kernel index following
    from each: the holes between them cost neither tests nor iterations (nor LLVM the unrolled
    copies of dead taps), and no index is divided."""
    ctx, b = elem.ctx, elem.b
    stride, pad_lo = (wd.stride, wd.padding_low) if wd else (1, 0)
    wdil, bdil = (wd.window_dilation, wd.base_dilation) if wd else (1, 1)
    reversed_ = bool(wd and wd.window_reversal)
    if steps_over_holes(wd):
        base = add_i64(b, mul_i64(b, out, stride), const64(-pad_lo))     # tap 0's position, dilated input
        first, end = _covered_elements(b, base, bdil, ksize, in_size, pad_lo)
        with ctx.loop(end, name=name, start=first, loop_id=index_digits.no_unroll(ctx.module)) as q:
            k = b.sub(b.mul(q, const64(bdil)), base)
            kernel_index = b.sub(const64(ksize - 1), k) if reversed_ else k
            yield kernel_index, (lambda inside: (inside, q))
        return
    with ctx.loop(ksize, name=name) as k:
        kernel_index = b.sub(const64(ksize - 1), k) if reversed_ else k
        yield kernel_index, (lambda inside: elem.window_source(inside, out, k, stride, wdil, pad_lo, bdil,
                                                               in_size, out_size, ksize))


def _covered_elements(b: ir.IRBuilder, base, bdil: int, ksize: int, in_size: int, pad_lo: int):
    """The input elements q a window of ksize taps from dilated position base covers (q * bdil in
    [base, base + ksize)), clipped to the input: [first, end), empty when first >= end. base is
    at least -pad_lo, so adding `lift` multiples of bdil makes the floor divisions unsigned ones
    by a constant."""
    lift = max(0, -(-pad_lo // bdil)) + 1

    def floor_div(x):
        return b.sub(b.udiv(b.add(x, const64(lift * bdil)), const64(bdil)), const64(lift))
    first = floor_div(b.add(base, const64(bdil - 1)))
    first = b.select(b.icmp_signed("<", first, const64(0)), const64(0), first)
    end = b.add(floor_div(b.add(base, const64(ksize - 1))), const64(1))
    end = b.select(b.icmp_signed(">", end, const64(in_size)), const64(in_size), end)
    return first, end
