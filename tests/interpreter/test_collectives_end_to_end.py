"""Collectives run end to end: HLO text through the evaluator on 2, 4 and 8 simulated devices."""
import numpy as np
import pytest

import hlo

SUM = """
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""


def module(body: str, replicas: int, extra: str = SUM) -> str:
    return f"HloModule m, replica_count={replicas}\n{extra}\nENTRY %main {{\n{body}\n}}\n"


def device_inputs(n: int, shape=(2,)):
    """Device d gets the array filled with d+1, so every result is easy to compute by hand."""
    return [[np.full(shape, d + 1, np.float32)] for d in range(n)]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_all_reduce_over_all_replicas(n):
    text = module("""  %p = f32[2] parameter(0)
  ROOT %r = f32[2] all-reduce(%p), replica_groups={}, to_apply=%sum""", n)
    results = hlo.run(text, per_device_inputs=device_inputs(n))
    total = n * (n + 1) / 2
    for out in results:
        np.testing.assert_array_equal(out[0], [total, total])


@pytest.mark.parametrize("n,groups", [(4, "{{0,2},{1,3}}"), (8, "{{0,1,2,3},{4,5,6,7}}"), (8, "[4,2]<=[2,4]T(1,0)")])
def test_all_reduce_with_replica_groups(n, groups):
    text = module(f"""  %p = f32[2] parameter(0)
  ROOT %r = f32[2] all-reduce(%p), replica_groups={groups}, to_apply=%sum""", n)
    results = hlo.run(text, per_device_inputs=device_inputs(n))
    parsed = hlo.parse_module(text)
    members = parsed.entry.root.attrs["replica_groups"].groups
    for group in members:
        expected = sum(d + 1 for d in group)
        for d in group:
            np.testing.assert_array_equal(results[d][0], [expected, expected])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_all_gather_concatenates_in_group_order(n):
    text = module(f"""  %p = f32[2] parameter(0)
  ROOT %g = f32[{2 * n}] all-gather(%p), replica_groups={{}}, dimensions={{0}}""", n)
    results = hlo.run(text, per_device_inputs=device_inputs(n))
    expected = np.repeat(np.arange(1, n + 1, dtype=np.float32), 2)
    for out in results:
        np.testing.assert_array_equal(out[0], expected)


@pytest.mark.parametrize("n", [2, 4, 8])
def test_reduce_scatter_gives_each_replica_its_shard(n):
    text = module(f"""  %p = f32[{n}] parameter(0)
  ROOT %r = f32[1] reduce-scatter(%p), replica_groups={{}}, dimensions={{0}}, to_apply=%sum""", n)
    inputs = [[np.arange(n, dtype=np.float32) * (d + 1)] for d in range(n)]
    results = hlo.run(text, per_device_inputs=inputs)
    scale = n * (n + 1) / 2
    for d, out in enumerate(results):
        np.testing.assert_array_equal(out[0], [d * scale])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_all_to_all_exchanges_blocks(n):
    text = module(f"""  %p = f32[{n}] parameter(0)
  ROOT %a = f32[{n}] all-to-all(%p), replica_groups={{}}, dimensions={{0}}""", n)
    inputs = [[np.arange(n, dtype=np.float32) + 10 * d] for d in range(n)]
    results = hlo.run(text, per_device_inputs=inputs)
    for d, out in enumerate(results):
        np.testing.assert_array_equal(out[0], [d + 10 * s for s in range(n)])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_collective_permute_rotates_and_zero_fills(n):
    pairs = ",".join(f"{{{i},{i + 1}}}" for i in range(n - 1))  # no one sends to replica 0
    text = module(f"""  %p = f32[2] parameter(0)
  ROOT %c = f32[2] collective-permute(%p), source_target_pairs={{{pairs}}}""", n)
    results = hlo.run(text, per_device_inputs=device_inputs(n))
    np.testing.assert_array_equal(results[0][0], [0, 0])
    for d in range(1, n):
        np.testing.assert_array_equal(results[d][0], [d, d])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_collective_broadcast_from_the_first_group_member(n):
    half = n // 2
    groups = "{" + ",".join("{" + ",".join(str(i) for i in g) + "}"
                            for g in (range(half - 1, -1, -1), range(half, n))) + "}"
    text = module(f"""  %p = f32[2] parameter(0)
  ROOT %b = f32[2] collective-broadcast(%p), replica_groups={groups}""", n)
    results = hlo.run(text, per_device_inputs=device_inputs(n))
    for d in range(half):
        np.testing.assert_array_equal(results[d][0], [half, half])
    for d in range(half, n):
        np.testing.assert_array_equal(results[d][0], [half + 1, half + 1])


def test_replica_id_and_async_all_reduce_on_four_replicas():
    text = module("""  %id = u32[] replica-id()
  %f = f32[] convert(%id)
  %start = f32[] all-reduce-start(%f), replica_groups={{0,1},{2,3}}, to_apply=%sum
  ROOT %done = f32[] all-reduce-done(%start)""", 4)
    results = hlo.run(text)
    assert [float(r[0]) for r in results] == [1.0, 1.0, 5.0, 5.0]


def test_cross_partition_all_reduce_with_channel_id():
    text = """HloModule m, num_partitions=4
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %main {
  %id = u32[] partition-id()
  %f = f32[] convert(%id)
  ROOT %r = f32[] all-reduce(%f), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%sum
}
"""
    results = hlo.run(text)
    assert [float(r[0]) for r in results] == [6.0] * 4
