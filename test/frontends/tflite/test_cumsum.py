"""CUMSUM against TensorFlow Lite Micro (int8 byte for byte, float32 within 1e-5): every axis,
`exclusive` and `reverse`, several quantisations, on models written with `tflite_writer`."""

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


def _cumsum(
    dtype: type,
    shape: tuple[int, ...],
    axis: int,
    exclusive: bool,
    reverse: bool,
    quant: tuple[tuple[float, int], tuple[float, int]] = ((0.05, -3), (0.2, 10)),
) -> oracle.ModelSpec:
    if dtype == np.int8:
        x = TensorSpec("x", dtype, shape, None, [quant[0][0]], [quant[0][1]])
        y = TensorSpec("y", dtype, shape, None, [quant[1][0]], [quant[1][1]])
    else:
        x, y = TensorSpec("x", dtype, shape), TensorSpec("y", dtype, shape)
    axis_spec = TensorSpec("axis", np.int32, (1,), np.array([axis], np.int32))
    op = OperatorSpec(
        "CUMSUM", [0, 1], [2], "CumsumOptions", {"Exclusive": exclusive, "Reverse": reverse}
    )
    return oracle.ModelSpec([x, axis_spec, y], [op], [0], [2])


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_cumsum_matches_tflite_micro(tmp_path: Path, dtype: type) -> None:
    parts = {
        "first": _cumsum(dtype, (5, 3, 2), 0, False, False),
        "middle_exclusive": _cumsum(dtype, (2, 6, 3), 1, True, False),
        "last_reverse": _cumsum(dtype, (3, 7), -1, False, True),
        "both": _cumsum(dtype, (4, 5), 1, True, True),
        "vector": _cumsum(dtype, (16,), 0, False, False, ((0.01, 100), (0.05, -128))),
    }
    oracle.assert_matches(oracle.merge(parts), tmp_path, trials=3)
