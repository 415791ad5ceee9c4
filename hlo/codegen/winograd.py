"""3x3 convolutions with Winograd's minimal filtering F(2x2, 3x3).

A 3x3, stride-1, undilated 2-D convolution computes each 2x2 block of outputs from a
4x4 patch of input with 16 multiplies per (input, output) channel pair instead of 36:

    Y = A^T [ (G g G^T) (.) (B^T d B) ] A

(d: a 4x4 input patch, g: the 3x3 kernel, (.) elementwise). Over all tiles and channels
the 16 elementwise products are 16 matrix multiplies V[xi] (tiles x Cin) x U[xi]
(Cin x Cout), which run through gemm.py; the transforms are vectorised loops over the
channels. So the multiply count drops by 2.25x for a few passes over the data: the
convolution workload of backend_bench.py runs faster than any direct method can on
the same FMA units. Rounding differs from a direct sum (the transforms add and scale
by 0.5) by a few ulps of the inputs' magnitude, well within float tolerances.

Steps (scratch regions named as in `parts`): the input copied zero-padded ("padded",
[n, 2*th+2, 2*tw+2, c]) and the kernel's transform ("u", [16][c][o]); then, for each
chunk of at most CHUNK_TILES tiles, their transform ("v", [16][chunk][c]), the 16
products ("m", [16][chunk][o]) and the output transform into the canonical output
[n, oh, ow, o]. Chunks keep the scratch of a large input bounded (a few MiB a chunk).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llvmlite import ir

from ..ir import Instruction
from ..shapes import primitive_type
from . import scalar_ops
from .function_context import const64, row_major_offset
from .types import PTR

MIN_CHANNELS = 16      # fewer channels: the transforms cost more than the multiplies save
MIN_OUTPUT = 4         # output rows and columns
CHUNK_TILES = 2048     # tiles transformed and multiplied at a time: bounds the scratch of big inputs


@dataclass(frozen=True)
class WinogradShape:
    batch: int
    channels: int        # input features
    features: int        # output features
    out_h: int
    out_w: int
    pad_h: int           # low padding (may be negative: the input is cropped)
    pad_w: int

    @property
    def tiles_h(self) -> int:
        return -(-self.out_h // 2)

    @property
    def tiles_w(self) -> int:
        return -(-self.out_w // 2)

    @property
    def tiles(self) -> int:
        return self.batch * self.tiles_h * self.tiles_w

    @property
    def chunk(self) -> int:
        return min(self.tiles, CHUNK_TILES)

    @property
    def padded_h(self) -> int:
        return 2 * self.tiles_h + 2

    @property
    def padded_w(self) -> int:
        return 2 * self.tiles_w + 2

    def parts(self, elem_bytes: int) -> list[tuple[str, int]]:
        t, c, o = self.chunk, self.channels, self.features
        return [("padded", self.batch * self.padded_h * self.padded_w * c * elem_bytes),
                ("v", 16 * t * c * elem_bytes), ("u", 16 * c * o * elem_bytes), ("m", 16 * t * o * elem_bytes),
                ("table", 16 * t * 8)]


def winograd_shape(inst: Instruction, dims) -> Optional[WinogradShape]:
    """The shape of a convolution F(2x2, 3x3) applies to, or None. dims: its ConvDims."""
    lhs, rhs = inst.operands
    if len(dims.input_spatial) != 2:
        return None
    window = inst.attrs.get("window")
    wdims = window.dims if window is not None else ()
    if len(wdims) != 2 or any(w.size != 3 or w.stride != 1 or w.window_dilation != 1 or w.base_dilation != 1
                              or w.window_reversal for w in wdims):
        return None
    if [rhs.shape.dims[d] for d in dims.kernel_spatial] != [3, 3]:
        return None
    shape = WinogradShape(lhs.shape.dims[dims.input_batch], lhs.shape.dims[dims.input_feature],
                          inst.shape.dims[dims.output_feature], inst.shape.dims[dims.output_spatial[0]],
                          inst.shape.dims[dims.output_spatial[1]], wdims[0].padding_low, wdims[1].padding_low)
    if min(shape.channels, shape.features) < MIN_CHANNELS or min(shape.out_h, shape.out_w) < MIN_OUTPUT:
        return None
    return shape


class WinogradEmitter:
    """Emits one planned convolution (contraction.Plan with kind 'winograd')."""

    def __init__(self, lowering, gemm, scalar: ir.Type, scalar_name: str, dims):
        self.low, self.gemm, self.scalar, self.scalar_name = lowering, gemm, scalar, scalar_name
        self.dims = dims   # the convolution's ConvDims
        self.scopes = _Scopes(lowering.llmod)

    @property
    def b(self) -> ir.IRBuilder:
        return self.low.b

    def emit(self, p, region, out) -> None:
        """p: the plan; region(name) -> pointer into its scratch; out: C (canonical [n, oh, ow, o])."""
        s: WinogradShape = p.winograd
        b = self.b
        self.pad_input(p, s, region("padded"))
        self.transform_kernel(p, s, region("u"))
        self.fill_table(s, region("v"), region("table"))
        with self.low.ctx.loop(s.tiles, "wchunk", step=s.chunk) as first:
            count = b.select(b.icmp_signed("<", b.sub(const64(s.tiles), first), const64(s.chunk)),
                             b.sub(const64(s.tiles), first), const64(s.chunk))
            self.transform_input(s, first, count, region("padded"), region("v"))
            self.multiply(s, count, region("u"), region("m"), region("table"), region("pack"))
            self.transform_output(s, first, count, region("m"), out)

    # ---- helpers
    def _at(self, base, index):
        return self.b.gep(base, [index], inbounds=True, source_etype=self.scalar)

    def _load(self, base, index, region: str = ""):
        load = self.b.load(self._at(base, index), typ=self.scalar)
        self.scopes.mark(load, region)
        return load

    def _store(self, value, base, index, region: str = "") -> None:
        self.scopes.mark(self.b.store(value, self._at(base, index)), region)

    def _half(self, value):
        return self.b.fmul(value, ir.Constant(self.scalar, 0.5))

    # ---- steps
    def pad_input(self, p, s: WinogradShape, padded) -> None:
        """padded[n, y, x, c] = input[n, y - pad_h, x - pad_w, c], zero outside."""
        b, elem = self.b, self.low.elem
        lhs = p.inst.operands[0]
        cd = self.dims
        sizes = [s.batch, s.padded_h, s.padded_w, s.channels]
        limits = [lhs.shape.dims[d] for d in cd.input_spatial]
        with self.low.ctx.loop_nest(sizes) as (n, y, x, c):
            logical = [const64(0)] * lhs.shape.rank
            logical[cd.input_batch], logical[cd.input_feature] = n, c
            inside = ir.Constant(ir.IntType(1), 1)
            for k, (pos, pad) in enumerate(((y, s.pad_h), (x, s.pad_w))):
                q = b.sub(pos, const64(pad))
                ok = b.and_(b.icmp_signed(">=", q, const64(0)), b.icmp_signed("<", q, const64(limits[k])))
                inside = b.and_(inside, ok)
                logical[cd.input_spatial[k]] = b.select(ok, q, const64(0))
            value = scalar_ops.convert(b, elem.value(lhs, tuple(logical)), lhs.shape.element_type,
                                       primitive_type(self.scalar_name))
            value = b.select(inside, value, ir.Constant(self.scalar, 0.0))
            self._store(value, padded, row_major_offset(b, (n, y, x, c), sizes))

    def tile_position(self, s: WinogradShape, tile):
        """(n, ty, tx) of a linear tile number."""
        b = self.b
        per_image = const64(s.tiles_h * s.tiles_w)
        n, rest = b.sdiv(tile, per_image), b.srem(tile, per_image)
        return n, b.sdiv(rest, const64(s.tiles_w)), b.srem(rest, const64(s.tiles_w))

    def transform_input(self, s: WinogradShape, first, count, padded, v) -> None:
        """v[4k + l][tile - first][c] = (B^T d B)[k][l] for the 4x4 patch d at the tile's corner."""
        b, ctx = self.b, self.low.ctx
        psizes = [s.batch, s.padded_h, s.padded_w, s.channels]
        with ctx.loop(count, "wtile") as local:
            n, ty, tx = self.tile_position(s, b.add(first, local))
            y0, x0 = b.mul(ty, const64(2)), b.mul(tx, const64(2))
            with ctx.loop(s.channels, "wc") as c:
                d = [[self._load(padded, row_major_offset(b, (n, b.add(y0, const64(i)), b.add(x0, const64(j)), c),
                                                          psizes), "padded")
                      for j in range(4)] for i in range(4)]
                rows = _bt_rows(b, d)                                              # B^T d
                cols = _bt_rows(b, [[rows[k][j] for k in range(4)] for j in range(4)])  # cols[l][k] = (B^T d B)[k][l]
                for k in range(4):
                    for l in range(4):
                        index = b.add(b.mul(b.add(const64((4 * k + l) * s.chunk), local), const64(s.channels)), c)
                        self._store(cols[l][k], v, index, "v")

    def transform_kernel(self, p, s: WinogradShape, u) -> None:
        """u[4k + l][c][o] = (G g G^T)[k][l] for the 3x3 kernel g of channels (c, o)."""
        b, elem = self.b, self.low.elem
        rhs = p.inst.operands[1]
        cd = self.dims
        to = primitive_type(self.scalar_name)
        with self.low.ctx.loop_nest([s.channels, s.features]) as (c, o):
            g = []
            for i in range(3):
                row = []
                for j in range(3):
                    logical = [const64(0)] * rhs.shape.rank
                    logical[cd.kernel_input_feature], logical[cd.kernel_output_feature] = c, o
                    logical[cd.kernel_spatial[0]], logical[cd.kernel_spatial[1]] = const64(i), const64(j)
                    row.append(scalar_ops.convert(b, elem.value(rhs, tuple(logical)), rhs.shape.element_type, to))
                g.append(row)
            rows = self._g_rows(g)                                              # G g, 4 x 3
            full = self._g_rows([[rows[k][j] for k in range(4)] for j in range(3)])  # full[l][k] = (G g G^T)[k][l]
            for k in range(4):
                for l in range(4):
                    index = b.add(b.mul(b.add(const64((4 * k + l) * s.channels), c), const64(s.features)), o)
                    self._store(full[l][k], u, index)

    def _g_rows(self, g):
        """G g for a 3-row g: rows g0, (g0+g1+g2)/2, (g0-g1+g2)/2, g2."""
        b = self.b
        out = [[], [], [], []]
        for j in range(len(g[0])):
            g0, g1, g2 = g[0][j], g[1][j], g[2][j]
            outer = b.fadd(g0, g2)
            out[0].append(g0)
            out[1].append(self._half(b.fadd(outer, g1)))
            out[2].append(self._half(b.fsub(outer, g1)))
            out[3].append(g2)
        return out

    def fill_table(self, s: WinogradShape, v, table) -> None:
        """table[xi * chunk + t] = row t of v[xi]: the rows the 16 multiplies read."""
        b = self.b
        with self.low.ctx.loop(16 * s.chunk, "wrow") as r:
            b.store(self._at(v, b.mul(r, const64(s.channels))), b.gep(table, [r], source_etype=PTR))

    def multiply(self, s: WinogradShape, count, u, m, table, pack) -> None:
        """m[xi] = v[xi] x u[xi] for the 16 positions xi of a transformed tile (count tiles)."""
        b = self.b
        flops = 2.0 * s.chunk * s.channels * s.features
        for xi in range(16):
            t = b.gep(table, [const64(xi * s.chunk)], source_etype=PTR)
            self.gemm.call(b, self.scalar, count, s.features, 1, s.channels, t,
                           self._at(u, const64(xi * s.channels * s.features)), s.features,
                           self._at(m, const64(xi * s.chunk * s.features)), s.features, pack, flops)

    def transform_output(self, s: WinogradShape, first, count, m, out) -> None:
        """out[n, 2ty + i, 2tx + j, o] = (A^T M A)[i][j] where it lies inside the output."""
        b, ctx = self.b, self.low.ctx
        osizes = [s.batch, s.out_h, s.out_w, s.features]
        with ctx.loop(count, "wtile") as local:
            n, ty, tx = self.tile_position(s, b.add(first, local))
            with ctx.loop(s.features, "wo") as o:
                mm = [[self._load(m, b.add(b.mul(b.add(const64((4 * k + l) * s.chunk), local),
                                                 const64(s.features)), o), "m") for l in range(4)] for k in range(4)]
                rows = _at_rows(b, mm)                                             # A^T M, 2 x 4
                y = _at_rows(b, [[rows[i][l] for i in range(2)] for l in range(4)])  # y[j][i] = (A^T M A)[i][j]
                for i in range(2):
                    for j in range(2):
                        yy, xx = b.add(b.mul(ty, const64(2)), const64(i)), b.add(b.mul(tx, const64(2)), const64(j))
                        inside = b.and_(b.icmp_signed("<", yy, const64(s.out_h)),
                                        b.icmp_signed("<", xx, const64(s.out_w)))
                        with ctx.if_then(inside, "wout"):
                            self._store(y[j][i], out, row_major_offset(b, (n, yy, xx, o), osizes), "out")


class _Scopes:
    """Scoped no-alias metadata for the transforms: their loads and stores touch distinct
    regions (padded -> v, m -> out), which LLVM cannot prove once the tile range of a chunk
    is a run-time value; without it the channel loops would not vectorise."""

    REGIONS = ("padded", "v", "m", "out")

    def __init__(self, module: ir.Module):
        domain = module.add_metadata([ir.MetaDataString(module, "hlo.winograd")])
        scopes = {r: module.add_metadata([ir.MetaDataString(module, f"hlo.winograd.{r}"), domain])
                  for r in self.REGIONS}
        self.own = {r: module.add_metadata([scopes[r]]) for r in self.REGIONS}
        self.others = {r: module.add_metadata([scopes[o] for o in self.REGIONS if o != r]) for r in self.REGIONS}

    def mark(self, instruction, region: str) -> None:
        if region:
            instruction.set_metadata("alias.scope", self.own[region])
            instruction.set_metadata("noalias", self.others[region])


def _bt_rows(b, d):
    """B^T d for a 4-row d: rows d0 - d2, d1 + d2, d2 - d1, d1 - d3."""
    out = [[], [], [], []]
    for j in range(len(d[0])):
        d0, d1, d2, d3 = d[0][j], d[1][j], d[2][j], d[3][j]
        out[0].append(b.fsub(d0, d2))
        out[1].append(b.fadd(d1, d2))
        out[2].append(b.fsub(d2, d1))
        out[3].append(b.fsub(d1, d3))
    return out


def _at_rows(b, mm):
    """A^T M for a 4-row M: rows m0 + m1 + m2, m1 - m2 - m3."""
    out = [[], []]
    for j in range(len(mm[0])):
        m0, m1, m2, m3 = mm[0][j], mm[1][j], mm[2][j], mm[3][j]
        out[0].append(b.fadd(b.fadd(m0, m1), m2))
        out[1].append(b.fsub(b.fsub(m1, m2), m3))
    return out
