"""Hybrid arithmetic (float activations, int8 weights) as LiteRT's hybrid kernels compute it.

TFLM refuses hybrid models; LiteRT (TensorFlow Lite) runs them by quantising the float input of
each such layer on the fly, per batch: `tensor_utils::SymmetricQuantizeFloats` takes the largest
magnitude `range` of the batch's values, the scaling factor `range / 127` and the values
`round(x * (127 / range))` clamped to [-127, 127] (all in float, `round` half away from zero;
a batch of zeros gets factor 1). The layer then sums int8 products exactly in int32, and each
output is `float(acc) * (factor * filter_scale) + bias`, clamped to the fused activation
(`conv.cc: EvalHybrid`, `optimized_ops::HybridConv`, `MatrixBatchVectorMultiplyAccumulate`,
`AddBiasAndEvalActivationFunction`). The quantised input and the per-batch factors are scratch
buffers of the layer's function, packed by the planner like any other buffer.

Per-channel filters (`conv.cc: EvalHybridPerChannel`, every hybrid DEPTHWISE_CONV_2D) and a
FULLY_CONNECTED layer with `asymmetric_quantize_inputs` quantise asymmetrically instead
(`tensor_utils::AsymmetricQuantizeFloats`): the batch's range widened to include 0,
`scale = (rmax - rmin) / 255` and a zero point nudged into [-128, 127] from whichever end
rounds with less error, both in float, the values `round(zero_point + x * (1 / scale))` in
double (what the LiteRT build we compare with computes: TFLite's portable source has a double
scale, one float step off for some ranges, and a float quotient, which rounds some values the
other way).
Products are `w * (x - zero_point)` (windows leaving the input add nothing, as LiteRT's reference
kernels skip those taps) and the output is `acc * channel_scale * factor` (CONV_2D) or
`acc * (channel_scale * factor)` (DEPTHWISE_CONV_2D), in LiteRT's reference kernels' order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType, f32, f64, i8, i32

from usmp_dialect.kernels.builder import KernelBuilder, Value

# `body(indices, carried)` of a loop over every element: the next carried values.
ElementBody = Callable[[list[Value], Sequence[Value]], Sequence[Value]]

# The largest magnitude of a symmetric int8 value (`kScale` in `SymmetricQuantizeFloats`).
SYMMETRIC_SCALE = 127


@dataclass(frozen=True)
class HybridArithmetic:
    """int8 weights (zero point 0) over float activations; the fused activation clamps the
    float result to [low, high] (infinite bounds are not emitted). Per tensor, `filter_scale`
    joins the per-batch factor; per channel, `channel_scales` is the global of the float32
    scales (`filter_scale` 1) and `scale_product` says whether the channel's scale multiplies
    the batch factor first (`acc * (channel * factor)`, depthwise) or the accumulator
    (`acc * channel * factor`, convolution). `asymmetric`: the input is quantised with a zero
    point per batch."""

    filter_scale: float
    low: float
    high: float
    asymmetric: bool = False
    channel_scales: tuple[str, MemRefType] | None = None
    scale_product: bool = False


# `AsymmetricQuantizeFloats`' int8 range
ASYMMETRIC_MIN, ASYMMETRIC_MAX = -128, 127


def quantize_input(
    kernel: KernelBuilder, source: Value, input_type: MemRefType, arithmetic: HybridArithmetic
) -> tuple[Value, Value, Value | None]:
    """Scratch copies of a float input `[batch, ...]`: its values as int8, per batch the factor
    that turns an int32 sum of products with the filter back into float (times the filter's
    scale when it has one), and for asymmetric quantisation per batch the zero point (else
    None). Returns the three buffers."""
    shape = tuple(input_type.get_shape())
    batches, inner = shape[0], shape[1:]
    quantized = kernel.insert(memref.AllocOp([], [], MemRefType(i8, shape)))
    factors = kernel.insert(memref.AllocOp([], [], MemRefType(f32, [batches])))
    zero_points = (
        kernel.insert(memref.AllocOp([], [], MemRefType(i32, [batches])))
        if arithmetic.asymmetric
        else None
    )

    def over_elements(
        batch: Value, body: ElementBody, carried: Sequence[Value] = ()
    ) -> Sequence[Value]:
        """`body([batch, *indices], carried)` over every element of one batch, in memory
        order, carrying values along."""

        def level(depth: int, indices: list[Value], values: Sequence[Value]) -> Sequence[Value]:
            if depth == len(inner):
                return body([batch, *indices], values)
            return kernel.loop(
                0,
                inner[depth],
                lambda iv, inner_values: list(level(depth + 1, [*indices, iv], inner_values)),
                values,
            )

        return level(0, [], carried)

    def symmetric(low: Value, high: Value) -> tuple[Value, Value, Value]:
        """`SymmetricQuantizeFloats`: (factor, 1 / step, zero point 0)."""
        # `std::max(std::abs(min), std::abs(max))`, then 127 / range and range / 127 in float;
        # a zero range (every value 0) takes factor 1 and quantises to zeros, as TFLite does.
        magnitude = kernel.max(kernel.abs(low), kernel.abs(high))
        empty = kernel.cmp("eq", magnitude, 0.0)
        range_ = kernel.select(empty, float(SYMMETRIC_SCALE), magnitude)
        inverse = kernel.div(float(SYMMETRIC_SCALE), range_)
        factor = kernel.div(range_, float(SYMMETRIC_SCALE))
        return factor, inverse, kernel.constant(0, i32)

    def asymmetric(low: Value, high: Value) -> tuple[Value, Value, Value]:
        """`AsymmetricQuantizeFloats`: (factor, 1 / factor, zero point), in float as the
        LiteRT build computes it (a double `scale`, as TFLite's portable source writes it,
        is one float step off for some ranges)."""
        rmin, rmax = kernel.min(low, 0.0), kernel.max(high, 0.0)
        empty = kernel.cmp("eq", rmin, rmax)  # every value 0: factor 1, zero point 0
        span = float(ASYMMETRIC_MAX - ASYMMETRIC_MIN)
        scale = kernel.select(empty, 1.0, kernel.div(kernel.sub(rmax, rmin), span))
        low_steps, high_steps = kernel.div(rmin, scale), kernel.div(rmax, scale)
        from_min = kernel.sub(float(ASYMMETRIC_MIN), low_steps)
        from_max = kernel.sub(float(ASYMMETRIC_MAX), high_steps)
        error_min = kernel.add(float(-ASYMMETRIC_MIN), kernel.abs(low_steps))
        error_max = kernel.add(float(ASYMMETRIC_MAX), kernel.abs(high_steps))
        zero_point = kernel.select(kernel.cmp("lt", error_min, error_max), from_min, from_max)
        # the nudge: the ends as they are, `round` (halves away from zero) between them
        bounded = kernel.min(
            kernel.max(kernel.round(zero_point), float(ASYMMETRIC_MIN)), float(ASYMMETRIC_MAX)
        )
        nudged = kernel.select(empty, 0, kernel.cast(bounded, i32))
        return scale, kernel.div(1.0, kernel.cast(scale, f64)), nudged

    def per_batch(batch: Value, _: Sequence[Value]) -> list[Value]:
        first = kernel.load(source, [batch] + [0] * len(inner))

        def extremes(indices: list[Value], values: Sequence[Value]) -> list[Value]:
            value = kernel.load(source, indices)
            low, high = values
            return [kernel.min(low, value), kernel.max(high, value)]

        low, high = over_elements(batch, extremes, [first, first])
        factor, inverse, zero_point = (asymmetric if arithmetic.asymmetric else symmetric)(
            low, high
        )
        kernel.store(kernel.mul(factor, arithmetic.filter_scale), factors, [batch])
        if zero_points is not None:
            kernel.store(zero_point, zero_points, [batch])
        lowest = ASYMMETRIC_MIN if arithmetic.asymmetric else -SYMMETRIC_SCALE
        highest = ASYMMETRIC_MAX if arithmetic.asymmetric else SYMMETRIC_SCALE
        shift = kernel.cast(zero_point, f64) if arithmetic.asymmetric else None

        def quantize(indices: list[Value], _: Sequence[Value]) -> list[Value]:
            value = kernel.load(source, indices)
            if shift is None:
                scaled = kernel.mul(value, inverse)
            else:
                # `*offset + values[i] * scaling_factor_inv` in double, as the LiteRT build
                # computes it (in float, 127 + -73.5000014 rounds to 53.5 and then to 54;
                # LiteRT gives 53)
                scaled = kernel.add(shift, kernel.mul(kernel.cast(value, f64), inverse))
            value = kernel.clamp(kernel.cast(kernel.round(scaled), i32), lowest, highest)
            kernel.store(kernel.cast(value, i8), quantized, indices)
            return []

        over_elements(batch, quantize)
        return []

    kernel.loop(0, batches, per_batch)
    return quantized, factors, zero_points


def hybrid_output(
    kernel: KernelBuilder,
    total: Value,
    factor: Value,
    bias: Value | None,
    channel: Value,
    arithmetic: HybridArithmetic,
    channel_scales: Value | None = None,
) -> Value:
    """One float output from its int32 sum: `float(acc) * factor + bias[channel]` (per
    channel with the channel's scale, in the kernel's order), clamped."""
    value = kernel.cast(total, f32)
    if channel_scales is None:
        value = kernel.mul(value, factor)
    elif arithmetic.scale_product:
        value = kernel.mul(value, kernel.mul(kernel.load(channel_scales, [channel]), factor))
    else:
        value = kernel.mul(kernel.mul(value, kernel.load(channel_scales, [channel])), factor)
    if bias is not None:
        value = kernel.add(value, kernel.load(bias, [channel]))
    if arithmetic.low != float("-inf"):
        value = kernel.max(value, arithmetic.low)
    if arithmetic.high != float("inf"):
        value = kernel.min(value, arithmetic.high)
    return value
