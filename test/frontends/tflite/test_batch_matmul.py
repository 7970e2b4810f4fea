"""BATCH_MATMUL against TensorFlow Lite Micro (int8 byte for byte, float32 within 1e-5): ranks
2 to 4, broadcast batch dimensions, `adj_x` / `adj_y`, a constant right-hand side, on models
written with `tflite_writer`."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.testing import tflm
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
oracle = load_file(Path(__file__).parent / "tflm_oracle.py")


def _matmul(
    dtype: type,
    lhs: tuple[int, ...],
    rhs: tuple[int, ...],
    adj_x: bool = False,
    adj_y: bool = False,
    constant_rhs: bool = False,
    seed: int = 0,
) -> oracle.ModelSpec:
    rng = np.random.default_rng(seed)
    a = np.swapaxes(np.zeros(lhs), -1, -2) if adj_x else np.zeros(lhs)
    b = np.swapaxes(np.zeros(rhs), -1, -2) if adj_y else np.zeros(rhs)
    out = np.matmul(a, b).shape
    quantized = dtype == np.int8
    data = None
    if constant_rhs:
        data = (
            rng.integers(-128, 128, size=rhs, dtype=np.int8)
            if quantized
            else rng.standard_normal(rhs).astype(np.float32)
        )

    def spec(
        name: str,
        shape: tuple[int, ...],
        quant: tuple[float, int],
        values: np.ndarray | None = None,
    ) -> TensorSpec:
        if quantized:
            return TensorSpec(name, dtype, shape, values, [quant[0]], [quant[1]])
        return TensorSpec(name, dtype, shape, values)

    tensors = [
        spec("a", lhs, (0.05, -3)),
        spec("b", rhs, (0.02, 7), data),
        spec("y", out, (0.3, 4)),
    ]
    op = OperatorSpec(
        "BATCH_MATMUL", [0, 1], [2], "BatchMatMulOptions", {"AdjX": adj_x, "AdjY": adj_y}
    )
    return oracle.ModelSpec(tensors, [op], [0] if constant_rhs else [0, 1], [2])


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_batch_matmul_matches_tflite_micro(tmp_path: Path, dtype: type) -> None:
    parts = {
        "plain": _matmul(dtype, (3, 5), (5, 4)),
        "batched": _matmul(dtype, (2, 3, 6), (2, 6, 5), seed=1),
        "broadcast": _matmul(dtype, (2, 1, 3, 4), (3, 4, 2), seed=2),
        "adj_x": _matmul(dtype, (2, 7, 3), (2, 7, 4), adj_x=True, seed=3),
        "adj_y": _matmul(dtype, (3, 5), (1, 4, 5), adj_y=True, seed=4),
        "both_constant": _matmul(dtype, (2, 6, 3), (5, 6), True, True, True, seed=5),
        "constant": _matmul(dtype, (1, 4, 8), (8, 3), constant_rhs=True, seed=6),
    }
    oracle.assert_matches(oracle.merge(parts), tmp_path, trials=3)
