"""MEAN, SUM, REDUCE_MAX and REDUCE_MIN over constant axes, int8 (TFLite Micro's
requantisation, for MEAN also when the input and output quantisations are equal) and float32;
MEAN and SUM also int16 (16x8 models: the same `QuantizedMeanOrSum`, clamped to int16).
REDUCE_MAX is not registered for int16, as TFLM's `EvalMax` computes only int8 and float32
("Only float32 and int8 types are supported"), so a 16x8 model with one is refused in the
import's pre-scan."""

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
    quantization,
    require_types,
)
from usmp_dialect.frontends.tflite.ops.data_movement import same_quantization
from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.reduce import QuantizedMean, reduce

_KINDS = {"MEAN": "mean", "SUM": "sum", "REDUCE_MAX": "max", "REDUCE_MIN": "min"}


@operator("MEAN", "SUM", types=INT16_ACTIVATION_TYPES)
@operator("REDUCE_MAX", "REDUCE_MIN")
def reduction(context: OperatorContext) -> None:
    options = context.op.option(tflite.ReducerOptions)
    keep_dims = bool(options.KeepDims()) if options is not None else False
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output, allowed=INT16_ACTIVATION_TYPES)
    axis_values = context.constant(1)
    if axis_values.dtype != np.int32:
        raise context.fail(f"the axes are {axis_values.dtype.name}, int32 expected")
    shape = source.shape
    rank = len(shape)
    axes: list[int] = []
    for axis in axis_values.reshape(-1).tolist():
        if not -rank <= axis < rank:
            raise context.fail(f"axis {axis} is outside the {rank}-D input")
        if axis % rank not in axes:
            axes.append(axis % rank)
    kept = tuple(1 if axis in axes else size for axis, size in enumerate(shape))
    expected = kept if keep_dims else tuple(s for a, s in enumerate(shape) if a not in axes)
    # A reduction to a scalar in a model with control flow writes a one-element vector
    # (`reader._scalars_as_vectors`): the same byte.
    if tuple(output.shape) != expected and not (expected == () and output.shape == (1,)):
        raise context.fail(f"the output shape {list(output.shape)} should be {list(expected)}")
    kind = _KINDS[context.op.opcode]
    quantized = None
    if dtype != FLOAT32 and kind in ("max", "min"):
        same_quantization(context, [source], output)
    elif dtype != FLOAT32:
        source_q, output_q = quantization(context, source), quantization(context, output)
        multiplier, shift = quantize_multiplier(source_q.scale / output_q.scale)
        quantized = QuantizedMean(source_q.zero_point, multiplier, shift, output_q.zero_point)
    reduce(
        context.module,
        context.name,
        memref_of(shape, dtype),
        memref_of(kept, dtype),
        axes,
        kind,
        quantized,
    )
    context.call([context.value(0)], [context.view(context.result(), kept)])
