"""ragged-dot and scaled-dot, computed element by element like dot (ELEMENT_GENERATORS).

ragged-dot (as the interpreter, hlo/interpreter/linear.py): the lhs ragged dimension is
cut into consecutive groups of `group_sizes` rows (run-time prefix sums); entries past
the last group are zero.
* ragged contracting dimension: one output slice per group (leading dimension), each
  contracting only its group's range;
* ragged batch dimension: an ordinary dot whose batch entries past the groups are zero;
* ragged free dimension: the rhs has a group dimension; the output row takes the rhs of
  its row's group.

scaled-dot dequantises each operand by its block scales (both converted to f32, a scale
entry covering a block of n / s consecutive positions per dimension), rounds that to the
result type, then computes the dot.
"""
from __future__ import annotations

from ..attributes import DotDims
from ..diagnostics import error
from ..opcodes import Op
from ..shapes import primitive_type
from . import scalar_ops
from .elemental import ELEMENT_GENERATORS, dot_operand_indices
from .function_context import const64
from .types import I64, compute_type, constant_of, round_to

F32_TYPE = primitive_type("f32")


def _accumulate(elem, inst, sizes, term):
    """sum over the contracting positions c (loop nest of `sizes`) of term(c), which gives
    (x, y) in the result's compute type, or None to skip c; rounded to the result type."""
    ctx, b = elem.ctx, elem.b
    t = inst.shape.element_type
    slot = ctx.alloca(compute_type(t), "acc")
    b.store(constant_of(t, 0), slot)
    with ctx.loop_nest(sizes) as c:
        guard, operands = term(c)
        ctx.reassociate += 1
        try:
            if guard is None:
                b.store(elem.multiply_add(b.load(slot), *operands(), t), slot)
            else:
                with ctx.if_then(guard, "ragged"):
                    b.store(elem.multiply_add(b.load(slot), *operands(), t), slot)
        finally:
            ctx.reassociate -= 1
    return round_to(b, b.load(slot), t)


def _as_result(elem, inst, operand, index):
    t = inst.shape.element_type
    return elem.convert_to(elem.value(operand, tuple(index)), operand.shape.element_type, t)


# --------------------------------------------------------------------------- ragged-dot

def _group_bound(elem, sizes_op, group):
    """Sum of group_sizes[0..group-1] (group: i64), computed at run time."""
    ctx, b = elem.ctx, elem.b
    slot = ctx.alloca(I64, "bound")
    b.store(const64(0), slot)
    with ctx.loop(group, "groups") as j:
        size = scalar_ops.to_i64(b, elem.value(sizes_op, (j,)), sizes_op.shape.element_type)
        b.store(b.add(b.load(slot), size), slot)
    return b.load(slot)


def _group_of(elem, sizes_op, row):
    """(the group whose rows include `row`, whether there is one) for a ragged free dim."""
    ctx, b = elem.ctx, elem.b
    count = sizes_op.shape.dims[0]
    end, group = ctx.alloca(I64, "end"), ctx.alloca(I64, "group")
    b.store(const64(0), end)
    b.store(const64(count), group)
    with ctx.loop(count, "find") as j:
        start = b.load(end)
        stop = b.add(start, scalar_ops.to_i64(b, elem.value(sizes_op, (j,)), sizes_op.shape.element_type))
        b.store(stop, end)
        inside = b.and_(b.icmp_signed(">=", row, start), b.icmp_signed("<", row, stop))
        first = b.and_(inside, b.icmp_signed("==", b.load(group), const64(count)))
        b.store(b.select(first, j, b.load(group)), group)
    found = b.load(group)
    return found, b.icmp_signed("<", found, const64(count))


@ELEMENT_GENERATORS.register(Op.RAGGED_DOT)
def ragged_dot(elem, inst, index):
    b = elem.b
    lhs, rhs, sizes_op = inst.operands
    dd = DotDims.of(inst)
    ragged_dims = list(inst.attrs["lhs_ragged_dims"])
    if len(ragged_dims) != 1 or sizes_op.shape.rank != 1:
        raise error(f"the cpu backend compiles ragged-dot with one ragged dimension and rank-1 group_sizes "
                    f"(%{inst.name})", inst.loc)
    ragged = ragged_dims[0]
    t = inst.shape.element_type
    contracting = [lhs.shape.dims[d] for d in dd.lhs_contracting]
    if ragged in dd.lhs_contracting:
        group, out = index[0], index[1:]
        start, stop = _group_bound(elem, sizes_op, group), _group_bound(elem, sizes_op, b.add(group, const64(1)))
        k = dd.lhs_contracting.index(ragged)

        def term(c):
            li, ri = dot_operand_indices(dd, lhs.shape.rank, rhs.shape.rank, out, c)
            inside = b.and_(b.icmp_signed(">=", c[k], start), b.icmp_signed("<", c[k], stop))
            return inside, lambda: (_as_result(elem, inst, lhs, li), _as_result(elem, inst, rhs, ri))
        return _accumulate(elem, inst, contracting, term)
    if ragged in dd.lhs_batch:
        total = _group_bound(elem, sizes_op, const64(sizes_op.shape.dims[0]))
        covered = b.icmp_signed("<", index[list(dd.lhs_batch).index(ragged)], total)

        def plain():
            return _accumulate(elem, inst, contracting, lambda c: (None, _pair(elem, inst, dd, index, c)))
        return elem.guarded(covered, plain, constant_of(t, 0), t)
    return _ragged_free(elem, inst, dd, ragged, index)


def _pair(elem, inst, dd, index, c, rhs_group=None):
    lhs, rhs = inst.operands[:2]

    def operands():
        if rhs_group is None:
            li, ri = dot_operand_indices(dd, lhs.shape.rank, rhs.shape.rank, index, c)
        else:
            g, group, inner = rhs_group
            li, ri = dot_operand_indices(inner, lhs.shape.rank, rhs.shape.rank - 1, index, c)
            ri.insert(g, group)
        return _as_result(elem, inst, lhs, li), _as_result(elem, inst, rhs, ri)
    return operands


def _ragged_free(elem, inst, dd: DotDims, ragged: int, index):
    lhs, _rhs, sizes_op = inst.operands
    group_dims = list(inst.attrs.get("rhs_group_dims", ()))
    if len(group_dims) != 1:
        raise error(f"ragged-dot with a ragged free dimension needs one rhs_group_dims entry (%{inst.name})",
                    inst.loc)
    g = group_dims[0]

    def without_g(ds):
        return tuple(d - (d > g) for d in ds)

    inner = DotDims(dd.lhs_batch, dd.lhs_contracting, without_g(dd.rhs_batch), without_g(dd.rhs_contracting))
    free = [d for d in range(lhs.shape.rank) if d not in dd.lhs_batch and d not in dd.lhs_contracting]
    row = index[len(dd.lhs_batch) + free.index(ragged)]
    group, found = _group_of(elem, sizes_op, row)
    t = inst.shape.element_type
    contracting = [lhs.shape.dims[d] for d in dd.lhs_contracting]

    def product():
        return _accumulate(elem, inst, contracting, lambda c: (None, _pair(elem, inst, inner, index, c,
                                                                            (g, group, inner))))
    return elem.guarded(found, product, constant_of(t, 0), t)


# --------------------------------------------------------------------------- scaled-dot

def _dequantised(elem, inst, data, scale, index):
    """data[index] * scale[block of index] in f32, rounded to the result type."""
    b = elem.b
    if scale.shape.rank != data.shape.rank:
        raise error(f"scaled-dot: the scale of %{data.name} must have its rank (%{inst.name})", inst.loc)
    at = []
    for i, n, s in zip(index, data.shape.dims, scale.shape.dims):
        if s == 0 or n % s:
            raise error(f"scaled-dot: scale dimension of size {s} does not divide {n} (%{inst.name})", inst.loc)
        at.append(i if s == n else b.udiv(i, const64(n // s)))
    value = elem.convert_to(elem.value(data, tuple(index)), data.shape.element_type, F32_TYPE)
    factor = elem.convert_to(elem.value(scale, tuple(at)), scale.shape.element_type, F32_TYPE)
    return elem.convert_to(b.fmul(value, factor), F32_TYPE, inst.shape.element_type)


@ELEMENT_GENERATORS.register(Op.SCALED_DOT)
def scaled_dot(elem, inst, index):
    lhs, rhs, lhs_scale, rhs_scale = inst.operands
    dd = DotDims.of(inst)
    contracting = [lhs.shape.dims[d] for d in dd.lhs_contracting]

    def term(c):
        li, ri = dot_operand_indices(dd, lhs.shape.rank, rhs.shape.rank, index, c)
        return None, lambda: (_dequantised(elem, inst, lhs, lhs_scale, li),
                              _dequantised(elem, inst, rhs, rhs_scale, ri))
    return _accumulate(elem, inst, contracting, term)

