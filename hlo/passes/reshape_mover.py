"""reshape-mover: sink reshapes and transposes through elementwise ops (XLA's ReshapeMover).

    add(transpose(a), transpose(b))  ->  transpose(add(a, b))

An elementwise instruction is a candidate when one of its operands is a
"rearrange" (reshape or transpose) that is not trivial, every other rearrange
operand is an equivalent one (same kind, same shapes, same permutation), and
every remaining operand can take the inverse rearrange for free: a constant
(its literal is rearranged), a broadcast of a scalar, a broadcast whose
dimensions stay in order under the transpose, or an rng with one user.
The elementwise op then runs on the un-rearranged values and one rearrange of
its result replaces it, so chains of rearranges meet and cancel: a moved
rearrange whose user rearranges it straight back is bypassed.

A candidate moves only if every user of each of its rearrange operands moves
too (otherwise the rearrange would be computed twice); the candidate set is
pruned until that holds, as XLA does. Unlike XLA, which leaves
transpose'(transpose(x)) and reshape(constant) for the algebraic simplifier,
this pass uses x directly and rearranges constant literals itself, and it
repeats until nothing moves, so rearranges travel all the way down. Dead
rearranges are left for dce. Fusion computations are not touched.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..analysis.effects import has_side_effect
from ..ir import Computation, Instruction, Module
from ..literal import Literal
from ..opcodes import Op, Trait, ops_with
from ..shapes import Shape
from .analysis import inverse_permutation, is_identity_permutation
from .base import Pass, register
from .rewrite import Rewriter, repeat_while_changing, replace, rewrite_unfused_computations

_MAX_ROUNDS = 1000  # each round sinks rearranges strictly downwards; this only bounds pathological inputs


@register
class ReshapeMover(Pass):
    name = "reshape-mover"
    description = "Sink equivalent reshapes/transposes below elementwise ops so that rearranges cancel."
    edits_tracked = True  # (base.py)

    def run(self, module: Module) -> bool:
        return rewrite_unfused_computations(
            module, lambda comp, rewriter: repeat_while_changing(lambda: sink_rearranges(comp, rewriter), _MAX_ROUNDS))


# --------------------------------------------------------------------------- rearranges

_REARRANGES = ops_with(Trait.REARRANGE)


def is_rearrange(inst: Instruction) -> bool:
    return inst.opcode in _REARRANGES and _is_static_array(inst.shape) \
        and _is_static_array(inst.operands[0].shape)


def _is_static_array(shape: Shape) -> bool:
    return not shape.is_tuple and shape.is_array and not shape.is_dynamic


def is_nop_rearrange(inst: Instruction) -> bool:
    if inst.opcode == Op.RESHAPE:
        return inst.shape.dims == inst.operands[0].shape.dims
    return is_identity_permutation(inst.attrs["dimensions"])


def equivalent_rearranges(a: Instruction, b: Instruction) -> bool:
    """Same kind of rearrange between the same dimensions (element types may differ)."""
    if a.opcode != b.opcode or a.shape.dims != b.shape.dims:
        return False
    if a.opcode == Op.TRANSPOSE:
        return tuple(a.attrs["dimensions"]) == tuple(b.attrs["dimensions"])
    return a.operands[0].shape.dims == b.operands[0].shape.dims


def _transposed_broadcast_dims(broadcast: Instruction, rearrange: Instruction) -> tuple[int, ...]:
    """Dimensions the broadcast needs to produce transpose^-1 of its result directly.

    Result dim d of the broadcast lands at P[d] in the un-transposed shape.
    """
    perm = rearrange.attrs["dimensions"]
    return tuple(perm[d] for d in broadcast.attrs["dimensions"])


def can_trivially_rearrange(inst: Instruction, rearrange: Instruction) -> bool:
    """Whether `inst` can take the inverse of `rearrange` without real work."""
    if is_nop_rearrange(rearrange):
        return True
    if inst.opcode == Op.CONSTANT:
        return not inst.shape.is_tuple
    if inst.opcode == Op.RNG:
        # Any shape of rng draws equally random numbers; with one user nothing else sees the old shape.
        return len(inst.users) == 1
    if inst.opcode == Op.BROADCAST:
        dims = tuple(inst.attrs["dimensions"])
        if list(dims) != sorted(dims):
            return False  # such a broadcast is really a transpose
        if inst.operands[0].shape.is_scalar:
            return True
        if rearrange.opcode == Op.TRANSPOSE:
            new_dims = _transposed_broadcast_dims(inst, rearrange)
            return list(new_dims) == sorted(new_dims)
    return False


def first_nontrivial_rearrange(operands) -> Optional[Instruction]:
    for op in operands:
        if is_rearrange(op) and not can_trivially_rearrange(op.operands[0], op):
            return op
    return None


# --------------------------------------------------------------------------- candidates

def is_candidate(inst: Instruction) -> bool:
    """An elementwise op whose operands can all be un-rearranged in the same way."""
    if not any(op.opcode in _REARRANGES for op in inst.operands):
        return False  # no rearrange to sink (most instructions: asked first, it is the cheapest)
    if not inst.info.is_elementwise or has_side_effect(inst) or not _is_static_array(inst.shape):
        return False
    # Implicitly broadcast scalar operands (clamp bounds) or width-changing bitcast-converts do not fit.
    if any(op.shape.is_tuple or op.shape.dims != inst.shape.dims for op in inst.operands):
        return False
    anchor = first_nontrivial_rearrange(inst.operands)
    if anchor is None:
        return False
    return all(equivalent_rearranges(op, anchor) if is_rearrange(op) else can_trivially_rearrange(op, anchor)
               for op in inst.operands)


def prune_candidates(candidates: list[Instruction]) -> list[Instruction]:
    """Drop candidates until every user of every rearrange operand is a candidate."""
    chosen = {id(i): i for i in candidates}
    removed = True
    while chosen and removed:
        removed = False
        rearranges = {id(op): op for inst in chosen.values() for op in inst.operands if is_rearrange(op)}
        for op in rearranges.values():
            if any(id(user) not in chosen for user in op.users) or op is op.parent.root:
                for user in op.users:
                    removed |= chosen.pop(id(user), None) is not None
    return [i for i in candidates if id(i) in chosen]


def sink_rearranges(comp: Computation, rewriter: Rewriter) -> bool:
    candidates = prune_candidates([i for i in comp.instructions if is_candidate(i)])
    moved = [sink_through(inst, rewriter) for inst in candidates]
    # Only now: bypassing a rearrange earlier could take the anchor away from a later candidate.
    for outer in moved:
        cancel_inverse_users(outer)
    return bool(candidates)


# --------------------------------------------------------------------------- rewriting

def sink_through(inst: Instruction, rewriter: Rewriter) -> Instruction:
    """Replace elementwise `inst` by rearrange(inst'(inverse-rearranged operands))."""
    comp = inst.parent
    anchor = first_nontrivial_rearrange(inst.operands)
    operands = [apply_inverse(anchor, op, inst, rewriter) for op in inst.operands]
    inner_shape = Shape.array(inst.shape.element_type, anchor.operands[0].shape.dims).with_default_layouts()
    inner = inst.clone(operands, rewriter.names.unique(inst.name))
    inner.shape = inner_shape
    inner.sharding = None  # the shape changed, so a sharding would no longer fit
    comp.add(inner, before=inst)
    attrs = {"dimensions": tuple(anchor.attrs["dimensions"])} if anchor.opcode == Op.TRANSPOSE else {}
    outer = rewriter.add(comp, anchor.opcode, inst.shape, [inner], attrs, before=inst, like=inst)
    replace(inst, outer)
    return outer


def cancel_inverse_users(rearrange: Instruction) -> None:
    """Users that rearrange `rearrange` straight back use its operand instead."""
    for user in list(rearrange.users):
        if undoes(user, rearrange):
            replace(user, rearrange.operands[0])


def undoes(user: Instruction, rearrange: Instruction) -> bool:
    """Whether `user` rearranges `rearrange`'s result back to exactly its operand."""
    source = rearrange.operands[0]
    if not is_rearrange(user) or user.opcode != rearrange.opcode or user.shape.dims != source.shape.dims:
        return False
    if user is user.parent.root and user.shape != source.shape:
        return False  # the computation's result layout would change
    if user.opcode == Op.RESHAPE:
        return True
    perm, back = rearrange.attrs["dimensions"], user.attrs["dimensions"]
    return all(perm[back[i]] == i for i in range(len(back)))


def apply_inverse(anchor: Instruction, operand: Instruction, user: Instruction, rewriter: Rewriter) -> Instruction:
    """`operand` rearranged by the inverse of `anchor` (an instruction in user's computation)."""
    target_dims = anchor.operands[0].shape.dims
    if is_rearrange(operand) and equivalent_rearranges(operand, anchor):
        return operand.operands[0]
    comp = user.parent
    shape = Shape.array(operand.shape.element_type, target_dims).with_default_layouts()
    if operand.opcode == Op.CONSTANT and not operand.attrs["literal"].elided:
        array = _inverse_rearrange_array(anchor, operand.attrs["literal"].array, target_dims)
        return rewriter.add(comp, Op.CONSTANT, shape, (), {"literal": Literal.from_array(array, shape)},
                            before=user, like=operand)
    if operand.opcode == Op.BROADCAST and operand.operands[0].shape.is_scalar:
        return rewriter.add(comp, Op.BROADCAST, shape, [operand.operands[0]], {"dimensions": ()},
                            before=user, like=operand)
    if operand.opcode == Op.BROADCAST and anchor.opcode == Op.TRANSPOSE:
        dims = _transposed_broadcast_dims(operand, anchor)
        return rewriter.add(comp, Op.BROADCAST, shape, [operand.operands[0]], {"dimensions": dims},
                            before=user, like=operand)
    # An elided constant or an rng: rearrange it explicitly.
    if anchor.opcode == Op.RESHAPE:
        return rewriter.add(comp, Op.RESHAPE, shape, [operand], before=user, like=operand)
    perm = inverse_permutation(anchor.attrs["dimensions"])
    return rewriter.add(comp, Op.TRANSPOSE, shape, [operand], {"dimensions": perm}, before=user, like=operand)


def _inverse_rearrange_array(anchor: Instruction, array: np.ndarray, target_dims) -> np.ndarray:
    if anchor.opcode == Op.RESHAPE:
        return np.ascontiguousarray(array).reshape(target_dims)
    return np.ascontiguousarray(np.transpose(array, inverse_permutation(anchor.attrs["dimensions"])))
