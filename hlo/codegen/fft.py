"""FFT kernels for the compiled backend: one LLVM function per HLO fft (FFT, IFFT, RFFT, IRFFT
over the last 1-3 dimensions, c64/f32 or c128/f64), needing nothing but libc (memset).

    plan = FftPlan("RFFT", (256,), 64, vector_bits=256)
    plan.scratch_bytes(batch)            # bytes of 64-byte aligned scratch for `batch` elements
    fn = plan.emit(module, "name")       # void name(i8* in, i8* out, i64 batch, i8* scratch)

`in`/`out` are dense row-major [batch, *dims] arrays (plan.in_dims / plan.out_dims): complex
values as (re, im) pairs, real ones (RFFT input, IRFFT output) plain. They must not overlap
(noalias); no alignment is assumed. Semantics are numpy.fft's (= XLA's): FFT unnormalised,
IFFT scaled by 1/N, RFFT keeps n//2+1 bins, IRFFT reads n//2+1 bins and ignores the imaginary
parts of bin 0 and (even n) bin n/2; multi-dimensional transforms do RFFT's real axis first
and IRFFT's last (so those imaginary parts are dropped after the other axes, as numpy does).
vector_bits: the target's vector width (target.RegisterFile.vector_bits); wider is legal
anywhere (LLVM splits the vectors), narrower only wastes speed. Several plans may be emitted
into one module: they share kernels and tables (internal `hlo.fft.*` symbols).

Algorithms (kernels in fft_kernels.py):
* Each axis of length n is a Stockham autosort FFT (decimation in frequency), one pass per
  radix: codelets for 2, 4 and 8 (first, as few passes as possible: the passes of small stride
  S are the explicit shuffle-vector ones, which need S to divide the vector width), 3 and 5,
  then a generic odd pass (symmetric pairs, O(p^2)) for each prime factor p <= BLUESTEIN_PRIME.
  A length with a larger prime factor goes through Bluestein's chirp-z transform: a
  convolution by power-of-two FFTs of length M >= 2n - 1 (the kernel's spectrum, / M, is a
  table).
* The axis being transformed has the columns after it interleaved ([rows][n][H]), so a pass
  over a non-innermost axis is vectorised across those columns (S = earlier radices x H).
* Real transforms of even length n are complex FFTs of length n/2 of the sample pairs with an
  O(n) post-pass (pre-pass for IRFFT); odd lengths use a full complex FFT of the real data
  (RFFT: im = 0 on load, IRFFT: the Hermitian extension, then the real part).
* Inverse transforms are forward transforms of swapped data (re <-> im): split buffers swap by
  pointer, so only forward twiddles exist. 1/N scales the last store.
* Twiddles, chirps and the Bluestein kernel spectrum are constant tables computed in float64
  and rounded once (max error vs numpy in float64, relative to the output's max magnitude:
  ~2e-7 for c64, ~1e-15 for c128, benchmarks/fft_bench.py --accuracy). Data between passes is
  split (re and im arrays) in two scratch buffers; the batch runs in chunks of CHUNK_BYTES of
  scratch per buffer.
Kernels are loops with run-time sizes, so the code of a plan does not grow with n (20-70 KiB
of IR text, 50-150 ms to compile at O3); its tables do (about 2n complex values per axis).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from llvmlite import ir

from . import fft_kernels as K
from .fft_kernels import CODELETS, NULL, Fmt, c64
from .types import F32, F64, I64, PTR

FFT_TYPES = ("FFT", "IFFT", "RFFT", "IRFFT")
BLUESTEIN_PRIME = 31     # prime factors above this go through Bluestein's algorithm
MAX_TWOS = 3             # the largest power-of-two radix is 2^MAX_TWOS (8: 5-10% faster than 4)
CHUNK_BYTES = 8192       # scratch per buffer (re and im) that a chunk of the batch may fill: L1-resident
OUTER = "outer"          # placeholder argument: rows per batch element x batch elements of the chunk


def _prod(values) -> int:
    return int(np.prod(values, dtype=np.int64)) if len(values) else 1


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def factorize(n: int) -> list[int]:
    """Prime factors of n, ascending."""
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def radices(n: int) -> list[int]:
    """The Stockham passes of length n: 2s, 4s and 8s (as few passes as possible, smaller
    first: they are the passes of small stride, in explicit vector code), then 3s, 5s and
    the other primes ascending."""
    factors = factorize(n)
    twos = factors.count(2)
    out = []
    if twos:
        passes = -(-twos // MAX_TWOS)
        sizes = [twos // passes + (1 if k < twos % passes else 0) for k in range(passes)]
        out = [1 << s for s in sorted(sizes)]
    return out + [f for f in factors if f != 2]


def uses_bluestein(n: int) -> bool:
    return n > 1 and max(factorize(n)) > BLUESTEIN_PRIME


def _unit(k, n):
    """exp(-2 pi i k / n) in float64, k reduced mod n first."""
    angle = 2.0 * np.pi * (np.asarray(k, dtype=np.int64) % n) / n
    return np.cos(angle) - 1j * np.sin(angle)


@dataclass
class Step:
    """One kernel call of the plan (per chunk of the batch)."""
    kind: str              # stage | vstage | gstage | gstage1 | pointwise | r2c | c2r | hermitian
    params: tuple          # the kernel variant (emission-time)
    args: list             # run-time arguments after (src0, src1, dst0, dst1, scale)
    elems: int             # complex elements written per batch element
    outer: int = 1         # rows per batch element
    read_swap: bool = False
    write_swap: bool = False


@dataclass
class FftPlan:
    """An FFT of one type, transform lengths and precision (see the module docstring)."""
    fft_type: str
    lengths: tuple
    complex_bits: int
    vector_bits: int = 256          # width of the explicit vector code (LLVM splits wider ones)
    steps: list = field(init=False, repr=False)
    tables: dict = field(init=False, repr=False)

    def __post_init__(self):
        self.lengths = tuple(int(n) for n in self.lengths)
        if self.fft_type not in FFT_TYPES:
            raise ValueError(f"fft_type must be one of {FFT_TYPES}, not {self.fft_type!r}")
        if not 1 <= len(self.lengths) <= 3 or min(self.lengths) < 0:
            raise ValueError(f"fft lengths must be 1-3 sizes >= 0, not {self.lengths}")
        if self.complex_bits not in (64, 128):
            raise ValueError("complex_bits must be 64 (c64/f32) or 128 (c128/f64)")
        self.scalar = F32 if self.complex_bits == 64 else F64
        self.es = 4 if self.complex_bits == 64 else 8
        self.lanes = max(self.vector_bits // (8 * self.es), 1)
        n = self.lengths[-1]
        half = self.lengths[:-1] + (n // 2 + 1 if n else 0,)
        self.in_dims = half if self.fft_type == "IRFFT" else self.lengths
        self.out_dims = half if self.fft_type == "RFFT" else self.lengths
        self.in_complex = self.fft_type != "RFFT"
        self.out_complex = self.fft_type != "IRFFT"
        self.in_layout = "real" if self.fft_type == "RFFT" and n % 2 else "inter"
        self.out_layout = "real" if self.fft_type == "IRFFT" and n % 2 else "inter"
        self.inverse = self.fft_type in ("IFFT", "IRFFT")
        self.scale = 1.0 / _prod(self.lengths) if self.inverse and _prod(self.lengths) else 1.0
        self.tables = {}
        self.steps = self._build() if _prod(self.lengths) and _prod(self.out_dims) else []
        self._place()

    # ------------------------------------------------------------------ sizes
    @property
    def in_item_bytes(self) -> int:
        return _prod(self.in_dims) * self.es * (2 if self.in_complex else 1)

    @property
    def out_item_bytes(self) -> int:
        return _prod(self.out_dims) * self.es * (2 if self.out_complex else 1)

    def scratch_bytes(self, batch: int) -> int:
        if batch <= 0 or not self.cap_item:
            return 0
        return 4 * _round_up(min(self.chunk, batch) * self.cap_item, 16) * self.es

    # ------------------------------------------------------------------ tables (float64 values)
    def _table(self, name: str, values) -> str:
        full = f"hlo.fft.{K.suffix(self.scalar)}.{name}"
        if full not in self.tables:
            self.tables[full] = np.ascontiguousarray(values, dtype=np.float64).ravel()
        return full

    def _split_table(self, name: str, values) -> tuple[str, str]:
        values = np.asarray(values, dtype=np.complex128)
        return self._table(name + ".re", values.real), self._table(name + ".im", values.imag)

    def _twiddles(self, n: int, p: int) -> str:
        """[j][t-1] (re, im) pairs of w_n^(t j), j < n/p, 1 <= t < p."""
        j = np.arange(n // p)[:, None]
        t = np.arange(1, p)[None, :]
        w = _unit(j * t, n)
        return self._table(f"tw.{n}.{p}", np.stack([w.real, w.imag], axis=-1))

    def _generic_twiddles(self, n: int, p: int) -> tuple[str, str]:
        """[j][t] of w_n^(t j), j < n/p, t < p."""
        return self._split_table(f"twg.{n}.{p}", _unit(np.outer(np.arange(n // p), np.arange(p)), n))

    def _expanded_twiddles(self, n: int, p: int, S: int) -> tuple[str, str]:
        """[t-1][i] of w_n^(t (i div S)), i < S n / p."""
        j = (np.arange(S * (n // p)) // S)[None, :]
        t = np.arange(1, p)[:, None]
        return self._split_table(f"twv.{n}.{p}.{S}", _unit(j * t, n))

    # ------------------------------------------------------------------ plan construction
    def _stages(self, n: int, H: int, outer: int, read_swap=False, write_swap=False) -> list[Step]:
        """Stockham passes of a forward FFT over [outer][n][H] (n > 1)."""
        steps = []
        span = 1
        for p in radices(n):
            n_cur = n // span
            m = n_cur // p
            S = span * H
            elems = outer * n * H
            if p in CODELETS:
                lanes = self._vector_lanes(S, m)
                if lanes:
                    twr, twi = self._expanded_twiddles(n_cur, p, S)
                    steps.append(Step("vstage", (p, lanes, S), [("tab", twr), ("tab", twi), m, OUTER], elems, outer))
                else:
                    tw = ("tab", self._twiddles(n_cur, p)) if m > 1 else None
                    steps.append(Step("stage", (p, self._fit(S), m > 1), [tw, m, S, OUTER, 0], elems, outer))
            else:
                twr, twi = (("tab", name) for name in self._generic_twiddles(n_cur, p)) if m > 1 else (None, None)
                if S == 1:
                    wr, wi = self._split_table(f"wmat.{p}", _unit(np.outer(np.arange(p), np.arange(p)), p))
                    steps.append(Step("gstage1", (self._fit(p), m > 1),
                                      [twr, twi, ("tab", wr), ("tab", wi), p, m, OUTER], elems, outer))
                else:
                    wr, wi = self._split_table(f"roots.{p}", _unit(np.arange(p), p))
                    steps.append(Step("gstage", (self._fit(S), m > 1),
                                      [twr, twi, ("tab", wr), ("tab", wi), p, m, S, OUTER], elems, outer))
            span *= p
        steps[0].read_swap = read_swap
        steps[-1].write_swap = write_swap
        return steps

    def _fit(self, count: int) -> int:
        """Lanes of the runs of a kernel loop over `count` >= 1 elements: a power of two <= count."""
        return min(self.lanes, K.pow2_floor(count))

    def _vector_lanes(self, S: int, m: int) -> int:
        """Lanes of an explicit vector pass with stride S over m butterflies (0: none)."""
        lanes = self.lanes
        if S >= lanes or lanes % S:
            return 0
        while lanes > 2 * S and lanes > S * m:
            lanes //= 2
        smallest = 4 if self.es == 4 else 2
        return lanes if lanes >= max(2 * S, smallest) and lanes <= S * m else 0

    def _pointwise(self, outer, valid, rows, H, sos, dos, table=None, read_swap=False, write_swap=False) -> Step:
        tr, ti = (("tab", table[0]), ("tab", table[1])) if table else (None, None)
        lanes = self._fit(valid if H == 1 else H)
        return Step("pointwise", (lanes, table is not None, H == 1), [tr, ti, valid, rows, H, sos, dos, OUTER],
                    outer * rows * H, outer, read_swap, write_swap)

    def _cfft(self, n: int, H: int, outer: int, inverse: bool, out_rows: int | None = None) -> list[Step]:
        """A complex FFT (inverse: unnormalised IDFT) along n of [outer][n][H], writing the
        first out_rows (default n) rows of the result."""
        out_rows = n if out_rows is None else out_rows
        if uses_bluestein(n):
            M = 1 << (2 * n - 2).bit_length()
            k = np.arange(n, dtype=np.int64)
            chirp = np.exp(-1j * np.pi * ((k * k) % (2 * n)) / n)
            kernel = np.zeros(M, dtype=np.complex128)
            kernel[:n] = np.conj(chirp)
            kernel[M - n + 1:] = np.conj(chirp[1:])[::-1]
            chirp_t = self._split_table(f"chirp.{n}", chirp)
            kernel_t = self._split_table(f"bluestein.{n}.{M}", np.fft.fft(kernel) / M)
            steps = [self._pointwise(outer, n, M, H, n * H, M * H, chirp_t, read_swap=inverse)]
            steps += self._stages(M, H, outer)
            steps.append(self._pointwise(outer, M, M, H, M * H, M * H, kernel_t, write_swap=True))
            steps += self._stages(M, H, outer, write_swap=True)
            steps.append(self._pointwise(outer, out_rows, out_rows, H, M * H, out_rows * H, chirp_t,
                                         write_swap=inverse))
            return steps
        steps = self._stages(n, H, outer, read_swap=inverse, write_swap=inverse)
        if out_rows != n:
            steps.append(self._pointwise(outer, out_rows, out_rows, H, n * H, out_rows * H))
        return steps

    def _real_step(self, kind: str, n: int, rows: int) -> Step:
        h = n // 2
        theta = 2 * np.pi * np.arange(h + 1) / n
        if kind == "r2c":      # -i w^k / 2
            table = self._split_table(f"r2c.{n}", -0.5 * np.sin(theta) - 0.5j * np.cos(theta))
            elems = rows * (h + 1)
        else:                  # i w^-k
            table = self._split_table(f"c2r.{n}", -np.sin(theta) + 1j * np.cos(theta))
            elems = rows * h
        return Step(kind, (self._fit(max(h - 1, 1)),), [("tab", table[0]), ("tab", table[1]), h, OUTER], elems, rows)

    def _build(self) -> list[Step]:
        L = self.lengths
        steps: list[Step] = []
        n = L[-1]
        rows = _prod(L[:-1])
        if self.fft_type in ("FFT", "IFFT"):
            for k in reversed(range(len(L))):
                if L[k] > 1:
                    steps += self._cfft(L[k], _prod(L[k + 1:]), _prod(L[:k]), self.inverse)
        elif self.fft_type == "RFFT":
            if n % 2 == 0:
                if n > 2:
                    steps += self._cfft(n // 2, 1, rows, False)
                steps.append(self._real_step("r2c", n, rows))
            elif n > 1:
                steps += self._cfft(n, 1, rows, False, out_rows=n // 2 + 1)
            dims = self.out_dims
            for k in reversed(range(len(L) - 1)):
                if L[k] > 1:
                    steps += self._cfft(L[k], _prod(dims[k + 1:]), _prod(dims[:k]), False)
        else:
            dims = self.in_dims
            for k in reversed(range(len(L) - 1)):
                if L[k] > 1:
                    steps += self._cfft(L[k], _prod(dims[k + 1:]), _prod(dims[:k]), True)
            if n % 2 == 0:
                steps.append(self._real_step("c2r", n, rows))
                if n > 2:
                    steps += self._cfft(n // 2, 1, rows, True)
            elif n > 1:
                steps.append(Step("hermitian", (self._fit(n // 2),), [n, OUTER], rows * n, rows))
                steps += self._cfft(n, 1, rows, True)
        if not steps:   # all axes of length 1: a copy (or a change between real and complex)
            elems = _prod(self.out_dims)
            steps.append(self._pointwise(1, elems, elems, 1, elems, elems))
        return steps

    def _place(self) -> None:
        """Buffers of each step: the first reads the input, the last writes the output, the
        others alternate between scratch buffers a and b (split)."""
        self.places = []
        src = "in"
        for k, step in enumerate(self.steps):
            dst = "out" if k == len(self.steps) - 1 else ("b" if src == "a" else "a")
            self.places.append((src, dst))
            src = dst
        self.cap_item = max([s.elems for s in self.steps[:-1]], default=0)
        self.chunk = max(1, CHUNK_BYTES // max(2 * self.cap_item * self.es, 1))

    # ------------------------------------------------------------------ emission
    def _fmt(self, place: str, swap: bool, scale: bool = False) -> Fmt:
        if place == "in":
            return Fmt(self.in_layout, swap)
        if place == "out":
            return Fmt(self.out_layout, swap, scale)
        return Fmt("split", False, scale)

    def _kernel(self, module: ir.Module, step: Step, fin: Fmt, fout: Fmt) -> ir.Function:
        s = self.scalar
        if step.kind == "stage":
            p, lanes, twiddled = step.params
            return K.stage_loop(module, p, lanes, s, fin, fout, twiddled)
        if step.kind == "vstage":
            p, lanes, S = step.params
            return K.stage_vector(module, p, lanes, S, s, fin, fout)
        if step.kind == "gstage":
            return K.stage_generic(module, step.params[0], s, fin, fout, step.params[1])
        if step.kind == "gstage1":
            return K.stage_generic_rows(module, step.params[0], s, fin, fout, step.params[1])
        if step.kind == "pointwise":
            return K.pointwise(module, step.params[0], s, fin, fout, *step.params[1:])
        kernel = {"r2c": K.r2c_post, "c2r": K.c2r_pre, "hermitian": K.hermitian}[step.kind]
        return kernel(module, step.params[0], s, fin, fout)

    def _global(self, module: ir.Module, name: str) -> ir.GlobalVariable:
        found = module.globals.get(name)
        if found is not None:
            return found
        data = self.tables[name].astype(np.float32 if self.es == 4 else np.float64).tobytes()
        ty = ir.ArrayType(ir.IntType(8), len(data))
        g = ir.GlobalVariable(module, ty, name=name)
        g.initializer = ir.Constant(ty, bytearray(data))
        g.global_constant = True
        g.linkage = "internal"
        g.unnamed_addr = True
        g.align = 64
        return g

    def emit(self, module: ir.Module, name: str) -> ir.Function:
        """void name(i8* input, i8* output, i64 batch, i8* scratch) in module."""
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, PTR]), name=name)
        inp, outp, batch, scratch = fn.args
        for arg in (inp, outp, scratch):
            arg.add_attribute("noalias")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        if not self.steps:
            b.ret_void()
            return fn
        calls = []
        for step, (src, dst) in zip(self.steps, self.places):
            last = dst == "out"
            fin = self._fmt(src, step.read_swap)
            fout = self._fmt(dst, step.write_swap, scale=last and self.inverse)
            calls.append((step, src, dst, self._kernel(module, step, fin, fout)))
        chunk = c64(self.chunk)
        cap = b.mul(b.select(b.icmp_signed("<", batch, chunk), batch, chunk), c64(self.cap_item))
        cap = b.and_(b.add(cap, c64(15)), c64(-16))
        part = b.mul(cap, c64(self.es))
        buffers = {"a": (scratch, b.gep(scratch, [part], source_etype=ir.IntType(8))),
                   "b": (b.gep(scratch, [b.mul(part, c64(2))], source_etype=ir.IntType(8)),
                         b.gep(scratch, [b.mul(part, c64(3))], source_etype=ir.IntType(8)))}
        chunks = b.udiv(b.add(batch, c64(self.chunk - 1)), chunk)
        scale = ir.Constant(self.scalar, self.scale)
        one = ir.Constant(self.scalar, 1.0)

        def per_chunk(k):
            first = b.mul(k, chunk)
            rest = b.sub(batch, first)
            count = b.select(b.icmp_signed("<", rest, chunk), rest, chunk)
            ip = b.gep(inp, [b.mul(first, c64(self.in_item_bytes))], source_etype=ir.IntType(8))
            op = b.gep(outp, [b.mul(first, c64(self.out_item_bytes))], source_etype=ir.IntType(8))
            where = {"in": (ip, ip), "out": (op, op), **buffers}
            for step, src, dst, kernel in calls:
                s0, s1 = where[src]
                d0, d1 = where[dst]
                if src in buffers and step.read_swap:
                    s0, s1 = s1, s0
                if dst in buffers and step.write_swap:
                    d0, d1 = d1, d0
                args = [s0, s1, d0, d1, scale if dst == "out" else one]
                for a in step.args:
                    if a is None:
                        args.append(NULL)
                    elif a == OUTER:
                        args.append(b.mul(count, c64(step.outer)))
                    elif isinstance(a, tuple):
                        args.append(self._global(module, a[1]))
                    else:
                        args.append(c64(a))
                b.call(kernel, args)
        K.loop(b, c64(0), chunks, per_chunk, "chunk")
        b.ret_void()
        return fn

    # ------------------------------------------------------------------ reporting
    def describe(self) -> str:
        lines = [f"{self.fft_type} {self.lengths} c{self.complex_bits}: chunk {self.chunk}, "
                 f"scratch/element {4 * self.cap_item * self.es} B, tables "
                 f"{sum(t.size for t in self.tables.values()) * self.es} B"]
        for step, (src, dst) in zip(self.steps, self.places):
            ints = [a for a in step.args if isinstance(a, int)]
            lines.append(f"  {step.kind}{step.params} {src}->{dst} outer={step.outer} args={ints}"
                         f"{' rswap' if step.read_swap else ''}{' wswap' if step.write_swap else ''}")
        return "\n".join(lines)
