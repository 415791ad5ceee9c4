"""cse: merge instructions that compute the same value from the same operands."""
from __future__ import annotations

from typing import Callable

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
        numbers = keys.setdefault(KeyNumbers, KeyNumbers())   # and the numbers of the keys
        last_edit = self.tracker.last_edit if self.tracker is not None else None
        return self.each_computation(list(module.computations),
                                     lambda comp: merge_duplicates(comp, fingerprints, shapes, keys, numbers,
                                                                   last_edit))


class KeyNumbers(dict):
    """{key: a small number}: equal keys get one number, so that a key kept from an earlier run is
    compared by its number (hashing a key hashes every attribute value in it, each time)."""

    def number(self, key: tuple) -> int:
        return self.setdefault(key, len(self))


def merge_duplicates(comp: Computation, fingerprints: dict | None = None, shapes: ShapeTokens | None = None,
                     keys: dict | None = None, numbers: KeyNumbers | None = None,
                     last_edit: Callable[[Computation], int] | None = None) -> bool:
    """Merge identical instructions of `comp`; called computations compare by content.

    keys: {instruction: (when it was last edited, the number of its key or None)} from earlier
    runs, reused while the instruction was not edited. An instruction calling computations is
    edited when they are too: `last_edit` (ChangeTracker.last_edit) tells; without it, the key
    of such an instruction is computed each time."""
    fingerprints = {} if fingerprints is None else fingerprints
    shapes = ShapeTokens() if shapes is None else shapes
    keys = {} if keys is None else keys
    numbers = KeyNumbers() if numbers is None else numbers
    changed = False
    seen: dict[int, Instruction] = {}
    for inst in list(comp.instructions):
        edited = inst.edited
        if inst.opcode in CALLING_OPCODES:
            edited = max([edited, *map(last_edit, inst.called_computations())]) if last_edit is not None else None
        known = keys.get(inst)
        if known is not None and known[0] == edited:
            key = known[1]
        else:
            key = _key_number(inst, fingerprints, shapes, numbers)
            if edited is not None:
                keys[inst] = (edited, key)
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


def _key_number(inst: Instruction, fingerprints: dict, shapes: ShapeTokens, numbers: KeyNumbers):
    """The number of the key of `inst`, or None for an instruction never merged."""
    # Two random-bit generators are never merged (rng and rng-get-and-update-state have side effects).
    if inst.opcode == Op.PARAMETER or has_side_effect(inst) or inst.opcode == Op.RNG_BIT_GENERATOR:
        return None
    if inst.opcode in _ASYNC_WRAPPERS:  # its done names the computation its start runs: keep both
        return None
    try:
        attrs = attributes_key(inst, fingerprints)
        # backend_config carries a custom call's options (a LAPACK call's uplo, trans ...)
        key = (inst.opcode, shapes(inst.shape), tuple(map(id, inst.operands)), attrs, inst.backend_config)
        return numbers.number(key)
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
