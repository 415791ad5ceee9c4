"""sharding-propagation: give every instruction a sharding, from the annotated ones.

Seeds are the instructions that carry `sharding=` (parameters, `Sharding` custom calls,
roots), Shardy's `xla.sdy.sharding` on `xla.sdy.FuncResultSharding`, and the
`in_shardings` / `out_shardings` of shard_map's `xla.sdy.GlobalToLocalShape` /
`xla.sdy.LocalToGlobalShape` (read into `sharding=` first). Calls that are not shard_map
bodies are inlined first, so propagation sees through them.

Propagation then runs forward (operands -> result) and backward (result -> operands)
over each computation until nothing changes, with per-opcode rules (FORWARD / BACKWARD
registries below). The choices where XLA documents none (docs/SPMD.md lists them):

* a seed never changes; an instruction keeps the first sharding it is given;
* in the main rounds only shardings that split data (tiled over some dimension) travel;
  replicated ones travel in a last round, and what is still unsharded is replicated;
* forward before backward in each round; an elementwise op takes the sharding of the
  operand with the most tiles (the first on a tie); a dot or convolution takes its
  result dimensions from the lhs when the lhs is split along a batch or free dimension,
  otherwise from the rhs; contracting and reduced dimensions become replication;
* a reshape keeps a split dimension when the dimension survives whole or as the major part
  of a split or merge; otherwise the result is left to backward propagation;
* while, conditional, sort, gather, scatter and other ops without a rule get a sharding
  only from their users (or replicated); the partitioner computes them with its fallback.
"""
from __future__ import annotations

from typing import Optional

from ..ir import Computation, Instruction, Module, NameUniquer
from ..opcodes import Category, Op, ops_in
from ..registry import OpRegistry
from ..sharding import (HloSharding, frontend_attribute, manual_axes_of, module_meshes, sdy_sharding)
from . import spmd_shardings as S
from .base import Pass, register
from .rewrite import inline_call

SDY_GLOBAL_TO_LOCAL = "xla.sdy.GlobalToLocalShape"
SDY_LOCAL_TO_GLOBAL = "xla.sdy.LocalToGlobalShape"
SDY_FUNC_RESULT = "xla.sdy.FuncResultSharding"
SHARDING_TARGET = "Sharding"
SPMD_FULL_TO_SHARD = "SPMDFullToShardShape"
SPMD_SHARD_TO_FULL = "SPMDShardToFullShape"

FORWARD = OpRegistry("sharding forward rule")
BACKWARD = OpRegistry("sharding backward rule")


def target(inst) -> Optional[str]:
    return inst.attrs.get("custom_call_target") if inst.opcode == Op.CUSTOM_CALL else None


def is_annotation(inst) -> bool:
    """`Sharding` custom calls and Shardy's result annotation: identities carrying a sharding."""
    return target(inst) in (SHARDING_TARGET, SDY_FUNC_RESULT)


def is_manual_body_call(inst) -> bool:
    return inst.opcode == Op.CALL and (
        frontend_attribute(inst, "inlineable") == "false"
        or any(target(op) in (SDY_GLOBAL_TO_LOCAL, SPMD_FULL_TO_SHARD) for op in inst.operands))


# --------------------------------------------------------------------------- preparation

def is_sharded(module: Module) -> bool:
    """A global program to partition: not yet partitioned (num_partitions <= 1) and carrying a
    Shardy mesh, a `sharding=` attribute or a shard_map boundary."""
    if module.config.num_partitions > 1 or module.entry is None:
        return False
    if module_meshes(module):
        return True
    return any(inst.sharding is not None or target(inst) in (SDY_GLOBAL_TO_LOCAL, SDY_LOCAL_TO_GLOBAL,
                                                              SPMD_FULL_TO_SHARD, SHARDING_TARGET)
               for inst in module.instructions())


def prepare(module: Module) -> None:
    """Inline ordinary calls and turn Shardy attributes into `sharding=` values."""
    names = NameUniquer.for_module(module)
    for comp in module.callees_first():
        for inst in list(comp.instructions):
            if inst.opcode == Op.CALL and inst.parent is comp and not is_manual_body_call(inst) \
                    and comp is module.entry:
                inline_call(inst, names)
    module.remove_unreachable_computations()
    meshes = module_meshes(module)
    for inst in module.instructions():
        t = target(inst)
        manual = manual_axes_of(frontend_attribute(inst, "xla.sdy.manual_axes"))
        if t == SDY_FUNC_RESULT and inst.sharding is None:
            text = frontend_attribute(inst, "xla.sdy.sharding")
            if text:
                S.write(inst, sdy_sharding(text, meshes))
        elif t == SDY_GLOBAL_TO_LOCAL and inst.sharding is None:
            text = frontend_attribute(inst, "xla.sdy.in_shardings")
            if text:
                S.write(inst, sdy_sharding(text, meshes))
        elif t == SDY_LOCAL_TO_GLOBAL and inst.sharding is None:
            text = frontend_attribute(inst, "xla.sdy.out_shardings")
            if text:
                S.write(inst, sdy_sharding(text, meshes))
        elif inst.sharding is None and inst.opcode == Op.PARAMETER:
            text = frontend_attribute(inst, "xla.sdy.sharding")
            if text:
                S.write(inst, sdy_sharding(text, meshes))
        del manual


# --------------------------------------------------------------------------- rules

def _rank(x) -> int:
    return 0 if x.shape.is_tuple else x.shape.rank


def _best(cands):
    best = None
    for c in cands:
        if c is not None and (best is None or S.tile_count(c) > S.tile_count(best)):
            best = c
    return best


@FORWARD.register(ops_in(Category.ELEMENTWISE))
def _fwd_elementwise(inst, ops):
    return _best([s for s, op in zip(ops, inst.operands) if _rank(op) == _rank(inst)])


@BACKWARD.register(ops_in(Category.ELEMENTWISE))
def _bwd_elementwise(inst, s, i):
    return s if _rank(inst.operands[i]) == _rank(inst) else None


@FORWARD.register(Op.REVERSE, Op.SLICE, Op.PAD,
                  Op.CONCATENATE, Op.DYNAMIC_SLICE, Op.DYNAMIC_UPDATE_SLICE, Op.REDUCE_WINDOW,
                  Op.SELECT_AND_SCATTER, Op.SORT, Op.MAP)
def _fwd_same(inst, ops):
    if inst.shape.is_tuple:
        return None
    return _best([s for s, op in zip(ops, inst.operands) if _rank(op) == _rank(inst)])


@BACKWARD.register(Op.REVERSE, Op.SLICE, Op.PAD,
                   Op.CONCATENATE, Op.DYNAMIC_SLICE, Op.DYNAMIC_UPDATE_SLICE, Op.REDUCE_WINDOW,
                   Op.SELECT_AND_SCATTER, Op.MAP)
def _bwd_same(inst, s, i):
    if inst.shape.is_tuple:
        return None
    return s if _rank(inst.operands[i]) == _rank(inst) else None


@FORWARD.register(Op.BITCAST)
def _fwd_bitcast(inst, ops):
    return S.reshape_map(inst.operands[0].shape.dims, inst.shape.dims, ops[0])


@BACKWARD.register(Op.BITCAST)
def _bwd_bitcast(inst, s, i):
    return S.reshape_map(inst.shape.dims, inst.operands[0].shape.dims, s)


@FORWARD.register(Op.RESHAPE)
def _fwd_reshape(inst, ops):
    return S.reshape_map(inst.operands[0].shape.dims, inst.shape.dims, ops[0])


@BACKWARD.register(Op.RESHAPE)
def _bwd_reshape(inst, s, i):
    return S.reshape_map(inst.shape.dims, inst.operands[0].shape.dims, s)


@FORWARD.register(Op.TRANSPOSE)
def _fwd_transpose(inst, ops):
    perm = inst.attrs["dimensions"]
    return S.map_dims(ops[0], len(perm), len(perm), {j: p for j, p in enumerate(perm)})


@BACKWARD.register(Op.TRANSPOSE)
def _bwd_transpose(inst, s, i):
    perm = inst.attrs["dimensions"]
    return S.map_dims(s, len(perm), len(perm), {p: j for j, p in enumerate(perm)})


@FORWARD.register(Op.BROADCAST)
def _fwd_broadcast(inst, ops):
    dims = inst.attrs.get("dimensions", ())
    return S.map_dims(ops[0], len(dims), inst.shape.rank, {d: i for i, d in enumerate(dims)})


@BACKWARD.register(Op.BROADCAST)
def _bwd_broadcast(inst, s, i):
    dims = inst.attrs.get("dimensions", ())
    return S.map_dims(s, inst.shape.rank, len(dims), {i: d for i, d in enumerate(dims)})


@FORWARD.register(Op.REDUCE)
def _fwd_reduce(inst, ops):
    n = len(inst.operands) // 2
    src = _best(ops[:n])
    rank = inst.operands[0].shape.rank
    dims = inst.attrs["dimensions"]
    kept = [d for d in range(rank) if d not in dims]
    out = S.map_dims(src, rank, len(kept), {j: d for j, d in enumerate(kept)})
    if inst.shape.is_tuple and out is not None:
        return HloSharding.tuple_of([out] * n)
    return out


@BACKWARD.register(Op.REDUCE)
def _bwd_reduce(inst, s, i):
    n = len(inst.operands) // 2
    if i >= n:
        return None
    if inst.shape.is_tuple:
        s = S.element(s, inst.shape, 0)
    rank = inst.operands[0].shape.rank
    dims = inst.attrs["dimensions"]
    kept = [d for d in range(rank) if d not in dims]
    return S.map_dims(s, len(kept), rank, {d: j for j, d in enumerate(kept)})


def dot_dims(inst):
    a = inst.attrs
    lb, lc = tuple(a.get("lhs_batch_dims", ())), tuple(a.get("lhs_contracting_dims", ()))
    rb, rc = tuple(a.get("rhs_batch_dims", ())), tuple(a.get("rhs_contracting_dims", ()))
    lr, rr = inst.operands[0].shape.rank, inst.operands[1].shape.rank
    lf = [d for d in range(lr) if d not in lb and d not in lc]
    rf = [d for d in range(rr) if d not in rb and d not in rc]
    return lb, lc, lf, rb, rc, rf


def _dot_maps(inst):
    """(output dim -> lhs dim, output dim -> rhs dim)."""
    lb, lc, lf, rb, rc, rf = dot_dims(inst)
    nb = len(lb)
    lmap = {j: d for j, d in enumerate(lb)}
    lmap.update({nb + j: d for j, d in enumerate(lf)})
    rmap = {j: d for j, d in enumerate(rb)}
    rmap.update({nb + len(lf) + j: d for j, d in enumerate(rf)})
    return lmap, rmap


@FORWARD.register(Op.DOT)
def _fwd_dot(inst, ops):
    lmap, rmap = _dot_maps(inst)
    out_rank = inst.shape.rank
    from_l = S.map_dims(ops[0], inst.operands[0].shape.rank, out_rank, lmap)
    from_r = S.map_dims(ops[1], inst.operands[1].shape.rank, out_rank, rmap)
    if S.is_informative(from_l):
        return from_l
    if S.is_informative(from_r):
        return from_r
    return from_l or from_r


@BACKWARD.register(Op.DOT)
def _bwd_dot(inst, s, i):
    lmap, rmap = _dot_maps(inst)
    m = lmap if i == 0 else rmap
    return S.map_dims(s, inst.shape.rank, inst.operands[i].shape.rank, {d: j for j, d in m.items()})


def _conv_maps(inst):
    cd = inst.attrs["dim_labels"]
    lmap = {cd.output_batch: cd.input_batch}
    lmap.update({o: i for o, i in zip(cd.output_spatial, cd.input_spatial)})
    rmap = {cd.output_feature: cd.kernel_output_feature}
    return lmap, rmap


@FORWARD.register(Op.CONVOLUTION)
def _fwd_conv(inst, ops):
    if inst.attrs.get("feature_group_count", 1) != 1 or inst.attrs.get("batch_group_count", 1) != 1:
        return None
    lmap, rmap = _conv_maps(inst)
    r = inst.shape.rank
    from_l = S.map_dims(ops[0], r, r, lmap)
    from_r = S.map_dims(ops[1], r, r, rmap)
    if S.is_informative(from_l):
        return from_l
    if S.is_informative(from_r):
        return from_r
    return from_l or from_r


@BACKWARD.register(Op.CONVOLUTION)
def _bwd_conv(inst, s, i):
    if inst.attrs.get("feature_group_count", 1) != 1 or inst.attrs.get("batch_group_count", 1) != 1:
        return None
    lmap, rmap = _conv_maps(inst)
    m = lmap if i == 0 else rmap
    r = inst.shape.rank
    return S.map_dims(s, r, r, {d: j for j, d in m.items()})


@FORWARD.register(Op.TUPLE)
def _fwd_tuple(inst, ops):
    if all(s is None for s in ops):
        return None
    return HloSharding.tuple_of([s if s is not None else HloSharding.replicated() for s in ops])


@BACKWARD.register(Op.TUPLE)
def _bwd_tuple(inst, s, i):
    return S.element(s, inst.shape, i)


@FORWARD.register(Op.GET_TUPLE_ELEMENT)
def _fwd_gte(inst, ops):
    return S.element(ops[0], inst.operands[0].shape, inst.attrs["index"])


@FORWARD.register(Op.GATHER)
def _fwd_gather(inst, ops):
    """Indices split along batch dimensions: the result's batch dimensions follow them."""
    a = inst.attrs
    if ops[1] is None or not S.is_informative(ops[1]):
        return None
    idx_rank = inst.operands[1].shape.rank
    batch_in = [d for d in range(idx_rank) if d != a["index_vector_dim"]]
    batch_out = [d for d in range(inst.shape.rank) if d not in a["offset_dims"]]
    return S.map_dims(ops[1], idx_rank, inst.shape.rank, dict(zip(batch_out, batch_in)))


@FORWARD.register(Op.SCATTER)
def _fwd_scatter(inst, ops):
    return ops[0] if not inst.shape.is_tuple else None


@BACKWARD.register(Op.SCATTER)
def _bwd_scatter(inst, s, i):
    return s if i == 0 and not inst.shape.is_tuple else None


@FORWARD.register(Op.WHILE)
def _fwd_while(inst, ops):
    return ops[0]


@BACKWARD.register(Op.WHILE)
def _bwd_while(inst, s, i):
    return s


@FORWARD.register(Op.CONDITIONAL)
def _fwd_conditional(inst, ops):
    """The result follows the branches' roots when every branch agrees (they are propagated first)."""
    roots = [S.read(c.root) for c in inst.attrs.get("branch_computations", ())]
    if roots and all(r is not None and r == roots[0] for r in roots):
        return roots[0]
    return None


@FORWARD.register(Op.CUSTOM_CALL)
def _fwd_custom_call(inst, ops):
    if is_annotation(inst) and ops:
        return ops[0]
    return None


@BACKWARD.register(Op.CUSTOM_CALL)
def _bwd_custom_call(inst, s, i):
    t = target(inst)
    if is_annotation(inst) or t == SDY_GLOBAL_TO_LOCAL:
        return s
    return None


# --------------------------------------------------------------------------- driver

def _seed(inst) -> Optional[HloSharding]:
    return S.read(inst)


def _is_fixed(inst) -> bool:
    return inst.sharding is not None


def propagate_computation(comp: Computation, seeds: dict[int, HloSharding]) -> dict[int, HloSharding]:
    """Shardings (by id(instruction)) for every instruction of `comp`."""
    cur: dict[int, HloSharding] = dict(seeds)
    for inst in comp.instructions:
        if _is_fixed(inst):
            cur[id(inst)] = _seed(inst)
    fixed = set(cur)
    order = comp.post_order()

    def offer(inst, s, strong) -> bool:
        if s is None or id(inst) in cur:
            return False
        if not strong and not S.is_informative(s) and not (s.is_tuple and any(map(S.is_informative, s.elements))):
            return False
        if not inst.shape.is_tuple and s.is_tuple:
            return False
        if not inst.shape.is_tuple and not S.rank_ok(s, inst.shape.rank):
            return False
        cur[id(inst)] = s
        return True

    for strong in (False, True):
        for _ in range(12):
            changed = False
            for inst in order:
                if id(inst) in cur or id(inst) in fixed:
                    continue
                rule = FORWARD.get(inst.opcode)
                if rule is None:
                    continue
                ops = [cur.get(id(op)) for op in inst.operands]
                if all(o is None for o in ops) and inst.operands:
                    continue
                changed |= offer(inst, _try(rule, inst, ops), strong)
            for inst in reversed(order):
                s = cur.get(id(inst))
                if s is None:
                    continue
                rule = BACKWARD.get(inst.opcode)
                if rule is None:
                    continue
                annot = is_annotation(inst) or target(inst) == SDY_GLOBAL_TO_LOCAL
                for i, op in enumerate(inst.operands):
                    if id(op) in cur:
                        continue
                    changed |= offer(op, _try(rule, inst, s, i), strong or annot)
            if not changed:
                break
    for inst in comp.instructions:
        if id(inst) not in cur:
            cur[id(inst)] = HloSharding.replicated()
    return cur


def _try(rule, *args):
    try:
        return rule(*args)
    except (ValueError, KeyError, IndexError):
        return None


def _callee_seeds(inst, result) -> list[tuple[Computation, dict[int, HloSharding]]]:
    """(computation, parameter shardings) for the computations a while, conditional or call runs."""
    out = []
    if inst.opcode == Op.WHILE:
        s = result.get(id(inst.operands[0]))
        for comp in (inst.attrs["body"], inst.attrs["condition"]):
            out.append((comp, {id(comp.parameters[0]): s}))
    elif inst.opcode == Op.CONDITIONAL:
        for i, comp in enumerate(inst.attrs.get("branch_computations", ())):
            out.append((comp, {id(comp.parameters[0]): result.get(id(inst.operands[i + 1]))}))
    elif inst.opcode == Op.CALL and not is_manual_body_call(inst):
        comp = inst.attrs["to_apply"]
        out.append((comp, {id(p): result.get(id(inst.operands[p.parameter_number])) for p in comp.parameters}))
    return out


def propagate(module: Module) -> dict[int, HloSharding]:
    """Propagate over the entry computation, then into the computations its while, conditional
    and call instructions run (their parameters seeded with the operands' shardings, annotations
    only: the partitioner runs such loops whole); write the results as `sharding=`."""
    prepare(module)
    result = propagate_computation(module.entry, {})
    for inst in module.entry.instructions:
        S.write(inst, result[id(inst)])
    for inst in list(module.entry.instructions):
        for comp, seeds in _callee_seeds(inst, result):
            seeds = {k: v for k, v in seeds.items() if v is not None}
            inner = propagate_computation(comp, seeds)
            for x in comp.instructions:
                if x.sharding is None:
                    S.write(x, inner[id(x)])
    return result


@register
class ShardingPropagation(Pass):
    name = "sharding-propagation"
    description = ("Give every instruction of the entry computation a sharding, forward and backward "
                   "from the annotated ones (docs/SPMD.md)")

    def run(self, module: Module) -> bool:
        if not is_sharded(module):
            return False
        before = [inst.sharding for inst in module.entry.instructions]
        propagate(module)
        return before != [inst.sharding for inst in module.entry.instructions]
