"""Writes a .tflite chain that fused row streaming runs as one group (issue 22): CONV_2D
(stride 2, SAME) -> DEPTHWISE_CONV_2D (dilation 2, depth multiplier 2) -> CONV_2D 1x1 ->
MAX_POOL_2D (VALID) -> DEPTHWISE_CONV_2D (stride 2, VALID) -> AVERAGE_POOL_2D over the whole
input (the global reducer). Usage: python streamed_chain.py OUT.tflite [SEED] [HEIGHT]"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tflite

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

SAME, VALID = tflite.Padding.SAME, tflite.Padding.VALID


def _out(size: int, kernel: int, stride: int, dilation: int, padding: int) -> int:
    effective = (kernel - 1) * dilation + 1
    return (
        (size + stride - 1) // stride if padding == SAME else (size + stride - effective) // stride
    )


def chain_model(seed: int = 0, height: int = 40, width: int = 9, global_pool: bool = True) -> bytes:
    rng = np.random.default_rng(seed)
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []

    def activation(shape: tuple[int, ...], scale: float, zero_point: int) -> int:
        tensors.append(
            TensorSpec(f"t{len(tensors)}", np.int8, shape, scales=[scale], zero_points=[zero_point])
        )
        return len(tensors) - 1

    def conv(
        source: int,
        shape: tuple[int, ...],
        out_channels: int,
        kernel: int,
        stride: int,
        dilation: int,
        padding: int,
        depthwise: bool,
        multiplier: int = 1,
    ) -> tuple[int, tuple[int, ...]]:
        _, h, w, c = shape
        out_c = c * multiplier if depthwise else out_channels
        filter_shape = (1, kernel, kernel, out_c) if depthwise else (out_c, kernel, kernel, c)
        scales = list(rng.uniform(0.002, 0.02, out_c))
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
        tensors.append(
            TensorSpec(
                f"b{len(tensors)}",
                np.int32,
                (out_c,),
                data=rng.integers(-3000, 3000, size=out_c, dtype=np.int32),
                scales=[0.05 * s for s in scales],
            )
        )
        bias = len(tensors) - 1
        out_shape = (
            1,
            _out(h, kernel, stride, dilation, padding),
            _out(w, kernel, stride, dilation, padding),
            out_c,
        )
        output = activation(out_shape, float(rng.uniform(0.05, 0.1)), int(rng.integers(-10, 10)))
        fields = {
            "Padding": padding,
            "StrideH": stride,
            "StrideW": stride,
            "FusedActivationFunction": 1,
            "DilationHFactor": dilation,
            "DilationWFactor": dilation,
        }
        if depthwise:
            fields["DepthMultiplier"] = multiplier
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
        return output, out_shape

    def pool(
        kind: str,
        source: int,
        shape: tuple[int, ...],
        filter_: tuple[int, int],
        stride: int,
        padding: int,
    ) -> tuple[int, tuple[int, ...]]:
        _, h, w, c = shape
        out_shape = (
            1,
            _out(h, filter_[0], stride, 1, padding),
            _out(w, filter_[1], stride, 1, padding),
            c,
        )
        spec = tensors[source]
        output = activation(out_shape, spec.scales[0], spec.zero_points[0])  # type: ignore[index]
        fields = {
            "Padding": padding,
            "StrideH": stride,
            "StrideW": stride,
            "FilterHeight": filter_[0],
            "FilterWidth": filter_[1],
            "FusedActivationFunction": 0,
        }
        operators.append(OperatorSpec(kind, [source], [output], "Pool2DOptions", fields))
        return output, out_shape

    shape: tuple[int, ...] = (1, height, width, 3)
    x = activation(shape, 0.05, -7)
    t, shape = conv(x, shape, 8, 3, 2, 1, SAME, False)
    t, shape = conv(t, shape, 0, 3, 1, 2, SAME, True, multiplier=2)
    t, shape = conv(t, shape, 8, 1, 1, 1, VALID, False)
    t, shape = pool("MAX_POOL_2D", t, shape, (2, 2), 1, VALID)
    t, shape = conv(t, shape, 0, 3, 2, 1, VALID, True)
    if global_pool:
        t, shape = pool("AVERAGE_POOL_2D", t, shape, (shape[1], shape[2]), 1, VALID)
    return write_model(tensors, operators, [x], [t])


if __name__ == "__main__":
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    height = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    Path(sys.argv[1]).write_bytes(chain_model(seed, height))
