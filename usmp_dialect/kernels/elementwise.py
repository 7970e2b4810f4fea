"""Elementwise kernels: binary ADD, SUB, MUL with NumPy broadcasting (int8, int16, int32 and
float32),
and unary QUANTIZE, DEQUANTIZE, int8/int16 requantisation, table lookups, float LOGISTIC /
TANH, int16 LOGISTIC / TANH (`int16_activation`) and int16 RELU, RELU6 and ABS. Integer
results are clamped to their output's type and range (int16: TFLite's 16x8 kernels, the same
arithmetic with ADD's inputs shifted left by 15 instead of 20).

Written as TFLite's reference kernels compute them, one output element at a time in
registers: `reference_integer_ops::AddFunc` (both inputs shifted left by 20, scaled to twice
the larger input scale, summed and requantised, each step a `MultiplyByQuantizedMultiplier
SmallerThanOneExp`), the integer `MulElementwise` (offset inputs multiplied in int32, one
`MultiplyByQuantizedMultiplier`), `reference_ops::Requantize`, `AffineQuantize`,
`Dequantize` and the float `Logistic` and `Tanh`.

Broadcast shapes are first reduced (`broadcast_shapes`): dimensions of extent 1 everywhere are
dropped and neighbouring dimensions along which each input is either read or broadcast alike
are merged, so a kernel loops over as few dimensions as the broadcast needs (one when the
shapes are equal) and reads its inputs through reshaped views, never copies. An input may be a
constant `memref.global` instead of a function argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i1, i16, i32
from xdsl.ir import Attribute

from usmp_dialect.kernels.binary_math import BinaryMath, emit_binary_math
from usmp_dialect.kernels.builder import INDEX, KernelBuilder, Value, finish, function, is_float
from usmp_dialect.kernels.conv import FloatActivation, clamp_float
from usmp_dialect.kernels.fixed_point import emit_multiply_by_quantized_multiplier
from usmp_dialect.kernels.float_math import FloatMath, emit_float_math
from usmp_dialect.kernels.int16_activation import (
    Int16Activation,
    emit_int16_activation,
    sigmoid_table,
)
from usmp_dialect.kernels.logic import (
    LogicalNot,
    LogicArithmetic,
    emit_logic,
    emit_logical_not,
)
from usmp_dialect.kernels.module import ModelModule

# -- broadcasting ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Broadcast:
    """Reduced shapes of a broadcast binary operation: the loops over `output`, each input
    read with its own shape (extent 1 where it is broadcast), all of the same rank."""

    output: tuple[int, ...]
    inputs: tuple[tuple[int, ...], tuple[int, ...]]


def broadcast_shape(lhs: Sequence[int], rhs: Sequence[int]) -> tuple[int, ...] | None:
    """NumPy's broadcast of two shapes, or None when they do not broadcast."""
    rank = max(len(lhs), len(rhs))
    left = (1,) * (rank - len(lhs)) + tuple(lhs)
    right = (1,) * (rank - len(rhs)) + tuple(rhs)
    shape = []
    for a, b in zip(left, right, strict=True):
        if a != b and 1 not in (a, b):
            return None
        shape.append(max(a, b))
    return tuple(shape)


def broadcast_shapes(lhs: Sequence[int], rhs: Sequence[int]) -> Broadcast:
    """The reduced loops of `lhs op rhs` (shapes that broadcast, see `broadcast_shape`)."""
    output = broadcast_shape(lhs, rhs)
    assert output is not None, f"{list(lhs)} and {list(rhs)} do not broadcast"
    rank = len(output)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in (lhs, rhs)]
    dims: list[list[int]] = []  # [extent, reads lhs, reads rhs]
    for axis, extent in enumerate(output):
        if extent == 1:
            continue
        reads = [int(shape[axis] == extent) for shape in padded]
        if dims and dims[-1][1:] == reads:
            dims[-1][0] *= extent
        else:
            dims.append([extent, *reads])
    if not dims:
        return Broadcast((1,), ((1,), (1,)))
    return Broadcast(
        tuple(d[0] for d in dims),
        (
            tuple(d[0] if d[1] else 1 for d in dims),
            tuple(d[0] if d[2] else 1 for d in dims),
        ),
    )


# -- binary arithmetic -----------------------------------------------------------------------


@dataclass(frozen=True)
class QuantizedAdd:
    """int8 ADD (or SUB with `subtract`): TFLite's `ArithmeticParams` of `CalculateOpDataAdd`.
    Shifts are TFLite's (non-positive: right shifts)."""

    input_offsets: tuple[int, int]
    input_multipliers: tuple[int, int]
    input_shifts: tuple[int, int]
    output_multiplier: int
    output_shift: int
    output_offset: int
    activation_min: int
    activation_max: int
    left_shift: int = 20
    subtract: bool = False


@dataclass(frozen=True)
class QuantizedMul:
    """int8 MUL: `(x + offset1) * (y + offset2)` requantised by one multiplier."""

    input_offsets: tuple[int, int]
    multiplier: int
    shift: int
    output_offset: int
    activation_min: int
    activation_max: int


@dataclass(frozen=True)
class FloatBinary:
    operation: str  # "add", "sub", "mul" or "div"
    activation: FloatActivation


@dataclass(frozen=True)
class IntegerBinary:
    """int32 ADD, SUB, MUL or DIV (`reference_ops::Add`, `Sub`, `Mul`, `Div` on `int32_t`):
    wrapping around on overflow as TFLM does on two's complement machines, clamped to the
    fused activation's [low, high] when there is one. DIV truncates toward zero (C's `/`);
    where TFLM fails (a zero divisor) or C is undefined (INT32_MIN / -1) a compiled model
    cannot, so it gives 0 and INT32_MIN there."""

    operation: str  # "add", "sub", "mul" or "div"
    bounds: tuple[int, int] | None = None


BinaryArithmetic = (
    QuantizedAdd | QuantizedMul | FloatBinary | IntegerBinary | BinaryMath | LogicArithmetic
)


@dataclass(frozen=True)
class Operand:
    """A binary kernel's input: read from a function argument of `type_`, or (when `constant`
    names one) from a constant `memref.global` of that type."""

    type_: MemRefType
    constant: str | None = None


def _integer_division(kernel: KernelBuilder, x: Value, y: Value) -> Value:
    """`x / y` without C's undefined cases: the divisor is 1 where it is 0 (the quotient then
    replaced by 0) or where `x / y` overflows (INT32_MIN / -1, whose quotient x / 1 is the
    wrapped-around one)."""
    zero = kernel.cmp("eq", y, 0)
    assert isinstance(x.type, IntegerType)
    overflow = kernel.and_(
        kernel.cmp("eq", x, -(1 << (x.type.width.data - 1))), kernel.cmp("eq", y, -1)
    )
    divisor = kernel.select(kernel.or_(zero, overflow), 1, y)
    return kernel.select(zero, 0, kernel.div(x, divisor))


def _combine(
    kernel: KernelBuilder, arithmetic: BinaryArithmetic, x: Value, y: Value, element: Attribute
) -> Value:
    if isinstance(arithmetic, LogicArithmetic):  # a bool result (kernels.logic)
        return emit_logic(kernel, arithmetic, x, y)
    if isinstance(arithmetic, IntegerBinary):
        if arithmetic.operation == "div":
            result = _integer_division(kernel, x, y)
        else:
            operation = {"add": kernel.add, "sub": kernel.sub, "mul": kernel.mul}
            result = operation[arithmetic.operation](x, y)
        return result if arithmetic.bounds is None else kernel.clamp(result, *arithmetic.bounds)
    if not isinstance(arithmetic, QuantizedAdd | QuantizedMul | FloatBinary):
        return emit_binary_math(kernel, arithmetic, x, y)
    if isinstance(arithmetic, FloatBinary):
        operation = {
            "add": kernel.add,
            "sub": kernel.sub,
            "mul": kernel.mul,
            "div": kernel.div,
        }[arithmetic.operation]
        return clamp_float(kernel, operation(x, y), arithmetic.activation)
    a = kernel.add(kernel.cast(x, i32), arithmetic.input_offsets[0])
    b = kernel.add(kernel.cast(y, i32), arithmetic.input_offsets[1])
    if isinstance(arithmetic, QuantizedMul):
        scaled = emit_multiply_by_quantized_multiplier(
            kernel, kernel.mul(a, b), arithmetic.multiplier, arithmetic.shift
        )
    else:
        scaled_a, scaled_b = (
            emit_multiply_by_quantized_multiplier(
                kernel,
                kernel.shl(value, arithmetic.left_shift),
                arithmetic.input_multipliers[side],
                arithmetic.input_shifts[side],
            )
            for side, value in enumerate((a, b))
        )
        total = (
            kernel.sub(scaled_a, scaled_b)
            if arithmetic.subtract
            else kernel.add(scaled_a, scaled_b)
        )
        scaled = emit_multiply_by_quantized_multiplier(
            kernel, total, arithmetic.output_multiplier, arithmetic.output_shift
        )
    result = kernel.add(scaled, arithmetic.output_offset)
    return kernel.cast(
        kernel.clamp(result, arithmetic.activation_min, arithmetic.activation_max), element
    )


def binary(
    module: ModelModule,
    name: str,
    operands: tuple[Operand, Operand],
    output_type: MemRefType,
    arithmetic: BinaryArithmetic,
) -> None:
    """Adds `@name(%input1?, %input2?, %output)`: `output = input1 op input2`, the inputs of
    the reduced broadcast shapes (`broadcast_shapes`), the constant ones not arguments."""
    arguments = [
        (f"input{position + 1}", operand.type_)
        for position, operand in enumerate(operands)
        if operand.constant is None
    ]
    op, kernel, values = function(name, [*arguments, ("output", output_type)])
    arguments_left = iter(values[:-1])
    sources = [
        kernel.get_global(operand.constant, operand.type_)
        if operand.constant is not None
        else next(arguments_left)
        for operand in operands
    ]
    target = values[-1]
    shapes = [tuple(operand.type_.get_shape()) for operand in operands]

    def body(ivs: Sequence[Value]) -> None:
        x, y = (
            kernel.load(
                source, [iv if extent != 1 else 0 for iv, extent in zip(ivs, shape, strict=True)]
            )
            for source, shape in zip(sources, shapes, strict=True)
        )
        result = _combine(kernel, arithmetic, x, y, output_type.element_type)
        kernel.store(result, target, ivs)

    kernel.loops(output_type.get_shape(), body)
    finish(kernel)
    module.add(op)


# -- unary arithmetic ------------------------------------------------------------------------


@dataclass(frozen=True)
class Quantize:
    """float32 -> int8 (int16), `AffineQuantize`: `clamp(round(x / scale) + zero_point)`,
    halves away from zero (or to even: ONNX's QuantizeLinear). Quotients beyond ±2**30
    saturate (TFLite's cast to int32 is undefined there)."""

    scale: float
    zero_point: int
    ties_to_even: bool = False


@dataclass(frozen=True)
class Dequantize:
    """int8 (int16, uint8) -> float32: `scale * (q - zero_point)` in float; `unsigned`: the
    i8 holds a uint8, read zero-extended."""

    scale: float
    zero_point: int
    unsigned: bool = False


@dataclass(frozen=True)
class Requantize:
    """int8/int16 -> int8/int16, `reference_ops::Requantize`; with `low`, int16 RELU's
    `ReluQuantized` (the same requantisation, clamped below at `low`). `input_unsigned`,
    `output_unsigned`: the i8 holds a uint8 (TFLM's uint8 -> int8 and int8 -> uint8 pairs),
    read zero-extended, clamped to [0, 255]."""

    input_zero_point: int
    multiplier: int
    shift: int
    output_zero_point: int
    low: int | None = None
    input_unsigned: bool = False
    output_unsigned: bool = False


@dataclass(frozen=True)
class Cast:
    """CAST between int8, int16, int32, float32 and bool, as TFLM's `cast.cc` computes it:
    integers wrap around to a narrower type (C's conversion on two's complement machines),
    float32 truncates toward zero and saturates to an integer type (NaN gives 0), anything
    becomes bool as `x != 0` (NaN true), bool becomes 0 or 1, integers become the nearest
    float32. Values are cast as stored (a quantisation is not applied)."""


@dataclass(frozen=True)
class IntegerClamp:
    """int16 RELU6, `Relu6Quantized`: the stored values clamped to [low, high], unscaled."""

    low: int
    high: int


@dataclass(frozen=True)
class QuantizedAbs:
    """int16 ABS, `AbsEvalQuantized` (zero points 0): `|x|` in int32, requantised by
    `rescale` (multiplier, shift) when the input and output scales differ, clamped."""

    rescale: tuple[int, int] | None


@dataclass(frozen=True, eq=False)
class Lookup:
    """int8 -> int8 through a 256-entry table indexed by `x + 128`."""

    table: np.ndarray


@dataclass(frozen=True)
class FloatFunction:
    """float32 LOGISTIC ("logistic", TFLite's cut-off form) or TANH ("tanh")."""

    kind: str


@dataclass(frozen=True)
class FloatClamp:
    """float32 `min(max(x, low), high)` (ONNX Relu, Clip); infinite bounds are not emitted."""

    low: float
    high: float


@dataclass(frozen=True)
class LeakyRelu:
    """float32 `x < 0 ? alpha * x : x`."""

    alpha: float


@dataclass(frozen=True)
class QuantizedLeakyRelu:
    """int16 LEAKY_RELU, `reference_ops::QuantizeLeakyRelu`: `x - input_zero_point` scaled by
    `identity` (multiplier, shift) where it is non-negative, by `alpha` (whose multiplier is
    negative for a negative alpha) elsewhere. int8 takes a table (`Lookup`) instead."""

    input_zero_point: int
    identity: tuple[int, int]
    alpha: tuple[int, int]
    output_zero_point: int


UnaryArithmetic = (
    Quantize
    | Dequantize
    | Requantize
    | Lookup
    | FloatFunction
    | FloatClamp
    | LeakyRelu
    | QuantizedLeakyRelu
    | IntegerClamp
    | QuantizedAbs
    | Cast
    | FloatMath
    | Int16Activation
    | LogicalNot
)

LOGISTIC_UPPER = 16.619047164916992  # TFLite's cut-offs: 1 above, exp(x) below
LOGISTIC_LOWER = -9.0
_QUANTIZE_BOUND = float(1 << 30)


def _float_function(kernel: KernelBuilder, kind: str, x: Value) -> Value:
    if kind == "tanh":
        return kernel.tanh(x)
    below = kernel.cmp("lt", x, LOGISTIC_LOWER)
    exp = kernel.exp(kernel.select(below, x, kernel.sub(0.0, x)))
    inside = kernel.div(1.0, kernel.add(exp, 1.0))
    return kernel.select(
        kernel.cmp("gt", x, LOGISTIC_UPPER), 1.0, kernel.select(below, exp, inside)
    )


def _cast(kernel: KernelBuilder, x: Value, target: Attribute) -> Value:
    """`Cast` of one element."""
    source = x.type
    if source == target:
        return x
    if target == i1:
        if is_float(source):  # unordered: NaN != 0 is true
            return kernel.insert(arith.CmpfOp(x, kernel.constant(0.0, source), "une"))
        return kernel.cmp("ne", x, 0)
    if source == i1:
        if is_float(target):
            return kernel.insert(arith.UIToFPOp(x, target))
        return kernel.insert(arith.ExtUIOp(x, target))
    if not is_float(source) or is_float(target):
        return kernel.cast(x, target)  # integers wrap or widen, integers to float round
    assert isinstance(target, IntegerType)
    bits = target.width.data
    lowest, highest = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    # float32 -> integer: NaN 0; truncated within [lowest, the largest float32 <= highest],
    # the type's maximum from 2**(bits-1) up (not a float32 for int32)
    is_nan = kernel.insert(arith.CmpfOp(x, x, "uno"))
    top = float(np.nextafter(np.float32(highest + 1), np.float32(0)))
    inside = kernel.min(kernel.max(kernel.select(is_nan, 0.0, x), float(lowest)), top)
    value = kernel.select(
        kernel.cmp("ge", x, float(highest + 1)), highest, kernel.cast(inside, i32)
    )
    return kernel.cast(value, target)


def unary_rows(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    arithmetic: UnaryArithmetic,
) -> None:
    """Adds `@name(%input, %output)` applying `arithmetic` to every element of `output`'s
    shape (row views of a streamed operator: any strides), as `unary` does."""
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    element = _unary_element(module, name, kernel, arithmetic, output_type.element_type)
    kernel.loops(
        output_type.get_shape(),
        lambda ivs: kernel.store(element(kernel.load(source, ivs)), target, ivs),
    )
    finish(kernel)
    module.add(op)


def _unary_element(
    module: ModelModule,
    name: str,
    kernel: KernelBuilder,
    arithmetic: UnaryArithmetic,
    output_element: Attribute,
) -> Callable[[Value], Value]:
    """The scalar computation of `arithmetic` (tables are loaded once, at the entry)."""
    if isinstance(arithmetic, Lookup):
        symbol = module.constant(f"{name}_table", arithmetic.table.astype(np.int8))
        table = kernel.get_global(*symbol)
        return lambda x: kernel.load(
            table, [kernel.cast(kernel.add(kernel.cast(x, i32), 128), INDEX)]
        )
    if isinstance(arithmetic, Int16Activation):
        sigmoid = sigmoid_table(module, kernel)
        return lambda x: kernel.cast(
            emit_int16_activation(kernel, sigmoid, kernel.cast(x, i32), arithmetic), i16
        )
    if isinstance(arithmetic, FloatFunction):
        return lambda x: _float_function(kernel, arithmetic.kind, x)
    if isinstance(arithmetic, LogicalNot):
        return lambda x: emit_logical_not(kernel, x)
    if isinstance(arithmetic, FloatMath):
        return lambda x: emit_float_math(kernel, arithmetic, x)
    if isinstance(arithmetic, FloatClamp):
        return lambda x: clamp_float(kernel, x, FloatActivation(arithmetic.low, arithmetic.high))
    if isinstance(arithmetic, LeakyRelu):
        return lambda x: kernel.select(kernel.cmp("lt", x, 0.0), kernel.mul(x, arithmetic.alpha), x)
    if isinstance(arithmetic, Cast):
        return lambda x: _cast(kernel, x, output_element)
    if isinstance(arithmetic, Dequantize):

        def dequantize(x: Value) -> Value:
            value = kernel.cast(x, i32)
            if arithmetic.unsigned:  # the i8's byte as a uint8
                value = kernel.and_(value, 255)
            difference = kernel.sub(value, arithmetic.zero_point)
            return kernel.mul(kernel.cast(difference, f32), arithmetic.scale)

        return dequantize

    assert isinstance(output_element, IntegerType)
    bits = output_element.width.data
    lowest, highest = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def to_integer(value: Value, zero_point: int, low: int | None = None) -> Value:
        bottom = lowest if low is None else max(low, lowest)
        clamped = kernel.clamp(kernel.add(value, zero_point), bottom, highest)
        return kernel.cast(clamped, output_element)

    if isinstance(arithmetic, IntegerClamp):
        return lambda x: kernel.clamp(x, arithmetic.low, arithmetic.high)
    if isinstance(arithmetic, QuantizedAbs):

        def absolute(x: Value) -> Value:
            value = kernel.cast(x, i32)
            magnitude = kernel.select(kernel.cmp("slt", value, 0), kernel.sub(0, value), value)
            if arithmetic.rescale is not None:
                magnitude = emit_multiply_by_quantized_multiplier(
                    kernel, magnitude, *arithmetic.rescale
                )
            return to_integer(magnitude, 0)

        return absolute

    if isinstance(arithmetic, QuantizedLeakyRelu):

        def leaky(x: Value) -> Value:
            value = kernel.sub(kernel.cast(x, i32), arithmetic.input_zero_point)
            identity = emit_multiply_by_quantized_multiplier(kernel, value, *arithmetic.identity)
            scaled = emit_multiply_by_quantized_multiplier(kernel, value, *arithmetic.alpha)
            chosen = kernel.select(kernel.cmp("sge", value, 0), identity, scaled)
            return to_integer(chosen, arithmetic.output_zero_point)

        return leaky
    if isinstance(arithmetic, Requantize):

        def requantize(x: Value) -> Value:
            value = kernel.cast(x, i32)
            if arithmetic.input_unsigned:  # the i8's byte as a uint8
                value = kernel.and_(value, 255)
            scaled = emit_multiply_by_quantized_multiplier(
                kernel,
                kernel.sub(value, arithmetic.input_zero_point),
                arithmetic.multiplier,
                arithmetic.shift,
            )
            if arithmetic.output_unsigned:  # [0, 255], stored as the i8 of the same byte
                clamped = kernel.clamp(kernel.add(scaled, arithmetic.output_zero_point), 0, 255)
                return kernel.cast(clamped, output_element)
            return to_integer(scaled, arithmetic.output_zero_point, arithmetic.low)

        return requantize

    def quantize(x: Value) -> Value:
        quotient = kernel.div(x, arithmetic.scale)
        rounded = kernel.insert(
            math.RoundEvenOp(quotient) if arithmetic.ties_to_even else math.RoundOp(quotient)
        )
        # NaN compares false: it takes the lower bound, as x86 converts it (to INT32_MIN)
        low = kernel.select(kernel.cmp("gt", rounded, -_QUANTIZE_BOUND), rounded, -_QUANTIZE_BOUND)
        bounded = kernel.select(kernel.cmp("lt", low, _QUANTIZE_BOUND), low, _QUANTIZE_BOUND)
        return to_integer(kernel.cast(bounded, i32), arithmetic.zero_point)

    return quantize


def unary_shaped(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    arithmetic: UnaryArithmetic,
) -> None:
    """Adds `@name(%input, %output)` applying `arithmetic` to every element, indexed through
    the types' own layouts (of one shape; e.g. row views of a streamed group)."""
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    element = _unary_element(module, name, kernel, arithmetic, output_type.element_type)
    kernel.loops(
        output_type.get_shape(),
        lambda ivs: kernel.store(element(kernel.load(source, ivs)), target, ivs),
    )
    finish(kernel)
    module.add(op)


def unary(
    module: ModelModule,
    name: str,
    size: int,
    input_element: Attribute,
    output_element: Attribute,
    arithmetic: UnaryArithmetic,
) -> None:
    """Adds `@name(%input: [size], %output: [size])` applying `arithmetic` to every element."""
    op, kernel, (source, target) = function(
        name,
        [
            ("input", MemRefType(input_element, [size])),
            ("output", MemRefType(output_element, [size])),
        ],
    )
    element = _unary_element(module, name, kernel, arithmetic, output_element)
    kernel.loops([size], lambda ivs: kernel.store(element(kernel.load(source, ivs)), target, ivs))
    finish(kernel)
    module.add(op)
