"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR against TensorFlow Lite Micro (int8 byte for
byte, float32 within 1e-5): upsampling, downsampling and odd ratios under every combination
of `align_corners` and `half_pixel_centers` TFLite allows, on models written with
`tflite_writer`."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import compile_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
oracle = load_file(Path(__file__).parent / "tflm_oracle.py")

OPTIONS = {
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
}
# (input [N, H, W, C], output (H, W))
SIZES = [
    ((1, 3, 4, 2), (6, 8)),
    ((2, 5, 7, 3), (3, 4)),
    ((1, 4, 3, 5), (7, 5)),
    ((1, 1, 2, 1), (3, 1)),
]
MODES = [(False, False), (True, False), (False, True)]


def _part(
    opcode: str,
    dtype: type,
    shape: tuple[int, ...],
    size: tuple[int, int],
    align_corners: bool,
    half_pixel_centers: bool,
) -> oracle.ModelSpec:
    quant = ([0.05], [-3]) if dtype == np.int8 else (None, None)
    out_shape = (shape[0], *size, shape[3])
    tensors = [
        TensorSpec("x", dtype, shape, None, *quant),
        TensorSpec("size", np.int32, (2,), np.array(size, dtype=np.int32)),
        TensorSpec("y", dtype, out_shape, None, *quant),
    ]
    fields = {"AlignCorners": align_corners, "HalfPixelCenters": half_pixel_centers}
    return oracle.ModelSpec(
        tensors, [OperatorSpec(opcode, [0, 1], [2], OPTIONS[opcode], fields)], [0], [2]
    )


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
@pytest.mark.parametrize("opcode", list(OPTIONS))
def test_resize_matches_tflite_micro(tmp_path: Path, opcode: str, dtype: type) -> None:
    parts = {
        f"s{k}_m{m}": _part(opcode, dtype, shape, size, *mode)
        for k, (shape, size) in enumerate(SIZES)
        for m, mode in enumerate(MODES)
    }
    if opcode == "RESIZE_NEAREST_NEIGHBOR":  # both options at once: TFLM allows it here
        parts["both"] = _part(opcode, dtype, (1, 3, 5, 2), (7, 4), True, True)
    oracle.assert_matches(oracle.merge(parts), tmp_path, trials=3)


@needs_gcc
@needs_tflm
def test_bilinear_extremes_under_the_sanitizers(tmp_path: Path) -> None:
    """int8 inputs at -128 and 127 (the int64 sums and rounding at their limits), inputs and
    outputs in the workspace, under ASan and UBSan."""
    model = oracle.merge(
        {
            "up": _part("RESIZE_BILINEAR", np.int8, (1, 3, 3, 4), (8, 5), False, True),
            "down": _part("RESIZE_NEAREST_NEIGHBOR", np.int8, (1, 6, 6, 4), (4, 3), True, False),
        }
    )
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    rng = np.random.default_rng(2)
    for _ in range(3):
        inputs = [
            rng.choice(np.array([-128, 127, -127, 0], np.int8), size=port.shape)
            for port in compiled.inputs
        ]
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(ours, tflm.run(model, inputs, len(ours)))


def test_bilinear_refuses_both_options_and_a_wrong_output_shape() -> None:
    both = _part("RESIZE_BILINEAR", np.float32, (1, 2, 2, 1), (4, 4), True, True)
    with pytest.raises(ModelImportError, match="align_corners and half_pixel_centers"):
        import_tflite(both.model(), "m.tflite")
    tensors = [
        TensorSpec("x", np.float32, (1, 2, 2, 1)),
        TensorSpec("size", np.int32, (2,), np.array([4, 4], dtype=np.int32)),
        TensorSpec("y", np.float32, (1, 4, 3, 1)),
    ]
    data = write_model(tensors, [OperatorSpec("RESIZE_BILINEAR", [0, 1], [2])], [0], [2])
    with pytest.raises(ModelImportError, match=r"does not match the input \[1, 2, 2, 1\]"):
        import_tflite(data, "m.tflite")
