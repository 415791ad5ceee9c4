"""Facts about instructions that several passes need, computed without changing anything.

The computations an instruction reaches, permutations, constant values, and
`evaluate_cone`, which runs a piece of a computation through the interpreter
(constant folding and trip counts use it).
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence

import numpy as np

from ..analysis.effects import has_side_effect
from ..interpreter import HANDLERS, Evaluator
from ..interpreter.dynamic import involves_dynamic
from ..interpreter.plans import CHECKED_BYTES
from ..ir import Computation, Instruction, Module
from ..literal import Literal
from ..opcodes import Op, Trait, has_trait
from ..shapes import Shape

# --------------------------------------------------------------------------- call graph


def reachable_computations(roots: Iterable[Computation],
                           follow: Callable[[Instruction], bool] = lambda inst: True) -> list[Computation]:
    """`roots` and every computation they call, in turn, through instructions `follow` accepts;
    each once, in the order found."""
    order: list[Computation] = []
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        comp = stack.pop()
        if id(comp) in seen:
            continue
        seen.add(id(comp))
        order.append(comp)
        for inst in comp.instructions:
            if follow(inst):
                stack.extend(inst.called_computations())
    return order


# --------------------------------------------------------------------------- permutations


def inverse_permutation(perm) -> tuple[int, ...]:
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return tuple(inverse)


def is_identity_permutation(perm) -> bool:
    return tuple(perm) == tuple(range(len(perm)))


# --------------------------------------------------------------------------- values


def literal_value(inst: Instruction) -> Optional[np.ndarray]:
    """The array of a non-elided array constant, else None."""
    if inst.opcode != Op.CONSTANT:
        return None
    lit: Literal = inst.attrs["literal"]
    if lit.elided or lit.is_tuple:
        return None
    return lit.array


class EvaluationError(Exception):
    """The interpreter could not produce a value (unsupported op, elided constant ...)."""


def evaluate_cone(targets: Sequence[Instruction],
                  bindings: Optional[dict[int, np.ndarray]] = None) -> list:
    """Values of `targets` (instructions of one computation) computed by the interpreter.

    Every instruction the targets depend on is evaluated too, except those bound
    in `bindings` (id(instruction) -> numpy value in storage dtype), which become
    inputs. The cone must reach no parameter that is not bound. Tuple-shaped
    targets give tuples of values. Raises EvaluationError when the interpreter
    cannot evaluate it.
    """
    if not bindings and len(targets) == 1 and _handler_alone_computes(targets[0]):
        return [_run_handler_on_constants(targets[0])]
    cone, inputs = _cone_computation(targets, bindings or {})
    shell = Module("constant_folding")
    shell.computations, shell.entry = [cone], cone
    try:
        with np.errstate(all="ignore"):
            result = Evaluator(shell).call(cone, inputs)
    except Exception as err:  # any interpreter failure means "not evaluable"
        raise EvaluationError(str(err)) from err
    return [result] if len(targets) == 1 else list(result)


def _handler_alone_computes(inst: Instruction) -> bool:
    """Whether the plan of a cone of `inst` over constant operands would just call inst's handler on
    their values (what most folds are): no called computation or inlining, no operand passed
    through (aliases), no dynamic sizes, no memory check, an array result."""
    shape = inst.shape
    if not inst.operands or shape is None or shape.tuple_shapes is not None or not shape.is_array:
        return False
    for op in inst.operands:
        if op.opcode != Op.CONSTANT or op.shape is None or op.shape.tuple_shapes is not None \
                or op.attrs["literal"].elided:
            return False
    opcode = inst.opcode
    if opcode not in HANDLERS or inst.called_computations() or HANDLERS.details(opcode).get("inline"):
        return False
    if has_trait(opcode, Trait.PASS_THROUGH) or has_side_effect(inst) or involves_dynamic(inst):
        return False
    source = inst.operands[0].shape
    if has_trait(opcode, Trait.SAME_VALUE_IF_SAME_SHAPE) and source.element_type is shape.element_type \
            and source.dims == shape.dims:
        return False  # the plan may give the operand itself
    return shape.byte_size() <= CHECKED_BYTES


def _run_handler_on_constants(inst: Instruction):
    """The value of `inst` (see _handler_alone_computes): its handler on its operands' values."""
    evaluator = Evaluator(Module("constant_folding"))
    constant = HANDLERS[Op.CONSTANT]
    try:
        with np.errstate(all="ignore"):
            return HANDLERS[inst.opcode](evaluator, inst, [constant(evaluator, op, []) for op in inst.operands])
    except Exception as err:  # any interpreter failure means "not evaluable"
        raise EvaluationError(str(err)) from err


def _cone_computation(targets: Sequence[Instruction], bindings: dict[int, np.ndarray]):
    """A computation (not in any module) computing tuple(targets) from the bound values."""
    cone = Computation("cone")
    mapping: dict[int, Instruction] = {}
    inputs: list[np.ndarray] = []

    def visit(inst: Instruction) -> Instruction:
        if id(inst) in mapping:
            return mapping[id(inst)]
        if id(inst) in bindings:
            new = Instruction(f"input.{len(inputs)}", Op.PARAMETER, inst.shape,
                              attrs={"parameter_number": len(inputs)})
            inputs.append(bindings[id(inst)])
        elif inst.opcode == Op.PARAMETER:
            raise EvaluationError(f"{inst.name} is an unbound parameter")
        elif inst.opcode == Op.CONSTANT and inst.attrs["literal"].elided:
            raise EvaluationError(f"the value of {inst.name} was elided")
        else:
            new = inst.clone([visit(op) for op in inst.operands], f"v.{len(mapping)}")
            new.control_predecessors = []
        mapping[id(inst)] = new
        cone.add(new)
        return new

    leaves = [visit(t) for t in targets]
    if len(leaves) == 1:
        cone.root = leaves[0]
    else:
        cone.root = cone.add(Instruction("results", Op.TUPLE, Shape.tuple_of(t.shape for t in targets), leaves))
    return cone, inputs
