"""Generators of the ops that combine many elements: dot and convolution, reductions (with
associative reducers, and with serial ones whose order decides the result), sort and top-k,
map, and the linear-algebra ops."""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..opcodes import Op, Trait, has_trait, ops_with
from ..shapes import PRIMITIVE_TYPES
from .builder import ARITHMETIC_TYPES, FLOAT_TYPES, INF, Comp, Val, array_shape, fits_exactly, largest, small_value
from .gen_elementwise import takes
from .registry import GENERATORS, MAX_DIM, random_dims, random_type

PRED = PRIMITIVE_TYPES["pred"]
S32 = PRIMITIVE_TYPES["s32"]
NUMBERS = tuple(t for t in ARITHMETIC_TYPES if not t.is_pred)


def _numbers(comp: Comp, rng, min_rank: int = 0, types=NUMBERS, computable: bool = False) -> Optional[Val]:
    found = comp.pick(rng, lambda v: v.shape.is_array and v.type in types and v.shape.rank >= min_rank
                      and not v.raw and (v.computable or not computable))
    if found is None and rng.random() < 0.6:
        found = comp.make(rng, array_shape(random_type(rng, types), random_dims(rng, max(min_rank, 1))))
    return found


def _sum_result(comp: Comp, opcode: str, shape, operands, attrs: str, terms: int, bound: float, frac: int) -> Val:
    """A result that sums `terms` products of magnitude <= bound: exact while it fits."""
    total = terms * bound
    t = shape.element_type
    exact = all(o.exact for o in operands) and (t.is_integral or fits_exactly(t, total, frac))
    if t.is_integral and total > largest(t):
        total = largest(t)
    return comp.add(opcode, shape, operands, attrs, bound=total if exact else INF, frac=frac, exact=exact)


# --------------------------------------------------------------------------- dot and convolution

@GENERATORS.register(Op.DOT, weight=2)
def dot(comp: Comp, rng, op: str) -> Optional[Val]:
    lhs = _numbers(comp, rng, min_rank=1)
    if lhs is None:
        return None
    rank = lhs.shape.rank
    batch = int(rng.integers(0, rank))
    contract = int(rng.integers(0, rank - batch + 1))
    dims = list(rng.permutation(rank))
    lb, lc = sorted(dims[:batch]), sorted(dims[batch:batch + contract])
    rhs_free = random_dims(rng, int(rng.integers(0, 2)))
    rhs_dims = [lhs.dims[d] for d in lb] + [lhs.dims[d] for d in lc] + list(rhs_free)
    rhs_order = list(rng.permutation(len(rhs_dims)))
    rhs_t = lhs.type if rng.random() < 0.8 else random_type(rng, NUMBERS)
    rhs = comp.value_of(rng, array_shape(rhs_t, [rhs_dims[i] for i in rhs_order]), computable=False)
    rb = [rhs_order.index(i) for i in range(batch)]
    rc = [rhs_order.index(batch + i) for i in range(contract)]
    lfree = [lhs.dims[d] for d in range(rank) if d not in lb and d not in lc]
    rfree = [rhs.dims[d] for d in range(rhs.shape.rank) if d not in rb and d not in rc]
    out_dims = [lhs.dims[d] for d in lb] + lfree + rfree
    result_t = lhs.type if rhs_t is lhs.type or rng.random() < 0.5 else random_type(rng, NUMBERS)
    attrs = (f", lhs_batch_dims={{{','.join(map(str, lb))}}}, lhs_contracting_dims={{{','.join(map(str, lc))}}}"
             f", rhs_batch_dims={{{','.join(map(str, rb))}}}, rhs_contracting_dims={{{','.join(map(str, rc))}}}")
    terms = int(np.prod([lhs.dims[d] for d in lc])) if lc else 1
    if result_t.is_complex != (lhs.type.is_complex or rhs_t.is_complex) or (
            (lhs.type.is_float or rhs_t.is_float) and result_t.is_integral and not (lhs.computable and rhs.computable)):
        result_t = lhs.type if lhs.type.is_complex or not rhs_t.is_complex else rhs_t
    return _sum_result(comp, op, array_shape(result_t, out_dims), [lhs, rhs], attrs, terms, lhs.bound * rhs.bound,
                       lhs.frac + rhs.frac)


@GENERATORS.register(Op.CONVOLUTION)
def convolution(comp: Comp, rng, op: str) -> Optional[Val]:
    """A 1-D or 2-D convolution (b, 0.., f layout) with random strides, padding, dilations and groups."""
    spatial = int(rng.integers(1, 3))
    t = random_type(rng, [t for t in NUMBERS if not t.is_complex])
    groups = int(rng.integers(1, 3))
    feature = groups * int(rng.integers(1, 3))
    batch = int(rng.integers(1, 3))
    size = [int(rng.integers(1, MAX_DIM + 1)) for _ in range(spatial)]
    x = comp.value_of(rng, array_shape(t, [batch] + size + [feature]), computable=False)
    window, out_spatial, kernel = [], [], []
    for n in size:
        k = int(rng.integers(1, min(n, 3) + 1))
        stride, low, high = int(rng.integers(1, 3)), int(rng.integers(0, 2)), int(rng.integers(0, 2))
        rhs_dilate = int(rng.integers(1, 3)) if k > 1 and n + low + high >= (k - 1) * 2 + 1 else 1
        extent = (k - 1) * rhs_dilate + 1
        if n + low + high < extent:
            low, high, rhs_dilate, extent = 0, 0, 1, k
        window.append((k, stride, low, high, rhs_dilate))
        kernel.append(k)
        out_spatial.append((n + low + high - extent) // stride + 1)
    out_features = groups * int(rng.integers(1, 3))
    w = comp.value_of(rng, array_shape(t, kernel + [feature // groups, out_features]), computable=False)
    labels = "b" + "01"[:spatial] + "f_" + "01"[:spatial] + "io->b" + "01"[:spatial] + "f"
    text = ("size=" + "x".join(str(k) for k, *_ in window) + " stride=" + "x".join(str(s) for _, s, *_ in window)
            + " pad=" + "x".join(f"{lo}_{hi}" for _, _, lo, hi, _ in window)
            + " rhs_dilate=" + "x".join(str(d) for *_, d in window))
    attrs = f", window={{{text}}}, dim_labels={labels}" + (f", feature_group_count={groups}" if groups > 1 else "")
    terms = int(np.prod(kernel)) * (feature // groups)
    return _sum_result(comp, op, array_shape(t, [batch] + out_spatial + [out_features]), [x, w], attrs, terms,
                       x.bound * w.bound, x.frac + w.frac)


# --------------------------------------------------------------------------- reductions

SERIAL = None  # the reducer kind of the serial reducers (builder.serial_reducer)


def _reducer(comp: Comp, rng, t, computable: bool) -> tuple[str, Optional[str]]:
    """(computation name, kind): one associative op of the table that takes type t (add,
    maximum, and, ...), or SERIAL: a reducer that is not associative (acc + 2|x|, 2 acc - x),
    whose result depends on XLA:CPU's order. Values that are not exact only get summed."""
    kinds = [op for op in sorted(ops_with(Trait.ASSOCIATIVE)) if takes(op, t)] + ([SERIAL] if not t.is_pred else [])
    if not computable:
        kinds = [op for op in kinds if op == Op.ADD]
    if not kinds:
        return "", SERIAL
    kind = kinds[int(rng.integers(0, len(kinds)))]
    if kind is SERIAL:
        return comp.module.serial_reducer(t, int(rng.integers(0, 2))), SERIAL
    return comp.module.scalar_reducer(kind, t), kind


def _note_init(comp: Comp, kind: Optional[str], value, count: int) -> None:
    """XLA's passes assume a reduction's init value is an identity of its reducer (a reduce of
    single elements becomes a reshape, dropping the init): a program with another init value
    has results XLA leaves unspecified, so it is not compared with XLA:CPU (feature
    "non-identity-init"); the project's own backends still must agree on it."""
    zero_is_identity = kind is not SERIAL and has_trait(kind, Trait.ZERO_IDENTITY) and value == 0
    if not zero_is_identity and not (kind is SERIAL and count > 1):
        comp.module.features.add("non-identity-init")


def _power_bound(base: float, exponent: int) -> float:
    """base ** exponent, INF beyond the floats (a product of large values is not exact anyway)."""
    try:
        return base ** exponent
    except OverflowError:
        return INF


def _reduce_bound(kind: Optional[str], x: Val, init: Val, count: int) -> tuple[float, int]:
    frac = max(x.frac, init.frac)
    if kind == Op.ADD:
        return x.bound * count + init.bound, frac
    if kind is SERIAL:
        return (init.bound + 2 * x.bound) * 2 ** min(count, 60) if count else init.bound, frac
    if has_trait(kind, Trait.IDEMPOTENT) and not x.type.is_integral:
        return max(x.bound, init.bound), frac
    if kind == Op.MULTIPLY:
        return _power_bound(max(x.bound, init.bound, 1.0), min(count + 1, 60)), x.frac * (count + 1)
    return largest(x.type) if x.type.is_integral else max(x.bound, init.bound), frac


@GENERATORS.register(Op.REDUCE, weight=2)
def reduce(comp: Comp, rng, op: str) -> Optional[Val]:
    x = comp.pick(rng, lambda v: v.shape.is_array and v.type in ARITHMETIC_TYPES and not v.raw
                  and not v.shape.is_dynamic)
    if x is None:
        return None
    if rng.random() < 0.2 and x.computable and x.shape.rank >= 1 and not x.type.is_complex and not x.type.is_pred:
        return _argmax(comp, rng, x)
    reducer, kind = _reducer(comp, rng, x.type, x.computable)
    if not reducer:
        return None
    dims = sorted(int(d) for d in rng.choice(x.shape.rank, size=int(rng.integers(0, x.shape.rank + 1)), replace=False)) \
        if x.shape.rank else []
    init_value = small_value(x.type, rng) if rng.random() < 0.3 else 0
    init = comp.constant(x.type, init_value)
    count = int(np.prod([x.dims[d] for d in dims])) if dims else 1
    _note_init(comp, kind, init_value, count)
    bound, frac = _reduce_bound(kind, x, init, count)
    kept = [n for d, n in enumerate(x.dims) if d not in dims]
    exact = x.exact and (x.type.is_integral or x.type.is_pred or fits_exactly(x.type, bound, frac))
    return comp.add(op, array_shape(x.type, kept), [x, init],
                    f", dimensions={{{','.join(map(str, dims))}}}, to_apply={reducer}",
                    bound=bound if exact else INF, frac=frac, exact=exact)


def _argmax(comp: Comp, rng, x: Val) -> Val:
    """A variadic reduce: the largest value and its first index along one dimension."""
    dim = int(rng.integers(0, x.shape.rank))
    index = comp.add("iota", array_shape(S32, x.dims), (), f", iota_dimension={dim}", keep=False)
    lowest = comp.constant(x.type, -largest(x.type) if x.type.is_signed_int or x.type.is_float else 0)
    zero = comp.constant(S32, 0)
    kept = [n for d, n in enumerate(x.dims) if d != dim]
    reducer = comp.module.argmax_reducer(x.type)
    shape = array_shape(x.type, kept).__class__.tuple_of([array_shape(x.type, kept), array_shape(S32, kept)])
    pair = comp.add("reduce", shape, [x, index, lowest, zero], f", dimensions={{{dim}}}, to_apply={reducer}",
                    keep=False)
    which = int(rng.integers(0, 2))
    t = x.type if which == 0 else S32
    return comp.add("get-tuple-element", array_shape(t, kept), [pair], f", index={which}",
                    bound=x.bound if which == 0 else float(MAX_DIM), frac=x.frac)


def _window(rng, dims, allow_dilation: bool = True) -> tuple[str, list[int]]:
    sizes, strides, pads, base, dilate, out = [], [], [], [], [], []
    for n in dims:
        k = int(rng.integers(1, min(n, 3) + 1))
        s = int(rng.integers(1, 3))
        lo, hi = int(rng.integers(0, 2)), int(rng.integers(0, 2))
        b = int(rng.integers(1, 3)) if allow_dilation and rng.random() < 0.2 else 1
        d = int(rng.integers(1, 3)) if allow_dilation and rng.random() < 0.2 else 1
        padded = (n - 1) * b + 1 + lo + hi
        extent = (k - 1) * d + 1
        if padded < extent:
            d, extent = 1, k
            if padded < extent:
                lo, hi = 0, max(0, k - (n - 1) * b - 1)
                padded = (n - 1) * b + 1 + hi
        sizes.append(k), strides.append(s), pads.append(f"{lo}_{hi}"), base.append(b), dilate.append(d)
        out.append((padded - extent) // s + 1)
    text = f"size={'x'.join(map(str, sizes))} stride={'x'.join(map(str, strides))} pad={'x'.join(pads)}"
    if any(b > 1 for b in base):
        text += f" lhs_dilate={'x'.join(map(str, base))}"
    if any(d > 1 for d in dilate):
        text += f" rhs_dilate={'x'.join(map(str, dilate))}"
    return text, out


@GENERATORS.register(Op.REDUCE_WINDOW)
def reduce_window(comp: Comp, rng, op: str) -> Optional[Val]:
    x = comp.pick(rng, lambda v: v.shape.is_array and v.type in ARITHMETIC_TYPES and not v.raw
                  and not v.shape.is_dynamic and v.shape.rank >= 1)
    if x is None:
        return None
    reducer, kind = _reducer(comp, rng, x.type, x.computable)
    if not reducer:
        return None
    text, out = _window(rng, x.dims)
    init_value = small_value(x.type, rng) if rng.random() < 0.3 else 0
    init = comp.constant(x.type, init_value)
    _note_init(comp, kind, init_value, 9)
    bound, frac = _reduce_bound(kind, x, init, 9)
    exact = x.exact and (x.type.is_integral or x.type.is_pred or fits_exactly(x.type, bound, frac))
    return comp.add(op, array_shape(x.type, out), [x, init], f", window={{{text}}}, to_apply={reducer}",
                    bound=bound if exact else INF, frac=frac, exact=exact)


@GENERATORS.register(Op.SELECT_AND_SCATTER)
def select_and_scatter(comp: Comp, rng, op: str) -> Optional[Val]:
    x = comp.pick(rng, lambda v: v.computable and v.shape.rank >= 1 and not v.shape.is_dynamic
                  and v.type in NUMBERS and not v.type.is_complex)
    if x is None:
        return None
    # (no dilation: XLA:CPU ignores a select-and-scatter's; tests/fuzz/regressions checks ours)
    text, out = _window(rng, x.dims, allow_dilation=False)
    source = comp.value_of(rng, array_shape(x.type, out), computable=True)
    init = comp.constant(x.type, 0)
    direction = "GE" if rng.random() < 0.5 else "LE"
    select = comp.module.compare_computation(x.type, direction)
    add = comp.module.scalar_reducer(Op.ADD, x.type)
    bound = source.bound * int(np.prod(out)) + init.bound
    exact = source.exact and (x.type.is_integral or fits_exactly(x.type, bound, source.frac))
    return comp.add(op, array_shape(x.type, x.dims), [x, source, init],
                    f", window={{{text}}}, select={select}, scatter={add}", bound=bound if exact else INF,
                    frac=source.frac, exact=exact)


# --------------------------------------------------------------------------- sorting and map

@GENERATORS.register(Op.SORT)
def sort(comp: Comp, rng, op: str) -> Optional[Val]:
    keys = comp.pick(rng, lambda v: v.computable and v.shape.rank >= 1 and not v.shape.is_dynamic
                     and v.type in ARITHMETIC_TYPES and not v.type.is_complex)
    if keys is None:
        return None
    dim = int(rng.integers(0, keys.shape.rank))
    direction = "LT" if rng.random() < 0.5 else "GT"
    comparator = comp.module.sort_comparator(keys.type, direction, with_payload=rng.random() < 0.5)
    if comparator[1] is not None:
        payload = comp.value_of(rng, array_shape(comparator[1], keys.dims), computable=False)
        shape = array_shape(keys.type, keys.dims).__class__.tuple_of([keys.shape, payload.shape])
        both = comp.add(op, shape, [keys, payload], f", dimensions={{{dim}}}, is_stable=true, to_apply={comparator[0]}",
                        keep=False)
        which = int(rng.integers(0, 2))
        part = keys if which == 0 else payload
        return comp.add("get-tuple-element", part.shape, [both], f", index={which}", bound=part.bound, frac=part.frac,
                        exact=part.exact, raw=part.raw)
    return comp.add(op, keys.shape, [keys], f", dimensions={{{dim}}}, is_stable=true, to_apply={comparator[0]}",
                    bound=keys.bound, frac=keys.frac)


@GENERATORS.register(Op.TOPK)
def topk(comp: Comp, rng, op: str) -> Optional[Val]:
    x = comp.pick(rng, lambda v: v.computable and v.shape.rank >= 1 and v.type in FLOAT_TYPES + (S32,))
    if x is None:
        return None
    k = int(rng.integers(1, x.dims[-1] + 1))
    dims = x.dims[:-1] + (k,)
    shape = array_shape(x.type, dims).__class__.tuple_of([array_shape(x.type, dims), array_shape(S32, dims)])
    both = comp.add(op, shape, [x], f", k={k}, largest={'true' if rng.random() < 0.7 else 'false'}", keep=False)
    which = int(rng.integers(0, 2))
    return comp.add("get-tuple-element", array_shape(x.type if which == 0 else S32, dims), [both], f", index={which}",
                    bound=x.bound if which == 0 else float(MAX_DIM), frac=x.frac if which == 0 else 0)


@GENERATORS.register(Op.MAP)
def map_(comp: Comp, rng, op: str) -> Optional[Val]:
    x = comp.pick(rng, lambda v: v.computable and v.type in NUMBERS and not v.type.is_complex)
    if x is None:
        return None
    y = comp.value_of(rng, x.shape.with_layout(None).with_default_layouts(), computable=True)
    name = comp.module.serial_reducer(x.type, int(rng.integers(0, 2)))
    bound = x.bound + 2 * y.bound
    exact = x.type.is_integral or fits_exactly(x.type, bound * 2, max(x.frac, y.frac))
    return comp.add(op, array_shape(x.type, x.dims), [x, y], f", dimensions={{{','.join(map(str, range(x.shape.rank)))}}}"
                    f", to_apply={name}", bound=bound * 2 if exact else INF, frac=max(x.frac, y.frac), exact=exact)


# --------------------------------------------------------------------------- linear algebra

@GENERATORS.register(Op.CHOLESKY, Op.TRIANGULAR_SOLVE)
def factorisation(comp: Comp, rng, op: str) -> Optional[Val]:
    """On matrices made well conditioned (a x a^T + n I, or triangles with a strong diagonal)."""
    if not comp.is_entry:
        return None
    t = random_type(rng, tuple(PRIMITIVE_TYPES[n] for n in ("f32", "f64")))
    n = int(rng.integers(1, 5))
    batch = random_dims(rng, int(rng.integers(0, 2)))
    shape = array_shape(t, batch + (n, n))
    lower = rng.random() < 0.5
    a = comp.parameter(shape, INF, 0, lambda r, s=shape: well_conditioned(s, r))
    comp.module.features.add("linalg")
    if op == Op.CHOLESKY:
        return comp.add(op, shape, [a], f", lower={'true' if lower else 'false'}", exact=False, bound=INF)
    m = int(rng.integers(1, 4))
    left = rng.random() < 0.5
    b = comp.value_of(rng, array_shape(t, batch + ((n, m) if left else (m, n))), computable=False)
    attrs = (f", left_side={'true' if left else 'false'}, lower={'true' if lower else 'false'}"
             f", unit_diagonal={'true' if rng.random() < 0.3 else 'false'}"
             f", transpose_a={['NO_TRANSPOSE', 'TRANSPOSE', 'ADJOINT'][int(rng.integers(0, 3))]}")
    return comp.add(op, b.shape, [a, b], attrs, exact=False, bound=INF)


def well_conditioned(shape, rng: np.random.Generator) -> np.ndarray:
    """Symmetric positive definite matrices with a dominant diagonal (also fine triangles)."""
    n = shape.dims[-1]
    a = rng.integers(-2, 3, size=tuple(shape.dims)).astype(np.float64)
    spd = a @ np.swapaxes(a, -1, -2) + (4 * n) * np.eye(n)
    return spd.astype(shape.element_type.dtype)


@GENERATORS.register(Op.FFT)
def fft(comp: Comp, rng, op: str) -> Optional[Val]:
    kinds = ("FFT", "IFFT", "RFFT", "IRFFT")
    kind = kinds[int(rng.integers(0, 4))]
    rank = int(rng.integers(1, 3))
    length = [int(rng.integers(1, MAX_DIM + 1)) for _ in range(rank)]
    batch = random_dims(rng, int(rng.integers(0, 2)))
    c, f = PRIMITIVE_TYPES["c64"], PRIMITIVE_TYPES["f32"]
    if kind == "RFFT":
        x = comp.value_of(rng, array_shape(f, batch + tuple(length)), computable=False)
        out = array_shape(c, batch + tuple(length[:-1]) + (length[-1] // 2 + 1,))
    elif kind == "IRFFT":
        x = comp.value_of(rng, array_shape(c, batch + tuple(length[:-1]) + (length[-1] // 2 + 1,)), computable=False)
        out = array_shape(f, batch + tuple(length))
    else:
        x = comp.value_of(rng, array_shape(c, batch + tuple(length)), computable=False)
        out = x.shape
    return comp.add(op, out, [x], f", fft_type={kind}, fft_length={{{','.join(map(str, length))}}}",
                    exact=False, bound=INF)


@GENERATORS.register(Op.BATCH_NORM_INFERENCE, Op.BATCH_NORM_TRAINING, Op.BATCH_NORM_GRAD)
def batch_norm(comp: Comp, rng, op: str) -> Optional[Val]:
    t = PRIMITIVE_TYPES["f32"]
    dims = random_dims(rng, int(rng.integers(2, 4)))
    feature = int(rng.integers(0, len(dims)))
    x = comp.value_of(rng, array_shape(t, dims), computable=False)
    per_feature = array_shape(t, (dims[feature],))
    scale, offset = comp.value_of(rng, per_feature, False), comp.value_of(rng, per_feature, False)
    attrs = f", epsilon=0.001, feature_index={feature}"
    if op == Op.BATCH_NORM_INFERENCE:
        mean = comp.value_of(rng, per_feature, False)
        variance = comp.add("abs", per_feature, [comp.value_of(rng, per_feature, False)], keep=False)
        return comp.add(op, x.shape, [x, scale, offset, mean, variance], attrs, exact=False, bound=INF)
    if op == Op.BATCH_NORM_TRAINING:
        shape = x.shape.__class__.tuple_of([x.shape, per_feature, per_feature])
        both = comp.add(op, shape, [x, scale, offset], attrs, keep=False)
        return comp.add("get-tuple-element", x.shape, [both], ", index=0", exact=False, bound=INF)
    mean = comp.value_of(rng, per_feature, False)
    variance = comp.add("abs", per_feature, [comp.value_of(rng, per_feature, False)], keep=False)
    grad = comp.value_of(rng, x.shape, False)
    shape = x.shape.__class__.tuple_of([x.shape, per_feature, per_feature])
    both = comp.add(op, shape, [x, scale, mean, variance, grad], attrs, keep=False)
    return comp.add("get-tuple-element", x.shape, [both], ", index=0", exact=False, bound=INF)


GENERATORS.unsupported(Op.RAGGED_DOT, Op.SCALED_DOT, reason="not generated yet: the compiled backend and XLA:CPU "
                       "(its ragged-dot expansion) would only be compared through the interpreter's own tests")
