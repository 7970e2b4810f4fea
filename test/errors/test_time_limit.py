"""A search stopped by its time limit (or its node budget) returns its best VALID plan and
says it is not proven optimal, and which limit stopped it: `usmp-plan --time-limit` on a
minimalloc "challenging" instance and `usmp-opt -p 'usmp{time-limit=...}'` on the same buffers
written as a program."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from usmp_dialect.passes.plan import not_optimal_note
from usmp_dialect.planning.problem import Buffer, Plan, PlanResult, Pool, Problem
from usmp_dialect.testing.module_file import load_file

cli_runs = load_file(Path(__file__).with_name("cli_runs.py"))
make_interval_program = load_file(Path(__file__).with_name("make_interval_program.py"))

INPUTS: Path = cli_runs.INPUTS
CHALLENGING = INPUTS / "minimalloc-A.1048576.csv"
LOWER_BOUND = 1048576  # the instance's peak live bytes (the name says so, as minimalloc's do)
TIME_LIMIT_S = "0.01"
UNREACHABLE_BUDGET = "1000000000"  # nodes: only the clock can stop the search
STOPPED = re.compile(rf"search stopped at its (node budget, before its )?{TIME_LIMIT_S} s limit")
"""Without --node-budget, the budget set from a 0.01 s limit may run out before the clock."""


def overlapping_pairs(intervals: Sequence[Sequence[int]]) -> list[tuple[int, int]]:
    """Indices of buffers whose half-open intervals [lower, upper) overlap."""
    pairs = []
    for i, (lower_i, upper_i) in enumerate(intervals):
        for j in range(i + 1, len(intervals)):
            lower_j, upper_j = intervals[j]
            if lower_i < upper_j and lower_j < upper_i:
                pairs.append((i, j))
    return pairs


def assert_no_overlap(
    intervals: Sequence[Sequence[int]], sizes: Sequence[int], offsets: Sequence[int]
) -> None:
    pairs = overlapping_pairs(intervals)
    assert pairs  # the instance really has buffers that must not share bytes
    for i, j in pairs:
        disjoint = offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i]
        assert disjoint, f"buffers {i} and {j} are live together and share bytes"
    assert all(offset >= 0 for offset in offsets)


def test_usmp_plan_returns_a_valid_plan_not_proven_optimal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan, report = tmp_path / "plan.csv", tmp_path / "report.json"
    args = [str(CHALLENGING), "--time-limit", TIME_LIMIT_S, "--node-budget", UNREACHABLE_BUDGET]
    args += ["-o", str(plan)]
    run = cli_runs.run_tool("usmp-plan", [*args, "--report", str(report)], capsys)
    assert run.exit_code == 0
    assert "not proven optimal" in run.stderr_lines[-1]
    assert f"search stopped at its {TIME_LIMIT_S} s limit)" in run.stderr_lines[-1]

    rows = list(csv.DictReader(plan.read_text().splitlines()))
    problem = list(csv.DictReader(CHALLENGING.read_text().splitlines()))
    assert [row["id"] for row in rows] == [row["id"] for row in problem]
    intervals = [(int(row["lower"]), int(row["upper"])) for row in rows]
    sizes = [int(row["size"]) for row in rows]
    offsets = [int(row["offset"]) for row in rows]
    assert_no_overlap(intervals, sizes, offsets)

    data = json.loads(report.read_text())
    assert data["proven_optimal"] is False
    assert data["stopped_by"] == "time limit"
    peak = max(offset + size for offset, size in zip(offsets, sizes, strict=True))
    assert data["peak_bytes"] == peak >= data["lower_bound_bytes"] == LOWER_BOUND
    assert f"peak {peak} B, lower bound {LOWER_BOUND} B (not proven optimal" in run.stderr


def test_usmp_opt_returns_a_valid_plan_not_proven_optimal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program, report = tmp_path / "program.mlir", tmp_path / "plan.json"
    program.write_text(make_interval_program.interval_program(CHALLENGING.read_text()))
    pipeline = f'usmp{{time-limit={TIME_LIMIT_S} order=program report="{report}"}}'
    args = [str(program), "-p", pipeline, "-t", "c", "-o", str(tmp_path / "model.c")]
    run = cli_runs.run_tool("usmp-opt", args, capsys)
    assert run.exit_code == 0
    assert len(run.stderr_lines) == 1
    note = run.stderr_lines[0]
    stopped = STOPPED.search(note)
    assert stopped and note.startswith(
        f"note: usmp-plan pass: {stopped.group(0)}: the plan is valid but not proven optimal: "
        "@global_workspace "
    )

    data = json.loads(report.read_text())
    assert data["proven_optimal"] is False
    assert data["stopped_by"] == ("node budget" if stopped.group(1) else "time limit")
    (pool,) = data["pools"]
    assert pool["lower_bound_bytes"] == LOWER_BOUND < pool["size_bytes"]
    assert note.endswith(
        f"@global_workspace {pool['size_bytes']} bytes (lower bound {LOWER_BOUND})"
    )
    buffers = data["buffers"]
    assert len(buffers) == len(CHALLENGING.read_text().splitlines()) - 1
    for buffer in buffers:
        assert len(buffer["live"]) == 1  # one write, one read
    intervals = [buffer["live"][0] for buffer in buffers]
    sizes = [buffer["size_bytes"] for buffer in buffers]
    offsets = [buffer["offset"] for buffer in buffers]
    # The analysis' ticks are not the CSV's times, but they keep exactly its conflicts.
    problem = list(csv.DictReader(CHALLENGING.read_text().splitlines()))
    csv_pairs = overlapping_pairs([(int(row["lower"]), int(row["upper"])) for row in problem])
    by_name = {f"b{row['id']}": index for index, row in enumerate(problem)}
    order = [by_name[buffer["name"]] for buffer in buffers]
    report_pairs = {tuple(sorted((order[i], order[j]))) for i, j in overlapping_pairs(intervals)}
    assert report_pairs == set(csv_pairs)
    assert_no_overlap(intervals, sizes, offsets)
    assert max(o + s for o, s in zip(offsets, sizes, strict=True)) <= pool["size_bytes"]


def test_usmp_plan_says_when_the_node_budget_not_the_clock_stopped_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.json"
    args = [str(CHALLENGING), "--time-limit", "600", "--node-budget", "1000", "-o", "/dev/null"]
    run = cli_runs.run_tool("usmp-plan", [*args, "--report", str(report)], capsys)
    assert run.exit_code == 0
    assert "search stopped at its node budget, before its 600 s limit)" in run.stderr_lines[-1]
    assert json.loads(report.read_text())["stopped_by"] == "node budget"


def test_the_pass_note_names_the_node_budget_when_it_stopped_the_search() -> None:
    problem = Problem((Buffer("a", 8, live=((0, 2),)),), (Pool("global_workspace"),))
    result = PlanResult(
        plan=Plan(pools=(0,), offsets=(0,)),
        algorithm="auto",
        pool_sizes=(16,),
        lower_bounds=(8,),
        proven_optimal=False,
        time_s=1.5,
        limit_reached=True,
        budget_stopped=True,
    )
    assert not_optimal_note(problem, result, 10.0) == (
        "note: usmp-plan pass: search stopped at its node budget, before its 10 s limit: the "
        "plan is valid but not proven optimal: @global_workspace 16 bytes (lower bound 8)"
    )
