"""LOGISTIC and TANH on int16 as TFLite computes them (`reference_integer_ops::Logistic` /
`Tanh` on int16), shared by the int16 operators and the integer LSTM's gates.

Both read one 256-entry table, `sigmoid_table_uint16` (sigmoid(i / 24) in Q0.16), with linear
interpolation; tanh is `2 * sigmoid(2x) - 1` on the same table. The input is first rescaled to
the table's 1/(3 * 4096) steps: `(x * input_multiplier + round) >> input_left_shift`, where
multiplier 0 means the power-of-two case (`3 << input_left_shift`, no shift). Outputs are Q0.15
(scale 2**-15): logistic in [0, 32767], tanh in [-32767, 32767].

`int16_activation` is TFLM's `Prepare` for the operators (`CalculateArithmeticOpDataLogistic`,
tanh's `CalculateArithmeticOpData`): an input scale that `CheckedLog2` finds to be 2**-12 (for
tanh also 2**-11) takes the power-of-two form, any other one a multiplier truncated from
`scale * 3 * 4096` doubled until it exceeds 32767 / 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import i32

from usmp_dialect.kernels.activation import UnsupportedScale
from usmp_dialect.kernels.builder import INDEX, KernelBuilder, Value
from usmp_dialect.kernels.fixed_point import round_half_away
from usmp_dialect.kernels.lut16 import c_float_function
from usmp_dialect.kernels.module import ModelModule

# TFLite's `sigmoid_table_uint16`: sigmoid(i / 24) in Q0.16 for i = 0..255. Not a rounding of the
# function TFLite documents (44 entries are one above round(65536 * sigmoid(i / 24))), so the
# values themselves; the tests compare every int16 input of both operators with TFLM.
_SIGMOID_TABLE_TEXT = """
    32768 33451 34133 34813 35493 36169 36843 37513 38180 38841 39498 40149 40794 41432 42064 42688
    43304 43912 44511 45102 45683 46255 46817 47369 47911 48443 48964 49475 49975 50464 50942 51409
    51865 52311 52745 53169 53581 53983 54374 54755 55125 55485 55834 56174 56503 56823 57133 57433
    57724 58007 58280 58544 58800 59048 59288 59519 59743 59959 60168 60370 60565 60753 60935 61110
    61279 61441 61599 61750 61896 62036 62172 62302 62428 62549 62666 62778 62886 62990 63090 63186
    63279 63368 63454 63536 63615 63691 63765 63835 63903 63968 64030 64090 64148 64204 64257 64308
    64357 64405 64450 64494 64536 64576 64614 64652 64687 64721 64754 64786 64816 64845 64873 64900
    64926 64950 64974 64997 65019 65039 65060 65079 65097 65115 65132 65149 65164 65179 65194 65208
    65221 65234 65246 65258 65269 65280 65291 65301 65310 65319 65328 65337 65345 65352 65360 65367
    65374 65381 65387 65393 65399 65404 65410 65415 65420 65425 65429 65433 65438 65442 65445 65449
    65453 65456 65459 65462 65465 65468 65471 65474 65476 65479 65481 65483 65485 65488 65489 65491
    65493 65495 65497 65498 65500 65501 65503 65504 65505 65507 65508 65509 65510 65511 65512 65513
    65514 65515 65516 65517 65517 65518 65519 65520 65520 65521 65522 65522 65523 65523 65524 65524
    65525 65525 65526 65526 65526 65527 65527 65528 65528 65528 65529 65529 65529 65529 65530 65530
    65530 65530 65531 65531 65531 65531 65531 65532 65532 65532 65532 65532 65532 65533 65533 65533
    65533 65533 65533 65533 65533 65534 65534 65534 65534 65534 65534 65534 65534 65534 65534 65535
"""
SIGMOID_TABLE_UINT16 = np.array(_SIGMOID_TABLE_TEXT.split(), dtype=np.uint16)

OUTPUT_SCALE_POWER = -15  # both operators' int16 output: Q0.15
_INPUT_INTEGER_BITS = 3  # the power-of-two case's input format, Q3.12
_MULTIPLIER_LIMIT = 32767  # TFLM's DCHECK on the general multiplier
_LOGF = c_float_function("logf")


@dataclass(frozen=True)
class Int16Activation:
    """`reference_integer_ops::Logistic` ("sigmoid") or `Tanh` ("tanh") on int16 with TFLM's
    `input_multiplier` (0: the power-of-two case, `3 << left_shift`) and `input_left_shift`."""

    kind: str
    multiplier: int = 0
    left_shift: int = 0


def checked_log2(value: float) -> tuple[int, bool]:
    """TFLite's `CheckedLog2` in float32: log2 of `value` rounded, and whether `value` is a
    power of two to within 1e-3 in the exponent."""
    f32 = np.float32
    x_log2 = f32(f32(_LOGF(value)) * f32(f32(1.0) / f32(_LOGF(2.0))))
    rounded = f32(round_half_away(float(x_log2)))
    return int(rounded), bool(abs(f32(x_log2 - rounded)) < f32(1e-3))


def int16_activation(kind: str, input_scale: float, output_scale: float) -> Int16Activation:
    """TFLM's `Prepare` of int16 LOGISTIC ("sigmoid") or TANH ("tanh") for these (float32)
    scales; zero points must be 0 (the caller checks). `UnsupportedScale` for an output scale
    other than 2**-15 and for an input scale whose multiplier TFLM's kernel cannot take (beyond
    its DCHECK, or a shift of 31, where `x * multiplier + round` overflows int32)."""
    scale = float(np.float32(input_scale))
    power, exact = checked_log2(float(np.float32(output_scale)))
    if not exact or power != OUTPUT_SCALE_POWER:
        raise UnsupportedScale(
            f"the int16 output must have scale 2**{OUTPUT_SCALE_POWER} (it has {output_scale:g})"
        )
    power, power_of_two = checked_log2(scale)
    left_shift = (15 - _INPUT_INTEGER_BITS) + power
    if power_of_two and left_shift in ((0, 1) if kind == "tanh" else (0,)):
        return Int16Activation(kind, 0, left_shift)
    multiplier, left_shift = scale * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and left_shift <= 30:
        left_shift += 1
        multiplier *= 2.0
    if multiplier > _MULTIPLIER_LIMIT or left_shift > 30:
        lowest, highest = 32767.0 / 2.0 / 12288.0 / 2.0**30, _MULTIPLIER_LIMIT / 12288.0
        raise UnsupportedScale(
            f"input scale {input_scale:g} is outside the range of TFLite's int16 kernel "
            f"({lowest:.3g} < scale < {highest:.4g})"
        )
    return Int16Activation(kind, math.trunc(multiplier), left_shift)


def sigmoid_table(module: ModelModule, kernel: KernelBuilder) -> Value:
    """The model's one `sigmoid_table_uint16` global (uint16 bits held as int16), loaded."""
    symbol = module.named_constant("sigmoid_table_uint16", SIGMOID_TABLE_UINT16.view(np.int16))
    return kernel.get_global(*symbol)


def emit_int16_activation(
    kernel: KernelBuilder, table: Value, value: Value, activation: Int16Activation
) -> Value:
    """`reference_integer_ops::Logistic` (outputs Q0.15 in [0, 32767]) or `Tanh` (Q0.15 in
    [-32767, 32767]) of the int16 `value` (an i32), as an i32; `table` from `sigmoid_table`."""
    multiplier, left_shift = activation.multiplier, activation.left_shift
    if multiplier == 0:
        multiplier, left_shift = 3 << left_shift, 0
    rounding = (1 << (left_shift - 1)) if left_shift > 0 else 0
    scaled = kernel.shr(kernel.add(kernel.mul(value, multiplier), rounding), left_shift)
    negative = kernel.cmp("slt", scaled, 0)
    magnitude = kernel.select(negative, kernel.sub(0, scaled), scaled)
    sigmoid = activation.kind == "sigmoid"
    fraction_bits = 9 if sigmoid else 8
    high = kernel.shr(magnitude, fraction_bits)
    saturated = kernel.cmp("sge", high, 255)
    low_index = kernel.cast(kernel.min(high, 254), INDEX)

    def entry(index: Value) -> Value:  # the table holds uint16 bits in int16
        return kernel.and_(kernel.cast(kernel.load(table, [index]), i32), 0xFFFF)

    below = entry(low_index)
    above = entry(kernel.add(low_index, 1))
    fraction = kernel.and_(magnitude, (1 << fraction_bits) - 1)
    interpolated = kernel.add(
        kernel.shl(below, fraction_bits), kernel.mul(fraction, kernel.sub(above, below))
    )
    if sigmoid:
        result = kernel.select(saturated, 0x7FFF << 10, interpolated)
        positive = kernel.add(result, 1 << 9)
        negative_result = kernel.sub((1 << 25) + (1 << 9) - 1, result)
        return kernel.shr(kernel.select(negative, negative_result, positive), 10)
    result = kernel.select(saturated, 0xFFFF << 8, interpolated)
    positive = kernel.add(result, -(1 << 23) + (1 << 7))
    negative_result = kernel.sub((1 << 23) + (1 << 7) - 1, result)
    return kernel.shr(kernel.select(negative, negative_result, positive), 8)


__all__ = [
    "OUTPUT_SCALE_POWER",
    "SIGMOID_TABLE_UINT16",
    "Int16Activation",
    "checked_log2",
    "emit_int16_activation",
    "int16_activation",
    "sigmoid_table",
]
