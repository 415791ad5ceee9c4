"""Generators of control flow (call, fusion, while, conditional, scan), tuples, custom calls,
asynchronous wrappers, tokens and side effects, random numbers, and the collectives (these
only in modules of several replicas)."""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Optional

from ..opcodes import Op
from ..shapes import PRIMITIVE_TYPES, Shape
from .builder import ARITHMETIC_TYPES, INF, Comp, Val, array_shape, fits_exactly
from .registry import GENERATORS, random_dims, random_type

S32, PRED, U32, U64 = (PRIMITIVE_TYPES[n] for n in ("s32", "pred", "u32", "u64"))
TOKEN = Shape.token()


def _value(comp: Comp, rng, computable: bool = False, min_rank: int = 0) -> Optional[Val]:
    return comp.pick(rng, lambda v: v.shape.is_array and not v.raw and v.type in ARITHMETIC_TYPES
                     and not v.shape.is_dynamic and v.shape.rank >= min_rank and (v.computable or not computable))


def body(comp: Comp, rng, params: list, build: Callable[[Comp, list[Val]], Val], name: str) -> str:
    """A called computation over parameters like `params` (what is known of them carried
    over); `build` writes its root."""
    callee = comp.module.computation(name, comp.depth + 1)
    values = []
    for p in params:
        v = callee.parameter(p.shape, p.bound, p.frac)
        known = replace(v, exact=p.exact, raw=p.raw)
        callee.pool[callee.pool.index(v)] = known
        values.append(known)
    return comp.module.finish(callee, build(callee, values))


def elementwise_step(callee: Comp, rng, x: Val) -> Val:
    """-x, x + c or max(x, c) (not x for preds): a value of x's shape, for loop and branch bodies."""
    shape = array_shape(x.type, x.dims)
    if x.type.is_pred:
        return callee.add("not", shape, [x], bound=1.0, exact=x.exact)
    if rng.random() < 0.3 and not x.type.is_unsigned_int:
        return callee.add("negate", shape, [x], bound=x.bound, frac=x.frac, exact=x.exact)
    c = callee.make(rng, shape)
    if rng.random() < 0.5 and x.exact and not x.type.is_complex:
        return callee.add("maximum", shape, [x, c], bound=max(x.bound, c.bound), frac=max(x.frac, c.frac))
    bound = x.bound + c.bound
    exact = x.exact and (x.type.is_integral or fits_exactly(x.type, bound, max(x.frac, c.frac)))
    return callee.add("add", shape, [x, c], bound=bound if exact else INF, frac=max(x.frac, c.frac), exact=exact)


# --------------------------------------------------------------------------- calls and loops

@GENERATORS.register(Op.CALL, Op.FUSION)
def call(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _value(comp, rng)
    if x is None or comp.depth > 1:
        return None
    name = body(comp, rng, [x], lambda c, ps: elementwise_step(c, rng, ps[0]), "callee" if op == Op.CALL else "fused")
    attrs = f", to_apply={name}" if op == Op.CALL else f", kind=kLoop, calls={name}"
    return comp.add(op, array_shape(x.type, x.dims), [x], attrs, bound=INF, exact=False)


@GENERATORS.register(Op.WHILE)
def while_(comp: Comp, rng, op: str) -> Optional[Val]:
    """A counted loop: (counter, x) -> (counter + 1, step(x)) while counter < n."""
    x = _value(comp, rng)
    if x is None or comp.depth > 1:
        return None
    trips = int(rng.integers(0, 4))
    state = Shape.tuple_of([array_shape(S32, ()), array_shape(x.type, x.dims)])
    zero = comp.constant(S32, 0)
    init = comp.add("tuple", state, [zero, x], keep=False)

    def condition(c: Comp, ps: list[Val]) -> Val:
        i = c.add("get-tuple-element", array_shape(S32, ()), [ps[0]], ", index=0")
        n = c.constant(S32, trips)
        return c.add("compare", array_shape(PRED, ()), [i, n], ", direction=LT")

    def loop(c: Comp, ps: list[Val]) -> Val:
        i = c.add("get-tuple-element", array_shape(S32, ()), [ps[0]], ", index=0")
        v = c.add("get-tuple-element", array_shape(x.type, x.dims), [ps[0]], ", index=1", bound=x.bound, frac=x.frac,
                  exact=x.exact)
        one = c.constant(S32, 1)
        nxt = c.add("add", array_shape(S32, ()), [i, one])
        return c.add("tuple", state, [nxt, elementwise_step(c, rng, v)])

    whole = Val("state", state, INF, 0, False)
    cond_name = body(comp, rng, [whole], condition, "cond")
    body_name = body(comp, rng, [whole], loop, "body")
    result = comp.add(op, state, [init], f", condition={cond_name}, body={body_name}", keep=False)
    return comp.add("get-tuple-element", array_shape(x.type, x.dims), [result], ", index=1", bound=INF, exact=False)


@GENERATORS.register(Op.CONDITIONAL)
def conditional(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _value(comp, rng)
    if x is None or comp.depth > 1:
        return None
    count = int(rng.integers(1, 4))
    names = [body(comp, rng, [x], lambda c, ps: elementwise_step(c, rng, ps[0]), f"branch{k}") for k in range(count)]
    if count == 2 and rng.random() < 0.5:
        selector = comp.value_of(rng, array_shape(PRED, ()), computable=True)
        attrs = f", true_computation={names[0]}, false_computation={names[1]}"
    else:
        selector = comp.constant(S32, int(rng.integers(-1, count + 1)))  # out of range runs the last branch
        attrs = ", branch_computations={" + ", ".join(names) + "}"
    return comp.add(op, array_shape(x.type, x.dims), [selector] + [x] * count, attrs, bound=INF, exact=False)


@GENERATORS.register(Op.TUPLE, Op.GET_TUPLE_ELEMENT)
def tuple_(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _value(comp, rng)
    y = _value(comp, rng)
    if x is None or y is None:
        return None
    both = comp.add("tuple", Shape.tuple_of([x.shape, y.shape]), [x, y], keep=False)
    return comp.add("get-tuple-element", y.shape, [both], ", index=1", bound=y.bound, frac=y.frac, exact=y.exact)


@GENERATORS.register(Op.OPT_BARRIER)
def opt_barrier(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _value(comp, rng)
    if x is None:
        return None
    both = comp.add(op, Shape.tuple_of([x.shape]), [comp.add("tuple", Shape.tuple_of([x.shape]), [x], keep=False)],
                    keep=False)
    return comp.add("get-tuple-element", x.shape, [both], ", index=0", bound=x.bound, frac=x.frac, exact=x.exact)


# --------------------------------------------------------------------------- custom calls and async wrappers

@GENERATORS.register(Op.CUSTOM_CALL)
def custom_call(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _value(comp, rng, computable=True, min_rank=1)
    if x is None:
        return None
    if rng.random() < 0.5 or x.type.is_pred or x.type.is_complex or x.type.bits < 32:
        targets = ("Sharding", "MoveToHost", "MoveToDevice", "annotate_device_placement")
        target = targets[int(rng.integers(0, len(targets)))]
        extra = ", sharding={replicated}" if target == "Sharding" else ""
        return comp.add(op, x.shape, [x], f', custom_call_target="{target}"{extra}', bound=x.bound, frac=x.frac)
    k = int(rng.integers(1, x.dims[-1] + 1))
    dims = x.dims[:-1] + (k,)
    shape = Shape.tuple_of([array_shape(x.type, dims), array_shape(S32, dims)])
    pair = comp.add(op, shape, [x], ', custom_call_target="TopK"', keep=False)
    return comp.add("get-tuple-element", array_shape(x.type, dims), [pair], ", index=0", bound=x.bound, frac=x.frac)


@GENERATORS.register(Op.ASYNC_START, Op.ASYNC_UPDATE, Op.ASYNC_DONE)
def async_(comp: Comp, rng, op: str) -> Optional[Val]:
    """An elementwise step run asynchronously: async-start, async-update, async-done."""
    x = _value(comp, rng)
    if x is None or comp.depth > 1:
        return None
    name = body(comp, rng, [x], lambda c, ps: _one_instruction(c, ps[0]), "async_body")
    state = Shape.tuple_of([Shape.tuple_of([x.shape]), x.shape, array_shape(S32, ())])
    start = comp.add("async-start", state, [x], f", calls={name}", keep=False)
    if rng.random() < 0.5:
        start = comp.add("async-update", state, [start], f", calls={name}", keep=False)
    return comp.add("async-done", x.shape, [start], f", calls={name}", bound=INF, exact=False)


def _one_instruction(callee: Comp, x: Val) -> Val:
    """not x (preds and unsigned integers) or -x: what an asynchronous computation may hold."""
    shape = array_shape(x.type, x.dims)
    if x.type.is_pred or x.type.is_unsigned_int:
        return callee.add("not", shape, [x], bound=x.bound if x.type.is_pred else INF, exact=x.exact)
    return callee.add("negate", shape, [x], bound=x.bound, frac=x.frac, exact=x.exact)


@GENERATORS.register(Op.COPY_START, Op.COPY_DONE)
def copy_async(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _value(comp, rng)
    if x is None:
        return None
    start = comp.add("copy-start", Shape.tuple_of([x.shape, x.shape, array_shape(U32, ())]), [x], keep=False)
    return comp.add("copy-done", x.shape, [start], bound=x.bound, frac=x.frac, exact=x.exact)


# --------------------------------------------------------------------------- tokens, feeds and random numbers

@GENERATORS.register(Op.AFTER_ALL, Op.ADD_DEPENDENCY)
def dependency(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _value(comp, rng)
    if x is None:
        return None
    token = comp.add("after-all", TOKEN, (), keep=False)
    return comp.add("add-dependency", x.shape, [x, token], bound=x.bound, frac=x.frac, exact=x.exact)


@GENERATORS.register(Op.INFEED, Op.OUTFEED, Op.SEND, Op.SEND_DONE, Op.RECV, Op.RECV_DONE)
def host_transfer(comp: Comp, rng, op: str) -> Optional[Val]:
    """An outfeed of a value, or an infeed of a new one (the program's infeed data)."""
    if not comp.is_entry:
        return None
    comp.module.features.add("host-transfer")
    token = comp.add("after-all", TOKEN, (), keep=False)
    if op == Op.OUTFEED or op == Op.SEND or op == Op.SEND_DONE:
        x = _value(comp, rng)
        if x is None:
            return None
        if op == Op.OUTFEED:
            comp.add(op, TOKEN, [x, token], f", outfeed_shape={x.shape}", keep=False)
        else:
            channel = comp.module.unique_channel()
            send = comp.add("send", Shape.tuple_of([x.shape, array_shape(U32, ()), TOKEN]), [x, token],
                            f", channel_id={channel}, is_host_transfer=true", keep=False)
            comp.add("send-done", TOKEN, [send], f", channel_id={channel}, is_host_transfer=true", keep=False)
        return x
    shape = array_shape(random_type(rng, tuple(t for t in ARITHMETIC_TYPES if not t.is_complex)), random_dims(rng))
    comp.module.infeed.append(shape)
    if op == Op.INFEED:
        pair = comp.add(op, Shape.tuple_of([shape, TOKEN]), [token], keep=False)
    else:
        channel = comp.module.unique_channel()
        recv = comp.add("recv", Shape.tuple_of([shape, array_shape(U32, ()), TOKEN]), [token],
                        f", channel_id={channel}, is_host_transfer=true", keep=False)
        pair = comp.add("recv-done", Shape.tuple_of([shape, TOKEN]), [recv],
                        f", channel_id={channel}, is_host_transfer=true", keep=False)
    return comp.add("get-tuple-element", shape, [pair], ", index=0", bound=8.0, frac=2)


@GENERATORS.register(Op.RNG_BIT_GENERATOR)
def rng_bit_generator(comp: Comp, rng, op: str) -> Optional[Val]:
    algorithm = ("rng_three_fry", "rng_philox", "rng_default")[int(rng.integers(0, 3))]
    state_len = 2 if algorithm == "rng_three_fry" else 3
    state = comp.value_of(rng, array_shape(U64, (state_len,)), computable=True)
    out = array_shape(random_type(rng, (U32, U64, PRIMITIVE_TYPES["u8"])), random_dims(rng, int(rng.integers(1, 3))))
    pair = comp.add(op, Shape.tuple_of([state.shape, out]), [state], f", algorithm={algorithm}", keep=False)
    return comp.add("get-tuple-element", out, [pair], ", index=1", bound=INF)


@GENERATORS.register(Op.RNG, Op.RNG_GET_AND_UPDATE_STATE)
def rng_op(comp: Comp, rng, op: str) -> Optional[Val]:
    """The stateful generators: implementation-defined numbers (compared only between runs of
    the interpreter)."""
    comp.module.features.add("random-numbers")
    if op == Op.RNG_GET_AND_UPDATE_STATE:
        return comp.add(op, array_shape(U64, (2,)), (), ", delta=8", raw=True, bound=INF)
    t = PRIMITIVE_TYPES["f32"]
    low, high = comp.constant(t, 0), comp.constant(t, 1)
    return comp.add(op, array_shape(t, random_dims(rng)), [low, high], ", distribution=rng_uniform", raw=True,
                    bound=INF)


@GENERATORS.register(Op.DOMAIN)
def domain(comp: Comp, rng, op: str) -> Optional[Val]:
    x = _value(comp, rng)
    if x is None:
        return None
    return comp.add(op, x.shape, [x], ", domain={kind=\"sharding\", entry={maximal device=0}, exit={replicated}}",
                    bound=x.bound, frac=x.frac, exact=x.exact)


GENERATORS.unsupported(Op.PARAMETER, reason="made by every generator that needs an input")
GENERATORS.unsupported(Op.SCAN, reason="not generated yet (the interpreter's tests cover it; no other backend runs it)")


# --------------------------------------------------------------------------- collectives (several replicas)

@GENERATORS.register(Op.REPLICA_ID, Op.PARTITION_ID, devices=True)
def device_id(comp: Comp, rng, op: str) -> Optional[Val]:
    return comp.add(op, array_shape(U32, ()), (), bound=float(comp.module.replicas))


@GENERATORS.register(Op.ALL_REDUCE, Op.ALL_REDUCE_START, Op.ALL_REDUCE_DONE, Op.ALL_GATHER, Op.ALL_GATHER_START,
                     Op.ALL_GATHER_DONE, Op.REDUCE_SCATTER, Op.ALL_TO_ALL, Op.COLLECTIVE_PERMUTE,
                     Op.COLLECTIVE_PERMUTE_START, Op.COLLECTIVE_PERMUTE_DONE, Op.COLLECTIVE_BROADCAST, devices=True,
                     weight=2)
def collective(comp: Comp, rng, op: str) -> Optional[Val]:
    n = comp.module.replicas
    x = _value(comp, rng, computable=True, min_rank=1)
    if x is None or n < 2 or x.type.is_pred and op != Op.ALL_GATHER:
        return None
    comp.module.features.add("collectives")
    if op == Op.COLLECTIVE_PERMUTE or op == Op.COLLECTIVE_PERMUTE_START or op == Op.COLLECTIVE_PERMUTE_DONE:
        targets = [int(i) for i in rng.permutation(n)]
        pairs = ",".join(f"{{{i},{t}}}" for i, t in enumerate(targets) if rng.random() < 0.8)
        attrs = f", source_target_pairs={{{pairs}}}"
        if op == Op.COLLECTIVE_PERMUTE:
            return comp.add(op, x.shape, [x], attrs, bound=x.bound, frac=x.frac)
        start = comp.add("collective-permute-start", Shape.tuple_of([x.shape, x.shape]), [x], attrs, keep=False)
        return comp.add("collective-permute-done", x.shape, [start], bound=x.bound, frac=x.frac)
    if op == Op.COLLECTIVE_BROADCAST:
        return comp.add(op, x.shape, [x], ", replica_groups={}", bound=x.bound, frac=x.frac)
    groups, size = ("{}", n) if op != Op.ALL_REDUCE or rng.random() < 0.7 else _mesh_groups(rng, n)
    if op == Op.ALL_GATHER or op == Op.ALL_GATHER_START or op == Op.ALL_GATHER_DONE:
        dims = list(x.dims)
        dims[0] *= size
        shape = array_shape(x.type, dims)
        attrs = f", replica_groups={groups}, dimensions={{0}}"
        if op == Op.ALL_GATHER:
            return comp.add(op, shape, [x], attrs, bound=x.bound, frac=x.frac)
        start = comp.add("all-gather-start", Shape.tuple_of([x.shape, shape]), [x], attrs, keep=False)
        return comp.add("all-gather-done", shape, [start], bound=x.bound, frac=x.frac)
    if op == Op.ALL_TO_ALL:
        if x.dims[0] % n:
            return None
        groups = "{{" + ",".join(str(i) for i in range(n)) + "}}"  # (XLA's importer wants them listed)
        return comp.add(op, x.shape, [x], f", replica_groups={groups}, dimensions={{0}}", bound=x.bound, frac=x.frac)
    reducer = comp.module.scalar_reducer(Op.ADD if not x.type.is_pred else Op.OR, x.type)
    bound = x.bound * size
    exact = x.type.is_integral or fits_exactly(x.type, bound, x.frac)
    if op == Op.REDUCE_SCATTER:
        if x.dims[0] % size:
            return None
        dims = list(x.dims)
        dims[0] //= size
        return comp.add(op, array_shape(x.type, dims), [x], f", replica_groups={groups}, dimensions={{0}}, "
                        f"to_apply={reducer}", bound=bound if exact else INF, frac=x.frac, exact=exact)
    attrs = f", replica_groups={groups}, to_apply={reducer}"
    if op == Op.ALL_REDUCE:
        return comp.add(op, x.shape, [x], attrs, bound=bound if exact else INF, frac=x.frac, exact=exact)
    start = comp.add("all-reduce-start", x.shape, [x], attrs, keep=False)
    return comp.add("all-reduce-done", x.shape, [start], bound=bound if exact else INF, frac=x.frac, exact=exact)


def _mesh_groups(rng, n: int) -> tuple[str, int]:
    """XLA's mesh form over a (n/2) x 2 mesh of the replicas: groups along one axis or both."""
    if n % 2 or n < 4:
        return f"mesh['x'={n}] {{'x'}}", n
    choice = int(rng.integers(0, 3))
    axes = ("{'x'}", "{'y'}", "{'y','x'}")[choice]
    return f"mesh['x'={n // 2},'y'=2] {axes}", (n // 2, 2, n)[choice]


GENERATORS.unsupported(Op.RAGGED_ALL_TO_ALL, Op.COLLECTIVE_REDUCE, reason="not generated yet: their operands "
                       "(offsets and sizes per device) need a generator of consistent per-device tables")
