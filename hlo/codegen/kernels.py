"""Lowering of a module's entry computation to one LLVM function.

    void NAME(void** params, void** results, void* temp)

EntryLowering walks the entry computation and calls each instruction's emitter
(EMITTERS, emitters.py). Each materialised instruction becomes one loop nest (over its
output, outermost dimension first in physical order so the innermost loop walks
contiguous memory) computing its value element by element (elemental.py), fusions
included: that is `emit_loop`, the emitter of every op with an element generator and
no emitter of its own. while, conditional and call become basic blocks of the same
function; tuples are compile-time groups of buffer pointers. Ops that are not
elementwise in nature (sort, scatter, cholesky, triangular-solve, ...) have their own
emitters in special_kernels.py; dot and convolution go through contraction.py.
"""
from __future__ import annotations

from llvmlite import ir

from ..attributes import DotDims
from ..diagnostics import error, written_name
from ..ir import Computation, Instruction, Module
from ..opcodes import Op, Trait, ops_with
from ..shapes import Shape
from . import contraction, scalar_ops
from .buffers import Assignment, Buffer, BufferKind, branch_computations, leaves_of, resolve
from .contraction import ContractionEmitter
from .elemental import ELEMENT_GENERATORS, ElementalEmitter, dot_operand_indices
from .emitters import EMITTERS, unsupported_error
from .function_context import FunctionContext, const64, major_to_minor
from .gemm import GemmLibrary
from .special_kernels import emit_scatter
from .types import I8, I64, PTR, constant_of, load_element, store_element

VOID = ir.VoidType()


class EntryLowering:
    def __init__(self, module: Module, assignment: Assignment, name: str, vector_bits: int = 128):
        self.module = module
        self.a = assignment
        self.llmod = ir.Module(name=module.name)
        self.fn = ir.Function(self.llmod, ir.FunctionType(VOID, [PTR, PTR, PTR]), name=name)
        for arg, arg_name in zip(self.fn.args, ("params", "results", "temp")):
            arg.name = arg_name
            arg.add_attribute("noalias")
        self.ctx = FunctionContext(self.llmod, self.fn)
        self.elem = ElementalEmitter(self.ctx, self.buffer_of)
        self.pointers: dict[int, ir.Value] = {}
        self.contractions = ContractionEmitter(self, GemmLibrary(self.llmod, name, vector_bits))

    @property
    def b(self) -> ir.IRBuilder:
        return self.ctx.b

    # -- pointers
    def pointer(self, buf: Buffer):
        buf = resolve(buf)
        found = self.pointers.get(id(buf))
        if found is not None:
            return found[1]
        ab = self.ctx.alloca_builder
        params, results, temp = self.fn.args
        if buf.kind is BufferKind.PARAM:
            slot = ab.gep(params, [const64(buf.number)], source_etype=PTR)
            ptr = ab.load(slot, typ=PTR)
        elif buf.kind is BufferKind.RESULT:
            slot = ab.gep(results, [const64(buf.number)], source_etype=PTR)
            ptr = ab.load(slot, typ=PTR)
        elif buf.kind is BufferKind.CONSTANT:
            ptr = self.elem.constant_global(buf.constant)
        else:
            ptr = ab.gep(temp, [const64(buf.offset)], source_etype=I8)
        self.pointers[id(buf)] = (buf, ptr)  # keeps buf alive so that its id stays unique
        return ptr

    def pointer_of(self, inst: Instruction):
        """The buffer of a materialised array instruction."""
        return self.pointer(self.a.values[id(inst)])

    def buffer_of(self, inst: Instruction):
        value = self.a.values.get(id(inst))
        if value is None or isinstance(value, tuple):
            return None
        if resolve(value).kind is BufferKind.CONSTANT and inst.shape.rank == 0:
            return None
        return self.pointer(value)

    # -- driver
    def lower(self) -> ir.Module:
        self.emit_computation(self.module.entry)
        self._copy_results()
        self.b.ret_void()
        self.ctx.finish()
        return self.llmod

    def emit_computation(self, comp: Computation) -> None:
        for inst in comp.post_order():
            with self.ctx.scope():
                self.emit(inst)

    def emit(self, inst: Instruction) -> None:
        emitter = EMITTERS.get(inst.opcode)
        if emitter is None:
            raise unsupported_error(inst)
        emitter(self, inst)

    def emit_elemental(self, inst: Instruction, generator, value) -> None:
        """Store generator(index) into value's buffer(s) for every index of inst's output."""
        if isinstance(value, tuple) and ELEMENT_GENERATORS.details(inst.opcode).get("all_results"):
            buffers = leaves_of(value)
            shape = buffers[0].shape
            with self.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
                for v, buf in zip(generator(index), buffers):
                    store_element(self.b, v, self.pointer(buf), buf.shape, index)
            return
        if not isinstance(value, Buffer):
            raise error(f"the cpu backend cannot compile '{inst.opcode}' with a tuple result "
                        f"(%{written_name(inst.loc, inst.name)})", inst.loc)
        self.store_loop(inst.shape, self.pointer(value), generator)

    def store_loop(self, shape: Shape, pointer, generator) -> None:
        with self.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
            store_element(self.b, generator(index), pointer, shape, index)

    def load_scalar(self, inst: Instruction):
        value = self.a.values[id(inst)]
        with self.ctx.scope():
            if resolve(value).kind is BufferKind.CONSTANT:
                return self.elem.compute(inst, ())
            return load_element(self.b, self.pointer(value), inst.shape, ())

    # -- copies
    def copy(self, dst: Buffer, src: Buffer, may_overlap: bool = False) -> None:
        if resolve(dst) is resolve(src):
            return
        if src.shape.minor_to_major() == dst.shape.minor_to_major() and src.shape.dims == dst.shape.dims:
            size = src.shape.byte_size()
            if size:
                intrinsic = "llvm.memmove" if may_overlap else "llvm.memcpy"
                memcpy = self.llmod.declare_intrinsic(intrinsic, [PTR, PTR, I64])
                self.b.call(memcpy, [self.pointer(dst), self.pointer(src), const64(size), ir.Constant(ir.IntType(1), 0)])
            return
        source = self.pointer(src)
        self.store_loop(dst.shape, self.pointer(dst), lambda index: load_element(self.b, source, src.shape, index))

    def _copy_results(self) -> None:
        for temp, param in self.a.result_stages:
            self.copy(temp, param)
        for j, src in self.a.result_copies:
            # an aliased result may be the very parameter buffer it copies (memmove allows that)
            self.copy(Buffer(src.shape, kind=BufferKind.RESULT, number=j), src, may_overlap=j in self.a.aliases)


# --------------------------------------------------------------------------- loops over the output

@EMITTERS.register(ops_with(Trait.NO_CODE))
def emit_nothing(low: EntryLowering, inst: Instruction) -> None:
    """Parameters, constants, tuples and get-tuple-element name buffers (buffers.py): no code."""


def emit_loop(low: EntryLowering, inst: Instruction) -> None:
    """One loop nest over the output computing each element (elemental.py)."""
    low.emit_elemental(inst, lambda index: low.elem.compute(inst, index), low.a.values[id(inst)])


@EMITTERS.register(Op.BITCAST)
def emit_bitcast(low: EntryLowering, inst: Instruction) -> None:
    value = low.a.values[id(inst)]
    if resolve(value) is value:   # else a view of its operand's buffer: no code
        emit_loop(low, inst)


@EMITTERS.register(Op.FUSION, scratch_bytes=contraction.scratch_bytes)
def emit_fusion(low: EntryLowering, inst: Instruction) -> None:
    body = inst.attrs["calls"]
    low.elem.bind_fusion(inst)
    root = body.root
    value = low.a.values[id(inst)]
    if low.contractions.emit_fused(inst, value):
        return
    if id(inst) in low.a.in_place:
        update_in_place(low, root, value)
        return
    if root.opcode == Op.SCATTER:
        emit_scatter(low, root, value)
        return
    if accumulate_in_output(low, root, value):
        return
    if root.opcode == Op.TUPLE:
        _emit_multi_output(low, root, value)
        return
    low.emit_elemental(root, lambda index: low.elem.value(root, index), value)


def _emit_multi_output(low: EntryLowering, root: Instruction, value) -> None:
    """A fusion with a tuple root: one loop nest for outputs of one shape, else one each."""
    outputs = list(zip(root.operands, leaves_of(value)))
    same = all(o.shape.dims == outputs[0][0].shape.dims for o, _ in outputs)
    if same:
        shape = outputs[0][1].shape
        with low.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
            for operand, buf in outputs:
                store_element(low.b, low.elem.value(operand, index), low.pointer(buf), buf.shape, index)
        return
    for operand, buf in outputs:
        with low.ctx.scope():
            low.emit_elemental(operand, lambda index, o=operand: low.elem.value(o, index), buf)


# --------------------------------------------------------------------------- reduce, dot, convolution

@EMITTERS.register(Op.REDUCE)
def emit_reduce(low: EntryLowering, inst: Instruction) -> None:
    if not accumulate_in_output(low, inst, low.a.values[id(inst)]):
        emit_loop(low, inst)


@EMITTERS.register(Op.DOT, scratch_bytes=contraction.scratch_bytes)
def emit_dot(low: EntryLowering, inst: Instruction) -> None:
    if not low.contractions.emit_top_level(inst, low.a.values[id(inst)]):
        emit_reduce(low, inst)


@EMITTERS.register(Op.CONVOLUTION, scratch_bytes=contraction.scratch_bytes)
def emit_convolution(low: EntryLowering, inst: Instruction) -> None:
    if not low.contractions.emit_top_level(inst, low.a.values[id(inst)]):
        emit_loop(low, inst)


def accumulate_in_output(low: EntryLowering, inst: Instruction, value) -> bool:
    """Reduce / dot whose output's minor dimension is contiguous in the input: loop over
    the input with that dimension innermost and accumulate into the output buffer,
    which vectorises without reassociating. False when the shape does not suit."""
    if inst.opcode == Op.REDUCE:
        return _reduce_into_output(low, inst, value)
    if inst.opcode == Op.DOT:
        return _dot_into_output(low, inst, value)
    return False


def _reduce_into_output(low: EntryLowering, inst: Instruction, value) -> bool:
    b, elem = low.b, low.elem
    n = len(inst.operands) // 2
    inputs, inits = inst.operands[:n], inst.operands[n:]
    shape = inputs[0].shape
    reduced = set(inst.attrs["dimensions"])
    if shape.rank == 0 or shape.minor_to_major()[0] in reduced or not reduced:
        return False
    kept = [d for d in range(shape.rank) if d not in reduced]
    outs = leaves_of(value)
    for out, init in zip(outs, inits):
        low.store_loop(out.shape, low.pointer(out), lambda index, i=init: elem.value(i, ()))
    with low.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
        out_index = tuple(index[d] for d in kept)
        current = [load_element(b, low.pointer(o), o.shape, out_index) for o in outs]
        new = [elem.value(x, index) for x in inputs]
        for out, v in zip(outs, elem.call_scalar(inst.attrs["to_apply"], current + new)):
            store_element(b, v, low.pointer(out), out.shape, out_index)
    return True


def _dot_into_output(low: EntryLowering, inst: Instruction, value) -> bool:
    b, elem = low.b, low.elem
    t = inst.shape.element_type
    if not isinstance(value, Buffer) or t.name not in ("f32", "f64") or inst.shape.rank == 0:
        return False
    lhs, rhs = inst.operands
    if lhs.shape.element_type is not t or rhs.shape.element_type is not t:
        return False
    dd = DotDims.of(inst)
    lhs_free = dd.lhs_free(lhs.shape.rank)
    rhs_free = dd.rhs_free(rhs.shape.rank)
    nb = len(dd.lhs_batch)
    out_minor = inst.shape.minor_to_major()[0]
    if out_minor < nb + len(lhs_free):
        return False
    rhs_dim = rhs_free[out_minor - nb - len(lhs_free)]
    if rhs.shape.minor_to_major()[0] != rhs_dim:
        return False
    out_ptr = low.pointer(value)
    zero = constant_of(t, 0.0)
    low.store_loop(inst.shape, out_ptr, lambda index: zero)
    out_dims = inst.shape.dims
    outer = [d for d in major_to_minor(inst.shape) if d != out_minor]
    contracting = [lhs.shape.dims[d] for d in dd.lhs_contracting]
    dims = list(out_dims) + contracting
    order = outer + list(range(len(out_dims), len(dims))) + [out_minor]
    with low.ctx.loop_nest(dims, order) as loops:
        index, c = loops[:len(out_dims)], loops[len(out_dims):]
        li, ri = dot_operand_indices(dd, lhs.shape.rank, rhs.shape.rank, index, c)
        x = elem.value(lhs, tuple(li))
        y = elem.value(rhs, tuple(ri))
        acc = load_element(b, out_ptr, inst.shape, index)
        store_element(b, b.fadd(acc, b.fmul(x, y, flags=["contract"]), flags=["contract"]), out_ptr,
                      inst.shape, index)
    return True


# --------------------------------------------------------------------------- in-place updates

@EMITTERS.register(Op.DYNAMIC_UPDATE_SLICE)
def emit_dynamic_update_slice(low: EntryLowering, inst: Instruction) -> None:
    if id(inst) in low.a.in_place:
        update_in_place(low, inst, low.a.values[id(inst)])
    else:
        emit_loop(low, inst)


def update_in_place(low: EntryLowering, dus: Instruction, buf: Buffer) -> None:
    """Write only the update window of a dynamic-update-slice into the operand's buffer."""
    operand, update = dus.operands[:2]
    starts = low.elem.start_indices(dus, 2, operand.shape, update.shape.dims)
    pointer = low.pointer(buf)
    shape = update.shape
    with low.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
        v = low.elem.value(update, index)
        target = tuple(low.b.add(s, i) for s, i in zip(starts, index))
        store_element(low.b, v, pointer, buf.shape, target)


# --------------------------------------------------------------------------- control flow

@EMITTERS.register(Op.CALL)
def emit_call(low: EntryLowering, inst: Instruction) -> None:
    low.emit_computation(inst.attrs["to_apply"])


@EMITTERS.register(Op.WHILE)
def emit_while(low: EntryLowering, inst: Instruction) -> None:
    b = low.b
    state = leaves_of(low.a.values[id(inst)])
    for dst, src in zip(state, leaves_of(low.a.values[id(inst.operands[0])])):
        low.copy(dst, src)
    header = low.fn.append_basic_block(f"{inst.name}.cond")
    body_block = low.fn.append_basic_block(f"{inst.name}.body")
    done = low.fn.append_basic_block(f"{inst.name}.done")
    b.branch(header)
    b.position_at_end(header)
    cond = inst.attrs["condition"]
    low.emit_computation(cond)
    flag = low.load_scalar(cond.root)
    b.cbranch(flag, body_block, done)
    b.position_at_end(body_block)
    body = inst.attrs["body"]
    low.emit_computation(body)
    roots = leaves_of(low.a.values[id(body.root)])
    swaps = low.a.while_swaps.get(id(inst), {})
    for k, temp in swaps.items():
        low.copy(temp, roots[k])
    for k, (dst, src) in enumerate(zip(state, roots)):
        low.copy(dst, swaps.get(k, src))
    b.branch(header)
    b.position_at_end(done)


@EMITTERS.register(Op.CONDITIONAL)
def emit_conditional(low: EntryLowering, inst: Instruction) -> None:
    b = low.b
    branches = branch_computations(inst)
    selector = low.load_scalar(inst.operands[0])
    out = leaves_of(low.a.values[id(inst)])
    done = low.fn.append_basic_block(f"{inst.name}.done")
    blocks = [low.fn.append_basic_block(f"{inst.name}.branch{k}") for k in range(len(branches))]
    if inst.operands[0].shape.element_type.is_pred:
        b.cbranch(selector, blocks[0], blocks[1])
    else:
        index = scalar_ops.to_i64(b, selector, inst.operands[0].shape.element_type)
        switch = b.switch(index, blocks[-1])
        for k, block in enumerate(blocks[:-1]):
            switch.add_case(const64(k), block)
    for branch, block in zip(branches, blocks):
        b.position_at_end(block)
        low.emit_computation(branch)
        for dst, src in zip(out, leaves_of(low.a.values[id(branch.root)])):
            low.copy(dst, src)
        b.branch(done)
    b.position_at_end(done)


# Every other op with an element generator is one loop nest over its output. (Registered
# last: the modules imported above have registered their own emitters by now.)
EMITTERS.register(ELEMENT_GENERATORS.handled() - EMITTERS.handled())(emit_loop)
