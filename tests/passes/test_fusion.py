"""fusion: loop, reduction (kInput) and output (kOutput) fusion, duplication rules, semantics."""
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hlo import format_module, parse_module
from hlo.passes.pass_manager import run_pipeline
from hlo.passes.fusion import reuses_operand_elements
from pass_testing import PassTester, body

FUSION = PassTester("fusion", rtol=1e-5)


def fuse(text: str) -> str:
    """The module after fusion, without its header line."""
    return body(FUSION.optimised(text)[0])


def assert_same_results(text: str, seed: int = 0, rtol: float = 1e-5) -> None:
    """Fusion keeps the module valid, canonical and computing the same values."""
    replace(FUSION, rtol=rtol).optimise(text, seeds=(seed,))


CHAIN = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  two = f32[] constant(2)
  b = f32[4] broadcast(two), dimensions={}
  mul = f32[4] multiply(x, b)
  add = f32[4] add(mul, y)
  ROOT neg = f32[4] negate(add)
}
"""


def test_elementwise_chain_becomes_one_loop_fusion():
    assert fuse(CHAIN) == """%fused_computation (param_0: f32[4], param_1: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  %param_1 = f32[4]{0} parameter(1)
  %two = f32[] constant(2)
  %b = f32[4]{0} broadcast(%two), dimensions={}
  %mul = f32[4]{0} multiply(%param_1, %b)
  %add = f32[4]{0} add(%mul, %param_0)
  ROOT %neg = f32[4]{0} negate(%add)
}

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %y = f32[4]{0} parameter(1)
  ROOT %fusion = f32[4]{0} fusion(%y, %x), kind=kLoop, calls=%fused_computation
}
"""
    assert_same_results(CHAIN)


REDUCE = """HloModule m
sum {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT s = f32[] add(lhs, rhs)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  ex = f32[4,8] exponential(x)
  zero = f32[] constant(0)
  ROOT total = f32[4] reduce(ex, zero), dimensions={1}, to_apply=sum
}
"""


def test_reduce_with_elementwise_producers_is_an_input_fusion():
    assert fuse(REDUCE) == """%sum (lhs: f32[], rhs: f32[]) -> f32[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %s = f32[] add(%lhs, %rhs)
}

%fused_computation (param_0: f32[4,8]) -> f32[4] {
  %param_0 = f32[4,8]{1,0} parameter(0)
  %ex = f32[4,8]{1,0} exponential(%param_0)
  %zero = f32[] constant(0)
  ROOT %total = f32[4]{0} reduce(%ex, %zero), dimensions={1}, to_apply=%sum
}

ENTRY %main (x: f32[4,8]) -> f32[4] {
  %x = f32[4,8]{1,0} parameter(0)
  ROOT %fusion = f32[4]{0} fusion(%x), kind=kInput, calls=%fused_computation
}
"""
    assert_same_results(REDUCE)


DENSE = """HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  w = f32[3,4] parameter(1)
  bias = f32[4] parameter(2)
  d = f32[2,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[2,4] broadcast(bias), dimensions={1}
  biased = f32[2,4] add(d, bb)
  zero = f32[] constant(0)
  zb = f32[2,4] broadcast(zero), dimensions={}
  ROOT relu = f32[2,4] maximum(biased, zb)
}
"""


def test_dot_with_bias_and_relu_is_an_output_fusion():
    assert fuse(DENSE) == """%fused_computation (param_0: f32[4], param_1: f32[2,3], param_2: f32[3,4]) -> f32[2,4] {
  %param_0 = f32[4]{0} parameter(0)
  %param_1 = f32[2,3]{1,0} parameter(1)
  %param_2 = f32[3,4]{1,0} parameter(2)
  %zero = f32[] constant(0)
  %zb = f32[2,4]{1,0} broadcast(%zero), dimensions={}
  %bb = f32[2,4]{1,0} broadcast(%param_0), dimensions={1}
  %d = f32[2,4]{1,0} dot(%param_1, %param_2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %biased = f32[2,4]{1,0} add(%d, %bb)
  ROOT %relu = f32[2,4]{1,0} maximum(%biased, %zb)
}

ENTRY %main (x: f32[2,3], w: f32[3,4], bias: f32[4]) -> f32[2,4] {
  %x = f32[2,3]{1,0} parameter(0)
  %w = f32[3,4]{1,0} parameter(1)
  %bias = f32[4]{0} parameter(2)
  ROOT %fusion = f32[2,4]{1,0} fusion(%bias, %x, %w), kind=kOutput, calls=%fused_computation
}
"""
    assert_same_results(DENSE)


def test_dot_operands_are_not_fused_into_the_output_fusion():
    text = DENSE.replace("d = f32[2,4] dot(x, w)", "xn = f32[2,3] negate(x)\n  d = f32[2,4] dot(xn, w)")
    out = fuse(text)
    assert "%xn = f32[2,3]{1,0} negate(%x)" in out.split("ENTRY")[1]
    assert "kind=kOutput" in out
    assert_same_results(text)


def test_dot_with_two_users_stays_unfused():
    text = """HloModule m
ENTRY main {
  x = f32[2,3] parameter(0)
  w = f32[3,4] parameter(1)
  d = f32[2,4] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  n = f32[2,4] negate(d)
  a = f32[2,4] abs(d)
  ROOT t = (f32[2,4], f32[2,4]) tuple(n, a)
}
"""
    out = fuse(text)
    assert out.count(" dot(") == 1 and "dot(%x, %w)" in out.split("ENTRY")[1]
    assert "kOutput" not in out


DUPLICATION = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  ex = f32[4] exponential(x)
  one = f32[] constant(1)
  b = f32[4] broadcast(one), dimensions={}
  a = f32[4] add(ex, b)
  s = f32[4] subtract(ex, b)
  n = f32[4] negate(a)
  l = f32[4] log(s)
  ROOT t = (f32[4], f32[4]) tuple(n, l)
}
"""


def test_expensive_producer_is_not_duplicated_but_cheap_broadcast_is():
    assert fuse(DUPLICATION) == """%fused_computation (param_0: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  %one.1 = f32[] constant(1)
  %b.1 = f32[4]{0} broadcast(%one.1), dimensions={}
  %s = f32[4]{0} subtract(%param_0, %b.1)
  ROOT %l = f32[4]{0} log(%s)
}

%fused_computation.1 (param_0.1: f32[4]) -> f32[4] {
  %param_0.1 = f32[4]{0} parameter(0)
  %one = f32[] constant(1)
  %b = f32[4]{0} broadcast(%one), dimensions={}
  %a = f32[4]{0} add(%param_0.1, %b)
  ROOT %n = f32[4]{0} negate(%a)
}

ENTRY %main (x: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4]{0} parameter(0)
  %ex = f32[4]{0} exponential(%x)
  %fusion.1 = f32[4]{0} fusion(%ex), kind=kLoop, calls=%fused_computation.1
  %fusion = f32[4]{0} fusion(%ex), kind=kLoop, calls=%fused_computation
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%fusion.1, %fusion)
}
"""
    assert_same_results(DUPLICATION)


def test_expensive_producer_used_several_times_inside_one_fusion_is_fused():
    text = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  ex = f32[4] exponential(x)
  a = f32[4] add(ex, ex)
  m = f32[4] multiply(a, ex)
  ROOT n = f32[4] negate(m)
}
"""
    out = fuse(text)
    entry = out.split("ENTRY")[1]
    assert "exponential" not in entry and out.count("exponential(") == 1
    assert_same_results(text)


def test_expensive_producer_is_not_fused_into_a_broadcast():
    text = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[3,4] parameter(1)
  ex = f32[4] exponential(x)
  b = f32[3,4] broadcast(ex), dimensions={1}
  ROOT a = f32[3,4] add(b, y)
}
"""
    entry = fuse(text).split("ENTRY")[1]
    assert "%ex = f32[4]{0} exponential(%x)" in entry
    assert_same_results(text)


def test_producer_reading_more_than_it_writes_is_fused_only_if_every_user_takes_it():
    text = """HloModule m
ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  s = f32[4] add(x, y)
  n = f32[4] negate(s)
  ROOT t = (f32[4], f32[4]) tuple(s, n)
}
"""
    entry = fuse(text).split("ENTRY")[1]
    assert "%s = f32[4]{0} add(%x, %y)" in entry  # the tuple cannot take it: not duplicated into n
    assert "%n = f32[4]{0} negate(%s)" in entry  # a lone op is not wrapped


def test_side_effects_control_flow_and_library_calls_are_never_fused():
    text = """HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY main {
  x = f32[4] parameter(0)
  lo = f32[] constant(0)
  hi = f32[] constant(1)
  r = f32[4] rng(lo, hi), distribution=rng_uniform
  nr = f32[4] negate(r)
  srt = f32[4] sort(x), dimensions={0}, to_apply=cmp
  ns = f32[4] negate(srt)
  cc = f32[4] custom-call(x), custom_call_target="foo"
  nc = f32[4] negate(cc)
  ROOT t = (f32[4], f32[4], f32[4]) tuple(nr, ns, nc)
}
"""
    entry = fuse(text).split("ENTRY")[1]
    for kept in ("rng(%lo, %hi)", "sort(%x)", "custom-call(%x)", "negate(%r)", "negate(%srt)", "negate(%cc)"):
        assert kept in entry
    assert "fusion" not in entry


def test_array_constants_stay_outside_scalar_constants_go_inside():
    text = """HloModule m
ENTRY main {
  x = f32[3] parameter(0)
  k = f32[3] constant({1, 2, 3})
  two = f32[] constant(2)
  b = f32[3] broadcast(two), dimensions={}
  m = f32[3] multiply(x, k)
  ROOT a = f32[3] add(m, b)
}
"""
    out = fuse(text)
    entry = out.split("ENTRY")[1]
    assert "constant({1, 2, 3})" in entry and "constant(2)" not in entry
    assert_same_results(text)


def test_existing_fusions_are_merged_into_their_consumer():
    text = """HloModule m
inner {
  p = f32[4] parameter(0)
  ROOT e = f32[4] exponential(p)
}
ENTRY main {
  x = f32[4] parameter(0)
  f = f32[4] fusion(x), kind=kLoop, calls=inner
  ROOT n = f32[4] negate(f)
}
"""
    out = fuse(text)
    assert "%inner" not in out
    assert out.count("fusion(") == 1 and "exponential(%param_0)" in out
    assert_same_results(text)


def test_fuses_in_while_bodies_but_not_in_reducers():
    text = """HloModule m
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  na = f32[] negate(a)
  ROOT s = f32[] add(na, b)
}
cond {
  c = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(c), index=0
  ten = s32[] constant(3)
  ROOT lt = pred[] compare(i, ten), direction=LT
}
body {
  bp = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(bp), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  v = f32[4] get-tuple-element(bp), index=1
  half = f32[] constant(0.5)
  hb = f32[4] broadcast(half), dimensions={}
  m = f32[4] multiply(v, hb)
  w = f32[4] sine(m)
  ROOT t = (s32[], f32[4]) tuple(j, w)
}
ENTRY main {
  x = f32[4] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[4]) tuple(zero, x)
  loop = (s32[], f32[4]) while(init), condition=cond, body=body
  v = f32[4] get-tuple-element(loop), index=1
  z = f32[] constant(0)
  ROOT r = f32[] reduce(v, z), dimensions={0}, to_apply=add_f32
}
"""
    module, _ = FUSION.optimised(text)
    body = module.computation("body")
    assert [i.opcode for i in body.instructions].count("fusion") == 1
    assert [i.opcode for i in module.computation("add_f32").instructions] == [
        "parameter", "parameter", "negate", "add"]
    assert_same_results(text)


def test_many_operand_concatenate_stays_unfused():
    operands = ", ".join(f"n{i}" for i in range(9))
    negs = "\n".join(f"  n{i} = f32[2] negate(x)" for i in range(9))
    text = f"""HloModule m
ENTRY main {{
  x = f32[2] parameter(0)
{negs}
  c = f32[18] concatenate({operands}), dimensions={{0}}
  ROOT a = f32[18] abs(c)
}}
"""
    entry = fuse(text).split("ENTRY")[1]
    assert "concatenate(" in entry
    assert_same_results(text)


def test_fusion_is_idempotent():
    for text in (CHAIN, REDUCE, DENSE, DUPLICATION):
        module = parse_module(text)
        assert run_pipeline(module, "fusion")
        printed = format_module(module)
        assert not run_pipeline(module, "fusion")
        assert format_module(module) == printed


SOFTMAX = """HloModule m
max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[4,8] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[4] reduce(x, ninf), dimensions={1}, to_apply=max_f32
  mb = f32[4,8] broadcast(mx), dimensions={0}
  sh = f32[4,8] subtract(x, mb)
  ex = f32[4,8] exponential(sh)
  zero = f32[] constant(0)
  sm = f32[4] reduce(ex, zero), dimensions={1}, to_apply=add_f32
  sb = f32[4,8] broadcast(sm), dimensions={0}
  ROOT out = f32[4,8] divide(ex, sb)
}
"""


def test_softmax_fuses_without_recomputing_reductions():
    module, _ = FUSION.optimised(SOFTMAX)
    # exp(x - max) feeds both the sum and the division: computed once, not fused into either
    assert [i.opcode for i in module.entry.instructions] == [
        "parameter", "constant", "reduce", "fusion", "constant", "reduce", "fusion"]
    assert sum(i.opcode in ("reduce", "exponential") for c in module.computations for i in c.instructions) == 3
    for seed in range(3):
        assert_same_results(SOFTMAX, seed)


def _reuse(text: str, index: int = 0) -> bool:
    module = parse_module(text)
    fusion = next(i for i in module.entry.instructions if i.opcode == "fusion")
    return reuses_operand_elements(fusion, index)


def _fusion_module(body: str, shape: str = "f32[4]") -> str:
    return f"""HloModule m
fc {{
  p = f32[4] parameter(0)
{body}
}}
ENTRY main {{
  x = f32[4] parameter(0)
  ROOT f = {shape} fusion(x), kind=kLoop, calls=fc
}}
"""


def test_reuse_analysis():
    # several elementwise uses of an element: computed once per output element
    assert not _reuse(_fusion_module("  a = f32[4] add(p, p)\n  ROOT m = f32[4] multiply(a, p)"))
    # the same element read at different output positions
    assert _reuse(_fusion_module("  r = f32[4] reverse(p), dimensions={0}\n  ROOT m = f32[4] multiply(r, p)"))
    assert _reuse(_fusion_module("  ROOT b = f32[3,4] broadcast(p), dimensions={1}", "f32[3,4]"))
    assert not _reuse(_fusion_module("  ROOT r = f32[4] reverse(p), dimensions={0}"))


# --------------------------------------------------------------------------- property: random DAGs

UNARY = ["negate", "tanh", "abs", "sine", "exponential", "cosine"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


@st.composite
def random_modules(draw):
    """Random DAGs of f32[3,4] values: elementwise ops, broadcasts, row reductions, dots."""
    lines = ["  x = f32[3,4] parameter(0)", "  y = f32[3,4] parameter(1)", "  v = f32[4] parameter(2)",
             "  w = f32[4,4] parameter(3)", "  zero = f32[] constant(0)", "  half = f32[] constant(0.5)"]
    values = ["x", "y"]
    for n in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["unary", "binary", "binary", "bcast", "reduce", "dot", "scale"]))
        pick = st.sampled_from(values)
        name = f"v{n}"
        if kind == "unary":
            lines.append(f"  {name} = f32[3,4] {draw(st.sampled_from(UNARY))}({draw(pick)})")
        elif kind == "binary":
            lines.append(f"  {name} = f32[3,4] {draw(st.sampled_from(BINARY))}({draw(pick)}, {draw(pick)})")
        elif kind == "bcast":
            lines.append(f"  b{n} = f32[3,4] broadcast(v), dimensions={{1}}")
            lines.append(f"  {name} = f32[3,4] add({draw(pick)}, b{n})")
        elif kind == "scale":
            lines.append(f"  h{n} = f32[3,4] broadcast(half), dimensions={{}}")
            lines.append(f"  {name} = f32[3,4] multiply({draw(pick)}, h{n})")
        elif kind == "reduce":
            lines.append(f"  r{n} = f32[3] reduce({draw(pick)}, zero), dimensions={{1}}, to_apply=add_f32")
            lines.append(f"  {name} = f32[3,4] broadcast(r{n}), dimensions={{0}}")
        else:
            lines.append(f"  {name} = f32[3,4] dot({draw(pick)}, w), lhs_contracting_dims={{1}}, "
                         "rhs_contracting_dims={0}")
        values.append(name)
    outputs = draw(st.lists(st.sampled_from(values[2:]), min_size=1, max_size=3, unique=True))
    shapes = ", ".join("f32[3,4]" for _ in outputs)
    lines.append(f"  ROOT out = ({shapes}) tuple({', '.join(outputs)})")
    return ("HloModule random\nadd_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(a, b)\n}\nENTRY main {\n" + "\n".join(lines) + "\n}\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_modules(), st.integers(0, 2**16))
def test_fusion_preserves_meaning_of_random_graphs(text, seed):
    assert_same_results(text, seed, rtol=1e-4)
