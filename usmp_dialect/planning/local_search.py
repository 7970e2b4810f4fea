"""Local improvement of a greedy plan: perturb the placement order, re-place, keep the change
when the plan is no worse.

Moves (chosen with a seeded generator, so a run is reproducible for a seed and a number of
iterations):

* pull one of the buffers that reach the highest pool top to the front of the order, so it
  is placed before what it had to sit on;
* swap two buffers of the order (TVM's hill_climb move);

each re-placed with first fit or best fit, whichever the current best plan used;

* repair (ruin and recreate): take out the buffers at the top of a pool at its peak and place
  them again, in another order, around the others (cheap on huge problems, where it is the
  only move).

The search starts from the best greedy variant and stops at the lower bound, at the iteration
budget or at the time limit (no move starts that the slowest one so far says would end past
it), or after PATIENCE iterations without a strict improvement.
"""

from __future__ import annotations

import time

import numpy as np

from usmp_dialect.planning import AlgorithmResult, PlanOptions
from usmp_dialect.planning._core import INT, Instance, find_offset, prepare
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
REPAIR_SHARE = 0.25
"""The share of `repair` moves (the rest perturb the whole order and re-place everything)."""
REPAIR_ONLY_ABOVE = 4_000
"""Above this many buffers a whole re-placement is too slow to repeat: every move repairs."""
REPAIR_LOCAL_SHARE = 0.5
"""The share of repairs that take out only buffers live with a critical one."""
REPAIR_MIN = 8
REPAIR_MAX = 400
"""How many of the highest buffers a repair takes out: random in [REPAIR_MIN, REPAIR_MAX]."""


def repair(
    instance: Instance,
    pools: np.ndarray,
    offsets: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """A ruin-and-recreate move: takes out the buffers at the top of a pool that reaches its
    peak (those ending above the k-th highest end, k random up to REPAIR_MAX) and places them
    again, in a perturbed size order or a random one, with first or best fit, around the
    buffers left in place (which may offer them gaps lower down). Raises NoFit."""
    sizes = instance.sizes
    tops = offsets + sizes
    pool_tops = np.zeros(len(instance.capacities), dtype=INT)
    np.maximum.at(pool_tops, pools, tops)
    critical = np.flatnonzero((tops == pool_tops[pools]) & (sizes > 0))
    chosen = int(critical[rng.integers(len(critical))])
    pool = int(pools[chosen])
    members = np.flatnonzero((pools == pool) & (sizes > 0))
    if rng.random() < REPAIR_LOCAL_SHARE:
        # Only the buffers live with the critical one: a deeper ruin where the peak is.
        neighbours = _time_neighbours(instance, chosen)
        local = neighbours[(pools[neighbours] == pool) & (sizes[neighbours] > 0)]
        members = np.union1d(local, [chosen])
    most = min(len(members), REPAIR_MAX)
    count = int(rng.integers(min(most, REPAIR_MIN), most + 1))
    threshold = np.partition(tops[members], len(members) - count)[len(members) - count]
    removed = members[tops[members] >= threshold]
    if rng.random() < 0.5:
        removed = rng.permutation(removed)
    else:
        removed = removed[np.lexsort((removed, -sizes[removed]))]
        for _ in range(int(rng.integers(1, 4))):
            first, second = rng.integers(len(removed), size=2)
            removed[[first, second]] = removed[[second, first]]
    kept = np.ones(instance.count, dtype=bool)
    kept[removed] = False
    return place(instance, removed, bool(rng.random() < 0.5), fixed=(pools, offsets, kept))


def _time_neighbours(instance: Instance, buffer: int) -> np.ndarray:
    """The buffers live at some time `buffer` is (explicit conflicts aside), sorted."""
    if instance.use_adjacency():
        indptr, indices = instance.adjacency()
        return indices[indptr[buffer] : indptr[buffer + 1]]
    index = instance.index()
    found = [
        index.owners_overlapping(int(instance.item_start[item]), int(instance.item_end[item]))
        for item in instance.buffer_items[buffer].tolist()
    ]
    return np.unique(np.concatenate(found)) if found else np.empty(0, dtype=INT)


def needless_spill(instance: Instance, pools: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether some buffer sits in a later candidate pool although it would fit, next to the
    plan's other buffers, in an earlier one (a repair re-places only some buffers, so it can
    leave one there after making room; greedy plans never do)."""
    if instance.forced:
        return False
    sizes = instance.sizes
    for buffer, candidates in enumerate(instance.candidate_pools):
        chosen = candidates.index(int(pools[buffer]))
        if not chosen or not sizes[buffer]:
            continue
        neighbours = np.union1d(
            _time_neighbours(instance, buffer),
            instance.explicit_indices[
                instance.explicit_indptr[buffer] : instance.explicit_indptr[buffer + 1]
            ],
        )
        neighbours = neighbours[(neighbours != buffer) & (sizes[neighbours] > 0)]
        for pool in candidates[:chosen]:
            others = neighbours[pools[neighbours] == pool]
            if (
                find_offset(
                    offsets[others],
                    offsets[others] + sizes[others],
                    int(sizes[buffer]),
                    int(instance.alignments[buffer]),
                    int(instance.capacities[pool]),
                    False,
                )
                >= 0
            ):
                return True
    return False


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
    slowest = {True: 0.0, False: 0.0}  # per move kind (repair?), the longest one so far
    for _ in range(max_iterations):
        started = time.perf_counter()
        if cost[0] <= bound or count < 2 or stale >= PATIENCE or started > deadline:
            break
        stale += 1
        move = rng.random()
        is_repair = count > REPAIR_ONLY_ABOVE or move < REPAIR_SHARE
        if started + slowest[is_repair] > deadline:
            break  # it would likely end past the deadline (estimated by the slowest so far)
        try:
            if is_repair:
                new_pools, new_offsets = repair(instance, pools, offsets, rng)
                candidate = order
            else:
                candidate = _perturbed(instance, order, pools, offsets, rng)
                new_pools, new_offsets = place(instance, candidate, best_fit)
        except NoFit:
            continue
        finally:
            slowest[is_repair] = max(slowest[is_repair], time.perf_counter() - started)
        new_cost = plan_cost(instance, new_pools, new_offsets)
        if is_repair and new_cost <= cost and needless_spill(instance, new_pools, new_offsets):
            continue  # candidate order comes first: no buffer may spill that need not
        if new_cost < cost:
            stale = 0
        if new_cost <= cost:  # equal moves too: they let the search cross plateaus
            cost, order, pools, offsets = new_cost, candidate, new_pools, new_offsets
    return pools, offsets


def _perturbed(
    instance: Instance,
    order: np.ndarray,
    pools: np.ndarray,
    offsets: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """`order` with one critical buffer pulled forward, or two buffers swapped."""
    candidate = order.copy()
    count = len(order)
    if rng.random() < 0.5:
        tops = offsets + instance.sizes
        pool_tops = np.zeros(len(instance.capacities), dtype=INT)
        np.maximum.at(pool_tops, pools, tops)
        critical = np.flatnonzero(tops == pool_tops[pools])
        buffer = int(critical[rng.integers(len(critical))])
        position = int(np.flatnonzero(candidate == buffer)[0])
        target = int(rng.integers(position + 1))
        return np.concatenate(
            [candidate[:target], [buffer], candidate[target:position], candidate[position + 1 :]]
        ).astype(INT)
    first, second = rng.choice(count, size=2, replace=False)
    candidate[[first, second]] = candidate[[second, first]]
    return candidate


def local_search(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Order perturbation over the best greedy variant, within options.time_limit_s."""
    deadline = time.perf_counter() + options.time_limit_s
    instance = prepare(problem)
    start = best_of_portfolio(instance, deadline=deadline, hard_deadline=deadline)
    if start is None:
        raise diagnose_no_fit(instance)
    return AlgorithmResult(to_plan(*improve(instance, start, deadline, options.seed)))
