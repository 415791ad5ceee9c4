"""Writing a random module: computations as HLO text, values with what is known about them.

A `Val` is an instruction of the module being written, with its shape and what the
generators know of its elements: an upper bound of their magnitude and the binary digits
after the point they may need (`frac`): every input is a small multiple of 1/4, so as long
as an op's result fits the element type's significand, every implementation computes it
bit for bit alike (`exact`). Results of transcendental functions and divisions are not
exact; `raw` values (bit patterns from bitcasts, random bits) only move around.
`Comp` writes one computation; `ModuleBuilder` the module, its scalar reducers and the
entry's inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable, Optional

import ml_dtypes
import numpy as np

from ..shapes import PRIMITIVE_TYPES, Layout, PrimitiveType, Shape, format_shape, real_type_of

INF = float("inf")

# Element types arithmetic is generated in; the others are only converted to and moved.
ARITHMETIC_TYPES = tuple(PRIMITIVE_TYPES[n] for n in (
    "pred", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "c64", "c128"))
STORAGE_TYPES = tuple(PRIMITIVE_TYPES[n] for n in ("s4", "u4", "f8e5m2", "f8e4m3fn", "f8e4m3b11fnuz"))
FLOAT_TYPES = tuple(t for t in ARITHMETIC_TYPES if t.is_float)
INT_TYPES = tuple(t for t in ARITHMETIC_TYPES if t.is_integral)


def significand_bits(t: PrimitiveType) -> int:
    """Bits an exact value of type t may use (the significand of a float; all bits of an int)."""
    t = real_type_of(t)
    if t.is_float:
        return int(ml_dtypes.finfo(t.dtype).nmant) + 1
    return 64 if t.is_pred else t.bits


def largest(t: PrimitiveType) -> float:
    t = real_type_of(t)
    if t.is_float:
        return float(ml_dtypes.finfo(t.dtype).max)
    if t.is_pred:
        return 1.0
    return float(2 ** (t.bits - 1)) if t.is_signed_int else float(2 ** t.bits - 1)


def fits_exactly(t: PrimitiveType, bound: float, frac: int) -> bool:
    """True if every dyadic value of magnitude <= bound with `frac` binary digits after the
    point is a normal value of type t (or an integer of an integer type)."""
    if bound == INF:
        return False
    t = real_type_of(t)
    if t.is_integral or t.is_pred:
        return frac == 0 and bound <= largest(t)
    info = ml_dtypes.finfo(t.dtype)
    if frac > -int(info.minexp) - 2:   # (also keeps 2 ** frac below the float range)
        return False
    needed = max(1.0, bound) * 2.0 ** frac
    return needed < 2.0 ** significand_bits(t) and bound <= float(info.max) and frac <= -int(info.minexp) - 2


@dataclass(frozen=True)
class Val:
    name: str
    shape: Shape
    bound: float = 0.0       # largest magnitude of an element (INF: unknown)
    frac: int = 0            # binary digits after the point an element may have
    exact: bool = True       # computed bit for bit alike by every implementation
    raw: bool = False        # arbitrary bit patterns: moved around, never computed with
    error: float = 0.0       # relative difference implementations may show (0 when exact)

    @property
    def type(self) -> PrimitiveType:
        return self.shape.element_type

    @property
    def dims(self) -> tuple[int, ...]:
        return self.shape.dims

    @property
    def computable(self) -> bool:
        """Usable as an operand of arithmetic, comparisons and indices (exact, not raw bits)."""
        return self.exact and not self.raw and self.shape.is_array


# How far two implementations' values may drift apart once rounding differs, by the size in
# bytes of the float (or complex part) the value was last computed in.
TOLERANCE = {8: 1e-9, 4: 2e-3, 2: 3e-2, 1: 0.25}


def tolerance_of(shape: Shape) -> float:
    """The relative tolerance of an inexact value of `shape` (its first array leaf's type)."""
    leaf = next((s for _, s in shape.leaves() if s.is_array), None)
    if leaf is None or not (leaf.element_type.is_float or leaf.element_type.is_complex):
        return TOLERANCE[4]
    return TOLERANCE.get(real_type_of(leaf.element_type).byte_size, TOLERANCE[2])


def array_shape(t: PrimitiveType, dims, layout: Optional[tuple[int, ...]] = None) -> Shape:
    dims = tuple(dims)
    return Shape.array(t, dims, Layout(tuple(layout)) if layout is not None else Layout.default(len(dims)))


@dataclass
class Comp:
    """One computation being written."""
    module: "ModuleBuilder"
    name: str
    is_entry: bool = False
    lines: list[str] = field(default_factory=list)
    params: list[Val] = field(default_factory=list)
    pool: list[Val] = field(default_factory=list)
    depth: int = 0           # nesting: computations called by computations called by ...

    # -- writing instructions
    def add(self, opcode: str, shape: Shape, operands=(), attrs: str = "", *, bound: float = 0.0, frac: int = 0,
            exact: bool = True, raw: bool = False, keep: bool = True, name: str = "") -> Val:
        """Write `name = shape opcode(operands), attrs` and return its value."""
        error = max([o.error for o in operands if isinstance(o, Val)] + ([0.0] if exact else [tolerance_of(shape)]))
        v = Val(self.module.unique(name or opcode.replace("-", "_")), shape, bound, frac, exact, raw, error)
        text = ", ".join(o.name for o in operands)
        self.lines.append(f"  {v.name} = {format_shape(shape)} {opcode}({text}){attrs}")
        if keep:
            self.pool.append(v)
        return v

    def parameter(self, shape: Shape, bound: float, frac: int, make: Optional[Callable] = None) -> Val:
        number = len(self.params)
        v = self.add("parameter", shape, (), "", bound=bound, frac=frac, name="p")
        self.lines[-1] = self.lines[-1].replace("parameter()", f"parameter({number})")
        self.params.append(v)
        if self.is_entry:
            self.module.inputs.append(make)
        return v

    def constant(self, t: PrimitiveType, value) -> Val:
        """A scalar constant (value: a small dyadic number, or a pred)."""
        text = ("true" if value else "false") if t.is_pred else _number(value, t)
        v = self.add("constant", array_shape(t, ()), (), "", bound=abs(float(np.real(value))) if not t.is_pred else 1.0,
                     frac=_frac_of(value), keep=False, name="c")
        self.lines[-1] = self.lines[-1].replace("constant()", f"constant({text})")
        return v

    # -- choosing operands
    def pick(self, rng: np.random.Generator, wanted: Callable[[Val], bool]) -> Optional[Val]:
        candidates = [v for v in self.pool if wanted(v)]
        if not candidates:
            return None
        # prefer recent values, so that programs are chains rather than fans
        weights = np.arange(1, len(candidates) + 1, dtype=np.float64)
        return candidates[int(rng.choice(len(candidates), p=weights / weights.sum()))]

    def value_of(self, rng: np.random.Generator, shape: Shape, computable: bool = True) -> Val:
        """A value of exactly `shape` (type and dims): from the pool, or made."""
        found = self.pick(rng, lambda v: v.shape.is_array and v.type is shape.element_type and v.dims == shape.dims
                          and (v.computable or not computable))
        if found is not None and rng.random() < 0.8:
            return found
        return self.make(rng, shape)

    def make(self, rng: np.random.Generator, shape: Shape) -> Val:
        """A new value of `shape`: an entry parameter, else a broadcast constant."""
        t = shape.element_type
        if self.is_entry and rng.random() < 0.7:
            bound, frac = input_range(t, rng)
            return self.parameter(shape, bound, frac, lambda r, s=shape, b=bound, f=frac: random_input(s, b, f, r))
        c = self.constant(t, small_value(t, rng))
        if not shape.dims:
            return c
        return self.add("broadcast", array_shape(t, shape.dims), [c], ", dimensions={}", bound=c.bound, frac=c.frac)

    def text(self, root: Val) -> str:
        head = "ENTRY " if self.is_entry else ""
        lines = list(self.lines)
        for i, line in enumerate(lines):
            if line.startswith(f"  {root.name} = "):
                lines[i] = "  ROOT " + line[2:]
        return f"{head}{self.name} {{\n" + "\n".join(lines) + "\n}\n"


class ModuleBuilder:
    """The module being written: its computations, names, replicas and entry inputs."""

    def __init__(self, name: str, replicas: int = 1):
        self.name = name
        self.replicas = replicas
        self.computations: list[str] = []
        self.inputs: list[Callable] = []       # per entry parameter: rng -> array
        self.infeed: list[Shape] = []            # the shapes the infeed and host recv ops read
        self.features: set[str] = set()        # what the module uses (rng, collectives, ...)
        self._names: dict[str, int] = {}
        self._reducers: dict[tuple, str] = {}

    def unique_channel(self) -> int:
        self._channels = getattr(self, "_channels", 0) + 1
        return self._channels

    def unique(self, base: str) -> str:
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}.{n}"

    def computation(self, name: str, depth: int) -> Comp:
        return Comp(self, self.unique(name), depth=depth)

    def finish(self, comp: Comp, root: Val) -> str:
        """Add a computation (callees before callers, as the text requires); its name."""
        self.computations.append(comp.text(root))
        return comp.name

    def scalar_reducer(self, opcode: str, t: PrimitiveType) -> str:
        """`opcode(a, b)` over two scalars of type t (add, maximum, ...), written once."""
        key = (opcode, t.name)
        if key not in self._reducers:
            comp = self.computation(f"{opcode.replace('-', '_')}_{t.name}", 1)
            a = comp.parameter(array_shape(t, ()), INF, 0)
            b = comp.parameter(array_shape(t, ()), INF, 0)
            root = comp.add(opcode, array_shape(t, ()), [a, b])
            self._reducers[key] = self.finish(comp, root)
        return self._reducers[key]

    def assign_computation(self, t: PrimitiveType) -> str:
        """(old, new) -> new over two scalars of type t: scatter's replacement."""
        key = ("replacement", t.name)
        if key not in self._reducers:
            comp = self.computation(f"assign_{t.name}", 1)
            comp.parameter(array_shape(t, ()), INF, 0)
            new = comp.parameter(array_shape(t, ()), INF, 0)
            self._reducers[key] = self.finish(comp, new)
        return self._reducers[key]

    def serial_reducer(self, t: PrimitiveType, variant: int) -> str:
        """A reducer that is not associative: acc + 2|x| (variant 0) or 2 acc - x (variant 1)."""
        key = ("in_order", t.name, variant)
        if key not in self._reducers:
            comp = self.computation(f"serial{variant}_{t.name}", 1)
            acc = comp.parameter(array_shape(t, ()), INF, 0)
            x = comp.parameter(array_shape(t, ()), INF, 0)
            scalar = array_shape(t, ())
            two = comp.constant(t, 2)
            if variant == 0:
                ax = comp.add("abs", scalar, [x]) if not t.is_unsigned_int and not t.is_complex else x
                root = comp.add("add", scalar, [acc, comp.add("multiply", scalar, [two, ax])])
            else:
                root = comp.add("subtract", scalar, [comp.add("multiply", scalar, [two, acc]), x])
            self._reducers[key] = self.finish(comp, root)
        return self._reducers[key]

    def argmax_reducer(self, t: PrimitiveType) -> str:
        """(value, index) pairs: the larger value, the smaller index on a tie."""
        key = ("largest_first", t.name)
        if key not in self._reducers:
            comp = self.computation(f"argmax_{t.name}", 1)
            s32, pred = PRIMITIVE_TYPES["s32"], PRIMITIVE_TYPES["pred"]
            a, ai = comp.parameter(array_shape(t, ()), INF, 0), comp.parameter(array_shape(s32, ()), INF, 0)
            b, bi = comp.parameter(array_shape(t, ()), INF, 0), comp.parameter(array_shape(s32, ()), INF, 0)
            p = array_shape(pred, ())
            gt = comp.add("compare", p, [a, b], ", direction=GT")
            eq = comp.add("compare", p, [a, b], ", direction=EQ")
            lt = comp.add("compare", p, [ai, bi], ", direction=LT")
            pick = comp.add("or", p, [gt, comp.add("and", p, [eq, lt])])
            v = comp.add("select", array_shape(t, ()), [pick, a, b])
            i = comp.add("select", array_shape(s32, ()), [pick, ai, bi])
            root = comp.add("tuple", Shape.tuple_of([v.shape, i.shape]), [v, i])
            self._reducers[key] = self.finish(comp, root)
        return self._reducers[key]

    def compare_computation(self, t: PrimitiveType, direction: str) -> str:
        key = ("comparison", t.name, direction)
        if key not in self._reducers:
            comp = self.computation(f"{direction.lower()}_{t.name}", 1)
            a, b = comp.parameter(array_shape(t, ()), INF, 0), comp.parameter(array_shape(t, ()), INF, 0)
            root = comp.add("compare", array_shape(PRIMITIVE_TYPES["pred"], ()), [a, b], f", direction={direction}")
            self._reducers[key] = self.finish(comp, root)
        return self._reducers[key]

    def sort_comparator(self, t: PrimitiveType, direction: str, with_payload: bool):
        """(name, payload type or None): compares the keys only (a stable sort keeps payload order)."""
        payload = PRIMITIVE_TYPES["s32"] if with_payload else None
        key = ("ordering", t.name, direction, with_payload)
        if key not in self._reducers:
            comp = self.computation(f"order_{direction.lower()}_{t.name}", 1)
            a, b = comp.parameter(array_shape(t, ()), INF, 0), comp.parameter(array_shape(t, ()), INF, 0)
            if with_payload:
                comp.parameter(array_shape(payload, ()), INF, 0)
                comp.parameter(array_shape(payload, ()), INF, 0)
            root = comp.add("compare", array_shape(PRIMITIVE_TYPES["pred"], ()), [a, b], f", direction={direction}")
            self._reducers[key] = self.finish(comp, root)
        return self._reducers[key], payload

    def text(self, entry: Comp, root: Val) -> str:
        header = f"HloModule {self.name}"
        if self.replicas > 1:
            header += f", replica_count={self.replicas}"
        return header + "\n\n" + "\n".join(self.computations + [entry.text(root)])


# --------------------------------------------------------------------------- numbers

def input_range(t: PrimitiveType, rng: np.random.Generator) -> tuple[float, int]:
    """(bound, frac) of a new input of type t: quarters up to 4 for floats, small or full-range ints."""
    if t.is_pred:
        return 1.0, 0
    if t.is_float or t.is_complex:
        return (4.0, 2) if fits_exactly(t, 4.0, 2) else (2.0, 0)
    if rng.random() < 0.7:
        return (8.0 if t.is_signed_int or t.bits >= 4 else 1.0), 0
    return largest(t), 0


def random_input(shape: Shape, bound: float, frac: int, rng: np.random.Generator) -> np.ndarray:
    t = shape.element_type
    dims = tuple(shape.dims)
    if t.is_pred:
        return np.asarray(rng.random(dims) < 0.5)
    if t.is_integral:
        lo = -bound if t.is_signed_int else 0
        high = min(bound, largest(t))
        values = rng.integers(int(max(lo, -largest(t) - 1)), int(high) + 1, size=dims, dtype=np.int64) \
            if high < 2 ** 62 else rng.integers(-2 ** 62, 2 ** 62, size=dims, dtype=np.int64)
        return np.asarray(values.astype(t.dtype))
    scale = 2 ** frac

    def part():
        return rng.integers(-int(bound * scale), int(bound * scale) + 1, size=dims) / scale
    if t.is_complex:
        return np.asarray((part() + 1j * part()).astype(t.dtype))
    return np.asarray(part().astype(t.dtype))


def small_value(t: PrimitiveType, rng: np.random.Generator):
    if t.is_pred:
        return bool(rng.random() < 0.5)
    if t.is_unsigned_int:
        return int(rng.integers(0, 5))
    if t.is_integral:
        return int(rng.integers(-4, 5))
    return float(rng.integers(-8, 9)) / 4 if fits_exactly(t, 2.0, 2) else float(rng.integers(-2, 3))


def _number(value, t: PrimitiveType) -> str:
    if t.is_complex:
        return f"({float(np.real(value))!r}, {float(np.imag(value))!r})"
    if t.is_integral:
        return str(int(value))
    return repr(float(value))


def _frac_of(value) -> int:
    v = abs(float(np.real(value)))
    frac = 0
    while v != math.floor(v) and frac < 8:
        v *= 2
        frac += 1
    return frac


def derived(v: Val, **changes) -> Val:
    return replace(v, **changes)
