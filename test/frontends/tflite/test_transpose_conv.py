"""TRANSPOSE_CONV against TensorFlow Lite Micro (int8 and int16 bit for bit, float32 within
1e-5): strides 1 to 3, SAME and VALID padding, filters larger and smaller than the stride, with
and without bias, per-channel and per-tensor int8 filters and fused activations; int16 (16x8)
with int64 biases beyond int32 and int16 biases; on models written with `tflite_writer`."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec
from usmp_dialect.validation.host import compile_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
oracle = load_file(Path(__file__).parent / "tflm_oracle.py")

SAME, VALID = 0, 1
ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}


def _output_size(size: int, filter_size: int, stride: int, padding: int) -> int:
    return size * stride if padding == SAME else (size - 1) * stride + filter_size


def transpose_conv(
    dtype: type,
    input_shape: tuple[int, int, int, int],
    filter_hw: tuple[int, int],
    out_channels: int,
    stride: tuple[int, int],
    padding: int,
    bias: bool = True,
    per_channel: bool = True,
    activation: str = "NONE",
    seed: int = 0,
    bias_dtype: type = np.int64,
) -> oracle.ModelSpec:
    """A TRANSPOSE_CONV model; int16 (16x8) takes `bias_dtype`, int64 or int16."""
    rng = np.random.default_rng(seed)
    batches, height, width, channels = input_shape
    out_shape = (
        batches,
        _output_size(height, filter_hw[0], stride[0], padding),
        _output_size(width, filter_hw[1], stride[1], padding),
        out_channels,
    )
    filter_shape = (out_channels, *filter_hw, channels)
    if dtype in (np.int8, np.int16):
        scales = list(rng.uniform(0.002, 0.02, out_channels)) if per_channel else [0.01]
        weights = rng.integers(-127, 128, size=filter_shape, dtype=np.int8)
        # 16x8: zero points 0, an int16 input covering [-32, 32)
        x_quant, y_quant = ([0.05], [-7]), ([0.15], [5])
        if dtype == np.int16:
            x_quant, y_quant = ([1 / 1024], [0]), ([0.02], [0])
        tensors = [
            TensorSpec("shape", np.int32, (4,), np.array(out_shape, np.int32)),
            TensorSpec("w", np.int8, filter_shape, weights, scales, [0] * len(scales)),
            TensorSpec("x", dtype, input_shape, None, *x_quant),
            TensorSpec("y", dtype, out_shape, None, *y_quant),
        ]
        bias_type: type = np.int32 if dtype == np.int8 else bias_dtype
        bias_values = rng.integers(-3000, 3000, size=out_channels).astype(bias_type)
        if bias_type == np.int64:  # beyond int32: a 32-bit sum would wrap
            bias_values[::2] *= 3_000_000
        bias_spec = TensorSpec(
            "b",
            bias_type,
            (out_channels,),
            bias_values,
            [x_quant[0][0] * s for s in scales],
            [0] * len(scales),
        )
    else:
        weights = rng.standard_normal(filter_shape).astype(np.float32)
        tensors = [
            TensorSpec("shape", np.int32, (4,), np.array(out_shape, np.int32)),
            TensorSpec("w", np.float32, filter_shape, weights),
            TensorSpec("x", np.float32, input_shape),
            TensorSpec("y", np.float32, out_shape),
        ]
        bias_spec = TensorSpec(
            "b", np.float32, (out_channels,), rng.standard_normal(out_channels).astype(np.float32)
        )
    inputs = [0, 1, 2]
    if bias:
        tensors.append(bias_spec)
        inputs.append(4)
    fields = {
        "Padding": padding,
        "StrideH": stride[0],
        "StrideW": stride[1],
        "FusedActivationFunction": ACTIVATIONS[activation],
    }
    op = OperatorSpec("TRANSPOSE_CONV", inputs, [3], "TransposeConvOptions", fields)
    return oracle.ModelSpec(tensors, [op], [2], [3])


# name: (input shape, filter (H, W), output channels, stride, padding, options)
CASES: dict[str, tuple] = {
    "s2_same_3x3": ((1, 4, 5, 3), (3, 3), 4, (2, 2), SAME, {}),
    "s2_valid_3x3": ((1, 4, 4, 2), (3, 3), 3, (2, 2), VALID, {}),
    "s1_same_3x3": ((2, 5, 4, 3), (3, 3), 2, (1, 1), SAME, {}),
    "s3_valid_2x4": ((1, 3, 2, 2), (2, 4), 5, (3, 2), VALID, {}),
    "s2_same_4x4_nobias": ((1, 3, 3, 4), (4, 4), 3, (2, 2), SAME, {"bias": False}),
    "s2_same_1x1_relu6": ((1, 3, 4, 3), (1, 1), 2, (2, 2), SAME, {"activation": "RELU6"}),
    "s2_same_2x2_relu": ((1, 4, 4, 8), (2, 2), 8, (2, 2), SAME, {"activation": "RELU"}),
}


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_transpose_conv_matches_tflite_micro(tmp_path: Path, dtype: type) -> None:
    parts = {
        name: transpose_conv(dtype, *case[:5], seed=k, **case[5])
        for k, (name, case) in enumerate(CASES.items())
    }
    if dtype == np.int8:
        parts["per_tensor"] = transpose_conv(
            dtype, (1, 3, 3, 2), (3, 3), 3, (2, 2), SAME, per_channel=False, seed=9
        )
    oracle.assert_matches(oracle.merge(parts), tmp_path, trials=3)


@needs_gcc
@needs_tflm
def test_int16_transpose_conv_matches_tflite_micro(tmp_path: Path) -> None:
    """16x8 TRANSPOSE_CONV: the int8 cases on int16 with int64 biases (every other one beyond
    int32), an int16 bias and no bias, under ASan/UBSan."""
    parts = {
        name: transpose_conv(np.int16, *case[:5], seed=k, **case[5])
        for k, (name, case) in enumerate(CASES.items())
    }
    parts["int16_bias"] = transpose_conv(
        np.int16, (1, 3, 4, 3), (3, 3), 4, (2, 2), SAME, seed=11, bias_dtype=np.int16
    )
    parts["per_tensor_relu"] = transpose_conv(
        np.int16, (1, 3, 3, 2), (3, 3), 3, (2, 1), VALID, per_channel=False, activation="RELU"
    )
    oracle.assert_matches(oracle.merge(parts), tmp_path, trials=3, sanitize=True)


@needs_gcc
@needs_tflm
def test_transpose_conv_under_the_sanitizers(tmp_path: Path) -> None:
    model = oracle.merge(
        {
            "int8": transpose_conv(np.int8, (1, 4, 5, 3), (3, 3), 4, (2, 2), SAME, seed=3),
            "float": transpose_conv(np.float32, (1, 3, 3, 2), (3, 3), 2, (2, 2), VALID, seed=4),
        }
    )
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    for seed in range(2):
        inputs = tflm.random_inputs(compiled.inputs, seed)
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(ours, tflm.run(model, inputs, len(ours)))


def test_a_mismatched_output_shape_input_is_refused() -> None:
    spec = transpose_conv(np.float32, (1, 3, 3, 2), (3, 3), 2, (2, 2), SAME)
    spec.tensors[0] = TensorSpec("shape", np.int32, (4,), np.array([1, 5, 6, 2], np.int32))
    with pytest.raises(ModelImportError, match=r"the output shape input \[1, 5, 6, 2\]"):
        import_tflite(spec.model(), "m.tflite")
