"""Local improvement of a greedy plan: perturb the placement order, re-place, keep the change
when the plan is no worse.

Moves (chosen with a seeded generator, so a run is reproducible for a seed and a number of
iterations):

* pull one of the buffers that reach the highest pool top to the front of the order, so it
  is placed before what it had to sit on;
* swap two buffers of the order (TVM's hill_climb move);

each re-placed with first fit or best fit, whichever the current best plan used. The search
starts from the best greedy variant and stops at the lower bound, at the iteration budget or at
the time limit, or after PATIENCE iterations without a strict improvement.
"""

from __future__ import annotations

import time

import numpy as np

from usmp_dialect.planning import AlgorithmResult, PlanOptions
from usmp_dialect.planning._core import INT, Instance, prepare
from usmp_dialect.planning.greedy import (
    GreedyPlan,
    NoFit,
    best_of_portfolio,
    diagnose_no_fit,
    place,
    plan_cost,
    to_plan,
)
from usmp_dialect.planning.problem import Problem, lower_bound

MAX_ITERATIONS = 2_000
ITERATIONS_PER_BUFFER = 20
"""The iteration budget is min(MAX_ITERATIONS, 100 + ITERATIONS_PER_BUFFER x buffers)."""
PATIENCE = 200
"""Stop after this many iterations without a strict improvement."""


def improve(
    instance: Instance,
    start: GreedyPlan,
    deadline: float,
    seed: int,
    max_iterations: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The best plan (pools, offsets) found from the greedy plan `start`."""
    cost, order, pools, offsets = start.cost, start.order, start.pools, start.offsets
    best_fit = start.best_fit
    bound = sum(
        lower_bound(instance.problem, np.flatnonzero(pools == pool).tolist())
        for pool in range(len(instance.capacities))
    )
    rng = np.random.default_rng(seed)
    count = instance.count
    if max_iterations is None:
        max_iterations = min(MAX_ITERATIONS, 100 + ITERATIONS_PER_BUFFER * count)
    stale = 0
    for _ in range(max_iterations):
        if cost[0] <= bound or count < 2 or stale >= PATIENCE or time.perf_counter() > deadline:
            break
        stale += 1
        candidate = order.copy()
        tops = offsets + instance.sizes
        if rng.random() < 0.5:
            pool_tops = np.zeros(len(instance.capacities), dtype=INT)
            np.maximum.at(pool_tops, pools, tops)
            critical = np.flatnonzero(tops == pool_tops[pools])
            buffer = int(critical[rng.integers(len(critical))])
            position = int(np.flatnonzero(candidate == buffer)[0])
            target = int(rng.integers(position + 1))
            candidate = np.concatenate(
                [
                    candidate[:target],
                    [buffer],
                    candidate[target:position],
                    candidate[position + 1 :],
                ]
            ).astype(INT)
        else:
            first, second = rng.choice(count, size=2, replace=False)
            candidate[[first, second]] = candidate[[second, first]]
        try:
            new_pools, new_offsets = place(instance, candidate, best_fit)
        except NoFit:
            continue
        new_cost = plan_cost(instance, new_pools, new_offsets)
        if new_cost < cost:
            stale = 0
        if new_cost <= cost:  # equal moves too: they let the search cross plateaus
            cost, order, pools, offsets = new_cost, candidate, new_pools, new_offsets
    return pools, offsets


def local_search(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Order perturbation over the best greedy variant, within options.time_limit_s."""
    deadline = time.perf_counter() + options.time_limit_s
    instance = prepare(problem)
    start = best_of_portfolio(instance, deadline=deadline)
    if start is None:
        raise diagnose_no_fit(instance)
    return AlgorithmResult(to_plan(*improve(instance, start, deadline, options.seed)))
