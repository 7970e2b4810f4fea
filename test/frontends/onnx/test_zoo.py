"""The small ONNX Model Zoo graphs shipped in the onnx wheel (weights stripped: given seeded
random weights of their ConstantOfShape shapes), compiled to C and compared with onnxruntime:
the probabilities and the logits before the final Softmax, within 1e-4 of the largest value.
The larger graphs (inception_v2, densenet, resnet50, vgg19, alexnet, zfnet512) take minutes of
gcc and run in `benchmarks/onnx_models.py` instead; ResNet-50 and DenseNet-121 are planned here
(no gcc)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from usmp_dialect.testing.onnx_models import (  # noqa: E402
    check_against_onnxruntime,
    graph_order_peak,
    with_logits_output,
    with_random_weights,
    zoo_path,
)
from usmp_dialect.validation.host import pipeline, usmp_opt  # noqa: E402


def zoo_model(name: str) -> bytes:
    path = zoo_path(name)
    if not path.exists():
        pytest.skip(f"{path} is not in this onnx wheel")
    return with_logits_output(with_random_weights(onnx.load(path), seed=0)).SerializeToString()


@pytest.mark.parametrize(
    ("name", "constants"),
    [("squeezenet", "string"), ("shufflenet", "text"), ("inception_v1", "string")],
)
def test_zoo_graph_matches_onnxruntime(name: str, constants: str, tmp_path: Path) -> None:
    """(Each in one of the C backend's two forms of constant pools.)"""
    check_against_onnxruntime(zoo_model(name), tmp_path, seeds=(0,), constants=constants)


def _planned(name: str, tmp_path: Path) -> tuple[str, int, int]:
    """The planned module of zoo graph `name`, its workspace (U1) and its graph-order peak."""
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(zoo_model(name))
    report = tmp_path / "plan.json"
    command = [*usmp_opt(), str(path), "-p", pipeline(False, report)]
    planned = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    workspace = next(p for p in json.loads(report.read_text())["pools"] if p["kind"] == "workspace")
    return planned, workspace["size_bytes"], graph_order_peak(path)


@pytest.mark.parametrize("name", ["squeezenet", "inception_v1"])
def test_concat_graphs_plan_below_the_graph_order_peak(name: str, tmp_path: Path) -> None:
    """Their Concat inputs are written in place (no Concat function left) and the workspace
    (U1) is below the peak of a file-order executor without in-place reuse."""
    planned, workspace, peak = _planned(name, tmp_path)
    assert "func.func @concat" not in planned
    assert workspace < peak


@pytest.mark.parametrize(("name", "most"), [("resnet50", 0.76), ("densenet121", 0.91)])
def test_elementwise_in_place_plans_below_the_graph_order_peak(
    name: str, most: float, tmp_path: Path
) -> None:
    """ResNet-50's residual Adds and DenseNet's BatchNormalization/Relu after each Concat write
    over their input: the workspace is well below the graph-order peak (equal to it without
    in-place elementwise nodes; the fractions of benchmarks/results/onnx_models.md)."""
    _, workspace, peak = _planned(name, tmp_path)
    assert workspace <= most * peak
