"""The per-device program as text, and moving data between shardings (resharding).

`Emitter` writes the instructions of one per-device computation as HLO text lines (the
partitioner parses the finished module, so the checker verifies every instruction it made).
A local value is an `L` (instruction name and local shape). A partitioned value is a `P`:
its local value, its sharding and its global shape. A device's block of a dimension of
size n split into t tiles is ceil(n/t) long; the last blocks of an uneven split are padded
(with values nobody may rely on: `mask` overwrites them where it matters).

`reshard` moves a P to another sharding with, in order of preference: nothing (same
placement), a local dynamic-slice (the target refines the source), collective-permute
(same tiles, other devices), all-to-all (a split moves from one dimension to another),
all-gather of the dimensions that must be whole, then a local slice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..ir import NameUniquer
from ..literal import format_literal, Literal
from ..shapes import Shape, format_shape, primitive_type
from ..sharding import HloSharding
from . import spmd_shardings as SS


@dataclass(frozen=True)
class L:
    name: str
    shape: Shape

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass
class P:
    local: L
    sharding: HloSharding
    gshape: Shape


def arr(shape: Shape, dims) -> Shape:
    return Shape.array(shape.element_type, tuple(dims))


def block_sizes(gdims: Sequence[int], tiles: Sequence[int]) -> tuple[int, ...]:
    return tuple(-(-n // t) for n, t in zip(gdims, tiles))


def positions(s: Optional[HloSharding], rank: int, n: int) -> np.ndarray:
    """[device, dim] -> tile index of that device along that dimension."""
    g = SS.grid(s, rank, n)
    pos = np.zeros((n, rank), dtype=np.int64)
    for idx in np.ndindex(*g.shape):
        pos[g[idx]] = idx[:rank]
    return pos


def same_placement(a, b, rank: int, n: int) -> bool:
    return SS.tiles(a, rank) == SS.tiles(b, rank) and np.array_equal(positions(a, rank, n), positions(b, rank, n))


class Emitter:
    """Instructions of one per-device computation, as text."""

    def __init__(self, names: NameUniquer, n: int, module_text: "ModuleText"):
        self.names = names
        self.n = n
        self.mod = module_text
        self.lines: list[str] = []
        self._pid: Optional[L] = None
        self._tables: dict[tuple, L] = {}
        self.channel = module_text.channel

    # -- raw emission
    def emit(self, hint: str, shape: Shape, body: str) -> L:
        name = self.names.unique(hint)
        self.lines.append(f"%{name} = {format_shape(shape, with_layout=False)} {body}")
        return L(name, shape)

    def root(self, value: L) -> None:
        self.root_name = value.name

    def constant(self, value, shape: Shape, hint="constant") -> L:
        lit = Literal.from_array(np.asarray(value, dtype=shape.element_type.dtype), shape)
        return self.emit(hint, shape, f"constant({format_literal(lit)})")

    def scalar(self, value, type_name: str) -> L:
        return self.constant(value, Shape.array(primitive_type(type_name), ()))

    def partition_id(self) -> L:
        if self._pid is None:
            self._pid = self.emit("partition-id", Shape.array("u32", ()), "partition-id()")
        return self._pid

    def table(self, values: Sequence[int]) -> L:
        """An s32[] holding values[partition-id]."""
        values = tuple(int(v) for v in values)
        if values in self._tables:
            return self._tables[values]
        if len(set(values)) == 1:
            out = self.scalar(values[0], "s32")
        else:
            c = self.constant(np.array(values, dtype=np.int32), Shape.array("s32", (len(values),)))
            pid = self.partition_id()
            ds = self.emit("dynamic-slice", Shape.array("s32", (1,)),
                           f"dynamic-slice({c}, {pid}), dynamic_slice_sizes={{1}}")
            out = self.emit("reshape", Shape.array("s32", ()), f"reshape({ds})")
        self._tables[values] = out
        return out

    # -- array helpers
    def dynamic_slice(self, v: L, starts: Sequence[L], sizes: Sequence[int]) -> L:
        if tuple(sizes) == tuple(v.shape.dims):
            return v
        ops = ", ".join(str(s) for s in [v, *starts])
        return self.emit("dynamic-slice", arr(v.shape, sizes),
                         f"dynamic-slice({ops}), dynamic_slice_sizes={{{','.join(map(str, sizes))}}}")

    def slice(self, v: L, starts: Sequence[int], limits: Sequence[int]) -> L:
        if all(s == 0 for s in starts) and tuple(limits) == tuple(v.shape.dims):
            return v
        spec = ", ".join(f"[{a}:{b}]" for a, b in zip(starts, limits))
        return self.emit("slice", arr(v.shape, [b - a for a, b in zip(starts, limits)]),
                         f"slice({v}), slice={{{spec}}}")

    def pad(self, v: L, low: Sequence[int], high: Sequence[int], value: Optional[L] = None) -> L:
        if not any(low) and not any(high):
            return v
        if value is None:
            value = self.zero(v.shape)
        dims = [d + a + b for d, a, b in zip(v.shape.dims, low, high)]
        spec = "x".join(f"{a}_{b}" for a, b in zip(low, high))
        return self.emit("pad", arr(v.shape, dims), f"pad({v}, {value}), padding={spec}")

    def zero(self, shape: Shape) -> L:
        return self.constant(np.zeros((), dtype=shape.element_type.dtype), arr(shape, ()))

    def broadcast(self, v: L, shape: Shape, dims: Sequence[int] = ()) -> L:
        return self.emit("broadcast", shape, f"broadcast({v}), dimensions={{{','.join(map(str, dims))}}}")

    def reshape(self, v: L, dims: Sequence[int]) -> L:
        if tuple(dims) == tuple(v.shape.dims):
            return v
        return self.emit("reshape", arr(v.shape, dims), f"reshape({v})")

    def transpose(self, v: L, perm: Sequence[int]) -> L:
        if list(perm) == list(range(len(perm))):
            return v
        dims = [v.shape.dims[p] for p in perm]
        return self.emit("transpose", arr(v.shape, dims), f"transpose({v}), dimensions={{{','.join(map(str, perm))}}}")

    def concatenate(self, vs: Sequence[L], dim: int) -> L:
        dims = list(vs[0].shape.dims)
        dims[dim] = sum(v.shape.dims[dim] for v in vs)
        return self.emit("concatenate", arr(vs[0].shape, dims),
                         f"concatenate({', '.join(map(str, vs))}), dimensions={{{dim}}}")

    def select(self, pred: L, a: L, b: L) -> L:
        return self.emit("select", a.shape, f"select({pred}, {a}, {b})")

    # -- collectives
    def _groups(self, groups) -> str:
        return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"

    def all_gather(self, v: L, dim: int, groups) -> L:
        k = len(groups[0])
        dims = list(v.shape.dims)
        dims[dim] *= k
        return self.emit("all-gather", arr(v.shape, dims),
                         f"all-gather({v}), channel_id={self.channel()}, replica_groups={self._groups(groups)}, "
                         f"dimensions={{{dim}}}, use_global_device_ids=true")

    def all_reduce(self, v: L, groups, reducer) -> L:
        return self.emit("all-reduce", v.shape,
                         f"all-reduce({v}), channel_id={self.channel()}, replica_groups={self._groups(groups)}, "
                         f"use_global_device_ids=true, to_apply=%{self.mod.reducer(reducer, v.shape)}")

    def reduce_scatter(self, v: L, dim: int, groups, reducer) -> L:
        k = len(groups[0])
        dims = list(v.shape.dims)
        dims[dim] //= k
        return self.emit("reduce-scatter", arr(v.shape, dims),
                         f"reduce-scatter({v}), channel_id={self.channel()}, replica_groups={self._groups(groups)}, "
                         f"use_global_device_ids=true, dimensions={{{dim}}}, "
                         f"to_apply=%{self.mod.reducer(reducer, v.shape)}")

    def all_to_all(self, v: L, dim: int, groups) -> L:
        return self.emit("all-to-all", v.shape,
                         f"all-to-all({v}), channel_id={self.channel()}, replica_groups={self._groups(groups)}, "
                         f"dimensions={{{dim}}}")

    def collective_permute(self, v: L, pairs) -> L:
        spec = "{" + ",".join("{%d,%d}" % p for p in pairs) + "}"
        return self.emit("collective-permute", v.shape,
                         f"collective-permute({v}), channel_id={self.channel()}, source_target_pairs={spec}")

    # -- sharding-aware helpers
    def offsets(self, s: HloSharding, gdims: Sequence[int]) -> list[L]:
        """Per dimension, an s32[] with this device's block start."""
        rank = len(gdims)
        t = SS.tiles(s, rank)
        bs = block_sizes(gdims, t)
        pos = positions(s, rank, self.n)
        return [self.table(pos[:, k] * bs[k]) for k in range(rank)]

    def shard_of_replicated(self, v: L, s: HloSharding) -> L:
        """This device's block of a replicated (whole) value."""
        gdims = v.shape.dims
        t = SS.tiles(s, len(gdims))
        if all(x == 1 for x in t):
            return v
        bs = block_sizes(gdims, t)
        padded = self.pad(v, [0] * len(gdims), [b * x - d for b, x, d in zip(bs, t, gdims)])
        return self.dynamic_slice(padded, self.offsets(s, gdims), bs)

    def mask(self, p: P, fill, dims: Optional[Sequence[int]] = None) -> L:
        """The local value with the padding of uneven blocks (along `dims`) set to `fill`."""
        gdims = p.gshape.dims
        rank = len(gdims)
        t = SS.tiles(p.sharding, rank)
        bs = block_sizes(gdims, t)
        v = p.local
        for k in (range(rank) if dims is None else dims):
            if gdims[k] % t[k] == 0:
                continue
            pos = positions(p.sharding, rank, self.n)
            limit = self.table([gdims[k] - pos[d, k] * bs[k] for d in range(self.n)])
            iota = self.emit("iota", Shape.array("s32", v.shape.dims), f"iota(), iota_dimension={k}")
            lim = self.broadcast(limit, Shape.array("s32", v.shape.dims))
            pred = self.emit("compare", Shape.array("pred", v.shape.dims), f"compare({iota}, {lim}), direction=LT")
            f = fill if isinstance(fill, L) else self.constant(fill, arr(v.shape, ()))
            fb = self.broadcast(f, v.shape)
            v = self.select(pred, v, fb)
        return v


class ModuleText:
    """Computations the partitioner adds (reducers) and the channel-id counter."""

    def __init__(self, names: NameUniquer):
        self.names = names
        self.extra: list[str] = []
        self._reducers: dict[tuple, str] = {}
        self._channel = 0

    def channel(self) -> int:
        self._channel += 1
        return self._channel

    def reducer(self, op, shape: Shape) -> str:
        """A computation applying the binary opcode `op` to two scalars of `shape`'s type."""
        et = shape.element_type.name
        key = (str(op), et)
        if key not in self._reducers:
            name = self.names.unique(f"{op}.{et}.reducer")
            self.extra.append(f"%{name} (a: {et}[], b: {et}[]) -> {et}[] {{\n  %a = {et}[] parameter(0)\n"
                              f"  %b = {et}[] parameter(1)\n  ROOT %r = {et}[] {op}(%a, %b)\n}}\n")
            self._reducers[key] = name
        return self._reducers[key]


# --------------------------------------------------------------------------- resharding

def groups_along(s: HloSharding, rank: int, n: int, dims: Sequence[int]) -> list[list[int]]:
    """Device groups that differ only in their tile index along `dims` (ordered by it)."""
    g = SS.grid(s, rank, n)
    rest = [i for i in range(g.ndim) if i not in dims]
    size = math.prod(g.shape[d] for d in dims)
    return g.transpose(rest + list(dims)).reshape(-1, size).tolist()


def gather_dims(e: Emitter, p: P, dims: Sequence[int]) -> P:
    """All-gather `p` along `dims` (each becomes whole)."""
    rank = p.gshape.rank
    v, s = p.local, p.sharding
    for k in dims:
        t = SS.tiles(s, rank)
        if t[k] == 1:
            continue
        groups = groups_along(s, rank, e.n, [k])
        v = e.all_gather(v, k, groups)
        if v.shape.dims[k] != p.gshape.dims[k]:
            limits = list(v.shape.dims)
            limits[k] = p.gshape.dims[k]
            v = e.slice(v, [0] * rank, limits)
        s = SS.drop_dims(s, rank, [k])
    return P(v, s, p.gshape)


def replicate(e: Emitter, p: P) -> L:
    rank = p.gshape.rank
    if p.sharding is None or not p.sharding.is_tiled or rank == 0:
        return p.local
    return gather_dims(e, p, [k for k in range(rank) if SS.tiles(p.sharding, rank)[k] > 1]).local


def _local_slice(e: Emitter, p: P, t: HloSharding) -> Optional[L]:
    rank = p.gshape.rank
    gd = p.gshape.dims
    ts, tt = SS.tiles(p.sharding, rank), SS.tiles(t, rank)
    bs, bt = block_sizes(gd, ts), block_sizes(gd, tt)
    ps, pt = positions(p.sharding, rank, e.n), positions(t, rank, e.n)
    offs = np.zeros((e.n, rank), dtype=np.int64)
    for d in range(e.n):
        for k in range(rank):
            lo = pt[d, k] * bt[k] - ps[d, k] * bs[k]
            if lo < 0 or lo + bt[k] > bs[k]:
                # a block that runs past the source block is fine only inside the global padding
                if lo < 0 or pt[d, k] * bt[k] >= gd[k] or lo + min(bt[k], gd[k] - pt[d, k] * bt[k]) > bs[k]:
                    return None
            offs[d, k] = lo
    v = p.local
    over = [max(0, int(offs[:, k].max()) + bt[k] - bs[k]) for k in range(rank)]
    v = e.pad(v, [0] * rank, over)
    return e.dynamic_slice(v, [e.table(offs[:, k]) for k in range(rank)], bt)


def _permute(e: Emitter, p: P, t: HloSharding) -> Optional[L]:
    rank = p.gshape.rank
    if SS.tiles(p.sharding, rank) != SS.tiles(t, rank):
        return None
    ps, pt = positions(p.sharding, rank, e.n), positions(t, rank, e.n)
    holders: dict[tuple, list[int]] = {}
    for d in range(e.n):
        holders.setdefault(tuple(ps[d]), []).append(d)
    src = [-1] * e.n
    for d in range(e.n):                       # keep what is already in place
        if tuple(ps[d]) == tuple(pt[d]):
            src[d] = d
            holders[tuple(ps[d])].remove(d)
    for d in range(e.n):
        if src[d] < 0:
            src[d] = holders[tuple(pt[d])].pop(0)
    pairs = [(s, d) for d, s in enumerate(src)]
    return e.collective_permute(p.local, pairs)


def _all_to_all(e: Emitter, p: P, t: HloSharding) -> Optional[L]:
    """Source split along a, target split along b instead (same device order): one all-to-all."""
    rank = p.gshape.rank
    ts, tt = SS.tiles(p.sharding, rank), SS.tiles(t, rank)
    diff = [k for k in range(rank) if ts[k] != tt[k]]
    if len(diff) != 2:
        return None
    a, b = diff
    if ts[a] == 1 and tt[b] == 1:
        a, b = b, a
    if not (tt[a] == 1 and ts[b] == 1 and ts[a] == tt[b]):
        return None
    k = ts[a]
    gd = p.gshape.dims
    if gd[a] % k or gd[b] % k:
        return None
    gs, gt = SS.grid(p.sharding, rank, e.n), SS.grid(t, rank, e.n)
    if not np.array_equal(np.moveaxis(gs, a, b), gt):
        return None
    groups = groups_along(p.sharding, rank, e.n, [a])
    v = p.local
    # split b into (k, b/k), exchange the k blocks, put them back along a
    dims = list(v.shape.dims)
    split = dims[:b] + [k, dims[b] // k] + dims[b + 1:]
    v = e.reshape(v, split)
    v = e.all_to_all(v, b, groups)
    # now axis b (size k) indexes the source tile along a: move it next to a and merge
    order = [i for i in range(rank + 1) if i != b]
    pos_a = order.index(a if a < b else a + 1)
    order.insert(pos_a, b)
    v = e.transpose(v, order)
    out = list(p.local.shape.dims)
    out[b] //= k
    out[a] *= k
    return e.reshape(v, out)


def reshard(e: Emitter, p: P, t: Optional[HloSharding]) -> P:
    rank = p.gshape.rank
    if t is None or t.is_tuple or rank == 0:
        return p if (t is None or rank > 0) else P(replicate(e, p), HloSharding.replicated(), p.gshape)
    if t.kind != "tiled" or t.is_manual_subgroup:
        t = HloSharding.replicated()
    if p.sharding is not None and p.sharding.kind == "tiled" and p.sharding.is_manual_subgroup:
        p = P(p.local, HloSharding.replicated(), p.gshape)
    if same_placement(p.sharding, t, rank, e.n):
        return P(p.local, t, p.gshape)
    if not SS.is_informative(t):
        return P(replicate(e, p), t, p.gshape)
    if not SS.is_informative(p.sharding):
        return P(e.shard_of_replicated(p.local, t), t, p.gshape)
    for attempt in (_local_slice, _permute, _all_to_all):
        v = attempt(e, p, t)
        if v is not None:
            return P(v, t, p.gshape)
    # gather the dimensions whose split does not refine into the target, then slice
    ts, tt = SS.tiles(p.sharding, rank), SS.tiles(t, rank)
    need = [k for k in range(rank) if ts[k] > 1 and (tt[k] % ts[k] != 0)]
    if need and len(need) < sum(1 for x in ts if x > 1):
        q = gather_dims(e, p, need)
        v = _local_slice(e, q, t)
        if v is not None:
            return P(v, t, p.gshape)
    whole = replicate(e, p)
    return P(e.shard_of_replicated(whole, t), t, p.gshape)
