"""The opcode table: every HLO opcode, its arity, attributes and category.

This is the single place that knows what an opcode is. The parser converts
attribute values with it, the printer prints attributes in its order and omits
defaults with it, the checker, interpreter, passes and code generator dispatch
on `OpInfo.category` and `OpInfo.name`. Adding an opcode starts here.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, Optional


class Category(enum.Enum):
    LEAF = "leaf"                  # parameter, constant, iota, replica-id ...
    ELEMENTWISE = "elementwise"    # same-shape element-by-element ops
    DATA_MOVEMENT = "data-movement"
    DOT_CONV = "dot-conv"
    REDUCTION = "reduction"        # reduce, reduce-window, select-and-scatter
    INDEXING = "indexing"          # gather, scatter, dynamic slices
    CONTROL = "control"            # call, while, conditional, fusion, map, sort
    LINALG = "linalg"
    COLLECTIVE = "collective"
    ASYNC = "async"
    SIDE_EFFECT = "side-effect"    # rng, infeed/outfeed, send/recv, tokens
    CUSTOM = "custom"


class AttrKind(enum.Enum):
    BOOL = "bool"
    INT = "int"
    FLOAT = "float"
    STRING = "string"
    INT_LIST = "int list"                  # {0,1}
    INT_LIST_LIST = "list of int lists"    # {{0,1},{1,0}}
    COMPUTATION = "computation"            # %name
    COMPUTATION_LIST = "computation list"  # {%a, %b}
    WINDOW = "window"                      # {size=3x3 stride=2x2 pad=1_1x1_1}
    DIM_LABELS = "dim labels"              # b01f_01io->b01f
    PADDING = "padding"                    # 0_0x1_2_1
    SLICE = "slice ranges"                 # {[0:2], [1:9:2]}
    PRECISION_LIST = "precision list"      # {default, highest}
    SHAPE = "shape"
    SHAPE_LIST = "shape list"
    ALIASING = "aliasing"                  # {{0}: (1, {})}
    REPLICA_GROUPS = "replica groups"      # {{0,1},{2,3}} or [2,2]<=[4]
    ENUM = "enum"
    LITERAL = "literal"                    # shape literal
    GENERIC = "value"                      # kept as parsed, printed back as is


class Trait(enum.Flag):
    """Properties of opcodes that passes and backends ask about (each group is listed once,
    after the table, in `_GROUPS`)."""
    NONE = 0
    COMMUTATIVE = enum.auto()          # op(a, b) == op(b, a)
    ASSOCIATIVE = enum.auto()          # a reducer XLA may reassociate: add, multiply, max, min, and, or, xor
    IDEMPOTENT = enum.auto()           # op(a, a) == a
    ZERO_IDENTITY = enum.auto()        # op(0, a) == op(a, 0) == a: 0 is the reducer's identity
    PASS_THROUGH = enum.auto()         # the value is operand 0, unchanged (copy, opt-barrier ...)
    RUN_INDEPENDENT_LEAF = enum.auto()  # a leaf whose value is the same in every run (constant, iota, ids)
    SCALAR_IDENTITY = enum.auto()      # the identity on a rank-0 value (broadcast, reshape, transpose ...)
    SAME_VALUE_IF_SAME_SHAPE = enum.auto()  # the identity when result and operand shapes are equal
    REARRANGE = enum.auto()            # moves elements without computing (reshape, transpose)
    CHEAP = enum.auto()                # a non-elementwise op XLA's IsExpensive calls cheap
    EXPENSIVE = enum.auto()            # an elementwise op XLA:CPU calls expensive (besides transcendentals)
    EXPENSIVE_IF_COMPLEX = enum.auto()  # cheap for real numbers, expensive for complex ones
    DIVISION = enum.auto()             # divide and remainder (expensive for floats; integer corner cases)
    LOOP_FUSIBLE = enum.auto()         # a non-elementwise op emitted element by element in loop fusions
    OUTPUT_FUSION_HERO = enum.auto()   # dot and convolution: elementwise consumers fuse into their epilogue
    REDUCTION_FUSION_HERO = enum.auto()  # reduce and reduce-window: the core of an input fusion
    READS_OPERAND_ELEMENTS_REPEATEDLY = enum.auto()  # an expensive producer must not be fused into it
    RUNS_COMPUTATIONS_AS_CODE = enum.auto()  # call, while, conditional: callees are ordinary code
    NOT_FOLDABLE = enum.auto()         # constant folding leaves it alone even with constant operands
    UNFOLDABLE_INSIDE = enum.auto()    # a computation containing it is never folded
    NOT_WORTH_HOISTING_ALONE = enum.auto()  # loop-invariant code motion moves it only with its users
    UPDATES_IN_PLACE = enum.auto()     # the result may share operand 0's buffer (dynamic-update-slice, scatter)
    CHANNEL = enum.auto()              # send/recv and their done forms: matched by channel_id
    ASYNC_WRAPPER = enum.auto()        # async-start / async-update / async-done
    NO_CODE = enum.auto()              # a buffer alias, no code of its own (parameter, constant, tuple, gte)
    SIDE_EFFECT = enum.auto()          # from the table's side_effect flag: never removed, never reordered
    LITERAL_OPERAND = enum.auto()      # its parentheses hold a number or a literal, not operands
    IEEE_BASIC = enum.auto()           # on floats one IEEE operation: a NaN result is a quieted operand NaN or the default one


class TypeClass(enum.Flag):
    """Classes of element types, for the element types an elementwise op accepts."""
    PRED = enum.auto()
    SINT = enum.auto()
    UINT = enum.auto()
    FLOAT = enum.auto()
    COMPLEX = enum.auto()
    INT = SINT | UINT
    NUMBER = INT | FLOAT | COMPLEX
    ANY = PRED | NUMBER
    INEXACT = FLOAT | COMPLEX

    def words(self) -> str:
        """'floating-point or complex': how a message names the class."""
        names = [_TYPE_CLASS_WORDS[c] for c in _TYPE_CLASS_ORDER if c in self]
        if TypeClass.INT in self:
            names = [n for n in names if "integer" not in n]
            names.insert(1 if TypeClass.PRED in self else 0, "integer")
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


_TYPE_CLASS_ORDER = (TypeClass.PRED, TypeClass.SINT, TypeClass.UINT, TypeClass.FLOAT, TypeClass.COMPLEX)
_TYPE_CLASS_WORDS = {TypeClass.PRED: "pred", TypeClass.SINT: "signed integer", TypeClass.UINT: "unsigned integer",
                     TypeClass.FLOAT: "floating-point", TypeClass.COMPLEX: "complex"}


class ResultType(enum.Enum):
    """The result element type of an elementwise op, from its operands' type."""
    SAME = "same"            # the operands' type
    PRED = "pred"            # compare, is-finite
    REAL_PART = "real part"  # real, imag, abs: the component type of a complex operand
    WRITTEN = "written"      # convert and friends: the type written in the instruction


@dataclass(frozen=True)
class AttrSpec:
    name: str
    kind: AttrKind
    required: bool = False
    default: Any = None
    enum_values: tuple[str, ...] = ()
    case_insensitive: bool = False
    print_default: bool = False     # printed even when equal to the default

    @property
    def is_computation(self) -> bool:
        return self.kind in (AttrKind.COMPUTATION, AttrKind.COMPUTATION_LIST)


VARIADIC = None


@dataclass(frozen=True)
class OpInfo:
    name: str
    category: Category
    arity: Optional[int]                  # None: variadic
    attrs: tuple[AttrSpec, ...] = ()
    description: str = ""
    shape_required: bool = False          # the result shape cannot be inferred
    min_arity: int = 0
    side_effect: bool = False
    transcendental: bool = False          # accepts result_accuracy=
    traits: "Trait" = None                # filled in from the trait groups below
    operand_types: "TypeClass" = None     # elementwise ops: element types the operands may have
    result_type: "ResultType" = None      # elementwise ops: the result's element type

    @property
    def attr_map(self) -> dict[str, AttrSpec]:
        return _ATTR_MAPS[self.name]

    @property
    def is_elementwise(self) -> bool:
        return self.category is Category.ELEMENTWISE

    def has(self, trait: "Trait") -> bool:
        return bool(self.traits & trait)


# --------------------------------------------------------------------------- attribute helpers

def _a(name, kind, required=False, default=None, **kw) -> AttrSpec:
    return AttrSpec(name, kind, required, default, **kw)


def _enum(name, values, required=False, default=None, case_insensitive=False, print_default=False):
    return AttrSpec(name, AttrKind.ENUM, required, default, tuple(values), case_insensitive, print_default)


PRECISION = _a("operand_precision", AttrKind.PRECISION_LIST)
DOT_ALGORITHMS = (
    "unset", "dot_any_f8_any_f8_f32", "dot_any_f8_any_f8_f32_fast_accum", "dot_f16_f16_f16",
    "dot_f16_f16_f32", "dot_bf16_bf16_bf16", "dot_bf16_bf16_f32", "dot_bf16_bf16_f32_x3",
    "dot_bf16_bf16_f32_x6", "dot_bf16_bf16_f32_x9", "dot_tf32_tf32_f32", "dot_tf32_tf32_f32_x3",
    "dot_f32_f32_f32", "dot_f64_f64_f64")
ALGORITHM = _enum("algorithm", DOT_ALGORITHMS, case_insensitive=True)
DOT_DIMS = (
    _a("lhs_batch_dims", AttrKind.INT_LIST, default=()),
    _a("lhs_contracting_dims", AttrKind.INT_LIST, default=(), print_default=True),
    _a("rhs_batch_dims", AttrKind.INT_LIST, default=()),
    _a("rhs_contracting_dims", AttrKind.INT_LIST, default=(), print_default=True),
)
RESULT_ACCURACY = _a("result_accuracy", AttrKind.GENERIC)
CHANNEL_ID = _a("channel_id", AttrKind.INT)
REPLICA_GROUPS = _a("replica_groups", AttrKind.REPLICA_GROUPS, default=(), print_default=True)
CONSTRAIN_LAYOUT = _a("constrain_layout", AttrKind.BOOL, default=False)
GLOBAL_IDS = _a("use_global_device_ids", AttrKind.BOOL, default=False)
TO_APPLY = _a("to_apply", AttrKind.COMPUTATION, required=True)
DIMENSIONS = _a("dimensions", AttrKind.INT_LIST, required=True, print_default=True)
WINDOW = _a("window", AttrKind.WINDOW)
COLLECTIVE_MODE = _a("mode", AttrKind.GENERIC)
OUTPUT_ALIASING = _a("output_to_operand_aliasing", AttrKind.ALIASING)
IS_HOST_TRANSFER = _a("is_host_transfer", AttrKind.BOOL, default=False)

# --------------------------------------------------------------------------- the table

_OPS: list[OpInfo] = []


def _op(name, category, arity, *attrs, desc="", **kw):
    _OPS.append(OpInfo(name, category, arity, tuple(attrs), desc, **kw))


E, D = Category.ELEMENTWISE, Category.DATA_MOVEMENT

# leaves
_op("parameter", Category.LEAF, 0, desc="An input of the computation, numbered from 0.", shape_required=True)
_op("constant", Category.LEAF, 0, desc="A literal value.", shape_required=True)
_op("iota", Category.LEAF, 0, _a("iota_dimension", AttrKind.INT, required=True),
    desc="Values 0, 1, 2, ... along one dimension.", shape_required=True)
_op("replica-id", Category.LEAF, 0, desc="The id of the executing replica (u32[]).")
_op("partition-id", Category.LEAF, 0, desc="The id of the executing partition (u32[]).")

# elementwise unary
for _name, _desc in [
    ("abs", "Absolute value (complex: magnitude)."), ("ceil", "Round toward +inf."),
    ("floor", "Round toward -inf."), ("count-leading-zeros", "Leading zero bits of an integer."),
    ("popcnt", "Number of set bits of an integer."), ("imag", "Imaginary part of a complex number."),
    ("real", "Real part of a complex number."), ("is-finite", "True where a float is neither inf nor NaN."),
    ("negate", "Negation."), ("not", "Logical or bitwise not."),
    ("round-nearest-afz", "Round to nearest, ties away from zero."),
    ("round-nearest-even", "Round to nearest, ties to even."), ("sign", "Sign: -1, 0 or 1 (NaN stays NaN)."),
    ("copy", "A copy of the operand."), ("bitcast", "Reinterpret the buffer with another shape/layout."),
    ("opt-barrier", "Prevents optimisations across it; returns its operand."),
]:
    _op(_name, E if _name not in ("bitcast", "opt-barrier") else D, 1, desc=_desc,
        shape_required=_name == "bitcast")
for _name, _desc in [
    ("cbrt", "Cube root."), ("cosine", "Cosine."), ("sine", "Sine."), ("tan", "Tangent."),
    ("tanh", "Hyperbolic tangent."), ("exponential", "e raised to the operand."),
    ("exponential-minus-one", "exp(x) - 1, accurate near 0."), ("log", "Natural logarithm."),
    ("log-plus-one", "log(1 + x), accurate near 0."), ("logistic", "1 / (1 + exp(-x))."),
    ("rsqrt", "Reciprocal square root."), ("sqrt", "Square root."), ("erf", "Error function."),
    ("acos", "Arc cosine."), ("acosh", "Inverse hyperbolic cosine."), ("asin", "Arc sine."),
    ("asinh", "Inverse hyperbolic sine."), ("atanh", "Inverse hyperbolic tangent."),
    ("cosh", "Hyperbolic cosine."), ("sinh", "Hyperbolic sine."),
]:
    _op(_name, E, 1, RESULT_ACCURACY, desc=_desc, transcendental=True)
_op("atan", E, 1, desc="Arc tangent.")

# elementwise binary
for _name, _desc in [
    ("add", "Sum."), ("subtract", "Difference."), ("multiply", "Product."), ("divide", "Quotient."),
    ("remainder", "Remainder with the sign of the dividend."), ("power", "lhs raised to rhs."),
    ("atan2", "Arc tangent of lhs/rhs using both signs."), ("complex", "Complex number from real and imaginary parts."),
    ("maximum", "Larger of two values (NaN propagates)."), ("minimum", "Smaller of two values (NaN propagates)."),
    ("and", "Logical or bitwise and."), ("or", "Logical or bitwise or."), ("xor", "Logical or bitwise xor."),
    ("shift-left", "Shift bits left."), ("shift-right-arithmetic", "Shift bits right, copying the sign bit."),
    ("shift-right-logical", "Shift bits right, filling with zeros."),
    ("stochastic-convert", "Convert to a narrower type, rounding with random bits."),
]:
    _op(_name, E, 2, desc=_desc, shape_required=_name == "stochastic-convert")
_op("compare", E, 2,
    _enum("direction", ("EQ", "NE", "GE", "GT", "LE", "LT"), required=True),
    _enum("type", ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED")),
    desc="Elementwise comparison giving pred.")
_op("select", E, 3, desc="Elementwise choice: pred ? on_true : on_false.")
_op("clamp", E, 3, desc="clamp(min, x, max) = min(max(x, min), max).")
_op("convert", E, 1, desc="Convert elements to another type.", shape_required=True)
_op("bitcast-convert", E, 1, desc="Reinterpret the bits of each element as another type.", shape_required=True)
_op("reduce-precision", E, 1, _a("exponent_bits", AttrKind.INT, required=True),
    _a("mantissa_bits", AttrKind.INT, required=True),
    desc="Round floats to a smaller exponent/mantissa format.", shape_required=True)

# data movement
_op("broadcast", D, 1, _a("dimensions", AttrKind.INT_LIST, default=(), print_default=True),
    desc="Copy the operand into a larger shape; dimensions maps operand dims to result dims.", shape_required=True)
_op("reshape", D, 1, _a("inferred_dimension", AttrKind.INT, default=-1),
    desc="Same elements in row-major order, new dimensions.", shape_required=True)
_op("dynamic-reshape", D, VARIADIC, desc="Reshape to runtime sizes.", shape_required=True, min_arity=1)
_op("transpose", D, 1, DIMENSIONS, desc="Permute dimensions: result dim i is operand dim dimensions[i].")
_op("reverse", D, 1, DIMENSIONS, desc="Reverse the order of elements along dimensions.")
_op("slice", D, 1, _a("slice", AttrKind.SLICE, required=True),
    desc="A static strided sub-array.", shape_required=True)
_op("concatenate", D, VARIADIC, DIMENSIONS, desc="Join operands along one dimension.", min_arity=1)
_op("pad", D, 2, _a("padding", AttrKind.PADDING, required=True),
    desc="Pad with a value at the edges (low/high, may be negative) and between elements (interior).")
_op("tuple", D, VARIADIC, desc="Group values into a tuple.")
_op("get-tuple-element", D, 1, _a("index", AttrKind.INT, required=True), desc="One element of a tuple.")

# indexing
_op("dynamic-slice", Category.INDEXING, VARIADIC, _a("dynamic_slice_sizes", AttrKind.INT_LIST, required=True),
    desc="A slice at runtime start indices (clamped into bounds).", shape_required=True, min_arity=2)
_op("dynamic-update-slice", Category.INDEXING, VARIADIC,
    desc="Overwrite a slice at runtime start indices (clamped into bounds).", shape_required=True, min_arity=3)
_op("gather", Category.INDEXING, 2,
    _a("offset_dims", AttrKind.INT_LIST, required=True, print_default=True),
    _a("collapsed_slice_dims", AttrKind.INT_LIST, required=True, print_default=True),
    _a("start_index_map", AttrKind.INT_LIST, required=True, print_default=True),
    _a("operand_batching_dims", AttrKind.INT_LIST, default=()),
    _a("start_indices_batching_dims", AttrKind.INT_LIST, default=()),
    _a("index_vector_dim", AttrKind.INT, required=True, print_default=True),
    _a("slice_sizes", AttrKind.INT_LIST, required=True, print_default=True),
    _a("indices_are_sorted", AttrKind.BOOL, default=False),
    desc="Slices of the operand at positions read from start_indices.")
_op("scatter", Category.INDEXING, VARIADIC,
    _a("update_window_dims", AttrKind.INT_LIST, required=True, print_default=True),
    _a("inserted_window_dims", AttrKind.INT_LIST, required=True, print_default=True),
    _a("scatter_dims_to_operand_dims", AttrKind.INT_LIST, required=True, print_default=True),
    _a("input_batching_dims", AttrKind.INT_LIST, default=()),
    _a("scatter_indices_batching_dims", AttrKind.INT_LIST, default=()),
    _a("index_vector_dim", AttrKind.INT, required=True, print_default=True),
    _a("indices_are_sorted", AttrKind.BOOL, default=False),
    _a("unique_indices", AttrKind.BOOL, default=False),
    TO_APPLY,
    desc="Combine update windows into the operand at positions read from indices.", min_arity=3)

# dot / convolution
_op("dot", Category.DOT_CONV, 2, *DOT_DIMS, PRECISION, ALGORITHM,
    desc="Generalised matrix product with batch and contracting dimensions.")
_op("ragged-dot", Category.DOT_CONV, 3, *DOT_DIMS,
    _a("lhs_ragged_dims", AttrKind.INT_LIST, default=(), print_default=True),
    _a("rhs_group_dims", AttrKind.INT_LIST, default=()), PRECISION,
    desc="Dot whose lhs rows are split into groups, each multiplied by its own rhs.")
_op("scaled-dot", Category.DOT_CONV, 4, *DOT_DIMS, PRECISION, ALGORITHM,
    desc="Dot of block-scaled operands.")
_op("convolution", Category.DOT_CONV, 2, WINDOW, _a("dim_labels", AttrKind.DIM_LABELS, required=True),
    _a("feature_group_count", AttrKind.INT, default=1), _a("batch_group_count", AttrKind.INT, default=1),
    PRECISION, ALGORITHM, _enum("conv_kind", ("fprop", "wgrad", "dgrad", "unset")),
    desc="N-dimensional convolution with strides, padding, dilations and groups.")

# reductions
_op("reduce", Category.REDUCTION, VARIADIC, DIMENSIONS, TO_APPLY,
    desc="Reduce dimensions with a computation (N inputs, N init values).", min_arity=2)
_op("reduce-window", Category.REDUCTION, VARIADIC, WINDOW, TO_APPLY,
    desc="Reduce each window of the input with a computation.", min_arity=2)
_op("select-and-scatter", Category.REDUCTION, 3, WINDOW, _a("select", AttrKind.COMPUTATION, required=True),
    _a("scatter", AttrKind.COMPUTATION, required=True),
    desc="Scatter source values to the element each window selects.")

# control
_op("map", Category.CONTROL, VARIADIC, _a("dimensions", AttrKind.INT_LIST, default=(), print_default=True), TO_APPLY,
    desc="Apply a scalar computation to every element.", min_arity=1)
_op("sort", Category.CONTROL, VARIADIC, DIMENSIONS, _a("is_stable", AttrKind.BOOL, default=False), TO_APPLY,
    desc="Sort operands along a dimension with a comparator.", min_arity=1)
_op("topk", Category.CONTROL, 1, _a("k", AttrKind.INT, required=True),
    _a("largest", AttrKind.BOOL, default=True, print_default=True),
    desc="The k largest (or smallest) values of the last dimension and their indices.")
_op("scan", Category.CONTROL, VARIADIC, _a("dimensions", AttrKind.INT_LIST, required=True, print_default=True),
    _a("num_carries", AttrKind.INT, required=True), _a("is_reverse", AttrKind.BOOL, default=False),
    _a("is_associative", AttrKind.GENERIC), TO_APPLY,
    desc="Scan a computation along a dimension, threading carries.", min_arity=1)
_op("call", Category.CONTROL, VARIADIC, TO_APPLY, _a("is_composite", AttrKind.BOOL, default=False),
    desc="Call a computation.")
_op("while", Category.CONTROL, 1, _a("condition", AttrKind.COMPUTATION, required=True),
    _a("body", AttrKind.COMPUTATION, required=True),
    desc="Run body while condition holds, threading one value.")
_op("conditional", Category.CONTROL, VARIADIC,
    _a("true_computation", AttrKind.COMPUTATION), _a("false_computation", AttrKind.COMPUTATION),
    _a("branch_computations", AttrKind.COMPUTATION_LIST),
    desc="Run one branch computation chosen by a pred or s32 index.", min_arity=2)
_op("fusion", Category.CONTROL, VARIADIC,
    _enum("kind", ("kLoop", "kInput", "kOutput", "kCustom"), required=True, print_default=True),
    OUTPUT_ALIASING, _a("calls", AttrKind.COMPUTATION, required=True),
    desc="A fused computation executed as one kernel.", shape_required=True)
_op("custom-call", Category.CUSTOM, VARIADIC, WINDOW, _a("dim_labels", AttrKind.DIM_LABELS),
    _a("feature_group_count", AttrKind.INT, default=1), _a("batch_group_count", AttrKind.INT, default=1),
    PRECISION, _enum("padding_type", ("PADDING_INVALID", "PADDING_VALID", "PADDING_SAME")),
    _a("custom_call_target", AttrKind.STRING, required=True, print_default=True),
    _a("operand_layout_constraints", AttrKind.SHAPE_LIST),
    _a("custom_call_has_side_effect", AttrKind.BOOL, default=False),
    _a("literal", AttrKind.LITERAL), OUTPUT_ALIASING,
    _enum("schedule", ("SCHEDULE_NONE", "SCHEDULE_LATEST", "SCHEDULE_EARLIEST"), default="SCHEDULE_NONE",
          case_insensitive=True),
    _enum("api_version", ("API_VERSION_ORIGINAL", "API_VERSION_STATUS_RETURNING",
                          "API_VERSION_STATUS_RETURNING_UNIFIED", "API_VERSION_TYPED_FFI"),
          default="API_VERSION_ORIGINAL", case_insensitive=True),
    _a("to_apply", AttrKind.COMPUTATION), _a("called_computations", AttrKind.COMPUTATION_LIST),
    _a("opaque", AttrKind.STRING),
    desc="A call to an external target named by custom_call_target.", shape_required=True)

# linear algebra and friends
_op("fft", Category.LINALG, 1, _enum("fft_type", ("FFT", "IFFT", "RFFT", "IRFFT"), required=True, print_default=True),
    _a("fft_length", AttrKind.INT_LIST, required=True, print_default=True),
    desc="Fast Fourier transform over the trailing dimensions.")
_op("cholesky", Category.LINALG, 1, _a("lower", AttrKind.BOOL, default=False),
    desc="Cholesky factorisation of symmetric positive definite matrices.")
_op("triangular-solve", Category.LINALG, 2, _a("left_side", AttrKind.BOOL, default=False),
    _a("lower", AttrKind.BOOL, default=False), _a("unit_diagonal", AttrKind.BOOL, default=False),
    _enum("transpose_a", ("TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"), default="TRANSPOSE_INVALID"),
    desc="Solve a triangular linear system op(a) x = b or x op(a) = b.")
_BN = (_a("epsilon", AttrKind.FLOAT, required=True, print_default=True),
       _a("feature_index", AttrKind.INT, required=True, print_default=True))
_op("batch-norm-training", Category.LINALG, 3, *_BN, desc="Normalise with batch statistics; returns (output, mean, var).")
_op("batch-norm-inference", Category.LINALG, 5, *_BN, desc="Normalise with given mean and variance.")
_op("batch-norm-grad", Category.LINALG, 5, *_BN, desc="Gradients of batch normalisation.")

# side effects and randomness
_op("rng", Category.SIDE_EFFECT, VARIADIC, _enum("distribution", ("rng_uniform", "rng_normal"), required=True,
                                                  case_insensitive=True, print_default=True),
    desc="Random numbers (uniform in [a, b) or normal(mu, sigma)).", shape_required=True, side_effect=True)
_op("rng-bit-generator", Category.SIDE_EFFECT, 1,
    _enum("algorithm", ("rng_default", "rng_three_fry", "rng_philox"), required=True, case_insensitive=True,
          print_default=True),
    desc="Random bits from a counter-based generator; returns (new_state, bits).", shape_required=True)
_op("rng-get-and-update-state", Category.SIDE_EFFECT, 0, _a("delta", AttrKind.INT, required=True),
    desc="Return the RNG state and advance it by delta.", shape_required=True, side_effect=True)
_op("infeed", Category.SIDE_EFFECT, 1, _a("infeed_config", AttrKind.STRING, default=""),
    desc="Read a value from the host's infeed queue.", shape_required=True, side_effect=True)
_op("outfeed", Category.SIDE_EFFECT, 2, _a("outfeed_shape", AttrKind.SHAPE, print_default=True),
    _a("outfeed_config", AttrKind.STRING, default=""),
    desc="Write a value to the host's outfeed queue.", shape_required=True, side_effect=True)
_op("send", Category.SIDE_EFFECT, 2, CHANNEL_ID, IS_HOST_TRANSFER,
    desc="Start sending data over a channel.", shape_required=True, side_effect=True)
_op("send-done", Category.SIDE_EFFECT, 1, CHANNEL_ID, IS_HOST_TRANSFER,
    desc="Wait for a send to finish.", shape_required=True, side_effect=True)
_op("recv", Category.SIDE_EFFECT, 1, CHANNEL_ID, IS_HOST_TRANSFER,
    desc="Start receiving data over a channel.", shape_required=True, side_effect=True)
_op("recv-done", Category.SIDE_EFFECT, 1, CHANNEL_ID, IS_HOST_TRANSFER,
    desc="Wait for a receive to finish.", shape_required=True, side_effect=True)
_op("after-all", Category.SIDE_EFFECT, VARIADIC, desc="Join tokens into one token.")
_op("add-dependency", Category.SIDE_EFFECT, 2, desc="Its first operand, ordered after a token.")
_op("domain", Category.SIDE_EFFECT, 1, _a("domain", AttrKind.GENERIC, required=True),
    desc="Marks a sharding domain boundary; returns its operand.")
_op("get-dimension-size", Category.DATA_MOVEMENT, 1, DIMENSIONS, desc="The runtime size of a dimension (s32[]).")
_op("set-dimension-size", Category.DATA_MOVEMENT, 2, DIMENSIONS, desc="Set the runtime size of a dynamic dimension.")

# collectives
_op("all-reduce", Category.COLLECTIVE, VARIADIC, CHANNEL_ID, REPLICA_GROUPS, CONSTRAIN_LAYOUT, GLOBAL_IDS,
    COLLECTIVE_MODE, TO_APPLY, desc="Reduce across devices; every device gets the result.", shape_required=True)
_op("all-reduce-start", Category.COLLECTIVE, VARIADIC, CHANNEL_ID, REPLICA_GROUPS, CONSTRAIN_LAYOUT, GLOBAL_IDS,
    COLLECTIVE_MODE, TO_APPLY, desc="Start an asynchronous all-reduce.", shape_required=True)
_op("all-reduce-done", Category.COLLECTIVE, 1, desc="Finish an asynchronous all-reduce.", shape_required=True)
_op("reduce-scatter", Category.COLLECTIVE, VARIADIC, CHANNEL_ID, REPLICA_GROUPS, CONSTRAIN_LAYOUT, GLOBAL_IDS,
    DIMENSIONS, TO_APPLY, desc="Reduce across devices and give each device one shard.", shape_required=True)
_op("all-gather", Category.COLLECTIVE, VARIADIC, CHANNEL_ID, REPLICA_GROUPS, CONSTRAIN_LAYOUT, DIMENSIONS,
    GLOBAL_IDS, desc="Concatenate every device's operand along a dimension.", shape_required=True)
_op("all-gather-start", Category.COLLECTIVE, VARIADIC, CHANNEL_ID, REPLICA_GROUPS, CONSTRAIN_LAYOUT, DIMENSIONS,
    GLOBAL_IDS, desc="Start an asynchronous all-gather.", shape_required=True)
_op("all-gather-done", Category.COLLECTIVE, 1, desc="Finish an asynchronous all-gather.", shape_required=True)
_op("all-to-all", Category.COLLECTIVE, VARIADIC, CHANNEL_ID, REPLICA_GROUPS, CONSTRAIN_LAYOUT,
    _a("dimensions", AttrKind.INT_LIST), desc="Split, exchange and concatenate blocks between devices.",
    shape_required=True)
_op("ragged-all-to-all", Category.COLLECTIVE, 6, CHANNEL_ID, REPLICA_GROUPS,
    desc="All-to-all with per-device sizes and offsets.", shape_required=True)
_op("collective-broadcast", Category.COLLECTIVE, VARIADIC, CHANNEL_ID, REPLICA_GROUPS,
    desc="Every device in a group gets the first device's operand.", shape_required=True)
_op("collective-permute", Category.COLLECTIVE, VARIADIC, CHANNEL_ID,
    _a("source_target_pairs", AttrKind.INT_LIST_LIST, required=True, print_default=True),
    _a("slice_sizes", AttrKind.INT_LIST_LIST),
    desc="Send each device's operand to another device.", shape_required=True)
_op("collective-permute-start", Category.COLLECTIVE, VARIADIC, CHANNEL_ID,
    _a("source_target_pairs", AttrKind.INT_LIST_LIST, required=True, print_default=True),
    _a("slice_sizes", AttrKind.INT_LIST_LIST),
    desc="Start an asynchronous collective-permute.", shape_required=True)
_op("collective-permute-done", Category.COLLECTIVE, 1, desc="Finish an asynchronous collective-permute.",
    shape_required=True)
_op("collective-reduce", Category.COLLECTIVE, VARIADIC, CHANNEL_ID, REPLICA_GROUPS, TO_APPLY,
    desc="A newer collective without public semantics.", shape_required=True)

# asynchronous wrappers and copies
_op("async-start", Category.ASYNC, VARIADIC, _a("async_execution_thread", AttrKind.STRING, default="main"),
    OUTPUT_ALIASING, _a("calls", AttrKind.COMPUTATION, required=True),
    desc="Start running a computation asynchronously.", shape_required=True)
_op("async-update", Category.ASYNC, VARIADIC, _a("async_execution_thread", AttrKind.STRING, default="main"),
    _a("calls", AttrKind.COMPUTATION), desc="Progress an asynchronous computation.", shape_required=True, min_arity=1)
_op("async-done", Category.ASYNC, VARIADIC, _a("async_execution_thread", AttrKind.STRING, default="main"),
    _a("calls", AttrKind.COMPUTATION), desc="Finish an asynchronous computation.", shape_required=True, min_arity=1)
_op("copy-start", Category.ASYNC, 1, _a("cross_program_prefetch_index", AttrKind.INT),
    desc="Start an asynchronous copy; returns (dest, src, context).", shape_required=True)
_op("copy-done", Category.ASYNC, 1, desc="Finish an asynchronous copy.", shape_required=True)

# --------------------------------------------------------------------------- trait groups
# Each group lists its opcodes once; everything else asks `info.has(Trait.X)` or uses the
# frozensets below. XLA's names for the same facts are given where they exist.

_GROUPS: dict[Trait, tuple[str, ...]] = {
    Trait.COMMUTATIVE: ("add", "multiply", "maximum", "minimum", "and", "or", "xor"),
    Trait.ASSOCIATIVE: ("add", "multiply", "maximum", "minimum", "and", "or", "xor"),
    Trait.IDEMPOTENT: ("maximum", "minimum", "and", "or"),
    Trait.ZERO_IDENTITY: ("add", "or", "xor"),
    Trait.PASS_THROUGH: ("copy", "opt-barrier", "domain", "add-dependency"),
    Trait.RUN_INDEPENDENT_LEAF: ("constant", "iota", "replica-id", "partition-id"),
    Trait.SCALAR_IDENTITY: ("broadcast", "reshape", "transpose", "copy", "bitcast", "reverse", "opt-barrier",
                            "domain"),
    Trait.SAME_VALUE_IF_SAME_SHAPE: ("reshape", "broadcast", "transpose", "bitcast", "convert", "reverse"),
    Trait.REARRANGE: ("reshape", "transpose"),
    # XLA's HloInstruction::IsExpensive says false for these (besides elementwise ops).
    Trait.CHEAP: ("bitcast", "broadcast", "concatenate", "constant", "copy", "dynamic-slice",
                  "dynamic-update-slice", "dynamic-reshape", "get-tuple-element", "iota", "pad", "reshape",
                  "reverse", "slice", "transpose", "tuple", "opt-barrier", "replica-id", "partition-id"),
    Trait.EXPENSIVE: ("atan", "atan2", "power"),
    Trait.EXPENSIVE_IF_COMPLEX: ("abs", "sign", "sine", "cosine", "tan"),
    Trait.DIVISION: ("divide", "remainder"),
    Trait.IEEE_BASIC: ("add", "subtract", "multiply", "divide"),
    # XLA:CPU's CanBeLoopFused: non-elementwise ops emitted element by element.
    Trait.LOOP_FUSIBLE: ("bitcast", "broadcast", "concatenate", "dynamic-slice", "dynamic-update-slice",
                         "gather", "iota", "pad", "reduce", "reshape", "reverse", "slice", "transpose"),
    Trait.OUTPUT_FUSION_HERO: ("dot", "convolution"),
    Trait.REDUCTION_FUSION_HERO: ("reduce", "reduce-window"),
    # XLA's ReusesOperandElements (broadcast and gather decide per operand).
    Trait.READS_OPERAND_ELEMENTS_REPEATEDLY: ("dot", "convolution", "reduce-window", "select-and-scatter"),
    Trait.RUNS_COMPUTATIONS_AS_CODE: ("call", "while", "conditional"),
    # XLA's HloConstantFolding skips these.
    Trait.NOT_FOLDABLE: ("parameter", "constant", "tuple", "broadcast", "iota", "fft", "while", "after-all",
                         "rng", "rng-bit-generator", "rng-get-and-update-state", "opt-barrier", "domain",
                         "partition-id", "replica-id"),
    Trait.UNFOLDABLE_INSIDE: ("while", "fft", "after-all", "rng", "rng-bit-generator",
                              "rng-get-and-update-state", "replica-id", "partition-id"),
    # XLA's WhileLoopInvariantCodeMotion: NotWorthHoistingIndividually.
    Trait.NOT_WORTH_HOISTING_ALONE: ("constant", "reshape", "bitcast", "broadcast", "iota", "reverse", "slice",
                                     "transpose", "tuple"),
    Trait.UPDATES_IN_PLACE: ("dynamic-update-slice", "scatter"),
    Trait.CHANNEL: ("send", "send-done", "recv", "recv-done"),
    Trait.ASYNC_WRAPPER: ("async-start", "async-update", "async-done"),
    Trait.NO_CODE: ("parameter", "constant", "tuple", "get-tuple-element"),
    Trait.LITERAL_OPERAND: ("parameter", "constant"),
}

# Element types the operands of each elementwise op may have (XLA's InferUnaryOpShape and
# InferBinaryOpShape with the spec's decisions, e.g. shifts are integer-only); ops not listed
# accept every array type.
_OPERAND_TYPES: dict[TypeClass, tuple[str, ...]] = {
    TypeClass.FLOAT: ("floor", "ceil", "round-nearest-afz", "round-nearest-even", "is-finite", "erf", "complex",
                      "cbrt"),
    TypeClass.INEXACT: ("cosine", "sine", "tan", "tanh", "exponential", "exponential-minus-one", "log",
                        "log-plus-one", "logistic", "rsqrt", "sqrt", "acos", "acosh", "asin", "asinh",
                        "atanh", "cosh", "sinh", "atan", "atan2", "real", "imag"),
    TypeClass.SINT | TypeClass.INEXACT: ("abs", "sign"),
    TypeClass.NUMBER: ("negate", "subtract", "power", "divide"),
    TypeClass.INT | TypeClass.FLOAT: ("remainder",),
    TypeClass.INT: ("count-leading-zeros", "popcnt", "shift-left", "shift-right-arithmetic",
                    "shift-right-logical"),
    TypeClass.PRED | TypeClass.INT: ("not", "and", "or", "xor"),
}
_RESULT_TYPES: dict[ResultType, tuple[str, ...]] = {
    ResultType.PRED: ("compare", "is-finite"),
    ResultType.REAL_PART: ("real", "imag", "abs"),
    ResultType.WRITTEN: ("convert", "bitcast-convert", "stochastic-convert"),
}


def _finish(ops: list[OpInfo]) -> list[OpInfo]:
    """The table's entries with their traits, operand types and result types filled in."""
    known = {op.name for op in ops}
    traits = {name: Trait.NONE for name in known}
    for trait, names in _GROUPS.items():
        for name in names:
            assert name in known, name
            traits[name] |= trait
    operand_types = {name: cls for cls, names in _OPERAND_TYPES.items() for name in names}
    result_types = {name: rt for rt, names in _RESULT_TYPES.items() for name in names}
    out = []
    for op in ops:
        elementwise = op.category is Category.ELEMENTWISE
        out.append(dataclasses.replace(
            op, traits=traits[op.name] | (Trait.SIDE_EFFECT if op.side_effect else Trait.NONE),
            operand_types=operand_types.get(op.name, TypeClass.ANY) if elementwise else None,
            result_type=result_types.get(op.name, ResultType.SAME) if elementwise else None))
    return out


_OPS = _finish(_OPS)
OPCODES: dict[str, OpInfo] = {op.name: op for op in _OPS}
_ATTR_MAPS: dict[str, dict[str, AttrSpec]] = {op.name: {a.name: a for a in op.attrs} for op in _OPS}

# The opcodes as a string-valued enum: `inst.opcode == Op.ADD`, `Op("add") is Op.ADD`.
Op = enum.StrEnum("Op", [(op.name.upper().replace("-", "_"), op.name) for op in _OPS])
Op.__doc__ = "Every HLO opcode; members compare equal to their text (Op.GET_TUPLE_ELEMENT == 'get-tuple-element')."
Op.info = property(lambda self: OPCODES[self])


def ops_with(trait: Trait) -> frozenset:
    """The opcodes that have `trait`."""
    return frozenset(Op(op.name) for op in _OPS if op.traits & trait)


def ops_in(category: Category) -> frozenset:
    return frozenset(Op(op.name) for op in _OPS if op.category is category)


def has_trait(opcode: str, trait: Trait) -> bool:
    """True when `opcode` (an Op or its text) is in the table and has `trait`."""
    info = OPCODES.get(opcode)
    return info is not None and bool(info.traits & trait)


ELEMENTWISE = ops_in(Category.ELEMENTWISE)
UNARY_ELEMENTWISE = frozenset(op for op in ELEMENTWISE if OPCODES[op].arity == 1)
BINARY_ELEMENTWISE = frozenset(op for op in ELEMENTWISE if OPCODES[op].arity == 2)

# Attributes any instruction may carry (kept on Instruction fields, not in attrs).
GENERIC_ATTRIBUTES = ("sharding", "frontend_attributes", "statistics", "control-predecessors", "metadata",
                      "backend_config", "origin", "parameter_replication")

# Async sugar: `X-start/-update/-done` for opcodes X without their own start/done pair.
ASYNC_SUFFIXES = ("-start", "-update", "-done")


def lookup(opcode: str) -> Optional[OpInfo]:
    return OPCODES.get(opcode)


def split_async_sugar(opcode: str) -> Optional[tuple[str, str]]:
    """('custom-call', '-start') for 'custom-call-start' when that is async sugar, else None."""
    if opcode in OPCODES:
        return None
    for suffix in ASYNC_SUFFIXES:
        if opcode.endswith(suffix) and opcode[: -len(suffix)] in OPCODES:
            return opcode[: -len(suffix)], suffix
    return None


def wrapped_attr_specs(opcode: str) -> dict[str, AttrSpec]:
    """Attributes accepted on `opcode`, including those of an async-sugar wrapped opcode."""
    sugar = split_async_sugar(opcode)
    if sugar is None:
        return _ATTR_MAPS[opcode]
    wrapped, suffix = sugar
    base = dict(_ATTR_MAPS["async-start"]) if suffix == "-start" else {}
    base.pop("calls", None)
    if suffix == "-start":
        base.update(_ATTR_MAPS[wrapped])
    return base
