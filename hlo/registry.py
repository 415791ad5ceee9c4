"""One idiom for per-opcode handlers: shape rules, interpreter kernels, code generators, rewrite rules.

A layer makes a registry and registers each handler beside its definition:

    SHAPE_RULES = OpRegistry("shape rule")

    @SHAPE_RULES.register(Op.ADD, Op.SUBTRACT)
    def binary(op): ...

    @SHAPE_RULES.register(ops_with(Trait.REARRANGE))      # a whole group at once
    def rearrange(op): ...

    EMITTERS.unsupported(Op.RAGGED_DOT, reason="...")     # an explicit, documented gap

Registering an opcode twice is an error (unless the registry keeps a list of handlers per
opcode, `many=True`, as rewrite rules do), so is registering a name that is not an opcode.
`missing()` lists the opcodes with neither a handler nor a reason: the architecture tests
call it for the registries that must cover every opcode.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional

from .opcodes import OPCODES, Op


def _flatten(opcodes) -> list[Op]:
    out: list[Op] = []
    for item in opcodes:
        if isinstance(item, str):
            if item not in OPCODES:
                raise KeyError(f"{item!r} is not an opcode")
            out.append(Op(item))
        else:
            out.extend(_flatten(sorted(item)))
    return out


class OpRegistry:
    """Handlers of one kind, keyed by opcode (see the module docstring)."""

    def __init__(self, what: str, many: bool = False):
        self.what = what
        self.many = many
        self._handlers: dict[Op, Any] = {}
        self._reasons: dict[Op, str] = {}
        self._details: dict[Op, dict] = {}

    def register(self, *opcodes: Op | Iterable[Op], **details) -> Callable:
        """Decorator: the function handles `opcodes`; `details` are kept for `details(op)`."""
        def decorate(fn):
            for op in _flatten(opcodes):
                self.add(op, fn, **details)
            return fn
        return decorate

    def add(self, opcode: Op, handler, **details) -> None:
        op = _flatten([opcode])[0]
        if self.many:
            self._handlers.setdefault(op, []).append(handler)
        else:
            if op in self._handlers:
                raise ValueError(f"{op} already has a {self.what}: {self._handlers[op]!r}")
            self._handlers[op] = handler
        if details:
            self._details.setdefault(op, {}).update(details)

    def unsupported(self, *opcodes: Op | Iterable[Op], reason: str) -> None:
        """Record that `opcodes` deliberately have no handler, and why (shown to users and in docs)."""
        for op in _flatten(opcodes):
            self._reasons[op] = reason

    def get(self, opcode: str, default=None):
        return self._handlers.get(opcode, default if not self.many else (default or ()))

    def __getitem__(self, opcode: str):
        return self._handlers[opcode]

    def __contains__(self, opcode: object) -> bool:
        return opcode in self._handlers

    def handled(self) -> frozenset:
        return frozenset(self._handlers)

    def reason(self, opcode: str) -> Optional[str]:
        """Why `opcode` has no handler, when that is deliberate."""
        return self._reasons.get(opcode)

    def reasons(self) -> dict[Op, str]:
        return dict(self._reasons)

    def details(self, opcode: str) -> dict:
        return self._details.get(opcode, {})

    def missing(self, universe: Iterable[str] = OPCODES) -> list[Op]:
        """Opcodes of `universe` with neither a handler nor a recorded reason."""
        return [Op(o) for o in universe if o not in self._handlers and o not in self._reasons]

    def __repr__(self) -> str:
        return f"OpRegistry({self.what!r}, {len(self._handlers)} opcodes)"
