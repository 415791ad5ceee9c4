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
NR-wide panels (zero-padded); row blocks of MC; then MR x NR micro-tiles. The
micro-kernel keeps MR x NR accumulators in vector registers across the taps of a K
block and issues MR * NR / VEC fused multiply-adds per k for MR broadcast loads of A
and NR / VEC vector loads of packed B. Tiles on the edges of C are computed whole into
a stack tile and only their valid part is written.

Threads: `gemm_parallel` splits the columns of C into as many parts as the module's
`<entry>_num_threads` global says (1 unless the caller sets it), and runs them through
the `<entry>_parallel_for` hook (NULL: run serially). The JIT points the hook at a
pthread-based runner (parallel.py); an AOT user may set it to a thread pool's
parallel-for (docs/AOT.md). Each part packs B into its own region of the scratch.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .types import F32, I1, I64, PTR

VOID = ir.VoidType()
HOOK_TYPE = ir.FunctionType(VOID, [PTR, PTR, I64])   # parallel_for(task, ctx, parts); task(ctx, part)
MAX_THREADS = 4       # packing regions reserved for this many column parts
MR, KC, MC, NC = 8, 256, 128, 2048   # register rows, and the K, row and column block sizes
PARALLEL_FLOPS = 4e6  # below this a multiply runs on the calling thread only


def _c(v: int):
    return ir.Constant(I64, int(v))


@dataclass(frozen=True)
class Tiling:
    """Register and cache blocking for one element type and vector width."""
    scalar: ir.Type
    vec: int        # lanes per vector register
    mr: int         # rows of a micro-tile
    nr: int         # columns of a micro-tile (a multiple of vec)
    kc: int         # depth of a K block (the B micro-panel kc x nr stays in L1)
    mc: int         # rows of a row block (its A rows stay in L2)
    nc: int         # columns of a column block (the packed B block stays in L2/L3)

    @property
    def elem_bytes(self) -> int:
        return 4 if self.scalar == F32 else 8

    def pack_bytes(self, n: int, k: int) -> int:
        """Packed-B bytes for one column part of a product with n columns and depth k."""
        panels = -(-min(n, self.nc) // self.nr)
        return panels * self.nr * min(k, self.kc) * self.elem_bytes


MAX_NR_BYTES = 64 * 2     # two 512-bit vectors: the widest micro-tile row of any target


def pack_bound(elem_bytes: int, n: int, k: int, parts: int) -> int:
    """Packed-B bytes for `parts` column parts on any target (buffer assignment runs before the
    target's tiling is known)."""
    nr = MAX_NR_BYTES // elem_bytes
    per_part = -(-min(n, NC) // nr) * nr * min(k, KC) * elem_bytes
    return parts * _round64(per_part)


def tiling_for(scalar: ir.Type, vector_bits: int) -> Tiling:
    lanes = max(vector_bits // (32 if scalar == F32 else 64), 1)
    return Tiling(scalar, lanes, mr=MR, nr=2 * lanes, kc=KC, mc=MC, nc=NC)


def vector_bits_of(features: str) -> int:
    """The widest vector register the feature string enables (128 on any other target)."""
    flags = set(features.split(","))
    if "+avx512f" in flags:
        return 512
    if "+avx" in flags or "+avx2" in flags:
        return 256
    return 128


class GemmLibrary:
    """The multiply functions of one LLVM module, emitted on first use per element type."""

    def __init__(self, module: ir.Module, entry_name: str, vector_bits: int):
        self.module = module
        self.vector_bits = vector_bits
        self._drivers: dict = {}
        self._kernels: dict = {}
        self.threads = _global(module, f"{entry_name}_num_threads", I64, 1)
        self.hook = _global(module, f"{entry_name}_parallel_for", PTR, None)
        self._task = None

    def tiling(self, scalar: ir.Type) -> Tiling:
        return tiling_for(scalar, self.vector_bits)

    # ---- the call a lowering makes
    def call(self, b: ir.IRBuilder, scalar: ir.Type, m, n, taps, run, table, bmat, ldb, cmat, ldc, pack,
             flops: float) -> None:
        """C (m x n, row stride ldc) = A (through table: taps runs of `run`) x B (row stride ldb).

        m may be a run-time i64 value; flops is then an estimate (it picks the threaded path).
        pack: 64-byte aligned scratch of pack_bound(bytes, n, taps * run, MAX_THREADS or 1 when
        flops < PARALLEL_FLOPS)."""
        t = self.tiling(scalar)
        rows = m if isinstance(m, ir.Value) else _c(m)
        args = [rows, _c(n), _c(taps), _c(run), table, bmat, _c(ldb), cmat, _c(ldc)]
        if flops >= PARALLEL_FLOPS:
            region = _round64(t.pack_bytes(n, taps * run))
            b.call(self._parallel(scalar), args + [pack, _c(region)])
        else:
            b.call(self._driver(scalar), args + [pack, _c(0), _c(n)])

    # ---- functions
    def _kernel(self, scalar: ir.Type) -> ir.Function:
        if scalar not in self._kernels:
            self._kernels[scalar] = _emit_micro_kernel(self.module, self.tiling(scalar))
        return self._kernels[scalar]

    def _driver(self, scalar: ir.Type) -> ir.Function:
        if scalar not in self._drivers:
            self._drivers[scalar] = _emit_driver(self.module, self.tiling(scalar), self._kernel(scalar))
        return self._drivers[scalar]

    def _parallel(self, scalar: ir.Type) -> ir.Function:
        name = f"hlo.gemm_parallel.{_suffix(scalar)}"
        found = self.module.globals.get(name)
        if found is not None:
            return found
        return _emit_parallel(self.module, name, self.tiling(scalar), self._driver(scalar), self.threads, self.hook)


def _round64(n: int) -> int:
    return (n + 63) // 64 * 64


def _suffix(scalar: ir.Type) -> str:
    return "f32" if scalar == F32 else "f64"


def _global(module: ir.Module, name: str, ty: ir.Type, value):
    g = ir.GlobalVariable(module, ty, name=name)
    g.initializer = ir.Constant(ty, value)
    g.align = 8
    return g


def _fma(module: ir.Module, vty: ir.VectorType) -> ir.Function:
    # declare_intrinsic cannot declare vector intrinsics; a declaration by name works.
    name = f"llvm.fma.v{vty.count}{'f32' if vty.element == F32 else 'f64'}"
    found = module.globals.get(name)
    if found is None:
        found = ir.Function(module, ir.FunctionType(vty, [vty, vty, vty]), name=name)
    return found


def _emit_micro_kernel(module: ir.Module, t: Tiling) -> ir.Function:
    """ukernel(ntaps, kc, rows, packed_b, c, ldc, m_valid, n_valid, accumulate):
    C[0:m_valid, 0:n_valid] (+)= sum over taps u < ntaps and k < kc of
    rows[u * MR + i][k] * packed_b[(u * kc + k) * NR + j]: the accumulators stay in
    registers across taps (a convolution's window positions), C is updated once."""
    vty = ir.VectorType(t.scalar, t.vec)
    fty = ir.FunctionType(VOID, [I64, I64, PTR, PTR, PTR, I64, I64, I64, I1])
    fn = ir.Function(module, fty, name=f"hlo.gemm_ukernel.{_suffix(t.scalar)}")
    fn.linkage = "internal"
    ntaps, kc, rows, pb, c, ldc, mv, nv, accumulate = fn.args
    for arg in (rows, pb, c):
        arg.add_attribute("noalias")
    fma = _fma(module, vty)
    entry, tap_loop, loop, tap_end, done = (fn.append_basic_block(n) for n in
                                            ("entry", "tap", "loop", "tap_end", "done"))
    b = ir.IRBuilder(entry)
    zero = ir.Constant(vty, [ir.Constant(t.scalar, 0.0)] * t.vec)
    nvec = t.nr // t.vec
    b.branch(tap_loop)

    b.position_at_end(tap_loop)   # per tap: its MR row pointers and packed rows
    u = b.phi(I64, "u")
    u.add_incoming(_c(0), entry)
    outer = [[b.phi(vty, f"tacc{i}_{j}") for j in range(nvec)] for i in range(t.mr)]
    _add_incoming(outer, [[zero] * nvec] * t.mr, entry)
    first_row = b.mul(u, _c(t.mr))
    a_ptrs = [b.load(b.gep(rows, [b.add(first_row, _c(i))], source_etype=PTR), typ=PTR) for i in range(t.mr)]
    panel = b.gep(pb, [b.mul(b.mul(u, kc), _c(t.nr))], inbounds=True, source_etype=t.scalar)
    b.branch(loop)

    b.position_at_end(loop)
    k = b.phi(I64, "k")
    k.add_incoming(_c(0), tap_loop)
    accs = [[b.phi(vty, f"acc{i}_{j}") for j in range(nvec)] for i in range(t.mr)]
    _add_incoming(accs, outer, tap_loop)
    base = b.mul(k, _c(t.nr))
    bv = []
    for j in range(nvec):
        p = b.gep(panel, [b.add(base, _c(j * t.vec))], inbounds=True, source_etype=t.scalar)
        bv.append(b.load(p, typ=vty, align=t.elem_bytes * t.vec))
    undef = ir.Constant(vty, ir.Undefined)
    mask = ir.Constant(ir.VectorType(ir.IntType(32), t.vec), [0] * t.vec)
    new = []
    for i in range(t.mr):
        a = b.load(b.gep(a_ptrs[i], [k], inbounds=True, source_etype=t.scalar), typ=t.scalar)
        splat = b.shuffle_vector(b.insert_element(undef, a, ir.Constant(ir.IntType(32), 0)), undef, mask)
        new.append([b.call(fma, [splat, bv[j], accs[i][j]]) for j in range(nvec)])
    next_k = b.add(k, _c(1), flags=["nuw", "nsw"])
    body_end = b.block
    k.add_incoming(next_k, body_end)
    _add_incoming(accs, new, body_end)
    b.cbranch(b.icmp_signed("<", next_k, kc), loop, tap_end)

    b.position_at_end(tap_end)
    next_u = b.add(u, _c(1), flags=["nuw", "nsw"])
    u.add_incoming(next_u, tap_end)
    _add_incoming(outer, new, tap_end)
    b.cbranch(b.icmp_signed("<", next_u, ntaps), tap_loop, done)

    b.position_at_end(done)
    full_block, edge_block, exit_block = (fn.append_basic_block(n) for n in ("full", "edge", "exit"))
    full = b.and_(b.icmp_signed("==", mv, _c(t.mr)), b.icmp_signed("==", nv, _c(t.nr)))
    b.cbranch(full, full_block, edge_block)

    b.position_at_end(full_block)  # whole tile: vector stores into C's rows
    for i in range(t.mr):
        row = b.gep(c, [b.mul(_c(i), ldc)], inbounds=True, source_etype=t.scalar)
        for j in range(nvec):
            p = b.gep(row, [_c(j * t.vec)], inbounds=True, source_etype=t.scalar)
            old = b.load(p, typ=vty, align=t.elem_bytes)
            value = b.select(accumulate, b.fadd(old, new[i][j]), new[i][j])
            b.store(value, p, align=t.elem_bytes)
    b.branch(exit_block)

    b.position_at_end(edge_block)  # an edge tile: through a stack tile, valid part only
    tile_ty = ir.ArrayType(vty, t.mr * nvec)
    tile = ir.IRBuilder(entry).alloca(tile_ty, name="tile")
    for i in range(t.mr):
        for j in range(nvec):
            b.store(new[i][j], b.gep(tile, [_c(0), _c(i * nvec + j)], inbounds=True))  # a typed alloca
    loops = _Loops(fn, b)
    with loops.range(mv, "ei") as i:
        with loops.range(nv, "ej") as j:
            slot = b.gep(tile, [_c(0), b.add(b.mul(i, _c(nvec)), b.sdiv(j, _c(t.vec)))], inbounds=True)
            v = b.extract_element(b.load(slot, typ=vty), b.srem(j, _c(t.vec)))
            dst = b.gep(c, [b.add(b.mul(i, ldc), j)], inbounds=True, source_etype=t.scalar)
            b.store(b.select(accumulate, b.fadd(b.load(dst, typ=t.scalar), v), v), dst)
    b.branch(exit_block)
    b.position_at_end(exit_block)
    b.ret_void()
    _move_allocas_first(entry)
    return fn


def _add_incoming(phis, values, block) -> None:
    """phis[i][j] receives values[i][j] from block (the micro-tile's accumulators)."""
    for phi_row, value_row in zip(phis, values):
        for phi, value in zip(phi_row, value_row):
            phi.add_incoming(value, block)


def _move_allocas_first(block: ir.Block) -> None:
    allocas = [i for i in block.instructions if isinstance(i, ir.AllocaInstr)]
    others = [i for i in block.instructions if not isinstance(i, ir.AllocaInstr)]
    block.instructions[:] = allocas + others


class _Loops:
    """Counted loops inside a hand-written function."""

    def __init__(self, fn: ir.Function, b: ir.IRBuilder):
        self.fn, self.b = fn, b

    def range(self, count, name: str, start=None, step: int = 1):
        return _Range(self, count, name, start, step)


class _Range:
    def __init__(self, loops: _Loops, count, name, start, step):
        self.loops, self.count, self.name, self.step = loops, count, name, step
        self.start = _c(0) if start is None else start

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
        b.branch(self.header)
        b.position_at_end(self.done)
        return False


def _ceil_div(b, x, y):
    return b.sdiv(b.add(x, b.sub(y, _c(1))), y)


def _smin(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _emit_driver(module: ir.Module, t: Tiling, kernel: ir.Function) -> ir.Function:
    """gemm(M, N, taps, run, table, B, ldb, C, ldc, pack, n0, n1): columns n0..n1 of C = A x B.

    K blocks: whole taps, as many as fit in KC, when a tap's run is shorter than KC (so the
    micro-kernel keeps its sums in registers across them); otherwise KC-long pieces of one tap."""
    fty = ir.FunctionType(VOID, [I64, I64, I64, I64, PTR, PTR, I64, PTR, I64, PTR, I64, I64])
    fn = ir.Function(module, fty, name=f"hlo.gemm.{_suffix(t.scalar)}")
    fn.linkage = "internal"
    m, n, taps, run, table, bmat, ldb, cmat, ldc, pack, n0, n1 = fn.args
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    loops = _Loops(fn, b)
    max_taps = max(t.kc, 1)
    rows_ty = ir.ArrayType(PTR, t.mr * max_taps)
    rows = b.alloca(rows_ty, name="rows")
    sc = t.scalar
    per_block = b.sdiv(_c(t.kc), run)
    per_block = b.select(b.icmp_signed("<", per_block, _c(1)), _c(1), per_block)   # taps per K block
    blocks = _ceil_div(b, taps, per_block)
    per_block = _ceil_div(b, taps, blocks)   # the same number in every block: 3+3+3 taps, not 4+4+1
    chunk = _smin(b, run, _c(t.kc))
    with loops.range(n1, "jc", start=n0, step=t.nc) as jc:
        nc = _smin(b, _c(t.nc), b.sub(n1, jc))
        with loops.range(taps, "tb", step=per_block) as t0:
            ntaps = _smin(b, per_block, b.sub(taps, t0))
            with loops.range(run, "pc", step=chunk) as pc:
                kc = _smin(b, chunk, b.sub(run, pc))
                depth = b.mul(ntaps, kc)
                _pack_b(fn, b, t, pack, bmat, ldb, b.add(b.mul(t0, run), pc), depth, jc, nc)
                first = b.and_(b.icmp_signed("==", t0, _c(0)), b.icmp_signed("==", pc, _c(0)))
                accumulate = b.not_(first)
                with loops.range(m, "ic", step=t.mc) as ic:
                    mc = _smin(b, _c(t.mc), b.sub(m, ic))
                    with loops.range(nc, "jr", step=t.nr) as jr:
                        nv = _smin(b, _c(t.nr), b.sub(nc, jr))
                        panel = b.gep(pack, [b.mul(jr, depth)], inbounds=True, source_etype=sc)
                        with loops.range(mc, "ir", step=t.mr) as ir_:
                            row0 = b.add(ic, ir_)
                            mv = _smin(b, _c(t.mr), b.sub(mc, ir_))
                            _fill_rows(fn, b, t, rows, table, taps, t0, ntaps, pc, row0, m)
                            c = b.gep(cmat, [b.add(b.mul(row0, ldc), b.add(jc, jr))], inbounds=True,
                                      source_etype=sc)
                            b.call(kernel, [ntaps, kc, rows, panel, c, ldc, mv, nv, accumulate])
    b.ret_void()
    return fn


def _fill_rows(fn, b, t: Tiling, rows, table, taps, t0, ntaps, pc, row0, m) -> None:
    """rows[u * MR + i] = table[(row0 + i) * taps + t0 + u] + pc (rows past the end repeat the
    last one: their sums are never stored)."""
    loops = _Loops(fn, b)
    with loops.range(ntaps, "fu") as u:
        for i in range(t.mr):
            r = _smin(b, b.add(row0, _c(i)), b.sub(m, _c(1)))
            slot = b.gep(table, [b.add(b.mul(r, taps), b.add(t0, u))], source_etype=PTR)
            a = b.gep(b.load(slot, typ=PTR), [pc], inbounds=True, source_etype=t.scalar)
            b.store(a, b.gep(rows, [_c(0), b.add(b.mul(u, _c(t.mr)), _c(i))]))


def _pack_b(fn, b, t: Tiling, pack, bmat, ldb, k0, kc, jc, nc) -> None:
    """pack[panel][k][0:NR] = B[k0 + k, jc + panel * NR + 0:NR], zeros past column nc."""
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
                with otherwise:
                    with loops.range(_c(t.nr), "pc") as j:
                        inside = b.icmp_signed("<", j, width)
                        safe = b.select(inside, j, _c(0))
                        v = b.load(b.gep(src, [safe], inbounds=True, source_etype=sc), typ=sc)
                        b.store(b.select(inside, v, ir.Constant(sc, 0.0)),
                                b.gep(dst, [j], inbounds=True, source_etype=sc))


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


def _emit_parallel(module, name, t: Tiling, driver, threads, hook) -> ir.Function:
    """gemm_parallel(M, N, taps, run, table, B, ldb, C, ldc, pack, region): the driver over
    column parts, one per thread (aligned to NR), through the parallel-for hook when set."""
    args_ty = [I64, I64, I64, I64, PTR, PTR, I64, PTR, I64, PTR, I64]
    ctx_ty = ir.LiteralStructType(args_ty + [I64])  # + number of parts
    task = _emit_task(module, name + ".task", t, driver, ctx_ty)
    fn = ir.Function(module, ir.FunctionType(VOID, args_ty), name=name)
    fn.linkage = "internal"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    n, wanted = fn.args[1], b.load(threads, typ=I64)
    panels = b.sdiv(b.add(n, _c(t.nr - 1)), _c(t.nr))
    parts = _smin(b, _smin(b, wanted, _c(MAX_THREADS)), panels)
    parts = b.select(b.icmp_signed("<", parts, _c(1)), _c(1), parts)
    ctx = b.alloca(ctx_ty, name="ctx")
    for k, arg in enumerate(list(fn.args) + [parts]):
        b.store(arg, b.gep(ctx, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), k)]))
    runner = b.load(hook, typ=PTR)
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


def _emit_task(module, name, t: Tiling, driver, ctx_ty) -> ir.Function:
    """task(ctx, part): the driver on part `part` of the columns, with its own packing region."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64]), name=name)
    fn.linkage = "internal"
    ctx, part = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    fields = [b.load(b.gep(ctx, [ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), k)],
                           source_etype=ctx_ty), typ=ty) for k, ty in enumerate(ctx_ty.elements)]
    m, n, taps, run, table, bmat, ldb, cmat, ldc, pack, region, parts = fields
    panels = b.sdiv(b.add(n, _c(t.nr - 1)), _c(t.nr))
    per_part = b.sdiv(b.add(panels, b.sub(parts, _c(1))), parts)
    n0 = _smin(b, b.mul(b.mul(part, per_part), _c(t.nr)), n)
    n1 = _smin(b, b.add(n0, b.mul(per_part, _c(t.nr))), n)
    mine = b.gep(pack, [b.mul(part, region)], source_etype=ir.IntType(8))
    b.call(driver, [m, n, taps, run, table, bmat, ldb, cmat, ldc, mine, n0, n1])
    b.ret_void()
    return fn
