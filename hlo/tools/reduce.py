"""hlo-reduce: shrink a module while a predicate still holds (delta debugging).

The reducer keeps the smallest interesting module found so far, as canonical text. Each
strategy proposes candidates, each a copy of that module changed in one way:

* root       the entry's root replaced by one of its operands, or a tuple root by a
             tuple of fewer elements;
* cut        chunks of instructions (halves, quarters, ... single ones) replaced, at every
             use, by a leaf of the same shape: a parameter in the entry (an existing one of
             that shape if any), a constant (a broadcast scalar for large shapes) elsewhere;
* bypass     chunks of instructions replaced by an operand of the same shape (this removes
             while loops, conversions, copies ...);
* inline     calls and fusions replaced by their computation's instructions, a conditional
             by its first branch, a while loop by one run of its body;
* operands   single operands replaced by leaves;
* constants  scalar constants (loop trip counts among them) made 0, 1 or halved, array
             constants made zeros;
* shapes     a dimension size made 1 or halved in every shape of the module.

After each change dead instructions, unused entry parameters and unreachable computations
go away. Cutting a loop's counter easily makes a loop that never ends, so unless the caller
set the predicate's timeout, a candidate may take at most ten times as long as the input
took (and never less than MIN_TIMEOUT seconds). A candidate is kept when it is smaller (instructions, then elements, then text),
passes the checker, and the predicate still holds; the checker always runs first, so the
predicate never sees an invalid module. Rounds of all strategies repeat until one changes
nothing. Everything is in a fixed order, so a deterministic predicate gives the same result
every time. Progress goes to the `log` callback (hlo-reduce prints it on stderr).
"""
from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

import numpy as np

from ..analysis.checker import check_module
from ..diagnostics import HloError
from ..ir import Computation, Instruction, Module, NameUniquer
from ..literal import Literal
from ..opcodes import Op, Trait
from ..passes.rewrite import inline_call
from ..shapes import Shape, format_shape
from ..text.parser import parse_module
from ..text.printer import format_module

Key = tuple[str, str]           # (computation name, instruction name)
SMALL_CONSTANT = 8              # leaves of at most this many elements are literal constants
MIN_TIMEOUT = 10.0              # seconds a candidate may always take


@dataclass
class Stats:
    candidates: int = 0         # proposed and smaller than the best
    rejected: int = 0           # refused by the checker
    interesting: int = 0        # accepted
    started: float = field(default_factory=time.monotonic)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started


class NotInteresting(Exception):
    """The input itself does not satisfy the predicate."""


def instruction_count(module: Module) -> int:
    return sum(len(c.instructions) for c in module.computations)


def _elements(shape: Optional[Shape]) -> int:
    if shape is None:
        return 0
    if shape.is_tuple:
        return sum(_elements(s) for s in shape.tuple_shapes)
    return shape.element_count() if shape.is_array else 0


def module_size(module: Module, text: str) -> tuple[int, int, int]:
    """What the reducer minimises: instructions, then array elements, then characters."""
    return instruction_count(module), sum(_elements(i.shape) for i in module.instructions()), len(text)


# --------------------------------------------------------------------------- editing helpers

class _Index:
    """Instructions of a module by (computation name, instruction name)."""

    def __init__(self, module: Module):
        self.module = module
        self.items = {(c.name, i.name): i for c in module.computations for i in c.instructions}

    def __call__(self, key) -> Optional[Instruction]:
        inst = self.items.get((key[0], key[1]))
        return inst if inst is not None and inst.parent is not None else None


def _remove(comp: Computation, inst: Instruction) -> None:
    for other in comp.instructions:
        if inst in other.control_predecessors:
            other.control_predecessors = [p for p in other.control_predecessors if p is not inst]
    inst.control_predecessors = []
    comp.remove(inst)


def _zero_literal(shape: Shape) -> Literal:
    return Literal.from_array(np.zeros(shape.dims, dtype=shape.element_type.dtype), shape)


class Leaves:
    """Stand-ins of a given shape: reused parameters, new parameters (entry), constants."""

    def __init__(self, module: Module):
        self.module = module
        self.names = NameUniquer.for_module(module)

    def _add_first(self, comp: Computation, inst: Instruction) -> Instruction:
        comp.add(inst, before=comp.instructions[0] if comp.instructions else None)
        return inst

    def leaf(self, comp: Computation, shape: Shape, avoid: Optional[Instruction] = None) -> Optional[Instruction]:
        printed = format_shape(shape)
        for p in comp.parameters:
            if p is not avoid and format_shape(p.shape) == printed:
                return p
        if comp is self.module.entry:
            number = len(comp.parameters)
            return self._add_first(comp, Instruction(self.names.unique(f"reduced.{number}"), Op.PARAMETER, shape,
                                                     attrs={"parameter_number": number}))
        return self.constant(comp, shape)

    def constant(self, comp: Computation, shape: Shape) -> Optional[Instruction]:
        if shape.is_token:
            return self._add_first(comp, Instruction(self.names.unique("reduced.token"), Op.AFTER_ALL, shape))
        if shape.is_tuple:
            parts = [self.constant(comp, s) for s in shape.tuple_shapes]
            if any(p is None for p in parts):
                return None
            tup = Instruction(self.names.unique("reduced.tuple"), Op.TUPLE, shape, parts)
            after = max(comp.instructions.index(p) for p in parts) + 1 if parts else 0
            comp.add(tup, before=comp.instructions[after] if after < len(comp.instructions) else None)
            return tup
        if not shape.is_array or shape.is_dynamic:
            return None
        if shape.element_count() <= SMALL_CONSTANT:
            return self._add_first(comp, Instruction(self.names.unique("reduced.constant"), Op.CONSTANT, shape,
                                                     attrs={"literal": _zero_literal(shape)}))
        scalar_shape = Shape.array(shape.element_type, ())
        scalar = Instruction(self.names.unique("reduced.constant"), Op.CONSTANT, scalar_shape,
                             attrs={"literal": _zero_literal(scalar_shape)})
        wide = Instruction(self.names.unique("reduced.broadcast"), Op.BROADCAST, shape, [scalar],
                           attrs={"dimensions": ()})
        self._add_first(comp, wide)
        self._add_first(comp, scalar)
        return wide


def cleanup(module: Module) -> None:
    """Drop dead instructions (side effects stay unless cut), unused entry parameters
    (renumbering the rest) and unreachable computations."""
    entry = module.entry
    for comp in module.computations:
        keep_params = comp is not entry
        live: set[int] = set()
        stack = [i for i in comp.instructions if i is comp.root or i.info.has(Trait.SIDE_EFFECT)
                 or (keep_params and i.opcode == Op.PARAMETER)]
        while stack:
            inst = stack.pop()
            if id(inst) in live:
                continue
            live.add(id(inst))
            stack.extend(inst.operands)
            stack.extend(inst.control_predecessors)
        if len(live) == len(comp.instructions):
            continue
        for inst in comp.instructions:
            if id(inst) not in live:
                for op in inst.operands:
                    if id(op) in live:
                        op.users.remove(inst)
                inst.operands, inst.users, inst.control_predecessors, inst.parent = [], [], [], None
        comp.instructions = [i for i in comp.instructions if id(i) in live]
    if entry is not None:
        for number, p in enumerate(entry.parameters):
            p.attrs["parameter_number"] = number
        module.remove_unreachable_computations()
    module.config.entry_computation_layout = None


# --------------------------------------------------------------------------- transformations

def cut(module: Module, keys: Iterable[Key]) -> bool:
    leaves = Leaves(module)
    find = _Index(module)
    changed = False
    for key in keys:
        inst = find(key)
        if inst is None:
            continue
        comp = inst.parent
        if inst.opcode == Op.PARAMETER and comp is not module.entry:
            continue
        sub = leaves.leaf(comp, inst.shape, avoid=inst) if (inst.users or inst is comp.root) else None
        if sub is None and (inst.users or inst is comp.root):
            continue
        if sub is not None:
            inst.replace_all_uses_with(sub)
        if inst is not comp.root and not inst.users:
            _remove(comp, inst)
        changed = True
    return changed


def bypass(module: Module, keys: Iterable[tuple[str, str, int]]) -> bool:
    """Replace each instruction by its operand number k (which has the instruction's shape)."""
    find = _Index(module)
    changed = False
    done: set[int] = set()
    for comp_name, name, k in keys:
        inst = find((comp_name, name))
        if inst is None or id(inst) in done or k >= len(inst.operands):
            continue
        op = inst.operands[k]
        if op.shape is None or inst.shape is None or format_shape(op.shape) != format_shape(inst.shape):
            continue
        inst.replace_all_uses_with(op)
        done.add(id(inst))
        changed = True
    return changed


def _inline_computation(inst: Instruction, callee: Computation, operands: list[Instruction],
                        names: NameUniquer) -> None:
    """Replace `inst` by copies of `callee`'s instructions applied to `operands`."""
    call = Instruction(names.unique(inst.name), Op.CALL, inst.shape, operands, {"to_apply": callee})
    inst.parent.add(call, before=inst)
    inst.replace_all_uses_with(call)
    inline_call(call, names)


def inline(module: Module, keys: Iterable[Key]) -> bool:
    names = NameUniquer.for_module(module)
    find = _Index(module)
    changed = False
    for key in keys:
        inst = find(key)
        if inst is None:
            continue
        if inst.opcode == Op.CALL:
            inline_call(inst, names)
        elif inst.opcode == Op.FUSION:
            _inline_computation(inst, inst.attrs["calls"], list(inst.operands), names)
        elif inst.opcode == Op.CONDITIONAL:
            branches = inst.attrs.get("branch_computations") or [inst.attrs.get("true_computation"),
                                                                 inst.attrs.get("false_computation")]
            _inline_computation(inst, branches[0], [inst.operands[1]], names)
        elif inst.opcode == Op.WHILE:
            _inline_computation(inst, inst.attrs["body"], [inst.operands[0]], names)
        else:
            continue
        changed = True
    return changed


def replace_operand(module: Module, keys: Iterable[tuple[str, str, int]]) -> bool:
    leaves = Leaves(module)
    find = _Index(module)
    changed = False
    for comp_name, name, index in keys:
        inst = find((comp_name, name))
        if inst is None or index >= len(inst.operands):
            continue
        old = inst.operands[index]
        if old.opcode == Op.PARAMETER or old.opcode == Op.CONSTANT:
            continue
        sub = leaves.leaf(inst.parent, old.shape, avoid=old)
        if sub is None or sub is old:
            continue
        inst.replace_operand(index, sub)
        changed = True
    return changed


def set_root(module: Module, name: str) -> bool:
    """Make the entry instruction `name` the entry's root."""
    new = _Index(module)((module.entry.name, name))
    if new is None or new is module.entry.root:
        return False
    module.entry.root = new
    return True


def keep_tuple_elements(module: Module, keep: list[int]) -> bool:
    root = module.entry.root
    if root.opcode != Op.TUPLE or len(keep) >= len(root.operands):
        return False
    operands = [root.operands[i] for i in keep]
    names = NameUniquer.for_module(module)
    new = Instruction(names.unique(root.name), Op.TUPLE, Shape.tuple_of(o.shape for o in operands), operands)
    module.entry.add(new)
    module.entry.root = new
    if not root.users:
        _remove(module.entry, root)
    return True


def set_constant(module: Module, key: Key, value) -> bool:
    inst = _Index(module)(key)
    if inst is None:
        return False
    shape = inst.shape
    if value is None:
        inst.attrs["literal"] = _zero_literal(shape)
    else:
        inst.attrs["literal"] = Literal.from_array(np.full(shape.dims, value, dtype=shape.element_type.dtype), shape)
    return True


_SHAPE_DIMS = re.compile(r"\b((?:pred|[subfc]\d+|bf16|f\d+e\w+)\[)([^\]]*)(\])")


def shrink_dimension(text: str, size: int, new: int) -> str:
    """`text` with every dimension of size `size` in a shape made `new`."""
    def dims(m: re.Match) -> str:
        parts = [str(new) if p.strip() == str(size) else p for p in m.group(2).split(",")]
        return m.group(1) + ",".join(parts) + m.group(3)
    return _SHAPE_DIMS.sub(dims, text)


# --------------------------------------------------------------------------- the reducer

class Reducer:
    def __init__(self, text: str, predicate: Callable[[str], bool], log: Callable[[str], None] = lambda s: None,
                 filename: str = "<input>", max_rounds: int = 20):
        self.predicate = predicate
        self.log = log
        self.filename = filename
        self.max_rounds = max_rounds
        self.stats = Stats()
        module = parse_module(text, filename)
        check_module(module)
        cleanup(module)
        self.best_text = format_module(module)
        self.best_size = module_size(module, self.best_text)
        self.original_size = self.best_size
        self._seen: set[bytes] = set()

    # -- candidates
    def _parse_best(self) -> Module:
        return parse_module(self.best_text, self.filename)

    def attempt(self, what: str, transform: Callable[[Module], bool]) -> bool:
        """Apply `transform` to a copy of the best module; keep it if it is smaller, valid and interesting."""
        module = self._parse_best()
        try:
            if not transform(module):
                return False
            cleanup(module)
            text = format_module(module)
        except (HloError, ValueError, KeyError, IndexError, AssertionError, AttributeError, TypeError):
            return False          # a change that cannot be made to this module
        return self._consider(what, module, text)

    def attempt_text(self, what: str, text: str) -> bool:
        try:
            module = parse_module(text, self.filename)
            cleanup(module)
            text = format_module(module)
        except (HloError, ValueError, KeyError, IndexError):
            self.stats.rejected += 1
            return False
        return self._consider(what, module, text)

    def _consider(self, what: str, module: Module, text: str) -> bool:
        digest = hashlib.sha256(text.encode()).digest()
        if digest in self._seen:
            return False
        self._seen.add(digest)
        size = module_size(module, text)
        if size >= self.best_size:
            return False
        self.stats.candidates += 1
        try:
            check_module(parse_module(text, "<candidate>"))
        except HloError:
            self.stats.rejected += 1
            return False
        if not self.predicate(text):
            return False
        self.stats.interesting += 1
        self.best_text, self.best_size = text, size
        self.log(f"{size[0]} instructions ({what}) after {self.stats.candidates} candidates, "
                 f"{self.stats.seconds:.1f}s")
        return True

    # -- strategies
    def _chunked(self, what: str, select: Callable[[Module, Instruction], bool],
                 apply: Callable[[Module, list[Key]], bool]) -> bool:
        return self._chunked_keys(what, lambda m: [(c.name, i.name) for c in m.computations for i in c.instructions
                                                   if select(m, i)], apply)

    def _chunked_keys(self, what: str, keys_of: Callable[[Module], list], apply: Callable[[Module, list], bool]) -> bool:
        """Greedy delta debugging: chunks of half the keys, then quarters, ... then single keys."""
        progress = False
        keys = keys_of(self._parse_best())
        size = max(1, len(keys) // 2)
        while keys:
            start = 0
            while start < len(keys):
                chunk = keys[start:start + size]
                if self.attempt(f"{what} {len(chunk)}", lambda m, c=chunk: apply(m, c)):
                    progress = True
                    keys = keys_of(self._parse_best())
                else:
                    start += size
            if size == 1:
                break
            size = max(1, size // 2)
        return progress

    def reduce_root(self) -> bool:
        """Walk the entry's root down: along the spine (the operand with the largest cone) by
        binary search, since the cones along it are nested; then into other operands."""
        progress = False
        while True:
            module = self._parse_best()
            root = module.entry.root
            if root.opcode == Op.TUPLE and len(root.operands) > 1:
                n = len(root.operands)
                if any(self.attempt(f"root: keep {len(part)} of {n} tuple elements",
                                    lambda m, p=part: keep_tuple_elements(m, p)) for part in _halves(n)):
                    progress = True
                    continue
            spine = _spine(root)
            lo, hi = 0, len(spine) - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self.attempt(f"root: {mid} down the spine", lambda m, name=spine[mid]: set_root(m, name)):
                    spine, hi, lo = spine[mid:], hi - mid, 0
                    progress = True
                else:
                    hi = mid - 1
            module = self._parse_best()
            others = [op.name for op in module.entry.root.operands if op.opcode != Op.PARAMETER]
            if not any(self.attempt(f"root: operand %{name}", lambda m, n=name: set_root(m, n)) for name in others):
                return progress
            progress = True

    def reduce_cut(self) -> bool:
        def keys(m: Module) -> list[Key]:
            control = _loop_control(m)
            return [(c.name, i.name) for c in m.computations for i in c.instructions
                    if (i.opcode != Op.PARAMETER or c is m.entry) and not control(i)]
        return self._chunked_keys("cut", keys, cut)

    def reduce_bypass(self) -> bool:
        def keys(m: Module) -> list[tuple[str, str, int]]:
            control = _loop_control(m)
            return [(c.name, i.name, k) for c in m.computations for i in c.instructions if not control(i)
                    for k, op in enumerate(i.operands)
                    if op.shape is not None and i.shape is not None and format_shape(op.shape) == format_shape(i.shape)]
        return self._chunked_keys("bypass", keys, bypass)

    def reduce_inline(self) -> bool:
        def select(m, i):
            return i.info.has(Trait.RUNS_COMPUTATIONS_AS_CODE) or i.opcode == Op.FUSION
        return self._chunked("inline", select, inline)

    def reduce_operands(self) -> bool:
        progress = False
        module = self._parse_best()
        control = _loop_control(module)
        edges = [(c.name, i.name, k) for c in module.computations for i in c.instructions
                 for k, op in enumerate(i.operands) if op.opcode != Op.PARAMETER and op.opcode != Op.CONSTANT
                 and not control(op, as_operand=True) and not control(i, as_operand=True)]
        for edge in edges:
            progress |= self.attempt(f"operand {edge[2]} of %{edge[1]}", lambda m, e=edge: replace_operand(m, [e]))
        return progress

    def reduce_constants(self) -> bool:
        progress = False
        module = self._parse_best()
        for comp in module.computations:
            for inst in comp.instructions:
                if inst.opcode != Op.CONSTANT or inst.shape.is_tuple or not inst.shape.is_array:
                    continue
                key = (comp.name, inst.name)
                array = inst.literal.array if not inst.literal.elided else None
                if array is None:
                    continue
                if array.ndim > 0:
                    progress |= self.attempt(f"constant %{inst.name} zeros", lambda m, k=key: set_constant(m, k, None))
                    continue
                for value in _smaller_values(array, inst.shape):
                    if self.attempt(f"constant %{inst.name} = {value}", lambda m, k=key, v=value: set_constant(m, k, v)):
                        progress = True
                        break
        return progress

    def reduce_shapes(self) -> bool:
        progress = False
        sizes = sorted({int(d) for m in _SHAPE_DIMS.finditer(self.best_text) for d in m.group(2).split(",")
                        if d.strip().isdigit() and int(d) > 1}, reverse=True)
        for size in sizes:
            for new in (1, size // 2):
                if new >= 1 and new < size and self.attempt_text(f"dimensions {size} -> {new}",
                                                                 shrink_dimension(self.best_text, size, new)):
                    progress = True
                    break
        return progress

    STRATEGIES = ("root", "cut", "bypass", "inline", "operands", "constants", "shapes")

    def run(self) -> str:
        """The smallest interesting module found (NotInteresting if the input is not)."""
        self.log(f"input: {self.best_size[0]} instructions")
        start = time.monotonic()
        if not self.predicate(self.best_text):
            raise NotInteresting(self.best_text)
        if getattr(self.predicate, "timeout", 0) is None:
            self.predicate.timeout = max(MIN_TIMEOUT, 10 * (time.monotonic() - start))
            self.log(f"the input took {time.monotonic() - start:.1f}s: a candidate may take "
                     f"{self.predicate.timeout:.0f}s")
        for round_number in range(1, self.max_rounds + 1):
            before = self.best_size
            for name in self.STRATEGIES:
                getattr(self, f"reduce_{name}")()
            self.log(f"round {round_number}: {self.best_size[0]} instructions")
            if self.best_size == before:
                break
        s = self.stats
        self.log(f"done: {self.original_size[0]} -> {self.best_size[0]} instructions; {s.candidates} candidates, "
                 f"{s.rejected} rejected by the checker, {s.interesting} kept, {s.seconds:.1f}s")
        return self.best_text


def _loop_control(module: Module) -> Callable[[Instruction], bool]:
    """Whether an instruction probably steers a while loop: anything in a loop condition, the
    root or an integer scalar of a loop body. Replacing those by constants mostly makes loops that never
    end (each such candidate costs a timeout), so cuts leave them to the constants and inline
    strategies, which shorten or remove loops."""
    conditions, bodies = set(), set()
    for inst in module.instructions():
        if inst.opcode == Op.WHILE:
            conditions.add(id(inst.attrs["condition"]))
            bodies.add(id(inst.attrs["body"]))

    def control(inst: Instruction, as_operand: bool = False) -> bool:
        comp = id(inst.parent)
        if comp in conditions or (comp in bodies and inst is inst.parent.root and not as_operand):
            return True
        shape = inst.shape
        return comp in bodies and shape is not None and shape.is_array and shape.rank == 0 and \
            shape.element_type.is_integral
    return control


def _spine(root: Instruction) -> list[str]:
    """Names down from `root`, each time into the operand with the largest cone (cones as bit sets)."""
    bits: dict[int, int] = {}
    for n, inst in enumerate(root.parent.post_order()):
        b = 1 << n
        for op in inst.operands:
            b |= bits.get(id(op), 0)
        bits[id(inst)] = b
    names, inst = [root.name], root
    while inst.operands:
        inst = max(inst.operands, key=lambda op: bits.get(id(op), 0).bit_count())
        if inst.opcode == Op.PARAMETER:
            break
        names.append(inst.name)
    return names


def _halves(n: int) -> list[list[int]]:
    """Subsets of range(n) to try keeping: halves, then quarters ... (ddmin's complements first)."""
    out, size = [], n // 2
    while size >= 1:
        for start in range(0, n, size):
            part = list(range(start, min(n, start + size)))
            if len(part) < n and part not in out:
                out.append(part)
        size //= 2
    return out


def _smaller_values(array: np.ndarray, shape: Shape) -> list:
    t = shape.element_type
    value = array.item()
    if t.is_pred:
        return [False] if value else []
    if t.is_complex:
        return [0] if value != 0 else []
    try:
        if np.isnan(value) or np.isinf(value):
            return [0]
    except TypeError:
        pass
    out = []
    for v in (0, 1, int(value / 2) if not t.is_float else None):
        if v is not None and abs(v) < abs(value) and v not in out:
            out.append(v)
    return out
