"""The checker memoizes constants by their shape and their literal's shape (all its checks read):
a constant whose literal does not fit is still reported after a valid one of the same shape."""
from __future__ import annotations

import numpy as np
import pytest

from hlo.analysis.checker import check_module
from hlo.diagnostics import HloError
from hlo.literal import Literal
from hlo.shapes import Shape
from hlo.text.parser import parse_module

_TEXT = """HloModule m

ENTRY %e {
  %a = f32[2]{0} constant({1, 2})
  %b = f32[2]{0} constant({3, 4})
  ROOT %t = (f32[2]{0}, f32[2]{0}) tuple(%a, %b)
}
"""


def test_a_constant_with_a_literal_of_another_shape_is_reported_after_a_valid_one():
    module = parse_module(_TEXT)
    check_module(module)
    b = module.entry.instructions[1]
    wrong = Shape.array(b.shape.element_type, (3,)).with_default_layouts()
    b.attrs["literal"] = Literal(wrong, np.zeros(3, np.float32))
    with pytest.raises(HloError) as info:
        check_module(module)
    assert "literal of 'constant' has shape f32[3]" in str(info.value)
