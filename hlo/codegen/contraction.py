"""dot and convolution through the blocked matrix multiply of gemm.py.

A floating-point dot or convolution large enough to pay for packing becomes

    C[b][m, n] = sum_k A[b](m, k) * B[b][k, n]

dot:          m = the lhs free dims, n = the rhs free dims, k = the contracting dims;
convolution:  m = (batch, output spatial dims), n = output features,
              k = (kernel window position = "tap", input feature).

Integer contractions of 8-bit operands (quantised models: s8 x s8 -> s32) run in f32 when
every partial sum is an integer below 2^24 in magnitude, which f32 represents exactly, so the
result is the exact integer sum (deeper ones keep the integer loops; never Winograd).

Each operand is read where it lies when its layout already has the needed order (A:
the k elements of a row contiguous; B: row-major [k, n], or [n, k] (x @ W^T, read column by
column when packing); C: row-major [m, n]);
otherwise it is first copied into that order in scratch memory, computed element by
element (so fused producers, transposes and conversions of bf16/f16 to f32 all work).
A convolution's rows come from an indirection table of input pixels: no im2col copy;
3x3 stride-1 convolutions with enough channels use Winograd's F(2x2, 3x3) instead
(winograd.py: 2.25x fewer multiplies, as 16 multiplies of transformed tiles).

Inside a fusion (dot or convolution plus an elementwise epilogue such as bias and
relu), the contraction is computed first into scratch memory (or straight into the
fusion's output when it is the root) and the rest of the fusion reads it from there.

`plan(inst, sources)` decides all this from the instruction alone, so buffer
assignment (scratch_bytes) and emission (ContractionEmitter) agree on the layout of the
scratch memory.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

from llvmlite import ir

from ..attributes import ConvDims, DotDims
from ..ir import Instruction
from ..opcodes import Op
from ..shapes import Shape, primitive_type
from . import conv_table, scalar_ops
from .buffers import Buffer
from .function_context import const64, major_to_minor, new_loop_id, row_major_offset
from .gemm import MAX_THREADS, PARALLEL_FLOPS, pack_bound
from .types import F32, F64, PTR, linear_offset, load_element, store_element, strides
from .winograd import WinogradEmitter, WinogradShape, winograd_shape

MIN_FLOPS = 1 << 16    # smaller products keep the simple per-element loops
MIN_ROWS = 4           # matrix-vector products too
DOT_PRODUCT_ROWS = 8   # x @ W^T with at most this many rows: the elemental dot products (k contiguous in both)
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
EXACT_F32_INTEGERS = 1 << 24   # every integer of smaller magnitude is a float32


@dataclass
class Plan:
    """How one contraction runs as batch x (m x n x k) multiplies, and its scratch layout."""
    inst: Instruction
    scalar: str                      # 'f32' or 'f64': the type the multiply runs in
    batch: int
    m: int
    n: int
    taps: int                        # k = taps * run
    run: int
    lhs: Optional[Instruction]       # the instruction whose buffer is read in place (None: copied)
    rhs: Optional[Instruction]
    out_direct: bool                 # C is the destination buffer itself
    winograd: Optional[WinogradShape] = None   # a 3x3 convolution computed with F(2x2, 3x3)
    rhs_transposed: bool = False     # B read in place with k minor ([n, k] per batch), packed from there
    offsets: dict = field(default_factory=dict)
    size: int = 0

    @property
    def k(self) -> int:
        return self.taps * self.run

    @property
    def elem_bytes(self) -> int:
        return 4 if self.scalar == "f32" else 8

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    def canonical_output(self) -> Shape:
        """C's shape: the output's dims in C's row order (batch, m..., n...) as a row-major array."""
        return Shape.array(self.scalar, [self.inst.shape.dims[d] for d in output_order(self.inst)])

    def layout_scratch(self) -> None:
        eb = self.elem_bytes
        if self.winograd is not None:
            w = self.winograd
            parts = w.parts(eb)
            flops = 2.0 * w.tiles * w.channels * w.features   # one of its 16 multiplies
            parts.append(("pack", pack_bound(eb, self.n, self.run, MAX_THREADS if flops >= PARALLEL_FLOPS else 1)))
        else:
            parts = [("table", self.batch * self.m * self.taps * 8), ("zeros", self.run * eb)]
            if self.inst.opcode == Op.CONVOLUTION:
                parts.append(("offsets", tap_offsets_bytes(self.inst)))
            if self.lhs is None:
                parts.append(("a", self.batch * self.m * self.k * eb))
            if self.rhs is None:
                parts.append(("b", self.batch * self.k * self.n * eb))
            parts.append(("pack", pack_bound(eb, self.n, self.k, MAX_THREADS if self.flops >= PARALLEL_FLOPS else 1)))
        if not self.out_direct:
            parts.append(("c", self.batch * self.m * self.n * eb))
        offset = 0
        for name, size in parts:
            self.offsets[name] = offset
            offset += (size + 63) // 64 * 64
        self.size = offset


def tap_offsets_bytes(inst: Instruction) -> int:
    """The scratch conv_table.py's runtime function needs for a convolution's per-dimension tap
    offsets (none when its table is built inline)."""
    cd = conv_dims(inst)
    if len(cd.output_spatial) > conv_table.MAX_SPATIAL:
        return 0
    rhs = inst.operands[1]
    dims = [dict(outputs=inst.shape.dims[o], taps=rhs.shape.dims[k]) for o, k in zip(cd.output_spatial, cd.kernel_spatial)]
    return conv_table.offsets_bytes(dims)


def output_order(inst: Instruction) -> list[int]:
    """The output dims in C's row-major order."""
    if inst.opcode == Op.DOT:
        return list(range(inst.shape.rank))
    cd = conv_dims(inst)
    return [cd.output_batch, *cd.output_spatial, cd.output_feature]


def conv_dims(inst: Instruction) -> ConvDims:
    return inst.attrs["dim_labels"]   # the parser has made it a ConvDims


def kernel_order(cd: ConvDims) -> list[int]:
    """The kernel's dims as B's rows and columns: window positions, input feature, output feature."""
    return [*cd.kernel_spatial, cd.kernel_input_feature, cd.kernel_output_feature]


def _scalar_of(inst: Instruction) -> Optional[str]:
    """The type the multiply runs in: f32 or f64 for float contractions; f32 for 8-bit integer
    ones whose every partial sum is an integer below 2^24 (so f32 holds it exactly)."""
    out = inst.shape.element_type
    if out is None:
        return None
    if out.name in FLOAT_TYPES:
        if any(o.shape.element_type.name not in FLOAT_TYPES for o in inst.operands):
            return None
        return "f64" if out.name == "f64" else "f32"
    return "f32" if _exact_in_f32(inst) else None


def _exact_in_f32(inst: Instruction) -> bool:
    """An integer dot/convolution of narrow operands (quantised int8 models) whose sums of
    products stay below 2^24 in magnitude, into a 32- or 64-bit result of the right sign."""
    out = inst.shape.element_type
    types = [o.shape.element_type for o in inst.operands]
    if not (out.is_signed_int or out.is_unsigned_int) or out.bits < 32:
        return False
    if not all((t.is_signed_int or t.is_unsigned_int) and t.bits <= 8 for t in types):
        return False
    if out.is_unsigned_int and any(t.is_signed_int for t in types):
        return False
    largest = math.prod((1 << (t.bits - 1)) if t.is_signed_int else (1 << t.bits) - 1 for t in types)
    return largest * _depth(inst) < EXACT_F32_INTEGERS


def _depth(inst: Instruction) -> int:
    """How many products each output element sums."""
    lhs, rhs = inst.operands
    if inst.opcode == Op.DOT:
        return math.prod(lhs.shape.dims[d] for d in DotDims.of(inst).lhs_contracting)
    cd = conv_dims(inst)
    return math.prod(rhs.shape.dims[d] for d in cd.kernel_spatial) * rhs.shape.dims[cd.kernel_input_feature]


def plan(inst: Instruction, sources: list, dest: Optional[Shape]) -> Optional[Plan]:
    """The plan for a dot/convolution, or None when it keeps the per-element loops.

    sources[i]: the top-level instruction whose buffer holds operand i (None: not
    materialised, e.g. computed inside a fusion); dest: the shape of the buffer the
    result may be written to directly (None: scratch)."""
    scalar = _scalar_of(inst) if inst.shape.is_array else None
    if scalar is None:
        return None
    shaped = _PLANNERS[inst.opcode](inst, scalar, sources)
    if shaped is None or shaped.m < MIN_ROWS or shaped.n < MIN_ROWS or shaped.k == 0 \
            or shaped.batch * shaped.flops < MIN_FLOPS:
        return None
    if shaped.rhs_transposed and shaped.m <= DOT_PRODUCT_ROWS:
        return None   # a few rows against W^T: per-element dot products along contiguous k beat packing W
    shaped.out_direct = dest is not None and dest.element_type.name == scalar \
        and major_to_minor(dest) == output_order(inst) and dest.dims == inst.shape.dims
    shaped.layout_scratch()
    return shaped


def _in_place(source: Optional[Instruction], scalar: str, minor_first: list[int]) -> Optional[Instruction]:
    """source when its buffer has the scalar type and the given dims minor-most, in that order."""
    if source is None or not source.shape.is_array or source.shape.element_type.name != scalar:
        return None
    if list(source.shape.minor_to_major()[:len(minor_first)]) != minor_first:
        return None
    return source


def _dot_plan(inst, scalar, sources) -> Optional[Plan]:
    lhs, rhs = inst.operands
    dd = DotDims.of(inst)
    lfree = dd.lhs_free(lhs.shape.rank)
    rfree = dd.rhs_free(rhs.shape.rank)
    batch = math.prod(lhs.shape.dims[d] for d in dd.lhs_batch)
    m = math.prod(lhs.shape.dims[d] for d in lfree)
    n = math.prod(rhs.shape.dims[d] for d in rfree)
    k = math.prod(lhs.shape.dims[d] for d in dd.lhs_contracting)
    a = _in_place(sources[0], scalar, list(reversed(dd.lhs_contracting)))
    b = _in_place(sources[1], scalar, list(reversed(list(dd.rhs_batch) + list(dd.rhs_contracting) + rfree)))
    transposed = None if b is not None else \
        _in_place(sources[1], scalar, list(reversed(list(dd.rhs_batch) + rfree + list(dd.rhs_contracting))))
    return Plan(inst, scalar, batch, m, n, 1, k, a, b or transposed, False, rhs_transposed=transposed is not None)


def conv_supported(inst: Instruction) -> bool:
    """Base dilation (transposed convolutions) and window reversal are in the indirection table."""
    return (inst.attrs.get("feature_group_count", 1) or 1) == 1 and (inst.attrs.get("batch_group_count", 1) or 1) == 1


def _conv_plan(inst, scalar, sources) -> Optional[Plan]:
    if not conv_supported(inst):
        return None
    lhs, rhs = inst.operands
    cd = conv_dims(inst)
    batch_rows = inst.shape.dims[cd.output_batch] * math.prod(inst.shape.dims[d] for d in cd.output_spatial)
    taps = math.prod(rhs.shape.dims[d] for d in cd.kernel_spatial)
    features, channels = inst.shape.dims[cd.output_feature], lhs.shape.dims[cd.input_feature]
    fast = winograd_shape(inst, cd) if inst.shape.element_type.is_float else None   # integers: exact sums
    if fast is not None:   # the transforms read the operands element by element
        return Plan(inst, scalar, 1, batch_rows, features, taps, channels, None, None, False, winograd=fast)
    a = _in_place(sources[0], scalar, [cd.input_feature])
    b = _in_place(sources[1], scalar, list(reversed(kernel_order(cd))))
    order = kernel_order(cd)
    transposed = None if b is not None else _in_place(sources[1], scalar, list(reversed([order[-1], *order[:-1]])))
    return Plan(inst, scalar, 1, batch_rows, features, taps, channels, a, b or transposed, False,
                rhs_transposed=transposed is not None)


# The contractions planned onto gemm.py, and how.
_PLANNERS = {Op.DOT: _dot_plan, Op.CONVOLUTION: _conv_plan}


# --------------------------------------------------------------------------- planning from the IR


def top_level_plan(inst: Instruction, dest: Optional[Shape]) -> Optional[Plan]:
    """An unfused dot/convolution: its operands are materialised instructions."""
    if inst.opcode not in _PLANNERS:
        return None
    return plan(inst, [o if o.shape.rank else None for o in inst.operands], dest)


def fused_plans(fusion: Instruction) -> list[Plan]:
    """The contractions inside a fusion that run as multiplies (root first written to the
    fusion's output when its layout allows)."""
    body = fusion.attrs["calls"]
    out = []
    for inst in body.instructions:
        if inst.opcode not in _PLANNERS:
            continue
        sources = [_fusion_source(fusion, o) for o in inst.operands]
        dest = fusion.shape if inst is body.root and fusion.shape.is_array else None
        p = plan(inst, sources, dest)
        if p is not None:
            out.append(p)
    return out


def _fusion_source(fusion: Instruction, operand: Instruction) -> Optional[Instruction]:
    if operand.opcode != Op.PARAMETER:
        return None
    source = fusion.operands[operand.attrs["parameter_number"]]
    return source if source.shape.is_array and source.shape.rank else None


def scratch_bytes(inst: Instruction) -> int:
    if inst.opcode == Op.FUSION:
        return sum(p.size for p in fused_plans(inst))
    p = top_level_plan(inst, inst.shape if inst.shape.is_array else None)
    return p.size if p is not None else 0


# --------------------------------------------------------------------------- emission


class ContractionEmitter:
    """Emits planned contractions for kernels.Lowering."""

    def __init__(self, lowering, gemm):
        self.low = lowering
        self.gemm = gemm

    @property
    def b(self) -> ir.IRBuilder:
        return self.low.b

    def emit_top_level(self, inst: Instruction, value) -> bool:
        if not isinstance(value, Buffer):
            return False
        p = top_level_plan(inst, value.shape)
        if p is None:
            return False
        scratch = self.low.pointer(self.low.a.scratch[id(inst)])
        out = self.low.pointer(value)
        self.emit(p, scratch, out)
        if not p.out_direct:
            self.low.store_loop(inst.shape, out, self.reader(p, self.c_pointer(p, scratch, out)))
        return True

    def emit_fused(self, fusion: Instruction, value) -> bool:
        """Compute the fusion's contractions; True when that was all the fusion computes."""
        plans = fused_plans(fusion)
        if not plans:
            return False
        scratch = self.low.pointer(self.low.a.scratch[id(fusion)])
        root = fusion.attrs["calls"].root
        offset = 0
        for p in plans:
            region = self.b.gep(scratch, [const64(offset)], source_etype=ir.IntType(8))
            offset += p.size
            out = self.low.pointer(value) if p.out_direct else None
            self.emit(p, region, out)
            if p.out_direct and p.inst is root:
                continue
            self.low.elem.bindings[id(p.inst)] = self.reader(p, self.c_pointer(p, region, out))
        return any(p.out_direct and p.inst is root for p in plans)

    # ---- pieces
    def c_pointer(self, p: Plan, scratch, out):
        return out if p.out_direct else self._at(scratch, p.offsets["c"])

    def reader(self, p: Plan, c):
        """index -> the contraction's element at a logical output index, read from C."""
        shape, order = p.canonical_output(), output_order(p.inst)

        def read(index):
            value = load_element(self.b, c, shape, tuple(index[d] for d in order))
            return scalar_ops.convert(self.b, value, primitive_type(p.scalar), p.inst.shape.element_type)
        return read

    def _at(self, base, offset: int):
        return self.b.gep(base, [const64(offset)], source_etype=ir.IntType(8))

    def emit(self, p: Plan, scratch, out) -> None:
        b = self.b
        scalar = F32 if p.scalar == "f32" else F64
        if p.winograd is not None:
            WinogradEmitter(self.low, self.gemm, scalar, p.scalar, conv_dims(p.inst)).emit(
                p, lambda name: self._at(scratch, p.offsets[name]), self.c_pointer(p, scratch, out))
            return
        table = self._at(scratch, p.offsets["table"])
        zeros = self._at(scratch, p.offsets["zeros"])
        a_base = self.low.pointer_of(p.lhs) if p.lhs is not None else self._materialise_a(p, scratch)
        b_base = self.low.pointer_of(p.rhs) if p.rhs is not None else self._materialise_b(p, scratch)
        c_base = self.c_pointer(p, scratch, out)
        with self.low.ctx.loop(p.run, "zero") as i:
            b.store(ir.Constant(scalar, 0.0), b.gep(zeros, [i], source_etype=scalar))
        if p.inst.opcode == Op.DOT:
            self._dot_table(p, table, a_base)
        else:
            self._conv_table(p, table, a_base, zeros, self._at(scratch, p.offsets["offsets"]))
        pack = self._at(scratch, p.offsets["pack"])
        with self.low.ctx.loop(p.batch, "batch") as bi:
            t = b.gep(table, [b.mul(bi, const64(p.m * p.taps))], source_etype=PTR)
            bm = b.gep(b_base, [b.mul(bi, const64(p.k * p.n))], source_etype=scalar)
            cm = b.gep(c_base, [b.mul(bi, const64(p.m * p.n))], source_etype=scalar)
            ldb, column = (1, p.k) if p.rhs_transposed else (p.n, 1)
            self.gemm.call(b, scalar, p.m, p.n, p.taps, p.run, t, bm, ldb, cm, p.n, pack, p.flops, column)

    # A and B in canonical order, computed element by element
    def _materialise_a(self, p: Plan, scratch):
        base = self._at(scratch, p.offsets["a"])
        inst = p.inst
        if inst.opcode == Op.DOT:
            lhs = inst.operands[0]
            dd = DotDims.of(inst)
            lfree = dd.lhs_free(lhs.shape.rank)
            order = list(dd.lhs_batch) + lfree + list(dd.lhs_contracting)
        else:
            lhs = inst.operands[0]
            cd = conv_dims(inst)
            order = [cd.input_batch, *cd.input_spatial, cd.input_feature]
        self._copy_in_order(lhs, order, base, p.scalar)
        return base

    def _materialise_b(self, p: Plan, scratch):
        base = self._at(scratch, p.offsets["b"])
        inst = p.inst
        rhs = inst.operands[1]
        if inst.opcode == Op.DOT:
            dd = DotDims.of(inst)
            rfree = dd.rhs_free(rhs.shape.rank)
            order = list(dd.rhs_batch) + list(dd.rhs_contracting) + rfree
        else:
            cd = conv_dims(inst)
            order = kernel_order(cd)
        self._copy_in_order(rhs, order, base, p.scalar)
        return base

    def _copy_in_order(self, operand: Instruction, order: list[int], base, scalar: str) -> None:
        """base[row-major over dims `order`] = operand, converted to the scalar type."""
        b, elem = self.b, self.low.elem
        canon = Shape.array(scalar, [operand.shape.dims[d] for d in order])
        to = primitive_type(scalar)
        with self.low.ctx.loop_nest(canon.dims, roll_outer=True) as idx:
            logical = [None] * operand.shape.rank
            for pos, d in enumerate(order):
                logical[d] = idx[pos]
            v = scalar_ops.convert(b, elem.value(operand, tuple(logical)), operand.shape.element_type, to)
            store_element(b, v, base, canon, idx)

    # indirection tables
    def _dot_table(self, p: Plan, table, a_base) -> None:
        b = self.b
        inst = p.inst
        lhs = inst.operands[0]
        dd = DotDims.of(inst)
        lfree = dd.lhs_free(lhs.shape.rank)
        rows = list(dd.lhs_batch) + lfree
        scalar = F32 if p.scalar == "f32" else F64
        if p.lhs is None:  # the copy in scratch is row-major [batch * m, k]
            with self.low.ctx.loop(p.batch * p.m, "row") as r:
                b.store(b.gep(a_base, [b.mul(r, const64(p.k))], source_etype=scalar),
                        b.gep(table, [r], source_etype=PTR))
            return
        shape = p.lhs.shape
        with self.low.ctx.loop_nest([lhs.shape.dims[d] for d in rows], loop_id=self._scalar_loop) as idx:
            logical = [const64(0)] * lhs.shape.rank
            for pos, d in enumerate(rows):
                logical[d] = idx[pos]
            row = row_major_offset(b, idx, [lhs.shape.dims[d] for d in rows])
            pointer = b.gep(a_base, [linear_offset(b, shape, logical)], source_etype=scalar)
            b.store(pointer, b.gep(table, [row], source_etype=PTR))

    def _scalar_loop(self):
        """Table loops store one pointer per step: neither vectorising nor unrolling them gains
        anything, and doing it took a third of a small convolution kernel's compile."""
        return new_loop_id(self.low.llmod, "llvm.loop.vectorize.enable", False, "llvm.loop.unroll.disable")

    def _conv_table(self, p: Plan, table, a_base, zeros, offsets) -> None:
        """table[(n, out pixel), tap] = the input pixel's features, or the zero row in the padding."""
        b = self.b
        inst = p.inst
        lhs, rhs = inst.operands
        cd = conv_dims(inst)
        scalar = F32 if p.scalar == "f32" else F64
        window = inst.attrs.get("window")
        wdims = window.dims if window is not None else ()
        spatial = len(cd.output_spatial)
        out_sizes = [inst.shape.dims[cd.output_batch]] + [inst.shape.dims[d] for d in cd.output_spatial]
        tap_sizes = [rhs.shape.dims[d] for d in cd.kernel_spatial]
        if p.lhs is not None:
            shape = p.lhs.shape
            position_dims = [cd.input_batch, *cd.input_spatial]
        else:  # the copy in scratch is row-major [batch, spatial..., features]
            shape = Shape.array(p.scalar, [lhs.shape.dims[cd.input_batch]]
                                + [lhs.shape.dims[d] for d in cd.input_spatial] + [p.run])
            position_dims = list(range(spatial + 1))
        if spatial <= conv_table.MAX_SPATIAL:   # the runtime library's function, given the geometry
            element_strides = strides(shape)
            dims = [_table_dimension(wdims[s] if s < len(wdims) else None, out_sizes[s + 1], tap_sizes[s],
                                     lhs.shape.dims[cd.input_spatial[s]],
                                     element_strides[position_dims[s + 1]] * p.elem_bytes) for s in range(spatial)]
            values = conv_table.geometry(out_sizes[0], element_strides[position_dims[0]] * p.elem_bytes, dims)
            conv_table.call(b, self.gemm.declare, table, a_base, zeros, values, offsets)
            return
        with self.low.ctx.loop_nest(out_sizes + tap_sizes, loop_id=self._scalar_loop) as idx:
            pixel, taps = idx[:spatial + 1], idx[spatial + 1:]
            inside = ir.Constant(ir.IntType(1), 1)
            logical = [const64(0)] * shape.rank
            logical[position_dims[0]] = pixel[0]
            for s in range(spatial):
                ok, logical[position_dims[s + 1]] = self._tap_source(
                    pixel[s + 1], taps[s], wdims[s] if s < len(wdims) else None, tap_sizes[s],
                    lhs.shape.dims[cd.input_spatial[s]])
                inside = b.and_(inside, ok)
            pointer = b.gep(a_base, [linear_offset(b, shape, logical)], source_etype=scalar)
            entry = b.add(b.mul(row_major_offset(b, pixel, out_sizes), const64(p.taps)),
                          row_major_offset(b, taps, tap_sizes))
            b.store(b.select(inside, pointer, zeros), b.gep(table, [entry], source_etype=PTR))

    def _tap_source(self, out, tap, w, taps: int, size: int):
        """(whether the window position reads an input element, its clamped input index) for
        output position `out` and kernel position `tap` of one spatial dimension. A base-dilated
        (transposed) convolution reads zeros between the input elements; a reversed window reads
        kernel position `tap` at the mirrored window position."""
        b = self.b
        stride, low, dilation, base, reverse = ((w.stride, w.padding_low, w.window_dilation, w.base_dilation,
                                                 w.window_reversal) if w else (1, 0, 1, 1, False))
        k = b.sub(const64(taps - 1), tap) if reverse else tap
        pos = b.sub(b.add(b.mul(out, const64(stride)), b.mul(k, const64(dilation))), const64(low))
        ok = b.icmp_signed(">=", pos, const64(0))
        if base != 1:
            ok = b.and_(ok, b.icmp_signed("==", b.srem(pos, const64(base)), const64(0)))
            pos = b.sdiv(pos, const64(base))
        ok = b.and_(ok, b.icmp_signed("<", pos, const64(size)))
        return ok, b.select(ok, pos, const64(0))


def _table_dimension(w, outputs: int, taps: int, input_size: int, input_stride: int) -> dict:
    """One spatial dimension of conv_table's geometry (w: its window dimension, or None)."""
    return dict(outputs=outputs, taps=taps, stride=w.stride if w else 1, padding_low=w.padding_low if w else 0,
                window_dilation=w.window_dilation if w else 1, base_dilation=w.base_dilation if w else 1,
                reversed=int(bool(w and w.window_reversal)), input_size=input_size, input_stride=input_stride)
