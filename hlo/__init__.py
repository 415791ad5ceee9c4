"""A toolchain for the textual XLA HLO language.

Public API:
    parse_module(text, filename) -> Module      (hlo.parser)
    format_module(module) -> str               (hlo.printer)
    check_module(module)                        (hlo.checker)
    run(module_or_text, *arrays, ...)           (hlo.interpreter)
"""
from .diagnostics import HloError
from .parser import parse_module
from .printer import format_module
from .interpreter import run

__all__ = ["HloError", "parse_module", "format_module", "run"]
