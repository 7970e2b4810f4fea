"""Fused row streaming (issue 22) against TFLM, byte for byte: a generated chain covering
stride 2, dilation, SAME/VALID, a depth multiplier, max pooling and a global average pool at
the end (also under ASan/UBSan), and the MLPerf Tiny models it applies to; `--fuse=none` keeps
one function per operator."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from usmp_dialect.testing import tflm
from usmp_dialect.validation.host import compile_model, plan, usmp_opt, workspace_bytes

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]

ROOT = Path(__file__).resolve().parents[3]
MODELS = ROOT / "examples" / "mlperf_tiny"


def _chain_module():
    spec = importlib.util.spec_from_file_location(
        "streamed_chain", Path(__file__).parent / "Inputs" / "streamed_chain.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _workspace(model: Path, directory: Path, fuse: str) -> int:
    return workspace_bytes(plan(model, directory / fuse, True, [f"--fuse={fuse}"]))


@pytest.mark.parametrize(
    ("seed", "height", "global_pool", "sanitize"),
    [(0, 40, True, False), (1, 11, True, True), (2, 41, False, False)],
)
def test_fused_chain_matches_tflm(
    tmp_path: Path, seed: int, height: int, global_pool: bool, sanitize: bool
) -> None:
    data = _chain_module().chain_model(seed, height, global_pool=global_pool)
    model = tmp_path / "chain.tflite"
    model.write_bytes(data)
    compiled = compile_model(model, tmp_path, workspace_io=True, sanitize=sanitize)
    source = "\n".join(path.read_text() for path in tmp_path.glob("*.c"))
    assert "fused_" in source
    tflm.compare(compiled, data, range(3))


def test_fuse_none_keeps_one_function_per_operator(tmp_path: Path) -> None:
    model = tmp_path / "chain.tflite"
    model.write_bytes(_chain_module().chain_model(0, 40))
    fused = _workspace(model, tmp_path, "rows")
    unfused = _workspace(model, tmp_path, "none")
    assert fused < unfused
    text = subprocess.run(
        [*usmp_opt(), str(model), "--fuse=none"], check=True, capture_output=True, text=True
    ).stdout
    assert "fused_" not in text and "@conv_2d_0(" in text


@pytest.mark.parametrize("name", ["kws_ref_model", "str_ww_ref_model"])
def test_fused_mlperf_models_match_tflm(tmp_path: Path, name: str) -> None:
    model = MODELS / f"{name}.tflite"
    compiled = compile_model(model, tmp_path, workspace_io=True)
    assert "fused_" in "\n".join(path.read_text() for path in tmp_path.glob("*.c"))
    tflm.compare(compiled, model.read_bytes(), range(2))
