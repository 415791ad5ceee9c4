"""algsimp: what golden files cannot say. The rule cases (module in, entry text out after
`algsimp,dce`, interpreter equivalence on random inputs with NaN/inf/-0) are in
tests/golden/passes/algsimp*.hlo; here: the order rules are tried in, pass-level properties,
unit tests of the helpers, and random programs that must keep their value."""
import math

import pytest

from hlo import parse_module
from hlo.opcodes import Op
from hlo.passes.algsimp.facts import cast_preserves_values, map_dims_through_reshape, ones_inserted_or_deleted
from hlo.passes.algsimp.rules import RULES
from hlo.passes.pass_manager import available_passes
from hlo.shapes import PRIMITIVE_TYPES
from pass_testing import assert_same_outputs, entry_text, optimised

# Inputs include NaN, infinities and signed zeros: a rule must be right for them too.
INPUTS = dict(ints=(-6, 7), special_floats=True)


def simplify(text: str, pipeline: str = "algsimp,dce"):
    """(module before, module after `pipeline`, checked)."""
    return parse_module(text), optimised(text, pipeline)[0]


def assert_same_results(before, after, seed=0):
    assert_same_outputs(before, after, seeds=(seed,), rtol=1e-5, **INPUTS)


def module(params: str, body: str, extra: str = "") -> str:
    return f"HloModule m\n{extra}\nENTRY main {{\n{params}\n{body}\n}}\n"


# =========================================================================== pass-level properties


def test_registered_with_a_description():
    passes = available_passes()
    assert passes["algsimp"].description


# The rules of each opcode, in the order they are tried (the first that applies wins): the
# order of registration, which the golden outputs depend on.
RULE_ORDER = {
    Op.ADD: ["add_zero"],
    Op.SUBTRACT: ["subtract_self", "subtract_zero"],
    Op.MULTIPLY: ["multiply_one", "multiply_zero", "multiply_negations"],
    Op.DIVIDE: ["divide_one"],
    Op.POWER: ["power_special_exponents"],
    Op.AND: ["and_identities"],
    Op.OR: ["or_identities"],
    Op.XOR: ["xor_identities"],
    Op.MAXIMUM: ["minmax_same_operands", "minmax_neutral_bound", "minmax_nested"],
    Op.MINIMUM: ["minmax_same_operands", "minmax_neutral_bound", "minmax_nested"],
    Op.CLAMP: ["clamp_of_clamp"],
    Op.EXPONENTIAL: ["exp_of_zero"],
    Op.NEGATE: ["double_negation"],
    Op.NOT: ["double_negation"],
    Op.ABS: ["abs_of_non_negative"],
    Op.REAL: ["real_imag_of_real"],
    Op.IMAG: ["real_imag_of_real"],
    Op.COMPLEX: ["complex_of_parts"],
    Op.SELECT: ["select_same_branches", "select_constant_predicate", "select_of_not", "select_pred_constants"],
    Op.COMPARE: ["compare_constants", "compare_same_operands", "compare_unsigned_with_zero",
                 "compare_pred_with_constant"],
    Op.CONVERT: ["convert_same_type", "convert_round_trip"],
    Op.BITCAST_CONVERT: ["operand_of_same_shape", "bitcast_convert_chain"],
    Op.COPY: ["copy_or_bitcast_noop", "copy_of_copy"],
    Op.BITCAST: ["copy_or_bitcast_noop", "bitcast_of_bitcast"],
    Op.REDUCE_PRECISION: ["reduce_precision_noop"],
    Op.RESHAPE: ["reshape_zero_elements", "operand_of_same_shape", "reshape_of_reshape", "reshape_of_broadcast"],
    Op.TRANSPOSE: ["transpose_identity", "transpose_of_transpose", "transpose_of_degenerate_dims",
                   "transpose_of_broadcast"],
    Op.BROADCAST: ["broadcast_as_reshape", "broadcast_of_degenerate_reshape", "broadcast_of_iota",
                   "broadcast_of_broadcast", "broadcast_drop_degenerate_dims"],
    Op.IOTA: ["iota_trivial"],
    Op.SLICE: ["operand_of_same_shape", "slice_of_slice", "slice_of_pad", "slice_of_broadcast",
               "slice_of_concatenate"],
    Op.REVERSE: ["reverse_trivial", "reverse_of_reverse", "reverse_of_broadcast"],
    Op.PAD: ["pad_of_empty", "pad_interior_on_unit_dims", "pad_noop"],
    Op.CONCATENATE: ["concatenate_single", "concatenate_drop_empty", "concatenate_flatten",
                     "concatenate_adjacent_slices", "concatenate_with_broadcast_scalar", "concatenate_repeated_unit"],
    Op.DYNAMIC_SLICE: ["operand_of_same_shape", "dynamic_slice_constant_starts"],
    Op.DYNAMIC_UPDATE_SLICE: ["dynamic_update_slice_whole"],
    Op.SORT: ["sort_trivial"],
    Op.MAP: ["map_trivial"],
    Op.DOT: ["dot_zero_elements", "dot_without_contraction", "dot_as_reduce", "dot_drop_degenerate_dims"],
    Op.REDUCE: ["reduce_empty", "reduce_keeps_element_count", "reduce_of_broadcast", "reduce_of_transpose"],
    Op.REDUCE_WINDOW: ["reduce_window_of_scalars", "reduce_window_of_whole_dimensions"],
}


def test_rules_are_tried_in_registration_order():
    assert {op: [rule.__name__ for rule in RULES.get(op)] for op in RULES.handled()} == RULE_ORDER


def test_program_shape_kept_and_second_run_changes_nothing():
    text = module("  p = f32[3,1] parameter(0)",
                  """  r = f32[3] reshape(p)
  b = f32[3,1] broadcast(r), dimensions={0}
  z = f32[] constant(0)
  zb = f32[3,1] broadcast(z), dimensions={}
  ROOT a = f32[3,1] add(b, zb)""")
    m = parse_module(text)
    shape = m.entry_program_shape()
    algsimp = available_passes()["algsimp"]()
    assert algsimp.run(m)
    assert m.entry_program_shape() == shape
    assert not algsimp.run(m)
    assert "ROOT %p = f32[3,1]{1,0} parameter(0)" in entry_text(m)


# =========================================================================== helpers


@pytest.mark.parametrize("frm,to,expected", [
    ("s8", "s32", True), ("s32", "s8", False), ("u8", "s16", True), ("u8", "s8", False), ("s8", "u32", False),
    ("f16", "f32", True), ("bf16", "f32", True), ("f16", "bf16", False), ("f32", "f16", False),
    ("s16", "f32", True), ("s32", "f32", False), ("u8", "bf16", True), ("pred", "f32", True),
    ("f32", "pred", False), ("f32", "c64", True), ("c64", "f32", False), ("f8e4m3fn", "f16", True),
    ("f16", "f8e4m3fn", False), ("f8e5m2", "f16", True),
])
def test_cast_preserves_values(frm, to, expected):
    assert cast_preserves_values(PRIMITIVE_TYPES[frm], PRIMITIVE_TYPES[to]) is expected


def test_reshape_dimension_maps():
    assert map_dims_through_reshape((2, 3), (2, 1, 3), (0, 1)) == [0, 2]
    assert map_dims_through_reshape((2, 3), (6,), (1,)) is None
    assert map_dims_through_reshape((4, 6), (4, 2, 3), (0,)) == [0]
    assert map_dims_through_reshape((0, 3), (3, 0), (0,)) is None
    assert ones_inserted_or_deleted((3, 1, 4), (1, 3, 4)) == ([1], [0])
    assert ones_inserted_or_deleted((3, 4), (12,)) is None


# =========================================================================== property: random data-movement chains

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _shapes_with_count(n: int, max_rank: int = 4):
    """Every dims tuple of rank 1..max_rank whose product is n."""
    out = []

    def grow(prefix, rest):
        if prefix and rest == 1:
            out.append(tuple(prefix))
        if len(prefix) == max_rank:
            return
        for d in range(1, rest + 1):
            if rest % d == 0 and not (d == 1 and rest == 1 and len(prefix) >= 2):
                grow(prefix + [d], rest // d)

    grow([], n)
    return out


def _dims_text(dims):
    return ",".join(map(str, dims))


def _chain_step(draw, name, src, dims):
    """One random data-movement (or identity arithmetic) op applied to `src`; (line, new dims)."""
    kind = draw(st.sampled_from(["reshape", "transpose", "broadcast", "slice", "reverse", "add0", "mul1",
                                 "pad", "concat"]))
    rank = len(dims)
    if kind == "reshape":
        new = draw(st.sampled_from(_shapes_with_count(math.prod(dims))))
        return f"{name} = f32[{_dims_text(new)}] reshape({src})", new
    if kind == "transpose":
        perm = draw(st.permutations(range(rank)))
        new = tuple(dims[p] for p in perm)
        return f"{name} = f32[{_dims_text(new)}] transpose({src}), dimensions={{{_dims_text(perm)}}}", new
    if kind == "broadcast" and rank < 4:
        at = draw(st.integers(0, rank))
        size = draw(st.integers(1, 3))
        new = dims[:at] + (size,) + dims[at:]
        mapping = [d if d < at else d + 1 for d in range(rank)]
        return f"{name} = f32[{_dims_text(new)}] broadcast({src}), dimensions={{{_dims_text(mapping)}}}", new
    if kind == "slice":
        ranges, new = [], []
        for n in dims:
            start = draw(st.integers(0, n - 1))
            limit = draw(st.integers(start + 1, n))
            stride = draw(st.integers(1, 2))
            ranges.append(f"[{start}:{limit}:{stride}]")
            new.append(-(-(limit - start) // stride))
        return f"{name} = f32[{_dims_text(new)}] slice({src}), slice={{{', '.join(ranges)}}}", tuple(new)
    if kind == "reverse":
        rdims = draw(st.lists(st.integers(0, rank - 1), unique=True, min_size=1))
        return f"{name} = f32[{_dims_text(dims)}] reverse({src}), dimensions={{{_dims_text(sorted(rdims))}}}", dims
    if kind in ("add0", "mul1"):
        op, value = ("add", 0) if kind == "add0" else ("multiply", 1)
        return (f"{name}.c = f32[] constant({value})\n  {name}.b = f32[{_dims_text(dims)}] broadcast({name}.c), "
                f"dimensions={{}}\n  {name} = f32[{_dims_text(dims)}] {op}({src}, {name}.b)"), dims
    if kind == "pad":
        config, new = [], []
        for n in dims:
            lo, hi, interior = draw(st.integers(0, 1)), draw(st.integers(0, 1)), draw(st.integers(0, 1))
            config.append(f"{lo}_{hi}_{interior}")
            new.append(lo + hi + n + (n - 1) * interior)
        return (f"{name}.v = f32[] constant(0)\n  {name} = f32[{_dims_text(new)}] pad({src}, {name}.v), "
                f"padding={'x'.join(config)}"), tuple(new)
    dim = draw(st.integers(0, rank - 1))
    new = dims[:dim] + (2 * dims[dim],) + dims[dim + 1:]
    return f"{name} = f32[{_dims_text(new)}] concatenate({src}, {src}), dimensions={{{dim}}}", new


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_data_movement_chains_keep_their_value(data):
    draw = data.draw
    dims = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    lines, src, cur = [], "p", dims
    for i in range(draw(st.integers(1, 5))):
        line, cur = _chain_step(draw, f"v{i}", src, cur)
        lines.append("  " + line)
        src = f"v{i}"
    lines[-1] = lines[-1].replace(f"  {src} = ", f"  ROOT {src} = ") if "\n" not in lines[-1] else \
        lines[-1].rsplit("\n", 1)[0] + "\n  ROOT " + lines[-1].rsplit("\n  ", 1)[1]
    text = module(f"  p = f32[{_dims_text(dims)}] parameter(0)", "\n".join(lines))
    before, after = simplify(text)
    assert_same_results(before, after)


_SPECIAL_CONSTANTS = {
    "f32": ["0", "-0", "1", "-1", "2", "3", "inf", "-inf", "nan"],
    "s32": ["0", "1", "-1", "2", "3", "-2147483648", "2147483647"],
    "u8": ["0", "1", "2", "3", "255"],
    "pred": ["true", "false"],
}
_OPS = {
    "f32": ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power"],
    "s32": ["add", "subtract", "multiply", "maximum", "minimum", "power", "and", "or", "xor"],
    "u8": ["add", "subtract", "multiply", "maximum", "minimum", "and", "or", "xor"],
    "pred": ["and", "or", "xor"],
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_elementwise_expressions_with_special_constants_keep_their_value(data):
    draw = data.draw
    t = draw(st.sampled_from(sorted(_OPS)))
    values = ["p", "q"]
    lines = []
    for i in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["binary", "unary", "select", "compare"]))
        a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values + ["const"] * 2))
        if b == "const":
            lines += [f"  k{i} = {t}[] constant({draw(st.sampled_from(_SPECIAL_CONSTANTS[t]))})",
                      f"  kb{i} = {t}[4] broadcast(k{i}), dimensions={{}}"]
            b = f"kb{i}"
        if draw(st.booleans()):
            a, b = b, a
        if kind == "binary":
            lines.append(f"  v{i} = {t}[4] {draw(st.sampled_from(_OPS[t]))}({a}, {b})")
        elif kind == "unary":
            op = "not" if t in ("pred", "u8") else draw(st.sampled_from(["negate", "abs"]))
            lines.append(f"  v{i} = {t}[4] {op}({a})")
        else:
            direction = draw(st.sampled_from(["EQ", "NE", "LT", "LE", "GT", "GE"]))
            lines.append(f"  c{i} = pred[4] compare({a}, {b}), direction={direction}")
            if kind == "compare" and t == "pred":
                lines.append(f"  v{i} = pred[4] and(c{i}, {a})")
            else:
                lines.append(f"  v{i} = {t}[4] select(c{i}, {a}, {b})")
        values.append(f"v{i}")
    body = "\n".join(lines) + f"\n  ROOT out = ({t}[4], {t}[4]) tuple({values[-1]}, {values[-2]})"
    text = module(f"  p = {t}[4] parameter(0)\n  q = {t}[4] parameter(1)", body)
    before, after = simplify(text)
    assert_same_results(before, after)
    assert_same_results(before, after, seed=3)
