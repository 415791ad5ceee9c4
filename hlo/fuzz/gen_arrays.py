"""Generators of the ops that move elements: broadcast, reshape, transpose, reverse, slices,
concatenate, pad, iota, constants, bitcast, the indexing ops and the dynamic dimensions."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..opcodes import Op
from ..shapes import PRIMITIVE_TYPES, Shape
from .builder import ARITHMETIC_TYPES, INF, Comp, Val, array_shape, small_value
from .registry import GENERATORS, MAX_DIM, random_dims, random_layout, random_type, shape_of

S32 = PRIMITIVE_TYPES["s32"]


def _array(comp: Comp, rng, min_rank: int = 0, computable: bool = False) -> Optional[Val]:
    found = comp.pick(rng, lambda v: v.shape.is_array and v.shape.rank >= min_rank and not v.shape.is_dynamic
                      and (v.computable or not computable))
    if found is None and rng.random() < 0.5:
        found = comp.make(rng, array_shape(random_type(rng), random_dims(rng, max(min_rank, int(rng.integers(0, 4))))))
    return found


def _moved(comp: Comp, opcode: str, x: Val, shape, operands=None, attrs: str = "") -> Val:
    return comp.add(opcode, shape, operands or [x], attrs, bound=x.bound, frac=x.frac, exact=x.exact, raw=x.raw)


@GENERATORS.register(Op.BROADCAST, weight=2)
def broadcast(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng)
    if x is None or x.shape.rank >= 3:
        return None
    extra = int(rng.integers(0, 3 - x.shape.rank + 1))
    rank = x.shape.rank + extra
    positions = sorted(int(p) for p in rng.choice(rank, size=x.shape.rank, replace=False))
    dims = [int(rng.integers(1, MAX_DIM + 1)) for _ in range(rank)]
    for i, p in enumerate(positions):
        dims[p] = x.dims[i]
    return _moved(comp, op, x, shape_of(rng, x.type, dims), attrs=f", dimensions={{{','.join(map(str, positions))}}}")


@GENERATORS.register(Op.RESHAPE, weight=2)
def reshape(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng)
    if x is None:
        return None
    rest = int(np.prod(x.dims)) if x.dims else 1
    dims = []
    for _ in range(int(rng.integers(0, 3))):
        divisors = [f for f in range(1, rest + 1) if rest % f == 0]
        dims.append(divisors[int(rng.integers(0, len(divisors)))])
        rest //= dims[-1]
    dims.append(rest)
    return _moved(comp, op, x, shape_of(rng, x.type, dims))


@GENERATORS.register(Op.TRANSPOSE)
def transpose(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng, min_rank=2)
    if x is None:
        return None
    perm = [int(p) for p in rng.permutation(x.shape.rank)]
    return _moved(comp, op, x, shape_of(rng, x.type, [x.dims[p] for p in perm]),
                  attrs=f", dimensions={{{','.join(map(str, perm))}}}")


@GENERATORS.register(Op.REVERSE)
def reverse(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng, min_rank=1)
    if x is None:
        return None
    dims = sorted(int(d) for d in rng.choice(x.shape.rank, size=int(rng.integers(1, x.shape.rank + 1)), replace=False))
    return _moved(comp, op, x, array_shape(x.type, x.dims), attrs=f", dimensions={{{','.join(map(str, dims))}}}")


@GENERATORS.register(Op.SLICE, weight=2)
def slice_(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng, min_rank=1)
    if x is None:
        return None
    ranges, dims = [], []
    for n in x.dims:
        start = int(rng.integers(0, n))
        limit = int(rng.integers(start + 1, n + 1))
        stride = int(rng.integers(1, 3))
        ranges.append(f"[{start}:{limit}:{stride}]" if stride > 1 else f"[{start}:{limit}]")
        dims.append(-(-(limit - start) // stride))
    return _moved(comp, op, x, array_shape(x.type, dims), attrs=", slice={" + ", ".join(ranges) + "}")


@GENERATORS.register(Op.CONCATENATE)
def concatenate(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng, min_rank=1)
    if x is None:
        return None
    axis = int(rng.integers(0, x.shape.rank))
    parts = [x]
    for _ in range(int(rng.integers(1, 3))):
        dims = list(x.dims)
        dims[axis] = int(rng.integers(1, MAX_DIM + 1))
        parts.append(comp.value_of(rng, array_shape(x.type, dims), computable=False))
    dims = list(x.dims)
    dims[axis] = sum(p.dims[axis] for p in parts)
    exact = all(p.exact for p in parts)
    return comp.add(op, array_shape(x.type, dims), parts, f", dimensions={{{axis}}}",
                    bound=max(p.bound for p in parts) if exact else INF, frac=max(p.frac for p in parts), exact=exact,
                    raw=any(p.raw for p in parts))


@GENERATORS.register(Op.PAD)
def pad(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng, min_rank=1)
    if x is None:
        return None
    value = comp.constant(x.type, small_value(x.type, rng))
    config, dims = [], []
    for n in x.dims:
        low, high, interior = (int(v) for v in rng.integers(-1, 3, size=3))
        interior = max(interior, 0)
        size = low + high + n + max(n - 1, 0) * interior
        if size < 1:
            low, high = 0, 0
            size = n + max(n - 1, 0) * interior
        config.append(f"{low}_{high}_{interior}" if interior else f"{low}_{high}")
        dims.append(size)
    return comp.add(op, array_shape(x.type, dims), [x, value], ", padding=" + "x".join(config),
                    bound=max(x.bound, value.bound) if x.exact else INF, frac=max(x.frac, value.frac), exact=x.exact,
                    raw=x.raw)


@GENERATORS.register(Op.IOTA)
def iota(comp: Comp, rng, op: str) -> Optional[Val]:
    dims = random_dims(rng, int(rng.integers(1, 4)))
    t = random_type(rng, [t for t in ARITHMETIC_TYPES if not t.is_pred])
    axis = int(rng.integers(0, len(dims)))
    return comp.add(op, shape_of(rng, t, dims), (), f", iota_dimension={axis}", bound=float(MAX_DIM))


@GENERATORS.register(Op.CONSTANT)
def constant(comp: Comp, rng, op: str) -> Optional[Val]:
    t = random_type(rng, [t for t in ARITHMETIC_TYPES if not t.is_complex])
    dims = random_dims(rng, int(rng.integers(0, 3)))
    values = [small_value(t, rng) for _ in range(int(np.prod(dims)) if dims else 1)]
    text = _literal(values, dims, t)
    v = comp.add(op, array_shape(t, dims), (), "", bound=max((abs(float(v)) for v in values), default=0.0), frac=2)
    comp.lines[-1] = comp.lines[-1].replace("constant()", f"constant({text})")
    return v


def _literal(values, dims, t) -> str:
    def item(v):
        return ("true" if v else "false") if t.is_pred else (str(int(v)) if t.is_integral else repr(float(v)))
    if not dims:
        return item(values[0])

    def nest(flat, shape):
        if len(shape) == 1:
            return "{" + ", ".join(item(v) for v in flat) + "}"
        step = len(flat) // shape[0]
        return "{" + ", ".join(nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "}"
    return nest(values, list(dims))


@GENERATORS.register(Op.BITCAST)
def bitcast(comp: Comp, rng, op: str) -> Optional[Val]:
    """A bitcast that only renames the layout of the same physical buffer."""
    x = _array(comp, rng, min_rank=2)
    if x is None:
        return None
    layout = x.shape.layout.minor_to_major if x.shape.layout else tuple(range(x.shape.rank - 1, -1, -1))
    physical = [x.dims[d] for d in reversed(layout)]  # major to minor
    new_layout = random_layout(rng, x.shape.rank) or tuple(range(x.shape.rank - 1, -1, -1))
    dims = [0] * x.shape.rank
    for position, d in enumerate(reversed(new_layout)):
        dims[d] = physical[position]
    return _moved(comp, op, x, array_shape(x.type, dims, new_layout))


# --------------------------------------------------------------------------- indexing

def _index_of(comp: Comp, rng, limit: int) -> Val:
    """A scalar s32 index, sometimes out of range (XLA clamps dynamic-slice starts)."""
    c = comp.constant(S32, int(rng.integers(-1, limit + 2)))
    return c


@GENERATORS.register(Op.DYNAMIC_SLICE)
def dynamic_slice(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng, min_rank=1)
    if x is None:
        return None
    sizes = [int(rng.integers(1, n + 1)) for n in x.dims]
    starts = [_index_of(comp, rng, n) for n in x.dims]
    return _moved(comp, op, x, array_shape(x.type, sizes), [x] + starts,
                  f", dynamic_slice_sizes={{{','.join(map(str, sizes))}}}")


@GENERATORS.register(Op.DYNAMIC_UPDATE_SLICE)
def dynamic_update_slice(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _array(comp, rng, min_rank=1)
    if x is None:
        return None
    update = comp.value_of(rng, array_shape(x.type, [int(rng.integers(1, n + 1)) for n in x.dims]), computable=False)
    starts = [_index_of(comp, rng, n) for n in x.dims]
    exact = x.exact and update.exact
    return comp.add(op, array_shape(x.type, x.dims), [x, update] + starts, bound=max(x.bound, update.bound) if exact
                    else INF, frac=max(x.frac, update.frac), exact=exact, raw=x.raw or update.raw)


def _indices(comp: Comp, rng, count: int, limit: int, width: int) -> Val:
    """s32[count, width] start indices in [0, limit) (sometimes out of range: clamped by XLA)."""
    values = rng.integers(0, max(limit, 1), size=(count, width))
    text = "{" + ", ".join("{" + ", ".join(str(int(v)) for v in row) + "}" for row in values) + "}"
    v = comp.add("constant", array_shape(S32, (count, width)), (), "", bound=float(limit), keep=False, name="idx")
    comp.lines[-1] = comp.lines[-1].replace("constant()", f"constant({text})")
    return v


@GENERATORS.register(Op.GATHER)
def gather(comp: Comp, rng, op: str) -> Optional[Val]:
    """Rows (or blocks) picked along dimension 0: XLA's usual form, with the index vector last."""
    x = _array(comp, rng, min_rank=1)
    if x is None:
        return None
    count = int(rng.integers(1, 5))
    indices = _indices(comp, rng, count, x.dims[0], 1)
    slice_sizes = [1] + [int(rng.integers(1, n + 1)) for n in x.dims[1:]]
    collapse = rng.random() < 0.7
    offset_dims = list(range(1, x.shape.rank)) if collapse else list(range(1, x.shape.rank + 1))
    out = [count] + (slice_sizes[1:] if collapse else slice_sizes)
    attrs = (f", offset_dims={{{','.join(map(str, offset_dims))}}}, collapsed_slice_dims={{{'0' if collapse else ''}}}"
             f", start_index_map={{0}}, index_vector_dim=1, slice_sizes={{{','.join(map(str, slice_sizes))}}}")
    return _moved(comp, op, x, array_shape(x.type, out), [x, indices], attrs)


@GENERATORS.register(Op.SCATTER)
def scatter(comp: Comp, rng, op: str) -> Optional[Val]:
    """Rows updated along dimension 0 by add (any order gives the same sum of exact values) or,
    with distinct indices, by replacement."""
    x = _array(comp, rng, min_rank=1, computable=True)
    if x is None or x.type.is_pred or x.type.is_complex:
        return None
    replace = rng.random() < 0.4
    count = int(rng.integers(1, x.dims[0] + 1))
    rows = rng.permutation(x.dims[0])[:count] if replace else rng.integers(0, x.dims[0], size=count)
    text = "{" + ", ".join("{" + str(int(r)) + "}" for r in rows) + "}"
    indices = comp.add("constant", array_shape(S32, (count, 1)), (), "", keep=False, name="idx")
    comp.lines[-1] = comp.lines[-1].replace("constant()", f"constant({text})")
    updates = comp.value_of(rng, array_shape(x.type, (count,) + x.dims[1:]), computable=True)
    combiner = comp.module.assign_computation(x.type) if replace else comp.module.scalar_reducer(Op.ADD, x.type)
    window = ",".join(str(d) for d in range(1, x.shape.rank))
    attrs = (f", update_window_dims={{{window}}}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}"
             f", index_vector_dim=1, to_apply={combiner}" + (", unique_indices=true" if replace and rng.random() < 0.5
                                                             else ""))
    bound = x.bound + count * updates.bound
    return comp.add(op, array_shape(x.type, x.dims), [x, indices, updates], attrs, bound=bound,
                    frac=max(x.frac, updates.frac), exact=x.exact and updates.exact)


# --------------------------------------------------------------------------- dynamic dimensions

@GENERATORS.register(Op.SET_DIMENSION_SIZE, Op.GET_DIMENSION_SIZE, Op.DYNAMIC_RESHAPE)
def dynamic_dimension(comp: Comp, rng, op: str) -> Optional[Val]:
    """A dimension set to a smaller runtime size, read back, and reduced over (the dynamic
    value is used only through ops whose results do not depend on the padding)."""
    x = _array(comp, rng, min_rank=1, computable=True)
    if x is None or x.type.is_pred or x.type.is_complex:
        return None
    dim = int(rng.integers(0, x.shape.rank))
    size = comp.constant(S32, int(rng.integers(0, x.dims[dim] + 1)))
    dynamic = [d == dim for d in range(x.shape.rank)]
    comp.module.features.add("dynamic-sizes")
    if op == Op.DYNAMIC_RESHAPE:  # [n] with a runtime size k, to [<=n] of size k
        count = int(np.prod(x.dims))
        flat = comp.add("reshape", array_shape(x.type, (count,)), [x], keep=False)
        runtime = comp.constant(S32, int(rng.integers(0, count + 1)))
        sized = comp.add("set-dimension-size", Shape.array(x.type, (count,), None, [True]), [flat, runtime],
                         ", dimensions={0}", keep=False)
        d = comp.add(op, Shape.array(x.type, (count,), None, [True]), [sized, runtime], keep=False)
    else:
        d = comp.add("set-dimension-size", Shape.array(x.type, x.dims, x.shape.layout, dynamic), [x, size],
                     f", dimensions={{{dim}}}", keep=False)
    if op == Op.GET_DIMENSION_SIZE:
        return comp.add(op, array_shape(S32, ()), [d], f", dimensions={{{dim}}}", bound=float(MAX_DIM))
    reducer = comp.module.scalar_reducer(Op.ADD, x.type)
    zero = comp.constant(x.type, 0)
    all_dims = ",".join(str(i) for i in range(d.shape.rank))
    return comp.add("reduce", array_shape(x.type, ()), [d, zero], f", dimensions={{{all_dims}}}, to_apply={reducer}",
                    bound=x.bound * int(np.prod(x.dims)), frac=x.frac, exact=True)
