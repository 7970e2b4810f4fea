"""float32 functions of a whole row (the last axis), as TFLite's reference kernels compute
them, each row with scalar accumulators in TFLite's order:

* LOG_SOFTMAX (`reference_ops::LogSoftmax`): the row's maximum (from the lowest float), the
  sum of `exp(x - max)`, then `x - max - log(sum)`;
* L2_NORMALIZATION (`reference_ops::L2Normalization`): `x / max(sqrt(sum of x * x), 1e-6)`;
  int8 as `reference_integer_ops::L2Normalization` (`l2_normalization_int8`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import math
from xdsl.dialects.builtin import MemRefType, f32, i8, i32

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function
from usmp_dialect.kernels.fixed_point import (
    INT32_MAX,
    INT32_MIN,
    emit_multiply_by_quantized_multiplier,
    emit_rounding_divide_by_pot,
    emit_saturating_rounding_doubling_high_mul,
)
from usmp_dialect.kernels.module import ModelModule
from usmp_dialect.kernels.pooling import FLOAT_LOWEST

L2_EPSILON = 1e-6


def row_function(module: ModelModule, name: str, type_: MemRefType, kind: str) -> None:
    """Adds `@name(%input, %output)` of `type_` ([rows, depth]) computing `kind`
    ("log_softmax" or "l2_normalization") on every row."""
    rows, depth = type_.get_shape()
    op, kernel, (source, target) = function(name, [("input", type_), ("output", type_)])

    def fold(row: Value, start: float, step: Callable[[Value, Value], Value]) -> Value:
        def body(c: Value, carried: Sequence[Value]) -> list[Value]:
            return [step(carried[0], kernel.load(source, [row, c]))]

        (total,) = kernel.loop(0, depth, body, [kernel.constant(start, f32)])
        return total

    def each(row: Value, element: Callable[[Value], Value]) -> None:
        def body(c: Value, _: Sequence[Value]) -> list[Value]:
            kernel.store(element(kernel.load(source, [row, c])), target, [row, c])
            return []

        kernel.loop(0, depth, body)

    def per_row(ivs: Sequence[Value]) -> None:
        (row,) = ivs
        if kind == "log_softmax":
            # std::max(max, x): (max < x) ? x : max
            largest = fold(
                row, FLOAT_LOWEST, lambda m, x: kernel.select(kernel.cmp("lt", m, x), x, m)
            )
            total = fold(row, 0.0, lambda s, x: kernel.add(s, kernel.exp(kernel.sub(x, largest))))
            log_sum = kernel.insert(math.LogOp(total))
            each(row, lambda x: kernel.sub(kernel.sub(x, largest), log_sum))
        else:
            squares = fold(row, 0.0, lambda s, x: kernel.add(s, kernel.mul(x, x)))
            root = kernel.insert(math.SqrtOp(squares))
            norm = kernel.select(kernel.cmp("lt", root, L2_EPSILON), L2_EPSILON, root)
            each(row, lambda x: kernel.div(x, norm))

    kernel.loops([rows], per_row)
    finish(kernel)
    module.add(op)


def _saturating_shift_left(kernel: KernelBuilder, value: Value, exponent: int) -> Value:
    """gemmlowp's `SaturatingRoundingMultiplyByPOT<exponent>` for a positive exponent."""
    threshold = (1 << (31 - exponent)) - 1
    shifted = kernel.shl(value, exponent)
    low = kernel.select(kernel.cmp("slt", value, -threshold), INT32_MIN, shifted)
    return kernel.select(kernel.cmp("sgt", value, threshold), INT32_MAX, low)


def emit_inv_sqrt(kernel: KernelBuilder, value: Value) -> tuple[Value, Value]:
    """TFLite's `GetInvSqrtQuantizedMultiplierExp(value, kReverseShift)` of a non-negative i32:
    (multiplier, shift in TFLite's convention, positive left). The normalisation loop of the
    reference is the shift count computed from the leading zeros."""
    multiply = emit_saturating_rounding_doubling_high_mul
    bits = kernel.sub(32, kernel.insert(math.CountLeadingZerosOp(value)))
    quarters = kernel.max(kernel.div(kernel.sub(bits, 28), 2), 0)
    reduced = kernel.shr(value, kernel.shl(quarters, 1))
    pairs = kernel.sub(
        kernel.div(kernel.sub(kernel.insert(math.CountLeadingZerosOp(reduced)), 1), 2), 1
    )
    shift = kernel.sub(kernel.add(quarters, 11), pairs)
    normalized = kernel.shl(reduced, kernel.shl(pairs, 1))
    half_input = emit_rounding_divide_by_pot(kernel, kernel.shr(normalized, 1), 1)
    half_three = kernel.constant((1 << 28) + (1 << 27), i32)
    x = kernel.constant(1 << 28, i32)
    for _ in range(5):
        cube = _saturating_shift_left(kernel, multiply(kernel, multiply(kernel, x, x), x), 6)
        x = _saturating_shift_left(
            kernel,
            kernel.sub(multiply(kernel, half_three, x), multiply(kernel, half_input, cube)),
            3,
        )
    x = multiply(kernel, x, kernel.constant(1518500250, i32))  # sqrt(2) / 2 in Q0.31
    negative = kernel.cmp("slt", shift, 0)
    # the shift amount is clamped at 0: both sides of the select are computed
    x = kernel.select(negative, kernel.shl(x, kernel.max(kernel.sub(0, shift), 0)), x)
    shift = kernel.select(negative, 0, shift)
    tiny = kernel.cmp("sle", value, 1)
    multiplier = kernel.select(tiny, INT32_MAX, x)
    return multiplier, kernel.select(tiny, 0, kernel.sub(0, shift))


def l2_normalization_int8(
    module: ModelModule, name: str, type_: MemRefType, zero_point: int
) -> None:
    """Adds `@name(%input, %output)` of `type_` ([rows, depth], int8): TFLite's integer
    `L2Normalization`, each row's `sum of (x - zero point)^2` in int32, its inverse square
    root as a multiplier, each element `MultiplyByQuantizedMultiplier(x - zero point, ...)` on
    the output scale 1/128, clamped."""
    rows, depth = type_.get_shape()
    op, kernel, (source, target) = function(name, [("input", type_), ("output", type_)])

    def centred(row: Value, c: Value) -> Value:
        return kernel.sub(kernel.cast(kernel.load(source, [row, c]), i32), zero_point)

    def per_row(ivs: Sequence[Value]) -> None:
        (row,) = ivs

        def accumulate(c: Value, carried: Sequence[Value]) -> list[Value]:
            x = centred(row, c)
            return [kernel.add(carried[0], kernel.mul(x, x))]

        (total,) = kernel.loop(0, depth, accumulate, [kernel.constant(0, i32)])
        multiplier, shift = emit_inv_sqrt(kernel, total)
        output_shift = kernel.add(shift, 7)

        def store(c: Value, _: Sequence[Value]) -> list[Value]:
            scaled = emit_multiply_by_quantized_multiplier(
                kernel, centred(row, c), multiplier, output_shift
            )
            kernel.store(kernel.cast(kernel.clamp(scaled, -128, 127), i8), target, [row, c])
            return []

        kernel.loop(0, depth, store)

    kernel.loops([rows], per_row)
    finish(kernel)
    module.add(op)
