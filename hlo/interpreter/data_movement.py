"""The data-movement family: constant, iota, broadcast, reshape, transpose, reverse, slice,
concatenate, pad, tuple, get-tuple-element, copy, bitcast and the dimension sizes.

Values are never modified in place, so an op that does not change data returns its
operand (copy, and the transfers family's opt-barrier, add-dependency and domain, which
share its handler). Layouts only matter for `bitcast`, which reinterprets the physical
buffer. Parameters have no handler: a plan binds each to its argument's slot.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..diagnostics import error
from ..opcodes import Op, Trait, ops_with
from ..shapes import PRIMITIVE_TYPES, Shape
from .conversions import bitcast_convert, convert
from .dynamic import fit
from .handlers import HANDLERS, Source, write_operand, written_as
from .indexing import slice_array
from .numerics import quiet
from .values import broadcast_view, scalar_int
from .windows import pad

HANDLERS.unsupported(Op.PARAMETER, reason="a parameter is no step of a plan: its slot holds the argument")


# --------------------------------------------------------------------------- kernels

@quiet
def iota(shape: Shape, iota_dimension: int) -> np.ndarray:
    """out[idx] = idx[iota_dimension], converted to the element type."""
    t, dims = shape.element_type, tuple(shape.dims)
    if t is None or t.is_pred or not t.is_array_type:
        raise ValueError(f"iota is not defined for element type {t}")
    if not 0 <= iota_dimension < len(dims):
        raise ValueError(f"iota_dimension {iota_dimension} out of range for rank {len(dims)}")
    index_shape = [-1 if i == iota_dimension else 1 for i in range(len(dims))]
    index = np.arange(dims[iota_dimension], dtype=np.int64).reshape(index_shape)
    return convert(np.broadcast_to(index, dims), PRIMITIVE_TYPES["s64"], t)


def bitcast(x: np.ndarray, from_shape: Shape, to_shape: Shape) -> np.ndarray:
    """Reinterpret x's physical buffer (its layout's order) with to_shape's dims, type and layout."""
    src_order = tuple(reversed(from_shape.minor_to_major()))  # major to minor
    physical = np.ascontiguousarray(x.transpose(src_order)) if x.ndim > 1 else np.ascontiguousarray(x)
    to_type = to_shape.element_type
    if physical.dtype != to_type.dtype:
        from_type = from_shape.element_type
        if from_type.bits < 8 or to_type.bits < 8:
            if from_type.bits != to_type.bits:
                raise ValueError(f"cannot bitcast {from_type.name} to {to_type.name}: sub-byte widths differ")
            physical = bitcast_convert(physical, from_type, to_type)
        else:
            if physical.nbytes != to_shape.element_count() * to_type.byte_size:
                raise ValueError(f"bitcast from {from_shape} to {to_shape} changes the byte size")
            physical = physical.reshape(-1).view(np.uint8 if to_type.is_pred else to_type.dtype)
            if to_type.is_pred:
                physical = physical != 0
    elif physical.size != to_shape.element_count():
        raise ValueError(f"bitcast from {from_shape} to {to_shape} changes the element count")
    dst_order = tuple(reversed(to_shape.minor_to_major()))
    physical = physical.reshape([to_shape.dims[d] for d in dst_order])
    inverse = [0] * len(dst_order)
    for position, d in enumerate(dst_order):
        inverse[d] = position
    return physical.transpose(inverse) if len(inverse) > 1 else physical


def _is_elided(lit) -> bool:
    if lit.is_tuple:
        return any(_is_elided(e) for e in lit.elements)
    return lit.elided


# --------------------------------------------------------------------------- writers

def _write_tuple(src: Source) -> str:
    return "(" + "".join(a + ", " for a in src.args) + ")"


def _write_get_tuple_element(src: Source) -> str:
    return f"{src.args[0]}[{int(src.inst.attrs['index'])}]"


def _write_reshape(src: Source) -> str:
    return f"{src.args[0]}.reshape({tuple(src.inst.shape.dims)!r})"


def _write_transpose(src: Source) -> str:
    return f"{src.args[0]}.transpose({tuple(src.inst.attrs['dimensions'])!r})"


def _compact_broadcast_expression(inst, arg: str) -> Optional[str]:
    """broadcast_compact as an expression, when its dimensions are in order and fit."""
    dims = tuple(inst.attrs.get("dimensions", ()))
    source, out_dims = inst.operands[0].shape.dims, inst.shape.dims
    if len(dims) != len(source) or list(dims) != sorted(dims):
        return None
    expanded = [1] * len(out_dims)
    for i, d in enumerate(dims):
        if source[i] != out_dims[d] and source[i] != 1:
            return None  # let the handler report it
        expanded[d] = source[i]
    if tuple(expanded) == tuple(source):
        return arg
    return f"{arg}.reshape({tuple(expanded)!r})"


def _write_broadcast_compact(src: Source) -> Optional[str]:
    """Where the new dimensions all lead, numpy's broadcasting (which aligns trailing
    dimensions) needs no reshape: the operand itself will do."""
    inst = src.inst
    source = tuple(inst.operands[0].shape.dims)
    dims = tuple(inst.attrs.get("dimensions", ()))
    rank = inst.shape.rank
    if dims == tuple(range(rank - len(source), rank)) and source == tuple(inst.shape.dims[rank - len(source):]):
        return src.args[0]
    return _compact_broadcast_expression(inst, src.args[0])


def _write_broadcast(src: Source) -> Optional[str]:
    compact = _compact_broadcast_expression(src.inst, src.args[0])
    if compact is None:
        return None
    return f"{src.bind(broadcast_view)}({compact}, {tuple(src.inst.shape.dims)!r})"


# --------------------------------------------------------------------------- handlers

@HANDLERS.register(Op.CONSTANT)
def run_constant(ev, inst, ops):
    lit = inst.attrs["literal"]
    if _is_elided(lit):
        raise error(f"constant %{inst.name}: its data was elided ({{...}}) in the text, "
                    "so the module cannot be run", inst.loc)
    return lit.value()


@HANDLERS.register(Op.IOTA)
def run_iota(ev, inst, ops):
    return iota(inst.shape, inst.attrs["iota_dimension"])


@HANDLERS.register(ops_with(Trait.PASS_THROUGH))
@written_as(write_operand, any_value=True)
def run_pass_through(ev, inst, ops):
    return ops[0]  # values are immutable: a copy can share the array


@HANDLERS.register(Op.BROADCAST)
@written_as(_write_broadcast, gives_array=True)
def run_broadcast(ev, inst, ops):
    return broadcast_view(broadcast_compact(ev, inst, ops), inst.shape.dims)


@written_as(_write_broadcast_compact, gives_array=True)
def broadcast_compact(ev, inst, ops):
    """The broadcast's operand with the result's rank, new dimensions of size 1: what
    numpy's own broadcasting needs (plans use it when only elementwise ops consume it)."""
    x = ops[0]
    dims = tuple(inst.attrs.get("dimensions", ()))
    out_dims = inst.shape.dims
    if len(dims) != x.ndim:
        raise ValueError(f"dimensions={list(dims)} has {len(dims)} entries for an operand of rank {x.ndim}")
    if list(dims) != sorted(dims):
        order = sorted(range(len(dims)), key=lambda i: dims[i])
        x, dims = x.transpose(order), tuple(dims[i] for i in order)
    expanded = [1] * len(out_dims)
    for i, d in enumerate(dims):
        expanded[d] = x.shape[i]
        # (XLA's verifier wants equal sizes; a size-1 dim is expanded like BroadcastInDim does)
        if x.shape[i] != out_dims[d] and x.shape[i] != 1:
            raise ValueError(f"operand dimension {i} (size {x.shape[i]}) maps to result dimension {d} "
                             f"of size {out_dims[d]}")
    return x.reshape(expanded)


@HANDLERS.register(Op.RESHAPE)
@written_as(_write_reshape, gives_array=True)
def run_reshape(ev, inst, ops):
    return ops[0].reshape(inst.shape.dims)


@HANDLERS.register(Op.DYNAMIC_RESHAPE)
def run_dynamic_reshape(ev, inst, ops):
    """Sizes below the bounds make the result dynamic: dynamic.py runs those (a result written
    with static dimensions takes exactly their sizes)."""
    sizes = [scalar_int(s) for s in ops[1:]]
    if tuple(sizes) != tuple(inst.shape.dims):
        raise ValueError(f"runtime sizes {sizes} differ from the static result dimensions {list(inst.shape.dims)}")
    return ops[0].reshape(inst.shape.dims)


@HANDLERS.register(Op.TRANSPOSE)
@written_as(_write_transpose, gives_array=True)
def run_transpose(ev, inst, ops):
    return ops[0].transpose(inst.attrs["dimensions"])


@HANDLERS.register(Op.REVERSE)
def run_reverse(ev, inst, ops):
    return np.flip(ops[0], tuple(inst.attrs["dimensions"]))


@HANDLERS.register(Op.SLICE)
def run_slice(ev, inst, ops):
    ranges = inst.attrs["slice"]
    return slice_array(ops[0], [r[0] for r in ranges], [r[1] for r in ranges], [r[2] for r in ranges])


@HANDLERS.register(Op.CONCATENATE)
def run_concatenate(ev, inst, ops):
    return np.concatenate(ops, axis=inst.attrs["dimensions"][0])


@HANDLERS.register(Op.PAD)
def run_pad(ev, inst, ops):
    return pad(ops[0], ops[1], inst.attrs["padding"])


@HANDLERS.register(Op.TUPLE)
@written_as(_write_tuple, any_value=True)
def run_tuple(ev, inst, ops):
    return tuple(ops)


@HANDLERS.register(Op.GET_TUPLE_ELEMENT)
@written_as(_write_get_tuple_element, any_value=True)
def run_get_tuple_element(ev, inst, ops):
    return ops[0][inst.attrs["index"]]


@HANDLERS.register(Op.BITCAST)
def run_bitcast(ev, inst, ops):
    return bitcast(ops[0], inst.operands[0].shape, inst.shape)


@HANDLERS.register(Op.GET_DIMENSION_SIZE)
def run_get_dimension_size(ev, inst, ops):
    return np.array(ops[0].shape[inst.attrs["dimensions"][0]], dtype=np.int32)


@HANDLERS.register(Op.SET_DIMENSION_SIZE)
def run_set_dimension_size(ev, inst, ops):
    """Only reached for a static result and operand (dynamic.py runs the others): the elements
    past the size are then padding, which XLA leaves undefined (here: zero)."""
    dim = inst.attrs["dimensions"][0]
    size, bound = scalar_int(ops[1]), ops[0].shape[dim]
    if not 0 <= size <= bound:
        raise ValueError(f"size {size} is outside [0, {bound}] for dimension {dim}")
    if size == bound:
        return ops[0]
    sizes = list(ops[0].shape)
    sizes[dim] = size
    return fit(fit(ops[0], sizes), ops[0].shape)
