"""The small ONNX Model Zoo graphs shipped in the onnx wheel (weights stripped: given seeded
random weights of their ConstantOfShape shapes), compiled to C and compared with onnxruntime:
the probabilities and the logits before the final Softmax, within 1e-4 of the largest value.
The larger graphs (inception, densenet, resnet50, vgg19, alexnet, zfnet512) take minutes of
gcc and run in `benchmarks/onnx_models.py` instead."""

from __future__ import annotations

from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from usmp_dialect.testing.onnx_models import (  # noqa: E402
    check_against_onnxruntime,
    with_logits_output,
    with_random_weights,
    zoo_path,
)


@pytest.mark.parametrize(("name", "constants"), [("squeezenet", "string"), ("shufflenet", "text")])
def test_zoo_graph_matches_onnxruntime(name: str, constants: str, tmp_path: Path) -> None:
    """(Each in one of the C backend's two forms of constant pools.)"""
    path = zoo_path(name)
    if not path.exists():
        pytest.skip(f"{path} is not in this onnx wheel")
    model = with_logits_output(with_random_weights(onnx.load(path), seed=0))
    check_against_onnxruntime(model.SerializeToString(), tmp_path, seeds=(0,), constants=constants)
