"""Size split: the exact search on a pool's large buffers, then the greedy fits the small ones
around them.

For pools too large for the exact search (IOPDDL S_1: 28,526 buffers and 86M conflict pairs,
Y_1: 62,185 and 360M), the bytes live at the peak are nearly all in a few thousand large
buffers, while the many small ones (most of the conflict pairs) are a fraction of a percent
of the load. Packing the large ones exactly (at or near their own lower bound) leaves gaps
that first fit fills with the small ones without raising the peak: Y_1 reaches the lower bound
itself and S_1 comes within 0.002 % of it, where every greedy order stays 0.25-4 % above.

The threshold is the smallest power of two for which the large buffers' conflict graph stays
within SPLIT_EDGE_LIMIT pairs, so that building and searching it fits in seconds.
"""

from __future__ import annotations

import time

import numpy as np

from usmp_dialect.planning import PlanOptions
from usmp_dialect.planning._core import INT, Instance, interval_degrees, prepare
from usmp_dialect.planning.exact import NodeBudget, minimise_pool
from usmp_dialect.planning.greedy import GreedyPlan, NoFit, order_of, place, plan_cost
from usmp_dialect.planning.problem import Problem

SPLIT_EDGE_LIMIT = 4_000_000
"""Most conflict pairs (counted both ways) among the large buffers searched exactly: the
threshold comes out at 256 KiB on S_1 (5,844 buffers, 95 % of the peak load) and 128 MiB on
Y_1 (6,554 buffers, 91 %), whose large parts the exact search packs at their bound in about
a second."""

SPLIT_MIN_BUFFERS = 2
SMALL_ORDERS = (("size", False), ("conflicts", False))
"""Greedy variants that place the small buffers around the large ones (the best one is kept)."""

PLACEMENT_RESERVE = 0.25
"""Share of the time left that the exact search leaves for placing the small buffers."""


def overlap_pairs(instance: Instance, mask: np.ndarray) -> int:
    """Conflict pairs (both ways, plus each interval with itself) among the items of the
    buffers in `mask`: the size of their conflict graph."""
    chosen = mask[instance.item_owner]
    return int(interval_degrees(instance.item_start[chosen], instance.item_end[chosen]).sum())


def split_threshold(instance: Instance, members: np.ndarray) -> int | None:
    """The smallest power-of-two size whose larger members have at most SPLIT_EDGE_LIMIT
    conflict pairs, or None when no such split leaves both sides non-empty."""
    sizes = instance.sizes[members]
    largest = int(sizes.max()) if len(sizes) else 0
    threshold = 1
    while threshold <= largest:
        mask = np.zeros(instance.count, dtype=bool)
        mask[members[sizes >= threshold]] = True
        large = int(mask.sum())
        if large < len(members) and overlap_pairs(instance, mask) <= SPLIT_EDGE_LIMIT:
            return threshold if large >= SPLIT_MIN_BUFFERS else None
        threshold *= 2
    return None


def size_split(
    instance: Instance,
    start: GreedyPlan,
    deadline: float,
    budget: NodeBudget,
    options: PlanOptions,
) -> GreedyPlan | None:
    """A plan better than `start` found by the size split, or None. Applies
    to problems without explicit conflicts whose buffers each have one candidate pool (the
    pools are then fixed; each is split on its own)."""
    problem = instance.problem
    if instance.has_explicit or not instance.forced:
        return None
    pools, offsets = start.pools, start.offsets.copy()
    large = np.zeros(instance.count, dtype=bool)
    for pool in range(len(problem.pools)):
        members = np.flatnonzero((pools == pool) & (instance.sizes > 0))
        threshold = split_threshold(instance, members)
        if threshold is None:
            continue
        chosen = members[instance.sizes[members] >= threshold]
        if options.progress:
            options.progress(
                f"auto: size split of pool '{problem.pools[pool].name}': exact search on the "
                f"{len(chosen)} buffers of at least {threshold} bytes"
            )
        # The large buffers alone, as a problem of their own (no explicit conflicts to renumber).
        part = prepare(Problem(tuple(problem.buffers[i] for i in chosen.tolist()), problem.pools))
        reserve = PLACEMENT_RESERVE * max(0.0, deadline - time.perf_counter())
        found, _optimal = minimise_pool(
            part,
            np.arange(len(chosen), dtype=INT),
            offsets[chosen],
            int(instance.capacities[pool]),
            deadline - reserve,
            budget,
            options.progress,
        )
        if found is not None:
            offsets[chosen] = found
            large[chosen] = True
    if not large.any():
        return None
    best: GreedyPlan | None = None
    slowest = 0.0
    for position, (order_name, best_fit) in enumerate(SMALL_ORDERS):
        started = time.perf_counter()
        if position and started + slowest > deadline:
            break  # the first variant always runs: it completes the plan
        order = order_of(instance, order_name)
        try:
            placed = place(instance, order[~large[order]], best_fit, fixed=(pools, offsets, large))
        except NoFit:
            continue
        finally:
            slowest = max(slowest, time.perf_counter() - started)
        cost = plan_cost(instance, *placed)
        if cost < (start.cost if best is None else best.cost):
            best = GreedyPlan(*placed, start.order, start.best_fit, "size split", cost)
    return best
