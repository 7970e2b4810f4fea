"""Property tests: on random problems every algorithm's plan is valid, never below the lower
bound, respects candidate-pool order and capacities, and `auto` is never worse than a single
heuristic."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings

from usmp_dialect.planning import PlanningError, PlanOptions, solve
from usmp_dialect.planning._core import prepare
from usmp_dialect.planning.greedy import pool_sizes_array
from usmp_dialect.planning.problem import (
    Plan,
    Problem,
    conflict_lists,
    lower_bound,
    validate,
)
from usmp_dialect.testing.random_problems import problems

GREEDY_FAMILY = ("greedy_first_fit", "greedy_best_fit", "portfolio", "local_search")
AUTO_STARTS_FROM = ("greedy_first_fit", "greedy_best_fit", "portfolio")
TVM_FAMILY = ("greedy_by_size", "greedy_by_conflicts", "hill_climb")
ALL = (*GREEDY_FAMILY, *TVM_FAMILY, "exact", "auto")
OPTIONS = PlanOptions(time_limit_s=2.0, seed=1)
QUICK = PlanOptions(time_limit_s=0.2, seed=1)
"""For local_search, whose iterations only matter for quality, not for these properties."""


def fits_somewhere(
    problem: Problem, plan: Plan, index: int, pool: int, neighbours: list[list[int]]
) -> bool:
    """Brute force: could buffer `index` sit in `pool` next to the plan's buffers there?"""
    buffer = problem.buffers[index]
    capacity = problem.pools[pool].capacity_bytes
    taken = [
        (plan.offsets[n], plan.offsets[n] + problem.buffers[n].size_bytes)
        for n in neighbours[index]
        if plan.pools[n] == pool and problem.buffers[n].size_bytes
    ]
    for start in [0] + [end for _low, end in taken]:
        offset = -(-start // buffer.alignment) * buffer.alignment
        end = offset + buffer.size_bytes
        if (capacity is None or end <= capacity) and all(
            end <= low or high <= offset for low, high in taken
        ):
            return True
    return False


def spills_only_when_needed(problem: Problem, plan: Plan) -> bool:
    """Every buffer placed in a later candidate pool cannot fit in an earlier one next to the
    buffers the final plan keeps there (greedy plans only grow, so this held when it was
    placed)."""
    neighbours = conflict_lists(problem)
    for index, buffer in enumerate(problem.buffers):
        chosen = buffer.pools.index(plan.pools[index])
        if buffer.size_bytes and any(
            fits_somewhere(problem, plan, index, earlier, neighbours)
            for earlier in buffer.pools[:chosen]
        ):
            return False
    return True


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_every_algorithm_gives_a_valid_plan_no_better_than_the_bound(problem: Problem) -> None:
    totals: dict[str, int] = {}
    for algorithm in ALL:
        try:
            result = solve(problem, algorithm, QUICK if algorithm == "local_search" else OPTIONS)
        except PlanningError as error:
            assert "invalid plan" not in str(error)
            continue
        plan = result.plan
        assert validate(problem, plan) == []
        for pool, size in enumerate(result.pool_sizes):
            members = [i for i, p in enumerate(plan.pools) if p == pool]
            assert size >= lower_bound(problem, members)
            capacity = problem.pools[pool].capacity_bytes
            assert capacity is None or size <= capacity
        if algorithm in GREEDY_FAMILY:
            assert spills_only_when_needed(problem, plan)
        totals[algorithm] = sum(result.pool_sizes)
    if "auto" in totals:
        # auto starts from the greedy portfolio, so it is never worse than a greedy variant
        # (local search may beat it: it can move buffers between pools, the exact search not).
        assert all(totals["auto"] <= totals[a] for a in AUTO_STARTS_FROM if a in totals)
    # Whatever a heuristic can plan, auto can plan too.
    if any(a in totals for a in GREEDY_FAMILY):
        assert "auto" in totals


@settings(max_examples=20, deadline=None)
@given(problems())
def test_exact_never_loses_to_the_portfolio_and_its_proofs_hold(problem: Problem) -> None:
    try:
        portfolio = solve(problem, "portfolio", OPTIONS)
    except PlanningError:
        return
    exact = solve(problem, "exact", OPTIONS)
    assert sum(exact.pool_sizes) <= sum(portfolio.pool_sizes)
    if exact.proven_optimal and all(len(b.pools) == 1 for b in problem.buffers):
        # Nothing cheaper than a proven optimum: local search cannot beat it either.
        search = solve(problem, "local_search", QUICK)
        assert sum(search.pool_sizes) >= sum(exact.pool_sizes)
    sizes = pool_sizes_array(
        prepare(problem), np.array(exact.plan.pools), np.array(exact.plan.offsets)
    )
    assert tuple(int(s) for s in sizes) == exact.pool_sizes
