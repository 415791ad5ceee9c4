"""transpose-folding: fold transposed dot and convolution operands into dimension numbers.

    dot(transpose(a), b), lhs_contracting_dims={1}  ->  dot(a, b), lhs_contracting_dims={0}

A dot names its operand dimensions, so reading a transposed operand is the same
as reading the original one at the permuted dimensions: batch and contracting
dimension d of transpose(a, P) is dimension P[d] of a. The result of a dot
lists each operand's remaining (free) dimensions in operand order, so a
transpose folds only if it keeps the free dimensions in the same relative
order. XLA's default rule (TransposeFolding::IsRowColumnTransposeDotOperand:
batch dims fixed, one contracting dim, matrix operand) is one case of this.

Convolutions name every dimension through dim_labels, so a transpose of the
input or the kernel always folds (XLA's default AlwaysFoldTranspose).
The transposes stay for dce to remove when nothing else reads them. Fusion
computations and composite-call bodies are left alone, as XLA does.
"""
from __future__ import annotations

import dataclasses

from ..attributes import ConvDims
from ..ir import Instruction, Module
from ..opcodes import Op
from .analysis import is_identity_permutation
from .base import Pass, register


@register
class TransposeFolding(Pass):
    name = "transpose-folding"
    description = "Fold transposes of dot/convolution operands into the dot dimensions or dim_labels."
    edits_tracked = True  # (base.py)

    def run(self, module: Module) -> bool:
        skipped = _fusion_and_composite_bodies(module)
        changed = False
        for comp in module.computations:
            if id(comp) in skipped:
                continue
            for inst in list(comp.instructions):
                if inst.opcode == Op.DOT:
                    changed |= fold_into_dot(inst)
                elif inst.opcode == Op.CONVOLUTION:
                    changed |= fold_into_convolution(inst)
        return changed


def _fusion_and_composite_bodies(module: Module) -> set[int]:
    return {id(c) for inst in module.instructions()
            if inst.opcode == Op.FUSION or (inst.opcode == Op.CALL and inst.attrs.get("is_composite"))
            for c in inst.called_computations()}


def _is_non_identity_transpose(inst: Instruction) -> bool:
    return inst.opcode == Op.TRANSPOSE and not is_identity_permutation(inst.attrs["dimensions"])


# --------------------------------------------------------------------------- dot

_SIDES = (("lhs_batch_dims", "lhs_contracting_dims"), ("rhs_batch_dims", "rhs_contracting_dims"))


def can_fold_dot_operand(dot: Instruction, index: int) -> bool:
    """Whether the transpose feeding operand `index` keeps the free dimensions in order."""
    transpose = dot.operands[index]
    if not _is_non_identity_transpose(transpose):
        return False
    batch_key, contracting_key = _SIDES[index]
    named = set(dot.attrs.get(batch_key, ())) | set(dot.attrs.get(contracting_key, ()))
    perm = transpose.attrs["dimensions"]
    free_sources = [perm[d] for d in range(transpose.shape.rank) if d not in named]
    return free_sources == sorted(free_sources)


def fold_into_dot(dot: Instruction) -> bool:
    folded = [i for i in (0, 1) if can_fold_dot_operand(dot, i)]
    for index in folded:
        transpose = dot.operands[index]
        perm = transpose.attrs["dimensions"]
        for key in _SIDES[index]:
            if key in dot.attrs:
                dot.attrs[key] = tuple(perm[d] for d in dot.attrs[key])
        dot.replace_operand(index, transpose.operands[0])
    return bool(folded)


# --------------------------------------------------------------------------- convolution

def fold_into_convolution(conv: Instruction) -> bool:
    dims: ConvDims = conv.attrs["dim_labels"]
    changed = False
    lhs, rhs = conv.operands[0], conv.operands[1]
    if lhs.opcode == Op.TRANSPOSE:
        p = lhs.attrs["dimensions"]
        dims = dataclasses.replace(dims, input_batch=p[dims.input_batch], input_feature=p[dims.input_feature],
                                   input_spatial=tuple(p[d] for d in dims.input_spatial))
        conv.replace_operand(0, lhs.operands[0])
        changed = True
    if rhs.opcode == Op.TRANSPOSE:
        p = rhs.attrs["dimensions"]
        dims = dataclasses.replace(dims, kernel_input_feature=p[dims.kernel_input_feature],
                                   kernel_output_feature=p[dims.kernel_output_feature],
                                   kernel_spatial=tuple(p[d] for d in dims.kernel_spatial))
        conv.replace_operand(1, rhs.operands[0])
        changed = True
    conv.attrs["dim_labels"] = dims
    return changed
