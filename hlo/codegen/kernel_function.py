"""One kernel: an instruction's code as a function of its own, in an LLVM module of its own.

    void hlo.k.<hash>(ptr noalias %b0, ptr noalias %b1, ...)

The kernel's arguments are the buffers it touches, in the order the emitter first asks
for them (`pointer`), so nothing in its text depends on where the buffers live or on the
instruction's name: two instructions with the same computation, shapes and layouts give the
same text, hence the same function name (a hash of the text). The driver (driver.py)
calls each kernel with its buffers' addresses; identical kernels are compiled once, and the
object cache (object_cache.py) keeps them across modules and edits.

Arguments are `noalias`: the buffers one instruction touches are live at the same time,
so buffer assignment gave them disjoint memory; an argument may share the caller's memory
only when it is an entry parameter and result aliased by input_output_alias (then the
attribute is left off). Constants fused into the kernel are globals of its module, named by
their order of use; top-level constants are arguments like any buffer.
"""
from __future__ import annotations

import hashlib
import math
from typing import Callable

from llvmlite import ir

from ..attributes import DotDims
from ..ir import Instruction, Module
from ..opcodes import Category, Op, Trait
from .buffers import Assignment, Buffer, BufferKind, resolve
from .contraction import ContractionEmitter, conv_dims, fused_plans, top_level_plan
from .elemental import ElementalEmitter, steps_over_holes
from .function_context import FunctionContext
from .gemm import GemmCalls
from .kernels import Lowering
from .options import Part
from .types import PTR

VOID = ir.VoidType()
PLACEHOLDER = "__hlo_kernel__"    # the function's name until its text is known
PREFIX = "hlo.k."


class _KernelElemental(ElementalEmitter):
    """Fused constants as globals named by order of use, not by instruction name."""

    def constant_global(self, inst: Instruction):
        found = self.ctx.globals.get(id(inst))
        if found is not None:
            return found
        global_ = super().constant_global(inst)
        global_.name = f"const.{len(self.ctx.globals) - 1}"
        return global_


class KernelFunction(Lowering):
    """Emits one instruction (or a copy) into a fresh module; `finish()` gives its text."""

    def __init__(self, module: Module, assignment: Assignment, gemm: Callable[[ir.Module], GemmCalls]):
        self.module = module
        self.a = assignment
        self._gemm = gemm
        self.llmod = ir.Module(name="kernel")
        self.fn = ir.Function(self.llmod, ir.FunctionType(VOID, []), name=PLACEHOLDER)
        self.ctx = FunctionContext(self.llmod, self.fn)
        self.elem = _KernelElemental(self.ctx, self.buffer_of)
        self.buffers: list[Buffer] = []       # argument k is buffers[k]
        self._arguments: dict[int, ir.Argument] = {}
        self._contractions = None
        self.imports: set[str] = set()   # the runtime library's functions it calls
        self._shared_params = set(assignment.aliases.values())
        self._shared_results = set(assignment.aliases)

    @property
    def contractions(self) -> ContractionEmitter:
        """Multiplies call the runtime library (runtime_library.py)."""
        if self._contractions is None:
            self._contractions = ContractionEmitter(self, self._gemm(self.llmod))
        return self._contractions

    def pointer(self, buf: Buffer):
        buf = resolve(buf)
        found = self._arguments.get(id(buf))
        if found is not None:
            return found
        argument = ir.Argument(self.fn, PTR, name=f"b{len(self.buffers)}")
        if not self._may_share_memory(buf):
            argument.add_attribute("noalias")
        self.fn.args = self.fn.args + (argument,)
        self.fn.ftype = ir.FunctionType(VOID, [PTR] * len(self.fn.args))
        self.buffers.append(buf)
        self._arguments[id(buf)] = argument
        return argument

    def _may_share_memory(self, buf: Buffer) -> bool:
        return (buf.kind is BufferKind.PARAM and buf.number in self._shared_params) or \
            (buf.kind is BufferKind.RESULT and buf.number in self._shared_results)

    def finish(self, opt_level: int, work: int, vectorize: bool = True) -> Part:
        """The kernel's text with its function named by the hash of that text."""
        self.b.ret_void()
        self.ctx.finish()
        self.imports = self._contractions.gemm.called if self._contractions is not None else set()
        text = str(self.llmod)
        name = PREFIX + hashlib.sha256(text.encode()).hexdigest()[:24]
        return Part(name, text.replace(f'@"{PLACEHOLDER}"', f'@"{name}"'), opt_level, work, vectorize)


# --------------------------------------------------------------------------- how much work a kernel does

def instruction_work(inst: Instruction) -> int:
    """Element operations an instruction's kernel performs, roughly: the elements each fused
    instruction computes (reductions and sorts: the elements they read; contractions: their
    multiply-adds; transcendental functions count eight)."""
    fused = inst.attrs["calls"].instructions if inst.opcode == Op.FUSION else [inst]
    return max(sum(_own_work(i) for i in fused if not i.info.has(Trait.NO_CODE)), 1)


def _own_work(inst: Instruction) -> int:
    if inst.opcode == Op.DOT or inst.opcode == Op.CONVOLUTION:
        return _contraction_work(inst)
    out = sum(_elements(leaf) for _, leaf in inst.shape.leaves())
    info = inst.info
    if info.category is Category.REDUCTION or inst.opcode == Op.SORT:
        read = sum(_elements(leaf) for op in inst.operands for _, leaf in op.shape.leaves())
        if inst.opcode == Op.REDUCE_WINDOW and inst.attrs.get("window") is not None:
            read = out * math.prod(w.size for w in inst.attrs["window"].dims)
        if inst.opcode == Op.SORT:
            read *= max(inst.operands[0].shape.element_count(), 2).bit_length()
        return max(out, read)
    weight = 8 if info.is_elementwise and (info.transcendental or info.has(Trait.EXPENSIVE)) else 1
    return out * weight


def _contraction_work(inst: Instruction) -> int:
    """Multiply-adds: output elements times the contraction's depth."""
    if inst.opcode == Op.DOT:
        lhs = inst.operands[0].shape
        return _elements(inst.shape) * math.prod(lhs.dims[d] for d in DotDims.of(inst).lhs_contracting)
    kernel = inst.operands[1].shape
    features = kernel.dims[conv_dims(inst).kernel_output_feature]
    window = inst.attrs.get("window")
    holes = math.prod(wd.base_dilation for wd in window.dims) if window is not None else 1   # taps on holes: skipped
    return max(_elements(inst.shape) * (_elements(kernel) // max(features, 1)) // holes, 1)


def _elements(shape) -> int:
    return math.prod(shape.dims) if shape.is_array and shape.rank else 1


def is_windowed(inst: Instruction) -> bool:
    """Whether the kernel has loops over windows or contractions (each element read repeatedly)
    that O3 may unroll: a transposed convolution whose windows all step over the holes of its
    input (elemental.steps_over_holes) has none."""
    fused = inst.attrs["calls"].instructions if inst.opcode == Op.FUSION else [inst]
    return any(i.info.has(Trait.READS_OPERAND_ELEMENTS_REPEATEDLY) and not _windows_all_stepped(i) for i in fused)


def _windows_all_stepped(inst: Instruction) -> bool:
    window = inst.attrs.get("window") if inst.opcode == Op.CONVOLUTION else None
    return window is not None and all(steps_over_holes(wd) for wd in window.dims if wd.size > 1)


def uses_gemm(inst: Instruction) -> bool:
    """Whether the instruction's contraction runs through gemm.py's blocked multiply."""
    if inst.opcode == Op.FUSION:
        return bool(fused_plans(inst))
    return top_level_plan(inst, inst.shape if inst.shape.is_array else None) is not None
