"""Placement and sharding annotations: the custom calls that are identities on one device.

XLA marks where data lives and how it is split with custom calls that compute nothing:
host offloading (`MoveToHost`, `MoveToDevice`, `annotate_device_placement`), GSPMD's
`Sharding`, `SPMDFullToShardShape` and `SPMDShardToFullShape`, and Shardy's
`xla.sdy.FuncResultSharding`, `xla.sdy.GlobalToLocalShape` and `xla.sdy.LocalToGlobalShape`.
The interpreter runs a module on devices that each hold whole values (a program split over
devices is partitioned first, which gives these their multi-device meaning), so each
returns its operand, as XLA:CPU's sharding remover and host offloader leave them on one
device. Memory spaces in layouts (`S(5)`, host memory) change nothing either.

A full-to-shard or shard-to-full conversion between different shapes is a program written
for several partitions: it is refused at the instruction rather than run wrong.
"""
from __future__ import annotations

from ..diagnostics import error
from .control import register_custom_call

IDENTITY_TARGETS = ("MoveToHost", "MoveToDevice", "annotate_device_placement", "Sharding",
                    "SPMDFullToShardShape", "SPMDShardToFullShape", "xla.sdy.FuncResultSharding",
                    "xla.sdy.GlobalToLocalShape", "xla.sdy.LocalToGlobalShape")


def run_identity_annotation(ev, inst, ops):
    """The operand itself, when the annotation keeps its shape (as it does on one device)."""
    target = inst.attrs["custom_call_target"]
    if len(ops) != 1:
        raise error(f"custom-call \"{target}\" takes exactly one operand, {len(ops)} given", inst.loc)
    source = inst.operands[0].shape
    if not source.without_layout().compatible(inst.shape.without_layout()):
        raise error(f"custom-call \"{target}\" changes the shape from {source.without_layout()} to "
                    f"{inst.shape.without_layout()}: on one device it is the identity, so the shapes must be "
                    "equal (a program written for several partitions must be run partitioned)", inst.loc)
    return ops[0]


for _target in IDENTITY_TARGETS:
    register_custom_call(_target, run_identity_annotation)
