"""What every shape rule uses: the instruction view, ShapeError, shape helpers, the registry.

A shape rule takes an `OpView` (the instruction's operand shapes, attributes and written
shape) and returns the result shape or raises `ShapeError`. Rules live in the modules named
after their op family and register themselves in `SHAPE_RULES`; `infer_shape` dispatches.
"""
from __future__ import annotations

from typing import Optional, Sequence

from ..attributes import format_int_list
from ..opcodes import OPCODES, Trait, TypeClass, ops_with
from ..registry import OpRegistry
from ..shapes import PrimitiveType, Shape, TypeKind, format_shape


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


def array_shape(element_type: PrimitiveType, dims, dynamic=None) -> Shape:
    dims = tuple(dims)
    dyn = tuple(dynamic) if dynamic is not None else (False,) * len(dims)
    return Shape(element_type, dims, dyn, None, None)


def scalar_shape(element_type: PrimitiveType) -> Shape:
    return array_shape(element_type, ())


def retyped(shape: Shape, element_type: PrimitiveType) -> Shape:
    return Shape(element_type, shape.dims, shape.dynamic, None, None)


def one_or_tuple(shapes: list[Shape]) -> Shape:
    return shapes[0] if len(shapes) == 1 else Shape.tuple_of(shapes)


def element_count(dims) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


def is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def counted(n: int, noun: str) -> str:
    """'1 operand', '2 operands'."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def subshape(shape: Optional[Shape], index) -> Optional[Shape]:
    """The part of `shape` at the tuple index `index`; None when the index does not lead anywhere."""
    for i in index:
        if shape is None or not shape.is_tuple or not 0 <= i < len(shape.tuple_shapes):
            return None
        shape = shape.tuple_shapes[i]
    return shape


# --------------------------------------------------------------------------- element type classes

_TYPE_CLASS = {TypeKind.PRED: TypeClass.PRED, TypeKind.SIGNED: TypeClass.SINT, TypeKind.UNSIGNED: TypeClass.UINT,
               TypeKind.FLOAT: TypeClass.FLOAT, TypeKind.COMPLEX: TypeClass.COMPLEX}


_IN_CLASS: dict[tuple, bool] = {}  # (kind, classes) -> answer: combining enum flags is slow


def in_class(element_type: PrimitiveType, classes: TypeClass) -> bool:
    """Whether `element_type` is one of `classes` (tokens and opaque types are in none)."""
    key = (element_type.kind, classes)
    answer = _IN_CLASS.get(key)
    if answer is None:
        cls = _TYPE_CLASS.get(element_type.kind)
        answer = _IN_CLASS[key] = cls is not None and bool(cls & classes)
    return answer


class ShapeTokens:
    """Equal shapes get equal small integers, for keys of memo tables: a shape is hashed once per
    object rather than once per use (hashing a shape hashes every field of it and its layout)."""

    def __init__(self):
        self._by_object: dict[int, tuple] = {}   # id(shape) -> (shape, token): the shape stays alive
        self._by_value: dict = {}

    def __call__(self, shape) -> int:
        known = self._by_object.get(id(shape))
        if known is None:
            known = self._by_object[id(shape)] = (shape, self._by_value.setdefault(shape, len(self._by_value)))
        return known[1]


# --------------------------------------------------------------------------- the instruction view


_ASYNC_WRAPPERS = ops_with(Trait.ASYNC_WRAPPER)


def display_opcode(inst) -> str:
    """The opcode as written: async sugar (custom-call-start ...) keeps the wrapped op's name."""
    if inst.opcode in _ASYNC_WRAPPERS:
        comp = inst.attrs.get("calls")
        root = getattr(comp, "root", None)
        if getattr(comp, "async_wrapped", False) and root is not None:
            return root.opcode + inst.opcode[len("async"):]
    return inst.opcode


class OpView:
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
            raise self.fail(f"'{self.opcode}' expects {counted(count, 'operand')}{detail}, got {self.n}")

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

    def types(self, i: int, classes: TypeClass, role: str = "") -> Shape:
        """Operand i, an array whose element type is one of `classes`."""
        shape = self.array(i, role)
        if not in_class(shape.element_type, classes):
            role = f" ({role})" if role else ""
            raise self.fail(f"'{self.opcode}' needs {classes.words()} elements, but operand {i}{role} is "
                            f"{fmt(shape)}", operand=i)
        return shape

    def equal_dims(self, shapes: list[Shape], noun: str = "operands") -> None:
        """`shapes` (operands 0, 1, ...) all have the dimensions of the first."""
        for i in range(1, len(shapes)):
            if shapes[i].dims != shapes[0].dims:
                raise self.fail(f"the {noun} of '{self.opcode}' must have equal dimensions: operand 0 is "
                                f"{fmt(shapes[0])} but operand {i} is {fmt(shapes[i])}", operand=i)

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
        if not is_int(value):
            raise self.fail(f"attribute '{name}' of '{self.opcode}' must be an integer", attribute=name)
        return value

    def int_list(self, name: str) -> tuple[int, ...]:
        value = self.attr(name)
        if value is None:
            return ()
        if not isinstance(value, (tuple, list)) or not all(is_int(v) for v in value):
            raise self.fail(f"attribute '{name}' of '{self.opcode}' must be a list of integers", attribute=name)
        return tuple(value)

    def one_dimension(self, name: str = "dimensions") -> int:
        dims = self.int_list(name)
        if len(dims) != 1:
            raise self.fail(f"'{self.opcode}' needs exactly one dimension in {name}=, got {format_int_list(dims)}",
                            attribute=name)
        return dims[0]

    def one_dimension_of(self, shapes, what: str = "the operand") -> int:
        """The single entry of dimensions=, which must be a dimension of each of `shapes`."""
        d = self.one_dimension()
        for shape in shapes:
            dims_in_range(self, [d], shape.rank, "dimensions", f"{what} {fmt(shape)}")
        return d

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


def dims_in_range(op: OpView, dims: Sequence[int], rank: int, attribute: str, what: str, operand=None) -> None:
    for d in dims:
        if not 0 <= d < rank:
            raise op.fail(f"{attribute}={format_int_list(dims)}: dimension {d} is out of range for {what} "
                          f"(valid: 0..{rank - 1})" if rank else
                          f"{attribute}={format_int_list(dims)}: dimension {d} is out of range for {what}, which has "
                          f"rank 0",
                          attribute=attribute, operand=operand)


def dims_unique(op: OpView, dims: Sequence[int], attribute: str) -> None:
    seen = set()
    for d in dims:
        if d in seen:
            raise op.fail(f"{attribute}={format_int_list(dims)}: dimension {d} appears more than once",
                          attribute=attribute)
        seen.add(d)


def dims_sorted(op: OpView, dims: Sequence[int], attribute: str) -> None:
    if list(dims) != sorted(dims):
        raise op.fail(f"{attribute}={format_int_list(dims)} must be sorted in increasing order", attribute=attribute)


# --------------------------------------------------------------------------- rule registry

SHAPE_RULES = OpRegistry("shape rule")


def infer_shape(inst) -> Shape:
    """The shape `inst` must have; ShapeError (a ValueError) when its operands, attributes or
    called computations are inconsistent. Missing layouts are filled with default ones."""
    if inst.opcode not in OPCODES:
        raise ShapeError(f"unknown opcode '{inst.opcode}'")
    for i, operand in enumerate(inst.operands):
        if operand.shape is None:
            raise ShapeError(f"operand {i} (%{operand.name}) of '{inst.opcode}' has no shape", operand=i,
                             secondary=True)
    op = OpView(inst)
    _check_arity(op)
    rule = SHAPE_RULES.get(inst.opcode)
    if rule is None:
        raise ShapeError(f"no shape rule for opcode '{inst.opcode}'")
    return rule(op).with_default_layouts()


def _check_arity(op: OpView) -> None:
    info = op.info
    if info.arity is not None and op.n != info.arity:
        raise ShapeError(f"'{op.opcode}' expects {counted(info.arity, 'operand')}, got {op.n}",
                         operand=info.arity if op.n > info.arity else None)
    if info.arity is None and op.n < info.min_arity:
        raise ShapeError(f"'{op.opcode}' expects at least {counted(info.min_arity, 'operand')}, got {op.n}")
