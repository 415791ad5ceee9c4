"""Computation.post_order after edits: looking again only at the instructions edited since the list
was last in order gives what looking at every instruction gives."""
from __future__ import annotations

import random

from hlo import parse_module
from hlo.ir import Instruction
from hlo.opcodes import Op

_TEXT = """HloModule m

ENTRY e {
  p = f32[4] parameter(0)
  q = f32[4] parameter(1)
  a = f32[4] add(p, q)
  b = f32[4] multiply(a, p)
  c = f32[4] subtract(b, q)
  d = f32[4] negate(c)
  ROOT r = f32[4] add(d, a)
}
"""


def _searched(comp) -> list[str]:
    """The post order found by looking at every instruction."""
    comp._in_order_at = -1
    return [i.name for i in comp.post_order()]


def test_an_operand_moved_after_its_user_is_found():
    module = parse_module(_TEXT)
    entry = module.entry
    inst = entry.by_name()
    assert [i.name for i in entry.post_order()] == ["p", "q", "a", "b", "c", "d", "r"]
    late = entry.add(Instruction("late", Op.NEGATE, inst["p"].shape, [inst["p"]]))  # appended: after b
    inst["b"].replace_operand(1, late)
    order = [i.name for i in entry.post_order()]
    assert order.index("late") < order.index("b")
    assert order == _searched(entry)


def test_reordering_the_list_is_looked_at_whole():
    module = parse_module(_TEXT)
    entry = module.entry
    entry.post_order()
    entry.instructions = list(reversed(entry.instructions))
    assert [i.name for i in entry.post_order()] == ["p", "q", "a", "b", "c", "d", "r"]


def test_random_edits_give_the_order_a_full_search_gives():
    rng = random.Random(12)
    for _ in range(40):
        module = parse_module(_TEXT)
        entry = module.entry
        for step in range(12):
            entry.post_order()
            insts = [i for i in entry.instructions if i.opcode != Op.PARAMETER]
            user = rng.choice(insts)
            candidates = [i for i in entry.instructions if i is not user and user not in _upstream(i)]
            choice = rng.random()
            if choice < 0.4:
                user.replace_operand(rng.randrange(len(user.operands)), rng.choice(candidates))
            elif choice < 0.7:
                new = Instruction(f"n{step}", Op.NEGATE, user.shape, [rng.choice(candidates)])
                entry.add(new, before=rng.choice([None] + entry.instructions))
                user.replace_operand(0, new)
            else:
                dead = [i for i in insts if not i.users and i is not entry.root]
                if dead:
                    entry.remove(dead[0])
            fast = [i.name for i in entry.post_order()]
            assert fast == _searched(entry)


def _upstream(inst) -> set:
    seen, stack = set(), [inst]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.operands)
    return seen
