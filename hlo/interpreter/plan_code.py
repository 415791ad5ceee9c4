"""Straight-line Python for an evaluator plan.

A plan (see plans.py) is a list of steps (handler, instruction, operand
slots, result slot). Running it step by step costs a dispatch per step; here the
steps become the source of one Python function, compiled once per plan, with
one local variable per value and one line per step: either a call of the step's
handler or, where the operand types make it exact, a numpy expression written
out directly (`specialise`, from the handlers' writers). A run is then a single call.

Values computed once per evaluator (a plan's static slots) reach the function
through a closure: `PlanCode.bind(evaluator, statics)` returns the run function
`run(args) -> root value` of one evaluator.
"""
from __future__ import annotations

from types import TracebackType
from typing import Any, Callable, Optional, Sequence

# specialise(step, operand variable names, bind, setup, static slots) -> Python expression or None.
# bind(obj) -> the global name under which the generated code can use obj.
# setup(expression) -> the name of a variable holding the expression's value,
#     computed once per evaluator (it may read the static values' variables).
Specialiser = Callable[[tuple, list, Callable[[Any], str], Callable[[str], str], frozenset], Optional[str]]


class PlanCode:
    """The steps of a plan as one generated Python function (built once, bound per evaluator)."""

    __slots__ = ("_factory", "_run_code", "_instruction_at_line", "source")

    def __init__(self, steps: Sequence[tuple], param_slots: Sequence[tuple[int, int]], root_slot: int,
                 specialise: Specialiser, name: str = "plan"):
        namespace: dict[str, Any] = {}
        names_by_id: dict[int, str] = {}

        def bind(obj: Any) -> str:
            name = names_by_id.get(id(obj))
            if name is None:
                name = names_by_id[id(obj)] = f"g{len(names_by_id)}"
                namespace[name] = obj
            return name

        computed = {slot for slot, _ in param_slots} | {step[3] for step in steps}
        read = {slot for step in steps for slot in step[2]} | {root_slot}
        statics = sorted(read - computed)
        static_slots = frozenset(statics)
        setups: list[str] = []

        def setup(expr: str) -> str:
            setups.append(f"    k{len(setups)} = {expr}")
            return f"k{len(setups) - 1}"

        body = [f"        v{slot} = args[{number}]" for slot, number in param_slots]
        step_lines: list[tuple[int, Any]] = []
        for step in steps:
            handler, inst, operands, out = step
            args = [f"v{slot}" for slot in operands]
            expr = specialise(step, args, bind, setup, static_slots)
            if expr is None:
                expr = f"{bind(handler)}(ev, {bind(inst)}, [{', '.join(args)}])"
            body.append(f"        v{out} = {expr}")
            step_lines.append((len(body), inst))
        body.append(f"        return v{root_slot}")
        head = ["def factory(ev, st):"] + [f"    v{slot} = st[{slot}]" for slot in statics] + setups
        head.append("    def run(args):")
        self._instruction_at_line = {len(head) + n: inst for n, inst in step_lines}
        self.source = "\n".join(head + body + ["    return run"]) + "\n"
        exec(compile(self.source, f"<hlo plan {name}>", "exec"), namespace)
        self._factory = namespace["factory"]
        self._run_code = next(c for c in self._factory.__code__.co_consts if getattr(c, "co_name", "") == "run")

    def bind(self, evaluator: Any, statics: Sequence[Any]) -> Callable[[Sequence[Any]], Any]:
        """The run function of one evaluator, its static values filled in."""
        return self._factory(evaluator, statics)

    def failing_instruction(self, traceback: Optional[TracebackType]) -> Optional[Any]:
        """The instruction whose line of the generated code an exception went through."""
        found = None
        while traceback is not None:
            if traceback.tb_frame.f_code is self._run_code:
                found = self._instruction_at_line.get(traceback.tb_lineno, found)
            traceback = traceback.tb_next
        return found
