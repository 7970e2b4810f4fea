"""MEAN, SUM, REDUCE_MAX and REDUCE_MIN over a set of axes, as TFLite Micro's reference
kernels compute them.

Each output element's reduction is a scalar accumulator (TFLite keeps a temporary per output;
the order of the operations is the same: the reduced axes in row-major order). Then
* MEAN, float: `sum / (float)count`; SUM, float: the sum;
* MEAN and SUM, int8: `QuantizedMeanOrSum`, which TFLite Micro runs for MEAN even when the
  input and output quantisations are equal (its rounding differs from the truncating
  `reference_ops::Mean`): `MultiplyByQuantizedMultiplier(sum - zp_in * count)` with the
  multiplier `scale_in / scale_out` (for MEAN folded with `1 / count`, `mean_multiplier`),
  plus the output zero point, clamped to the output type (int8, or int16 for 16x8 models);
* REDUCE_MAX: the largest element (`in > current ? in : current`, from the lowest value);
  REDUCE_MIN the smallest (`in < current ? in : current`, from the largest value); int8
  keeps the quantisation (TFLite requires equal input and output parameters).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i32

from usmp_dialect.kernels.builder import Value, finish, function
from usmp_dialect.kernels.fixed_point import emit_multiply_by_quantized_multiplier, wrap32
from usmp_dialect.kernels.module import ModelModule
from usmp_dialect.kernels.pooling import FLOAT_LOWEST


@dataclass(frozen=True)
class QuantizedMean:
    """int8 MEAN and SUM: the zero points and TFLite's QuantizeMultiplier(scale_in / scale_out)."""

    input_zero_point: int
    multiplier: int
    shift: int
    output_zero_point: int


def mean_multiplier(multiplier: int, shift: int, count: int) -> tuple[int, int]:
    """`QuantizedMeanOrSum`'s multiplier and shift of a mean over `count` elements: the
    multiplier shifted left by floor(log2(count)) (at most 32, and no further than a total
    right shift of 31 allows) and divided by `count` (integer division)."""
    extra = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << extra) // count, shift - extra


def reduce(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    axes: Sequence[int],
    kind: str,
    quantized: QuantizedMean | None,
) -> None:
    """Adds `@name(%input, %output)` computing `kind` ("mean", "sum", "max" or "min"; `quantized`
    for int8 mean and sum); `output_type` has the input's rank with the reduced `axes`
    (distinct, in [0, rank)) of extent 1."""
    shape = input_type.get_shape()
    rank = len(shape)
    reduced = sorted(set(axes))
    kept = [axis for axis in range(rank) if axis not in reduced]
    count = 1
    for axis in reduced:
        count *= shape[axis]
    element = output_type.element_type
    integer = isinstance(element, IntegerType)
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])

    def body(kept_ivs: Sequence[Value]) -> None:
        def reduce_level(depth: int, index: list[Value | int], total: Value) -> Value:
            if depth == len(reduced):
                x = kernel.load(source, index)
                if kind in ("max", "min"):
                    beyond = kernel.cmp("sgt" if kind == "max" else "slt", x, total)
                    return kernel.select(beyond, x, total)
                return kernel.add(total, kernel.cast(x, i32) if integer else x)

            def step(iv: Value, carried: Sequence[Value]) -> list[Value]:
                inner = list(index)
                inner[reduced[depth]] = iv
                return [reduce_level(depth + 1, inner, carried[0])]

            (result,) = kernel.loop(0, shape[reduced[depth]], step, [total])
            return result

        index: list[Value | int] = [0] * rank
        for axis, iv in zip(kept, kept_ivs, strict=True):
            index[axis] = iv
        if kind == "max":
            start = kernel.constant(-128 if integer else FLOAT_LOWEST, element)
        elif kind == "min":
            start = kernel.constant(127 if integer else -FLOAT_LOWEST, element)
        else:
            start = kernel.constant(0, i32 if integer else f32)
        total = reduce_level(0, index, start)
        if kind in ("max", "min") or (kind == "sum" and not integer):
            result = total
        elif not integer:
            result = kernel.div(total, kernel.constant(float(count), f32))
        else:
            assert quantized is not None
            multiplier, shift = quantized.multiplier, quantized.shift
            if kind == "mean":
                multiplier, shift = mean_multiplier(multiplier, shift, count)
            offset = kernel.sub(total, wrap32(quantized.input_zero_point * count))
            scaled = emit_multiply_by_quantized_multiplier(kernel, offset, multiplier, shift)
            shifted = kernel.add(scaled, quantized.output_zero_point)
            assert isinstance(element, IntegerType)
            lowest, highest = -(1 << (element.width.data - 1)), (1 << (element.width.data - 1)) - 1
            result = kernel.cast(kernel.clamp(shifted, lowest, highest), element)
        output_index = [0 if axis in reduced else index[axis] for axis in range(rank)]
        kernel.store(result, target, output_index)

    kernel.loops([shape[axis] for axis in kept], body)
    finish(kernel)
    module.add(op)
