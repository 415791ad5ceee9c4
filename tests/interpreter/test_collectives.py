"""Collectives over simulated devices: every device runs in its own thread, as in the evaluator."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo import values as V
from hlo.attributes import ReplicaGroups
from hlo.interpreter.collectives import (CollectiveContext, GroupMode, device_groups, group_mode)
from hlo.interpreter.combiner import Combiner

ADD = Combiner(lambda a, b: (a + b,), 2, np.add, "add")
MAX = Combiner(lambda a, b: (np.maximum(a, b),), 2, np.maximum, "max")
# Not commutative, not associative: reveals the fold order.
TENS = Combiner(lambda a, b: (a * 10 + b,), 2, None, "a*10+b")
# Variadic (2 operands): sum of the first, max of the second.
SUM_AND_MAX = Combiner(lambda a0, a1, b0, b1: (a0 + b0, np.maximum(a1, b1)), 4, None, "sum_max")


def groups(*gs):
    return ReplicaGroups(tuple(tuple(g) for g in gs))


def run_on_devices(ctx, fn, timeout=10.0):
    """Run fn(view) on every device in its own thread; {(replica, partition): result or exception}."""
    results = {}

    def body(r, p):
        try:
            results[(r, p)] = fn(ctx.device(r, p))
        except Exception as exc:   # collected for the test to inspect
            results[(r, p)] = exc

    threads = [threading.Thread(target=body, args=(r, p), daemon=True)
               for r in range(ctx.num_replicas) for p in range(ctx.num_partitions)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a device thread hung"
    return results


def values_of(results):
    """Raise the first exception, else the results with one-element lists unwrapped."""
    for v in results.values():
        if isinstance(v, Exception):
            raise v
    return {k: (v[0] if isinstance(v, list) and len(v) == 1 else v) for k, v in results.items()}


def flat(r, p, ctx):
    return r * ctx.num_partitions + p


# --------------------------------------------------------------------------- group modes

def test_group_mode_table():
    assert group_mode(None, False) is GroupMode.CROSS_REPLICA
    assert group_mode(None, None) is GroupMode.CROSS_REPLICA
    assert group_mode(3, None) is GroupMode.CROSS_PARTITION
    assert group_mode(3, False) is GroupMode.CROSS_REPLICA_AND_PARTITION
    assert group_mode(3, True) is GroupMode.FLATTENED_ID
    with pytest.raises(ValueError, match="requires a channel_id"):
        group_mode(None, True)


def test_device_groups_expand_like_xla():
    # 2 replicas x 2 partitions: device (r, p) has flattened id 2r + p.
    cross_replica = device_groups(GroupMode.CROSS_REPLICA, ((0, 1),), 2, 2)
    assert cross_replica == {0: (0, 2), 2: (0, 2), 1: (1, 3), 3: (1, 3)}
    cross_partition = device_groups(GroupMode.CROSS_PARTITION, ((1, 0),), 2, 2)
    assert cross_partition == {1: (1, 0), 0: (1, 0), 3: (3, 2), 2: (3, 2)}
    both = device_groups(GroupMode.CROSS_REPLICA_AND_PARTITION, ((1,), (0,)), 2, 2)
    assert both == {2: (2, 3), 3: (2, 3), 0: (0, 1), 1: (0, 1)}
    flattened = device_groups(GroupMode.FLATTENED_ID, ((0, 3), (2, 1)), 2, 2)
    assert flattened == {0: (0, 3), 3: (0, 3), 2: (2, 1), 1: (2, 1)}
    empty = device_groups(GroupMode.CROSS_PARTITION, (), 2, 2)
    assert empty[3] == (2, 3)


@pytest.mark.parametrize("mode, id_groups, message", [
    (GroupMode.CROSS_REPLICA, ((0, 1), (1, 2)), "replica id 1 appears more than once"),
    (GroupMode.CROSS_REPLICA, ((0, 4),), "names replica id 4, but only 4 exist"),
    (GroupMode.CROSS_PARTITION, ((0, 1),), "names partition id 1, but only 1 exist"),
    (GroupMode.CROSS_REPLICA, ((0, 1), ()), "empty group"),
    (GroupMode.CROSS_REPLICA, ((0,), (1, 2, 3)), "same size"),
    (GroupMode.FLATTENED_ID, (), "must be given explicitly"),
    (GroupMode.FLATTENED_ID, ((0, -1),), "flattened device id -1"),
])
def test_invalid_replica_groups(mode, id_groups, message):
    with pytest.raises(ValueError, match=message):
        device_groups(mode, id_groups, 4, 1)


# --------------------------------------------------------------------------- all-reduce

def test_all_reduce_two_replicas_spec_example():
    ctx = CollectiveContext(2, 1)
    data = {0: np.array([1.0, 2.5], np.float32), 1: np.array([3.0, 5.25], np.float32)}
    out = values_of(run_on_devices(ctx, lambda d: d.all_reduce([data[d.replica_id]], None, None, False, ADD)))
    for r in (0, 1):
        np.testing.assert_array_equal(out[(r, 0)], [4.0, 7.75])
        assert out[(r, 0)].dtype == np.float32


def test_all_reduce_strided_groups_four_replicas():
    ctx = CollectiveContext(4, 1)
    out = values_of(run_on_devices(ctx, lambda d: d.all_reduce(
        [np.array([d.replica_id, 10 * d.replica_id])], groups((0, 2), (1, 3)), None, False, ADD)))
    np.testing.assert_array_equal(out[(0, 0)], [2, 20])
    np.testing.assert_array_equal(out[(2, 0)], [2, 20])
    np.testing.assert_array_equal(out[(1, 0)], [4, 40])
    np.testing.assert_array_equal(out[(3, 0)], [4, 40])


def test_all_reduce_iota_groups_eight_replicas():
    # [2,4]<=[4,2]T(1,0) -> {{0,2,4,6},{1,3,5,7}}
    iota_groups = ReplicaGroups.from_iota(V.Iota((2, 4), (4, 2), (1, 0)))
    assert iota_groups.groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    ctx = CollectiveContext(8, 1)
    out = values_of(run_on_devices(ctx, lambda d: d.all_reduce(
        [np.int32(d.replica_id + 1)], iota_groups, None, False, ADD)))
    for r in range(8):
        assert out[(r, 0)] == (1 + 3 + 5 + 7 if r % 2 == 0 else 2 + 4 + 6 + 8)


# Every device holds its flattened id (2r + p, 2 replicas x 2 partitions).
@pytest.mark.parametrize("channel_id, global_ids, id_groups, expected", [
    # cross-replica: replicas {0,1} of each partition: p0: 0+2, p1: 1+3
    (None, False, (), {(0, 0): 2, (1, 0): 2, (0, 1): 4, (1, 1): 4}),
    # cross-replica-and-partition: replica 0 alone (all partitions) / replica 1 alone
    (1, False, ((0,), (1,)), {(0, 0): 1, (0, 1): 1, (1, 0): 5, (1, 1): 5}),
    # cross-replica-and-partition, empty groups: everyone
    (1, False, (), {(0, 0): 6, (0, 1): 6, (1, 0): 6, (1, 1): 6}),
    # flattened ids: {0,3} and {1,2}
    (1, True, ((0, 3), (1, 2)), {(0, 0): 3, (1, 1): 3, (0, 1): 3, (1, 0): 3}),
    # flattened ids: {0,1,2} and {3} (all-reduce allows unequal sizes)
    (1, True, ((0, 1, 2), (3,)), {(0, 0): 3, (0, 1): 3, (1, 0): 3, (1, 1): 3}),
])
def test_all_reduce_group_modes(channel_id, global_ids, id_groups, expected):
    ctx = CollectiveContext(2, 2)
    out = values_of(run_on_devices(ctx, lambda d: d.all_reduce(
        [np.array(d.flat_id)], groups(*id_groups), channel_id, global_ids, ADD)))
    assert {k: int(v) for k, v in out.items()} == expected


def test_all_to_all_with_channel_is_cross_partition():
    # partitions {0,1} of each replica exchange, replicas stay apart
    ctx = CollectiveContext(2, 2)
    out = values_of(run_on_devices(ctx, lambda d: d.all_to_all(
        [np.array([10 * d.flat_id, 10 * d.flat_id + 1])], 0, None, 7)))
    np.testing.assert_array_equal(out[(0, 0)], [0, 10])
    np.testing.assert_array_equal(out[(0, 1)], [1, 11])
    np.testing.assert_array_equal(out[(1, 0)], [20, 30])
    np.testing.assert_array_equal(out[(1, 1)], [21, 31])


def test_all_reduce_folds_in_group_order():
    ctx = CollectiveContext(3, 1)
    out = values_of(run_on_devices(ctx, lambda d: d.all_reduce(
        [np.array([d.replica_id])], groups((2, 0, 1)), None, False, TENS)))
    for r in range(3):
        np.testing.assert_array_equal(out[(r, 0)], [201])   # (2*10 + 0)*10 + 1


def test_variadic_all_reduce():
    ctx = CollectiveContext(2, 1)
    data = {0: (np.array([1, 2]), np.array([7.0, -1.0])), 1: (np.array([3, 4]), np.array([2.0, 5.0]))}
    out = values_of(run_on_devices(ctx, lambda d: d.all_reduce(
        list(data[d.replica_id]), None, None, False, SUM_AND_MAX)))
    for r in (0, 1):
        total, biggest = out[(r, 0)]
        np.testing.assert_array_equal(total, [4, 6])
        np.testing.assert_array_equal(biggest, [7.0, 5.0])


def test_results_are_independent_buffers():
    ctx = CollectiveContext(2, 1)
    out = values_of(run_on_devices(ctx, lambda d: d.all_reduce([np.ones(3)], None, None, False, ADD)))
    out[(0, 0)][0] = 99.0
    np.testing.assert_array_equal(out[(1, 0)], [2.0, 2.0, 2.0])


def test_repeated_collectives_pair_up_in_order():
    ctx = CollectiveContext(4, 1)

    def program(d):
        acc = np.array([d.replica_id])
        for _ in range(3):
            acc = d.all_reduce([acc], None, None, False, ADD)[0]
        return acc

    out = values_of(run_on_devices(ctx, program))
    assert all(int(v[0]) == 6 * 4 * 4 for v in out.values())   # 6 -> 24 -> 96


def test_independent_groups_may_run_different_numbers_of_collectives():
    ctx = CollectiveContext(4, 1)
    g = groups((0, 1), (2, 3))

    def program(d):
        x = np.array([1])
        for _ in range(2 if d.replica_id < 2 else 3):
            x = d.all_reduce([x], g, None, False, ADD)[0]
        return x

    out = values_of(run_on_devices(ctx, program))
    assert [int(out[(r, 0)][0]) for r in range(4)] == [4, 4, 8, 8]


def test_single_device_all_reduce_is_identity_copy():
    ctx = CollectiveContext(1, 1)
    x = np.array([1.5, 2.5])
    (y,) = ctx.device(0, 0).all_reduce([x], None, None, False, ADD)
    np.testing.assert_array_equal(y, x)
    assert y is not x


# --------------------------------------------------------------------------- all-gather

def test_all_gather_spec_example():
    ctx = CollectiveContext(2, 1)
    data = {0: np.array([1.0, 2.5]), 1: np.array([3.0, 5.25])}
    out = values_of(run_on_devices(ctx, lambda d: d.all_gather([data[d.replica_id]], 0, None, None, False)))
    for r in (0, 1):
        np.testing.assert_array_equal(out[(r, 0)], [1.0, 2.5, 3.0, 5.25])


def test_all_gather_dimension_1_in_group_order():
    ctx = CollectiveContext(4, 1)
    out = values_of(run_on_devices(ctx, lambda d: d.all_gather(
        [np.full((2, 1), d.replica_id)], 1, groups((3, 1), (0, 2)), None, False)))
    np.testing.assert_array_equal(out[(1, 0)], [[3, 1], [3, 1]])
    np.testing.assert_array_equal(out[(3, 0)], [[3, 1], [3, 1]])
    np.testing.assert_array_equal(out[(0, 0)], [[0, 2], [0, 2]])


def test_all_gather_eight_devices_flattened_ids_and_tuple():
    # 2 replicas x 4 partitions; groups {{0,1,4,5},{2,3,6,7}} (ops-2 ReduceScatter example)
    ctx = CollectiveContext(2, 4)
    g = groups((0, 1, 4, 5), (2, 3, 6, 7))
    out = values_of(run_on_devices(ctx, lambda d: d.all_gather(
        [np.array([d.flat_id]), np.array([[d.replica_id]])], 0, g, 1, True)))
    a, b = out[(1, 1)]           # flattened id 5: group 0
    np.testing.assert_array_equal(a, [0, 1, 4, 5])
    np.testing.assert_array_equal(b, [[0], [0], [1], [1]])
    a, _ = out[(0, 3)]           # flattened id 3: group 1
    np.testing.assert_array_equal(a, [2, 3, 6, 7])


def test_all_gather_rejects_unequal_groups():
    ctx = CollectiveContext(4, 1)
    out = run_on_devices(ctx, lambda d: d.all_gather([np.zeros(1)], 0, groups((0,), (1, 2, 3)), None, False))
    assert all(isinstance(v, ValueError) and "same size" in str(v) for v in out.values())


# --------------------------------------------------------------------------- reduce-scatter

def test_reduce_scatter_spec_example():
    ctx = CollectiveContext(2, 1)
    data = {0: np.array([1.0, 2.25]), 1: np.array([3.0, 5.25])}
    out = values_of(run_on_devices(ctx, lambda d: d.reduce_scatter(
        [data[d.replica_id]], 0, None, None, False, ADD)))
    np.testing.assert_array_equal(out[(0, 0)], [4.0])
    np.testing.assert_array_equal(out[(1, 0)], [7.5])


def test_reduce_scatter_shards_follow_group_positions():
    ctx = CollectiveContext(4, 1)
    x = lambda r: np.arange(8).reshape(2, 4) * (r + 1)    # noqa: E731
    out = values_of(run_on_devices(ctx, lambda d: d.reduce_scatter(
        [x(d.replica_id)], 1, groups((3, 1), (0, 2)), None, False, ADD)))
    # group (3, 1): sum = arange * (4 + 2) = [[0,6,12,18],[24,30,36,42]]; 3 gets block 0
    np.testing.assert_array_equal(out[(3, 0)], [[0, 6], [24, 30]])
    np.testing.assert_array_equal(out[(1, 0)], [[12, 18], [36, 42]])
    # group (0, 2): sum = arange * (1 + 3)
    np.testing.assert_array_equal(out[(0, 0)], [[0, 4], [16, 20]])
    np.testing.assert_array_equal(out[(2, 0)], [[8, 12], [24, 28]])


def test_reduce_scatter_non_divisible_dimension():
    ctx = CollectiveContext(2, 1)
    out = run_on_devices(ctx, lambda d: d.reduce_scatter([np.zeros(3)], 0, None, None, False, ADD))
    assert all("size 3, not divisible by the group size 2" in str(v) for v in out.values())


# --------------------------------------------------------------------------- all-to-all

def test_all_to_all_spec_example():
    ctx = CollectiveContext(2, 1)
    data = {0: np.array(["a0", "a1", "a2", "a3"]), 1: np.array(["b0", "b1", "b2", "b3"])}
    out = values_of(run_on_devices(ctx, lambda d: d.all_to_all([data[d.replica_id]], 0, None, None)))
    assert list(out[(0, 0)]) == ["a0", "a1", "b0", "b1"]
    assert list(out[(1, 0)]) == ["a2", "a3", "b2", "b3"]


def test_all_to_all_four_replicas_dimension_1_with_group_order():
    ctx = CollectiveContext(4, 1)
    # device r holds [[10r, 10r+1]]; groups {{1,0},{2,3}}
    out = values_of(run_on_devices(ctx, lambda d: d.all_to_all(
        [np.array([[10 * d.replica_id, 10 * d.replica_id + 1]])], 1, groups((1, 0), (2, 3)), None)))
    np.testing.assert_array_equal(out[(1, 0)], [[10, 0]])    # block 0 of members 1, 0
    np.testing.assert_array_equal(out[(0, 0)], [[11, 1]])
    np.testing.assert_array_equal(out[(2, 0)], [[20, 30]])
    np.testing.assert_array_equal(out[(3, 0)], [[21, 31]])


def test_all_to_all_tuple_form():
    ctx = CollectiveContext(2, 1)
    out = values_of(run_on_devices(ctx, lambda d: d.all_to_all(
        [np.array([10 * d.replica_id + j]) for j in range(2)], None, None, None)))
    a, b = out[(0, 0)]
    assert (a[0], b[0]) == (0, 10)     # element j: what member j sent to member 0
    a, b = out[(1, 0)]
    assert (a[0], b[0]) == (1, 11)


def test_all_to_all_tuple_form_needs_one_operand_per_member():
    ctx = CollectiveContext(2, 1)
    with pytest.raises(ValueError, match="one operand per group member: 1 operands for a group of 2"):
        ctx.device(0, 0).all_to_all([np.zeros(2)], None, None, None)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([(1, 2), (2, 1), (2, 2), (4, 1), (2, 4), (8, 1)]), st.randoms(), st.integers(1, 3))
def test_all_to_all_twice_is_identity_and_all_gather_concatenates(layout, rnd, rows):
    num_replicas, num_partitions = layout
    ctx = CollectiveContext(num_replicas, num_partitions)
    ids = list(range(num_replicas * num_partitions))
    rnd.shuffle(ids)
    size = rnd.choice([s for s in (1, 2, 4, 8) if len(ids) % s == 0])
    g = groups(*[ids[i:i + size] for i in range(0, len(ids), size)])
    partitions = list(range(num_partitions))
    rnd.shuffle(partitions)
    psize = rnd.choice([s for s in (1, 2, 4) if num_partitions % s == 0])
    pg = groups(*[partitions[i:i + psize] for i in range(0, num_partitions, psize)])
    data = {i: np.arange(size * psize * rows * 2).reshape(size * psize * rows, 2) + 100 * i
            for i in range(len(ids))}

    def program(d):
        x = data[d.flat_id]
        once = d.all_to_all([x], 0, pg, 1)[0]          # channel_id: groups of partition ids
        twice = d.all_to_all([once], 0, pg, 1)[0]
        gathered = d.all_gather([x], 0, g, 1, True)[0]
        return twice, gathered

    out = values_of(run_on_devices(ctx, program))
    by_device = device_groups(GroupMode.FLATTENED_ID, g.groups, num_replicas, num_partitions)
    for (r, p), (twice, gathered) in out.items():
        me = flat(r, p, ctx)
        np.testing.assert_array_equal(twice, data[me])
        np.testing.assert_array_equal(gathered, np.concatenate([data[m] for m in by_device[me]]))


# --------------------------------------------------------------------------- ragged all-to-all

def test_ragged_all_to_all_spec_example():
    ctx = CollectiveContext(2, 1)
    ops = {
        0: ([1, 2, 2], [0, 0, 0, 0], [0, 1], [1, 2], [0, 0], [1, 1]),
        1: ([3, 4, 0], [0, 0, 0, 0], [0, 1], [1, 1], [1, 2], [2, 1]),
    }
    out = values_of(run_on_devices(ctx, lambda d: d.ragged_all_to_all(
        *[np.array(a, np.int32) for a in ops[d.replica_id]], None, None)))
    np.testing.assert_array_equal(out[(0, 0)], [1, 3, 0, 0])
    np.testing.assert_array_equal(out[(1, 0)], [2, 2, 4, 0])


def test_ragged_all_to_all_rank2_metadata_rows_and_untouched_output():
    ctx = CollectiveContext(2, 1)
    # rows of 2 elements; each device sends 2 pieces to each peer (metadata [2 peers, 2 updates])
    inputs = {r: np.arange(8).reshape(4, 2) + 100 * r for r in (0, 1)}
    init = np.full((6, 2), -1)
    meta = {  # input_offsets, send_sizes, output_offsets, recv_sizes
        0: ([[0, 1], [2, 3]], [[1, 1], [1, 0]], [[0, 4], [0, 5]], [[1, 1], [1, 1]]),
        1: ([[0, 1], [3, 0]], [[1, 1], [1, 0]], [[2, 3], [1, 5]], [[1, 0], [1, 0]]),
    }
    out = values_of(run_on_devices(ctx, lambda d: d.ragged_all_to_all(
        inputs[d.replica_id], init, *[np.array(m, np.int64) for m in meta[d.replica_id]], None, None)))
    # device 0 receives: from 0 rows 0 -> 0, 1 -> 4; from 1 rows 0 -> 2, 1 -> 3
    np.testing.assert_array_equal(out[(0, 0)], [[0, 1], [-1, -1], [100, 101], [102, 103], [2, 3], [-1, -1]])
    # device 1 receives: from 0 row 2 -> 0 (second piece empty); from 1 row 3 -> 1
    np.testing.assert_array_equal(out[(1, 0)], [[4, 5], [106, 107], [-1, -1], [-1, -1], [-1, -1], [-1, -1]])


def test_ragged_all_to_all_errors():
    ctx = CollectiveContext(2, 1)
    bad_rows = {
        0: ([1, 2], [0, 0], [0, 1], [1, 2], [0, 0], [1, 1]),     # input rows [1, 3) of 2
        1: ([3, 4], [0, 0], [0, 1], [1, 1], [1, 1], [2, 1]),
    }
    out = run_on_devices(ctx, lambda d: d.ragged_all_to_all(
        *[np.array(a, np.int32) for a in bad_rows[d.replica_id]], None, None))
    assert all("input rows [1, 3) outside the input's 2 rows" in str(v) for v in out.values())
    bad_recv = {
        0: ([1, 2], [0, 0], [0, 1], [1, 1], [0, 0], [1, 1]),
        1: ([3, 4], [0, 0], [0, 1], [1, 1], [1, 1], [2, 1]),     # expects 2 rows from replica 0
    }
    out = run_on_devices(ctx, lambda d: d.ragged_all_to_all(
        *[np.array(a, np.int32) for a in bad_recv[d.replica_id]], None, None))
    assert all("replica 0 sends 1 rows (update 0) to replica 1, whose recv_sizes expects 2" in str(v)
               for v in out.values())
    with pytest.raises(ValueError, match="send_sizes has shape \\[3\\] but input_offsets has \\[2\\]"):
        ctx.device(0, 0).ragged_all_to_all(np.zeros(2), np.zeros(2), np.zeros(2, np.int32),
                                           np.zeros(3, np.int32), np.zeros(2, np.int32),
                                           np.zeros(2, np.int32), None, None)


# --------------------------------------------------------------------------- collective-permute

def test_collective_permute_spec_example():
    ctx = CollectiveContext(3, 1)
    data = {0: np.array([1.0, 1.0]), 1: np.array([2.0, 2.0]), 2: np.array([3.0, 3.0])}
    out = values_of(run_on_devices(ctx, lambda d: d.collective_permute(
        data[d.replica_id], ((0, 1), (1, 2)), None)))
    np.testing.assert_array_equal(out[(0, 0)], [0.0, 0.0])
    np.testing.assert_array_equal(out[(1, 0)], [1.0, 1.0])
    np.testing.assert_array_equal(out[(2, 0)], [2.0, 2.0])


def test_collective_permute_cycle_over_partitions_with_channel():
    ctx = CollectiveContext(2, 4)
    pairs = ((0, 1), (1, 2), (2, 3), (3, 0))
    out = values_of(run_on_devices(ctx, lambda d: d.collective_permute(
        np.array([d.flat_id]), pairs, 5)))
    # partitions rotate within each replica: partition p receives from p - 1
    assert {k: int(v[0]) for k, v in out.items()} == {
        (0, 0): 3, (0, 1): 0, (0, 2): 1, (0, 3): 2, (1, 0): 7, (1, 1): 4, (1, 2): 5, (1, 3): 6}


def test_collective_permute_without_channel_is_cross_replica():
    ctx = CollectiveContext(2, 2)
    out = values_of(run_on_devices(ctx, lambda d: d.collective_permute(
        [np.array([d.flat_id]), np.array([-d.flat_id])], ((1, 0),), None)))
    assert int(out[(0, 0)][0][0]) == 2 and int(out[(0, 0)][1][0]) == -2
    assert int(out[(0, 1)][0][0]) == 3
    assert int(out[(1, 0)][0][0]) == 0 and int(out[(1, 1)][0][0]) == 0


@pytest.mark.parametrize("pairs, message", [
    (((0, 1), (0, 2)), "replica 0 is the source of more than one pair"),
    (((0, 1), (2, 1)), "replica 1 is the target of more than one pair"),
    (((0, 3),), "names replica id 3, but only 3 exist"),
])
def test_collective_permute_invalid_pairs(pairs, message):
    ctx = CollectiveContext(3, 1)
    with pytest.raises(ValueError, match=message):
        ctx.device(0, 0).collective_permute(np.zeros(1), pairs, None)


# --------------------------------------------------------------------------- collective-broadcast

def test_collective_broadcast_first_member_is_source():
    ctx = CollectiveContext(4, 1)
    out = values_of(run_on_devices(ctx, lambda d: d.collective_broadcast(
        [np.array([d.replica_id * 1.5])], groups((1, 0), (2, 3)), None)))
    assert [float(out[(r, 0)][0]) for r in range(4)] == [1.5, 1.5, 3.0, 3.0]


def test_collective_broadcast_device_in_no_group_gets_zeros():
    ctx = CollectiveContext(1, 3)
    out = values_of(run_on_devices(ctx, lambda d: d.collective_broadcast(
        [np.array([d.partition_id + 1])], groups((2, 0)), 1)))
    assert [int(out[(0, p)][0]) for p in range(3)] == [3, 0, 3]


# --------------------------------------------------------------------------- failures

def test_timeout_names_the_missing_device():
    ctx = CollectiveContext(3, 1, timeout=0.2)

    def program(d):
        if d.replica_id == 2:
            return "skipped"
        return d.all_reduce([np.zeros(1)], None, 4, False, ADD)

    start = time.monotonic()
    out = run_on_devices(ctx, program)
    assert time.monotonic() - start < 5
    assert out[(2, 0)] == "skipped"
    for r in (0, 1):
        assert isinstance(out[(r, 0)], ValueError)
        assert "collective all-reduce channel_id=4" in str(out[(r, 0)])
    messages = " ".join(str(out[(r, 0)]) for r in (0, 1))
    assert "timed out after 0.2 s waiting for devices [replica 2]" in messages


def test_mismatched_collectives_time_out_instead_of_hanging():
    ctx = CollectiveContext(2, 1, timeout=0.2)

    def program(d):
        if d.replica_id == 0:
            return d.all_reduce([np.zeros(2)], None, None, False, ADD)
        return d.all_gather([np.zeros(2)], 0, None, None, False)

    out = run_on_devices(ctx, program)
    assert "all-reduce" in str(out[(0, 0)]) and "timed out" in str(out[(0, 0)])
    assert "all-gather" in str(out[(1, 0)]) and "timed out" in str(out[(1, 0)])


def test_late_arrival_after_timeout_fails_immediately():
    ctx = CollectiveContext(2, 1, timeout=0.1)
    out = run_on_devices(ctx, lambda d: (time.sleep(0.6) if d.replica_id == 1 else None,
                                         d.all_reduce([np.zeros(1)], None, None, False, ADD)))
    assert "timed out" in str(out[(0, 0)])
    assert "arrived after the other devices had given up" in str(out[(1, 0)])


def test_abort_releases_waiting_devices():
    ctx = CollectiveContext(2, 1, timeout=30)

    def program(d):
        if d.replica_id == 1:
            time.sleep(0.1)
            ctx.abort("replica 1 failed: division by zero")
            return "aborted"
        return d.all_reduce([np.zeros(1)], None, None, False, ADD)

    start = time.monotonic()
    out = run_on_devices(ctx, program)
    assert time.monotonic() - start < 5
    assert "execution aborted: replica 1 failed: division by zero" in str(out[(0, 0)])


def test_shape_mismatch_between_devices():
    ctx = CollectiveContext(2, 1)
    out = run_on_devices(ctx, lambda d: d.all_reduce([np.zeros(1 + d.replica_id)], None, None, False, ADD))
    for v in out.values():
        assert isinstance(v, ValueError)
        assert "operand 0 of replica 1 is float64[2] but that of replica 0 is float64[1]" in str(v)


def test_attribute_mismatch_between_devices():
    ctx = CollectiveContext(2, 1)
    out = run_on_devices(ctx, lambda d: d.all_gather([np.zeros((2, 2))], d.replica_id, None, None, False))
    assert all("replica 1 called it with dimension=1 but replica 0 with dimension=0" in str(v)
               for v in out.values())


def test_device_outside_groups():
    ctx = CollectiveContext(4, 1)
    with pytest.raises(ValueError, match=r"all-reduce: replica 3 \(replica id 3\) is in none of the "
                                         r"replica_groups \(\(0, 1\), \(2,\)\)"):
        ctx.device(3, 0).all_reduce([np.zeros(1)], groups((0, 1), (2,)), None, False, ADD)


def test_global_device_ids_without_channel():
    ctx = CollectiveContext(2, 1)
    with pytest.raises(ValueError, match="use_global_device_ids=true requires a channel_id"):
        ctx.device(0, 0).all_reduce([np.zeros(1)], groups((0, 1)), None, True, ADD)


def test_combiner_failure_reaches_every_member():
    def broken(a, b):
        raise ZeroDivisionError("boom")

    ctx = CollectiveContext(2, 1)
    out = run_on_devices(ctx, lambda d: d.all_reduce([np.zeros(1)], None, None, False,
                                                      Combiner(broken, 2)))
    kinds = sorted(type(v).__name__ for v in out.values())
    assert kinds == ["ValueError", "ZeroDivisionError"]
    assert all("boom" in str(v) for v in out.values())


def test_unknown_device():
    with pytest.raises(ValueError, match="replica 2, partition 0\\) does not exist"):
        CollectiveContext(2, 1).device(2, 0)


def test_device_views_are_shared_per_device():
    ctx = CollectiveContext(2, 2)
    assert ctx.device(1, 1) is ctx.device(1, 1)
    assert ctx.device(1, 1).flat_id == 3


def test_result_never_aliases_an_operand():
    first = Combiner(lambda a, b: (a,), 2, None, "first")
    ctx = CollectiveContext(2, 1)
    inputs = {r: np.array([r + 1.0]) for r in (0, 1)}
    out = values_of(run_on_devices(ctx, lambda d: d.all_reduce([inputs[d.replica_id]], None, None,
                                                                False, first)))
    assert float(out[(0, 0)][0]) == float(out[(1, 0)][0]) == 1.0
    assert not any(np.shares_memory(out[k], inputs[0]) for k in out)
