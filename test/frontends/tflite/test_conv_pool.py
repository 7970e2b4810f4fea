"""Convolution and pooling variants the real models do not all cover — dilation, depth
multipliers, SAME/VALID padding with strides 1-3, per-tensor and per-channel weights, every
fused activation, int8 and float — on models written here, against TFLM (int8 byte for byte,
float to 1e-5), through `usmp-opt` and gcc."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import tflite

from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import compile_model

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]

SAME, VALID = tflite.Padding.SAME, tflite.Padding.VALID
NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3


@dataclass(frozen=True)
class Conv:
    depthwise: bool = False
    stride: int = 1
    dilation: int = 1
    padding: int = SAME
    activation: int = NONE
    depth_multiplier: int = 1
    per_channel: bool = True
    float32: bool = False
    size: tuple[int, int, int] = (9, 7, 3)  # input height, width, channels
    kernel: tuple[int, int] = (3, 3)
    out_channels: int = 5


def output_size(size: int, kernel: int, stride: int, dilation: int, padding: int) -> int:
    effective = (kernel - 1) * dilation + 1
    if padding == SAME:
        return (size + stride - 1) // stride
    return (size + stride - effective) // stride


def conv_model(spec: Conv, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    height, width, channels = spec.size
    kh, kw = spec.kernel
    out_channels = channels * spec.depth_multiplier if spec.depthwise else spec.out_channels
    shape = (1, kh, kw, out_channels) if spec.depthwise else (out_channels, kh, kw, channels)
    out_h = output_size(height, kh, spec.stride, spec.dilation, spec.padding)
    out_w = output_size(width, kw, spec.stride, spec.dilation, spec.padding)
    if spec.float32:
        weights = rng.standard_normal(shape).astype(np.float32)
        bias = rng.standard_normal(out_channels).astype(np.float32)
        tensors = [
            TensorSpec("x", np.float32, (1, height, width, channels)),
            TensorSpec("w", np.float32, shape, data=weights),
            TensorSpec("b", np.float32, (out_channels,), data=bias),
            TensorSpec("y", np.float32, (1, out_h, out_w, out_channels)),
        ]
    else:
        weights = rng.integers(-127, 128, size=shape, dtype=np.int8)
        bias = rng.integers(-3000, 3000, size=out_channels, dtype=np.int32)
        scales = list(rng.uniform(0.002, 0.02, out_channels)) if spec.per_channel else [0.01]
        tensors = [
            TensorSpec("x", np.int8, (1, height, width, channels), scales=[0.05], zero_points=[-7]),
            TensorSpec(
                "w",
                np.int8,
                shape,
                data=weights,
                scales=scales,
                zero_points=[0] * len(scales),
                axis=3 if spec.depthwise else 0,
            ),
            TensorSpec(
                "b", np.int32, (out_channels,), data=bias, scales=[0.05 * s for s in scales]
            ),
            TensorSpec(
                "y", np.int8, (1, out_h, out_w, out_channels), scales=[0.09], zero_points=[4]
            ),
        ]
    fields = {
        "Padding": spec.padding,
        "StrideH": spec.stride,
        "StrideW": spec.stride,
        "FusedActivationFunction": spec.activation,
        "DilationHFactor": spec.dilation,
        "DilationWFactor": spec.dilation,
    }
    if spec.depthwise:
        fields["DepthMultiplier"] = spec.depth_multiplier
        operator = OperatorSpec(
            "DEPTHWISE_CONV_2D", [0, 1, 2], [3], "DepthwiseConv2DOptions", fields
        )
    else:
        operator = OperatorSpec("CONV_2D", [0, 1, 2], [3], "Conv2DOptions", fields)
    return write_model(tensors, [operator], [0], [3])


@dataclass(frozen=True)
class Pool:
    kind: str  # "AVERAGE_POOL_2D" or "MAX_POOL_2D"
    filter: tuple[int, int] = (3, 3)
    stride: int = 2
    padding: int = SAME
    activation: int = NONE
    float32: bool = False
    size: tuple[int, int, int] = (9, 8, 4)


def pool_model(spec: Pool, _seed: int) -> bytes:
    height, width, channels = spec.size
    out_h = output_size(height, spec.filter[0], spec.stride, 1, spec.padding)
    out_w = output_size(width, spec.filter[1], spec.stride, 1, spec.padding)
    if spec.float32:
        quant: dict[str, object] = {}
        dtype: type = np.float32
    else:
        quant = {"scales": [0.07], "zero_points": [-3]}
        dtype = np.int8
    tensors = [
        TensorSpec("x", dtype, (1, height, width, channels), **quant),  # type: ignore[arg-type]
        TensorSpec("y", dtype, (1, out_h, out_w, channels), **quant),  # type: ignore[arg-type]
    ]
    fields = {
        "Padding": spec.padding,
        "StrideH": spec.stride,
        "StrideW": spec.stride,
        "FilterHeight": spec.filter[0],
        "FilterWidth": spec.filter[1],
        "FusedActivationFunction": spec.activation,
    }
    return write_model(
        tensors, [OperatorSpec(spec.kind, [0], [1], "Pool2DOptions", fields)], [0], [1]
    )


CASES: dict[str, bytes] = {}
for index, conv in enumerate(
    [
        Conv(stride=2, activation=RELU),
        Conv(dilation=2, activation=RELU6),
        Conv(padding=VALID, stride=3, activation=RELU_N1_TO_1),
        Conv(per_channel=False, kernel=(1, 1)),
        Conv(padding=VALID, kernel=(2, 4), dilation=2, stride=2),
        Conv(depthwise=True, stride=2),
        Conv(depthwise=True, depth_multiplier=3, dilation=2, activation=RELU),
        Conv(depthwise=True, padding=VALID, stride=3, activation=RELU6, per_channel=False),
        Conv(float32=True, stride=2, dilation=2, activation=RELU6),
        Conv(float32=True, depthwise=True, depth_multiplier=2, activation=RELU),
        Conv(float32=True, padding=VALID, kernel=(1, 3)),
        # four output channels at a time (float), beside the padded border segments
        Conv(float32=True, out_channels=8, activation=RELU),
        # more border runs than MAX_SEGMENTS: their taps computed at run time
        Conv(size=(20, 18, 2), kernel=(9, 9), out_channels=4),
        Conv(float32=True, size=(20, 18, 2), kernel=(9, 9), out_channels=8, stride=2),
    ]
):
    CASES[f"conv{index}-{conv}"] = conv_model(conv, index)
for index, pool in enumerate(
    [
        Pool("AVERAGE_POOL_2D"),
        Pool("AVERAGE_POOL_2D", padding=VALID, stride=1, filter=(2, 3), activation=RELU),
        Pool("MAX_POOL_2D"),
        Pool("MAX_POOL_2D", padding=VALID, filter=(2, 2), activation=RELU6),
        Pool("AVERAGE_POOL_2D", float32=True, activation=RELU6),
        Pool("MAX_POOL_2D", float32=True, padding=VALID, stride=3),
        # global pools (every window the whole input: constant bounds and divisor)
        Pool("AVERAGE_POOL_2D", padding=VALID, filter=(5, 3), size=(5, 3, 12)),
        Pool("AVERAGE_POOL_2D", float32=True, padding=VALID, filter=(4, 4), size=(4, 4, 6)),
        # more border runs than MAX_SEGMENTS: the windows' taps computed at run time
        Pool("AVERAGE_POOL_2D", filter=(9, 9), stride=1, size=(12, 11, 3), activation=RELU),
        Pool("MAX_POOL_2D", filter=(9, 9), stride=1, size=(12, 11, 3)),
    ]
):
    CASES[f"pool{index}-{pool}"] = pool_model(pool, index)


def test_conv_and_pool_variants_match_tflm(tmp_path: Path) -> None:
    def check(item: tuple[int, tuple[str, bytes]]) -> None:
        index, (name, data) = item
        directory = tmp_path / f"case{index}"
        directory.mkdir()
        model = directory / "model.tflite"
        model.write_bytes(data)
        try:
            compiled = compile_model(model, directory, sanitize=index % 3 == 0)
            tflm.compare(compiled, data, range(3))
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from error

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(check, enumerate(CASES.items())))
