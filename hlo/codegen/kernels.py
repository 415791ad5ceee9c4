"""The emitters of loop nests and control flow, and the Lowering they write through.

An emitter (EMITTERS, emitters.py) writes one instruction through a `Lowering`: the
driver (the entry function, driver.py) or one kernel function (kernel_function.py).
Each materialised instruction becomes one loop nest (over its
output, outermost dimension first in physical order so the innermost loop walks
contiguous memory) computing its value element by element (elemental.py), fusions
included: that is `emit_loop`, the emitter of every op with an element generator and
no emitter of its own. while, conditional and call become basic blocks of the driver;
tuples are compile-time groups of buffer pointers. Ops that are not
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
from . import contraction, index_digits, scalar_ops
# imported for their registrations (emitters, element generators, complex functions)
from . import complex_math, dot_variants, fft_emitter, passthrough, rng_kernels, rounding, scan  # noqa: F401
from .buffers import Assignment, Buffer, BufferKind, branch_computations, leaves_of, resolve
from .contraction import ContractionEmitter
from .elemental import ELEMENT_GENERATORS, ElementalEmitter, dot_operand_indices
from .emitters import EMITTERS, unsupported_error
from .function_context import FunctionContext, const64, major_to_minor
from .fused_buffers import fusion_scratch_bytes, materialize_fused
from .special_kernels import emit_scatter
from .types import I64, PTR, constant_of, load_element, store_element


class Lowering:
    """What every emitter writes through: one LLVM function being emitted (ctx, b, fn, llmod),
    the buffer assignment, and where each buffer is in that function (`pointer`).

    Two kinds exist: the entry function, a driver that runs control flow and calls kernels
    (driver.py), and one kernel in its own LLVM module whose buffers are its arguments
    (kernel_function.py). Emitters do not know which one they write into."""

    module: Module
    a: Assignment
    llmod: ir.Module
    fn: ir.Function
    ctx: FunctionContext
    elem: ElementalEmitter

    @property
    def b(self) -> ir.IRBuilder:
        return self.ctx.b

    @property
    def contractions(self) -> ContractionEmitter:
        raise NotImplementedError

    # -- pointers
    def pointer(self, buf: Buffer):
        """The LLVM pointer to a buffer's memory in the function being emitted."""
        raise NotImplementedError

    def pointer_of(self, inst: Instruction):
        """The buffer of a materialised array instruction."""
        return self.pointer(self.a.values[id(inst)])

    def buffer_of(self, inst: Instruction):
        value = self.a.values.get(id(inst))
        if value is None or isinstance(value, tuple):
            return None
        if resolve(value).kind is BufferKind.CONSTANT and inst.shape.rank == 0 and inst.opcode == Op.CONSTANT:
            return None  # (a scalar constant is computed inline; what aliases it, e.g. a branch's parameter, reads it)
        return self.pointer(value)

    # -- emission
    def emit_computation(self, comp: Computation) -> None:
        for inst in comp.post_order():
            with self.ctx.scope():
                self.emit(inst)

    def emit(self, inst: Instruction) -> None:
        emit_instruction(self, inst)

    def loop_entered(self) -> None:
        """A while loop's code starts here (debug compiles count its iterations: debug_values.py)."""

    def loop_iterated(self) -> None:
        """A while loop's back edge is here."""

    def emit_elemental(self, inst: Instruction, generator, value) -> None:
        """Store generator(index) into value's buffer(s) for every index of inst's output."""
        if isinstance(value, tuple) and ELEMENT_GENERATORS.details(inst.opcode).get("all_results"):
            buffers = leaves_of(value)
            shape = buffers[0].shape
            with self.ctx.loop_nest(shape.dims, major_to_minor(shape), roll_outer=True) as index:
                for v, buf in zip(generator(index), buffers):
                    store_element(self.b, v, self.pointer(buf), buf.shape, index)
            return
        if not isinstance(value, Buffer):
            raise error(f"the cpu backend cannot compile '{inst.opcode}' with a tuple result "
                        f"(%{written_name(inst.loc, inst.name)})", inst.loc)
        self.store_loop(inst.shape, self.pointer(value), generator, [inst])

    def store_loop(self, shape: Shape, pointer, generator, roots=()) -> None:
        with self.output_loop_nest(shape, roots) as index:
            store_element(self.b, generator(index), pointer, shape, index)

    def output_loop_nest(self, shape: Shape, roots=()):
        """Loops over shape computing roots, split where reshapes below them cut (index_digits.py)."""
        def is_leaf(inst):
            return all(inst is not r for r in roots) and (id(inst) in self.a.values or id(inst) in self.elem.bindings)
        splits = index_digits.loop_splits(list(roots), shape, is_leaf)
        return index_digits.loop_nest(self.ctx, self.elem.digits, shape, splits)

    def load_scalar(self, inst: Instruction):
        value = self.a.values[id(inst)]
        with self.ctx.scope():
            if resolve(value).kind is BufferKind.CONSTANT:
                return self.elem.compute(resolve(value).constant, ())
            return load_element(self.b, self.pointer(value), inst.shape, ())

    # -- copies
    def copy(self, dst: Buffer, src: Buffer, may_overlap: bool = False) -> None:
        if resolve(dst) is resolve(src):
            return
        if same_layout(dst, src):
            size = src.shape.byte_size()
            if size:
                intrinsic = "llvm.memmove" if may_overlap else "llvm.memcpy"
                memcpy = self.llmod.declare_intrinsic(intrinsic, [PTR, PTR, I64])
                self.b.call(memcpy, [self.pointer(dst), self.pointer(src), const64(size), ir.Constant(ir.IntType(1), 0)])
            return
        self.copy_relayout(dst, src)

    def copy_relayout(self, dst: Buffer, src: Buffer) -> None:
        """dst = src where their layouts differ: a loop nest over dst."""
        source = self.pointer(src)
        self.store_loop(dst.shape, self.pointer(dst), lambda index: load_element(self.b, source, src.shape, index))


def same_layout(dst: Buffer, src: Buffer) -> bool:
    return src.shape.minor_to_major() == dst.shape.minor_to_major() and src.shape.dims == dst.shape.dims


def emit_instruction(low: Lowering, inst: Instruction) -> None:
    """Run inst's emitter (EMITTERS) on `low`."""
    emitter = EMITTERS.get(inst.opcode)
    if emitter is None:
        raise unsupported_error(inst)
    emitter(low, inst)


# --------------------------------------------------------------------------- loops over the output

@EMITTERS.register(ops_with(Trait.NO_CODE))
def emit_nothing(low: Lowering, inst: Instruction) -> None:
    """Parameters, constants, tuples and get-tuple-element name buffers (buffers.py): no code."""


def emit_loop(low: Lowering, inst: Instruction) -> None:
    """One loop nest over the output computing each element (elemental.py)."""
    low.emit_elemental(inst, lambda index: low.elem.compute(inst, index), low.a.values[id(inst)])


@EMITTERS.register(Op.BITCAST)
def emit_bitcast(low: Lowering, inst: Instruction) -> None:
    value = low.a.values[id(inst)]
    if resolve(value) is value:   # else a view of its operand's buffer: no code
        emit_loop(low, inst)


@EMITTERS.register(Op.FUSION, scratch_bytes=fusion_scratch_bytes)
def emit_fusion(low: Lowering, inst: Instruction) -> None:
    body = inst.attrs["calls"]
    low.elem.bind_fusion(inst)
    materialize_fused(low, inst)
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


def _emit_multi_output(low: Lowering, root: Instruction, value) -> None:
    """A fusion with a tuple root: one loop nest for outputs of one shape, else one each."""
    outputs = list(zip(root.operands, leaves_of(value)))
    same = all(o.shape.dims == outputs[0][0].shape.dims for o, _ in outputs)
    if same:
        shape = outputs[0][1].shape
        with low.output_loop_nest(shape, [o for o, _ in outputs]) as index:
            for operand, buf in outputs:
                store_element(low.b, low.elem.value(operand, index), low.pointer(buf), buf.shape, index)
        return
    for operand, buf in outputs:
        with low.ctx.scope():
            low.emit_elemental(operand, lambda index, o=operand: low.elem.value(o, index), buf)


# --------------------------------------------------------------------------- reduce, dot, convolution

@EMITTERS.register(Op.REDUCE)
def emit_reduce(low: Lowering, inst: Instruction) -> None:
    if not accumulate_in_output(low, inst, low.a.values[id(inst)]):
        emit_loop(low, inst)


@EMITTERS.register(Op.DOT, scratch_bytes=contraction.scratch_bytes)
def emit_dot(low: Lowering, inst: Instruction) -> None:
    if not low.contractions.emit_top_level(inst, low.a.values[id(inst)]):
        emit_reduce(low, inst)


@EMITTERS.register(Op.CONVOLUTION, scratch_bytes=contraction.scratch_bytes)
def emit_convolution(low: Lowering, inst: Instruction) -> None:
    if not low.contractions.emit_top_level(inst, low.a.values[id(inst)]):
        emit_loop(low, inst)


def accumulate_in_output(low: Lowering, inst: Instruction, value) -> bool:
    """Reduce / dot whose output's minor dimension is contiguous in the input: loop over
    the input with that dimension innermost and accumulate into the output buffer,
    which vectorises without reassociating. False when the shape does not suit."""
    if inst.opcode == Op.REDUCE:
        return _reduce_into_output(low, inst, value)
    if inst.opcode == Op.DOT:
        return _dot_into_output(low, inst, value)
    return False


def _reduce_into_output(low: Lowering, inst: Instruction, value) -> bool:
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
    with low.ctx.loop_nest(shape.dims, major_to_minor(shape), roll_outer=True) as index:
        out_index = tuple(index[d] for d in kept)
        current = [load_element(b, low.pointer(o), o.shape, out_index) for o in outs]
        new = [elem.value(x, index) for x in inputs]
        for out, v in zip(outs, elem.call_scalar(inst.attrs["to_apply"], current + new)):
            store_element(b, v, low.pointer(out), out.shape, out_index)
    return True


def _dot_into_output(low: Lowering, inst: Instruction, value) -> bool:
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
def emit_dynamic_update_slice(low: Lowering, inst: Instruction) -> None:
    if id(inst) in low.a.in_place:
        update_in_place(low, inst, low.a.values[id(inst)])
    else:
        emit_loop(low, inst)


def update_in_place(low: Lowering, dus: Instruction, buf: Buffer) -> None:
    """Write only the update window of a dynamic-update-slice into the operand's buffer."""
    operand, update = dus.operands[:2]
    starts = low.elem.start_indices(dus, 2, operand.shape, update.shape.dims)
    pointer = low.pointer(buf)
    shape = update.shape
    with low.ctx.loop_nest(shape.dims, major_to_minor(shape), roll_outer=True) as index:
        v = low.elem.value(update, index)
        target = tuple(low.b.add(s, i) for s, i in zip(starts, index))
        store_element(low.b, v, pointer, buf.shape, target)


# --------------------------------------------------------------------------- control flow

@EMITTERS.register(Op.CALL)
def emit_call(low: Lowering, inst: Instruction) -> None:
    low.emit_computation(inst.attrs["to_apply"])


@EMITTERS.register(Op.WHILE)
def emit_while(low: Lowering, inst: Instruction) -> None:
    b = low.b
    state = leaves_of(low.a.values[id(inst)])
    for dst, src in zip(state, leaves_of(low.a.values[id(inst.operands[0])])):
        low.copy(dst, src)
    low.loop_entered()
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
    low.loop_iterated()
    b.branch(header)
    b.position_at_end(done)


@EMITTERS.register(Op.CONDITIONAL)
def emit_conditional(low: Lowering, inst: Instruction) -> None:
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
