"""algsimp rules for the ops that apply a computation: reduce (empty, element-count
preserving, of a broadcast, of a transpose), sort along a trivial dimension, trivial maps."""
from __future__ import annotations

import math

from ...opcodes import Op, Trait, has_trait
from .facts import broadcast_dims, is_zero_elements, scalar_binary_reducer, user_count
from .rules import RULES


# =========================================================================== reduce


@RULES.register(Op.REDUCE)
def reduce_empty(ctx, inst):
    """A reduce with a zero-element input or result -> broadcast(init) (a tuple of them when
    variadic)."""
    n = len(inst.operands) // 2
    inputs, inits = inst.operands[:n], inst.operands[n:]
    result_shapes = inst.shape.tuple_shapes if inst.shape.is_tuple else (inst.shape,)
    if not (is_zero_elements(inputs[0]) or result_shapes[0].element_count() == 0):
        return None
    if not inst.shape.is_tuple:
        return ctx.broadcast_to(inits[0], inst.shape, final=True)
    parts = [ctx.broadcast_to(init, s) for init, s in zip(inits, result_shapes)]
    return ctx.add(Op.TUPLE, inst.shape, parts, final=True)


@RULES.register(Op.REDUCE)
def reduce_keeps_element_count(ctx, inst):
    """A reduce over no dimensions or only size-1 dimensions -> reshape(X) (a tuple of them when
    variadic): as XLA, which takes init as the reducer's identity (the interpreter computes
    such a reduce the same way, hlo/interpreter/reduction_order.py)."""
    n = len(inst.operands) // 2
    inputs = inst.operands[:n]
    result_shapes = inst.shape.tuple_shapes if inst.shape.is_tuple else (inst.shape,)
    if inputs[0].shape.element_count() != result_shapes[0].element_count() or is_zero_elements(inputs[0]):
        return None
    if not inst.shape.is_tuple:
        return ctx.replace_shape(inputs[0], inst.shape)
    parts = [ctx.replace_shape(x, s) for x, s in zip(inputs, result_shapes)]
    return ctx.add(Op.TUPLE, inst.shape, parts, final=True)


@RULES.register(Op.REDUCE)
def reduce_of_broadcast(ctx, inst):
    """reduce(broadcast(X)):
    - max/min/and/or over every dimension of a broadcast scalar -> op(X, init);
    - over dimensions that all come from X -> broadcast(reduce(X));
    - add over dimensions the broadcast added -> broadcast(init + X * N), N the number of
      copies summed (exact for integers, rounding differs for floats, as in XLA)."""
    if len(inst.operands) != 2:
        return None
    arg, init = inst.operands
    if arg.opcode != Op.BROADCAST:
        return None
    x = arg.operands[0]
    bdims = broadcast_dims(arg)
    rdims = tuple(inst.attrs["dimensions"])
    reducer = scalar_binary_reducer(inst.attrs["to_apply"])
    opcode = reducer[0] if reducer else None
    if has_trait(opcode, Trait.IDEMPOTENT) and x.shape.is_scalar and len(rdims) == arg.shape.rank:
        return ctx.add(opcode, inst.shape, [x, init], final=True)
    if rdims and all(d in bdims for d in rdims):
        xdims = tuple(bdims.index(d) for d in rdims)
        kept = [k for k in range(x.shape.rank) if k not in xdims]
        reduced = ctx.add(Op.REDUCE, ctx.array_shape(inst.shape.element_type, [x.shape.dims[k] for k in kept]),
                          [x, init], {"dimensions": tuple(sorted(xdims)), "to_apply": inst.attrs["to_apply"]})
        new_dims = tuple(bdims[k] - sum(1 for d in rdims if d < bdims[k]) for k in kept)
        return ctx.add(Op.BROADCAST, inst.shape, [reduced], {"dimensions": new_dims}, final=True)
    t = inst.shape.element_type
    if opcode != Op.ADD or t.is_pred or list(bdims) != sorted(bdims) or any(d in bdims for d in rdims):
        return None
    copies = math.prod(arg.shape.dims[d] for d in rdims)
    scaled = ctx.add(Op.MULTIPLY, x.shape.with_default_layouts(), [x, ctx.splat(copies, x.shape)])
    total = ctx.add(Op.ADD, scaled.shape, [ctx.broadcast_to(init, scaled.shape), scaled])
    kept = [k for k in range(arg.shape.rank) if k not in rdims]
    new_dims = tuple(kept.index(d) for d in bdims)
    return ctx.add(Op.BROADCAST, inst.shape, [total], {"dimensions": new_dims}, final=True)


@RULES.register(Op.REDUCE)
def reduce_of_transpose(ctx, inst):
    """reduce(transpose(X)) -> reduce(X) over the permuted dimensions, followed by a transpose
    when the kept dimensions change order."""
    if len(inst.operands) != 2:
        return None
    arg, init = inst.operands
    if arg.opcode != Op.TRANSPOSE:
        return None
    if not (inst.shape.rank < 2 or user_count(arg) == 1 or all(u.opcode == Op.REDUCE for u in arg.users)):
        return None
    perm = arg.attrs["dimensions"]
    x = arg.operands[0]
    new_rdims = tuple(sorted(perm[d] for d in inst.attrs["dimensions"]))
    kept = [d for d in perm if d not in new_rdims]  # x dims in result order
    in_x_order = sorted(kept)
    attrs = {"dimensions": new_rdims, "to_apply": inst.attrs["to_apply"]}
    if kept == in_x_order:
        return ctx.add(Op.REDUCE, inst.shape, [x, init], attrs, final=True)
    reduced = ctx.add(Op.REDUCE, ctx.array_shape(inst.shape.element_type, [x.shape.dims[d] for d in in_x_order]),
                      [x, init], attrs)
    return ctx.add(Op.TRANSPOSE, inst.shape, [reduced], {"dimensions": tuple(in_x_order.index(d) for d in kept)},
                   final=True)


# =========================================================================== sort and map


@RULES.register(Op.SORT)
def sort_trivial(ctx, inst):
    """sort along a dimension of size <= 1 -> its operand (a tuple of the operands)."""
    a = inst.operands[0]
    dim = inst.attrs["dimensions"][0]
    if a.shape.element_count() != 0 and a.shape.dims[dim] > 1:
        return None
    if len(inst.operands) == 1:
        return a if ctx.can_replace(inst, a) else None
    return ctx.add(Op.TUPLE, inst.shape, list(inst.operands), final=True)


@RULES.register(Op.MAP)
def map_trivial(ctx, inst):
    """map whose computation returns a parameter -> that operand; a scalar constant -> broadcast;
    a single elementwise op over the parameters -> that op on the operands."""
    comp = inst.attrs["to_apply"]
    root = comp.root
    if root.opcode == Op.PARAMETER:
        x = inst.operands[root.parameter_number]
        return x if ctx.can_replace(inst, x) else None
    if root.opcode == Op.CONSTANT and root.shape.is_scalar:
        const = ctx.constant_array(root.literal.array, root.shape)
        return ctx.broadcast_to(const, inst.shape, final=True)
    if not root.info.is_elementwise or not root.operands or any(op.opcode != Op.PARAMETER for op in root.operands):
        return None
    operands = [inst.operands[op.parameter_number] for op in root.operands]
    return ctx.add(root.opcode, inst.shape, operands, dict(root.attrs), final=True)
