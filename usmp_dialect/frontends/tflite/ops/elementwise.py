"""Elementwise operators: ADD, SUB, MUL (int8, int16, int32 and float32, NumPy broadcasting,
fused activations, a constant input read from a global), QUANTIZE (float32 -> int8/int16, between
int8 and int16 either way, and int8/int16 to and from int32: TFLM's `Requantize` pairs),
DEQUANTIZE (int8/int16 -> float32), LOGISTIC and TANH
(float32, int8 through a table computed at import with TFLite's integer algorithm, and int16 as
TFLite's interpolated `sigmoid_table_uint16`, `kernels.int16_activation`).

int16 ADD and SUB are TFLM's general int16 path: the arithmetic of int8 with the inputs shifted
left by 15 instead of 20 (`CalculateOpDataAdd`: `left_shift = output is int16 ? 15 : 20`).
int32 ADD, SUB and MUL wrap around on overflow (what TFLM's `int32_t` arithmetic gives on
two's complement machines); TFLM's int32 ADD ignores its fused activation (`EvalAdd` sets the
whole int32 range), SUB and MUL clamp to it (`CalculateActivationRange<int32_t>`), and so
does the import."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import (
    INT16_ACTIVATION_TYPES,
    OperatorContext,
    operator,
)
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    INT16,
    INT32,
    UINT8,
    activation_bounds,
    dequantized,
    float_activation,
    fused_activation,
    quantization,
    require_types,
    supported_fused_activation,
    symmetric_int16,
)
from usmp_dialect.frontends.tflite.ops.fold import fold_constant_arithmetic
from usmp_dialect.frontends.tflite.reader import Quantization, Tensor
from usmp_dialect.kernels.activation import UnsupportedScale, int8_table
from usmp_dialect.kernels.elementwise import (
    BinaryArithmetic,
    Dequantize,
    FloatBinary,
    FloatFunction,
    IntegerBinary,
    Lookup,
    Operand,
    Quantize,
    QuantizedAdd,
    QuantizedMul,
    Requantize,
    UnaryArithmetic,
    binary,
    broadcast_shape,
    broadcast_shapes,
    unary,
)
from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.kernels.int16_activation import int16_activation
from usmp_dialect.kernels.module import element_type, memref_of

_OPTIONS = {"ADD": tflite.AddOptions, "SUB": tflite.SubOptions, "MUL": tflite.MulOptions}
_ARITHMETIC_TYPES = (*INT16_ACTIVATION_TYPES, INT32)
# `CalculateActivationRange<int32_t>` of each fused activation
INT32_BOUNDS = {
    "NONE": None,
    "RELU": (0, 2**31 - 1),
    "RELU_N1_TO_1": (-1, 1),
    "RELU6": (0, 6),
}


def _per_tensor(context: OperatorContext, tensor: Tensor) -> Quantization:
    quant = quantization(context, tensor)
    if len(quant.scales) != 1:
        raise context.fail(
            f"{tensor.describe()} is quantised per channel; only per-tensor quantisation is "
            "supported here"
        )
    if quant.scale <= 0:
        raise context.fail(f"{tensor.describe()} has the invalid scale {quant.scale:g}")
    return quant


def _smaller_than_one(context: OperatorContext, real: float, what: str) -> tuple[int, int]:
    """TFLite's `QuantizeMultiplierSmallerThanOneExp`."""
    multiplier, shift = quantize_multiplier(real)
    if shift > 0:
        raise context.fail(f"the {what} multiplier {real:g} is not below 1 (TFLite requires it)")
    return multiplier, shift


def _quantized_add(context: OperatorContext, activation: str, subtract: bool) -> QuantizedAdd:
    """TFLite Micro's `CalculateOpDataAdd` and `CalculateOpDataSub`: the multipliers of the
    inputs to twice the larger input scale, and of that to the output, in double precision
    (the TFLite Micro we test against computes SUB's in double too; newer sources divide the
    scales in float)."""
    first, second, output = (
        _per_tensor(context, t)
        for t in (context.tensor(0), context.tensor(1), context.tensor(0, output=True))
    )
    left_shift = 15 if context.tensor(0, output=True).dtype == INT16 else 20
    twice_max = 2 * max(first.scale, second.scale)
    reals = [
        first.scale / twice_max,
        second.scale / twice_max,
        twice_max / ((1 << left_shift) * output.scale),
    ]
    (m1, s1), (m2, s2) = (_smaller_than_one(context, r, "input") for r in reals[:2])
    output_multiplier, output_shift = _smaller_than_one(context, reals[2], "output")
    low, high = activation_bounds(context, context.tensor(0, output=True), activation)
    return QuantizedAdd(
        (-first.zero_point, -second.zero_point),
        (m1, m2),
        (s1, s2),
        output_multiplier,
        output_shift,
        output.zero_point,
        low,
        high,
        left_shift,
        subtract,
    )


def _quantized_mul(context: OperatorContext, activation: str) -> QuantizedMul:
    """TFLite Micro's `CalculateOpDataMul`: input1 * input2 / output scale in double."""
    first, second, output = (
        _per_tensor(context, t)
        for t in (context.tensor(0), context.tensor(1), context.tensor(0, output=True))
    )
    multiplier, shift = quantize_multiplier(first.scale * second.scale / output.scale)
    low, high = activation_bounds(context, context.tensor(0, output=True), activation)
    return QuantizedMul(
        (-first.zero_point, -second.zero_point), multiplier, shift, output.zero_point, low, high
    )


@operator("ADD", "SUB", "MUL", types=_ARITHMETIC_TYPES, supports=supported_fused_activation)
def binary_arithmetic(context: OperatorContext) -> None:
    if fold_constant_arithmetic(context):  # shape arithmetic on constants
        return
    if len(context.op.inputs) != 2:
        raise context.fail(f"{len(context.op.inputs)} inputs, 2 expected")
    lhs, rhs, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    require_types(context, lhs, rhs, output, allowed=_ARITHMETIC_TYPES)
    check_broadcast(context)
    arithmetic, dtype = binary_arithmetic_of(context)
    emit_broadcast(context, arithmetic, dtype, in_place=True)


def binary_arithmetic_of(context: OperatorContext) -> tuple[BinaryArithmetic, np.dtype]:
    """What ADD, SUB or MUL computes per element (fused activation included) and its type;
    also the row functions of a streamed one (`frontends.tflite.streaming`)."""
    opcode = context.op.opcode
    options = context.op.option(_OPTIONS[opcode])
    activation = fused_activation(context, options.FusedActivationFunction() if options else 0)
    lhs, rhs, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    dtype = require_types(context, lhs, rhs, output, allowed=_ARITHMETIC_TYPES)
    if dtype == INT32:
        bounds = None if opcode == "ADD" else INT32_BOUNDS[activation]
        return IntegerBinary(opcode.lower(), bounds), dtype
    if dtype in (INT8, INT16):
        arithmetic: BinaryArithmetic = (
            _quantized_mul(context, activation)
            if opcode == "MUL"
            else _quantized_add(context, activation, subtract=opcode == "SUB")
        )
    else:
        arithmetic = FloatBinary(opcode.lower(), float_activation(activation))
    return arithmetic, dtype


def check_broadcast(context: OperatorContext) -> None:
    """Checks a two-input operator with NumPy broadcasting: its inputs broadcast to its
    output's shape, and not both are constants."""
    lhs, rhs, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    expected = broadcast_shape(lhs.shape, rhs.shape)
    if expected is None:
        raise context.fail(
            f"the input shapes {list(lhs.shape)} and {list(rhs.shape)} do not broadcast"
        )
    if expected != output.shape:
        raise context.fail(
            f"the output shape {list(output.shape)} is not the broadcast {list(expected)} of the "
            f"inputs {list(lhs.shape)} and {list(rhs.shape)}"
        )
    if all(context.is_constant(position) for position in (0, 1)):
        raise context.fail("both inputs are constants (a converter folds such operators)")


def emit_broadcast(
    context: OperatorContext,
    arithmetic: BinaryArithmetic,
    dtype: np.dtype,
    in_place: bool,
    output_dtype: np.dtype | None = None,
) -> None:
    """`output = input1 op input2` of a checked (`check_broadcast`) operator, a constant input
    read from a global; `output_dtype`: the output's element type when it is not the inputs'
    `dtype` (a comparison's bool); `in_place`: the output over an input of its shape whose last
    reader this is (`OperatorContext.result_over`)."""
    lhs, rhs, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    shapes = broadcast_shapes(lhs.shape, rhs.shape)
    operands, values = [], []
    for position, shape in enumerate(shapes.inputs):
        # each input's own type: int16 PRELU reads an int8 alpha
        type_ = memref_of(shape, (lhs, rhs)[position].dtype)
        if context.is_constant(position):
            array = np.ascontiguousarray(context.constant(position)).reshape(shape)
            name, type_ = context.module.constant(f"{context.name}_input{position + 1}", array)
            operands.append(Operand(type_, name))
        else:
            operands.append(Operand(type_))
            values.append(context.view(context.value(position), shape))
    output_type = memref_of(shapes.output, dtype if output_dtype is None else output_dtype)
    binary(context.module, context.name, (operands[0], operands[1]), output_type, arithmetic)
    if in_place:
        same_shape = (p for p, t in enumerate((lhs, rhs)) if t.shape == output.shape)
        target = context.result_over(*same_shape)
    else:
        target = context.result()
    context.call(values, [context.view(target, shapes.output)])


@dataclass
class UnaryCapture(OperatorContext):
    """A context in which a one-input operator's handler is not emitted: `emit_unary` records
    its arithmetic instead (the row functions of a streamed activation, `frontends.tflite.
    streaming`, then compute exactly what the handler would)."""

    arithmetic: UnaryArithmetic | None = None


def emit_unary(context: OperatorContext, arithmetic: UnaryArithmetic, in_place: bool) -> None:
    """`arithmetic` on every element of input 0 into output 0 (of the same shape); `in_place`:
    over the input where it is read last here (`OperatorContext.result_over`)."""
    source, output = context.tensor(0), context.tensor(0, output=True)
    if source.shape != output.shape:
        raise context.fail(
            f"the output shape {list(output.shape)} differs from the input's {list(source.shape)}"
        )
    if isinstance(context, UnaryCapture):
        context.arithmetic = arithmetic
        return
    size = int(np.prod(source.shape))
    unary(
        context.module,
        context.name,
        size,
        element_type(source.dtype),
        element_type(output.dtype),
        arithmetic,
    )
    source_view = context.view(context.value(0), (size,))
    target = context.result_over(0) if in_place else context.result()
    context.call([source_view], [context.view(target, (size,))])


def _type_error(context: OperatorContext, source: Tensor, output: Tensor, supported: str) -> None:
    raise context.fail(
        f"{source.dtype.name} -> {output.dtype.name} is not supported (only {supported})"
    )


# QUANTIZE's integer pairs, `PrepareQuantizeReference`'s requantisations (uint8 -> int8 and
# int8 -> uint8: a camera model's input and output)
_REQUANTIZED = {
    (UINT8, INT8),
    (INT8, UINT8),
    (INT8, INT8),
    (INT8, INT16),
    (INT8, INT32),
    (INT16, INT8),
    (INT16, INT16),
    (INT16, INT32),
    (INT32, INT8),
    (INT32, INT16),
}


@operator("QUANTIZE", types=(*INT16_ACTIVATION_TYPES, INT32, UINT8))
def quantize(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    pair = (source.dtype, output.dtype)
    if pair not in _REQUANTIZED and pair not in ((FLOAT32, INT8), (FLOAT32, INT16)):
        _type_error(
            context,
            source,
            output,
            "float32 -> int8 or int16, int8 or int16 -> int8, int16 or int32, int32 -> int8 "
            "or int16, uint8 -> int8, int8 -> uint8",
        )
    target = _per_tensor(context, output)
    if source.dtype == FLOAT32:
        emit_unary(context, Quantize(target.scale, target.zero_point), in_place=True)
        return
    origin = _per_tensor(context, source)
    multiplier, shift = quantize_multiplier(origin.scale / target.scale)
    requantize = Requantize(
        origin.zero_point,
        multiplier,
        shift,
        target.zero_point,
        input_unsigned=source.dtype == UINT8,
        output_unsigned=output.dtype == UINT8,
    )
    emit_unary(context, requantize, in_place=True)


@operator("DEQUANTIZE", types=(*INT16_ACTIVATION_TYPES, UINT8))
def dequantize(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    if source.dtype not in (INT8, INT16, UINT8) or output.dtype != FLOAT32:
        _type_error(context, source, output, "int8, int16 or uint8 -> float32")
    if context.is_constant(0):  # int8 weights of a float operator: folded
        if source.shape != output.shape:
            raise context.fail(
                f"the output shape {list(output.shape)} differs from the input's "
                f"{list(source.shape)}"
            )
        context.fold(0, dequantized(context, source, context.constant(0)))
        return
    origin = _per_tensor(context, source)
    dequantize = Dequantize(origin.scale, origin.zero_point, unsigned=source.dtype == UINT8)
    emit_unary(context, dequantize, in_place=True)


# int8 output quantisation TFLite requires of LOGISTIC and TANH: (scale, zero point)
_INT8_OUTPUTS = {"LOGISTIC": (1 / 256, -128), "TANH": (1 / 128, 0)}


@operator("LOGISTIC", "TANH", types=INT16_ACTIVATION_TYPES)
def activation_function(context: OperatorContext) -> None:
    opcode = context.op.opcode
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output, allowed=INT16_ACTIVATION_TYPES)
    if dtype == FLOAT32:
        emit_unary(context, FloatFunction(opcode.lower()), in_place=True)
        return
    origin, target = _per_tensor(context, source), _per_tensor(context, output)
    if dtype == INT16:
        symmetric_int16(context, source, output)
        kind = "sigmoid" if opcode == "LOGISTIC" else "tanh"
        try:
            emit_unary(context, int16_activation(kind, origin.scale, target.scale), in_place=True)
        except UnsupportedScale as error:
            raise context.fail(str(error)) from None
        return
    scale, zero_point = _INT8_OUTPUTS[opcode]
    if (target.scale, target.zero_point) != (scale, zero_point):
        raise context.fail(
            f"the int8 output must have scale 1/{round(1 / scale)} and zero point {zero_point} "
            f"(it has {target.scale:g} and {target.zero_point})"
        )
    try:
        table = int8_table(opcode.lower(), origin.scale, origin.zero_point)
    except UnsupportedScale as error:
        raise context.fail(str(error)) from None
    emit_unary(context, Lookup(table), in_place=True)
