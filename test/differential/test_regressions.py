"""Replays the programs on which `benchmarks/differential.py` found a difference."""

from __future__ import annotations

from pathlib import Path

import pytest

from usmp_dialect.testing.generator import GeneratedProgram
from usmp_dialect.testing.harness import describe, gcc_path, planner_algorithms, run_differential

REGRESSIONS = sorted((Path(__file__).parent / "regressions").glob("*.mlir"))
REPLAY_PREFIX = "// replay-algorithms: "


def replay_algorithms(text: str) -> list[str]:
    """The algorithms a saved program failed with (all registered ones when none is named)."""
    known = planner_algorithms()
    for line in text.splitlines():
        if line.startswith(REPLAY_PREFIX):
            named = [a for a in line[len(REPLAY_PREFIX) :].split(",") if a in known]
            return named or known
    return known


@pytest.mark.skipif(gcc_path() is None, reason="gcc not found: replaying compiles and runs C")
@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_regression_program_matches_the_reference(path: Path, tmp_path: Path) -> None:
    text = path.read_text()
    program = GeneratedProgram.from_text(text)
    report = run_differential(program, replay_algorithms(text), workdir=tmp_path)
    assert report.ok, describe(report.findings)
