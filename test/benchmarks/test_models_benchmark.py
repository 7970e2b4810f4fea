"""Smoke test of `benchmarks/models.py`: its core function runs on the smallest model.

The benchmark itself is run by hand; this only keeps `measure_model` working as the pipeline,
the planning API and the plan report evolve (kws, one algorithm besides `auto`: a few seconds).
"""

from __future__ import annotations

from pathlib import Path

from usmp_dialect.testing.module_file import load_file

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "models.py"


def test_measure_model_on_kws(tmp_path: Path) -> None:
    script = load_file(SCRIPT)
    svg = tmp_path / "kws.svg"
    result = script.measure_model(
        "kws", algorithms=("no_reuse", "greedy_by_size"), time_limit_s=5.0, svg_path=svg
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
    for step in ("parse", "verify", "import", "lowering", "usmp", "planning", "c_print"):
        assert result.times_s[step] >= 0.0
    text = svg.read_text()
    assert text.startswith("<svg") and "lower bound" in text
