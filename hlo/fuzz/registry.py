"""The fuzzer's per-opcode generators: `GENERATORS[op](comp, rng, op) -> Val | None`.

A generator writes one instruction of its opcode (and whatever operands it needs) into a
computation (builder.Comp) and returns its value, or None when the computation offers
nothing it can use. Each is registered beside its definition, in the gen_* modules;
`details(op)["weight"]` says how often the generator is tried relative to others (1 by
default), `details(op)["devices"]` that it needs several devices. An opcode without a
generator has a recorded reason (tests/fuzz checks that every opcode has one or the other).
"""
from __future__ import annotations

import numpy as np

from ..registry import OpRegistry
from ..shapes import PrimitiveType
from .builder import ARITHMETIC_TYPES, array_shape

GENERATORS = OpRegistry("fuzz generator")

MAX_RANK = 3
MAX_DIM = 5


def random_dims(rng: np.random.Generator, rank: int = -1, low: int = 1) -> tuple[int, ...]:
    rank = int(rng.integers(0, MAX_RANK + 1)) if rank < 0 else rank
    return tuple(int(rng.integers(low, MAX_DIM + 1)) for _ in range(rank))


def random_type(rng: np.random.Generator, allowed=ARITHMETIC_TYPES) -> PrimitiveType:
    return allowed[int(rng.integers(0, len(allowed)))]


def random_layout(rng: np.random.Generator, rank: int):
    """A random minor-to-major order (the default one half of the time)."""
    if rank < 2 or rng.random() < 0.5:
        return None
    return tuple(int(d) for d in rng.permutation(rank))


def shape_of(rng: np.random.Generator, t: PrimitiveType, dims):
    return array_shape(t, dims, random_layout(rng, len(dims)))
