"""The JIT's parallel-for: the hook compiled code calls to run its parts on threads.

Compiled modules call `<entry>_parallel_for(task, ctx, parts)` (gemm.py) when their
`<entry>_num_threads` global is above 1; it must run task(ctx, i) for every i < parts
and return when all are done. For the JIT that hook is `hlo_pthread_parallel_for`,
emitted here and compiled once per process: parts 1.. run on new POSIX threads, part 0
on the calling thread, then every thread is joined (a part whose thread cannot be
created runs on the calling thread). An AOT user points the hook at their own thread
pool instead, or leaves it NULL (docs/AOT.md).
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm
from llvmlite import ir

from .gemm import IndirectCallee
from .options import CodegenOptions
from .target import create_target_machine
from .types import I32, I64, PTR

VOID = ir.VoidType()
MAX_PARTS = 64
NAME = "hlo_pthread_parallel_for"


def _c(v: int):
    return ir.Constant(I64, v)


def runner_ir() -> str:
    module = ir.Module("hlo_parallel")
    task_ty = ir.FunctionType(VOID, [PTR, I64])
    record = ir.LiteralStructType([PTR, PTR, I64])   # task, ctx, part
    create = ir.Function(module, ir.FunctionType(I32, [PTR, PTR, PTR, PTR]), name="pthread_create")
    join = ir.Function(module, ir.FunctionType(I32, [I64, PTR]), name="pthread_join")

    start = ir.Function(module, ir.FunctionType(PTR, [PTR]), name="hlo_parallel_part")
    start.linkage = "internal"
    b = ir.IRBuilder(start.append_basic_block())
    fields = [b.load(b.gep(start.args[0], [ir.Constant(I32, 0), ir.Constant(I32, k)], source_etype=record), typ=ty)
              for k, ty in enumerate(record.elements)]
    b.call(IndirectCallee(fields[0], task_ty), [fields[1], fields[2]])
    b.ret(ir.Constant(PTR, None))

    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64]), name=NAME)
    task, ctx, parts = fn.args
    entry, spawn, spawned, inline, own, wait, joined, done = (
        fn.append_basic_block(n) for n in ("entry", "spawn", "spawned", "inline", "own", "wait", "joined", "done"))
    b = ir.IRBuilder(entry)
    count = b.select(b.icmp_signed(">", parts, _c(MAX_PARTS)), _c(MAX_PARTS), parts)
    ids = b.alloca(ir.ArrayType(I64, MAX_PARTS), name="ids")
    started = b.alloca(ir.ArrayType(ir.IntType(8), MAX_PARTS), name="started")
    records = b.alloca(ir.ArrayType(record, MAX_PARTS), name="records")
    b.branch(spawn)

    b.position_at_end(spawn)       # for i in 1..count-1: start a thread (or run inline on failure)
    i = b.phi(I64, "i")
    i.add_incoming(_c(1), entry)
    has_more = b.icmp_signed("<", i, count)
    b.cbranch(has_more, spawned, own)
    b.position_at_end(spawned)
    rec = b.gep(records, [_c(0), i])
    for k, v in enumerate((task, ctx, i)):
        b.store(v, b.gep(rec, [ir.Constant(I32, 0), ir.Constant(I32, k)]))
    status = b.call(create, [b.gep(ids, [_c(0), i]), ir.Constant(PTR, None), start, rec])
    ok = b.icmp_signed("==", status, ir.Constant(I32, 0))
    b.store(b.zext(ok, ir.IntType(8)), b.gep(started, [_c(0), i]))
    next_i = b.add(i, _c(1))
    b.cbranch(ok, spawn, inline)
    b.position_at_end(inline)
    b.call(IndirectCallee(task, task_ty), [ctx, i])
    b.branch(spawn)
    i.add_incoming(next_i, spawned)
    i.add_incoming(next_i, inline)

    b.position_at_end(own)         # part 0 here, then join
    b.call(IndirectCallee(task, task_ty), [ctx, _c(0)])
    b.branch(wait)
    b.position_at_end(wait)
    j = b.phi(I64, "j")
    j.add_incoming(_c(1), own)
    b.cbranch(b.icmp_signed("<", j, count), joined, done)
    b.position_at_end(joined)
    flag = b.load(b.gep(started, [_c(0), j]), typ=ir.IntType(8))
    with b.if_then(b.icmp_unsigned("!=", flag, ir.Constant(ir.IntType(8), 0))):
        b.call(join, [b.load(b.gep(ids, [_c(0), j]), typ=I64), ir.Constant(PTR, None)])
    j.add_incoming(b.add(j, _c(1)), b.block)
    b.branch(wait)
    b.position_at_end(done)
    b.ret_void()
    return str(module)


@functools.lru_cache(maxsize=None)
def runner_address() -> int:
    """The address of hlo_pthread_parallel_for in this process (compiled on first use)."""
    tm = create_target_machine(CodegenOptions(), jit=True)
    ref = llvm.parse_assembly(runner_ir())
    ref.verify()
    engine = llvm.create_mcjit_compiler(ref, tm)
    engine.finalize_object()
    _ENGINES.append(engine)   # the code lives as long as its engine
    return engine.get_function_address(NAME)


_ENGINES: list = []
