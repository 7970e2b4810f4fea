"""Binary elementwise operators beyond ADD/SUB/MUL: MAXIMUM, MINIMUM, SQUARED_DIFFERENCE and
PRELU (int8 and float32), DIV (float32; TFLM's int8 DIV is not imported). NumPy broadcasting and
constant inputs as ADD's; int8 parameters derived as TFLM's `Prepare` functions do."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    float_activation,
    fused_activation,
    quantization,
    require_types,
)
from usmp_dialect.frontends.tflite.ops.elementwise import check_broadcast, emit_broadcast
from usmp_dialect.frontends.tflite.reader import Operator, Tensor
from usmp_dialect.kernels.binary_math import (
    Extremum,
    FloatSquaredDifference,
    Prelu,
    QuantizedSquaredDifference,
)
from usmp_dialect.kernels.elementwise import (
    BinaryArithmetic,
    FloatBinary,
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


@operator("MAXIMUM", "MINIMUM")
def extremum(context: OperatorContext) -> None:
    dtype = require_types(
        context, context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    )
    _broadcast(context, Extremum(maximum=context.op.opcode == "MAXIMUM"), dtype)


def _quantized_squared_difference(context: OperatorContext) -> QuantizedSquaredDifference:
    """TFLM's `PrepareQuantized` with a left shift of 7 (double precision, the output scale
    times 2**14 in float)."""
    (s1, z1), (s2, z2), (so, zo) = (
        _scale(context, t)
        for t in (context.tensor(0), context.tensor(1), context.tensor(0, output=True))
    )
    left_shift = 7
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


@operator("SQUARED_DIFFERENCE")
def squared_difference(context: OperatorContext) -> None:
    dtype = require_types(
        context, context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    )
    arithmetic = (
        _quantized_squared_difference(context) if dtype == INT8 else FloatSquaredDifference()
    )
    _broadcast(context, arithmetic, dtype)


@operator("PRELU")
def prelu(context: OperatorContext) -> None:
    source, alpha, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    dtype = require_types(context, source, alpha, output)
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


@operator("DIV", types=(FLOAT32,), supports=_div_activation)
def div(context: OperatorContext) -> None:
    dtype = require_types(
        context, context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    )
    options = context.op.option(tflite.DivOptions)
    activation = fused_activation(context, options.FusedActivationFunction() if options else 0)
    _broadcast(context, FloatBinary("div", float_activation(activation)), dtype)
