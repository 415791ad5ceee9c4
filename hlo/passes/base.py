"""What a pass is, and the registry of passes by name.

A pass has a name (as XLA names the equivalent pass), a one-line description and
`run(module) -> bool` (whether it changed anything). A pass module registers its
passes with `@register`; pass_manager.py imports every pass module, so that
`available_passes()` knows them all.
"""
from __future__ import annotations

from ..ir import Module


class Pass:
    name: str = ""
    description: str = ""

    def run(self, module: Module) -> bool:
        raise TypeError(f"pass {type(self).__name__} does not define run()")


REGISTRY: dict[str, type[Pass]] = {}


def register(cls: type[Pass]) -> type[Pass]:
    if not cls.name or not cls.description:
        raise TypeError(f"pass {cls.__name__} needs a name and a description")
    REGISTRY[cls.name] = cls
    return cls
