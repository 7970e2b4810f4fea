"""One-input operators of TFLM's activation and math kernels: RELU, RELU6, LEAKY_RELU,
HARD_SWISH, ELU, ABS and RSQRT (float32, and int8 through a table computed at import by TFLM's
integer kernel, `kernels.tables`), LEAKY_RELU, RELU, RELU6 and ABS also on int16 (16x8, zero
points 0, computed per element as TFLM's `QuantizeLeakyRelu<int16_t>`, `ReluQuantized<int16_t>`,
`Relu6Quantized<int16_t>` and `AbsEvalQuantized<int16_t>`), NEG, EXP, LOG, SQRT, SQUARE, SIN
and COS (float32, the types TFLM computes them in). TFLM's unquantised int16 ABS (a plain
`std::abs`) is refused: an int16 activation is 16x8 here."""

from __future__ import annotations

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
    quantization,
    require_types,
    symmetric_int16,
)
from usmp_dialect.frontends.tflite.ops.elementwise import emit_unary
from usmp_dialect.kernels import tables
from usmp_dialect.kernels.elementwise import (
    IntegerClamp,
    Lookup,
    QuantizedAbs,
    QuantizedLeakyRelu,
    Requantize,
    UnaryArithmetic,
)
from usmp_dialect.kernels.fixed_point import float32, quantize_multiplier, round_half_away
from usmp_dialect.kernels.float_math import FloatMath


def _apply(context: OperatorContext, arithmetic: UnaryArithmetic) -> None:
    """`arithmetic` on every element of input 0 into output 0 (of the same shape)."""
    emit_unary(context, arithmetic, in_place=False)


def _quant(context: OperatorContext, position: int, output: bool = False) -> tables.Quant:
    tensor = context.tensor(position, output=output)
    quant = quantization(context, tensor)
    if len(quant.scales) != 1:
        raise context.fail(f"{tensor.describe()} is quantised per channel")
    if not quant.scale > 0:
        raise context.fail(f"{tensor.describe()} has the invalid scale {quant.scale:g}")
    return float(np.float32(quant.scale)), int(quant.zero_point)


def _leaky_alpha(context: OperatorContext) -> float:
    options = context.op.option(tflite.LeakyReluOptions)
    return float(np.float32(options.Alpha())) if options is not None else 0.0


def _int8_table(context: OperatorContext) -> np.ndarray:
    opcode = context.op.opcode
    source, target = _quant(context, 0), _quant(context, 0, output=True)
    if opcode == "RELU":
        return tables.relu_table(source, target)
    if opcode == "RELU6":
        return tables.relu6_table(source)
    if opcode == "LEAKY_RELU":
        return tables.leaky_relu_table(source, target, _leaky_alpha(context))
    if opcode == "HARD_SWISH":
        try:
            return tables.hard_swish_table(source, target)
        except tables.UnsupportedHardSwish as error:
            raise context.fail(str(error)) from None
    if opcode == "ELU":
        return tables.elu_table(source, target)
    if opcode == "RSQRT":
        return tables.rsqrt_table(source, target)
    assert opcode == "ABS"
    return tables.abs_table(source, target)


@operator("LEAKY_RELU", types=INT16_ACTIVATION_TYPES)
def leaky_relu(context: OperatorContext) -> None:
    dtype = require_types(
        context, context.tensor(0), context.tensor(0, output=True), allowed=INT16_ACTIVATION_TYPES
    )
    if dtype != INT16:
        activation(context)
        return
    source, target = _quant(context, 0), _quant(context, 0, output=True)
    identity, alpha = tables.leaky_relu_parameters(source, target, _leaky_alpha(context))
    _apply(context, QuantizedLeakyRelu(source[1], identity, alpha, target[1]))


def _int16_arithmetic(context: OperatorContext) -> UnaryArithmetic:
    """RELU, RELU6 or ABS on int16 (zero points 0), with TFLM's `Prepare` parameters."""
    opcode = context.op.opcode
    source, output = context.tensor(0), context.tensor(0, output=True)
    if source.quantization is None and opcode == "ABS":
        raise context.fail(
            "an unquantised int16 ABS is not supported (int16 activations are 16x8 here)"
        )
    symmetric_int16(context, source, output)
    (input_scale, _), (output_scale, _) = _quant(context, 0), _quant(context, 0, output=True)
    if opcode == "RELU6":  # `Relu6Prepare`: 6 quantised with the input's scale, no rescaling
        six = round_half_away(float32(6.0 / float32(input_scale)))
        return IntegerClamp(0, min(max(six, -32768), 32767))
    multiplier, shift = quantize_multiplier(input_scale / output_scale)
    if opcode == "RELU":  # `CalculateReluOpData<int16_t>`: clamped below at the zero point
        return Requantize(0, multiplier, shift, 0, low=0)
    assert opcode == "ABS"
    return QuantizedAbs(None if input_scale == output_scale else (multiplier, shift))


@operator("RELU", "RELU6", "ABS", types=INT16_ACTIVATION_TYPES)
@operator("HARD_SWISH", "ELU", "RSQRT")
def activation(context: OperatorContext) -> None:
    opcode = context.op.opcode
    dtype = require_types(
        context, context.tensor(0), context.tensor(0, output=True), allowed=INT16_ACTIVATION_TYPES
    )
    if dtype == INT16:
        _apply(context, _int16_arithmetic(context))
        return
    if dtype == INT8:
        _apply(context, Lookup(_int8_table(context)))
        return
    _apply(context, FloatMath(opcode.lower(), _leaky_alpha(context)))


@operator("NEG", "EXP", "LOG", "SQRT", "SQUARE", "SIN", "COS", types=(FLOAT32,))
def float_function(context: OperatorContext) -> None:
    require_types(context, context.tensor(0), context.tensor(0, output=True))
    _apply(context, FloatMath(context.op.opcode.lower()))
