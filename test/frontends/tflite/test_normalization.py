"""LOG_SOFTMAX and L2_NORMALIZATION (int8 and float32), over the last axis, against
TensorFlow Lite Micro (int8 byte for byte, float32 within 1e-5), on models written with
`tflite_writer`: rows of one to many values, large magnitudes (LOG_SOFTMAX's maximum
subtraction), an all-zero row (L2's epsilon), int8 sums of 0, 1 and the largest."""

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


def _part(opcode: str, shape: tuple[int, ...], dtype: type = np.float32) -> oracle.ModelSpec:
    quant = ([0.05], [-3]) if dtype == np.int8 else (None, None)
    out_quant = ([1 / 128], [0]) if dtype == np.int8 else (None, None)
    tensors = [
        TensorSpec("x", dtype, shape, None, *quant),
        TensorSpec("y", dtype, shape, None, *out_quant),
    ]
    return oracle.ModelSpec(tensors, [OperatorSpec(opcode, [0], [1])], [0], [1])


@needs_gcc
@needs_tflm
def test_row_functions_match_tflite_micro(tmp_path: Path) -> None:
    parts = {
        f"{opcode.lower()}_{k}": _part(opcode, shape)
        for opcode in ("LOG_SOFTMAX", "L2_NORMALIZATION")
        for k, shape in enumerate([(1, 10), (3, 4, 7), (2, 1), (5,)])
    }
    model = oracle.merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    rng = np.random.default_rng(4)
    for scale in (1.0, 40.0):
        inputs = [
            (rng.standard_normal(port.shape) * scale).astype(np.float32) for port in compiled.inputs
        ]
        inputs[-1][:] = 0.0  # l2_normalization_3: an all-zero row
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(
            ours, tflm.run(model, inputs, len(ours)), [p.name for p in compiled.outputs]
        )


@needs_gcc
@needs_tflm
def test_int8_l2_normalization_matches_tflite_micro(tmp_path: Path) -> None:
    """TFLite's integer L2 normalisation (inverse square root by Newton-Raphson in Q3.28) on
    rows of 1 to 300 values: random, all at the zero point (a zero sum), one value off it
    (a sum of 1) and all at the extremes (the largest sums)."""
    shapes = [(4, 16), (2, 300), (3, 1), (6, 3)]
    model = oracle.merge(
        {f"l2_{k}": _part("L2_NORMALIZATION", s, np.int8) for k, s in enumerate(shapes)}
    )
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    rng = np.random.default_rng(8)
    inputs = [rng.integers(-128, 128, port.shape, dtype=np.int8) for port in compiled.inputs]
    inputs[0][1] = -3  # the zero point: sum 0
    inputs[0][2] = -3
    inputs[0][2][5] = -2  # sum 1
    inputs[1][0] = 127
    inputs[1][1] = -128
    ours, _ = compiled.run(inputs)
    tflm.assert_matches(
        ours, tflm.run(model, inputs, len(ours)), [p.name for p in compiled.outputs]
    )


def _log_softmax_part(shape: tuple[int, ...], input_scale: float) -> oracle.ModelSpec:
    tensors = [
        TensorSpec("x", np.int8, shape, None, [input_scale], [-3]),
        TensorSpec("y", np.int8, shape, None, [16 / 256], [127]),
    ]
    return oracle.ModelSpec(tensors, [OperatorSpec("LOG_SOFTMAX", [0], [1])], [0], [1])


# (rows, depth) and input scale: scales from one where every difference counts to ones whose
# diff_min leaves most of a row out of the sum; rows of 1 to 3000 values (a Q12.19 sum near
# its limit)
LOG_SOFTMAXES = [
    ((6, 16), 0.05),
    ((6, 16), 1 / 256),
    ((6, 16), 0.5),
    ((6, 16), 3.0),
    ((4, 1), 0.1),
    ((3, 300), 0.02),
    ((2, 3000), 0.001),
    ((6, 40), 0.2),
]


@needs_gcc
@needs_tflm
def test_int8_log_softmax_matches_tflite_micro(tmp_path: Path) -> None:
    """TFLite's fixed-point LOG_SOFTMAX (exp tables, the fixed-point log of the Q12.19 sum,
    the row's cut-off) byte for byte, under ASan/UBSan: random rows, rows of one value
    (log 1), constant rows, a 127 among -128s (everything else below the cut-off) and rows
    spread over the whole range."""
    model = oracle.merge(
        {f"log_{k}": _log_softmax_part(*case) for k, case in enumerate(LOG_SOFTMAXES)}
    )
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    rng = np.random.default_rng(3)
    for trial in range(3):
        inputs = [rng.integers(-128, 128, port.shape, dtype=np.int8) for port in compiled.inputs]
        for array in inputs:
            if array.shape[0] > 3:
                array[0] = 17  # constant
                array[1] = -128
                array[1][-1] = 127  # one maximum far above the rest
                array[2] = np.linspace(-128, 127, array.shape[1]).astype(np.int8)
                array[3] = rng.integers(100 - 40 * trial, 128, array.shape[1], dtype=np.int8)
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(
            ours, tflm.run(model, inputs, len(ours)), [p.name for p in compiled.outputs]
        )


def test_int8_log_softmax_needs_tflites_output_quantisation() -> None:
    spec = _log_softmax_part((2, 4), 0.05)
    spec.tensors[1] = TensorSpec("y", np.int8, (2, 4), None, [1 / 16], [0])
    with pytest.raises(ModelImportError, match="needs the output scale 16/256 and zero point 127"):
        import_tflite(spec.model(), "m.tflite")
