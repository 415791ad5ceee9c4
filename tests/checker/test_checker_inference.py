"""Shape inference: shapes left out of the text are filled in by the parser, and the
inference rules agree with independent computations of the same result (numpy, the
interpreter's kernels) on random inputs."""
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from hlo import HloError, format_module, parse_module
from hlo.attributes import GatherDims, Window, WindowDim
from hlo.analysis.checker import check_module
from hlo.interpreter.indexing import gather_result_dims
from hlo.ir import Instruction
from hlo.opcodes import ELEMENTWISE, OPCODES, Op, ResultType, TypeClass
from hlo.shape_inference import SHAPE_RULES, ShapeError, compatible, infer_shape
from hlo.shapes import PRIMITIVE_TYPES, Layout, Shape, real_type_of

OMITTED = """HloModule omitted

%add (lhs: f32[], rhs: f32[]) -> f32[] {
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %sum = add(%lhs, %rhs)
}

%cond (state: (s32[], f32[2,3])) -> pred[] {
  %state = (s32[], f32[2,3]) parameter(0)
  %count = get-tuple-element(%state), index=0
  %limit = s32[] constant(3)
  ROOT %more = compare(%count, %limit), direction=LT
}

%body (state: (s32[], f32[2,3])) -> (s32[], f32[2,3]) {
  %state = (s32[], f32[2,3]) parameter(0)
  %count = get-tuple-element(%state), index=0
  %value = get-tuple-element(%state), index=1
  %one = s32[] constant(1)
  %next = add(%count, %one)
  %twice = add(%value, %value)
  ROOT %updated = tuple(%next, %twice)
}

ENTRY %main (x: f32[2,3], y: f32[2,3], w: f32[3,4], i: s32[5,1], img: f32[1,5,5,2], k: f32[3,3,2,4]) -> f32[2,4] {
  %x = f32[2,3] parameter(0)
  %y = f32[2,3] parameter(1)
  %w = f32[3,4] parameter(2)
  %i = s32[5,1] parameter(3)
  %img = f32[1,5,5,2] parameter(4)
  %k = f32[3,3,2,4] parameter(5)
  %zero = f32[] constant(0)
  %a = add(%x, %y)
  %lt = compare(%x, %y), direction=LT
  %sel = select(%lt, %x, %y)
  %t = transpose(%a), dimensions={1,0}
  %cat = concatenate(%x, %y), dimensions={0}
  %pad = pad(%x, %zero), padding=1_1x0_2_1
  %rowsum = reduce(%x, %zero), dimensions={1}, to_apply=%add
  %pool = reduce-window(%x, %zero), window={size=2x2}, to_apply=%add
  %rows = gather(%w, %i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,4}
  %conv = convolution(%img, %k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
  %mm = dot(%a, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %n = s32[] constant(0)
  %init = tuple(%n, %x)
  %loop = while(%init), condition=%cond, body=%body
  %top = topk(%x), k=2
  %size = get-dimension-size(%x), dimensions={1}
  ROOT %r = add(%mm, %mm)
}
"""

EXPECTED = {
    "a": "f32[2,3]{1,0}", "lt": "pred[2,3]{1,0}", "sel": "f32[2,3]{1,0}", "t": "f32[3,2]{1,0}",
    "cat": "f32[4,3]{1,0}", "pad": "f32[4,7]{1,0}", "rowsum": "f32[2]{0}", "pool": "f32[1,2]{1,0}",
    "rows": "f32[5,4]{1,0}", "conv": "f32[1,5,5,4]{3,2,1,0}", "mm": "f32[2,4]{1,0}",
    "init": "(s32[], f32[2,3]{1,0})", "loop": "(s32[], f32[2,3]{1,0})", "top": "(f32[2,2]{1,0}, s32[2,2]{1,0})",
    "size": "s32[]", "r": "f32[2,4]{1,0}",
}


def omitted_module():
    return parse_module(OMITTED, "omitted.hlo")


def test_parser_fills_omitted_shapes_with_default_layouts():
    module = omitted_module()
    shapes = {inst.name: str(inst.shape) for inst in module.entry.instructions}
    assert {name: shapes[name] for name in EXPECTED} == EXPECTED
    body = module.computation("body")
    assert str(body.root.shape) == "(s32[], f32[2,3]{1,0})"
    check_module(module)


def test_inferred_shapes_are_printed():
    printed = format_module(omitted_module())
    assert "%a = f32[2,3]{1,0} add(%x, %y)" in printed
    assert "%top = (f32[2,2]{1,0}, s32[2,2]{1,0}) topk(%x), k=2" in printed
    check_module(parse_module(printed, "printed.hlo"))


def test_uninferable_shape_is_a_parse_error():
    text = """HloModule m
ENTRY %main (x: f32[2,3]) -> f32[6] {
  %x = f32[2,3] parameter(0)
  ROOT %r = reshape(%x)
}
"""
    with pytest.raises(HloError) as info:
        parse_module(text, "test.hlo")
    (diag,) = info.value.diagnostics
    assert (str(diag.loc), diag.message) == (
        "test.hlo:4:8", "cannot infer the shape of 'reshape': 'reshape' needs its result shape written before the "
                        "opcode (it cannot be derived from the operands)")


def test_inconsistent_operands_of_an_omitted_shape_are_a_parse_error():
    text = """HloModule m
ENTRY %main (x: f32[2,3], y: f32[3]) -> f32[2,3] {
  %x = f32[2,3] parameter(0)
  %y = f32[3] parameter(1)
  ROOT %r = add(%x, %y)
}
"""
    with pytest.raises(HloError) as info:
        parse_module(text, "test.hlo")
    (diag,) = info.value.diagnostics
    assert (str(diag.loc), diag.message) == (
        "test.hlo:5:8", "cannot infer the shape of 'add': operands of 'add' must have identical dimensions (HLO has "
                        "no implicit broadcasting; use an explicit broadcast): operand 0 is f32[2,3] but operand 1 "
                        "is f32[3]")


def test_compatible_ignores_layouts_and_dynamic_bounds():
    a = Shape.array("f32", [2, 3], Layout((0, 1)))
    assert compatible(a, Shape.array("f32", [2, 3]))
    assert compatible(a, Shape.array("f32", [2, 3], dynamic=[False, True]))
    assert not compatible(a, Shape.array("f32", [3, 2]))
    assert not compatible(a, Shape.array("s32", [2, 3]))
    assert not compatible(Shape.tuple_of([a]), a)


# --------------------------------------------------------------------------- properties

def param(shape: Shape, number: int = 0) -> Instruction:
    inst = Instruction(f"p{number}", "parameter", shape)
    inst.attrs["parameter_number"] = number
    return inst


def make(opcode: str, shapes, attrs=None, shape=None) -> Instruction:
    return Instruction("x", opcode, shape, [param(s, i) for i, s in enumerate(shapes)], attrs or {})


dims_st = st.lists(st.integers(0, 5), min_size=0, max_size=4)
ARRAY_TYPES = [t for t in PRIMITIVE_TYPES.values() if t.is_array_type]


@settings(max_examples=200, deadline=None)
@given(dims=dims_st, t=st.sampled_from(ARRAY_TYPES),
       opcode=st.sampled_from(["add", "multiply", "maximum", "and", "subtract", "compare", "atan2"]))
def test_binary_elementwise_keeps_dimensions(dims, t, opcode):
    shape = Shape.array(t, dims)
    attrs = {"direction": "EQ"} if opcode == "compare" else {}
    try:
        result = infer_shape(make(opcode, [shape, shape], attrs))
    except ShapeError as exc:  # only the element type may be refused
        assert "elements" in exc.message
        return
    assert result.dims == tuple(dims)
    assert result.element_type.name == ("pred" if opcode == "compare" else t.name)


TYPE_CLASS_OF = {"pred": TypeClass.PRED, "signed": TypeClass.SINT, "unsigned": TypeClass.UINT,
                 "float": TypeClass.FLOAT, "complex": TypeClass.COMPLEX}


@pytest.mark.parametrize("opcode", sorted(op for op in ELEMENTWISE if OPCODES[op].arity in (1, 2)))
def test_elementwise_element_types_come_from_the_table(opcode):
    """Operands of each type the table allows are accepted (with the table's result type),
    others refused with the table's words for the class."""
    info = OPCODES[opcode]
    if SHAPE_RULES.get(opcode) is not SHAPE_RULES.get(Op.ADD):
        pytest.skip("a rule of its own")
    for t in ARRAY_TYPES:
        shape = Shape.array(t, [2])
        inst = make(opcode, [shape] * info.arity)
        if TYPE_CLASS_OF[t.kind.value] & info.operand_types:
            result = infer_shape(inst)
            expected = {ResultType.SAME: t.name, ResultType.PRED: "pred",
                        ResultType.REAL_PART: real_type_of(t).name}[info.result_type]
            assert result.element_type.name == expected
        else:
            with pytest.raises(ShapeError, match=f"'{opcode}' needs {info.operand_types.words()} elements"):
                infer_shape(inst)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), dims=st.lists(st.integers(0, 6), min_size=1, max_size=3))
def test_slice_matches_numpy(data, dims):
    ranges = []
    for n in dims:
        start = data.draw(st.integers(0, n))
        limit = data.draw(st.integers(start, n))
        ranges.append((start, limit, data.draw(st.integers(1, 3))))
    result = infer_shape(make("slice", [Shape.array("f32", dims)], {"slice": tuple(ranges)}))
    expected = np.empty(dims)[tuple(slice(a, b, s) for a, b, s in ranges)].shape
    assert result.dims == expected


@settings(max_examples=100, deadline=None)
@given(data=st.data(), dims=st.lists(st.integers(1, 5), min_size=0, max_size=4))
def test_transpose_matches_numpy(data, dims):
    perm = tuple(data.draw(st.permutations(range(len(dims)))))
    result = infer_shape(make("transpose", [Shape.array("f32", dims)], {"dimensions": perm}))
    assert result.dims == np.empty(dims).transpose(perm).shape


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_dot_matches_einsum(data):
    batch = data.draw(st.lists(st.integers(1, 3), max_size=2))
    contract = data.draw(st.lists(st.integers(1, 3), max_size=2))
    lhs_free = data.draw(st.lists(st.integers(1, 3), max_size=2))
    rhs_free = data.draw(st.lists(st.integers(1, 3), max_size=2))
    # Label every dimension, then shuffle each operand's dimensions.
    letters = iter("abcdefghijkl")
    b, c = [next(letters) for _ in batch], [next(letters) for _ in contract]
    lf, rf = [next(letters) for _ in lhs_free], [next(letters) for _ in rhs_free]
    size = dict(zip(b + c + lf + rf, batch + contract + lhs_free + rhs_free))
    lhs = data.draw(st.permutations(b + c + lf))
    rhs = data.draw(st.permutations(b + c + rf))
    attrs = {"lhs_batch_dims": tuple(lhs.index(x) for x in b), "rhs_batch_dims": tuple(rhs.index(x) for x in b),
             "lhs_contracting_dims": tuple(lhs.index(x) for x in c),
             "rhs_contracting_dims": tuple(rhs.index(x) for x in c)}
    shapes = [Shape.array("f32", [size[x] for x in lhs]), Shape.array("f32", [size[x] for x in rhs])]
    result = infer_shape(make("dot", shapes, attrs))
    out = b + [x for x in lhs if x in lf] + [x for x in rhs if x in rf]
    expected = np.einsum(f"{''.join(lhs)},{''.join(rhs)}->{''.join(out)}",
                         np.ones(shapes[0].dims), np.ones(shapes[1].dims)).shape
    assert result.dims == expected


window_dim_st = st.builds(WindowDim, size=st.integers(-1, 4), stride=st.integers(0, 3),
                          padding_low=st.integers(-3, 3), padding_high=st.integers(-3, 3),
                          window_dilation=st.integers(0, 3), base_dilation=st.integers(0, 3))


def positions(n: int, wd: WindowDim):
    """Window positions along one dimension, counted one by one; None if the window is invalid."""
    if min(wd.size, wd.stride, wd.base_dilation, wd.window_dilation) < 1:
        return None
    base = wd.padding_low + (0 if n == 0 else (n - 1) * wd.base_dilation + 1) + wd.padding_high
    if base < 0:
        return None
    span = (wd.size - 1) * wd.window_dilation + 1
    return sum(1 for o in range(base + 1) if o * wd.stride + span <= base)


ADD = parse_module("""HloModule m
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
ENTRY %e (a: f32[]) -> f32[] {
  ROOT %a = f32[] parameter(0)
}
""").computation("add")


@settings(max_examples=300, deadline=None)
@given(dims=st.lists(st.integers(0, 7), min_size=1, max_size=3), data=st.data())
def test_reduce_window_counts_window_positions(dims, data):
    window = Window(tuple(data.draw(window_dim_st) for _ in dims))
    counts = [positions(n, wd) for n, wd in zip(dims, window.dims)]
    expected = None if None in counts else tuple(counts)
    inst = make("reduce-window", [Shape.array("f32", dims), Shape.array("f32", [])],
                {"window": window, "to_apply": ADD})
    try:
        got = infer_shape(inst).dims
    except ShapeError:
        got = None
    assert got == expected


@st.composite
def gathers(draw):
    """A gather configuration that is valid by construction, then sometimes perturbed."""
    operand = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    rank = len(operand)
    batch = draw(st.lists(st.integers(1, 3), max_size=2))
    components = draw(st.integers(1, rank))
    ivd = draw(st.integers(0, len(batch)))
    implicit = ivd == len(batch) and components == 1 and draw(st.booleans())
    indices = batch if implicit else batch[:ivd] + [components] + batch[ivd:]
    start_index_map = tuple(draw(st.permutations(range(rank)))[:components])
    collapsed = tuple(sorted(draw(st.sets(st.sampled_from(range(rank)), max_size=rank))))
    sizes = [draw(st.integers(0, min(1, n) if d in collapsed else n)) for d, n in enumerate(operand)]
    out_rank = rank - len(collapsed) + len(batch)
    offset_dims = tuple(sorted(draw(st.permutations(range(out_rank)))[:rank - len(collapsed)]))
    attrs = {"offset_dims": offset_dims, "collapsed_slice_dims": collapsed, "start_index_map": start_index_map,
             "index_vector_dim": ivd, "slice_sizes": tuple(sizes)}
    broken = draw(st.integers(0, 3)) == 0
    if broken:
        name = draw(st.sampled_from(sorted(attrs)))
        attrs[name] = draw(st.integers(-1, 4)) if name == "index_vector_dim" else tuple(
            draw(st.lists(st.integers(-1, 4), max_size=4)))
    return operand, indices, attrs, broken


@settings(max_examples=300, deadline=None)
@given(case=gathers())
def test_gather_agrees_with_the_interpreter(case):
    """Valid configurations: both give the same dims. Broken ones: whatever the shape
    rules accept (they are stricter, e.g. sorted collapsed dims), the kernel accepts too."""
    operand, indices, attrs, broken = case
    dims = GatherDims(attrs["offset_dims"], attrs["collapsed_slice_dims"], attrs["start_index_map"],
                      attrs["index_vector_dim"])
    try:
        expected = gather_result_dims(operand, indices, dims, attrs["slice_sizes"])
    except ValueError:
        expected = None
    try:
        got = infer_shape(make("gather", [Shape.array("f32", operand), Shape.array("s32", indices)], attrs)).dims
    except ShapeError:
        got = None
    if not broken:
        assert got is not None
    if got is not None:
        assert got == expected


# --------------------------------------------------------------------------- robustness

VALID = sorted((Path(__file__).parent / "data" / "valid").glob("*.hlo"))
INSTRUCTIONS = [inst for path in VALID for inst in parse_module(path.read_text(), path.name).instructions()]
SHAPES = sorted({str(inst.shape): inst.shape for inst in INSTRUCTIONS}.items())


def random_shape():
    arrays = st.builds(lambda t, d: Shape.array(t, d), st.sampled_from(ARRAY_TYPES), dims_st)
    known = st.sampled_from([s for _, s in SHAPES])
    return st.one_of(known, arrays, st.just(Shape.token()),
                     st.lists(arrays, max_size=3).map(Shape.tuple_of))


@settings(max_examples=250, deadline=None)
@given(data=st.data(), index=st.integers(0, len(INSTRUCTIONS) - 1))
def test_infer_shape_raises_only_value_errors(data, index):
    """Any operand shapes and any written shape: a result or a ShapeError, nothing else."""
    inst = INSTRUCTIONS[index]
    operands = [SimpleNamespace(shape=data.draw(random_shape()) if data.draw(st.booleans()) else o.shape,
                                name=o.name, opcode=o.opcode, attrs=o.attrs) for o in inst.operands]
    if data.draw(st.booleans()) and operands:
        operands.pop(data.draw(st.integers(0, len(operands) - 1)))
    written = data.draw(st.one_of(st.just(inst.shape), st.none(), random_shape()))
    attrs = dict(inst.attrs)
    for name in list(attrs):
        value = attrs[name]
        if isinstance(value, tuple) and all(type(v) is int for v in value) and data.draw(st.booleans()):
            attrs[name] = tuple(data.draw(st.lists(st.integers(-2, 6), max_size=4)))
        elif type(value) is int and data.draw(st.booleans()):
            attrs[name] = data.draw(st.integers(-3, 8))
    fake = SimpleNamespace(opcode=inst.opcode, operands=operands, attrs=attrs, shape=written, parent=inst.parent,
                           name=inst.name)
    try:
        infer_shape(fake)
    except ValueError:
        pass
