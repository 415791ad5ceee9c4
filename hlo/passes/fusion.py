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

from typing import Iterator, NamedTuple, Optional

from ..ir import Computation, Instruction, Module, NameUniquer
from ..opcodes import OPCODES, Op, Trait, has_trait, ops_with
from .analysis import reachable_computations
from .base import Pass, register
from .fused_computation import FusedComputation
from .rewrite import clone_computation

# Which ops fuse, are heroes, are cheap or expensive: the table's traits (LOOP_FUSIBLE,
# OUTPUT_FUSION_HERO, REDUCTION_FUSION_HERO, CHEAP, EXPENSIVE, EXPENSIVE_IF_COMPLEX, DIVISION,
# READS_OPERAND_ELEMENTS_REPEATEDLY, RUNS_COMPUTATIONS_AS_CODE).
MAX_REDUCTIONS_IN_FUSION = 5     # XLA:CPU's kMaxReductionsInFusion
MAX_CONCATENATE_OPERANDS = 8     # XLA:CPU's kMaxConcatenateArguments
FUSIBLE_KINDS = ("kLoop", "kInput", "kOutput")

# The traits fusion asks about for every instruction it looks at, as sets of opcodes
# (a set lookup is much cheaper than combining trait flags).
_OUTPUT_HEROES = ops_with(Trait.OUTPUT_FUSION_HERO)
_REDUCTION_HEROES = ops_with(Trait.REDUCTION_FUSION_HERO)
_LOOP_FUSIBLE = ops_with(Trait.LOOP_FUSIBLE)
_EXPENSIVE_IF_COMPLEX = ops_with(Trait.EXPENSIVE_IF_COMPLEX)
_DIVISIONS = ops_with(Trait.DIVISION)
_EXPENSIVE = ops_with(Trait.EXPENSIVE)
_CHEAP = ops_with(Trait.CHEAP)
_REUSES_OPERANDS = ops_with(Trait.READS_OPERAND_ELEMENTS_REPEATEDLY)


@register
class InstructionFusion(Pass):
    name = "fusion"
    description = ("Fuse producers into consumers (loop, reduction and dot/convolution output fusions) "
                   "without duplicating expensive work.")

    def run(self, module: Module) -> bool:
        if module.entry is None:
            return False
        names = NameUniquer.for_module(module)
        changing = computations_to_fuse(module)
        changed = unshare_fused_computations(module, changing, names)
        for comp in changing:
            changed |= ComputationFuser(module, comp, names).run()
        if changed:  # merged bodies may call reducers defined after them: callees go first
            module.computations = module.callees_first()
        return changed


def unshare_fused_computations(module: Module, changing: list[Computation], names: NameUniquer) -> bool:
    """Give a fusion of `changing` a copy of its fused computation when other fusions call it
    too (HLO text allows that; XLA's dumps never do it): the fuser edits a fusion's
    computation in place, and drops it when the fusion is fused away."""
    callers: dict[int, int] = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode == Op.FUSION:
                callers[id(inst.attrs["calls"])] = callers.get(id(inst.attrs["calls"]), 0) + 1
    changed = False
    for comp in changing:
        for inst in comp.instructions:
            body = inst.attrs["calls"] if inst.opcode == Op.FUSION else None
            if body is not None and callers[id(body)] > 1:
                callers[id(body)] -= 1
                inst.attrs["calls"], _ = clone_computation(body, names, module)
                changed = True
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
    return info.is_elementwise or inst.opcode in _LOOP_FUSIBLE


def is_expensive(inst: Instruction) -> bool:
    """XLA:CPU's cost model: work we would rather not do twice."""
    if inst.opcode == Op.FUSION:
        return any(is_expensive(i) for i in fused_instructions(inst))
    opcode = inst.opcode
    info = OPCODES.get(opcode)
    if info is None:
        return True
    if opcode in _EXPENSIVE_IF_COMPLEX:
        return inst.shape.element_type.is_complex
    if opcode in _DIVISIONS:
        return not inst.shape.element_type.is_integral or not _is_constant_scalar_like(inst.operands[1])
    if opcode == Op.CONVERT:
        return inst.shape.element_type.name == "bf16" and inst.operands[0].shape.element_type.name == "f32"
    if info.is_elementwise:
        return info.transcendental or opcode in _EXPENSIVE or info.side_effect
    return opcode not in _CHEAP


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
    if inst.opcode in _REUSES_OPERANDS:
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


class BodyFacts(NamedTuple):
    """What fusion decisions ask about the instructions a fusion stands for (parameters aside);
    every field adds up when two fusions merge."""
    output_heroes: int            # dots and convolutions
    reductions: int               # reduces and reduce-windows
    outside_epilogue: int         # instructions that cannot be part of a dot's epilogue
    expensive: int                # instructions expensive whatever their operands (see is_expensive)
    integer_divisions: int        # expensive unless their divisor is a constant, which fusing can change


def _is_integer_division(inst: Instruction) -> bool:
    return inst.opcode in _DIVISIONS and inst.shape.element_type.is_integral


def instruction_facts(inst: Instruction) -> BodyFacts:
    opcode = inst.opcode
    division = _is_integer_division(inst)
    return BodyFacts(int(opcode in _OUTPUT_HEROES), int(opcode in _REDUCTION_HEROES), int(not _fits_an_epilogue(inst)),
                     int(not division and is_expensive(inst)), int(division))


def body_facts(body: Computation) -> BodyFacts:
    heroes = reductions = outside = expensive = divisions = 0
    for inst in body.instructions:
        if inst.opcode == Op.PARAMETER:
            continue
        facts = instruction_facts(inst)
        heroes += facts.output_heroes
        reductions += facts.reductions
        outside += facts.outside_epilogue
        expensive += facts.expensive
        divisions += facts.integer_divisions
    return BodyFacts(heroes, reductions, outside, expensive, divisions)


def merged_facts(a: BodyFacts, b: BodyFacts) -> BodyFacts:
    return BodyFacts(a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


def kind_of(facts: BodyFacts) -> str:
    if facts.output_heroes:
        return "kOutput"
    if facts.reductions:
        return "kInput"
    return "kLoop"


def effectively_at_most_unary(inst: Instruction) -> bool:
    """At most one operand is as large as the result (broadcasts, iotas, scalar constants are free)."""
    shape = inst.shape
    if shape.tuple_shapes is None:
        rank = _nontrivial_rank(shape) if shape.is_array else 0
    else:
        rank = max((_nontrivial_rank(s) for _, s in shape.leaves() if s.is_array), default=0)
    big = 0
    for op in inst.operands:
        free = op.opcode == Op.BROADCAST or op.opcode == Op.IOTA
        if free or (op.opcode == Op.CONSTANT and is_effective_scalar(op)):
            continue
        if not op.shape.is_tuple and _nontrivial_rank(op.shape) >= rank:
            big += 1
    return big <= 1


def _nontrivial_rank(shape) -> int:
    """The number of dimensions of size other than 1."""
    return len(shape.dims) - shape.dims.count(1)


def _elements(shape) -> int:
    if shape.tuple_shapes is None:  # (the usual case, without walking the leaves)
        return shape.element_count() if shape.is_array else 0
    return sum(s.element_count() for _, s in shape.leaves() if s.is_array)


def _fits_an_epilogue(inst: Instruction) -> bool:
    """A scalar constant or a loop-fusible op computing one output element from one position
    (not a gather or a reduce)."""
    if inst.opcode == Op.CONSTANT:
        return True
    return is_loop_fusible(inst) and inst.opcode != Op.GATHER and inst.opcode != Op.REDUCE


# --------------------------------------------------------------------------- the fuser

class GrowingFusion:
    """A fusion that producers fuse into one after another, and what is known about its operands.

    After each fusion the fuser takes the same fusion again and offers it its remaining
    operands. An operand it rejected stays rejected unless the producer fused since was one
    of its users (that changes its users and what reads its parameter; nothing else a
    decision looks at changes): only the others are offered again, so that a round costs
    what changed rather than the number of operands. Operands are known by their
    parameters, which keep their identity while the operand list shrinks and grows.
    """

    def __init__(self, fusion: Instruction, params: list[Instruction]):
        self.fusion = fusion
        self.params = params                              # the fuser's list, kept up to date by it
        # not rejected (yet): id(parameter) -> (parameter, the operand it stands for)
        self.pending = {id(p): (p, op) for p, op in zip(params, fusion.operands)}
        self.rejected: dict[int, Instruction] = {}

    def candidates(self, position: dict[int, int]) -> Iterator[int]:
        """Slots of the pending operands still queued, latest in post order first (ties, one operand
        in several slots: lower slot first). Each slot is found when it is asked for (a round
        usually stops at the first)."""
        ranked = []
        gone = []
        for key, (param, operand) in self.pending.items():
            rank = position.get(id(operand))
            if rank is None:  # taken off the queue already: never offered again
                gone.append(key)
            else:
                ranked.append((-rank, param))
        for key in gone:
            del self.pending[key]
        if not ranked:
            return
        ranked.sort(key=_first)
        params = self.params
        if len(ranked) == 1 or ranked[0][0] != ranked[1][0]:  # the latest is one slot: offered first
            yield params.index(ranked[0][1])
            ranked = ranked[1:]
        if any(ranked[i][0] == ranked[i - 1][0] for i in range(1, len(ranked))):  # (rare)
            yield from [slot for _, slot in sorted((rank, params.index(param)) for rank, param in ranked)]
            return
        for _, param in ranked:
            yield params.index(param)

    def reject(self, slot: int) -> None:
        param = self.params[slot]
        self.pending.pop(id(param), None)
        self.rejected[id(param)] = param

    def fused(self, added: list[Instruction], dropped: list[Instruction], users_changed: list[Instruction]) -> None:
        for param in dropped:
            self.pending.pop(id(param), None)
            self.rejected.pop(id(param), None)
        operands = self.fusion.operands
        for param in added:
            self.pending[id(param)] = (param, operands[self.params.index(param)])
        if self.rejected:
            for slot in _slots(operands, users_changed):
                param = self.rejected.pop(id(self.params[slot]), None)
                if param is not None:
                    self.pending[id(param)] = (param, operands[slot])


def _first(pair):
    return pair[0]


def _ranked(operands: list[Instruction], slots, position: dict[int, int]) -> list[int]:
    """The slots whose operands are queued, latest in the queue first (ties: lower slot first)."""
    ranked = [(-position[id(operands[i])], i) for i in slots if id(operands[i]) in position]
    ranked.sort()
    return [i for _, i in ranked]


class ComputationFuser:
    """Fuses one computation, XLA style: a reverse-post-order queue of consumers.

    What decisions ask about a fusion (BodyFacts, its parameters by number) is kept with
    its FusedComputation and updated when a fusion into it changes it, so that a decision
    costs the same whatever the size of the fusions involved.
    """

    def __init__(self, module: Module, comp: Computation, names: NameUniquer):
        self.module = module
        self.comp = comp
        self.names = names
        self.queue: list[Optional[Instruction]] = []
        self.position: dict[int, int] = {}
        self.fused: dict[int, FusedComputation] = {}    # by id of the computation
        self.edited: dict[int, FusedComputation] = {}   # those changed here, in the order first changed
        self.new_bodies: list[Computation] = []         # made here; placed before comp at the end
        self.dropped: set[int] = set()                  # ids of fused computations merged away
        self.facts: dict[int, tuple] = {}               # id(instruction) -> (it, BodyFacts)
        self.do_not_duplicate: set[int] = set()
        self.growing: Optional[GrowingFusion] = None    # the fusion taken last
        self.pinned = {id(i) for i in comp.instructions if i.control_predecessors}
        self.pinned |= {id(p) for i in comp.instructions for p in i.control_predecessors}

    def run(self) -> bool:
        order = self.comp.post_order()
        for inst in order:
            if self._may_take_part(inst):
                self._enqueue(inst)
        self.do_not_duplicate = self._globally_unfusible(order)
        changed = False
        while self.queue:
            consumer = self.queue.pop()
            if consumer is None or self.position.pop(id(consumer), None) is None:
                continue
            if self._can_consume(consumer):
                changed |= self._fuse_one_operand(consumer)
        self._place_computations()
        for state in self.edited.values():
            state.finish(self.names)
        return changed

    def _fuse_one_operand(self, consumer: Instruction) -> bool:
        """Fuse the latest operand that should be fused into `consumer`; the fusion goes back on
        the queue, to be taken next (see GrowingFusion)."""
        growing = None
        if consumer.opcode == Op.FUSION:
            growing = self.growing
            if growing is None or growing.fusion is not consumer:
                growing = self.growing = GrowingFusion(consumer, self._state(consumer).params)
            candidates = growing.candidates(self.position)
        else:
            candidates = _ranked(consumer.operands, range(len(consumer.operands)), self.position)
        for index in candidates:
            producer = consumer.operands[index]
            if id(producer) in self.do_not_duplicate or not self.should_fuse(consumer, index):
                if growing is not None:
                    growing.reject(index)
                continue
            users_changed = list(producer.operands)
            fusion, state = self.fuse(producer, consumer)
            self._enqueue(fusion)
            if not producer.users:
                self.do_not_duplicate.discard(id(producer))
                self._dequeue(producer)
                self.comp.remove(producer)
                if producer.opcode == Op.FUSION:
                    self._drop_computation(fused_body(producer))
            if growing is None:
                self.growing = GrowingFusion(fusion, state.params)
            else:
                growing.fused(state.added, state.dropped, users_changed)
            return True
        return False

    def _place_computations(self) -> None:
        """New fused computations go right before the computation they were made in; merged ones go."""
        new = [body for body in self.new_bodies if id(body) not in self.dropped]
        if not new and not self.dropped:
            return
        placed = []
        for comp in self.module.computations:
            if comp is self.comp:
                placed.extend(new)
            if id(comp) not in self.dropped:
                placed.append(comp)
        self.module.computations = placed

    # -- queue
    def _may_take_part(self, inst: Instruction) -> bool:
        """Whether `inst` could ever be fused, as a consumer or a producer (parameters, tuples,
        custom-calls ... never are: they stay out of the queue)."""
        return self._can_consume(inst) or (inst is not self.comp.root and self._can_produce(inst))

    def _enqueue(self, inst: Instruction) -> None:
        self.position[id(inst)] = len(self.queue)
        self.queue.append(inst)

    def _dequeue(self, inst: Instruction) -> None:
        slot = self.position.pop(id(inst), None)
        if slot is not None:
            self.queue[slot] = None

    # -- what is known about fused computations and instructions
    def _state(self, fusion: Instruction) -> FusedComputation:
        body = fusion.attrs["calls"]
        state = self.fused.get(id(body))
        if state is None:
            state = self.fused[id(body)] = FusedComputation(body)
        return state

    def _facts(self, inst: Instruction) -> BodyFacts:
        if inst.opcode == Op.FUSION:
            state = self._state(inst)
            if state.facts is None:
                state.facts = body_facts(state.body)
            return state.facts
        cached = self.facts.get(id(inst))
        if cached is None:
            cached = self.facts[id(inst)] = (inst, instruction_facts(inst))
        return cached[1]

    def _expensive(self, inst: Instruction, facts: BodyFacts) -> bool:
        """is_expensive(inst), from its facts (integer divisions are looked at again)."""
        if facts.expensive:
            return True
        if not facts.integer_divisions:
            return False
        if inst.opcode != Op.FUSION:
            return is_expensive(inst)
        return any(_is_integer_division(i) and is_expensive(i) for i in self._state(inst).instructions())

    def _hero_parameters(self, fusion: Instruction) -> tuple[int, ...]:
        """Places of the fusion's parameters that a dot or convolution reads."""
        state = self._state(fusion)
        if state.heroes is None:
            state.heroes = ()
            if self._facts(fusion).output_heroes:
                state.heroes = tuple(i for i, p in enumerate(state.params)
                                     if any(u.opcode in _OUTPUT_HEROES for u in p.users))
        return state.heroes

    # -- decisions
    def _pinned(self, inst: Instruction) -> bool:
        """Instructions whose place in the program is fixed by control dependencies."""
        return id(inst) in self.pinned

    def _can_consume(self, inst: Instruction) -> bool:
        if id(inst) in self.pinned:
            return False
        if inst.opcode == Op.FUSION:
            return inst.attrs.get("kind") in FUSIBLE_KINDS
        return is_loop_fusible(inst) or inst.opcode == Op.REDUCE_WINDOW

    def _can_produce(self, inst: Instruction) -> bool:
        if inst is self.comp.root or id(inst) in self.pinned:
            return False
        if inst.opcode == Op.FUSION:
            return inst.attrs.get("kind") in FUSIBLE_KINDS
        if inst.opcode == Op.CONSTANT:
            return is_effective_scalar(inst)
        return is_loop_fusible(inst) or inst.opcode in _OUTPUT_HEROES or inst.opcode == Op.REDUCE_WINDOW

    def should_fuse(self, consumer: Instruction, index: int, may_duplicate_expensive: bool = False) -> bool:
        # The checks are pure; the cheapest come first.
        producer = consumer.operands[index]
        if not self._can_produce(producer) or not self._can_consume(consumer):
            return False
        if producer.opcode == Op.CONSTANT:
            # Fuse scalar constants, but never make a fusion of just a constant and one op.
            return consumer.opcode == Op.FUSION
        produced = self._facts(producer)
        if produced.output_heroes:
            return not self._feeds_output_hero(consumer, producer) and self._can_output_fuse(producer, consumer)
        expensive = self._expensive(producer, produced)
        if expensive and not may_duplicate_expensive and producer.users.count(consumer) != len(producer.users) \
                and not is_always_duplicable(producer):
            return False
        if self._feeds_output_hero(consumer, producer):
            return False
        consumed = self._facts(consumer)
        if consumed.output_heroes and produced.reductions:
            return False
        if expensive and self._reuses_operand_elements(consumer, index):
            return False
        if produced.reductions + consumed.reductions > MAX_REDUCTIONS_IN_FUSION:
            return False
        return not (_inefficient_concatenate(producer) or _inefficient_concatenate(consumer))

    def _reuses_operand_elements(self, consumer: Instruction, index: int) -> bool:
        if consumer.opcode != Op.FUSION:
            return op_reuses_operand(consumer, index)
        return _read_at(self._state(consumer).params[index], {}) is REUSED

    def _can_output_fuse(self, producer: Instruction, consumer: Instruction) -> bool:
        """A dot/convolution (fusion) with one use fuses into the elementwise epilogue consuming it."""
        if len(producer.users) != 1 or consumer.operands.count(producer) != 1:
            return False
        consumed = self._facts(consumer)
        if consumed.output_heroes or consumed.reductions or consumed.outside_epilogue:
            return False
        return _elements(consumer.shape) == _elements(producer.shape)

    def _feeds_output_hero(self, consumer: Instruction, producer: Instruction) -> bool:
        """Dots and convolutions call library kernels: their operands stay materialised."""
        if consumer.opcode != Op.FUSION:
            return False
        operands = consumer.operands
        return any(operands[number] is producer for number in self._hero_parameters(consumer))

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
    def fuse(self, producer: Instruction, consumer: Instruction) -> tuple[Instruction, FusedComputation]:
        """Fuse `producer` into `consumer` (wrapped into a new fusion first if needed)."""
        fusion = consumer if consumer.opcode == Op.FUSION else self._wrap(consumer)
        state = self._state(fusion)
        self.edited[id(state.body)] = state
        produced, consumed = self._facts(producer), self._facts(fusion)
        state.added, state.dropped = [], []
        slots = _slots(fusion.operands, (producer,))
        targets = [state.params[i] for i in slots]
        before = state.first_user(targets)
        result = self._clone_into(producer, fusion, state, before,
                                  rename=any(user is not fusion for user in producer.users))
        for param in targets:  # (parameters have no control edges)
            param.replace_all_uses_with(result)
        state.drop_operands(fusion, slots)
        state.facts = merged_facts(consumed, produced)
        state.heroes = None
        fusion.attrs["kind"] = kind_of(state.facts)
        return fusion, state

    def _wrap(self, consumer: Instruction) -> Instruction:
        """Replace `consumer` by a fusion whose computation holds a copy of it."""
        body = Computation(self.names.unique("fused_computation"))
        body.parent = self.module
        self.new_bodies.append(body)
        state = self.fused[id(body)] = FusedComputation.new(body)
        operands = list({id(op): op for op in consumer.operands}.values())
        params = {id(op): state.new_parameter(op) for op in operands}
        inner = state.add(consumer.clone([params[id(op)] for op in consumer.operands], consumer.name))
        body.root = inner
        state.facts = instruction_facts(inner)
        fusion = Instruction(self.names.unique("fusion"), Op.FUSION, consumer.shape, operands,
                             {"kind": "kLoop", "calls": body}, loc=consumer.loc)
        fusion.metadata = consumer.metadata
        self.comp.add(fusion, before=consumer)
        consumer.replace_all_uses_with(fusion)
        self.comp.remove(consumer)
        return fusion

    @staticmethod
    def _parameter_for(fusion: Instruction, state: FusedComputation, value: Instruction) -> Instruction:
        """The fused parameter standing for `value`, added as a new operand if needed."""
        operands = fusion.operands
        if value in operands:  # (by identity: instructions do not define equality)
            return state.params[operands.index(value)]
        fusion.append_operand(value)
        return state.new_parameter(value)

    def _clone_into(self, producer: Instruction, fusion: Instruction, state: FusedComputation,
                    before: Optional[Instruction], rename: bool) -> Instruction:
        """Copy the producer (or the body of a producer fusion) into the fusion; returns its result."""
        if producer.opcode != Op.FUSION:
            operands = [self._parameter_for(fusion, state, op) for op in producer.operands]
            name = self.names.unique(producer.name) if rename else producer.name
            return state.add(producer.clone(operands, name), before)
        inner = self._state(producer)
        mapping: dict[int, Instruction] = {}
        number = {id(p): n for n, p in enumerate(inner.params)}
        for inst in inner.instructions():
            if inst.opcode == Op.PARAMETER:
                mapping[id(inst)] = self._parameter_for(fusion, state, producer.operands[number[id(inst)]])
                continue
            name = self.names.unique(inst.name) if rename else inst.name
            copy = inst.clone([mapping[id(op)] for op in inst.operands], name)
            mapping[id(inst)] = state.add(copy, before)
        return mapping[id(inner.body.root)]

    def _drop_computation(self, comp: Computation) -> None:
        self.dropped.add(id(comp))
        self.edited.pop(id(comp), None)
        self.fused.pop(id(comp), None)


def _slots(operands: list[Instruction], values) -> list[int]:
    """The places of `values` among `operands`, in order (found by identity)."""
    slots = []
    for value in values:
        start = 0
        for _ in range(operands.count(value)):
            start = operands.index(value, start) + 1
            slots.append(start - 1)
    return sorted(set(slots))


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
