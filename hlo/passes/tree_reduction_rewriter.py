"""tree-reduction-rewriter: reduce long dimensions in windows first (XLA:CPU's TreeReductionRewriter).

A single-operand reduce with a reduced dimension longer than 32 becomes a reduce-window
(windows of min(n, 32) elements along each reduced dimension, strides as long, `SAME`
padding) followed by the reduce of its result, repeated until no reduced dimension is
longer than 32. For floating-point sums this bounds the rounding error; for a reducer that
is not associative it is what decides XLA:CPU's result, which the interpreter computes in
the same order (hlo/interpreter/reduction_order.py).
"""
from __future__ import annotations

from ..attributes import Window, WindowDim
from ..interpreter.reduction_order import TREE_WINDOW
from ..ir import Instruction, Module
from ..opcodes import Op
from ..shapes import Shape
from .base import Pass, register
from .rewrite import Rewriter, unfused_instructions


def _has_long_dimension(inst: Instruction) -> bool:
    return (inst.opcode == Op.REDUCE and len(inst.operands) == 2 and inst.shape is not None
            and inst.shape.is_array and not inst.operands[0].shape.is_dynamic
            and any(inst.operands[0].shape.dims[d] > TREE_WINDOW for d in inst.attrs["dimensions"]))


def window_level(operand: Shape, dims) -> tuple[Window, tuple[int, ...]]:
    """The window of one step (SAME padding, as XLA's MakePadding) and its result's dimensions."""
    window, out = [], []
    for d, n in enumerate(operand.dims):
        if d not in dims:
            window.append(WindowDim(1))
            out.append(n)
            continue
        size = min(n, TREE_WINDOW)
        count = -(-n // size)
        padding = count * size - n
        window.append(WindowDim(size, stride=size, padding_low=padding // 2, padding_high=padding - padding // 2))
        out.append(count)
    return Window(tuple(window)), tuple(out)


@register
class TreeReductionRewriter(Pass):
    name = "tree-reduction-rewriter"
    description = "Reduce dimensions longer than 32 in windows of 32 first, as XLA:CPU does."
    edits_tracked = True  # (base.py)

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        changed = False
        found = unfused_instructions(module, _has_long_dimension)
        while found:
            for inst in found:
                self._rewrite(rewriter, inst)
            changed = True
            found = unfused_instructions(module, _has_long_dimension)
        return changed

    @staticmethod
    def _rewrite(rewriter: Rewriter, inst: Instruction) -> None:
        x, init = inst.operands
        dims = tuple(inst.attrs["dimensions"])
        window, out = window_level(x.shape, dims)
        shape = Shape.array(init.shape.element_type, out).with_default_layouts()
        windows = rewriter.add(inst.parent, Op.REDUCE_WINDOW, shape, [x, init],
                               {"window": window, "to_apply": inst.attrs["to_apply"]}, before=inst, like=inst)
        inst.replace_operand(0, windows)
