"""One int8 model and one float32 model chaining operators of every new family (TRANSPOSE_CONV,
HARD_SWISH, RESIZE_BILINEAR, PRELU, MAXIMUM, SQUARED_DIFFERENCE, DEPTH_TO_SPACE, MIRROR_PAD,
RESIZE_NEAREST_NEIGHBOR, LEAKY_RELU, GATHER, REDUCE_MIN, plus LOG_SOFTMAX and DIV in float),
compiled with the inputs and outputs planned inside the workspace and run under ASan and UBSan
against TensorFlow Lite Micro: int8 byte for byte, float32 within 1e-5."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import compile_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


def _model(dtype: type) -> bytes:
    rng = np.random.default_rng(11)
    quantized = dtype == np.int8
    tensors: list[TensorSpec] = []

    def tensor(
        shape: tuple[int, ...], quant: tuple[float, int], data: np.ndarray | None = None
    ) -> int:
        if quantized:
            tensors.append(
                TensorSpec(f"t{len(tensors)}", dtype, shape, data, [quant[0]], [quant[1]])
            )
        else:
            tensors.append(TensorSpec(f"t{len(tensors)}", dtype, shape, data))
        return len(tensors) - 1

    def int32(values: list) -> int:
        array = np.array(values, dtype=np.int32)
        tensors.append(TensorSpec(f"t{len(tensors)}", np.int32, array.shape, array))
        return len(tensors) - 1

    if quantized:
        weights = rng.integers(-127, 128, size=(8, 3, 3, 4), dtype=np.int8)
        scales = list(rng.uniform(0.003, 0.01, 8))
        tensors.append(TensorSpec("w", np.int8, weights.shape, weights, scales, [0] * 8))
        bias = rng.integers(-500, 500, size=8).astype(np.int32)
        tensors.append(TensorSpec("b", np.int32, (8,), bias, [0.05 * s for s in scales], [0] * 8))
        alpha = rng.integers(-128, 128, size=(1, 1, 8), dtype=np.int8)
    else:
        weights = (rng.standard_normal((8, 3, 3, 4)) * 0.3).astype(np.float32)
        tensors.append(TensorSpec("w", dtype, weights.shape, weights))
        tensors.append(TensorSpec("b", dtype, (8,), rng.standard_normal(8).astype(np.float32)))
        alpha = rng.uniform(-0.5, 0.5, (1, 1, 8)).astype(np.float32)
    w, b = 0, 1
    x = tensor((1, 3, 3, 4), (0.05, -2))
    shape = int32([1, 6, 6, 8])
    up = tensor((1, 6, 6, 8), (0.1, 3))
    swish = tensor((1, 6, 6, 8), (0.06, -40))
    size = int32([9, 9])
    resized = tensor((1, 9, 9, 8), (0.06, -40))
    alphas = tensor((1, 1, 8), (0.004, 0), alpha)
    prelu = tensor((1, 9, 9, 8), (0.05, 10))
    other = tensor((1, 9, 9, 8), (0.05, 10))
    maximum = tensor((1, 9, 9, 8), (0.05, 10))
    square = tensor((1, 9, 9, 8), (0.2, -128))
    d2s = tensor((1, 18, 18, 2), (0.2, -128))
    pads = int32([[0, 0], [2, 1], [1, 2], [0, 0]])
    mirrored = tensor((1, 21, 21, 2), (0.2, -128))
    nn_size = int32([7, 7])
    nearest = tensor((1, 7, 7, 2), (0.2, -128))
    leaky = tensor((1, 7, 7, 2), (0.1, -100))
    indices = int32([6, 0, 3])
    gathered = tensor((1, 3, 7, 2), (0.1, -100))
    axes = int32([1, 2])
    smallest = tensor((1, 1, 1, 2), (0.1, -100))
    operators = [
        OperatorSpec("TRANSPOSE_CONV", [shape, w, x, b], [up], "TransposeConvOptions",
                     {"Padding": 0, "StrideH": 2, "StrideW": 2}),
        OperatorSpec("HARD_SWISH", [up], [swish]),
        OperatorSpec("RESIZE_BILINEAR", [swish, size], [resized], "ResizeBilinearOptions",
                     {"HalfPixelCenters": True}),
        OperatorSpec("PRELU", [resized, alphas], [prelu]),
        OperatorSpec("MAXIMUM", [prelu, other], [maximum]),
        OperatorSpec("SQUARED_DIFFERENCE", [maximum, prelu], [square]),
        OperatorSpec("DEPTH_TO_SPACE", [square], [d2s], "DepthToSpaceOptions", {"BlockSize": 2}),
        OperatorSpec("MIRROR_PAD", [d2s, pads], [mirrored], "MirrorPadOptions", {"Mode": 1}),
        OperatorSpec("RESIZE_NEAREST_NEIGHBOR", [mirrored, nn_size], [nearest],
                     "ResizeNearestNeighborOptions", {"AlignCorners": True}),
        OperatorSpec("LEAKY_RELU", [nearest], [leaky], "LeakyReluOptions", {"Alpha": 0.2}),
        OperatorSpec("GATHER", [leaky, indices], [gathered], "GatherOptions", {"Axis": 1}),
        OperatorSpec("REDUCE_MIN", [gathered, axes], [smallest], "ReducerOptions",
                     {"KeepDims": True}),
    ]  # fmt: skip
    outputs = [smallest, gathered]
    if not quantized:
        denominator = tensor((1, 1, 1, 2), (0.0, 0), np.array([[[[1.5, -0.25]]]], np.float32))
        divided = tensor((1, 3, 7, 2), (0.0, 0))
        logs = tensor((1, 3, 7, 2), (0.0, 0))
        operators += [
            OperatorSpec("DIV", [gathered, denominator], [divided]),
            OperatorSpec("LOG_SOFTMAX", [divided], [logs]),
        ]
        outputs.append(logs)
    return write_model(tensors, operators, [x, other], outputs)


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_a_model_of_the_new_operators_under_the_sanitizers(tmp_path: Path, dtype: type) -> None:
    model = _model(dtype)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    for seed in range(3):
        inputs = tflm.random_inputs(compiled.inputs, seed)
        ours, _ = compiled.run(inputs)
        names = [port.name for port in compiled.outputs]
        tflm.assert_matches(ours, tflm.run(model, inputs, len(ours)), names)
