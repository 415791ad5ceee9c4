"""layout-assignment: make layouts agree wherever two instructions share one buffer.

JAX's modules may give one value different layouts on the two sides of a boundary: a while
loop's result says `f32[12,4,8]{2,0,1}` where its body parameter says `{2,1,0}`, a
get-tuple-element declares another layout than the tuple element it reads. The interpreter
does not care (values are logical arrays), but compiled code shares one buffer across such a
boundary, so both sides must read it the same way. As XLA's LayoutAssignment does, this pass
inserts layout-changing `copy` instructions so that:

* a while loop's operand, condition and body parameters, body root and result have one layout
  (the body parameter's);
* call, conditional and fusion operands have their callee parameters' layouts, and their
  results their callee roots' (conditional branches are converted to the conditional's layout);
* a get-tuple-element has the layout of the element it reads, a tuple element the layout of
  the operand that fills it;
* an in-place update (dynamic-update-slice, scatter) has its operand's layout.

Every instruction keeps the shape it declares to its users: where an instruction must change
layout to agree with its buffer, a copy back to the declared layout follows it. `bitcast`
reinterprets a buffer on purpose and is left alone. Values are unchanged, only where they live.
"""
from __future__ import annotations

from typing import Optional

from ..ir import Computation, Instruction, Module
from ..opcodes import Op, Trait
from ..shapes import Shape
from .base import Pass, register
from .rewrite import Rewriter


@register
class LayoutAssignment(Pass):
    name = "layout-assignment"
    description = ("Insert layout-changing copies where a while, call, conditional, fusion, tuple or "
                   "get-tuple-element boundary gives one buffer two layouts.")

    def run(self, module: Module) -> bool:
        fixer = _LayoutFixer(module)
        for comp in list(module.computations):
            for inst in list(comp.instructions):
                fixer.fix_boundary(comp, inst)
        for comp in list(module.computations):
            for inst in list(comp.instructions):
                fixer.fix_local(comp, inst)
        return fixer.changed


class _LayoutFixer:
    def __init__(self, module: Module):
        self.rewriter = Rewriter(module)
        self.changed = False

    # -- boundaries between a caller and the computations it runs
    def fix_boundary(self, comp: Computation, inst: Instruction) -> None:
        if inst.opcode == Op.WHILE:
            self.fix_while(comp, inst)
        elif inst.opcode == Op.CALL:
            self.fix_call(comp, inst, inst.attrs["to_apply"])
        elif inst.opcode == Op.FUSION:
            self.fix_call(comp, inst, inst.attrs["calls"])
        elif inst.opcode == Op.CONDITIONAL:
            self.fix_conditional(comp, inst)

    def fix_while(self, comp: Computation, loop: Instruction) -> None:
        body, cond = loop.attrs["body"], loop.attrs["condition"]
        carried = body.parameters[0].shape
        cond_param = cond.parameters[0]
        if cond_param.shape != carried:
            cond_param.shape = carried
            self.changed = True
        self.convert_root(body, carried)
        self.convert_operand(comp, loop, 0, carried)
        self.set_result_shape(comp, loop, carried)

    def fix_call(self, comp: Computation, inst: Instruction, callee: Computation) -> None:
        for index, param in enumerate(callee.parameters):
            self.convert_operand(comp, inst, index, param.shape)
        if callee.root is not None:
            self.set_result_shape(comp, inst, callee.root.shape)

    def fix_conditional(self, comp: Computation, inst: Instruction) -> None:
        for index, branch in enumerate(inst.called_computations()):
            self.convert_operand(comp, inst, index + 1, branch.parameters[0].shape)
            self.convert_root(branch, inst.shape)

    # -- edges inside one computation
    def fix_local(self, comp: Computation, inst: Instruction) -> None:
        if inst.opcode == Op.GET_TUPLE_ELEMENT:
            element = inst.operands[0].shape.tuple_shapes[inst.attrs["index"]]
            self.set_result_shape(comp, inst, element)
        elif inst.opcode == Op.TUPLE:
            for index, element in enumerate(inst.shape.tuple_shapes):
                self.convert_operand(comp, inst, index, element)
        elif inst.info.has(Trait.UPDATES_IN_PLACE) and not inst.shape.is_tuple:
            self.convert_operand(comp, inst, 0, inst.shape)

    # -- conversions
    def convert_operand(self, comp: Computation, inst: Instruction, index: int, shape: Shape) -> None:
        operand = inst.operands[index]
        if _differs_in_layout(operand.shape, shape):
            inst.replace_operand(index, self.convert(comp, operand, shape, before=inst))

    def convert_root(self, comp: Computation, shape: Shape) -> None:
        root = comp.root
        if _differs_in_layout(root.shape, shape):
            comp.root = self.convert(comp, root, shape, before=None)

    def set_result_shape(self, comp: Computation, inst: Instruction, shape: Shape) -> None:
        """Give `inst` the layout of its buffer; its users keep reading the layout it declared."""
        if not _differs_in_layout(inst.shape, shape):
            return
        declared = inst.shape
        users = list(inst.users)
        was_root = comp.root is inst
        inst.shape = shape
        after = _next_instruction(comp, inst)
        converted = self.convert(comp, inst, declared, before=after)
        for user in users:
            for k, op in enumerate(user.operands):
                if op is inst:
                    user.replace_operand(k, converted)
        if was_root:
            comp.root = converted

    def convert(self, comp: Computation, value: Instruction, shape: Shape,
                before: Optional[Instruction]) -> Instruction:
        """`value` with the layouts of `shape` (element by element for tuples)."""
        self.changed = True
        if not value.shape.is_tuple:
            return self.rewriter.add(comp, Op.COPY, shape, [value], before=before, name="copy", like=value)
        parts = []
        for index, (have, want) in enumerate(zip(value.shape.tuple_shapes, shape.tuple_shapes)):
            part = self.rewriter.add(comp, Op.GET_TUPLE_ELEMENT, have, [value], {"index": index}, before=before,
                                     name="get-tuple-element", like=value)
            parts.append(self.convert(comp, part, want, before) if _differs_in_layout(have, want) else part)
        return self.rewriter.add(comp, Op.TUPLE, shape, parts, before=before, name="tuple", like=value)


def _differs_in_layout(have: Shape, want: Shape) -> bool:
    """Same dimensions and types, different layouts somewhere (tokens and rank 0 never differ)."""
    if have.is_tuple:
        return want.is_tuple and any(_differs_in_layout(h, w) for h, w in zip(have.tuple_shapes, want.tuple_shapes))
    if not have.is_array or have.rank == 0 or want.is_tuple:
        return False
    return have.minor_to_major() != want.minor_to_major() and have.same_dims(want)


def _next_instruction(comp: Computation, inst: Instruction) -> Optional[Instruction]:
    index = comp.instructions.index(inst)
    return comp.instructions[index + 1] if index + 1 < len(comp.instructions) else None
