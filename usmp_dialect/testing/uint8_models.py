"""TFLite models with uint8 at their edges (what the converter writes for
`inference_input_type=tf.uint8` / `inference_output_type=tf.uint8`: QUANTIZE uint8 -> int8,
int8 computation, QUANTIZE int8 -> uint8), written with `tflite_writer`: the builders of
`test/frontends/tflite/test_uint8_io.py` and of the emulated Cortex-M's tests (`test/firmware`)."""

from __future__ import annotations

import numpy as np

from usmp_dialect.testing.tflite_writer import ModelSpec, OperatorSpec, TensorSpec

U8, I8 = np.uint8, np.int8


def quantized(
    name: str, dtype: type, shape: tuple[int, ...], scale: float, zero: int
) -> TensorSpec:
    return TensorSpec(name, dtype, shape, scales=[scale], zero_points=[zero])


def camera_conv() -> ModelSpec:
    """uint8 image -> QUANTIZE int8 -> CONV_2D 3x3 -> QUANTIZE uint8 (the converter's form:
    the int8 zero point is the uint8's minus 128 at the same scale)."""
    rng = np.random.default_rng(1)
    weights = rng.integers(-127, 128, size=(4, 3, 3, 3), dtype=np.int8)
    bias = rng.integers(-3000, 3000, size=4, dtype=np.int32)
    tensors = [
        quantized("image", U8, (1, 6, 6, 3), 1 / 255, 0),
        quantized("image_q", I8, (1, 6, 6, 3), 1 / 255, -128),
        TensorSpec("w", I8, weights.shape, data=weights, scales=[0.01], zero_points=[0]),
        TensorSpec("b", np.int32, (4,), data=bias, scales=[0.01 / 255], zero_points=[0]),
        quantized("conv", I8, (1, 6, 6, 4), 0.02, 5),
        quantized("out", U8, (1, 6, 6, 4), 0.02, 133),
    ]
    fields = {"Padding": 0, "StrideH": 1, "StrideW": 1, "FusedActivationFunction": 1}
    return ModelSpec(
        tensors,
        [
            OperatorSpec("QUANTIZE", [0], [1]),
            OperatorSpec("CONV_2D", [1, 2, 3], [4], "Conv2DOptions", fields),
            OperatorSpec("QUANTIZE", [4], [5]),
        ],
        [0],
        [5],
    )


def camera_streamed() -> ModelSpec:
    """uint8 48x48 image -> QUANTIZE -> CONV_2D -> CONV_2D stride 2 -> QUANTIZE uint8: large
    enough that the two convolutions are streamed in rows (`--fuse=rows`) between the uint8
    QUANTIZEs."""
    rng = np.random.default_rng(3)
    w1 = rng.integers(-127, 128, size=(8, 3, 3, 3), dtype=np.int8)
    w2 = rng.integers(-127, 128, size=(8, 3, 3, 8), dtype=np.int8)
    b1 = rng.integers(-3000, 3000, size=8, dtype=np.int32)
    b2 = rng.integers(-3000, 3000, size=8, dtype=np.int32)
    tensors = [
        quantized("image", U8, (1, 48, 48, 3), 1 / 255, 0),
        quantized("image_q", I8, (1, 48, 48, 3), 1 / 255, -128),
        TensorSpec("w1", I8, w1.shape, data=w1, scales=[0.01], zero_points=[0]),
        TensorSpec("b1", np.int32, (8,), data=b1, scales=[0.01 / 255], zero_points=[0]),
        quantized("c1", I8, (1, 48, 48, 8), 0.02, -5),
        TensorSpec("w2", I8, w2.shape, data=w2, scales=[0.01], zero_points=[0]),
        TensorSpec("b2", np.int32, (8,), data=b2, scales=[0.0002], zero_points=[0]),
        quantized("c2", I8, (1, 24, 24, 8), 0.05, 3),
        quantized("out", U8, (1, 24, 24, 8), 0.05, 131),
    ]
    same = {"Padding": 0, "StrideH": 1, "StrideW": 1, "FusedActivationFunction": 1}
    halved = {"Padding": 0, "StrideH": 2, "StrideW": 2, "FusedActivationFunction": 0}
    return ModelSpec(
        tensors,
        [
            OperatorSpec("QUANTIZE", [0], [1]),
            OperatorSpec("CONV_2D", [1, 2, 3], [4], "Conv2DOptions", same),
            OperatorSpec("CONV_2D", [4, 5, 6], [7], "Conv2DOptions", halved),
            OperatorSpec("QUANTIZE", [7], [8]),
        ],
        [0],
        [8],
    )


def camera_add() -> ModelSpec:
    """Two uint8 inputs requantised to int8 at other scales, added, requantised to uint8."""
    tensors = [
        quantized("a", U8, (2, 3, 7), 0.05, 17),
        quantized("b", U8, (2, 3, 7), 0.013, 250),
        quantized("a_q", I8, (2, 3, 7), 0.04, -3),
        quantized("b_q", I8, (2, 3, 7), 0.02, 9),
        quantized("sum", I8, (2, 3, 7), 0.07, -11),
        quantized("y", U8, (2, 3, 7), 0.03, 101),
    ]
    return ModelSpec(
        tensors,
        [
            OperatorSpec("QUANTIZE", [0], [2]),
            OperatorSpec("QUANTIZE", [1], [3]),
            OperatorSpec("ADD", [2, 3], [4], "AddOptions", {"FusedActivationFunction": 0}),
            OperatorSpec("QUANTIZE", [4], [5]),
        ],
        [0, 1],
        [5],
    )
