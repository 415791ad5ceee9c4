"""LAPACK custom calls in compiled code: a loop over the batch calling the library's routine.

Every target of hlo.runtime.lapack_targets compiles to the plan the interpreter runs
(lapack_plan.py): for each matrix of the batch, its operands are copied into column-major
working arrays in the temp arena (whatever the operands' layouts), the arrays that feed
results are zeroed, the routine is called by its exported symbol (`scipy_sgetrf_64_` for
numpy's OpenBLAS: hlo.runtime.lapack_library) with every argument by address and the
hidden character lengths gfortran expects, and the working arrays are copied to the
results. Workspace sizes come from LAPACK's query at compile time (shapes are static).

The JIT resolves the symbols from the library found at compile time (loaded with
`load_library_permanently`: `libraries_for`); an AOT object references them and its
header says what to link (`link_comment`).
"""
from __future__ import annotations

from typing import Optional

from llvmlite import ir

from ..diagnostics import error, written_name
from ..ir import Instruction, Module
from ..opcodes import Op
from ..runtime.lapack_library import LapackLibrary, LapackUnavailable, find_lapack
from ..runtime.lapack_plan import Char, Int, LapackCall, LapackTargetError, One, Ref, Unpack, Work
from ..runtime.lapack_targets import TARGETS, plan_call
from ..shapes import primitive_type, real_type_of
from . import scalar_ops
from .buffers import leaves_of
from .function_context import const64
from .special_kernels import CUSTOM_CALL_SCRATCH, CUSTOM_CALLS
from .types import I1, I8, I64, PTR, compute_type, constant_of, storage_type, store_element

ALIGNMENT = 64
VOID = ir.VoidType()


# -------------------------------------------------------------------------- plans

def _constant_int(inst: Instruction) -> Optional[int]:
    """The value of a rank-0 integer constant (the legacy ABI's options), else None."""
    shape = inst.shape
    if inst.opcode != Op.CONSTANT or shape.is_tuple or shape.rank or not shape.element_type.is_integral:
        return None
    array = inst.literal.array
    return int(array) if array is not None else None


def plan_of(inst: Instruction) -> LapackCall:
    """The LapackCall of a LAPACK custom call (an HloError at its line when it does not fit)."""
    results = [leaf for _, leaf in inst.shape.leaves()]
    try:
        return plan_call(inst.attrs["custom_call_target"],
                         [(tuple(o.shape.dims), o.shape.element_type) for o in inst.operands],
                         [(tuple(r.dims), r.element_type) for r in results], inst.backend_config,
                         tuple(_constant_int(o) for o in inst.operands), find_lapack())
    except (LapackTargetError, LapackUnavailable) as exc:
        raise error(f"custom-call %{written_name(inst.loc, inst.name)}: {exc}", inst.loc) from None


def _round_up(size: int) -> int:
    return (size + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def _offsets(call: LapackCall) -> tuple[dict[str, int], int]:
    """Each working array's byte offset in the scratch memory, and the total."""
    offsets, total = {}, 0
    for w in call.works:
        offsets[w.name] = total
        total += _round_up(max(w.size, 1) * w.type.byte_size)
    return offsets, total


def scratch_bytes(inst: Instruction) -> int:
    return _offsets(plan_of(inst))[1]


# -------------------------------------------------------------------------- the libraries

def uses_lapack(module: Module) -> bool:
    return any(inst.opcode == Op.CUSTOM_CALL and inst.attrs.get("custom_call_target") in TARGETS
               for comp in module.computations for inst in comp.instructions)


def libraries_for(module: Module) -> list[str]:
    """The shared libraries compiled code of `module` calls (LAPACK's, when it has such custom calls)."""
    return [find_lapack().path] if uses_lapack(module) else []


def link_comment(name: str, library: Optional[LapackLibrary] = None) -> str:
    """The AOT header's note on linking an object that calls LAPACK."""
    library = library or find_lapack()
    ints = f"{library.int_bits}-bit integers"
    return "\n".join([
        f"/* LAPACK: this object calls LAPACK routines by the names one library exports ({library.symbol('sgetrf')}",
        f"   for sgetrf: Fortran calling convention, {ints}), the library found at compile time:",
        f"   {library.path}.",
        "   Link it, or another build exporting the same names with the same integer width (numpy's",
        "   bundled OpenBLAS, the scipy-openblas64 or scipy-openblas32 wheel), e.g.:",
        f"     cc main.c {name}.o {library.link_flags()} -lm",
        "   OpenBLAS starts threads of its own unless OPENBLAS_NUM_THREADS=1. */",
        f'#define {name}_LAPACK_LIBRARY "{library.path}"',
        f'#define {name}_LINK_FLAGS "{library.link_flags()}"',
    ])


# -------------------------------------------------------------------------- the emitter

class _CallEmitter:
    """The code of one LAPACK custom call."""

    def __init__(self, low, inst: Instruction, call: LapackCall, library: LapackLibrary):
        self.low, self.inst, self.call, self.library = low, inst, call, library
        self.b, self.ctx = low.b, low.ctx
        self.int_type = primitive_type("s64" if library.int_bits == 64 else "s32")
        self.results = leaves_of(low.a.values[id(inst)])
        offsets, _ = _offsets(call)
        base = low.pointer(low.a.scratch[id(inst)]) if call.works else None
        self.arrays = {w.name: self.b.gep(base, [const64(offsets[w.name])], source_etype=I8) for w in call.works}

    def emit(self) -> None:
        call = self.call
        self.zero_unfilled_results()
        if call.batch_count == 0:
            return
        routine = self.declare()
        args = self.arguments()
        with self.ctx.loop_nest(call.batch_dims) as batch:
            for w in call.works:
                if w.operand is not None:
                    self.copy_in(w, batch if w.batched else ())
            for w in call.zeroed():
                self.memset(self.arrays[w.name], max(w.size, 1) * w.type.byte_size)
            if not call.skip:
                self.call_routine(routine, args)
            for w in call.works:
                if w.result is not None:
                    self.copy_out(w, batch)
            if call.unpack:
                info = self.info()
                with self.ctx.if_then(self.b.icmp_signed("==", info, ir.Constant(info.type, 0)), "lapack.unpack"):
                    for u in call.unpack:
                        self.unpack(u, batch)

    # -- the call
    def declare(self) -> ir.Function:
        symbol = self.library.symbol(self.call.routine)
        module = self.low.llmod
        found = module.globals.get(symbol)
        if found is not None:
            return found
        params = [PTR] * len(self.call.args) + [I64] * self.call.char_count()
        return ir.Function(module, ir.FunctionType(VOID, params), name=symbol)

    def arguments(self) -> list:
        """Every argument's address (scalars live in allocas), then the hidden lengths."""
        out = []
        for arg in self.call.args:
            if isinstance(arg, Char):
                out.append(self.constant_slot(ir.Constant(I8, ord(arg.value)), I8))
            elif isinstance(arg, Int):
                ty = compute_type(self.int_type)
                out.append(self.constant_slot(ir.Constant(ty, arg.value), ty))
            elif isinstance(arg, One):
                out.append(self.constant_slot(constant_of(self.call.type, 1), compute_type(self.call.type)))
            elif isinstance(arg, Ref):
                out.append(self.element_pointer(arg.array, arg.offset))
            else:
                out.append(ir.Constant(PTR, None))
        return out + [const64(1)] * self.call.char_count()

    def constant_slot(self, value, ty):
        slot = self.ctx.alloca(ty, "lapack.arg")
        self.ctx.alloca_builder.store(value, slot)
        return slot

    def call_routine(self, routine, args) -> None:
        check = self.call.finite_check
        if check is None:
            self.b.call(routine, args)
            return
        finite = self.all_finite(self.call.work(check))
        with self.ctx.if_then(finite, "lapack.call"):
            self.b.call(routine, args)
        with self.ctx.if_then(self.b.not_(finite), "lapack.nonfinite"):
            info_type = compute_type(self.int_type)
            self.b.store(ir.Constant(info_type, -4), self.arrays[self.call.info])

    def info(self):
        return self.b.load(self.arrays[self.call.info], typ=compute_type(self.int_type))

    # -- working arrays
    def element_pointer(self, name: str, offset):
        w = self.call.work(name)
        offset = offset if isinstance(offset, ir.Value) else const64(offset)
        return self.b.gep(self.arrays[name], [offset], source_etype=storage_type(w.type))

    def column_major(self, w: Work, index):
        offset, stride = const64(0), 1
        for i, d in zip(index, w.dims):
            offset = self.b.add(offset, self.b.mul(i, const64(stride)))
            stride *= d
        return offset

    def work_loop(self, w: Work):
        """Loops over a working array's elements, the first dimension innermost (its memory order)."""
        return self.ctx.loop_nest(w.dims, list(reversed(range(len(w.dims)))))

    def copy_in(self, w: Work, batch) -> None:
        operand = self.inst.operands[w.operand]
        with self.work_loop(w) as index:
            value = self.low.elem.value(operand, tuple(batch) + tuple(index))
            value = scalar_ops.convert(self.b, value, operand.shape.element_type, w.type)
            self.b.store(value, self.element_pointer(w.name, self.column_major(w, index)))

    def copy_out(self, w: Work, batch) -> None:
        out = self.results[w.result]
        with self.work_loop(w) as index:
            value = self.b.load(self.element_pointer(w.name, self.column_major(w, index)), typ=compute_type(w.type))
            value = scalar_ops.convert(self.b, value, w.type, out.shape.element_type)
            store_element(self.b, value, self.low.pointer(out), out.shape, tuple(batch) + tuple(index))

    def memset(self, pointer, size: int) -> None:
        if size:
            memset = self.low.llmod.declare_intrinsic("llvm.memset", [PTR, I64])
            self.b.call(memset, [pointer, ir.Constant(I8, 0), const64(size), ir.Constant(I1, 0)])

    def zero_unfilled_results(self) -> None:
        """Results no working array fills are zero (unpacked eigenvectors too: not written when info != 0)."""
        filled = {w.result for w in self.call.works if w.result is not None}
        for j, buf in enumerate(self.results):
            if j not in filled:
                self.memset(self.low.pointer(buf), buf.shape.byte_size())

    def all_finite(self, w: Work):
        """i1: every element is finite (x - x is 0 for finite x, NaN otherwise; the sum keeps a NaN)."""
        part = compute_type(real_type_of(w.type))
        acc = self.ctx.alloca(part, "lapack.finite")
        self.b.store(ir.Constant(part, 0.0), acc)
        with self.ctx.loop(w.size, "lapack.check") as k:
            value = self.b.load(self.element_pointer(w.name, k), typ=compute_type(w.type))
            parts = [self.b.extract_value(value, 0), self.b.extract_value(value, 1)] if w.type.is_complex else [value]
            total = self.b.load(acc)
            for x in parts:
                total = self.b.fadd(total, self.b.fsub(x, x))
            self.b.store(total, acc)
        return self.b.fcmp_ordered("==", self.b.load(acc), ir.Constant(part, 0.0))

    # -- geev's packed eigenvectors
    def unpack(self, u: Unpack, batch) -> None:
        """Column j of the result: (col_j + i col_{j+1}, then its conjugate) for a complex pair
        (wi[j] != 0, not NaN), else col_j; as jaxlib's UnpackEigenvectors."""
        b, ctx = self.b, self.ctx
        packed = self.call.work(u.packed)
        n = packed.dims[1]
        part = compute_type(packed.type)
        out = self.results[u.result]
        j_slot = ctx.alloca(I64, "lapack.j")
        b.store(const64(0), j_slot)

        def column(j):
            return lambda i: b.load(self.element_pointer(u.packed, b.add(i, b.mul(j, const64(n)))), typ=part)

        def store(i, j, re, im):
            value = b.insert_value(b.insert_value(ir.Constant(compute_type(out.shape.element_type), ir.Undefined),
                                                  re, 0), im, 1)
            store_element(b, value, self.low.pointer(out), out.shape, tuple(batch) + (i, j))

        with ctx.while_loop(lambda: b.icmp_signed("<", b.load(j_slot), const64(n)), "lapack.unpack_j"):
            j = b.load(j_slot)
            imag = b.load(self.element_pointer(u.imag, j), typ=part)
            next_j = b.add(j, const64(1))
            pair = b.and_(b.fcmp_ordered("!=", imag, ir.Constant(part, 0.0)),
                          b.icmp_signed("<", next_j, const64(n)))
            with ctx.if_then(pair, "lapack.pair"):
                with ctx.loop(n, "lapack.i") as i:
                    re, im = column(j)(i), column(next_j)(i)
                    store(i, j, re, im)
                    store(i, next_j, re, b.fneg(im))
            with ctx.if_then(b.not_(pair), "lapack.real"):
                with ctx.loop(n, "lapack.i") as i:
                    store(i, j, column(j)(i), ir.Constant(part, 0.0))
            b.store(b.select(pair, b.add(j, const64(2)), next_j), j_slot)


def emit_lapack_call(low, inst: Instruction) -> None:
    _CallEmitter(low, inst, plan_of(inst), find_lapack()).emit()


for _target in TARGETS:
    CUSTOM_CALLS[_target] = emit_lapack_call
    CUSTOM_CALL_SCRATCH[_target] = scratch_bytes
