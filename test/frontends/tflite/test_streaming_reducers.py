"""Fused row streaming ending in a global reducer other than the int8 average pool (issue 22):
MEAN over height and width (int8 and float32, with and without `keep_dims`) and float32
AVERAGE_POOL_2D over the whole input, against TFLM (int8 bit for bit, float32 to 1e-5; also
under ASan/UBSan)."""

from __future__ import annotations

import shutil
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

SAME = tflite.Padding.SAME

# With every in-place operator on, the lowest peak of these small models writes the
# depthwise convolution's output over the input instead (`graph.streaming.writable_input`):
# the reducer's sums then cost more than they save. Elementwise in place only keeps the
# reducer inside the group, which is what these tests check.
REDUCER_IN_GROUP = ("--in-place=elementwise",)


def reducer_model(
    dtype: type, reducer: str, keep_dims: bool = True, seed: int = 0, height: int = 24
) -> bytes:
    """input [1, height, 7, 3] -> CONV_2D 3x3 stride 2 (8 channels, RELU) ->
    DEPTHWISE_CONV_2D 3x3 -> `reducer` ("MEAN" or "AVERAGE_POOL_2D" over the whole input)."""
    rng = np.random.default_rng(seed)
    integer = dtype == np.int8
    tensors: list[TensorSpec] = []

    def activation(shape: tuple[int, ...], scale: float, zero_point: int) -> int:
        quantized = {"scales": [scale], "zero_points": [zero_point]} if integer else {}
        tensors.append(TensorSpec(f"t{len(tensors)}", dtype, shape, **quantized))
        return len(tensors) - 1

    def constant(name: str, data: np.ndarray, scales: list[float] | None, axis: int = 0) -> int:
        quantized = {"scales": scales, "zero_points": [0] * len(scales)} if scales else {}
        tensors.append(TensorSpec(name, data.dtype, data.shape, data=data, axis=axis, **quantized))
        return len(tensors) - 1

    def weights(shape: tuple[int, ...], channels: int, axis: int) -> tuple[int, int]:
        if integer:
            scales = list(rng.uniform(0.002, 0.02, channels))
            w = constant("w", rng.integers(-127, 128, size=shape, dtype=np.int8), scales, axis)
            bias = rng.integers(-3000, 3000, size=channels, dtype=np.int32)
            b = constant("b", bias, [0.05 * s for s in scales])
        else:
            w = constant("w", rng.normal(0, 0.3, size=shape).astype(np.float32), None)
            b = constant("b", rng.normal(0, 0.1, size=channels).astype(np.float32), None)
        return w, b

    width = 7
    x = activation((1, height, width, 3), 0.05, -7)
    conv_height, conv_width = (height + 1) // 2, (width + 1) // 2
    w, b = weights((8, 3, 3, 3), 8, 0)
    t = activation((1, conv_height, conv_width, 8), 0.08, -5)
    fields = {"Padding": SAME, "StrideH": 2, "StrideW": 2, "FusedActivationFunction": 1}
    operators = [OperatorSpec("CONV_2D", [x, w, b], [t], "Conv2DOptions", fields)]
    w, b = weights((1, 3, 3, 8), 8, 3)
    d = activation((1, conv_height, conv_width, 8), 0.07, 3)
    fields = {"Padding": SAME, "StrideH": 1, "StrideW": 1, "DepthMultiplier": 1}
    operators.append(
        OperatorSpec("DEPTHWISE_CONV_2D", [t, w, b], [d], "DepthwiseConv2DOptions", fields)
    )
    if reducer == "MEAN":
        axes = constant("axes", np.array([1, 2], dtype=np.int32), None)
        shape = (1, 1, 1, 8) if keep_dims else (1, 8)
        y = activation(shape, 0.03, 2)
        operators.append(
            OperatorSpec("MEAN", [d, axes], [y], "ReducerOptions", {"KeepDims": keep_dims})
        )
    else:
        y = activation((1, 1, 1, 8), 0.07, 3)
        fields = {
            "Padding": tflite.Padding.VALID,
            "StrideH": 1,
            "StrideW": 1,
            "FilterHeight": conv_height,
            "FilterWidth": conv_width,
            "FusedActivationFunction": 3,  # RELU6
        }
        operators.append(OperatorSpec("AVERAGE_POOL_2D", [d], [y], "Pool2DOptions", fields))
    return write_model(tensors, operators, [x], [y])


@pytest.mark.parametrize(
    ("dtype", "reducer", "keep_dims", "sanitize"),
    [
        (np.int8, "MEAN", True, True),
        (np.int8, "MEAN", False, False),
        (np.float32, "MEAN", True, False),
        (np.float32, "MEAN", False, True),
        (np.float32, "AVERAGE_POOL_2D", True, True),
    ],
)
def test_streamed_reducer_matches_tflm(
    tmp_path: Path, dtype: type, reducer: str, keep_dims: bool, sanitize: bool
) -> None:
    data = reducer_model(dtype, reducer, keep_dims)
    model = tmp_path / "reducer.tflite"
    model.write_bytes(data)
    compiled = compile_model(
        model, tmp_path, workspace_io=True, sanitize=sanitize, options=REDUCER_IN_GROUP
    )
    source = "\n".join(path.read_text() for path in tmp_path.glob("*.c"))
    assert "fused_conv_2d_0__" in source
    assert f"__{reducer.lower()}_2" in source  # the reducer is inside the group
    tflm.compare(compiled, data, range(3))


def test_float_reducer_sums_in_the_unfused_order(tmp_path: Path) -> None:
    """The float sums are added rows first, then columns, as the unfused kernels add them:
    the fused output equals the unfused one exactly."""
    data = reducer_model(np.float32, "MEAN", True, seed=3)
    model = tmp_path / "reducer.tflite"
    model.write_bytes(data)
    fused = compile_model(model, tmp_path / "fused", workspace_io=True, options=REDUCER_IN_GROUP)
    assert "__mean_2" in (tmp_path / "fused" / "model.c").read_text()
    unfused = compile_model(model, tmp_path / "unfused", workspace_io=True, options=["--fuse=none"])
    inputs = tflm.random_inputs(fused.inputs, 5)
    (ours,), _ = fused.run(inputs)
    (plain,), _ = unfused.run(inputs)
    assert np.array_equal(ours, plain)
