"""What a pass is, and the registry of passes by name.

A pass has a name (as XLA names the equivalent pass), a one-line description and
`run(module) -> bool` (whether it changed anything). A pass module registers its
passes with `@register`; pass_manager.py imports every pass module, so that
`available_passes()` knows them all.

An `incremental` pass visits its computations with `each_computation`: it then skips those it
found nothing to do in last time and that did not change since (incremental.py says what such a
pass promises). What the passes found is kept through a whole pipeline while the passes that
change the module are incremental or `edits_tracked`.
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

from ..ir import Computation, Module
from .incremental import ChangeTracker


class Pass:
    name: str = ""
    description: str = ""
    incremental = False  # see incremental.py for what a pass promises by setting it
    # Every edit the pass makes goes through the IR's methods (or is of an instruction it also edits
    # through them), so that the tracker need not forget what other passes found when this one
    # changes something (an incremental pass promises this too).
    edits_tracked = False
    tracker: Optional[ChangeTracker] = None  # given by the pass manager inside fixpoint groups

    def each_computation(self, comps: Iterable[Computation], process: Callable[[Computation], bool]) -> bool:
        """`process(comp)` for each computation (but those known to hold nothing to do); whether any changed."""
        if self.tracker is not None and self.incremental:
            return self.tracker.each_computation(self.name, comps, process)
        changed = False
        for comp in comps:
            changed |= process(comp)
        return changed

    def run(self, module: Module) -> bool:
        raise TypeError(f"pass {type(self).__name__} does not define run()")


REGISTRY: dict[str, type[Pass]] = {}


def register(cls: type[Pass]) -> type[Pass]:
    if not cls.name or not cls.description:
        raise TypeError(f"pass {cls.__name__} needs a name and a description")
    REGISTRY[cls.name] = cls
    return cls
