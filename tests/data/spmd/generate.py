"""Generate the sharded JAX programs of tests/spmd (run by hand, with jax installed).

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/data/spmd/generate.py [NAME...]

For each case NAME it writes NAME.hlo (jax's global HLO with shardings), NAME.inputs.npz
(global inputs arg0, arg1, ...), NAME.expected.npz (jax's global outputs out0, out1, ...)
and, for the cases compared byte for byte, NAME.opt.hlo (XLA's partitioned, optimised dump).
The project's tests never import jax; they read these files.
"""
import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = {}


def case(name, opt=False):
    def deco(fn):
        CASES[name] = (fn, opt)
        return fn
    return deco


def mesh(shape, names):
    n = int(np.prod(shape))
    return Mesh(np.array(jax.devices()[:n]).reshape(shape), names)


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def ns(m, *spec):
    return NamedSharding(m, P(*spec))


@case("dp_mlp_train")
def dp_mlp_train(rng):
    m = mesh((8,), ("data",))

    def loss(params, x, y):
        w1, b1, w2 = params
        h = jnp.tanh(x @ w1 + b1)
        return jnp.mean((h @ w2 - y) ** 2)

    def step(w1, b1, w2, x, y):
        g = jax.grad(loss)((w1, b1, w2), x, y)
        return tuple(p - 0.1 * gp for p, gp in zip((w1, b1, w2), g))

    args = (rand(rng, 8, 16), rand(rng, 16), rand(rng, 16, 4), rand(rng, 32, 8), rand(rng, 32, 4))
    rep = ns(m)
    ins = (rep, rep, rep, ns(m, "data", None), ns(m, "data", None))
    return step, args, ins, (rep, rep, rep)


@case("tp_mlp", opt=True)
def tp_mlp(rng):
    m = mesh((4,), ("model",))

    def mlp(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    args = (rand(rng, 16, 32), rand(rng, 32, 64), rand(rng, 64, 32))
    return mlp, args, (ns(m), ns(m, None, "model"), ns(m, "model", None)), ns(m)


@case("tp_attention", opt=True)
def tp_attention(rng):
    m = mesh((4,), ("model",))
    heads, dh = 4, 8

    def attn(x, wq, wk, wv, wo):
        b, s, d = x.shape
        q = (x @ wq).reshape(b, s, heads, dh)
        k = (x @ wk).reshape(b, s, heads, dh)
        v = (x @ wv).reshape(b, s, heads, dh)
        logits = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(dh).astype(np.float32)
        p = jax.nn.softmax(logits, axis=-1)
        o = jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, s, heads * dh)
        return o @ wo

    d = heads * dh
    args = (rand(rng, 2, 8, d), rand(rng, d, d), rand(rng, d, d), rand(rng, d, d), rand(rng, d, d))
    col = ns(m, None, "model")
    return attn, args, (ns(m), col, col, col, ns(m, "model", None)), ns(m)


@case("fsdp_mlp")
def fsdp_mlp(rng):
    m = mesh((8,), ("fsdp",))

    def f(x, w1, w2):
        return jnp.tanh(x @ w1) @ w2

    args = (rand(rng, 16, 32), rand(rng, 32, 64), rand(rng, 64, 16))
    return f, args, (ns(m, "fsdp", None), ns(m, "fsdp", None), ns(m, "fsdp", None)), ns(m, "fsdp", None)


@case("mesh2d_mlp")
def mesh2d_mlp(rng):
    m = mesh((2, 4), ("data", "model"))

    def f(x, w1, b1, w2):
        return jax.nn.gelu(x @ w1 + b1) @ w2

    args = (rand(rng, 8, 16), rand(rng, 16, 32), rand(rng, 32), rand(rng, 32, 16))
    return f, args, (ns(m, "data", None), ns(m, None, "model"), ns(m, "model"), ns(m, "model", None)), \
        ns(m, "data", None)


@case("conv_batch")
def conv_batch(rng):
    m = mesh((2,), ("data",))

    def f(x, k):
        return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    args = (rand(rng, 4, 8, 8, 3), rand(rng, 3, 3, 3, 5))
    return f, args, (ns(m, "data"), ns(m)), ns(m, "data")


@case("conv_spatial")
def conv_spatial(rng):
    m = mesh((4,), ("h",))

    def f(x, k):
        return jax.lax.conv_general_dilated(x, k, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    args = (rand(rng, 2, 16, 8, 3), rand(rng, 3, 3, 3, 4))
    return f, args, (ns(m, None, "h"), ns(m)), ns(m, None, "h")


@case("reduce_window_spatial")
def reduce_window_spatial(rng):
    m = mesh((2,), ("h",))

    def f(x):
        return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 3, 3, 1), (1, 1, 1, 1), "SAME")

    args = (rand(rng, 2, 8, 8, 3),)
    return f, args, (ns(m, None, "h"),), ns(m, None, "h")


@case("reduce_sharded")
def reduce_sharded(rng):
    m = mesh((2, 2), ("x", "y"))

    def f(a):
        return a.sum(axis=1), a.max(axis=0), jnp.sum(a * a)

    args = (rand(rng, 8, 12),)
    return f, args, (ns(m, "x", "y"),), (ns(m, "x"), ns(m), ns(m))


@case("uneven")
def uneven(rng):
    m = mesh((4,), ("x",))

    def f(a, b):
        a = jax.lax.with_sharding_constraint(a, ns(m, "x"))            # 10 rows over 4 devices
        b = jax.lax.with_sharding_constraint(b, ns(m, None, "x"))      # 7 columns over 4 devices
        c = jnp.exp(a) + b
        d = jax.lax.with_sharding_constraint(c * 2.0, ns(m, "x"))
        return c.sum(axis=0), d.max(axis=1)

    args = (rand(rng, 10, 7), rand(rng, 10, 7))
    return f, args, (ns(m), ns(m)), (ns(m), ns(m))


@case("wsc_reshard")
def wsc_reshard(rng):
    m = mesh((2, 4), ("x", "y"))

    def f(a):
        b = jax.lax.with_sharding_constraint(a * 2.0, ns(m, None, ("x", "y")))
        c = jax.lax.with_sharding_constraint(b + 1.0, ns(m, "y", "x"))
        d = jax.lax.with_sharding_constraint(jnp.sin(c), ns(m))
        return d, c.T

    args = (rand(rng, 16, 8),)
    return f, args, (ns(m, ("x", "y")),), (ns(m, "x"), ns(m, "y"))


def _shard_map(fn, m, in_specs, out_specs):
    return jax.shard_map(fn, mesh=m, in_specs=in_specs, out_specs=out_specs, check_vma=False)


@case("shmap_psum")
def shmap_psum(rng):
    m = mesh((2, 4), ("x", "y"))
    f = _shard_map(lambda a: jax.lax.psum(a * 2.0, "y"), m, P("x", "y"), P("x", None))
    return f, (rand(rng, 8, 16),), None, None


@case("shmap_all_gather")
def shmap_all_gather(rng):
    m = mesh((4,), ("x",))
    f = _shard_map(lambda a: jax.lax.all_gather(a, "x", tiled=True) + 1.0, m, P("x"), P(None))
    return f, (rand(rng, 8, 4),), None, None


@case("shmap_ppermute")
def shmap_ppermute(rng):
    m = mesh((4,), ("x",))
    perm = [(i, (i + 1) % 4) for i in range(4)]
    f = _shard_map(lambda a: jax.lax.ppermute(a, "x", perm), m, P("x"), P("x"))
    return f, (rand(rng, 8, 3),), None, None


@case("shmap_all_to_all")
def shmap_all_to_all(rng):
    m = mesh((4,), ("x",))
    f = _shard_map(lambda a: jax.lax.all_to_all(a, "x", 1, 0, tiled=True), m, P("x"), P("x"))
    return f, (rand(rng, 8, 8),), None, None


@case("shmap_psum_scatter")
def shmap_psum_scatter(rng):
    m = mesh((2,), ("x",))
    f = _shard_map(lambda a: jax.lax.psum_scatter(a, "x", scatter_dimension=0, tiled=True), m, P(None, "x"),
                   P("x", None))
    return f, (rand(rng, 8, 6),), None, None


def generate(name):
    fn, opt = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    f, args, ins, outs = fn(rng)
    kw = {}
    if ins is not None:
        kw["in_shardings"] = ins
    if outs is not None:
        kw["out_shardings"] = outs
    jf = jax.jit(f, **kw)
    lowered = jf.lower(*args)
    with open(os.path.join(HERE, name + ".hlo"), "w") as fh:
        fh.write(lowered.as_text(dialect="hlo"))
    if opt:
        with open(os.path.join(HERE, name + ".opt.hlo"), "w") as fh:
            fh.write(lowered.compile().as_text())
    out = jf(*args)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    np.savez(os.path.join(HERE, name + ".inputs.npz"), **{f"arg{i}": np.asarray(a) for i, a in enumerate(args)})
    np.savez(os.path.join(HERE, name + ".expected.npz"), **{f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
    print("wrote", name)


if __name__ == "__main__":
    for n in sys.argv[1:] or CASES:
        generate(n)
