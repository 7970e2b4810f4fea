"""`auto`'s schedule is anytime and depends on node counts only, its stop messages say which
limit stopped it, and tiny problems are planned without numpy (fast start-up)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from usmp_dialect.planning import PlanningError, PlanOptions, solve, tiny
from usmp_dialect.planning import problem as problem_module
from usmp_dialect.planning.io import read_csv_problem
from usmp_dialect.planning.problem import Pool, Problem, peak_live_bytes
from usmp_dialect.testing.random_problems import mixed_problems

CHALLENGING_A = Path(__file__).parents[1] / "errors" / "Inputs" / "minimalloc-A.1048576.csv"
"""MiniMalloc's challenging A: the portfolio is 29 % above the bound, which exists."""


def challenging_a() -> Problem:
    return read_csv_problem(CHALLENGING_A.read_text(), str(CHALLENGING_A)).problem


def test_a_larger_node_budget_never_gives_a_worse_plan() -> None:
    """Every plan a probe finds is kept at once and the probes depend on node counts only:
    a larger budget follows the same probes further. The first few thousand nodes already
    improve on the portfolio, and enough of them prove the optimum."""
    problem = challenging_a()
    portfolio = solve(problem, "portfolio").pool_sizes[0]
    peaks = []
    for budget in (3_000, 30_000, 150_000, 500_000):
        result = solve(problem, "auto", PlanOptions(time_limit_s=600.0, node_budget=budget))
        assert result.budget_stopped == (not result.proven_optimal)
        peaks.append(result.pool_sizes[0])
    assert peaks[0] < portfolio
    assert peaks == sorted(peaks, reverse=True)
    assert peaks[-1] == 1_048_576 and result.proven_optimal


def test_the_clock_is_named_when_it_stops_the_search() -> None:
    options = PlanOptions(time_limit_s=0.05, node_budget=10**12)
    result = solve(challenging_a(), "auto", options)
    assert result.limit_reached and result.stopped_by() == "time limit"
    assert result.stop_phrase(0.05) == "its 0.05 s limit"


def test_the_node_budget_is_named_when_it_stops_the_search() -> None:
    result = solve(challenging_a(), "exact", PlanOptions(time_limit_s=600.0, node_budget=5_000))
    assert result.limit_reached and result.stopped_by() == "node budget"
    assert result.stop_phrase(600.0) == "its node budget, before its 600 s limit"


def one_pool(problem: Problem) -> Problem:
    buffers = tuple(replace(b, pools=(0,)) for b in problem.buffers)
    return Problem(buffers, problem.pools[:1])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_problems(max_buffers=tiny.TINY_BUFFERS))
def test_the_numpy_free_first_fit_places_as_greedy_first_fit(problem: Problem) -> None:
    problem = one_pool(problem)
    try:
        expected = solve(problem, "greedy_first_fit").plan
    except PlanningError:
        expected = None
    assert tiny.first_fit(problem) == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_problems(max_buffers=tiny.TINY_BUFFERS))
def test_auto_plans_tiny_problems_as_it_would_in_full(problem: Problem) -> None:
    problem = one_pool(problem)
    options = PlanOptions(node_budget=20_000)
    try:
        fast = solve(problem, "auto", options)
    except PlanningError:
        return  # the tiny path only returns plans, so the full run raised this
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tiny, "TINY_BUFFERS", 0)
        full = solve(problem, "auto", options)
    assert (fast.plan, fast.proven_optimal) == (full.plan, full.proven_optimal)


@settings(max_examples=60, deadline=None)
@given(mixed_problems(max_buffers=40))
def test_the_plain_python_sweep_finds_the_numpy_peak(problem: Problem) -> None:
    python = peak_live_bytes(problem)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(problem_module, "SMALL_SWEEP", 0)
        assert peak_live_bytes(problem) == python


def test_usmp_plan_solves_a_tiny_problem_without_importing_numpy(tmp_path: Path) -> None:
    problem = tmp_path / "five.csv"
    problem.write_text("id,lower,upper,size\n0,0,3,4\n1,1,2,4\n2,2,4,8\n3,3,5,4\n4,5,6,12\n")
    script = (
        "import sys\n"
        "from usmp_dialect.tools.usmp_plan import run\n"
        f"assert run([{str(problem)!r}], sys.stdout, sys.stderr) == 0\n"
        "assert 'numpy' not in sys.modules, 'numpy was imported'\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[-1].startswith("peak 12 B, lower bound 12 B (optimal)")


def test_tiny_path_leaves_pools_with_several_candidates_to_the_full_planner() -> None:
    problem = Problem((replace(challenging_a().buffers[0], pools=(0, 1)),), (Pool("a"), Pool("b")))
    assert tiny.tiny_plan(problem) is None
