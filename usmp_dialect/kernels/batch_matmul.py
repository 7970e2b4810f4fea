"""BATCH_MATMUL as TFLite's `reference_ops::BatchMatMul` computes it: for every output element
(batch dimensions broadcast, NumPy's rules) one accumulator over the depth in increasing order,
float32 `sum of a * b` from 0, int8 `sum of (a - lhs zero point) * (b - rhs zero point)` in
int32, requantised by one multiplier and clamped to int8; int16 (16x8, zero points 0,
`BatchMatMul<int16_t, int64_t>`) the sum of products in int64, requantised by TFLite's 64-bit
`MultiplyByQuantizedMultiplier` and clamped to int16. `adj_x` / `adj_y` read an operand
transposed in place (TFLM copies it transposed first; the products are the same). An operand
may be a constant `memref.global` (`elementwise.Operand`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i32, i64

from usmp_dialect.kernels.builder import Value, finish, function
from usmp_dialect.kernels.elementwise import Operand
from usmp_dialect.kernels.fixed_point import (
    emit_multiply_by_quantized_multiplier,
    emit_multiply_by_quantized_multiplier_64,
    reduced_multiplier,
)
from usmp_dialect.kernels.module import ModelModule


@dataclass(frozen=True)
class QuantizedMatmul:
    """int8 parameters: the operands' zero points, TFLite's output multiplier and shift, the
    output zero point."""

    lhs_zero_point: int
    rhs_zero_point: int
    multiplier: int
    shift: int
    output_zero_point: int


def batch_matmul(
    module: ModelModule,
    name: str,
    operands: tuple[Operand, Operand],
    output_type: MemRefType,
    adjoint: tuple[bool, bool],
    quantized: QuantizedMatmul | None,
) -> None:
    """Adds `@name(%lhs?, %rhs?, %output)`; the operands have the output's rank (leading
    batch dimensions of extent 1 where they are broadcast)."""
    arguments = [
        (("lhs", "rhs")[position], operand.type_)
        for position, operand in enumerate(operands)
        if operand.constant is None
    ]
    op, kernel, values = function(name, [*arguments, ("output", output_type)])
    remaining = iter(values[:-1])
    sources = [
        kernel.get_global(operand.constant, operand.type_)
        if operand.constant is not None
        else next(remaining)
        for operand in operands
    ]
    target = values[-1]
    element = output_type.element_type
    wide = quantized is not None and isinstance(element, IntegerType) and element.width.data == 16
    accumulator = i64 if wide else i32
    shapes = [operand.type_.get_shape() for operand in operands]
    rank = len(output_type.get_shape())
    lhs_shape = shapes[0]
    depth = lhs_shape[-2] if adjoint[0] else lhs_shape[-1]

    def batch_index(ivs: Sequence[Value], shape: Sequence[int]) -> list[Value | int]:
        return [
            iv if extent != 1 else 0 for iv, extent in zip(ivs[: rank - 2], shape, strict=False)
        ]

    def body(ivs: Sequence[Value]) -> None:
        row, column = ivs[-2], ivs[-1]
        lhs_batch, rhs_batch = batch_index(ivs, shapes[0]), batch_index(ivs, shapes[1])

        def step(k: Value, carried: Sequence[Value]) -> list[Value]:
            a = kernel.load(sources[0], [*lhs_batch, *((k, row) if adjoint[0] else (row, k))])
            b = kernel.load(sources[1], [*rhs_batch, *((column, k) if adjoint[1] else (k, column))])
            if quantized is not None:
                a = kernel.sub(kernel.cast(a, accumulator), quantized.lhs_zero_point)
                b = kernel.sub(kernel.cast(b, accumulator), quantized.rhs_zero_point)
            return [kernel.add(carried[0], kernel.mul(a, b))]

        start = (
            kernel.constant(0, accumulator) if quantized is not None else kernel.constant(0.0, f32)
        )
        (total,) = kernel.loop(0, depth, step, [start])
        if quantized is not None:
            if wide:
                scaled = emit_multiply_by_quantized_multiplier_64(
                    kernel, total, reduced_multiplier(quantized.multiplier), 15 - quantized.shift
                )
            else:
                scaled = emit_multiply_by_quantized_multiplier(
                    kernel, total, quantized.multiplier, quantized.shift
                )
            shifted = kernel.add(scaled, quantized.output_zero_point)
            assert isinstance(element, IntegerType)
            bits = element.width.data
            low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
            total = kernel.cast(kernel.clamp(shifted, low, high), element)
        kernel.store(total, target, ivs)

    kernel.loops(output_type.get_shape(), body)
    finish(kernel)
    module.add(op)
