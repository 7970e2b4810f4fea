"""Quantised int8 layers: the plain data that both the IR writer and the numpy reference read.

Arithmetic (TFLite int8 conventions, single-rounding requantisation):

* activations are int8 with a per-tensor zero point; weights are int8, symmetric (zero point 0),
  per output channel; biases are int32;
* a convolution or fully connected layer accumulates `(x - input_zero_point) * w` in int32,
  starting from the bias;
* requantisation maps an int32 value `v` to `((v * multiplier + 2**(shift - 1)) >> shift)`
  computed in int64 (`multiplier` in [2**30, 2**31), `shift` the total right shift, 1..62),
  adds the output zero point and clamps to `[activation_min, activation_max]` (ReLU and ReLU6
  are that clamp), then truncates to int8.
"""

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tensor:
    """An int8 activation tensor: its shape and its quantisation (real = scale * (q - zp))."""

    name: str
    shape: tuple[int, ...]
    scale: float
    zero_point: int


@dataclass(frozen=True, eq=False)
class Requantize:
    """Per-output-channel requantisation from an int32 accumulator to int8."""

    multiplier: np.ndarray  # int32 [channels]
    shift: np.ndarray  # int32 [channels], total right shift
    output_zero_point: int
    activation_min: int
    activation_max: int


@dataclass(frozen=True, eq=False)
class Conv2D:
    """NHWC convolution, weights OHWI (`depthwise`: weights HWC, one filter per channel)."""

    name: str
    input: str
    output: str
    weights: np.ndarray  # int8
    bias: np.ndarray  # int32 [out_channels]
    stride: tuple[int, int]
    padding: tuple[int, int, int, int]  # top, bottom, left, right
    input_zero_point: int
    requantize: Requantize
    depthwise: bool = False

    @property
    def kernel(self) -> tuple[int, int]:
        shape = self.weights.shape
        return (shape[0], shape[1]) if self.depthwise else (shape[1], shape[2])


@dataclass(frozen=True, eq=False)
class FullyConnected:
    """`[1, in] -> [1, out]`, weights `[out, in]`."""

    name: str
    input: str
    output: str
    weights: np.ndarray  # int8 [out, in]
    bias: np.ndarray  # int32 [out]
    input_zero_point: int
    requantize: Requantize


@dataclass(frozen=True, eq=False)
class GlobalAvgPool:
    """`[1, H, W, C] -> [1, C]`: the rounded mean (half away from zero), same quantisation."""

    name: str
    input: str
    output: str


@dataclass(frozen=True, eq=False)
class Add:
    """Elementwise add of two int8 tensors (TFLite's int8 ADD: both rescaled to a common scale
    with a left shift of `left_shift`, summed, requantised)."""

    name: str
    input: str
    other: str
    output: str
    input_zero_point: int
    other_zero_point: int
    left_shift: int
    input_multiplier: int
    input_shift: int
    other_multiplier: int
    other_shift: int
    requantize: Requantize  # channels == 1: the output multiplier/shift


Layer = Conv2D | FullyConnected | GlobalAvgPool | Add


@dataclass(frozen=True, eq=False)
class Network:
    """A quantised network: tensors by name, layers in execution order."""

    name: str
    tensors: dict[str, Tensor]
    layers: tuple[Layer, ...]
    input: str
    output: str


def quantize_multiplier(real_multiplier: float) -> tuple[int, int]:
    """`(multiplier, shift)` with `multiplier / 2**shift` closest to `real_multiplier`."""
    if not 2.0**-32 <= real_multiplier < 2.0**30:
        raise ValueError(f"requantisation multiplier {real_multiplier} out of range")
    mantissa, exponent = np.frexp(real_multiplier)
    multiplier = round(float(mantissa) * (1 << 31))
    if multiplier == 1 << 31:
        multiplier //= 2
        exponent += 1
    return multiplier, 31 - int(exponent)


def requantize(values: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """Single-rounding fixed-point scaling of int values, in int64 (no offset, no clamp)."""
    wide = values.astype(np.int64) * np.asarray(multiplier, dtype=np.int64)
    shift64 = np.asarray(shift, dtype=np.int64)
    return (wide + (np.int64(1) << (shift64 - 1))) >> shift64


def folded_bias(layer: Conv2D | FullyConnected) -> np.ndarray:
    """The bias with the input zero point folded in, `bias - zp * sum(w)` per output channel
    (int32, wrapping): `bias + sum((x - zp) * w) == folded_bias + sum(x * w)` modulo 2**32, so
    the inner loop multiplies the raw int8 input (one instruction less per multiply-add; the
    padding holds the zero point and its terms cancel in the same way)."""
    weights = layer.weights.astype(np.int64)
    if isinstance(layer, FullyConnected):
        sums = weights.sum(axis=1)
    elif layer.depthwise:
        sums = weights.sum(axis=(0, 1))
    else:
        sums = weights.sum(axis=(1, 2, 3))
    folded = layer.bias.astype(np.int64) - np.int64(layer.input_zero_point) * sums
    return ((folded + 2**31) % 2**32 - 2**31).astype(np.int32)


def high_word_shift(params: Requantize) -> np.ndarray | None:
    """`shift - 32` per channel when every shift is at least 33 (the usual case: multipliers
    below 2**-1), else None. The IR then requantises with one 32x32->64 multiply and 32-bit
    arithmetic on its upper word (`emit._Body.scale_high_word`), bit-exact with `requantize`."""
    shift = np.asarray(params.shift, dtype=np.int64)
    if shift.size == 0 or int(shift.min()) < 33:
        return None
    return (shift - 32).astype(np.int32)


def shift_table(params: Requantize) -> np.ndarray:
    """The shift table the IR holds: `high_word_shift` when it applies, else the shifts."""
    high = high_word_shift(params)
    return params.shift if high is None else high
