"""The operands each opcode expects, for signature help.

The opcode table (hlo.opcodes) knows how many operands an opcode takes (`arity`,
`min_arity`) but not what each one is; this module adds the operands' names and
the types they need (from spec/ops-*.md), for the opcodes where they differ from
the defaults of their category:

* elementwise unary: `operand`; elementwise binary: `lhs`, `rhs` of the same shape;
* any other fixed arity N: `operand` (N == 1) or `operand0..operandN-1`;
* variadic: `operands...`.

`T` is an element type and `[d]` the dimensions, as in the spec.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..opcodes import OPCODES, Category, split_async_sugar
from .index import LITERAL_OPERAND_OPCODES


@dataclass(frozen=True)
class OperandSpec:
    name: str
    type: str
    repeated: bool = False     # stands for any number of operands (`name...`)

    def label(self) -> str:
        return f"{self.name}{'...' if self.repeated else ''}: {self.type}"


def _o(name: str, type_: str) -> OperandSpec:
    return OperandSpec(name, type_)


def _many(name: str, type_: str) -> OperandSpec:
    return OperandSpec(name, type_, True)


_SAME = "T[d], same shape and type as lhs"
_INT_SCALARS = "s32[] or another integer scalar, one per dimension"

OPERAND_ROLES: dict[str, tuple[OperandSpec, ...]] = {
    "parameter": (_o("number", "the parameter's number, an integer >= 0"),),
    "constant": (_o("literal", "a literal of the result shape"),),
    "compare": (_o("lhs", "T[d]"), _o("rhs", _SAME)),
    "select": (_o("pred", "pred[d] (or pred[])"), _o("on_true", "T[d]"), _o("on_false", "T[d]")),
    "clamp": (_o("min", "T[] or T[d]"), _o("operand", "T[d]"), _o("max", "T[] or T[d]")),
    "complex": (_o("real", "f32[d] or f64[d]"), _o("imag", "same shape and type as real")),
    "atan2": (_o("y", "floating T[d]"), _o("x", "same shape and type as y")),
    "divide": (_o("dividend", "T[d]"), _o("divisor", "same shape and type as dividend")),
    "remainder": (_o("dividend", "T[d]"), _o("divisor", "same shape and type as dividend")),
    "power": (_o("base", "T[d]"), _o("exponent", "same shape and type as base")),
    "shift-left": (_o("value", "integer T[d]"), _o("shift", "same shape and type as value")),
    "shift-right-arithmetic": (_o("value", "integer T[d]"), _o("shift", "same shape and type as value")),
    "shift-right-logical": (_o("value", "integer T[d]"), _o("shift", "same shape and type as value")),
    "stochastic-convert": (_o("operand", "floating T[d]"), _o("random_bits", "unsigned integer U[d] as wide as T")),
    "convert": (_o("operand", "T[d] (result: U[d])"),),
    "bitcast-convert": (_o("operand", "T[d] (result: U[d'] of the same total bits)"),),
    "pad": (_o("operand", "T[d]"), _o("padding_value", "T[]")),
    "concatenate": (_many("operands", "T[d] of equal rank, equal dims except the concatenated one"),),
    "tuple": (_many("elements", "any shape"),),
    "get-tuple-element": (_o("operand", "a tuple"),),
    "dynamic-slice": (_o("operand", "T[d]"), _many("start_indices", _INT_SCALARS)),
    "dynamic-update-slice": (_o("operand", "T[d]"), _o("update", "T[u], same rank, u <= d"),
                             _many("start_indices", _INT_SCALARS)),
    "dynamic-reshape": (_o("operand", "T[d]"), _many("sizes", "s32[], one per result dimension")),
    "gather": (_o("operand", "T[d]"), _o("start_indices", "integer array")),
    "scatter": (_many("operands", "T_i[d], identical dims"), _o("scatter_indices", "integer array"),
                _many("updates", "T_i[u], one per operand")),
    "dot": (_o("lhs", "T[d]"), _o("rhs", "T[e]")),
    "ragged-dot": (_o("lhs", "T[d]"), _o("rhs", "T[e]"), _o("group_sizes", "integer array [g]")),
    "scaled-dot": (_o("lhs", "T[d]"), _o("rhs", "T[e]"), _o("lhs_scale", "S[d'] block scales of lhs"),
                   _o("rhs_scale", "S[e'] block scales of rhs")),
    "convolution": (_o("lhs", "T[input dims]"), _o("rhs", "T[kernel dims]")),
    "reduce": (_many("inputs", "T_i[d], identical dims"), _many("init_values", "T_i[], one per input")),
    "reduce-window": (_many("inputs", "T_i[d], identical dims"), _many("init_values", "T_i[], one per input")),
    "select-and-scatter": (_o("operand", "T[d]"), _o("source", "T[windows]"), _o("init_value", "T[]")),
    "map": (_many("operands", "T_i[d], identical dims"),),
    "sort": (_many("operands", "T_i[d], identical dims"),),
    "topk": (_o("operand", "T[..., n]"),),
    "scan": (_many("inputs", "T_i[d] scanned along dimensions"), _many("carries", "initial carries (num_carries)")),
    "call": (_many("arguments", "the shapes of to_apply's parameters"),),
    "while": (_o("init", "T (usually the loop-state tuple)"),),
    "conditional": (_o("branch_index", "pred[] (true/false) or s32[] (branch_computations)"),
                    _many("branch_operands", "one per branch computation, its parameter's shape")),
    "fusion": (_many("arguments", "the shapes of the fused computation's parameters"),),
    "custom-call": (_many("operands", "any shapes the target expects"),),
    "fft": (_o("operand", "complex (or real for RFFT) T[d]"),),
    "cholesky": (_o("a", "floating T[..., n, n]"),),
    "triangular-solve": (_o("a", "T[..., m, m]"), _o("b", "T[..., m, k] (left_side) or T[..., k, m]")),
    "batch-norm-training": (_o("operand", "T[d]"), _o("scale", "T[f]"), _o("offset", "T[f]")),
    "batch-norm-inference": (_o("operand", "T[d]"), _o("scale", "T[f]"), _o("offset", "T[f]"),
                             _o("mean", "T[f]"), _o("variance", "T[f]")),
    "batch-norm-grad": (_o("operand", "T[d]"), _o("scale", "T[f]"), _o("mean", "T[f]"), _o("variance", "T[f]"),
                        _o("grad_output", "T[d]")),
    "rng": (_o("a", "T[] (low, or mu)"), _o("b", "T[] (high, or sigma)")),
    "rng-bit-generator": (_o("initial_state", "u64[n] (size depends on the algorithm)"),),
    "infeed": (_o("token", "token[]"),),
    "outfeed": (_o("data", "any shape"), _o("token", "token[]")),
    "send": (_o("data", "any shape"), _o("token", "token[]")),
    "send-done": (_o("send", "the result of send"),),
    "recv": (_o("token", "token[]"),),
    "recv-done": (_o("recv", "the result of recv"),),
    "after-all": (_many("tokens", "token[]"),),
    "add-dependency": (_o("operand", "any shape"), _o("token", "token[]")),
    "set-dimension-size": (_o("operand", "T[d]"), _o("size", "s32[]")),
    "get-dimension-size": (_o("operand", "T[d]"),),
    "ragged-all-to-all": (_o("input", "T[d]"), _o("output", "T[e]"), _o("input_offsets", "integer array"),
                          _o("send_sizes", "integer array"), _o("output_offsets", "integer array"),
                          _o("recv_sizes", "integer array")),
}


def operand_specs(opcode: str) -> Optional[tuple[OperandSpec, ...]]:
    """The operands of opcode (async sugar `X-start` takes X's), or None for an unknown opcode."""
    sugar = split_async_sugar(opcode)
    if sugar is not None:
        opcode = sugar[0] if sugar[1] == "-start" else "async-done"
    info = OPCODES.get(opcode)
    if info is None:
        return None
    if opcode in OPERAND_ROLES:
        return OPERAND_ROLES[opcode]
    if info.arity is None:
        return (_many("operands", "any shapes"),)
    if info.arity == 1:
        return (_o("operand", "T[d]" if info.category is Category.ELEMENTWISE else "any shape"),)
    if info.arity == 2 and info.category is Category.ELEMENTWISE:
        return (_o("lhs", "T[d]"), _o("rhs", _SAME))
    return tuple(_o(f"operand{i}", "any shape") for i in range(info.arity))


def operand_count_text(opcode: str) -> str:
    """'2 operands', 'at least 1 operand', 'any number of operands' from the opcode table."""
    sugar = split_async_sugar(opcode)
    info = OPCODES.get(sugar[0] if sugar else opcode)
    if info is None:
        return ""
    if opcode in LITERAL_OPERAND_OPCODES:
        return "no operands: a number or literal goes in the parentheses"
    if info.arity is not None:
        return f"{info.arity} operand{'s' if info.arity != 1 else ''}"
    if info.min_arity:
        return f"at least {info.min_arity} operand{'s' if info.min_arity != 1 else ''}"
    return "any number of operands"


def active_operand(specs: tuple[OperandSpec, ...], index: int, total: int) -> int:
    """Which spec the operand at `index` (of `total` written) stands for."""
    if not specs:
        return 0
    repeated = sum(1 for s in specs if s.repeated)
    if repeated == 0:
        return min(index, len(specs) - 1)
    fixed = len(specs) - repeated
    per_repeated = max((max(total, fixed + repeated) - fixed) // repeated, 1)
    covered = 0
    for i, spec in enumerate(specs):
        covered += per_repeated if spec.repeated else 1
        if index < covered:
            return i
    return max(i for i, s in enumerate(specs) if s.repeated)
