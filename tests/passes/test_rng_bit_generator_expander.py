"""rng-bit-generator-expander: the expansion computes exactly the op's bits (and new state)."""
import numpy as np
import pytest

import hlo
from hlo import HloError, format_module, parse_module
from hlo.shapes import format_shape
from hlo.passes.pass_manager import available_passes, run_pipeline
from pass_testing import assert_outputs_close, optimised

# Opcodes the generator computations may use: plain bit arithmetic and data movement.
PLAIN = {"parameter", "constant", "slice", "reshape", "broadcast", "iota", "add", "multiply", "xor", "or",
         "shift-left", "shift-right-logical", "convert", "compare", "select", "concatenate", "tuple",
         "bitcast-convert"}


def module_text(algorithm: str, state: str, data: str) -> str:
    return f"""HloModule m
ENTRY e {{
  s = {state} parameter(0)
  ROOT r = ({state}, {data}) rng-bit-generator(s), algorithm={algorithm}
}}
"""


def expanded(text: str):
    module, changed = optimised(text, "rng-bit-generator-expander")
    assert changed
    assert not any(i.opcode == "rng-bit-generator" for i in module.instructions())
    return module


def states(words: int, dtype=np.uint64):
    """A few states, including counters that wrap around 2^64."""
    rng = np.random.default_rng(words)
    random = rng.integers(0, 2**63, size=words, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    wrapping = random.copy()
    wrapping[1] = np.uint64(2**64 - 2)
    return [np.array([0, 0, 0][:words], dtype=np.uint64).view(dtype), random.view(dtype), wrapping.view(dtype)]


def assert_bit_exact(text: str, state: np.ndarray):
    want = hlo.run(text, state)
    got = hlo.run(expanded(text), state)
    assert len(want) == len(got) == 2
    for w, g in zip(want, got):
        assert w.dtype == g.dtype and w.shape == g.shape
        np.testing.assert_array_equal(np.atleast_1d(g).view(np.uint8), np.atleast_1d(w).view(np.uint8))


def test_registered():
    assert available_passes()["rng-bit-generator-expander"].description


def test_rng_becomes_a_call_and_algorithms_share_a_generator():
    module = expanded("""HloModule m
ENTRY e {
  s = u64[2] parameter(0)
  r = (u64[2], u32[2,3]) rng-bit-generator(s), algorithm=rng_philox
  r2 = (u64[2], u32[2,3]) rng-bit-generator(s), algorithm=rng_default
  g = u32[2,3] get-tuple-element(r), index=1
  g2 = u32[2,3] get-tuple-element(r2), index=1
  ROOT a = u32[2,3] add(g, g2)
}
""")
    assert format_module(module).split("ENTRY", 1)[1] == """ %e (s: u64[2]) -> u32[2,3] {
  %s = u64[2]{0} parameter(0)
  %call = (u64[2]{0}, u32[2,3]{1,0}) call(%s), to_apply=%rng_philox
  %call.1 = (u64[2]{0}, u32[2,3]{1,0}) call(%s), to_apply=%rng_philox
  %g = u32[2,3]{1,0} get-tuple-element(%call), index=1
  %g2 = u32[2,3]{1,0} get-tuple-element(%call.1), index=1
  ROOT %a = u32[2,3]{1,0} add(%g, %g2)
}
"""
    generator = module.computation("rng_philox")
    assert {i.opcode for i in generator.instructions} <= PLAIN
    # Ten Philox rounds: two 32x32->64 multiplies each.
    assert sum(i.opcode == "multiply" for i in generator.instructions) == 20


def test_threefry_generator_tail_interleaves_the_two_words():
    module = expanded(module_text("rng_three_fry", "u64[2]", "u32[3,5]"))
    generator = module.computation("rng_three_fry")
    assert {i.opcode for i in generator.instructions} <= PLAIN
    tail = generator.instructions[-9:]
    # 15 words from 9 blocks: [3,5] halved along its largest dim into [3,3,1], pairs interleaved.
    assert "\n".join(f"{format_shape(i.shape)} {i.opcode}" for i in tail) == """u32[3,3,2]{2,1,0} concatenate
u32[3,6]{1,0} reshape
u32[3,5]{1,0} slice
u64[] constant
u64[] add
u64[1]{0} reshape
u64[1]{0} reshape
u64[2]{0} concatenate
(u64[2]{0}, u32[3,5]{1,0}) tuple"""


SHAPES = ["u32[3,5]", "u32[]", "u32[7]", "u32[4,6]", "u32[1,7,3]", "u32[0]", "u64[5]", "u64[2,3]", "u64[]",
          "u16[3,3]", "u8[5]", "u4[3]", "s32[2,3]", "f32[4]", "f64[3]", "s8[3,1,5]", "bf16[2,2]", "s64[2]"]


@pytest.mark.parametrize("data", SHAPES)
def test_three_fry_bits_are_exact(data):
    text = module_text("rng_three_fry", "u64[2]", data)
    for state in states(2):
        assert_bit_exact(text, state)


@pytest.mark.parametrize("algorithm", ["rng_philox", "rng_default"])
@pytest.mark.parametrize("words", [2, 3])
@pytest.mark.parametrize("data", SHAPES)
def test_philox_bits_are_exact(algorithm, words, data):
    text = module_text(algorithm, f"u64[{words}]", data)
    for state in states(words):
        assert_bit_exact(text, state)


def test_signed_state_is_reinterpreted():
    text = module_text("rng_philox", "s64[3]", "u32[5]")
    for state in states(3, np.int64):
        assert_bit_exact(text, state)


def test_rng_inside_a_while_body_and_the_corpus_style_key_plumbing():
    text = """HloModule m
cond {
  t = (s32[], u64[2], u32[4]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  t = (s32[], u64[2], u32[4]) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  one = s32[] constant(1)
  j = s32[] add(i, one)
  s = u64[2] get-tuple-element(t), index=1
  r = (u64[2], u32[4]) rng-bit-generator(s), algorithm=rng_three_fry
  snext = u64[2] get-tuple-element(r), index=0
  b = u32[4] get-tuple-element(r), index=1
  acc = u32[4] get-tuple-element(t), index=2
  x = u32[4] xor(acc, b)
  ROOT out = (s32[], u64[2], u32[4]) tuple(j, snext, x)
}
ENTRY e {
  k = u32[4] parameter(0)
  kr = u32[2,2] reshape(k)
  st = u64[2] bitcast-convert(kr)
  zero = s32[] constant(0)
  z = u32[] constant(0)
  acc = u32[4] broadcast(z), dimensions={}
  init = (s32[], u64[2], u32[4]) tuple(zero, st, acc)
  ROOT w = (s32[], u64[2], u32[4]) while(init), condition=cond, body=body
}
"""
    key = np.array([1, 2, 3, 0xFFFFFFFF], dtype=np.uint32)
    want = hlo.run(text, key)
    got = hlo.run(expanded(text), key)
    assert_outputs_close(got, want, exact=True)


def test_unsupported_output_type_is_an_error_at_the_instruction():
    text = module_text("rng_three_fry", "u64[2]", "c64[2]")
    try:
        module = parse_module(text)
    except HloError:
        pytest.skip("the parser rejects this rng-bit-generator already")
    with pytest.raises(HloError, match="cannot expand an rng-bit-generator producing c64") as info:
        run_pipeline(module, "rng-bit-generator-expander", verify_each=False)
    assert info.value.diagnostics[0].loc is not None
