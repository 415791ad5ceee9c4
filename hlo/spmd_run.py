"""Partition a sharded module and run it on N simulated devices, global arrays in and out.

    from hlo.spmd_run import run_partitioned
    outputs = run_partitioned(text_or_module, [x, w], num_devices=None)

As `jax.jit` does: every input is the whole (global) array; each device gets its block of
it by the entry parameter's sharding; the per-device program (hlo.passes.spmd_partitioner)
runs on one interpreter thread per device (`hlo.interpreter.run_devices`, partitions = N),
and the outputs are assembled from the devices' blocks by the root's sharding.
The device count comes from `num_devices`, else num_partitions, the Shardy mesh, or the
largest device id in a sharding.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from .analysis.checker import check_module
from .interpreter import run
from .interpreter import run_devices
from .ir import Module
from .passes import spmd_shardings as SS
from .passes.sharding_propagation import is_sharded
from .passes.spmd_partitioner import device_count, partition
from .passes.spmd_reshard import block_sizes, positions
from .passes.spmd_stats import collective_stats
from .sharding import HloSharding, sharding_of
from .text.parser import parse_module


def run_global(module: Union[str, Module], inputs: Sequence[np.ndarray], partitions: Optional[int] = None,
               seed: int = 0):
    """What `hlo-run` does with a module: a global sharded program is partitioned and run on its
    devices (`partitions` sets the count), anything else runs as it is (hlo.run)."""
    if isinstance(module, str):
        module = parse_module(module)
        check_module(module)
    if is_sharded(module) and (partitions or device_count(module)) > 1:
        return run_partitioned(module, inputs, partitions, seed=seed)
    return run(module, *inputs, seed=seed)


def shard_array(x: np.ndarray, s: Optional[HloSharding], n: int) -> list[np.ndarray]:
    """Each device's block of the global array `x` (uneven blocks padded with zeros)."""
    x = np.asarray(x)
    rank = x.ndim
    t = SS.tiles(s, rank)
    if all(v == 1 for v in t):
        return [x] * n
    bs = block_sizes(x.shape, t)
    pos = positions(s, rank, n)
    out = []
    for d in range(n):
        idx = tuple(slice(pos[d, k] * bs[k], min((pos[d, k] + 1) * bs[k], x.shape[k])) for k in range(rank))
        block = x[idx]
        pad = [(0, bs[k] - block.shape[k]) for k in range(rank)]
        if any(p[1] for p in pad):
            block = np.pad(block, pad)
        out.append(np.ascontiguousarray(block))
    return out


def unshard_array(blocks: Sequence[np.ndarray], s: Optional[HloSharding], gdims: Sequence[int], n: int) -> np.ndarray:
    rank = len(gdims)
    t = SS.tiles(s, rank)
    if all(v == 1 for v in t):
        return np.asarray(blocks[0])
    bs = block_sizes(gdims, t)
    pos = positions(s, rank, n)
    out = np.empty(tuple(gdims), dtype=np.asarray(blocks[0]).dtype)
    for d in range(n):
        idx = tuple(slice(pos[d, k] * bs[k], min((pos[d, k] + 1) * bs[k], gdims[k])) for k in range(rank))
        sizes = tuple(i.stop - i.start for i in idx)
        out[idx] = np.asarray(blocks[d])[tuple(slice(0, z) for z in sizes)]
    return out


def partition_module(module: Union[str, Module], num_devices: Optional[int] = None):
    """(per-device Module, device count, partitioning context) for a sharded module or its text."""
    if isinstance(module, str):
        module = parse_module(module)
        check_module(module)
    n = num_devices or device_count(module)
    spmd, ctx = partition(module, n)
    return spmd, n, ctx


def run_partitioned(module: Union[str, Module], inputs: Sequence[np.ndarray],
                    num_devices: Optional[int] = None, seed: int = 0):
    """Global outputs of a sharded module (a list when the root is a tuple, else one array)."""
    spmd, n, ctx = partition_module(module, num_devices)
    return run_spmd(spmd, inputs, n, seed=seed, result_shape=ctx.module.entry.root.shape)


def run_spmd(spmd: Module, inputs: Sequence[np.ndarray], n: int, seed: int = 0, result_shape=None):
    """Run an already partitioned module (parameters and root carry their shardings).

    result_shape: the global result shape (needed to trim uneven blocks; else tiles x local)."""
    evaluators = run_devices(spmd, shard_inputs(spmd, inputs, n), partitions=n, seed=seed)
    return assemble_outputs(spmd, [ev.result for ev in evaluators], n, result_shape)


def shard_inputs(spmd: Module, inputs: Sequence[np.ndarray], n: int) -> list[list[np.ndarray]]:
    """Each device's argument list: its block of every global input."""
    params = spmd.entry.parameters
    if len(params) != len(inputs):
        raise ValueError(f"the module takes {len(params)} inputs, {len(inputs)} given")
    per_device = [[] for _ in range(n)]
    for p, x in zip(params, inputs):
        x = np.asarray(x, dtype=p.shape.element_type.dtype)
        for d, block in enumerate(shard_array(x, sharding_of(p), n)):
            per_device[d].append(block)
    return per_device


def assemble_outputs(spmd: Module, results: Sequence, n: int, result_shape=None):
    """The global outputs from every device's result (a list for a tuple root, else one array)."""
    root = spmd.entry.root
    s = sharding_of(root)
    if root.shape.is_tuple:
        leaves = SS.leaf_shardings(s, root.shape)
        outs = []
        for i, (sub, leaf) in enumerate(zip(root.shape.tuple_shapes, leaves)):
            gdims = result_shape.tuple_shapes[i].dims if result_shape is not None else _global_dims(sub.dims, leaf)
            outs.append(unshard_array([r[i] for r in results], leaf, gdims, n))
        return outs
    gdims = result_shape.dims if result_shape is not None else _global_dims(root.shape.dims, s)
    return unshard_array(results, s, gdims, n)


def _global_dims(local_dims, s) -> list[int]:
    """Global sizes when only the local ones are known: local size x tiles."""
    t = SS.tiles(s, len(local_dims))
    return [d * x for d, x in zip(local_dims, t)]


__all__ = ["run_global", "run_partitioned", "run_spmd", "partition_module", "shard_array", "unshard_array",
           "shard_inputs", "assemble_outputs",
           "is_sharded", "collective_stats"]
