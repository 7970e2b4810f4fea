"""int8 tables of TensorFlow Lite Micro's one-input integer kernels: RELU, RELU6, LEAKY_RELU,
HARD_SWISH, ELU, ABS and RSQRT.

An int8 input has 256 values, so the importer runs TFLM's kernel once per value, here in
Python, on exact integers (and float32 where TFLM computes in float), with the parameters its
`Prepare` derives; the operator becomes a lookup (`elementwise.Lookup`, indexed by `x + 128`).
Each function below names the TFLM code it reproduces. The tables are checked against TFLM on
all 256 inputs over many quantisations (`test/frontends/tflite/test_activations.py`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from usmp_dialect.kernels.fixed_point import (
    float32,
    multiply_by_quantized_multiplier_reference,
    quantize_multiplier,
    round_half_away,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    saturating_rounding_multiply_by_pot,
    wrap32,
)

Quant = tuple[float, int]  # (scale as stored, a float32; zero point)
INT8_INPUTS = range(-128, 128)


def _table(function: Callable[[int], int]) -> np.ndarray:
    return np.array([min(max(function(x), -128), 127) for x in INT8_INPUTS], dtype=np.int8)


def relu_table(source: Quant, target: Quant) -> np.ndarray:
    """RELU: `CalculateReluOpData<int8_t>` (the input rescaled to the output's scale by a
    multiplier of the scales' quotient in double, clamped below at the output's zero) and
    `ReluQuantized`."""
    multiplier, shift = quantize_multiplier(float(source[0]) / float(target[0]))
    low = max(-128, target[1])  # zero_point + roundf(0.0f / scale)
    return _table(
        lambda x: max(
            low,
            target[1]
            + multiply_by_quantized_multiplier_reference(x - source[1], multiplier, shift),
        )
    )


def relu6_table(source: Quant) -> np.ndarray:
    """RELU6: `Relu6Prepare` (0 and 6 quantised with the input's parameters, the output's are
    not read) and `Relu6Quantized`, a clamp of the raw values."""
    zero = source[1]
    six = min(max(round_half_away(float32(6.0 / float32(source[0]))) + zero, -128), 127)
    return _table(lambda x: six if x > six else (zero if x < zero else x))


def leaky_relu_parameters(
    source: Quant, target: Quant, alpha: float
) -> tuple[tuple[int, int], tuple[int, int]]:
    """`CalculateOpDataLeakyRelu` (int8 and int16): the (multiplier, shift) of the identity
    `input / output` and of `input * alpha / output`, float32 quotients (negative for a
    negative alpha)."""
    alpha_real = float32(float32(float32(source[0]) * float32(alpha)) / float32(target[0]))
    identity_real = float32(float32(source[0]) / float32(target[0]))
    return quantize_multiplier(identity_real), quantize_multiplier(alpha_real)


def leaky_relu_table(source: Quant, target: Quant, alpha: float) -> np.ndarray:
    """LEAKY_RELU: `CalculateOpDataLeakyRelu` and `QuantizeLeakyRelu` (non-negative inputs take
    the identity)."""
    identity, negative = leaky_relu_parameters(source, target, alpha)

    def leaky(x: int) -> int:
        value = x - source[1]
        multiplier, shift = identity if value >= 0 else negative
        return target[1] + multiply_by_quantized_multiplier_reference(value, multiplier, shift)

    return _table(leaky)


# -- HARD_SWISH: gemmlowp's 16-bit fixed point -------------------------------------------------


def _wrap16(value: int) -> int:
    return (value + 2**15) % 2**16 - 2**15


def _saturate16(value: int) -> int:
    return min(max(value, -(2**15)), 2**15 - 1)


def _rounding_doubling_high_mul16(a: int, b: int) -> int:
    """gemmlowp's `SaturatingRoundingDoublingHighMul` on int16."""
    if a == b == -(2**15):
        return 2**15 - 1
    product = a * b
    nudge = (1 << 14) if product >= 0 else 1 - (1 << 14)
    total = product + nudge
    quotient = abs(total) >> 15  # C's division truncates toward zero
    return _wrap16(quotient if total >= 0 else -quotient)


def _doubling_high_mul16(a: int, b: int) -> int:
    """TFLite's `SaturatingDoublingHighMul` (rounding toward zero)."""
    if a == b == -(2**15):
        return 2**15 - 1
    product = a * b
    quotient = abs(product) >> 15
    return _wrap16(quotient if product >= 0 else -quotient)


def _rounding_divide_by_pot16(value: int, exponent: int) -> int:
    """gemmlowp's `RoundingDivideByPOT` on int16 (its mask an int16 too)."""
    mask = _wrap16((1 << exponent) - 1)
    remainder = _wrap16(value & mask)
    threshold = (mask >> 1) + (1 if value < 0 else 0)
    return _wrap16((value >> exponent) + (1 if remainder > threshold else 0))


def _downscale_to_int16(multiplier: int) -> int:
    """TFLite's `DownScaleInt32ToInt16Multiplier`."""
    if multiplier >= 2**31 - 1 - (1 << 15):
        return 2**15 - 1
    return (multiplier + (1 << 15)) >> 16


class UnsupportedHardSwish(ValueError):
    """The output scale is below what TFLite's kernel supports (a positive output shift)."""


def hard_swish_table(source: Quant, target: Quant) -> np.ndarray:
    """HARD_SWISH: `HardSwishPrepare` (scales in float32, multipliers downscaled to int16) and
    `reference_ops::HardSwish`'s integer path."""
    hires_input_scale = float32(float32(1.0 / 128.0) * float32(source[0]))
    reluish_scale = float32(3.0 / 32768.0)
    output_multiplier32, output_exponent = quantize_multiplier(
        float32(hires_input_scale / float32(target[0]))
    )
    if output_exponent > 0:
        raise UnsupportedHardSwish(
            f"the output scale {target[0]:g} is too small for the input scale {source[0]:g} "
            "(TFLite requires a non-positive output shift)"
        )
    reluish_multiplier32, reluish_exponent = quantize_multiplier(
        float32(hires_input_scale / reluish_scale)
    )
    output_multiplier = _downscale_to_int16(output_multiplier32)
    reluish_multiplier = _downscale_to_int16(reluish_multiplier32)

    def hard_swish(x: int) -> int:
        hires = _wrap16(_wrap16(x - source[1]) * (1 << 7))
        preshift_output = _rounding_doubling_high_mul16(hires, output_multiplier)
        reluish = hires
        if reluish_exponent > 0:
            reluish = _saturate16(reluish * (1 << (reluish_exponent - 1)))
        reluish = _rounding_doubling_high_mul16(reluish, reluish_multiplier)
        if reluish_exponent > 0:
            reluish = _saturate16(reluish * 2)
        if reluish_exponent < 0:
            reluish = _rounding_divide_by_pot16(reluish, -reluish_exponent)
        reluish = _wrap16((reluish + (1 << 15)) >> 1)
        output = _doubling_high_mul16(reluish, preshift_output)
        output = _rounding_divide_by_pot16(output, -output_exponent)
        return _wrap16(output + target[1])

    return _table(hard_swish)


def elu_table(source: Quant, target: Quant) -> np.ndarray:
    """ELU: TFLM's `PopulateLookupTable` in float32 with `exp(x) - 1` below zero, rounded half
    away from zero."""
    inverse_scale = float32(1.0 / float32(target[0]))
    scale = np.float32(source[0])

    def elu(x: int) -> int:
        dequantized = scale * np.float32(x - source[1])
        transformed = (
            np.float32(np.exp(dequantized)) - np.float32(1.0) if dequantized < 0 else dequantized
        )
        rescaled = float32(round_half_away(float(np.float32(transformed * inverse_scale))))
        total = float32(rescaled + float32(target[1]))
        return math.trunc(total) if math.isfinite(total) else -128

    return _table(elu)


def abs_table(source: Quant, target: Quant) -> np.ndarray:
    """ABS: `PrepareAbsRsqrt` (a multiplier of the scales' quotient in double, none when the
    scales are equal) and `AbsEvalQuantized`."""
    rescale = float32(source[0]) != float32(target[0])
    multiplier, shift = quantize_multiplier(float(float32(source[0])) / float(float32(target[0])))

    def absolute(x: int) -> int:
        value = abs(x - source[1])
        if rescale:
            value = multiply_by_quantized_multiplier_reference(value, multiplier, shift)
        return value + target[1]

    return _table(absolute)


def inv_sqrt_quantized_multiplier_exp(value: int, reverse_shift: int) -> tuple[int, int]:
    """TFLite's `GetInvSqrtQuantizedMultiplierExp`: 1 / sqrt(value) as (multiplier, shift),
    by five Newton-Raphson steps in gemmlowp's Q3.28."""
    if value <= 1:
        return 2**31 - 1, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    max_left_shift_bits = (32 - value.bit_length()) - 1
    left_shift_bit_pairs = max_left_shift_bits // 2 - 1
    shift -= left_shift_bit_pairs
    value <<= 2 * left_shift_bit_pairs
    multiply = saturating_rounding_doubling_high_mul
    half_input = rounding_divide_by_pot(value >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    x = 1 << 28
    for _ in range(5):
        x3 = saturating_rounding_multiply_by_pot(multiply(multiply(x, x), x), 6)
        x = saturating_rounding_multiply_by_pot(
            wrap32(multiply(half_three, x) - multiply(half_input, x3)), 3
        )
    x = multiply(x, 1518500250)  # sqrt(2) / 2 in Q0.31
    if shift < 0:
        x = wrap32(x << -shift)
        shift = 0
    return x, shift * reverse_shift


def rsqrt_table(source: Quant, target: Quant) -> np.ndarray:
    """RSQRT: `PrepareAbsRsqrt` (the multiplier 1 / (sqrt(input scale) * output scale) in
    double) and `RsqrtEvalQuantized`. Inputs below the zero point (negative reals) stop TFLM
    with an error; they give 127 here, as zero does."""
    multiplier, shift = quantize_multiplier(
        1.0 / (math.sqrt(float(float32(source[0]))) * float(float32(target[0])))
    )
    k_shift = 20

    def rsqrt(x: int) -> int:
        value = x - source[1]
        if value <= 0:
            return 127
        inv_multiplier, inv_shift = inv_sqrt_quantized_multiplier_exp(value, -1)
        data = multiply_by_quantized_multiplier_reference(1, inv_multiplier, inv_shift + k_shift)
        return (
            multiply_by_quantized_multiplier_reference(data, multiplier, shift - k_shift)
            + target[1]
        )

    return _table(rsqrt)
