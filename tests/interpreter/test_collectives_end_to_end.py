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


# --------------------------------------------------------------------------- non-trivial replica groups
#
# For each device count a grouping that is neither "everyone" nor in id order, so results show
# that groups are respected and that group order (not id order) decides positions:
#   2 replicas: {{1,0}}               one group, listed backwards
#   4 replicas: {{3,1},{0,2}}         two groups, interleaved ids, first one backwards
#   8 replicas: [2,4]<=[4,2]T(1,0)    iota form = {{0,2,4,6},{1,3,5,7}}
GROUPS = {
    2: ("{{1,0}}", [[1, 0]]),
    4: ("{{3,1},{0,2}}", [[3, 1], [0, 2]]),
    8: ("[2,4]<=[4,2]T(1,0)", [[0, 2, 4, 6], [1, 3, 5, 7]]),
}


def checked(text: str):
    """The module, after the checker accepted it (hlo.run on text only parses)."""
    mod = hlo.parse_module(text)
    hlo.check_module(mod)
    return mod


def group_of(n: int, d: int) -> list[int]:
    return next(g for g in GROUPS[n][1] if d in g)


def test_group_table_matches_the_parsed_groups():
    for n, (spelling, groups) in GROUPS.items():
        text = module(f"""  %p = f32[2] parameter(0)
  ROOT %r = f32[2] all-reduce(%p), replica_groups={spelling}, to_apply=%sum""", n)
        parsed = checked(text).entry.root.attrs["replica_groups"].groups
        assert [list(g) for g in parsed] == groups


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("form", ["sync", "start-done"])
def test_all_reduce_in_groups(n, form):
    spelling = GROUPS[n][0]
    if form == "sync":
        body = f"""  %p = f32[2] parameter(0)
  ROOT %r = f32[2] all-reduce(%p), replica_groups={spelling}, to_apply=%sum"""
    else:
        body = f"""  %p = f32[2] parameter(0)
  %s = f32[2] all-reduce-start(%p), replica_groups={spelling}, to_apply=%sum
  ROOT %r = f32[2] all-reduce-done(%s)"""
    results = hlo.run(checked(module(body, n)), per_device_inputs=device_inputs(n))
    for d in range(n):
        total = sum(m + 1 for m in group_of(n, d))
        np.testing.assert_array_equal(results[d][0], [total, total])
    if n == 4:  # by hand: {3,1} -> 4 + 2 = 6, {0,2} -> 1 + 3 = 4
        assert [float(r[0][0]) for r in results] == [4, 6, 4, 6]


def test_all_reduce_groups_of_unequal_sizes_on_eight_replicas():
    # all-reduce is the one collective whose groups may differ in size
    text = module("""  %p = f32[] parameter(0)
  ROOT %r = f32[] all-reduce(%p), replica_groups={{5},{0,7,1},{2,3,4,6}}, to_apply=%sum""", 8)
    results = hlo.run(checked(text), per_device_inputs=[[np.float32(10 ** d)] for d in range(8)])
    # {5}: 100000; {0,7,1}: 1 + 10000000 + 10; {2,3,4,6}: 100 + 1000 + 10000 + 1000000
    expected = {5: 100000, 0: 10000011, 7: 10000011, 1: 10000011}
    expected.update({d: 1011100 for d in (2, 3, 4, 6)})
    assert [float(r[0]) for r in results] == [expected[d] for d in range(8)]


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("form", ["sync", "start-done"])
def test_all_gather_in_groups(n, form):
    spelling, groups = GROUPS[n]
    size = len(groups[0])
    if form == "sync":
        body = f"""  %p = f32[2] parameter(0)
  ROOT %g = f32[{2 * size}] all-gather(%p), replica_groups={spelling}, dimensions={{0}}"""
    else:
        body = f"""  %p = f32[2] parameter(0)
  %s = (f32[2], f32[{2 * size}]) all-gather-start(%p), replica_groups={spelling}, dimensions={{0}}
  ROOT %g = f32[{2 * size}] all-gather-done(%s)"""
    inputs = [[np.array([d, 10 * d], np.float32)] for d in range(n)]
    results = hlo.run(checked(module(body, n)), per_device_inputs=inputs)
    for d in range(n):
        expected = [v for m in group_of(n, d) for v in (m, 10 * m)]  # in group order
        np.testing.assert_array_equal(results[d][0], expected)
    if n == 2:  # group {1,0}: replica 1's block first
        np.testing.assert_array_equal(results[0][0], [1, 10, 0, 0])


@pytest.mark.parametrize("n", [2, 4, 8])
def test_all_gather_dimension_1_in_groups(n):
    spelling, groups = GROUPS[n]
    size = len(groups[0])
    text = module(f"""  %p = f32[2,1] parameter(0)
  ROOT %g = f32[2,{size}] all-gather(%p), replica_groups={spelling}, dimensions={{1}}""", n)
    inputs = [[np.array([[d], [-d]], np.float32)] for d in range(n)]
    results = hlo.run(checked(text), per_device_inputs=inputs)
    for d in range(n):
        g = group_of(n, d)
        np.testing.assert_array_equal(results[d][0], [g, [-m for m in g]])


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("form", ["sync", "async"])
def test_reduce_scatter_in_groups(n, form):
    spelling, groups = GROUPS[n]
    size = len(groups[0])
    if form == "sync":
        body = f"""  %p = f32[{2 * size}] parameter(0)
  ROOT %r = f32[2] reduce-scatter(%p), replica_groups={spelling}, dimensions={{0}}, to_apply=%sum"""
        extra = SUM
    else:  # XLA's asynchronous form: reduce-scatter wrapped by async-start / async-done
        body = f"""  %p = f32[{2 * size}] parameter(0)
  %s = ((f32[{2 * size}]), f32[2], u32[]) async-start(%p), calls=%rs
  ROOT %r = f32[2] async-done(%s)"""
        extra = SUM + f"""
%rs (x: f32[{2 * size}]) -> f32[2] {{
  %x = f32[{2 * size}] parameter(0)
  ROOT %r = f32[2] reduce-scatter(%x), replica_groups={spelling}, dimensions={{0}}, to_apply=%sum
}}
"""
    # device d holds (d + 1) * {0, 1, 2, ...}
    inputs = [[np.arange(2 * size, dtype=np.float32) * (d + 1)] for d in range(n)]
    results = hlo.run(checked(module(body, n, extra)), per_device_inputs=inputs)
    for d in range(n):
        g = group_of(n, d)
        position = g.index(d)
        scale = sum(m + 1 for m in g)
        np.testing.assert_array_equal(results[d][0], [scale * 2 * position, scale * (2 * position + 1)])
    if n == 2:  # group {1,0}: replica 1 is position 0 and gets elements 0-1 of the sum 3 * {0,1,2,3}
        np.testing.assert_array_equal(results[1][0], [0, 3])
        np.testing.assert_array_equal(results[0][0], [6, 9])


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("form", ["array", "tuple", "async"])
def test_all_to_all_in_groups(n, form):
    spelling, groups = GROUPS[n]
    size = len(groups[0])
    # device d holds 100 * d + {0, 1, ..., size-1}: block j (one element) goes to group position j
    inputs = [[np.arange(size, dtype=np.float32) + 100 * d] for d in range(n)]
    extra = SUM
    if form == "array":
        body = f"""  %p = f32[{size}] parameter(0)
  ROOT %a = f32[{size}] all-to-all(%p), replica_groups={spelling}, dimensions={{0}}"""
    elif form == "tuple":
        slices = "\n".join(f"  %blk{j} = f32[1] slice(%p), slice={{[{j}:{j + 1}]}}" for j in range(size))
        names = ", ".join(f"%blk{j}" for j in range(size))
        shapes = ", ".join(["f32[1]"] * size)
        gtes = "\n".join(f"  %g{j} = f32[1] get-tuple-element(%a), index={j}" for j in range(size))
        body = f"""  %p = f32[{size}] parameter(0)
{slices}
  %a = ({shapes}) all-to-all({names}), replica_groups={spelling}
{gtes}
  ROOT %c = f32[{size}] concatenate({", ".join(f"%g{j}" for j in range(size))}), dimensions={{0}}"""
    else:
        body = f"""  %p = f32[{size}] parameter(0)
  %s = ((f32[{size}]), f32[{size}]) async-start(%p), calls=%a2a
  ROOT %a = f32[{size}] async-done(%s)"""
        extra = f"""
%a2a (x: f32[{size}]) -> f32[{size}] {{
  %x = f32[{size}] parameter(0)
  ROOT %a = f32[{size}] all-to-all(%x), replica_groups={spelling}, dimensions={{0}}
}}
"""
    results = hlo.run(checked(module(body, n, extra)), per_device_inputs=inputs)
    for d in range(n):
        g = group_of(n, d)
        position = g.index(d)
        # element j of the result is what the member at position j sent: its block `position`
        np.testing.assert_array_equal(results[d][0], [100 * m + position for m in g])
    if n == 4:  # group {3,1}: replica 3 (position 0) gets {300, 100}, replica 1 gets {301, 101}
        np.testing.assert_array_equal(results[3][0], [300, 100])
        np.testing.assert_array_equal(results[1][0], [301, 101])


def _ragged_plan(size: int):
    """Rows that group position p sends to position j: 1 + (p + j) % 2 (ragged: 1 or 2)."""
    return [[1 + (p + j) % 2 for j in range(size)] for p in range(size)]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_ragged_all_to_all_in_groups(n):
    spelling, groups = GROUPS[n]
    size = len(groups[0])
    sizes = _ragged_plan(size)
    rows_in = max(sum(row) for row in sizes)
    rows_out = 2 * size + 1  # room for the largest receipt plus one untouched row
    text = module(f"""  %in = f32[{rows_in},2] parameter(0)
  %out = f32[{rows_out},2] parameter(1)
  %io = s32[{size}] parameter(2)
  %ss = s32[{size}] parameter(3)
  %oo = s32[{size}] parameter(4)
  %rs = s32[{size}] parameter(5)
  ROOT %r = f32[{rows_out},2] ragged-all-to-all(%in, %out, %io, %ss, %oo, %rs), replica_groups={spelling}""", n)
    inputs = []
    for d in range(n):
        p = group_of(n, d).index(d)
        data = np.array([[1000 * d + r, -(1000 * d + r)] for r in range(rows_in)], np.float32)
        send = sizes[p]
        input_offsets = np.cumsum([0] + send[:-1])
        # where my piece lands in peer j's output: after the pieces of positions before me
        output_offsets = [sum(sizes[q][j] for q in range(p)) for j in range(size)]
        recv = [sizes[q][p] for q in range(size)]
        inputs.append([data, np.full((rows_out, 2), -1, np.float32)] +
                      [np.array(a, np.int32) for a in (input_offsets, send, output_offsets, recv)])
    results = hlo.run(checked(text), per_device_inputs=inputs)
    for d in range(n):
        g = group_of(n, d)
        j = g.index(d)
        expected = []
        for q, sender in enumerate(g):  # pieces arrive in sender position order
            start = sum(sizes[q][:j])   # the sender's input offset for position j
            expected += [[1000 * sender + r, -(1000 * sender + r)] for r in range(start, start + sizes[q][j])]
        expected += [[-1, -1]] * (rows_out - len(expected))
        np.testing.assert_array_equal(results[d][0], expected)
    if n == 2:
        # group {1,0}: replica 1 is position 0. sizes = {{1,2},{2,1}}.
        # replica 1 receives 1 row from itself (its row 0) then 2 rows from replica 0 (rows 0-1);
        # replica 0 receives 2 rows from replica 1 (rows 1-2) then 1 row from itself (row 2).
        np.testing.assert_array_equal(results[1][0][:, 0], [1000, 0, 1, -1, -1])
        np.testing.assert_array_equal(results[0][0][:, 0], [1001, 1002, 2, -1, -1])


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("form", ["sync", "start-done"])
def test_collective_permute_within_groups(n, form):
    # each group's members pass their value to the next member in group order (a ring per group),
    # except that the last member of the first group sends nothing: its target receives zeros
    groups = GROUPS[n][1]
    pairs = [(g[i], g[(i + 1) % len(g)]) for g in groups for i in range(len(g))]
    dropped = pairs.pop(len(groups[0]) - 1)
    spelling = "{" + ",".join(f"{{{s},{t}}}" for s, t in pairs) + "}"
    if form == "sync":
        body = f"""  %p = f32[2] parameter(0)
  ROOT %c = f32[2] collective-permute(%p), source_target_pairs={spelling}"""
    else:
        body = f"""  %p = f32[2] parameter(0)
  %s = (f32[2], f32[2], u32[], u32[]) collective-permute-start(%p), source_target_pairs={spelling}
  ROOT %c = f32[2] collective-permute-done(%s)"""
    results = hlo.run(checked(module(body, n)), per_device_inputs=device_inputs(n))
    source_of = {t: s for s, t in pairs}
    for d in range(n):
        expected = [0, 0] if d == dropped[1] else [source_of[d] + 1] * 2
        np.testing.assert_array_equal(results[d][0], expected)
    if n == 2:  # group {1,0}: ring 1 -> 0 -> 1, with 0 -> 1 dropped: replica 0 gets replica 1's 2, replica 1 zeros
        assert [float(r[0][0]) for r in results] == [2, 0]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_collective_broadcast_in_groups(n):
    spelling, groups = GROUPS[n]
    text = module(f"""  %p = f32[2] parameter(0)
  ROOT %b = f32[2] collective-broadcast(%p), replica_groups={spelling}""", n)
    results = hlo.run(checked(text), per_device_inputs=device_inputs(n))
    for d in range(n):
        root = group_of(n, d)[0]  # the first member listed is the source
        np.testing.assert_array_equal(results[d][0], [root + 1, root + 1])
    if n == 8:  # groups {0,2,4,6} and {1,3,5,7}: sources 0 and 1 hold 1 and 2
        assert [float(r[0][0]) for r in results] == [1, 2] * 4


def test_all_gather_over_partitions_with_flattened_ids():
    # 2 replicas x 4 partitions; device d = replica * 4 + partition; flattened ids name devices directly
    text = """HloModule m, replica_count=2, num_partitions=4
ENTRY %main {
  %r = u32[] replica-id()
  %p = u32[] partition-id()
  %ten = u32[] constant(10)
  %r10 = u32[] multiply(%r, %ten)
  %v = u32[] add(%r10, %p)
  %b = u32[1] broadcast(%v), dimensions={}
  ROOT %g = u32[4] all-gather(%b), channel_id=1, replica_groups={{7,0,5,2},{1,6,3,4}}, use_global_device_ids=true, dimensions={0}
}
"""
    results = hlo.run(checked(text))
    # device -> value 10 * replica + partition: 0->0, 1->1, 2->2, 3->3, 4->10, 5->11, 6->12, 7->13
    first, second = [13, 0, 11, 2], [1, 12, 3, 10]
    for d in range(8):
        np.testing.assert_array_equal(results[d][0], first if d in (7, 0, 5, 2) else second)
