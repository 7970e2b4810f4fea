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

import ctypes
import os
import time
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from usmp_dialect.planning import AlgorithmResult, PlanOptions, native
from usmp_dialect.planning._core import (
    INT,
    Instance,
    IntervalIndex,
    find_offset,
    interval_degrees,
    prepare,
    run_positions,
)
from usmp_dialect.planning.problem import Plan, PlanningError, Problem

ORDERS = ("size", "size_length", "area", "length", "conflicts", "start")
FITS = ("first", "best")

EDGE_BUDGET = 60_000_000
"""With numpy, a greedy pass costs about one unit per conflict pair: the portfolio runs as many
variants (strongest first) as fit in this many units, at least two, so that it stays within
seconds on tens of thousands of buffers."""

NATIVE_BUFFER_BUDGET = 150_000
"""With the native core a pass costs about one unit per buffer (times a logarithm): as many
variants as fit in this many units (all twelve up to 12,500 buffers, two on 62k)."""

VARIANTS = (
    ("size", "first"),
    ("size_length", "best"),
    ("conflicts", "best"),  # the best on IOPDDL S_1 (+0.25 % where the others are >= +2.5 %)
    ("area", "first"),
    ("size", "best"),
    ("size_length", "first"),
    ("area", "best"),
    ("conflicts", "first"),
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
    """Per buffer, how many buffers it conflicts with: counted from the sorted interval ends
    (exact when every buffer has at most one interval and there are no explicit conflicts,
    an estimate when the conflict graph is too big to build), else from the graph."""
    single_intervals = len(instance.item_owner) == len(np.unique(instance.item_owner))
    if instance.use_adjacency() and (instance.has_explicit or not single_intervals):
        return np.diff(instance.adjacency()[0])
    item_degrees = interval_degrees(instance.item_start, instance.item_end)
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


Fixed = tuple[np.ndarray, np.ndarray, np.ndarray]
"""Buffers already placed before a `place` call: (pools, offsets, mask of the placed ones)."""


def _initial_state(
    instance: Instance, fixed: Fixed | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(placed pool or -1, offsets, highs) of the buffers placed before the first of `order`."""
    count = instance.count
    if fixed is None:
        return np.full(count, -1, dtype=INT), np.zeros(count, dtype=INT), np.zeros(count, INT)
    pools, offsets, mask = fixed
    placed_pool = np.where(mask, pools, -1).astype(INT)
    placed_offsets = np.where(mask, offsets, 0).astype(INT)
    return placed_pool, placed_offsets, placed_offsets + np.where(mask, instance.sizes, 0)


def place(
    instance: Instance, order: Iterable[int], best_fit: bool, fixed: Fixed | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Places the buffers in `order` around the `fixed` ones (none by default); returns
    (pools, offsets) of every buffer placed (the others keep pool -1). Raises NoFit."""
    library = native.load()
    if library is not None:
        return _place_native(library, instance, order, best_fit, fixed)
    return place_numpy(instance, order, best_fit, fixed)


def _place_native(
    library: ctypes.CDLL,
    instance: Instance,
    order: Iterable[int],
    best_fit: bool,
    fixed: Fixed | None,
) -> tuple[np.ndarray, np.ndarray]:
    """`place` in C (csrc/greedy.c): the same plans as `place_numpy`."""
    placed_pool, offsets, _ = _initial_state(instance, fixed)
    order_array = native.int64_array(np.fromiter(order, dtype=INT))
    flat = instance.flat()
    # Bound to names so that the arrays outlive the call that reads them.
    sizes, alignments, capacities = (
        native.int64_array(a) for a in (instance.sizes, instance.alignments, instance.capacities)
    )
    start, end = (native.int64_array(a) for a in (instance.item_start, instance.item_end))
    explicit_indptr = native.int64_array(instance.explicit_indptr)
    explicit_indices = native.int64_array(instance.explicit_indices)
    failed = library.usmp_greedy_place(
        instance.count,
        native.pointer(sizes),
        native.pointer(alignments),
        native.pointer(flat.candidate_indptr),
        native.pointer(flat.candidate_pools),
        len(capacities),
        native.pointer(capacities),
        len(start),
        native.pointer(start),
        native.pointer(end),
        native.pointer(flat.item_indptr),
        native.pointer(flat.items),
        native.pointer(explicit_indptr),
        native.pointer(explicit_indices),
        native.pointer(order_array),
        len(order_array),
        int(best_fit),
        native.pointer(placed_pool),
        native.pointer(offsets),
    )
    if failed == -2:
        raise MemoryError("the native greedy placement ran out of memory")
    if failed >= 0:
        raise NoFit(int(failed))
    return placed_pool, offsets


def place_numpy(
    instance: Instance, order: Iterable[int], best_fit: bool, fixed: Fixed | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """`place` with numpy only (the reference for the native core, and its fallback)."""
    if not instance.use_adjacency():
        return _place_indexed(instance, order, best_fit, fixed)
    sizes = instance.sizes
    alignments = instance.alignments
    capacities = instance.capacities
    candidates = instance.candidate_pools
    placed_pool, offsets, highs = _initial_state(instance, fixed)
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


RECENT_LIMIT = 256
"""`_PlacedItems` keeps up to this many newly placed intervals in a list it scans, before
merging them into its sorted arrays."""


SLICE_QUERY_ABOVE = 1_000
"""Above this many candidate intervals, `_PlacedItems.overlapping` reads runs as slices."""


class _PlacedItems:
    """The placed intervals of one pool, with their byte ranges: sorted by the interval
    index's key (length class, start) so that the ones overlapping a time range are found with
    binary searches, plus a short unsorted list of the latest ones. Holding only placed
    intervals (not every interval, as `IntervalIndex` does) keeps queries to what a placement
    must look at."""

    def __init__(self, index: IntervalIndex) -> None:
        self.index = index
        self.keys = np.empty(0, dtype=INT)
        self.ends = np.empty(0, dtype=INT)
        self.lows = np.empty(0, dtype=INT)
        self.highs = np.empty(0, dtype=INT)
        self.recent = 0
        self.recent_keys = np.empty(RECENT_LIMIT, dtype=INT)
        self.recent_starts = np.empty(RECENT_LIMIT, dtype=INT)
        self.recent_ends = np.empty(RECENT_LIMIT, dtype=INT)
        self.recent_lows = np.empty(RECENT_LIMIT, dtype=INT)
        self.recent_highs = np.empty(RECENT_LIMIT, dtype=INT)

    def add_many(self, positions: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> None:
        """Adds intervals by index position (any number: merged into the sorted arrays)."""
        self._merge(self.index.keys[positions], self.index.end[positions], lows, highs)

    def add(self, position: int, low: int, high: int) -> None:
        at = self.recent
        self.recent_keys[at] = self.index.keys[position]
        self.recent_ends[at] = self.index.end[position]
        self.recent_starts[at] = self.index.start[position]
        self.recent_lows[at] = low
        self.recent_highs[at] = high
        self.recent = at + 1
        if self.recent == RECENT_LIMIT:
            self._merge(self.recent_keys, self.recent_ends, self.recent_lows, self.recent_highs)
            self.recent = 0

    def _merge(
        self, keys: np.ndarray, ends: np.ndarray, lows: np.ndarray, highs: np.ndarray
    ) -> None:
        # Sort the few new ones and insert them: linear in the placed intervals, where sorting
        # everything again would cost a log factor more at every merge.
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        at = np.searchsorted(self.keys, keys, "right")
        self.keys = np.insert(self.keys, at, keys)
        self.ends = np.insert(self.ends, at, ends[order])
        self.lows = np.insert(self.lows, at, lows[order])
        self.highs = np.insert(self.highs, at, highs[order])

    def overlapping(self, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(lows, highs) of the placed intervals overlapping [start, end)."""
        first, last = self.index.class_runs(self.keys, start, end)
        counts = last - first
        if int(counts.sum()) > SLICE_QUERY_ABOVE:
            # Many intervals: read each run as a slice (contiguous) rather than gathering.
            low_parts: list[np.ndarray] = []
            high_parts: list[np.ndarray] = []
            for run_first, run_last in zip(first.tolist(), last.tolist(), strict=True):
                if run_first < run_last:
                    hit = self.ends[run_first:run_last] > start
                    low_parts.append(self.lows[run_first:run_last][hit])
                    high_parts.append(self.highs[run_first:run_last][hit])
            lows, highs = np.concatenate(low_parts), np.concatenate(high_parts)
        else:
            positions = run_positions(first, counts)
            positions = positions[self.ends[positions] > start]
            lows, highs = self.lows[positions], self.highs[positions]
        if self.recent:
            count = self.recent
            hit = (self.recent_starts[:count] < end) & (self.recent_ends[:count] > start)
            lows = np.concatenate([lows, self.recent_lows[:count][hit]])
            highs = np.concatenate([highs, self.recent_highs[:count][hit]])
        return lows, highs


def _place_indexed(
    instance: Instance, order: Iterable[int], best_fit: bool, fixed: Fixed | None
) -> tuple[np.ndarray, np.ndarray]:
    """`place` for problems whose conflict graph is too big to build: overlaps come from, per
    pool, an index of the placed intervals (`_PlacedItems`)."""
    sizes = instance.sizes
    alignments = instance.alignments
    capacities = instance.capacities
    candidates = instance.candidate_pools
    index = instance.index()
    starts, ends = instance.item_start, instance.item_end
    placed = [_PlacedItems(index) for _ in range(len(capacities))]
    placed_pool, offsets, highs = _initial_state(instance, fixed)
    highest_low = [0] * len(capacities)  # per pool, the highest offset placed there
    if fixed is not None:
        items = np.flatnonzero(placed_pool[instance.item_owner] >= 0)
        item_owners = instance.item_owner[items]
        for pool, pool_items in enumerate(placed):
            in_pool = placed_pool[item_owners] == pool
            owners = item_owners[in_pool]
            pool_items.add_many(
                index.position_of_item[items[in_pool]], offsets[owners], highs[owners]
            )
            members = offsets[placed_pool == pool]
            highest_low[pool] = int(members.max()) if len(members) else 0
    explicit_indptr, explicit_indices = instance.explicit_indptr, instance.explicit_indices
    for buffer in (int(b) for b in order):
        size = int(sizes[buffer])
        pools = candidates[buffer]
        if size == 0:
            placed_pool[buffer] = pools[0]
            continue
        items = instance.buffer_items[buffer].tolist()
        explicit = explicit_indices[explicit_indptr[buffer] : explicit_indptr[buffer + 1]]
        alignment = int(alignments[buffer])
        for pool in pools:
            pool_items = placed[pool]
            if len(items) == 1:
                lows, tops = pool_items.overlapping(int(starts[items[0]]), int(ends[items[0]]))
            else:
                parts = [pool_items.overlapping(int(starts[i]), int(ends[i])) for i in items]
                lows = np.concatenate([part[0] for part in parts])
                tops = np.concatenate([part[1] for part in parts])
            if len(explicit):
                others = explicit[placed_pool[explicit] == pool]
                lows = np.concatenate([lows, offsets[others]])
                tops = np.concatenate([tops, highs[others]])
            offset = find_offset(
                lows, tops, size, alignment, int(capacities[pool]), best_fit, highest_low[pool]
            )
            if offset >= 0:
                placed_pool[buffer] = pool
                offsets[buffer] = offset
                highs[buffer] = offset + size
                highest_low[pool] = max(highest_low[pool], offset)
                for item in items:
                    pool_items.add(int(index.position_of_item[item]), offset, offset + size)
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
"""The portfolio runs the first two variants, greedy_first_fit's and greedy_best_fit's, past its
own deadline (so that it, and `auto`, is no worse than either), unless a hard deadline says
the second one cannot finish in time."""


def portfolio_variants(instance: Instance) -> list[tuple[str, str]]:
    """The variants the portfolio runs on `instance`: all of them unless it is huge."""
    if native.load() is not None:
        affordable = NATIVE_BUFFER_BUDGET // max(1, instance.count)
    else:
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


def portfolio_workers(variant_count: int) -> int:
    """Threads the portfolio runs its variants on: one per core with the native core (whose
    calls release the GIL), else one."""
    if native.load() is None:
        return 1
    return max(1, min(variant_count, os.cpu_count() or 1, PORTFOLIO_THREAD_LIMIT))


PORTFOLIO_THREAD_LIMIT = 4


def _run_portfolio_variant(
    instance: Instance, order_name: str, fit: str
) -> tuple[GreedyPlan | None, float]:
    """One variant's plan (None when it does not fit) and the seconds it took."""
    started = time.perf_counter()
    order = order_of(instance, order_name)
    try:
        pools, offsets = place(instance, order, fit == "best")
    except NoFit:
        return None, time.perf_counter() - started
    cost = plan_cost(instance, pools, offsets)
    plan = GreedyPlan(pools, offsets, order, fit == "best", f"{order_name}/{fit}", cost)
    return plan, time.perf_counter() - started


def best_of_portfolio(
    instance: Instance,
    variants: list[tuple[str, str]] | None = None,
    deadline: float | None = None,
    hard_deadline: float | None = None,
) -> GreedyPlan | None:
    """The best plan over the greedy variants (the earliest variant among equal costs), or
    None when no variant fits within the capacities. With a deadline, no variant starts after
    it, nor (estimating a pass by the slowest one so far) one that would end past it; the
    mandatory variants are held to `hard_deadline` instead (the first one always runs).
    Variants run on `portfolio_workers` threads."""
    variants = variants or portfolio_variants(instance)
    workers = portfolio_workers(len(variants))
    if workers > 1:
        instance.flat()  # built once here rather than raced for by the threads
    plans: dict[int, GreedyPlan] = {}
    slowest = 0.0
    with ThreadPoolExecutor(workers) as executor:
        running: dict[Future[tuple[GreedyPlan | None, float]], int] = {}
        upcoming = iter(enumerate(variants))
        exhausted = False
        while True:
            while not exhausted and len(running) < workers:
                position, (order_name, fit) = next(upcoming, (-1, ("", "")))
                if position < 0:
                    exhausted = True
                    break
                limit = hard_deadline if position < MANDATORY_VARIANTS else deadline
                if position and limit is not None and time.perf_counter() + slowest > limit:
                    if position < MANDATORY_VARIANTS:
                        continue
                    exhausted = True
                    break
                future = executor.submit(_run_portfolio_variant, instance, order_name, fit)
                running[future] = position
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                position = running.pop(future)
                plan, elapsed_s = future.result()
                slowest = max(slowest, elapsed_s)
                if plan is not None:
                    plans[position] = plan
    if not plans:
        return None
    return plans[min(plans, key=lambda position: (plans[position].cost, position))]


# --- algorithms (registered in usmp_dialect.planning.ALGORITHMS) ---------------------------


def greedy_first_fit(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Size descending, first fit into gaps (TFLM's GreedyMemoryPlanner)."""
    return AlgorithmResult(run_variant(prepare(problem), "size", "first"))


def greedy_best_fit(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Size then live length descending, best fit (XLA's spatial heap)."""
    return AlgorithmResult(run_variant(prepare(problem), "size_length", "best"))


def portfolio(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """The best of every order x fit combination (fewer, strongest first, on huge
    problems: see NATIVE_BUFFER_BUDGET and EDGE_BUDGET)."""
    instance = prepare(problem)
    best = best_of_portfolio(instance)
    if best is None:
        raise diagnose_no_fit(instance)
    return AlgorithmResult(to_plan(best.pools, best.offsets))
