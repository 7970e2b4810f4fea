"""AVERAGE_POOL_2D and MAX_POOL_2D, int8, int16 and float32; L2_POOL_2D, float32 (the one type
TFLM's `l2_pool_2d.cc` computes)."""

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
    activation_bounds,
    float_activation,
    fused_activation,
    quantization,
    require_types,
    supported_fused_activation,
    window,
)
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.pooling import Pool, pool2d

_FLOAT_MAX = float(np.finfo(np.float32).max)


def pooling_parameters(context: OperatorContext) -> Pool:
    """Checks an AVERAGE_POOL_2D / MAX_POOL_2D and returns what its kernel computes."""
    options = context.op.option(tflite.Pool2DOptions)
    if options is None:
        raise context.fail("missing options")
    source, output = context.tensor(0), context.tensor(0, output=True)
    float_only = context.op.opcode == "L2_POOL_2D"
    allowed = (FLOAT32,) if float_only else INT16_ACTIVATION_TYPES
    dtype = require_types(context, source, output, allowed=allowed)
    if len(source.shape) != 4 or len(output.shape) != 4:
        raise context.fail("input and output must be 4-D (NHWC)")
    if source.shape[0] != output.shape[0] or source.shape[3] != output.shape[3]:
        raise context.fail(f"output shape {list(output.shape)} for input {list(source.shape)}")
    if dtype != FLOAT32:
        source_q, output_q = quantization(context, source), quantization(context, output)
        if (source_q.scale, source_q.zero_point) != (output_q.scale, output_q.zero_point):
            raise context.fail(f"{dtype.name} pooling needs equal input and output quantisation")
    activation = fused_activation(context, options.FusedActivationFunction())
    filter_size = (options.FilterHeight(), options.FilterWidth())
    pool_window = window(context, options, source, output, filter_size)
    if dtype != FLOAT32:
        low, high = activation_bounds(context, output, activation)
        bounds: tuple[float, float] = (low, high)
    else:
        bounds = (float_activation(activation).low, float_activation(activation).high)
    if float_only:  # TFLM's L2 pool clamps to float's range without activation (inf -> max)
        bounds = (max(bounds[0], -_FLOAT_MAX), min(bounds[1], _FLOAT_MAX))
    kind = {"AVERAGE_POOL_2D": "average", "MAX_POOL_2D": "max", "L2_POOL_2D": "l2"}
    return Pool(kind[context.op.opcode], filter_size, pool_window, *bounds)


@operator(
    "AVERAGE_POOL_2D",
    "MAX_POOL_2D",
    types=INT16_ACTIVATION_TYPES,
    supports=supported_fused_activation,
)
@operator("L2_POOL_2D", types=(FLOAT32,), supports=supported_fused_activation)
def pooling(context: OperatorContext) -> None:
    pool = pooling_parameters(context)
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = source.dtype
    pool2d(
        context.module,
        context.name,
        memref_of(source.shape, dtype),
        memref_of(output.shape, dtype),
        pool,
    )
    context.call([context.value(0)], [context.result()])
