"""What several TFLite operator handlers share: padding, fused activations, quantisation."""

from __future__ import annotations

from typing import Any

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext
from usmp_dialect.frontends.tflite.reader import Operator, Quantization, Tensor
from usmp_dialect.kernels.conv import FloatActivation, Window
from usmp_dialect.kernels.fixed_point import activation_range, float_activation_range

_ACTIVATIONS = {
    tflite.ActivationFunctionType.NONE: "NONE",
    tflite.ActivationFunctionType.RELU: "RELU",
    tflite.ActivationFunctionType.RELU_N1_TO_1: "RELU_N1_TO_1",
    tflite.ActivationFunctionType.RELU6: "RELU6",
}

INT8 = np.dtype(np.int8)
INT16 = np.dtype(np.int16)
INT32 = np.dtype(np.int32)
INT64 = np.dtype(np.int64)
FLOAT32 = np.dtype(np.float32)
UINT8 = np.dtype(np.uint8)
_ACTIVATION_NAMES = {
    code: name
    for name, code in vars(tflite.ActivationFunctionType).items()
    if not name.startswith("_")
}
# The options table holding each operator's fused activation.
_FUSED_OPTIONS: dict[str, type] = {
    "CONV_2D": tflite.Conv2DOptions,
    "DEPTHWISE_CONV_2D": tflite.DepthwiseConv2DOptions,
    "FULLY_CONNECTED": tflite.FullyConnectedOptions,
    "AVERAGE_POOL_2D": tflite.Pool2DOptions,
    "MAX_POOL_2D": tflite.Pool2DOptions,
    "L2_POOL_2D": tflite.Pool2DOptions,
    "ADD": tflite.AddOptions,
    "SUB": tflite.SubOptions,
    "MUL": tflite.MulOptions,
    "CONCATENATION": tflite.ConcatenationOptions,
}


def supported_fused_activation(op: Operator) -> str | None:
    """The `supports` check of operators with a fused activation: the kernels apply NONE,
    RELU, RELU_N1_TO_1 and RELU6 (CONCATENATION none)."""
    options = op.option(_FUSED_OPTIONS[op.opcode])
    code = options.FusedActivationFunction() if options is not None else 0
    allowed = (0,) if op.opcode == "CONCATENATION" else tuple(_ACTIVATIONS)
    if code in allowed:
        return None
    return f"fused activation {_ACTIVATION_NAMES.get(code, str(code))}"


def fused_activation(context: OperatorContext, code: int) -> str:
    if code not in _ACTIVATIONS:
        raise context.fail(f"unsupported fused activation {code}")
    return _ACTIVATIONS[code]


def same_padding(context: OperatorContext, code: int) -> bool:
    if code == tflite.Padding.SAME:
        return True
    if code == tflite.Padding.VALID:
        return False
    raise context.fail(f"unknown padding {code}")


def padding_before(
    context: OperatorContext,
    same: bool,
    size: int,
    out_size: int,
    filter_size: int,
    stride: int,
    dilation: int,
) -> int:
    """TFLite's `ComputePaddingHeightWidth` for one dimension: the padding before the input
    (the odd extra goes after); checks the model's output size against it."""
    effective = (filter_size - 1) * dilation + 1
    expected = (size + stride - 1) // stride if same else (size + stride - effective) // stride
    if expected != out_size:
        raise context.fail(
            f"the output size {out_size} does not match the input {size}, filter "
            f"{filter_size}, stride {stride}, dilation {dilation} ({expected} expected)"
        )
    if not same:
        return 0
    total = max(0, (out_size - 1) * stride + effective - size)
    return total // 2


def window(
    context: OperatorContext,
    options: Any,
    source: Tensor,
    output: Tensor,
    filter_size: tuple[int, int],
    dilation: tuple[int, int] = (1, 1),
) -> Window:
    """The sliding window of a 2-D NHWC operator from its options (padding and strides):
    checked against the input and output sizes. A PAD folded into the operator
    (`Operator.padding`, `frontends/tflite/folding.py`) pads the input first: the options'
    padding applies to the padded size, and the PAD's padding before adds to it."""
    same = same_padding(context, options.Padding())
    stride = (options.StrideH(), options.StrideW())
    if min(*filter_size, *stride, *dilation) < 1:
        raise context.fail(
            f"invalid filter {filter_size}, strides {stride} or dilations {dilation}"
        )
    folded = context.op.padding or ((0, 0), (0, 0))
    top, left = (
        folded[axis][0]
        + padding_before(
            context,
            same,
            source.shape[1 + axis] + sum(folded[axis]),
            output.shape[1 + axis],
            filter_size[axis],
            stride[axis],
            dilation[axis],
        )
        for axis in (0, 1)
    )
    return Window(stride, dilation, (top, left))


def quantization(context: OperatorContext, tensor: Tensor) -> Quantization:
    if tensor.quantization is None:
        raise context.fail(f"the int8 {tensor.describe()} has no quantisation parameters")
    return tensor.quantization


def activation_bounds(context: OperatorContext, output: Tensor, activation: str) -> tuple[int, int]:
    """The int8 (int16) clamp of a fused activation on `output`."""
    quant = quantization(context, output)
    limits = np.iinfo(output.dtype)
    return activation_range(
        activation, quant.scale, quant.zero_point, int(limits.min), int(limits.max)
    )


def symmetric_int16(context: OperatorContext, *tensors: Tensor) -> None:
    """TFLite's 16x8 scheme: int16 activations are quantised symmetrically (zero point 0);
    TFLM's int16 kernels ignore any other zero point, so a model with one is refused."""
    for tensor in tensors:
        if tensor.dtype != INT16:
            continue
        quant = quantization(context, tensor)
        if bool((quant.zero_points != 0).any()):
            raise context.fail(
                f"the int16 {tensor.describe()} has zero point {quant.zero_point}; 16x8 "
                "quantisation needs zero point 0"
            )


def float_activation(activation: str) -> FloatActivation:
    return FloatActivation(*float_activation_range(activation))


def dequantized(context: OperatorContext, tensor: Tensor, values: np.ndarray) -> np.ndarray:
    """int8 constant weights of a hybrid model as float32, `scale * (q - zero_point)` per
    channel along the quantised dimension, as TFLite's `Dequantize` computes them."""
    quant = quantization(context, tensor)
    shape = [1] * values.ndim
    if len(quant.scales) > 1:
        shape[quant.axis] = len(quant.scales)
    scales = quant.scales.astype(np.float32).reshape(shape)
    zero_points = quant.zero_points.astype(np.int32).reshape(shape)
    return ((values.astype(np.int32) - zero_points).astype(np.float32) * scales).astype(np.float32)


def require_types(
    context: OperatorContext, *tensors: Tensor, allowed: tuple[np.dtype, ...] = (INT8, FLOAT32)
) -> np.dtype:
    """All activations share one type, one of `allowed` (int8 or float32 unless the operator
    computes with int16 too): that type."""
    dtypes = {tensor.dtype for tensor in tensors}
    if len(dtypes) != 1 or next(iter(dtypes)) not in allowed:
        described = ", ".join(f"{t.describe()}: {t.dtype.name}" for t in tensors)
        raise context.fail(f"unsupported combination of tensor types ({described})")
    return next(iter(dtypes))
