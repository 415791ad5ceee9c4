"""fusion: producer-consumer instruction fusion into `fusion` instructions.

Modelled on XLA's InstructionFusion as XLA:CPU configures it (CpuInstructionFusion):
in every computation that runs as code (the entry and what call / while /
conditional run; not scalar reducers nor comparators), consumers are visited in
reverse post order and each of their operands, latest first, is offered as a
producer. Fusing a producer into a consumer clones it into the consumer's fused
computation (`fused_computation.N`, parameters `param_N`); when nobody else uses
the producer any more it disappears, otherwise it is duplicated, which is allowed
only for cheap producers. A producer that is itself a fusion is merged: its fused
computation is inlined into the consumer's.

What may be fused (XLA:CPU's CanBeLoopFused plus output/reduce-window fusion):
elementwise ops, broadcast, reshape, bitcast, transpose, reverse, slice, pad,
concatenate, iota, dynamic-slice, dynamic-update-slice, gather and reduce fuse
into loop fusions; effectively-scalar constants fuse into existing fusions; a
dot or convolution with a single use fuses into its elementwise consumer (bias
add, activation); reduce-window takes elementwise producers. Never fused:
parameters, tuples and get-tuple-element, control flow, side effects (rng, infeed,
send ...), collectives, custom-calls, sort, scatter, FFT and linear algebra.

Rules against duplicating work (XLA's ShouldFuse and ComputeGloballyUnfusible):
* an expensive producer (transcendental, float divide, power, dot, reduce, ...)
  is never duplicated into several consumers, and never fused into a consumer
  that reads its elements more than once (broadcast, dot, reduce-window, gather);
* a producer reading more data than it writes (add(a, b) of same-size arrays) is
  fused only if it has one user and that user can take it (with several users it is
  written once: duplicated, it would carry everything fused into it into every user,
  e.g. a residual stream recomputed from the first block in every later one);
* nothing is fused across the computation's root.

Kinds: kOutput when the fusion contains a dot or convolution, kInput when it
contains a reduce or reduce-window (a reduction fusion), kLoop otherwise.
"""
from __future__ import annotations

from typing import Optional

from ..ir import Computation, Instruction, Module, NameUniquer
from ..opcodes import OPCODES, Op, Trait, has_trait
from .analysis import reachable_computations
from .base import Pass, register

# Which ops fuse, are heroes, are cheap or expensive: the table's traits (LOOP_FUSIBLE,
# OUTPUT_FUSION_HERO, REDUCTION_FUSION_HERO, CHEAP, EXPENSIVE, EXPENSIVE_IF_COMPLEX, DIVISION,
# READS_OPERAND_ELEMENTS_REPEATEDLY, RUNS_COMPUTATIONS_AS_CODE).
MAX_REDUCTIONS_IN_FUSION = 5     # XLA:CPU's kMaxReductionsInFusion
MAX_CONCATENATE_OPERANDS = 8     # XLA:CPU's kMaxConcatenateArguments
FUSIBLE_KINDS = ("kLoop", "kInput", "kOutput")


@register
class InstructionFusion(Pass):
    name = "fusion"
    description = ("Fuse producers into consumers (loop, reduction and dot/convolution output fusions) "
                   "without duplicating expensive work.")

    def run(self, module: Module) -> bool:
        if module.entry is None:
            return False
        names = NameUniquer.for_module(module)
        changed = False
        for comp in computations_to_fuse(module):
            changed |= ComputationFuser(module, comp, names).run()
        if changed:  # merged bodies may call reducers defined after them: callees go first
            module.computations = module.callees_first()
        return changed


def computations_to_fuse(module: Module) -> list[Computation]:
    """The entry and every computation run through call / while / conditional from it."""
    return reachable_computations([module.entry],
                                  lambda inst: has_trait(inst.opcode, Trait.RUNS_COMPUTATIONS_AS_CODE))


# --------------------------------------------------------------------------- instruction facts

def fused_body(inst: Instruction) -> Computation:
    return inst.attrs["calls"]


def fused_instructions(inst: Instruction) -> list[Instruction]:
    """The instructions a (fusion) instruction stands for."""
    if inst.opcode == Op.FUSION:
        return [i for i in fused_body(inst).instructions if i.opcode != Op.PARAMETER]
    return [inst]


def is_effective_scalar(inst: Instruction) -> bool:
    return not inst.shape.is_tuple and inst.shape.element_count() == 1


def is_loop_fusible(inst: Instruction) -> bool:
    info = OPCODES.get(inst.opcode)
    if info is None or info.side_effect:
        return False
    return info.is_elementwise or info.has(Trait.LOOP_FUSIBLE)


def is_expensive(inst: Instruction) -> bool:
    """XLA:CPU's cost model: work we would rather not do twice."""
    if inst.opcode == Op.FUSION:
        return any(is_expensive(i) for i in fused_instructions(inst))
    info = OPCODES.get(inst.opcode)
    if info is None:
        return True
    if info.has(Trait.EXPENSIVE_IF_COMPLEX):
        return inst.shape.element_type.is_complex
    if info.has(Trait.DIVISION):
        return not inst.shape.element_type.is_integral or not _is_constant_scalar_like(inst.operands[1])
    if inst.opcode == Op.CONVERT:
        return inst.shape.element_type.name == "bf16" and inst.operands[0].shape.element_type.name == "f32"
    if info.is_elementwise:
        return info.transcendental or info.has(Trait.EXPENSIVE) or info.side_effect
    return not info.has(Trait.CHEAP)


def _is_constant_scalar_like(inst: Instruction) -> bool:
    if inst.opcode == Op.BROADCAST:
        inst = inst.operands[0]
    return inst.opcode == Op.CONSTANT and is_effective_scalar(inst)


def is_always_duplicable(inst: Instruction) -> bool:
    """Broadcasts and widening converts only get cheaper when fused into every user."""
    if inst.opcode == Op.BROADCAST:
        return True
    return inst.opcode == Op.CONVERT and inst.operands[0].shape.byte_size() < inst.shape.byte_size()


def op_reuses_operand(inst: Instruction, index: int) -> bool:
    """Whether `inst` reads elements of operand `index` more than once."""
    operand = inst.operands[index]
    if inst.opcode == Op.BROADCAST:
        return inst.shape.element_count() > operand.shape.element_count()
    if has_trait(inst.opcode, Trait.READS_OPERAND_ELEMENTS_REPEATEDLY):
        return True
    if inst.opcode == Op.GATHER:
        return index == 0
    return False


def reuses_operand_elements(consumer: Instruction, index: int) -> bool:
    if consumer.opcode != Op.FUSION:
        return op_reuses_operand(consumer, index)
    param = _parameter(fused_body(consumer), index)
    return _read_at(param, {}) is REUSED


REUSED = "reused"


def _read_at(value: Instruction, memo: dict[int, object]):
    """Where each output element of the fusion reads `value`: a tuple naming the
    non-elementwise ops and operand slots on the way to the root (() = at the same
    index; None = not read), or REUSED when elements are read more than once: through
    a reusing op (broadcast, dot ...), or along paths that index them differently.
    Several elementwise uses of one element are free: it is computed once per output
    element (XLA's elemental emitter caches it)."""
    if id(value) in memo:
        return memo[id(value)]
    body = value.parent
    reads = {()} if body is not None and value is body.root else set()
    for user in value.users:
        downstream = _read_at(user, memo)
        if downstream is None:
            continue
        for j, op in enumerate(user.operands):
            if op is not value:
                continue
            if downstream is REUSED or op_reuses_operand(user, j):
                reads.add(REUSED)
            elif user.info.is_elementwise:
                reads.add(downstream)
            else:
                reads.add(downstream + ((id(user), j),))
    result = None if not reads else next(iter(reads)) if len(reads) == 1 else REUSED
    memo[id(value)] = result
    return result


def _parameter(body: Computation, number: int) -> Instruction:
    for inst in body.instructions:
        if inst.opcode == Op.PARAMETER and inst.attrs["parameter_number"] == number:
            return inst
    raise KeyError(number)


def _count(insts, trait: Trait) -> int:
    return sum(1 for i in insts if has_trait(i.opcode, trait))


def fusion_kind(body: Computation) -> str:
    if _count(body.instructions, Trait.OUTPUT_FUSION_HERO):
        return "kOutput"
    if _count(body.instructions, Trait.REDUCTION_FUSION_HERO):
        return "kInput"
    return "kLoop"


def effectively_at_most_unary(inst: Instruction) -> bool:
    """At most one operand is as large as the result (broadcasts, iotas, scalar constants are free)."""
    rank = max((len([d for d in s.dims if d != 1]) for _, s in inst.shape.leaves() if s.is_array), default=0)
    big = 0
    for op in inst.operands:
        free = op.opcode == Op.BROADCAST or op.opcode == Op.IOTA
        if free or (op.opcode == Op.CONSTANT and is_effective_scalar(op)):
            continue
        if not op.shape.is_tuple and len([d for d in op.shape.dims if d != 1]) >= rank:
            big += 1
    return big <= 1


def _elements(shape) -> int:
    return sum(s.element_count() for _, s in shape.leaves() if s.is_array)


def _fits_an_epilogue(inst: Instruction) -> bool:
    """A scalar constant or a loop-fusible op computing one output element from one position
    (not a gather or a reduce)."""
    if inst.opcode == Op.CONSTANT:
        return True
    return is_loop_fusible(inst) and inst.opcode != Op.GATHER and inst.opcode != Op.REDUCE


# --------------------------------------------------------------------------- the fuser

class ComputationFuser:
    """Fuses one computation, XLA style: a reverse-post-order queue of consumers."""

    def __init__(self, module: Module, comp: Computation, names: NameUniquer):
        self.module = module
        self.comp = comp
        self.names = names
        self.queue: list[Optional[Instruction]] = []
        self.position: dict[int, int] = {}
        self.bodies: list[Computation] = []
        self.pinned = {id(i) for i in comp.instructions if i.control_predecessors}
        self.pinned |= {id(p) for i in comp.instructions for p in i.control_predecessors}

    def run(self) -> bool:
        order = self.comp.post_order()
        for inst in order:
            self._enqueue(inst)
        do_not_duplicate = self._globally_unfusible(order)
        changed = False
        while self.queue:
            consumer = self.queue.pop()
            if consumer is None or self.position.pop(id(consumer), None) is None:
                continue
            if not self._can_consume(consumer):
                continue
            for index in self._operands_in_queue_order(consumer):
                producer = consumer.operands[index]
                if id(producer) in do_not_duplicate or not self.should_fuse(consumer, index):
                    continue
                fusion = self.fuse(producer, consumer)
                changed = True
                self._enqueue(fusion)
                if not producer.users:
                    do_not_duplicate.discard(id(producer))
                    self._dequeue(producer)
                    self.comp.remove(producer)
                    if producer.opcode == Op.FUSION:
                        self._drop_computation(fused_body(producer))
                break
        for body in self.bodies:
            _parameters_first(body)
            self._name_parameters(body)
        return changed

    # -- queue
    def _enqueue(self, inst: Instruction) -> None:
        self.position[id(inst)] = len(self.queue)
        self.queue.append(inst)

    def _dequeue(self, inst: Instruction) -> None:
        slot = self.position.pop(id(inst), None)
        if slot is not None:
            self.queue[slot] = None

    def _operands_in_queue_order(self, consumer: Instruction) -> list[int]:
        """Operands still queued, latest in post order first (so no producer gets fused twice)."""
        indices = [i for i, op in enumerate(consumer.operands) if id(op) in self.position]
        return sorted(indices, key=lambda i: -self.position[id(consumer.operands[i])])

    # -- decisions
    def _pinned(self, inst: Instruction) -> bool:
        """Instructions whose place in the program is fixed by control dependencies."""
        return id(inst) in self.pinned

    def _can_consume(self, inst: Instruction) -> bool:
        if self._pinned(inst):
            return False
        if inst.opcode == Op.FUSION:
            return inst.attrs.get("kind") in FUSIBLE_KINDS
        return is_loop_fusible(inst) or inst.opcode == Op.REDUCE_WINDOW

    def _can_produce(self, inst: Instruction) -> bool:
        if inst is self.comp.root or self._pinned(inst):
            return False
        if inst.opcode == Op.FUSION:
            return inst.attrs.get("kind") in FUSIBLE_KINDS
        if inst.opcode == Op.CONSTANT:
            return is_effective_scalar(inst)
        return (is_loop_fusible(inst) or has_trait(inst.opcode, Trait.OUTPUT_FUSION_HERO)
                or inst.opcode == Op.REDUCE_WINDOW)

    def should_fuse(self, consumer: Instruction, index: int, may_duplicate_expensive: bool = False) -> bool:
        producer = consumer.operands[index]
        if not self._can_produce(producer) or not self._can_consume(consumer):
            return False
        if producer.opcode == Op.CONSTANT:
            # Fuse scalar constants, but never make a fusion of just a constant and one op.
            return consumer.opcode == Op.FUSION
        if self._feeds_output_hero(consumer, producer):
            return False
        produced = fused_instructions(producer)
        consumed = fused_instructions(consumer)
        if _count(produced, Trait.OUTPUT_FUSION_HERO):
            return self._can_output_fuse(producer, consumer)
        if _count(consumed, Trait.OUTPUT_FUSION_HERO) and _count(produced, Trait.REDUCTION_FUSION_HERO):
            return False
        duplicates = any(user is not consumer for user in producer.users)
        if duplicates and is_expensive(producer) and not is_always_duplicable(producer) \
                and not may_duplicate_expensive:
            return False
        if is_expensive(producer) and reuses_operand_elements(consumer, index):
            return False
        reductions = _count(produced, Trait.REDUCTION_FUSION_HERO) + _count(consumed, Trait.REDUCTION_FUSION_HERO)
        if reductions > MAX_REDUCTIONS_IN_FUSION:
            return False
        return not any(_inefficient_concatenate(i) for i in (producer, consumer))

    def _can_output_fuse(self, producer: Instruction, consumer: Instruction) -> bool:
        """A dot/convolution (fusion) with one use fuses into the elementwise epilogue consuming it."""
        if len(producer.users) != 1 or consumer.operands.count(producer) != 1:
            return False
        consumed = fused_instructions(consumer)
        if _count(consumed, Trait.OUTPUT_FUSION_HERO | Trait.REDUCTION_FUSION_HERO):
            return False
        epilogue_ok = all(_fits_an_epilogue(i) for i in consumed)
        return epilogue_ok and _elements(consumer.shape) == _elements(producer.shape)

    def _feeds_output_hero(self, consumer: Instruction, producer: Instruction) -> bool:
        """Dots and convolutions call library kernels: their operands stay materialised."""
        if consumer.opcode != Op.FUSION:
            return False
        body = fused_body(consumer)
        for index, op in enumerate(consumer.operands):
            if op is not producer:
                continue
            if any(has_trait(u.opcode, Trait.OUTPUT_FUSION_HERO) for u in _parameter(body, index).users):
                return True
        return False

    def _globally_unfusible(self, order: list[Instruction]) -> set[int]:
        """Producers reading more than they write, fusible only if every user can take them."""
        unfusible: set[int] = set()
        for producer in reversed(order):
            if producer.shape is None or effectively_at_most_unary(producer):
                continue
            operand_size = sum(_elements(op.shape) for op in {id(o): o for o in producer.operands}.values())
            if operand_size <= _elements(producer.shape):
                continue
            if len({id(u) for u in producer.users}) > 1:
                # Each user would read all its operands again, and carry along whatever is fused
                # into it: a residual stream (x + f(x) + g(...) ...) would be recomputed from the
                # start in every consumer of every block. Written once, it is read once per user.
                unfusible.add(id(producer))
                continue
            # Duplication is judged when fusing; here only: could every user take it?
            if all(self.should_fuse(user, user.operands.index(producer), may_duplicate_expensive=True)
                   for user in producer.users):
                continue
            unfusible.add(id(producer))
        return unfusible

    # -- rewriting
    def fuse(self, producer: Instruction, consumer: Instruction) -> Instruction:
        """Fuse `producer` into `consumer` (wrapped into a new fusion first if needed)."""
        fusion = consumer if consumer.opcode == Op.FUSION else self._wrap(consumer)
        body = fused_body(fusion)
        if body not in self.bodies:
            self.bodies.append(body)
        duplicated = any(user is not fusion for user in producer.users)
        slots = [i for i, op in enumerate(fusion.operands) if op is producer]
        targets = [_parameter(body, i) for i in slots]
        before = self._first_user(body, targets)
        result = self._clone_into(producer, fusion, before, rename=duplicated)
        for param in targets:
            _replace_uses(param, result)
        self._drop_operands(fusion, slots)
        fusion.attrs["kind"] = fusion_kind(body)
        return fusion

    def _wrap(self, consumer: Instruction) -> Instruction:
        """Replace `consumer` by a fusion whose computation holds a copy of it."""
        body = Computation(self.names.unique("fused_computation"))
        self.module.add_computation(body, before=self.comp)
        operands = list({id(op): op for op in consumer.operands}.values())
        params = {id(op): self._new_parameter(body, n, op) for n, op in enumerate(operands)}
        inner = consumer.clone([params[id(op)] for op in consumer.operands], consumer.name)
        body.add(inner)
        body.root = inner
        fusion = Instruction(self.names.unique("fusion"), Op.FUSION, consumer.shape, operands,
                             {"kind": "kLoop", "calls": body}, loc=consumer.loc)
        fusion.metadata = consumer.metadata
        self.comp.add(fusion, before=consumer)
        consumer.replace_all_uses_with(fusion)
        self.comp.remove(consumer)
        return fusion

    def _new_parameter(self, body: Computation, number: int, like: Instruction) -> Instruction:
        param = Instruction(self.names.unique("param"), Op.PARAMETER, like.shape, (),
                            {"parameter_number": number})
        # Before every non-parameter instruction, so that any instruction may use it.
        first_op = next((i for i in body.instructions if i.opcode != Op.PARAMETER), None)
        body.add(param, before=first_op)
        return param

    @staticmethod
    def _first_user(body: Computation, params: list[Instruction]) -> Optional[Instruction]:
        users = {id(u) for p in params for u in p.users}
        return next((i for i in body.instructions if id(i) in users), None)

    def _parameter_for(self, fusion: Instruction, value: Instruction) -> Instruction:
        """The fused parameter standing for `value`, added as a new operand if needed."""
        body = fused_body(fusion)
        for index, op in enumerate(fusion.operands):
            if op is value:
                return _parameter(body, index)
        fusion.append_operand(value)
        return self._new_parameter(body, len(fusion.operands) - 1, value)

    def _clone_into(self, producer: Instruction, fusion: Instruction, before: Optional[Instruction],
                    rename: bool) -> Instruction:
        """Copy the producer (or the body of a producer fusion) into the fusion; returns its result."""
        body = fused_body(fusion)
        if producer.opcode != Op.FUSION:
            operands = [self._parameter_for(fusion, op) for op in producer.operands]
            name = self.names.unique(producer.name) if rename else producer.name
            return body.add(producer.clone(operands, name), before=before)
        inner = fused_body(producer)
        mapping: dict[int, Instruction] = {}
        for inst in inner.instructions:
            if inst.opcode == Op.PARAMETER:
                mapping[id(inst)] = self._parameter_for(fusion, producer.operands[inst.attrs["parameter_number"]])
                continue
            name = self.names.unique(inst.name) if rename else inst.name
            copy = inst.clone([mapping[id(op)] for op in inst.operands], name)
            mapping[id(inst)] = body.add(copy, before=before)
        return mapping[id(inner.root)]

    @staticmethod
    def _drop_operands(fusion: Instruction, slots: list[int]) -> None:
        """Remove fused operands (their parameters are unused now) and renumber the rest."""
        body = fused_body(fusion)
        params = {p.attrs["parameter_number"]: p for p in body.parameters}
        for slot in slots:
            body.remove(params.pop(slot))
        fusion.set_operands([op for i, op in enumerate(fusion.operands) if i not in slots])
        for new_number, old_number in enumerate(sorted(params)):
            params[old_number].attrs["parameter_number"] = new_number

    def _drop_computation(self, comp: Computation) -> None:
        if comp in self.module.computations:
            self.module.computations.remove(comp)
        if comp in self.bodies:
            self.bodies.remove(comp)

    def _name_parameters(self, body: Computation) -> None:
        """XLA's dump names: param_0, param_1 ... (uniqued within the module)."""
        for param in body.parameters:
            param.name = self.names.unique(f"param_{param.attrs['parameter_number']}")


def _replace_uses(old: Instruction, new: Instruction) -> None:
    """Point the users of a fused parameter at `new` (parameters have no control edges)."""
    for user in list(old.users):
        for i, op in enumerate(user.operands):
            if op is old:
                user.replace_operand(i, new)
    if old.parent is not None and old.parent.root is old:
        old.parent.root = new


def _parameters_first(body: Computation) -> None:
    """Parameters, then the rest with operands before users (bodies from XLA dumps
    interleave parameters, and a merged producer may use one defined late)."""
    params = [i for i in body.instructions if i.opcode == Op.PARAMETER]
    body.instructions = params + [i for i in body.post_order() if i.opcode != Op.PARAMETER]


def _inefficient_concatenate(inst: Instruction) -> bool:
    """XLA:CPU keeps big concatenations (many operands, or along the minor dimension) unfused."""
    if inst.opcode != Op.CONCATENATE:
        return False
    if len(inst.operands) > MAX_CONCATENATE_OPERANDS:
        return True
    shape = inst.shape
    if shape.rank <= 1:
        return False
    dim = inst.attrs["dimensions"][0]
    dim_bytes = shape.dims[dim] * shape.element_type.byte_size
    return dim == shape.minor_to_major()[0] and dim_bytes >= 64 and shape.byte_size() >= 2048
