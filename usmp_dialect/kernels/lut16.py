"""TFLite's int16 lookup tables with interpolation, and the int16 SOFTMAX built on them.

TFLM computes functions of an int16 value (softmax's `exp` and `1 / (1 + x)`) from 513-entry
tables its `Prepare` fills with `gen_lut<float, int16_t, int16_t>`: 512 samples of the function
over the input range, each nudged by half the interpolation error at its midpoint, plus the
function at the end for the last slope. `lut16` computes the same table at import, in float32
as TFLM does (`expf` from the C library, as TFLM's `std::exp(float)` calls it); the kernels
read it with `lut_lookup_with_interpolation`: the value's top 9 bits select a base, its low 7
bits interpolate towards the next entry.

SOFTMAX int16 (`reference_ops::SoftmaxInt16`, output scale 1/32768, zero point 0): per row, the
difference to the row's maximum rescaled by `MultiplyByQuantizedMultiplier` so [-10, 0] spans
the int16 range, its `exp` from the table (cached in the output, as TFLM does), the sum's
reciprocal from the `1 / (1 + x)` table after normalising the sum by its leading zeros, and each
cached exponential scaled by it with one rounding shift.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

import numpy as np
from xdsl.dialects import math
from xdsl.dialects.builtin import MemRefType, i16, i32, i64

from usmp_dialect.kernels.builder import INDEX, KernelBuilder, Value, finish, function
from usmp_dialect.kernels.fixed_point import (
    emit_multiply_by_quantized_multiplier,
    quantize_multiplier,
    round_half_away,
)
from usmp_dialect.kernels.module import ModelModule

LUT_SIZE = 513
_F32 = np.float32


def c_float_function(symbol: str) -> Callable[[float], float]:
    """The C library's float function `symbol` (`expf`, `logf`: TFLM's `std::exp` / `std::log`
    of a float); numpy's float32 ones may differ from them in the last place, which can move a
    table entry by one or a scale across a threshold."""
    name = ctypes.util.find_library("m")
    library = ctypes.CDLL(name) if name else ctypes.CDLL(None)
    function_ = getattr(library, symbol)
    function_.restype = ctypes.c_float
    function_.argtypes = [ctypes.c_float]
    return lambda value: float(function_(value))


_EXPF = c_float_function("expf")


def _round(value: np.float32) -> np.float32:
    """`TfLiteRound` of a float (`std::round`: halves away from zero)."""
    return _F32(round_half_away(float(value)))


def lut16(
    function_: Callable[[np.float32], np.float32],
    input_min: float,
    input_max: float,
    output_min: float,
    output_max: float,
) -> np.ndarray:
    """TFLite's `gen_lut<float, int16_t, int16_t>`: the 513-entry int16 table of `function_`
    over [input_min, input_max] onto [output_min, output_max], every step in float32."""
    steps = 512
    low, high = _F32(input_min), _F32(input_max)
    step = _F32((high - low) / _F32(steps))
    half_step = _F32(step / _F32(2))
    scaling = _F32(_F32(65536) / _F32(_F32(output_max) - _F32(output_min)))
    table = np.zeros(LUT_SIZE, dtype=np.int16)
    for i in range(steps):
        value = function_(_F32(low + _F32(_F32(i) * step)))
        midpoint = function_(_F32(_F32(low + _F32(_F32(i) * step)) + half_step))
        following = function_(_F32(low + _F32(_F32(i + 1) * step)))
        sample = _round(_F32(value * scaling))
        interpolated = _round(_F32(_F32(_F32(following * scaling) + sample) / _F32(2)))
        midpoint_value = _round(_F32(midpoint * scaling))
        bias = _round(_F32(_F32(interpolated - midpoint_value) / _F32(2)))
        table[i] = int(min(max(float(_F32(sample - bias)), -32768.0), 32767.0))
    last = _round(_F32(function_(high) * scaling))
    table[steps] = int(min(max(float(last), -32768.0), 32767.0))
    return table


def exp_lut() -> np.ndarray:
    """Softmax's `exp` table: exp over [-10, 0] onto [-1, 1]."""
    return lut16(lambda x: _F32(_EXPF(float(x))), -10.0, 0.0, -1.0, 1.0)


def one_over_one_plus_x_lut() -> np.ndarray:
    """Softmax's reciprocal table: 1 / (1 + x) over [0, 1] onto [-1, 1]."""
    return lut16(lambda x: _F32(_F32(1) / _F32(_F32(1) + x)), 0.0, 1.0, -1.0, 1.0)


def softmax_int16_parameters(beta: float, input_scale: float) -> tuple[int, int]:
    """TFLM's `CalculateSoftmaxParams` for int16: the multiplier and shift taking a difference
    to the row's maximum onto [-65535, 0] for [-10, 0] (`input_scale * beta / (10 / 65535)`
    in double)."""
    return quantize_multiplier(input_scale * beta / (10.0 / 65535.0))


def emit_lut_lookup(kernel: KernelBuilder, value: Value, table: Value) -> Value:
    """`lut_lookup_with_interpolation` of the i32 `value` (in the int16 range) in the int16
    `table`: the interpolated entry, as an i32."""
    index = kernel.add(kernel.shr(value, 7), 256)
    offset = kernel.and_(value, 0x7F)
    base = kernel.cast(kernel.load(table, [kernel.cast(index, INDEX)]), i32)
    following = kernel.load(table, [kernel.cast(kernel.add(index, 1), INDEX)])
    # the slope is an int16 in TFLM: the difference wraps to 16 bits
    slope = kernel.cast(kernel.cast(kernel.sub(kernel.cast(following, i32), base), i16), i32)
    delta = kernel.shr(kernel.add(kernel.mul(slope, offset), 64), 7)
    return kernel.cast(kernel.cast(kernel.add(base, delta), i16), i32)


def softmax_int16(
    module: ModelModule, name: str, type_: MemRefType, multiplier: int, shift: int
) -> None:
    """Adds `@name(%input: [rows, depth] i16, %output)`: TFLM's `SoftmaxInt16`."""
    rows, depth = type_.get_shape()
    op, kernel, (source, target) = function(name, [("input", type_), ("output", type_)])
    exps = kernel.get_global(*module.constant(f"{name}_exp_lut", exp_lut()))
    reciprocals = kernel.get_global(
        *module.constant(f"{name}_one_over_one_plus_x_lut", one_over_one_plus_x_lut())
    )

    def row(r: Value, _: tuple[Value, ...]) -> list[Value]:
        (maximum,) = kernel.loop(
            0,
            depth,
            lambda c, m: [kernel.max(m[0], kernel.cast(kernel.load(source, [r, c]), i32))],
            [kernel.constant(-32768, i32)],
        )

        def exponential(c: Value, s: tuple[Value, ...]) -> list[Value]:
            difference = kernel.sub(kernel.cast(kernel.load(source, [r, c]), i32), maximum)
            scaled = emit_multiply_by_quantized_multiplier(kernel, difference, multiplier, shift)
            centred = kernel.clamp(kernel.add(scaled, 32767), -32768, 32767)
            value = emit_lut_lookup(kernel, centred, exps)
            kernel.store(kernel.cast(value, i16), target, [r, c])  # cached, as TFLM does
            return [kernel.add(s[0], value)]

        (total,) = kernel.loop(0, depth, exponential, [kernel.constant(0, i32)])
        headroom_plus_one = kernel.insert(math.CountLeadingZerosOp(total))
        widened = kernel.shl(
            kernel.cast(total, i64), kernel.cast(kernel.sub(headroom_plus_one, 1), i64)
        )
        shifted_sum = kernel.cast(kernel.shr(kernel.add(widened, 1 << 13), 14), i32)
        centred_sum = kernel.clamp(kernel.sub(shifted_sum, (1 << 15) + (1 << 16)), -32768, 32767)
        reciprocal = kernel.cast(emit_lut_lookup(kernel, centred_sum, reciprocals), i64)
        right_shift = kernel.cast(kernel.sub(31, headroom_plus_one), i64)
        rounding = kernel.cast(
            kernel.shl(kernel.constant(1, i32), kernel.sub(kernel.sub(31, headroom_plus_one), 1)),
            i64,
        )

        def scale(c: Value, _: tuple[Value, ...]) -> list[Value]:
            cached = kernel.cast(kernel.load(target, [r, c]), i64)
            product = kernel.add(kernel.mul(cached, reciprocal), rounding)
            result = kernel.cast(kernel.shr(product, right_shift), i32)
            kernel.store(kernel.cast(kernel.clamp(result, 0, 32767), i16), target, [r, c])
            return []

        kernel.loop(0, depth, scale)
        return []

    kernel.loop(0, rows, row)
    finish(kernel)
    module.add(op)


__all__ = [
    "LUT_SIZE",
    "c_float_function",
    "emit_lut_lookup",
    "exp_lut",
    "lut16",
    "one_over_one_plus_x_lut",
    "softmax_int16",
    "softmax_int16_parameters",
]
