"""CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED: int8 (per-tensor and per-channel), int16
(TFLite's 16x8: int8 weights, an int64 or int32 bias, zero points 0), float32, and hybrid (int8
weights, float activations).

16x8 as TFLM's reference kernels compute it: each product `w * x` an int32, summed in the bias's
type (TFLM instantiates its kernels with the bias type as the accumulator); an int64 sum is
scaled by the 64-bit `MultiplyByQuantizedMultiplier` (a 16-bit multiplier, one rounding), an
int32 one by the usual double-rounding one; no input or output offset (TFLM's int16 kernels
have none).

Hybrid layers compute as LiteRT's hybrid kernels do (`kernels/hybrid.py`: the input quantised
on the fly per batch): CONV_2D with one filter scale, or per-channel ones all equal (symmetric
input: `EvalHybrid`), or with per-channel scales that differ (asymmetric input:
`EvalHybridPerChannel`), dilated or not,
DEPTHWISE_CONV_2D with a scale per channel (asymmetric, LiteRT's only hybrid depthwise form),
FULLY_CONNECTED with one filter scale or one per unit (symmetric, or asymmetric with
`asymmetric_quantize_inputs`). The rest (filter zero points other than 0, a per-tensor
depthwise layer, which LiteRT refuses), and every layer with `hybrid="dequantize"`, use the
weights dequantised at import and float arithmetic."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol

import numpy as np
import tflite
from xdsl.dialects.builtin import i32, i64

from usmp_dialect.frontends.tflite.importer import INT16_ACTIVATION_TYPES, OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    INT16,
    activation_bounds,
    dequantized,
    float_activation,
    fused_activation,
    quantization,
    require_types,
    supported_fused_activation,
    symmetric_int16,
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
from usmp_dialect.kernels.hybrid import HybridArithmetic
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
    wide = output.dtype == INT16 and _bias_dtype(context) != np.dtype(np.int32)
    return Requantization(
        np.array(multipliers, dtype=np.int32),
        np.array(shifts, dtype=np.int32),
        0 if output.dtype == INT16 else quantization(context, output).zero_point,
        low,
        high,
        wide=wide,
    )


def _bias_dtype(context: OperatorContext) -> np.dtype | None:
    bias = context.optional_tensor(2)
    return bias.dtype if bias is not None else None


def _hybrid(
    context: OperatorContext,
    dtype: np.dtype,
    activation: str,
    kind: str = "conv",
    asymmetric: bool = False,
) -> HybridArithmetic | None:
    """LiteRT's hybrid arithmetic for a float layer (`kind`: "conv", "depthwise" or
    "fully_connected") with int8 weights (zero points 0), unless the import dequantises hybrid
    weights. Per channel where LiteRT's kernel is: a convolution whose scales differ
    (`conv.cc: is_hybrid_per_channel`, the input asymmetric), every depthwise one (asymmetric),
    a fully connected layer with a scale per unit (`VerifyPerChannelQuantization`, the input as
    `asymmetric` says); per tensor otherwise (`EvalHybrid`). None where the layer stays
    dequantised."""
    filters = context.tensor(1)
    if dtype != FLOAT32 or filters.dtype != INT8 or context.options.hybrid != "quantize":
        return None
    quant = quantization(context, filters)
    if bool((quant.zero_points != 0).any()):
        return None
    bounds = float_activation(activation)
    scales = quant.scales.astype(np.float32)
    if kind == "conv":
        per_channel = len(set(scales.tolist())) > 1
    else:
        per_channel = kind == "depthwise" or len(scales) > 1
    if per_channel:
        axis = 3 if kind == "depthwise" else 0
        if len(scales) != filters.shape[axis] or quant.axis != axis:
            return None
        symbol = context.module.constant(f"{context.name}_channel_scales", scales)
        return HybridArithmetic(
            1.0,
            bounds.low,
            bounds.high,
            asymmetric=asymmetric or kind != "fully_connected",
            channel_scales=symbol,
            scale_product=kind != "conv",
        )
    # one scale, or a scale per channel all equal: LiteRT's per-tensor kernel with that scale
    return HybridArithmetic(float(scales[0]), bounds.low, bounds.high, asymmetric)


def _weights_and_bias(
    context: OperatorContext, dtype: np.dtype, channels: int, hybrid: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    filters = context.tensor(1)
    weights = context.constant(1)
    bias_tensor = context.optional_tensor(2)
    bias = context.constant(2) if bias_tensor is not None else None
    if dtype in (INT8, INT16):
        if filters.dtype != INT8:
            raise context.fail(f"{filters.describe()} is {filters.dtype.name}, int8 expected")
        biases = (np.int32,) if dtype == INT8 else (np.int64, np.int32)
        if bias is not None and bias.dtype not in biases:
            expected = "int32" if dtype == INT8 else "int64 or int32"
            raise context.fail(
                f"{bias_tensor.describe()} is {bias.dtype.name}, {expected} expected"
            )  # type: ignore[union-attr]
    else:
        if filters.dtype == INT8:  # hybrid model: int8 products, or dequantised weights
            weights = weights if hybrid else dequantized(context, filters, weights)
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
    if dtype in (INT8, INT16):
        requantization = _requantization(
            context, source, filters, output, channels, activation, float_product
        )
        filter_offset = -quantization(context, filters).zero_point if float_product else 0
        if dtype == INT16:
            symmetric_int16(context, source, output)
            return QuantizedConv(
                0, requantization, filter_offset, accumulator=i64 if requantization.wide else i32
            )
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
    if arithmetic.accumulator != i32:  # 16x8 with an int64 bias: zero points 0, nothing to fold
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


class WindowKernel(Protocol):
    """`(name, input, output, window)`: adds `@name(%input, %output)`, the operator's kernel on
    those types (the whole tensors, or the rows one window reads: fused row streaming);
    `in_place`: a depthwise convolution writing over its input (TinyEngine's scheme)."""

    def __call__(
        self,
        name: str,
        input_type: MemRefType,
        output_type: MemRefType,
        window_: Window,
        in_place: bool = False,
    ) -> None: ...


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
    dtype = require_types(context, source, output, allowed=INT16_ACTIVATION_TYPES)
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
    hybrid = _hybrid(context, dtype, activation, "depthwise" if depthwise else "conv")
    weights, bias = _weights_and_bias(context, dtype, out_channels, hybrid is not None)
    if depthwise and dtype == INT16 and bias is not None and bias.dtype != np.int64:
        # TFLM's 16x8 depthwise kernel reads its bias as int64 whatever the tensor's type
        raise context.fail("a 16x8 depthwise convolution needs an int64 bias")
    arithmetic: QuantizedConv | FloatActivation | HybridArithmetic
    if hybrid is not None:
        arithmetic = hybrid
    else:
        arithmetic = _arithmetic(context, dtype, out_channels, activation)
        arithmetic = _folded(context, arithmetic, weights, bias, depthwise)
    filter_symbol, bias_symbol = _symbols(context, weights, bias)

    def emit(
        name: str,
        input_type: MemRefType,
        output_type: MemRefType,
        window_: Window,
        in_place: bool = False,
    ) -> None:
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
            in_place=in_place,
        )

    return emit, filter_window


@operator(
    "CONV_2D",
    "DEPTHWISE_CONV_2D",
    types=INT16_ACTIVATION_TYPES,
    supports=supported_fused_activation,
)
def convolution(context: OperatorContext) -> None:
    emit, filter_window = convolution_kernel(context)
    source, output = context.tensor(0), context.tensor(0, output=True)
    # TinyEngine's in-place depthwise convolution (depth multiplier 1, one batch), where it
    # lowers the peak (importer).
    depthwise = context.op.opcode == "DEPTHWISE_CONV_2D"
    target = (
        context.depthwise_in_place()
        if depthwise
        and output.shape[3] == source.shape[3]
        and output.shape[0] == 1
        and source.dtype == output.dtype
        else None
    )
    emit(
        context.name,
        memref_of(source.shape, source.dtype),
        memref_of(output.shape, output.dtype),
        filter_window,
        in_place=target is not None,
    )
    context.call([context.value(0)], [target if target is not None else context.result()])


def _supported_fully_connected(op: Operator) -> str | None:
    options = op.option(tflite.FullyConnectedOptions)
    if options is not None and options.WeightsFormat() != 0:
        return "shuffled weights"
    return supported_fused_activation(op)


@operator("FULLY_CONNECTED", types=INT16_ACTIVATION_TYPES, supports=_supported_fully_connected)
def fully_connected_layer(context: OperatorContext) -> None:
    options = context.op.option(tflite.FullyConnectedOptions)
    source, output, filters = context.tensor(0), context.tensor(0, output=True), context.tensor(1)
    dtype = require_types(context, source, output, allowed=INT16_ACTIVATION_TYPES)
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
    asymmetric = options is not None and bool(options.AsymmetricQuantizeInputs())
    hybrid = _hybrid(context, dtype, activation, "fully_connected", asymmetric=asymmetric)
    if hybrid is not None:
        # LiteRT's hybrid fully connected layer is its hybrid 1x1 convolution over a
        # [batches, 1, 1, depth] input: one quantisation per batch, the same output stage.
        weights, bias = _weights_and_bias(context, dtype, units, hybrid=True)
        filter_symbol, bias_symbol = _symbols(context, weights.reshape(units, 1, 1, depth), bias)
        conv2d(
            context.module,
            context.name,
            memref_of((batches, 1, 1, depth), dtype),
            memref_of((batches, 1, 1, units), dtype),
            filter_symbol,
            bias_symbol,
            Window((1, 1), (1, 1), (0, 0)),
            hybrid,
        )
        source_value = context.view(context.value(0), (batches, 1, 1, depth))
        output_value = context.view(context.result(), (batches, 1, 1, units))
        context.call([source_value], [output_value])
        return
    weights, bias = _weights_and_bias(context, dtype, units)
    per_tensor = dtype in (INT8, INT16) and len(quantization(context, filters).scales) == 1
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
