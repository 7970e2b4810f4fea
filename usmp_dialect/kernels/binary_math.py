"""Binary elementwise operators beyond ADD/SUB/MUL, one output element at a time as TensorFlow
Lite Micro computes them (broadcasting and constant inputs come from `elementwise.binary`):

* MAXIMUM / MINIMUM (`maximum_minimum.cc`): `x > y ? x : y` / `x < y ? x : y` on the stored
  values of any type, int8 and int16 codes compared raw (TFLM does not rescale) and float NaN
  handled as C++ does.
* SQUARED_DIFFERENCE: float32 and int32 `d * d` of `d = x - y` (int32 wrapping around as
  TFLM's `SquaredDifference<int32_t>` does on two's complement machines); int8 and int16 as
  `squared_difference.cc`'s quantised `SquaredDifference`: both inputs shifted left by 7
  (int16: 0), scaled to twice the larger input scale, subtracted, squared in int32 and
  requantised once, clamped to the output type.
* PRELU (`reference_ops::BroadcastPrelu4DSlow`): float `x >= 0 ? x : x * alpha`; int8 (and
  int16 with an int8 alpha) with two multipliers, `input / output` for non-negative inputs and
  `input * alpha / output` for the product of the offset input and alpha.
* DIV on int8 (`reference_ops::DivElementwise`): the divisor's reciprocal in Q0.31
  (`GetReciprocal`, gemmlowp's Newton-Raphson `one_over_one_plus_x`), the dividend normalised
  by its leading sign bits, one doubling high multiply by the reciprocal and the requantisation
  by `input1 / (input2 * output)` with a shift that depends on both operands. Where that shift
  reaches 32 or more TFLite shifts an int32 by it (undefined in C; x86 and Arm give different
  garbage, x86 mostly the saturated output); the quotient is then below half an output step
  and this kernel gives its rounding, the zero point. A zero divisor is computed as TFLite
  computes it (its reciprocal of 0 is defined on both machines): the saturated value of the
  sign opposite to the dividend's, the zero point for 0 / 0.
* FLOOR_DIV on float (`reference_ops::FloorDiv`): `floor` of the quotient in double precision,
  rounded to float (a float quotient can round up to an integer its exact value is below).
* FLOOR_MOD on float (`reference_ops::FloorMod`): C's `fmodf`, moved by the divisor where it
  is non-zero and of the other sign than the divisor (Python's `%`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import math
from xdsl.dialects.builtin import IntegerType, f32, f64, i8, i32

from usmp_dialect.dialects.upstream import RemfOp
from usmp_dialect.kernels.builder import KernelBuilder, Value, is_float
from usmp_dialect.kernels.fixed_point import (
    emit_count_leading_sign_bits,
    emit_multiply_by_quantized_multiplier,
    emit_reciprocal,
    emit_rounding_divide_by_pot,
    emit_saturating_rounding_doubling_high_mul,
)


@dataclass(frozen=True)
class Extremum:
    """MAXIMUM (`maximum=True`) or MINIMUM, on any integer type or float32."""

    maximum: bool


@dataclass(frozen=True)
class PlainSquaredDifference:
    """float32 or int32 `(x - y) * (x - y)`."""


@dataclass(frozen=True)
class QuantizedSquaredDifference:
    """int8 (int16) SQUARED_DIFFERENCE: TFLM's `PrepareQuantized` parameters (shifts
    non-positive for the inputs, TFLite's sign convention; left shift 7, int16 0)."""

    input_offsets: tuple[int, int]
    input_multipliers: tuple[int, int]
    input_shifts: tuple[int, int]
    output_multiplier: int
    output_shift: int
    output_offset: int
    left_shift: int = 7


@dataclass(frozen=True)
class Prelu:
    """PRELU; the int8 fields are TFLM's `PreluParams` (unused for float32)."""

    input_offset: int = 0
    alpha_offset: int = 0
    identity: tuple[int, int] = (0, 0)  # (multiplier, shift) of input / output
    product: tuple[int, int] = (0, 0)  # (multiplier, shift) of input * alpha / output
    output_offset: int = 0


@dataclass(frozen=True)
class QuantizedDiv:
    """int8 DIV: TFLM's `OpDataDiv` (the multiplier of `input1 / (input2 * output)`)."""

    input_offsets: tuple[int, int]
    output_multiplier: int
    output_shift: int
    output_offset: int
    activation_min: int
    activation_max: int


@dataclass(frozen=True)
class FloorDivision:
    """float32 FLOOR_DIV (`modulo` False) or FLOOR_MOD (`modulo` True)."""

    modulo: bool


BinaryMath = (
    Extremum
    | PlainSquaredDifference
    | QuantizedSquaredDifference
    | Prelu
    | QuantizedDiv
    | FloorDivision
)


def _to_input_type(kernel: KernelBuilder, value: Value, x: Value) -> Value:
    """An int32 result clamped to the range of `x`'s type (int8 or int16) and cast to it."""
    assert isinstance(x.type, IntegerType)
    bits = x.type.width.data
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return kernel.cast(kernel.clamp(value, low, high), x.type)


def _divide(kernel: KernelBuilder, arithmetic: QuantizedDiv, x: Value, y: Value) -> Value:
    dividend = kernel.add(kernel.cast(x, i32), arithmetic.input_offsets[0])
    divisor = kernel.add(kernel.cast(y, i32), arithmetic.input_offsets[1])
    negative = kernel.cmp("slt", divisor, 0)  # the reciprocal must be a positive multiplier
    dividend = kernel.select(negative, kernel.sub(0, dividend), dividend)
    divisor = kernel.select(negative, kernel.sub(0, divisor), divisor)
    reciprocal, reciprocal_shift = emit_reciprocal(kernel, divisor, 31)
    headroom = emit_count_leading_sign_bits(kernel, dividend)
    quotient = emit_saturating_rounding_doubling_high_mul(
        kernel, kernel.shl(dividend, headroom), reciprocal
    )
    # RoundingDivideByPOT by -(output_shift - reciprocal_shift - headroom) >= 0 (the import
    # refuses output shifts that could make it negative)
    exponent = kernel.sub(kernel.add(headroom, reciprocal_shift), arithmetic.output_shift)
    scaled = emit_saturating_rounding_doubling_high_mul(
        kernel, quotient, kernel.constant(arithmetic.output_multiplier, i32), may_overflow=False
    )
    rounded = emit_rounding_divide_by_pot(kernel, scaled, kernel.min(exponent, 31))
    result = kernel.select(kernel.cmp("sgt", exponent, 31), 0, rounded)
    value = kernel.add(result, arithmetic.output_offset)
    return kernel.cast(
        kernel.clamp(value, arithmetic.activation_min, arithmetic.activation_max), i8
    )


def _floor_division(kernel: KernelBuilder, arithmetic: FloorDivision, x: Value, y: Value) -> Value:
    if not arithmetic.modulo:
        quotient = kernel.div(kernel.cast(x, f64), kernel.cast(y, f64))
        return kernel.cast(kernel.insert(math.FloorOp(quotient)), f32)
    remainder = kernel.insert(RemfOp(x, y))
    # C++'s `trunc_mod != 0` is true for NaN, which propagates through either branch
    moved = kernel.and_(
        kernel.cmp("ne", remainder, 0.0),
        kernel.cmp("ne", kernel.cmp("lt", y, 0.0), kernel.cmp("lt", remainder, 0.0)),
    )
    return kernel.select(moved, kernel.add(remainder, y), remainder)


def emit_binary_math(kernel: KernelBuilder, arithmetic: BinaryMath, x: Value, y: Value) -> Value:
    if isinstance(arithmetic, FloorDivision):
        return _floor_division(kernel, arithmetic, x, y)
    if isinstance(arithmetic, QuantizedDiv):
        return _divide(kernel, arithmetic, x, y)
    if isinstance(arithmetic, Extremum):
        return kernel.select(kernel.cmp("sgt" if arithmetic.maximum else "slt", x, y), x, y)
    if isinstance(arithmetic, PlainSquaredDifference):
        difference = kernel.sub(x, y)
        return kernel.mul(difference, difference)
    if isinstance(arithmetic, Prelu):
        if is_float(x.type):
            return kernel.select(kernel.cmp("sge", x, 0.0), x, kernel.mul(x, y))
        value = kernel.add(kernel.cast(x, i32), arithmetic.input_offset)
        alpha = kernel.add(kernel.cast(y, i32), arithmetic.alpha_offset)
        positive = emit_multiply_by_quantized_multiplier(kernel, value, *arithmetic.identity)
        negative = emit_multiply_by_quantized_multiplier(
            kernel, kernel.mul(value, alpha), *arithmetic.product
        )
        chosen = kernel.select(kernel.cmp("sge", value, 0), positive, negative)
        return _to_input_type(kernel, kernel.add(chosen, arithmetic.output_offset), x)
    scaled = [
        emit_multiply_by_quantized_multiplier(
            kernel,
            kernel.shl(
                kernel.add(kernel.cast(value, i32), arithmetic.input_offsets[side]),
                arithmetic.left_shift,
            ),
            arithmetic.input_multipliers[side],
            arithmetic.input_shifts[side],
        )
        for side, value in enumerate((x, y))
    ]
    difference = kernel.sub(scaled[0], scaled[1])
    squared = emit_multiply_by_quantized_multiplier(
        kernel,
        kernel.mul(difference, difference),
        arithmetic.output_multiplier,
        arithmetic.output_shift,
    )
    return _to_input_type(kernel, kernel.add(squared, arithmetic.output_offset), x)
