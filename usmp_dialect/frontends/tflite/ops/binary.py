"""Binary elementwise operators beyond ADD/SUB/MUL: MAXIMUM and MINIMUM (int8, int16, int32,
int64 and float32, the types of TFLM's `maximum_minimum.cc`), SQUARED_DIFFERENCE (int8, int16
(16x8), int32 and float32, `squared_difference.cc`'s), PRELU (int8, float32, and int16 with
an int8 alpha as `prelu.cc`'s int16 case) and DIV (int8, float32 and unquantised int32,
`kernels.elementwise.IntegerBinary`).
NumPy broadcasting and constant inputs as ADD's; int8 and int16 parameters derived as TFLM's
`Prepare` functions do."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    INT16,
    INT32,
    INT64,
    activation_bounds,
    float_activation,
    fused_activation,
    quantization,
    require_types,
    symmetric_int16,
)
from usmp_dialect.frontends.tflite.ops.elementwise import (
    INT32_BOUNDS,
    check_broadcast,
    emit_broadcast,
)
from usmp_dialect.frontends.tflite.reader import Operator, Tensor
from usmp_dialect.kernels.binary_math import (
    Extremum,
    PlainSquaredDifference,
    Prelu,
    QuantizedDiv,
    QuantizedSquaredDifference,
)
from usmp_dialect.kernels.elementwise import (
    BinaryArithmetic,
    FloatBinary,
    IntegerBinary,
)
from usmp_dialect.kernels.fixed_point import float32, quantize_multiplier


def _broadcast(context: OperatorContext, arithmetic: BinaryArithmetic, dtype: np.dtype) -> None:
    """`output = input1 op input2` with NumPy broadcasting, as ADD's (its output not written
    over an input)."""
    check_broadcast(context)
    emit_broadcast(context, arithmetic, dtype, in_place=False)


def _scale(context: OperatorContext, tensor: Tensor) -> tuple[float, int]:
    """A per-tensor quantisation: (scale as the float32 TFLM reads, zero point)."""
    quant = quantization(context, tensor)
    if len(quant.scales) != 1:
        raise context.fail(f"{tensor.describe()} is quantised per channel")
    if not quant.scale > 0:
        raise context.fail(f"{tensor.describe()} has the invalid scale {quant.scale:g}")
    return float32(quant.scale), int(quant.zero_point)


_EXTREMUM_TYPES = (INT8, INT16, INT32, INT64, FLOAT32)
_SQUARED_DIFFERENCE_TYPES = (INT8, INT16, INT32, FLOAT32)


@operator("MAXIMUM", "MINIMUM", types=_EXTREMUM_TYPES)
def extremum(context: OperatorContext) -> None:
    dtype = require_types(
        context,
        context.tensor(0),
        context.tensor(1),
        context.tensor(0, output=True),
        allowed=_EXTREMUM_TYPES,
    )
    _broadcast(context, Extremum(maximum=context.op.opcode == "MAXIMUM"), dtype)


def _quantized_squared_difference(
    context: OperatorContext, dtype: np.dtype
) -> QuantizedSquaredDifference:
    """TFLM's `PrepareQuantized` with a left shift of 7 (int16: 0, the values are already
    16-bit; double precision, the output scale times 2**(2 * shift) in float)."""
    tensors = (context.tensor(0), context.tensor(1), context.tensor(0, output=True))
    symmetric_int16(context, *tensors)
    (s1, z1), (s2, z2), (so, zo) = (_scale(context, t) for t in tensors)
    left_shift = 7 if dtype == INT8 else 0
    twice_max = 2.0 * max(s1, s2)
    inputs = [quantize_multiplier(scale / twice_max) for scale in (s1, s2)]
    output_multiplier, output_shift = quantize_multiplier(
        twice_max * twice_max / float32((1 << (2 * left_shift)) * so)
    )
    return QuantizedSquaredDifference(
        (-z1, -z2),
        (inputs[0][0], inputs[1][0]),
        (inputs[0][1], inputs[1][1]),
        output_multiplier,
        output_shift,
        zo,
        left_shift,
    )


@operator("SQUARED_DIFFERENCE", types=_SQUARED_DIFFERENCE_TYPES)
def squared_difference(context: OperatorContext) -> None:
    dtype = require_types(
        context,
        context.tensor(0),
        context.tensor(1),
        context.tensor(0, output=True),
        allowed=_SQUARED_DIFFERENCE_TYPES,
    )
    arithmetic = (
        _quantized_squared_difference(context, dtype)
        if dtype in (INT8, INT16)
        else PlainSquaredDifference()
    )
    _broadcast(context, arithmetic, dtype)


@operator("PRELU", types=(INT8, INT16, FLOAT32))
def prelu(context: OperatorContext) -> None:
    source, alpha, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    dtype = require_types(context, source, output, allowed=(INT8, INT16, FLOAT32))
    require_types(context, alpha, allowed=(INT8,) if dtype == INT16 else (dtype,))
    symmetric_int16(context, source, output)
    if dtype == FLOAT32:
        _broadcast(context, Prelu(), dtype)
        return
    (si, zi), (sa, za), (so, zo) = (_scale(context, t) for t in (source, alpha, output))
    arithmetic = Prelu(
        input_offset=-zi,
        alpha_offset=-za,
        identity=quantize_multiplier(si / so),
        product=quantize_multiplier(si * sa / so),
        output_offset=zo,
    )
    _broadcast(context, arithmetic, dtype)


def _div_activation(op: Operator) -> str | None:
    options = op.option(tflite.DivOptions)
    code = options.FusedActivationFunction() if options is not None else 0
    return None if code in (0, 1, 2, 3) else f"fused activation {code}"


# A larger output shift could make TFLite's final right shift negative: the dividend's
# headroom is at least 22 bits (|input1 - zero point| <= 255) and the reciprocal's shift -1
# (a zero divisor)
_DIV_SHIFT_LIMIT = 22


def _quantized_div(context: OperatorContext, activation: str) -> QuantizedDiv:
    """TFLM's `CalculateOpDataDiv`. The multiplier is `input1 / (input2 * output)` in double
    precision, which is what the TFLM build we compare with computes (a float32 quotient
    differs in the last bit for scales such as 0.5 / (0.01 * 0.1))."""
    first, second, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    (s1, z1), (s2, z2), (so, zo) = (_scale(context, t) for t in (first, second, output))
    multiplier, shift = quantize_multiplier(s1 / (s2 * so))
    if shift > _DIV_SHIFT_LIMIT:
        raise context.fail(
            f"the scales give the output multiplier 2**{shift - 31} * {multiplier}, beyond "
            f"2**{_DIV_SHIFT_LIMIT} (TFLite's int8 division would shift by a negative amount)"
        )
    low, high = activation_bounds(context, output, activation)
    return QuantizedDiv((-z1, -z2), multiplier, shift, zo, low, high)


@operator("DIV", types=(INT8, INT32, FLOAT32), supports=_div_activation)
def div(context: OperatorContext) -> None:
    tensors = (context.tensor(0), context.tensor(1), context.tensor(0, output=True))
    dtype = require_types(context, *tensors, allowed=(INT8, INT32, FLOAT32))
    options = context.op.option(tflite.DivOptions)
    activation = fused_activation(context, options.FusedActivationFunction() if options else 0)
    if dtype == INT32:
        if any(tensor.quantization is not None for tensor in tensors[:2]):
            raise context.fail("a quantised int32 DIV is not supported (nor is it by TFLM)")
        _broadcast(context, IntegerBinary("div", INT32_BOUNDS[activation]), dtype)
        return
    if dtype == INT8:
        _broadcast(context, _quantized_div(context, activation), dtype)
        return
    _broadcast(context, FloatBinary("div", float_activation(activation)), dtype)
