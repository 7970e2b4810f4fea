"""Determinism: the same input gives byte-identical planned IR, plan report (all but its wall
time `plan_time_s`), C source and header, across runs and across PYTHONHASHSEED values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from usmp_dialect.testing.determinism import artifacts, format_cases
from usmp_dialect.testing.generator import generate_program

SEEDS = [10, 11]
"""A U4 program with declared pools (one tight) and a U3 program with a constant pool."""
CASES = [
    (10, "hill_climb"),
    (10, "greedy_by_conflicts"),
    (11, "auto"),
    (11, "portfolio"),
]
"""(generator seed, algorithm): TVM's randomised hill climb, a greedy, the default `auto` and
the portfolio. `auto` only where its search ends well within its time limit (program 11 is
solved in about a second): where it stops at the limit its plan depends on the machine's
speed, which this test would turn into flakiness (reported as a planner defect)."""
HASH_SEEDS = ["0", "1", "987654321"]


def start_subprocess(hash_seed: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "usmp_dialect.testing.determinism",
            "--cases",
            format_cases(CASES),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED=hash_seed),
    )


@pytest.fixture(scope="module")
def from_subprocesses() -> dict[str, dict[str, object]]:
    """The artifacts computed by fresh processes, one per hash seed (run concurrently)."""
    processes = {hash_seed: start_subprocess(hash_seed) for hash_seed in HASH_SEEDS}
    results: dict[str, dict[str, object]] = {}
    for hash_seed, process in processes.items():
        stdout, stderr = process.communicate()
        assert process.returncode == 0, stderr
        results[hash_seed] = json.loads(stdout)
    return results


@pytest.fixture(scope="module")
def reference() -> dict[str, object]:
    return artifacts(CASES)


def test_programs_cover_the_interesting_cases() -> None:
    programs = [generate_program(seed) for seed in SEEDS]
    assert {p.use_case for p in programs} == {"U3", "U4"}
    assert any(p.capacity_bytes for program in programs for p in program.pools)


def test_report_has_a_wall_time_and_it_is_the_only_part_left_out(
    reference: dict[str, object],
) -> None:
    for entry in reference.values():
        assert isinstance(entry, dict)
        assert "plan_time_s" in entry["report_keys"]
        assert "plan_time_s" not in entry["report"]
        assert set(entry["report"]) == set(entry["report_keys"]) - {"plan_time_s"}


def test_same_output_across_runs_in_one_process(reference: dict[str, object]) -> None:
    assert artifacts(CASES) == reference


@pytest.mark.parametrize("hash_seed", HASH_SEEDS)
def test_same_output_across_hash_seeds(
    hash_seed: str,
    reference: dict[str, object],
    from_subprocesses: dict[str, dict[str, object]],
) -> None:
    other = from_subprocesses[hash_seed]
    assert sorted(other) == sorted(reference)
    for key in sorted(reference):
        for part in ("ir", "c", "h", "report"):
            assert other[key][part] == reference[key][part], f"{key}: {part} differs"  # type: ignore[index]


def test_usmp_opt_prints_the_same_c_as_the_pipeline_api(
    reference: dict[str, object], tmp_path: Path
) -> None:
    """The command line (a fresh process, another hash seed) agrees with the in-process API."""
    seed, algorithm = CASES[0]
    program = generate_program(seed)
    path = tmp_path / "program.mlir"
    path.write_text(program.text)
    workspace_io = "true" if program.workspace_io else "false"
    completed = subprocess.run(
        [
            "usmp-opt",
            str(path),
            "-p",
            f"usmp{{algorithm={algorithm} workspace-io={workspace_io}}}",
            "-t",
            "c{prefix=model}",
        ],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONHASHSEED="4242"),
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == reference[f"{seed}/{algorithm}"]["c"]  # type: ignore[index]
