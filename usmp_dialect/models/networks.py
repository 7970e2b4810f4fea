"""The networks: MLPerf Tiny's four reference models and MobileNetV2, quantised to int8.

Weights are drawn from a seeded generator as float (He initialisation), quantised per output
channel (symmetric int8); biases are int32 in accumulator units. Output scales and zero points
come from a calibration run on a seeded random input (post-training quantisation, min/max), so
activations use the int8 range instead of saturating or dying.
"""

import math
from dataclasses import replace

import numpy as np

from usmp_dialect.models import reference
from usmp_dialect.models.layers import (
    Add,
    Conv2D,
    FullyConnected,
    GlobalAvgPool,
    Layer,
    Network,
    Requantize,
    Tensor,
    quantize_multiplier,
)

INPUT_SCALE = 1.0 / 128.0  # int8 inputs cover [-1, 1)
ADD_LEFT_SHIFT = 20  # TFLite's int8 ADD


def _same_padding(size: int, kernel: int, stride: int) -> tuple[int, int, int]:
    """TensorFlow `padding="same"`: (output size, pad before, pad after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return out, total // 2, total - total // 2


def _output_quantization(real: np.ndarray, activation: str) -> tuple[float, int, int, int]:
    """(scale, zero point, activation min, activation max) for calibrated real outputs."""
    low = 0.0 if activation in ("relu", "relu6") else min(float(real.min()), 0.0)
    high = max(float(real.max()), 0.0)
    if activation == "relu6":
        high = min(high, 6.0)
    if high - low < 1e-6:
        high = low + 1e-6
    scale = (high - low) / 255.0
    zero_point = int(np.clip(round(-128 - low / scale), -128, 127))
    if activation == "none":
        return scale, zero_point, -128, 127
    activation_max = 127
    if activation == "relu6":
        activation_max = min(127, zero_point + round(6.0 / scale))
    return scale, zero_point, zero_point, activation_max


# Stands in for the requantisation until calibration computes it (the accumulator needs none).
_UNCALIBRATED = Requantize(np.zeros(0, np.int32), np.zeros(0, np.int32), 0, -128, 127)


class _Builder:
    """Appends layers to a network, calibrating each on the running calibration activations."""

    def __init__(self, name: str, seed: int, input_shape: tuple[int, ...]) -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.tensors: dict[str, Tensor] = {"input": Tensor("input", input_shape, INPUT_SCALE, 0)}
        self.layers: list[Layer] = []
        self.calibration: dict[str, np.ndarray] = {
            "input": self.rng.integers(-128, 128, size=input_shape, dtype=np.int8)
        }

    def _layer_name(self, kind: str) -> str:
        return f"{kind}_{len(self.layers)}"

    def _append(self, layer: Layer, tensor: Tensor) -> str:
        self.tensors[tensor.name] = tensor
        self.layers.append(layer)
        self.calibration[tensor.name] = reference.run_layer(layer, self.calibration)
        return tensor.name

    def _quantize_weights(
        self, weights: np.ndarray, channel_axis: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Symmetric int8 weights and their per-channel scales."""
        axes = tuple(axis for axis in range(weights.ndim) if axis != channel_axis)
        scales = np.maximum(np.abs(weights).max(axis=axes), 1e-8) / 127.0
        shape = [1] * weights.ndim
        shape[channel_axis] = -1
        quantized = np.clip(np.rint(weights / scales.reshape(shape)), -127, 127).astype(np.int8)
        return quantized, scales

    def _weighted(
        self,
        layer: Conv2D | FullyConnected,
        weight_scales: np.ndarray,
        out_shape: tuple[int, ...],
        activation: str,
    ) -> str:
        """Calibrates the output quantisation of a conv/FC layer and appends it."""
        source = self.tensors[layer.input]
        if isinstance(layer, Conv2D):
            acc = reference.conv2d_accumulator(layer, self.calibration[layer.input])
        else:
            acc = reference.fully_connected_accumulator(layer, self.calibration[layer.input])
        accumulator_scales = source.scale * weight_scales
        real = acc.astype(np.float64) * accumulator_scales
        if activation != "none":
            real = np.maximum(real, 0.0)
        scale, zero_point, low, high = _output_quantization(real, activation)
        pairs = [quantize_multiplier(float(s / scale)) for s in accumulator_scales]
        params = Requantize(
            multiplier=np.array([m for m, _ in pairs], dtype=np.int32),
            shift=np.array([s for _, s in pairs], dtype=np.int32),
            output_zero_point=zero_point,
            activation_min=low,
            activation_max=high,
        )
        out = Tensor(layer.output, out_shape, scale, zero_point)
        return self._append(replace(layer, requantize=params), out)

    def _bias(self, channels: int, accumulator_scales: np.ndarray) -> np.ndarray:
        real_bias = self.rng.normal(0.0, 0.1, size=channels)
        return np.rint(real_bias / accumulator_scales).astype(np.int32)

    def conv(
        self,
        x: str,
        out_channels: int,
        kernel: tuple[int, int],
        stride: int,
        activation: str,
        depthwise: bool = False,
    ) -> str:
        source = self.tensors[x]
        _, height, width, in_channels = source.shape
        out_h, top, bottom = _same_padding(height, kernel[0], stride)
        out_w, left, right = _same_padding(width, kernel[1], stride)
        if depthwise:
            out_channels = in_channels
            fan_in = kernel[0] * kernel[1]
            real = self.rng.normal(0.0, math.sqrt(2.0 / fan_in), size=(*kernel, in_channels))
            weights, scales = self._quantize_weights(real, 2)
        else:
            fan_in = kernel[0] * kernel[1] * in_channels
            shape = (out_channels, *kernel, in_channels)
            real = self.rng.normal(0.0, math.sqrt(2.0 / fan_in), size=shape)
            weights, scales = self._quantize_weights(real, 0)
        name = self._layer_name("depthwise_conv2d" if depthwise else "conv2d")
        layer = Conv2D(
            name=name,
            input=x,
            output=f"{name}_out",
            weights=weights,
            bias=self._bias(out_channels, source.scale * scales),
            stride=(stride, stride),
            padding=(top, bottom, left, right),
            input_zero_point=source.zero_point,
            requantize=_UNCALIBRATED,
            depthwise=depthwise,
        )
        return self._weighted(layer, scales, (1, out_h, out_w, out_channels), activation)

    def depthwise(self, x: str, stride: int, activation: str) -> str:
        return self.conv(x, 0, (3, 3), stride, activation, depthwise=True)

    def fully_connected(self, x: str, out_features: int, activation: str) -> str:
        source = self.tensors[x]
        in_features = source.shape[1]
        real = self.rng.normal(0.0, math.sqrt(2.0 / in_features), size=(out_features, in_features))
        weights, scales = self._quantize_weights(real, 0)
        name = self._layer_name("fully_connected")
        layer = FullyConnected(
            name=name,
            input=x,
            output=f"{name}_out",
            weights=weights,
            bias=self._bias(out_features, source.scale * scales),
            input_zero_point=source.zero_point,
            requantize=_UNCALIBRATED,
        )
        return self._weighted(layer, scales, (1, out_features), activation)

    def avg_pool(self, x: str) -> str:
        source = self.tensors[x]
        name = self._layer_name("avg_pool")
        out = Tensor(f"{name}_out", (1, source.shape[3]), source.scale, source.zero_point)
        return self._append(GlobalAvgPool(name, x, out.name), out)

    def add(self, x: str, y: str, activation: str) -> str:
        first, second = self.tensors[x], self.tensors[y]
        real = reference.dequantize(self.calibration[x], first) + reference.dequantize(
            self.calibration[y], second
        )
        if activation != "none":
            real = np.maximum(real, 0.0)
        scale, zero_point, low, high = _output_quantization(real, activation)
        twice_max = 2.0 * max(first.scale, second.scale)
        input_multiplier, input_shift = quantize_multiplier(first.scale / twice_max)
        other_multiplier, other_shift = quantize_multiplier(second.scale / twice_max)
        output_multiplier, output_shift = quantize_multiplier(
            twice_max / ((1 << ADD_LEFT_SHIFT) * scale)
        )
        name = self._layer_name("add")
        layer = Add(
            name=name,
            input=x,
            other=y,
            output=f"{name}_out",
            input_zero_point=first.zero_point,
            other_zero_point=second.zero_point,
            left_shift=ADD_LEFT_SHIFT,
            input_multiplier=input_multiplier,
            input_shift=input_shift,
            other_multiplier=other_multiplier,
            other_shift=other_shift,
            requantize=Requantize(
                np.array([output_multiplier], dtype=np.int32),
                np.array([output_shift], dtype=np.int32),
                zero_point,
                low,
                high,
            ),
        )
        return self._append(layer, Tensor(layer.output, first.shape, scale, zero_point))

    def finish(self) -> Network:
        """The network; its last tensor is renamed `output` (the entry function's argument)."""
        last = self.layers[-1]
        tensor = self.tensors.pop(last.output)
        self.tensors["output"] = replace(tensor, name="output")
        self.layers[-1] = replace(last, output="output")
        return Network(self.name, dict(self.tensors), tuple(self.layers), "input", "output")


def kws(seed: int) -> Network:
    """DS-CNN (small) keyword spotting: 49x10 MFCC -> 12 classes."""
    net = _Builder("kws", seed, (1, 49, 10, 1))
    x = net.conv("input", 64, (10, 4), 2, "relu")
    for _ in range(4):
        x = net.depthwise(x, 1, "relu")
        x = net.conv(x, 64, (1, 1), 1, "relu")
    x = net.avg_pool(x)
    net.fully_connected(x, 12, "none")
    return net.finish()


def vww(seed: int, resolution: int = 96) -> Network:
    """MobileNetV1 (width 0.25) visual wake words: 96x96x3 -> 2 classes."""
    net = _Builder("vww", seed, (1, resolution, resolution, 3))
    x = net.conv("input", 8, (3, 3), 2, "relu")
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)]
    blocks += [(128, 1)] * 5 + [(256, 2), (256, 1)]
    for channels, stride in blocks:
        x = net.depthwise(x, stride, "relu")
        x = net.conv(x, channels, (1, 1), 1, "relu")
    x = net.avg_pool(x)
    net.fully_connected(x, 2, "none")
    return net.finish()


def resnet8(seed: int) -> Network:
    """ResNet-8 image classification (CIFAR-10): 32x32x3 -> 10 classes."""
    net = _Builder("resnet8", seed, (1, 32, 32, 3))
    x = net.conv("input", 16, (3, 3), 1, "relu")
    for channels, stride in ((16, 1), (32, 2), (64, 2)):
        y = net.conv(x, channels, (3, 3), stride, "relu")
        y = net.conv(y, channels, (3, 3), 1, "none")
        if stride != 1:
            x = net.conv(x, channels, (1, 1), stride, "none")
        x = net.add(x, y, "relu")
    x = net.avg_pool(x)
    net.fully_connected(x, 10, "none")
    return net.finish()


def ad(seed: int) -> Network:
    """Fully connected autoencoder for anomaly detection: 640 -> 128x4 -> 8 -> 128x4 -> 640."""
    net = _Builder("ad", seed, (1, 640))
    x = "input"
    for features in [128] * 4 + [8] + [128] * 4:
        x = net.fully_connected(x, features, "relu")
    net.fully_connected(x, 640, "none")
    return net.finish()


def _make_divisible(value: float, divisor: int = 8) -> int:
    rounded = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


def mobilenetv2(seed: int, resolution: int = 224, width_multiplier: float = 1.0) -> Network:
    """MobileNetV2 image classification: 224x224x3 -> 1000 classes."""
    net = _Builder("mobilenetv2", seed, (1, resolution, resolution, 3))
    channels = _make_divisible(32 * width_multiplier)
    x = net.conv("input", channels, (3, 3), 2, "relu6")
    settings = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2)]
    settings += [(6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]
    for expansion, base_channels, repeats, first_stride in settings:
        out_channels = _make_divisible(base_channels * width_multiplier)
        for index in range(repeats):
            stride = first_stride if index == 0 else 1
            y = x
            if expansion != 1:
                y = net.conv(y, channels * expansion, (1, 1), 1, "relu6")
            y = net.depthwise(y, stride, "relu6")
            y = net.conv(y, out_channels, (1, 1), 1, "none")
            x = net.add(x, y, "none") if stride == 1 and channels == out_channels else y
            channels = out_channels
    last_channels = _make_divisible(1280 * max(1.0, width_multiplier))
    x = net.conv(x, last_channels, (1, 1), 1, "relu6")
    x = net.avg_pool(x)
    net.fully_connected(x, 1000, "none")
    return net.finish()
