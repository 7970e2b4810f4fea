"""Smoke test of `benchmarks/models.py`: its core function runs on the smallest real model.

The benchmark itself is run by hand; this only keeps `measure_model` working as the frontend,
the pipeline, the planning API and the plan report evolve (kws_ref_model, one algorithm besides
`auto`: a few seconds).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from usmp_dialect.testing.module_file import load_file

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "benchmarks" / "models.py"


def test_measure_model_on_kws(tmp_path: Path) -> None:
    script = load_file(SCRIPT)
    svg = tmp_path / "kws.svg"
    result = script.measure_model(
        script.resolve_model("kws_ref_model", tmp_path),
        algorithms=("no_reuse", "greedy_by_size"),
        time_limit_s=5.0,
        svg_path=svg,
    )
    rows = {row.algorithm: row for row in result.rows}
    assert sorted(rows) == ["greedy_by_size", "no_reuse"]
    # The bound is a true lower bound, and sharing never costs more than not sharing.
    assert 0 < result.memory_pressure_bytes <= result.lower_bound_bytes
    assert result.lower_bound_bytes <= rows["greedy_by_size"].workspace_bytes
    assert rows["greedy_by_size"].workspace_bytes <= rows["no_reuse"].workspace_bytes
    assert rows["no_reuse"].workspace_bytes >= result.workspace_buffer_bytes
    assert result.constant_buffers > 0
    assert rows["greedy_by_size"].constant_pool_bytes >= result.constant_buffer_bytes
    # The timed usmp-opt pipeline planned what the direct solve call planned, and printed C.
    assert result.report_matches_auto
    assert result.c_bytes > 0
    for step in ("frontend", "verify", "import", "lowering", "usmp", "planning", "c_print"):
        assert result.times_s[step] >= 0.0
    text = svg.read_text()
    assert text.startswith("<svg") and "lower bound" in text


def test_models_resolve(tmp_path: Path) -> None:
    """A model is a bundled real one, the generated MobileNetV2, or a path."""
    script = load_file(SCRIPT)
    real = ROOT / "examples" / "mlperf_tiny" / "ad01_int8.tflite"
    assert script.resolve_model("ad01_int8", tmp_path) == real
    assert script.resolve_model(str(real), tmp_path) == real
    generated = script.resolve_model("mobilenetv2", tmp_path)
    assert generated.read_bytes()[4:8] == b"TFL3"
    assert len(script.default_models()) == 10
    with pytest.raises(SystemExit, match="unknown model 'lenet'"):
        script.resolve_model("lenet", tmp_path)
