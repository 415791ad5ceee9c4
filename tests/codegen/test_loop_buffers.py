"""A while loop that writes into a carried array (a KV cache, a scan's outputs) updates the state
buffer in place (buffers.py): no copy of the array per iteration, and the same results as the
interpreter; where the body still reads the old array, it is not updated in place."""
import numpy as np
from target_cases import AVX2, HOST, RAW, check as check_targets, private_cache  # noqa: F401

from hlo import parse_module
from hlo.codegen.buffers import assign_buffers, resolve
from hlo.codegen.lowering import prepare
from hlo.opcodes import Op


def scan(extra_body: str = "", extra_root: str = "", extra_shape: str = "") -> str:
    """for i < 8: cache[i] = h * (i + 1); h = tanh(h); optional extra reads of the cache."""
    return f"""HloModule m
cond {{
  s = (s32[], f32[4], f32[8,4]{extra_shape}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(8)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = (s32[], f32[4], f32[8,4]{extra_shape}) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[4] get-tuple-element(s), index=1
  cache = f32[8,4] get-tuple-element(s), index=2
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  fi = f32[] convert(i1)
  fb = f32[4] broadcast(fi), dimensions={{}}
  scaled = f32[4] multiply(h, fb)
  row = f32[1,4] reshape(scaled)
  zero = s32[] constant(0)
  updated = f32[8,4] dynamic-update-slice(cache, row, i, zero)
  th = f32[4] tanh(h){extra_body}
  ROOT next = (s32[], f32[4], f32[8,4]{extra_shape}) tuple(i1, th, updated{extra_root})
}}
ENTRY e {{
  h0 = f32[4] parameter(0)
  c0 = f32[8,4] parameter(1)
  z = s32[] constant(0)
  init = (s32[], f32[4], f32[8,4]{extra_shape}) tuple(z, h0, c0{", c0" if extra_shape else ""})
  w = (s32[], f32[4], f32[8,4]{extra_shape}) while(init), condition=cond, body=body
  ROOT out = f32[8,4] get-tuple-element(w), index=2
}}
"""


def in_place_updates(text: str, options=HOST) -> list[str]:
    module = prepare(parse_module(text, "loop.hlo"), options)
    assignment = assign_buffers(module)
    return [i.name for c in module.computations for i in c.instructions
            if id(i) in assignment.in_place and (i.opcode == Op.DYNAMIC_UPDATE_SLICE or i.opcode == Op.FUSION)]


def check(text, *arrays):
    check_targets(text, *arrays, options=(RAW, HOST, AVX2), rtol=1e-6)


ARGS = (np.linspace(-1, 1, 4).astype(np.float32), np.full((8, 4), 7.0, np.float32))


def test_a_scan_writes_its_outputs_into_the_loop_state():
    text = scan()
    assert in_place_updates(text, RAW) == ["updated"]
    assert in_place_updates(text)                 # also once the pipeline has fused the update
    check(text, *ARGS)


def test_the_old_array_still_read_after_the_update_is_not_overwritten():
    # the body also returns the cache as it was before the update (index 3)
    text = scan(extra_root=", cache", extra_shape=", f32[8,4]")
    assert "updated" not in in_place_updates(text, RAW)
    check(text, *ARGS)


def test_the_old_array_read_by_another_instruction_is_not_overwritten():
    text = scan(extra_body="\n  old = f32[1,4] slice(cache), slice={[0:1], [0:4]}\n  oldr = f32[4] reshape(old)"
                           "\n  th2 = f32[4] add(th, oldr)").replace("tuple(i1, th, updated", "tuple(i1, th2, updated")
    assert "updated" not in in_place_updates(text, RAW)
    check(text, *ARGS)


def weights_loop(alias: str = "", swapped: bool = False) -> str:
    """for i < 5: h = tanh(h @ w + b); w (an entry parameter) and b (a constant) are passed on
    unchanged; with `swapped`, w and a second weight change places every iteration."""
    w2 = "w2 = f32[4,4] get-tuple-element(s), index=4" if swapped else ""
    order = "w2, b, w" if swapped else "w, b, w2"
    return f"""HloModule m{alias}
cond {{
  s = (s32[], f32[4], f32[4,4], f32[4], f32[4,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT lt = pred[] compare(i, n), direction=LT
}}
body {{
  s = (s32[], f32[4], f32[4,4], f32[4], f32[4,4]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  h = f32[4] get-tuple-element(s), index=1
  w = f32[4,4] get-tuple-element(s), index=2
  b = f32[4] get-tuple-element(s), index=3
  {w2 or "w2 = f32[4,4] get-tuple-element(s), index=4"}
  hw = f32[4] dot(h, w), lhs_contracting_dims={{0}}, rhs_contracting_dims={{0}}
  t = f32[4] add(hw, b)
  th = f32[4] tanh(t)
  one = s32[] constant(1)
  i1 = s32[] add(i, one)
  ROOT next = (s32[], f32[4], f32[4,4], f32[4], f32[4,4]) tuple(i1, th, {order})
}}
ENTRY e {{
  h0 = f32[4] parameter(0)
  w0 = f32[4,4] parameter(1)
  v0 = f32[4,4] parameter(2)
  z = s32[] constant(0)
  b0 = f32[4] constant({{0.5, -0.25, 0.125, 0}})
  init = (s32[], f32[4], f32[4,4], f32[4], f32[4,4]) tuple(z, h0, w0, b0, v0)
  w = (s32[], f32[4], f32[4,4], f32[4], f32[4,4]) while(init), condition=cond, body=body
  h = f32[4] get-tuple-element(w), index=1
  ww = f32[4,4] get-tuple-element(w), index=2
  ROOT out = (f32[4], f32[4,4]) tuple(h, ww)
}}
"""


def state_kinds(text: str) -> list[str]:
    module = prepare(parse_module(text, "loop.hlo"), RAW)
    assignment = assign_buffers(module)
    loop = next(i for i in module.entry.instructions if i.opcode == Op.WHILE)
    return [resolve(leaf).kind.value for leaf in assignment.values[id(loop)]][2:]   # w, b, w2


WEIGHTS = (np.linspace(-1, 1, 4).astype(np.float32), np.linspace(-0.5, 0.7, 16).reshape(4, 4).astype(np.float32),
           np.linspace(0.3, -0.9, 16).reshape(4, 4).astype(np.float32))


def test_an_entry_parameter_or_constant_passed_on_unchanged_is_the_loop_state_itself():
    text = weights_loop()
    assert state_kinds(text) == ["param", "constant", "param"]
    check(text, *WEIGHTS)


def test_elements_that_change_places_and_donated_parameters_get_state_buffers_of_their_own():
    text = weights_loop(swapped=True)
    kinds = state_kinds(text)
    assert kinds[1] == "constant" and "param" not in kinds   # w and w2 swap: both need the state's own
    check(text, *WEIGHTS)
    donated = weights_loop(alias=", input_output_alias={ {1}: (1, {}, may-alias) }")
    kinds = state_kinds(donated)
    assert kinds[0] != "param" and kinds[1:] == ["constant", "param"]   # w0 may hold the result
    check(donated, *WEIGHTS)
