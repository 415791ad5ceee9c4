"""A convolution's indirection table, built by a runtime library function.

A convolution runs as a multiply (contraction.py): row (batch, output pixel) of A is the run of
input features under each window tap, read through a table of pointers, one per (row, tap): the
input pixel's features, or a row of zeros where the tap falls in the padding or between the
elements of a base-dilated input. Building that table is the same loop nest for every
convolution up to the numbers, so it is one function of the runtime library (runtime_library.py),
compiled once per target, and a kernel only passes its geometry: before, every kernel carried
its own nest of seven loops with divisions, a third of a small convolution kernel's LLVM time.

    conv_table(table, a, zeros, geometry, offsets)

geometry points to i64 values: the batch count and the byte stride between batches of `a`, then
for each of MAX_SPATIAL spatial dimensions (the missing ones of size 1) GEOMETRY_FIELDS. The
table's order is row-major over (batch, output pixel..., tap...), as the multiply reads it.
offsets is scratch of offsets_bytes(): each dimension's tap offsets are computed there once
(outputs x taps of them, with the divisions base dilation needs), so that the table's entries
are sums of three loads, not a division each.
"""
from __future__ import annotations

from contextlib import ExitStack

from llvmlite import ir

from .function_context import FunctionContext, const64
from .gemm import runtime_symbol
from .types import I1, I64, I8, PTR

MAX_SPATIAL = 3     # convolutions with more spatial dimensions build their table inline
GEOMETRY_FIELDS = ("outputs", "taps", "stride", "padding_low", "window_dilation", "base_dilation",
                   "reversed", "input_size", "input_stride")
EXPORTED_FUNCTIONS = ["conv_table"]
FUNCTION_TYPE = ir.FunctionType(ir.VoidType(), [PTR, PTR, PTR, PTR, PTR])


def geometry(batch: int, batch_stride: int, dims: list[dict]) -> list[int]:
    """The function's geometry values: dims holds one dict of GEOMETRY_FIELDS per spatial dimension
    (strides in bytes), at most MAX_SPATIAL of them."""
    assert len(dims) <= MAX_SPATIAL
    unit = dict(outputs=1, taps=1, stride=1, padding_low=0, window_dilation=1, base_dilation=1, reversed=0,
                input_size=1, input_stride=0)
    values = [batch, batch_stride]
    for d in list(dims) + [unit] * (MAX_SPATIAL - len(dims)):
        values += [int(d[name]) for name in GEOMETRY_FIELDS]
    return values


def call(b: ir.IRBuilder, declare, table, a, zeros, values: list[int], offsets) -> None:
    """The kernel's side: the geometry as a constant of its module, and the call. declare(name,
    type) gives the runtime function (GemmCalls.declare: it records the call)."""
    module = b.module
    array = ir.ArrayType(I64, len(values))
    constant = ir.GlobalVariable(module, array, name=module.get_unique_name("conv.geometry"))
    constant.global_constant = True
    constant.linkage = "private"
    constant.unnamed_addr = True
    constant.initializer = ir.Constant(array, values)
    b.call(declare("conv_table", FUNCTION_TYPE), [table, a, zeros, constant, offsets])


def emit_runtime(module: ir.Module, target, tag: str) -> None:
    """Defines conv_table in the runtime library's module: each dimension's tap offsets first
    (outputs x taps of them, in `offsets`), then the table from their sums."""
    fn = ir.Function(module, FUNCTION_TYPE, name=runtime_symbol(tag, "conv_table"))
    for arg, name in zip(fn.args, ("table", "a", "zeros", "geometry", "offsets")):
        arg.name = name
    table, a, zeros, g, offsets = fn.args
    ctx = FunctionContext(module, fn)
    b = ctx.b
    fields = iter(range(2 + MAX_SPATIAL * len(GEOMETRY_FIELDS)))

    def load():
        return b.load(b.gep(g, [const64(next(fields))], source_etype=I64), typ=I64)

    batch, batch_stride = load(), load()
    dims = [{name: load() for name in GEOMETRY_FIELDS} for _ in range(MAX_SPATIAL)]
    rows = []   # per dimension: its outputs x taps offsets
    for d, dim in enumerate(dims):
        rows.append(offsets)
        _tap_offsets(ctx, dim, offsets, f"d{d}")
        offsets = b.gep(offsets, [b.mul(dim["outputs"], dim["taps"])], source_etype=I64)
    entry = ctx.alloca(PTR, "entry")
    b.store(table, entry)
    with ctx.loop(batch, "batch") as n, ExitStack() as loops:
        pointer = b.gep(a, [b.mul(n, batch_stride)], source_etype=I8)
        pixel_rows = []    # per dimension: the output position's row of tap offsets
        for d, dim in enumerate(dims):
            o = loops.enter_context(ctx.loop(dim["outputs"], f"o{d}"))
            pixel_rows.append(b.gep(rows[d], [b.mul(o, dim["taps"])], source_etype=I64))
        reads = ir.Constant(I1, 1)
        for d, dim in enumerate(dims[:-1]):
            t = loops.enter_context(ctx.loop(dim["taps"], f"t{d}"))
            offset = b.load(b.gep(pixel_rows[d], [t], source_etype=I64), typ=I64)
            reads = b.and_(reads, b.icmp_signed(">=", offset, const64(0)))
            pointer = b.gep(pointer, [offset], source_etype=I8)
        last = dims[-1]
        row = b.load(entry, typ=PTR)
        with ctx.loop(last["taps"], "t_last") as t:
            offset = b.load(b.gep(pixel_rows[-1], [t], source_etype=I64), typ=I64)
            ok = b.and_(reads, b.icmp_signed(">=", offset, const64(0)))
            source = b.gep(pointer, [offset], source_etype=I8)
            b.store(b.select(ok, source, zeros), b.gep(row, [t], source_etype=PTR))
        b.store(b.gep(row, [last["taps"]], source_etype=PTR), entry)
    b.ret_void()
    ctx.finish()


def _tap_offsets(ctx: FunctionContext, dim: dict, offsets, name: str) -> None:
    """offsets[o * taps + t] = the byte offset of the input element output position o's tap t
    reads in this dimension, or -1 where it reads none: in the padding, or between the elements
    of a base-dilated input. A reversed window reads its taps mirrored."""
    b = ctx.b
    bdil = dim["base_dilation"]
    with ctx.loop(dim["outputs"], f"{name}.o") as o, ctx.loop(dim["taps"], f"{name}.t") as t:
        mirrored = b.sub(b.sub(dim["taps"], const64(1)), t)
        k = b.select(b.icmp_signed("!=", dim["reversed"], const64(0)), mirrored, t)
        position = b.add(b.sub(b.mul(o, dim["stride"]), dim["padding_low"]), b.mul(k, dim["window_dilation"]))
        index = b.sdiv(position, bdil)
        reads = b.and_(b.and_(b.icmp_signed(">=", position, const64(0)),
                              b.icmp_signed("==", b.srem(position, bdil), const64(0))),
                       b.icmp_signed("<", index, dim["input_size"]))
        offset = b.select(reads, b.mul(index, dim["input_stride"]), const64(-1))
        b.store(offset, b.gep(offsets, [b.add(b.mul(o, dim["taps"]), t)], source_etype=I64))


def offsets_bytes(dims: list[dict]) -> int:
    """The scratch conv_table needs for the tap offsets of these dimensions (and of the unit
    dimensions that pad them to MAX_SPATIAL: one offset each)."""
    return 8 * (sum(int(d["outputs"]) * int(d["taps"]) for d in dims) + MAX_SPATIAL - len(dims))
