"""SOFTMAX and int8 LOG_SOFTMAX over the last axis, as TFLite's reference kernels compute them.

float: `exp((x - max) * beta)` per element, then division by the row's sum.

int8 (input any scale, output scale 1/256 and zero point -128, or int16 with scale 1/65536 and
zero point -32768): gemmlowp's fixed point. The
difference `x - max` of an int8 row lies in [-255, 0], so everything that depends on it alone —
the rescaled difference and `exp_on_negative_values` of it (Q0.31) — is a 256-entry int32 table
computed at import by the same integer algorithm (`exp_table`). The kernel sums
`RoundingDivideByPOT(exp, 12)` over the row (Q12.19), takes the reciprocal with gemmlowp's
`GetReciprocal` (count of leading zeros and three Newton-Raphson steps of
`one_over_one_plus_x_for_x_in_0_1`, emitted as IR), and scales each exponential by it.

int8 LOG_SOFTMAX (output scale 16/256, zero point 127; `reference_ops::LogSoftmaxQuantized`):
the rescaled difference (Q5.26) and its exponential (`Rescale<12>`, Q12.19) are again 256-entry
tables of `x - max`; per row the kernel sums the exponentials, takes TFLite's fixed-point
`log_x_for_x_greater_than_or_equal_to_1` of the sum (emitted as IR), derives the row's cut-off
`adjusted_diff_min` and writes `RoundingDivideByPOT(diff - log_sum, 22) + 127` above it, -128
below.
"""

from __future__ import annotations

import math as pymath
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import math
from xdsl.dialects.builtin import MemRefType, f32, i32

from usmp_dialect.kernels.builder import INDEX, Value, finish, function
from usmp_dialect.kernels.fixed_point import (
    INT32_MIN,
    emit_log_x_for_x_at_least_one,
    emit_multiply_by_quantized_multiplier,
    emit_one_over_one_plus_x,
    emit_rounding_divide_by_pot,
    emit_saturating_rounding_doubling_high_mul,
    exp_on_negative_values,
    multiply_by_quantized_multiplier_reference,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    wrap32,
)
from usmp_dialect.kernels.module import ModelModule
from usmp_dialect.kernels.pooling import FLOAT_LOWEST

SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12
LOG_SOFTMAX_OUTPUT_INTEGER_BITS = 4


# -- import-time parameters and tables (Python integers) -----------------------------------


def softmax_parameters(beta: float, input_scale: float) -> tuple[int, int, int]:
    """TFLite's `PreprocessSoftmaxScaling` and `CalculateInputRadius` for int8 input:
    (input multiplier, input left shift, diff_min)."""
    real = min(beta * input_scale * (1 << (31 - SCALED_DIFF_INTEGER_BITS)), float((1 << 31) - 1))
    multiplier, left_shift = quantize_multiplier(real)
    max_input_rescaled = (
        1.0
        * ((1 << SCALED_DIFF_INTEGER_BITS) - 1)
        * (1 << (31 - SCALED_DIFF_INTEGER_BITS))
        / (1 << left_shift)
    )
    return multiplier, left_shift, -pymath.floor(max_input_rescaled)


def exp_table(multiplier: int, left_shift: int, diff_min: int) -> np.ndarray:
    """`exp(beta * scale * diff)` in Q0.31 for diff = 0, -1, ..., -255 (index = -diff); 0 where
    TFLite skips the element (diff < diff_min), which makes it add nothing and output -128."""
    table = np.zeros(256, dtype=np.int32)
    for index in range(256):
        diff = -index
        if diff < diff_min:
            continue
        rescaled = saturating_rounding_doubling_high_mul(
            wrap32(diff * (1 << left_shift)), multiplier
        )
        table[index] = exp_on_negative_values(rescaled, SCALED_DIFF_INTEGER_BITS)
    return table


@dataclass(frozen=True, eq=False)
class LogSoftmaxTables:
    """int8 LOG_SOFTMAX's import-time data (TFLM's `LogSoftmaxOpData`): for diff = 0, -1, ...,
    -255 (index = -diff) the rescaled difference in Q5.26 and its exponential in Q12.19 (0
    where diff < diff_min, which TFLite leaves out of the sum), and the reverse scaling."""

    rescaled: np.ndarray
    exponentials: np.ndarray
    diff_min: int
    reverse_multiplier: int
    reverse_shift: int


def log_softmax_tables(input_scale: float) -> LogSoftmaxTables:
    """`PreprocessLogSoftmaxScalingExp(beta 1, input scale, 5 integer bits)` and
    `CalculateInputRadius`, and the tables of `LogSoftmaxQuantized`'s per-element terms."""
    multiplier, left_shift, diff_min = softmax_parameters(1.0, input_scale)
    reverse_real = (1 << (31 - left_shift)) / float(multiplier)
    reverse_multiplier, reverse_shift = quantize_multiplier(reverse_real)
    rescaled = np.zeros(256, dtype=np.int32)
    exponentials = np.zeros(256, dtype=np.int32)
    for index in range(256):
        if -index < diff_min:
            continue
        rescaled[index] = multiply_by_quantized_multiplier_reference(-index, multiplier, left_shift)
        exponential = exp_on_negative_values(int(rescaled[index]), SCALED_DIFF_INTEGER_BITS)
        exponentials[index] = rounding_divide_by_pot(exponential, ACCUMULATION_INTEGER_BITS)
    return LogSoftmaxTables(rescaled, exponentials, diff_min, reverse_multiplier, reverse_shift)


# -- the kernels ---------------------------------------------------------------------------


def softmax_int8(
    module: ModelModule,
    name: str,
    type_: MemRefType,
    table: np.ndarray,
    output_type: MemRefType | None = None,
) -> None:
    """Adds `@name(%input: [rows, depth] i8, %output)` with the exponential `table`; the
    output int8 (scale 1/256, zero point -128) or, with an i16 `output_type`, int16 (scale
    1/65536, zero point -32768: TFLite's `Softmax<int8_t, int16_t>`, 16 bits kept of the
    product instead of 8)."""
    rows, depth = type_.get_shape()
    output_type = output_type or type_
    bits = output_type.element_type.width.data  # type: ignore[attr-defined]
    lowest, highest = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    op, kernel, (source, target) = function(name, [("input", type_), ("output", output_type)])
    exps = kernel.get_global(*module.constant(f"{name}_exp", table.astype(np.int32)))

    def row(r: Value, _: tuple[Value, ...]) -> list[Value]:
        (maximum,) = kernel.loop(
            0,
            depth,
            lambda c, m: [kernel.max(m[0], kernel.cast(kernel.load(source, [r, c]), i32))],
            [kernel.constant(-128, i32)],
        )

        def exp_of(c: Value) -> Value:
            difference = kernel.sub(maximum, kernel.cast(kernel.load(source, [r, c]), i32))
            return kernel.load(exps, [kernel.cast(difference, INDEX)])

        (total,) = kernel.loop(
            0,
            depth,
            lambda c, s: [
                kernel.add(
                    s[0],
                    emit_rounding_divide_by_pot(kernel, exp_of(c), ACCUMULATION_INTEGER_BITS),
                )
            ],
            [kernel.constant(0, i32)],
        )
        headroom = kernel.insert(math.CountLeadingZerosOp(total))
        bits_over_unit = kernel.sub(ACCUMULATION_INTEGER_BITS, headroom)
        shifted_sum_minus_one = kernel.sub(kernel.shl(total, headroom), INT32_MIN)
        scale = emit_one_over_one_plus_x(kernel, shifted_sum_minus_one)
        exponent = kernel.add(bits_over_unit, 31 - bits)

        def write(c: Value, _: tuple[Value, ...]) -> list[Value]:
            product = emit_saturating_rounding_doubling_high_mul(kernel, scale, exp_of(c))
            unsaturated = emit_rounding_divide_by_pot(kernel, product, exponent)
            value = kernel.clamp(kernel.add(unsaturated, lowest), lowest, highest)
            kernel.store(kernel.cast(value, output_type.element_type), target, [r, c])
            return []

        kernel.loop(0, depth, write)
        return []

    kernel.loop(0, rows, row)
    finish(kernel)
    module.add(op)


def log_softmax_int8(
    module: ModelModule, name: str, type_: MemRefType, tables: LogSoftmaxTables
) -> None:
    """Adds `@name(%input: [rows, depth] i8, %output)`: int8 LOG_SOFTMAX."""
    rows, depth = type_.get_shape()
    op, kernel, (source, target) = function(name, [("input", type_), ("output", type_)])
    rescaled = kernel.get_global(*module.constant(f"{name}_rescaled", tables.rescaled))
    exponentials = kernel.get_global(*module.constant(f"{name}_exp", tables.exponentials))

    def row(r: Value, _: tuple[Value, ...]) -> list[Value]:
        (maximum,) = kernel.loop(
            0,
            depth,
            lambda c, m: [kernel.max(m[0], kernel.cast(kernel.load(source, [r, c]), i32))],
            [kernel.constant(-128, i32)],
        )

        def index_of(c: Value) -> Value:  # -diff, in [0, 255]
            return kernel.sub(maximum, kernel.cast(kernel.load(source, [r, c]), i32))

        (total,) = kernel.loop(
            0,
            depth,
            lambda c, s: [
                kernel.add(s[0], kernel.load(exponentials, [kernel.cast(index_of(c), INDEX)]))
            ],
            [kernel.constant(0, i32)],
        )
        log_sum = emit_log_x_for_x_at_least_one(
            kernel, total, ACCUMULATION_INTEGER_BITS, SCALED_DIFF_INTEGER_BITS
        )
        reverse = emit_multiply_by_quantized_multiplier(
            kernel, kernel.add(log_sum, INT32_MIN), tables.reverse_multiplier, tables.reverse_shift
        )
        adjusted_diff_min = kernel.max(reverse, tables.diff_min - 1)

        def write(c: Value, _: tuple[Value, ...]) -> list[Value]:
            index = index_of(c)
            difference = kernel.load(rescaled, [kernel.cast(index, INDEX)])
            output = emit_rounding_divide_by_pot(
                kernel,
                kernel.sub(difference, log_sum),
                31 - SCALED_DIFF_INTEGER_BITS - LOG_SOFTMAX_OUTPUT_INTEGER_BITS,
            )
            value = kernel.clamp(kernel.add(output, 127), -128, 127)
            inside = kernel.cmp("sgt", kernel.sub(0, index), adjusted_diff_min)
            chosen = kernel.select(inside, value, -128)
            kernel.store(kernel.cast(chosen, type_.element_type), target, [r, c])
            return []

        kernel.loop(0, depth, write)
        return []

    kernel.loop(0, rows, row)
    finish(kernel)
    module.add(op)


def softmax_float(module: ModelModule, name: str, type_: MemRefType, beta: float) -> None:
    """Adds `@name(%input: [rows, depth] f32, %output)`; the output holds the exponentials
    until the division, as TFLite's reference kernel does."""
    rows, depth = type_.get_shape()
    op, kernel, (source, target) = function(name, [("input", type_), ("output", type_)])

    def row(r: Value, _: tuple[Value, ...]) -> list[Value]:
        (maximum,) = kernel.loop(
            0,
            depth,
            lambda c, m: [kernel.max(m[0], kernel.load(source, [r, c]))],
            [kernel.constant(FLOAT_LOWEST, f32)],
        )

        def exponential(c: Value, s: tuple[Value, ...]) -> list[Value]:
            shifted = kernel.sub(kernel.load(source, [r, c]), maximum)
            value = kernel.exp(kernel.mul(shifted, kernel.constant(beta, f32)))
            kernel.store(value, target, [r, c])
            return [kernel.add(s[0], value)]

        (total,) = kernel.loop(0, depth, exponential, [kernel.constant(0.0, f32)])

        def divide(c: Value, _: tuple[Value, ...]) -> list[Value]:
            kernel.store(kernel.div(kernel.load(target, [r, c]), total), target, [r, c])
            return []

        kernel.loop(0, depth, divide)
        return []

    kernel.loop(0, rows, row)
    finish(kernel)
    module.add(op)
