"""Shape inference: the result shape each HLO opcode produces (XLA's ShapeInference).

`infer_shape(inst)` computes the shape an instruction must have from its operands'
shapes, its attributes and the computations it calls. The parser uses it to fill
shapes left out of the text; the checker (hlo/checker.py) compares it with the
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
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

from .opcodes import Category, OPCODES, Op
from .shapes import (PRED, PRIMITIVE_TYPES, S32, U32, UNBOUNDED, PrimitiveType, Shape, format_shape,
                     complex_type_of, real_type_of)

U64 = PRIMITIVE_TYPES["u64"]


class ShapeError(ValueError):
    """A violated shape rule.

    operand:   index of the operand at fault (the checker points at it);
    attribute: name of the attribute at fault;
    related:   an Instruction or Computation worth a note (called computation, parameter);
    note:      text of that note (a default is used when None);
    secondary: the problem is reported by a computation-level check already.
    """

    def __init__(self, message: str, *, operand: Optional[int] = None, attribute: Optional[str] = None,
                 related=None, note: Optional[str] = None, secondary: bool = False):
        super().__init__(message)
        self.message = message
        self.operand = operand
        self.attribute = attribute
        self.related = related
        self.note = note
        self.secondary = secondary


# --------------------------------------------------------------------------- shape helpers


def fmt(shape: Optional[Shape]) -> str:
    """A shape as written in messages: no layout."""
    if shape is None:
        return "<no shape>"
    return format_shape(shape, with_layout=False)


def compatible(a: Shape, b: Shape) -> bool:
    """Equal ignoring layouts and dynamic-dimension flags (XLA's ShapeUtil::Compatible)."""
    if a.is_tuple or b.is_tuple:
        return (a.is_tuple and b.is_tuple and len(a.tuple_shapes) == len(b.tuple_shapes)
                and all(compatible(x, y) for x, y in zip(a.tuple_shapes, b.tuple_shapes)))
    return a.element_type is b.element_type and a.dims == b.dims


def _array(element_type: PrimitiveType, dims, dynamic=None) -> Shape:
    dims = tuple(dims)
    dyn = tuple(dynamic) if dynamic is not None else (False,) * len(dims)
    return Shape(element_type, dims, dyn, None, None)


def _scalar(element_type: PrimitiveType) -> Shape:
    return _array(element_type, ())


def _retyped(shape: Shape, element_type: PrimitiveType) -> Shape:
    return Shape(element_type, shape.dims, shape.dynamic, None, None)


def _tuple(shapes) -> Shape:
    return Shape.tuple_of(shapes)


def _one_or_tuple(shapes: list[Shape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else _tuple(shapes)


def _count(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _counted(n: int, noun: str) -> str:
    """'1 operand', '2 operands'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _list(values) -> str:
    return "{" + ",".join(str(v) for v in values) + "}"


# --------------------------------------------------------------------------- element type classes

_CLASS_WORDS = {"pred": "pred", "sint": "signed integer", "uint": "unsigned integer", "int": "integer",
                "float": "floating-point", "complex": "complex"}


def _in_class(t: PrimitiveType, cls: str) -> bool:
    return {"pred": t.is_pred, "sint": t.is_signed_int, "uint": t.is_unsigned_int, "int": t.is_integral,
            "float": t.is_float, "complex": t.is_complex}[cls]


def _describe(classes: Sequence[str]) -> str:
    words = [_CLASS_WORDS[c] for c in classes]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


ANY_ARRAY = ("pred", "int", "float", "complex")
NUMBER = ("int", "float", "complex")

# Element types each elementwise opcode accepts (XLA InferUnaryOpShape / InferBinaryOpShape,
# with the spec's decisions, e.g. shifts are integer-only).
_ELEMENTWISE_TYPES: dict[str, tuple[str, ...]] = {
    **{op: ("float",) for op in ("floor", "ceil", "round-nearest-afz", "round-nearest-even", "is-finite", "erf")},
    **{op: ("float", "complex") for op in (
        "cosine", "sine", "tan", "tanh", "exponential", "exponential-minus-one", "log", "log-plus-one",
        "logistic", "rsqrt", "sqrt", "cbrt", "acos", "acosh", "asin", "asinh", "atanh", "cosh", "sinh", "atan",
        "real", "imag")},
    "abs": ("sint", "float", "complex"),
    "sign": ("sint", "float", "complex"),
    "negate": NUMBER,
    "count-leading-zeros": ("int",),
    "popcnt": ("int",),
    "not": ("pred", "int"),
    **{op: ANY_ARRAY for op in ("add", "maximum", "minimum", "multiply", "compare")},
    **{op: NUMBER for op in ("subtract", "atan2", "power", "divide", "remainder")},
    **{op: ("int",) for op in ("shift-left", "shift-right-arithmetic", "shift-right-logical")},
    **{op: ("pred", "int") for op in ("and", "or", "xor")},
    "complex": ("float",),
}


# Result element type of elementwise opcodes that change it.
_ELEMENTWISE_RESULT_TYPE: dict[str, Callable[[PrimitiveType], PrimitiveType]] = {
    "real": real_type_of, "imag": real_type_of, "abs": real_type_of,
    "is-finite": lambda t: PRED, "compare": lambda t: PRED,
}


# --------------------------------------------------------------------------- the instruction view


def display_opcode(inst) -> str:
    """The opcode as written: async sugar (custom-call-start ...) keeps the wrapped op's name."""
    if inst.opcode in ("async-start", "async-update", "async-done"):
        comp = inst.attrs.get("calls")
        root = getattr(comp, "root", None)
        if getattr(comp, "async_wrapped", False) and root is not None:
            return root.opcode + inst.opcode[len("async"):]
    return inst.opcode


class _Op:
    """What a shape rule reads: the instruction's operands, attributes and written shape."""

    def __init__(self, inst):
        self.inst = inst
        self.opcode = display_opcode(inst)
        self.info = OPCODES[inst.opcode]
        self.shapes: list[Shape] = [o.shape for o in inst.operands]
        self.written: Optional[Shape] = inst.shape

    @property
    def n(self) -> int:
        return len(self.shapes)

    def fail(self, message: str, **where) -> ShapeError:
        return ShapeError(message, **where)

    # -- operands
    def need_operands(self, count: int, what: str = "") -> None:
        if self.n != count:
            detail = f" ({what})" if what else ""
            raise self.fail(f"'{self.opcode}' expects {_counted(count, 'operand')}{detail}, got {self.n}")

    def array(self, i: int, role: str = "") -> Shape:
        """Operand i, which must be an array (not a tuple or token)."""
        shape = self.shapes[i]
        if not shape.is_array:
            role = f" ({role})" if role else ""
            raise self.fail(f"operand {i}{role} of '{self.opcode}' must be an array, but it is {fmt(shape)}",
                            operand=i)
        return shape

    def token(self, i: int) -> None:
        if not self.shapes[i].is_token:
            raise self.fail(f"operand {i} of '{self.opcode}' must be a token[], but it is {fmt(self.shapes[i])}",
                            operand=i)

    def scalar(self, i: int, role: str = "") -> Shape:
        shape = self.array(i, role)
        if shape.rank != 0:
            role = f" ({role})" if role else ""
            raise self.fail(f"operand {i}{role} of '{self.opcode}' must be a scalar, but it is {fmt(shape)}",
                            operand=i)
        return shape

    def types(self, i: int, classes: Sequence[str], role: str = "") -> Shape:
        shape = self.array(i, role)
        if not any(_in_class(shape.element_type, c) for c in classes):
            role = f" ({role})" if role else ""
            raise self.fail(f"'{self.opcode}' needs {_describe(classes)} elements, but operand {i}{role} is "
                            f"{fmt(shape)}", operand=i)
        return shape

    def same_type(self, i: int, j: int, roles=("", "")) -> None:
        a, b = self.shapes[i], self.shapes[j]
        if a.element_type is not b.element_type:
            ri = f" ({roles[0]})" if roles[0] else ""
            rj = f" ({roles[1]})" if roles[1] else ""
            raise self.fail(f"operands of '{self.opcode}' must have the same element type: operand {i}{ri} is "
                            f"{fmt(a)} but operand {j}{rj} is {fmt(b)}", operand=j)

    # -- attributes
    def attr(self, name: str):
        """The attribute's value (its default when absent); ShapeError if required and missing."""
        if name in self.inst.attrs and self.inst.attrs[name] is not None:
            return self.inst.attrs[name]
        spec = self.info.attr_map.get(name)
        if spec is None or spec.required:
            raise self.fail(f"'{self.opcode}' requires attribute '{name}='", attribute=name)
        return spec.default

    def has(self, name: str) -> bool:
        return self.inst.attrs.get(name) is not None

    def int_attr(self, name: str) -> int:
        value = self.attr(name)
        if not _is_int(value):
            raise self.fail(f"attribute '{name}' of '{self.opcode}' must be an integer", attribute=name)
        return value

    def int_list(self, name: str) -> tuple[int, ...]:
        value = self.attr(name)
        if value is None:
            return ()
        if not isinstance(value, (tuple, list)) or not all(_is_int(v) for v in value):
            raise self.fail(f"attribute '{name}' of '{self.opcode}' must be a list of integers", attribute=name)
        return tuple(value)

    def one_dimension(self, name: str = "dimensions") -> int:
        dims = self.int_list(name)
        if len(dims) != 1:
            raise self.fail(f"'{self.opcode}' needs exactly one dimension in {name}=, got {_list(dims)}",
                            attribute=name)
        return dims[0]

    def computation(self, name: str):
        comp = self.attr(name)
        if comp is None or not hasattr(comp, "instructions"):
            raise self.fail(f"'{self.opcode}' requires attribute '{name}='", attribute=name)
        return comp

    # -- the written shape
    def need_written(self) -> Shape:
        if self.written is None:
            raise self.fail(f"'{self.opcode}' needs its result shape written before the opcode (it cannot be "
                            f"derived from the operands)")
        return self.written

    def written_array(self) -> Shape:
        shape = self.need_written()
        if not shape.is_array:
            raise self.fail(f"the result of '{self.opcode}' must be an array, but it is written as {fmt(shape)}")
        return shape

    def written_type(self) -> Optional[PrimitiveType]:
        """The written element type, if an array shape is written (preferred element type)."""
        if self.written is not None and not self.written.is_tuple:
            return self.written.element_type
        return None

    # -- config of the enclosing module
    def config(self):
        comp = getattr(self.inst, "parent", None)
        module = getattr(comp, "parent", None) if comp is not None else None
        return getattr(module, "config", None)


def _dims_in_range(op: _Op, dims: Sequence[int], rank: int, attribute: str, what: str, operand=None) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise op.fail(f"{attribute}={_list(dims)}: dimension {d} is out of range for {what} "
                          f"(valid: 0..{rank - 1})" if rank else
                          f"{attribute}={_list(dims)}: dimension {d} is out of range for {what}, which has rank 0",
                          attribute=attribute, operand=operand)


def _dims_unique(op: _Op, dims: Sequence[int], attribute: str) -> None:
    seen = set()
    for d in dims:
        if d in seen:
            raise op.fail(f"{attribute}={_list(dims)}: dimension {d} appears more than once", attribute=attribute)
        seen.add(d)


def _dims_sorted(op: _Op, dims: Sequence[int], attribute: str) -> None:
    if list(dims) != sorted(dims):
        raise op.fail(f"{attribute}={_list(dims)} must be sorted in increasing order", attribute=attribute)


# --------------------------------------------------------------------------- called computations


def _parameters(comp) -> list:
    return [i for i in comp.instructions if i.opcode == Op.PARAMETER]


def signature(comp) -> tuple[list[Shape], Shape]:
    """(parameter shapes by number, root shape) of a computation; ShapeError(secondary) if malformed."""
    params = _parameters(comp)
    numbers = sorted(p.attrs.get("parameter_number", -1) for p in params)
    if numbers != list(range(len(params))):
        raise ShapeError(f"computation %{comp.name} has invalid parameter numbers", secondary=True)
    if comp.root is None or comp.root.shape is None or any(p.shape is None for p in params):
        raise ShapeError(f"computation %{comp.name} has no root or an instruction without shape", secondary=True)
    ordered = sorted(params, key=lambda p: p.attrs["parameter_number"])
    return [p.shape for p in ordered], comp.root.shape


def _parameter(comp, number: int):
    for p in _parameters(comp):
        if p.attrs.get("parameter_number") == number:
            return p
    return comp


def _callee(op: _Op, attribute: str) -> tuple[object, list[Shape], Shape]:
    comp = op.computation(attribute)
    try:
        params, result = signature(comp)
    except ShapeError as exc:
        exc.attribute = attribute
        raise
    return comp, params, result


def _need_params(op: _Op, comp, params: list, count: int, attribute: str, what: str = "") -> None:
    if len(params) != count:
        detail = f" ({what})" if what else ""
        raise op.fail(f"{attribute} computation %{comp.name} must take {_counted(count, 'parameter')}{detail}, "
                      f"but it takes {len(params)}",
                      attribute=attribute, related=comp)


def _check_operands_match_parameters(op: _Op, comp, params: list[Shape], attribute: str,
                                     first_operand: int = 0) -> None:
    for k, pshape in enumerate(params):
        i = first_operand + k
        if not compatible(op.shapes[i], pshape):
            raise op.fail(f"operand {i} of '{op.opcode}' has shape {fmt(op.shapes[i])} but parameter {k} of "
                          f"{attribute} computation %{comp.name} has shape {fmt(pshape)}",
                          operand=i, related=_parameter(comp, k),
                          note=f"parameter {k} of %{comp.name} is declared here")


def _root_note(comp) -> dict:
    return {"related": comp.root if comp.root is not None else comp,
            "note": f"the ROOT of %{comp.name} is here"}


def check_reducer(op: _Op, attribute: str, init_shapes: list[Shape], input_types: list[PrimitiveType],
                  roles: tuple[str, str] = ("init value", "input"),
                  init_operands: Optional[Sequence[int]] = None) -> list[Shape]:
    """Check a reduction computation (XLA VerifyReducerShape, strict element types).

    N = len(init_shapes): the computation takes (acc_0..acc_N-1, x_0..x_N-1) scalars and
    returns a scalar (N = 1) or an N-tuple of scalars; acc_i, x_i, result_i and init_i all
    have input i's element type. Returns the result component shapes.
    """
    comp, params, result = _callee(op, attribute)
    n = len(init_shapes)
    _need_params(op, comp, params, 2 * n, attribute, f"{_counted(n, 'accumulator')} then {_counted(n, 'value')}")
    if n == 1 and not result.is_tuple:
        components = [result]
    elif result.is_tuple and len(result.tuple_shapes) == n:
        components = list(result.tuple_shapes)
    else:
        expected = "a scalar" if n == 1 else f"a tuple of {n} scalars"
        raise op.fail(f"{attribute} computation %{comp.name} must return {expected}, but returns {fmt(result)}",
                      attribute=attribute, **_root_note(comp))
    for i in range(n):
        want = _scalar(input_types[i])
        checks = [(components[i], f"result {i}" if n > 1 else "its result", _root_note(comp)),
                  (params[i], f"parameter {i} (accumulator)",
                   {"related": _parameter(comp, i), "note": f"parameter {i} of %{comp.name} is declared here"}),
                  (params[n + i], f"parameter {n + i} (value)",
                   {"related": _parameter(comp, n + i),
                    "note": f"parameter {n + i} of %{comp.name} is declared here"})]
        for shape, what, where in checks:
            if not compatible(shape, want):
                raise op.fail(f"{attribute} computation %{comp.name}: {what} is {fmt(shape)} but {roles[1]} {i} "
                              f"has element type {input_types[i]}, so it must be {fmt(want)}",
                              attribute=attribute, **where)
        if not compatible(init_shapes[i], want):
            where = init_operands[i] if init_operands is not None else None
            raise op.fail(f"{roles[0]} {i} of '{op.opcode}' is {fmt(init_shapes[i])} but must be {fmt(want)} "
                          f"(a scalar of {roles[1]} {i}'s element type)", operand=where)
    return components


# --------------------------------------------------------------------------- rule registry

_RULES: dict[str, Callable[[_Op], Shape]] = {}


def _rule(*opcodes: str):
    def register(fn):
        for name in opcodes:
            assert name in OPCODES, name
            _RULES[name] = fn
        return fn
    return register


def infer_shape(inst) -> Shape:
    """The shape `inst` must have; ShapeError (a ValueError) when its operands, attributes or
    called computations are inconsistent. Missing layouts are filled with default ones."""
    if inst.opcode not in OPCODES:
        raise ShapeError(f"unknown opcode '{inst.opcode}'")
    for i, operand in enumerate(inst.operands):
        if operand.shape is None:
            raise ShapeError(f"operand {i} (%{operand.name}) of '{inst.opcode}' has no shape", operand=i,
                             secondary=True)
    op = _Op(inst)
    _check_arity(op)
    rule = _RULES.get(inst.opcode)
    if rule is None:
        if op.info.category is Category.ELEMENTWISE:
            rule = _elementwise
        elif op.info.shape_required:
            rule = _written_only
        else:
            raise ShapeError(f"no shape rule for opcode '{inst.opcode}'")
    return rule(op).with_default_layouts()


def _check_arity(op: _Op) -> None:
    info = op.info
    if info.arity is not None and op.n != info.arity:
        raise ShapeError(f"'{op.opcode}' expects {_counted(info.arity, 'operand')}, got {op.n}",
                         operand=info.arity if op.n > info.arity else None)
    if info.arity is None and op.n < info.min_arity:
        raise ShapeError(f"'{op.opcode}' expects at least {_counted(info.min_arity, 'operand')}, got {op.n}")


def _written_only(op: _Op) -> Shape:
    return op.need_written()


# --------------------------------------------------------------------------- elementwise


def _elementwise(op: _Op) -> Shape:
    if op.n == 1:
        return _unary(op)
    if op.n == 2:
        return _binary(op)
    raise op.fail(f"no shape rule for {op.n}-operand elementwise opcode '{op.opcode}'")


def _unary(op: _Op) -> Shape:
    classes = _ELEMENTWISE_TYPES.get(op.opcode, ANY_ARRAY)
    shape = op.types(0, classes)
    result_type = _ELEMENTWISE_RESULT_TYPE.get(op.opcode, lambda t: t)(shape.element_type)
    return Shape(result_type, shape.dims, shape.dynamic, None, None)


def _binary(op: _Op) -> Shape:
    classes = _ELEMENTWISE_TYPES.get(op.opcode, ANY_ARRAY)
    lhs = op.types(0, classes)
    rhs = op.types(1, classes)
    _same_dims(op, 0, 1)
    op.same_type(0, 1)
    result_type = _ELEMENTWISE_RESULT_TYPE.get(op.opcode, lambda t: t)(lhs.element_type)
    dynamic = tuple(a or b for a, b in zip(lhs.dynamic, rhs.dynamic))
    return Shape(result_type, lhs.dims, dynamic, None, None)


def _same_dims(op: _Op, i: int, j: int) -> None:
    a, b = op.shapes[i], op.shapes[j]
    if a.dims != b.dims:
        raise op.fail(f"operands of '{op.opcode}' must have identical dimensions (HLO has no implicit "
                      f"broadcasting; use an explicit broadcast): operand {i} is {fmt(a)} but operand {j} "
                      f"is {fmt(b)}", operand=j)


@_rule("copy", "domain", "opt-barrier")
def _identity(op: _Op) -> Shape:
    return op.shapes[0]


@_rule("complex")
def _complex(op: _Op) -> Shape:
    shape = _binary(op)
    if shape.element_type.name not in ("f32", "f64"):
        raise op.fail(f"'complex' builds c64 from f32 or c128 from f64 parts, but its operands are "
                      f"{fmt(op.shapes[0])}", operand=0)
    return _retyped(shape, complex_type_of(shape.element_type))


_COMPARE_DEFAULT = {"sint": "SIGNED", "uint": "UNSIGNED"}  # pred compares as unsigned


@_rule("compare")
def _compare(op: _Op) -> Shape:
    shape = _binary(op)
    t = op.shapes[0].element_type
    kind = op.inst.attrs.get("type")
    if kind is not None:
        if t.is_float:
            allowed = ("FLOAT", "TOTALORDER")
        elif t.is_complex:
            allowed = ("FLOAT",)
        else:
            allowed = (_COMPARE_DEFAULT["sint" if t.is_signed_int else "uint"],)
        if kind not in allowed:
            raise op.fail(f"compare type={kind} does not fit {t} operands; expected "
                          f"{' or '.join(allowed)}", attribute="type")
    return shape


@_rule("select")
def _select(op: _Op) -> Shape:
    pred = op.array(0, "predicate")
    on_true = op.array(1, "on_true")
    op.array(2, "on_false")
    if not pred.element_type.is_pred:
        raise op.fail(f"operand 0 (predicate) of 'select' must have pred elements, but it is {fmt(pred)}",
                      operand=0)
    op.same_type(1, 2, ("on_true", "on_false"))
    _same_dims(op, 1, 2)
    if pred.dims != on_true.dims:
        raise op.fail(f"the predicate of 'select' must have the dimensions of its values (HLO has no implicit "
                      f"broadcasting): operand 0 is {fmt(pred)} but operand 1 is {fmt(on_true)}", operand=0)
    return on_true


@_rule("clamp")
def _clamp(op: _Op) -> Shape:
    roles = ("min", "operand", "max")
    for i, role in enumerate(roles):
        op.types(i, ANY_ARRAY, role)
    x = op.shapes[1]
    for i in (0, 2):
        op.same_type(1, i, (roles[1], roles[i]))
        bound = op.shapes[i]
        if bound.rank != 0 and bound.dims != x.dims:
            raise op.fail(f"operand {i} ({roles[i]}) of 'clamp' must be a scalar or have the operand's "
                          f"dimensions: it is {fmt(bound)} but operand 1 is {fmt(x)}", operand=i)
    return x


@_rule("convert")
def _convert(op: _Op) -> Shape:
    operand = op.array(0)
    target = op.written_array()
    return _retyped(operand, target.element_type)


@_rule("bitcast-convert")
def _bitcast_convert(op: _Op) -> Shape:
    operand = op.array(0)
    target = op.written_array().element_type
    source = operand.element_type
    if source.is_complex != target.is_complex:
        raise op.fail(f"'bitcast-convert' cannot convert between complex and real types: "
                      f"{fmt(operand)} to {target}", operand=0)
    small, large = sorted((source.bits, target.bits))
    if small == 0 or large % small:
        raise op.fail(f"'bitcast-convert' needs bit widths that divide each other: {source} has "
                      f"{source.bits} bits, {target} has {target.bits}", operand=0)
    ratio = large // small
    if source.bits > target.bits:
        return _array(target, operand.dims + (ratio,), operand.dynamic + (False,))
    if source.bits < target.bits:
        if operand.rank < 1 or operand.dims[-1] != ratio:
            raise op.fail(f"'bitcast-convert' from {source} to {target} packs {ratio} elements into one, so the "
                          f"operand's last dimension must be {ratio}, but the operand is {fmt(operand)}",
                          operand=0)
        return _array(target, operand.dims[:-1], operand.dynamic[:-1])
    return _retyped(operand, target)


@_rule("stochastic-convert")
def _stochastic_convert(op: _Op) -> Shape:
    operand = op.types(0, ("float",))
    random = op.types(1, ("uint",), "random bits")
    if operand.element_type.bits != random.element_type.bits:
        raise op.fail(f"the random bits of 'stochastic-convert' must be as wide as the operand: "
                      f"{fmt(random)} vs {fmt(operand)}", operand=1)
    _same_dims(op, 0, 1)
    return _retyped(operand, op.written_array().element_type)


@_rule("reduce-precision")
def _reduce_precision(op: _Op) -> Shape:
    shape = op.types(0, ("float",))
    if op.int_attr("exponent_bits") < 1:
        raise op.fail(f"exponent_bits must be at least 1, got {op.int_attr('exponent_bits')}",
                      attribute="exponent_bits")
    if op.int_attr("mantissa_bits") < 0:
        raise op.fail(f"mantissa_bits must not be negative, got {op.int_attr('mantissa_bits')}",
                      attribute="mantissa_bits")
    return shape


# --------------------------------------------------------------------------- leaves


@_rule("parameter")
def _parameter_rule(op: _Op) -> Shape:
    number = op.inst.attrs.get("parameter_number")
    if not _is_int(number) or number < 0:
        raise op.fail("parameter needs a non-negative parameter number: parameter(N)")
    return op.need_written()


@_rule("constant")
def _constant(op: _Op) -> Shape:
    shape = op.need_written()
    literal = op.inst.attrs.get("literal")
    if literal is not None and literal.shape is not None and not compatible(literal.shape, shape):
        raise op.fail(f"the literal of 'constant' has shape {fmt(literal.shape)} but the instruction is "
                      f"written as {fmt(shape)}")
    return shape


@_rule("iota")
def _iota(op: _Op) -> Shape:
    shape = op.written_array()
    if shape.rank == 0:
        raise op.fail("'iota' cannot produce a scalar; its result needs at least one dimension")
    if not any(_in_class(shape.element_type, c) for c in NUMBER):
        raise op.fail(f"'iota' produces integer, floating-point or complex elements, not {shape.element_type}")
    d = op.int_attr("iota_dimension")
    if not 0 <= d < shape.rank:
        raise op.fail(f"iota_dimension={d} is out of range for {fmt(shape)} (valid: 0..{shape.rank - 1})",
                      attribute="iota_dimension")
    return shape


@_rule("replica-id", "partition-id")
def _device_id(op: _Op) -> Shape:
    return _scalar(U32)


# --------------------------------------------------------------------------- data movement


@_rule("bitcast")
def _bitcast(op: _Op) -> Shape:
    operand = op.array(0)
    result = op.written_array()
    if _count(result.dims) * result.element_type.bits != _count(operand.dims) * operand.element_type.bits:
        raise op.fail(f"'bitcast' must keep the buffer size: the operand {fmt(operand)} has "
                      f"{_count(operand.dims) * operand.element_type.bits} bits but the result {fmt(result)} has "
                      f"{_count(result.dims) * result.element_type.bits}", operand=0)
    return result


@_rule("broadcast")
def _broadcast(op: _Op) -> Shape:
    operand = op.array(0)
    result = op.written_array()
    dims = op.int_list("dimensions")
    if len(dims) != operand.rank:
        raise op.fail(f"'broadcast' needs one entry in dimensions= per operand dimension: the operand is "
                      f"{fmt(operand)} (rank {operand.rank}) but dimensions={_list(dims)} has {len(dims)}",
                      attribute="dimensions")
    _dims_in_range(op, dims, result.rank, "dimensions", f"the result {fmt(result)}")
    _dims_unique(op, dims, "dimensions")
    for k, d in enumerate(dims):
        if result.dims[d] != operand.dims[k]:
            raise op.fail(f"'broadcast' maps operand dimension {k} (size {operand.dims[k]}) to result dimension "
                          f"{d}, which has size {result.dims[d]} in {fmt(result)}; sizes must be equal",
                          attribute="dimensions")
    return Shape(operand.element_type, result.dims, result.dynamic, None, None)


@_rule("reshape")
def _reshape(op: _Op) -> Shape:
    operand = op.array(0)
    result = op.written_array()
    _same_count(op, operand, result)
    return Shape(operand.element_type, result.dims, result.dynamic, None, None)


def _same_count(op: _Op, operand: Shape, result: Shape) -> None:
    if UNBOUNDED in operand.dims or UNBOUNDED in result.dims:
        return
    if _count(operand.dims) != _count(result.dims):
        raise op.fail(f"'{op.opcode}' must keep the element count: the operand {fmt(operand)} has "
                      f"{_count(operand.dims)} elements but the result {fmt(result)} has {_count(result.dims)}")


@_rule("dynamic-reshape")
def _dynamic_reshape(op: _Op) -> Shape:
    operand = op.array(0)
    result = op.written_array()
    op.need_operands(result.rank + 1, f"the operand and one size per result dimension of {fmt(result)}")
    for i in range(1, op.n):
        size = op.scalar(i, "size")
        if size.element_type is not S32:
            raise op.fail(f"operand {i} (size) of 'dynamic-reshape' must be s32[], but it is {fmt(size)}",
                          operand=i)
    _same_count(op, operand, result)
    return Shape(operand.element_type, result.dims, result.dynamic, None, None)


@_rule("transpose")
def _transpose(op: _Op) -> Shape:
    operand = op.array(0)
    perm = op.int_list("dimensions")
    if sorted(perm) != list(range(operand.rank)):
        raise op.fail(f"transpose dimensions={_list(perm)} must be a permutation of 0..{operand.rank - 1} "
                      f"(the operand is {fmt(operand)})" if operand.rank else
                      f"transpose dimensions={_list(perm)} must be empty for the scalar operand {fmt(operand)}",
                      attribute="dimensions")
    return _array(operand.element_type, [operand.dims[p] for p in perm], [operand.dynamic[p] for p in perm])


@_rule("reverse")
def _reverse(op: _Op) -> Shape:
    operand = op.array(0)
    dims = op.int_list("dimensions")
    _dims_in_range(op, dims, operand.rank, "dimensions", f"the operand {fmt(operand)}")
    _dims_unique(op, dims, "dimensions")
    return operand


@_rule("slice")
def _slice(op: _Op) -> Shape:
    operand = op.array(0)
    ranges = op.attr("slice")
    if len(ranges) != operand.rank:
        raise op.fail(f"'slice' needs one [start:limit] range per operand dimension: the operand is "
                      f"{fmt(operand)} (rank {operand.rank}) but slice= has {len(ranges)}", attribute="slice")
    dims, dynamic = [], []
    for d, (start, limit, stride) in enumerate(ranges):
        stride = 1 if stride is None else stride
        text = f"[{start}:{limit}]" if stride == 1 else f"[{start}:{limit}:{stride}]"
        if not (0 <= start <= limit <= operand.dims[d]):
            raise op.fail(f"slice range {text} of dimension {d} must satisfy 0 <= start <= limit <= "
                          f"{operand.dims[d]} (the operand is {fmt(operand)})", attribute="slice")
        if stride < 1:
            raise op.fail(f"slice stride of dimension {d} must be positive, got {stride}", attribute="slice")
        size = (limit - start + stride - 1) // stride
        dims.append(size)
        dynamic.append(operand.dynamic[d] and size != 1)
    return _array(operand.element_type, dims, dynamic)


@_rule("concatenate")
def _concatenate(op: _Op) -> Shape:
    first = op.array(0)
    d = op.one_dimension()
    if first.rank == 0:
        raise op.fail(f"'concatenate' cannot join scalars: operand 0 is {fmt(first)}", operand=0)
    _dims_in_range(op, [d], first.rank, "dimensions", f"operand 0 {fmt(first)}")
    size = first.dims[d]
    for i in range(1, op.n):
        shape = op.array(i)
        op.same_type(0, i)
        if shape.rank != first.rank or any(a != b for k, (a, b) in enumerate(zip(shape.dims, first.dims)) if k != d):
            raise op.fail(f"operands of 'concatenate' must have equal dimensions except dimension {d}: "
                          f"operand 0 is {fmt(first)} but operand {i} is {fmt(shape)}", operand=i)
        size += shape.dims[d]
    dims = list(first.dims)
    dims[d] = size
    dynamic = [any(op.shapes[i].dynamic[k] for i in range(op.n)) for k in range(first.rank)]
    return _array(first.element_type, dims, dynamic)


@_rule("pad")
def _pad(op: _Op) -> Shape:
    operand = op.array(0)
    op.scalar(1, "padding value")
    op.same_type(0, 1, ("", "padding value"))
    config = op.attr("padding")
    if len(config) != operand.rank:
        raise op.fail(f"'pad' needs one low_high_interior entry per operand dimension: the operand is "
                      f"{fmt(operand)} (rank {operand.rank}) but padding= has {len(config)}", attribute="padding")
    dims = []
    for d, (lo, hi, interior) in enumerate(config):
        if interior < 0:
            raise op.fail(f"interior padding of dimension {d} must not be negative, got {interior}",
                          attribute="padding")
        n = operand.dims[d]
        size = lo + hi + n + max(n - 1, 0) * interior
        if size < 0:
            raise op.fail(f"padding {lo}_{hi}_{interior} of dimension {d} (size {n}) gives a negative size "
                          f"{size}", attribute="padding")
        dims.append(size)
    return _array(operand.element_type, dims, operand.dynamic)


@_rule("tuple")
def _tuple_rule(op: _Op) -> Shape:
    return _tuple(op.shapes)


@_rule("get-tuple-element")
def _get_tuple_element(op: _Op) -> Shape:
    shape = op.shapes[0]
    index = op.int_attr("index")
    if not shape.is_tuple:
        raise op.fail(f"'get-tuple-element' needs a tuple operand, but operand 0 is {fmt(shape)}", operand=0)
    if not 0 <= index < len(shape.tuple_shapes):
        raise op.fail(f"index={index} is out of range for the {len(shape.tuple_shapes)}-element tuple "
                      f"{fmt(shape)}", attribute="index", operand=0)
    return shape.tuple_shapes[index]


@_rule("get-dimension-size")
def _get_dimension_size(op: _Op) -> Shape:
    operand = op.array(0)
    d = op.one_dimension()
    _dims_in_range(op, [d], operand.rank, "dimensions", f"the operand {fmt(operand)}")
    if operand.dims[d] > 2**31 - 1:
        raise op.fail(f"dimension {d} of {fmt(operand)} does not fit in s32", attribute="dimensions")
    return _scalar(S32)


@_rule("set-dimension-size")
def _set_dimension_size(op: _Op) -> Shape:
    operand = op.array(0)
    size = op.scalar(1, "size")
    if size.element_type is not S32:
        raise op.fail(f"operand 1 (size) of 'set-dimension-size' must be s32[], but it is {fmt(size)}", operand=1)
    d = op.one_dimension()
    _dims_in_range(op, [d], operand.rank, "dimensions", f"the operand {fmt(operand)}")
    dynamic = list(operand.dynamic)
    dynamic[d] = True
    return _array(operand.element_type, operand.dims, dynamic)


# --------------------------------------------------------------------------- dynamic slices


def _start_indices(op: _Op, first: int, rank: int) -> None:
    """Scalar start indices (one per dimension, same integer type) or one legacy index vector."""
    count = op.n - first
    if count == 1 and op.shapes[first].is_array and op.shapes[first].rank == 1:
        vector = op.types(first, ("int",), "start indices")
        if vector.dims[0] != rank:
            raise op.fail(f"the start index vector of '{op.opcode}' must have one entry per operand dimension "
                          f"({rank}), but it is {fmt(vector)}", operand=first)
        return
    if count != rank:
        raise op.fail(f"'{op.opcode}' needs {rank} scalar start indices (one per operand dimension), got {count}",
                      operand=first + rank if count > rank else None)
    for i in range(first, op.n):
        op.types(i, ("int",), "start index")
        op.scalar(i, "start index")
        op.same_type(first, i, ("start index", "start index"))


@_rule("dynamic-slice")
def _dynamic_slice(op: _Op) -> Shape:
    operand = op.array(0)
    _start_indices(op, 1, operand.rank)
    sizes = op.int_list("dynamic_slice_sizes")
    if len(sizes) != operand.rank:
        raise op.fail(f"dynamic_slice_sizes={_list(sizes)} needs one size per dimension of the operand "
                      f"{fmt(operand)}", attribute="dynamic_slice_sizes")
    for d, (s, n) in enumerate(zip(sizes, operand.dims)):
        if not 0 <= s <= n:
            raise op.fail(f"dynamic_slice_sizes={_list(sizes)}: size {s} of dimension {d} must be in [0, {n}]",
                          attribute="dynamic_slice_sizes")
    return _array(operand.element_type, sizes)


@_rule("dynamic-update-slice")
def _dynamic_update_slice(op: _Op) -> Shape:
    operand = op.array(0)
    update = op.array(1, "update")
    _start_indices(op, 2, operand.rank)
    if update.rank != operand.rank:
        raise op.fail(f"the update of 'dynamic-update-slice' must have the operand's rank: operand 0 is "
                      f"{fmt(operand)} but operand 1 is {fmt(update)}", operand=1)
    op.same_type(0, 1, ("", "update"))
    for d, (u, n) in enumerate(zip(update.dims, operand.dims)):
        if u > n:
            raise op.fail(f"the update {fmt(update)} is larger than the operand {fmt(operand)} in dimension {d}",
                          operand=1)
    return operand


# --------------------------------------------------------------------------- gather / scatter


def _expanded_indices(op: _Op, i: int, attribute: str) -> tuple[Shape, tuple[int, ...], int]:
    indices = op.types(i, ("int",), "indices")
    ivd = op.int_attr(attribute)
    if not 0 <= ivd <= indices.rank:
        raise op.fail(f"{attribute}={ivd} must be in [0, {indices.rank}] for the indices {fmt(indices)}",
                      attribute=attribute)
    expanded = indices.dims + (1,) if ivd == indices.rank else indices.dims
    return indices, expanded, ivd


def _check_batching(op: _Op, operand: Shape, expanded: tuple[int, ...], ivd: int, operand_attr: str,
                    indices_attr: str, disjoint_from: tuple[str, tuple[int, ...]]) -> tuple[int, ...]:
    obd = op.int_list(operand_attr)
    ibd = op.int_list(indices_attr)
    _dims_in_range(op, obd, operand.rank, operand_attr, f"the operand {fmt(operand)}")
    _dims_sorted(op, obd, operand_attr)
    _dims_unique(op, obd, operand_attr)
    overlap = set(obd) & set(disjoint_from[1])
    if overlap:
        raise op.fail(f"dimension {min(overlap)} is in both {operand_attr}= and {disjoint_from[0]}=",
                      attribute=operand_attr)
    if len(ibd) != len(obd):
        raise op.fail(f"{indices_attr}={_list(ibd)} must have as many entries as {operand_attr}={_list(obd)}",
                      attribute=indices_attr)
    _dims_in_range(op, ibd, len(expanded), indices_attr, "the indices")
    _dims_unique(op, ibd, indices_attr)
    for od, sd in zip(obd, ibd):
        if sd == ivd:
            raise op.fail(f"{indices_attr}={_list(ibd)} must not contain the index vector dimension {ivd}",
                          attribute=indices_attr)
        if expanded[sd] != operand.dims[od]:
            raise op.fail(f"batching dimensions must have equal sizes: operand dimension {od} has size "
                          f"{operand.dims[od]} but indices dimension {sd} has size {expanded[sd]}",
                          attribute=indices_attr)
    return obd


def _check_index_map(op: _Op, attribute: str, index_map: tuple[int, ...], operand: Shape,
                     expanded: tuple[int, ...], ivd: int, batching: tuple[int, ...]) -> None:
    if len(index_map) != expanded[ivd]:
        raise op.fail(f"{attribute}={_list(index_map)} has {len(index_map)} entries but the index vectors "
                      f"(dimension {ivd} of the indices) have {expanded[ivd]}", attribute=attribute)
    _dims_in_range(op, index_map, operand.rank, attribute, f"the operand {fmt(operand)}")
    _dims_unique(op, index_map, attribute)
    both = set(index_map) & set(batching)
    if both:
        raise op.fail(f"{attribute}={_list(index_map)} must not contain the batching dimension {min(both)}",
                      attribute=attribute)


@_rule("gather")
def _gather(op: _Op) -> Shape:
    operand = op.array(0)
    indices, expanded, ivd = _expanded_indices(op, 1, "index_vector_dim")
    offset_dims = op.int_list("offset_dims")
    collapsed = op.int_list("collapsed_slice_dims")
    index_map = op.int_list("start_index_map")
    slice_sizes = op.int_list("slice_sizes")
    out_rank = len(offset_dims) + len(expanded) - 1
    _dims_sorted(op, offset_dims, "offset_dims")
    _dims_unique(op, offset_dims, "offset_dims")
    _dims_in_range(op, offset_dims, out_rank, "offset_dims", f"the rank-{out_rank} result")
    _dims_in_range(op, collapsed, operand.rank, "collapsed_slice_dims", f"the operand {fmt(operand)}")
    _dims_sorted(op, collapsed, "collapsed_slice_dims")
    _dims_unique(op, collapsed, "collapsed_slice_dims")
    batching = _check_batching(op, operand, expanded, ivd, "operand_batching_dims", "start_indices_batching_dims",
                               ("collapsed_slice_dims", collapsed))
    _check_index_map(op, "start_index_map", index_map, operand, expanded, ivd, batching)
    if len(slice_sizes) != operand.rank:
        raise op.fail(f"slice_sizes={_list(slice_sizes)} needs one size per dimension of the operand "
                      f"{fmt(operand)}", attribute="slice_sizes")
    if len(offset_dims) + len(collapsed) + len(batching) != operand.rank:
        raise op.fail(f"every operand dimension must be an offset, collapsed or batching dimension: "
                      f"offset_dims has {len(offset_dims)}, collapsed_slice_dims {len(collapsed)} and "
                      f"operand_batching_dims {len(batching)} entries, but the operand {fmt(operand)} has rank "
                      f"{operand.rank}", attribute="offset_dims")
    for d, (s, n) in enumerate(zip(slice_sizes, operand.dims)):
        if not 0 <= s <= n:
            raise op.fail(f"slice_sizes={_list(slice_sizes)}: size {s} of dimension {d} must be in [0, {n}]",
                          attribute="slice_sizes")
    for d in collapsed + batching:
        if slice_sizes[d] > 1:
            raise op.fail(f"slice_sizes={_list(slice_sizes)}: dimension {d} is collapsed or batching, so its "
                          f"slice size must be 0 or 1, not {slice_sizes[d]}", attribute="slice_sizes")
    window = [slice_sizes[d] for d in range(operand.rank) if d not in collapsed and d not in batching]
    batch = [n for d, n in enumerate(expanded) if d != ivd]
    windows, batches = iter(window), iter(batch)
    dims = [next(windows) if d in offset_dims else next(batches) for d in range(out_rank)]
    return _array(operand.element_type, dims)


@_rule("scatter")
def _scatter(op: _Op) -> Shape:
    if op.n % 2 == 0:
        raise op.fail(f"'scatter' takes N operands, the indices and N updates (an odd count), got {op.n}")
    count = op.n // 2
    operands = [op.array(i) for i in range(count)]
    indices, expanded, ivd = _expanded_indices(op, count, "index_vector_dim")
    updates = [op.array(count + 1 + i, "updates") for i in range(count)]
    window_dims = op.int_list("update_window_dims")
    inserted = op.int_list("inserted_window_dims")
    index_map = op.int_list("scatter_dims_to_operand_dims")
    for i in range(1, count):
        if operands[i].dims != operands[0].dims:
            raise op.fail(f"the operands of 'scatter' must have equal dimensions: operand 0 is {fmt(operands[0])} "
                          f"but operand {i} is {fmt(operands[i])}", operand=i)
    operand = operands[0]
    _dims_sorted(op, window_dims, "update_window_dims")
    _dims_unique(op, window_dims, "update_window_dims")
    _dims_in_range(op, inserted, operand.rank, "inserted_window_dims", f"the operand {fmt(operand)}")
    _dims_sorted(op, inserted, "inserted_window_dims")
    _dims_unique(op, inserted, "inserted_window_dims")
    batching = _check_batching(op, operand, expanded, ivd, "input_batching_dims", "scatter_indices_batching_dims",
                               ("inserted_window_dims", inserted))
    if len(window_dims) + len(inserted) + len(batching) != operand.rank:
        raise op.fail(f"every operand dimension must be an update window, inserted or batching dimension: "
                      f"update_window_dims has {len(window_dims)}, inserted_window_dims {len(inserted)} and "
                      f"input_batching_dims {len(batching)} entries, but the operand {fmt(operand)} has rank "
                      f"{operand.rank}", attribute="update_window_dims")
    _check_index_map(op, "scatter_dims_to_operand_dims", index_map, operand, expanded, ivd, batching)
    window_bounds = [n for d, n in enumerate(operand.dims) if d not in inserted and d not in batching]
    scatter_bounds = [n for d, n in enumerate(expanded) if d != ivd]
    for k, upd in enumerate(updates):
        i = count + 1 + k
        if upd.element_type is not operands[k].element_type:
            raise op.fail(f"updates {k} of 'scatter' must have the element type of operand {k}: operand {k} is "
                          f"{fmt(operands[k])} but operand {i} (updates) is {fmt(upd)}", operand=i)
        if upd.rank != len(window_dims) + len(scatter_bounds):
            raise op.fail(f"updates {fmt(upd)} must have rank {len(window_dims) + len(scatter_bounds)} "
                          f"({len(window_dims)} update window dims + {len(scatter_bounds)} scatter dims of the "
                          f"indices {fmt(indices)})", operand=i)
        _dims_in_range(op, window_dims, upd.rank, "update_window_dims", f"the updates {fmt(upd)}")
        for w, d in enumerate(window_dims):
            if upd.dims[d] > window_bounds[w]:
                raise op.fail(f"update window dimension {d} of {fmt(upd)} has size {upd.dims[d]}, more than the "
                              f"{window_bounds[w]} of the matching operand dimension", operand=i)
        scatter_dims = [d for d in range(upd.rank) if d not in window_dims]
        for d, bound in zip(scatter_dims, scatter_bounds):
            if upd.dims[d] != bound:
                raise op.fail(f"scatter dimension {d} of the updates {fmt(upd)} has size {upd.dims[d]} but the "
                              f"matching dimension of the indices {fmt(indices)} has size {bound}", operand=i)
    check_reducer(op, "to_apply", [_scalar(s.element_type) for s in operands],
                  [u.element_type for u in updates], ("operand", "updates"))
    return _one_or_tuple(operands)


# --------------------------------------------------------------------------- dot / convolution


def _product_type(op: _Op, lhs: Shape, rhs: Shape) -> PrimitiveType:
    """Result element type of dot/convolution: the written (preferred) type, else the operands'."""
    a, b = lhs.element_type, rhs.element_type
    if a is not b and not (a.is_float and b.is_float):
        raise op.fail(f"operands of '{op.opcode}' must have the same element type: operand 0 is {fmt(lhs)} but "
                      f"operand 1 is {fmt(rhs)}", operand=1)
    base = a if a.bits >= b.bits else b
    preferred = op.written_type()
    if preferred is None or preferred is base:
        return base
    if not preferred.is_array_type:
        raise op.fail(f"the result of '{op.opcode}' must be an array, but it is written as {fmt(op.written)}")
    if not base.is_float and preferred.bits < base.bits:
        raise op.fail(f"the result type {preferred} of '{op.opcode}' must not be narrower than the operand type "
                      f"{base}")
    return preferred


def _dot_numbers(op: _Op) -> tuple[tuple[int, ...], ...]:
    return (op.int_list("lhs_batch_dims"), op.int_list("lhs_contracting_dims"),
            op.int_list("rhs_batch_dims"), op.int_list("rhs_contracting_dims"))


def _check_dot_numbers(op: _Op, lhs: Shape, rhs: Shape, lb, lc, rb, rc) -> None:
    """XLA ValidateDotDimensionNumbers plus the size checks of InferDotOpShape."""
    for name, dims, shape in (("lhs_batch_dims", lb, lhs), ("lhs_contracting_dims", lc, lhs),
                              ("rhs_batch_dims", rb, rhs), ("rhs_contracting_dims", rc, rhs)):
        _dims_in_range(op, dims, shape.rank, name, f"{name[:3]} {fmt(shape)}")
    for side, batch, contracting in (("lhs", lb, lc), ("rhs", rb, rc)):
        both = list(batch) + list(contracting)
        for d in both:
            if both.count(d) > 1:
                raise op.fail(f"{side} dimension {d} is listed more than once in {side}_batch_dims="
                              f"{_list(batch)} and {side}_contracting_dims={_list(contracting)}",
                              attribute=f"{side}_contracting_dims" if d in contracting else f"{side}_batch_dims")
    for kind, ldims, rdims in (("contracting", lc, rc), ("batch", lb, rb)):
        if len(ldims) != len(rdims):
            written = f"rhs_{kind}_dims" if op.has(f"rhs_{kind}_dims") else f"lhs_{kind}_dims"
            raise op.fail(f"lhs_{kind}_dims={_list(ldims)} and rhs_{kind}_dims={_list(rdims)} must have the same "
                          f"number of entries", attribute=written)
        for l, r in zip(ldims, rdims):
            if lhs.dims[l] != rhs.dims[r]:
                raise op.fail(f"{kind} dimensions must have equal sizes: lhs dimension {l} of {fmt(lhs)} has size "
                              f"{lhs.dims[l]} but rhs dimension {r} of {fmt(rhs)} has size {rhs.dims[r]}",
                              attribute=f"rhs_{kind}_dims")


def _dot_result_dims(lhs: Shape, rhs: Shape, lb, lc, rb, rc) -> tuple[list[int], list[bool]]:
    """Batch dims (lhs order), then lhs free dims, then rhs free dims."""
    dims = [lhs.dims[d] for d in lb]
    dynamic = [lhs.dynamic[d] for d in lb]
    for shape, skip in ((lhs, set(lb) | set(lc)), (rhs, set(rb) | set(rc))):
        for d in range(shape.rank):
            if d not in skip:
                dims.append(shape.dims[d])
                dynamic.append(shape.dynamic[d])
    return dims, dynamic


@_rule("dot")
def _dot(op: _Op) -> Shape:
    lhs, rhs = op.array(0, "lhs"), op.array(1, "rhs")
    numbers = _dot_numbers(op)
    _check_dot_numbers(op, lhs, rhs, *numbers)
    dims, dynamic = _dot_result_dims(lhs, rhs, *numbers)
    return _array(_product_type(op, lhs, rhs), dims, dynamic)


@_rule("scaled-dot")
def _scaled_dot(op: _Op) -> Shape:
    lhs, rhs = op.array(0, "lhs"), op.array(1, "rhs")
    for i, data in ((2, lhs), (3, rhs)):
        scale = op.array(i, "scale")
        if scale.rank != data.rank or any(s == 0 or d % s for s, d in zip(scale.dims, data.dims)):
            raise op.fail(f"scale operand {i} {fmt(scale)} must have the rank of its data operand {fmt(data)} and "
                          f"dimensions that divide the data's", operand=i)
    numbers = _dot_numbers(op)
    _check_dot_numbers(op, lhs, rhs, *numbers)
    dims, dynamic = _dot_result_dims(lhs, rhs, *numbers)
    base = lhs.element_type if lhs.element_type.bits >= rhs.element_type.bits else rhs.element_type
    return _array(op.written_type() or base, dims, dynamic)


@_rule("ragged-dot")
def _ragged_dot(op: _Op) -> Shape:
    lhs, rhs = op.array(0, "lhs"), op.array(1, "rhs")
    groups = op.types(2, ("int",), "group sizes")
    ragged = op.int_list("lhs_ragged_dims")
    group_dims = op.int_list("rhs_group_dims")
    if len(ragged) != 1:
        raise op.fail(f"'ragged-dot' needs exactly one lhs_ragged_dims entry, got {_list(ragged)}",
                      attribute="lhs_ragged_dims")
    if len(group_dims) > 1:
        raise op.fail(f"'ragged-dot' takes at most one rhs_group_dims entry, got {_list(group_dims)}",
                      attribute="rhs_group_dims")
    _dims_in_range(op, ragged, lhs.rank, "lhs_ragged_dims", f"lhs {fmt(lhs)}")
    _dims_in_range(op, group_dims, rhs.rank, "rhs_group_dims", f"rhs {fmt(rhs)}")
    if groups.rank < 1:
        raise op.fail(f"the group sizes of 'ragged-dot' must have at least one dimension, got {fmt(groups)}",
                      operand=2)
    count = groups.dims[-1]
    lb, lc, rb, rc = _dot_numbers(op)
    rhs_dims = rhs
    if group_dims:
        g = group_dims[0]
        if g in rb or g in rc:
            raise op.fail(f"rhs_group_dims={_list(group_dims)} must be neither a batch nor a contracting "
                          f"dimension", attribute="rhs_group_dims")
        if ragged[0] in lc:
            raise op.fail("'ragged-dot' with a ragged contracting dimension takes no rhs_group_dims",
                          attribute="rhs_group_dims")
        if rhs.dims[g] != count:
            raise op.fail(f"rhs group dimension {g} of {fmt(rhs)} has size {rhs.dims[g]} but the group sizes "
                          f"{fmt(groups)} describe {count} groups", operand=2)
        # The group dimension is not part of the dot: drop it and renumber.
        rhs_dims = _array(rhs.element_type, rhs.dims[:g] + rhs.dims[g + 1:])
        rb = tuple(d - (d > g) for d in rb)
        rc = tuple(d - (d > g) for d in rc)
    _check_dot_numbers(op, lhs, rhs_dims, lb, lc, rb, rc)
    dims, dynamic = _dot_result_dims(lhs, rhs_dims, lb, lc, rb, rc)
    if ragged[0] in lc:
        dims, dynamic = [count] + dims, [False] + dynamic
    return _array(_product_type(op, lhs, rhs), dims, dynamic)


def _window(op: _Op):
    from .attributes import Window
    window = op.inst.attrs.get("window")
    return window if window is not None else Window(())


def dilated_size(n: int, dilation: int) -> int:
    """Length of `n` elements spread `dilation` apart (0 stays 0)."""
    return 0 if n == 0 else (n - 1) * dilation + 1


def window_output_dims(input_dims: Sequence[int], window) -> tuple[int, ...]:
    """Output dims of sliding `window` over an input of `input_dims` (XLA's
    InferWindowOutputShape); ValueError for an invalid window. Shared with the interpreter."""
    if len(window.dims) != len(input_dims):
        raise ValueError(f"window has {_counted(len(window.dims), 'dimension')} but the operand has "
                         f"{len(input_dims)}")
    out = []
    for k, (n, wd) in enumerate(zip(input_dims, window.dims)):
        if wd.size <= 0:
            raise ValueError(f"window size of dimension {k} must be positive, got {wd.size}")
        if wd.stride <= 0:
            raise ValueError(f"window stride of dimension {k} must be positive, got {wd.stride}")
        if wd.base_dilation < 1 or wd.window_dilation < 1:
            raise ValueError(f"window dilations of dimension {k} must be >= 1, got lhs_dilate={wd.base_dilation} "
                             f"rhs_dilate={wd.window_dilation}")
        base = wd.padding_low + dilated_size(n, wd.base_dilation) + wd.padding_high
        if base < 0:
            raise ValueError(f"window padding {wd.padding_low}_{wd.padding_high} of dimension {k} removes more "
                             f"than the {n} (dilated) input elements")
        span = dilated_size(wd.size, wd.window_dilation)
        out.append(0 if span > base else (base - span) // wd.stride + 1)
    return tuple(out)


def _window_dims(op: _Op, input_dims: Sequence[int], window, what: str) -> tuple[int, ...]:
    if len(window.dims) != len(input_dims):
        raise op.fail(f"window has {_counted(len(window.dims), 'dimension')} but {what} has {len(input_dims)}",
                      attribute="window")
    try:
        return window_output_dims(input_dims, window)
    except ValueError as exc:
        raise op.fail(str(exc), attribute="window") from None


@_rule("convolution")
def _convolution(op: _Op) -> Shape:
    lhs, rhs = op.array(0, "input"), op.array(1, "kernel")
    labels = op.attr("dim_labels")
    window = _window(op)
    groups = op.int_attr("feature_group_count")
    batch_groups = op.int_attr("batch_group_count")
    if groups < 1 or batch_groups < 1:
        bad = "feature_group_count" if groups < 1 else "batch_group_count"
        raise op.fail(f"{bad} must be positive, got {groups if groups < 1 else batch_groups}", attribute=bad)
    if groups > 1 and batch_groups > 1:
        raise op.fail(f"feature_group_count={groups} and batch_group_count={batch_groups} cannot both be greater "
                      f"than 1", attribute="batch_group_count")
    rank = labels.num_spatial + 2
    for i, shape, role in ((0, lhs, "input"), (1, rhs, "kernel")):
        if shape.rank != rank:
            raise op.fail(f"dim_labels {labels.to_text()} describe rank-{rank} operands, but operand {i} ({role}) "
                          f"is {fmt(shape)}", operand=i, attribute="dim_labels")
    if len(window.dims) != labels.num_spatial:
        raise op.fail(f"window has {_counted(len(window.dims), 'dimension')} but dim_labels {labels.to_text()} have "
                      f"{_counted(labels.num_spatial, 'spatial dimension')}", attribute="window")
    features, batch = lhs.dims[labels.input_feature], lhs.dims[labels.input_batch]
    kernel_in, kernel_out = rhs.dims[labels.kernel_input_feature], rhs.dims[labels.kernel_output_feature]
    if features % groups or features // groups != kernel_in:
        raise op.fail(f"the input has {features} features and feature_group_count={groups}, so the kernel needs "
                      f"{features // groups if features % groups == 0 else 'a whole number of'} input features, "
                      f"but the kernel {fmt(rhs)} has {kernel_in}", operand=1)
    if kernel_out % groups:
        raise op.fail(f"the kernel's {kernel_out} output features must be divisible by feature_group_count="
                      f"{groups}", operand=1)
    if kernel_out % batch_groups:
        raise op.fail(f"the kernel's {kernel_out} output features must be divisible by batch_group_count="
                      f"{batch_groups}", operand=1)
    if batch % batch_groups:
        raise op.fail(f"the input batch size {batch} must be divisible by batch_group_count={batch_groups}",
                      operand=0)
    for k, (kd, wd) in enumerate(zip(labels.kernel_spatial, window.dims)):
        if rhs.dims[kd] != wd.size:
            raise op.fail(f"window size of spatial dimension {k} is {wd.size} but the kernel {fmt(rhs)} has size "
                          f"{rhs.dims[kd]} there", attribute="window")
    spatial = _window_dims(op, [lhs.dims[d] for d in labels.input_spatial], window, "the input's spatial dims")
    dims = [0] * rank
    dims[labels.output_batch] = batch // batch_groups
    dims[labels.output_feature] = kernel_out
    for k, d in enumerate(labels.output_spatial):
        dims[d] = spatial[k]
    return _array(_product_type(op, lhs, rhs), dims)


# --------------------------------------------------------------------------- reductions


def _split_inputs(op: _Op) -> tuple[list[Shape], list[Shape]]:
    if op.n % 2:
        raise op.fail(f"'{op.opcode}' takes N inputs followed by N init values (an even count), got {op.n} "
                      f"operands")
    count = op.n // 2
    inputs = [op.array(i, "input") for i in range(count)]
    inits = [op.shapes[count + i] for i in range(count)]
    for i in range(1, count):
        if inputs[i].dims != inputs[0].dims:
            raise op.fail(f"the inputs of '{op.opcode}' must have equal dimensions: operand 0 is {fmt(inputs[0])} "
                          f"but operand {i} is {fmt(inputs[i])}", operand=i)
    for i, init in enumerate(inits):
        if not (init.is_array and init.rank == 0):
            raise op.fail(f"operand {count + i} (init value) of '{op.opcode}' must be a scalar, but it is "
                          f"{fmt(init)}", operand=count + i)
    return inputs, inits


def _per_result(op: _Op, shapes: list[Shape]) -> Shape:
    """An array, or a tuple when the reducer returns a tuple (even a 1-tuple, as in XLA)."""
    comp = op.computation("to_apply")
    return _tuple(shapes) if comp.root.shape.is_tuple else shapes[0]


@_rule("reduce")
def _reduce(op: _Op) -> Shape:
    inputs, inits = _split_inputs(op)
    dims = op.int_list("dimensions")
    _dims_in_range(op, dims, inputs[0].rank, "dimensions", f"the input {fmt(inputs[0])}")
    _dims_unique(op, dims, "dimensions")
    results = check_reducer(op, "to_apply", inits, [s.element_type for s in inputs],
                            init_operands=range(len(inputs), op.n))
    kept = [d for d in range(inputs[0].rank) if d not in dims]
    out_dims = [inputs[0].dims[d] for d in kept]
    dynamic = [inputs[0].dynamic[d] for d in kept]
    return _per_result(op, [_array(r.element_type, out_dims, dynamic) for r in results])


@_rule("reduce-window")
def _reduce_window(op: _Op) -> Shape:
    inputs, inits = _split_inputs(op)
    results = check_reducer(op, "to_apply", inits, [s.element_type for s in inputs],
                            init_operands=range(len(inputs), op.n))
    out_dims = _window_dims(op, inputs[0].dims, _window(op), f"the input {fmt(inputs[0])}")
    return _per_result(op, [_array(r.element_type, out_dims) for r in results])


@_rule("select-and-scatter")
def _select_and_scatter(op: _Op) -> Shape:
    operand = op.array(0)
    source = op.array(1, "source")
    op.scalar(2, "init value")
    comp, params, result = _callee(op, "select")
    _need_params(op, comp, params, 2, "select")
    element = _scalar(operand.element_type)
    for k, p in enumerate(params):
        if not compatible(p, element):
            raise op.fail(f"select computation %{comp.name}: parameter {k} is {fmt(p)} but must be {fmt(element)} "
                          f"(the operand's element type)", attribute="select", related=_parameter(comp, k),
                          note=f"parameter {k} of %{comp.name} is declared here")
    if not compatible(result, _scalar(PRED)):
        raise op.fail(f"select computation %{comp.name} must return pred[], but returns {fmt(result)}",
                      attribute="select", **_root_note(comp))
    check_reducer(op, "scatter", [op.shapes[2]], [source.element_type], ("init value", "source"), [2])
    expected = _window_dims(op, operand.dims, _window(op), f"the operand {fmt(operand)}")
    if source.dims != expected:
        raise op.fail(f"the source of 'select-and-scatter' must have the shape of the windowed operand, "
                      f"{fmt(_array(source.element_type, expected))}, but it is {fmt(source)}", operand=1)
    return operand


# --------------------------------------------------------------------------- control


@_rule("map")
def _map(op: _Op) -> Shape:
    shapes = [op.array(i) for i in range(op.n)]
    for i in range(1, op.n):
        if shapes[i].dims != shapes[0].dims:
            raise op.fail(f"the operands of 'map' must have equal dimensions: operand 0 is {fmt(shapes[0])} but "
                          f"operand {i} is {fmt(shapes[i])}", operand=i)
    dims = op.int_list("dimensions")
    if dims and list(dims) != list(range(shapes[0].rank)):
        raise op.fail(f"'map' applies to every dimension: dimensions= must be {_list(range(shapes[0].rank))}, "
                      f"got {_list(dims)}", attribute="dimensions")
    comp, params, result = _callee(op, "to_apply")
    _need_params(op, comp, params, op.n, "to_apply", "one per operand")
    for k, (p, s) in enumerate(zip(params, shapes)):
        if not compatible(p, _scalar(s.element_type)):
            raise op.fail(f"to_apply computation %{comp.name}: parameter {k} is {fmt(p)} but operand {k} has "
                          f"element type {s.element_type}, so it must be {fmt(_scalar(s.element_type))}",
                          attribute="to_apply", related=_parameter(comp, k),
                          note=f"parameter {k} of %{comp.name} is declared here")
    if not (result.is_array and result.rank == 0):
        raise op.fail(f"to_apply computation %{comp.name} of 'map' must return a scalar, but returns {fmt(result)}",
                      attribute="to_apply", **_root_note(comp))
    return _array(result.element_type, shapes[0].dims)


@_rule("sort")
def _sort(op: _Op) -> Shape:
    shapes = [op.array(i) for i in range(op.n)]
    for i in range(1, op.n):
        if shapes[i].dims != shapes[0].dims:
            raise op.fail(f"the operands of 'sort' must have equal dimensions: operand 0 is {fmt(shapes[0])} but "
                          f"operand {i} is {fmt(shapes[i])}", operand=i)
    d = op.one_dimension()
    _dims_in_range(op, [d], shapes[0].rank, "dimensions", f"the operand {fmt(shapes[0])}")
    comp, params, result = _callee(op, "to_apply")
    _need_params(op, comp, params, 2 * op.n, "to_apply", "two per operand")
    for k, p in enumerate(params):
        want = _scalar(shapes[k // 2].element_type)
        if not compatible(p, want):
            raise op.fail(f"comparator %{comp.name}: parameter {k} is {fmt(p)} but must be {fmt(want)} "
                          f"(an element of operand {k // 2})", attribute="to_apply", related=_parameter(comp, k),
                          note=f"parameter {k} of %{comp.name} is declared here")
    if not compatible(result, _scalar(PRED)):
        raise op.fail(f"comparator %{comp.name} of 'sort' must return pred[], but returns {fmt(result)}",
                      attribute="to_apply", **_root_note(comp))
    return _one_or_tuple(shapes)


@_rule("topk")
def _topk(op: _Op) -> Shape:
    operand = op.array(0)
    k = op.int_attr("k")
    if operand.rank < 1:
        raise op.fail(f"'topk' needs an operand with at least one dimension, got {fmt(operand)}", operand=0)
    if not 0 <= k <= operand.dims[-1]:
        raise op.fail(f"k={k} must be in [0, {operand.dims[-1]}], the size of the last dimension of "
                      f"{fmt(operand)}", attribute="k")
    dims = operand.dims[:-1] + (k,)
    return _tuple([_array(operand.element_type, dims), _array(S32, dims)])


@_rule("scan")
def _scan(op: _Op) -> Shape:
    carries = op.int_attr("num_carries")
    if not 0 <= carries <= op.n:
        raise op.fail(f"num_carries={carries} must be in [0, {op.n}] (the operand count)", attribute="num_carries")
    count = op.n - carries
    d = op.one_dimension()
    inputs = [op.array(i, "input") for i in range(count)]
    for s in inputs:
        _dims_in_range(op, [d], s.rank, "dimensions", f"the input {fmt(s)}")
    length = inputs[0].dims[d] if inputs else None
    for i, s in enumerate(inputs):
        if s.dims[d] != length:
            raise op.fail(f"the inputs of 'scan' must have the same size along dimension {d}: operand 0 is "
                          f"{fmt(inputs[0])} but operand {i} is {fmt(s)}", operand=i)
    comp, params, result = _callee(op, "to_apply")
    _need_params(op, comp, params, op.n, "to_apply", f"{count} inputs then {carries} carries")
    for i in range(op.n):
        shape = op.shapes[i]
        want = _array(shape.element_type, shape.dims[:d] + shape.dims[d + 1:]) if i < count else shape
        if not compatible(params[i], want):
            raise op.fail(f"to_apply computation %{comp.name}: parameter {i} is {fmt(params[i])} but must be "
                          f"{fmt(want)}", attribute="to_apply", related=_parameter(comp, i),
                          note=f"parameter {i} of %{comp.name} is declared here")
    parts = list(result.tuple_shapes) if result.is_tuple else [result]
    if len(parts) < carries:
        raise op.fail(f"to_apply computation %{comp.name} returns {len(parts)} values but there are {carries} "
                      f"carries", attribute="to_apply", **_root_note(comp))
    outputs, new_carries = parts[:len(parts) - carries], parts[len(parts) - carries:]
    for k, (new, old) in enumerate(zip(new_carries, op.shapes[count:])):
        if not compatible(new, old):
            raise op.fail(f"to_apply computation %{comp.name} returns carry {k} as {fmt(new)} but it starts as "
                          f"{fmt(old)}", attribute="to_apply", **_root_note(comp))
    if length is None:
        raise op.fail("'scan' needs at least one input to scan over")
    stacked = []
    for o in outputs:
        if not o.is_array or o.rank < d:
            raise op.fail(f"to_apply computation %{comp.name} returns the output {fmt(o)}, which cannot be "
                          f"stacked along dimension {d}", attribute="to_apply", **_root_note(comp))
        stacked.append(_array(o.element_type, o.dims[:d] + (length,) + o.dims[d:]))
    if not result.is_tuple and carries == 0:
        return stacked[0]
    return _tuple(stacked + list(new_carries))


@_rule("call")
def _call(op: _Op) -> Shape:
    comp, params, result = _callee(op, "to_apply")
    _need_params(op, comp, params, op.n, "to_apply", f"'call' passes {_counted(op.n, 'operand')}")
    _check_operands_match_parameters(op, comp, params, "to_apply")
    return result


@_rule("while")
def _while(op: _Op) -> Shape:
    init = op.shapes[0]
    results = {}
    for attribute in ("condition", "body"):
        comp, params, result = _callee(op, attribute)
        _need_params(op, comp, params, 1, attribute)
        _check_operands_match_parameters(op, comp, params, attribute)
        results[attribute] = (comp, result)
    cond, cond_result = results["condition"]
    if not compatible(cond_result, _scalar(PRED)):
        raise op.fail(f"condition computation %{cond.name} must return pred[], but returns {fmt(cond_result)}",
                      attribute="condition", **_root_note(cond))
    body, body_result = results["body"]
    if not compatible(body_result, init):
        raise op.fail(f"body computation %{body.name} must return the loop state {fmt(init)}, but returns "
                      f"{fmt(body_result)}", attribute="body", **_root_note(body))
    return init


@_rule("conditional")
def _conditional(op: _Op) -> Shape:
    selector = op.shapes[0]
    if op.has("branch_computations"):
        if op.has("true_computation") or op.has("false_computation"):
            raise op.fail("'conditional' takes either branch_computations= or true_computation=/false_computation=, "
                          "not both", attribute="branch_computations")
        branches = list(op.attr("branch_computations"))
        names = [f"branch_computations[{j}]" for j in range(len(branches))]
        attrs = ["branch_computations"] * len(branches)
        two_way = compatible(selector, _scalar(PRED)) and len(branches) == 2
        if not (compatible(selector, _scalar(S32)) or two_way):
            raise op.fail(f"the branch index of 'conditional' with branch_computations= must be s32[] (or pred[] "
                          f"with two branches), but operand 0 is {fmt(selector)}", operand=0)
        if not branches:
            raise op.fail("'conditional' needs at least one branch computation", attribute="branch_computations")
    else:
        attrs = ["true_computation", "false_computation"]
        branches = [op.computation(a) for a in attrs]
        names = attrs
        if not compatible(selector, _scalar(PRED)):
            raise op.fail(f"the predicate of 'conditional' with true_computation=/false_computation= must be "
                          f"pred[], but operand 0 is {fmt(selector)}", operand=0)
    op.need_operands(len(branches) + 1, "the selector and one operand per branch")
    result = None
    for j, (comp, name, attribute) in enumerate(zip(branches, names, attrs)):
        try:
            params, root = signature(comp)
        except ShapeError as exc:
            exc.attribute = attribute
            raise
        if len(params) != 1:
            raise op.fail(f"{name} computation %{comp.name} must take 1 parameter, but it takes {len(params)}",
                          attribute=attribute, related=comp)
        if not compatible(op.shapes[j + 1], params[0]):
            raise op.fail(f"operand {j + 1} of 'conditional' has shape {fmt(op.shapes[j + 1])} but the parameter of "
                          f"{name} computation %{comp.name} has shape {fmt(params[0])}", operand=j + 1,
                          related=_parameter(comp, 0), note=f"the parameter of %{comp.name} is declared here")
        if result is None:
            result = root
        elif not compatible(root, result):
            raise op.fail(f"all branches of 'conditional' must return the same shape: %{branches[0].name} returns "
                          f"{fmt(result)} but %{comp.name} returns {fmt(root)}", attribute=attribute,
                          **_root_note(comp))
    return result


@_rule("fusion")
def _fusion(op: _Op) -> Shape:
    comp, params, result = _callee(op, "calls")
    if len(params) > op.n:
        raise op.fail(f"fused computation %{comp.name} takes {_counted(len(params), 'parameter')} but 'fusion' "
                      f"passes only {_counted(op.n, 'operand')}", attribute="calls", related=comp)
    _check_operands_match_parameters(op, comp, params, "fused")
    if op.written is not None and not compatible(op.written, result):
        raise op.fail(f"'fusion' is written as {fmt(op.written)} but its fused computation %{comp.name} returns "
                      f"{fmt(result)}", **_root_note(comp))
    _check_aliasing(op, result)
    return result


def _check_aliasing(op: _Op, result: Shape) -> None:
    for entry in op.inst.attrs.get("output_to_operand_aliasing") or ():
        where = {"attribute": "output_to_operand_aliasing"}
        if not 0 <= entry.operand < op.n:
            raise op.fail(f"output_to_operand_aliasing names operand {entry.operand}, but '{op.opcode}' has "
                          f"{_counted(op.n, 'operand')}", **where)
        out = _subshape(result, entry.output_index)
        operand = _subshape(op.shapes[entry.operand], entry.operand_index)
        if out is None:
            raise op.fail(f"output_to_operand_aliasing: {_list(entry.output_index)} is not an index into the result "
                          f"{fmt(result)}", **where)
        if operand is None:
            raise op.fail(f"output_to_operand_aliasing: {_list(entry.operand_index)} is not an index into operand "
                          f"{entry.operand} {fmt(op.shapes[entry.operand])}", **where)
        if not compatible(out, operand):
            raise op.fail(f"output_to_operand_aliasing: result {_list(entry.output_index)} is {fmt(out)} but operand "
                          f"{entry.operand} at {_list(entry.operand_index)} is {fmt(operand)}; aliased buffers need "
                          f"equal shapes", **where)


def _subshape(shape: Shape, index) -> Optional[Shape]:
    for i in index:
        if not shape.is_tuple or not 0 <= i < len(shape.tuple_shapes):
            return None
        shape = shape.tuple_shapes[i]
    return shape


@_rule("custom-call")
def _custom_call(op: _Op) -> Shape:
    result = op.need_written()
    constraints = op.inst.attrs.get("operand_layout_constraints")
    if constraints is not None:
        if len(constraints) != op.n:
            raise op.fail(f"operand_layout_constraints lists {_counted(len(constraints), 'shape')} but 'custom-call' "
                          f"has {_counted(op.n, 'operand')}", attribute="operand_layout_constraints")
        for i, constraint in enumerate(constraints):
            if not compatible(constraint, op.shapes[i]):
                raise op.fail(f"operand_layout_constraints gives operand {i} the shape {fmt(constraint)} but the "
                              f"operand is {fmt(op.shapes[i])}", attribute="operand_layout_constraints", operand=i)
    if op.has("to_apply") and op.has("called_computations"):
        raise op.fail("'custom-call' takes to_apply= or called_computations=, not both", attribute="to_apply")
    _check_aliasing(op, result)
    return result


# --------------------------------------------------------------------------- linear algebra


@_rule("fft")
def _fft(op: _Op) -> Shape:
    operand = op.array(0)
    kind = op.attr("fft_type")
    lengths = op.int_list("fft_length")
    rank = len(lengths)
    if not 1 <= rank <= 3:
        raise op.fail(f"fft_length={_list(lengths)} must have 1 to 3 entries", attribute="fft_length")
    if operand.rank < rank:
        raise op.fail(f"an fft over {rank} dimensions needs an operand of rank >= {rank}, got {fmt(operand)}",
                      operand=0)
    inner = operand.dims[operand.rank - rank:]
    t = operand.element_type
    if kind in ("FFT", "IFFT"):
        if not t.is_complex:
            raise op.fail(f"{kind} needs a complex operand, got {fmt(operand)}", operand=0)
        return operand
    if kind == "RFFT":
        if t.name not in ("f32", "f64"):
            raise op.fail(f"RFFT needs an f32 or f64 operand, got {fmt(operand)}", operand=0)
        if tuple(inner) != lengths:
            raise op.fail(f"RFFT needs the innermost dimensions of {fmt(operand)} to equal fft_length="
                          f"{_list(lengths)}", attribute="fft_length")
        dims = list(operand.dims)
        if lengths[-1] != 0:
            dims[-1] = lengths[-1] // 2 + 1
        return _array(complex_type_of(t), dims)
    if not t.is_complex:
        raise op.fail(f"IRFFT needs a complex operand, got {fmt(operand)}", operand=0)
    if tuple(inner[:-1]) != lengths[:-1]:
        raise op.fail(f"IRFFT needs the innermost dimensions of {fmt(operand)} but the last to equal "
                      f"{_list(lengths[:-1])}", attribute="fft_length")
    last = operand.dims[-1]
    if (last != 0 or lengths[-1] != 0) and last != lengths[-1] // 2 + 1:
        raise op.fail(f"IRFFT with fft_length={_list(lengths)} needs the last dimension of the operand to be "
                      f"{lengths[-1] // 2 + 1}, but the operand is {fmt(operand)}", attribute="fft_length")
    return _array(real_type_of(t), operand.dims[:-1] + (lengths[-1],))


def _square_matrices(op: _Op, i: int, role: str) -> Shape:
    shape = op.types(i, ("float", "complex"), role)
    if shape.rank < 2:
        raise op.fail(f"operand {i} ({role}) of '{op.opcode}' must have rank >= 2, got {fmt(shape)}", operand=i)
    if shape.dims[-1] != shape.dims[-2]:
        raise op.fail(f"the two minor dimensions of operand {i} ({role}) of '{op.opcode}' must be equal (square "
                      f"matrices), got {fmt(shape)}", operand=i)
    return shape


@_rule("cholesky")
def _cholesky(op: _Op) -> Shape:
    return _square_matrices(op, 0, "a")


@_rule("triangular-solve")
def _triangular_solve(op: _Op) -> Shape:
    a = _square_matrices(op, 0, "a")
    b = op.types(1, ("float", "complex"), "b")
    op.same_type(0, 1, ("a", "b"))
    if b.rank != a.rank:
        raise op.fail(f"'triangular-solve' needs a and b of equal rank, got {fmt(a)} and {fmt(b)}", operand=1)
    left = bool(op.attr("left_side"))
    shared = b.dims[-2] if left else b.dims[-1]
    if shared != a.dims[-1]:
        which = "second-to-last" if left else "last"
        raise op.fail(f"with left_side={'true' if left else 'false'} the {which} dimension of b {fmt(b)} must equal "
                      f"the size {a.dims[-1]} of a {fmt(a)}", operand=1)
    if a.dims[:-2] != b.dims[:-2]:
        raise op.fail(f"the batch dimensions of a {fmt(a)} and b {fmt(b)} must be equal", operand=1)
    if op.attr("transpose_a") not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise op.fail("'triangular-solve' needs transpose_a=NO_TRANSPOSE, TRANSPOSE or ADJOINT",
                      attribute="transpose_a")
    return b


def _feature_count(op: _Op, operand: Shape) -> int:
    index = op.int_attr("feature_index")
    if not 0 <= index < operand.rank:
        raise op.fail(f"feature_index={index} is out of range for the operand {fmt(operand)}",
                      attribute="feature_index")
    return operand.dims[index]


def _feature_vectors(op: _Op, operands: Sequence[tuple[int, str]], features: int) -> None:
    for i, role in operands:
        shape = op.array(i, role)
        op.same_type(0, i, ("operand", role))
        if shape.dims != (features,):
            raise op.fail(f"operand {i} ({role}) of '{op.opcode}' must be a vector of the {features} features, "
                          f"{fmt(_array(shape.element_type, (features,)))}, but it is {fmt(shape)}", operand=i)


@_rule("batch-norm-training")
def _batch_norm_training(op: _Op) -> Shape:
    operand = op.types(0, ("float",), "operand")
    features = _feature_count(op, operand)
    _feature_vectors(op, ((1, "scale"), (2, "offset")), features)
    vector = _array(operand.element_type, (features,))
    return _tuple([operand, vector, vector])


@_rule("batch-norm-inference")
def _batch_norm_inference(op: _Op) -> Shape:
    operand = op.types(0, ("float",), "operand")
    features = _feature_count(op, operand)
    _feature_vectors(op, ((1, "scale"), (2, "offset"), (3, "mean"), (4, "variance")), features)
    return operand


@_rule("batch-norm-grad")
def _batch_norm_grad(op: _Op) -> Shape:
    operand = op.types(0, ("float",), "operand")
    features = _feature_count(op, operand)
    _feature_vectors(op, ((1, "scale"), (2, "mean"), (3, "variance")), features)
    grad = op.array(4, "grad_output")
    op.same_type(0, 4, ("operand", "grad_output"))
    if grad.dims != operand.dims:
        raise op.fail(f"grad_output {fmt(grad)} of 'batch-norm-grad' must have the operand's dimensions "
                      f"{fmt(operand)}", operand=4)
    vector = _array(operand.element_type, (features,))
    return _tuple([operand, vector, vector])


# --------------------------------------------------------------------------- side effects


@_rule("rng")
def _rng(op: _Op) -> Shape:
    op.need_operands(2, "two scalar parameters of the distribution")
    result = op.written_array()
    op.scalar(0)
    op.scalar(1)
    op.same_type(0, 1)
    t = op.shapes[0].element_type
    if result.element_type is not t:
        raise op.fail(f"'rng' produces elements of its parameters' type {t}, but is written as {fmt(result)}")
    distribution = op.attr("distribution")
    if distribution == "rng_normal" and not t.is_float:
        raise op.fail(f"rng_normal needs floating-point parameters, got {t}", operand=0)
    if distribution == "rng_uniform" and not (t.is_float or t.is_integral or t.is_pred):
        raise op.fail(f"rng_uniform needs floating-point, integer or pred parameters, got {t}", operand=0)
    return result


@_rule("rng-bit-generator")
def _rng_bit_generator(op: _Op) -> Shape:
    state = op.array(0, "state")
    result = op.need_written()
    if result.is_tuple:
        if len(result.tuple_shapes) != 2:
            raise op.fail(f"'rng-bit-generator' returns (new state, random bits), but is written as {fmt(result)}")
        if not compatible(result.tuple_shapes[0], state):
            raise op.fail(f"the new state {fmt(result.tuple_shapes[0])} of 'rng-bit-generator' must have the shape "
                          f"of the state operand {fmt(state)}", operand=0)
    return result


@_rule("rng-get-and-update-state")
def _rng_get_and_update_state(op: _Op) -> Shape:
    return _array(U64, (2,))


@_rule("infeed")
def _infeed(op: _Op) -> Shape:
    op.token(0)
    result = op.need_written()
    if not (result.is_tuple and len(result.tuple_shapes) == 2 and result.tuple_shapes[1].is_token):
        raise op.fail(f"'infeed' returns (data, token[]), but is written as {fmt(result)}")
    return result


@_rule("outfeed")
def _outfeed(op: _Op) -> Shape:
    op.token(1)
    declared = op.inst.attrs.get("outfeed_shape")
    if declared is not None and not compatible(declared, op.shapes[0]):
        raise op.fail(f"outfeed_shape={fmt(declared)} must be the shape of the data operand {fmt(op.shapes[0])}",
                      attribute="outfeed_shape", operand=0)
    return Shape.token()


@_rule("send")
def _send(op: _Op) -> Shape:
    op.token(1)
    return _tuple([op.shapes[0], _scalar(U32), Shape.token()])


@_rule("send-done")
def _send_done(op: _Op) -> Shape:
    return Shape.token()


@_rule("recv")
def _recv(op: _Op) -> Shape:
    op.token(0)
    result = op.need_written()
    if not (result.is_tuple and len(result.tuple_shapes) == 3):
        raise op.fail(f"'recv' returns (data, u32[], token[]), but is written as {fmt(result)}")
    return _tuple([result.tuple_shapes[0], _scalar(U32), Shape.token()])


@_rule("recv-done")
def _recv_done(op: _Op) -> Shape:
    context = op.shapes[0]
    if not (context.is_tuple and context.tuple_shapes):
        raise op.fail(f"operand 0 of 'recv-done' must be the (data, u32[], token[]) context of a recv, but it is "
                      f"{fmt(context)}", operand=0)
    return _tuple([context.tuple_shapes[0], Shape.token()])


@_rule("after-all")
def _after_all(op: _Op) -> Shape:
    return Shape.token()


@_rule("add-dependency")
def _add_dependency(op: _Op) -> Shape:
    op.token(1)
    return op.shapes[0]


# --------------------------------------------------------------------------- collectives


def _group_mode(op: _Op, has_global_ids: bool) -> str:
    channel = op.inst.attrs.get("channel_id") is not None
    global_ids = bool(op.inst.attrs.get("use_global_device_ids")) if has_global_ids else None
    if global_ids and not channel:
        raise op.fail("use_global_device_ids=true requires a channel_id=", attribute="use_global_device_ids")
    if not channel:
        return "replica"
    if global_ids is None:
        return "partition"
    return "flattened" if global_ids else "replica-and-partition"


def _groups(op: _Op, mode: str, uniform: bool = True) -> tuple[tuple[int, ...], ...]:
    """Replica groups after XLA's checks (CheckReplicaGroups)."""
    value = op.inst.attrs.get("replica_groups")
    groups = tuple(getattr(value, "groups", ()) or ())
    where = {"attribute": "replica_groups"}
    if not groups:
        if mode == "flattened":
            raise op.fail("replica_groups must be given with use_global_device_ids=true", **where)
        return groups
    seen: set[int] = set()
    for g in groups:
        if not g:
            raise op.fail("replica_groups must not contain an empty group", **where)
        for i in g:
            if i in seen:
                raise op.fail(f"replica_groups names device {i} more than once", **where)
            seen.add(i)
    missing = [i for i in range(len(seen)) if i not in seen]
    if missing:
        raise op.fail(f"replica_groups must name the devices 0..{len(seen) - 1} exactly once, but {missing[0]} is "
                      f"missing", **where)
    replicas, partitions = _device_counts(op)
    expected = {"replica": replicas, "replica-and-partition": replicas, "partition": partitions,
                "flattened": replicas * partitions}[mode]
    if expected != 1 and len(seen) != expected:
        raise op.fail(f"replica_groups name {len(seen)} devices but the module runs {expected} "
                      f"{'partitions' if mode == 'partition' else 'replicas' if mode != 'flattened' else 'devices'}",
                      **where)
    if uniform and any(len(g) != len(groups[0]) for g in groups):
        raise op.fail(f"the replica groups of '{op.opcode}' must all have the same size", **where)
    return groups


def _device_counts(op: _Op) -> tuple[int, int]:
    config = op.config()
    replicas = getattr(config, "replica_count", 1) or 1
    partitions = getattr(config, "num_partitions", 1) or 1
    return replicas, partitions


def _group_size(op: _Op, mode: str, groups) -> int:
    """Participants per group (XLA GetSubgroupSize); 1 when the module does not say."""
    replicas, partitions = _device_counts(op)
    if mode == "partition":
        return len(groups[0]) if groups else partitions
    size = len(groups[0]) if groups else replicas
    return size * partitions if mode == "replica-and-partition" else size


def _collective_arrays(op: _Op) -> list[Shape]:
    if op.n < 1:
        raise op.fail(f"'{op.opcode}' needs at least one operand")
    return [op.array(i) for i in range(op.n)]


def _all_gather_shape(op: _Op, outputs: Optional[list[Shape]]) -> Shape:
    """Each operand with dimension d multiplied by the shard count (the group size; when the
    module does not say, the ratio of the written result to the operand, as XLA does)."""
    mode = _group_mode(op, True)
    groups = _groups(op, mode)
    operands = _collective_arrays(op)
    d = op.one_dimension()
    for s in operands:
        _dims_in_range(op, [d], s.rank, "dimensions", f"the operand {fmt(s)}")
    outputs = [o if o.is_array and o.rank == s.rank else None for o, s in zip(outputs, operands)] \
        if outputs is not None else [None] * len(operands)
    shard = _group_size(op, mode, groups)
    if shard == 1 and outputs[0] is not None and operands[0].dims[d]:
        shard = max(1, -(-outputs[0].dims[d] // operands[0].dims[d]))
    shapes = []
    for i, (s, out) in enumerate(zip(operands, outputs)):
        dims = list(s.dims)
        dims[d] *= shard
        if out is not None and out.dims[d] != dims[d]:
            raise op.fail(f"'{op.opcode}' concatenates {_counted(shard, 'shard')} of operand {i} {fmt(s)} along "
                          f"dimension {d}, giving size {dims[d]}, but the result is written as {fmt(out)}", operand=i)
        shapes.append(_array(s.element_type, dims))
    return _one_or_tuple(shapes)


def _outputs_of(shape: Optional[Shape], count: int) -> Optional[list[Shape]]:
    if shape is None:
        return None
    if count == 1:
        return [shape]
    if shape.is_tuple and len(shape.tuple_shapes) == count:
        return list(shape.tuple_shapes)
    return None


@_rule("all-gather")
def _all_gather(op: _Op) -> Shape:
    return _all_gather_shape(op, _outputs_of(op.written, op.n))


@_rule("all-gather-start")
def _all_gather_start(op: _Op) -> Shape:
    written = op.written
    outputs = None
    if written is not None and written.is_tuple and len(written.tuple_shapes) == 2:
        outputs = _outputs_of(written.tuple_shapes[1], op.n)
    gathered = _all_gather_shape(op, outputs)
    return _tuple([_one_or_tuple(op.shapes), gathered])


def _reducer_for_collective(op: _Op) -> None:
    operands = _collective_arrays(op)
    for s in operands:
        check_reducer(op, "to_apply", [_scalar(s.element_type)], [s.element_type], ("operand", "operand"))


@_rule("all-reduce", "all-reduce-start")
def _all_reduce(op: _Op) -> Shape:
    _groups(op, _group_mode(op, True), uniform=False)
    _reducer_for_collective(op)
    return _one_or_tuple(op.shapes)


@_rule("reduce-scatter")
def _reduce_scatter(op: _Op) -> Shape:
    mode = _group_mode(op, True)
    groups = _groups(op, mode)
    operands = _collective_arrays(op)
    d = op.one_dimension()
    for s in operands:
        _dims_in_range(op, [d], s.rank, "dimensions", f"the operand {fmt(s)}")
    shard = _group_size(op, mode, groups)
    outputs = _outputs_of(op.written, op.n)
    if shard == 1 and outputs and outputs[0].is_array and outputs[0].rank > d and outputs[0].dims[d]:
        shard = max(1, -(-operands[0].dims[d] // outputs[0].dims[d]))
    _reducer_for_collective(op)
    shapes = []
    for i, s in enumerate(operands):
        if s.dims[d] % shard:
            raise op.fail(f"'reduce-scatter' splits dimension {d} of operand {i} {fmt(s)} into "
                          f"{_counted(shard, 'shard')}, but {s.dims[d]} is not divisible by {shard}", operand=i)
        dims = list(s.dims)
        dims[d] //= shard
        shapes.append(_array(s.element_type, dims))
    return _one_or_tuple(shapes)


@_rule("all-to-all")
def _all_to_all(op: _Op) -> Shape:
    mode = _group_mode(op, False)
    groups = _groups(op, mode)
    operands = _collective_arrays(op)
    split = _group_size(op, mode, groups)
    if op.has("dimensions"):
        d = op.one_dimension()
        if op.n != 1:
            raise op.fail(f"'all-to-all' with dimensions= takes one operand, got {op.n}", operand=1)
        _dims_in_range(op, [d], operands[0].rank, "dimensions", f"the operand {fmt(operands[0])}")
        if operands[0].dims[d] % split:
            raise op.fail(f"'all-to-all' splits dimension {d} of {fmt(operands[0])} into {_counted(split, 'block')}, "
                          f"but {operands[0].dims[d]} is not divisible by {split}", operand=0)
        return operands[0]
    for i, s in enumerate(operands):
        if not compatible(s, operands[0]):
            raise op.fail(f"the operands of tuple 'all-to-all' must have equal shapes: operand 0 is "
                          f"{fmt(operands[0])} but operand {i} is {fmt(s)}", operand=i)
    if split != 1 and op.n != split:
        raise op.fail(f"tuple 'all-to-all' needs one operand per group member ({split}), got {op.n}")
    return _tuple(operands)


@_rule("ragged-all-to-all")
def _ragged_all_to_all(op: _Op) -> Shape:
    _groups(op, _group_mode(op, False))
    data = op.array(0, "input")
    output = op.array(1, "output")
    op.same_type(0, 1, ("input", "output"))
    if data.rank != output.rank or data.dims[1:] != output.dims[1:]:
        raise op.fail(f"the input {fmt(data)} and output {fmt(output)} of 'ragged-all-to-all' must agree in every "
                      f"dimension but the first", operand=1)
    for i in range(2, 6):
        meta = op.types(i, ("int",), "offsets/sizes")
        if meta.rank not in (1, 2):
            raise op.fail(f"operand {i} (offsets/sizes) of 'ragged-all-to-all' must have rank 1 or 2, got "
                          f"{fmt(meta)}", operand=i)
        if not compatible(meta, op.shapes[2]):
            raise op.fail(f"the offsets/sizes operands of 'ragged-all-to-all' must have equal shapes: operand 2 is "
                          f"{fmt(op.shapes[2])} but operand {i} is {fmt(meta)}", operand=i)
    return output


@_rule("collective-broadcast")
def _collective_broadcast(op: _Op) -> Shape:
    _groups(op, _group_mode(op, False))
    return _one_or_tuple(_collective_arrays(op))


def _source_target_pairs(op: _Op, allowed_repeats: int) -> None:
    pairs = op.attr("source_target_pairs")
    replicas, partitions = _device_counts(op)
    limit = partitions if op.inst.attrs.get("channel_id") is not None else replicas
    sources: dict[int, int] = {}
    targets: dict[int, int] = {}
    for pair in pairs:
        if len(pair) != 2:
            raise op.fail(f"source_target_pairs entries are {{source,target}} pairs, got {_list(pair)}",
                          attribute="source_target_pairs")
        for role, device, seen in (("source", pair[0], sources), ("target", pair[1], targets)):
            if device < 0 or (limit != 1 and device >= limit):
                raise op.fail(f"{role} {device} in source_target_pairs is not a valid device id",
                              attribute="source_target_pairs")
            seen[device] = seen.get(device, 0) + 1
            if seen[device] > allowed_repeats:
                raise op.fail(f"{role} {device} appears more than once in source_target_pairs",
                              attribute="source_target_pairs")


def _permuted(op: _Op) -> tuple[Shape, Shape]:
    """(input, output buffer) shapes of a collective-permute (plain, combined or in-place form)."""
    if op.n == 4 and op.shapes[2].is_tuple:
        _source_target_pairs(op, max(1, len(op.shapes[2].tuple_shapes)))
        return op.shapes[0], op.shapes[1]
    _source_target_pairs(op, 1)
    shapes = _collective_arrays(op)
    combined = _one_or_tuple(shapes)
    return combined, combined


@_rule("collective-permute")
def _collective_permute(op: _Op) -> Shape:
    return _permuted(op)[1]


@_rule("collective-permute-start")
def _collective_permute_start(op: _Op) -> Shape:
    source, target = _permuted(op)
    context = [_scalar(U32), _scalar(U32)]
    written = op.written
    if written is not None and written.is_tuple and len(written.tuple_shapes) > 2:
        context = list(written.tuple_shapes[2:])
    return _tuple([source, target] + context)


def _done_of_pair(op: _Op, index: int, what: str) -> Shape:
    start = op.shapes[0]
    if not (start.is_tuple and len(start.tuple_shapes) > index):
        raise op.fail(f"operand 0 of '{op.opcode}' must be the tuple produced by {what}, but it is {fmt(start)}",
                      operand=0)
    return start.tuple_shapes[index]


@_rule("all-gather-done")
def _all_gather_done(op: _Op) -> Shape:
    return _done_of_pair(op, 1, "all-gather-start")


@_rule("collective-permute-done")
def _collective_permute_done(op: _Op) -> Shape:
    return _done_of_pair(op, 1, "collective-permute-start")


@_rule("all-reduce-done")
def _all_reduce_done(op: _Op) -> Shape:
    return op.shapes[0]


@_rule("collective-reduce")
def _collective_reduce(op: _Op) -> Shape:
    _collective_arrays(op)
    return op.need_written()


# --------------------------------------------------------------------------- asynchronous ops


def _async_computation(op: _Op):
    comp = op.inst.attrs.get("calls")
    if comp is None and op.opcode != Op.ASYNC_START and op.n:
        comp = _started_computation(op.inst.operands[0])
    if comp is None:
        raise op.fail(f"'{op.opcode}' requires attribute 'calls='", attribute="calls")
    try:
        params, result = signature(comp)
    except ShapeError as exc:
        exc.attribute = "calls"
        raise
    return comp, params, result


def _started_computation(inst):
    """The computation an async chain runs: from the operand back through async-update to the start."""
    seen = 0
    while inst is not None and seen < 1000:
        if inst.attrs.get("calls") is not None:
            return inst.attrs["calls"]
        if inst.opcode != Op.ASYNC_UPDATE or not inst.operands:
            return None
        inst, seen = inst.operands[0], seen + 1
    return None


def _check_async_shape(op: _Op, shape: Shape, comp, params: list[Shape], result: Shape, what: str) -> None:
    if not (shape.is_tuple and len(shape.tuple_shapes) >= 2):
        raise op.fail(f"{what} must be a tuple ((operands), result, context...) with at least 2 elements, but it is "
                      f"{fmt(shape)}")
    if not compatible(shape.tuple_shapes[0], _tuple(params)):
        raise op.fail(f"element 0 of {what} is {fmt(shape.tuple_shapes[0])} but the parameters of %{comp.name} are "
                      f"{fmt(_tuple(params))}", attribute="calls", related=comp)
    if not compatible(shape.tuple_shapes[1], result):
        raise op.fail(f"element 1 of {what} is {fmt(shape.tuple_shapes[1])} but %{comp.name} returns {fmt(result)}",
                      attribute="calls", **_root_note(comp))


@_rule("async-start")
def _async_start(op: _Op) -> Shape:
    comp, params, result = _async_computation(op)
    _need_params(op, comp, params, op.n, "calls", f"'async-start' passes {_counted(op.n, 'operand')}")
    _check_operands_match_parameters(op, comp, params, "the async")
    if op.written is None:
        return _tuple([_tuple(params), result])
    _check_async_shape(op, op.written, comp, params, result, "the result of 'async-start'")
    return op.written


def _async_operand(op: _Op, comp) -> None:
    source = op.inst.operands[0]
    if source.opcode not in ("async-start", "async-update"):
        raise op.fail(f"operand 0 of '{op.opcode}' must be an async-start or async-update, but it is a "
                      f"'{source.opcode}'", operand=0)
    source_comp = source.attrs.get("calls")
    if source_comp is not None and source_comp is not comp:
        raise op.fail(f"'{op.opcode}' calls %{comp.name} but its operand runs %{source_comp.name}", attribute="calls",
                      operand=0)


@_rule("async-update")
def _async_update(op: _Op) -> Shape:
    comp, params, result = _async_computation(op)
    _async_operand(op, comp)
    _check_async_shape(op, op.shapes[0], comp, params, result, "the operand of 'async-update'")
    return op.shapes[0]


@_rule("async-done")
def _async_done(op: _Op) -> Shape:
    comp, params, result = _async_computation(op)
    _async_operand(op, comp)
    _check_async_shape(op, op.shapes[0], comp, params, result, "the operand of 'async-done'")
    return op.shapes[0].tuple_shapes[1]


@_rule("copy-start")
def _copy_start(op: _Op) -> Shape:
    operand = op.shapes[0]
    written = op.written
    if written is not None and written.is_tuple and len(written.tuple_shapes) == 3:
        # Destination and source may differ in layout / memory space only.
        return _tuple([operand, operand, written.tuple_shapes[2]])
    return _tuple([operand, operand, _scalar(U32)])


@_rule("copy-done")
def _copy_done(op: _Op) -> Shape:
    context = op.shapes[0]
    if not (context.is_tuple and len(context.tuple_shapes) >= 2):
        raise op.fail(f"operand 0 of 'copy-done' must be the (destination, source, context) tuple of a copy-start, "
                      f"but it is {fmt(context)}", operand=0)
    dest, src = context.tuple_shapes[0], context.tuple_shapes[1]
    if not compatible(dest, src):
        raise op.fail(f"the destination {fmt(dest)} and source {fmt(src)} of the copy must have the same shape",
                      operand=0)
    return dest
