"""Loop hints that keep LLVM's work proportional to the code: loops around a loop kept rolled stay
rolled, output and copy nests never unroll their outer loops, a one-step loop is no loop, and a
window that never reaches padding carries no bounds test."""
import numpy as np
from llvmlite import ir

from hlo.codegen import CodegenOptions, JitExecutable, lower_module
from hlo.codegen.function_context import ROLLED, FunctionContext, new_loop_id
from hlo.interpreter import run
from hlo.text.parser import parse_module

VOID = ir.VoidType()


def context() -> FunctionContext:
    module = ir.Module(name="t")
    return FunctionContext(module, ir.Function(module, ir.FunctionType(VOID, []), name="f"))


def back_edge_hints(ctx: FunctionContext) -> dict:
    """{loop name: whether its back edge says do not unroll}"""
    ctx.b.ret_void()
    ctx.finish()
    text = str(ctx.module)
    found = {}
    for line in text.splitlines():
        if line.strip().startswith("br label %\"") and ".header\"" in line:
            name = line.split('%"')[1].split(".header")[0]
            found[name] = "!llvm.loop" in line
    return found


def test_a_loop_around_a_rolled_loop_stays_rolled_and_so_on_outwards():
    ctx = context()
    with ctx.loop(2, name="outer"):
        with ctx.loop(8, name="middle"):
            with ctx.loop(256, name="inner", loop_id=new_loop_id(ctx.module, ROLLED)):
                pass
        with ctx.loop(4, name="sibling"):
            pass
    hints = back_edge_hints(ctx)
    assert hints == {"inner": True, "middle": True, "outer": True, "sibling": False}


def test_loops_around_plain_loops_may_unroll():
    ctx = context()
    with ctx.loop(3, name="kh"):
        with ctx.loop(3, name="kw"):
            pass
    assert back_edge_hints(ctx) == {"kh": False, "kw": False}


def test_roll_outer_keeps_all_but_the_innermost_loop_rolled():
    ctx = context()
    with ctx.loop_nest([4, 3, 5], roll_outer=True):
        pass
    assert back_edge_hints(ctx) == {"d0": True, "d1": True, "d2": False}


def test_a_one_step_loop_is_no_loop():
    ctx = context()
    with ctx.loop(1, name="one") as i:
        assert isinstance(i, ir.Constant) and i.constant == 0
    with ctx.loop(1, name="from_one", start=1):   # no step: a real (empty) loop
        pass
    assert back_edge_hints(ctx) == {"from_one": False}


POOL = """HloModule pool
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[2,16,16,8] parameter(0)
  init = f32[] constant(-inf)
  ROOT r = f32[2,8,8,8] reduce-window(x, init), window={size=1x2x2x1 stride=1x2x2x1}, to_apply=max
}
"""


def test_a_window_inside_the_input_has_no_bounds_test_and_a_padded_one_has():
    unpadded = lower_module(parse_module(POOL), CodegenOptions()).kernels[0].llvm_ir
    assert "window.then" not in unpadded
    padded = POOL.replace("stride=1x2x2x1}", "stride=1x2x2x1 pad=0_0x1_0x1_0x0_0}")
    assert "window.then" in lower_module(parse_module(padded), CodegenOptions()).kernels[0].llvm_ir
    x = np.random.default_rng(0).standard_normal((2, 16, 16, 8)).astype(np.float32)
    for text in (POOL, padded):
        module = parse_module(text)
        np.testing.assert_array_equal(JitExecutable(module, CodegenOptions(), threads=1).run(x)[0], run(module, x)[0])
