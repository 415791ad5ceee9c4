"""Interpreter values: numpy arrays, tuples of values and the token, and checks against shapes.

Arrays have the storage dtype of their element type (logical, row-major order whatever
the layout), tuple shapes are Python tuples and tokens the `TOKEN` object. Values are
never modified in place, so ops that do not change data may return their operand.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..diagnostics import error
from ..ir import Computation
from ..runtime.values_io import TOKEN, Token
from ..shapes import Shape, type_of_dtype

Value = Any  # np.ndarray | tuple[Value, ...] | Token


def leaves(value: Value) -> list:
    """Array (and token) leaves of a value, depth-first."""
    if isinstance(value, tuple):
        return [leaf for v in value for leaf in leaves(v)]
    return [value]


def zeros_of(shape: Shape) -> Value:
    """A zero value of `shape` (used for context elements of async tuples)."""
    if shape.is_tuple:
        return tuple(zeros_of(s) for s in shape.tuple_shapes)
    if shape.is_token or not shape.element_type.is_array_type:
        return TOKEN
    return np.zeros(shape.dims, dtype=shape.element_type.dtype)


def describe_value(value: Value) -> str:
    """HLO-like spelling of a value's type, for messages: f32[2,3], (s32[], pred[4])."""
    if isinstance(value, tuple):
        return "(" + ", ".join(describe_value(v) for v in value) + ")"
    if isinstance(value, Token):
        return "token[]"
    arr = np.asarray(value)
    try:
        name = type_of_dtype(arr.dtype).name
    except KeyError:
        name = str(arr.dtype)
    return f"{name}[{','.join(map(str, arr.shape))}]"


def value_matches(value: Value, shape: Shape) -> bool:
    """True if a value has exactly the element types and dimensions of `shape`."""
    if shape.is_tuple:
        return (isinstance(value, tuple) and len(value) == len(shape.tuple_shapes)
                and all(value_matches(v, s) for v, s in zip(value, shape.tuple_shapes)))
    if shape.is_token:
        return isinstance(value, Token)
    if not (isinstance(value, np.ndarray) and value.dtype == shape.element_type.dtype):
        return False
    if tuple(value.shape) == tuple(shape.dims):
        return True
    return value.ndim == shape.rank and shape.is_dynamic and all(  # a dynamic dimension: up to its bound
        n == bound or (dynamic and n <= bound) for n, bound, dynamic in zip(value.shape, shape.dims, shape.dynamic))


def check_arguments(comp: Computation, arguments: Sequence[Value], context: str = "") -> None:
    """HloError unless there is one argument per parameter with its exact type and dims.

    context prefixes the message (e.g. "device 1: ")."""
    params = comp.parameters
    if len(arguments) != len(params):
        loc = params[len(arguments)].loc if len(arguments) < len(params) else (comp.signature_loc or comp.loc)
        missing = (f"; parameter {len(arguments)} (%{params[len(arguments)].name}) has no value"
                   if len(arguments) < len(params) else "")
        raise error(f"{context}computation %{comp.name} takes {len(params)} argument(s), "
                    f"{len(arguments)} given{missing}", loc)
    for param, value in zip(params, arguments):
        if not value_matches(value, param.shape):
            raise error(f"{context}argument for parameter {param.attrs['parameter_number']} (%{param.name}) "
                        f"does not match: expected {param.shape.without_layout()}, given "
                        f"{describe_value(value)}", param.loc)


# --------------------------------------------------------------------------- array helpers of handlers

def as_array(x) -> np.ndarray:
    """x as an array: numpy ufuncs give 0-d results as numpy scalars."""
    return x if type(x) is np.ndarray else np.asarray(x)


def as_tuple_if(shape: Shape, results: Sequence[np.ndarray]) -> Value:
    """A kernel's list of results as the instruction's value (a tuple for tuple shapes)."""
    return tuple(results) if shape.is_tuple else results[0]


def scalar_int(x) -> int:
    return int(np.asarray(x).reshape(-1)[0])


def broadcast_view(x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """np.broadcast_to(x, dims) for x of the same rank, as a read-only zero-stride view
    built directly (np.broadcast_to costs several microseconds)."""
    if not x.flags.c_contiguous:
        return np.broadcast_to(x, dims)
    strides = [0 if n == 1 else st for n, st in zip(x.shape, x.strides)]
    view = np.ndarray(dims, x.dtype, buffer=x, strides=strides)
    view.flags.writeable = False
    return view


def async_start_value(shape: Shape, operands: Value, result: Value) -> Value:
    """The value of an async start: (operands, result, context...) per its shape."""
    if not shape.is_tuple or len(shape.tuple_shapes) < 2:
        return result
    return (operands, result) + tuple(zeros_of(s) for s in shape.tuple_shapes[2:])
