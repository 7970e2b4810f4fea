"""A fused group writing its output over the input it reads last (issue 22,
`graph.streaming.writable_input`): over an intermediate tensor (U1 and U4) and over the model
input (U4 only: in U1 the input is the caller's), bit for bit against TFLM, also under
ASan/UBSan, with less workspace than the same group with an output buffer of its own
(`--in-place=elementwise` turns writing over an input off)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import tflite

from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import compile_model, plan, workspace_bytes

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]

SAME = tflite.Padding.SAME


def over_model(resize_first: bool, seed: int = 0) -> bytes:
    """[RESIZE_NEAREST_NEIGHBOR 2x ->] s [1, 32, 16, 2] -> CONV_2D 3x3 stride 2 (8 channels,
    RELU) -> DEPTHWISE_CONV_2D 3x3 -> d [1, 16, 8, 8] -> FULLY_CONNECTED (10, flattening d).
    The convolutions' group writes `d` (1,024 B, 64 B a row) over `s` (1,024 B, 32 B a row):
    row y of `d` lands on rows 2y and 2y + 1 of `s`, which is read from row 2y + 4 on by
    then."""
    rng = np.random.default_rng(seed)
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []

    def activation(shape: tuple[int, ...], scale: float, zero_point: int) -> int:
        tensors.append(
            TensorSpec(f"t{len(tensors)}", np.int8, shape, scales=[scale], zero_points=[zero_point])
        )
        return len(tensors) - 1

    def constant(data: np.ndarray, scales: list[float] | None = None, axis: int = 0) -> int:
        quantized = {"scales": scales, "zero_points": [0] * len(scales)} if scales else {}
        name = f"c{len(tensors)}"
        tensors.append(TensorSpec(name, data.dtype, data.shape, data=data, axis=axis, **quantized))
        return len(tensors) - 1

    def weights(shape: tuple[int, ...], channels: int, axis: int) -> tuple[int, int]:
        scales = list(rng.uniform(0.002, 0.02, channels))
        w = constant(rng.integers(-127, 128, size=shape, dtype=np.int8), scales, axis)
        bias = rng.integers(-3000, 3000, size=channels, dtype=np.int32)
        return w, constant(bias, [0.05 * s for s in scales])

    if resize_first:
        x = activation((1, 16, 8, 2), 0.05, -7)
        s = activation((1, 32, 16, 2), 0.05, -7)
        size = constant(np.array([32, 16], dtype=np.int32))
        operators.append(
            OperatorSpec(
                "RESIZE_NEAREST_NEIGHBOR",
                [x, size],
                [s],
                "ResizeNearestNeighborOptions",
                {"AlignCorners": False, "HalfPixelCenters": False},
            )
        )
    else:
        x = s = activation((1, 32, 16, 2), 0.05, -7)
    w, b = weights((8, 3, 3, 2), 8, 0)
    a = activation((1, 16, 8, 8), 0.08, -5)
    fields = {"Padding": SAME, "StrideH": 2, "StrideW": 2, "FusedActivationFunction": 1}
    operators.append(OperatorSpec("CONV_2D", [s, w, b], [a], "Conv2DOptions", fields))
    w, b = weights((1, 3, 3, 8), 8, 3)
    d = activation((1, 16, 8, 8), 0.07, 3)
    fields = {"Padding": SAME, "StrideH": 1, "StrideW": 1, "DepthMultiplier": 1}
    operators.append(
        OperatorSpec("DEPTHWISE_CONV_2D", [a, w, b], [d], "DepthwiseConv2DOptions", fields)
    )
    w = constant(rng.integers(-127, 128, size=(10, 1024), dtype=np.int8), [0.004])
    b = constant(rng.integers(-500, 500, size=10, dtype=np.int32), [0.07 * 0.004])
    y = activation((1, 10), 0.2, 0)
    operators.append(OperatorSpec("FULLY_CONNECTED", [d, w, b], [y], "FullyConnectedOptions", {}))
    return write_model(tensors, operators, [x], [y])


def _plan(model: Path, directory: Path, workspace_io: bool, *flags: str) -> dict:
    return plan(model, directory, workspace_io, flags)


def _workspace(report: dict) -> int:
    return workspace_bytes(report)


def _fused(report: dict) -> list[str]:
    return [operator["name"] for operator in report["operators"] if operator.get("fused")]


@pytest.mark.parametrize(
    ("resize_first", "workspace_io", "sanitize", "expected"),
    [
        # s (1,024 B) and conv's three rows of `a` (192 B), without `d`'s 1,024 B beside them
        (True, False, True, 1024 + 192),
        # the resize's x (256 B) and s set the peak now
        (True, True, False, 256 + 1024),
        # the model input is s
        (False, True, True, 1024 + 192),
    ],
    ids=["intermediate-U1", "intermediate-U4", "model-input-U4"],
)
def test_group_written_over_its_input_matches_tflm(
    tmp_path: Path, resize_first: bool, workspace_io: bool, sanitize: bool, expected: int
) -> None:
    data = over_model(resize_first)
    model = tmp_path / "over.tflite"
    model.write_bytes(data)
    over = _plan(model, tmp_path / "over", workspace_io)
    apart = _plan(model, tmp_path / "apart", workspace_io, "--in-place=elementwise")
    first = int(resize_first)
    assert _fused(over) == [f"fused_conv_2d_{first}__depthwise_conv_2d_{first + 1}"]
    assert _workspace(over) == expected
    # With an output of its own the group would hold s, 192 B and d (2,240 B): not applied,
    # the unfused convolution's s and a set the peak.
    assert _fused(apart) == [] and _workspace(apart) == 2048
    compiled = compile_model(model, tmp_path / "c", workspace_io=workspace_io, sanitize=sanitize)
    tflm.compare(compiled, data, range(3))


def _written_over(report: dict) -> list[str | None]:
    return [op["fused"]["written_over"] for op in report["operators"] if op.get("fused")]


def test_the_callers_input_is_never_written_over(tmp_path: Path) -> None:
    """U1: the model input is the caller's buffer, so no group writes over it; U4: the input
    is the workspace's, and the report names it."""
    model = tmp_path / "over.tflite"
    model.write_bytes(over_model(resize_first=False))
    assert all(over is None for over in _written_over(_plan(model, tmp_path / "u1", False)))
    assert _written_over(_plan(model, tmp_path / "u4", True)) == ["t0"]
    resized = tmp_path / "resized.tflite"
    resized.write_bytes(over_model(resize_first=True))
    assert _written_over(_plan(resized, tmp_path / "r1", False)) == ["t1"]
