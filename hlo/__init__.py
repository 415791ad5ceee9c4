"""A toolchain for the textual XLA HLO language.

Public API:
    parse_module(text, filename) -> Module      (hlo.text.parser)
    format_module(module) -> str               (hlo.text.printer)
    check_module(module)                        (hlo.analysis.checker)
    run(module_or_text, *arrays, ...)           (hlo.interpreter)
"""
from .diagnostics import HloError
from .text.parser import parse_module
from .text.printer import format_module

__all__ = ["HloError", "parse_module", "format_module", "check_module", "run"]


def __getattr__(name: str):
    """check_module and run load on first use: tools that only parse and print start faster."""
    if name == "check_module":
        from .analysis.checker import check_module  # lazy: tool start-up
        return check_module
    if name == "run":
        from .interpreter import run  # lazy: tool start-up
        return run
    raise AttributeError(f"module 'hlo' has no attribute {name!r}")
