"""`docs/operators.md` is what the generator prints from the importers' registries, so the
table cannot go stale; the README points to it."""

from __future__ import annotations

from pathlib import Path

from usmp_dialect.frontends.tflite.operators import (
    CONTROL_FLOW,
    FOLDED,
    TFLM_BUILTINS,
    markdown,
    tflite_support,
)

ROOT = Path(__file__).resolve().parents[3]


def test_committed_table_is_current() -> None:
    committed = (ROOT / "docs" / "operators.md").read_text()
    assert committed == markdown(), (
        "docs/operators.md is stale: python -m usmp_dialect.frontends.tflite.operators "
        "--markdown > docs/operators.md"
    )


def test_table_reads_the_registry() -> None:
    support = tflite_support()
    assert support["CONV_2D"] == "int8, int16, float32"
    assert support["REDUCE_MAX"] == "int8, float32"  # TFLM has no int16 REDUCE_MAX either
    assert support["SHAPE"] == FOLDED
    assert support["WHILE"] == support["IF"] == CONTROL_FLOW
    assert len(TFLM_BUILTINS) == len(set(TFLM_BUILTINS)) > 90
    table = markdown()
    assert "| CONV_2D | int8, int16, float32 |" in table
    assert "| WHILE | control flow" in table
    assert "| — |" not in table  # every TFLM builtin is imported
    assert "| com.microsoft | QGemm," in table


def test_readme_points_to_the_table() -> None:
    assert "docs/operators.md" in (ROOT / "README.md").read_text()
