"""Bounded dynamic dimensions: values of shape `f32[<=8]` whose size is known only at run time.

XLA keeps a dynamic array as a buffer of its bound with the runtime size beside it; only the
first `size` elements along the dimension mean anything. The interpreter holds the meaningful
part only: an array whose dynamic dimensions have their runtime sizes (at most the bound)
and whose static dimensions have their full sizes. Sizes enter through set-dimension-size,
dynamic-reshape, the SliceToDynamic custom call and entry parameters (given an array up to
the bound), and each op gives its result the sizes XLA's dynamic dimension inference gives
it, computing what XLA:CPU's dynamic padder makes it compute:

* most ops run on their operands padded to the bounds and the result is cut to its sizes:
  elementwise ops (operands of different sizes use the smaller, a size 1 broadcasts),
  broadcast, transpose, slice, dot (zeros contribute nothing), gather, dynamic-slice and
  dynamic-update-slice (only the update's meaningful part is written), reduce and
  reduce-window (padded with the init value, as XLA pads them: a non-identity init counts
  once per padding element), convolution over a dynamic batch or feature dimension;
* reverse, concatenate, pad, sort and the collectives run on the meaningful parts (what
  XLA's rewrites of them compute); reshape keeps the meaningful elements in row-major order;
* an op XLA refuses dynamic sizes for (a convolution over a dynamic spatial dimension, a
  gather or dynamic-slice taking part of a dynamic dimension, fft, linear algebra ...) is
  refused at its location when a size is below its bound.

The rules below are registered per opcode in DYNAMIC_RULES; plans.py gives an instruction
its rule only when its shapes have dynamic dimensions, so static programs pay nothing.
"""
from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

import numpy as np

from ..attributes import ConvDims, DotDims, GatherDims, ScatterDims
from ..diagnostics import error
from ..opcodes import Category, Op, Trait, ops_in, ops_with
from ..registry import OpRegistry
from ..shapes import Shape
from .placement import IDENTITY_TARGETS
from .values import scalar_int

DYNAMIC_RULES = OpRegistry("dynamic-dimension rule")
Handler = Callable


# --------------------------------------------------------------------------- when a rule applies

def involves_dynamic(inst) -> bool:
    """True if the instruction's result or an operand has a dynamic dimension."""
    return any(s is not None and s.is_dynamic for s in [inst.shape] + [op.shape for op in inst.operands])


def dynamic_handler(inst, handler: Handler) -> Optional[Handler]:
    """The step handler honouring dynamic sizes for `inst` (None: the plain handler will do)."""
    if DYNAMIC_RULES.details(inst.opcode).get("transparent"):
        return None
    rule = DYNAMIC_RULES.get(inst.opcode, _refuse_below_bound)

    def run(ev, inst, ops):
        return _checked(inst, rule(ev, inst, ops, handler))
    return run


# --------------------------------------------------------------------------- sizes and padding

def _array_leaves(shape: Shape, value):
    if shape.is_tuple:
        for s, v in zip(shape.tuple_shapes, value):
            yield from _array_leaves(s, v)
    elif shape.is_array:
        yield shape, value


def fit(x: np.ndarray, dims: Sequence[int], fill=0, broadcast_ones: bool = False) -> np.ndarray:
    """x with each dimension cut or padded with `fill` to `dims` (with broadcast_ones, a
    dimension of size 1 is broadcast instead, as an elementwise operand's is)."""
    if tuple(x.shape) == tuple(dims):
        return x
    if broadcast_ones and any(n == 1 and d > 1 for n, d in zip(x.shape, dims)):
        x = np.broadcast_to(x, [d if n == 1 else n for n, d in zip(x.shape, dims)])
    x = x[tuple(slice(0, d) for d in dims)]
    short = [(0, max(d - n, 0)) for n, d in zip(x.shape, dims)]
    if any(high for _, high in short):
        x = np.pad(x, short, constant_values=np.asarray(fill, dtype=x.dtype))
    return x


def _padded(value, shape: Shape, fill=0):
    """A value padded to its shape's bounds."""
    if shape.is_tuple:
        return tuple(_padded(v, s, fill) for v, s in zip(value, shape.tuple_shapes))
    if not shape.is_array or tuple(value.shape) == tuple(shape.dims):
        return value
    return fit(value, shape.dims, fill)


def _cut(value, sizes):
    """A result (array, or tuple whose leaves share `sizes`) cut to `sizes`."""
    if isinstance(value, tuple):
        return tuple(_cut(v, sizes) for v in value)
    return value[tuple(slice(0, n) for n in sizes)]


def _checked(inst, value):
    """The rule's result with the interpreter's invariant: static dimensions full, dynamic ones at
    most their bound (a static dimension fed by a smaller size is padded with zeros)."""
    if inst.shape.is_tuple:
        return tuple(_checked_leaf(inst, s, v) for s, v in zip(inst.shape.tuple_shapes, value)) \
            if isinstance(value, tuple) else value
    return _checked_leaf(inst, inst.shape, value)


def _checked_leaf(inst, shape: Shape, value):
    if shape.is_tuple:
        return tuple(_checked_leaf(inst, s, v) for s, v in zip(shape.tuple_shapes, value))
    if not shape.is_array or not isinstance(value, np.ndarray):
        return value
    for d, (n, bound, dynamic) in enumerate(zip(value.shape, shape.dims, shape.dynamic)):
        if n > bound:
            raise error(f"dimension {d} of '{inst.opcode}' has runtime size {n}, beyond its bound {bound}", inst.loc)
        if n < bound and not dynamic:
            return fit(value, shape.dims)
    return value


def _below_bound(inst, ops) -> Optional[tuple[int, int, int, int]]:
    """(operand, dimension, runtime size, bound) of the first operand dimension below its bound."""
    for i, (op, value) in enumerate(zip(inst.operands, ops)):
        for shape, leaf in _array_leaves(op.shape, value):
            for d, (n, bound) in enumerate(zip(leaf.shape, shape.dims)):
                if n != bound:
                    return i, d, n, bound
    return None


def _refuse(inst, where: tuple[int, int, int, int], why: str = ""):
    i, d, n, bound = where
    return error(f"'{inst.opcode}' does not support a dynamic dimension: dimension {d} of operand {i} has "
                 f"runtime size {n} below its bound {bound}{why} (XLA refuses it too)", inst.loc)


def _refuse_below_bound(ev, inst, ops, handler):
    where = _below_bound(inst, ops)
    if where is not None:
        raise _refuse(inst, where)
    return handler(ev, inst, ops)


def _run_padded(ev, inst, ops, handler, fills=None):
    fills = fills or [0] * len(ops)
    return handler(ev, inst, [_padded(v, op.shape, f) for v, op, f in zip(ops, inst.operands, fills)])


# --------------------------------------------------------------------------- values that pass through

def _passes_values_through(ev, inst, ops, handler):
    return handler(ev, inst, ops)  # (not called: plans keep the plain handler of these)


for _op in (ops_with(Trait.PASS_THROUGH) | ops_with(Trait.ASYNC_WRAPPER) | ops_in(Category.SIDE_EFFECT)
            | ops_with(Trait.NO_CODE) | ops_with(Trait.RUNS_COMPUTATIONS_AS_CODE) | frozenset((Op.FUSION,))):
    DYNAMIC_RULES.add(_op, _passes_values_through, transparent=True)


@DYNAMIC_RULES.register(Op.REVERSE, Op.PAD, Op.GET_DIMENSION_SIZE, Op.TRANSPOSE, ops_in(Category.COLLECTIVE))
def _on_meaningful_part(ev, inst, ops, handler):
    return handler(ev, inst, ops)


@DYNAMIC_RULES.register(Op.CONCATENATE)
def _concatenate(ev, inst, ops, handler):
    """The meaningful parts one after the other; other dimensions as an elementwise op's."""
    sizes = elementwise_sizes(inst, ops)
    axis = inst.attrs["dimensions"][0]
    return handler(ev, inst, [fit(v, sizes[:axis] + [v.shape[axis]] + sizes[axis + 1:], broadcast_ones=True)
                              for v in ops])


# --------------------------------------------------------------------------- elementwise

def elementwise_sizes(inst, ops) -> list[int]:
    """XLA's rule: the first dynamic operand's size, then for each other one the smaller of the
    two, unless one is 1 (broadcast to the other); static operands keep the bound."""
    sizes = []
    for d, bound in enumerate(inst.shape.dims):
        size = None
        for op, value in zip(inst.operands, ops):
            if not (op.shape.is_array and d < op.shape.rank and op.shape.dynamic[d]):
                continue
            n = value.shape[d]
            if size is None or n == size:
                size = n
            elif (n == 1 and n < size) or (size == 1 and size < n):
                size = max(n, size)
            else:
                size = min(n, size)
        sizes.append(bound if size is None else size)
    return sizes


def _elementwise(ev, inst, ops, handler):
    sizes = elementwise_sizes(inst, ops)
    fitted = [fit(v, sizes[:v.ndim] + list(v.shape[len(sizes):]), broadcast_ones=True)
              if isinstance(v, np.ndarray) and v.ndim else v
              for v in ops]  # (scalar operands broadcast; bitcast-convert adds or drops a last dimension)
    result = _run_padded(ev, inst, fitted, handler)
    return _cut(result, sizes + list(result.shape[len(sizes):]))


for _op in ops_in(Category.ELEMENTWISE) | frozenset((Op.MAP,)):
    if _op not in DYNAMIC_RULES:  # (copy passes its value through)
        DYNAMIC_RULES.add(_op, _elementwise)


@DYNAMIC_RULES.register(Op.SORT)
def _sort(ev, inst, ops, handler):
    sizes = elementwise_sizes(inst if not inst.shape.is_tuple else _FirstLeaf(inst), ops)
    return handler(ev, inst, [fit(v, sizes, broadcast_ones=True) for v in ops])


class _FirstLeaf:
    """A multi-operand op seen through its first result leaf (all leaves share the dimensions)."""
    def __init__(self, inst):
        self.shape, self.operands = inst.shape.tuple_shapes[0], inst.operands


# --------------------------------------------------------------------------- data movement

@DYNAMIC_RULES.register(Op.BROADCAST)
def _broadcast(ev, inst, ops, handler):
    sizes = list(inst.shape.dims)
    for i, d in enumerate(inst.attrs.get("dimensions", ())):
        if inst.operands[0].shape.dynamic[i]:
            sizes[d] = ops[0].shape[i]
    return _cut(_run_padded(ev, inst, ops, handler), sizes)


@DYNAMIC_RULES.register(Op.SLICE)
def _slice(ev, inst, ops, handler):
    """A dimension sliced whole keeps its size; any other slice reads the padded bound."""
    source = inst.operands[0].shape
    sizes = list(inst.shape.dims)
    for d, (start, limit, stride) in enumerate(inst.attrs["slice"]):
        if source.dynamic[d] and start == 0 and stride == 1 and limit == source.dims[d]:
            sizes[d] = ops[0].shape[d]
    return _cut(_run_padded(ev, inst, ops, handler), sizes)


@DYNAMIC_RULES.register(Op.RESHAPE)
def _reshape(ev, inst, ops, handler):
    """Each group of dimensions the reshape maps onto each other keeps its meaningful elements
    in row-major order; the size goes to the group's dynamic result dimension."""
    source, result, x = inst.operands[0].shape, inst.shape, ops[0]
    sizes = list(result.dims)
    for (i0, i1), (o0, o1) in _reshape_groups(source.dims, result.dims):
        if all(x.shape[i] == source.dims[i] for i in range(i0, i1)):
            continue
        dynamic = [o for o in range(o0, o1) if result.dynamic[o]]
        if not dynamic:  # the result is written static: the padded data, as XLA reshapes it
            x = fit(x, [source.dims[i] if i0 <= i < i1 else n for i, n in enumerate(x.shape)])
            continue
        if len(dynamic) > 1:
            raise error(f"'reshape' cannot tell which of the dynamic result dimensions {dynamic} takes the "
                        "runtime size (XLA refuses it too)", inst.loc)
        count = math.prod(x.shape[i0:i1])
        others = math.prod(result.dims[o] for o in range(o0, o1) if o != dynamic[0])
        if others == 0 or count % others:
            raise error(f"'reshape' of {count} meaningful elements into result dimensions {o0}..{o1 - 1} "
                        f"(the others of size {others}) does not divide", inst.loc)
        sizes[dynamic[0]] = count // others
    return x.reshape(sizes)


def _reshape_groups(src: Sequence[int], dst: Sequence[int]):
    """Pairs of dimension ranges ((i0, i1), (o0, o1)) whose sizes have equal products."""
    groups, i, o = [], 0, 0
    while i < len(src) or o < len(dst):
        i0, o0, a, b = i, o, 1, 1
        while True:
            if a <= b and i < len(src):
                a *= src[i]
                i += 1
            elif o < len(dst):
                b *= dst[o]
                o += 1
            else:
                break
            if a == b and (i == len(src) or src[i] != 1) and (o == len(dst) or dst[o] != 1):
                break
        groups.append(((i0, i), (o0, o)))
    return groups


@DYNAMIC_RULES.register(Op.DYNAMIC_RESHAPE)
def _dynamic_reshape(ev, inst, ops, handler):
    sizes = [scalar_int(s) for s in ops[1:]]
    for d, (n, bound) in enumerate(zip(sizes, inst.shape.dims)):
        if not 0 <= n <= bound:
            raise error(f"'dynamic-reshape' size {n} of dimension {d} is outside [0, {bound}]", inst.loc)
    if math.prod(sizes) != ops[0].size:
        raise error(f"'dynamic-reshape' of {ops[0].size} elements into runtime sizes {sizes}", inst.loc)
    return ops[0].reshape(sizes)


@DYNAMIC_RULES.register(Op.SET_DIMENSION_SIZE)
def _set_dimension_size(ev, inst, ops, handler):
    dim, size = inst.attrs["dimensions"][0], scalar_int(ops[1])
    bound = inst.shape.dims[dim]
    if not 0 <= size <= bound:
        raise error(f"'set-dimension-size' to {size}, outside [0, {bound}] for dimension {dim}", inst.loc)
    sizes = list(ops[0].shape)
    sizes[dim] = size
    return fit(ops[0], sizes)


# --------------------------------------------------------------------------- reductions

@DYNAMIC_RULES.register(Op.REDUCE)
def _reduce(ev, inst, ops, handler):
    """Padding takes the init value (XLA:CPU's dynamic padder): it joins each reduction."""
    n = len(ops) // 2
    dims = set(inst.attrs["dimensions"])
    sizes = [s for d, s in enumerate(ops[0].shape) if d not in dims]
    return _cut(_run_padded(ev, inst, ops, handler, list(ops[n:]) + [0] * n), sizes)


@DYNAMIC_RULES.register(Op.REDUCE_WINDOW)
def _reduce_window(ev, inst, ops, handler):
    """Padded with the init value; a dynamic dimension's output size is that of a window without
    padding (XLA's dynamic dimension inference ignores the padding)."""
    n = len(ops) // 2
    window = inst.attrs.get("window")
    result = inst.shape.tuple_shapes[0] if inst.shape.is_tuple else inst.shape
    sizes = list(result.dims)
    for d, wd in enumerate(window.dims if window else ()):
        if inst.operands[0].shape.dynamic[d]:
            size = ops[0].shape[d]
            trivial = (wd.size == 1 and wd.stride == 1 and not wd.padding_low and not wd.padding_high
                       and wd.window_dilation == 1 and wd.base_dilation == 1)
            extent = (wd.size - 1) * wd.window_dilation + 1
            sizes[d] = size if trivial else (size - extent) // wd.stride + 1
            if sizes[d] < 0:  # (XLA:CPU fails on it)
                raise error(f"'reduce-window' over dynamic dimension {d} of runtime size {size}: XLA sizes the "
                            f"result as windows without padding would, and a window of {extent} does not fit",
                            inst.loc)
    return _cut(_run_padded(ev, inst, ops, handler, list(ops[n:]) + [0] * n), sizes)


# --------------------------------------------------------------------------- contractions

@DYNAMIC_RULES.register(Op.DOT)
def _dot(ev, inst, ops, handler):
    """Padding is zero, so contracting over a padded dimension adds nothing."""
    dims = DotDims.of(inst)
    lhs, rhs = ops
    sizes = [lhs.shape[d] for d in dims.lhs_batch]
    sizes += [lhs.shape[d] for d in dims.lhs_free(lhs.ndim)]
    sizes += [rhs.shape[d] for d in range(rhs.ndim) if d not in dims.rhs_batch and d not in dims.rhs_contracting]
    return _cut(_run_padded(ev, inst, ops, handler), sizes)


@DYNAMIC_RULES.register(Op.CONVOLUTION)
def _convolution(ev, inst, ops, handler):
    dims: ConvDims = inst.attrs["dim_labels"]
    lhs, rhs = inst.operands[0].shape, inst.operands[1].shape
    allowed = {(0, dims.input_batch), (0, dims.input_feature), (1, dims.kernel_input_feature)}
    for i, (shape, value) in enumerate(((lhs, ops[0]), (rhs, ops[1]))):
        for d, (n, bound) in enumerate(zip(value.shape, shape.dims)):
            if n != bound and ((i, d) not in allowed or (d == dims.input_batch and i == 0
                                                          and inst.attrs.get("batch_group_count", 1) > 1)):
                raise _refuse(inst, (i, d, n, bound), " (only the batch and feature dimensions may be)")
    sizes = list(inst.shape.dims)
    sizes[dims.output_batch] = ops[0].shape[dims.input_batch]
    return _cut(_run_padded(ev, inst, ops, handler), sizes)


# --------------------------------------------------------------------------- indexing

@DYNAMIC_RULES.register(Op.GATHER)
def _gather(ev, inst, ops, handler):
    dims = GatherDims.of(inst)
    operand, indices = inst.operands[0].shape, inst.operands[1].shape
    slice_sizes = inst.attrs["slice_sizes"]
    sizes = list(inst.shape.dims)
    offset_sources = [d for d in range(operand.rank)
                      if d not in dims.collapsed_slice_dims and d not in dims.operand_batching_dims]
    for d, (n, bound) in enumerate(zip(ops[0].shape, operand.dims)):
        if n == bound or slice_sizes[d] == 1:
            continue
        if slice_sizes[d] != bound:
            raise _refuse(inst, (0, d, n, bound), " (a gather may take none or all of it)")
        sizes[dims.offset_dims[offset_sources.index(d)]] = n
    batch_out = [d for d in range(inst.shape.rank) if d not in dims.offset_dims]
    batch_in = [d for d in range(indices.rank) if d != dims.index_vector_dim]
    for out, d in zip(batch_out, batch_in):
        sizes[out] = ops[1].shape[d]
    return _cut(_run_padded(ev, inst, ops, handler), sizes)


@DYNAMIC_RULES.register(Op.SCATTER)
def _scatter(ev, inst, ops, handler):
    """Only the meaningful indices and updates are scattered, into operands padded to their bounds."""
    n = (len(ops) - 1) // 2
    dims = ScatterDims.of(inst)
    indices = ops[n]
    batch = [indices.shape[d] for d in range(indices.ndim) if d != dims.index_vector_dim]
    updates = []
    for op, value in zip(inst.operands[n + 1:], ops[n + 1:]):
        scatter_dims = [d for d in range(op.shape.rank) if d not in dims.update_window_dims]
        target = list(op.shape.dims)
        for d, size in zip(scatter_dims, batch):
            target[d] = size
        updates.append(fit(value, target))
    operands = [_padded(v, op.shape) for v, op in zip(ops[:n], inst.operands[:n])]
    result = handler(ev, inst, operands + [indices] + updates)
    return _cut(result, ops[0].shape)


@DYNAMIC_RULES.register(Op.DYNAMIC_SLICE)
def _dynamic_slice(ev, inst, ops, handler):
    source = inst.operands[0].shape
    sizes = list(inst.shape.dims)
    for d, (n, bound) in enumerate(zip(ops[0].shape, source.dims)):
        if n == bound or inst.shape.dims[d] == 1:
            continue
        if inst.shape.dims[d] != bound:
            raise _refuse(inst, (0, d, n, bound), " (a dynamic-slice may take one element or all of it)")
        sizes[d] = n
    return _cut(_run_padded(ev, inst, ops, handler), sizes)


@DYNAMIC_RULES.register(Op.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(ev, inst, ops, handler):
    """The start is clamped for the update's bound (as XLA clamps it); only the update's
    meaningful part is written."""
    operand, update = _padded(ops[0], inst.operands[0].shape), ops[1]
    bounds = inst.operands[1].shape.dims
    starts = [scalar_int(s) for s in ops[2:]]
    begin = [min(max(s, 0), d - b) for s, b, d in zip(starts, bounds, operand.shape)]
    out = operand.copy()
    out[tuple(slice(b, b + n) for b, n in zip(begin, update.shape))] = update
    return _cut(out, ops[0].shape)


# --------------------------------------------------------------------------- custom calls

@DYNAMIC_RULES.register(Op.CUSTOM_CALL)
def _custom_call(ev, inst, ops, handler):
    target = inst.attrs["custom_call_target"]
    if target == "SliceToDynamic":
        return _slice_to_dynamic(inst, ops)
    if target == "PadToStatic":
        return _pad_to_static(inst, ops)
    if target in IDENTITY_TARGETS:  # identities on one device: the runtime sizes stay
        return handler(ev, inst, ops)
    return _refuse_below_bound(ev, inst, ops, handler)


def _slice_to_dynamic(inst, ops):
    """SliceToDynamic(data, size_0, ... size_n-1): the data with those runtime sizes."""
    data, sizes = ops[0], [scalar_int(s) for s in ops[1:]]
    if len(sizes) != data.ndim or any(not 0 <= s <= n for s, n in zip(sizes, data.shape)):
        raise error(f"custom-call \"SliceToDynamic\" takes a size in [0, bound] per dimension of its data "
                    f"{list(data.shape)}, given {sizes}", inst.loc)
    return _cut(data, sizes)


def _pad_to_static(inst, ops):
    """PadToStatic(dynamic data): (the data padded to its bound, then its runtime sizes)."""
    data = ops[0]
    padded = _padded(data, inst.operands[0].shape)
    return (padded,) + tuple(np.array(n, dtype=np.int32) for n in data.shape)
