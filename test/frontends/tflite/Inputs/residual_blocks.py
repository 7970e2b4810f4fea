"""Writes a .tflite model with a residual block that fused row streaming runs as one group
(issue 22): a stem CONV_2D, then one block, then optionally a global AVERAGE_POOL_2D.

Blocks: `basic` (ResNet: two 3x3 convolutions and an ADD with RELU of the stem's output),
`stride2` (ResNet's downsampling block: a 3x3 stride-2 convolution and a 3x3 one on one side,
a 1x1 stride-2 shortcut on the other, ADD), `inverted` (MobileNetV2: 1x1 expansion, 3x3
depthwise, 1x1 projection, ADD of the block input), `mul` (a 3x3 convolution and a 3x3
depthwise convolution of one tensor, multiplied), `activations` (one-row operators inside a
chain: RELU, a requantising QUANTIZE, LOGISTIC and RELU6 between convolutions). Usage:
python residual_blocks.py OUT.tflite [BLOCK] [SEED] [HEIGHT]"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tflite

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

SAME, VALID = tflite.Padding.SAME, tflite.Padding.VALID
BLOCKS = ("basic", "stride2", "inverted", "mul", "activations")
RELU = 1


def residual_model(
    block: str = "basic", seed: int = 0, height: int = 24, width: int = 7, global_pool: bool = True
) -> bytes:
    rng = np.random.default_rng(seed)
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []
    shapes: dict[int, tuple[int, ...]] = {}

    def activation(shape: tuple[int, ...], quantization: tuple[float, int] | None = None) -> int:
        scale, zero_point = float(rng.uniform(0.03, 0.08)), int(rng.integers(-20, 20))
        if quantization is not None:
            scale, zero_point = quantization
        tensors.append(
            TensorSpec(f"t{len(tensors)}", np.int8, shape, scales=[scale], zero_points=[zero_point])
        )
        shapes[len(tensors) - 1] = shape
        return len(tensors) - 1

    def conv(
        source: int,
        out_channels: int,
        kernel: int,
        stride: int = 1,
        depthwise: bool = False,
        relu: bool = True,
    ) -> int:
        _, h, w, c = shapes[source]
        out_c = c if depthwise else out_channels
        filter_shape = (1, kernel, kernel, out_c) if depthwise else (out_c, kernel, kernel, c)
        scales = list(rng.uniform(0.004, 0.02, out_c))
        tensors.append(
            TensorSpec(
                f"w{len(tensors)}",
                np.int8,
                filter_shape,
                data=rng.integers(-127, 128, size=filter_shape, dtype=np.int8),
                scales=scales,
                zero_points=[0] * out_c,
                axis=3 if depthwise else 0,
            )
        )
        weights = len(tensors) - 1
        in_scale = tensors[source].scales[0]  # type: ignore[index]
        tensors.append(
            TensorSpec(
                f"b{len(tensors)}",
                np.int32,
                (out_c,),
                data=rng.integers(-2000, 2000, size=out_c, dtype=np.int32),
                scales=[in_scale * s for s in scales],
            )
        )
        bias = len(tensors) - 1
        output = activation((1, (h + stride - 1) // stride, (w + stride - 1) // stride, out_c))
        fields = {
            "Padding": SAME,
            "StrideH": stride,
            "StrideW": stride,
            "FusedActivationFunction": RELU if relu else 0,
            "DilationHFactor": 1,
            "DilationWFactor": 1,
        }
        if depthwise:
            fields["DepthMultiplier"] = 1
            operators.append(
                OperatorSpec(
                    "DEPTHWISE_CONV_2D",
                    [source, weights, bias],
                    [output],
                    "DepthwiseConv2DOptions",
                    fields,
                )
            )
        else:
            operators.append(
                OperatorSpec("CONV_2D", [source, weights, bias], [output], "Conv2DOptions", fields)
            )
        return output

    def binary(opcode: str, lhs: int, rhs: int, relu: bool) -> int:
        assert shapes[lhs] == shapes[rhs]
        output = activation(shapes[lhs])
        options = "AddOptions" if opcode == "ADD" else "MulOptions"
        fields = {"FusedActivationFunction": RELU if relu else 0}
        operators.append(OperatorSpec(opcode, [lhs, rhs], [output], options, fields))
        return output

    def unary(opcode: str, source: int, quantization: tuple[float, int] | None = None) -> int:
        output = activation(shapes[source], quantization)
        operators.append(OperatorSpec(opcode, [source], [output]))
        return output

    def same(source: int) -> tuple[float, int]:
        return tensors[source].scales[0], tensors[source].zero_points[0]  # type: ignore[index]

    x = activation((1, height, width, 3))
    stem = conv(x, 8, 3)
    if block == "basic":
        main = conv(conv(stem, 8, 3), 8, 3, relu=False)
        t = binary("ADD", stem, main, relu=True)
    elif block == "stride2":
        main = conv(conv(stem, 16, 3, stride=2), 16, 3, relu=False)
        shortcut = conv(stem, 16, 1, stride=2, relu=False)
        t = binary("ADD", shortcut, main, relu=True)
    elif block == "inverted":
        expanded = conv(stem, 24, 1)
        filtered = conv(expanded, 0, 3, depthwise=True)
        projected = conv(filtered, 8, 1, relu=False)
        t = binary("ADD", stem, projected, relu=False)
    elif block == "mul":
        t = binary("MUL", conv(stem, 8, 3), conv(stem, 0, 3, depthwise=True), relu=False)
    elif block == "activations":
        rectified = unary("RELU", conv(stem, 8, 3, relu=False), same(stem))
        requantised = unary("QUANTIZE", conv(rectified, 8, 3, relu=False))
        squashed = unary("LOGISTIC", requantised, (1 / 256, -128))
        filtered = conv(squashed, 0, 3, depthwise=True, relu=False)
        t = unary("RELU6", filtered, same(filtered))
    else:
        raise ValueError(f"unknown block {block!r}")
    if global_pool:
        _, h, w, c = shapes[t]
        spec = tensors[t]
        pooled = len(tensors)
        tensors.append(
            TensorSpec(
                f"t{pooled}",
                np.int8,
                (1, 1, 1, c),
                scales=spec.scales,
                zero_points=spec.zero_points,
            )
        )
        fields = {
            "Padding": VALID,
            "StrideH": 1,
            "StrideW": 1,
            "FilterHeight": h,
            "FilterWidth": w,
            "FusedActivationFunction": 0,
        }
        operators.append(OperatorSpec("AVERAGE_POOL_2D", [t], [pooled], "Pool2DOptions", fields))
        t = pooled
    return write_model(tensors, operators, [x], [t])


if __name__ == "__main__":
    block = sys.argv[2] if len(sys.argv) > 2 else "basic"
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    height = int(sys.argv[4]) if len(sys.argv) > 4 else 24
    Path(sys.argv[1]).write_bytes(residual_model(block, seed, height))
