"""sharding-remover: drop the annotations that are identities on one device.

XLA:CPU compiling for a single partition removes GSPMD's `Sharding`, `SPMDFullToShardShape`
and `SPMDShardToFullShape` custom calls (its ShardingRemover) and resolves host-offloading
annotations (`MoveToHost`, `MoveToDevice`, `annotate_device_placement`) to nothing, since a
CPU's host memory is its memory. This pass replaces each of these (the interpreter's list,
hlo/interpreter/placement.py, Shardy's boundaries included) by its operand when the module
runs on one partition and the annotation keeps the shape.
"""
from __future__ import annotations

from ..interpreter.placement import IDENTITY_TARGETS
from ..ir import Module
from ..opcodes import Op
from .base import Pass, register
from .rewrite import replace, unfused_instructions


def _is_identity_annotation(inst) -> bool:
    return (inst.opcode == Op.CUSTOM_CALL and inst.attrs.get("custom_call_target") in IDENTITY_TARGETS
            and len(inst.operands) == 1 and not inst.control_predecessors
            and inst.operands[0].shape.without_layout().compatible(inst.shape.without_layout()))


@register
class ShardingRemover(Pass):
    name = "sharding-remover"
    description = "On one partition, replace sharding and host-placement annotations by their operand."

    def run(self, module: Module) -> bool:
        if module.config.num_partitions > 1:
            return False
        found = unfused_instructions(module, _is_identity_annotation)
        for inst in found:
            replace(inst, inst.operands[0])
        return bool(found)
