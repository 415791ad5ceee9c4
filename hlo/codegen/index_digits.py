"""Index arithmetic without division: loop indices as mixed-radix digits, through reshapes.

A reshape (or a layout-changing bitcast) inside a loop maps an index of its output to one of its
operand through the linear position: an output f32[96,192] read from f32[96,4,48] needs j / 48
and j % 48. Emitted naively, those are 64-bit divisions in the innermost loop, which LLVM does
not vectorise: the whole loop then runs one element per iteration (the GELU epilogue of an
MLP-Mixer layer ran 20x slower than the same loop without the reshape).

Two halves, so that such loops stay contiguous and vectorise:

* `loop_splits(root, shape, is_leaf)` reads the HLO (no IR): following the index of a loop over
  `shape` from the root through elementwise ops, broadcasts, transposes, reshapes and bitcasts
  down to the leaves, it finds where reshapes cut the loop's dimensions, e.g. {1: [4, 48]}: loop
  over dim 1 as two nested loops of 4 and 48.
* `IndexDigits` remembers which digits (loop variables and their extents) an index value is made
  of, and `relinearize` splits and merges digits instead of dividing the linear position: a cut
  that falls between digits costs nothing; a cut inside one digit divides only that digit. So the
  result never depends on the analysis being right, only the speed does; when no digit structure
  fits (e.g. [6,4] -> [4,6]), `relinearize` returns None and the caller divides as before.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Callable, Optional

from llvmlite import ir

from ..ir import Instruction
from ..opcodes import Op
from ..shapes import Shape
from .function_context import ROLLED, const64, major_to_minor, new_loop_id

I64 = ir.IntType(64)
MAX_VISITS = 4000         # bounds the analysis on very large fusions
NO_WRAP = ["nuw", "nsw"]
VECTORISE_INNER = 8       # innermost output loops this long stay rolled for the loop vectoriser

Digit = tuple             # (LLVM i64 value, extent): a value in [0, extent)


class IndexDigits:
    """The digits (major first) of index values built from loop variables."""

    def __init__(self):
        self._known: dict[int, tuple] = {}   # id(value) -> (value, digits); the value is kept alive

    def remember(self, value, digits: list) -> None:
        if len(digits) > 1:
            self._known[id(value)] = (value, tuple(digits))

    def of(self, value, extent: int) -> list:
        found = self._known.get(id(value))
        if found is not None and found[0] is value:
            return list(found[1])
        return [(value, extent)]


def combine(b: ir.IRBuilder, digits: list):
    """The value of mixed-radix digits (major first)."""
    if not digits:
        return const64(0)
    value = digits[0][0]
    for digit, extent in digits[1:]:
        value = b.add(b.mul(value, const64(extent), flags=NO_WRAP), digit, flags=NO_WRAP)
    return value


def relinearize(b: ir.IRBuilder, table: IndexDigits, values: list, out_sizes: list, in_sizes: list
                ) -> Optional[list]:
    """The index of an array of in_sizes at the linear position of `values` in an array of
    out_sizes (both lists major first), cut from the values' digits; None when a cut does not
    fit the digits (then the caller goes through the linear position)."""
    digits = []
    for value, size in zip(values, out_sizes):
        if size != 1:
            digits.extend(d for d in table.of(value, size) if d[1] != 1)
    result = []
    for size in reversed(in_sizes):
        taken = _take(b, digits, size)
        if taken is None:
            return None
        value = combine(b, taken)
        table.remember(value, taken)
        result.append(value)
    return list(reversed(result))


def _take(b: ir.IRBuilder, digits: list, size: int) -> Optional[list]:
    """Pop the minor digits that make up one dimension of `size` (major first); a digit the cut
    falls inside is divided."""
    taken, have = [], 1
    while have < size:
        if not digits:
            return None
        value, extent = digits.pop()
        if size % (have * extent) == 0:
            taken.append((value, extent))
            have *= extent
            continue
        part = size // have
        if size % have or extent % part:
            return None
        taken.append((b.urem(value, const64(part)), part))
        digits.append((b.udiv(value, const64(part)), extent // part))
        have = size
    return list(reversed(taken))


@contextmanager
def loop_nest(ctx, table: IndexDigits, shape: Shape, splits: dict):
    """Loops over shape in physical order (minor dimension innermost), dimension d run as the
    nested loops splits[d] (its digits, major first) when given; yields the index.

    An innermost loop of VECTORISE_INNER or more iterations is marked not to be unrolled: LLVM
    would otherwise unroll a short constant loop (the 24 columns of a softmax) completely first
    and then vectorise the loop around it, across rows, with gathers (3x slower than vectorising
    the contiguous inner loop, which the mark leaves to the loop vectoriser, interleaving
    included). Outer loops are never unrolled: copies of the (vectorised) loops inside them gained
    nothing and made LLVM's work up to ten times larger (a 4 x 3 outer nest, twelve copies)."""
    b = ctx.b
    index = [const64(0)] * shape.rank
    order = major_to_minor(shape)
    with ExitStack() as stack:
        for d in order:
            extents = splits.get(d) or [shape.dims[d]]
            digits = []
            for k, extent in enumerate(extents):
                name = f"d{d}" if len(extents) == 1 else f"d{d}_{k}"
                innermost = d == order[-1] and k == len(extents) - 1
                latch = _Latch(b) if innermost and extent >= VECTORISE_INNER else None
                if latch:
                    stack.callback(latch.mark)        # runs once the loop has its back edge
                outer = None if innermost else no_unroll(ctx.module)
                digits.append((stack.enter_context(ctx.loop(extent, name=name, loop_id=outer)), extent))
                if latch:
                    stack.callback(latch.remember)    # runs first: the end of the body
            index[d] = combine(b, digits)
            table.remember(index[d], digits)
        yield tuple(index)


class _Latch:
    """The back edge of a loop, to attach `llvm.loop.unroll.disable` to."""

    def __init__(self, b: ir.IRBuilder):
        self.b, self.block = b, None

    def remember(self) -> None:
        self.block = self.b.block

    def mark(self) -> None:
        branch = self.block.terminator if self.block is not None else None
        if branch is not None:
            branch.set_metadata("llvm.loop", no_unroll(self.b.module))


def no_unroll(module: ir.Module):
    """A new loop id saying: do not unroll."""
    return new_loop_id(module, ROLLED)


# --------------------------------------------------------------------------- the analysis

Chunk = tuple   # (root dim or None, low stride, high stride): (index[root] % high) // low


def loop_splits(roots: list, shape: Shape, is_leaf: Callable[[Instruction], bool]) -> dict:
    """{dim: digit extents, major first} for the dims of a loop over `shape` computing `roots`
    (instructions of that shape) that reshapes below the roots cut (only dims with more than one
    digit are listed)."""
    if not shape.is_array or shape.rank == 0:
        return {}
    cuts: dict[int, set] = {d: set() for d in range(shape.rank)}
    start = tuple(((d, 1, n),) if n != 1 else () for d, n in enumerate(shape.dims))
    pending, seen = [(root, start) for root in roots], set()
    while pending and len(seen) < MAX_VISITS:
        inst, dims = pending.pop()
        key = (id(inst), dims)
        if key in seen:
            continue
        seen.add(key)
        for operand, operand_dims in _operand_chunks(inst, dims, cuts):
            if not is_leaf(operand):
                pending.append((operand, operand_dims))
    return {d: extents for d, extents in ((d, _digit_extents(shape.dims[d], cuts[d])) for d in cuts)
            if len(extents) > 1}


def _digit_extents(size: int, cuts: set) -> list:
    """The digits of a dimension cut at the given strides, keeping the strides that nest."""
    kept, outer = [], size
    for stride in sorted(cuts, reverse=True):
        if 1 < stride < outer and outer % stride == 0:
            kept.append(outer // stride)
            outer = stride
    return kept + [outer] if kept else [size]


def _operand_chunks(inst: Instruction, dims: tuple, cuts: dict) -> list:
    """(operand, its dims as chunks) for the operands whose index follows the chunks."""
    if inst.info.is_elementwise:
        return [(o, dims) for o in inst.operands if o.shape.is_array and o.shape.dims == inst.shape.dims]
    rule = _CHUNK_RULES.get(inst.opcode)
    return rule(inst, dims, cuts) if rule is not None else []


def _broadcast(inst: Instruction, dims: tuple, cuts: dict) -> list:
    return [(inst.operands[0], tuple(dims[d] for d in inst.attrs.get("dimensions", ())))]


def _transpose(inst: Instruction, dims: tuple, cuts: dict) -> list:
    src = [()] * len(dims)
    for i, p in enumerate(inst.attrs["dimensions"]):
        src[p] = dims[i]
    return [(inst.operands[0], tuple(src))]


def _relinearized(inst: Instruction, dims: tuple, cuts: dict, out_order: list, in_order: list) -> list:
    operand = inst.operands[0]
    cut = _cut([dims[d] for d in out_order], [operand.shape.dims[d] for d in in_order], cuts)
    if cut is None:
        return []
    src = [()] * operand.shape.rank
    for d, chunks in zip(in_order, cut):
        src[d] = chunks
    return [(operand, tuple(src))]


def _reshape(inst: Instruction, dims: tuple, cuts: dict) -> list:
    """Row-major linear order of the logical shapes."""
    return _relinearized(inst, dims, cuts, list(range(inst.shape.rank)), list(range(inst.operands[0].shape.rank)))


def _bitcast(inst: Instruction, dims: tuple, cuts: dict) -> list:
    """Physical order (layouts) of both shapes."""
    return _relinearized(inst, dims, cuts, major_to_minor(inst.shape), major_to_minor(inst.operands[0].shape))


def _reduce(inst: Instruction, dims: tuple, cuts: dict) -> list:
    """Kept dims follow the output's; reduced dims are inner loops (opaque chunks)."""
    reduced = set(inst.attrs["dimensions"])
    inputs = inst.operands[:len(inst.operands) // 2]
    kept = iter(dims)
    src = tuple(((None, 1, n),) if d in reduced else next(kept) for d, n in enumerate(inputs[0].shape.dims))
    return [(o, src) for o in inputs]


# How an operand's index follows its user's (elementwise ops: the same index).
_CHUNK_RULES = {Op.BROADCAST: _broadcast, Op.TRANSPOSE: _transpose, Op.RESHAPE: _reshape,
                Op.BITCAST: _bitcast, Op.REDUCE: _reduce}


def _cut(chunks_by_dim: list, sizes: list, cuts: dict) -> Optional[list]:
    """The chunks of each of `sizes` (major first) when the concatenated chunks are cut into
    those sizes from the minor end; splitting a chunk records the stride in `cuts`."""
    chunks = [c for dim in chunks_by_dim for c in dim if c[2] != c[1]]
    out = []
    for size in reversed(sizes):
        taken, have = [], 1
        while have < size:
            if not chunks:
                return None
            chunk = chunks.pop()
            extent = chunk[2] // chunk[1]
            if size % (have * extent) == 0:
                taken.append(chunk)
                have *= extent
                continue
            part = size // have
            dim, low, high = chunk
            if dim is None or size % have or extent % part:
                return None
            cuts[dim].add(low * part)
            taken.append((dim, low, low * part))
            chunks.append((dim, low * part, high))
            have = size
        out.append(tuple(reversed(taken)))
    return list(reversed(out)) if not chunks else None
