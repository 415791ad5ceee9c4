"""What algsimp's rules build with: `RewriteContext`, the builders that make the
instructions replacing one instruction, and `PassState`, what one run of the pass shares."""
from __future__ import annotations

import numpy as np

from ...ir import Computation, Instruction, Module
from ...literal import Literal
from ...opcodes import Op
from ...shapes import PrimitiveType, Shape
from ..rewrite import Rewriter


def same_shape(a: Shape, b: Shape) -> bool:
    """Equal shapes, layouts included (a missing layout counts as the default one)."""
    return a.with_default_layouts() == b.with_default_layouts()


class PassState:
    """What one run of the pass shares across rules: the name source and the scalar
    computations created for new reductions."""

    def __init__(self, module: Module):
        self.module = module
        self.rewriter = Rewriter(module)
        self.scalar_computations: dict[tuple[str, str], Computation] = {}


class RewriteContext:
    """Builders a rule uses to make the instructions replacing `inst`.

    Instructions are inserted before `inst`, named uniquely and given `inst`'s metadata.
    `final=True` marks the instruction that replaces `inst` itself; it also keeps `inst`'s
    sharding and frontend attributes.
    """

    def __init__(self, state: PassState, comp: Computation, inst: Instruction):
        self.state = state
        self.comp = comp
        self.inst = inst
        self.created: list[Instruction] = []

    # -- questions
    @staticmethod
    def same_shape(a: Shape, b: Shape) -> bool:
        return same_shape(a, b)

    def can_replace(self, inst: Instruction, other: Instruction) -> bool:
        """`other` may stand in for `inst`: same shape, layout included."""
        return same_shape(inst.shape, other.shape)

    def is_entry_root(self, inst: Instruction) -> bool:
        module = self.state.module
        return module.entry is self.comp and self.comp.root is inst

    @staticmethod
    def array_shape(element_type: PrimitiveType, dims) -> Shape:
        return Shape.array(element_type, tuple(dims)).with_default_layouts()

    # -- builders
    def add(self, opcode: str, shape: Shape, operands, attrs=None, final: bool = False) -> Instruction:
        new = self.state.rewriter.add(self.comp, opcode, shape, list(operands), attrs, before=self.inst,
                                      like=self.inst)
        if final:
            new.sharding = self.inst.sharding
            new.frontend_attributes = self.inst.frontend_attributes
        self.created.append(new)
        return new

    def constant_array(self, array, shape: Shape, final: bool = False) -> Instruction:
        literal = Literal.from_array(np.asarray(array), shape)
        return self.add(Op.CONSTANT, shape, [], {"literal": literal}, final=final)

    def constant_scalar(self, value, element_type: PrimitiveType) -> Instruction:
        shape = self.array_shape(element_type, ())
        with np.errstate(all="ignore"):
            array = np.asarray(value).astype(element_type.dtype)
        return self.constant_array(array, shape)

    def splat(self, value, shape: Shape) -> Instruction:
        """`value` in every element of `shape` (XLA's MakeScalarLike)."""
        scalar = self.constant_scalar(value, shape.element_type)
        return self.broadcast_to(scalar, shape, final=True)

    def broadcast_to(self, scalar: Instruction, shape: Shape, final: bool = False) -> Instruction:
        """A scalar broadcast to `shape` (the scalar itself when `shape` is its own)."""
        if same_shape(scalar.shape, shape):
            return scalar
        return self.add(Op.BROADCAST, shape, [scalar], {"dimensions": ()}, final=final)

    def broadcast_dims(self, x: Instruction, shape: Shape, dims) -> Instruction:
        dims = tuple(dims)
        if x.shape.dims == shape.dims and dims == tuple(range(len(dims))):
            return x
        return self.add(Op.BROADCAST, shape, [x], {"dimensions": dims})

    def transpose(self, x: Instruction, perm) -> Instruction:
        perm = tuple(perm)
        if perm == tuple(range(len(perm))):
            return x
        dims = [x.shape.dims[p] for p in perm]
        return self.add(Op.TRANSPOSE, self.array_shape(x.shape.element_type, dims), [x], {"dimensions": perm})

    def convert(self, x: Instruction, element_type: PrimitiveType) -> Instruction:
        if x.shape.element_type == element_type:
            return x
        return self.add(Op.CONVERT, self.array_shape(element_type, x.shape.dims), [x])

    def slice(self, x: Instruction, shape: Shape, ranges, final: bool = False) -> Instruction:
        """x[start:limit:stride] for the (start, limit, stride) `ranges` of each dimension."""
        return self.add(Op.SLICE, shape, [x], dict(slice=tuple(ranges)), final=final)

    def reshape(self, x: Instruction, dims) -> Instruction:
        if x.shape.dims == tuple(dims):
            return x
        return self.add(Op.RESHAPE, self.array_shape(x.shape.element_type, dims), [x])

    def squeeze(self, x: Instruction) -> Instruction:
        """x without its dimensions of size 1."""
        return self.reshape(x, [n for n in x.shape.dims if n != 1])

    def replace_shape(self, x: Instruction, shape: Shape) -> Instruction:
        """x as a value of `shape` (same elements): x itself, a copy (layout change) or a reshape."""
        if same_shape(x.shape, shape):
            return x
        opcode = Op.COPY if x.shape.dims == shape.dims else Op.RESHAPE
        return self.add(opcode, shape, [x], final=True)

    def scalar_computation(self, opcode: str, element_type: PrimitiveType) -> Computation:
        """A computation `opcode(lhs, rhs)` over two scalars, created once per pass run."""
        key = (opcode, element_type.name)
        comp = self.state.scalar_computations.get(key)
        if comp is not None:
            return comp
        rewriter = self.state.rewriter
        comp = Computation(rewriter.names.unique(f"{opcode}.{element_type.name}.reducer"))
        shape = self.array_shape(element_type, ())
        lhs = rewriter.add(comp, Op.PARAMETER, shape, [], {"parameter_number": 0}, name="lhs")
        rhs = rewriter.add(comp, Op.PARAMETER, shape, [], {"parameter_number": 1}, name="rhs")
        comp.root = rewriter.add(comp, opcode, shape, [lhs, rhs])
        self.state.module.add_computation(comp, before=self.comp)
        self.state.scalar_computations[key] = comp
        return comp

    # -- cleanup
    def discard_unused(self) -> None:
        """Remove instructions this context made that ended up unused."""
        for inst in reversed(self.created):
            if inst.parent is self.comp and not inst.users and inst is not self.comp.root:
                self.comp.remove(inst)
        self.created = []
