"""dot-decomposer: rewrite dots into canonical batch-matmul form (XLA's DotDecomposer).

Canonical: batch dimensions first and in order, exactly one contracting
dimension, at most one free (non-contracting) dimension per operand:

    lhs [batch..., m, k]   (or [batch..., k, m])
    rhs [batch..., k, n]   (or [batch..., n, k])

Any other dot gets its operands transposed (batch dims, then free dims, then
contracting dims for the lhs; batch, contracting, free for the rhs) and reshaped
(free dims merged into one, contracting dims merged into one; a free part of
size 1 is dropped), multiplied as a canonical dot, and the result reshaped back
to the original shape. Dots without contracting dims get a contracting dim of
size 1. As an improvement on XLA, identity transposes and no-op reshapes are not
emitted. Dots with dynamic dimensions and dots in fusion computations are left alone.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir import Instruction, Module
from ..opcodes import Op
from ..shapes import Shape
from .base import Pass, register
from .rewrite import Rewriter, replace, unfused_instructions


@register
class DotDecomposer(Pass):
    name = "dot-decomposer"
    description = "Rewrite dots into [batch,m,k] x [batch,k,n] form with transposes and reshapes."
    edits_tracked = True  # (base.py)

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        dots = unfused_instructions(module, lambda inst: inst.opcode == Op.DOT and needs_canonicalizing(inst))
        for inst in dots:
            canonicalize_dot(inst, rewriter)
        return bool(dots)


def is_canonical(shape: Shape, contracting, batch) -> bool:
    """Batch dims 0..b-1, one contracting dim and at most one free dim."""
    return (len(contracting) == 1 and len(batch) + 2 >= shape.rank
            and tuple(batch) == tuple(range(len(batch))))


def needs_canonicalizing(dot: Instruction) -> bool:
    lhs, rhs = dot.operands
    if any(s.is_dynamic for s in (lhs.shape, rhs.shape, dot.shape)):
        return False
    a = dot.attrs
    return not (is_canonical(lhs.shape, a.get("lhs_contracting_dims", ()), a.get("lhs_batch_dims", ()))
                and is_canonical(rhs.shape, a.get("rhs_contracting_dims", ()), a.get("rhs_batch_dims", ())))


@dataclass
class CanonicalOperand:
    value: Instruction        # the transposed and reshaped operand
    contracting_dim: int      # its single contracting dimension
    free_size: int            # product of the free dimensions (1: no free dimension)


def canonicalize_operand(operand: Instruction, batch, contracting, contracting_last: bool,
                         dot: Instruction, rewriter: Rewriter) -> CanonicalOperand:
    """[batch..., free, contracting] (contracting_last) or [batch..., contracting, free]."""
    dims = operand.shape.dims
    free = [d for d in range(len(dims)) if d not in batch and d not in contracting]
    free_size = _product(dims[d] for d in free)
    contracting_size = _product(dims[d] for d in contracting)
    order = list(batch) + (free + list(contracting) if contracting_last else list(contracting) + free)
    value = operand
    if order != list(range(len(dims))):
        shape = Shape.array(operand.shape.element_type, [dims[d] for d in order]).with_default_layouts()
        value = rewriter.add(dot.parent, Op.TRANSPOSE, shape, [operand], {"dimensions": tuple(order)},
                             before=dot, like=operand)
    merged_free = [free_size] if free_size != 1 else []
    new_dims = [dims[d] for d in batch] + (merged_free + [contracting_size] if contracting_last
                                          else [contracting_size] + merged_free)
    if tuple(new_dims) != value.shape.dims:
        shape = Shape.array(operand.shape.element_type, new_dims).with_default_layouts()
        value = rewriter.add(dot.parent, Op.RESHAPE, shape, [value], before=dot, like=value)
    contracting_dim = len(batch) + (len(merged_free) if contracting_last else 0)
    return CanonicalOperand(value, contracting_dim, free_size)


def canonicalize_dot(dot: Instruction, rewriter: Rewriter) -> Instruction:
    a = dot.attrs
    lhs_batch, rhs_batch = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("rhs_batch_dims", ()))
    lhs = canonicalize_operand(dot.operands[0], lhs_batch, tuple(a.get("lhs_contracting_dims", ())),
                               True, dot, rewriter)
    rhs = canonicalize_operand(dot.operands[1], rhs_batch, tuple(a.get("rhs_contracting_dims", ())),
                               False, dot, rewriter)
    batch = tuple(range(len(lhs_batch)))
    result_dims = [dot.operands[0].shape.dims[d] for d in lhs_batch]
    result_dims += [s for s in (lhs.free_size, rhs.free_size) if s != 1]
    attrs = dict(a)
    attrs.update(lhs_batch_dims=batch, rhs_batch_dims=batch,
                 lhs_contracting_dims=(lhs.contracting_dim,), rhs_contracting_dims=(rhs.contracting_dim,))
    if tuple(result_dims) == dot.shape.dims:
        shape = dot.shape
    else:
        shape = Shape.array(dot.shape.element_type, result_dims).with_default_layouts()
    new_dot = rewriter.add(dot.parent, Op.DOT, shape, [lhs.value, rhs.value], attrs, before=dot, like=dot)
    new_dot.frontend_attributes = dot.frontend_attributes
    result = new_dot
    if shape is not dot.shape:
        result = rewriter.add(dot.parent, Op.RESHAPE, dot.shape, [new_dot], before=dot, like=dot)
    replace(dot, result)
    return result


def _product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out
