"""Shape rules of reductions: reduce, reduce-window and select-and-scatter, and the window
geometry they share with convolution (and the interpreter)."""
from __future__ import annotations

from typing import Sequence

from ..attributes import Window
from ..opcodes import Op
from ..shapes import Shape
from .computations import callee, check_parameters, check_reducer, check_returns_pred, need_params
from .core import SHAPE_RULES, OpView, array_shape, counted, dims_in_range, dims_unique, fmt, scalar_shape


# --------------------------------------------------------------------------- window geometry


def window_attr(op: OpView) -> Window:
    """The window= attribute (no window: the empty one)."""
    window = op.inst.attrs.get("window")
    return window if window is not None else Window(())


def dilated_size(n: int, dilation: int) -> int:
    """Length of `n` elements spread `dilation` apart (0 stays 0)."""
    return 0 if n == 0 else (n - 1) * dilation + 1


def window_output_dims(input_dims: Sequence[int], window) -> tuple[int, ...]:
    """Output dims of sliding `window` over an input of `input_dims` (XLA's
    InferWindowOutputShape); ValueError for an invalid window. Shared with the interpreter."""
    if len(window.dims) != len(input_dims):
        raise ValueError(f"window has {counted(len(window.dims), 'dimension')} but the operand has "
                         f"{len(input_dims)}")
    out = []
    for k, (n, wd) in enumerate(zip(input_dims, window.dims)):
        if wd.size <= 0:
            raise ValueError(f"window size of dimension {k} must be positive, got {wd.size}")
        if wd.stride <= 0:
            raise ValueError(f"window stride of dimension {k} must be positive, got {wd.stride}")
        if wd.base_dilation < 1 or wd.window_dilation < 1:
            raise ValueError(f"window dilations of dimension {k} must be >= 1, got lhs_dilate={wd.base_dilation} "
                             f"rhs_dilate={wd.window_dilation}")
        base = wd.padding_low + dilated_size(n, wd.base_dilation) + wd.padding_high
        if base < 0:
            raise ValueError(f"window padding {wd.padding_low}_{wd.padding_high} of dimension {k} removes more "
                             f"than the {n} (dilated) input elements")
        span = dilated_size(wd.size, wd.window_dilation)
        out.append(0 if span > base else (base - span) // wd.stride + 1)
    return tuple(out)


def window_dims(op: OpView, input_dims: Sequence[int], window, what: str) -> tuple[int, ...]:
    """`window_output_dims` for a rule: a bad window is a ShapeError at the window= attribute."""
    if len(window.dims) != len(input_dims):
        raise op.fail(f"window has {counted(len(window.dims), 'dimension')} but {what} has {len(input_dims)}",
                      attribute="window")
    try:
        return window_output_dims(input_dims, window)
    except ValueError as exc:
        raise op.fail(str(exc), attribute="window") from None


# --------------------------------------------------------------------------- reductions over windows and dimensions


def _split_inputs(op: OpView) -> tuple[list[Shape], list[Shape]]:
    if op.n % 2:
        raise op.fail(f"'{op.opcode}' takes N inputs followed by N init values (an even count), got {op.n} "
                      f"operands")
    count = op.n // 2
    inputs = [op.array(i, "input") for i in range(count)]
    inits = [op.shapes[count + i] for i in range(count)]
    op.equal_dims(inputs, "inputs")
    for i, init in enumerate(inits):
        if not (init.is_array and init.rank == 0):
            raise op.fail(f"operand {count + i} (init value) of '{op.opcode}' must be a scalar, but it is "
                          f"{fmt(init)}", operand=count + i)
    return inputs, inits


def _per_result(op: OpView, shapes: list[Shape]) -> Shape:
    """An array, or a tuple when the reducer returns a tuple (even a 1-tuple, as in XLA)."""
    comp = op.computation("to_apply")
    return Shape.tuple_of(shapes) if comp.root.shape.is_tuple else shapes[0]


@SHAPE_RULES.register(Op.REDUCE)
def _reduce(op: OpView) -> Shape:
    inputs, inits = _split_inputs(op)
    dims = op.int_list("dimensions")
    dims_in_range(op, dims, inputs[0].rank, "dimensions", f"the input {fmt(inputs[0])}")
    dims_unique(op, dims, "dimensions")
    results = check_reducer(op, "to_apply", inits, [s.element_type for s in inputs],
                            init_operands=range(len(inputs), op.n))
    kept = [d for d in range(inputs[0].rank) if d not in dims]
    out_dims = [inputs[0].dims[d] for d in kept]
    dynamic = [inputs[0].dynamic[d] for d in kept]
    return _per_result(op, [array_shape(r.element_type, out_dims, dynamic) for r in results])


@SHAPE_RULES.register(Op.REDUCE_WINDOW)
def _reduce_window(op: OpView) -> Shape:
    inputs, inits = _split_inputs(op)
    results = check_reducer(op, "to_apply", inits, [s.element_type for s in inputs],
                            init_operands=range(len(inputs), op.n))
    out_dims = window_dims(op, inputs[0].dims, window_attr(op), f"the input {fmt(inputs[0])}")
    return _per_result(op, [array_shape(r.element_type, out_dims) for r in results])


@SHAPE_RULES.register(Op.SELECT_AND_SCATTER)
def _select_and_scatter(op: OpView) -> Shape:
    operand = op.array(0)
    source = op.array(1, "source")
    op.scalar(2, "init value")
    comp, params, result = callee(op, "select")
    need_params(op, comp, params, 2, "select")
    what = f"select computation %{comp.name}"
    check_parameters(op, comp, params, [scalar_shape(operand.element_type)] * 2, "select", what,
                     ["the operand's element type"] * 2)
    check_returns_pred(op, comp, result, "select", what)
    check_reducer(op, "scatter", [op.shapes[2]], [source.element_type], ("init value", "source"), [2])
    expected = window_dims(op, operand.dims, window_attr(op), f"the operand {fmt(operand)}")
    if source.dims != expected:
        raise op.fail(f"the source of 'select-and-scatter' must have the shape of the windowed operand, "
                      f"{fmt(array_shape(source.element_type, expected))}, but it is {fmt(source)}", operand=1)
    return operand
