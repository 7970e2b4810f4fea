"""Apache TVM USMP's three planning algorithms, reproduced: `greedy_by_size`,
`greedy_by_conflicts` and `hill_climb` (TVM `src/tir/usmp/algo/{greedy,hill_climb}.cc` at
fb43fc85774b, described in `docs/reference/tvm-usmp.md` §4).

What is kept from TVM, on purpose (so that TVM's published numbers are reproduced):

* Sort keys. greedy_by_size and hill_climb's initial order: size descending, then number of
  conflicts descending (duplicate entries counted), then name descending (string order).
  greedy_by_conflicts: conflicts descending, size descending, name descending.
* The greedy core never fills gaps: a buffer goes above the highest-ending placed conflict of
  each candidate pool, in the first candidate pool (user order) where that fits the pool's
  capacity (TVM's size hint, a hard limit).
* hill_climb: the initial greedy_by_size order, at most 500 attempts, each a first-fit greedy over
  the placed conflicts sorted by offset (abandoning a pool as soon as one placed conflict ends too
  high, even if a lower gap would fit), TVM's acceptance rule `rand() % 100 < 50 * (total - best)
  / total / attempt` (equal totals rejected), the undo of the last *executed* swap on rejection
  (possibly a stale one), the result being the last *accepted* layout, the neighbour lists with
  duplicates, and glibc's `rand_r` (exactly, seed `options.seed`, 0 = TVM on Linux).

Departures (each needed so that no plan has overlapping or misaligned buffers):

1. Bounded-pool re-insert defect (§4.1, §7.3-1): TVM's greedy core looks a pool up with
   `unordered_map::operator[]`, which re-inserts a pool that an earlier conflict had ruled out,
   at the later conflict's end, so the buffer can overlap the earlier conflict. Here a ruled-out
   pool stays ruled out. Results only change where TVM overlapped (bounded pools only).
2. Alignment (§7.3-3): TVM rounds a conflict's end up to the *conflict's* alignment; here to the
   larger of the conflict's and the placed buffer's alignment (powers of two, so that is their
   common multiple). Identical whenever all buffers share one alignment, as in every TVM case.
3. Conflicts are symmetric in `Problem` (TVM only reads the list of the buffer being placed, so
   one-sided lists overlap). The registered algorithms see the symmetric, deduplicated graph;
   `plan_directed` takes TVM's raw per-buffer lists for bit-exact parity with TVM's tests and
   then reproduces TVM exactly, one-sided lists included (it is a parity oracle, not a planner).
4. hill_climb: TVM loops forever when every neighbour it may draw is the first pick itself; here
   that attempt makes no swap. It also stops after `options.time_limit_s` (TVM has no limit),
   and the registered version stops early at `lower_bound(problem)` where TVM stops at the
   memory pressure it is handed (`plan_directed` takes that number).
5. A buffer that fits no candidate pool raises `PlanningError` naming the buffer, its size and
   the free space of every bounded candidate pool (TVM: "the space available in the provided
   pools exceeded"). Names tied in the sort (TVM requires unique names) fall back to index order.

Cost: the greedy algorithms place interval buffers with one max segment tree per pool over
compressed time, O(n log n) with no conflict graph built (measured: 62,185 buffers of IOPDDL Y_1
in about 2 s); explicit conflicts cost O(their count). hill_climb builds the whole conflict graph
and runs up to 500 first-fit passes of O(sum of degree · log degree) each: about 2.5 s for TVM's
184-buffer deep_speech case, 5-10 s for MiniMalloc's 150-450-buffer instances (K stops at the
default 10 s time limit). Meant for TVM-sized problems of a few hundred buffers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from usmp_dialect.planning import AlgorithmResult, PlanningError, PlanOptions
from usmp_dialect.planning.problem import (
    Plan,
    Problem,
    align_up,
    conflict_lists,
    lower_bound,
    merged_intervals,
)

TVM_ALGORITHMS = ("greedy_by_size", "greedy_by_conflicts", "hill_climb")
HILL_CLIMB_MAX_ATTEMPTS = 500
_NO_POOL = -1


class RandR:
    """glibc's `rand_r`: three rounds of the LCG 1103515245 / 12345 per call, 31-bit result."""

    def __init__(self, seed: int) -> None:
        self.state = seed & 0xFFFFFFFF

    def next(self) -> int:
        state = self.state
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        result = (state >> 16) % 2048
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        result = (result << 10) ^ ((state >> 16) % 1024)
        state = (state * 1103515245 + 12345) & 0xFFFFFFFF
        result = (result << 10) ^ ((state >> 16) % 1024)
        self.state = state
        return result


# ---------------------------------------------------------------------------------------------
# Orders


def tvm_order(
    names: Sequence[str], sizes: Sequence[int], conflict_counts: Sequence[int], by: str
) -> list[int]:
    """TVM's placement order: `by="size"` (greedy_by_size, hill_climb) or `by="conflicts"`;
    the last tie-break is the name, descending."""
    order = sorted(range(len(names)), key=lambda i: (names[i], -i), reverse=True)
    if by == "size":
        order.sort(key=lambda i: (-sizes[i], -conflict_counts[i]))
    else:
        order.sort(key=lambda i: (-conflict_counts[i], -sizes[i]))
    return order


def _conflict_counts(problem: Problem) -> list[int]:
    """Per buffer, the number of buffers it conflicts with (symmetric, deduplicated), without
    building the graph when every buffer has at most one live interval."""
    buffers = problem.buffers
    intervals = [merged_intervals(b.live) for b in buffers]
    if any(len(live) > 1 for live in intervals):
        return [len(neighbours) for neighbours in conflict_lists(problem)]
    with_interval = [i for i, live in enumerate(intervals) if live]
    counts = [0] * len(buffers)
    if with_interval:
        starts = np.array([intervals[i][0][0] for i in with_interval], dtype=np.int64)
        ends = np.array([intervals[i][0][1] for i in with_interval], dtype=np.int64)
        sorted_starts, sorted_ends = np.sort(starts), np.sort(ends)
        # j overlaps i iff start_j < end_i and end_j > start_i; the second set of the
        # difference below is contained in the first, and i itself is in the first.
        overlapping = (
            np.searchsorted(sorted_starts, ends, side="left")
            - np.searchsorted(sorted_ends, starts, side="right")
            - 1
        )
        for position, index in enumerate(with_interval):
            counts[index] = int(overlapping[position])

    def overlap(a: int, b: int) -> bool:
        return bool(intervals[a] and intervals[b]) and (
            intervals[a][0][0] < intervals[b][0][1] and intervals[b][0][0] < intervals[a][0][1]
        )

    for index, neighbours in enumerate(_explicit_lists(problem)):
        counts[index] += sum(1 for other in neighbours if not overlap(index, other))
    return counts


def _explicit_lists(problem: Problem) -> list[list[int]]:
    """The explicit conflicts only, made symmetric and deduplicated (sorted)."""
    neighbours: list[set[int]] = [set() for _ in problem.buffers]
    for index, buffer in enumerate(problem.buffers):
        for other in buffer.conflicts:
            if other != index:
                neighbours[index].add(other)
                neighbours[other].add(index)
    return [sorted(n) for n in neighbours]


# ---------------------------------------------------------------------------------------------
# The no-gap greedy core (GreedyBase::PostSortAllocation, with departures 1 and 2)


class _MaxOverTime:
    """Max segment tree over compressed time: `raise_to(lo, hi, v)` raises every slot of
    [lo, hi) to at least v, `highest(lo, hi)` is the largest value in [lo, hi)."""

    def __init__(self, slots: int) -> None:
        size = 1
        while size < max(slots, 1):
            size *= 2
        self.size = size
        self.tag = [0] * (2 * size)  # value applied to the node's whole range
        self.best = [0] * (2 * size)  # max of the node's subtree, tags included

    def highest(self, lo: int, hi: int) -> int:
        tag, best = self.tag, self.best
        result = 0
        left, right = lo + self.size, hi + self.size
        node = left >> 1
        while node:
            if tag[node] > result:
                result = tag[node]
            node >>= 1
        node = (right - 1) >> 1
        while node:
            if tag[node] > result:
                result = tag[node]
            node >>= 1
        while left < right:
            if left & 1:
                if best[left] > result:
                    result = best[left]
                left += 1
            if right & 1:
                right -= 1
                if best[right] > result:
                    result = best[right]
            left >>= 1
            right >>= 1
        return result

    def raise_to(self, lo: int, hi: int, value: int) -> None:
        tag, best = self.tag, self.best
        left, right = lo + self.size, hi + self.size
        first, last = left, right - 1
        while left < right:
            if left & 1:
                tag[left] = max(tag[left], value)
                best[left] = max(best[left], value)
                left += 1
            if right & 1:
                right -= 1
                tag[right] = max(tag[right], value)
                best[right] = max(best[right], value)
            left >>= 1
            right >>= 1
        for leaf in (first, last):
            node = leaf >> 1
            while node:
                if best[node] < value:
                    best[node] = value
                node >>= 1


def _fits(capacity: int | None, offset: int, size: int) -> bool:
    return capacity is None or offset + size <= capacity


def _no_fit_error(
    problem: Problem, index: int, needed_offsets: dict[int, int], algorithm: str
) -> PlanningError:
    buffer = problem.buffers[index]
    parts = []
    for pool_index in buffer.pools:
        pool = problem.pools[pool_index]
        capacity = pool.capacity_bytes
        if capacity is None:
            continue
        reach = needed_offsets.get(pool_index, 0)
        free = max(0, capacity - reach)
        detail = f"conflicting buffers reach {reach} B, " if reach else ""
        parts.append(f"'{pool.name}' has {free} B free ({detail}capacity {capacity} B)")
    return PlanningError(
        f"{algorithm}: buffer '{buffer.name}' ({buffer.size_bytes} B) fits in none of its "
        f"candidate pools: " + "; ".join(parts)
    )


def place_without_gaps(
    problem: Problem,
    order: Sequence[int],
    lists: Sequence[Sequence[int]],
    algorithm: str,
    use_intervals: bool = True,
) -> Plan:
    """TVM's greedy core: each buffer, in `order`, goes right above the highest placed buffer
    it conflicts with (through `lists` or, with `use_intervals`, overlapping live intervals) in
    the first candidate pool where that fits. Raises PlanningError when no pool fits."""
    buffers, pools = problem.buffers, problem.pools
    count = len(buffers)
    pool_of = [_NO_POOL] * count
    offset_of = [0] * count
    next_of = [0] * count  # TVM's "next offset": the end rounded up to the buffer's alignment
    placed = [False] * count

    slots: list[list[tuple[int, int]]] = [[] for _ in range(count)]
    trees: dict[int, _MaxOverTime] = {}
    if use_intervals:
        intervals = [merged_intervals(b.live) for b in buffers]
        times = sorted({t for live in intervals for interval in live for t in interval})
        slot_of = {t: k for k, t in enumerate(times)}
        slots = [[(slot_of[s], slot_of[e]) for s, e in live] for live in intervals]
        if times:
            for pool_index in range(len(pools)):
                trees[pool_index] = _MaxOverTime(len(times) - 1)

    for index in order:
        buffer = buffers[index]
        size, alignment = buffer.size_bytes, buffer.alignment
        reach: dict[int, int] = {}
        for other in lists[index]:
            if placed[other]:
                pool_index = pool_of[other]
                if next_of[other] > reach.get(pool_index, 0):
                    reach[pool_index] = next_of[other]
        chosen, offset = _NO_POOL, 0
        needed: dict[int, int] = {}
        for pool_index in buffer.pools:
            highest = reach.get(pool_index, 0)
            if slots[index]:
                tree = trees[pool_index]
                for lo, hi in slots[index]:
                    highest = max(highest, tree.highest(lo, hi))
            candidate = align_up(highest, alignment)
            needed[pool_index] = candidate
            if _fits(pools[pool_index].capacity_bytes, candidate, size):
                chosen, offset = pool_index, candidate
                break
        if chosen == _NO_POOL:
            raise _no_fit_error(problem, index, needed, algorithm)
        pool_of[index], offset_of[index], placed[index] = chosen, offset, True
        next_of[index] = align_up(offset + size, alignment)
        for lo, hi in slots[index]:
            trees[chosen].raise_to(lo, hi, next_of[index])
    return Plan(pools=tuple(pool_of), offsets=tuple(offset_of))


# ---------------------------------------------------------------------------------------------
# hill_climb (HillClimbAllocator)


@dataclass(frozen=True)
class _Static:
    """What hill_climb's inner greedy needs, computed once per run."""

    sizes: list[int]
    alignments: list[int]
    capacities: list[int | None]
    candidates: list[tuple[int, ...]]
    fits_empty: list[tuple[int, ...]]
    """Per buffer, the candidate pools it fits at offset 0, in preference order."""


def _static(problem: Problem) -> _Static:
    capacities = [p.capacity_bytes for p in problem.pools]
    return _Static(
        sizes=[b.size_bytes for b in problem.buffers],
        alignments=[b.alignment for b in problem.buffers],
        capacities=capacities,
        candidates=[b.pools for b in problem.buffers],
        fits_empty=[
            tuple(p for p in b.pools if _fits(capacities[p], 0, b.size_bytes))
            for b in problem.buffers
        ],
    )


def _first_fit(
    static: _Static, order: Sequence[int], lists: Sequence[Sequence[int]]
) -> tuple[list[int], list[int], bool]:
    """hill_climb's inner greedy: first fit among the placed conflicts sorted by offset. Returns
    per-buffer pool (or _NO_POOL) and offset, and whether some buffer could not be placed."""
    sizes, alignments, capacities = static.sizes, static.alignments, static.capacities
    count = len(sizes)
    pool_of = [_NO_POOL] * count
    offset_of = [0] * count
    placed = [False] * count
    could_not_fit = False
    for index in order:
        size, alignment = sizes[index], alignments[index]
        placed_conflicts = [c for c in lists[index] if placed[c]]
        fits_empty = static.fits_empty[index]
        if len(fits_empty) == 1:
            # One possible pool: the same rule without the per-pool dictionary (hot path).
            only_pool = fits_empty[0]
            capacity = capacities[only_pool]
            current = 0
            possible = True
            placed_conflicts.sort(key=offset_of.__getitem__)
            for other in placed_conflicts:
                if pool_of[other] != only_pool:
                    continue
                other_offset = offset_of[other]
                step = alignments[other] if alignments[other] > alignment else alignment
                next_offset = -(-(other_offset + sizes[other]) // step) * step
                if capacity is not None and next_offset + size > capacity:
                    possible = False
                    break
                if next_offset > current and current + size > other_offset:
                    current = next_offset
            placed[index] = True
            if possible:
                pool_of[index], offset_of[index] = only_pool, current
            else:
                could_not_fit = True
            continue
        tentative = dict.fromkeys(fits_empty, 0)
        if placed_conflicts:
            placed_conflicts.sort(key=offset_of.__getitem__)
            for other in placed_conflicts:
                pool_index = pool_of[other]
                current = tentative.get(pool_index)
                if current is None:
                    continue
                other_offset = offset_of[other]
                step = alignments[other] if alignments[other] > alignment else alignment
                next_offset = -(-(other_offset + sizes[other]) // step) * step
                capacity = capacities[pool_index]
                if capacity is None or next_offset + size <= capacity:
                    if next_offset > current and current + size > other_offset:
                        tentative[pool_index] = next_offset
                else:
                    del tentative[pool_index]
        chosen = _NO_POOL
        for pool_index in static.candidates[index]:
            if pool_index in tentative:
                chosen = pool_index
                break
        if chosen == _NO_POOL:
            could_not_fit = True
        else:
            pool_of[index], offset_of[index] = chosen, tentative[chosen]
        placed[index] = True
    return pool_of, offset_of, could_not_fit


def _highest(problem: Problem, pool_of: list[int], offset_of: list[int]) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for index, buffer in enumerate(problem.buffers):
        pool_index = pool_of[index]
        if pool_index != _NO_POOL:
            end = offset_of[index] + buffer.size_bytes
            if sizes.get(pool_index, -1) <= end:
                sizes[pool_index] = end
    return sizes


def hill_climb_lists(
    problem: Problem,
    lists: Sequence[Sequence[int]],
    desired_bytes: int,
    seed: int = 0,
    time_limit_s: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> Plan:
    """TVM's hill climb over `lists` (per-buffer conflict lists, TVM's order and duplicates
    kept); stops early once the summed pool sizes reach `desired_bytes`."""
    buffers = problem.buffers
    count = len(buffers)
    if count == 0:
        return Plan(pools=(), offsets=())
    names = [b.name for b in buffers]
    sizes = [b.size_bytes for b in buffers]
    order = tvm_order(names, sizes, [len(lst) for lst in lists], "size")
    position = [0] * count
    for slot, index in enumerate(order):
        position[index] = slot

    def swap(slot1: int, slot2: int) -> None:
        if slot1 == slot2:
            return
        first, second = order[slot1], order[slot2]
        order[slot1], order[slot2] = second, first
        position[first], position[second] = slot2, slot1

    static = _static(problem)
    rand = RandR(seed)
    started = time.perf_counter()
    best_total = 0
    swap_slot1 = swap_slot2 = -1
    current: tuple[list[int], list[int]] | None = None
    result: tuple[list[int], list[int]] | None = None
    for attempt in range(HILL_CLIMB_MAX_ATTEMPTS):
        rollback = current
        pool_of, offset_of, could_not_fit = _first_fit(static, order, lists)
        current = (pool_of, offset_of)
        pool_sizes = _highest(problem, pool_of, offset_of)
        if not pool_sizes:
            raise _no_fit_error(problem, order[0], {}, "hill_climb")
        total = sum(pool_sizes.values())
        if not best_total or (
            not could_not_fit
            and (
                best_total > total
                or rand.next() % 100 < 50 * (total - best_total) // total // attempt
            )
        ):
            result = current
            if not could_not_fit:
                best_total = total
                if best_total <= desired_bytes:
                    break
        else:
            swap(swap_slot2, swap_slot1)
            if rollback is not None:  # always: the first attempt is accepted
                current = rollback
            pool_sizes = _highest(problem, *current)
        if time_limit_s is not None and time.perf_counter() - started > time_limit_s:
            break
        if progress is not None and attempt % 10 == 0:
            progress(
                f"hill_climb: attempt {attempt}/{HILL_CLIMB_MAX_ATTEMPTS}, best {best_total} B"
            )

        pool_of, offset_of = current
        at_top = [
            i
            for i in range(count)
            if pool_of[i] != _NO_POOL and offset_of[i] + sizes[i] == pool_sizes[pool_of[i]]
        ]
        at_top.sort(key=position.__getitem__)
        node = at_top[rand.next() % len(at_top)]
        node_position = position[node]
        first_level: list[int] = []
        second_level: list[int] = []
        for neighbour in lists[node]:
            neighbour_position = position[neighbour]
            if node_position > neighbour_position:
                first_level.append(neighbour)
            second_level.extend(c for c in lists[neighbour] if neighbour_position > position[c])
        first_level.sort(key=position.__getitem__)
        second_level.sort(key=position.__getitem__)
        if not first_level:
            continue
        swap_buffer1 = first_level[rand.next() % len(first_level)]
        if (len(first_level) >= 2 or len(second_level) >= 2) and all(
            b == swap_buffer1 for b in (*first_level, *second_level)
        ):
            continue  # TVM would draw forever here (departure 4)
        swap_buffer2 = swap_buffer1
        while swap_buffer2 == swap_buffer1:
            if second_level and rand.next() % 100 > 25:
                swap_buffer2 = second_level[rand.next() % len(second_level)]
            else:
                swap_buffer2 = first_level[rand.next() % len(first_level)]
            if len(second_level) < 2 and len(first_level) < 2:
                break
        if swap_buffer1 == swap_buffer2:
            continue
        swap_slot1, swap_slot2 = position[swap_buffer1], position[swap_buffer2]
        swap(swap_slot1, swap_slot2)

    pool_of, offset_of = result if result is not None else current
    for index, buffer in enumerate(buffers):
        pool_index = pool_of[index]
        if pool_index == _NO_POOL or not _fits(
            problem.pools[pool_index].capacity_bytes, offset_of[index], buffer.size_bytes
        ):
            reach: dict[int, int] = {}
            for other in lists[index]:
                if pool_of[other] != _NO_POOL:
                    end = offset_of[other] + sizes[other]
                    reach[pool_of[other]] = max(reach.get(pool_of[other], 0), end)
            raise _no_fit_error(problem, index, reach, "hill_climb")
    return Plan(pools=tuple(pool_of), offsets=tuple(offset_of))


# ---------------------------------------------------------------------------------------------
# Entry points


def plan_directed(
    algorithm: str,
    problem: Problem,
    directed_conflicts: Sequence[Sequence[int]],
    memory_pressure: int = 0,
    seed: int = 0,
) -> Plan:
    """Runs one of TVM's algorithms on TVM's raw input: per buffer, the conflict list TVM's
    algorithm was fed (may be one-sided, hold duplicates or the buffer itself, in TVM's order).
    The problem's own conflicts and live intervals are ignored; its buffers give names, sizes,
    alignments and candidate pools, its pools the capacities. `memory_pressure` is TVM's
    early-stop target for hill_climb. Reproduces TVM bit for bit apart from departures 1, 2, 4
    and 5 of the module docstring; with one-sided lists the plan may overlap, as TVM's did."""
    if len(directed_conflicts) != len(problem.buffers):
        raise ValueError("one conflict list per buffer is needed")
    names = [b.name for b in problem.buffers]
    sizes = [b.size_bytes for b in problem.buffers]
    counts = [len(lst) for lst in directed_conflicts]
    if algorithm == "greedy_by_size":
        order = tvm_order(names, sizes, counts, "size")
    elif algorithm == "greedy_by_conflicts":
        order = tvm_order(names, sizes, counts, "conflicts")
    elif algorithm == "hill_climb":
        return hill_climb_lists(problem, directed_conflicts, memory_pressure, seed)
    else:
        raise ValueError(f"unknown TVM algorithm '{algorithm}' (known: {TVM_ALGORITHMS})")
    return place_without_gaps(problem, order, directed_conflicts, algorithm, use_intervals=False)


def greedy_by_size(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """TVM's greedy_by_size on the symmetric conflict graph (registered algorithm)."""
    names = [b.name for b in problem.buffers]
    sizes = [b.size_bytes for b in problem.buffers]
    order = tvm_order(names, sizes, _conflict_counts(problem), "size")
    return AlgorithmResult(
        place_without_gaps(problem, order, _explicit_lists(problem), "greedy_by_size")
    )


def greedy_by_conflicts(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """TVM's greedy_by_conflicts on the symmetric conflict graph (registered algorithm)."""
    names = [b.name for b in problem.buffers]
    sizes = [b.size_bytes for b in problem.buffers]
    order = tvm_order(names, sizes, _conflict_counts(problem), "conflicts")
    return AlgorithmResult(
        place_without_gaps(problem, order, _explicit_lists(problem), "greedy_by_conflicts")
    )


def hill_climb(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """TVM's hill_climb on the symmetric conflict graph (registered algorithm); random numbers
    from glibc rand_r seeded with `options.seed`."""
    lists = conflict_lists(problem)
    return AlgorithmResult(
        hill_climb_lists(
            problem,
            lists,
            lower_bound(problem),
            seed=options.seed,
            time_limit_s=options.time_limit_s,
            progress=options.progress,
        )
    )
