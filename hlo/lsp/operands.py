"""The operands each opcode expects, for signature help: OPERAND_ROLES, one entry per opcode.

The opcode table (hlo.opcodes) knows how many operands an opcode takes (`arity`,
`min_arity`) and whether it is elementwise, but not what each operand is. Every
opcode gets the operands the table implies:

* elementwise unary: `operand`; elementwise binary: `lhs`, `rhs` of the same shape;
* any other fixed arity N: `operand` (N == 1) or `operand0..operandN-1`;
* variadic: `operands...`;

except where _WRITTEN_ROLES names them and the types they need (from spec/ops-*.md).
A new opcode needs an entry there only when these defaults do not describe it.

`T` is an element type and `[d]` the dimensions, as in the spec.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..opcodes import OPCODES, Op, OpInfo, split_async_sugar
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


def _pair(first: str, second: str, first_type: str = "T[d]") -> tuple[OperandSpec, OperandSpec]:
    """Two operands of one shape and element type, the second described by the first's name."""
    return _o(first, first_type), _o(second, f"same shape and type as {first}")


_SAME = "T[d], same shape and type as lhs"
_INT_SCALARS = "s32[] or another integer scalar, one per dimension"

# Operands the table cannot name: their roles and types from the spec.
_WRITTEN_ROLES: dict[Op, tuple[OperandSpec, ...]] = {
    Op.PARAMETER: (_o("number", "the parameter's number, an integer >= 0"),),
    Op.CONSTANT: (_o("literal", "a literal of the result shape"),),
    Op.SELECT: (_o("pred", "pred[d] (or pred[])"), _o("on_true", "T[d]"), _o("on_false", "T[d]")),
    Op.CLAMP: (_o("min", "T[] or T[d]"), _o("operand", "T[d]"), _o("max", "T[] or T[d]")),
    Op.COMPLEX: _pair("real", "imag", "f32[d] or f64[d]"),
    Op.ATAN2: _pair("y", "x", "floating T[d]"),
    Op.DIVIDE: _pair("dividend", "divisor"),
    Op.REMAINDER: _pair("dividend", "divisor"),
    Op.POWER: _pair("base", "exponent"),
    Op.SHIFT_LEFT: _pair("value", "shift", "integer T[d]"),
    Op.SHIFT_RIGHT_ARITHMETIC: _pair("value", "shift", "integer T[d]"),
    Op.SHIFT_RIGHT_LOGICAL: _pair("value", "shift", "integer T[d]"),
    Op.STOCHASTIC_CONVERT: (_o("operand", "floating T[d]"), _o("random_bits", "unsigned integer U[d] as wide as T")),
    Op.CONVERT: (_o("operand", "T[d] (result: U[d])"),),
    Op.BITCAST_CONVERT: (_o("operand", "T[d] (result: U[d'] of the same total bits)"),),
    Op.PAD: (_o("operand", "T[d]"), _o("padding_value", "T[]")),
    Op.CONCATENATE: (_many("operands", "T[d] of equal rank, equal dims except the concatenated one"),),
    Op.TUPLE: (_many("elements", "any shape"),),
    Op.GET_TUPLE_ELEMENT: (_o("operand", "a tuple"),),
    Op.DYNAMIC_SLICE: (_o("operand", "T[d]"), _many("start_indices", _INT_SCALARS)),
    Op.DYNAMIC_UPDATE_SLICE: (_o("operand", "T[d]"), _o("update", "T[u], same rank, u <= d"),
                             _many("start_indices", _INT_SCALARS)),
    Op.DYNAMIC_RESHAPE: (_o("operand", "T[d]"), _many("sizes", "s32[], one per result dimension")),
    Op.GATHER: (_o("operand", "T[d]"), _o("start_indices", "integer array")),
    Op.SCATTER: (_many("operands", "T_i[d], identical dims"), _o("scatter_indices", "integer array"),
                _many("updates", "T_i[u], one per operand")),
    Op.DOT: (_o("lhs", "T[d]"), _o("rhs", "T[e]")),
    Op.RAGGED_DOT: (_o("lhs", "T[d]"), _o("rhs", "T[e]"), _o("group_sizes", "integer array [g]")),
    Op.SCALED_DOT: (_o("lhs", "T[d]"), _o("rhs", "T[e]"), _o("lhs_scale", "S[d'] block scales of lhs"),
                   _o("rhs_scale", "S[e'] block scales of rhs")),
    Op.CONVOLUTION: (_o("lhs", "T[input dims]"), _o("rhs", "T[kernel dims]")),
    Op.REDUCE: (_many("inputs", "T_i[d], identical dims"), _many("init_values", "T_i[], one per input")),
    Op.REDUCE_WINDOW: (_many("inputs", "T_i[d], identical dims"), _many("init_values", "T_i[], one per input")),
    Op.SELECT_AND_SCATTER: (_o("operand", "T[d]"), _o("source", "T[windows]"), _o("init_value", "T[]")),
    Op.MAP: (_many("operands", "T_i[d], identical dims"),),
    Op.SORT: (_many("operands", "T_i[d], identical dims"),),
    Op.TOPK: (_o("operand", "T[..., n]"),),
    Op.SCAN: (_many("inputs", "T_i[d] scanned along dimensions"), _many("carries", "initial carries (num_carries)")),
    Op.CALL: (_many("arguments", "the shapes of to_apply's parameters"),),
    Op.WHILE: (_o("init", "T (usually the loop-state tuple)"),),
    Op.CONDITIONAL: (_o("branch_index", "pred[] (true/false) or s32[] (branch_computations)"),
                    _many("branch_operands", "one per branch computation, its parameter's shape")),
    Op.FUSION: (_many("arguments", "the shapes of the fused computation's parameters"),),
    Op.CUSTOM_CALL: (_many("operands", "any shapes the target expects"),),
    Op.FFT: (_o("operand", "complex (or real for RFFT) T[d]"),),
    Op.CHOLESKY: (_o("a", "floating T[..., n, n]"),),
    Op.TRIANGULAR_SOLVE: (_o("a", "T[..., m, m]"), _o("b", "T[..., m, k] (left_side) or T[..., k, m]")),
    Op.BATCH_NORM_TRAINING: (_o("operand", "T[d]"), _o("scale", "T[f]"), _o("offset", "T[f]")),
    Op.BATCH_NORM_INFERENCE: (_o("operand", "T[d]"), _o("scale", "T[f]"), _o("offset", "T[f]"),
                             _o("mean", "T[f]"), _o("variance", "T[f]")),
    Op.BATCH_NORM_GRAD: (_o("operand", "T[d]"), _o("scale", "T[f]"), _o("mean", "T[f]"), _o("variance", "T[f]"),
                        _o("grad_output", "T[d]")),
    Op.RNG: (_o("a", "T[] (low, or mu)"), _o("b", "T[] (high, or sigma)")),
    Op.RNG_BIT_GENERATOR: (_o("initial_state", "u64[n] (size depends on the algorithm)"),),
    Op.INFEED: (_o("token", "token[]"),),
    Op.OUTFEED: (_o("data", "any shape"), _o("token", "token[]")),
    Op.SEND: (_o("data", "any shape"), _o("token", "token[]")),
    Op.SEND_DONE: (_o("send", "the result of send"),),
    Op.RECV: (_o("token", "token[]"),),
    Op.RECV_DONE: (_o("recv", "the result of recv"),),
    Op.AFTER_ALL: (_many("tokens", "token[]"),),
    Op.ADD_DEPENDENCY: (_o("operand", "any shape"), _o("token", "token[]")),
    Op.SET_DIMENSION_SIZE: (_o("operand", "T[d]"), _o("size", "s32[]")),
    Op.GET_DIMENSION_SIZE: (_o("operand", "T[d]"),),
    Op.RAGGED_ALL_TO_ALL: (_o("input", "T[d]"), _o("output", "T[e]"), _o("input_offsets", "integer array"),
                          _o("send_sizes", "integer array"), _o("output_offsets", "integer array"),
                          _o("recv_sizes", "integer array")),
}


def _derived(info: OpInfo) -> tuple[OperandSpec, ...]:
    """Operands from the table alone: the arity, and for elementwise ops one shared shape."""
    if info.arity is None:
        return (_many("operands", "any shapes"),)
    if info.arity == 1:
        return (_o("operand", "T[d]" if info.is_elementwise else "any shape"),)
    if info.arity == 2 and info.is_elementwise:
        return (_o("lhs", "T[d]"), _o("rhs", _SAME))
    return tuple(_o(f"operand{i}", "any shape") for i in range(info.arity))


OPERAND_ROLES: dict[Op, tuple[OperandSpec, ...]] = {
    op: _WRITTEN_ROLES[op] if op in _WRITTEN_ROLES else _derived(OPCODES[op]) for op in Op}


def operand_specs(opcode: str) -> Optional[tuple[OperandSpec, ...]]:
    """The operands of opcode (async sugar `X-start` takes X's), or None for an unknown opcode."""
    sugar = split_async_sugar(opcode)
    if sugar is not None:
        opcode = sugar[0] if sugar[1] == "-start" else Op.ASYNC_DONE
    return OPERAND_ROLES.get(opcode)


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
