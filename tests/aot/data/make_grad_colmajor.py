"""Writes grad_colmajor.hlo and its inputs/expected outputs (run by hand; needs jax).

JAX lowers a gradient whose result layout is column-major: the entry computation
layout ends in `->f32[16,24]{0,1}`. tests/aot/test_aot_layouts.py reads that result
from C through the header's index helper and compares it with XLA's values saved here.

    python tests/aot/data/make_grad_colmajor.py
"""
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

HERE = Path(__file__).resolve().parent


def loss(w, x):
    return jnp.sum(jnp.tanh(x @ w) ** 2)


def main() -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((16, 24)).astype(np.float32)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    grad = jax.jit(jax.grad(loss))
    text = grad.lower(w, x).as_text(dialect="hlo")
    assert "->f32[16,24]{0,1}" in text, "expected JAX to lower the gradient with a column-major result"
    (HERE / "grad_colmajor.hlo").write_text(text)
    np.savez(HERE / "grad_colmajor.inputs.npz", arg0=w, arg1=x)
    np.savez(HERE / "grad_colmajor.expected.npz", out0=np.asarray(grad(w, x)))


if __name__ == "__main__":
    main()
