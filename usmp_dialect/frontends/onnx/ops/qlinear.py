"""int8 operators of the QOperator form, and what `onnx/qdq.py` makes of QDQ groups: QLinearConv,
QLinearMatMul and onnxruntime's QGemm, QLinearAdd, QLinearConcat, QLinearGlobalAveragePool
(QLinearAveragePool and int8 MaxPool are in `pooling.py`), lowered to the integer kernels the
TFLite frontend uses. They read and write int8 tensors; the accumulators are int32 and are
requantised with TFLite's fixed-point multiplier and shift (onnxruntime multiplies by the float
scale and rounds half to even: the two differ by at most one step where a value lies within
rounding of a half). Supported: int8 activations quantised per tensor, int8 weights per tensor
or per output channel (symmetric — zero points 0 — when per channel), int32 biases."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import MemRefType

from usmp_dialect.frontends.onnx.importer import MICROSOFT, NodeContext, operator
from usmp_dialect.frontends.onnx.ops.common import (
    axis,
    check_concatenation,
    dense,
    spatial_window,
)
from usmp_dialect.frontends.onnx.qdq import ACTIVATION
from usmp_dialect.kernels.conv import QuantizedConv, Window, conv2d_nchw
from usmp_dialect.kernels.elementwise import Operand, QuantizedAdd, binary, broadcast_shapes
from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.kernels.module import Requantization, memref_of
from usmp_dialect.kernels.quantized_concat import requantized_concatenation
from usmp_dialect.kernels.reduce import QuantizedMean, reduce

INT8 = np.dtype(np.int8)
INT32 = np.dtype(np.int32)
UNSUPPORTED_TYPE = "quantise with activation_type=QInt8 and weight_type=QInt8"


def require_int8(context: NodeContext, *positions: int) -> None:
    """The activations at `positions` and the output are int8."""
    for position in positions:
        dtype = context.dtype(position)
        if dtype != INT8:
            raise context.fail(
                f"input {position} is {dtype.name}; only int8 is supported ({UNSUPPORTED_TYPE})"
            )
    if context.output_dtype() != INT8:
        raise context.fail(
            f"the output is {context.output_dtype().name}; only int8 is supported "
            f"({UNSUPPORTED_TYPE})"
        )


def zero_points(context: NodeContext, position: int, what: str) -> np.ndarray:
    """The int8 zero points at `position` (int64; [0] when the input is omitted)."""
    if not context.has_input(position):
        return np.zeros(1, np.int64)
    value = context.constant(position)
    if value.dtype != INT8:
        raise context.fail(
            f"the zero point of {what} is {value.dtype.name}; only int8 is supported "
            f"({UNSUPPORTED_TYPE})"
        )
    return value.reshape(-1).astype(np.int64)


def scales(context: NodeContext, position: int, what: str) -> np.ndarray:
    value = context.constant(position).astype(np.float32).reshape(-1)
    if value.size == 0 or (value <= 0).any() or not np.isfinite(value).all():
        raise context.fail(f"the scales of {what} must be positive")
    return value


def per_tensor(context: NodeContext, scale: int, zero_point: int, what: str) -> tuple[float, int]:
    """The scale and zero point of an activation (per-axis quantisation refused)."""
    values, points = scales(context, scale, what), zero_points(context, zero_point, what)
    if values.size != 1 or points.size != 1:
        raise context.fail(f"per-axis quantisation of {what} is not supported")
    return float(values[0]), int(points[0])


def activation_bounds(context: NodeContext, scale: float, zero_point: int) -> tuple[int, int]:
    """The int8 range of the output, narrowed by a fused Relu/Clip (its float bounds
    quantised as QuantizeLinear would, rounding half to even)."""
    low, high = -128, 127
    bounds = context.attr(ACTIVATION)
    if bounds is not None:
        lower, upper = bounds
        if lower != float("-inf"):
            low = max(low, zero_point + int(np.rint(np.float32(lower) / np.float32(scale))))
        if upper != float("inf"):
            high = min(high, zero_point + int(np.rint(np.float32(upper) / np.float32(scale))))
    return low, min(max(low, high), 127)


def requantization(
    input_scale: float,
    weight_scales: np.ndarray,
    output_scale: float,
    output_zero_point: int,
    bounds: tuple[int, int],
) -> Requantization:
    """TFLite's per-channel multipliers: input_scale * weight_scale / output_scale in double."""
    multipliers, shifts = [], []
    for scale in weight_scales:
        multiplier, shift = quantize_multiplier(input_scale * float(scale) / output_scale)
        multipliers.append(multiplier)
        shifts.append(shift)
    return Requantization(
        np.array(multipliers, np.int32),
        np.array(shifts, np.int32),
        output_zero_point,
        bounds[0],
        bounds[1],
    )


def _weights(
    context: NodeContext, position: int, channels: int, axis_name: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """Constant int8 weights at `position`, their scales (one or one per channel) and the
    filter offset (minus the zero point)."""
    if not context.is_constant(position):
        raise context.fail(
            f"input {position} (the weights) must be a constant (a product of two activations "
            "is not supported)"
        )
    weights = context.constant(position)
    if weights.dtype != INT8:
        raise context.fail(
            f"the weights are {weights.dtype.name}; only int8 is supported ({UNSUPPORTED_TYPE})"
        )
    weight_scales = scales(context, position + 1, "the weights")
    points = zero_points(context, position + 2, "the weights")
    if weight_scales.size not in (1, channels) or points.size not in (1, channels):
        raise context.fail(
            f"the weights have {weight_scales.size} scales and {points.size} zero points for "
            f"{channels} {axis_name}"
        )
    if points.size > 1:
        if points.any():
            raise context.fail(
                "asymmetric per-channel weights (zero points other than 0) are not supported"
            )
        points = points[:1]
    return weights, weight_scales, -int(points[0])


def _bias(context: NodeContext, position: int, channels: int) -> np.ndarray | None:
    if not context.has_input(position):
        return None
    bias = context.constant(position)
    if bias.dtype != INT32 or bias.size != channels:
        raise context.fail(
            f"the bias is {bias.dtype.name} {list(bias.shape)}; int32 [{channels}] expected"
        )
    return bias.reshape(channels)


QLinearConvEmitter = Callable[[str, MemRefType, MemRefType, Window], None]
"""`(name, input, output, window)`: adds `@name(%input, %output)` computing the QLinearConv
with `window` (the node's, or a row's: `frontends/onnx/streaming.py`)."""


def qlinear_conv_kernel(context: NodeContext) -> tuple[QLinearConvEmitter, Window]:
    """A QLinearConv node's emitter (its constants added) and its window."""
    require_int8(context, 0)
    source = context.shape(0)
    x_scale, x_zero = per_tensor(context, 1, 2, "input 0")
    y_scale, y_zero = per_tensor(context, 6, 7, "the output")
    if len(source) != 4 or len(context.shape(3)) != 4:
        raise context.fail("input and weights must be 4-D (NCHW, OIHW); only 2-D Conv is supported")
    out_channels, group_channels, kernel_h, kernel_w = context.shape(3)
    weights, weight_scales, filter_offset = _weights(context, 3, out_channels, "output channels")
    groups = int(context.attr("group", 1))
    batches, channels, height, width = source
    if (
        groups < 1
        or channels % groups
        or out_channels % groups
        or channels // groups != group_channels
    ):
        raise context.fail(
            f"weights {list(weights.shape)} with group {groups} do not fit {channels} channels"
        )
    kernel_shape = list(context.attr("kernel_shape", [kernel_h, kernel_w]))
    if kernel_shape != [kernel_h, kernel_w]:
        raise context.fail(
            f"kernel_shape {kernel_shape} differs from the weights' {[kernel_h, kernel_w]}"
        )
    bias = _bias(context, 8, out_channels)
    output = context.output_shape()
    if len(output) != 4 or output[:2] != (batches, out_channels):
        raise context.fail(f"the output shape {list(output)} does not match the weights")
    window, _ = spatial_window(context, (height, width), (kernel_h, kernel_w), output[2:])
    bounds = activation_bounds(context, y_scale, y_zero)
    arithmetic = QuantizedConv(
        -x_zero, requantization(x_scale, weight_scales, y_scale, y_zero, bounds), filter_offset
    )
    module = context.module
    filters = module.constant(f"{context.name}_filter", weights)
    bias_symbol = module.constant(f"{context.name}_bias", bias) if bias is not None else None

    def emit(name: str, input_type: MemRefType, output_type: MemRefType, at: Window) -> None:
        conv2d_nchw(
            module, name, input_type, output_type, filters, bias_symbol, at, arithmetic, groups
        )

    return emit, window


@operator("QLinearConv")
def qlinear_conv(context: NodeContext) -> None:
    emit, window = qlinear_conv_kernel(context)
    emit(
        context.name,
        memref_of(context.shape(0), INT8),
        memref_of(context.output_shape(), INT8),
        window,
    )
    context.call([context.value(0)], [context.result()])


def _dense(
    context: NodeContext,
    input_quantization: tuple[float, int],
    weights: np.ndarray,
    weight_scales: np.ndarray,
    filter_offset: int,
    bias: np.ndarray | None,
    output_quantization: tuple[float, int],
) -> None:
    """`output[b, :] = weights @ input[b, :] + bias` (weights `[units, depth]`) in int8."""
    (x_scale, x_zero), (y_scale, y_zero) = input_quantization, output_quantization
    bounds = activation_bounds(context, y_scale, y_zero)
    arithmetic = QuantizedConv(
        -x_zero, requantization(x_scale, weight_scales, y_scale, y_zero, bounds), filter_offset
    )
    dense(context, weights, bias, arithmetic)


@operator("QLinearMatMul")
def qlinear_matmul(context: NodeContext) -> None:
    require_int8(context, 0)
    source = context.shape(0)
    b_shape = context.shape(3)
    if len(b_shape) != 2 or len(source) < 1 or source[-1] != b_shape[0]:
        raise context.fail(
            f"input B {list(b_shape)} does not fit input A {list(source)} (B must be 2-D)"
        )
    a = per_tensor(context, 1, 2, "input 0")
    weights, weight_scales, filter_offset = _weights(context, 3, b_shape[1], "columns")
    y = per_tensor(context, 6, 7, "the output")
    _dense(context, a, weights.T, weight_scales, filter_offset, None, y)


@operator("QGemm", domain=MICROSOFT)
def qgemm(context: NodeContext) -> None:
    require_int8(context, 0)
    source = context.shape(0)
    if len(source) != 2:
        raise context.fail(f"input A has shape {list(source)}, 2-D expected")
    if context.attr("transA", 0):
        raise context.fail("transA is not supported")
    if float(context.attr("alpha", 1.0)) != 1.0:
        raise context.fail("alpha other than 1 is not supported")
    if not context.has_input(7):
        raise context.fail("a float output (no y_scale) is not supported")
    b_shape = context.shape(3)
    transposed = bool(context.attr("transB", 0))
    if len(b_shape) != 2 or b_shape[1 if transposed else 0] != source[1]:
        raise context.fail(f"input B {list(b_shape)} does not fit input A {list(source)}")
    units = b_shape[0 if transposed else 1]
    a = per_tensor(context, 1, 2, "input 0")
    weights, weight_scales, filter_offset = _weights(context, 3, units, "output units")
    bias = _bias(context, 6, units)
    y = per_tensor(context, 7, 8, "the output")
    _dense(context, a, weights if transposed else weights.T, weight_scales, filter_offset, bias, y)


def _smaller_than_one(context: NodeContext, real: float, what: str) -> tuple[int, int]:
    multiplier, shift = quantize_multiplier(real)
    if shift > 0:
        raise context.fail(f"the {what} multiplier {real:g} is not below 1 (int8 Add needs it)")
    return multiplier, shift


@operator("QLinearAdd", domain=MICROSOFT)
def qlinear_add(context: NodeContext) -> None:
    """TFLite's int8 ADD (`CalculateOpDataAdd`: both inputs shifted left by 20 and scaled to
    twice the larger input scale, then to the output's), with NumPy broadcasting."""
    first, second = per_tensor(context, 1, 2, "input A"), per_tensor(context, 4, 5, "input B")
    output = per_tensor(context, 6, 7, "the output")
    left_shift = 20
    twice_max = 2 * max(first[0], second[0])
    m1, s1 = _smaller_than_one(context, first[0] / twice_max, "input")
    m2, s2 = _smaller_than_one(context, second[0] / twice_max, "input")
    out_m, out_s = _smaller_than_one(context, twice_max / ((1 << left_shift) * output[0]), "output")
    low, high = activation_bounds(context, *output)
    arithmetic = QuantizedAdd(
        (-first[1], -second[1]), (m1, m2), (s1, s2), out_m, out_s, output[1], low, high, left_shift
    )
    sides = []
    for position in (0, 3):
        if context.is_constant(position):
            value = context.constant(position)
            if value.dtype != INT8:
                raise context.fail(f"input {position} is {value.dtype.name}; int8 expected")
            sides.append((tuple(value.shape), value))
        else:
            require_int8(context, position)
            sides.append((context.shape(position), None))
    shapes = broadcast_shapes(sides[0][0], sides[1][0])
    if tuple(context.output_shape()) != tuple(np.broadcast_shapes(sides[0][0], sides[1][0])):
        raise context.fail(f"the output shape {list(context.output_shape())} is not the broadcast")
    operands, values = [], []
    for k, ((_, constant), shape, position) in enumerate(
        zip(sides, shapes.inputs, (0, 3), strict=True)
    ):
        type_ = memref_of(shape, INT8)
        if constant is not None:
            array = np.ascontiguousarray(constant).reshape(shape)
            symbol, type_ = context.module.constant(f"{context.name}_input{k + 1}", array)
            operands.append(Operand(type_, symbol))
        else:
            operands.append(Operand(type_))
            values.append(context.view(context.value(position), shape))
    binary(
        context.module,
        context.name,
        (operands[0], operands[1]),
        memref_of(shapes.output, INT8),
        arithmetic,
    )
    context.call(values, [context.view(context.result(), shapes.output)])


def requantization_table(source: tuple[float, int], target: tuple[float, int]) -> np.ndarray | None:
    """The int8 values requantised from `source` to `target` quantisation, as onnxruntime's
    lookup tables compute them (dequantise in float, divide by the scale, round half to even),
    indexed by `x + 128`; None when the quantisations are equal."""
    if source == target:
        return None
    values = np.arange(-128, 128, dtype=np.int64)
    real = np.float32(source[0]) * (values - source[1]).astype(np.float32)
    quantized = np.rint(real / np.float32(target[0])) + target[1]
    return np.clip(quantized, -128, 127).astype(np.int8)


@operator("QLinearConcat", domain=MICROSOFT)
def qlinear_concat(context: NodeContext) -> None:
    count = len(context.node.inputs)
    if count < 5 or (count - 2) % 3:
        raise context.fail(f"{count} inputs: y_scale, y_zero_point and triples expected")
    target = per_tensor(context, 0, 1, "the output")
    positions = list(range(2, count, 3))
    for position in positions:
        if context.is_constant(position):
            raise context.fail(f"input {position} is a constant (not supported here)")
    require_int8(context, *positions)
    shapes = [context.shape(position) for position in positions]
    output = context.output_shape()
    along = axis(context, int(context.attr("axis", 0)), len(output))
    check_concatenation(context, shapes, output, along)
    outer = int(np.prod(output[:along]))
    inner = int(np.prod(output[along + 1 :]))
    inputs, values = [], []
    for position, shape in zip(positions, shapes, strict=True):
        flat = (outer, shape[along] * inner)
        source = per_tensor(context, position + 1, position + 2, f"input {position}")
        inputs.append((memref_of(flat, INT8), requantization_table(source, target)))
        values.append(context.view(context.value(position), flat))
    flat_output = (outer, output[along] * inner)
    requantized_concatenation(context.module, context.name, inputs, memref_of(flat_output, INT8))
    context.call(values, [context.view(context.result(), flat_output)])


@operator("QLinearGlobalAveragePool", domain=MICROSOFT)
def qlinear_global_average_pool(context: NodeContext) -> None:
    """The mean over H and W as TFLite's int8 MEAN computes it (`QuantizedMeanOrSum`)."""
    require_int8(context, 0)
    if context.attr("channels_last", 0):
        raise context.fail("channels_last is not supported")
    source, output = context.shape(0), context.output_shape()
    if len(source) != 4 or output != (*source[:2], 1, 1):
        raise context.fail(f"the output shape {list(output)} is not [N, C, 1, 1]")
    x_scale, x_zero = per_tensor(context, 1, 2, "input 0")
    y_scale, y_zero = per_tensor(context, 3, 4, "the output")
    multiplier, shift = quantize_multiplier(x_scale / y_scale)
    reduce(
        context.module,
        context.name,
        memref_of(source, INT8),
        memref_of(output, INT8),
        (2, 3),
        "mean",
        QuantizedMean(x_zero, multiplier, shift, y_zero),
    )
    context.call([context.value(0)], [context.result()])
