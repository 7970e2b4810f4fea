"""FULLY_CONNECTED variants the MLPerf Tiny models do not all cover, against TFLM (int8 byte
for byte, float to 1e-5), through `usmp-opt` and gcc: unit and depth counts that leave
remainders beside the 4-row blocks and 4-byte words of the blocked int8 kernel (pairs of rows,
a last odd row), batches > 1, every fused activation, and output scales whose requantisation
takes each of its forms (a right shift of 0, 1 and >= 2, a left shift, the zero point folded
into the rounding constant)."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import compile_model

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]

NONE, RELU, RELU_N1_TO_1, RELU6 = 0, 1, 2, 3
INPUT_SCALE, WEIGHT_SCALE = 0.05, 0.01


@dataclass(frozen=True)
class Dense:
    units: int
    depth: int
    batches: int = 1
    activation: int = NONE
    multiplier: float = 0.01  # input scale * weight scale / output scale
    output_zero_point: int = 4
    float32: bool = False


def dense_model(spec: Dense, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    shape = (spec.units, spec.depth)
    if spec.float32:
        tensors = [
            TensorSpec("x", np.float32, (spec.batches, spec.depth)),
            TensorSpec("w", np.float32, shape, data=rng.standard_normal(shape).astype(np.float32)),
            TensorSpec(
                "b",
                np.float32,
                (spec.units,),
                data=rng.standard_normal(spec.units).astype(np.float32),
            ),
            TensorSpec("y", np.float32, (spec.batches, spec.units)),
        ]
    else:
        weights = rng.integers(-127, 128, size=shape, dtype=np.int8)
        bias = rng.integers(-3000, 3000, size=spec.units, dtype=np.int32)
        output_scale = INPUT_SCALE * WEIGHT_SCALE / spec.multiplier
        tensors = [
            TensorSpec(
                "x", np.int8, (spec.batches, spec.depth), scales=[INPUT_SCALE], zero_points=[-7]
            ),
            TensorSpec("w", np.int8, shape, data=weights, scales=[WEIGHT_SCALE], zero_points=[0]),
            TensorSpec(
                "b", np.int32, (spec.units,), data=bias, scales=[INPUT_SCALE * WEIGHT_SCALE]
            ),
            TensorSpec(
                "y",
                np.int8,
                (spec.batches, spec.units),
                scales=[output_scale],
                zero_points=[spec.output_zero_point],
            ),
        ]
    fields = {"FusedActivationFunction": spec.activation}
    operator = OperatorSpec("FULLY_CONNECTED", [0, 1, 2], [3], "FullyConnectedOptions", fields)
    return write_model(tensors, [operator], [0], [3])


SPECS = [
    Dense(units=16, depth=64),  # 4-row blocks only
    Dense(units=13, depth=10, batches=3, activation=RELU),  # remainder rows and columns
    Dense(units=3, depth=3, batches=2),  # nothing blocked
    Dense(units=2, depth=24),  # one pair of rows, no 4-row block
    Dense(units=3, depth=21, batches=2),  # a pair and a last row, remainder columns
    Dense(units=14, depth=33, activation=RELU6),  # 4-row blocks, then a pair
    Dense(units=7, depth=8),  # a 4-row block, a pair and a last row
    Dense(units=9, depth=40, multiplier=0.7, output_zero_point=-128),  # right shift 0
    Dense(units=8, depth=36, multiplier=0.3, activation=RELU6),  # right shift 1
    Dense(units=12, depth=20, multiplier=2.5, output_zero_point=-20),  # left shift
    Dense(units=5, depth=300, multiplier=1e-6, activation=RELU_N1_TO_1),  # right shift 19
    Dense(units=10, depth=17, batches=2, float32=True, activation=RELU6),
]


def test_the_specs_cover_every_requantisation_form() -> None:
    shifts = {quantize_multiplier(spec.multiplier)[1] for spec in SPECS if not spec.float32}
    assert {0, -1, 2}.issubset(shifts) and min(shifts) <= -2


def test_fully_connected_variants_match_tflm(tmp_path: Path) -> None:
    def check(item: tuple[int, Dense]) -> None:
        index, spec = item
        directory = tmp_path / f"case{index}"
        directory.mkdir()
        data = dense_model(spec, index)
        model = directory / "model.tflite"
        model.write_bytes(data)
        try:
            compiled = compile_model(model, directory, sanitize=index % 3 == 0)
            tflm.compare(compiled, data, range(3))
        except AssertionError as error:
            raise AssertionError(f"{spec}: {error}") from error

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(check, enumerate(SPECS)))
