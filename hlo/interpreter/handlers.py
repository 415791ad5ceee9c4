"""The interpreter's per-opcode handlers: one registry, filled by the family modules.

A handler computes one instruction's value: `handler(ev, inst, ops) -> value`, where
`ev` is the running Evaluator, `inst` the instruction and `ops` its operands' values.
Each family module (elementwise, data_movement, linear, windows, indexing, sorting,
linalg, rng, collectives, transfers, control) registers its handlers beside their
definitions:

    @HANDLERS.register(Op.RESHAPE)
    @written_as(_write_reshape, gives_array=True)
    def run_reshape(ev, inst, ops): ...

Details given at registration tell the plan builder (plans.py) how to treat the op:
    inline=True               the handler runs its one called computation on the operands:
                              plans inline that computation instead (call, fusion);
    broadcasts=True           the handler accepts operands with size-1 dimensions and
                              broadcasts them as numpy does (binary ops, compare, select);
    pure_if_callees_are=True  a function of its operands and called computations alone:
                              computed once per evaluator from constants when its callees
                              are pure too.

A handler may also carry a `Writer` (`@written_as`): the same computation as a Python
expression, which the generated code of a plan (plan_code.py) uses instead of calling
the handler where the operand types make it exact.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np

from ..diagnostics import error
from ..registry import OpRegistry

HANDLERS = OpRegistry("interpreter handler")


# --------------------------------------------------------------------------- writers

@dataclass
class Source:
    """What a writer may use to write a step as an expression."""
    inst: Any                        # the instruction
    args: list[str]                  # the variables holding its operands' values
    in_types: Sequence[np.dtype]     # the operands' storage dtypes (array operands only)
    bind: Callable[[Any], str]       # bind(obj) -> a name under which the code can use obj
    setup: Callable[[str], str]      # setup(expr) -> a variable holding expr, computed once per evaluator
    static_args: Sequence[str] = ()  # the args whose values are computed once per evaluator


@dataclass(frozen=True)
class Writer:
    write: Callable[[Source], Optional[str]]  # the expression, or None to call the handler
    any_value: bool = False    # works on every value (tuples, batches of scalars): used in every plan,
                               # else only for array operands and results in plans of whole arrays
    gives_array: bool = False  # gives an array even at rank 0 (numpy ufuncs give a scalar there)


def written_as(write: Callable[[Source], Optional[str]], *, any_value: bool = False,
               gives_array: bool = False) -> Callable:
    """Decorator: the handler's step may be written as the expression write(source) returns."""
    def decorate(handler):
        handler.writer = Writer(write, any_value, gives_array)
        return handler
    return decorate


def write_operand(src: Source) -> str:
    """The expression of a handler that returns its operand."""
    return src.args[0]


# --------------------------------------------------------------------------- handlers of the plans

def unsupported(ev, inst, ops):
    """The step of an opcode without a handler (one HANDLERS.unsupported records)."""
    raise error(f"the interpreter does not support '{inst.opcode}'", inst.loc)


@written_as(write_operand, any_value=True)
def identity(ev, inst, ops):
    """Vectorised computations: data movement is the identity on a batch of scalars."""
    return ops[0]
