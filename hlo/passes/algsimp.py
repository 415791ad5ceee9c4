"""algsimp: algebraic simplification (XLA's AlgebraicSimplifier).

Every computation (except fusion bodies, as in XLA) is visited in post order; each
instruction's opcode selects its rules in `algsimp_rules.RULES` and the first rule
that applies rewrites it. Sweeps repeat until nothing changes (bounded), which
reaches a local fixed point per computation. The rules and their exact conditions
are documented in docs/ALGSIMP.md.

What the pass never does:
- touch side-effecting instructions (see `analysis.has_side_effect`) or instructions tied
  by control dependencies (XLA skips those too);
- change an instruction's shape: a replacement has the replaced instruction's shape,
  layout included, so bitcasts and the entry's program shape see the same layouts;
- rewrite instructions with dynamic shapes.
New instructions get XLA-style unique names, the metadata of the instruction they
replace, and the default layout unless they replace an instruction (then its shape).
"""
from __future__ import annotations


import numpy as np

from ..ir import Computation, Instruction, Module
from ..literal import Literal
from ..shapes import PrimitiveType, Shape
from .algsimp_rules import RULES
from .analysis import has_side_effect
from .pass_manager import Pass, register
from .rewrite import Rewriter, repeat_while_changing, replace
from ..opcodes import Op

MAX_SWEEPS = 50  # per computation; XLA's rerun limit is of the same order


@register
class AlgebraicSimplifier(Pass):
    name = "algsimp"
    description = ("Algebraic simplification: identities (x+0, x*1, ...), redundant reshapes/transposes/"
                   "broadcasts/slices, trivial dots and reductions (XLA's AlgebraicSimplifier).")

    def run(self, module: Module) -> bool:
        state = _PassState(module)
        fused = _fusion_bodies(module)
        changed = False
        for comp in list(module.computations):
            if id(comp) in fused:
                continue
            changed |= simplify_computation(comp, state)
        return changed


def simplify_computation(comp: Computation, state: "_PassState") -> bool:
    changed = repeat_while_changing(lambda: _sweep(comp, state), MAX_SWEEPS)
    if changed:
        _restore_operand_order(comp)
    return changed


def _sweep(comp: Computation, state: "_PassState") -> bool:
    """One post-order pass over `comp`; True if some rule fired."""
    changed = False
    tied = {id(p) for inst in comp.instructions for p in inst.control_predecessors}
    for inst in comp.post_order():
        if inst.parent is not comp or not _rewritable(inst, comp, tied):
            continue
        for rule in RULES.get(inst.opcode, ()):
            ctx = RewriteContext(state, comp, inst)
            new = rule(ctx, inst)
            if new is None:
                ctx.discard_unused()
                continue
            if new is not inst:
                if not same_shape(new.shape, inst.shape):
                    raise AssertionError(f"algsimp rule {rule.__name__} replaced {inst.name} ({inst.shape}) "
                                         f"by {new.name} ({new.shape})")
                replace(inst, new)
                ctx.discard_unused()
            changed = True
            break
    return changed


def _rewritable(inst: Instruction, comp: Computation, tied: set[int]) -> bool:
    if inst.opcode == Op.PARAMETER or has_side_effect(inst):
        return False
    if inst.control_predecessors or id(inst) in tied:
        return False
    if not inst.users and inst is not comp.root:
        return False  # dead: dce removes it
    return not inst.shape.is_dynamic and not any(op.shape.is_dynamic for op in inst.operands)


def _fusion_bodies(module: Module) -> set[int]:
    return {id(inst.attrs["calls"]) for inst in module.instructions()
            if inst.opcode == Op.FUSION and inst.attrs.get("calls") is not None}


def _restore_operand_order(comp: Computation) -> None:
    """New instructions go right before the one they replace; if the text order was not
    operands-first to begin with, fall back to post order."""
    seen: set[int] = set()
    for inst in comp.instructions:
        if any(id(op) not in seen for op in inst.operands):
            comp.instructions = comp.post_order()
            return
        seen.add(id(inst))


def same_shape(a: Shape, b: Shape) -> bool:
    """Equal shapes, layouts included (a missing layout counts as the default one)."""
    return a.with_default_layouts() == b.with_default_layouts()


class _PassState:
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

    def __init__(self, state: _PassState, comp: Computation, inst: Instruction):
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
        return self.add("constant", shape, [], {"literal": literal}, final=final)

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
        return self.add("broadcast", shape, [scalar], {"dimensions": ()}, final=final)

    def broadcast_dims(self, x: Instruction, shape: Shape, dims) -> Instruction:
        dims = tuple(dims)
        if x.shape.dims == shape.dims and dims == tuple(range(len(dims))):
            return x
        return self.add("broadcast", shape, [x], {"dimensions": dims})

    def transpose(self, x: Instruction, perm) -> Instruction:
        perm = tuple(perm)
        if perm == tuple(range(len(perm))):
            return x
        dims = [x.shape.dims[p] for p in perm]
        return self.add("transpose", self.array_shape(x.shape.element_type, dims), [x], {"dimensions": perm})

    def convert(self, x: Instruction, element_type: PrimitiveType) -> Instruction:
        if x.shape.element_type == element_type:
            return x
        return self.add("convert", self.array_shape(element_type, x.shape.dims), [x])

    def reshape(self, x: Instruction, dims) -> Instruction:
        if x.shape.dims == tuple(dims):
            return x
        return self.add("reshape", self.array_shape(x.shape.element_type, dims), [x])

    def squeeze(self, x: Instruction) -> Instruction:
        """x without its dimensions of size 1."""
        return self.reshape(x, [n for n in x.shape.dims if n != 1])

    def replace_shape(self, x: Instruction, shape: Shape) -> Instruction:
        """x as a value of `shape` (same elements): x itself, a copy (layout change) or a reshape."""
        if same_shape(x.shape, shape):
            return x
        opcode = "copy" if x.shape.dims == shape.dims else "reshape"
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
        lhs = rewriter.add(comp, "parameter", shape, [], {"parameter_number": 0}, name="lhs")
        rhs = rewriter.add(comp, "parameter", shape, [], {"parameter_number": 1}, name="rhs")
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
