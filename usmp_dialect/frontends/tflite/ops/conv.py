"""CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: int8 (per-tensor and per-channel), float32,
and hybrid (int8 weights, float activations: the weights are dequantised at import)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    activation_bounds,
    dequantized,
    float_activation,
    fused_activation,
    quantization,
    require_types,
    supported_fused_activation,
    window,
)
from usmp_dialect.frontends.tflite.reader import Operator, Tensor
from usmp_dialect.kernels.conv import (
    FloatActivation,
    QuantizedConv,
    Window,
    conv2d,
    fold_input_offset,
)
from usmp_dialect.kernels.fixed_point import float32, quantize_multiplier
from usmp_dialect.kernels.fully_connected import fully_connected
from usmp_dialect.kernels.module import MemRefType, Requantization, memref_of


def _requantization(
    context: OperatorContext,
    source: Tensor,
    filters: Tensor,
    output: Tensor,
    channels: int,
    activation: str,
    float_product: bool = False,
) -> Requantization:
    """Per-channel (or per-tensor) multipliers as TFLite's `PopulateConvolutionQuantization
    Params` computes them: input_scale * filter_scale / output_scale in double precision.
    `float_product`: the product is taken in float first (`GetQuantizedConvolutionMultipler`,
    TFLite's per-tensor fully connected layer)."""
    input_scale = quantization(context, source).scale
    output_scale = quantization(context, output).scale
    filter_scales = quantization(context, filters).scales
    if len(filter_scales) not in (1, channels):
        raise context.fail(
            f"{filters.describe()} has {len(filter_scales)} scales for {channels} channels"
        )
    multipliers, shifts = [], []
    for scale in filter_scales:
        product = (
            float32(input_scale * float(scale)) if float_product else input_scale * float(scale)
        )
        multiplier, shift = quantize_multiplier(product / output_scale)
        multipliers.append(multiplier)
        shifts.append(shift)
    low, high = activation_bounds(context, output, activation)
    return Requantization(
        np.array(multipliers, dtype=np.int32),
        np.array(shifts, dtype=np.int32),
        quantization(context, output).zero_point,
        low,
        high,
    )


def _weights_and_bias(
    context: OperatorContext, dtype: np.dtype, channels: int
) -> tuple[np.ndarray, np.ndarray | None]:
    filters = context.tensor(1)
    weights = context.constant(1)
    bias_tensor = context.optional_tensor(2)
    bias = context.constant(2) if bias_tensor is not None else None
    if dtype == INT8:
        if filters.dtype != INT8:
            raise context.fail(f"{filters.describe()} is {filters.dtype.name}, int8 expected")
        if bias is not None and bias.dtype != np.int32:
            raise context.fail(f"{bias_tensor.describe()} is {bias.dtype.name}, int32 expected")  # type: ignore[union-attr]
    else:
        if filters.dtype == INT8:  # hybrid model: dequantise the weights
            weights = dequantized(context, filters, weights)
        elif filters.dtype != FLOAT32:
            raise context.fail(f"{filters.describe()} is {filters.dtype.name}")
        if bias is not None and bias.dtype != FLOAT32:
            raise context.fail(f"{bias_tensor.describe()} is {bias.dtype.name}, float32 expected")  # type: ignore[union-attr]
    if bias is not None and bias.size != channels:
        raise context.fail(f"the bias has {bias.size} values for {channels} channels")
    return weights, bias


def _arithmetic(
    context: OperatorContext,
    dtype: np.dtype,
    channels: int,
    activation: str,
    float_product: bool = False,
) -> QuantizedConv | FloatActivation:
    source, filters, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    if dtype == INT8:
        requantization = _requantization(
            context, source, filters, output, channels, activation, float_product
        )
        filter_offset = -quantization(context, filters).zero_point if float_product else 0
        return QuantizedConv(
            -quantization(context, source).zero_point, requantization, filter_offset
        )
    return float_activation(activation)


def _folded(
    context: OperatorContext,
    arithmetic: QuantizedConv | FloatActivation,
    weights: np.ndarray,
    bias: np.ndarray | None,
    depthwise: bool,
) -> QuantizedConv | FloatActivation:
    """int8 arithmetic with the input offset folded into a second bias table."""
    if not isinstance(arithmetic, QuantizedConv) or arithmetic.filter_offset != 0:
        return arithmetic
    folded = fold_input_offset(weights, bias, arithmetic.input_offset, depthwise)
    symbol = context.module.constant(f"{context.name}_folded_bias", folded)
    return replace(arithmetic, folded_bias=symbol)


def _symbols(
    context: OperatorContext, weights: np.ndarray, bias: np.ndarray | None
) -> tuple[tuple[str, MemRefType], tuple[str, MemRefType] | None]:
    module = context.module
    filters = module.constant(f"{context.name}_filter", weights)
    bias_symbol = module.constant(f"{context.name}_bias", bias) if bias is not None else None
    return filters, bias_symbol


WindowKernel = Callable[[str, MemRefType, MemRefType, Window], None]
"""`(name, input, output, window)`: adds `@name(%input, %output)`, the operator's kernel on
those types (the whole tensors, or the rows one window reads: fused row streaming)."""


def convolution_kernel(context: OperatorContext) -> tuple[WindowKernel, Window]:
    """Checks a CONV_2D / DEPTHWISE_CONV_2D, adds its constants, and returns its kernel
    emitter and its window."""
    depthwise = context.op.opcode == "DEPTHWISE_CONV_2D"
    options = context.op.option(
        tflite.DepthwiseConv2DOptions if depthwise else tflite.Conv2DOptions
    )
    if options is None:
        raise context.fail("missing options")
    source, output, filters = context.tensor(0), context.tensor(0, output=True), context.tensor(1)
    dtype = require_types(context, source, output)
    if len(source.shape) != 4 or len(output.shape) != 4 or len(filters.shape) != 4:
        raise context.fail("input, filter and output must be 4-D (NHWC)")
    in_channels = source.shape[3]
    batches, out_channels = output.shape[0], output.shape[3]
    if batches != source.shape[0]:
        raise context.fail("input and output batch sizes differ")
    if depthwise:
        if filters.shape[0] != 1 or filters.shape[3] != out_channels:
            raise context.fail(f"filter shape {list(filters.shape)} for {out_channels} outputs")
        if out_channels % in_channels:
            raise context.fail(f"{out_channels} output channels for {in_channels} inputs")
        depth_multiplier: int | None = out_channels // in_channels
    else:
        if filters.shape[0] != out_channels or filters.shape[3] != in_channels:
            raise context.fail(
                f"filter shape {list(filters.shape)} for {in_channels} -> {out_channels} channels"
            )
        depth_multiplier = None
    activation = fused_activation(context, options.FusedActivationFunction())
    dilation = (options.DilationHFactor(), options.DilationWFactor())
    filter_window = window(
        context, options, source, output, (filters.shape[1], filters.shape[2]), dilation
    )
    weights, bias = _weights_and_bias(context, dtype, out_channels)
    arithmetic = _arithmetic(context, dtype, out_channels, activation)
    arithmetic = _folded(context, arithmetic, weights, bias, depthwise)
    filter_symbol, bias_symbol = _symbols(context, weights, bias)

    def emit(name: str, input_type: MemRefType, output_type: MemRefType, window_: Window) -> None:
        conv2d(
            context.module,
            name,
            input_type,
            output_type,
            filter_symbol,
            bias_symbol,
            window_,
            arithmetic,
            depth_multiplier,
        )

    return emit, filter_window


@operator("CONV_2D", "DEPTHWISE_CONV_2D", supports=supported_fused_activation)
def convolution(context: OperatorContext) -> None:
    emit, filter_window = convolution_kernel(context)
    source, output = context.tensor(0), context.tensor(0, output=True)
    emit(
        context.name,
        memref_of(source.shape, source.dtype),
        memref_of(output.shape, output.dtype),
        filter_window,
    )
    context.call([context.value(0)], [context.result()])


def _supported_fully_connected(op: Operator) -> str | None:
    options = op.option(tflite.FullyConnectedOptions)
    if options is not None and options.WeightsFormat() != 0:
        return "shuffled weights"
    return supported_fused_activation(op)


@operator("FULLY_CONNECTED", supports=_supported_fully_connected)
def fully_connected_layer(context: OperatorContext) -> None:
    options = context.op.option(tflite.FullyConnectedOptions)
    source, output, filters = context.tensor(0), context.tensor(0, output=True), context.tensor(1)
    dtype = require_types(context, source, output)
    if options is not None and options.WeightsFormat() != 0:
        raise context.fail("only the default weights format is supported (not shuffled)")
    activation = fused_activation(context, options.FusedActivationFunction() if options else 0)
    if len(filters.shape) != 2:
        raise context.fail(f"filter shape {list(filters.shape)} is not 2-D")
    units, depth = filters.shape
    input_size = int(np.prod(source.shape))
    if input_size % depth:
        raise context.fail(f"input size {input_size} is not a multiple of the depth {depth}")
    batches = input_size // depth
    if int(np.prod(output.shape)) != batches * units:
        raise context.fail(f"output shape {list(output.shape)} for {batches}x{units} results")
    weights, bias = _weights_and_bias(context, dtype, units)
    per_tensor = dtype == INT8 and len(quantization(context, filters).scales) == 1
    arithmetic = _arithmetic(context, dtype, units, activation, float_product=per_tensor)
    arithmetic = _folded(context, arithmetic, weights, bias, depthwise=False)
    filter_symbol, bias_symbol = _symbols(context, weights, bias)
    fully_connected(
        context.module,
        context.name,
        memref_of((batches, depth), dtype),
        memref_of((batches, units), dtype),
        filter_symbol,
        bias_symbol,
        arithmetic,
    )
    source_value = context.view(context.value(0), (batches, depth))
    output_value = context.view(context.result(), (batches, units))
    context.call([source_value], [output_value])
