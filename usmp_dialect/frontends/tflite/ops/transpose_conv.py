"""TRANSPOSE_CONV: int8 (per-channel or per-tensor filters, int32 bias), int16 (16x8: int8
filters, an int64 or int16 bias, summed in int64 and scaled by the 64-bit
`MultiplyByQuantizedMultiplier`, as TFLM's int16 path always does) and float32, SAME or VALID
padding, strides, an optional bias and a fused activation. Inputs as TFLite orders them: the
output shape (a constant), the filters (OHWI), the input, the bias."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import tflite
from xdsl.dialects.builtin import i64

from usmp_dialect.frontends.tflite.importer import (
    INT16_ACTIVATION_TYPES,
    OperatorContext,
    operator,
)
from usmp_dialect.frontends.tflite.ops.common import (
    INT8,
    INT16,
    float_activation,
    fused_activation,
    quantization,
    require_types,
    same_padding,
    symmetric_int16,
)
from usmp_dialect.frontends.tflite.ops.conv import _requantization
from usmp_dialect.frontends.tflite.reader import Operator
from usmp_dialect.kernels.conv import FloatActivation, QuantizedConv
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.transpose_conv import transpose_conv2d


def _padding(same: bool, size: int, filter_size: int, stride: int) -> int:
    """TFLite's `ComputePaddingHeightWidth` on the output's size (the transposed convolution
    is the gradient of a convolution from the output to the input)."""
    reached = (size + stride - 1) // stride if same else (size + stride - filter_size) // stride
    return max(0, (reached - 1) * stride + filter_size - size) // 2


def _supported(op: Operator) -> str | None:
    options = op.option(tflite.TransposeConvOptions)
    code = options.FusedActivationFunction() if options is not None else 0
    return None if code in (0, 1, 2, 3) else f"fused activation {code}"


@operator("TRANSPOSE_CONV", types=INT16_ACTIVATION_TYPES, supports=_supported)
def transpose_convolution(context: OperatorContext) -> None:
    options = context.op.option(tflite.TransposeConvOptions)
    if options is None:
        raise context.fail("missing options")
    filters, source, output = context.tensor(1), context.tensor(2), context.tensor(0, output=True)
    dtype = require_types(context, source, output, allowed=INT16_ACTIVATION_TYPES)
    if len(source.shape) != 4 or len(output.shape) != 4 or len(filters.shape) != 4:
        raise context.fail("input, filter and output must be 4-D (NHWC)")
    shape = [int(value) for value in np.asarray(context.constant(0)).reshape(-1)]
    if shape != list(output.shape):
        raise context.fail(f"the output shape input {shape} differs from {list(output.shape)}")
    channels = output.shape[3]
    if filters.shape[0] != channels or filters.shape[3] != source.shape[3]:
        raise context.fail(
            f"filter shape {list(filters.shape)} for {source.shape[3]} -> {channels} channels"
        )
    if source.shape[0] != output.shape[0]:
        raise context.fail("input and output batch sizes differ")
    stride = (options.StrideH(), options.StrideW())
    if min(stride) < 1:
        raise context.fail(f"invalid strides {stride}")
    same = same_padding(context, options.Padding())
    padding = (
        _padding(same, output.shape[1], filters.shape[1], stride[0]),
        _padding(same, output.shape[2], filters.shape[2], stride[1]),
    )
    activation = fused_activation(context, options.FusedActivationFunction())
    weights = context.constant(1)
    bias_tensor = context.optional_tensor(3)
    bias = context.constant(3) if bias_tensor is not None else None
    quantized = dtype in (INT8, INT16)
    expected_weights = INT8 if quantized else dtype
    # TFLM reads an int16 16x8 bias into int64 (`bias_converted_buffer`)
    expected_biases = {INT8: (np.int32,), INT16: (np.int64, np.int16)}.get(dtype, (dtype,))
    if weights.dtype != expected_weights:
        raise context.fail(f"{filters.describe()} is {weights.dtype.name}")
    if bias is not None and (bias.dtype not in expected_biases or bias.size != channels):
        names = " or ".join(np.dtype(t).name for t in expected_biases)
        raise context.fail(f"the bias must hold {channels} {names} values")
    if bias is not None and dtype == INT16:
        bias = bias.astype(np.int64)
    arithmetic: QuantizedConv | FloatActivation
    if quantized:
        requantization = _requantization(context, source, filters, output, channels, activation)
        if dtype == INT16:
            symmetric_int16(context, source, output)
            # int64 sums whatever the bias (TFLM's `TransposeConv<int64_t>` scratch buffer)
            arithmetic = QuantizedConv(0, replace(requantization, wide=True), accumulator=i64)
        else:
            arithmetic = QuantizedConv(-quantization(context, source).zero_point, requantization)
    else:
        arithmetic = float_activation(activation)
    module = context.module
    transpose_conv2d(
        module,
        context.name,
        memref_of(source.shape, dtype),
        memref_of(output.shape, dtype),
        module.constant(f"{context.name}_filter", weights),
        module.constant(f"{context.name}_bias", bias) if bias is not None else None,
        stride,
        padding,
        arithmetic,
    )
    context.call([context.value(2)], [context.result()])
