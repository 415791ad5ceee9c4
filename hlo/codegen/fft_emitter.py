"""The `fft` emitter: a call of the FftPlan kernel (fft.py) for the instruction's type and lengths.

The kernel reads and writes dense row-major [batch, *dims] arrays. The operand is read in
place when its buffer is such an array; otherwise (another layout, or an operand computed
element by element inside a fusion) it is first copied row-major into scratch. A result
whose layout is not row-major is written to scratch and copied into its buffer.

Scratch (one block, 64-byte aligned pieces): the plan's own working memory, then the
row-major input copy and the row-major output when they are needed. Plans of one LLVM
module share their kernels and tables; each distinct (type, lengths, precision) is
emitted once, as `<entry>.fft.<k>`.
"""
from __future__ import annotations

import weakref

from llvmlite import ir

from ..diagnostics import error
from ..ir import Instruction
from ..opcodes import Op
from ..shapes import Shape
from .buffers import Buffer
from .emitters import EMITTERS
from .fft import FftPlan
from .function_context import const64
from .types import I8, PTR, load_element

ALIGN = 64

# llvm module -> {(fft_type, lengths, complex_bits): function}
_FUNCTIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _aligned(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def _row_major(shape: Shape) -> bool:
    return list(shape.minor_to_major()) == list(range(shape.rank - 1, -1, -1))


def _dense(shape: Shape) -> Shape:
    """The same array in row-major order (the kernel's)."""
    return shape.with_layout(None)


def plan_of(inst: Instruction, vector_bits: int = 256) -> FftPlan:
    lengths = tuple(inst.attrs["fft_length"])
    operand = inst.operands[0].shape.element_type
    wide = operand.name in ("f64", "c128")
    return FftPlan(inst.attrs["fft_type"], lengths, 128 if wide else 64, vector_bits)


def batch_of(inst: Instruction) -> int:
    shape = inst.shape
    lead = shape.dims[:shape.rank - len(inst.attrs["fft_length"])]
    count = 1
    for d in lead:
        count *= d
    return count


def _layout_of_pieces(inst: Instruction, fused: bool) -> tuple[int, int, int]:
    """Bytes of (plan scratch, input copy, output staging) for inst."""
    plan = plan_of(inst)
    batch = batch_of(inst)
    operand = inst.operands[0].shape
    copy_in = fused or not _row_major(operand)
    copy_out = not _row_major(inst.shape)
    return (_aligned(plan.scratch_bytes(batch)), _aligned(operand.byte_size()) if copy_in else 0,
            _aligned(inst.shape.byte_size()) if copy_out else 0)


def fft_scratch_bytes(inst: Instruction, fused: bool = False) -> int:
    return sum(_layout_of_pieces(inst, fused))


def _function(low, inst: Instruction) -> ir.Function:
    plan = plan_of(inst, low.contractions.gemm.target.vector_bits)
    functions = _FUNCTIONS.setdefault(low.llmod, {})
    key = (plan.fft_type, plan.lengths, plan.complex_bits)
    fn = functions.get(key)
    if fn is None:
        fn = plan.emit(low.llmod, f"{low.fn.name}.fft.{len(functions)}")
        fn.linkage = "internal"   # kernels' modules each have their own (linked into one AOT object)
        functions[key] = fn
    return fn


@EMITTERS.register(Op.FFT, scratch_bytes=fft_scratch_bytes, writes_into=True,
                   fused_scratch_bytes=lambda inst: fft_scratch_bytes(inst, fused=True))
def emit_fft(low, inst: Instruction, value=None, scratch=None) -> None:
    """Compute inst into `value` (default: its buffer) using `scratch` (default: its own)."""
    fused = value is not None
    if value is None:
        value = low.a.values[id(inst)]
    if not isinstance(value, Buffer):
        raise error(f"the cpu backend cannot compile 'fft' with a tuple result (%{inst.name})", inst.loc)
    if scratch is None:
        buffer = low.a.scratch.get(id(inst))
        scratch = low.pointer(buffer) if buffer is not None else ir.Constant(PTR, None)
    b = low.b
    work, copy_in, copy_out = _layout_of_pieces(inst, fused)

    def piece(offset: int):
        return b.gep(scratch, [const64(offset)], source_etype=I8)

    operand = inst.operands[0]
    if copy_in:
        source = piece(work)
        with low.ctx.scope():
            low.store_loop(_dense(operand.shape), source, lambda index: low.elem.value(operand, index))
    else:
        source = low.buffer_of(operand)
    target = piece(work + copy_in) if copy_out else low.pointer(value)
    b.call(_function(low, inst), [source, target, const64(batch_of(inst)), piece(0)])
    if copy_out:
        dense = _dense(inst.shape)
        with low.ctx.scope():
            low.store_loop(value.shape, low.pointer(value), lambda index: load_element(b, target, dense, index))
