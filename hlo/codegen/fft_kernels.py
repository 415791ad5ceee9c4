"""LLVM IR kernels of the FFT code generator (fft.py builds the plans that call them).

Every kernel is an internal function of the module, emitted once per module and per
variant (element type, radix, vector width, formats); its sizes and trip counts are run-time
arguments, so a plan's IR does not grow with the transform length. A kernel reads a source
and writes a different destination; each side is given as two pointers and a format:

    split   re[i] and im[i] in two arrays (the layout of the scratch buffers)
    inter   (re, im) pairs in one array (the layout of complex inputs and outputs)
    real    re[i] only: loads give im = 0, stores drop im

A format may also exchange re and im (swap; split data swaps by exchanging the two pointers
at the call instead) and scale stores by the kernel's `scale` argument. An inverse transform
is a forward one of swapped data (IDFT(x) = swap(DFT(swap(x)))), so every twiddle is a
forward one.

All arithmetic is explicit vector code: a kernel variant has a number of lanes L (chosen by
the plan, at most the target's vector width) and its innermost loop walks `runs` of L
consecutive elements, the last run overlapping the one before when L does not divide the
count (kernels are out of place, so recomputing an element is harmless). LLVM's loop
vectoriser thus has nothing left to do (its absence halves compile time); scalar (L = 1) run
loops carry a no-vectorise loop id. Floating-point operations allow contraction into FMAs
only (no reassociation, NaN and inf propagate).

Kernels (rows: `outer` independent transforms, each [n][H] with H interleaved columns):
  stage_loop     one Stockham (decimation-in-frequency, autosort) pass of radix p in 2, 3, 4,
                 5, 8: loops o / j (butterflies) / q (runs over S = (product of earlier
                 radices) x H contiguous elements, twiddles broadcast per butterfly).
  stage_vector   the same pass for S < L dividing L: runs over i = q + S j (contiguous loads,
                 an expanded twiddle table) and one shuffle per output part that interleaves
                 the p results in blocks of S (the first passes of an innermost axis).
  stage_generic  a pass of any odd radix p (a prime without a codelet) by symmetric pairs:
                 outputs t and p - t from sums and differences of inputs r and p - r,
                 (p-1)^2/2 complex multiply-adds per butterfly, runs over q.
  stage_generic_rows  the same for S = 1, runs over the outputs t (p x p table).
  pointwise      dst[o][j][h] = src[o][j][h] * table[j] for j < valid, 0 up to rows: copies,
                 format changes, truncation and Bluestein's chirp and kernel products.
  r2c_post       the spectrum of 2h real samples from the h-point FFT of their pairs.
  c2r_pre        the inverse of r2c_post (ignores the imaginary parts of bins 0 and h).
  hermitian      the full n-point spectrum of a real signal of odd length n from its n//2+1 bins.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from llvmlite import ir

from .function_context import new_loop_id
from .types import F32, I32, I64, PTR

VOID = ir.VoidType()
CONTRACT = ("contract",)         # allow fused multiply-adds; no reassociation, NaN/inf kept
CODELETS = (2, 3, 4, 5, 8)
NULL = ir.Constant(PTR, None)
NOINLINE = True


def c64(value: int) -> ir.Constant:
    return ir.Constant(I64, int(value))


def _const_value(v):
    return v.constant if isinstance(v, ir.Constant) and isinstance(v.type, ir.IntType) else None


def imul(b: ir.IRBuilder, x, y):
    """x * y for i64 values, folded when either is a constant 0 or 1."""
    cx, cy = _const_value(x), _const_value(y)
    if cx is not None and cy is not None:
        return c64(cx * cy)
    if cx == 0 or cy == 0:
        return c64(0)
    if cx == 1:
        return y
    if cy == 1:
        return x
    return b.mul(x, y)


def iadd(b: ir.IRBuilder, x, y):
    """x + y for i64 values, folded when either is a constant 0."""
    cx, cy = _const_value(x), _const_value(y)
    if cx is not None and cy is not None:
        return c64(cx + cy)
    if cx == 0:
        return y
    if cy == 0:
        return x
    return b.add(x, y)


def suffix(scalar: ir.Type) -> str:
    return "f32" if scalar == F32 else "f64"


def elem_bytes(scalar: ir.Type) -> int:
    return 4 if scalar == F32 else 8


@dataclass(frozen=True)
class Fmt:
    """How a kernel reads or writes one side (see the module docstring)."""
    layout: str            # "split" | "inter" | "real"
    swap: bool = False     # exchange re and im (inter/real only)
    scale: bool = False    # multiply stored values by the scale argument

    @property
    def tag(self) -> str:
        return self.layout[0] + ("x" if self.swap else "") + ("s" if self.scale else "")


SPLIT = Fmt("split")


# --------------------------------------------------------------------------- arithmetic

class Arith:
    """Real and complex (re, im tuple) arithmetic on a float scalar or vector type."""

    def __init__(self, b: ir.IRBuilder, ty: ir.Type):
        self.b, self.ty = b, ty
        self.home = b.block          # vector constants are splats emitted here (shorter IR text)
        self._consts = {}

    def const(self, x: float):
        if not isinstance(self.ty, ir.VectorType):
            return ir.Constant(self.ty, float(x))
        if float(x) not in self._consts:
            with self.b.goto_block(self.home):
                self._consts[float(x)] = splat(self.b, ir.Constant(self.ty.element, float(x)), self.ty.count)
        return self._consts[float(x)]

    def add(self, x, y):
        return self.b.fadd(x, y, flags=CONTRACT)

    def sub(self, x, y):
        return self.b.fsub(x, y, flags=CONTRACT)

    def mul(self, x, y):
        return self.b.fmul(x, y, flags=CONTRACT)

    def neg(self, x):
        return self.b.fneg(x, flags=CONTRACT)

    def cadd(self, x, y):
        return self.add(x[0], y[0]), self.add(x[1], y[1])

    def csub(self, x, y):
        return self.sub(x[0], y[0]), self.sub(x[1], y[1])

    def cmul(self, x, w):
        return (self.sub(self.mul(x[0], w[0]), self.mul(x[1], w[1])),
                self.add(self.mul(x[0], w[1]), self.mul(x[1], w[0])))

    def rmul(self, x, s):
        return self.mul(x[0], s), self.mul(x[1], s)

    def conj(self, x):
        return x[0], self.neg(x[1])

    def negi(self, x):      # x * -i
        return x[1], self.neg(x[0])


def dft(o: Arith, p: int, a: list) -> list:
    """Forward DFT of the p complex values a (p in CODELETS): y[t] = sum_r a[r] w_p^(r t)."""
    if p == 2:
        return [o.cadd(a[0], a[1]), o.csub(a[0], a[1])]
    if p == 3:
        s, d = o.cadd(a[1], a[2]), o.csub(a[1], a[2])
        m = o.csub(a[0], o.rmul(s, o.const(0.5)))
        n = o.rmul(o.negi(d), o.const(math.sqrt(3.0) / 2))
        return [o.cadd(a[0], s), o.cadd(m, n), o.csub(m, n)]
    if p == 4:
        t0, t1 = o.cadd(a[0], a[2]), o.csub(a[0], a[2])
        t2, t3 = o.cadd(a[1], a[3]), o.negi(o.csub(a[1], a[3]))
        return [o.cadd(t0, t2), o.cadd(t1, t3), o.csub(t0, t2), o.csub(t1, t3)]
    if p == 5:
        c1, c2 = o.const(math.cos(2 * math.pi / 5)), o.const(math.cos(4 * math.pi / 5))
        s1, s2 = o.const(math.sin(2 * math.pi / 5)), o.const(math.sin(4 * math.pi / 5))
        s14, d14 = o.cadd(a[1], a[4]), o.csub(a[1], a[4])
        s23, d23 = o.cadd(a[2], a[3]), o.csub(a[2], a[3])
        m1 = o.cadd(a[0], o.cadd(o.rmul(s14, c1), o.rmul(s23, c2)))
        m2 = o.cadd(a[0], o.cadd(o.rmul(s14, c2), o.rmul(s23, c1)))
        n1 = o.negi(o.cadd(o.rmul(d14, s1), o.rmul(d23, s2)))
        n2 = o.negi(o.csub(o.rmul(d14, s2), o.rmul(d23, s1)))
        return [o.cadd(a[0], o.cadd(s14, s23)), o.cadd(m1, n1), o.cadd(m2, n2), o.csub(m2, n2), o.csub(m1, n1)]
    if p == 8:
        h = o.const(math.sqrt(0.5))
        e = dft(o, 4, [o.cadd(a[r], a[r + 4]) for r in range(4)])
        c = [o.csub(a[r], a[r + 4]) for r in range(4)]
        c[1] = o.mul(o.add(c[1][0], c[1][1]), h), o.mul(o.sub(c[1][1], c[1][0]), h)      # * w8
        c[2] = o.negi(c[2])                                                               # * w8^2
        c[3] = o.mul(o.sub(c[3][1], c[3][0]), h), o.neg(o.mul(o.add(c[3][0], c[3][1]), h))  # * w8^3
        f = dft(o, 4, c)
        return [v for pair in zip(e, f) for v in pair]
    raise ValueError(f"no codelet for radix {p}")


# --------------------------------------------------------------------------- memory access

def _mask(values) -> ir.Constant:
    values = list(values)
    return ir.Constant(ir.VectorType(I32, len(values)), [ir.Constant(I32, v) for v in values])


class _ZeroMask(ir.Constant):
    """An all-zero shuffle mask, spelled zeroinitializer."""

    def __init__(self, lanes: int):
        super().__init__(ir.VectorType(I32, lanes), [ir.Constant(I32, 0)] * lanes)

    def _get_reference(self):
        return "zeroinitializer"


def splat(b: ir.IRBuilder, value, lanes: int):
    """A vector of `lanes` copies of a scalar (the scalar itself for one lane)."""
    if lanes == 1:
        return value
    one = ir.VectorType(value.type, 1)
    v = b.insert_element(ir.Constant(one, ir.Undefined), value, ir.Constant(I32, 0))
    return b.shuffle_vector(v, ir.Constant(one, ir.Undefined), _ZeroMask(lanes))


def reverse(b: ir.IRBuilder, v, lanes: int):
    return v if lanes == 1 else b.shuffle_vector(v, v, _mask(range(lanes - 1, -1, -1)))


def _memset(module: ir.Module) -> ir.Function:
    name = "llvm.memset.p0.i64"
    found = module.globals.get(name)
    if found is None:
        found = ir.Function(module, ir.FunctionType(VOID, [PTR, ir.IntType(8), I64, ir.IntType(1)]), name=name)
    return found


class Access:
    """Loads and stores of complex elements (scalars or runs of `lanes`) in one format."""

    def __init__(self, b: ir.IRBuilder, fmt: Fmt, p0, p1, scalar: ir.Type, scale=None):
        self.b, self.fmt, self.p0, self.p1, self.scalar, self.scale = b, fmt, p0, p1, scalar, scale
        self.align = elem_bytes(scalar)

    def _ty(self, lanes: int) -> ir.Type:
        return self.scalar if lanes == 1 else ir.VectorType(self.scalar, lanes)

    def _at(self, base, index):
        return self.b.gep(base, [index], inbounds=True, source_etype=self.scalar)

    def _ld(self, base, index, lanes):
        return self.b.load(self._at(base, index), typ=self._ty(lanes), align=self.align)

    def _st(self, value, base, index):
        self.b.store(value, self._at(base, index), align=self.align)

    def load(self, index, lanes: int = 1):
        """Elements index .. index + lanes - 1 as (re, im)."""
        b, layout = self.b, self.fmt.layout
        if layout == "split":
            re, im = self._ld(self.p0, index, lanes), self._ld(self.p1, index, lanes)
        elif layout == "inter":
            i2 = b.shl(index, c64(1))
            if lanes == 1:
                re, im = self._ld(self.p0, i2, 1), self._ld(self.p0, iadd(b, i2, c64(1)), 1)
            else:
                v = self._ld(self.p0, i2, 2 * lanes)
                re = b.shuffle_vector(v, v, _mask(range(0, 2 * lanes, 2)))
                im = b.shuffle_vector(v, v, _mask(range(1, 2 * lanes, 2)))
        else:
            re, im = self._ld(self.p0, index, lanes), Arith(b, self._ty(lanes)).const(0.0)
        return (im, re) if self.fmt.swap else (re, im)

    def load_reversed(self, last, lanes: int = 1):
        """Elements last, last - 1, ..., last - lanes + 1."""
        re, im = self.load(self.b.sub(last, c64(lanes - 1)) if lanes > 1 else last, lanes)
        return reverse(self.b, re, lanes), reverse(self.b, im, lanes)

    def store(self, index, value, lanes: int = 1) -> None:
        """Elements index .. index + lanes - 1 from (re, im)."""
        b, layout = self.b, self.fmt.layout
        re, im = value
        if self.fmt.scale:
            s = splat(b, self.scale, lanes)
            o = Arith(b, self._ty(lanes))
            re, im = o.mul(re, s), o.mul(im, s)
        if self.fmt.swap:
            re, im = im, re
        if layout == "split":
            self._st(re, self.p0, index)
            self._st(im, self.p1, index)
        elif layout == "inter":
            i2 = b.shl(index, c64(1))
            if lanes == 1:
                self._st(re, self.p0, i2)
                self._st(im, self.p0, iadd(b, i2, c64(1)))
            else:
                mask = [k // 2 + (k % 2) * lanes for k in range(2 * lanes)]
                self._st(b.shuffle_vector(re, im, _mask(mask)), self.p0, i2)
        else:
            self._st(re, self.p0, index)

    def zero(self, start, count) -> None:
        """Elements start .. start + count - 1 set to 0 (memset)."""
        b = self.b
        memset = _memset(b.module)
        scale = 2 if self.fmt.layout == "inter" else 1
        start, count = imul(b, start, c64(scale)), imul(b, count, c64(scale * self.align))
        for base in ((self.p0, self.p1) if self.fmt.layout == "split" else (self.p0,)):
            b.call(memset, [self._at(base, start), ir.Constant(ir.IntType(8), 0), count, ir.Constant(ir.IntType(1), 0)])


# --------------------------------------------------------------------------- control flow

def loop(b: ir.IRBuilder, start, stop, body, name: str = "i", guard: bool = True) -> None:
    """Emit `for i in range(start, stop): body(i)` (i64); guard=False when start < stop is known."""
    pre = b.block
    fn = pre.function
    head = fn.append_basic_block(f"{name}.loop")
    done = fn.append_basic_block(f"{name}.done")
    if guard:
        b.cbranch(b.icmp_signed("<", start, stop), head, done)
    else:
        b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name)
    i.add_incoming(start, pre)
    body(i)
    following = iadd(b, i, c64(1))
    i.add_incoming(following, b.block)
    b.cbranch(b.icmp_signed("<", following, stop), head, done)
    b.position_at_end(done)


def loop_carry(b: ir.IRBuilder, start, stop, inits: list, body, name: str = "r") -> list:
    """values = inits; for i in range(start, stop): values = body(i, values); return values.
    start < stop is required."""
    pre = b.block
    fn = pre.function
    head = fn.append_basic_block(f"{name}.loop")
    done = fn.append_basic_block(f"{name}.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, name)
    i.add_incoming(start, pre)
    carried = []
    for value in inits:
        phi = b.phi(value.type)
        phi.add_incoming(value, pre)
        carried.append(phi)
    new = list(body(i, carried))
    latch = b.block
    following = iadd(b, i, c64(1))
    i.add_incoming(following, latch)
    for phi, value in zip(carried, new):
        phi.add_incoming(value, latch)
    b.cbranch(b.icmp_signed("<", following, stop), head, done)
    b.position_at_end(done)
    return new


def vloop(b: ir.IRBuilder, count, lanes: int, body, name: str = "q") -> None:
    """body(q) for q = 0, lanes, 2 lanes, ... and a last run at count - lanes, which overlaps
    the one before when lanes does not divide count (the body must be idempotent: the kernels
    are out of place). Nothing runs when count < lanes. The select in the induction also keeps
    LLVM's loop vectoriser away (the body is already vector code)."""
    pre = b.block
    fn = pre.function
    head = fn.append_basic_block(f"{name}.loop")
    done = fn.append_basic_block(f"{name}.done")
    last = b.sub(count, c64(lanes))
    b.cbranch(b.icmp_signed(">=", last, c64(0)), head, done)
    b.position_at_end(head)
    q = b.phi(I64, name)
    q.add_incoming(c64(0), pre)
    body(q)
    following = iadd(b, q, c64(lanes))
    following = b.select(b.icmp_signed("<", following, last), following, last)
    q.add_incoming(following, b.block)
    branch = b.cbranch(b.icmp_signed("==", q, last), done, head)
    if lanes == 1:
        # a scalar run loop, too short to gain from vectorising
        branch.set_metadata("llvm.loop", new_loop_id(b.module, "llvm.loop.vectorize.enable", False))
    b.position_at_end(done)


def _function(module: ir.Module, name: str, args: list) -> tuple[ir.Function, ir.IRBuilder, bool]:
    """(function, builder at its entry, whether it still needs a body)."""
    found = module.globals.get(name)
    if found is not None:
        return found, None, False
    fn = ir.Function(module, ir.FunctionType(VOID, args), name=name)
    fn.linkage = "internal"
    if NOINLINE:
        fn.attributes.add("noinline")
    for arg in fn.args:
        if isinstance(arg.type, ir.PointerType):
            arg.add_attribute("noalias")
    return fn, ir.IRBuilder(fn.append_basic_block("entry")), True


def _common(scalar):
    return [PTR, PTR, PTR, PTR, scalar]     # src0, src1, dst0, dst1, scale


def _name(kind: str, scalar, fin: Fmt, fout: Fmt, *extra) -> str:
    parts = [f"hlo.fft.{kind}"] + [str(e) for e in extra] + [suffix(scalar), fin.tag + fout.tag]
    return ".".join(parts)


def _vty(scalar, lanes: int):
    return scalar if lanes == 1 else ir.VectorType(scalar, lanes)


def _scalar_load(b, scalar, table, index):
    return b.load(b.gep(table, [index], inbounds=True, source_etype=scalar), typ=scalar)


# --------------------------------------------------------------------------- Stockham passes

def stage_loop(module: ir.Module, p: int, lanes: int, scalar, fin: Fmt, fout: Fmt, twiddled: bool) -> ir.Function:
    """stage(src0, src1, dst0, dst1, scale, tw, m, S, outer, j0): for each row o < outer,
    butterfly j in [j0, m) and q < S (in runs of `lanes` <= S):
        y = DFT_p(src[q + S (j + m r)] for r < p);  dst[q + S (p j + t)] = y[t] w^(t j)
    with w = exp(-2 pi i / (p m)) from tw ([j][t-1] pairs; unused when not twiddled)."""
    name = _name("stage", scalar, fin, fout, f"r{p}", f"v{lanes}", "tw" if twiddled else "notw")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, I64, I64, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, tw, m, S, outer, j0 = fn.args
    o = Arith(b, _vty(scalar, lanes))
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    mS = imul(b, m, S)
    row = imul(b, mS, c64(p))
    pS = imul(b, S, c64(p))
    body, done = fn.append_basic_block("body"), fn.append_basic_block("done")
    b.cbranch(b.icmp_signed("<", j0, m), body, done)
    b.position_at_end(body)

    def per_row(r_o):
        base = imul(b, r_o, row)

        def per_butterfly(j):
            ws = []
            if twiddled:
                at = imul(b, j, c64(2 * (p - 1)))
                for t in range(1, p):
                    k = iadd(b, at, c64(2 * (t - 1)))
                    ws.append(tuple(splat(b, _scalar_load(b, scalar, tw, i), lanes) for i in (k, iadd(b, k, c64(1)))))
            first_in = iadd(b, base, imul(b, S, j))
            ins = [first_in] + [iadd(b, first_in, imul(b, mS, c64(r))) for r in range(1, p)]
            first_out = iadd(b, base, imul(b, pS, j))
            outs = [first_out] + [iadd(b, first_out, imul(b, S, c64(t))) for t in range(1, p)]

            def per_run(q):
                y = dft(o, p, [src.load(iadd(b, i, q), lanes) for i in ins])
                for t in range(p):
                    dst.store(iadd(b, outs[t], q), o.cmul(y[t], ws[t - 1]) if twiddled and t else y[t], lanes)
            vloop(b, S, lanes, per_run)
        loop(b, j0, m, per_butterfly, "j", guard=False)
    loop(b, c64(0), outer, per_row, "o")
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def interleave_blocks(b: ir.IRBuilder, vectors: list, lanes: int, S: int):
    """One vector of p * lanes elements: for each block of S lanes, the block of vectors[0],
    then of vectors[1], ... (the Stockham output order of a pass with stride S)."""
    p = len(vectors)
    width = 1
    while width < p:
        width *= 2
    vty = vectors[0].type
    parts = list(vectors) + [ir.Constant(vty, ir.Undefined)] * (width - p)
    size = lanes
    while len(parts) > 1:
        parts = [b.shuffle_vector(parts[k], parts[k + 1], _mask(range(2 * size))) for k in range(0, len(parts), 2)]
        size *= 2
    cat = parts[0]
    mask = []
    for pos in range(p * lanes):
        block, rest = divmod(pos, S * p)
        t, q = divmod(rest, S)
        mask.append(t * lanes + block * S + q)
    return b.shuffle_vector(cat, ir.Constant(cat.type, ir.Undefined), _mask(mask))


def pow2_floor(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def stage_vector(module: ir.Module, p: int, lanes: int, S: int, scalar, fin: Fmt, fout: Fmt) -> ir.Function:
    """vstage(src0, src1, dst0, dst1, scale, twr, twi, m, outer): stage_loop's pass for a
    stride S < lanes dividing lanes (and m S >= lanes), vectorised over i = q + S j in runs of
    `lanes` (the last one overlapping: it starts at m S - lanes, a multiple of S too); twr/twi
    is the expanded table w^(t (i div S)) as [t-1][i]. The p results of a run are stored as one
    vector of p * lanes elements, interleaved in blocks of S."""
    name = _name("vstage", scalar, fin, fout, f"r{p}", f"v{lanes}", f"s{S}")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, twr, twi, m, outer = fn.args
    o = Arith(b, ir.VectorType(scalar, lanes))
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    tws = Access(b, SPLIT, twr, twi, scalar)
    mS = imul(b, m, c64(S))
    row = imul(b, mS, c64(p))

    def per_row(r_o):
        base = imul(b, r_o, row)

        def per_run(i0):
            first = iadd(b, base, i0)
            y = dft(o, p, [src.load(iadd(b, first, imul(b, mS, c64(r))), lanes) for r in range(p)])
            for t in range(1, p):
                y[t] = o.cmul(y[t], tws.load(iadd(b, imul(b, mS, c64(t - 1)), i0), lanes))
            re = interleave_blocks(b, [v[0] for v in y], lanes, S)
            im = interleave_blocks(b, [v[1] for v in y], lanes, S)
            dst.store(iadd(b, base, imul(b, i0, c64(p))), (re, im), p * lanes)
        vloop(b, mS, lanes, per_run, "i")
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def _pair_sum(o: Arith, acc, w, a, c):
    """acc (A, B) + the pair r, p - r: A += re(w) (a + c), B += im(w) (a - c)."""
    (are, aim), (bre, bim) = acc
    s, d = o.cadd(a, c), o.csub(a, c)
    return ((o.add(are, o.mul(w[0], s[0])), o.add(aim, o.mul(w[0], s[1]))),
            (o.add(bre, o.mul(w[1], d[0])), o.add(bim, o.mul(w[1], d[1]))))


def stage_generic(module: ir.Module, lanes: int, scalar, fin: Fmt, fout: Fmt, twiddled: bool) -> ir.Function:
    """gstage(src0, src1, dst0, dst1, scale, twr, twi, wr, wi, p, m, S, outer): stage_loop's
    pass for an odd radix p (S >= lanes), times the twiddles [j][t] of twr/twi (p per butterfly,
    t = 0 included; unused when not twiddled). With a = the inputs and w = the p roots in wr/wi,
    outputs t and p - t come together from the pairs r, p - r:
        y[t], y[p-t] = A +- i B,  A = a[0] + sum_r re(w^(rt)) (a[r] + a[p-r]),  B = sum_r im(w^(rt)) (a[r] - a[p-r])
    for r in 1 .. (p-1)/2: (p-1)^2 / 2 complex multiply-adds per butterfly."""
    name = _name("gstage", scalar, fin, fout, f"v{lanes}", "tw" if twiddled else "notw")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, PTR, PTR, I64, I64, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, twr, twi, wr, wi, p, m, S, outer = fn.args
    o = Arith(b, _vty(scalar, lanes))
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    mS = imul(b, m, S)
    row = imul(b, mS, p)
    pS = imul(b, S, p)
    half = b.lshr(p, c64(1))
    zero = o.const(0.0)

    def per_row(r_o):
        base = imul(b, r_o, row)

        def per_butterfly(j):
            first_in = iadd(b, base, imul(b, S, j))
            first_out = iadd(b, base, imul(b, pS, j))

            def twiddle(y, t):
                if not twiddled:
                    return y
                k = iadd(b, imul(b, j, p), t)
                return o.cmul(y, tuple(splat(b, _scalar_load(b, scalar, tab, k), lanes) for tab in (twr, twi)))

            def dc(q):                              # y[0] = sum of the inputs
                def per_input(r, acc):
                    return o.cadd(acc, src.load(iadd(b, iadd(b, first_in, imul(b, mS, r)), q), lanes))
                y = loop_carry(b, c64(1), p, list(src.load(iadd(b, first_in, q), lanes)), per_input)
                dst.store(iadd(b, first_out, q), y, lanes)
            vloop(b, S, lanes, dc)

            def per_pair(t):
                def per_run(q):
                    a0 = src.load(iadd(b, first_in, q), lanes)

                    def per_input(r, carried):
                        k, are, aim, bre, bim = carried
                        k = iadd(b, k, t)
                        k = b.select(b.icmp_signed(">=", k, p), b.sub(k, p), k)
                        w = tuple(splat(b, _scalar_load(b, scalar, tab, k), lanes) for tab in (wr, wi))
                        a = src.load(iadd(b, iadd(b, first_in, imul(b, mS, r)), q), lanes)
                        c = src.load(iadd(b, iadd(b, first_in, imul(b, mS, b.sub(p, r))), q), lanes)
                        (are, aim), (bre, bim) = _pair_sum(o, ((are, aim), (bre, bim)), w, a, c)
                        return [k, are, aim, bre, bim]
                    _, are, aim, bre, bim = loop_carry(b, c64(1), iadd(b, half, c64(1)),
                                                       [c64(0), a0[0], a0[1], zero, zero], per_input)
                    y = (o.sub(are, bim), o.add(aim, bre))           # A + i B
                    z = (o.add(are, bim), o.sub(aim, bre))           # A - i B
                    dst.store(iadd(b, iadd(b, first_out, imul(b, S, t)), q), twiddle(y, t), lanes)
                    pt = b.sub(p, t)
                    dst.store(iadd(b, iadd(b, first_out, imul(b, S, pt)), q), twiddle(z, pt), lanes)
                vloop(b, S, lanes, per_run)
            loop(b, c64(1), iadd(b, half, c64(1)), per_pair, "t", False)
        loop(b, c64(0), m, per_butterfly, "j", False)
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def stage_generic_rows(module: ir.Module, lanes: int, scalar, fin: Fmt, fout: Fmt, twiddled: bool) -> ir.Function:
    """gstage1(src0, src1, dst0, dst1, scale, twr, twi, wr, wi, p, m, outer): stage_generic for
    S = 1, in runs of `lanes` <= p over the outputs t: wr/wi is the p x p matrix w_p^(r t) as
    [r][t]; y[t] = a[0] + sum_r re(w^(rt)) (a[r] + a[p-r]) + i im(w^(rt)) (a[r] - a[p-r])."""
    name = _name("gstage1", scalar, fin, fout, f"v{lanes}", "tw" if twiddled else "notw")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, PTR, PTR, I64, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, twr, twi, wr, wi, p, m, outer = fn.args
    o = Arith(b, _vty(scalar, lanes))
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    tws = Access(b, SPLIT, twr, twi, scalar)
    wa = Access(b, SPLIT, wr, wi, scalar)
    row = imul(b, m, p)
    half = b.lshr(p, c64(1))
    zero = o.const(0.0)

    def per_row(r_o):
        base = imul(b, r_o, row)

        def per_butterfly(j):
            out = iadd(b, base, imul(b, p, j))
            first_in = iadd(b, base, j)

            def per_run(t):
                first = [splat(b, v, lanes) for v in src.load(first_in)]

                def per_input(r, carried):
                    a = tuple(splat(b, v, lanes) for v in src.load(iadd(b, first_in, imul(b, m, r))))
                    c = tuple(splat(b, v, lanes) for v in src.load(iadd(b, first_in, imul(b, m, b.sub(p, r)))))
                    w = wa.load(iadd(b, imul(b, r, p), t), lanes)
                    (are, aim), (bre, bim) = _pair_sum(o, (carried[:2], carried[2:]), w, a, c)
                    return [are, aim, bre, bim]
                are, aim, bre, bim = loop_carry(b, c64(1), iadd(b, half, c64(1)), first + [zero, zero], per_input)
                y = (o.sub(are, bim), o.add(aim, bre))
                if twiddled:
                    y = o.cmul(y, tws.load(iadd(b, imul(b, j, p), t), lanes))
                dst.store(iadd(b, out, t), y, lanes)
            vloop(b, p, lanes, per_run, "t")
        loop(b, c64(0), m, per_butterfly, "j", False)
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


# --------------------------------------------------------------------------- element-wise passes

def pointwise(module: ir.Module, lanes: int, scalar, fin: Fmt, fout: Fmt, table: bool, flat: bool) -> ir.Function:
    """pointwise(src0, src1, dst0, dst1, scale, tr, ti, valid, rows, H, sos, dos, outer):
    dst[o dos + j H + h] = src[o sos + j H + h] (* table[j]) for j < valid, 0 for valid <= j < rows.
    flat: H is 1 (runs of `lanes` <= valid over j), else runs of `lanes` <= H over h."""
    name = _name("pointwise", scalar, fin, fout, f"v{lanes}", "tab" if table else "copy", "flat" if flat else "cols")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR] + [I64] * 6)
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, tr, ti, valid, rows, H, sos, dos, outer = fn.args
    o = Arith(b, _vty(scalar, lanes))
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    tab = Access(b, SPLIT, tr, ti, scalar)

    def per_row(r_o):
        sb, db = imul(b, r_o, sos), imul(b, r_o, dos)
        if flat:
            def per_run(j):
                v = src.load(iadd(b, sb, j), lanes)
                dst.store(iadd(b, db, j), o.cmul(v, tab.load(j, lanes)) if table else v, lanes)
            vloop(b, valid, lanes, per_run, "j")
        else:
            def per_line(j):
                w = tuple(splat(b, v, lanes) for v in tab.load(j)) if table else None
                sj, dj = iadd(b, sb, imul(b, j, H)), iadd(b, db, imul(b, j, H))

                def per_run(h):
                    v = src.load(iadd(b, sj, h), lanes)
                    dst.store(iadd(b, dj, h), o.cmul(v, w) if table else v, lanes)
                vloop(b, H, lanes, per_run, "h")
            loop(b, c64(0), valid, per_line, "j")
        dst.zero(iadd(b, db, imul(b, valid, H)), imul(b, b.sub(rows, valid), H))
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def r2c_post(module: ir.Module, lanes: int, scalar, fin: Fmt, fout: Fmt) -> ir.Function:
    """r2c(src0, src1, dst0, dst1, scale, cr, ci, h, outer): rows of h values Z (the FFT of
    z[k] = x[2k] + i x[2k+1]) to rows of h+1 values X[k] = (Z[k] + Z*[h-k])/2 + c[k] (Z[k] - Z*[h-k])
    with c[k] = -i w^k / 2, w = exp(-i pi / h); Z[h] is Z[0]. Runs of `lanes` <= h - 1."""
    name = _name("r2c", scalar, fin, fout, f"v{lanes}")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, cr, ci, h, outer = fn.args
    o1, o = Arith(b, scalar), Arith(b, _vty(scalar, lanes))
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    tab = Access(b, SPLIT, cr, ci, scalar)
    half = o.const(0.5)

    def per_row(r_o):
        sb = imul(b, r_o, h)
        db = imul(b, r_o, iadd(b, h, c64(1)))
        z0 = src.load(sb)
        dst.store(db, (o1.add(z0[0], z0[1]), o1.const(0.0)))
        dst.store(iadd(b, db, h), (o1.sub(z0[0], z0[1]), o1.const(0.0)))

        def per_run(q):
            k = iadd(b, q, c64(1))
            a = src.load(iadd(b, sb, k), lanes)
            c = o.conj(src.load_reversed(b.sub(iadd(b, sb, h), k), lanes))
            x = o.cadd(o.rmul(o.cadd(a, c), half), o.cmul(o.csub(a, c), tab.load(k, lanes)))
            dst.store(iadd(b, db, k), x, lanes)
        vloop(b, b.sub(h, c64(1)), lanes, per_run, "k")
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def c2r_pre(module: ir.Module, lanes: int, scalar, fin: Fmt, fout: Fmt) -> ir.Function:
    """c2r(src0, src1, dst0, dst1, scale, dr, di, h, outer): rows of h+1 bins X to the h values
    Z[k] = (X[k] + X*[h-k]) + d[k] (X[k] - X*[h-k]), d[k] = i w^-k, whose inverse FFT (unnormalised,
    then / 2h) interleaves the 2h real samples; bin 0 and bin h count by their real parts.
    Runs of `lanes` <= h - 1."""
    name = _name("c2r", scalar, fin, fout, f"v{lanes}")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, dr, di, h, outer = fn.args
    o1, o = Arith(b, scalar), Arith(b, _vty(scalar, lanes))
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    tab = Access(b, SPLIT, dr, di, scalar)

    def per_row(r_o):
        sb = imul(b, r_o, iadd(b, h, c64(1)))
        db = imul(b, r_o, h)
        x0 = src.load(sb)[0]
        xh = src.load(iadd(b, sb, h))[0]
        dst.store(db, (o1.add(x0, xh), o1.sub(x0, xh)))

        def per_run(q):
            k = iadd(b, q, c64(1))
            a = src.load(iadd(b, sb, k), lanes)
            c = o.conj(src.load_reversed(b.sub(iadd(b, sb, h), k), lanes))
            dst.store(iadd(b, db, k), o.cadd(o.cadd(a, c), o.cmul(o.csub(a, c), tab.load(k, lanes))), lanes)
        vloop(b, b.sub(h, c64(1)), lanes, per_run, "k")
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def hermitian(module: ir.Module, lanes: int, scalar, fin: Fmt, fout: Fmt) -> ir.Function:
    """hermitian(src0, src1, dst0, dst1, scale, n, outer): rows of n//2+1 bins to rows of n:
    Y[k] = X[k] for k <= n//2, Y[k] = X*[n-k] above (n odd). Runs of `lanes` <= n//2."""
    name = _name("hermitian", scalar, fin, fout, f"v{lanes}")
    fn, b, fresh = _function(module, name, _common(scalar) + [I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, n, outer = fn.args
    o = Arith(b, _vty(scalar, lanes))
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    kept = iadd(b, b.lshr(n, c64(1)), c64(1))

    def per_row(r_o):
        sb, db = imul(b, r_o, kept), imul(b, r_o, n)
        vloop(b, kept, lanes, lambda k: dst.store(iadd(b, db, k), src.load(iadd(b, sb, k), lanes), lanes), "k0")

        def mirrored(q):
            k = iadd(b, kept, q)
            dst.store(iadd(b, db, k), o.conj(src.load_reversed(b.sub(iadd(b, sb, n), k), lanes)), lanes)
        vloop(b, b.sub(n, kept), lanes, mirrored, "k1")
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn
