"""LOG_SOFTMAX and L2_NORMALIZATION (int8 and float32) over the last axis."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import FLOAT32, INT8, quantization, require_types
from usmp_dialect.frontends.tflite.reader import Operator
from usmp_dialect.kernels.fixed_point import float32
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.row_functions import l2_normalization_int8, row_function
from usmp_dialect.kernels.softmax import log_softmax_int8, log_softmax_tables


def _plain_l2(op: Operator) -> str | None:
    """L2_NORMALIZATION's fused activation: TFLM's kernel applies none."""
    options = op.option(tflite.L2NormOptions)
    code = options.FusedActivationFunction() if options is not None else 0
    return None if code == 0 else f"fused activation {code}"


@operator("L2_NORMALIZATION", supports=_plain_l2)
def l2_normalization(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    if require_types(context, source, output) == FLOAT32:
        row_normalization(context)
        return
    target = quantization(context, output)
    if (float32(target.scale), target.zero_point) != (float32(1 / 128), 0):
        raise context.fail(
            "int8 L2_NORMALIZATION needs the output scale 1/128 and zero point 0 (has "
            f"{target.scale:g} and {target.zero_point})"
        )
    if source.shape != output.shape:
        raise context.fail(f"output shape {list(output.shape)} differs from the input's")
    depth = source.shape[-1]
    rows = int(np.prod(source.shape)) // depth
    zero_point = quantization(context, source).zero_point
    l2_normalization_int8(context.module, context.name, memref_of((rows, depth), INT8), zero_point)
    source_value = context.view(context.value(0), (rows, depth))
    context.call([source_value], [context.view(context.result(), (rows, depth))])


# TFLM's int8 LOG_SOFTMAX output quantisation, compared exactly (`kOutputScale`)
_LOG_SOFTMAX_OUTPUT = (float32(16.0 / 256), 127)


@operator("LOG_SOFTMAX")
def row_normalization(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output)
    if source.shape != output.shape:
        raise context.fail(f"output shape {list(output.shape)} differs from the input's")
    depth = source.shape[-1]
    rows = int(np.prod(source.shape)) // depth
    type_ = memref_of((rows, depth), dtype)
    if dtype == INT8:
        target = quantization(context, output)
        if (float32(target.scale), target.zero_point) != _LOG_SOFTMAX_OUTPUT:
            raise context.fail(
                "int8 LOG_SOFTMAX needs the output scale 16/256 and zero point 127 (has "
                f"{target.scale:g} and {target.zero_point})"
            )
        source_scale = float32(quantization(context, source).scale)
        if not source_scale * (1 << 26) > 1.0:
            raise context.fail(f"the input scale {source_scale:g} is below TFLite's 2**-26")
        tables = log_softmax_tables(source_scale)
        log_softmax_int8(context.module, context.name, type_, tables)
    else:
        row_function(context.module, context.name, type_, context.op.opcode.lower())
    source_value = context.view(context.value(0), (rows, depth))
    context.call([source_value], [context.view(context.result(), (rows, depth))])
