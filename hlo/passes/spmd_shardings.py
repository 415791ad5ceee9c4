"""Sharding arithmetic shared by sharding-propagation and spmd-partitioner.

Everything works on *device grids*: a tiled sharding of a rank-r array is an integer
array of shape (tiles_0, ..., tiles_{r-1}, replication) holding device ids
(`HloSharding.device_grid`). Moving a sharding through an op is a transpose and a
reshape of that grid; two shardings place data identically when their grids are equal.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..sharding import HloSharding, MANUAL, MAXIMAL, TUPLE, UNKNOWN, sharding_of, set_sharding
from ..shapes import Shape


def grid(s: HloSharding, rank: int, n: int) -> np.ndarray:
    """Device grid of `s` for a rank-`rank` array on devices 0..n-1 (replicated: one tile)."""
    if s is None or not s.is_tiled or s.is_manual_subgroup:
        return np.arange(n, dtype=np.int64).reshape((1,) * rank + (n,))
    return s.device_grid()


def tiles(s: Optional[HloSharding], rank: int) -> tuple[int, ...]:
    if s is None or not s.is_tiled or s.is_manual_subgroup:
        return (1,) * rank
    return s.data_tiles


def tile_count(s: Optional[HloSharding]) -> int:
    if s is None or not s.is_tiled:
        return 1
    return int(np.prod(s.data_tiles))


def is_informative(s: Optional[HloSharding]) -> bool:
    """A sharding that says how to split data (tiled over at least one dimension)."""
    return s is not None and s.is_tiled and not s.is_manual_subgroup and tile_count(s) > 1


def map_dims(s: Optional[HloSharding], in_rank: int, out_rank: int,
             out_from_in: dict[int, int]) -> Optional[HloSharding]:
    """The sharding of a rank-`out_rank` array whose dimension j holds operand dimension
    out_from_in[j] (other output dimensions unsharded; operand dimensions not mapped have
    their tiles turned into replication)."""
    if s is None:
        return None
    if not s.is_tiled or s.is_manual_subgroup:
        return s
    if s.data_rank != in_rank:
        return None
    g = s.device_grid()
    order = [out_from_in[j] for j in sorted(out_from_in)]
    rest = [i for i in range(in_rank) if i not in order]
    g = g.transpose(order + rest + [in_rank])
    out_tiles = [1] * out_rank
    for j, i in out_from_in.items():
        out_tiles[j] = s.data_tiles[i]
    return HloSharding.from_grid(g.reshape(out_tiles + [-1]), out_rank)


def drop_dims(s: Optional[HloSharding], rank: int, dims: Sequence[int]) -> Optional[HloSharding]:
    """The same array's sharding with `dims` no longer sharded (their tiles become replication)."""
    keep = {i: i for i in range(rank) if i not in dims}
    return map_dims(s, rank, rank, keep)


def reshape_map(in_dims: Sequence[int], out_dims: Sequence[int], s: Optional[HloSharding]) -> Optional[HloSharding]:
    """Sharding of reshape(x) given x's sharding, when each sharded dimension survives the
    reshape (kept as is, or as the major part of a split, or as the major part of a merge)."""
    if s is None or not s.is_tiled or s.is_manual_subgroup:
        return s
    in_rank, out_rank = len(in_dims), len(out_dims)
    t = s.data_tiles
    out_from_in: dict[int, int] = {}
    out_tiles: dict[int, int] = {}
    i = j = 0
    while i < in_rank and j < out_rank:
        # find the smallest groups in_dims[i:i2], out_dims[j:j2] of equal products
        i2, j2 = i + 1, j + 1
        pi, pj = in_dims[i], out_dims[j]
        while pi != pj:
            if pi < pj:
                pi *= in_dims[i2]
                i2 += 1
            else:
                pj *= out_dims[j2]
                j2 += 1
        sharded = [k for k in range(i, i2) if t[k] > 1]
        if sharded:
            # the first sharded input dim must be the major (non-1) dim of the group
            k = sharded[0]
            majors_in = [d for d in range(i, i2) if in_dims[d] != 1]
            majors_out = [d for d in range(j, j2) if out_dims[d] != 1]
            if len(sharded) > 1 or not majors_in or k != majors_in[0] or not majors_out:
                return None
            jo = majors_out[0]
            if out_dims[jo] % t[k] != 0 and not (i2 - i == 1 and j2 - j == 1):
                return None
            out_from_in[jo] = k
            out_tiles[jo] = t[k]
        i, j = i2, j2
        while i < in_rank and in_dims[i] == 1 and t[i] == 1 and (j >= out_rank or out_dims[j] != 1):
            i += 1
        while j < out_rank and out_dims[j] == 1 and (i >= in_rank or in_dims[i] != 1):
            j += 1
    if any(t[k] > 1 for k in range(i, in_rank)):
        return None
    return map_dims(s, in_rank, out_rank, out_from_in)


def same_placement(a: Optional[HloSharding], b: Optional[HloSharding], rank: int, n: int) -> bool:
    return np.array_equal(grid(a, rank, n), grid(b, rank, n)) if rank_ok(a, rank) and rank_ok(b, rank) \
        else a == b


def rank_ok(s: Optional[HloSharding], rank: int) -> bool:
    return s is None or not s.is_tiled or s.data_rank == rank


# --------------------------------------------------------------------------- tuples

def leaf_shardings(s: Optional[HloSharding], shape: Shape) -> list:
    """Flat per-leaf shardings of a (possibly nested) tuple shape."""
    count = _leaf_count(shape)
    if s is None:
        return [None] * count
    if s.kind == TUPLE:
        if len(s.elements) == count:
            return list(s.elements)
        if shape.is_tuple and len(s.elements) == len(shape.tuple_shapes):
            out = []
            for e, sub in zip(s.elements, shape.tuple_shapes):
                out += leaf_shardings(e, sub)
            return out
        return [None] * count
    return [s] * count


def _leaf_count(shape: Shape) -> int:
    if not shape.is_tuple:
        return 1
    return sum(_leaf_count(s) for s in shape.tuple_shapes)


def nest(leaves: list, shape: Shape) -> Optional[HloSharding]:
    """Nested tuple sharding (one element per tuple element) from flat leaves."""
    it = iter(leaves)

    def build(sh: Shape):
        if not sh.is_tuple:
            return next(it)
        return HloSharding.tuple_of([build(s) for s in sh.tuple_shapes])
    return build(shape)


def element(s: Optional[HloSharding], shape: Shape, index: int) -> Optional[HloSharding]:
    """Sharding of tuple element `index` given a nested or flat tuple sharding."""
    if s is None:
        return None
    if s.kind != TUPLE:
        return s
    if len(s.elements) == len(shape.tuple_shapes):
        return s.elements[index]
    leaves = leaf_shardings(s, shape)
    start = sum(_leaf_count(t) for t in shape.tuple_shapes[:index])
    sub = shape.tuple_shapes[index]
    return nest(leaves[start:start + _leaf_count(sub)], sub)


def flat(s: Optional[HloSharding], shape: Shape) -> Optional[HloSharding]:
    """The flat form XLA prints for a tuple-shaped value."""
    if s is None or not shape.is_tuple:
        return s
    leaves = leaf_shardings(s, shape)
    return HloSharding.tuple_of([x if x is not None else HloSharding.replicated() for x in leaves])


def read(inst) -> Optional[HloSharding]:
    """An instruction's sharding, nested to its shape when it is a tuple."""
    s = sharding_of(inst)
    if s is None or not inst.shape.is_tuple:
        return s
    return nest(leaf_shardings(s, inst.shape), inst.shape)


def write(inst, s: Optional[HloSharding]) -> None:
    set_sharding(inst, flat(s, inst.shape))


def is_maximal_or_unknown(s: Optional[HloSharding]) -> bool:
    return s is not None and s.kind in (MAXIMAL, UNKNOWN, MANUAL)
