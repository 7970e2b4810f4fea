"""Differential testing of the whole pipeline: every planner against the no_reuse reference.

A fixed batch of generated programs (U1, U3 and U4) is planned with every registered algorithm
(rotating over the batch), printed as C, compiled with gcc (planned builds under ASan/UBSan)
and run; the outputs must equal those of the reference lowering, where no buffers share bytes.
`benchmarks/differential.py` runs the same check on thousands of programs.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from usmp_dialect.planning import PlanOptions, PlanResult, Problem
from usmp_dialect.testing.generator import GeneratorConfig, generate_program
from usmp_dialect.testing.harness import (
    ProgramReport,
    describe,
    gcc_path,
    planner_algorithms,
    pool_flags,
    rotate,
    run_differential,
    start_differential,
)

pytestmark = pytest.mark.skipif(
    gcc_path() is None, reason="gcc not found: the differential tests compile and run C"
)

BATCH_SEEDS = tuple(range(100, 110))
"""The CI batch: 10 programs, covering U1, U3 and U4 (checked below)."""
BATCH_CONFIG = GeneratorConfig(main_steps=(2, 4), max_operators=2)
"""Somewhat smaller programs than the benchmark's, to keep the batch within a minute."""
ALGORITHMS_PER_PROGRAM = 2


@pytest.fixture(scope="module")
def executor() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        yield pool


def run_batch(
    seeds: tuple[int, ...], executor: ThreadPoolExecutor, workdir: Path, per_program: int
) -> list[ProgramReport]:
    """Runs the seeds with rotating algorithms, lowering one program while the previous one
    compiles."""
    algorithms = planner_algorithms()
    reports: list[ProgramReport] = []
    pending = None
    for index, seed in enumerate(seeds):
        chosen = rotate(algorithms, index, per_program)
        program = generate_program(seed, BATCH_CONFIG)
        current = start_differential(program, chosen, executor, workdir)
        if pending is not None:
            reports.append(pending.finish())
        pending = current
    if pending is not None:
        reports.append(pending.finish())
    return reports


def test_batch_covers_the_use_cases_and_every_algorithm() -> None:
    programs = [generate_program(seed, BATCH_CONFIG) for seed in BATCH_SEEDS]
    assert {p.use_case for p in programs} == {"U1", "U3", "U4"}
    # Odd seeds with flag-expressible pools declare them through usmp-opt's pool flags.
    assert any(p.seed % 2 and pool_flags(p) for p in programs)
    assert any(p.pools and any(pool.capacity_bytes for pool in p.pools) for p in programs)
    algorithms = planner_algorithms()
    covered = {
        a
        for index in range(len(BATCH_SEEDS))
        for a in rotate(algorithms, index, ALGORITHMS_PER_PROGRAM)
    }
    assert covered == set(algorithms)


def test_planned_programs_compute_what_the_reference_computes(
    executor: ThreadPoolExecutor, tmp_path: Path
) -> None:
    reports = run_batch(BATCH_SEEDS, executor, tmp_path, ALGORITHMS_PER_PROGRAM)
    findings = [f for report in reports for f in report.findings]
    assert not findings, f"files under {tmp_path}\n" + describe(findings)


def test_broken_liveness_is_caught(
    executor: ThreadPoolExecutor, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness can fail: with every live interval cut to its first time step (a liveness
    analysis that forgets later uses), planned programs compute something else."""
    import usmp_dialect.passes.plan as plan_pass

    real_solve = plan_pass.solve

    def solve_with_short_lives(
        problem: Problem, algorithm: str = "auto", options: PlanOptions | None = None
    ) -> PlanResult:
        buffers = tuple(
            replace(b, live=tuple((start, start + 1) for start, _ in b.live), conflicts=())
            for b in problem.buffers
        )
        return real_solve(replace(problem, buffers=buffers), algorithm, options)

    monkeypatch.setattr(plan_pass, "solve", solve_with_short_lives)
    pending = [
        start_differential(
            generate_program(seed, BATCH_CONFIG), ["greedy_by_size"], executor, tmp_path
        )
        for seed in (101, 104)  # a U4 and a U1 program
    ]
    for item in pending:
        kinds = [f.kind for f in item.finish().findings]
        assert kinds == ["mismatch"], kinds


def test_a_small_program_runs_and_its_files_are_cleaned_up(tmp_path: Path) -> None:
    small = GeneratorConfig(main_steps=(1, 1), operator_steps=(1, 1), max_operators=1)
    report = run_differential(generate_program(7, small), ["greedy_by_size"], workdir=tmp_path)
    assert report.ok, describe(report.findings)
    assert not any(tmp_path.iterdir())
