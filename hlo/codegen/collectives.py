"""Collectives in compiled code: each one is a call through the module's hook table.

The module has a global `<entry>_collectives`, a pointer to a `hlo_collectives_table`
(hlo/runtime/c/hlo_collectives.h, the C ABI): the host points it at its runtime before
running (the JIT: hlo.codegen.collective_runtime; AOT users: their own, or
hlo_collectives_mpi.c). A collective becomes a constant `hlo_collective` describing the
instruction (kind, element type, replica groups, pairs, the row-major split of its
buffers) and a call `collective(context, &description, input, output)`; a non-zero status
makes the entry function return at once (the host reports the failure). replica-id and
partition-id come from the table's `device_id`. Collectives are emitted in the driver, never
in a kernel of their own (`in_driver`): the hook table is the entry's global and a failure
returns from the entry.

Compiled collectives need row-major buffers (the default layouts); anything else is
refused with the instruction's location. A reduction's description names its to_apply
when it is one binary op (add, multiply, minimum, maximum, and, or, xor) and carries the
computation's text in any case (the JIT's runtime evaluates it as the interpreter does).
"""
from __future__ import annotations

import math

from llvmlite import ir

from ..diagnostics import error
from ..ir import Computation, Instruction
from ..opcodes import Op
from ..shapes import Shape
from ..text.printer import format_computation
from .buffers import BUFFER_RULES, Buffer
from .emitters import EMITTERS
from .gemm import IndirectCallee
from .types import I32, I64, PTR

VOID = ir.VoidType()

KINDS = {Op.ALL_REDUCE: 1, Op.ALL_REDUCE_START: 1, Op.ALL_GATHER: 2, Op.ALL_GATHER_START: 2,
         Op.REDUCE_SCATTER: 3, Op.ALL_TO_ALL: 4, Op.COLLECTIVE_PERMUTE: 5, Op.COLLECTIVE_PERMUTE_START: 5,
         Op.COLLECTIVE_BROADCAST: 6}
REDUCTIONS = {Op.ADD: 1, Op.MULTIPLY: 2, Op.MINIMUM: 3, Op.MAXIMUM: 4, Op.AND: 5, Op.OR: 6, Op.XOR: 7}
_STARTS_WITH_OPERAND = {Op.ALL_GATHER_START: "(operand, result)", Op.COLLECTIVE_PERMUTE_START: "(operand, result, ...)"}
ELEMENT_TYPES = {"pred": 1, "s8": 2, "s16": 3, "s32": 4, "s64": 5, "u8": 6, "u16": 7, "u32": 8, "u64": 9,
                 "f16": 10, "f32": 11, "f64": 12, "bf16": 16}

# struct hlo_collective and struct hlo_collectives_table (hlo_collectives.h), field by field.
DESCRIPTION = ir.LiteralStructType([I32, I32, I32, I32, I64, I32, I32, I32, I32, I32, I32,
                                    PTR, PTR, PTR, I64, I64, I64, I64, PTR, PTR])
TABLE = ir.LiteralStructType([PTR, PTR, PTR])
HOOK = ir.FunctionType(I32, [PTR, PTR, PTR, PTR])
DEVICE_ID = ir.FunctionType(I64, [PTR])


def table_global_name(entry: str) -> str:
    return f"{entry}_collectives"


# --------------------------------------------------------------------------- emitters

@EMITTERS.register(Op.ALL_REDUCE, Op.ALL_REDUCE_START, in_driver=True)
def emit_all_reduce(low, inst: Instruction) -> None:
    reduction = _reduction(inst)
    for operand, out in zip(inst.operands, _outputs(low, inst)):
        count = math.prod(operand.shape.dims)
        _call(low, inst, operand, out, reduction=reduction, count=count)


@EMITTERS.register(Op.ALL_GATHER, Op.ALL_GATHER_START, in_driver=True)
def emit_all_gather(low, inst: Instruction) -> None:
    d = inst.attrs["dimensions"][0]
    for operand, out in zip(inst.operands, _outputs(low, inst)):
        dims = operand.shape.dims
        _call(low, inst, operand, out, outer=math.prod(dims[:d]), inner=math.prod(dims[d:]))


@EMITTERS.register(Op.REDUCE_SCATTER, in_driver=True)
def emit_reduce_scatter(low, inst: Instruction) -> None:
    d = inst.attrs["dimensions"][0]
    reduction = _reduction(inst)
    for operand, out in zip(inst.operands, _outputs(low, inst)):
        dims = out.shape.dims
        _call(low, inst, operand, out, reduction=reduction, outer=math.prod(dims[:d]), inner=math.prod(dims[d:]))


@EMITTERS.register(Op.ALL_TO_ALL, in_driver=True)
def emit_all_to_all(low, inst: Instruction) -> None:
    dims_attr = inst.attrs.get("dimensions")
    if not dims_attr:
        raise error(f"the cpu backend does not compile the tuple form of all-to-all (%{inst.name}, no "
                    f"dimensions=); the interpreter runs it", inst.loc)
    d = dims_attr[0]
    n = _group_size(low, inst)
    for operand, out in zip(inst.operands, _outputs(low, inst)):
        dims = operand.shape.dims
        if dims[d] % n:
            raise error(f"all-to-all %{inst.name}: dimension {d} of size {dims[d]} does not split into "
                        f"{n} blocks", inst.loc)
        _call(low, inst, operand, out, outer=math.prod(dims[:d]), inner=math.prod(dims[d:]) // n)


@EMITTERS.register(Op.COLLECTIVE_PERMUTE, Op.COLLECTIVE_PERMUTE_START, in_driver=True)
def emit_collective_permute(low, inst: Instruction) -> None:
    if inst.attrs.get("slice_sizes"):
        raise error(f"the cpu backend does not compile {inst.opcode} with slice_sizes (%{inst.name})", inst.loc)
    for operand, out in zip(inst.operands, _outputs(low, inst)):
        _call(low, inst, operand, out, count=operand.shape.byte_size())


@EMITTERS.register(Op.COLLECTIVE_BROADCAST, in_driver=True)
def emit_collective_broadcast(low, inst: Instruction) -> None:
    for operand, out in zip(inst.operands, _outputs(low, inst)):
        _call(low, inst, operand, out, count=operand.shape.byte_size())


@EMITTERS.register(Op.REPLICA_ID, Op.PARTITION_ID, in_driver=True)
def emit_device_ids(low, inst: Instruction) -> None:
    b = low.b
    table = _table(low, inst)
    context = b.load(b.gep(table, [ir.Constant(I32, 0), ir.Constant(I32, 0)], source_etype=TABLE), typ=PTR)
    hook = b.load(b.gep(table, [ir.Constant(I32, 0), ir.Constant(I32, 1)], source_etype=TABLE), typ=PTR)
    flat = b.call(IndirectCallee(hook, DEVICE_ID), [context])
    partitions = ir.Constant(I64, max(low.module.config.num_partitions, 1))
    value = b.udiv(flat, partitions) if inst.opcode == Op.REPLICA_ID else b.urem(flat, partitions)
    b.store(b.trunc(value, I32), low.pointer_of(inst))


@EMITTERS.register(Op.ALL_REDUCE_DONE, Op.ALL_GATHER_DONE, Op.COLLECTIVE_PERMUTE_DONE, in_driver=True)
def emit_done(low, inst: Instruction) -> None:
    """The start did the work (compiled code runs one instruction at a time): its buffer is the value."""


@BUFFER_RULES.register(Op.ALL_REDUCE_DONE, Op.ALL_GATHER_DONE, Op.COLLECTIVE_PERMUTE_DONE, aliases=True)
def _done_value(assigner, inst, _):
    start = assigner.a.values[id(inst.operands[0])]
    return start if inst.operands[0].shape.compatible(inst.shape) else start[1]


# --------------------------------------------------------------------------- the call

def _outputs(low, inst: Instruction) -> list[Buffer]:
    """The buffer each operand's result goes to; a start's tuple also gets the operand copied in."""
    value = low.a.values[id(inst)]
    start = inst.opcode in _STARTS_WITH_OPERAND and inst.shape.is_tuple
    if start:
        if len(inst.operands) != 1:
            raise error(f"the cpu backend compiles {inst.opcode} of one operand only (%{inst.name})", inst.loc)
        low.copy(value[0], low.a.values[id(inst.operands[0])])
        for extra in value[2:]:
            _zero(low, extra)
        return [value[1]]
    if isinstance(value, Buffer):
        return [value]
    return list(value)


def _call(low, inst: Instruction, operand: Instruction, out: Buffer, *, reduction: int = 0, count: int = 0,
          outer: int = 0, inner: int = 0) -> None:
    b = low.b
    source = low.a.values[id(operand)]
    for buffer in (source, out):
        if not isinstance(buffer, Buffer) or not _row_major(buffer.shape):
            raise error(f"the cpu backend compiles {inst.opcode} (%{inst.name}) on row-major arrays only "
                        f"(got {buffer.shape if isinstance(buffer, Buffer) else 'a tuple'})", inst.loc)
    element = operand.shape.element_type
    description = _description(low, inst, element, reduction, count, outer, inner * element.byte_size)
    table = _table(low, inst)
    context = b.load(b.gep(table, [ir.Constant(I32, 0), ir.Constant(I32, 0)], source_etype=TABLE), typ=PTR)
    hook = b.load(b.gep(table, [ir.Constant(I32, 0), ir.Constant(I32, 2)], source_etype=TABLE), typ=PTR)
    status = b.call(IndirectCallee(hook, HOOK), [context, description, low.pointer(source), low.pointer(out)])
    failed = b.append_basic_block("collective_failed")
    carry_on = b.append_basic_block("collective_done")
    b.cbranch(b.icmp_signed("!=", status, ir.Constant(I32, 0)), failed, carry_on)
    b.position_at_end(failed)
    low.return_early()
    b.position_at_end(carry_on)


def _table(low, inst: Instruction):
    """The hook table pointer (aborts the process when the host has set none)."""
    b, module = low.b, low.llmod
    name = table_global_name(low.fn.name)
    pointer = module.globals.get(name)
    if pointer is None:
        pointer = ir.GlobalVariable(module, PTR, name=name)
        pointer.initializer = ir.Constant(PTR, None)
        pointer.align = 8
    table = b.load(pointer, typ=PTR)
    missing = b.append_basic_block("no_collectives_table")
    present = b.append_basic_block("collectives_table")
    b.cbranch(b.icmp_unsigned("==", table, ir.Constant(PTR, None)), missing, present)
    b.position_at_end(missing)
    abort = module.globals.get("abort") or ir.Function(module, ir.FunctionType(VOID, []), name="abort")
    b.call(abort, [])
    b.unreachable()
    b.position_at_end(present)
    return table


def _description(low, inst: Instruction, element, reduction: int, count: int, outer: int, inner_bytes: int):
    """A constant hlo_collective for this call."""
    module, config = low.llmod, low.module.config
    index = getattr(low, "collective_count", 0)
    low.collective_count = index + 1
    prefix = f"{low.fn.name}_collective{index}"
    groups = _replica_groups(inst)
    starts = [0]
    for g in groups:
        starts.append(starts[-1] + len(g))
    pairs = [int(v) for pair in inst.attrs.get("source_target_pairs") or () for v in pair]
    channel = inst.attrs.get("channel_id")
    # -1 for the ops without the attribute; absent means false for those that have it
    global_ids = bool(inst.attrs.get("use_global_device_ids")) if "use_global_device_ids" in inst.info.attr_map else None
    fields = [KINDS[inst.opcode], ELEMENT_TYPES.get(element.name, 0), element.byte_size, reduction,
              -1 if channel is None else int(channel), -1 if global_ids is None else int(bool(global_ids)),
              config.replica_count, config.num_partitions, len(groups), len(pairs) // 2, 0]
    types = DESCRIPTION.elements
    constants = [ir.Constant(t, v) for t, v in zip(types, fields)]
    constants += [_array(module, f"{prefix}_starts", starts), _array(module, f"{prefix}_ids", [i for g in groups for i in g]),
                  _array(module, f"{prefix}_pairs", pairs)]
    constants += [ir.Constant(I64, v) for v in (outer, inner_bytes, count, index)]
    constants.append(_string(module, f"{prefix}_name", f"%{inst.name} ({inst.loc})" if inst.loc else f"%{inst.name}"))
    to_apply = inst.attrs.get("to_apply")
    constants.append(_string(module, f"{prefix}_to_apply", _module_text(to_apply)) if to_apply is not None
                     else ir.Constant(PTR, None))
    g = ir.GlobalVariable(module, DESCRIPTION, name=prefix)
    g.initializer = ir.Constant(DESCRIPTION, constants)
    g.global_constant = True
    g.linkage = "internal"
    return g


def _array(module, name: str, values: list[int]):
    values = values or [0]
    ty = ir.ArrayType(I64, len(values))
    g = ir.GlobalVariable(module, ty, name=name)
    g.initializer = ir.Constant(ty, values)
    g.global_constant = True
    g.linkage = "internal"
    return g


def _string(module, name: str, text: str):
    data = bytearray(text.encode()) + b"\0"
    ty = ir.ArrayType(ir.IntType(8), len(data))
    g = ir.GlobalVariable(module, ty, name=name)
    g.initializer = ir.Constant(ty, data)
    g.global_constant = True
    g.linkage = "internal"
    return g


def _zero(low, buffer: Buffer) -> None:
    size = buffer.shape.byte_size()
    if size:
        memset = low.llmod.declare_intrinsic("llvm.memset", [PTR, I64])
        low.b.call(memset, [low.pointer(buffer), ir.Constant(ir.IntType(8), 0), ir.Constant(I64, size),
                            ir.Constant(ir.IntType(1), 0)])


# --------------------------------------------------------------------------- attributes

def _reduction(inst: Instruction) -> int:
    """The hlo_reduction code of to_apply when it is one binary op of its two parameters, in
    order; 0 for any other computation (whose text the description carries)."""
    comp = inst.attrs["to_apply"]
    root = comp.root
    code = REDUCTIONS.get(root.opcode)
    if code is None or len(comp.parameters) != 2 or list(root.operands) != list(comp.parameters):
        return 0
    return code


def _module_text(comp) -> str:
    """A called computation (and those it calls) as the text of a module whose entry it is."""
    called, order = set(), []

    def visit(c) -> None:
        for inst in c.instructions:
            for value in inst.attrs.values():
                for callee in value if isinstance(value, (list, tuple)) else (value,):
                    if isinstance(callee, Computation) and id(callee) not in called:
                        called.add(id(callee))
                        visit(callee)
                        order.append(callee)

    visit(comp)
    parts = [format_computation(c) for c in order] + ["ENTRY " + format_computation(comp)]
    return "HloModule to_apply\n\n" + "\n\n".join(parts) + "\n"


def _replica_groups(inst: Instruction) -> list[tuple[int, ...]]:
    groups = inst.attrs.get("replica_groups")
    groups = getattr(groups, "groups", groups) or ()
    return [tuple(int(i) for i in g) for g in groups]


def _group_size(low, inst: Instruction) -> int:
    groups = _replica_groups(inst)
    if groups:
        return len(groups[0])
    config = low.module.config
    return config.num_partitions if inst.attrs.get("channel_id") is not None else config.replica_count


def _row_major(shape: Shape) -> bool:
    return list(shape.minor_to_major()) == list(range(shape.rank - 1, -1, -1))
