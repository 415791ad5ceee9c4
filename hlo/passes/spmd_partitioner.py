"""spmd-partitioner: one program for every device, from a global program with shardings.

`partition(module, num_devices)` runs sharding-propagation (unless told not to), then walks
the entry computation in post order and, for each instruction, emits its per-device
version (local shapes, `partition-id`-dependent offsets, collectives where data must
move) through the per-opcode rules of RULES (the rules live in spmd_rules.py). An opcode
without a rule, or a case a rule does not cover, takes the fallback: its operands are
gathered whole, it is computed whole on every device, and its users take their blocks
(docs/SPMD.md lists when this happens). The result is parsed and checked like any module;
its entry parameters and root carry the shardings the runner (hlo.spmd_run) splits the
global inputs by and assembles the global outputs from.
"""
from __future__ import annotations

import math
from typing import Optional

from ..analysis.checker import check_module
from ..ir import Module
from ..sharding import module_meshes, sharding_of
from ..shapes import Shape
from ..text.parser import parse_module
from ..text.printer import format_computation
from . import spmd_rules  # noqa: F401  (registers the rules)
from . import spmd_shardings as SS
from .base import Pass, register
from .sharding_propagation import is_sharded, propagate
from .spmd_context import RULES, Context

def device_count(module: Module) -> int:
    """From num_partitions, the Shardy mesh, or the largest device id in a sharding."""
    if module.config.num_partitions > 1:
        return module.config.num_partitions
    meshes = module_meshes(module)
    if meshes:
        return max(m.size for m in meshes.values())
    best = 1
    for inst in module.instructions():
        s = sharding_of(inst)
        for leaf in (s.leaves() if s is not None else []):
            if leaf.devices:
                best = max(best, max(leaf.devices) + 1)
            if leaf.kind == "maximal":
                best = max(best, leaf.device + 1)
    return best


def partition(module: Module, num_devices: Optional[int] = None, propagated: bool = False) -> tuple[Module, Context]:
    """The per-device module (a new Module) and the partitioning context (fallbacks taken)."""
    if not propagated:
        propagate(module)
    n = num_devices or device_count(module)
    ctx = Context(module, n)
    entry = module.entry
    for inst in entry.post_order():
        rule = RULES.get(inst.opcode)
        result = None
        if rule is not None:
            result = rule(ctx, inst)
        if result is None:
            result = ctx.fallback(inst)
        ctx.env[id(inst)] = result
    root = entry.root
    target = SS.read(root)
    out = ctx.to_local(ctx.env[id(root)], target, root.shape)
    # the root must be an instruction of its own when it is a parameter
    ctx.e.root(out)
    text = _module_text(module, ctx, target)
    new = parse_module(text, f"{module.name}.spmd")
    check_module(new)
    return new, ctx


def _module_text(module: Module, ctx: Context, root_sharding) -> str:
    out = [f"HloModule {module.name}_spmd, num_partitions={ctx.n}", ""]
    for comp in module.computations:
        if comp is module.entry:
            continue
        out.append(format_computation(comp))
        out.append("")
    out.extend(ctx.text.extra)
    lines = list(ctx.e.lines)
    root_name = ctx.e.root_name
    flat = SS.flat(root_sharding, module.entry.root.shape) if root_sharding is not None else None
    for i, line in enumerate(lines):
        if line.startswith(f"%{root_name} = "):
            lines[i] = "ROOT " + line + (f", sharding={flat}" if flat is not None else "")
            break
    else:
        raise AssertionError("root not emitted")
    out.append(f"ENTRY %{module.entry.name}.spmd {{")
    out.extend("  " + line for line in lines)
    out.append("}")
    return "\n".join(out) + "\n"


@register
class SpmdPartitioner(Pass):
    name = "spmd-partitioner"
    description = ("Turn a global program with shardings into the program every device runs "
                   "(local shapes, collectives; docs/SPMD.md)")

    def run(self, module: Module) -> bool:
        if not is_sharded(module):
            return False
        new, _ = partition(module)
        module.name = new.name
        module.computations = []
        for comp in new.computations:
            module.add_computation(comp)
        module.entry = new.entry
        module.config = new.config
        return True


def bytes_of(shape: Shape) -> int:
    return math.prod(shape.dims) * max(1, shape.element_type.bits // 8)
