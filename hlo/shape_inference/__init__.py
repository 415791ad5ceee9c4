"""Shape inference: the result shape each HLO opcode produces (XLA's ShapeInference).

`infer_shape(inst)` computes the shape an instruction must have from its operands'
shapes, its attributes and the computations it calls. The parser uses it to fill
shapes left out of the text; the checker (hlo/analysis/checker.py) compares it with the
written shape. For opcodes whose result cannot be derived from the operands
(opcodes.py `shape_required`: reshape, broadcast, convert, custom-call, fusion,
collectives ...) the written shape is authoritative: it is returned after checking
whatever can be checked (element counts, types, operand/parameter agreement).

Every inconsistency raises `ShapeError` (a ValueError) whose message says what was
expected and what was found; its `operand`, `attribute` and `related` fields let the
checker point at the operand, the attribute or the computation at fault. Nothing
but ValueError escapes `infer_shape`, whatever the input.

Rules follow XLA (shape_inference.cc, hlo_verifier.cc) with the project's decisions
(spec/ops-*.md): no implicit broadcasting, identical element types for elementwise
operands (no mixed precision), clamp accepts scalar bounds. Inferred shapes carry
default layouts; layouts never take part in comparisons (`compatible`).

Layout of the package: `core` (the instruction view, ShapeError, helpers, SHAPE_RULES and
`infer_shape`), `computations` (signatures of called computations, reducers), and one module
per op family, named as the interpreter's: elementwise, data_movement, linear, windows,
indexing, sorting, linalg, rng, collectives, transfers, control. Each rule is registered in
SHAPE_RULES beside its definition; importing this package loads them all.
"""
from . import (collectives, control, data_movement, elementwise, indexing, linalg, linear, rng,  # noqa: F401
               sorting, transfers, windows)
from .computations import numbered_parameters, signature
from .core import SHAPE_RULES, ShapeError, ShapeTokens, compatible, display_opcode, fmt, infer_shape, subshape
from .windows import dilated_size, window_output_dims

__all__ = ["SHAPE_RULES", "ShapeError", "ShapeTokens", "compatible", "dilated_size", "display_opcode", "fmt",
           "infer_shape", "numbered_parameters", "signature", "subshape", "window_output_dims"]
