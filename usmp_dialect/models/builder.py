"""Builds an int8 TFLite model layer by layer, calibrating its quantisation on random data.

Each layer draws float weights (He initialisation) from the builder's seeded generator,
quantises them as TFLite's converter does (symmetric int8 per output channel for convolutions,
per tensor for fully connected layers; int32 biases in accumulator units), and runs in float64
on a calibration input drawn from the same generator. Its output scale and zero point come
from the float range it produces (post-training min/max calibration), so that activations use
the int8 range instead of saturating or dying. The float pass only picks scales: correctness
is TensorFlow Lite Micro's business (the tests compare with it).

The model is written with `usmp_dialect.testing.tflite_writer` (which needs the `tflite`
package).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import tflite

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

INPUT_SCALE = 1.0 / 128.0  # int8 inputs cover [-1, 1)
SOFTMAX_SCALE = 1.0 / 256.0  # TFLite's int8 softmax output: scale 1/256, zero point -128
ACTIVATIONS = {
    "none": tflite.ActivationFunctionType.NONE,
    "relu": tflite.ActivationFunctionType.RELU,
    "relu6": tflite.ActivationFunctionType.RELU6,
}


@dataclass(frozen=True)
class Activation:
    """An activation tensor: its index in the model and the calibration values it holds."""

    index: int
    values: np.ndarray  # float64, the layer's output on the calibration input

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)


def output_quantization(values: np.ndarray, activation: str) -> tuple[float, int]:
    """(scale, zero point) covering the float range of `values` (and 0), as a min/max
    calibration picks them; RELU6 caps the range at 6."""
    low = min(float(values.min()), 0.0)
    high = max(float(values.max()), 0.0)
    if activation == "relu6":
        high = min(high, 6.0)
    high = max(high, low + 1e-6)
    scale = (high - low) / 255.0
    zero_point = int(np.clip(round(-128 - low / scale), -128, 127))
    return scale, zero_point


def _same_padding(size: int, kernel: int, stride: int) -> tuple[int, int]:
    """TFLite's SAME padding: (output size, padding before)."""
    out = -(-size // stride)
    return out, max((out - 1) * stride + kernel - size, 0) // 2


def _apply(values: np.ndarray, activation: str) -> np.ndarray:
    if activation == "relu":
        return np.maximum(values, 0.0)
    if activation == "relu6":
        return np.clip(values, 0.0, 6.0)
    return values


def convolution(
    x: np.ndarray,
    weights: np.ndarray,
    bias: np.ndarray,
    stride: int,
    depthwise: bool,
    same: bool = True,
) -> np.ndarray:
    """Float NHWC convolution with SAME (or VALID) padding; `weights` are OHWI (1HWC when
    depthwise)."""
    _, height, width, channels = x.shape
    kernel_h, kernel_w = weights.shape[1:3]
    if same:
        out_h, top = _same_padding(height, kernel_h, stride)
        out_w, left = _same_padding(width, kernel_w, stride)
    else:
        out_h, out_w = (height - kernel_h) // stride + 1, (width - kernel_w) // stride + 1
        top = left = 0
    padded = np.zeros((1, height + kernel_h, width + kernel_w, channels))
    padded[:, top : top + height, left : left + width] = x
    result = np.zeros((1, out_h, out_w, weights.shape[3] if depthwise else weights.shape[0]))
    for row in range(kernel_h):
        for column in range(kernel_w):
            window = padded[
                :, row : row + stride * out_h : stride, column : column + stride * out_w : stride
            ]
            tap = weights[:, row, column, :]
            result += window * tap[0] if depthwise else window @ tap.T
    return result + bias


class ModelBuilder:
    """Appends quantised layers to a one-input, one-output int8 TFLite model."""

    def __init__(self, seed: int, input_shape: tuple[int, ...]) -> None:
        self.rng = np.random.default_rng(seed)
        self.tensors: list[TensorSpec] = []
        self.operators: list[OperatorSpec] = []
        self.activations: list[Activation] = []
        calibration = self.rng.uniform(-1.0, 1.0, size=input_shape)
        self.input = self._activation("input", calibration, INPUT_SCALE, 0)

    def _tensor(self, spec: TensorSpec) -> int:
        self.tensors.append(spec)
        return len(self.tensors) - 1

    def _activation(
        self, name: str, values: np.ndarray, scale: float, zero_point: int
    ) -> Activation:
        spec = TensorSpec(name, np.int8, values.shape, scales=[scale], zero_points=[zero_point])
        activation = Activation(self._tensor(spec), values)
        self.activations.append(activation)
        return activation

    def _quantization(self, x: Activation) -> tuple[float, int]:
        spec = self.tensors[x.index]
        assert spec.scales is not None and spec.zero_points is not None
        return float(spec.scales[0]), int(spec.zero_points[0])

    def _layer_name(self, kind: str) -> str:
        return f"{kind}_{len(self.operators)}"

    def _output(self, kind: str, values: np.ndarray, activation: str) -> Activation:
        values = _apply(values, activation)
        return self._activation(
            f"{self._layer_name(kind)}_out", values, *output_quantization(values, activation)
        )

    def _weights(
        self, name: str, real: np.ndarray, channel_axis: int | None
    ) -> tuple[int, np.ndarray]:
        """Symmetric int8 weights (per channel along `channel_axis`, else per tensor): the
        tensor's index and its per-channel scales."""
        axes = tuple(a for a in range(real.ndim) if a != channel_axis)
        scales = np.maximum(np.abs(real).max(axis=axes), 1e-8) / 127.0
        scales = np.atleast_1d(scales.astype(np.float32))
        shape = [1] * real.ndim
        if channel_axis is not None:
            shape[channel_axis] = -1
        data = np.clip(np.rint(real / scales.reshape(shape)), -127, 127).astype(np.int8)
        spec = TensorSpec(
            name,
            np.int8,
            data.shape,
            data=data,
            scales=[float(s) for s in scales],
            zero_points=[0] * scales.size,
            axis=channel_axis or 0,
        )
        return self._tensor(spec), data * scales.reshape(shape).astype(np.float64)

    def _bias(
        self, name: str, channels: int, input_scale: float, weight_scales: np.ndarray
    ) -> tuple[int, np.ndarray]:
        """int32 bias in accumulator units (input scale times weight scale): index, float values."""
        accumulator_scales = (np.float32(input_scale) * weight_scales).astype(np.float32)
        data = np.rint(self.rng.normal(0.0, 0.1, size=channels) / accumulator_scales)
        data = data.astype(np.int32)
        spec = TensorSpec(
            name,
            np.int32,
            (channels,),
            data=data,
            scales=[float(s) for s in accumulator_scales],
            zero_points=[0] * accumulator_scales.size,
        )
        return self._tensor(spec), data * accumulator_scales.astype(np.float64)

    def conv(
        self,
        x: Activation,
        out_channels: int,
        kernel: int,
        stride: int,
        activation: str,
        depthwise: bool = False,
        same: bool = True,
    ) -> Activation:
        """CONV_2D (or DEPTHWISE_CONV_2D, multiplier 1), SAME (or VALID) padding, square
        kernel."""
        in_channels = x.shape[3]
        name = self._layer_name("depthwise_conv_2d" if depthwise else "conv_2d")
        if depthwise:
            out_channels = in_channels
            std = math.sqrt(2.0 / (kernel * kernel))
            real = self.rng.normal(0.0, std, size=(1, kernel, kernel, in_channels))
            channel_axis = 3
        else:
            std = math.sqrt(2.0 / (kernel * kernel * in_channels))
            real = self.rng.normal(0.0, std, size=(out_channels, kernel, kernel, in_channels))
            channel_axis = 0
        weights, float_weights = self._weights(f"{name}_weights", real, channel_axis)
        weight_scales = np.asarray(self.tensors[weights].scales, dtype=np.float32)
        input_scale, _ = self._quantization(x)
        bias, float_bias = self._bias(f"{name}_bias", out_channels, input_scale, weight_scales)
        values = convolution(x.values, float_weights, float_bias, stride, depthwise, same)
        out = self._output("depthwise_conv_2d" if depthwise else "conv_2d", values, activation)
        fields = {
            "Padding": tflite.Padding.SAME if same else tflite.Padding.VALID,
            "StrideH": stride,
            "StrideW": stride,
            "FusedActivationFunction": ACTIVATIONS[activation],
            "DilationHFactor": 1,
            "DilationWFactor": 1,
        }
        if depthwise:
            fields["DepthMultiplier"] = 1
        self.operators.append(
            OperatorSpec(
                "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D",
                [x.index, weights, bias],
                [out.index],
                "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions",
                fields,
            )
        )
        return out

    def depthwise(
        self, x: Activation, stride: int, activation: str, same: bool = True
    ) -> Activation:
        """A 3x3 DEPTHWISE_CONV_2D."""
        return self.conv(x, 0, 3, stride, activation, depthwise=True, same=same)

    def pad(self, x: Activation, pads: tuple[tuple[int, int], tuple[int, int]]) -> Activation:
        """PAD of the height and width by (before, after) zeros (the zero point: Keras'
        ZeroPadding2D, a PyTorch convolution's explicit padding), the quantisation kept."""
        name = self._layer_name("pad")
        paddings = np.array([(0, 0), *pads, (0, 0)], dtype=np.int32)
        constant = self._tensor(TensorSpec(f"{name}_paddings", np.int32, (4, 2), data=paddings))
        out = self._activation(
            f"{name}_out", np.pad(x.values, paddings.tolist()), *self._quantization(x)
        )
        self.operators.append(OperatorSpec("PAD", [x.index, constant], [out.index]))
        return out

    def transpose(self, x: Activation, permutation: tuple[int, ...]) -> Activation:
        """TRANSPOSE (a PyTorch export's NCHW input to NHWC: (0, 2, 3, 1))."""
        name = self._layer_name("transpose")
        perm = np.array(permutation, dtype=np.int32)
        constant = self._tensor(TensorSpec(f"{name}_perm", np.int32, perm.shape, data=perm))
        out = self._activation(
            f"{name}_out", x.values.transpose(permutation), *self._quantization(x)
        )
        self.operators.append(OperatorSpec("TRANSPOSE", [x.index, constant], [out.index]))
        return out

    def add(self, x: Activation, y: Activation, activation: str = "none") -> Activation:
        """ADD of two activations of one shape (its own output quantisation)."""
        out = self._output("add", x.values + y.values, activation)
        self.operators.append(
            OperatorSpec(
                "ADD",
                [x.index, y.index],
                [out.index],
                "AddOptions",
                {"FusedActivationFunction": ACTIVATIONS[activation]},
            )
        )
        return out

    def global_average_pool(self, x: Activation) -> Activation:
        """AVERAGE_POOL_2D over the whole image (TFLite keeps the quantisation: 1x1xC)."""
        _, height, width, _ = x.shape
        values = x.values.mean(axis=(1, 2), keepdims=True)
        name = f"{self._layer_name('average_pool_2d')}_out"
        out = self._activation(name, values, *self._quantization(x))
        fields = {
            "Padding": tflite.Padding.VALID,
            "StrideH": 1,
            "StrideW": 1,
            "FilterHeight": height,
            "FilterWidth": width,
            "FusedActivationFunction": ACTIVATIONS["none"],
        }
        self.operators.append(
            OperatorSpec("AVERAGE_POOL_2D", [x.index], [out.index], "Pool2DOptions", fields)
        )
        return out

    def flatten(self, x: Activation) -> Activation:
        """RESHAPE to (1, elements), the new shape as a constant input."""
        shape = np.array([1, x.values.size], dtype=np.int32)
        name = self._layer_name("reshape")
        new_shape = self._tensor(TensorSpec(f"{name}_shape", np.int32, (2,), data=shape))
        out = self._activation(
            f"{name}_out", x.values.reshape(tuple(shape)), *self._quantization(x)
        )
        self.operators.append(OperatorSpec("RESHAPE", [x.index, new_shape], [out.index]))
        return out

    def fully_connected(self, x: Activation, units: int, activation: str) -> Activation:
        """FULLY_CONNECTED of a (1, features) input, per-tensor weights."""
        features = x.shape[1]
        name = self._layer_name("fully_connected")
        real = self.rng.normal(0.0, math.sqrt(2.0 / features), size=(units, features))
        weights, float_weights = self._weights(f"{name}_weights", real, None)
        weight_scales = np.asarray(self.tensors[weights].scales, dtype=np.float32)
        input_scale, _ = self._quantization(x)
        bias, float_bias = self._bias(f"{name}_bias", units, input_scale, weight_scales)
        out = self._output("fully_connected", x.values @ float_weights.T + float_bias, activation)
        self.operators.append(
            OperatorSpec(
                "FULLY_CONNECTED",
                [x.index, weights, bias],
                [out.index],
                "FullyConnectedOptions",
                {"FusedActivationFunction": ACTIVATIONS[activation]},
            )
        )
        return out

    def softmax(self, x: Activation) -> Activation:
        """SOFTMAX (beta 1) over the last axis."""
        exponentials = np.exp(x.values - x.values.max(axis=-1, keepdims=True))
        values = exponentials / exponentials.sum(axis=-1, keepdims=True)
        out = self._activation(f"{self._layer_name('softmax')}_out", values, SOFTMAX_SCALE, -128)
        self.operators.append(
            OperatorSpec("SOFTMAX", [x.index], [out.index], "SoftmaxOptions", {"Beta": 1.0})
        )
        return out

    def finish(self, output: Activation, every_activation: bool = False) -> bytes:
        """The flatbuffer, with `output` named "output" and the model's only output (or, with
        `every_activation`, followed by every other activation, to inspect them)."""
        self.tensors[output.index].name = "output"
        outputs = [output.index]
        if every_activation:
            outputs += [a.index for a in self.activations[1:] if a.index != output.index]
        return write_model(self.tensors, self.operators, [self.input.index], outputs)
