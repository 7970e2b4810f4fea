"""The planning library: buffers in, pool offsets out. No xDSL here.

`solve(problem, algorithm)` runs one of `ALGORITHMS` and returns a `PlanResult` with the plan,
the pool sizes, per-pool lower bounds and whether the plan is proven optimal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module

from usmp_dialect.planning.problem import (
    Buffer,
    Plan,
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


@dataclass(frozen=True)
class AlgorithmResult:
    """An algorithm's answer: a plan, and whether its search proved no better plan exists."""

    plan: Plan
    exhausted: bool = False


Algorithm = Callable[[Problem, PlanOptions], AlgorithmResult]

# algorithm name -> (module under usmp_dialect.planning, function name); loaded lazily.
ALGORITHMS: dict[str, tuple[str, str]] = {}


class PlanningError(ValueError):
    """No valid plan exists within the pools' capacities (or the algorithm found none)."""


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
    return PlanResult(
        plan=result.plan,
        algorithm=algorithm,
        pool_sizes=sizes,
        lower_bounds=bounds,
        proven_optimal=proven,
        time_s=elapsed_s,
    )
