"""LOGISTIC and TANH on int8, as tables: an int8 input has 256 values, so the importer runs
TFLite's integer algorithm (`reference_integer_ops::Logistic` / `Tanh` over gemmlowp's
fixed-point `logistic` / `tanh`) once per value, in Python on exact integers, and the kernel
reads a 256-entry constant indexed by `x + 128`.

The parameters are those of TFLite Micro's `Prepare` (`CalculateArithmeticOpDataLogistic`,
tanh's `CalculateArithmeticOpData`): the input rescaled to Q4.27 by `input_multiplier` and
`input_left_shift` (from `frexp(input_scale * 2**27)`), and inputs beyond the radius
`floor(15 * 2**27 / 2**input_left_shift)` saturate. The gemmlowp operations wrap on int32
where C++ does (add, subtract, negate) and saturate where gemmlowp does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from usmp_dialect.kernels.fixed_point import (
    INT32_MAX,
    exp_on_negative_values,
    multiply_by_quantized_multiplier_reference,
    round_half_away,
    rounding_divide_by_pot,
    saturating_rounding_multiply_by_pot,
    wrap32,
)
from usmp_dialect.kernels.fixed_point import (
    saturating_rounding_doubling_high_mul as _mul,
)

INPUT_INTEGER_BITS = 4  # the kernels' input format, Q4.27


# -- gemmlowp's fixed-point arithmetic on Python ints (int32 raw values) --------------------


def _add(a: int, b: int) -> int:
    return wrap32(a + b)


def _sub(a: int, b: int) -> int:
    return wrap32(a - b)


def _rounding_half_sum(a: int, b: int) -> int:
    """gemmlowp's `RoundingHalfSum`: (a + b + sign) / 2 in int64, truncated toward zero."""
    total = a + b
    total += 1 if total >= 0 else -1
    half = abs(total) // 2
    return half if total >= 0 else -half


def _newton_reciprocal(a: int) -> int:
    """x ≈ 1 / ((1 + a) / 2) in Q2.29 for a in (0, 1) in Q0.31 (three Newton steps)."""
    half_denominator = _rounding_half_sum(a, INT32_MAX)
    x = _add(1515870810, _mul(half_denominator, -1010580540))  # 48/17 - 32/17 * d
    one = 1 << 29
    for _ in range(3):
        correction = _sub(one, _mul(half_denominator, x))
        x = _add(x, saturating_rounding_multiply_by_pot(_mul(x, correction), 2))
    return x


def _logistic(a: int, integer_bits: int) -> int:
    """gemmlowp's `logistic` of `a` in Q(integer_bits), result in Q0.31."""
    positive = a > 0
    magnitude = a if positive else wrap32(-a)
    if_positive = saturating_rounding_multiply_by_pot(
        _newton_reciprocal(exp_on_negative_values(wrap32(-magnitude), integer_bits)), 1
    )
    if a == 0:
        return 1 << 30
    return if_positive if positive else _sub(INT32_MAX, if_positive)


def _tanh(a: int, integer_bits: int) -> int:
    """gemmlowp's `tanh` of `a` in Q(integer_bits), result in Q0.31."""
    negative = a < 0
    non_positive = a if negative else wrap32(-a)
    # exp(2 * n): the same raw value read with one more integer bit
    exp = exp_on_negative_values(non_positive, integer_bits + 1)
    t = saturating_rounding_multiply_by_pot(_sub(_newton_reciprocal(exp), 1 << 29), 2)
    if a == 0:
        return 0
    return wrap32(-t) if negative else t


# -- TFLite Micro's Prepare and int8 kernels ------------------------------------------------


@dataclass(frozen=True)
class InputRescale:
    """The input's rescaling to Q4.27 and the radius beyond which the output saturates."""

    zero_point: int
    multiplier: int
    left_shift: int
    radius: int


class UnsupportedScale(ValueError):
    """The input scale is outside what TFLite's kernels compute with."""


def input_rescale(scale: float, zero_point: int) -> InputRescale:
    """TFLite Micro's Prepare for int8 LOGISTIC and TANH (double precision)."""
    real = float(scale) * float(1 << (31 - INPUT_INTEGER_BITS))
    fraction, left_shift = math.frexp(real)
    multiplier = round_half_away(fraction * (1 << 31))
    if not 0 < left_shift <= 31 or multiplier > INT32_MAX:
        raise UnsupportedScale(f"input scale {scale:g} is out of the supported range")
    top = ((1 << INPUT_INTEGER_BITS) - 1) * (1 << (31 - INPUT_INTEGER_BITS))
    radius = math.floor(top / (1 << left_shift))
    return InputRescale(zero_point, multiplier, left_shift, radius)


def _saturates(value: int, rescale: InputRescale) -> int | None:
    if value <= -rescale.radius:
        return -128
    if value >= rescale.radius:
        return 127
    return None


def logistic_int8(x: int, rescale: InputRescale) -> int:
    """`reference_integer_ops::Logistic` on one int8 value (output scale 1/256, zp -128)."""
    value = x - rescale.zero_point
    saturated = _saturates(value, rescale)
    if saturated is not None:
        return saturated
    q4 = multiply_by_quantized_multiplier_reference(value, rescale.multiplier, rescale.left_shift)
    out = rounding_divide_by_pot(_logistic(q4, INPUT_INTEGER_BITS), 31 - 8)
    return min(max(out - 128, -128), 127)


def tanh_int8(x: int, rescale: InputRescale) -> int:
    """`reference_integer_ops::Tanh` on one int8 value (output scale 1/128, zp 0)."""
    value = x - rescale.zero_point
    saturated = _saturates(value, rescale)
    if saturated is not None:
        return saturated
    q4 = multiply_by_quantized_multiplier_reference(value, rescale.multiplier, rescale.left_shift)
    out = rounding_divide_by_pot(_tanh(q4, INPUT_INTEGER_BITS), 31 - 7)
    return min(max(out, -128), 127)


def int8_table(kind: str, scale: float, zero_point: int) -> np.ndarray:
    """The 256 outputs of int8 LOGISTIC or TANH ("logistic", "tanh"), for inputs -128..127."""
    rescale = input_rescale(scale, zero_point)
    function = logistic_int8 if kind == "logistic" else tanh_int8
    return np.array([function(x, rescale) for x in range(-128, 128)], dtype=np.int8)
