"""Reshape-like operators: views of their input, never copies (RESHAPE, SQUEEZE, EXPAND_DIMS).
RESHAPE and SQUEEZE take every activation type (bool, int32 and int64 too: an ARG_MAX or a
comparison reshaped), EXPAND_DIMS the types TFLM's `expand_dims.cc` takes (int8, int16,
float32: "Expand_Dims only currently supports int8, int16 and float32")."""

from __future__ import annotations

import numpy as np

from usmp_dialect.frontends.tflite.importer import (
    INT16_ACTIVATION_TYPES,
    KNOWN_ACTIVATION_TYPES,
    OperatorContext,
    operator,
)


@operator("EXPAND_DIMS", types=INT16_ACTIVATION_TYPES)
@operator("RESHAPE", "SQUEEZE", types=KNOWN_ACTIVATION_TYPES)
def reshape(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    if source.dtype != output.dtype:
        raise context.fail(f"input type {source.dtype.name} differs from {output.dtype.name}")
    if int(np.prod(source.shape)) != int(np.prod(output.shape)):
        raise context.fail(f"cannot view shape {list(source.shape)} as {list(output.shape)}")
    if (source.quantization is None) != (output.quantization is None) or (
        source.quantization is not None
        and output.quantization is not None
        and (source.quantization.scale, source.quantization.zero_point)
        != (output.quantization.scale, output.quantization.zero_point)
    ):
        raise context.fail("input and output quantisation differ")
    constant = context.importer.constant_value(source)
    if constant is not None:
        context.fold(0, constant.reshape(output.shape))
        return
    context.importer.alias(output, context.value(0))
