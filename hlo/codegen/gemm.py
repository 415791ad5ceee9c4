"""A register-tiled, cache-blocked matrix multiply emitted as LLVM functions.

dot and convolution (kernels.py, via contraction.py) both end here, as

    C[m, n] (+)= sum_k A(m, k) * B[k, n]

with C row-major (ldc), B row-major (ldb) and A given through an *indirection table*
(as XNNPACK does): K is split into `taps` runs of `run` contiguous elements, and
table[m * taps + t] points to A(m, t * run .. t * run + run - 1). A plain matrix has
one tap per row (table[m] = A + m * lda); a convolution has one tap per kernel window
position, pointing at the input pixel's features (or at a row of zeros in the padding).
So neither an im2col copy of the input nor a transposed copy of a row-major A is made.

The driver loops BLIS-style: column blocks of NC; K blocks of at most KC (whole taps
when a tap's run is shorter, else KC-long pieces of one tap); B's block packed into
NR-wide panels (zero-padded); row blocks of MC, packed into MR-row micro-panels when the
column block has enough panels to reuse them (else read in place through the table); then
MR x NR micro-tiles (gemm_ukernel.py). MR and NR follow the target's vector registers
(MICRO_TILES): 8 x 32 f32 on AVX-512, 4 x 24 on AVX2, 8 x 12 on NEON.

Threads: `gemm_parallel` splits the columns of C into as many parts as the caller's thread
count says (the `<entry>_num_threads` global a kernel reads: 1 unless the caller sets it),
and runs them through the `<entry>_parallel_for` hook it is given (NULL: run serially). The
JIT points the hook at a pthread-based runner (parallel.py); an AOT user may set it to a
thread pool's parallel-for (docs/AOT.md). Each part packs A and B into its own region of the
scratch.

These functions do not depend on the module: they are the runtime library
(runtime_library.py), emitted by `emit_runtime` and compiled once per target; a module's
kernels call them through GemmCalls.
"""
from __future__ import annotations

from llvmlite import ir

from . import float_mode
from .function_context import new_loop_id
from .gemm_ukernel import Tiling, emit_packed_kernel, emit_rows_kernel, masked_load, splat
from .target import RegisterFile
from .types import F32, F64, I32, I64, PTR

VOID = ir.VoidType()
HOOK_TYPE = ir.FunctionType(VOID, [PTR, PTR, I64])   # parallel_for(task, ctx, parts); task(ctx, part)
MAX_THREADS = 4       # packing regions reserved for this many column parts
KC, MC, NC = 256, 128, 2048   # the K, row and column block sizes
# (rows, vectors per row) of the micro-tile for (vector bits, vector registers): the accumulators,
# one row of packed B and a broadcast of A must fit in the registers. AVX-512: 8 x 2 zmm (16
# accumulators). AVX2 (16 ymm): 4 x 3 (12 accumulators, 3 B vectors, 1 broadcast; 8 x 2 spills;
# measured on matmul 512/1000/1024 against 6 x 2 and 5 x 2, it was the one never behind by more
# than a few per cent). NEON (32 x 128 bits): 8 x 3 (24 accumulators, BLIS's armv8 shape). SSE: 4 x 3.
MICRO_TILES = {(512, 32): (8, 2), (256, 16): (4, 3), (128, 32): (8, 3), (128, 16): (4, 3)}
PARALLEL_FLOPS = 4e6  # below this a multiply runs on the calling thread only
PACK_A_PANELS = 4     # A is packed when a column block has at least this many NR-wide panels
IN_PLACE_B_TILES = 2  # a row-major B is read where it lies when C has at most this many MR-row tiles


MAX_NR_BYTES = 64 * 2     # two 512-bit vectors: the widest micro-tile row of any target


def pack_bound(elem_bytes: int, n: int, k: int, parts: int) -> int:
    """Packing bytes (A's row block, then B's column block) for `parts` column parts on any target
    (buffer assignment runs before the target's tiling is known): whole panels of any width up to
    MAX_NR_BYTES cover at most n + that width columns; a row block has at most MC rows."""
    depth = min(k, KC)
    per_part = _round64(MC * depth * elem_bytes) + _round64((min(n, NC) + MAX_NR_BYTES // elem_bytes) * depth * elem_bytes)
    return parts * per_part


def part_bytes(t: Tiling, n: int, k: int) -> int:
    """The packing region of one column part: A's row block, then B's column block."""
    return _round64(t.pack_a_bytes(k)) + _round64(t.pack_b_bytes(n, k))


def tiling_for(scalar: ir.Type, target: RegisterFile) -> Tiling:
    lanes = max(target.vector_bits // (32 if scalar == F32 else 64), 1)
    mr, vectors = MICRO_TILES.get((target.vector_bits, target.registers), (4, 3))
    return Tiling(scalar, lanes, mr=mr, nr=vectors * lanes, kc=KC, mc=MC // mr * mr, nc=NC)


def _round64(n: int) -> int:
    return (n + 63) // 64 * 64


def _suffix(scalar: ir.Type) -> str:
    return "f32" if scalar == F32 else "f64"


def _c(v: int):
    return ir.Constant(I64, int(v))


def runtime_symbol(tag: str, function: str) -> str:
    """The name of one of the runtime library's functions in the build `tag` (runtime_library.py):
    builds for two targets may live in one process, so their names differ."""
    return f"hlo.rt.{tag}.{function}"


def _exported(scalar: ir.Type, flush: bool = False, parallel: bool = True) -> str:
    if not parallel:
        return f"gemm.{_suffix(scalar)}"
    return f"gemm_parallel{'_ftz' if flush else ''}.{_suffix(scalar)}"


EXPORTED_FUNCTIONS = [_exported(s, flush, parallel) for s in (F32, F64)
                      for parallel, flush in ((False, False), (True, False), (True, True))]


def emit_runtime(module: ir.Module, target: RegisterFile, tag: str) -> None:
    """The runtime library's functions, for every element type (the exported ones by
    runtime_symbol, the rest internal):

        gemm.f32(m, n, taps, run, table, B, ldb, bcol, C, ldc, pack, n0, n1)
        gemm_parallel.f32(m, n, taps, run, table, B, ldb, bcol, C, ldc, pack, region, threads, hook)
        gemm_parallel_ftz.f32(...)   the same, worker threads flushing subnormals as the entry does

    (and .f64). The kernels' side of the calls is GemmCalls."""
    for scalar in (F32, F64):
        t = tiling_for(scalar, target)
        driver = _emit_driver(module, t, emit_rows_kernel(module, t), emit_packed_kernel(module, t),
                              runtime_symbol(tag, _exported(scalar, parallel=False)))
        for flush in (False, True):
            _emit_parallel(module, runtime_symbol(tag, _exported(scalar, flush)), t, driver,
                           target.arch if flush else None)


class GemmCalls:
    """The calls one LLVM module (a kernel, or the driver) makes to the runtime library's multiply.

    The library is compiled once per target, apart from every module (runtime_library.py); the
    module declares the functions it calls, and passes them the entry's thread count and
    parallel-for hook (`<entry>_num_threads`, `<entry>_parallel_for`, defined by the driver)."""

    def __init__(self, module: ir.Module, entry_name: str, target: RegisterFile, runtime_tag: str,
                 flush_denormals: bool = False):
        self.module = module
        self.entry_name = entry_name
        self.target = target
        self.tag = runtime_tag
        self.flush = flush_denormals
        self.called: set[str] = set()    # runtime functions this module calls

    def tiling(self, scalar: ir.Type) -> Tiling:
        return tiling_for(scalar, self.target)

    # ---- the call a lowering makes
    def call(self, b: ir.IRBuilder, scalar: ir.Type, m, n, taps, run, table, bmat, ldb, cmat, ldc, pack,
             flops: float, b_column_stride: int = 1) -> None:
        """C (m x n, row stride ldc) = A (through table: taps runs of `run`) x B, element (k, j) of B
        at bmat[k * ldb + j * b_column_stride] (1: row-major; a transposed B, k minor, is packed
        from where it lies).

        m may be a run-time i64 value; flops is then an estimate (it picks the threaded path).
        pack: 64-byte aligned scratch of pack_bound(bytes, n, taps * run, MAX_THREADS or 1 when
        flops < PARALLEL_FLOPS)."""
        t = self.tiling(scalar)
        rows = m if isinstance(m, ir.Value) else _c(m)
        args = [rows, _c(n), _c(taps), _c(run), table, bmat, _c(ldb), _c(b_column_stride), cmat, _c(ldc)]
        if flops >= PARALLEL_FLOPS:
            threads, hook = entry_threads(self.module, self.entry_name)
            region = part_bytes(t, n, taps * run)
            b.call(self.declare(_exported(scalar, self.flush), _PARALLEL_TYPE),
                   args + [pack, _c(region), b.load(threads, typ=I64), b.load(hook, typ=PTR)])
        else:
            b.call(self.declare(_exported(scalar, parallel=False), _DRIVER_TYPE), args + [pack, _c(0), _c(n)])

    def declare(self, function: str, fty: ir.FunctionType) -> ir.Function:
        """The runtime library's `function` (any of them, e.g. conv_table's) declared in this
        module, and recorded as called."""
        name = runtime_symbol(self.tag, function)
        self.called.add(name)
        found = self.module.globals.get(name)
        return found if found is not None else ir.Function(self.module, fty, name=name)


def entry_threads(module: ir.Module, entry_name: str, define: bool = False) -> tuple:
    """The entry's `<entry>_num_threads` (i64, 1 by default) and `<entry>_parallel_for` (NULL)
    globals in this module: defined (the driver's module) or declared (a kernel's)."""
    found = []
    for name, ty, value in ((f"{entry_name}_num_threads", I64, 1), (f"{entry_name}_parallel_for", PTR, None)):
        g = module.globals.get(name)
        if g is None:
            g = ir.GlobalVariable(module, ty, name=name)
            g.align = 8
            if define:
                g.initializer = ir.Constant(ty, value)
        found.append(g)
    return tuple(found)


_DRIVER_ARGS = [I64, I64, I64, I64, PTR, PTR, I64, I64, PTR, I64, PTR]   # m .. ldc, pack
_DRIVER_TYPE = ir.FunctionType(VOID, _DRIVER_ARGS + [I64, I64])                # + n0, n1
_PARALLEL_TYPE = ir.FunctionType(VOID, _DRIVER_ARGS + [I64, I64, PTR])        # + region, threads, hook


class _Loops:
    """Counted loops inside a hand-written function."""

    def __init__(self, fn: ir.Function, b: ir.IRBuilder):
        self.fn, self.b = fn, b

    def range(self, count, name: str, start=None, step: int = 1, vectorize: bool = False):
        return _Range(self, count, name, start, step, vectorize)


class _Range:
    """A counted loop. The library is compiled without LLVM's loop vectoriser (it made the driver
    three times as costly to compile, mostly for loops that gained nothing); `vectorize` asks it
    for this loop alone."""

    def __init__(self, loops: _Loops, count, name, start, step, vectorize: bool = False):
        self.loops, self.count, self.name, self.step = loops, count, name, step
        self.start = _c(0) if start is None else start
        self.vectorize = vectorize

    def __enter__(self):
        fn, b = self.loops.fn, self.loops.b
        self.pre = b.block
        self.header = fn.append_basic_block(f"{self.name}.header")
        self.body = fn.append_basic_block(f"{self.name}.body")
        self.done = fn.append_basic_block(f"{self.name}.done")
        b.branch(self.header)
        b.position_at_end(self.header)
        self.index = b.phi(I64, self.name)
        self.index.add_incoming(self.start, self.pre)
        b.cbranch(b.icmp_signed("<", self.index, self.count), self.body, self.done)
        b.position_at_end(self.body)
        return self.index

    def __exit__(self, *exc):
        b = self.loops.b
        step = self.step if isinstance(self.step, ir.Value) else _c(self.step)
        self.index.add_incoming(b.add(self.index, step, flags=["nsw"]), b.block)
        back_edge = b.branch(self.header)
        if self.vectorize:
            back_edge.set_metadata("llvm.loop", new_loop_id(b.module, "llvm.loop.vectorize.enable", True))
        b.position_at_end(self.done)
        return False


def _ceil_div(b, x, y):
    return b.sdiv(b.add(x, b.sub(y, _c(1))), y)


def _smin(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _emit_driver(module: ir.Module, t: Tiling, rows_kernel: ir.Function, packed_kernel: ir.Function,
                 name: str) -> ir.Function:
    """gemm(M, N, taps, run, table, B, ldb, bcol, C, ldc, pack, n0, n1): columns n0..n1 of C = A x B.

    K blocks: whole taps, as many as fit in KC, when a tap's run is shorter than KC (so the
    micro-kernel keeps its sums in registers across them); otherwise KC-long pieces of one tap.
    pack: this part's packing region (part_bytes): A's row block first, then B's column block.
    A row block is packed when the column block has at least PACK_A_PANELS panels to reuse it.
    With at most IN_PLACE_B_TILES row tiles (an LSTM step's 4 x 64 x 256), each B panel would be
    read once or twice after packing it: the full panels of a row-major B are read where they lie
    (row stride ldb) and only the last, partial one is packed (zeros past the edge)."""
    fn = ir.Function(module, _DRIVER_TYPE, name=name)
    m, n, taps, run, table, bmat, ldb, bcol, cmat, ldc, pack, n0, n1 = fn.args
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    loops = _Loops(fn, b)
    rows = b.alloca(ir.ArrayType(PTR, t.mr * max(t.kc, 1)), name="rows")
    sc = t.scalar
    per_block = b.sdiv(_c(t.kc), run)
    per_block = b.select(b.icmp_signed("<", per_block, _c(1)), _c(1), per_block)   # taps per K block
    blocks = _ceil_div(b, taps, per_block)
    per_block = _ceil_div(b, taps, blocks)   # the same number in every block: 3+3+3 taps, not 4+4+1
    chunk = _ceil_div(b, run, _ceil_div(b, run, _c(t.kc)))   # equal pieces: 196 x 4, not 256 x 3 + 16
    a_bytes = _round64_value(b, b.mul(_c(t.mc * t.elem_bytes), _smin(b, b.mul(taps, run), _c(t.kc))))
    packed_a = pack
    packed_b = b.gep(pack, [a_bytes], source_etype=ir.IntType(8))
    in_place = b.and_(b.icmp_signed("<=", m, _c(IN_PLACE_B_TILES * t.mr)), b.icmp_signed("==", bcol, _c(1)))
    with loops.range(n1, "jc", start=n0, step=t.nc) as jc:
        nc = _smin(b, _c(t.nc), b.sub(n1, jc))
        pack_a = b.icmp_signed(">=", nc, _c(PACK_A_PANELS * t.nr))
        with loops.range(taps, "tb", step=per_block) as t0:
            ntaps = _smin(b, per_block, b.sub(taps, t0))
            with loops.range(run, "pc", step=chunk) as pc:
                kc = _smin(b, chunk, b.sub(run, pc))
                depth = b.mul(ntaps, kc)
                k0 = b.add(b.mul(t0, run), pc)   # B rows k0 .. k0 + depth (whole taps, or one tap's piece)
                whole = b.select(in_place, b.mul(b.sdiv(nc, _c(t.nr)), _c(t.nr)), _c(0))   # panels read in place
                with _if_else(fn, b, b.icmp_signed("<", whole, nc)) as (then, otherwise):
                    with then:   # pack what is not read in place
                        _pack_b(fn, b, t, b.gep(packed_b, [b.mul(whole, depth)], source_etype=sc), bmat, ldb, bcol,
                                k0, depth, b.add(jc, whole), b.sub(nc, whole))
                    with otherwise:
                        pass
                accumulate = b.not_(b.and_(b.icmp_signed("==", t0, _c(0)), b.icmp_signed("==", pc, _c(0))))
                block = _Block(fn, b, t, rows, table, taps, t0, ntaps, pc, kc, depth, m, cmat, ldc, jc, nc, accumulate)
                block.b_in_place(whole, b.gep(bmat, [b.add(b.mul(k0, ldb), jc)], source_etype=sc), ldb)
                with loops.range(m, "ic", step=t.mc) as ic:
                    mc = _smin(b, _c(t.mc), b.sub(m, ic))
                    with _if_else(fn, b, pack_a) as (then, otherwise):
                        with then:
                            block.pack_a(packed_a, ic, mc)
                            block.tiles(packed_b, ic, mc, lambda row0, ir_: (
                                packed_kernel, [depth, b.gep(packed_a, [b.mul(ir_, depth)], inbounds=True, source_etype=sc)]))
                        with otherwise:
                            block.tiles(packed_b, ic, mc, lambda row0, ir_: (
                                rows_kernel, [ntaps, kc, block.fill_rows(row0)]))
    b.ret_void()
    return fn


class _Block:
    """The micro-tiles of one (column block, K block) pair, with A read in place or packed."""

    def __init__(self, fn, b, t: Tiling, rows, table, taps, t0, ntaps, pc, kc, depth, m, cmat, ldc, jc, nc, accumulate):
        self.fn, self.b, self.t = fn, b, t
        self.rows, self.table, self.taps, self.t0, self.ntaps, self.pc, self.kc = rows, table, taps, t0, ntaps, pc, kc
        self.depth, self.m, self.cmat, self.ldc, self.jc, self.nc, self.accumulate = depth, m, cmat, ldc, jc, nc, accumulate

    def b_in_place(self, whole, block_b, ldb) -> None:
        """Panels before column `whole` of this block are read from block_b (B's block, row stride ldb)."""
        self.whole, self.block_b, self.ldb = whole, block_b, ldb

    def tiles(self, packed_b, ic, mc, kernel_and_args) -> None:
        """For every NR-wide panel, every MR-row tile: kernel(*args, panel, C tile, ..., ldp)."""
        b, t = self.b, self.t
        loops = _Loops(self.fn, b)
        with loops.range(self.nc, "jr", step=t.nr) as jr:
            nv = _smin(b, _c(t.nr), b.sub(self.nc, jr))
            in_place = b.icmp_signed("<", jr, self.whole)
            panel = b.select(in_place, b.gep(self.block_b, [jr], source_etype=t.scalar),
                             b.gep(packed_b, [b.mul(jr, self.depth)], inbounds=True, source_etype=t.scalar))
            ldp = b.select(in_place, self.ldb, _c(t.nr))
            with loops.range(mc, "ir", step=t.mr) as ir_:
                row0 = b.add(ic, ir_)
                mv = _smin(b, _c(t.mr), b.sub(mc, ir_))
                c = b.gep(self.cmat, [b.add(b.mul(row0, self.ldc), b.add(self.jc, jr))], inbounds=True,
                          source_etype=t.scalar)
                kernel, args = kernel_and_args(row0, ir_)
                b.call(kernel, args + [panel, c, self.ldc, mv, nv, self.accumulate, ldp])

    def fill_rows(self, row0):
        """rows[u * MR + i] = table[(row0 + i) * taps + t0 + u] + pc (rows past the end repeat the
        last one: their sums are never stored); returns rows."""
        b, t = self.b, self.t
        with _Loops(self.fn, b).range(self.ntaps, "fu") as u:
            for i in range(t.mr):
                r = _smin(b, b.add(row0, _c(i)), b.sub(self.m, _c(1)))
                slot = b.gep(self.table, [b.add(b.mul(r, self.taps), b.add(self.t0, u))], source_etype=PTR)
                a = b.gep(b.load(slot, typ=PTR), [self.pc], inbounds=True, source_etype=t.scalar)
                b.store(a, b.gep(self.rows, [_c(0), b.add(b.mul(u, _c(t.mr)), _c(i))]))
        return self.rows

    def pack_a(self, packed_a, ic, mc) -> None:
        """packed_a[ir * depth + (u * kc + k) * MR + i] = A(ic + ir + i, tap t0 + u, pc + k): the
        row block's micro-panels, each read by the packed kernel front to back."""
        b, t = self.b, self.t
        loops = _Loops(self.fn, b)
        with loops.range(mc, "pa", step=t.mr) as ir_:
            self.fill_rows(b.add(ic, ir_))
            panel = b.gep(packed_a, [b.mul(ir_, self.depth)], inbounds=True, source_etype=t.scalar)
            with loops.range(self.ntaps, "pu") as u:
                sources = [b.load(b.gep(self.rows, [_c(0), b.add(b.mul(u, _c(t.mr)), _c(i))]), typ=PTR)
                           for i in range(t.mr)]
                first = b.mul(u, self.kc)
                with loops.range(self.kc, "pk", vectorize=True) as k:
                    dst = b.gep(panel, [b.mul(b.add(first, k), _c(t.mr))], inbounds=True, source_etype=t.scalar)
                    for i, src in enumerate(sources):
                        v = b.load(b.gep(src, [k], inbounds=True, source_etype=t.scalar), typ=t.scalar)
                        b.store(v, b.gep(dst, [_c(i)], inbounds=True, source_etype=t.scalar))


def _round64_value(b, n):
    return b.and_(b.add(n, _c(63)), _c(~63))


def _pack_b(fn, b, t: Tiling, pack, bmat, ldb, bcol, k0, kc, jc, nc) -> None:
    """pack[panel][k][0:NR] = B[k0 + k, jc + panel * NR + 0:NR], zeros past column nc; B(k, j) at
    bmat[k * ldb + j * bcol]: rows of NR copied as vectors when B is row-major (bcol 1), else
    column by column (a transposed B: contiguous reads along k)."""
    with _if_else(fn, b, b.icmp_signed("==", bcol, _c(1))) as (row_major, transposed):
        with row_major:
            _pack_b_rows(fn, b, t, pack, bmat, ldb, k0, kc, jc, nc)
        with transposed:
            _pack_b_columns(fn, b, t, pack, bmat, ldb, bcol, k0, kc, jc, nc)


def _pack_b_rows(fn, b, t: Tiling, pack, bmat, ldb, k0, kc, jc, nc) -> None:
    loops = _Loops(fn, b)
    sc = t.scalar
    with loops.range(nc, "pj", step=t.nr) as pj:
        width = _smin(b, _c(t.nr), b.sub(nc, pj))
        panel = b.gep(pack, [b.mul(pj, kc)], inbounds=True, source_etype=sc)
        whole = b.icmp_signed("==", width, _c(t.nr))
        with loops.range(kc, "pk") as k:
            src = b.gep(bmat, [b.add(b.mul(b.add(k0, k), ldb), b.add(jc, pj))], inbounds=True, source_etype=sc)
            dst = b.gep(panel, [b.mul(k, _c(t.nr))], inbounds=True, source_etype=sc)
            with _if_else(fn, b, whole) as (then, otherwise):
                with then:
                    vty = ir.VectorType(sc, t.nr)
                    b.store(b.load(src, typ=vty, align=t.elem_bytes), dst, align=t.elem_bytes)
                with otherwise:   # the last panel: masked loads (zeros past the edge), not a scalar loop
                    vty, lanes = ir.VectorType(sc, t.vec), ir.VectorType(I64, t.vec)
                    zeros = ir.Constant(vty, [ir.Constant(sc, 0.0)] * t.vec)
                    for j in range(t.nvec):
                        first = j * t.vec
                        inside = b.icmp_signed("<", ir.Constant(lanes, list(range(first, first + t.vec))),
                                               splat(b, lanes, width))
                        part = b.gep(src, [_c(first)], inbounds=True, source_etype=sc)
                        v = b.call(masked_load(fn.module, vty), [part, ir.Constant(I32, t.elem_bytes), inside, zeros])
                        b.store(v, b.gep(dst, [_c(first)], inbounds=True, source_etype=sc), align=t.elem_bytes)


def _pack_b_columns(fn, b, t: Tiling, pack, bmat, ldb, bcol, k0, kc, jc, nc) -> None:
    loops = _Loops(fn, b)
    sc = t.scalar
    with loops.range(nc, "tj", step=t.nr) as pj:
        width = _smin(b, _c(t.nr), b.sub(nc, pj))
        panel = b.gep(pack, [b.mul(pj, kc)], inbounds=True, source_etype=sc)
        with loops.range(_c(t.nr), "tc") as j:
            inside = b.icmp_signed("<", j, width)
            safe = b.select(inside, j, _c(0))     # columns past the edge read column 0 (and store zeros)
            column = b.gep(bmat, [b.add(b.mul(b.add(b.add(jc, pj), safe), bcol), b.mul(k0, ldb))], source_etype=sc)
            with loops.range(kc, "tk", vectorize=True) as k:
                v = b.load(b.gep(column, [b.mul(k, ldb)], source_etype=sc), typ=sc)
                b.store(b.select(inside, v, ir.Constant(sc, 0.0)),
                        b.gep(panel, [b.add(b.mul(k, _c(t.nr)), j)], inbounds=True, source_etype=sc))


class _if_else:
    def __init__(self, fn, b, cond):
        self.fn, self.b, self.cond = fn, b, cond

    def __enter__(self):
        fn, b = self.fn, self.b
        self.then_block = fn.append_basic_block("then")
        self.else_block = fn.append_basic_block("else")
        self.done = fn.append_basic_block("endif")
        b.cbranch(self.cond, self.then_block, self.else_block)
        return _Arm(b, self.then_block, self.done), _Arm(b, self.else_block, self.done)

    def __exit__(self, *exc):
        self.b.position_at_end(self.done)
        return False


class _Arm:
    def __init__(self, b, block, done):
        self.b, self.block, self.done = b, block, done

    def __enter__(self):
        self.b.position_at_end(self.block)

    def __exit__(self, *exc):
        self.b.branch(self.done)
        return False


def _emit_parallel(module, name, t: Tiling, driver, mode) -> ir.Function:
    """gemm_parallel(M, N, taps, run, table, B, ldb, bcol, C, ldc, pack, region, threads, hook):
    the driver over column parts, one per thread (aligned to NR), through the parallel-for hook
    when it is set."""
    args_ty = list(_PARALLEL_TYPE.args[:-2])
    ctx_ty = ir.LiteralStructType(args_ty + [I64])  # + number of parts
    task = _emit_task(module, name + ".task", t, driver, ctx_ty, mode)
    fn = ir.Function(module, _PARALLEL_TYPE, name=name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    n, wanted, runner = fn.args[1], fn.args[-2], fn.args[-1]
    panels = b.sdiv(b.add(n, _c(t.nr - 1)), _c(t.nr))
    parts = _smin(b, _smin(b, wanted, _c(MAX_THREADS)), panels)
    parts = b.select(b.icmp_signed("<", parts, _c(1)), _c(1), parts)
    ctx = b.alloca(ctx_ty, name="ctx")
    for k, arg in enumerate(list(fn.args[:-2]) + [parts]):
        b.store(arg, b.gep(ctx, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), k)]))
    serial = b.or_(b.icmp_signed("<=", parts, _c(1)), b.icmp_unsigned("==", runner, ir.Constant(PTR, None)))
    with _if_else(fn, b, serial) as (then, otherwise):
        with then:
            loops = _Loops(fn, b)
            with loops.range(parts, "part") as p:
                b.call(task, [ctx, p])
        with otherwise:
            b.call(IndirectCallee(runner, HOOK_TYPE), [task, ctx, parts])
    b.ret_void()
    return fn


class IndirectCallee:
    """A call through a function pointer: llvmlite's call() reads the callee's function_type,
    which an opaque pointer value lacks."""

    def __init__(self, pointer, fty):
        self.pointer, self.function_type = pointer, fty

    def __getattr__(self, name):
        return getattr(self.pointer, name)


def _emit_task(module, name, t: Tiling, driver, ctx_ty, mode) -> ir.Function:
    """task(ctx, part): the driver on part `part` of the columns, with its own packing region."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64]), name=name)
    fn.linkage = "internal"
    ctx, part = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fields = [b.load(b.gep(ctx, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), k)],
                           source_etype=ctx_ty), typ=ty) for k, ty in enumerate(ctx_ty.elements)]
    m, n, taps, run, table, bmat, ldb, bcol, cmat, ldc, pack, region, parts = fields
    panels = b.sdiv(b.add(n, _c(t.nr - 1)), _c(t.nr))
    per_part = b.sdiv(b.add(panels, b.sub(parts, _c(1))), parts)
    n0 = _smin(b, b.mul(b.mul(part, per_part), _c(t.nr)), n)
    n1 = _smin(b, b.add(n0, b.mul(per_part, _c(t.nr))), n)
    mine = b.gep(pack, [b.mul(part, region)], source_etype=ir.IntType(8))
    saved = float_mode.enter(b, b, mode)   # a worker thread runs in the entry's float mode too
    b.call(driver, [m, n, taps, run, table, bmat, ldb, bcol, cmat, ldc, mine, n0, n1])
    float_mode.leave(b, saved)
    b.ret_void()
    return fn
