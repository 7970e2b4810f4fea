"""CUMSUM (int8 and float32) along a constant axis, with `exclusive` and `reverse`; int8
parameters as TFLM's `CalculateOpData` (double precision, ADD's left shift of 20)."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import INT8, quantization, require_types
from usmp_dialect.kernels.cumsum import QuantizedCumsum, cumsum
from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.kernels.module import memref_of


def _quantized(context: OperatorContext) -> QuantizedCumsum:
    source, output = (
        quantization(context, t) for t in (context.tensor(0), context.tensor(0, output=True))
    )
    left_shift = 20
    twice = 2 * float(source.scale)
    input_multiplier, input_shift = quantize_multiplier(float(source.scale) / twice)
    output_multiplier, output_shift = quantize_multiplier(
        twice / ((1 << left_shift) * float(output.scale))
    )
    if output_shift > 0:
        raise context.fail(
            f"the output scale {output.scale:g} is too small for the input scale "
            f"{source.scale:g} (TFLite requires a multiplier below 1)"
        )
    return QuantizedCumsum(
        -source.zero_point,
        input_multiplier,
        input_shift,
        output_multiplier,
        output_shift,
        output.zero_point,
        left_shift,
    )


@operator("CUMSUM")
def cumulative_sum(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output)
    if source.shape != output.shape or not source.shape:
        raise context.fail(f"the output shape {list(output.shape)} differs from the input's")
    axis_value = np.asarray(context.constant(1)).reshape(-1)
    rank = len(source.shape)
    if axis_value.size != 1 or not -rank <= int(axis_value[0]) < rank:
        raise context.fail(f"the axis {axis_value.tolist()} is not one of the {rank} dimensions")
    axis = int(axis_value[0]) % rank
    options = context.op.option(tflite.CumsumOptions)
    exclusive = bool(options.Exclusive()) if options is not None else False
    reverse = bool(options.Reverse()) if options is not None else False
    shape = source.shape
    view = (int(np.prod(shape[:axis])), shape[axis], int(np.prod(shape[axis + 1 :])))
    quantized = _quantized(context) if dtype == INT8 else None
    cumsum(context.module, context.name, memref_of(view, dtype), exclusive, reverse, quantized)
    context.call([context.view(context.value(0), view)], [context.view(context.result(), view)])
