"""Writes .tflite models with explicit PAD / PADV2 operators before windowed operators (issue 22:
a PAD folds into its reader's window), as Keras' ZeroPadding2D and PyTorch exports write them.

`padded_model(...)`: x -> [CONV_2D 1x1] -> PAD|PADV2 -> CONV_2D | DEPTHWISE_CONV_2D |
MAX_POOL_2D -> [CONV_2D 1x1]; `pre`/`post` add the pointwise layers around it (so that fused
row streaming has a chain to run through the fold). Usage: python padded_chain.py OUT.tflite
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tflite

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

SAME, VALID = tflite.Padding.SAME, tflite.Padding.VALID


def _out(size: int, kernel: int, stride: int, padding: int) -> int:
    if padding == SAME:
        return (size + stride - 1) // stride
    return (size - kernel) // stride + 1


def padded_model(
    consumer: str = "DEPTHWISE_CONV_2D",
    pads: tuple[tuple[int, int], tuple[int, int]] = ((0, 1), (0, 1)),
    stride: int = 2,
    padding: int = VALID,
    dtype: type = np.int8,
    opcode: str = "PAD",
    value: float | None = None,
    zero_point: int = -7,
    size: tuple[int, int, int] = (12, 10, 4),
    pre: bool = False,
    post: bool = False,
    seed: int = 0,
) -> bytes:
    rng = np.random.default_rng(seed)
    floating = dtype == np.float32
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []

    def add(spec: TensorSpec) -> int:
        tensors.append(spec)
        return len(tensors) - 1

    def activation(shape: tuple[int, ...], scale: float, zp: int) -> int:
        name = f"t{len(tensors)}"
        if floating:
            return add(TensorSpec(name, np.float32, shape))
        if dtype == np.int16:
            zp = 0
        return add(TensorSpec(name, dtype, shape, scales=[scale], zero_points=[zp]))

    def conv(
        source: int, out_channels: int, kernel: int, stride_: int, padding_: int, depthwise: bool
    ) -> int:
        _, h, w, c = tensors[source].shape
        out_c = c if depthwise else out_channels
        shape = (1, kernel, kernel, out_c) if depthwise else (out_c, kernel, kernel, c)
        if floating:
            weights = add(
                TensorSpec(
                    f"w{len(tensors)}",
                    np.float32,
                    shape,
                    data=rng.standard_normal(shape).astype(np.float32),
                )
            )
            bias = add(
                TensorSpec(
                    f"b{len(tensors)}",
                    np.float32,
                    (out_c,),
                    data=rng.standard_normal(out_c).astype(np.float32),
                )
            )
        else:
            scales = list(rng.uniform(0.002, 0.02, out_c))
            weights = add(
                TensorSpec(
                    f"w{len(tensors)}",
                    np.int8,
                    shape,
                    data=rng.integers(-127, 128, size=shape, dtype=np.int8),
                    scales=scales,
                    zero_points=[0] * out_c,
                    axis=3 if depthwise else 0,
                )
            )
            bias_type = np.int64 if dtype == np.int16 else np.int32
            bias = add(
                TensorSpec(
                    f"b{len(tensors)}",
                    bias_type,
                    (out_c,),
                    data=rng.integers(-3000, 3000, size=out_c).astype(bias_type),
                    scales=[0.05 * s for s in scales],
                    zero_points=[0] * out_c,
                )
            )
        out_shape = (
            1,
            _out(h, kernel, stride_, padding_),
            _out(w, kernel, stride_, padding_),
            out_c,
        )
        output = activation(out_shape, float(rng.uniform(0.05, 0.1)), int(rng.integers(-10, 10)))
        fields = {
            "Padding": padding_,
            "StrideH": stride_,
            "StrideW": stride_,
            "FusedActivationFunction": 1,
            "DilationHFactor": 1,
            "DilationWFactor": 1,
        }
        if depthwise:
            fields["DepthMultiplier"] = 1
        operators.append(
            OperatorSpec(
                "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D",
                [source, weights, bias],
                [output],
                "DepthwiseConv2DOptions" if depthwise else "Conv2DOptions",
                fields,
            )
        )
        return output

    height, width, channels = size
    x = activation((1, height, width, channels), 0.05, zero_point)
    source = conv(x, channels, 1, 1, VALID, False) if pre else x
    if pre:  # the PAD pads what the pointwise layer wrote: its own quantisation
        spec = tensors[source]
        tensors[source] = TensorSpec(
            spec.name, spec.dtype, spec.shape, scales=spec.scales, zero_points=[zero_point]
        )
        if dtype == np.int16 or floating:
            tensors[source] = spec
    _, h, w, c = tensors[source].shape
    paddings = add(
        TensorSpec("paddings", np.int32, (4, 2), data=np.array([(0, 0), *pads, (0, 0)], np.int32))
    )
    padded_shape = (1, h + sum(pads[0]), w + sum(pads[1]), c)
    spec = tensors[source]
    padded = add(
        TensorSpec(
            "padded", spec.dtype, padded_shape, scales=spec.scales, zero_points=spec.zero_points
        )
    )
    inputs = [source, paddings]
    if opcode == "PADV2":
        constant = np.array([value], dtype=dtype)
        inputs.append(
            add(
                TensorSpec(
                    "pad_value",
                    dtype,
                    (1,),
                    data=constant,
                    scales=spec.scales,
                    zero_points=spec.zero_points,
                )
            )
        )
    operators.append(OperatorSpec(opcode, inputs, [padded]))
    if consumer == "MAX_POOL_2D":
        out_shape = (
            1,
            _out(padded_shape[1], 3, stride, padding),
            _out(padded_shape[2], 3, stride, padding),
            c,
        )
        y = add(
            TensorSpec(
                "pooled", spec.dtype, out_shape, scales=spec.scales, zero_points=spec.zero_points
            )
        )
        fields = {
            "Padding": padding,
            "StrideH": stride,
            "StrideW": stride,
            "FilterHeight": 3,
            "FilterWidth": 3,
            "FusedActivationFunction": 0,
        }
        operators.append(OperatorSpec("MAX_POOL_2D", [padded], [y], "Pool2DOptions", fields))
    else:
        y = conv(padded, 6, 3, stride, padding, consumer == "DEPTHWISE_CONV_2D")
    if post:
        y = conv(y, 5, 1, 1, VALID, False)
    return write_model(tensors, operators, [x], [y])


if __name__ == "__main__":
    Path(sys.argv[1]).write_bytes(padded_model(pre=True, post=True, size=(16, 10, 4)))
