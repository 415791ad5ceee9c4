"""The entry function: a driver that runs the control flow and calls one kernel per instruction.

    void NAME(void** params, void** results, void* temp)

DriverLowering walks the entry computation in post order. Instructions that name buffers
only (parameters, tuples, views) emit nothing; while, conditional and call become basic
blocks of the driver; every other instruction becomes a kernel (kernel_function.py), a
function of its own called with its buffers' addresses, unless its work is tiny (a few
scalars), where a call would cost more than the code: that code is emitted inline. Each
kernel gets the LLVM optimisation its work deserves (`kernel_opt_level`, `kernel_vectorized`;
work inside while loops counts LOOP_WEIGHT times per loop), so a module's compile time goes
to the loops that matter; identical kernels are one function.
"""
from __future__ import annotations

from typing import Callable, Optional

from llvmlite import ir

from ..ir import Instruction, Module
from ..opcodes import Op, Trait
from .buffers import Assignment, Buffer, BufferKind, resolve
from .contraction import ContractionEmitter
from .debug_values import debug_values_for
from .elemental import ElementalEmitter
from .emitters import EMITTERS
from .function_context import FunctionContext, const64
from . import float_mode
from .gemm import GemmCalls, entry_threads
from .kernel_function import KernelFunction, instruction_work, is_windowed, uses_gemm
from .kernel_signature import buffer_roles, kernel_signature
from .kernels import Lowering, emit_instruction
from .options import Part
from .profiling import profiler_for
from .target import RegisterFile
from .types import I8, PTR

VOID = ir.VoidType()

INLINE_WORK = 64          # element operations: at most this much is emitted inline in the driver
SCALAR_WORK = 1 << 10     # below this much work a kernel's loops stay scalar (O1 without vectorising)
VECTOR_WORK = 1 << 14     # from this much a kernel gets O2 (below: O1 with vectorisation)
HEAVY_WORK = 1 << 16      # and from this much a windowed loop nest gets O3
LIGHT_OPT_LEVEL = 1       # the LLVM level of lighter kernels
DRIVER_OPT_LEVEL = 0      # the driver's (see lower())
CALLS_PER_BLOCK = 64      # a straight run of kernel calls is cut into basic blocks of this many
LOOP_WEIGHT = 16          # an instruction in a while loop's body counts as running this many times
HEAVIEST_FIRST = 8        # kernels emitted before the walk when they stream to compile workers


def kernel_opt_level(work: int, gemm: bool, requested: int, windowed: bool = False) -> int:
    """The LLVM optimisation level of a kernel by its work: O1 for light ones, O2 for medium
    ones and for the loops around blocked multiplies, O3 for heavy windowed loop nests
    (convolutions, reduce-window: O3's unrolling of their small inner loops makes them up to
    twice as fast, where other loops gain nothing for a sixth more compile time); never above
    the requested level."""
    if work >= HEAVY_WORK and windowed and not gemm:
        return requested
    if work >= VECTOR_WORK or gemm:
        return min(requested, 2)
    return min(requested, LIGHT_OPT_LEVEL)


def kernel_vectorized(work: int, gemm: bool) -> bool:
    """Whether a kernel's loops are vectorised: all but the smallest (vectorised O1 code ran light
    kernels 1.8x faster than scalar O1 for a third more compile time)."""
    return gemm or work >= SCALAR_WORK


class DriverLowering(Lowering):
    """Lowers a prepared module's entry computation: `lower()` gives the driver's part and the
    parts of the kernels it calls (and of the gemm library when a kernel multiplies)."""

    def __init__(self, module: Module, assignment: Assignment, name: str,
                 target: RegisterFile = RegisterFile(128, 16), opt_level: int = 3,
                 flush_denormals: bool = False, profile: bool = False, debug_values: bool = False,
                 runtime_tag: str = "", on_kernel: Optional[Callable[[Part], None]] = None):
        self.module = module
        self.a = assignment
        self.name = name
        self.target = target
        self.flush_denormals = flush_denormals
        self.float_mode = target.arch if flush_denormals else None
        self.opt_level = opt_level
        self.llmod = ir.Module(name=module.name)
        self.fn = ir.Function(self.llmod, ir.FunctionType(VOID, [PTR, PTR, PTR]), name=name)
        for arg, arg_name in zip(self.fn.args, ("params", "results", "temp")):
            arg.name = arg_name
            arg.add_attribute("noalias")
        self.ctx = FunctionContext(self.llmod, self.fn)
        self.elem = ElementalEmitter(self.ctx, self.buffer_of)
        self.pointers: dict[int, tuple] = {}
        self.runtime_tag = runtime_tag   # the runtime library's build (runtime_library.py)
        entry_threads(self.llmod, name, define=True)   # which kernels with multiplies read
        self._contractions = ContractionEmitter(self, self.gemm_calls(self.llmod))
        self.profiler = profiler_for(self, module, profile)
        self.debug = debug_values_for(self, module, debug_values)
        self.hooks = profile or debug_values   # timers or value hooks around the walk's calls
        self.kernels: dict[str, Part] = {}
        self._by_signature: dict[str, tuple] = {}     # kernel signature -> (part, argument roles)
        self._computation_signatures: dict = {}
        self.runtime_calls: set[str] = set()   # the runtime library's functions the code calls
        self.on_kernel = on_kernel    # told of each new kernel as soon as it is emitted (build.PartStream)
        self.inline = 0
        self.calls = 0
        self.loop_depth = 0           # while loops around the instruction being emitted

    @property
    def contractions(self) -> ContractionEmitter:
        return self._contractions

    def pointer(self, buf: Buffer):
        buf = resolve(buf)
        found = self.pointers.get(id(buf))
        if found is not None:
            return found[1]
        ab = self.ctx.alloca_builder
        params, results, temp = self.fn.args
        if buf.kind is BufferKind.PARAM:
            ptr = ab.load(ab.gep(params, [const64(buf.number)], source_etype=PTR), typ=PTR)
        elif buf.kind is BufferKind.RESULT:
            ptr = ab.load(ab.gep(results, [const64(buf.number)], source_etype=PTR), typ=PTR)
        elif buf.kind is BufferKind.CONSTANT:
            ptr = self.elem.constant_global(buf.constant)
        else:
            ptr = ab.gep(temp, [const64(buf.offset)], source_etype=I8)
        self.pointers[id(buf)] = (buf, ptr)  # keeps buf alive so that its id stays unique
        return ptr

    # -- driver
    def lower(self) -> list[Part]:
        """The driver's part, then each kernel once (in order of first call)."""
        self._saved_float_mode = float_mode.enter(self.b, self.ctx.alloca_builder, self.float_mode)
        self.emit_heaviest_kernels_first()
        self.emit_computation(self.module.entry)
        self._copy_results()
        self.return_early()
        self.profiler.finish()
        self.ctx.finish()
        # O0: the driver is calls and control flow around a few scalars. LLVM's machine code time
        # on one large O1 function grows faster than linearly (17.5 s for the driver of a 30,000-
        # instruction module; 0.6 s at O0), and the models ran as fast with an O0 driver.
        driver = Part(self.name, str(self.llmod), DRIVER_OPT_LEVEL, vectorize=False)
        self.runtime_calls |= self._contractions.gemm.called
        return [driver, *self.kernels.values()]

    def return_early(self) -> None:
        """Return from the entry function here, the caller's float mode restored."""
        float_mode.leave(self.b, self._saved_float_mode)
        self.b.ret_void()

    def gemm_calls(self, llmod: ir.Module) -> GemmCalls:
        """How the module llmod (the driver's, or a kernel's) calls the runtime library's multiply."""
        return GemmCalls(llmod, self.name, self.target, self.runtime_tag, self.flush_denormals)

    def emit(self, inst: Instruction) -> None:
        with self.profiler.around(inst), self.debug.around(inst):
            self._emit(inst)

    def loop_entered(self) -> None:
        self.debug.loop_entered()

    def loop_iterated(self) -> None:
        self.debug.loop_iterated()

    def _emit(self, inst: Instruction) -> None:
        work = self._kernel_work(inst)
        if work is None:
            self.loop_depth += inst.opcode == Op.WHILE
            emit_instruction(self, inst)
            self.loop_depth -= inst.opcode == Op.WHILE
            return
        if self._inline(inst, work):
            self.inline += 1
            emit_instruction(self, inst)
            return
        self.call_instruction_kernel(inst, work)

    def _kernel_work(self, inst: Instruction) -> Optional[int]:
        """The work of inst's code here (weighted by the loops around), or None when the driver
        emits it as it is: collectives (the entry's hook table), names of buffers, and control
        flow around computations."""
        if EMITTERS.details(inst.opcode).get("in_driver") or _names_buffers_only(inst, self.a) \
                or inst.info.has(Trait.RUNS_COMPUTATIONS_AS_CODE):
            return None
        return instruction_work(inst) * LOOP_WEIGHT ** self.loop_depth

    def _inline(self, inst: Instruction, work: int) -> bool:
        """Whether inst is light enough to emit in the driver rather than as a kernel."""
        return work <= INLINE_WORK and id(inst) not in self.a.scratch

    def call_instruction_kernel(self, inst: Instruction, work: int) -> None:
        """Call inst's kernel: one emitted for an instruction of the same signature, or a new one."""
        signature = kernel_signature(inst, self.a, self._computation_signatures)
        known = self._by_signature.get(signature) if signature is not None else None
        if known is not None:
            code, roles, gemm, windowed = known
            _strengthen(code, kernel_opt_level(work, gemm, self.opt_level, windowed), kernel_vectorized(work, gemm))
            buffers = dict(buffer_roles(inst, self.a))
            self._call(code, [buffers[role] for role in roles])
            return
        gemm, windowed = uses_gemm(inst), is_windowed(inst)
        code, arguments = self.call_kernel(lambda k: emit_instruction(k, inst), work, gemm, windowed)
        self._remember(signature, inst, code, arguments, gemm, windowed)

    def _remember(self, signature, inst: Instruction, code: Part, arguments: list[Buffer], gemm: bool,
                  windowed: bool) -> None:
        """Keep inst's kernel for the instructions of the same signature (when its arguments have roles)."""
        roles = _roles_of_arguments(arguments, buffer_roles(inst, self.a) if signature is not None else None)
        if roles is not None:
            self._by_signature[signature] = (code, roles, gemm, windowed)

    def emit_heaviest_kernels_first(self) -> None:
        """With kernels streamed to the compile workers (on_kernel), the kernels of the entry's
        heaviest instructions (by work, those calling the multiply last) are emitted before the
        walk, which then finds them by signature: the longest compiles start first instead of
        when the walk reaches them (a small module's heaviest kernel, emitted last, finished
        last). Not with profiling or debug values, whose hooks follow the walk."""
        if self.on_kernel is None or self.hooks:
            return
        candidates = []
        for index, inst in enumerate(self.module.entry.instructions):
            work = self._kernel_work(inst)
            if work is not None and not self._inline(inst, work):
                candidates.append((-work, index, inst))
        # Kernels calling the runtime's multiply are the cheap ones to compile whatever their work.
        heaviest = [(uses_gemm(inst), negative_work, index, inst)
                    for negative_work, index, inst in sorted(candidates)[:2 * HEAVIEST_FIRST]]
        for gemm, negative_work, _, inst in sorted(heaviest)[:HEAVIEST_FIRST]:
            signature = kernel_signature(inst, self.a, self._computation_signatures)
            if signature is None or signature in self._by_signature:
                continue   # (a kernel found by no signature would be emitted again by the walk)
            windowed = is_windowed(inst)
            kernel, arguments = self._new_kernel(lambda k: emit_instruction(k, inst), -negative_work, gemm, windowed)
            self._remember(signature, inst, kernel, arguments, gemm, windowed)

    def copy_relayout(self, dst: Buffer, src: Buffer) -> None:
        """A copy between layouts (results, while-loop state): a kernel unless tiny."""
        work = dst.shape.element_count()
        if work <= INLINE_WORK:
            super().copy_relayout(dst, src)
        else:
            self.call_kernel(lambda kernel: kernel.copy_relayout(dst, src), work, False)

    def call_kernel(self, body: Callable[[KernelFunction], None], work: int,
                    gemm: bool, windowed: bool = False) -> tuple[Part, list[Buffer]]:
        """Emit a kernel with body(kernel) and call it here (one function for identical kernels);
        its part and its arguments' buffers."""
        known, buffers = self._new_kernel(body, work, gemm, windowed)
        self._call(known, buffers)
        return known, buffers

    def _new_kernel(self, body: Callable[[KernelFunction], None], work: int, gemm: bool,
                    windowed: bool) -> tuple[Part, list[Buffer]]:
        """The kernel body(kernel) emits (one part for identical kernels), sent on when new, and
        the buffers its arguments are."""
        kernel = KernelFunction(self.module, self.a, self.gemm_calls)
        body(kernel)
        code = kernel.finish(kernel_opt_level(work, gemm, self.opt_level, windowed), work,
                             kernel_vectorized(work, gemm))
        self.runtime_calls.update(kernel.imports)
        known = self.kernels.setdefault(code.name, code)
        if known is code and self.on_kernel is not None:
            self.on_kernel(code)
        _strengthen(known, code.opt_level, code.vectorize)
        return known, kernel.buffers

    def _call(self, code: Part, buffers: list[Buffer]) -> None:
        callee = self.llmod.globals.get(code.name)
        if callee is None:
            callee = ir.Function(self.llmod, ir.FunctionType(VOID, [PTR] * len(buffers)), name=code.name)
        self.b.call(callee, [self.pointer(buf) for buf in buffers])
        self.calls += 1
        if self.calls % CALLS_PER_BLOCK == 0:
            # code generation works block by block, in more than linear time in a block's length
            self.b.branch(following := self.b.append_basic_block("calls"))
            self.b.position_at_end(following)

    def _copy_results(self) -> None:
        for temp, param in self.a.result_stages:
            self.copy(temp, param)
        for j, src in self.a.result_copies:
            # an aliased result may be the very parameter buffer it copies (memmove allows that)
            self.copy(Buffer(src.shape, kind=BufferKind.RESULT, number=j), src, may_overlap=j in self.a.aliases)


def _strengthen(code: Part, opt_level: int, vectorize: bool) -> None:
    """The same code called from elsewhere (say inside a loop): the stronger optimisation of the two."""
    code.opt_level = max(code.opt_level, opt_level)
    code.vectorize = code.vectorize or vectorize


def _roles_of_arguments(arguments: list[Buffer], roles) -> Optional[list]:
    """The role of each kernel argument (its first role), or None when an argument has none."""
    if roles is None:
        return None
    first: dict[int, tuple] = {}
    for role, leaf in roles:
        first.setdefault(id(resolve(leaf)), role)
    found = [first.get(id(buf)) for buf in arguments]
    return None if any(role is None for role in found) else found


def _names_buffers_only(inst: Instruction, assignment: Assignment) -> bool:
    """Parameters, constants, tuples, get-tuple-element and bitcasts viewing their operand."""
    if inst.info.has(Trait.NO_CODE):
        return True
    value = assignment.values.get(id(inst))
    return inst.opcode == Op.BITCAST and isinstance(value, Buffer) and resolve(value) is not value
