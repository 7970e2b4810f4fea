"""`auto`, the default planner: the greedy portfolio, then a proof search.

1. Run the greedy portfolio (fast; on real networks usually at or within 1 % of the bound)
   for at most a share of the time limit (PORTFOLIO_SHARE; less before an exact search of a
   large pool or a size split), though always at least the variants of
   `greedy_first_fit` and `greedy_best_fit`, so `auto` is never worse than either, unless
   the second one would not finish within the time limit (estimated from the first pass:
   only on problems of tens of thousands of buffers, whose first pass alone may exceed it).
2. Stop when every pool is at its lower bound: the plan is then proven optimal.
3. Otherwise spend the rest of options.time_limit_s on the exact branch and bound, which
   stops as soon as it reaches the bound (or proves the best plan optimal), or when its node
   budget (the rest of the time limit at a conservative node rate) is spent, so that its
   result does not depend on machine load. Pools too large for it get the size split
   (`size_split.py`: the exact search on their large buffers, first fit for the small ones
   around them), then the order-perturbing local search for the time left.

When no greedy variant fits the pools' capacities and the pool choice is forced, the exact
search is run at the capacity itself (MiniMalloc's decision problem).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from usmp_dialect.planning import AlgorithmResult, PlanOptions
from usmp_dialect.planning.problem import Problem, lower_bound
from usmp_dialect.planning.tiny import tiny_plan

if TYPE_CHECKING:
    import numpy as np

    from usmp_dialect.planning._core import Instance

EXACT_SHARE = 0.85
"""The share of the time limit the exact search's node budget stands for on pools of fewer
than NEAR_FIRST_BUFFERS buffers."""

PORTFOLIO_SHARE = 0.4
PORTFOLIO_SHARE_BEFORE_EXACT = 0.15
PORTFOLIO_SHARE_BEFORE_SPLIT = 0.3
"""On large pools the exact search's time (directly, or on the large buffers of a size split)
is worth more than more greedy variants."""


def at_lower_bound(instance: Instance, pools: np.ndarray, offsets: np.ndarray) -> bool:
    import numpy as np

    tops = offsets + instance.sizes
    for pool in range(len(instance.capacities)):
        members = np.flatnonzero(pools == pool)
        if len(members) and int(tops[members].max()) > lower_bound(
            instance.problem, members.tolist()
        ):
            return False
    return True


def auto(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Portfolio, then exact search (or local search on huge problems) until the lower bound
    or the time limit. Tiny problems that a first fit solves optimally never import numpy
    (`tiny.py`)."""
    plan = tiny_plan(problem)
    if plan is not None:
        return AlgorithmResult(plan, exhausted=True)
    # Imported here: a tiny problem's start-up does not pay for numpy and the planners.
    from usmp_dialect.planning._core import prepare
    from usmp_dialect.planning.exact import (
        NEAR_FIRST_BUFFERS,
        default_node_budget,
        exact_applicable,
        exact_from,
    )
    from usmp_dialect.planning.greedy import best_of_portfolio, diagnose_no_fit, to_plan
    from usmp_dialect.planning.local_search import improve
    from usmp_dialect.planning.size_split import size_split

    started = time.perf_counter()
    deadline = started + options.time_limit_s
    instance = prepare(problem)
    # The portfolio gets at most PORTFOLIO_SHARE of the time (at least one variant runs); less
    # on large problems that the exact search will take on, where its time is worth more.
    share = PORTFOLIO_SHARE
    if not exact_applicable(instance):
        share = PORTFOLIO_SHARE_BEFORE_SPLIT
    elif instance.count >= NEAR_FIRST_BUFFERS:
        share = PORTFOLIO_SHARE_BEFORE_EXACT
    best = best_of_portfolio(
        instance, deadline=started + share * options.time_limit_s, hard_deadline=deadline
    )
    # The exact search's share of the time limit, as a node budget (deterministic). The
    # portfolio takes a fraction of a second on pools the exact search takes whole.
    exact_share = EXACT_SHARE if instance.count < NEAR_FIRST_BUFFERS else 1 - share
    exact_budget = default_node_budget(options, exact_share)
    if best is None:
        if instance.forced and exact_applicable(instance):
            return exact_from(instance, None, deadline, exact_budget, options)
        raise diagnose_no_fit(instance)
    if at_lower_bound(instance, best.pools, best.offsets):
        return AlgorithmResult(to_plan(best.pools, best.offsets), exhausted=True)
    if exact_applicable(instance):
        return exact_from(instance, best, deadline, exact_budget, options)
    best = size_split(instance, best, deadline, exact_budget, options) or best
    if at_lower_bound(instance, best.pools, best.offsets):
        return AlgorithmResult(to_plan(best.pools, best.offsets), exhausted=True)
    if options.progress:
        options.progress("auto: problem too large for the exact search, local search")
    plan = to_plan(*improve(instance, best, deadline, options.seed))
    return AlgorithmResult(plan, limit_reached=True)
