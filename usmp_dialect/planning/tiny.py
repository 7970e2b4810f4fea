"""A numpy-free plan for tiny problems, so that `usmp-plan` starts fast on them.

Importing numpy (and the planners built on it) costs most of a small run's start-up. On a
one-pool problem of at most TINY_BUFFERS buffers, `auto` first places the buffers as
`greedy_first_fit` does (size descending, ties by index, each at the lowest aligned free
offset among the placed buffers it conflicts with), in plain Python. When that plan is at the
pool's lower bound it is proven optimal, and it is the plan the full `auto` would return (the
portfolio's first variant, which no other variant can beat, and earlier ones win ties), so
numpy is never imported; otherwise `auto` runs in full.
"""

from __future__ import annotations

from usmp_dialect.planning.problem import Plan, Problem, align_up, lower_bound, merged_intervals

TINY_BUFFERS = 32


def first_fit(problem: Problem) -> Plan | None:
    """greedy_first_fit's plan of a one-pool problem, or None when a buffer does not fit
    the pool's capacity."""
    buffers = problem.buffers
    capacity = problem.pools[0].capacity_bytes
    intervals = [merged_intervals(b.live) if b.size_bytes else [] for b in buffers]
    explicit = [set(b.conflicts) for b in buffers]
    for index, buffer in enumerate(buffers):
        for other in buffer.conflicts:
            explicit[other].add(index)

    def conflict(a: int, b: int) -> bool:
        if b in explicit[a]:
            return True
        return any(s < e2 and s2 < e for s, e in intervals[a] for s2, e2 in intervals[b])

    offsets = [0] * len(buffers)
    placed: list[int] = []
    for index in sorted(range(len(buffers)), key=lambda i: (-buffers[i].size_bytes, i)):
        size = buffers[index].size_bytes
        if not size:
            continue
        ranges = sorted(
            (offsets[other], offsets[other] + buffers[other].size_bytes)
            for other in placed
            if conflict(index, other)
        )
        offset = None
        gap_low = 0
        for low, high in [*ranges, (None, None)]:
            candidate = align_up(gap_low, buffers[index].alignment)
            fits_gap = low is None or candidate + size <= low
            if fits_gap and (capacity is None or candidate + size <= capacity):
                offset = candidate
                break
            if high is None:
                break
            gap_low = max(gap_low, high)
        if offset is None:
            return None
        offsets[index] = offset
        placed.append(index)
    return Plan(pools=(0,) * len(buffers), offsets=tuple(offsets))


def tiny_plan(problem: Problem) -> Plan | None:
    """The proven optimal plan `auto` returns on a tiny one-pool problem whose first fit is at
    the lower bound; None when `auto` has to run in full."""
    if len(problem.pools) != 1 or len(problem.buffers) > TINY_BUFFERS:
        return None
    plan = first_fit(problem)
    if plan is None:
        return None
    peak = max(
        (o + b.size_bytes for o, b in zip(plan.offsets, problem.buffers, strict=True)), default=0
    )
    return plan if peak <= lower_bound(problem) else None
