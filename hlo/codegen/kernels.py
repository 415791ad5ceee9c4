"""Lowering of a module's entry computation to one LLVM function.

    void NAME(void** params, void** results, void* temp)

Each materialised instruction becomes one loop nest (over its output, outermost
dimension first in physical order so the innermost loop walks contiguous memory)
computing its value element by element (elemental.py), fusions included. while,
conditional and call become basic blocks of the same function; tuples are
compile-time groups of buffer pointers. Ops that are not elementwise in nature
(sort, scatter, rng-bit-generator, cholesky, triangular-solve, ...) have their own
emitters in special_kernels.py.
"""
from __future__ import annotations

from llvmlite import ir

from ..diagnostics import error
from ..ir import Computation, Instruction, Module
from ..shapes import Shape
from . import scalar_ops
from .buffers import Assignment, Buffer, branch_computations, leaves_of, resolve
from .contraction import ContractionEmitter
from .gemm import GemmLibrary
from .elemental import ElementalEmitter, FunctionContext, const64, major_to_minor
from .types import I8, I64, PTR, constant_of, load_element, store_element
from ..opcodes import Op

VOID = ir.VoidType()
ALIAS_ONLY = ("parameter", "constant", "tuple", "get-tuple-element")


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
        if buf.kind == "param":
            slot = ab.gep(params, [const64(buf.number)], source_etype=PTR)
            ptr = ab.load(slot, typ=PTR)
        elif buf.kind == "result":
            slot = ab.gep(results, [const64(buf.number)], source_etype=PTR)
            ptr = ab.load(slot, typ=PTR)
        elif buf.kind == "constant":
            ptr = self.elem._constant_global(buf.constant)
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
        if resolve(value).kind == "constant" and inst.shape.rank == 0:
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
            self.ctx.memo_scopes.append({})
            try:
                self.emit(inst)
            finally:
                self.ctx.memo_scopes.pop()

    def emit(self, inst: Instruction) -> None:
        op = inst.opcode
        if op in ALIAS_ONLY:
            return
        value = self.a.values[id(inst)]
        if op == Op.BITCAST and resolve(value) is not value:
            return
        method = getattr(self, "_emit_" + op.replace("-", "_"), None)
        if method is None:
            from . import special_kernels
            method = special_kernels.EMITTERS.get(op)
            if method is not None:
                method(self, inst)
                return
            self.emit_elemental(inst, lambda index: self.elem._compute_uncached(inst, index), value)
            return
        method(inst)

    def emit_elemental(self, inst: Instruction, generator, value) -> None:
        if isinstance(value, tuple) and inst.opcode in ("reduce", "reduce-window"):
            buffers = leaves_of(value)
            shape = buffers[0].shape
            with self.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
                for v, buf in zip(generator(index), buffers):
                    store_element(self.b, v, self.pointer(buf), buf.shape, index)
            return
        if not isinstance(value, Buffer):
            raise error(f"the cpu backend cannot compile '{inst.opcode}' with a tuple result "
                        f"(%{inst.name})", inst.loc)
        self.store_loop(inst.shape, self.pointer(value), generator)

    def store_loop(self, shape: Shape, pointer, generator) -> None:
        with self.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
            store_element(self.b, generator(index), pointer, shape, index)

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
            self.copy(Buffer(src.shape, kind="result", number=j), src, may_overlap=j in self.a.aliases)

    # -- fusions
    def _emit_fusion(self, inst: Instruction) -> None:
        body = inst.attrs["calls"]
        self.elem.bind_fusion(inst)
        root = body.root
        value = self.a.values[id(inst)]
        if self.contractions.emit_fused(inst, value):
            return
        if id(inst) in self.a.in_place:
            self.update_in_place(root, value)
            return
        if root.opcode == Op.SCATTER:
            from .special_kernels import emit_scatter
            emit_scatter(self, root, value)
            return
        if self.accumulate_in_output(root, value):
            return
        if root.opcode == Op.TUPLE:
            outputs = list(zip(root.operands, leaves_of(value)))
            same = all(o.shape.dims == outputs[0][0].shape.dims for o, _ in outputs)
            if same:
                shape = outputs[0][1].shape
                with self.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
                    for operand, buf in outputs:
                        store_element(self.b, self.elem.value(operand, index), self.pointer(buf), buf.shape, index)
                return
            for operand, buf in outputs:
                self.ctx.memo_scopes.append({})
                self.emit_elemental(operand, lambda index, o=operand: self.elem.value(o, index), buf)
                self.ctx.memo_scopes.pop()
            return
        self.emit_elemental(root, lambda index: self.elem.value(root, index), value)

    def _emit_reduce(self, inst: Instruction) -> None:
        value = self.a.values[id(inst)]
        if not self.accumulate_in_output(inst, value):
            self.emit_elemental(inst, lambda index: self.elem._compute_uncached(inst, index), value)

    def _emit_dot(self, inst: Instruction) -> None:
        if not self.contractions.emit_top_level(inst, self.a.values[id(inst)]):
            self._emit_reduce(inst)

    def _emit_convolution(self, inst: Instruction) -> None:
        value = self.a.values[id(inst)]
        if not self.contractions.emit_top_level(inst, value):
            self.emit_elemental(inst, lambda index: self.elem._compute_uncached(inst, index), value)

    def accumulate_in_output(self, inst: Instruction, value) -> bool:
        """Reduce / dot whose output's minor dimension is contiguous in the input: loop over
        the input with that dimension innermost and accumulate into the output buffer,
        which vectorises without reassociating. False when the shape does not suit."""
        if inst.opcode == Op.REDUCE:
            return self._reduce_into_output(inst, value)
        if inst.opcode == Op.DOT:
            return self._dot_into_output(inst, value)
        return False

    def _reduce_into_output(self, inst: Instruction, value) -> bool:
        b, elem = self.b, self.elem
        n = len(inst.operands) // 2
        inputs, inits = inst.operands[:n], inst.operands[n:]
        shape = inputs[0].shape
        reduced = set(inst.attrs["dimensions"])
        if shape.rank == 0 or shape.minor_to_major()[0] in reduced or not reduced:
            return False
        kept = [d for d in range(shape.rank) if d not in reduced]
        outs = leaves_of(value)
        for out, init in zip(outs, inits):
            self.store_loop(out.shape, self.pointer(out), lambda index, i=init: elem.value(i, ()))
        with self.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
            out_index = tuple(index[d] for d in kept)
            current = [load_element(b, self.pointer(o), o.shape, out_index) for o in outs]
            new = [elem.value(x, index) for x in inputs]
            for out, v in zip(outs, elem.call_scalar(inst.attrs["to_apply"], current + new)):
                store_element(b, v, self.pointer(out), out.shape, out_index)
        return True

    def _dot_into_output(self, inst: Instruction, value) -> bool:
        from ..attributes import DotDims
        b, elem = self.b, self.elem
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
        out_ptr = self.pointer(value)
        zero = constant_of(t, 0.0)
        self.store_loop(inst.shape, out_ptr, lambda index: zero)
        out_dims = inst.shape.dims
        outer = [d for d in major_to_minor(inst.shape) if d != out_minor]
        contracting = [lhs.shape.dims[d] for d in dd.lhs_contracting]
        dims = list(out_dims) + contracting
        order = outer + list(range(len(out_dims), len(dims))) + [out_minor]
        with self.ctx.loop_nest(dims, order) as loops:
            index, c = loops[:len(out_dims)], loops[len(out_dims):]
            li, ri = [None] * lhs.shape.rank, [None] * rhs.shape.rank
            for k, (l, r) in enumerate(zip(dd.lhs_batch, dd.rhs_batch)):
                li[l] = ri[r] = index[k]
            for k, d in enumerate(lhs_free):
                li[d] = index[nb + k]
            for k, d in enumerate(rhs_free):
                ri[d] = index[nb + len(lhs_free) + k]
            for k, (l, r) in enumerate(zip(dd.lhs_contracting, dd.rhs_contracting)):
                li[l] = ri[r] = c[k]
            x = elem.value(lhs, tuple(li))
            y = elem.value(rhs, tuple(ri))
            acc = load_element(b, out_ptr, inst.shape, index)
            store_element(b, b.fadd(acc, b.fmul(x, y, flags=["contract"]), flags=["contract"]), out_ptr,
                          inst.shape, index)
        return True

    def _emit_dynamic_update_slice(self, inst: Instruction) -> None:
        value = self.a.values[id(inst)]
        if id(inst) in self.a.in_place:
            self.update_in_place(inst, value)
        else:
            self.emit_elemental(inst, lambda index: self.elem._compute_uncached(inst, index), value)

    def update_in_place(self, dus: Instruction, buf: Buffer) -> None:
        """Write only the update window of a dynamic-update-slice into the operand's buffer."""
        operand, update = dus.operands[:2]
        starts = self.elem._start_indices(dus, 2, operand.shape, update.shape.dims)
        pointer = self.pointer(buf)
        shape = update.shape
        with self.ctx.loop_nest(shape.dims, major_to_minor(shape)) as index:
            v = self.elem.value(update, index)
            target = tuple(self.b.add(s, i) for s, i in zip(starts, index))
            store_element(self.b, v, pointer, buf.shape, target)

    # -- control flow
    def _emit_call(self, inst: Instruction) -> None:
        self.emit_computation(inst.attrs["to_apply"])

    def _emit_while(self, inst: Instruction) -> None:
        b = self.b
        state = leaves_of(self.a.values[id(inst)])
        for dst, src in zip(state, leaves_of(self.a.values[id(inst.operands[0])])):
            self.copy(dst, src)
        header = self.fn.append_basic_block(f"{inst.name}.cond")
        body_block = self.fn.append_basic_block(f"{inst.name}.body")
        done = self.fn.append_basic_block(f"{inst.name}.done")
        b.branch(header)
        b.position_at_end(header)
        cond = inst.attrs["condition"]
        self.emit_computation(cond)
        flag = self.load_scalar(cond.root)
        b.cbranch(flag, body_block, done)
        b.position_at_end(body_block)
        body = inst.attrs["body"]
        self.emit_computation(body)
        roots = leaves_of(self.a.values[id(body.root)])
        swaps = self.a.while_swaps.get(id(inst), {})
        for k, temp in swaps.items():
            self.copy(temp, roots[k])
        for k, (dst, src) in enumerate(zip(state, roots)):
            self.copy(dst, swaps.get(k, src))
        b.branch(header)
        b.position_at_end(done)

    def load_scalar(self, inst: Instruction):
        value = self.a.values[id(inst)]
        ctx = self.ctx
        ctx.memo_scopes.append({})
        try:
            if resolve(value).kind == "constant":
                return self.elem._compute_uncached(inst, ())
            return load_element(self.b, self.pointer(value), inst.shape, ())
        finally:
            ctx.memo_scopes.pop()

    def _emit_conditional(self, inst: Instruction) -> None:
        b = self.b
        branches = branch_computations(inst)
        selector = self.load_scalar(inst.operands[0])
        out = leaves_of(self.a.values[id(inst)])
        done = self.fn.append_basic_block(f"{inst.name}.done")
        blocks = [self.fn.append_basic_block(f"{inst.name}.branch{k}") for k in range(len(branches))]
        if inst.operands[0].shape.element_type.is_pred:
            b.cbranch(selector, blocks[0], blocks[1])
        else:
            index = scalar_ops.to_i64(b, selector, inst.operands[0].shape.element_type)
            switch = b.switch(index, blocks[-1])
            for k, block in enumerate(blocks[:-1]):
                switch.add_case(const64(k), block)
        for branch, block in zip(branches, blocks):
            b.position_at_end(block)
            self.emit_computation(branch)
            for dst, src in zip(out, leaves_of(self.a.values[id(branch.root)])):
                self.copy(dst, src)
            b.branch(done)
        b.position_at_end(done)


def unsupported(inst: Instruction, what: str = ""):
    detail = f": {what}" if what else ""
    return error(f"the cpu backend does not support '{inst.opcode}'{detail} (%{inst.name})", inst.loc)
