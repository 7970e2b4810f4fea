"""`no_reuse`: the reference lowering, where no two buffers share a byte.

Every buffer gets its own bytes: buffers are stacked one above the other, in index order, in
the first candidate pool where they fit within the pool's capacity, each at the next offset
aligned to the buffer's alignment. It ignores liveness entirely, so a program planned with it
behaves exactly like the unplanned program (every buffer separate). The differential tests
(`usmp_dialect.testing`) compare every real planner against it.
"""

from __future__ import annotations

from usmp_dialect.planning import AlgorithmResult, PlanOptions
from usmp_dialect.planning.problem import Plan, PlanningError, Problem, align_up


def no_reuse(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Places every buffer at its own aligned bytes, consecutively, in its first candidate pool
    with room; raises PlanningError naming the first buffer that fits in none."""
    del options  # nothing to search: the placement is fixed
    tops = [0] * len(problem.pools)
    pools: list[int] = []
    offsets: list[int] = []
    for buffer in problem.buffers:
        for pool in buffer.pools:
            offset = align_up(tops[pool], buffer.alignment)
            capacity = problem.pools[pool].capacity_bytes
            if capacity is None or offset + buffer.size_bytes <= capacity:
                break
        else:
            names = ", ".join(f"'{problem.pools[p].name}'" for p in buffer.pools)
            raise PlanningError(
                f"buffer '{buffer.name}' ({buffer.size_bytes} bytes) does not fit without "
                f"sharing in any of its candidate pools ({names})"
            )
        pools.append(pool)
        offsets.append(offset)
        tops[pool] = offset + buffer.size_bytes
    return AlgorithmResult(Plan(pools=tuple(pools), offsets=tuple(offsets)), exhausted=False)
