"""Generated models through `usmp-opt MODEL.tflite -p 'usmp-import-memref,convert-linalg-to-loops,
usmp' -t c` and gcc, against TensorFlow Lite Micro: every activation byte for byte, in no more
workspace than TFLM's arena head; and activations that use the int8 range."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.models import Model, build
from usmp_dialect.testing import tflm
from usmp_dialect.validation.host import compile_model, usmp_opt

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(
        not tflm.available(), reason="tflite-micro (the reference) is not installed"
    ),
]


@pytest.fixture(scope="module")
def model() -> Model:
    return build("mobilenetv2", seed=1, resolution=32, width_multiplier=0.35, classes=10)


def test_every_activation_matches_tflm(model: Model, tmp_path: Path) -> None:
    """With every activation as a model output, each equals TFLM's byte for byte."""
    path = tmp_path / "mobilenetv2_every_activation.tflite"
    path.write_bytes(model.tflite_with_every_activation())
    compiled = compile_model(path, tmp_path)
    assert len(compiled.outputs) == len(model.builder.activations) - 1  # all but the input
    interpreter = tflm.interpreter(path.read_bytes())
    for seed in range(3):
        x = model.random_input(seed)
        theirs = tflm.run_with(interpreter, [x], len(compiled.outputs))
        ours, _ = compiled.run([x])
        for mine, reference in zip(ours, theirs, strict=True):
            np.testing.assert_array_equal(mine, reference.reshape(mine.shape))


def test_workspace_io_sanitized_within_tflm_head(model: Model, tmp_path: Path) -> None:
    """Inputs and outputs inside the workspace (U4), under ASan/UBSan: still TFLM's output, in
    a workspace at the lower bound and at most TFLM's arena head."""
    path = tmp_path / "mobilenetv2.tflite"
    path.write_bytes(model.tflite)
    report = tmp_path / "plan.json"
    compiled = compile_model(path, tmp_path, workspace_io=True, sanitize=True, report=report)
    x = model.random_input(7)
    (ours,), _ = compiled.run([x])
    (theirs,) = tflm.run(path.read_bytes(), [x], 1)
    np.testing.assert_array_equal(ours, theirs)
    (workspace,) = [p for p in json.loads(report.read_text())["pools"] if p["kind"] == "workspace"]
    assert workspace["size_bytes"] == workspace["lower_bound_bytes"]
    assert workspace["size_bytes"] <= tflm.arena(path).head_bytes


def test_activations_use_the_int8_range(model: Model) -> None:
    """Calibrated scales keep every layer alive on an input it was not calibrated on: many
    distinct values, few at a saturating end (after a RELU, -128 is the zero point: zero, not
    saturation)."""
    inner = [a for a in model.builder.activations[1:] if a is not model.output]
    outputs = tflm.run(
        model.tflite_with_every_activation(), [model.random_input(11)], 1 + len(inner)
    )
    assert len(np.unique(outputs[0])) > 1  # softmax (in steps of 1/256) tells classes apart
    for activation, values in zip(inner, outputs[1:], strict=True):
        spec = model.builder.tensors[activation.index]
        assert spec.zero_points is not None
        distinct = len(np.unique(values))
        assert distinct >= min(32, values.size // 2), (spec.name, distinct)
        assert np.mean(values == 127) <= 0.25, spec.name
        if spec.zero_points[0] != -128:
            assert np.mean(values == -128) <= 0.25, spec.name


@pytest.mark.parametrize("export", ["keras", "pytorch"])
def test_explicit_padding_folds_and_matches_tflm(export: str, tmp_path: Path) -> None:
    """Keras' and PyTorch's explicit PADs before the stride-2 layers fold into those layers'
    windows (issue 22): no padded tensor is left in the imported module, the output is TFLM's
    byte for byte (under ASan/UBSan), and the workspace (U4) is below the unfolded one."""
    model = build(
        "mobilenetv2", seed=3, resolution=40, width_multiplier=0.35, classes=10, export=export
    )
    path = tmp_path / f"mobilenetv2_{export}.tflite"
    path.write_bytes(model.tflite)
    text = subprocess.run(
        [*usmp_opt(), str(path)], check=True, capture_output=True, text=True
    ).stdout
    assert "func.func @pad_" not in text and "pad_" not in text.split("func.func @main")[1]
    workspaces = {}
    for fuse in ("none", "rows"):
        report = tmp_path / f"plan_{fuse}.json"
        (tmp_path / fuse).mkdir()
        compiled = compile_model(
            path,
            tmp_path / fuse,
            workspace_io=True,
            sanitize=fuse == "rows",
            report=report,
            options=(f"--fuse={fuse}",),
        )
        pools = json.loads(report.read_text())["pools"]
        workspaces[fuse] = sum(p["size_bytes"] for p in pools if p["kind"] == "workspace")
        x = model.random_input(5)
        (ours,), _ = compiled.run([x])
        (theirs,) = tflm.run(path.read_bytes(), [x], 1)
        np.testing.assert_array_equal(ours, theirs)
    assert workspaces["rows"] < workspaces["none"] <= tflm.arena(path).head_bytes
