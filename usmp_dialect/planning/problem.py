"""The planning problem and its solution, as plain data (no xDSL here).

A problem is a set of buffers (size, alignment, live intervals and/or explicit conflicts,
ordered candidate pools) and a set of pools (optional hard capacity, alignment). A plan
gives every buffer a pool and a byte offset so that buffers that may be live together
never share a byte.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

SMALL_SWEEP = 256
"""Below this many buffers, `peak_live_bytes` sweeps in plain Python (numpy is imported only
when needed: most of a small problem's start-up would be spent importing it)."""

Interval = tuple[int, int]
"""A half-open live interval `[start, end)` on the program's abstract timeline."""


@dataclass(frozen=True)
class Pool:
    """A memory pool buffers may be placed in."""

    name: str
    capacity_bytes: int | None = None
    """Hard limit on the pool's planned size (TVM's size hint); None means unbounded."""
    alignment: int = 1
    """Alignment of the pool's base address, in bytes."""


@dataclass(frozen=True)
class Buffer:
    """A buffer to place."""

    name: str
    size_bytes: int
    alignment: int = 1
    live: tuple[Interval, ...] = ()
    """Half-open live intervals; two buffers conflict when any of their intervals overlap."""
    conflicts: tuple[int, ...] = ()
    """Indices of further buffers this one conflicts with (made symmetric by `Problem`)."""
    pools: tuple[int, ...] = (0,)
    """Indices of the candidate pools, preferred first."""


@dataclass(frozen=True)
class Problem:
    """Buffers and pools. Conflicts are the union of interval overlaps and explicit conflicts,
    always symmetric and without duplicates or self-conflicts."""

    buffers: tuple[Buffer, ...]
    pools: tuple[Pool, ...] = (Pool("pool"),)


@dataclass(frozen=True)
class Plan:
    """A placement: for buffer `i`, pool index `pools[i]` and byte offset `offsets[i]`."""

    pools: tuple[int, ...]
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class PlanResult:
    """A plan with what is known about its quality."""

    plan: Plan
    algorithm: str
    pool_sizes: tuple[int, ...]
    """Per pool, the highest `offset + size` placed in it (0 when unused)."""
    lower_bounds: tuple[int, ...]
    """Per pool, a lower bound on its size given which buffers the plan put there."""
    proven_optimal: bool
    time_s: float
    notes: tuple[str, ...] = field(default=())
    limit_reached: bool = False
    """Whether the search stopped at its limit (the time limit, or the node budget that stands
    for it) rather than by proving its plan optimal."""
    budget_stopped: bool = False
    """Whether that limit was the node budget, reached before the time limit."""

    def stopped_by(self) -> str | None:
        """What ended a search that stopped at its limit: "node budget" or "time limit"."""
        if not self.limit_reached:
            return None
        return "node budget" if self.budget_stopped else "time limit"

    def stop_phrase(self, time_limit_s: float) -> str:
        """How messages name the limit that stopped the search."""
        if self.budget_stopped:
            return f"its node budget, before its {time_limit_s:g} s limit"
        return f"its {time_limit_s:g} s limit"


class ProblemError(ValueError):
    """A problem that cannot be planned as given (bad sizes, intervals, pools...)."""


class PlanningError(ValueError):
    """No valid plan exists within the pools' capacities (or the algorithm found none)."""


CLIQUE_SEARCH_LIMIT = 3_000
"""Most buffers with explicit conflicts for which `lower_bound` grows cliques through them."""


def check_problem(problem: Problem) -> None:
    """Raises ProblemError naming the first malformed buffer or pool."""
    for pool in problem.pools:
        if pool.capacity_bytes is not None and pool.capacity_bytes < 0:
            raise ProblemError(f"pool '{pool.name}': negative capacity {pool.capacity_bytes}")
        if pool.alignment < 1 or pool.alignment & (pool.alignment - 1):
            raise ProblemError(
                f"pool '{pool.name}': alignment {pool.alignment} is not a power of two"
            )
    count = len(problem.buffers)
    for buffer in problem.buffers:
        if buffer.size_bytes < 0:
            raise ProblemError(f"buffer '{buffer.name}': negative size {buffer.size_bytes}")
        if buffer.alignment < 1 or buffer.alignment & (buffer.alignment - 1):
            raise ProblemError(
                f"buffer '{buffer.name}': alignment {buffer.alignment} is not a power of two"
            )
        for start, end in buffer.live:
            if start >= end:
                raise ProblemError(f"buffer '{buffer.name}': empty live interval [{start}, {end})")
        for other in buffer.conflicts:
            if not 0 <= other < count:
                raise ProblemError(f"buffer '{buffer.name}': conflict index {other} out of range")
        if not buffer.pools:
            raise ProblemError(f"buffer '{buffer.name}': no candidate pool")
        for pool_index in buffer.pools:
            if not 0 <= pool_index < len(problem.pools):
                raise ProblemError(
                    f"buffer '{buffer.name}': candidate pool index {pool_index} out of range"
                )


def merged_intervals(intervals: tuple[Interval, ...]) -> list[Interval]:
    """A buffer's live intervals, sorted, with overlapping or touching ones merged."""
    merged: list[Interval] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
        else:
            merged.append((start, end))
    return merged


def conflict_lists(problem: Problem) -> list[list[int]]:
    """Per buffer, the sorted indices of the buffers it conflicts with (symmetric, no
    duplicates, no self). Builds the whole conflict graph: meant for problems of up to a few
    thousand buffers; large interval problems should be handled with sweeps instead."""
    count = len(problem.buffers)
    neighbours: list[set[int]] = [set() for _ in range(count)]
    events: list[tuple[int, int, int]] = []  # (time, 0 = end / 1 = start, buffer)
    for index, buffer in enumerate(problem.buffers):
        for start, end in merged_intervals(buffer.live):
            events.append((start, 1, index))
            events.append((end, 0, index))
        for other in buffer.conflicts:
            if other != index:
                neighbours[index].add(other)
                neighbours[other].add(index)
    events.sort()
    active: dict[int, int] = {}  # buffer -> number of its open intervals
    for _time, is_start, index in events:
        if is_start:
            for other in active:
                if other != index:
                    neighbours[index].add(other)
                    neighbours[other].add(index)
            active[index] = active.get(index, 0) + 1
        else:
            active[index] -= 1
            if not active[index]:
                del active[index]
    return [sorted(n) for n in neighbours]


def _live_events(problem: Problem, indices: list[int] | range) -> tuple[np.ndarray, ...]:
    """Owners, starts and ends of the merged live intervals of `indices`, as arrays."""
    import numpy as np

    owners: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    buffers = problem.buffers
    for index in indices:
        live = buffers[index].live
        for start, end in live if len(live) == 1 else merged_intervals(live):
            owners.append(index)
            starts.append(start)
            ends.append(end)
    return (
        np.array(owners, dtype=np.int64),
        np.array(starts, dtype=np.int64),
        np.array(ends, dtype=np.int64),
    )


def peak_live_bytes(problem: Problem, members: list[int] | None = None) -> int:
    """The highest total size of buffers live at one time (TVM's memory pressure), over
    `members` (default: all buffers). Only interval lifetimes are counted. A sweep: O(n log n),
    fine for tens of thousands of buffers."""
    indices = range(len(problem.buffers)) if members is None else members
    if len(indices) < SMALL_SWEEP:
        buffers = problem.buffers
        events = sorted(
            (time, delta)
            for index in indices
            for start, end in merged_intervals(buffers[index].live)
            for time, delta in (
                (start, buffers[index].size_bytes),
                (end, -buffers[index].size_bytes),
            )
        )
        live = peak = 0
        for _time, delta in events:  # ends (negative) first at equal times
            live += delta
            peak = max(peak, live)
        return peak
    import numpy as np

    owners, starts, ends = _live_events(problem, indices)
    if not len(owners):
        return 0
    sizes = np.fromiter(
        (problem.buffers[i].size_bytes for i in owners.tolist()), dtype=np.int64, count=len(owners)
    )
    times = np.concatenate([starts, ends])
    deltas = np.concatenate([sizes, -sizes])
    # Ends sort before starts at the same time: half-open intervals that touch do not overlap.
    order = np.lexsort((deltas, times))
    return max(0, int(np.cumsum(deltas[order]).max()))


def lower_bound(problem: Problem, members: list[int] | None = None) -> int:
    """A lower bound on the memory `members` (default: all buffers) need in one pool: the
    weight of a clique of the conflict graph (interval overlaps and explicit conflicts). For
    interval lifetimes alone this is the peak of live bytes, which is the maximum clique.
    Explicit conflicts add greedily grown cliques through them (for up to
    CLIQUE_SEARCH_LIMIT such buffers), so the bound stays valid, though not always tight, on
    general conflict graphs."""
    indices = list(range(len(problem.buffers))) if members is None else list(members)
    bound = peak_live_bytes(problem, indices)
    bound = max(bound, max((problem.buffers[i].size_bytes for i in indices), default=0))
    bound = max(bound, aligned_peak(problem, indices))
    seeds = [i for i in indices if problem.buffers[i].conflicts]
    if not seeds or len(seeds) > CLIQUE_SEARCH_LIMIT:
        return bound
    member_set = set(indices)
    neighbours = _member_neighbours(problem, indices, set(seeds))
    sizes = [b.size_bytes for b in problem.buffers]
    for seed in seeds:
        clique = [seed]
        weight = sizes[seed]
        common = neighbours[seed] & member_set
        for candidate in sorted(common, key=lambda n: (-sizes[n], n)):
            if candidate in common:
                clique.append(candidate)
                weight += sizes[candidate]
                common &= neighbours.get(candidate, set())
        bound = max(bound, weight)
    return bound


ALIGNED_CANDIDATE_LIMIT = 256
"""Most sweep times at which `aligned_peak` computes the live set's largest padding exactly;
beyond that it subtracts the largest padding over all the buffers of the class instead."""


def aligned_peak(problem: Problem, members: list[int] | None = None) -> int:
    """A lower bound that counts alignment padding (0 when every alignment is 1).

    Proof. Take buffers of positive size that are all live at one time t, each with an
    alignment of at least `a` (powers of two, so every offset is a multiple of `a`). Sort them
    by offset: b_1 < ... < b_k. Consecutive ones do not overlap, so offset(b_i+1) >=
    offset(b_i) + size(b_i), and both offsets are multiples of `a`, hence offset(b_i+1) >=
    offset(b_i) + align_up(size(b_i), a). So the pool reaches at least
    sum(align_up(size, a)) - (align_up(size(b_k), a) - size(b_k)) >= S_a(t) - P_a(t), where
    S_a(t) sums align_up(size, a) and P_a(t) is the largest padding `align_up(size, a) - size`
    over those buffers. The bound is the maximum of S_a(t) - P_a(t) over every time t and
    every alignment `a` in use, with the buffers of alignment >= a (for the smallest `a`, every
    buffer: the bound is then never below `peak_live_bytes`). Only interval lifetimes count.
    """
    indices = range(len(problem.buffers)) if members is None else members
    buffers = problem.buffers
    aligned = [i for i in indices if buffers[i].alignment > 1 and buffers[i].size_bytes > 0]
    if not aligned:
        return 0
    import numpy as np

    positive = [i for i in indices if buffers[i].size_bytes > 0 and buffers[i].live]
    owners, starts, ends = _live_events(problem, positive)
    if not len(owners):
        return 0
    sizes = np.array([buffers[i].size_bytes for i in owners.tolist()], dtype=np.int64)
    alignments = np.array([buffers[i].alignment for i in owners.tolist()], dtype=np.int64)
    best = 0
    for alignment in sorted({int(a) for a in alignments.tolist()}):
        if alignment == 1:
            continue
        keep = alignments >= alignment
        best = max(best, _aligned_sweep(sizes[keep], starts[keep], ends[keep], alignment))
    return best


def _aligned_sweep(sizes: np.ndarray, starts: np.ndarray, ends: np.ndarray, alignment: int) -> int:
    """max over t of S_a(t) - P_a(t) (see `aligned_peak`) for the given live items."""
    import numpy as np

    padded = -(-sizes // alignment) * alignment
    pads = padded - sizes
    # A buffer's merged intervals never overlap each other, so each time counts it at most
    # once. At one time, ends sort before starts (half-open intervals); a start event's running
    # total may miss starts at the same time, which only lowers (so keeps valid) its value.
    times = np.concatenate([starts, ends])
    deltas = np.concatenate([padded, -padded])
    order = np.lexsort((deltas, times))
    totals = np.cumsum(deltas[order])
    is_start = deltas[order] > 0
    if not is_start.any():
        return 0
    start_totals = totals[is_start]
    start_times = times[order][is_start]
    largest_pad = int(pads.max())
    floor = int(start_totals.max()) - largest_pad
    candidates = np.flatnonzero(start_totals > floor)
    if len(candidates) > ALIGNED_CANDIDATE_LIMIT:
        return max(floor, 0)
    best = floor
    for position in candidates.tolist():
        moment = int(start_times[position])
        live = (starts <= moment) & (ends > moment)
        best = max(best, int(start_totals[position]) - int(pads[live].max()))
    return max(best, 0)


def _member_neighbours(
    problem: Problem, members: list[int], seeds: set[int]
) -> dict[int, set[int]]:
    """Neighbour sets within `members`, for the seeds and the members that conflict with a
    seed. Builds only the part of the graph the clique search may walk."""
    explicit: dict[int, set[int]] = {}
    member_set = set(members)
    for index in members:
        for other in problem.buffers[index].conflicts:
            if other != index and other in member_set:
                explicit.setdefault(index, set()).add(other)
                explicit.setdefault(other, set()).add(index)
    import numpy as np

    owners, starts, ends = _live_events(problem, members)
    order = np.argsort(starts, kind="stable")
    sorted_starts = starts[order]

    def interval_neighbours(index: int) -> set[int]:
        found: set[int] = set()
        for item in np.flatnonzero(owners == index).tolist():
            reach = int(np.searchsorted(sorted_starts, ends[item], "left"))
            candidates = order[:reach]
            hits = owners[candidates[ends[candidates] > starts[item]]]
            found.update(hits.tolist())
        found.discard(index)
        return found

    result: dict[int, set[int]] = {}
    for seed in sorted(seeds):
        result[seed] = interval_neighbours(seed) | explicit.get(seed, set())
    for seed in sorted(seeds):
        for other in sorted(result[seed]):
            if other not in result:
                result[other] = interval_neighbours(other) | explicit.get(other, set())
    return result


def align_up(value: int, alignment: int) -> int:
    """`value` rounded up to a multiple of `alignment`."""
    return -(-value // alignment) * alignment


def pool_sizes(problem: Problem, plan: Plan) -> tuple[int, ...]:
    """Per pool, the highest `offset + size` of the buffers placed in it (0 when unused)."""
    sizes = [0] * len(problem.pools)
    for buffer, pool, offset in zip(problem.buffers, plan.pools, plan.offsets, strict=True):
        sizes[pool] = max(sizes[pool], offset + buffer.size_bytes)
    return tuple(sizes)


def validate(problem: Problem, plan: Plan) -> list[str]:
    """Every way `plan` breaks `problem`, one message per violation (empty when valid)."""
    errors: list[str] = []
    buffers = problem.buffers
    if len(plan.pools) != len(buffers) or len(plan.offsets) != len(buffers):
        return [f"plan has {len(plan.offsets)} offsets for {len(buffers)} buffers"]
    for buffer, pool, offset in zip(buffers, plan.pools, plan.offsets, strict=True):
        if pool not in buffer.pools:
            errors.append(f"buffer '{buffer.name}' is in pool #{pool}, not one of its candidates")
            continue
        if offset < 0:
            errors.append(f"buffer '{buffer.name}' has negative offset {offset}")
        if offset % buffer.alignment:
            errors.append(
                f"buffer '{buffer.name}' at offset {offset} is not aligned to {buffer.alignment}"
            )
        capacity = problem.pools[pool].capacity_bytes
        if capacity is not None and offset + buffer.size_bytes > capacity:
            errors.append(
                f"buffer '{buffer.name}' ends at {offset + buffer.size_bytes}, beyond the "
                f"{capacity}-byte capacity of pool '{problem.pools[pool].name}'"
            )

    def overlap_message(a: int, b: int, why: str) -> str:
        pool_name = problem.pools[plan.pools[a]].name
        return (
            f"buffers '{buffers[a].name}' [{plan.offsets[a]}, "
            f"{plan.offsets[a] + buffers[a].size_bytes}) and '{buffers[b].name}' "
            f"[{plan.offsets[b]}, {plan.offsets[b] + buffers[b].size_bytes}) overlap in pool "
            f"'{pool_name}' while {why}"
        )

    def overlaps(a: int, b: int) -> bool:
        return (
            plan.pools[a] == plan.pools[b]
            and buffers[a].size_bytes > 0
            and buffers[b].size_bytes > 0
            and plan.offsets[a] < plan.offsets[b] + buffers[b].size_bytes
            and plan.offsets[b] < plan.offsets[a] + buffers[a].size_bytes
        )

    reported: set[tuple[int, int]] = set()
    for index, buffer in enumerate(buffers):
        for other in buffer.conflicts:
            pair = (min(index, other), max(index, other))
            if other != index and pair not in reported and overlaps(index, other):
                reported.add(pair)
                errors.append(overlap_message(pair[0], pair[1], "in conflict"))

    # Interval conflicts: sweep over time keeping, per pool, the live buffers sorted by
    # offset. The live set never overlaps (we stop trusting it once it does), so a new
    # buffer overlaps a live one exactly when it overlaps a neighbour in offset order.
    events: list[tuple[int, int, int]] = []
    for index, buffer in enumerate(buffers):
        if buffer.size_bytes == 0:
            continue
        for start, end in merged_intervals(buffer.live):
            events.append((start, 1, index))
            events.append((end, 0, index))
    events.sort()
    live_by_pool: dict[int, list[tuple[int, int]]] = {}
    overlapping_pools: set[int] = set()  # pools whose live set already holds an overlap
    for time, is_start, index in events:
        pool = plan.pools[index]
        live = live_by_pool.setdefault(pool, [])
        key = (plan.offsets[index], index)
        position = bisect.bisect_left(live, key)
        if not is_start:
            if position < len(live) and live[position] == key:
                del live[position]
            continue
        if pool in overlapping_pools:
            nearby = range(len(live))
        else:
            nearby = range(max(0, position - 1), min(len(live), position + 1))
        clash = [live[p][1] for p in nearby if overlaps(index, live[p][1])]
        if clash and pool not in overlapping_pools:
            overlapping_pools.add(pool)
            clash = [other for _offset, other in live if overlaps(index, other)]
        for other in clash:
            pair = (min(index, other), max(index, other))
            if pair not in reported:
                reported.add(pair)
                errors.append(overlap_message(pair[0], pair[1], f"both live at time {time}"))
        live.insert(position, key)
    return errors
