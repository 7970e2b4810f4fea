"""TFLite's integer arithmetic: quantisation parameters (computed at import, in Python, exactly
as TFLite computes them in its `Prepare` functions) and the fixed-point operations its
reference kernels run (emitted as `arith` ops on scalars).

TFLite Micro builds without `TFLITE_SINGLE_ROUNDING`, so `MultiplyByQuantizedMultiplier` is the
double-rounding form: a saturating rounding doubling high multiply (gemmlowp's
`SaturatingRoundingDoublingHighMul`) followed by a rounding right shift (`RoundingDivideByPOT`).
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import math as math_dialect

from usmp_dialect.kernels.builder import KernelBuilder, Value, i32, i64

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1


# -- parameters, in Python ---------------------------------------------------------------


def round_half_away(value: float) -> int:
    """C++'s `std::round` (TfLiteRound): halves round away from zero."""
    magnitude = math.floor(abs(value) + 0.5)
    return int(magnitude if value >= 0 else -magnitude)


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """TFLite's `QuantizeMultiplier`: (multiplier in [2**30, 2**31), shift) with
    real ≈ multiplier * 2**(shift - 31); zero and tiny multipliers give (0, 0)."""
    if real_multiplier == 0.0:
        return 0, 0
    fraction, shift = math.frexp(real_multiplier)
    fixed = round_half_away(fraction * (1 << 31))
    if fixed == 1 << 31:
        fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def reduced_multiplier(multiplier: int) -> int:
    """The 16-bit multiplier TFLite's 64-bit `MultiplyByQuantizedMultiplier(int64_t x, ...)`
    rounds a Q0.31 multiplier to (0x7FFF when rounding would overflow it)."""
    return (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF


def multiply_by_quantized_multiplier_64_reference(value: int, multiplier: int, shift: int) -> int:
    """TFLite's `MultiplyByQuantizedMultiplier(int64_t x, int32_t multiplier, int shift)`:
    `(x * reduced + 2**(total_shift - 1)) >> total_shift`, total_shift = 15 - shift, the
    result truncated to int32 as C's conversion does."""
    total_shift = 15 - shift
    return wrap32(
        (value * reduced_multiplier(multiplier) + (1 << (total_shift - 1))) >> total_shift
    )


def float32(value: float) -> float:
    """`value` rounded to single precision, as a C++ `float` holds it."""
    return float(np.float32(value))


def activation_range(
    activation: str, scale: float, zero_point: int, qmin: int = -128, qmax: int = 127
) -> tuple[int, int]:
    """TFLite's `CalculateActivationRangeQuantized` for a fused activation
    ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"): quantise in float32, round half away."""

    def quantize(real: float) -> int:
        return zero_point + round_half_away(float32(float32(real) / float32(scale)))

    if activation == "RELU":
        return max(qmin, quantize(0.0)), qmax
    if activation == "RELU6":
        return max(qmin, quantize(0.0)), min(qmax, quantize(6.0))
    if activation == "RELU_N1_TO_1":
        return max(qmin, quantize(-1.0)), min(qmax, quantize(1.0))
    return qmin, qmax


def float_activation_range(activation: str) -> tuple[float, float]:
    """TFLite's `CalculateActivationRange` for float kernels."""
    return {
        "RELU": (0.0, math.inf),
        "RELU6": (0.0, 6.0),
        "RELU_N1_TO_1": (-1.0, 1.0),
    }.get(activation, (-math.inf, math.inf))


# -- reference semantics on Python ints (for tables computed at import) -------------------


def wrap32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def saturating_rounding_doubling_high_mul(a: int, b: int) -> int:
    if a == b == INT32_MIN:
        return INT32_MAX
    product = a * b
    nudge = (1 << 30) if product >= 0 else 1 - (1 << 30)
    total = product + nudge
    quotient = abs(total) >> 31  # C's division truncates toward zero
    return quotient if total >= 0 else -quotient


def rounding_divide_by_pot(value: int, exponent: int) -> int:
    mask = (1 << exponent) - 1
    remainder = value & mask
    threshold = (mask >> 1) + (1 if value < 0 else 0)
    return (value >> exponent) + (1 if remainder > threshold else 0)


def multiply_by_quantized_multiplier_reference(value: int, multiplier: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    return rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(wrap32(value * (1 << left)), multiplier), right
    )


def saturating_rounding_multiply_by_pot(value: int, exponent: int) -> int:
    """gemmlowp's `SaturatingRoundingMultiplyByPOT<exponent>`."""
    if exponent > 0:
        threshold = (1 << (31 - exponent)) - 1
        if value > threshold:
            return INT32_MAX
        if value < -threshold:
            return INT32_MIN
        return value << exponent
    if exponent < 0:
        return rounding_divide_by_pot(value, -exponent)
    return value


def _exp_on_interval_near_zero(a: int) -> int:
    """exp(a) for a in [-1/4, 0), Q0.31 in and out (a Taylor expansion around -1/8)."""
    constant_term = 1895147668  # exp(-1/8)
    one_third = 715827883
    multiply = saturating_rounding_doubling_high_mul
    x = wrap32(a + (1 << 28))
    x2 = multiply(x, x)
    x3 = multiply(x2, x)
    x4 = multiply(x2, x2)
    x4_over_4 = saturating_rounding_multiply_by_pot(x4, -2)
    polynomial = saturating_rounding_multiply_by_pot(
        wrap32(multiply(wrap32(x4_over_4 + x3), one_third) + x2), -1
    )
    return wrap32(constant_term + multiply(constant_term, wrap32(x + polynomial)))


# exp(-2**exponent) in Q0.31, for the barrel shifter of exp_on_negative_values
_EXP_MULTIPLIERS = (
    (-2, 1672461947),
    (-1, 1302514674),
    (0, 790015084),
    (1, 290630308),
    (2, 39332535),
    (3, 720401),
    (4, 242),
)


def exp_on_negative_values(a: int, integer_bits: int) -> int:
    """gemmlowp's `exp_on_negative_values`: exp(a) for a <= 0 in Q(integer_bits).(31 -
    integer_bits), as Q0.31 (a Taylor expansion on [-1/4, 0), then a barrel shifter)."""
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_quarter = wrap32((a & (one_quarter - 1)) - one_quarter)
    result = _exp_on_interval_near_zero(
        saturating_rounding_multiply_by_pot(a_mod_quarter_minus_quarter, integer_bits)
    )
    remainder = wrap32(a_mod_quarter_minus_quarter - a)
    for exponent, multiplier in _EXP_MULTIPLIERS:
        if integer_bits > exponent and remainder & (1 << (fractional_bits + exponent)):
            result = saturating_rounding_doubling_high_mul(result, multiplier)
    if integer_bits > 5 and a < -(1 << (36 - integer_bits)):
        result = 0
    if a == 0:
        result = INT32_MAX
    return result


# -- the same operations as IR ------------------------------------------------------------


def emit_saturating_rounding_doubling_high_mul(
    kernel: KernelBuilder, a: Value, b: Value, may_overflow: bool = True
) -> Value:
    """gemmlowp's `SaturatingRoundingDoublingHighMul` of two i32 values. `may_overflow=False`
    when `b` is known not to be INT32_MIN (a quantised multiplier is never negative).

    gemmlowp adds a nudge of 2**30 (or 1 - 2**30 for a negative product) and divides by 2**31
    rounding toward zero; both cases are the arithmetic shift `(a * b + 2**30) >> 31` (for a
    negative sum, truncating `(p + 1 - 2**30) / 2**31` is flooring `(p + 2**30) / 2**31`), one
    64-bit add and shift instead of a compare, a select and a signed division."""
    product = kernel.mul(kernel.cast(a, i64), kernel.cast(b, i64))
    high = kernel.cast(kernel.shr(kernel.add(product, 1 << 30), 31), i32)
    if not may_overflow:
        return high
    overflow = kernel.and_(kernel.cmp("eq", a, INT32_MIN), kernel.cmp("eq", b, INT32_MIN))
    return kernel.select(overflow, INT32_MAX, high)


def emit_rounding_divide_by_pot(
    kernel: KernelBuilder, value: Value, exponent: Value | int
) -> Value:
    """gemmlowp's `RoundingDivideByPOT` (round half away from zero) of an i32 value."""
    if isinstance(exponent, int):
        if exponent == 0:
            return value
        mask: Value | int = (1 << exponent) - 1
        half: Value | int = mask >> 1
    else:
        mask = kernel.sub(kernel.shl(1, exponent), 1)
        half = kernel.shr(mask, 1)
    remainder = kernel.and_(value, mask)
    threshold = kernel.add(half, kernel.select(kernel.cmp("slt", value, 0), 1, 0, i32))
    rounded_up = kernel.select(kernel.cmp("sgt", remainder, threshold), 1, 0, i32)
    return kernel.add(kernel.shr(value, exponent), rounded_up)


def emit_multiply_by_quantized_multiplier_64(
    kernel: KernelBuilder, value: Value, reduced: Value | int, total_shift: Value | int
) -> Value:
    """TFLite's `MultiplyByQuantizedMultiplier(int64_t x, ...)` of the i64 `value`, given the
    `reduced_multiplier` and `total_shift = 15 - shift` (constants, or i64 values read from
    per-channel tables): one 64-bit multiply, a rounding add and a shift, truncated to i32."""
    if isinstance(total_shift, int):
        rounding: Value | int = 1 << (total_shift - 1)
    else:
        rounding = kernel.shl(kernel.constant(1, i64), kernel.sub(total_shift, 1))
    product = kernel.mul(
        value, reduced if isinstance(reduced, Value) else kernel.constant(reduced, i64)
    )
    return kernel.cast(kernel.shr(kernel.add(product, rounding), total_shift), i32)


def rounding_high_word(right_shift: int, zero_point: int = 0) -> int | None:
    """The high word `2**(e-2) + zero_point * 2**(e-1)` of the constant
    `emit_multiply_shift_high` adds, `2**(30+e) + zero_point * 2**(31+e)` (its low word is 0
    for `e >= 2`); None where that form does not apply: a right shift `e` below 2, a high word
    outside int32, or a sum that could leave int64 (then the wrapped sum would be wrong)."""
    if right_shift < 2:
        return None
    high = (1 << (right_shift - 2)) + zero_point * (1 << (right_shift - 1))
    if not INT32_MIN <= high <= INT32_MAX:
        return None
    # |value * multiplier| < 2**62, the constant, the signed half 2**30
    if (1 << 62) + abs(high) * (1 << 32) + (1 << 30) >= 1 << 63:
        return None
    return high


def emit_multiply_shift_high(
    kernel: KernelBuilder, value: Value, multiplier: Value | int, high: Value | int
) -> Value:
    """The high word of `value * multiplier + high * 2**32 + (2**30 if value >= 0 else
    -2**30)` (int64): shifted right by `e - 1` it is TFLite's double-rounding
    `MultiplyByQuantizedMultiplier(value, multiplier, -e)` plus `zero_point`, for `high =
    rounding_high_word(e, zero_point)` and a multiplier >= 0.

    Why it is exact: `SaturatingRoundingDoublingHighMul` is `h = (p + 2**30) >> 31` for the
    product `p` (no saturation: the multiplier is never INT32_MIN), and `RoundingDivideByPOT(h,
    e)` (halves away from zero) is `(h + 2**(e-1) - [h < 0]) >> e`. Floors nest —
    `((y >> 31) + c) >> e == (y + c * 2**31) >> (31 + e)` for an integer `c` — so the result
    is `(p + 2**30 + 2**(30+e) - [h < 0] * 2**31) >> (31 + e)`. `h < 0` is `value < 0` except
    when `h == 0` (`-2**30 <= p < 0`), where both give 0 for `e >= 1`. A zero point `z` added
    after the shift is `z * 2**(31+e)` added before it. The constant's words are
    `high + s` and `2**30 + (s << 31)` for the sign `s = value >> 31` (no carry between them),
    so on a Cortex-M the whole is ASR, ADD, AND, ORR, one SMLAL into that constant and the
    shift of the high word, which an SSAT does with its saturation (about 20 instructions
    before: a 64-bit rounding shift, a remainder, two comparisons and selects)."""
    sign = kernel.shr(value, 31)
    high_word = kernel.add(sign, high)
    low_word = kernel.or_(kernel.and_(value, INT32_MIN), 1 << 30)
    constant = kernel.or_(
        kernel.shl(kernel.cast(high_word, i64), 32),
        kernel.insert(arith.ExtUIOp(low_word, i64)),
    )
    factor = multiplier if isinstance(multiplier, int) else kernel.cast(multiplier, i64)
    product = kernel.mul(kernel.cast(value, i64), factor)
    return kernel.cast(kernel.shr(kernel.add(product, constant), 32), i32)


def emit_multiply_by_quantized_multiplier(
    kernel: KernelBuilder,
    value: Value,
    multiplier: Value | int,
    shift: Value | int,
    zero_point: int = 0,
) -> Value:
    """TFLite's `MultiplyByQuantizedMultiplier(int32 x, int32 multiplier, int shift)`
    (double rounding), plus `zero_point`; a constant multiplier may be negative (TFLite's
    kernels allow that for LEAKY_RELU's alpha). Constant `multiplier`/`shift` fold the shift
    decisions at import; a constant right shift takes one 64-bit multiply-accumulate and a
    shift (`emit_rounding_shift_high`), the zero point folded in."""
    signed = isinstance(multiplier, int) and multiplier < 0  # LEAKY_RELU's negative alpha
    high = rounding_high_word(-shift, zero_point) if isinstance(shift, int) else None
    if high is not None and not signed:
        assert isinstance(shift, int)
        return kernel.shr(emit_multiply_shift_high(kernel, value, multiplier, high), -shift - 1)
    if isinstance(shift, int):
        left, right = max(shift, 0), max(-shift, 0)
        shifted = kernel.shl(value, left) if left else value
        high = emit_saturating_rounding_doubling_high_mul(
            kernel,
            shifted,
            kernel.constant(int(multiplier), i32)  # type: ignore[arg-type]
            if isinstance(multiplier, int)
            else multiplier,
            may_overflow=signed,
        )
        result = emit_rounding_divide_by_pot(kernel, high, right)
        return kernel.add(result, zero_point) if zero_point else result
    positive = kernel.cmp("sgt", shift, 0)
    left = kernel.select(positive, shift, 0)
    right = kernel.select(positive, 0, kernel.sub(0, shift))
    multiplier_value = (
        kernel.constant(multiplier, i32) if isinstance(multiplier, int) else multiplier
    )
    high = emit_saturating_rounding_doubling_high_mul(
        kernel, kernel.shl(value, left), multiplier_value, may_overflow=False
    )
    result = emit_rounding_divide_by_pot(kernel, high, right)
    return kernel.add(result, zero_point) if zero_point else result


def emit_saturating_shift_left(kernel: KernelBuilder, value: Value, exponent: int) -> Value:
    """gemmlowp's `SaturatingRoundingMultiplyByPOT<exponent>` for `exponent > 0` on i32."""
    threshold = (1 << (31 - exponent)) - 1
    shifted = kernel.shl(value, exponent)
    high = kernel.select(kernel.cmp("sgt", value, threshold), INT32_MAX, shifted)
    return kernel.select(kernel.cmp("slt", value, -threshold), INT32_MIN, high)


def emit_one_over_one_plus_x(kernel: KernelBuilder, a: Value) -> Value:
    """gemmlowp's `one_over_one_plus_x_for_x_in_0_1` (Q0.31 in and out)."""

    def multiply(x: Value, y: Value | int) -> Value:
        return emit_saturating_rounding_doubling_high_mul(
            kernel, x, kernel.constant(y, i32) if isinstance(y, int) else y
        )

    # RoundingHalfSum(a, One): (a + INT32_MAX + sign) / 2 in 64 bits.
    total = kernel.add(kernel.cast(a, i64), INT32_MAX)
    sign = kernel.select(kernel.cmp("sge", total, 0), 1, -1, i64)
    half_denominator = kernel.cast(kernel.div(kernel.add(total, sign), 2), i32)
    x = kernel.add(multiply(half_denominator, -1010580540), 1515870810)  # 48/17 - 32/17 d
    for _ in range(3):
        one_minus = kernel.sub(kernel.constant(1 << 29, i32), multiply(half_denominator, x))
        x = kernel.add(x, emit_saturating_shift_left(kernel, multiply(x, one_minus), 2))
    return emit_saturating_shift_left(kernel, x, 1)


def emit_count_leading_zeros(kernel: KernelBuilder, value: Value) -> Value:
    """TFLite's `CountLeadingZeros(uint32_t)` of an i32: 32 for 0."""
    return kernel.insert(math_dialect.CountLeadingZerosOp(value))


def emit_count_leading_sign_bits(kernel: KernelBuilder, value: Value) -> Value:
    """TFLite's `CountLeadingSignBits(int32_t)`: the redundant sign bits, 31 for 0 (gcc's
    `__builtin_clrsb`, which TFLM's gcc build uses): `clz(x ^ (x >> 31)) - 1`."""
    folded = kernel.insert(arith.XOrIOp(value, kernel.shr(value, 31)))
    return kernel.sub(emit_count_leading_zeros(kernel, folded), 1)


def emit_reciprocal(
    kernel: KernelBuilder, value: Value, integer_digits: int
) -> tuple[Value, Value]:
    """TFLite's `GetReciprocal(x, x_integer_digits, &num_bits_over_unit)` of a non-negative
    i32: (1 / x normalised to Q0.31, num_bits_over_unit). For x = 0 TFLite shifts a uint32
    by 32, which x86 and Arm both give as 0 for a 0 operand; so does this (a shift by 32 is
    poison in `arith`, the zero is selected)."""
    headroom_plus_one = emit_count_leading_zeros(kernel, value)
    shifted = kernel.select(
        kernel.cmp("eq", value, 0), 0, kernel.shl(value, kernel.min(headroom_plus_one, 31)), i32
    )
    reciprocal = emit_one_over_one_plus_x(kernel, kernel.sub(shifted, INT32_MIN))
    return reciprocal, kernel.sub(integer_digits, headroom_plus_one)


def emit_rounding_half_sum(kernel: KernelBuilder, a: Value, b: Value | int) -> Value:
    """gemmlowp's `RoundingHalfSum` of i32 values: `(a + b + sign) / 2` in 64 bits."""
    total = kernel.add(kernel.cast(a, i64), b if isinstance(b, int) else kernel.cast(b, i64))
    sign = kernel.select(kernel.cmp("sge", total, 0), 1, -1, i64)
    return kernel.cast(kernel.div(kernel.add(total, sign), 2), i32)


def emit_log_x_for_x_at_least_one(
    kernel: KernelBuilder, value: Value, input_integer_bits: int, output_integer_bits: int
) -> Value:
    """TFLite's `log_x_for_x_greater_than_or_equal_to_1_impl<output, input>`: ln(x) of a
    positive Q(input).(31 - input) value `x >= 1`, as Q(output).(31 - output). The input is
    normalised twice (by its own leading zeros and by those of `x * sqrt(1/2)`), the smaller
    mantissa kept, and ln of it is a rational approximation around 2**-1/4 divided by gemmlowp's
    `one_over_one_plus_x`. Shifts where TFLite saturates and cannot (a positive input shifted by
    its redundant sign bits; exponents below 2**(31 - accumulator bits)) are plain shifts."""
    accum_bits = output_integer_bits + 1

    def multiply(x: Value, y: Value | int) -> Value:
        return emit_saturating_rounding_doubling_high_mul(
            kernel, x, kernel.constant(y, i32) if isinstance(y, int) else y
        )

    log_2, sqrt_sqrt_half, sqrt_half = 1488522236, 1805811301, 1518500250
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = rounding_divide_by_pot(1 << 29, accum_bits)  # Rescale<accum>(1/4)

    headroom_plus_one = emit_count_leading_zeros(kernel, value)
    normalised = kernel.shl(value, kernel.sub(headroom_plus_one, 1))
    r_a = emit_saturating_shift_left(kernel, multiply(normalised, sqrt_half), 1)
    pow_a = kernel.add(
        kernel.shl(kernel.sub(input_integer_bits, headroom_plus_one), 31 - accum_bits),
        shifted_quarter,
    )
    z_b = multiply(value, sqrt_half)
    b_headroom = kernel.sub(emit_count_leading_zeros(kernel, z_b), 1)
    # SaturatingRoundingMultiplyByPOTParam(value, b_headroom): b_headroom may exceed value's
    # own headroom by one, where it saturates
    threshold = kernel.sub(kernel.shl(kernel.constant(1, i32), kernel.sub(31, b_headroom)), 1)
    r_b = kernel.select(
        kernel.cmp("sgt", value, threshold), INT32_MAX, kernel.shl(value, b_headroom)
    )
    pow_b = kernel.sub(
        kernel.shl(kernel.sub(input_integer_bits, b_headroom), 31 - accum_bits), shifted_quarter
    )
    r = kernel.min(r_a, r_b)
    pow_adjusted = kernel.max(pow_a, pow_b)

    p = emit_rounding_half_sum(kernel, r, sqrt_sqrt_half)
    q = kernel.sub(r, sqrt_sqrt_half)
    q = kernel.add(q, q)
    common_sq = multiply(q, q)
    num = kernel.add(multiply(q, r), multiply(multiply(q, common_sq), alpha_n))
    inner = kernel.add(kernel.add(kernel.constant(alpha_i, i32), q), multiply(common_sq, alpha_d))
    denominator_minus_one = kernel.add(multiply(p, inner), multiply(q, alpha_f))
    reciprocal = emit_one_over_one_plus_x(kernel, denominator_minus_one)
    num_scaled = emit_rounding_divide_by_pot(kernel, num, accum_bits)
    total = kernel.add(multiply(pow_adjusted, log_2), multiply(num_scaled, reciprocal))
    return emit_saturating_shift_left(kernel, total, accum_bits - output_integer_bits)
