"""TFLite's 16x8 quantisation (int16 activations with zero point 0, int8 weights, int64 or
int32 biases) on models written here, against TensorFlow Lite Micro bit for bit on random
inputs over the whole int16 range (so saturating sums and clamps are exercised)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import tflite

from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec

from .tflm_oracle import ModelSpec, assert_all_match

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]

SAME, VALID = tflite.Padding.SAME, tflite.Padding.VALID
NONE, RELU, RELU6 = 0, 1, 3
INPUT_SCALE = 1 / 4096  # an int16 input covering [-8, 8)


def int16(name: str, shape: tuple[int, ...], scale: float = INPUT_SCALE) -> TensorSpec:
    return TensorSpec(name, np.int16, shape, scales=[scale], zero_points=[0])


def weights(
    rng: np.random.Generator, shape: tuple[int, ...], channels: int, per_channel: bool, axis: int
) -> tuple[TensorSpec, list[float]]:
    scales = list(rng.uniform(0.002, 0.02, channels)) if per_channel else [0.01]
    data = rng.integers(-127, 128, size=shape, dtype=np.int8)
    return TensorSpec(
        "w", np.int8, shape, data=data, scales=scales, zero_points=[0] * len(scales), axis=axis
    ), scales


def bias(
    rng: np.random.Generator, channels: int, scales: list[float], dtype: type | None
) -> list[TensorSpec]:
    if dtype is None:
        return []
    values = rng.integers(-200_000, 200_000, size=channels).astype(dtype)
    return [
        TensorSpec("b", dtype, (channels,), data=values, scales=[INPUT_SCALE * s for s in scales])
    ]


def fully_connected(
    seed: int,
    bias_dtype: type | None = np.int64,
    per_channel: bool = False,
    activation: int = NONE,
    batches: int = 2,
    depth: int = 40,
    units: int = 7,
) -> ModelSpec:
    rng = np.random.default_rng(seed)
    filters, scales = weights(rng, (units, depth), units, per_channel, 0)
    tensors = [int16("x", (batches, depth)), filters, *bias(rng, units, scales, bias_dtype)]
    tensors.append(int16("y", (batches, units), scale=0.004))
    output = len(tensors) - 1
    inputs = [0, 1, 2 if bias_dtype is not None else -1]
    options = {"FusedActivationFunction": activation}
    op = OperatorSpec("FULLY_CONNECTED", inputs, [output], "FullyConnectedOptions", options)
    return ModelSpec(tensors, [op], [0], [output])


def convolution(
    seed: int,
    depthwise: bool = False,
    bias_dtype: type | None = np.int64,
    per_channel: bool = True,
    stride: int = 1,
    dilation: int = 1,
    padding: int = SAME,
    activation: int = NONE,
    multiplier: int = 1,
    size: tuple[int, int, int] = (7, 6, 3),
    kernel: tuple[int, int] = (3, 3),
    out_channels: int = 4,
) -> ModelSpec:
    rng = np.random.default_rng(seed)
    height, width, channels = size
    out_channels = channels * multiplier if depthwise else out_channels
    shape = (1, *kernel, out_channels) if depthwise else (out_channels, *kernel, channels)
    filters, scales = weights(rng, shape, out_channels, per_channel, 3 if depthwise else 0)
    effective = [(k - 1) * dilation + 1 for k in kernel]
    out_h, out_w = (
        ((n + stride - 1) // stride if padding == SAME else (n + stride - e) // stride)
        for n, e in zip((height, width), effective, strict=True)
    )
    tensors = [int16("x", (1, height, width, channels)), filters]
    tensors += bias(rng, out_channels, scales, bias_dtype)
    tensors.append(int16("y", (1, out_h, out_w, out_channels), scale=0.01))
    output = len(tensors) - 1
    fields = {
        "Padding": padding,
        "StrideH": stride,
        "StrideW": stride,
        "FusedActivationFunction": activation,
        "DilationHFactor": dilation,
        "DilationWFactor": dilation,
    }
    inputs = [0, 1, 2 if bias_dtype is not None else -1]
    if depthwise:
        fields["DepthMultiplier"] = multiplier
        op = OperatorSpec("DEPTHWISE_CONV_2D", inputs, [output], "DepthwiseConv2DOptions", fields)
    else:
        op = OperatorSpec("CONV_2D", inputs, [output], "Conv2DOptions", fields)
    return ModelSpec(tensors, [op], [0], [output])


def test_fully_connected_16x8_matches_tflm(tmp_path: Path) -> None:
    models = {
        "int64": fully_connected(0),
        "relu6": fully_connected(1, activation=RELU6),
        "channels": fully_connected(2, per_channel=True, activation=RELU),
        "nobias": fully_connected(3, bias_dtype=None, batches=1, depth=300),
        "int32": fully_connected(4, bias_dtype=np.int32),
    }
    assert_all_match(models, tmp_path)


def test_convolutions_16x8_match_tflm(tmp_path: Path) -> None:
    models = {
        "same": convolution(0),
        "strided": convolution(1, stride=2, dilation=2, activation=RELU),
        "valid": convolution(2, padding=VALID, kernel=(2, 3), per_channel=False, out_channels=3),
        "int32": convolution(3, bias_dtype=np.int32, activation=RELU6),
        "nobias": convolution(4, bias_dtype=None, stride=2),
        "dw": convolution(5, depthwise=True),
        "dw_mult": convolution(6, depthwise=True, multiplier=2, dilation=2, activation=RELU),
        "dw_valid": convolution(7, depthwise=True, padding=VALID, stride=2, per_channel=False),
    }
    assert_all_match(models, tmp_path, sanitize=True)
