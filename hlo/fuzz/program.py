"""A random program: a module, its inputs (per device) and infeed, from a seed.

    program = generate(seed)       # deterministic: the same seed gives the same program

The entry computation takes 4 to 24 generator steps, each an opcode drawn by weight from
the generators that apply (collectives only in modules of 2 or 4 replicas, a tenth of
them), and returns a tuple of its last values and some earlier ones.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..shapes import Shape
from . import gen_arrays, gen_compute, gen_control, gen_elementwise  # noqa: F401 (their generators register)
from .builder import Comp, ModuleBuilder, Val, random_input, tolerance_of
from .registry import GENERATORS


@dataclass
class Program:
    seed: int
    text: str
    inputs: list[list[np.ndarray]]           # per device: one array (or tuple) per entry parameter
    infeed: list[np.ndarray] = field(default_factory=list)
    replicas: int = 1
    features: frozenset = frozenset()        # random-numbers, collectives, dynamic-sizes, host-transfer ...
    tolerances: tuple[float, ...] = ()       # per output leaf: 0 where every implementation gives the same bits


def _opcodes(devices: bool) -> tuple[list[str], np.ndarray]:
    ops = [op for op in sorted(GENERATORS.handled()) if devices or not GENERATORS.details(op).get("devices")]
    weights = np.array([GENERATORS.details(op).get("weight", 1) for op in ops], dtype=np.float64)
    return ops, weights / weights.sum()


def generate(seed: int, max_steps: int = 24) -> Program:
    rng = np.random.default_rng(seed)
    replicas = int(rng.choice([2, 4])) if rng.random() < 0.1 else 1
    module = ModuleBuilder(f"fuzz_{seed}", replicas)
    entry = Comp(module, "main", is_entry=True)
    ops, weights = _opcodes(replicas > 1)
    steps = int(rng.integers(4, max_steps + 1))
    made: list[Val] = []
    for _ in range(steps * 3):
        if len(made) >= steps:
            break
        op = ops[int(rng.choice(len(ops), p=weights))]
        value = GENERATORS[op](entry, rng, op)
        if value is not None:
            made.append(value)
    if not made:
        made.append(entry.make(rng, Shape.array("f32", (2,)).with_default_layouts()))
    outputs = _outputs(made, rng)
    root = entry.add("tuple", Shape.tuple_of([v.shape for v in outputs]), outputs, keep=False)
    text = module.text(entry, root)
    inputs = [[make(rng) for make in module.inputs] for _ in range(replicas)]
    infeed = [random_input(s, 4.0, 2, rng) for s in module.infeed]
    tolerances = tuple(0.0 if v.exact and not v.raw else max(v.error, tolerance_of(v.shape))
                       for v in outputs for _ in v.shape.leaves())
    return Program(seed, text, inputs, infeed, replicas, frozenset(module.features), tolerances)


def _outputs(made: list[Val], rng: np.random.Generator) -> list[Val]:
    """The last value, and up to three others (later ones more likely)."""
    last = made[-1]
    others = made[:-1]
    count = min(len(others), int(rng.integers(0, 4)))
    picked = sorted(rng.choice(len(others), size=count, replace=False)) if count else []
    return [others[int(i)] for i in picked] + [last]


def program_from_text(text: str, seed: int = 0, replicas: int = 1) -> Program:
    """A Program for a module written by hand (a regression the fuzzer found): inputs of small
    values, every output compared within tolerance."""
    from ..analysis.loading import load_module  # lazy: the generator itself never parses
    rng = np.random.default_rng(seed)
    module = load_module(text, "regression.hlo")
    inputs = []
    for _ in range(replicas):
        args = []
        for p in module.entry.parameters:
            leaves = [random_input(s, 4.0 if s.element_type.is_float else 8.0, 2 if s.element_type.is_float else 0, rng)
                      for _, s in p.shape.leaves()]
            args.append(leaves[0] if not p.shape.is_tuple else tuple(leaves))
        inputs.append(args)
    tolerances = tuple(tolerance_of(leaf) for _, leaf in module.entry.root.shape.leaves())
    return Program(seed, text, inputs, [], replicas, frozenset(), tolerances)
