"""Shape rules of the contractions: dot, scaled-dot, ragged-dot and convolution."""
from __future__ import annotations

from ..attributes import format_int_list
from ..opcodes import Op, TypeClass
from ..shapes import PrimitiveType, Shape
from .core import SHAPE_RULES, OpView, array_shape, counted, dims_in_range, fmt
from .element_types import higher_precision_type
from .windows import window_attr, window_dims


def _product_type(op: OpView, lhs: Shape, rhs: Shape) -> PrimitiveType:
    """Result element type of dot/convolution: the written (preferred) type, which may be any
    array type, else the more precise of the operands' types (element_types.py)."""
    preferred = op.written_type()
    if preferred is None:
        return higher_precision_type(lhs.element_type, rhs.element_type)
    if not preferred.is_array_type:
        raise op.fail(f"the result of '{op.opcode}' must be an array, but it is written as {fmt(op.written)}")
    return preferred


def _dot_numbers(op: OpView) -> tuple[tuple[int, ...], ...]:
    return (op.int_list("lhs_batch_dims"), op.int_list("lhs_contracting_dims"),
            op.int_list("rhs_batch_dims"), op.int_list("rhs_contracting_dims"))


def _check_dot_numbers(op: OpView, lhs: Shape, rhs: Shape, lb, lc, rb, rc) -> None:
    """XLA ValidateDotDimensionNumbers plus the size checks of InferDotOpShape."""
    for name, dims, shape in (("lhs_batch_dims", lb, lhs), ("lhs_contracting_dims", lc, lhs),
                              ("rhs_batch_dims", rb, rhs), ("rhs_contracting_dims", rc, rhs)):
        dims_in_range(op, dims, shape.rank, name, f"{name[:3]} {fmt(shape)}")
    for side, batch, contracting in (("lhs", lb, lc), ("rhs", rb, rc)):
        both = list(batch) + list(contracting)
        for d in both:
            if both.count(d) > 1:
                raise op.fail(f"{side} dimension {d} is listed more than once in {side}_batch_dims="
                              f"{format_int_list(batch)} and {side}_contracting_dims={format_int_list(contracting)}",
                              attribute=f"{side}_contracting_dims" if d in contracting else f"{side}_batch_dims")
    for kind, ldims, rdims in (("contracting", lc, rc), ("batch", lb, rb)):
        if len(ldims) != len(rdims):
            written = f"rhs_{kind}_dims" if op.has(f"rhs_{kind}_dims") else f"lhs_{kind}_dims"
            raise op.fail(f"lhs_{kind}_dims={format_int_list(ldims)} and rhs_{kind}_dims={format_int_list(rdims)} must "
                          f"have the same number of entries", attribute=written)
        for l, r in zip(ldims, rdims):
            if lhs.dims[l] != rhs.dims[r]:
                raise op.fail(f"{kind} dimensions must have equal sizes: lhs dimension {l} of {fmt(lhs)} has size "
                              f"{lhs.dims[l]} but rhs dimension {r} of {fmt(rhs)} has size {rhs.dims[r]}",
                              attribute=f"rhs_{kind}_dims")


def _dot_result_dims(lhs: Shape, rhs: Shape, lb, lc, rb, rc) -> tuple[list[int], list[bool]]:
    """Batch dims (lhs order), then lhs free dims, then rhs free dims."""
    dims = [lhs.dims[d] for d in lb]
    dynamic = [lhs.dynamic[d] for d in lb]
    for shape, skip in ((lhs, set(lb) | set(lc)), (rhs, set(rb) | set(rc))):
        for d in range(shape.rank):
            if d not in skip:
                dims.append(shape.dims[d])
                dynamic.append(shape.dynamic[d])
    return dims, dynamic


def _dot_dims(op: OpView, lhs: Shape, rhs: Shape) -> tuple[list[int], list[bool]]:
    """The checked dimension numbers of a dot, applied: the result's dims and dynamic flags."""
    numbers = _dot_numbers(op)
    _check_dot_numbers(op, lhs, rhs, *numbers)
    return _dot_result_dims(lhs, rhs, *numbers)


@SHAPE_RULES.register(Op.DOT)
def _dot(op: OpView) -> Shape:
    lhs, rhs = op.array(0, "lhs"), op.array(1, "rhs")
    dims, dynamic = _dot_dims(op, lhs, rhs)
    return array_shape(_product_type(op, lhs, rhs), dims, dynamic)


@SHAPE_RULES.register(Op.SCALED_DOT)
def _scaled_dot(op: OpView) -> Shape:
    lhs, rhs = op.array(0, "lhs"), op.array(1, "rhs")
    for i, data in ((2, lhs), (3, rhs)):
        scale = op.array(i, "scale")
        if scale.rank != data.rank or any(s == 0 or d % s for s, d in zip(scale.dims, data.dims)):
            raise op.fail(f"scale operand {i} {fmt(scale)} must have the rank of its data operand {fmt(data)} and "
                          f"dimensions that divide the data's", operand=i)
    dims, dynamic = _dot_dims(op, lhs, rhs)
    return array_shape(op.written_type() or higher_precision_type(lhs.element_type, rhs.element_type), dims,
                       dynamic)


@SHAPE_RULES.register(Op.RAGGED_DOT)
def _ragged_dot(op: OpView) -> Shape:
    lhs, rhs = op.array(0, "lhs"), op.array(1, "rhs")
    groups = op.types(2, TypeClass.INT, "group sizes")
    ragged = op.int_list("lhs_ragged_dims")
    group_dims = op.int_list("rhs_group_dims")
    if len(ragged) != 1:
        raise op.fail(f"'ragged-dot' needs exactly one lhs_ragged_dims entry, got {format_int_list(ragged)}",
                      attribute="lhs_ragged_dims")
    if len(group_dims) > 1:
        raise op.fail(f"'ragged-dot' takes at most one rhs_group_dims entry, got {format_int_list(group_dims)}",
                      attribute="rhs_group_dims")
    dims_in_range(op, ragged, lhs.rank, "lhs_ragged_dims", f"lhs {fmt(lhs)}")
    dims_in_range(op, group_dims, rhs.rank, "rhs_group_dims", f"rhs {fmt(rhs)}")
    if groups.rank < 1:
        raise op.fail(f"the group sizes of 'ragged-dot' must have at least one dimension, got {fmt(groups)}",
                      operand=2)
    count = groups.dims[-1]
    lb, lc, rb, rc = _dot_numbers(op)
    rhs_dims = rhs
    if group_dims:
        rhs_dims, rb, rc = _without_group_dim(op, rhs, groups, group_dims[0], ragged[0] in lc, rb, rc)
    _check_dot_numbers(op, lhs, rhs_dims, lb, lc, rb, rc)
    dims, dynamic = _dot_result_dims(lhs, rhs_dims, lb, lc, rb, rc)
    if ragged[0] in lc:
        dims, dynamic = [count] + dims, [False] + dynamic
    return array_shape(_product_type(op, lhs, rhs), dims, dynamic)


def _without_group_dim(op: OpView, rhs: Shape, groups: Shape, g: int, ragged_contracting: bool, rb, rc):
    """(rhs, rhs_batch_dims, rhs_contracting_dims) without the group dimension g, which is not part
    of the dot, after checking it."""
    count = groups.dims[-1]
    if g in rb or g in rc:
        raise op.fail(f"rhs_group_dims={format_int_list((g,))} must be neither a batch nor a contracting "
                      f"dimension", attribute="rhs_group_dims")
    if ragged_contracting:
        raise op.fail("'ragged-dot' with a ragged contracting dimension takes no rhs_group_dims",
                      attribute="rhs_group_dims")
    if rhs.dims[g] != count:
        raise op.fail(f"rhs group dimension {g} of {fmt(rhs)} has size {rhs.dims[g]} but the group sizes "
                      f"{fmt(groups)} describe {count} groups", operand=2)
    rhs_without = array_shape(rhs.element_type, rhs.dims[:g] + rhs.dims[g + 1:])
    return rhs_without, tuple(d - (d > g) for d in rb), tuple(d - (d > g) for d in rc)


# --------------------------------------------------------------------------- convolution


@SHAPE_RULES.register(Op.CONVOLUTION)
def _convolution(op: OpView) -> Shape:
    lhs, rhs = op.array(0, "input"), op.array(1, "kernel")
    labels = op.attr("dim_labels")
    window = window_attr(op)
    groups, batch_groups = _group_counts(op)
    rank = labels.num_spatial + 2
    for i, shape, role in ((0, lhs, "input"), (1, rhs, "kernel")):
        if shape.rank != rank:
            raise op.fail(f"dim_labels {labels.to_text()} describe rank-{rank} operands, but operand {i} ({role}) "
                          f"is {fmt(shape)}", operand=i, attribute="dim_labels")
    if len(window.dims) != labels.num_spatial:
        raise op.fail(f"window has {counted(len(window.dims), 'dimension')} but dim_labels {labels.to_text()} have "
                      f"{counted(labels.num_spatial, 'spatial dimension')}", attribute="window")
    features, batch = lhs.dims[labels.input_feature], lhs.dims[labels.input_batch]
    kernel_out = rhs.dims[labels.kernel_output_feature]
    _check_groups_divide(op, rhs, features, batch, rhs.dims[labels.kernel_input_feature], kernel_out, groups,
                         batch_groups)
    for k, (kd, wd) in enumerate(zip(labels.kernel_spatial, window.dims)):
        if rhs.dims[kd] != wd.size:
            raise op.fail(f"window size of spatial dimension {k} is {wd.size} but the kernel {fmt(rhs)} has size "
                          f"{rhs.dims[kd]} there", attribute="window")
    spatial = window_dims(op, [lhs.dims[d] for d in labels.input_spatial], window, "the input's spatial dims")
    dims = [0] * rank
    dims[labels.output_batch] = batch // batch_groups
    dims[labels.output_feature] = kernel_out
    for k, d in enumerate(labels.output_spatial):
        dims[d] = spatial[k]
    return array_shape(_product_type(op, lhs, rhs), dims)


def _group_counts(op: OpView) -> tuple[int, int]:
    """feature_group_count and batch_group_count: positive, not both above 1."""
    groups = op.int_attr("feature_group_count")
    batch_groups = op.int_attr("batch_group_count")
    if groups < 1 or batch_groups < 1:
        bad = "feature_group_count" if groups < 1 else "batch_group_count"
        raise op.fail(f"{bad} must be positive, got {groups if groups < 1 else batch_groups}", attribute=bad)
    if groups > 1 and batch_groups > 1:
        raise op.fail(f"feature_group_count={groups} and batch_group_count={batch_groups} cannot both be greater "
                      f"than 1", attribute="batch_group_count")
    return groups, batch_groups


def _check_groups_divide(op: OpView, rhs: Shape, features: int, batch: int, kernel_in: int, kernel_out: int,
                         groups: int, batch_groups: int) -> None:
    """The feature and batch groups split the input and the kernel evenly (XLA's InferConvolveShape)."""
    if features % groups or features // groups != kernel_in:
        raise op.fail(f"the input has {features} features and feature_group_count={groups}, so the kernel needs "
                      f"{features // groups if features % groups == 0 else 'a whole number of'} input features, "
                      f"but the kernel {fmt(rhs)} has {kernel_in}", operand=1)
    if kernel_out % groups:
        raise op.fail(f"the kernel's {kernel_out} output features must be divisible by feature_group_count="
                      f"{groups}", operand=1)
    if kernel_out % batch_groups:
        raise op.fail(f"the kernel's {kernel_out} output features must be divisible by batch_group_count="
                      f"{batch_groups}", operand=1)
    if batch % batch_groups:
        raise op.fail(f"the input batch size {batch} must be divisible by batch_group_count={batch_groups}",
                      operand=0)
