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

Kernels (rows: `outer` independent transforms, each [n][H] with H interleaved columns):
  stage_loop    one Stockham (decimation-in-frequency, autosort) pass of radix p in 2, 3, 4,
                5, 8 as scalar loops o / j / q with q innermost: LLVM vectorises the q loop,
                which runs over S = (product of earlier radices) x H contiguous elements.
  stage_vector  the same pass for S < V dividing the vector width V, in explicit <V x float>
                code over i = q + S j (contiguous loads, expanded twiddle tables) and one
                shuffle per output that interleaves the p results in blocks of S.
  stage_generic a pass of any odd radix p (a prime too large for a codelet): O(p^2) complex
                multiply-adds accumulated in the destination, q innermost (or t innermost
                with a p x p table when S = 1); writes split data only.
  pointwise     dst[o][j][h] = src[o][j][h] * table[j] for j < valid, 0 up to rows: copies,
                format changes, truncation and Bluestein's chirp and kernel products.
  r2c_post      the spectrum of 2h real samples from the h-point FFT of their pairs.
  c2r_pre       the inverse of r2c_post (ignores the imaginary parts of bins 0 and h).
  hermitian     the full n-point spectrum of a real signal of odd length n from its n//2+1 bins.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from llvmlite import ir

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

    def const(self, x: float):
        if isinstance(self.ty, ir.VectorType):
            return ir.Constant(self.ty, [ir.Constant(self.ty.element, float(x))] * self.ty.count)
        return ir.Constant(self.ty, float(x))

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

    def store(self, index, value, lanes: int = 1) -> None:
        b, layout = self.b, self.fmt.layout
        re, im = value
        if self.fmt.scale:
            s = self.scale
            if lanes > 1:
                s = b.shuffle_vector(b.insert_element(ir.Constant(ir.VectorType(self.scalar, 1), ir.Undefined),
                                                      s, ir.Constant(I32, 0)),
                                     ir.Constant(ir.VectorType(self.scalar, 1), ir.Undefined), _mask([0] * lanes))
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


def _twiddles(b, scalar, tw, j, p):
    """The p-1 twiddles of butterfly j from a [j][t-1] table of (re, im) pairs."""
    base = imul(b, j, c64(2 * (p - 1)))
    out = []
    for t in range(1, p):
        k = iadd(b, base, c64(2 * (t - 1)))
        re = b.load(b.gep(tw, [k], inbounds=True, source_etype=scalar), typ=scalar)
        im = b.load(b.gep(tw, [iadd(b, k, c64(1))], inbounds=True, source_etype=scalar), typ=scalar)
        out.append((re, im))
    return out


# --------------------------------------------------------------------------- Stockham passes

def stage_loop(module: ir.Module, p: int, scalar, fin: Fmt, fout: Fmt, twiddled: bool) -> ir.Function:
    """stage(src0, src1, dst0, dst1, scale, tw, m, S, outer, j0): for each row o < outer,
    butterfly j in [j0, m) and q < S:
        y = DFT_p(src[q + S (j + m r)] for r < p);  dst[q + S (p j + t)] = y[t] w^(t j)
    with w = exp(-2 pi i / (p m)) from tw ([j][t-1] pairs; unused when not twiddled)."""
    name = _name("stage", scalar, fin, fout, f"r{p}", "tw" if twiddled else "notw")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, I64, I64, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, tw, m, S, outer, j0 = fn.args
    o = Arith(b, scalar)
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
            ws = _twiddles(b, scalar, tw, j, p) if twiddled else None
            first_in = iadd(b, base, imul(b, S, j))
            ins = [first_in] + [iadd(b, first_in, imul(b, mS, c64(r))) for r in range(1, p)]
            first_out = iadd(b, base, imul(b, pS, j))
            outs = [first_out] + [iadd(b, first_out, imul(b, S, c64(t))) for t in range(1, p)]

            def per_column(q):
                y = dft(o, p, [src.load(iadd(b, i, q)) for i in ins])
                for t in range(p):
                    value = o.cmul(y[t], ws[t - 1]) if twiddled and t else y[t]
                    dst.store(iadd(b, outs[t], q), value)
            loop(b, c64(0), S, per_column, "q", guard=False)
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


def stage_vector(module: ir.Module, p: int, lanes: int, S: int, scalar, fin: Fmt, fout: Fmt,
                 tail: bool = True) -> ir.Function:
    """vstage(src0, src1, dst0, dst1, scale, twr, twi, tw, m, outer): stage_loop's pass for a
    stride S < lanes dividing lanes, vectorised over i = q + S j in runs of `lanes`; twr/twi is
    the expanded table w^(t (i div S)) as [t-1][i]; with `tail`, the last m*S mod lanes
    elements of a row go through stage_loop (with tw), else m*S must be a multiple of lanes."""
    name = _name("vstage", scalar, fin, fout, f"r{p}", f"v{lanes}", f"s{S}", "tail" if tail else "notail")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, PTR, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, twr, twi, tw, m, outer = fn.args
    vty = ir.VectorType(scalar, lanes)
    o = Arith(b, vty)
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    mS = imul(b, m, c64(S))
    row = imul(b, mS, c64(p))
    blocks = b.udiv(mS, c64(lanes))
    align = elem_bytes(scalar)

    def per_row(r_o):
        base = imul(b, r_o, row)

        def per_block(k):
            i0 = imul(b, k, c64(lanes))
            first = iadd(b, base, i0)
            y = dft(o, p, [src.load(iadd(b, first, imul(b, mS, c64(r))), lanes) for r in range(p)])
            for t in range(1, p):
                at = iadd(b, imul(b, mS, c64(t - 1)), i0)
                w = tuple(b.load(b.gep(tab, [at], inbounds=True, source_etype=scalar), typ=vty, align=align)
                          for tab in (twr, twi))
                y[t] = o.cmul(y[t], w)
            re = interleave_blocks(b, [v[0] for v in y], lanes, S)
            im = interleave_blocks(b, [v[1] for v in y], lanes, S)
            dst.store(iadd(b, base, imul(b, i0, c64(p))), (re, im), p * lanes)
        loop(b, c64(0), blocks, per_block, "k")
    loop(b, c64(0), outer, per_row, "o")
    if tail:
        j0 = imul(b, blocks, c64(lanes // S))
        b.call(stage_loop(module, p, scalar, fin, fout, True), [src0, src1, dst0, dst1, scale, tw, m, c64(S), outer, j0])
    b.ret_void()
    return fn


def stage_generic(module: ir.Module, scalar, fin: Fmt, twiddled: bool) -> ir.Function:
    """gstage(src0, src1, dst0, dst1, scale, tw, wr, wi, p, m, S, outer): stage_loop's pass
    for any radix p, the butterfly as sum_r a[r] w_p^(r t mod p) with the p roots in wr/wi,
    accumulated in the (split) destination."""
    name = _name("gstage", scalar, fin, SPLIT, "tw" if twiddled else "notw")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, PTR, I64, I64, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, _scale, tw, wr, wi, p, m, S, outer = fn.args
    o = Arith(b, scalar)
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, SPLIT, dst0, dst1, scalar)
    mS = imul(b, m, S)
    row = imul(b, mS, p)
    pS = imul(b, S, p)

    def per_row(r_o):
        base = imul(b, r_o, row)

        def per_butterfly(j):
            first_in = iadd(b, base, imul(b, S, j))

            def per_output(t):
                out = iadd(b, iadd(b, base, imul(b, pS, j)), imul(b, S, t))
                loop(b, c64(0), S, lambda q: dst.store(iadd(b, out, q), src.load(iadd(b, first_in, q))), "q0", False)

                def per_input(r):
                    k = b.urem(imul(b, r, t), p)
                    w = tuple(b.load(b.gep(tab, [k], inbounds=True, source_etype=scalar), typ=scalar)
                              for tab in (wr, wi))
                    at = iadd(b, first_in, imul(b, mS, r))
                    loop(b, c64(0), S, lambda q: dst.store(
                        iadd(b, out, q), o.cadd(dst.load(iadd(b, out, q)), o.cmul(src.load(iadd(b, at, q)), w))),
                        "q1", False)
                loop(b, c64(1), p, per_input, "r")
                if twiddled:
                    later = b.block.function.append_basic_block("twiddle")
                    after = b.block.function.append_basic_block("twiddled")
                    b.cbranch(b.icmp_signed(">", t, c64(0)), later, after)
                    b.position_at_end(later)
                    k = b.shl(iadd(b, imul(b, j, b.sub(p, c64(1))), b.sub(t, c64(1))), c64(1))
                    w = tuple(b.load(b.gep(tw, [i], inbounds=True, source_etype=scalar), typ=scalar)
                              for i in (k, iadd(b, k, c64(1))))
                    loop(b, c64(0), S, lambda q: dst.store(iadd(b, out, q), o.cmul(dst.load(iadd(b, out, q)), w)),
                         "q2", False)
                    b.branch(after)
                    b.position_at_end(after)
            loop(b, c64(0), p, per_output, "t", False)
        loop(b, c64(0), m, per_butterfly, "j", False)
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def stage_generic_rows(module: ir.Module, scalar, fin: Fmt, twiddled: bool) -> ir.Function:
    """gstage1(src0, src1, dst0, dst1, scale, tw, wr, wi, p, m, outer): stage_generic for S = 1,
    vectorisable over the outputs t: wr/wi is the p x p matrix w_p^(r t) as [r][t]."""
    name = _name("gstage1", scalar, fin, SPLIT, "tw" if twiddled else "notw")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, PTR, I64, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, _scale, tw, wr, wi, p, m, outer = fn.args
    o = Arith(b, scalar)
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, SPLIT, dst0, dst1, scalar)
    twa = Access(b, Fmt("inter"), tw, tw, scalar)
    wa = Access(b, SPLIT, wr, wi, scalar)
    row = imul(b, m, p)

    def per_row(r_o):
        base = imul(b, r_o, row)

        def per_butterfly(j):
            out = iadd(b, base, imul(b, p, j))
            first = src.load(iadd(b, base, j))
            loop(b, c64(0), p, lambda t: dst.store(iadd(b, out, t), first), "t0", False)

            def per_input(r):
                a = src.load(iadd(b, iadd(b, base, j), imul(b, m, r)))
                wrow = imul(b, r, p)
                loop(b, c64(0), p, lambda t: dst.store(
                    iadd(b, out, t), o.cadd(dst.load(iadd(b, out, t)), o.cmul(a, wa.load(iadd(b, wrow, t))))), "t1", False)
            loop(b, c64(1), p, per_input, "r")
            if twiddled:
                wbase = b.sub(imul(b, j, b.sub(p, c64(1))), c64(1))
                loop(b, c64(1), p, lambda t: dst.store(
                    iadd(b, out, t), o.cmul(dst.load(iadd(b, out, t)), twa.load(iadd(b, wbase, t)))), "t2", False)
        loop(b, c64(0), m, per_butterfly, "j", False)
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


# --------------------------------------------------------------------------- element-wise passes

def pointwise(module: ir.Module, scalar, fin: Fmt, fout: Fmt, table: bool, flat: bool) -> ir.Function:
    """pointwise(src0, src1, dst0, dst1, scale, tr, ti, valid, rows, H, sos, dos, outer):
    dst[o dos + j H + h] = src[o sos + j H + h] (* table[j]) for j < valid, 0 for valid <= j < rows.
    flat: H is 1 (j is then the inner, vectorised loop)."""
    name = _name("pointwise", scalar, fin, fout, "tab" if table else "copy", "flat" if flat else "cols")
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR] + [I64] * 6)
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, tr, ti, valid, rows, H, sos, dos, outer = fn.args
    o = Arith(b, scalar)
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    tab = Access(b, SPLIT, tr, ti, scalar)
    zero = (o.const(0.0), o.const(0.0))

    def per_row(r_o):
        sb, db = imul(b, r_o, sos), imul(b, r_o, dos)
        if flat:
            def per_elem(j):
                v = src.load(iadd(b, sb, j))
                dst.store(iadd(b, db, j), o.cmul(v, tab.load(j)) if table else v)
            loop(b, c64(0), valid, per_elem, "j")
        else:
            def per_line(j):
                w = tab.load(j) if table else None
                sj, dj = iadd(b, sb, imul(b, j, H)), iadd(b, db, imul(b, j, H))

                def per_col(h):
                    v = src.load(iadd(b, sj, h))
                    dst.store(iadd(b, dj, h), o.cmul(v, w) if table else v)
                loop(b, c64(0), H, per_col, "h")
            loop(b, c64(0), valid, per_line, "j")
        loop(b, imul(b, valid, H), imul(b, rows, H), lambda k: dst.store(iadd(b, db, k), zero), "z")
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def r2c_post(module: ir.Module, scalar, fin: Fmt, fout: Fmt) -> ir.Function:
    """r2c(src0, src1, dst0, dst1, scale, cr, ci, h, outer): rows of h values Z (the FFT of
    z[k] = x[2k] + i x[2k+1]) to rows of h+1 values X[k] = (Z[k] + Z*[h-k])/2 + c[k] (Z[k] - Z*[h-k])
    with c[k] = -i w^k / 2, w = exp(-i pi / h); Z[h] is Z[0]."""
    name = _name("r2c", scalar, fin, fout)
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, cr, ci, h, outer = fn.args
    o = Arith(b, scalar)
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    tab = Access(b, SPLIT, cr, ci, scalar)
    half = o.const(0.5)

    def per_row(r_o):
        sb = imul(b, r_o, h)
        db = imul(b, r_o, iadd(b, h, c64(1)))
        z0 = src.load(sb)
        dst.store(db, (o.add(z0[0], z0[1]), o.const(0.0)))
        dst.store(iadd(b, db, h), (o.sub(z0[0], z0[1]), o.const(0.0)))

        def per_bin(k):
            a = src.load(iadd(b, sb, k))
            c = o.conj(src.load(b.sub(iadd(b, sb, h), k)))
            x = o.cadd(o.rmul(o.cadd(a, c), half), o.cmul(o.csub(a, c), tab.load(k)))
            dst.store(iadd(b, db, k), x)
        loop(b, c64(1), h, per_bin, "k")
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def c2r_pre(module: ir.Module, scalar, fin: Fmt, fout: Fmt) -> ir.Function:
    """c2r(src0, src1, dst0, dst1, scale, dr, di, h, outer): rows of h+1 bins X to the h values
    Z[k] = (X[k] + X*[h-k]) + d[k] (X[k] - X*[h-k]), d[k] = i w^-k, whose inverse FFT (unnormalised,
    then / 2h) interleaves the 2h real samples; bin 0 and bin h count by their real parts."""
    name = _name("c2r", scalar, fin, fout)
    fn, b, fresh = _function(module, name, _common(scalar) + [PTR, PTR, I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, dr, di, h, outer = fn.args
    o = Arith(b, scalar)
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    tab = Access(b, SPLIT, dr, di, scalar)

    def per_row(r_o):
        sb = imul(b, r_o, iadd(b, h, c64(1)))
        db = imul(b, r_o, h)
        x0 = src.load(sb)[0]
        xh = src.load(iadd(b, sb, h))[0]
        dst.store(db, (o.add(x0, xh), o.sub(x0, xh)))

        def per_bin(k):
            a = src.load(iadd(b, sb, k))
            c = o.conj(src.load(b.sub(iadd(b, sb, h), k)))
            dst.store(iadd(b, db, k), o.cadd(o.cadd(a, c), o.cmul(o.csub(a, c), tab.load(k))))
        loop(b, c64(1), h, per_bin, "k")
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn


def hermitian(module: ir.Module, scalar, fin: Fmt, fout: Fmt) -> ir.Function:
    """hermitian(src0, src1, dst0, dst1, scale, n, outer): rows of n//2+1 bins to rows of n:
    Y[k] = X[k] for k <= n//2, Y[k] = X*[n-k] above."""
    name = _name("hermitian", scalar, fin, fout)
    fn, b, fresh = _function(module, name, _common(scalar) + [I64, I64])
    if not fresh:
        return fn
    src0, src1, dst0, dst1, scale, n, outer = fn.args
    o = Arith(b, scalar)
    src = Access(b, fin, src0, src1, scalar)
    dst = Access(b, fout, dst0, dst1, scalar, scale)
    kept = iadd(b, b.lshr(n, c64(1)), c64(1))

    def per_row(r_o):
        sb, db = imul(b, r_o, kept), imul(b, r_o, n)
        loop(b, c64(0), kept, lambda k: dst.store(iadd(b, db, k), src.load(iadd(b, sb, k))), "k0")
        loop(b, kept, n, lambda k: dst.store(iadd(b, db, k), o.conj(src.load(b.sub(iadd(b, sb, n), k)))), "k1")
    loop(b, c64(0), outer, per_row, "o")
    b.ret_void()
    return fn
