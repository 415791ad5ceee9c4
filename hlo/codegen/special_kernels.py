"""Emitters for ops that are not one value per output element: sort, topk, scatter,
select-and-scatter, cholesky and triangular-solve (the LAPACK custom-calls JAX emits are in
lapack_calls.py, which registers them in CUSTOM_CALLS).

Each is registered in EMITTERS (emitters.py) as `emit(lowering, inst)` (lowering:
kernels.EntryLowering); sorts register the scratch memory they need (two index arrays).
CUSTOM_CALLS maps a custom-call target to its emitter in the same form.
"""
from __future__ import annotations

from llvmlite import ir

from ..attributes import ScatterDims
from ..diagnostics import error, written_name
from ..ir import Instruction
from ..opcodes import Op
from ..shapes import F64 as F64_TYPE, Shape
from . import scalar_ops
from .buffers import leaves_of
from .emitters import EMITTERS
from .function_context import const64, major_to_minor
from .types import I1, I64, PTR, compute_type, load_element, store_element


def _row_dims(shape: Shape, dim: int) -> list[int]:
    return [d for d in major_to_minor(shape) if d != dim]


def _index_with(row, dim: int, position) -> tuple:
    out = list(row)
    out[dim] = position
    return tuple(out)


def merge_sort_rows(low, shape: Shape, dim: int, scratch_ptr, less, finish) -> None:
    """For every row along `dim`: a stable bottom-up merge sort of the positions 0..n-1.

    less(row, a, b) -> i1 says element a goes before b; finish(row, perm_ptr) consumes
    the sorted positions (an i64 array of n entries).
    """
    ctx, b = low.ctx, low.b
    n = shape.dims[dim]
    first = scratch_ptr
    second = b.gep(scratch_ptr, [const64(n)], source_etype=I64)
    dims = list(shape.dims)
    dims[dim] = 1
    src_slot, dst_slot = ctx.alloca(PTR, "src"), ctx.alloca(PTR, "dst")
    width_slot = ctx.alloca(I64, "width")
    i_slot, j_slot, k_slot = (ctx.alloca(I64, name) for name in ("mi", "mj", "mk"))
    with ctx.loop_nest(dims, _row_dims(shape, dim) + [dim]) as row:
        with ctx.loop(n, "init") as i:
            b.store(i, b.gep(first, [i], source_etype=I64))
        b.store(first, src_slot)
        b.store(second, dst_slot)
        b.store(const64(1), width_slot)
        with ctx.while_loop(lambda: b.icmp_signed("<", b.load(width_slot), const64(n)), "pass"):
            width = b.load(width_slot)
            src, dst = b.load(src_slot, typ=PTR), b.load(dst_slot, typ=PTR)
            double = b.mul(width, const64(2))
            with ctx.loop(const64(n), "run", step=1) as run:
                # run counts merges: lo = run * 2 * width, stop when lo >= n
                lo = b.mul(run, double)
                with ctx.if_then(b.icmp_signed("<", lo, const64(n)), "merge"):
                    mid = _min(b, b.add(lo, width), const64(n))
                    hi = _min(b, b.add(lo, double), const64(n))
                    b.store(lo, i_slot)
                    b.store(mid, j_slot)
                    b.store(lo, k_slot)
                    with ctx.while_loop(lambda: b.icmp_signed("<", b.load(k_slot), hi), "take"):
                        i, j, k = b.load(i_slot), b.load(j_slot), b.load(k_slot)
                        left_ok = b.icmp_signed("<", i, mid)
                        right_ok = b.icmp_signed("<", j, hi)
                        pi = b.load(b.gep(src, [b.select(left_ok, i, lo)], source_etype=I64), typ=I64)
                        pj = b.load(b.gep(src, [b.select(right_ok, j, lo)], source_etype=I64), typ=I64)
                        right_first = less(row, pj, pi)
                        take_right = b.and_(right_ok, b.or_(b.not_(left_ok), right_first))
                        b.store(b.select(take_right, pj, pi), b.gep(dst, [k], source_etype=I64))
                        b.store(b.select(take_right, b.add(j, const64(1)), j), j_slot)
                        b.store(b.select(take_right, i, b.add(i, const64(1))), i_slot)
                        b.store(b.add(k, const64(1)), k_slot)
            b.store(dst, src_slot)
            b.store(src, dst_slot)
            b.store(double, width_slot)
        finish(row, b.load(src_slot, typ=PTR))


def _min(b, x, y):
    return b.select(b.icmp_signed("<", x, y), x, y)


def _sort_scratch(inst: Instruction) -> int:
    """Two i64 permutations of one row."""
    return 16 * inst.operands[0].shape.dims[inst.attrs["dimensions"][0]]


def _topk_scratch(inst: Instruction) -> int:
    """Two i64 permutations of one row (the last dimension)."""
    return 16 * inst.operands[0].shape.dims[-1]


@EMITTERS.register(Op.SORT, scratch_bytes=_sort_scratch)
def emit_sort(low, inst: Instruction) -> None:
    b, elem = low.b, low.elem
    dim = inst.attrs["dimensions"][0]
    operands = inst.operands
    shape = operands[0].shape
    outputs = leaves_of(low.a.values[id(inst)])
    comparator = inst.attrs["to_apply"]
    scratch = low.pointer(low.a.scratch[id(inst)])

    def less(row, a, c):
        args = []
        for op in operands:
            args.append(elem.value(op, _index_with(row, dim, a)))
            args.append(elem.value(op, _index_with(row, dim, c)))
        return elem.call_scalar(comparator, args)[0]

    def finish(row, perm):
        with low.ctx.loop(shape.dims[dim], "gather") as i:
            p = b.load(b.gep(perm, [i], source_etype=I64), typ=I64)
            for op, out in zip(operands, outputs):
                store_element(b, elem.value(op, _index_with(row, dim, p)), low.pointer(out), out.shape,
                              _index_with(row, dim, i))

    merge_sort_rows(low, shape, dim, scratch, less, finish)


def _emit_topk(low, inst: Instruction, largest: bool) -> None:
    b, elem = low.b, low.elem
    operand = inst.operands[0]
    shape = operand.shape
    dim = shape.rank - 1
    t = shape.element_type
    values_buf, indices_buf = leaves_of(low.a.values[id(inst)])
    k = values_buf.shape.dims[-1]
    scratch = low.pointer(low.a.scratch[id(inst)])

    def key(row, position):
        v = elem.value(operand, _index_with(row, dim, position))
        if t.is_float:
            return scalar_ops.total_order_key(b, v, t), True
        return v, t.is_signed_int

    def less(row, a, c):
        (ka, signed), (kc, _) = key(row, a), key(row, c)
        cmp = b.icmp_signed if signed else b.icmp_unsigned
        return cmp(">" if largest else "<", ka, kc)

    def finish(row, perm):
        with low.ctx.loop(k, "topk") as i:
            p = b.load(b.gep(perm, [i], source_etype=I64), typ=I64)
            out_index = _index_with(row, dim, i)
            store_element(b, elem.value(operand, _index_with(row, dim, p)), low.pointer(values_buf),
                          values_buf.shape, out_index)
            store_element(b, b.trunc(p, compute_type(indices_buf.shape.element_type)),
                          low.pointer(indices_buf), indices_buf.shape, out_index)

    merge_sort_rows(low, shape, dim, scratch, less, finish)


@EMITTERS.register(Op.TOPK, scratch_bytes=_topk_scratch)
def emit_topk(low, inst: Instruction) -> None:
    _emit_topk(low, inst, inst.attrs.get("largest", True) is not False)


@EMITTERS.register(Op.SCATTER)
def emit_scatter(low, inst: Instruction, value=None) -> None:
    """Copy the operands to the outputs, then combine every in-bounds update window."""
    b, ctx, elem = low.b, low.ctx, low.elem
    n = (len(inst.operands) - 1) // 2
    operands, indices, updates = inst.operands[:n], inst.operands[n], inst.operands[n + 1:]
    outputs = leaves_of(low.a.values[id(inst)] if value is None else value)
    for out, op in zip(outputs, operands):
        low.store_loop(out.shape, low.pointer(out), lambda index, o=op: elem.value(o, index))
    dims = ScatterDims.of(inst)
    operand_shape = operands[0].shape
    update_shape = updates[0].shape
    uwd = list(dims.update_window_dims)
    scatter_dims = [d for d in range(update_shape.rank) if d not in uwd]
    window_operand_dims = [d for d in range(operand_shape.rank)
                           if d not in dims.inserted_window_dims and d not in dims.input_batching_dims]
    extent = [1] * operand_shape.rank
    for k, od in enumerate(window_operand_dims):
        extent[od] = update_shape.dims[uwd[k]]
    ivd = dims.index_vector_dim
    combiner = inst.attrs["to_apply"]
    with ctx.loop_nest([update_shape.dims[d] for d in scatter_dims]) as batch:
        position = list(batch)
        if ivd < indices.shape.rank:
            position.insert(ivd, None)
        starts = [const64(0)] * operand_shape.rank
        for k, od in enumerate(dims.scatter_dims_to_operand_dims):
            at = tuple(const64(k) if v is None else v for v in position)
            starts[od] = scalar_ops.to_i64(b, elem.value(indices, at), indices.shape.element_type)
        batch_positions = [d for d in range(indices.shape.rank) if d != ivd]
        for od, idim in zip(dims.input_batching_dims, dims.scatter_indices_batching_dims):
            starts[od] = batch[batch_positions.index(idim)]
        valid = ir.Constant(I1, 1)
        for d in range(operand_shape.rank):
            s = starts[d]
            ok = b.and_(b.icmp_signed(">=", s, const64(0)),
                        b.icmp_signed("<=", s, const64(operand_shape.dims[d] - extent[d])))
            valid = b.and_(valid, ok)
        with ctx.if_then(valid, "scatter"):
            with ctx.loop_nest([update_shape.dims[d] for d in uwd]) as window:
                update_index = [None] * update_shape.rank
                for d, v in zip(scatter_dims, batch):
                    update_index[d] = v
                for d, v in zip(uwd, window):
                    update_index[d] = v
                target = list(starts)
                for k, od in enumerate(window_operand_dims):
                    target[od] = b.add(starts[od], window[k])
                target = tuple(target)
                current = [load_element(b, low.pointer(o), o.shape, target) for o in outputs]
                new = [elem.value(u, tuple(update_index)) for u in updates]
                for out, v in zip(outputs, elem.call_scalar(combiner, current + new)):
                    store_element(b, v, low.pointer(out), out.shape, target)


@EMITTERS.register(Op.SELECT_AND_SCATTER)
def emit_select_and_scatter(low, inst: Instruction) -> None:
    b, ctx, elem = low.b, low.ctx, low.elem
    operand, source, init = inst.operands
    out = low.a.values[id(inst)]
    pointer = low.pointer(out)
    init_value = elem.value(init, ())
    low.store_loop(out.shape, pointer, lambda index: init_value)
    window = inst.attrs["window"]
    select, scatter = inst.attrs["select"], inst.attrs["scatter"]
    t = operand.shape.element_type
    best_slot = ctx.alloca(compute_type(t), "best")
    have_slot = ctx.alloca(I1, "have")
    pos_slots = [ctx.alloca(I64, "pos") for _ in window.dims]
    with ctx.loop_nest(source.shape.dims) as s_index:
        b.store(ir.Constant(I1, 0), have_slot)
        with ctx.loop_nest([wd.size for wd in window.dims]) as w:
            inside = ir.Constant(I1, 1)
            positions = []
            for d, (o, k, wd) in enumerate(zip(s_index, w, window.dims)):
                pos = b.sub(b.add(b.mul(o, const64(wd.stride)), k), const64(wd.padding_low))
                inside = b.and_(inside, b.and_(b.icmp_signed(">=", pos, const64(0)),
                                               b.icmp_signed("<", pos, const64(operand.shape.dims[d]))))
                positions.append(b.select(b.icmp_signed(">=", pos, const64(0)), pos, const64(0)))
            with ctx.if_then(inside, "candidate"):
                v = elem.value(operand, tuple(positions))
                have = b.load(have_slot)
                keep = elem.call_scalar(select, [b.load(best_slot), v])[0]
                take = b.or_(b.not_(have), b.not_(keep))
                with ctx.if_then(take, "take"):
                    b.store(v, best_slot)
                    b.store(ir.Constant(I1, 1), have_slot)
                    for slot, p in zip(pos_slots, positions):
                        b.store(p, slot)
        with ctx.if_then(b.load(have_slot), "scatter"):
            target = tuple(b.load(slot) for slot in pos_slots)
            current = load_element(b, pointer, out.shape, target)
            combined = elem.call_scalar(scatter, [current, elem.value(source, s_index)])[0]
            store_element(b, combined, pointer, out.shape, target)


# custom-call target -> emit(lowering, inst); lapack_calls.py adds the LAPACK targets.
CUSTOM_CALLS: dict = {"TopK": lambda low, inst: _emit_topk(low, inst, True)}
# custom-call target -> the scratch memory its emitter needs
CUSTOM_CALL_SCRATCH: dict = {"TopK": _topk_scratch}


def _custom_call_scratch(inst: Instruction) -> int:
    scratch = CUSTOM_CALL_SCRATCH.get(inst.attrs.get("custom_call_target"))
    return scratch(inst) if scratch is not None else 0


@EMITTERS.register(Op.CUSTOM_CALL, scratch_bytes=_custom_call_scratch)
def emit_custom_call(low, inst: Instruction) -> None:
    target = inst.attrs.get("custom_call_target")
    handler = CUSTOM_CALLS.get(target)
    if handler is None:
        raise error(f"the cpu backend does not support custom-call target '{target}' "
                    f"(%{written_name(inst.loc, inst.name)})",
                    inst.loc)
    handler(low, inst)


# --------------------------------------------------------------------------- linear algebra
# Both factorisations work in place on the result buffer (a copy of the input) and
# accumulate in double precision, like the interpreter.

def _matrix_accessor(low, buf, batch, transposed: bool):
    """(load(i, j), store(i, j, v)) on matrix `batch` of buf, optionally transposed, in f64."""
    b = low.b
    t = buf.shape.element_type
    pointer = low.pointer(buf)

    def position(i, j):
        return tuple(batch) + ((j, i) if transposed else (i, j))

    def load(i, j):
        return scalar_ops.convert(b, load_element(b, pointer, buf.shape, position(i, j)), t, F64_TYPE)

    def store(i, j, v):
        store_element(b, scalar_ops.convert(b, v, F64_TYPE, t), pointer, buf.shape, position(i, j))

    return load, store


F64V = ir.DoubleType()


def _dot_range(low, start, stop, term):
    """sum_{k=start}^{stop-1} term(k) in f64 (a loop with an alloca accumulator)."""
    ctx, b = low.ctx, low.b
    acc = ctx.alloca(F64V, "sum")
    b.store(ir.Constant(F64V, 0.0), acc)
    with ctx.loop(stop, "k", start=start) as k:
        b.store(b.fadd(b.load(acc), term(k)), acc)
    return b.load(acc)


def emit_cholesky_into(low, source, out, lower: bool, info=None, zero_other: bool = True) -> None:
    """Factor every matrix of `source` into `out` (L lower, or U = Lᵀ upper).

    A matrix that is not positive definite becomes NaN (its factor triangle only when
    zero_other is False, i.e. LAPACK potrf); info (if given) gets LAPACK's code.
    """
    ctx, b, elem = low.ctx, low.b, low.elem
    shape = out.shape
    n = shape.dims[-1]
    low.store_loop(shape, low.pointer(out), lambda index: elem.value(source, index))
    failed = ctx.alloca(I64, "failed")
    nan = ir.Constant(F64V, float("nan"))
    with ctx.loop_nest(shape.dims[:-2]) as batch:
        load, store = _matrix_accessor(low, out, batch, transposed=not lower)
        b.store(const64(0), failed)
        with ctx.loop(n, "j") as j:
            diag = b.fsub(load(j, j), _dot_range(low, const64(0), j, lambda k: b.fmul(load(j, k), load(j, k))))
            bad = b.fcmp_unordered("ule", diag, ir.Constant(F64V, 0.0))
            first = b.and_(bad, b.icmp_signed("==", b.load(failed), const64(0)))
            b.store(b.select(first, b.add(j, const64(1)), b.load(failed)), failed)
            root = b.call(scalar_ops.declare_overloaded(ctx.module, "llvm.sqrt", F64V, [diag]), [diag])
            store(j, j, root)
            with ctx.loop(const64(n), "i", start=b.add(j, const64(1))) as i:
                s = b.fsub(load(i, j), _dot_range(low, const64(0), j, lambda k: b.fmul(load(i, k), load(j, k))))
                store(i, j, b.fdiv(s, root))
        code = b.load(failed)
        with ctx.loop(n, "r") as r:
            with ctx.loop(n, "c") as c:
                in_factor = b.icmp_signed(">=", r, c)
                position_factor = b.and_(in_factor, b.icmp_signed("!=", code, const64(0)))
                if zero_other:
                    with ctx.if_then(b.not_(in_factor), "zero"):
                        store(r, c, ir.Constant(F64V, 0.0))
                    with ctx.if_then(b.icmp_signed("!=", code, const64(0)), "nan"):
                        store(r, c, nan)
                else:
                    with ctx.if_then(position_factor, "nan"):
                        store(r, c, nan)
        if info is not None:
            store_element(b, b.trunc(code, compute_type(info.shape.element_type)), low.pointer(info),
                          info.shape, tuple(batch))


@EMITTERS.register(Op.CHOLESKY)
def emit_cholesky(low, inst: Instruction) -> None:
    emit_cholesky_into(low, inst.operands[0], low.a.values[id(inst)], bool(inst.attrs.get("lower", False)))


def emit_triangular_solve_into(low, a, rhs, out, left_side: bool, lower: bool, unit_diagonal: bool,
                               transpose: bool, alpha=None) -> None:
    """Solve op(a)·x = b (left) or x·op(a) = b into `out`, by substitution in f64."""
    ctx, b, elem = low.ctx, low.b, low.elem
    low.store_loop(out.shape, low.pointer(out), lambda index: elem.value(rhs, index))
    swapped = transpose != (not left_side)  # the effective left matrix M is aᵀ
    m_lower = lower != swapped
    m = a.shape.dims[-1]
    k_count = out.shape.dims[-1] if left_side else out.shape.dims[-2]
    a_type = a.shape.element_type
    with ctx.loop_nest(out.shape.dims[:-2]) as batch:
        def mat(i, j):
            position = tuple(batch) + ((j, i) if swapped else (i, j))
            return scalar_ops.convert(b, elem.value(a, position), a_type, F64_TYPE)

        load_x, store_x = _matrix_accessor(low, out, batch, transposed=not left_side)
        with ctx.loop(m, "row") as step:
            i = step if m_lower else b.sub(const64(m - 1), step)
            with ctx.loop(k_count, "col") as c:
                if m_lower:
                    s = _dot_range(low, const64(0), i, lambda j: b.fmul(mat(i, j), load_x(j, c)))
                else:
                    s = _dot_range(low, b.add(i, const64(1)), const64(m), lambda j: b.fmul(mat(i, j), load_x(j, c)))
                value = b.fsub(load_x(i, c), s)
                if not unit_diagonal:
                    value = b.fdiv(value, mat(i, i))
                store_x(i, c, value)
        if alpha is not None:
            scale = scalar_ops.convert(b, elem.value(alpha, (const64(0),) * alpha.shape.rank), alpha.shape.element_type,
                                       F64_TYPE)
            with ctx.loop(m, "r") as r:
                with ctx.loop(k_count, "c") as c:
                    store_x(r, c, b.fmul(load_x(r, c), scale))


@EMITTERS.register(Op.TRIANGULAR_SOLVE)
def emit_triangular_solve(low, inst: Instruction) -> None:
    transpose = inst.attrs.get("transpose_a", "NO_TRANSPOSE") in ("TRANSPOSE", "ADJOINT")
    emit_triangular_solve_into(low, inst.operands[0], inst.operands[1], low.a.values[id(inst)],
                               bool(inst.attrs.get("left_side")), bool(inst.attrs.get("lower")),
                               bool(inst.attrs.get("unit_diagonal")), transpose)
