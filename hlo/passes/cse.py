"""cse: merge instructions that compute the same value from the same operands."""
from __future__ import annotations

from ..analysis.effects import has_side_effect
from ..ir import CALLING_OPCODES, Computation, Instruction, Module
from ..literal import Literal
from ..opcodes import Op, Trait, ops_with
from ..shape_inference import ShapeTokens
from .base import Pass, register

_ASYNC_WRAPPERS = ops_with(Trait.ASYNC_WRAPPER)


@register
class CommonSubexpressionElimination(Pass):
    name = "cse"
    description = "Replace an instruction by an earlier identical one (same opcode, shape, operands, attributes)."

    incremental = True

    def run(self, module: Module) -> bool:
        fingerprints: dict[int, tuple] = {}
        keys = self.tracker.instruction_marks(self.name) if self.tracker is not None else {}
        shapes = keys.setdefault(ShapeTokens, ShapeTokens())  # the tokens in the keys kept
        return self.each_computation(list(module.computations),
                                     lambda comp: merge_duplicates(comp, fingerprints, shapes, keys))


def merge_duplicates(comp: Computation, fingerprints: dict | None = None, shapes: ShapeTokens | None = None,
                     keys: dict | None = None) -> bool:
    """Merge identical instructions of `comp`; called computations compare by content.

    keys: {instruction: (its `edited`, its key)} from earlier runs, reused while the instruction
    was not edited (the key of one calling computations is computed each time)."""
    fingerprints = {} if fingerprints is None else fingerprints
    shapes = ShapeTokens() if shapes is None else shapes
    keys = {} if keys is None else keys
    changed = False
    seen: dict[tuple, Instruction] = {}
    for inst in list(comp.instructions):
        # Two random-bit generators are never merged (rng and rng-get-and-update-state have side effects).
        if inst.opcode == Op.PARAMETER or has_side_effect(inst) or inst.opcode == Op.RNG_BIT_GENERATOR:
            continue
        if inst.opcode in _ASYNC_WRAPPERS:  # its done names the computation its start runs: keep both
            continue
        known = keys.get(inst)
        if known is not None and known[0] == inst.edited:
            key = known[1]
        else:
            key = _key(inst, fingerprints, shapes)
            if inst.opcode not in CALLING_OPCODES:
                keys[inst] = (inst.edited, key)
        if key is None:
            continue
        earlier = seen.get(key)
        if earlier is None:
            seen[key] = inst
            continue
        inst.replace_all_uses_with(earlier)
        if not inst.users and inst is not comp.root:
            comp.remove(inst)
        changed = True
    return changed


def _key(inst: Instruction, fingerprints: dict, shapes: ShapeTokens):
    try:
        attrs = attributes_key(inst, fingerprints)
        # backend_config carries a custom call's options (a LAPACK call's uplo, trans ...)
        key = (inst.opcode, shapes(inst.shape), tuple(map(id, inst.operands)), attrs, inst.backend_config)
        hash(key)
        return key
    except TypeError:  # an attribute value we cannot compare safely: leave it alone
        return None


def attributes_key(inst: Instruction, fingerprints: dict) -> tuple:
    """The attributes of `inst` as a hashable value (constants by their bytes, called computations by
    their fingerprints); TypeError for a value that cannot be compared safely."""
    return tuple(sorted((k, _hashable(v, fingerprints)) for k, v in inst.attrs.items())) if inst.attrs else ()


def _hashable(value, fingerprints: dict):
    if isinstance(value, Literal):
        if value.elided:
            raise TypeError("elided constants are never equal")
        if value.is_tuple:
            return tuple(_hashable(e, fingerprints) for e in value.elements)
        return (str(value.shape), value.array.dtype.str, value.array.tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v, fingerprints) for v in value)
    if isinstance(value, Computation):
        return computation_fingerprint(value, fingerprints)
    return value


def computation_fingerprint(comp: Computation, memo: dict) -> tuple:
    """A value equal for computations that compute the same thing in the same way.

    Instructions are identified by position, so two reducers `add(a, b)` written in
    different computations with different names have equal fingerprints.
    """
    if id(comp) in memo:
        return memo[id(comp)]
    position = {id(inst): i for i, inst in enumerate(comp.instructions)}
    parts = []
    for inst in comp.instructions:
        if has_side_effect(inst):
            memo[id(comp)] = ("unique", id(comp))
            return memo[id(comp)]
        attrs = tuple(sorted((k, _hashable(v, memo)) for k, v in inst.attrs.items()))
        parts.append((inst.opcode, inst.shape, tuple(position[id(op)] for op in inst.operands), attrs,
                      inst.backend_config, inst is comp.root))
    memo[id(comp)] = ("computation", comp.execution_thread, tuple(parts))
    return memo[id(comp)]
