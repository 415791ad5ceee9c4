"""The micro-kernels of gemm.py: one MR x NR tile of C held in vector registers.

Per k the kernel loads one row of the packed B panel (NR / VEC vectors), broadcasts MR elements
of A and issues MR * NR / VEC fused multiply-adds. Two ways to reach A:

* `rows` kernel: A through MR row pointers per tap (an indirection table, gemm.py): no copy,
  right for small products and convolutions' window positions; the accumulators stay in
  registers across taps.
* `packed` kernel: A packed by the driver into a micro-panel, element (i, k) at [k * MR + i]:
  contiguous reads whatever A's row stride (a stride of 4 KiB puts every row in one L1 set),
  for products large enough that A is reused across many column panels.

The tile is then stored into C: whole vectors when it is a full tile, masked loads and stores
(llvm.masked.*: vmaskmov on AVX2, mask registers on AVX-512) on the edges of C.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from .types import F32, I1, I64, PTR

VOID = ir.VoidType()
I32 = ir.IntType(32)


def c64(v: int):
    return ir.Constant(I64, int(v))


@dataclass(frozen=True)
class Tiling:
    """Register and cache blocking for one element type and vector width."""
    scalar: ir.Type
    vec: int        # lanes per vector register
    mr: int         # rows of a micro-tile
    nr: int         # columns of a micro-tile (a multiple of vec)
    kc: int         # depth of a K block (the B micro-panel kc x nr stays in L1)
    mc: int         # rows of a row block (its A rows stay in L2; a multiple of mr)
    nc: int         # columns of a column block (the packed B block stays in L2/L3)

    @property
    def elem_bytes(self) -> int:
        return 4 if self.scalar == F32 else 8

    @property
    def suffix(self) -> str:
        return "f32" if self.scalar == F32 else "f64"

    @property
    def nvec(self) -> int:
        return self.nr // self.vec

    def pack_b_bytes(self, n: int, k: int) -> int:
        """Packed-B bytes for one column part of a product with n columns and depth k."""
        panels = -(-min(n, self.nc) // self.nr)
        return panels * self.nr * min(k, self.kc) * self.elem_bytes

    def pack_a_bytes(self, k: int) -> int:
        """Packed-A bytes: one row block of MC rows, K-block deep."""
        return self.mc * min(k, self.kc) * self.elem_bytes


def _intrinsic(module: ir.Module, name: str, fty: ir.FunctionType) -> ir.Function:
    # declare_intrinsic cannot declare vector intrinsics; a declaration by name works.
    found = module.globals.get(name)
    return found if found is not None else ir.Function(module, fty, name=name)


def _vector_name(vty: ir.VectorType) -> str:
    return f"v{vty.count}{'f32' if vty.element == F32 else 'f64'}"


def _fma(module: ir.Module, vty: ir.VectorType) -> ir.Function:
    return _intrinsic(module, f"llvm.fma.{_vector_name(vty)}", ir.FunctionType(vty, [vty, vty, vty]))


def masked_load(module: ir.Module, vty: ir.VectorType) -> ir.Function:
    mask = ir.VectorType(I1, vty.count)
    return _intrinsic(module, f"llvm.masked.load.{_vector_name(vty)}.p0",
                      ir.FunctionType(vty, [PTR, I32, mask, vty]))


def _masked_store(module: ir.Module, vty: ir.VectorType) -> ir.Function:
    mask = ir.VectorType(I1, vty.count)
    return _intrinsic(module, f"llvm.masked.store.{_vector_name(vty)}.p0",
                      ir.FunctionType(VOID, [vty, PTR, I32, mask]))


def _add_incoming(phis, values, block) -> None:
    """phis[i][j] receives values[i][j] from block (the micro-tile's accumulators)."""
    for phi_row, value_row in zip(phis, values):
        for phi, value in zip(phi_row, value_row):
            phi.add_incoming(value, block)


def splat(b: ir.IRBuilder, vty: ir.VectorType, scalar):
    undef = ir.Constant(vty, ir.Undefined)
    mask = ir.Constant(ir.VectorType(I32, vty.count), [0] * vty.count)
    return b.shuffle_vector(b.insert_element(undef, scalar, ir.Constant(I32, 0)), undef, mask)


def prefetch_tile(b: ir.IRBuilder, t: Tiling, c, ldc) -> None:
    """Ask for C's tile before the k loop: its update at the end then hits the cache."""
    prefetch = _intrinsic(b.module, "llvm.prefetch.p0", ir.FunctionType(VOID, [PTR, I32, I32, I32]))
    row_bytes = t.nr * t.elem_bytes
    for i in range(t.mr):
        row = b.gep(c, [b.mul(c64(i), ldc)], inbounds=True, source_etype=t.scalar)
        for offset in range(0, row_bytes, 64):
            p = b.gep(row, [c64(offset)], source_etype=ir.IntType(8))
            b.call(prefetch, [p, ir.Constant(I32, 1), ir.Constant(I32, 3), ir.Constant(I32, 1)])


def _k_loop(fn, b: ir.IRBuilder, t: Tiling, count, start_accs, a_element, b_row):
    """for k < count: acc[i][j] += A(i, k) * B(k, j-th vector); returns the final accumulators
    (valid in the block the builder is left in). a_element(k, i) and b_row(k) give pointers."""
    vty = ir.VectorType(t.scalar, t.vec)
    fma = _fma(fn.module, vty)
    before = b.block
    loop, after = fn.append_basic_block("k.loop"), fn.append_basic_block("k.done")
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(I64, "k")
    k.add_incoming(c64(0), before)
    accs = [[b.phi(vty, f"acc{i}_{j}") for j in range(t.nvec)] for i in range(t.mr)]
    _add_incoming(accs, start_accs, before)
    row = b_row(k)
    bv = [b.load(b.gep(row, [c64(j * t.vec)], inbounds=True, source_etype=t.scalar), typ=vty,
                 align=t.elem_bytes) for j in range(t.nvec)]   # B in place (ldp = ldb) need not be aligned
    new = []
    for i in range(t.mr):
        a_i = splat(b, vty, b.load(a_element(k, i), typ=t.scalar))
        new.append([b.call(fma, [a_i, bv[j], accs[i][j]]) for j in range(t.nvec)])
    next_k = b.add(k, c64(1), flags=["nuw", "nsw"])
    k.add_incoming(next_k, b.block)
    _add_incoming(accs, new, b.block)
    b.cbranch(b.icmp_signed("<", next_k, count), loop, after)
    b.position_at_end(after)
    return new


def _new_kernel(module: ir.Module, t: Tiling, name: str, counts: int) -> ir.Function:
    """A kernel taking `counts` i64 loop counts, then (A, B panel, C, ldc, m_valid, n_valid,
    accumulate, ldp); A, B and C do not alias. Row k of the B panel is at panel + k * ldp: NR for
    a packed panel, ldb for NR columns of a row-major B read where it lies."""
    fty = ir.FunctionType(VOID, [I64] * counts + [PTR, PTR, PTR, I64, I64, I64, I1, I64])
    fn = ir.Function(module, fty, name=f"{name}.{t.suffix}")
    fn.linkage = "internal"
    for arg in fn.args[counts:counts + 3]:
        arg.add_attribute("noalias")
    return fn


def emit_rows_kernel(module: ir.Module, t: Tiling) -> ir.Function:
    """ukernel(ntaps, kc, rows, panel, c, ldc, m_valid, n_valid, accumulate, ldp):
    C[0:m_valid, 0:n_valid] (+)= sum over taps u < ntaps and k < kc of
    rows[u * MR + i][k] * panel[(u * kc + k) * ldp + j]: the accumulators stay in
    registers across taps (a convolution's window positions), C is updated once."""
    fn = _new_kernel(module, t, "hlo.gemm_ukernel", 2)
    ntaps, kc, rows, pb, c, ldc, mv, nv, accumulate, ldp = fn.args
    entry, tap_loop, tap_end = (fn.append_basic_block(n) for n in ("entry", "tap", "tap_end"))
    b = ir.IRBuilder(entry)
    vty = ir.VectorType(t.scalar, t.vec)
    zero = ir.Constant(vty, [ir.Constant(t.scalar, 0.0)] * t.vec)
    b.branch(tap_loop)

    b.position_at_end(tap_loop)   # per tap: its MR row pointers and packed rows
    u = b.phi(I64, "u")
    u.add_incoming(c64(0), entry)
    outer = [[b.phi(vty, f"tacc{i}_{j}") for j in range(t.nvec)] for i in range(t.mr)]
    _add_incoming(outer, [[zero] * t.nvec] * t.mr, entry)
    first_row = b.mul(u, c64(t.mr))
    a_ptrs = [b.load(b.gep(rows, [b.add(first_row, c64(i))], source_etype=PTR), typ=PTR) for i in range(t.mr)]
    panel = b.gep(pb, [b.mul(b.mul(u, kc), ldp)], inbounds=True, source_etype=t.scalar)
    new = _k_loop(fn, b, t, kc, outer,
                  lambda k, i: b.gep(a_ptrs[i], [k], inbounds=True, source_etype=t.scalar),
                  lambda k: b.gep(panel, [b.mul(k, ldp)], inbounds=True, source_etype=t.scalar))
    b.branch(tap_end)

    b.position_at_end(tap_end)
    next_u = b.add(u, c64(1), flags=["nuw", "nsw"])
    u.add_incoming(next_u, tap_end)
    _add_incoming(outer, new, tap_end)
    done = fn.append_basic_block("done")
    b.cbranch(b.icmp_signed("<", next_u, ntaps), tap_loop, done)
    b.position_at_end(done)
    store_tile(fn, b, t, new, c, ldc, mv, nv, accumulate)
    b.ret_void()
    return fn


def emit_packed_kernel(module: ir.Module, t: Tiling) -> ir.Function:
    """ukernel_packed(depth, packed_a, panel, c, ldc, m_valid, n_valid, accumulate, ldp):
    C[0:m_valid, 0:n_valid] (+)= sum over k < depth of packed_a[k * MR + i] * panel[k * ldp + j]."""
    fn = _new_kernel(module, t, "hlo.gemm_ukernel_packed", 1)
    depth, pa, pb, c, ldc, mv, nv, accumulate, ldp = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    vty = ir.VectorType(t.scalar, t.vec)
    zero = ir.Constant(vty, [ir.Constant(t.scalar, 0.0)] * t.vec)
    prefetch_tile(b, t, c, ldc)
    new = _k_loop(fn, b, t, depth, [[zero] * t.nvec] * t.mr,
                  lambda k, i: b.gep(pa, [b.add(b.mul(k, c64(t.mr)), c64(i))], inbounds=True, source_etype=t.scalar),
                  lambda k: b.gep(pb, [b.mul(k, ldp)], inbounds=True, source_etype=t.scalar))
    store_tile(fn, b, t, new, c, ldc, mv, nv, accumulate)
    b.ret_void()
    return fn


def store_tile(fn, b: ir.IRBuilder, t: Tiling, accs, c, ldc, mv, nv, accumulate) -> None:
    """C[i, j] (+)= accs for i < m_valid, j < n_valid: whole vectors for a full tile, masked
    vectors on the edges of C."""
    vty = ir.VectorType(t.scalar, t.vec)
    full_block, edge_block, exit_block = (fn.append_basic_block(n) for n in ("full", "edge", "exit"))
    full = b.and_(b.icmp_signed("==", mv, c64(t.mr)), b.icmp_signed("==", nv, c64(t.nr)))
    b.cbranch(full, full_block, edge_block)

    b.position_at_end(full_block)
    for i in range(t.mr):
        row = b.gep(c, [b.mul(c64(i), ldc)], inbounds=True, source_etype=t.scalar)
        for j in range(t.nvec):
            p = b.gep(row, [c64(j * t.vec)], inbounds=True, source_etype=t.scalar)
            old = b.load(p, typ=vty, align=t.elem_bytes)
            b.store(b.select(accumulate, b.fadd(old, accs[i][j]), accs[i][j]), p, align=t.elem_bytes)
    b.branch(exit_block)

    b.position_at_end(edge_block)
    load, store = masked_load(fn.module, vty), _masked_store(fn.module, vty)
    lanes = ir.Constant(ir.VectorType(I64, t.vec), list(range(t.vec)))
    masks = [b.icmp_signed("<", lanes, splat(b, ir.VectorType(I64, t.vec), b.sub(nv, c64(j * t.vec))))
             for j in range(t.nvec)]
    align = ir.Constant(I32, t.elem_bytes)
    zero = ir.Constant(vty, [ir.Constant(t.scalar, 0.0)] * t.vec)
    for i in range(t.mr):
        row_block, next_block = fn.append_basic_block(f"edge.row{i}"), fn.append_basic_block(f"edge.next{i}")
        b.cbranch(b.icmp_signed("<", c64(i), mv), row_block, next_block)
        b.position_at_end(row_block)
        row = b.gep(c, [b.mul(c64(i), ldc)], inbounds=True, source_etype=t.scalar)
        for j in range(t.nvec):
            p = b.gep(row, [c64(j * t.vec)], inbounds=True, source_etype=t.scalar)
            old = b.call(load, [p, align, masks[j], zero])
            b.call(store, [b.select(accumulate, b.fadd(old, accs[i][j]), accs[i][j]), p, align, masks[j]])
        b.branch(next_block)
        b.position_at_end(next_block)
    b.branch(exit_block)
    b.position_at_end(exit_block)
