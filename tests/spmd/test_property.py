"""Property: random modules with random shardings on their parameters compute the same
results partitioned (on 2, 4 or 8 simulated devices) as unpartitioned (interpreter)."""
import math

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import hlo
from hlo.spmd_run import run_partitioned


def shape_text(dims):
    return f"f32[{','.join(map(str, dims))}]"


@st.composite
def sharding_for(draw, dims, n):
    """A random tiled (or replicated) sharding of an array of `dims` over n devices."""
    if draw(st.booleans()) and draw(st.booleans()):
        return "{replicated}"
    tiles = [1] * len(dims)
    left = n
    for k in draw(st.permutations(list(range(len(dims))))):
        options = [t for t in (1, 2, 4, 8) if left % t == 0 and t <= max(dims[k], 1)]
        t = draw(st.sampled_from(options))
        tiles[k] = t
        left //= t
    used = math.prod(tiles)
    if used == 1:
        return "{replicated}"
    perm = draw(st.permutations(list(range(n))))
    ids = ",".join(map(str, perm))
    rep = n // used
    if rep > 1:
        return f"{{devices=[{','.join(map(str, tiles + [rep]))}]{ids} last_tile_dim_replicate}}"
    return f"{{devices=[{','.join(map(str, tiles))}]{ids}}}"


@st.composite
def programs(draw):
    n = draw(st.sampled_from([2, 4, 8]))
    rank = draw(st.integers(1, 3))
    dims = [draw(st.integers(1, 7)) for _ in range(rank)]
    nparams = draw(st.integers(1, 3))
    lines = []
    values = []   # (name, dims)
    for i in range(nparams):
        s = draw(sharding_for(dims, n))
        lines.append(f"  %p{i} = {shape_text(dims)} parameter({i}), sharding={s}")
        values.append((f"p{i}", dims))
    count = 0

    def fresh():
        nonlocal count
        count += 1
        return f"v{count}"

    for _ in range(draw(st.integers(1, 6))):
        name, d = draw(st.sampled_from(values))
        kind = draw(st.sampled_from(["binary", "unary", "transpose", "reduce", "broadcast", "dot", "slice",
                                     "reverse", "concat", "reshape", "constraint"]))
        out = fresh()
        same = [v for v in values if v[1] == d]
        if kind == "binary":
            other, _ = draw(st.sampled_from(same))
            op = draw(st.sampled_from(["add", "multiply", "maximum", "subtract"]))
            lines.append(f"  %{out} = {shape_text(d)} {op}(%{name}, %{other})")
            values.append((out, d))
        elif kind == "unary":
            op = draw(st.sampled_from(["tanh", "negate", "abs"]))
            lines.append(f"  %{out} = {shape_text(d)} {op}(%{name})")
            values.append((out, d))
        elif kind == "transpose" and len(d) > 1:
            perm = draw(st.permutations(list(range(len(d)))))
            nd = [d[p] for p in perm]
            lines.append(f"  %{out} = {shape_text(nd)} transpose(%{name}), dimensions={{{','.join(map(str, perm))}}}")
            values.append((out, nd))
        elif kind == "reduce" and len(d) > 1:
            k = draw(st.integers(0, len(d) - 1))
            nd = [x for i, x in enumerate(d) if i != k]
            op = draw(st.sampled_from(["add", "max"]))
            zero = fresh()
            lines.append(f"  %{zero} = f32[] constant({'0' if op == 'add' else '-inf'})")
            lines.append(f"  %{out} = {shape_text(nd)} reduce(%{name}, %{zero}), dimensions={{{k}}}, to_apply=%{op}")
            values.append((out, nd))
        elif kind == "broadcast" and len(d) < 3:
            extra = draw(st.integers(1, 4))
            nd = [extra] + list(d)
            lines.append(f"  %{out} = {shape_text(nd)} broadcast(%{name}), "
                         f"dimensions={{{','.join(str(i + 1) for i in range(len(d)))}}}")
            values.append((out, nd))
        elif kind == "dot" and len(d) == 2:
            other = [v for v in values if len(v[1]) == 2 and v[1][0] == d[1]]
            if not other:
                continue
            oname, od = draw(st.sampled_from(other))
            nd = [d[0], od[1]]
            lines.append(f"  %{out} = {shape_text(nd)} dot(%{name}, %{oname}), lhs_contracting_dims={{1}}, "
                         f"rhs_contracting_dims={{0}}")
            values.append((out, nd))
        elif kind == "slice" and d[0] > 1:
            nd = [d[0] - 1] + list(d[1:])
            spec = ", ".join([f"[1:{d[0]}]"] + [f"[0:{x}]" for x in d[1:]])
            lines.append(f"  %{out} = {shape_text(nd)} slice(%{name}), slice={{{spec}}}")
            values.append((out, nd))
        elif kind == "reverse":
            lines.append(f"  %{out} = {shape_text(d)} reverse(%{name}), dimensions={{0}}")
            values.append((out, d))
        elif kind == "concat":
            nd = [2 * d[0]] + list(d[1:])
            lines.append(f"  %{out} = {shape_text(nd)} concatenate(%{name}, %{name}), dimensions={{0}}")
            values.append((out, nd))
        elif kind == "reshape":
            nd = [math.prod(d)]
            lines.append(f"  %{out} = {shape_text(nd)} reshape(%{name})")
            values.append((out, nd))
        elif kind == "constraint":
            s = draw(sharding_for(d, n))
            lines.append(f"  %{out} = {shape_text(d)} custom-call(%{name}), custom_call_target=\"Sharding\", "
                         f"sharding={s}")
            values.append((out, d))
    root, rd = values[-1]
    root_s = draw(sharding_for(rd, n))
    lines.append(f"  ROOT %result = {shape_text(rd)} copy(%{root}), sharding={root_s}")
    text = ("HloModule random\n\n%add (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
            "  %b = f32[] parameter(1)\n  ROOT %r = f32[] add(%a, %b)\n}\n\n"
            "%max (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n"
            "  %b = f32[] parameter(1)\n  ROOT %r = f32[] maximum(%a, %b)\n}\n\n"
            "ENTRY %main {\n" + "\n".join(lines) + "\n}\n")
    return text, n, [dims] * nparams


def unannotated(text: str) -> str:
    """The same program without shardings (Sharding custom calls become copies)."""
    import re
    text = re.sub(r", sharding=\{[^}]*(\{[^}]*\}[^}]*)*\}", "", text)
    return re.sub(r'custom-call\((%\w+)\), custom_call_target="Sharding"', r"copy(\1)", text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs(), st.integers(0, 2 ** 31 - 1))
def test_partitioned_equals_unpartitioned(program, seed):
    text, n, shapes = program
    rng = np.random.default_rng(seed)
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    want = hlo.run(unannotated(text), *args)
    want = want[0] if isinstance(want, (list, tuple)) else want
    got = run_partitioned(text, args, num_devices=n)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=text)
