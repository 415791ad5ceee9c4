"""A while body whose fusion adds to carried arrays (a scan accumulating gradients) computes those
outputs straight into the loop state (buffers.py): no copy per iteration, the interpreter's
results; an accumulator another output or instruction still reads is not overwritten early."""
import numpy as np
import pytest
from target_cases import AVX2, HOST, RAW, check as check_targets, private_cache  # noqa: F401

from hlo import parse_module
from hlo.codegen.buffers import assign_buffers, resolve
from hlo.codegen.kernels import leaves_of
from hlo.codegen.lowering import prepare
from hlo.opcodes import Op

STATE = "(s32[], f32[8,16], f32[8,16], f32[8,16])"


def accumulating_loop(fused_body: str, fused_root: str, fusion_shape: str, root_elements: str,
                      extra_body: str = "") -> str:
    """for i < 6: (a, b) = fused(a, b, g) with g = x * (i + 1); x is passed on."""
    return f"""HloModule m
fused {{
  p0 = f32[8,16] parameter(0)
  p1 = f32[8,16] parameter(1)
  p2 = f32[8,16] parameter(2)
{fused_body}
  ROOT r = {fusion_shape} {fused_root}
}}
cond {{
  s = {STATE} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(6)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = {STATE} parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[8,16] get-tuple-element(s), index=1
  b = f32[8,16] get-tuple-element(s), index=2
  x = f32[8,16] get-tuple-element(s), index=3
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  fi = f32[] convert(i1)
  fb = f32[8,16] broadcast(fi), dimensions={{}}
  g = f32[8,16] multiply(x, fb){extra_body}
  f = {fusion_shape} fusion(a, b, g), kind=kLoop, calls=fused
  ROOT next = {STATE} tuple(i1, {root_elements}, x)
}}
ENTRY e {{
  a0 = f32[8,16] parameter(0)
  b0 = f32[8,16] parameter(1)
  x0 = f32[8,16] parameter(2)
  z = s32[] constant(0)
  init = {STATE} tuple(z, a0, b0, x0)
  w = {STATE} while(init), condition=cond, body=body
  ra = f32[8,16] get-tuple-element(w), index=1
  rb = f32[8,16] get-tuple-element(w), index=2
  ROOT out = (f32[8,16], f32[8,16]) tuple(ra, rb)
}}
"""


TWO_OUTPUTS = "(f32[8,16], f32[8,16])"
PAIR_ROOT = "tuple(ga, gb)"
PAIR_ELEMENTS = "fa, fb2"
PAIR_VIEWS = "\n  fa = f32[8,16] get-tuple-element(f), index=0\n  fb2 = f32[8,16] get-tuple-element(f), index=1"


def pair_loop(fused_body: str) -> str:
    text = accumulating_loop(fused_body, PAIR_ROOT, TWO_OUTPUTS, PAIR_ELEMENTS)
    return text.replace("  ROOT next = ", PAIR_VIEWS.lstrip("\n") + "\n  ROOT next = ", 1)


def outputs_in_state(text: str) -> list[bool]:
    """Per output of the body's fusion: whether it is computed into the loop state's buffer."""
    module = prepare(parse_module(text, "loop.hlo"), RAW)
    assignment = assign_buffers(module)
    loop = next(i for c in module.computations for i in c.instructions if i.opcode == Op.WHILE)
    state = [resolve(b) for b in leaves_of(assignment.values[id(loop)])]
    fusion = next(i for i in loop.attrs["body"].instructions if i.opcode == Op.FUSION)
    return [any(resolve(b) is s for s in state) for b in leaves_of(assignment.values[id(fusion)])]


ARGS = tuple(np.random.default_rng(k).uniform(-1, 1, (8, 16)).astype(np.float32) for k in range(3))


def check(text):
    check_targets(text, *ARGS, options=(RAW, HOST, AVX2), rtol=1e-6)


def test_a_multi_output_fusion_accumulates_into_the_loop_state():
    text = pair_loop("  ga = f32[8,16] add(p0, p2)\n  h = f32[8,16] multiply(p2, p2)\n  gb = f32[8,16] add(p1, h)")
    assert outputs_in_state(text) == [True, True]
    check(text)


def test_a_single_output_fusion_accumulates_into_the_loop_state():
    text = accumulating_loop("  t = f32[8,16] tanh(p2)", "add(p0, t)", "f32[8,16]", "f, b")
    assert outputs_in_state(text) == [True]
    check(text)


def test_an_accumulator_another_output_reads_is_not_overwritten_early():
    # output 1 reads p0 too: writing output 0 into p0's buffer first would change what it reads
    text = pair_loop("  ga = f32[8,16] add(p0, p2)\n  h = f32[8,16] multiply(p0, p2)\n  gb = f32[8,16] add(p1, h)")
    assert outputs_in_state(text) == [False, True]
    check(text)


def test_an_accumulator_read_elsewhere_in_the_body_is_not_overwritten():
    text = pair_loop("  ga = f32[8,16] add(p0, p2)\n  gb = f32[8,16] add(p1, p2)")
    text = text.replace("  f = (f32[8,16], f32[8,16]) fusion(a, b, g)",
                        "  aa = f32[8,16] add(a, a)\n  f = (f32[8,16], f32[8,16]) fusion(a, b, g)")
    text = text.replace("tuple(i1, fa, fb2, x)", "tuple(i1, fa, aa, x)")
    assert outputs_in_state(text) == [False, False]
    check(text)


@pytest.mark.parametrize("read", ["  r0 = f32[1,16] slice(p0), slice={[0:1], [0:16]}\n"
                                  "  r1 = f32[8,16] broadcast(f32[16] reshape(r0)), dimensions={1}\n"
                                  "  ga = f32[8,16] add(r1, p2)",
                                  "  t0 = f32[16,8] transpose(p0), dimensions={1,0}\n"
                                  "  t1 = f32[8,16] reshape(t0)\n  ga = f32[8,16] add(t1, p2)"])
def test_an_accumulator_read_at_other_indices_is_not_updated_in_place(read):
    text = pair_loop(read + "\n  gb = f32[8,16] add(p1, p2)")
    assert outputs_in_state(text) == [False, True]
    check(text)
