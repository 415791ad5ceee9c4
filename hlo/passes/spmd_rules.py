"""Per-opcode rules of spmd-partitioner (registered in spmd_partitioner.RULES).

A rule gets the partitioning context and the global instruction and returns the
partitioned value (P, or TP for tuples), or None to take the fallback.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

from ..opcodes import Category, Op, Trait, has_trait, ops_in
from ..sharding import HloSharding
from ..shapes import Shape
from . import spmd_shardings as SS
from .sharding_propagation import (SDY_GLOBAL_TO_LOCAL, SDY_LOCAL_TO_GLOBAL, SPMD_FULL_TO_SHARD,
                                   SPMD_SHARD_TO_FULL, dot_dims, is_annotation, is_manual_body_call, target)
from .spmd_context import RULES, TP, Context
from .spmd_reshard import L, P, block_sizes, positions, reshard, same_placement

MANUAL = HloSharding.manual()


def from_positions(pos: np.ndarray, tiles: tuple[int, ...], n: int) -> Optional[HloSharding]:
    """The sharding in which device d holds tile pos[d] (None unless every tile has as many devices)."""
    rank = len(tiles)
    count = math.prod(tiles)
    if n % count:
        return None
    rep = n // count
    g = np.full(tuple(tiles) + (rep,), -1, dtype=np.int64)
    fill: dict[tuple, int] = {}
    for d in range(n):
        key = tuple(int(x) for x in pos[d][:rank]) if rank else ()
        k = fill.get(key, 0)
        if k >= rep:
            return None
        g[key + (k,)] = d
        fill[key] = k + 1
    return HloSharding.from_grid(g, rank)


# --------------------------------------------------------------------------- leaves and plumbing

@RULES.register(Op.PARAMETER)
def _parameter(ctx: Context, inst):
    s = ctx.target(inst)
    if inst.shape.is_tuple:
        return None
    if s is None or not s.is_tiled or s.is_manual_subgroup:
        s = HloSharding.replicated()
    local = ctx.local_shape(inst.shape, s)
    v = ctx.e.emit(inst.name, local, f"parameter({inst.parameter_number}), sharding={s}")
    return P(v, s, inst.shape)


@RULES.register(Op.TUPLE)
def _tuple(ctx: Context, inst):
    return TP([ctx.value(op) for op in inst.operands])


@RULES.register(Op.GET_TUPLE_ELEMENT)
def _gte(ctx: Context, inst):
    v = ctx.value(inst.operands[0])
    if isinstance(v, TP):
        return v.elements[inst.attrs["index"]]
    return None


@RULES.register(Op.CUSTOM_CALL)
def _custom_call(ctx: Context, inst):
    t = target(inst)
    if is_annotation(inst):
        v = ctx.value(inst.operands[0])
        if isinstance(v, TP):
            return v
        if v.sharding is not None and v.sharding.is_manual:
            return v
        return reshard(ctx.e, v, ctx.target(inst))
    if t in (SDY_GLOBAL_TO_LOCAL, SPMD_FULL_TO_SHARD):
        s = ctx.target(inst)
        v = ctx.operand(inst, 0, s)
        return P(v.local, MANUAL, inst.shape)
    if t in (SDY_LOCAL_TO_GLOBAL, SPMD_SHARD_TO_FULL):
        v = ctx.value(inst.operands[0])
        s = ctx.target(inst)
        if s is None or not s.is_tiled or s.is_manual_subgroup:
            s = HloSharding.replicated()
        return P(v.local, s, inst.shape)
    return None


@RULES.register(Op.CALL)
def _call(ctx: Context, inst):
    if not is_manual_body_call(inst):
        return None
    ops = [ctx.value(op).local for op in inst.operands]
    out = ctx.clone(inst, ops, inst.shape)
    if inst.shape.is_tuple:
        parts = []
        for i, s in enumerate(inst.shape.tuple_shapes):
            g = ctx.e.emit("get-tuple-element", s, f"get-tuple-element({out}), index={i}")
            parts.append(P(g, MANUAL, s))
        return TP(parts)
    return P(out, MANUAL, inst.shape)


@RULES.register(Op.CONSTANT, Op.IOTA)
def _leaf(ctx: Context, inst):
    out = ctx.clone(inst, [], inst.shape)
    return ctx.wrap_whole(out, inst.shape)


# --------------------------------------------------------------------------- elementwise and data movement

def _array_target(ctx: Context, inst) -> HloSharding:
    s = ctx.target(inst)
    if s is None or s.is_tuple or not s.is_tiled or s.is_manual_subgroup:
        return HloSharding.replicated()
    return s


@RULES.register(ops_in(Category.ELEMENTWISE))
def _elementwise(ctx: Context, inst):
    if inst.shape.is_tuple:
        return None
    s = _array_target(ctx, inst)
    ops = []
    for i, op in enumerate(inst.operands):
        if op.shape.rank != inst.shape.rank:
            return None
        ops.append(ctx.operand(inst, i, s).local)
    return P(ctx.clone(inst, ops, ctx.local_shape(inst.shape, s)), s, inst.shape)


@RULES.register(Op.BROADCAST)
def _broadcast(ctx: Context, inst):
    s = _array_target(ctx, inst)
    dims = inst.attrs.get("dimensions", ())
    need = SS.map_dims(s, inst.shape.rank, len(dims), {i: d for i, d in enumerate(dims)})
    op = ctx.operand(inst, 0, need)
    return P(ctx.clone(inst, [op.local], ctx.local_shape(inst.shape, s)), s, inst.shape)


@RULES.register(Op.TRANSPOSE)
def _transpose(ctx: Context, inst):
    s = _array_target(ctx, inst)
    perm = inst.attrs["dimensions"]
    need = SS.map_dims(s, len(perm), len(perm), {p: j for j, p in enumerate(perm)})
    op = ctx.operand(inst, 0, need)
    return P(ctx.clone(inst, [op.local], ctx.local_shape(inst.shape, s)), s, inst.shape)


@RULES.register(Op.RESHAPE, Op.BITCAST)
def _reshape(ctx: Context, inst):
    s = _array_target(ctx, inst)
    in_dims, out_dims = inst.operands[0].shape.dims, inst.shape.dims
    need = SS.reshape_map(out_dims, in_dims, s)
    if need is None:
        return None
    back = SS.reshape_map(in_dims, out_dims, need)
    if back is None or not _same(ctx, back, s, inst.shape.rank):
        return None
    for dims, sh in ((in_dims, need), (out_dims, s)):
        t = SS.tiles(sh, len(dims))
        if any(d % x for d, x in zip(dims, t)):
            return None
    op = ctx.operand(inst, 0, need)
    local = ctx.local_shape(inst.shape, s)
    return P(ctx.e.reshape(op.local, local.dims), s, inst.shape)


def _same(ctx, a, b, rank) -> bool:
    return same_placement(a, b, rank, ctx.n)


# --------------------------------------------------------------------------- reductions

def reducer_kind(comp) -> Optional[Op]:
    """The associative binary opcode a reduction computation applies to its two parameters, if any."""
    root = comp.root
    params = comp.parameters
    if len(params) != 2 or not has_trait(root.opcode, Trait.ASSOCIATIVE) or \
            set(map(id, root.operands)) != set(map(id, params)) or len(root.operands) != 2:
        return None
    return Op(root.opcode)


@RULES.register(Op.REDUCE)
def _reduce(ctx: Context, inst):
    if len(inst.operands) != 2 or inst.shape.is_tuple:
        return None
    kind = reducer_kind(inst.attrs["to_apply"])
    if kind is None:
        return None
    src = ctx.value(inst.operands[0])
    if src.sharding is not None and src.sharding.is_manual:
        return None
    rank = inst.operands[0].shape.rank
    dims = inst.attrs["dimensions"]
    t = SS.tiles(src.sharding, rank)
    init = ctx.operand(inst, 1, HloSharding.replicated()).local
    sharded = [d for d in dims if t[d] > 1]
    v = ctx.e.mask(src, init, sharded) if sharded else src.local
    kept = [d for d in range(rank) if d not in dims]
    out_s = SS.map_dims(src.sharding, rank, len(kept), {j: d for j, d in enumerate(kept)}) \
        if src.sharding is not None else HloSharding.replicated()
    out = ctx.clone(inst, [v, init], Shape.array(inst.shape.element_type, [v.shape.dims[d] for d in kept]))
    if sharded:
        groups = _partial_groups(src.sharding, rank, sharded, ctx.n)
        out = ctx.e.all_reduce(out, groups, kind)
    res = P(out, out_s if out_s is not None else HloSharding.replicated(), inst.shape)
    return reshard(ctx.e, res, _array_target(ctx, inst))


def _partial_groups(s: HloSharding, rank: int, dims, n: int) -> list[list[int]]:
    """Groups of devices holding the same blocks except along `dims`, one device per block."""
    pos = positions(s, rank, n)
    keep = [k for k in range(rank) if k not in dims]
    buckets: dict[tuple, dict[tuple, list[int]]] = {}
    for d in range(n):
        key = tuple(pos[d, keep])
        sub = tuple(pos[d, list(dims)])
        buckets.setdefault(key, {}).setdefault(sub, []).append(d)
    groups = []
    for per_sub in buckets.values():
        lists = [per_sub[k] for k in sorted(per_sub)]
        for i in range(len(lists[0])):
            groups.append([lst[i] for lst in lists])
    return groups


# --------------------------------------------------------------------------- dot

def _dot_candidates(ctx: Context, inst, ls, rs, os_):
    """Per-device positions along (batch..., lhs free..., rhs free..., contracting...) and tiles."""
    n = ctx.n
    lb, lc, lf, rb, rc, rf = dot_dims(inst)
    lr, rr, orank = inst.operands[0].shape.rank, inst.operands[1].shape.rank, inst.shape.rank
    lp, rp, op_ = positions(ls, lr, n), positions(rs, rr, n), positions(os_, orank, n)
    lt, rt, ot = SS.tiles(ls, lr), SS.tiles(rs, rr), SS.tiles(os_, orank)
    nb = len(lb)
    zeros = np.zeros((n, 0), dtype=np.int64)

    def cols(p, dims):
        return p[:, list(dims)] if dims else zeros

    def tl(t, dims):
        return tuple(t[d] for d in dims)

    out_b, out_lf, out_rf = list(range(nb)), list(range(nb, nb + len(lf))), list(range(nb + len(lf), orank))
    z = lambda k: np.zeros((n, k), dtype=np.int64)  # noqa: E731
    one = lambda k: (1,) * k  # noqa: E731
    cands = [
        # operands' own splits combined (batch, lhs free and contracting from lhs, rhs free from rhs)
        (cols(lp, lb), tl(lt, lb), cols(lp, lf), tl(lt, lf), cols(rp, rf), tl(rt, rf), cols(lp, lc), tl(lt, lc)),
        # rhs-driven
        (cols(rp, rb), tl(rt, rb), z(len(lf)), one(len(lf)), cols(rp, rf), tl(rt, rf), cols(rp, rc), tl(rt, rc)),
        # lhs-driven
        (cols(lp, lb), tl(lt, lb), cols(lp, lf), tl(lt, lf), z(len(rf)), one(len(rf)), cols(lp, lc), tl(lt, lc)),
        # output-driven, contracting from lhs, then from rhs, then whole
        (cols(op_, out_b), tl(ot, out_b), cols(op_, out_lf), tl(ot, out_lf), cols(op_, out_rf), tl(ot, out_rf),
         cols(lp, lc), tl(lt, lc)),
        (cols(op_, out_b), tl(ot, out_b), cols(op_, out_lf), tl(ot, out_lf), cols(op_, out_rf), tl(ot, out_rf),
         cols(rp, rc), tl(rt, rc)),
        (cols(op_, out_b), tl(ot, out_b), cols(op_, out_lf), tl(ot, out_lf), cols(op_, out_rf), tl(ot, out_rf),
         z(len(lc)), one(len(lc))),
    ]
    return cands


def _cost(ctx: Context, src: Optional[HloSharding], dst: Optional[HloSharding], shape: Shape) -> float:
    rank = shape.rank
    if _same(ctx, src, dst, rank):
        return 0.0
    # refinement (a local slice) costs nothing
    ts, tt = SS.tiles(src, rank), SS.tiles(dst, rank)
    if all(b % a == 0 for a, b in zip(ts, tt)):
        ps, pt = positions(src, rank, ctx.n), positions(dst, rank, ctx.n)
        ratio = [b // a for a, b in zip(ts, tt)]
        if all((pt[d] // np.array(ratio) == ps[d]).all() for d in range(ctx.n)) and \
                all(s % b == 0 for s, b in zip(shape.dims, tt)):
            return 0.0
    return float(math.prod(shape.dims)) * max(1, shape.element_type.bits // 8) / max(1, SS.tile_count(dst))


@RULES.register(Op.DOT)
def _dot(ctx: Context, inst):
    if inst.shape.is_tuple:
        return None
    n = ctx.n
    lhs, rhs = ctx.value(inst.operands[0]), ctx.value(inst.operands[1])
    if any(v.sharding is not None and v.sharding.is_manual for v in (lhs, rhs)):
        return None
    want = _array_target(ctx, inst)
    lb, lc, lf, rb, rc, rf = dot_dims(inst)
    lshape, rshape = inst.operands[0].shape, inst.operands[1].shape
    best = None
    for cand in _dot_candidates(ctx, inst, lhs.sharding, rhs.sharding, want):
        pb, tb, plf, tlf, prf, trf, pc, tc = cand
        allpos = np.concatenate([pb, plf, prf, pc], axis=1)
        alltiles = tb + tlf + trf + tc
        if from_positions(allpos, alltiles, n) is None:
            continue
        # lhs: dims lb -> b, lf -> lf, lc -> c
        lpos = np.zeros((n, lshape.rank), dtype=np.int64)
        lt = [1] * lshape.rank
        rpos = np.zeros((n, rshape.rank), dtype=np.int64)
        rt = [1] * rshape.rank
        for j, d in enumerate(lb):
            lpos[:, d], lt[d] = pb[:, j], tb[j]
        for j, d in enumerate(lf):
            lpos[:, d], lt[d] = plf[:, j], tlf[j]
        for j, d in enumerate(lc):
            lpos[:, d], lt[d] = pc[:, j], tc[j]
        for j, d in enumerate(rb):
            rpos[:, d], rt[d] = pb[:, j], tb[j]
        for j, d in enumerate(rf):
            rpos[:, d], rt[d] = prf[:, j], trf[j]
        for j, d in enumerate(rc):
            rpos[:, d], rt[d] = pc[:, j], tc[j]
        lreq = from_positions(lpos, tuple(lt), n)
        rreq = from_positions(rpos, tuple(rt), n)
        opos = np.concatenate([pb, plf, prf], axis=1)
        ores = from_positions(opos, tb + tlf + trf, n)
        if lreq is None or rreq is None or ores is None:
            continue
        cost = _cost(ctx, lhs.sharding, lreq, lshape) + _cost(ctx, rhs.sharding, rreq, rshape)
        if math.prod(tc) > 1:
            cost += 2.0 * math.prod(block_sizes(inst.shape.dims, SS.tiles(ores, inst.shape.rank))) * \
                max(1, inst.shape.element_type.bits // 8)
        cost += _cost(ctx, ores, want, inst.shape)
        key = (cost, -SS.tile_count(ores))
        if best is None or key < best[0]:
            best = (key, lreq, rreq, ores, tc)
    if best is None:
        return None
    _, lreq, rreq, ores, tc = best
    lv = reshard(ctx.e, lhs, lreq)
    rv = reshard(ctx.e, rhs, rreq)
    lloc, rloc = lv.local, rv.local
    partial = math.prod(tc) > 1
    if partial:
        if any(lshape.dims[d] % SS.tiles(lreq, lshape.rank)[d] for d in lc):
            lloc = ctx.e.mask(lv, ctx.e.zero(lshape), list(lc))
            rloc = ctx.e.mask(rv, ctx.e.zero(rshape), list(rc))
    out = ctx.clone(inst, [lloc, rloc], ctx.local_shape(inst.shape, ores))
    if partial:
        # devices that share an output block and differ only in their contracting blocks
        c_pos = np.zeros((n, len(lc)), dtype=np.int64)
        lp = positions(lreq, lshape.rank, n)
        for j, d in enumerate(lc):
            c_pos[:, j] = lp[:, d]
        op_ = positions(ores, inst.shape.rank, n)
        buckets: dict[tuple, dict[tuple, list[int]]] = {}
        for d in range(n):
            buckets.setdefault(tuple(op_[d]), {}).setdefault(tuple(c_pos[d]), []).append(d)
        groups = []
        for per in buckets.values():
            lists = [per[k] for k in sorted(per)]
            for i in range(len(lists[0])):
                groups.append([lst[i] for lst in lists])
        scattered = _reduce_scatter(ctx, out, groups, ores, want, inst.shape)
        if scattered is not None:
            return scattered
        out = ctx.e.all_reduce(out, groups, Op.ADD)
    return reshard(ctx.e, P(out, ores, inst.shape), want)


def _reduce_scatter(ctx: Context, out: L, groups, ores, want, shape: Shape) -> Optional[P]:
    """Partial sums whose wanted result splits one dimension further across each summing group
    (member j takes part j): one reduce-scatter instead of all-reduce and slice."""
    rank = shape.rank
    g = len(groups[0])
    to, tw = SS.tiles(ores, rank), SS.tiles(want, rank)
    diff = [k for k in range(rank) if to[k] != tw[k]]
    if len(diff) != 1 or tw[diff[0]] != to[diff[0]] * g:
        return None
    k = diff[0]
    if shape.dims[k] % tw[k]:
        return None
    po, pw = positions(ores, rank, ctx.n), positions(want, rank, ctx.n)
    for group in groups:
        for j, d in enumerate(group):
            expect = po[d].copy()
            expect[k] = po[d][k] * g + j
            if not (pw[d] == expect).all():
                return None
    return P(ctx.e.reduce_scatter(out, k, groups, Op.ADD), want, shape)


# --------------------------------------------------------------------------- windows (halo exchange)

def halo(ctx: Context, p: P, dim: int, left: int, right: int, fill: Optional[L]) -> L:
    """The local block extended by `left` elements of the previous block and `right` of the
    next one along `dim` (outside the array: `fill`, or zeros when fill is None)."""
    e = ctx.e
    rank = p.gshape.rank
    v = p.local
    bs = v.shape.dims[dim]
    pos = positions(p.sharding, rank, ctx.n)
    t = SS.tiles(p.sharding, rank)[dim]

    def neighbour(d, step):
        want = pos[d].copy()
        want[dim] += step
        for x in range(ctx.n):
            if (pos[x] == want).all():
                return x
        return None

    if left < 0:
        v = e.slice(v, [0] * dim + [-left] + [0] * (rank - dim - 1), list(v.shape.dims))
        left = 0
    if right < 0:
        lim = list(v.shape.dims)
        lim[dim] += right
        v = e.slice(v, [0] * rank, lim)
        right = 0
    parts = []
    if left:
        start = [0] * rank
        start[dim] = bs - left
        piece = e.slice(p.local, start, list(p.local.shape.dims))
        pairs = [(d, neighbour(d, 1)) for d in range(ctx.n) if neighbour(d, 1) is not None]
        parts.append(e.collective_permute(piece, pairs))
    parts.append(v)
    if right:
        lim = list(p.local.shape.dims)
        lim[dim] = right
        piece = e.slice(p.local, [0] * rank, lim)
        pairs = [(d, neighbour(d, -1)) for d in range(ctx.n) if neighbour(d, -1) is not None]
        parts.append(e.collective_permute(piece, pairs))
    out = e.concatenate(parts, dim) if len(parts) > 1 else v
    if fill is not None and t > 1:
        # positions before the array's start (first block) or after its end (last block)
        n_total = p.gshape.dims[dim]
        offs = e.table([pos[d, dim] * bs - left for d in range(ctx.n)])
        iota = e.emit("iota", Shape.array("s32", out.shape.dims), f"iota(), iota_dimension={dim}")
        ob = e.broadcast(offs, iota.shape)
        gidx = e.emit("add", iota.shape, f"add({iota}, {ob})")
        zero = e.broadcast(e.scalar(0, "s32"), iota.shape)
        lim = e.broadcast(e.scalar(n_total, "s32"), iota.shape)
        pshape = Shape.array("pred", out.shape.dims)
        ge = e.emit("compare", pshape, f"compare({gidx}, {zero}), direction=GE")
        lt = e.emit("compare", pshape, f"compare({gidx}, {lim}), direction=LT")
        ok = e.emit("and", pshape, f"and({ge}, {lt})")
        out = e.select(ok, out, e.broadcast(fill, out.shape))
    return out


def _windowed(ctx: Context, inst, src: P, spatial_in: list[int], spatial_win: list[int], fill):
    """Halo-exchange `src` for a window op; returns (local input, new window dims) or None."""
    window = inst.attrs.get("window")
    rank = src.gshape.rank
    t = SS.tiles(src.sharding, rank)
    wdims = list(window.dims) if window is not None else []
    new_dims = list(wdims)
    v = src.local
    for k, wi in zip(spatial_in, spatial_win):
        if t[k] == 1:
            continue
        w = wdims[wi]
        n = src.gshape.dims[k]
        if w.base_dilation != 1 or n % t[k]:
            return None
        ke = (w.size - 1) * w.window_dilation + 1
        no = (n + w.padding_low + w.padding_high - ke) // w.stride + 1
        if no % t[k]:
            return None
        bs, bo = n // t[k], no // t[k]
        if bs != bo * w.stride:
            return None
        left = w.padding_low
        right = (bo - 1) * w.stride + ke - bs - left
        if left > bs or right > bs:
            return None
        if v is not src.local:
            return None          # one split spatial dimension at a time
        v = halo(ctx, src, k, left, right, fill)
        new_dims[wi] = type(w)(w.size, w.stride, 0, 0, w.window_dilation, w.base_dilation, w.window_reversal)
    return v, new_dims


@RULES.register(Op.CONVOLUTION)
def _convolution(ctx: Context, inst):
    if inst.attrs.get("feature_group_count", 1) != 1 or inst.attrs.get("batch_group_count", 1) != 1:
        return None
    cd = inst.attrs["dim_labels"]
    want = _array_target(ctx, inst)
    r = inst.shape.rank
    n = ctx.n
    op_ = positions(want, r, n)
    ot = SS.tiles(want, r)
    lpos = np.zeros((n, r), dtype=np.int64)
    lt = [1] * r
    lpos[:, cd.input_batch], lt[cd.input_batch] = op_[:, cd.output_batch], ot[cd.output_batch]
    for i, o in zip(cd.input_spatial, cd.output_spatial):
        lpos[:, i], lt[i] = op_[:, o], ot[o]
    rpos = np.zeros((n, r), dtype=np.int64)
    rt = [1] * r
    rpos[:, cd.kernel_output_feature], rt[cd.kernel_output_feature] = op_[:, cd.output_feature], \
        ot[cd.output_feature]
    lreq, rreq = from_positions(lpos, tuple(lt), n), from_positions(rpos, tuple(rt), n)
    if lreq is None or rreq is None:
        return None
    lv = ctx.operand(inst, 0, lreq)
    rv = ctx.operand(inst, 1, rreq)
    if any(inst.operands[0].shape.dims[d] % lt[d] for d in range(r)):
        return None
    res = _windowed(ctx, inst, lv, list(cd.input_spatial), list(range(len(cd.input_spatial))), None)
    if res is None:
        return None
    lloc, wdims = res
    window = inst.attrs.get("window")
    attrs = {"window": type(window)(tuple(wdims))} if window is not None else {}
    out = ctx.clone(inst, [lloc, rv.local], ctx.local_shape(inst.shape, want), **attrs)
    return P(out, want, inst.shape)


@RULES.register(Op.REDUCE_WINDOW)
def _reduce_window(ctx: Context, inst):
    if len(inst.operands) != 2 or inst.shape.is_tuple:
        return None
    want = _array_target(ctx, inst)
    r = inst.shape.rank
    src = ctx.operand(inst, 0, want)
    init = ctx.operand(inst, 1, HloSharding.replicated()).local
    window = inst.attrs["window"]
    t = SS.tiles(want, r)
    for k in range(r):
        if t[k] > 1 and (window.dims[k].size != 1 or window.dims[k].stride != 1 or window.dims[k].padding_low
                         or window.dims[k].padding_high):
            break
    else:
        out = ctx.clone(inst, [src.local, init], ctx.local_shape(inst.shape, want))
        return P(out, want, inst.shape)
    if inst.operands[0].shape.dims != inst.shape.dims:
        return None
    res = _windowed(ctx, inst, src, list(range(r)), list(range(r)), init)
    if res is None:
        return None
    v, wdims = res
    out = ctx.clone(inst, [v, init], ctx.local_shape(inst.shape, want), window=type(window)(tuple(wdims)))
    return P(out, want, inst.shape)
