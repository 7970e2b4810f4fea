"""Gap-aware greedy placement and the portfolio of greedy variants.

Buffers are taken in a fixed order; each goes into the first of its candidate pools where it
fits, at the lowest free aligned offset among the already-placed buffers it conflicts with
(first fit, TFLM's GreedyMemoryPlanner rule) or in the smallest free gap that holds it (best
fit, XLA's GlobalDecreasingSizeBestFitHeap rule), else on top. Unlike TVM's greedy algorithms,
gaps below the top are reused.

Orders (all ties broken by buffer index, so results are deterministic):

* `size`: size descending (TFLM, TVM's greedy_by_size without its name tie-break);
* `size_length`: size, then live length descending (XLA's spatial order);
* `area`: size x live length descending;
* `length`: live length, then size descending (XLA's temporal order);
* `conflicts`: number of conflicting buffers, then size descending (TVM's greedy_by_conflicts);
* `start`: first live time ascending, then size descending (program order, as IREE).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from usmp_dialect.planning import AlgorithmResult, PlanOptions
from usmp_dialect.planning._core import INT, Instance, find_offset, prepare
from usmp_dialect.planning.problem import Plan, PlanningError, Problem

ORDERS = ("size", "size_length", "area", "length", "conflicts", "start")
FITS = ("first", "best")

EDGE_BUDGET = 60_000_000
"""A greedy pass costs about one unit per conflict pair: the portfolio runs as many variants
(strongest first) as fit in this many units, at least one, so that it stays within seconds
on tens of thousands of buffers."""

VARIANTS = (
    ("size", "first"),
    ("size_length", "best"),
    ("area", "first"),
    ("size", "best"),
    ("size_length", "first"),
    ("area", "best"),
    ("conflicts", "first"),
    ("conflicts", "best"),
    ("length", "first"),
    ("length", "best"),
    ("start", "first"),
    ("start", "best"),
)
"""Every order x fit, the ones that most often win on real networks first."""


class NoFit(Exception):
    """Raised by `place` when a buffer fits in none of its candidate pools."""

    def __init__(self, buffer: int) -> None:
        super().__init__(buffer)
        self.buffer = buffer


def live_lengths(instance: Instance) -> np.ndarray:
    """Per buffer, the total length of its live intervals."""
    lengths = np.zeros(instance.count, dtype=INT)
    np.add.at(lengths, instance.item_owner, instance.item_end - instance.item_start)
    return lengths


def first_starts(instance: Instance) -> np.ndarray:
    starts = np.full(instance.count, np.iinfo(INT).max, dtype=INT)
    np.minimum.at(starts, instance.item_owner, instance.item_start)
    return starts


def degrees(instance: Instance) -> np.ndarray:
    """Per buffer, how many buffers it conflicts with (estimated from interval counts when the
    conflict graph is too big to build)."""
    if instance.use_adjacency():
        return np.diff(instance.adjacency()[0])
    starts = np.sort(instance.item_start)
    ends = np.sort(instance.item_end)
    item_degrees = np.searchsorted(starts, instance.item_end, "left") - np.searchsorted(
        ends, instance.item_start, "right"
    )
    result = np.diff(instance.explicit_indptr).astype(INT)
    np.add.at(result, instance.item_owner, item_degrees - 1)
    return result


def order_of(instance: Instance, name: str) -> np.ndarray:
    """The buffer indices in the order called `name` (see the module docstring)."""
    index = np.arange(instance.count, dtype=INT)
    sizes = instance.sizes
    if name == "size":
        keys: tuple[np.ndarray, ...] = (index, -sizes)
    elif name == "size_length":
        keys = (index, -live_lengths(instance), -sizes)
    elif name == "area":
        # float keeps size x length from overflowing int64; ties fall to size, then index.
        area = sizes.astype(np.float64) * live_lengths(instance).astype(np.float64)
        keys = (index, -sizes, -area)
    elif name == "length":
        keys = (index, -sizes, -live_lengths(instance))
    elif name == "conflicts":
        keys = (index, -sizes, -degrees(instance))
    elif name == "start":
        keys = (index, -sizes, first_starts(instance))
    else:
        raise ValueError(f"unknown greedy order '{name}'")
    return np.lexsort(keys)


def place(
    instance: Instance, order: Iterable[int], best_fit: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Places the buffers in `order`; returns (pools, offsets). Raises NoFit."""
    if not instance.use_adjacency():
        return _place_indexed(instance, order, best_fit)
    count = instance.count
    sizes = instance.sizes
    alignments = instance.alignments
    capacities = instance.capacities
    candidates = instance.candidate_pools
    placed_pool = np.full(count, -1, dtype=INT)
    offsets = np.zeros(count, dtype=INT)
    highs = np.zeros(count, dtype=INT)
    indptr, indices = instance.adjacency()
    for buffer in (int(b) for b in order):
        size = int(sizes[buffer])
        pools = candidates[buffer]
        if size == 0:
            placed_pool[buffer] = pools[0]
            continue
        others = indices[indptr[buffer] : indptr[buffer + 1]]
        other_pools = placed_pool[others]
        alignment = int(alignments[buffer])
        for pool in pools:
            chosen = others[other_pools == pool]
            offset = find_offset(
                offsets[chosen], highs[chosen], size, alignment, int(capacities[pool]), best_fit
            )
            if offset >= 0:
                placed_pool[buffer] = pool
                offsets[buffer] = offset
                highs[buffer] = offset + size
                break
        else:
            raise NoFit(buffer)
    return placed_pool, offsets


def _place_indexed(
    instance: Instance, order: Iterable[int], best_fit: bool
) -> tuple[np.ndarray, np.ndarray]:
    """`place` for problems whose conflict graph is too big to build: overlaps come from the
    interval index, whose positions carry the placed pool and byte range of their buffer (so a
    query reads contiguous state without going through buffer indices)."""
    count = instance.count
    sizes = instance.sizes
    alignments = instance.alignments
    capacities = instance.capacities
    candidates = instance.candidate_pools
    index = instance.index()
    positions_of = [index.position_of_item[items] for items in instance.buffer_items]
    starts, ends = instance.item_start, instance.item_end
    # Per pool, per index position: the interval's end once its buffer is placed in that
    # pool, else a time before everything (so one comparison finds placed overlaps).
    never = np.iinfo(INT).min
    end_in_pool = {
        pool: np.full(len(index.keys), never, dtype=INT) for pool in range(len(capacities))
    }
    low_at = np.zeros(len(index.keys), dtype=INT)
    high_at = np.zeros(len(index.keys), dtype=INT)
    index_end = index.end
    placed_pool = np.full(count, -1, dtype=INT)
    offsets = np.zeros(count, dtype=INT)
    highs = np.zeros(count, dtype=INT)
    explicit_indptr, explicit_indices = instance.explicit_indptr, instance.explicit_indices
    for buffer in (int(b) for b in order):
        size = int(sizes[buffer])
        pools = candidates[buffer]
        if size == 0:
            placed_pool[buffer] = pools[0]
            continue
        items = instance.buffer_items[buffer].tolist()
        nears = [index.positions_near(int(starts[i]), int(ends[i])) for i in items]
        explicit = explicit_indices[explicit_indptr[buffer] : explicit_indptr[buffer + 1]]
        alignment = int(alignments[buffer])
        for pool in pools:
            placed_ends = end_in_pool[pool]
            parts = [
                near[placed_ends[near] > starts[item]]
                for item, near in zip(items, nears, strict=True)
            ]
            chosen = parts[0] if len(parts) == 1 else np.concatenate(parts)
            lows, tops = low_at[chosen], high_at[chosen]
            if len(explicit):
                others = explicit[placed_pool[explicit] == pool]
                lows = np.concatenate([lows, offsets[others]])
                tops = np.concatenate([tops, highs[others]])
            offset = find_offset(lows, tops, size, alignment, int(capacities[pool]), best_fit)
            if offset >= 0:
                placed_pool[buffer] = pool
                offsets[buffer] = offset
                highs[buffer] = offset + size
                own = positions_of[buffer]
                placed_ends[own] = index_end[own]
                low_at[own] = offset
                high_at[own] = offset + size
                break
        else:
            raise NoFit(buffer)
    return placed_pool, offsets


def plan_cost(instance: Instance, pools: np.ndarray, offsets: np.ndarray) -> tuple[int, ...]:
    """How good a plan is, smaller is better: total bytes over all pools, then the pool sizes
    in preference order."""
    sizes = pool_sizes_array(instance, pools, offsets)
    return (int(sizes.sum()), *(int(s) for s in sizes))


def pool_sizes_array(instance: Instance, pools: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    result = np.zeros(len(instance.capacities), dtype=INT)
    np.maximum.at(result, pools, offsets + instance.sizes)
    return result


def no_fit_error(instance: Instance, buffer: int) -> PlanningError:
    problem = instance.problem
    name = problem.buffers[buffer].name
    pools = ", ".join(f"'{problem.pools[p].name}'" for p in instance.candidate_pools[buffer])
    return PlanningError(
        f"buffer '{name}' ({int(instance.sizes[buffer])} bytes) does not fit in any of its "
        f"candidate pools ({pools}) within their capacities"
    )


def diagnose_no_fit(instance: Instance) -> PlanningError:
    """The error to raise when no greedy variant fits: names the buffer size-first-fit could
    not place."""
    try:
        place(instance, order_of(instance, "size"), False)
    except NoFit as failure:
        return no_fit_error(instance, failure.buffer)
    return PlanningError("no greedy variant fits the buffers within the pools' capacities")


def run_variant(instance: Instance, order: str, fit: str) -> Plan:
    try:
        pools, offsets = place(instance, order_of(instance, order), fit == "best")
    except NoFit as failure:
        raise no_fit_error(instance, failure.buffer) from None
    return to_plan(pools, offsets)


def to_plan(pools: np.ndarray, offsets: np.ndarray) -> Plan:
    return Plan(pools=tuple(int(p) for p in pools), offsets=tuple(int(o) for o in offsets))


MANDATORY_VARIANTS = 2
"""The portfolio always runs the first two variants, greedy_first_fit's and greedy_best_fit's,
so that it (and `auto`) is never worse than either, even past a deadline."""


def portfolio_variants(instance: Instance) -> list[tuple[str, str]]:
    """The variants the portfolio runs on `instance`: all of them unless it is huge."""
    affordable = EDGE_BUDGET // max(1, instance.estimated_edges())
    return list(VARIANTS[: max(MANDATORY_VARIANTS, min(len(VARIANTS), affordable))])


@dataclass(frozen=True)
class GreedyPlan:
    """A greedy placement and how it was made."""

    pools: np.ndarray
    offsets: np.ndarray
    order: np.ndarray
    best_fit: bool
    variant: str
    cost: tuple[int, ...]


def best_of_portfolio(
    instance: Instance,
    variants: list[tuple[str, str]] | None = None,
    deadline: float | None = None,
) -> GreedyPlan | None:
    """The best plan over the greedy variants, or None when no variant fits within the
    capacities. With a deadline, stops after the variant that passes it (the mandatory
    variants always run)."""
    best: GreedyPlan | None = None
    for position, (order_name, fit) in enumerate(variants or portfolio_variants(instance)):
        if (
            position >= MANDATORY_VARIANTS
            and deadline is not None
            and time.perf_counter() > deadline
        ):
            break
        order = order_of(instance, order_name)
        try:
            pools, offsets = place(instance, order, fit == "best")
        except NoFit:
            continue
        cost = plan_cost(instance, pools, offsets)
        if best is None or cost < best.cost:
            best = GreedyPlan(pools, offsets, order, fit == "best", f"{order_name}/{fit}", cost)
    return best


# --- algorithms (registered in usmp_dialect.planning.ALGORITHMS) ---------------------------


def greedy_first_fit(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Size descending, first fit into gaps (TFLM's GreedyMemoryPlanner)."""
    return AlgorithmResult(run_variant(prepare(problem), "size", "first"))


def greedy_best_fit(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Size then live length descending, best fit (XLA's spatial heap)."""
    return AlgorithmResult(run_variant(prepare(problem), "size_length", "best"))


def portfolio(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """The best of every order x fit combination (fewer, strongest first, on huge
    problems: see EDGE_BUDGET)."""
    instance = prepare(problem)
    best = best_of_portfolio(instance)
    if best is None:
        raise diagnose_no_fit(instance)
    return AlgorithmResult(to_plan(best.pools, best.offsets))
