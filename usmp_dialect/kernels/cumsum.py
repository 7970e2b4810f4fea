"""CUMSUM along one axis as TFLite's `reference_ops::CumSum` computes it: one accumulator per
line along the axis (forward, or backward with `reverse`), each output the running sum after
(or, `exclusive`, before) its own input. float32 sums from 0; int8 (`ArithmeticParams` of
TFLM's `CalculateOpData`) works in ADD's fixed point: each input offset, shifted left by 20
and scaled by half (`input_multiplier`), added to an accumulator that starts, as TFLite's
does, at the scaled input offset itself, and every partial sum requantised to the output."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType, f32, i8, i32

from usmp_dialect.kernels.builder import Value, finish, function
from usmp_dialect.kernels.fixed_point import emit_multiply_by_quantized_multiplier
from usmp_dialect.kernels.module import ModelModule


@dataclass(frozen=True)
class QuantizedCumsum:
    input_offset: int
    input_multiplier: int
    input_shift: int
    output_multiplier: int
    output_shift: int
    output_offset: int
    left_shift: int = 20


def cumsum(
    module: ModelModule,
    name: str,
    type_: MemRefType,
    exclusive: bool,
    reverse: bool,
    quantized: QuantizedCumsum | None,
) -> None:
    """Adds `@name(%input, %output)` of `type_` ([before, depth, after]): the running sums
    along dimension 1."""
    before, depth, after = type_.get_shape()
    op, kernel, (source, target) = function(name, [("input", type_), ("output", type_)])

    def scaled_input(value: Value) -> Value:
        assert quantized is not None
        return emit_multiply_by_quantized_multiplier(
            kernel,
            kernel.shl(value, quantized.left_shift),
            quantized.input_multiplier,
            quantized.input_shift,
        )

    def line(ivs: Sequence[Value]) -> None:
        outer, inner = ivs
        if quantized is None:
            start = kernel.constant(0.0, f32)
        else:
            start = scaled_input(kernel.constant(quantized.input_offset, i32))

        def step(k: Value, carried: Sequence[Value]) -> list[Value]:
            position = kernel.sub(depth - 1, k) if reverse else k
            x = kernel.load(source, [outer, position, inner])
            if quantized is not None:
                x = scaled_input(kernel.add(kernel.cast(x, i32), quantized.input_offset))
            total = kernel.add(carried[0], x)
            result = carried[0] if exclusive else total
            if quantized is not None:
                requantized = emit_multiply_by_quantized_multiplier(
                    kernel, result, quantized.output_multiplier, quantized.output_shift
                )
                shifted = kernel.add(requantized, quantized.output_offset)
                result = kernel.cast(kernel.clamp(shifted, -128, 127), i8)
            kernel.store(result, target, [outer, position, inner])
            return [total]

        kernel.loop(0, depth, step, [start])

    kernel.loops([before, after], line)
    finish(kernel)
    module.add(op)
