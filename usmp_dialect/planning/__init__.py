"""The planning library: buffers in, pool offsets out. No xDSL here.

`solve(problem, algorithm)` runs one of `ALGORITHMS` and returns a `PlanResult` with the plan,
the pool sizes, per-pool lower bounds and whether the plan is proven optimal.

The project's own algorithms (TVM's are in `tvm.py`):

* `greedy_first_fit` (size descending, lowest free gap: TFLM's rule), `greedy_best_fit` (size
  then live length, tightest gap: XLA's rule) and `portfolio` (the best of 12 order x fit
  variants) in `greedy.py`;
* `exact`, a MiniMalloc-style branch and bound that proves optima (`exact.py`);
* `local_search`, order perturbation over the best greedy plan (`local_search.py`);
* `auto`, the default: portfolio, then exact search (local search on huge problems) until the
  lower bound or options.time_limit_s (`auto.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

from usmp_dialect.planning.problem import (
    Buffer,
    Plan,
    PlanningError,
    PlanResult,
    Pool,
    Problem,
    ProblemError,
    check_problem,
    lower_bound,
    pool_sizes,
    validate,
)

__all__ = [
    "ALGORITHMS",
    "AlgorithmResult",
    "Buffer",
    "Plan",
    "PlanOptions",
    "PlanResult",
    "PlanningError",
    "Pool",
    "Problem",
    "ProblemError",
    "lower_bound",
    "solve",
    "validate",
]


@dataclass(frozen=True)
class PlanOptions:
    """What every algorithm is given besides the problem."""

    time_limit_s: float = 10.0
    seed: int = 0
    progress: Callable[[str], None] | None = None
    """Called with a one-line status while a long search runs (the CLI prints it)."""
    node_budget: int | None = None
    """Nodes the exact search (in `exact` and `auto`) may visit; None derives it from the
    share of time_limit_s the search gets, at a node rate this machine class beats even when
    loaded, so that the budget, not the clock, ends searches and the plan does not depend on
    machine load."""


@dataclass(frozen=True)
class AlgorithmResult:
    """An algorithm's answer: a plan, and whether its search proved no better plan exists."""

    plan: Plan
    exhausted: bool = False
    limit_reached: bool = False
    """The search stopped at its node budget or time limit (see PlanResult.limit_reached)."""
    budget_stopped: bool = False
    """It was the node budget, not the clock, that stopped it."""


Algorithm = Callable[[Problem, PlanOptions], AlgorithmResult]

# algorithm name -> (module under usmp_dialect.planning, function name); loaded lazily.
ALGORITHMS: dict[str, tuple[str, str]] = {
    "auto": ("auto", "auto"),
    "greedy_first_fit": ("greedy", "greedy_first_fit"),
    "greedy_best_fit": ("greedy", "greedy_best_fit"),
    "portfolio": ("greedy", "portfolio"),
    "exact": ("exact", "exact"),
    "local_search": ("local_search", "local_search"),
    "greedy_by_size": ("tvm", "greedy_by_size"),
    "greedy_by_conflicts": ("tvm", "greedy_by_conflicts"),
    "hill_climb": ("tvm", "hill_climb"),
    "no_reuse": ("reference", "no_reuse"),
}


def get_algorithm(name: str) -> Algorithm:
    if name not in ALGORITHMS:
        known = ", ".join(sorted(ALGORITHMS))
        raise ProblemError(f"unknown algorithm '{name}' (known: {known})")
    module, function = ALGORITHMS[name]
    return getattr(import_module(f"usmp_dialect.planning.{module}"), function)


def solve(
    problem: Problem,
    algorithm: str = "auto",
    options: PlanOptions | None = None,
) -> PlanResult:
    """Plans `problem` with `algorithm`; raises ProblemError for malformed problems and
    PlanningError when the buffers cannot be placed within the pools' capacities."""
    options = options or PlanOptions()
    check_problem(problem)
    run = get_algorithm(algorithm)
    started = time.perf_counter()
    result = run(problem, options)
    elapsed_s = time.perf_counter() - started
    errors = validate(problem, result.plan)
    if errors:
        raise PlanningError(f"algorithm '{algorithm}' produced an invalid plan: {errors[0]}")
    sizes = pool_sizes(problem, result.plan)
    bounds = tuple(
        lower_bound(problem, [i for i, p in enumerate(result.plan.pools) if p == pool])
        for pool in range(len(problem.pools))
    )
    proven = result.exhausted or all(s == b for s, b in zip(sizes, bounds, strict=True))
    ran_out_of_time = elapsed_s >= options.time_limit_s
    limit_reached = not proven and (result.limit_reached or ran_out_of_time)
    return PlanResult(
        plan=result.plan,
        algorithm=algorithm,
        pool_sizes=sizes,
        lower_bounds=bounds,
        proven_optimal=proven,
        time_s=elapsed_s,
        limit_reached=limit_reached,
        budget_stopped=limit_reached and result.budget_stopped and not ran_out_of_time,
    )
