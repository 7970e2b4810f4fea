"""TFLite models with int16 activations (TFLite's 16x8 quantisation: int16 activations with zero
point 0, int8 weights, int64 biases), written with `tflite_writer`: the builders of
`test/frontends/tflite/test_int16.py`, of the emulated Cortex-M's tests (`test/firmware`) and
of `benchmarks/stateful_models.py`."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.testing.tflite_writer import ModelSpec, OperatorSpec, TensorSpec

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


def chain() -> ModelSpec:
    """A small 16x8 network: float input quantised to int16, CONV_2D, DEPTHWISE_CONV_2D, ADD of
    the two (a residual), MAX_POOL_2D, RESHAPE, FULLY_CONNECTED, and both the int16 logits
    and their DEQUANTIZE as outputs."""
    rng = np.random.default_rng(11)
    scale = 1 / 4096

    def filters(name: str, shape: tuple[int, ...], axis: int) -> TensorSpec:
        channels = shape[axis]
        data = rng.integers(-127, 128, size=shape, dtype=np.int8)
        scales = list(rng.uniform(0.003, 0.01, channels))
        return TensorSpec(
            name, np.int8, shape, data=data, scales=scales, zero_points=[0] * channels, axis=axis
        )

    def biases(name: str, count: int) -> TensorSpec:
        values = rng.integers(-50_000, 50_000, size=count).astype(np.int64)
        return TensorSpec(name, np.int64, (count,), data=values, scales=[1e-6] * count)

    tensors = [
        TensorSpec("image", np.float32, (1, 8, 8, 2)),  # 0
        int16("q", (1, 8, 8, 2), scale),  # 1
        filters("conv_w", (4, 3, 3, 2), 0),  # 2
        biases("conv_b", 4),  # 3
        int16("conv", (1, 8, 8, 4), 0.002),  # 4
        filters("dw_w", (1, 3, 3, 4), 3),  # 5
        biases("dw_b", 4),  # 6
        int16("dw", (1, 8, 8, 4), 0.003),  # 7
        int16("sum", (1, 8, 8, 4), 0.004),  # 8
        int16("pooled", (1, 4, 4, 4), 0.004),  # 9
        TensorSpec("shape", np.int32, (2,), data=np.array([1, 64], dtype=np.int32)),  # 10
        int16("flat", (1, 64), 0.004),  # 11
        filters("fc_w", (10, 64), 0),  # 12
        biases("fc_b", 10),  # 13
        int16("logits", (1, 10), 0.01),  # 14
        TensorSpec("probabilities", np.float32, (1, 10)),  # 15
    ]
    convolution_fields = {
        "Padding": SAME,
        "StrideH": 1,
        "StrideW": 1,
        "FusedActivationFunction": RELU,
        "DilationHFactor": 1,
        "DilationWFactor": 1,
    }
    pool_fields = {
        "Padding": VALID,
        "StrideH": 2,
        "StrideW": 2,
        "FilterHeight": 2,
        "FilterWidth": 2,
        "FusedActivationFunction": NONE,
    }
    operators = [
        OperatorSpec("QUANTIZE", [0], [1]),
        OperatorSpec("CONV_2D", [1, 2, 3], [4], "Conv2DOptions", convolution_fields),
        OperatorSpec(
            "DEPTHWISE_CONV_2D",
            [4, 5, 6],
            [7],
            "DepthwiseConv2DOptions",
            {**convolution_fields, "DepthMultiplier": 1, "FusedActivationFunction": NONE},
        ),
        OperatorSpec("ADD", [4, 7], [8], "AddOptions", {"FusedActivationFunction": NONE}),
        OperatorSpec("MAX_POOL_2D", [8], [9], "Pool2DOptions", pool_fields),
        OperatorSpec("RESHAPE", [9, 10], [11]),
        OperatorSpec("FULLY_CONNECTED", [11, 12, 13], [14], "FullyConnectedOptions", {}),
        OperatorSpec("DEQUANTIZE", [14], [15]),
    ]
    return ModelSpec(tensors, operators, [0], [14, 15])


def softmax(shape: tuple[int, ...], input_scale: float, beta: float = 1.0) -> ModelSpec:
    """An int16 SOFTMAX (output scale 1/32768, zero point 0, as TFLM requires)."""
    tensors = [int16("x", shape, input_scale), int16("y", shape, 1 / 32768)]
    op = OperatorSpec("SOFTMAX", [0], [1], "SoftmaxOptions", {"Beta": beta})
    return ModelSpec(tensors, [op], [0], [1])


def activation(opcode: str, input_scale: float, shape: tuple[int, ...]) -> ModelSpec:
    """An int16 LOGISTIC or TANH (`opcode`; output scale 2**-15, zero point 0)."""
    tensors = [int16("x", shape, input_scale), int16("y", shape, 2.0**-15)]
    return ModelSpec(tensors, [OperatorSpec(opcode, [0], [1])], [0], [1])
