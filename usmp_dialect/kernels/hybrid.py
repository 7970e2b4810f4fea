"""Hybrid arithmetic (float activations, int8 weights) as LiteRT's hybrid kernels compute it.

TFLM refuses hybrid models; LiteRT (TensorFlow Lite) runs them by quantising the float input of
each such layer on the fly, per batch: `tensor_utils::SymmetricQuantizeFloats` takes the largest
magnitude `range` of the batch's values, the scaling factor `range / 127` and the values
`round(x * (127 / range))` clamped to [-127, 127] (all in float, `round` half away from zero;
a batch of zeros gets factor 1). The layer then sums int8 products exactly in int32, and each
output is `float(acc) * (factor * filter_scale) + bias`, clamped to the fused activation
(`conv.cc: EvalHybrid`, `optimized_ops::HybridConv`, `MatrixBatchVectorMultiplyAccumulate`,
`AddBiasAndEvalActivationFunction`). The quantised input and the per-batch factors are scratch
buffers of the layer's function, packed by the planner like any other buffer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType, f32, i8, i32

from usmp_dialect.kernels.builder import KernelBuilder, Value

# `body(indices, carried)` of a loop over every element: the next carried values.
ElementBody = Callable[[list[Value], Sequence[Value]], Sequence[Value]]

# The largest magnitude of a symmetric int8 value (`kScale` in `SymmetricQuantizeFloats`).
SYMMETRIC_SCALE = 127


@dataclass(frozen=True)
class HybridArithmetic:
    """int8 weights of one scale (per tensor, zero point 0) over float activations; the fused
    activation clamps the float result to [low, high] (infinite bounds are not emitted)."""

    filter_scale: float
    low: float
    high: float


def quantize_input(
    kernel: KernelBuilder, source: Value, input_type: MemRefType, filter_scale: float
) -> tuple[Value, Value]:
    """Scratch copies of a float input `[batch, ...]`: its values as symmetric int8, and per
    batch the factor that turns an int32 sum of products with the filter back into float
    (`range / 127 * filter_scale`). Returns both buffers."""
    shape = tuple(input_type.get_shape())
    batches, inner = shape[0], shape[1:]
    quantized = kernel.insert(memref.AllocOp([], [], MemRefType(i8, shape)))
    factors = kernel.insert(memref.AllocOp([], [], MemRefType(f32, [batches])))

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

    def per_batch(batch: Value, _: Sequence[Value]) -> list[Value]:
        first = kernel.load(source, [batch] + [0] * len(inner))

        def extremes(indices: list[Value], values: Sequence[Value]) -> list[Value]:
            value = kernel.load(source, indices)
            low, high = values
            return [kernel.min(low, value), kernel.max(high, value)]

        low, high = over_elements(batch, extremes, [first, first])
        # `std::max(std::abs(min), std::abs(max))`, then 127 / range and range / 127 in float;
        # a zero range (every value 0) takes factor 1 and quantises to zeros, as TFLite does.
        magnitude = kernel.max(kernel.abs(low), kernel.abs(high))
        empty = kernel.cmp("eq", magnitude, 0.0)
        range_ = kernel.select(empty, float(SYMMETRIC_SCALE), magnitude)
        inverse = kernel.div(float(SYMMETRIC_SCALE), range_)
        factor = kernel.div(range_, float(SYMMETRIC_SCALE))
        kernel.store(kernel.mul(factor, filter_scale), factors, [batch])

        def quantize(indices: list[Value], _: Sequence[Value]) -> list[Value]:
            scaled = kernel.round(kernel.mul(kernel.load(source, indices), inverse))
            value = kernel.clamp(kernel.cast(scaled, i32), -SYMMETRIC_SCALE, SYMMETRIC_SCALE)
            kernel.store(kernel.cast(value, i8), quantized, indices)
            return []

        over_elements(batch, quantize)
        return []

    kernel.loop(0, batches, per_batch)
    return quantized, factors


def hybrid_output(
    kernel: KernelBuilder,
    total: Value,
    factor: Value,
    bias: Value | None,
    channel: Value,
    arithmetic: HybridArithmetic,
) -> Value:
    """One float output from its int32 sum: `float(acc) * factor + bias[channel]`, clamped."""
    value = kernel.mul(kernel.cast(total, f32), factor)
    if bias is not None:
        value = kernel.add(value, kernel.load(bias, [channel]))
    if arithmetic.low != float("-inf"):
        value = kernel.max(value, arithmetic.low)
    if arithmetic.high != float("inf"):
        value = kernel.min(value, arithmetic.high)
    return value
