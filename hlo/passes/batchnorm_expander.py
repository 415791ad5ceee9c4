"""batchnorm-expander: expand batch-norm ops into arithmetic, reductions and broadcasts.

Follows XLA's BatchNormExpander formula by formula (N = elements per feature,
sums over every dimension except feature_index, per-feature vectors broadcast
along feature_index):

  training   mean = sum(x)/N, var = sum(x*x)/N - mean*mean,
             y = (x - mean) * rsqrt(var + eps) * scale + offset; result tuple(y, mean, var)
  inference  s = scale * rsqrt(var + eps), y = x * s + (offset - mean * s)
  grad       grad_offset = sum(dy), grad_scale = sum(dy * (x - mean)) * rsqrt(var + eps),
             grad_x = scale * rsqrt(var + eps) / N
                      * (dy * N - grad_offset - (x - mean) * sum(dy * (x - mean)) / (var + eps))

The sums use a scalar add computation (`scalar_add_computation`) added to the
module once per element type. N is a constant for static shapes and the product
of get-dimension-size values for dynamic ones (as in XLA). The arithmetic runs
in the operand's element type, as XLA's expansion does.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..ir import Computation, Instruction, Module
from ..opcodes import Op
from ..registry import OpRegistry
from ..shapes import S32, PrimitiveType, Shape
from .base import Pass, register
from .rewrite import Rewriter, replace, unfused_instructions

# The expansion of each batch-norm opcode: a method of _Expansion building its replacement.
EXPANSIONS = OpRegistry("batch-norm expansion")


@register
class BatchNormExpander(Pass):
    name = "batchnorm-expander"
    description = "Expand batch-norm-training/-inference/-grad into elementwise ops, reduces and broadcasts."
    edits_tracked = True  # (base.py)

    def run(self, module: Module) -> bool:
        rewriter = Rewriter(module)
        add_computations: dict[str, Computation] = {}
        batch_norms = unfused_instructions(module, lambda inst: inst.opcode in EXPANSIONS)
        for inst in batch_norms:
            _Expansion(inst, rewriter, add_computations).run()
        return bool(batch_norms)


def scalar_add_computation(module: Module, element_type: PrimitiveType, rewriter: Rewriter,
                           before: Optional[Computation] = None) -> Computation:
    """A new computation (a, b) -> a + b on scalars of element_type, added to the module."""
    comp = rewriter.new_computation("scalar_add_computation")
    scalar = Shape.array(element_type, ())
    lhs = rewriter.add(comp, Op.PARAMETER, scalar, (), {"parameter_number": 0}, name="scalar_lhs")
    rhs = rewriter.add(comp, Op.PARAMETER, scalar, (), {"parameter_number": 1}, name="scalar_rhs")
    comp.root = rewriter.add(comp, Op.ADD, scalar, [lhs, rhs])
    module.add_computation(comp, before=before)
    return comp


class _Expansion:
    """The new instructions replacing one batch-norm instruction, inserted before it."""

    def __init__(self, bn: Instruction, rewriter: Rewriter, add_computations: dict[str, Computation]):
        self.bn = bn
        self.comp = bn.parent
        self.rewriter = rewriter
        self.add_computations = add_computations
        self.operand_shape = bn.operands[0].shape
        self.ptype = self.operand_shape.element_type
        self.feature_index = bn.attrs["feature_index"]
        self.feature_shape = Shape.array(self.ptype, (self.operand_shape.dims[self.feature_index],),
                                         dynamic=(self.operand_shape.dynamic[self.feature_index],)
                                         ).with_default_layouts()
        self.full_shape = self.operand_shape.with_default_layouts() if self.operand_shape.layout is None \
            else self.operand_shape

    def run(self) -> None:
        result = EXPANSIONS[self.bn.opcode](self)
        if result.opcode == Op.TUPLE:
            result.sharding = self.bn.sharding
        replace(self.bn, result)

    # -- building blocks
    def add(self, opcode: str, shape: Shape, operands, attrs=None, name: Optional[str] = None) -> Instruction:
        return self.rewriter.add(self.comp, opcode, shape, operands, attrs, before=self.bn, name=name, like=self.bn)

    def binary(self, opcode: str, a: Instruction, b: Instruction) -> Instruction:
        return self.add(opcode, a.shape, [a, b])

    def scalar(self, value, element_type: Optional[PrimitiveType] = None) -> Instruction:
        et = element_type or self.ptype
        shape = Shape.array(et, ())
        array = np.asarray(value).astype(np.float64).astype(et.dtype) if et.is_float else np.asarray(value, et.dtype)
        return self.rewriter.constant(self.comp, array, shape, before=self.bn, like=self.bn)

    def broadcast_scalar(self, scalar: Instruction, shape: Shape) -> Instruction:
        static = Shape.array(shape.element_type, shape.dims).with_default_layouts()
        return self.add(Op.BROADCAST, static, [scalar], {"dimensions": ()})

    def feature_broadcast(self, vector: Instruction) -> Instruction:
        return self.add(Op.BROADCAST, self.full_shape, [vector], {"dimensions": (self.feature_index,)})

    def reduce_to_feature(self, value: Instruction, zero: Instruction) -> Instruction:
        dims = tuple(d for d in range(self.operand_shape.rank) if d != self.feature_index)
        return self.add(Op.REDUCE, self.feature_shape, [value, zero],
                        {"dimensions": dims, "to_apply": self.add_computation()})

    def add_computation(self) -> Computation:
        key = self.ptype.name
        if key not in self.add_computations:
            self.add_computations[key] = scalar_add_computation(self.comp.parent, self.ptype, self.rewriter,
                                                                before=self.comp)
        return self.add_computations[key]

    def elements_per_feature(self) -> Instruction:
        """N as a scalar of the operand type."""
        dims = self.operand_shape.dims
        others = [d for d in range(len(dims)) if d != self.feature_index]
        if not any(self.operand_shape.dynamic[d] for d in others):
            count = 1
            for d in others:
                count *= dims[d]
            return self.scalar(count)
        count = self.scalar(1, S32)
        scalar_s32 = Shape.array(S32, ())
        for d in others:
            size = self.add(Op.GET_DIMENSION_SIZE, scalar_s32, [self.bn.operands[0]], {"dimensions": (d,)})
            count = self.add(Op.MULTIPLY, scalar_s32, [size, count])
        return self.add(Op.CONVERT, Shape.array(self.ptype, ()), [count])

    def mean(self, count: Instruction, total: Instruction) -> Instruction:
        return self.binary(Op.DIVIDE, total, self.broadcast_scalar(count, total.shape))

    def epsilon(self) -> Instruction:
        # XLA keeps epsilon as a 32-bit float attribute and converts it to the operand type.
        return self.scalar(np.float32(self.bn.attrs["epsilon"]))

    # -- the three expansions
    @EXPANSIONS.register(Op.BATCH_NORM_TRAINING)
    def training(self) -> Instruction:
        x, scale, offset = self.bn.operands
        zero = self.scalar(0)
        epsilon = self.broadcast_scalar(self.epsilon(), self.full_shape)
        count = self.elements_per_feature()
        scale_b, offset_b = self.feature_broadcast(scale), self.feature_broadcast(offset)
        x_squared = self.add(Op.MULTIPLY, self.full_shape, [x, x])
        total = self.reduce_to_feature(x, zero)
        squared_total = self.reduce_to_feature(x_squared, zero)
        mean = self.mean(count, total)
        mean_b = self.feature_broadcast(mean)
        square_mean = self.mean(count, squared_total)
        mean_square = self.binary(Op.MULTIPLY, mean, mean)
        var = self.binary(Op.SUBTRACT, square_mean, mean_square)
        var_b = self.feature_broadcast(var)
        rsqrt = self.add(Op.RSQRT, self.full_shape, [self.binary(Op.ADD, var_b, epsilon)])
        centred = self.add(Op.SUBTRACT, self.full_shape, [x, mean_b])
        normalized = self.binary(Op.MULTIPLY, centred, rsqrt)
        scaled = self.binary(Op.MULTIPLY, normalized, scale_b)
        shifted = self.binary(Op.ADD, scaled, offset_b)
        return self.add(Op.TUPLE, self.bn.shape, [shifted, mean, var])

    @EXPANSIONS.register(Op.BATCH_NORM_INFERENCE)
    def inference(self) -> Instruction:
        x, scale, offset, mean, var = self.bn.operands
        epsilon = self.broadcast_scalar(self.epsilon(), self.feature_shape)
        true_scale = self.binary(Op.MULTIPLY, scale,
                                 self.add(Op.RSQRT, self.feature_shape, [self.binary(Op.ADD, var, epsilon)]))
        true_shift = self.binary(Op.SUBTRACT, offset, self.binary(Op.MULTIPLY, mean, true_scale))
        scaled = self.add(Op.MULTIPLY, self.full_shape, [x, self.feature_broadcast(true_scale)])
        return self.binary(Op.ADD, scaled, self.feature_broadcast(true_shift))

    @EXPANSIONS.register(Op.BATCH_NORM_GRAD)
    def grad(self) -> Instruction:
        x, scale, mean, var, grad_output = self.bn.operands
        count = self.elements_per_feature()
        zero = self.scalar(0)
        epsilon_scalar = self.epsilon()
        epsilon_full = self.broadcast_scalar(epsilon_scalar, self.full_shape)
        epsilon_feature = self.broadcast_scalar(epsilon_scalar, self.feature_shape)
        scale_b, var_b, mean_b = (self.feature_broadcast(v) for v in (scale, var, mean))
        rsqrt_b = self.add(Op.RSQRT, self.full_shape, [self.binary(Op.ADD, var_b, epsilon_full)])
        rsqrt = self.add(Op.RSQRT, self.feature_shape, [self.binary(Op.ADD, var, epsilon_feature)])
        centred = self.add(Op.SUBTRACT, self.full_shape, [x, mean_b])
        dy_centred = self.add(Op.MULTIPLY, self.full_shape, [grad_output, centred])
        sum_dy_centred = self.reduce_to_feature(dy_centred, zero)
        grad_offset = self.reduce_to_feature(grad_output, zero)
        grad_scale = self.binary(Op.MULTIPLY, sum_dy_centred, rsqrt)
        i2 = self.feature_broadcast(grad_offset)
        i3 = self.feature_broadcast(sum_dy_centred)
        i4 = self.binary(Op.MULTIPLY, i3, centred)
        i5 = self.binary(Op.DIVIDE, i4, self.binary(Op.ADD, var_b, epsilon_full))
        scale_rsqrt = self.mean(count, self.binary(Op.MULTIPLY, scale_b, rsqrt_b))
        i1 = self.add(Op.MULTIPLY, self.full_shape, [grad_output, self.broadcast_scalar(count, self.full_shape)])
        i6 = self.binary(Op.SUBTRACT, self.binary(Op.SUBTRACT, i1, i2), i5)
        grad_x = self.binary(Op.MULTIPLY, scale_rsqrt, i6)
        return self.add(Op.TUPLE, self.bn.shape, [grad_x, grad_scale, grad_offset])
