"""Generated modules for the tools' tests: large, varied, deterministic.

`layered_module(n)` is an entry computation of at least `n` instructions (every one live) over f32[8,16]
values: elementwise chains with fan-in from earlier layers, reductions through a shared
reducer, broadcasts back, calls of a small computation, a while loop and fusions, with
metadata (op_name, source_file, source_line) on most instructions. `plant` inserts two
marked instructions in the middle (`%planted.exp = exponential(...)` and
`%planted.rem = remainder(%planted.exp, ...)`), feeding the rest of the graph; with
`tuple_root` the root is a tuple of every otherwise unused value, `%planted.rem` among
them (so that a wrong exponential shows in an output).
"""
from __future__ import annotations

import random

SHAPE = "f32[8,16]"
BINARY = ("add", "multiply", "subtract", "maximum", "minimum")
UNARY = ("negate", "tanh", "abs", "sine", "cosine")

HEADER = """HloModule generated

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%scale (x: f32[8,16]) -> f32[8,16] {
  %x = f32[8,16] parameter(0)
  %two = f32[] constant(2)
  %twos = f32[8,16] broadcast(%two), dimensions={}
  ROOT %scaled = f32[8,16] multiply(%x, %twos)
}

%fused_add_tanh (p0: f32[8,16], p1: f32[8,16]) -> f32[8,16] {
  %p0 = f32[8,16] parameter(0)
  %p1 = f32[8,16] parameter(1)
  %fadd = f32[8,16] add(%p0, %p1)
  ROOT %ftanh = f32[8,16] tanh(%fadd)
}

%cond (s: (s32[], f32[8,16])) -> pred[] {
  %s = (s32[], f32[8,16]) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (t: (s32[], f32[8,16])) -> (s32[], f32[8,16]) {
  %t = (s32[], f32[8,16]) parameter(0)
  %j = s32[] get-tuple-element(%t), index=0
  %one = s32[] constant(1)
  %j1 = s32[] add(%j, %one)
  %v = f32[8,16] get-tuple-element(%t), index=1
  %v1 = f32[8,16] sine(%v)
  ROOT %next = (s32[], f32[8,16]) tuple(%j1, %v1)
}
"""


def layered_module(n: int = 2000, seed: int = 0, plant: bool = True, tuple_root: bool = False) -> str:
    r = random.Random(seed)
    lines = [HEADER, "ENTRY %main {"]
    values = []
    for k in range(3):
        lines.append(f"  %x{k} = {SHAPE} parameter({k})")
        values.append(f"x{k}")
    count = 3
    i = 0
    planted_at = n // 2 if plant else -1

    used: set[str] = set()
    sinks_extra: list[str] = []

    def pick(recent: int) -> str:
        value = values[-1 - int(r.random() ** 2 * min(len(values) - 1, recent))]
        used.add(value)
        return value

    def meta(name: str) -> str:
        return (f', metadata={{op_name="jit(model)/layer{i // 100}/{name}" source_file="model.py" '
                f'source_line={100 + i}}}')

    while count < n:
        k = r.random()
        name = f"v{i}"
        if count >= planted_at >= 0:
            lines.append(f"  %planted.exp = {SHAPE} exponential(%{pick(5)}){meta('exp')}")
            lines.append(f"  %planted.rem = {SHAPE} remainder(%planted.exp, %{pick(5)}){meta('rem')}")
            if tuple_root:
                sinks_extra.append("planted.rem")
            else:
                values.append("planted.rem")
            count += 2
            planted_at = -1
            continue
        if k < 0.45:
            lines.append(f"  %{name} = {SHAPE} {r.choice(BINARY)}(%{pick(40)}, %{pick(8)}){meta(name)}")
            count += 1
        elif k < 0.8:
            lines.append(f"  %{name} = {SHAPE} {r.choice(UNARY)}(%{pick(20)}){meta(name)}")
            count += 1
        elif k < 0.9:
            lines.append(f"  %zero.{i} = f32[] constant(0)")
            lines.append(f"  %red.{i} = f32[8] reduce(%{pick(10)}, %zero.{i}), dimensions={{1}}, to_apply=%sum")
            lines.append(f"  %{name} = {SHAPE} broadcast(%red.{i}), dimensions={{0}}{meta(name)}")
            count += 3
        elif k < 0.95:
            lines.append(f"  %{name} = {SHAPE} call(%{pick(10)}), to_apply=%scale")
            count += 1
        elif k < 0.98:
            lines.append(f"  %{name} = {SHAPE} fusion(%{pick(10)}, %{pick(10)}), kind=kLoop, "
                         f"calls=%fused_add_tanh")
            count += 1
        else:
            lines.append(f"  %c0.{i} = s32[] constant(0)")
            lines.append(f"  %init.{i} = (s32[], {SHAPE}) tuple(%c0.{i}, %{pick(10)})")
            lines.append(f"  %loop.{i} = (s32[], {SHAPE}) while(%init.{i}), condition=%cond, body=%body")
            lines.append(f"  %{name} = {SHAPE} get-tuple-element(%loop.{i}), index=1")
            count += 4
        values.append(name)
        i += 1
    # the root sums every value nothing else uses, so that the whole graph is live
    sinks = [v for v in values if v not in used] + sinks_extra
    if tuple_root:
        shapes = ", ".join([SHAPE] * len(sinks))
        lines.append(f"  ROOT %out = ({shapes}) tuple({', '.join('%' + v for v in sinks)})")
        lines.append("}")
        return "\n".join(lines) + "\n"
    acc = sinks[0]
    for j, v in enumerate(sinks[1:]):
        lines.append(f"  %out.{j} = {SHAPE} add(%{acc}, %{v})")
        acc = f"out.{j}"
    lines[-1] = lines[-1].replace(f"  %{acc} =", f"  ROOT %{acc} =")
    lines.append("}")
    return "\n".join(lines) + "\n"


def instruction_total(text: str) -> int:
    import hlo
    module = hlo.parse_module(text, "m")
    return sum(len(c.instructions) for c in module.computations)
