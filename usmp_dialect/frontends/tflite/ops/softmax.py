"""SOFTMAX over the last axis, int8 (TFLite's output quantisation: scale 1/256, zero point
-128), int8 in and int16 out (scale 1/65536, zero point -32768: TFLM's `SoftmaxInt8` with an
int16 output), int16 (16x8: output scale 1/32768, zero point 0; TFLM's `SoftmaxInt16` with its
`exp` and `1 / (1 + x)` tables) and float32."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import (
    INT16_ACTIVATION_TYPES,
    OperatorContext,
    operator,
)
from usmp_dialect.frontends.tflite.ops.common import INT8, INT16, quantization, require_types
from usmp_dialect.kernels.fixed_point import float32
from usmp_dialect.kernels.lut16 import softmax_int16, softmax_int16_parameters
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.softmax import exp_table, softmax_float, softmax_int8, softmax_parameters


@operator("SOFTMAX", types=INT16_ACTIVATION_TYPES)
def softmax(context: OperatorContext) -> None:
    options = context.op.option(tflite.SoftmaxOptions)
    beta = float32(options.Beta()) if options is not None else 1.0
    source, output = context.tensor(0), context.tensor(0, output=True)
    widened = (source.dtype, output.dtype) == (INT8, INT16)
    dtype = require_types(
        context, source, *(() if widened else (output,)), allowed=INT16_ACTIVATION_TYPES
    )
    if source.shape != output.shape:
        raise context.fail(f"output shape {list(output.shape)} differs from the input's")
    depth = source.shape[-1]
    rows = int(np.prod(source.shape)) // depth
    type_ = memref_of((rows, depth), dtype)
    if widened:
        output_q = quantization(context, output)
        # TFLM's check: zero point -32768, scale 1/65536 within 0.1 %
        if output_q.zero_point != -32768 or abs(output_q.scale - 1 / 65536) > 0.001 / 65536:
            raise context.fail(
                "an int8 softmax with an int16 output needs the output scale 1/65536 and zero "
                f"point -32768 (has {output_q.scale} and {output_q.zero_point})"
            )
        table = exp_table(*softmax_parameters(beta, quantization(context, source).scale))
        softmax_int8(context.module, context.name, type_, table, memref_of((rows, depth), INT16))
    elif dtype == INT8:
        output_q = quantization(context, output)
        if output_q.zero_point != -128 or output_q.scale != float32(1.0 / 256):
            raise context.fail(
                "int8 softmax needs the output scale 1/256 and zero point -128 "
                f"(has {output_q.scale} and {output_q.zero_point})"
            )
        table = exp_table(*softmax_parameters(beta, quantization(context, source).scale))
        softmax_int8(context.module, context.name, type_, table)
    elif dtype == INT16:
        output_q = quantization(context, output)
        # TFLM's check: zero point 0, scale 1/32768 within 0.1 %
        if output_q.zero_point != 0 or abs(output_q.scale - 1 / 32768) > 0.001 / 32768:
            raise context.fail(
                "int16 softmax needs the output scale 1/32768 and zero point 0 "
                f"(has {output_q.scale} and {output_q.zero_point})"
            )
        parameters = softmax_int16_parameters(beta, quantization(context, source).scale)
        softmax_int16(context.module, context.name, type_, *parameters)
    else:
        softmax_float(context.module, context.name, type_, beta)
    source_value = context.view(context.value(0), (rows, depth))
    context.call([source_value], [context.view(context.result(), (rows, depth))])
