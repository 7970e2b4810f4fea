"""Shared machinery of the planners: a problem as numpy arrays, fast time-overlap queries and
the gap search every placement uses.

An `Instance` is built once per problem and shared by every algorithm run on it (the
portfolio runs a dozen greedy variants over the same neighbour structure). Two neighbour
structures exist:

* a CSR adjacency (the whole conflict graph) when it is small, which makes each query a slice;
* otherwise a static index of live intervals grouped by length class and sorted by start,
  which answers "which intervals overlap [a, b)" with two vectorised binary searches and
  never materialises the graph (62k buffers with 9k live at once would need ~360M edges).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field

import numpy as np

from usmp_dialect.planning import native
from usmp_dialect.planning.problem import Problem, merged_intervals

INT = np.int64
UNBOUNDED = np.int64(1) << np.int64(62)
"""Stands for "no capacity" and "no upper end of a gap"; far above any real offset."""

CSR_EDGE_LIMIT = 10_000_000
"""Most (directed) edges for which the whole conflict graph is built."""

DENSE_ITEM_LIMIT = 2_500
"""Up to this many live intervals, the graph is built with one broadcast comparison."""


@dataclass
class Instance:
    """A problem as arrays: what the placement loops read."""

    problem: Problem
    sizes: np.ndarray
    alignments: np.ndarray
    candidate_pools: list[tuple[int, ...]]
    capacities: np.ndarray
    """Per pool, the hard capacity, or UNBOUNDED."""
    item_owner: np.ndarray
    item_start: np.ndarray
    item_end: np.ndarray
    """Merged live intervals of the non-empty buffers, as parallel arrays."""
    buffer_items: list[np.ndarray]
    """Per buffer, the indices of its items."""
    explicit_indptr: np.ndarray
    explicit_indices: np.ndarray
    """Explicit conflicts as a symmetric, de-duplicated CSR graph without self-loops."""
    has_explicit: bool
    _adjacency: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)
    _index: IntervalIndex | None = field(default=None, repr=False)
    _edges: int | None = field(default=None, repr=False)
    _flat: FlatLists | None = field(default=None, repr=False)

    @property
    def count(self) -> int:
        return len(self.sizes)

    @property
    def forced(self) -> bool:
        """Whether every buffer has a single candidate pool (the pool choice is fixed)."""
        return all(len(pools) == 1 for pools in self.candidate_pools)

    def estimated_edges(self) -> int:
        """Twice the number of interval-overlap pairs (counting a buffer's own items), plus the
        explicit edges: an upper estimate of the adjacency's size."""
        if self._edges is None:
            degrees = interval_degrees(self.item_start, self.item_end)
            self._edges = int(degrees.sum()) + len(self.explicit_indices)
        return self._edges

    def use_adjacency(self) -> bool:
        return self._adjacency is not None or self.estimated_edges() <= CSR_EDGE_LIMIT

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """The whole conflict graph as CSR (indptr, indices): symmetric, sorted, no
        duplicates, no self-loops, zero-size buffers included only through explicit edges."""
        if self._adjacency is None:
            self._adjacency = _build_adjacency(self)
        return self._adjacency

    def flat(self) -> FlatLists:
        """The per-buffer lists (candidate pools, items) as CSR arrays, for the native core."""
        if self._flat is None:
            pool_counts = np.fromiter((len(p) for p in self.candidate_pools), INT, self.count)
            item_counts = np.fromiter((len(i) for i in self.buffer_items), INT, self.count)
            self._flat = FlatLists(
                candidate_indptr=np.concatenate(([0], np.cumsum(pool_counts))).astype(INT),
                candidate_pools=np.fromiter(
                    (p for pools in self.candidate_pools for p in pools),
                    INT,
                    int(pool_counts.sum()),
                ),
                item_indptr=np.concatenate(([0], np.cumsum(item_counts))).astype(INT),
                items=np.concatenate([*self.buffer_items, np.empty(0, dtype=INT)]).astype(INT),
            )
        return self._flat

    def index(self) -> IntervalIndex:
        if self._index is None:
            self._index = IntervalIndex(self.item_owner, self.item_start, self.item_end)
        return self._index


def interval_degrees(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per interval, how many of the given intervals overlap it (itself included), from the
    sorted ends: no pair is enumerated."""
    return np.searchsorted(np.sort(starts), ends, "left") - np.searchsorted(
        np.sort(ends), starts, "right"
    )


def run_positions(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The positions of the runs [first[i], first[i] + counts[i]), concatenated."""
    return np.arange(int(counts.sum()), dtype=INT) + np.repeat(
        first - np.cumsum(counts) + counts, counts
    )


@dataclass(frozen=True)
class FlatLists:
    """An instance's per-buffer lists as CSR arrays (indptr, values)."""

    candidate_indptr: np.ndarray
    candidate_pools: np.ndarray
    item_indptr: np.ndarray
    items: np.ndarray


class IntervalIndex:
    """Static index of intervals: grouped by length class (floor(log2(length))), sorted by
    start within a class, so the intervals of class c overlapping [a, b) have their start in
    (a - 2^(c+1), b), one contiguous run per class."""

    def __init__(self, owner: np.ndarray, start: np.ndarray, end: np.ndarray) -> None:
        length = end - start
        classes = np.zeros(len(length), dtype=INT)
        if len(length):
            classes = np.floor(np.log2(length.astype(np.float64))).astype(INT)
            # Guard float rounding: make 2^c <= length < 2^(c+1) exact.
            classes = np.where((np.int64(1) << (classes + 1)) <= length, classes + 1, classes)
            classes = np.where((np.int64(1) << classes) > length, classes - 1, classes)
        self.time_min = int(start.min()) if len(start) else 0
        self.span = (int(end.max()) - self.time_min + 1) if len(end) else 1
        keys = classes * self.span + (start - self.time_min)
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.owner = owner[order]
        self.end = end[order]
        self.start = start[order]
        self.position_of_item = np.empty(len(order), dtype=INT)
        self.position_of_item[order] = np.arange(len(order), dtype=INT)
        present = np.unique(classes)
        self.class_base = present * self.span
        self.class_reach = np.int64(1) << (present + 1)

    def class_runs(self, keys: np.ndarray, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """(first, last) per length class: the runs of `keys` (sorted keys of this index's
        form, of all intervals or of a subset) that hold a superset of the intervals
        overlapping [start, end); exactly those whose end is above `start` overlap."""
        low = np.maximum(start - self.class_reach + 1 - self.time_min, 0)
        high = min(end - self.time_min, self.span)
        first = np.searchsorted(keys, self.class_base + low, "left")
        return first, np.searchsorted(keys, self.class_base + high, "left")

    def owners_overlapping(self, start: int, end: int) -> np.ndarray:
        """Owners of the intervals overlapping [start, end) (may repeat)."""
        first, last = self.class_runs(self.keys, start, end)
        positions = run_positions(first, last - first)
        positions = positions[self.end[positions] > start]
        return self.owner[positions]


def prepare(problem: Problem) -> Instance:
    """The arrays of `problem` (assumed checked by `check_problem`)."""
    buffers = problem.buffers
    count = len(buffers)
    sizes = np.fromiter((b.size_bytes for b in buffers), dtype=INT, count=count)
    alignments = np.fromiter((b.alignment for b in buffers), dtype=INT, count=count)
    capacities = np.array(
        [UNBOUNDED if p.capacity_bytes is None else p.capacity_bytes for p in problem.pools],
        dtype=INT,
    )
    owners: list[int] = []
    starts: list[int] = []
    ends: list[int] = []
    buffer_items: list[np.ndarray] = []
    for index, buffer in enumerate(buffers):
        if buffer.size_bytes == 0 or not buffer.live:
            buffer_items.append(np.empty(0, dtype=INT))
            continue
        intervals = [buffer.live[0]] if len(buffer.live) == 1 else merged_intervals(buffer.live)
        first = len(owners)
        for start, end in intervals:
            owners.append(index)
            starts.append(start)
            ends.append(end)
        buffer_items.append(np.arange(first, len(owners), dtype=INT))
    edge_sources: list[int] = []
    edge_targets: list[int] = []
    for index, buffer in enumerate(buffers):
        for other in buffer.conflicts:
            if other != index:
                edge_sources += (index, other)
                edge_targets += (other, index)
    indptr, indices = _csr(
        count, np.array(edge_sources, dtype=INT), np.array(edge_targets, dtype=INT)
    )
    return Instance(
        problem=problem,
        sizes=sizes,
        alignments=alignments,
        candidate_pools=[b.pools for b in buffers],
        capacities=capacities,
        item_owner=np.array(owners, dtype=INT),
        item_start=np.array(starts, dtype=INT),
        item_end=np.array(ends, dtype=INT),
        buffer_items=buffer_items,
        explicit_indptr=indptr,
        explicit_indices=indices,
        has_explicit=bool(len(indices)),
    )


def _csr(count: int, sources: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the given directed edges, de-duplicated and sorted per row."""
    if len(sources):
        # Sort and drop repeats by hand: np.unique's hash path is far slower on millions.
        keys = np.sort(sources * count + targets)
        keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
        sources, targets = keys // count, keys % count
    indptr = np.zeros(count + 1, dtype=INT)
    indptr[1:] = np.cumsum(np.bincount(sources, minlength=count))
    return indptr, targets.astype(INT)


def _interval_graph_native(
    library: ctypes.CDLL, instance: Instance
) -> tuple[np.ndarray, np.ndarray]:
    """`_build_adjacency` of a single-interval problem in C (csrc/graph.c)."""
    owner, start, end = (
        native.int64_array(a) for a in (instance.item_owner, instance.item_start, instance.item_end)
    )
    by_start = native.int64_array(np.argsort(start, kind="stable"))
    indptr = np.zeros(instance.count + 1, dtype=INT)
    arguments = (
        instance.count,
        len(owner),
        native.pointer(owner),
        native.pointer(by_start),
        native.pointer(start),
        native.pointer(end),
        native.pointer(indptr),
    )
    total = library.usmp_interval_graph(*arguments, None)
    indices = np.empty(total, dtype=INT)
    if library.usmp_interval_graph(*arguments, native.pointer(indices)) < 0:
        raise MemoryError("the native conflict graph ran out of memory")
    return indptr, indices


def _build_adjacency(instance: Instance) -> tuple[np.ndarray, np.ndarray]:
    count = instance.count
    owner, start, end = instance.item_owner, instance.item_start, instance.item_end
    if len(owner) <= DENSE_ITEM_LIMIT:
        overlap = (start[:, None] < end[None, :]) & (end[:, None] > start[None, :])
        left, right = np.nonzero(overlap)
        sources, targets = owner[left], owner[right]
    elif not instance.has_explicit and len(owner) == len(np.unique(owner)):
        library = native.load()
        if library is not None:
            return _interval_graph_native(library, instance)
        # One interval per buffer, items in buffer order: the rows come out already grouped
        # and without repeats, so no global sort is needed.
        index = instance.index()
        rows = [index.owners_overlapping(int(start[i]), int(end[i])) for i in range(len(owner))]
        rows = [np.sort(row[row != owner[i]]) for i, row in enumerate(rows)]
        lengths = np.zeros(count, dtype=INT)
        lengths[owner] = [len(row) for row in rows]
        indptr = np.zeros(count + 1, dtype=INT)
        indptr[1:] = np.cumsum(lengths)
        return indptr, np.concatenate(rows) if rows else np.empty(0, dtype=INT)
    else:
        index = instance.index()
        source_parts: list[np.ndarray] = []
        target_parts: list[np.ndarray] = []
        for item in range(len(owner)):
            others = index.owners_overlapping(int(start[item]), int(end[item]))
            target_parts.append(others)
            source_parts.append(np.full(len(others), owner[item], dtype=INT))
        sources = np.concatenate(source_parts) if source_parts else np.empty(0, dtype=INT)
        targets = np.concatenate(target_parts) if target_parts else np.empty(0, dtype=INT)
    keep = sources != targets
    sources, targets = sources[keep], targets[keep]
    explicit_sources = np.repeat(np.arange(count, dtype=INT), np.diff(instance.explicit_indptr))
    sources = np.concatenate([sources, explicit_sources])
    targets = np.concatenate([targets, instance.explicit_indices])
    return _csr(count, sources, targets)


def align_up_array(values: np.ndarray, alignment: int) -> np.ndarray:
    return -(-values // alignment) * alignment


def find_offset(
    lows: np.ndarray,
    highs: np.ndarray,
    size: int,
    alignment: int,
    capacity: int,
    best_fit: bool,
    lows_below: int | None = None,
) -> int:
    """The offset for a block of `size` bytes that avoids every `[lows[i], highs[i])`:
    the lowest aligned free position (first fit), or the one in the smallest free gap that
    holds it (best fit; the top of the stack when no gap does). -1 when nothing fits under
    `capacity`. Duplicate ranges are harmless; empty ones (zero-size buffers) occupy nothing.
    `lows_below`, when given, is an upper bound of `lows` (spares a pass over them)."""
    occupied = highs > lows
    if not occupied.all():
        lows, highs = lows[occupied], highs[occupied]
    if not len(lows):
        return 0 if size <= capacity else -1
    count = len(lows)
    shift = count.bit_length()
    # Gap i runs from the highest end among the ranges starting before range i to its start.
    gap_highs = np.empty(count + 1, dtype=INT)
    gap_highs[count] = UNBOUNDED
    if lows_below is None:
        lows_below = int(np.maximum.reduce(lows))
    if lows_below < (1 << (62 - shift)):
        # Sorting plain integers is much faster than argsort: pack each low with its index.
        packed = lows << shift
        packed |= np.arange(count, dtype=INT)
        packed.sort()
        order = packed & ((1 << shift) - 1)
        np.right_shift(packed, shift, out=gap_highs[:count])
    else:
        order = np.argsort(lows)
        gap_highs[:count] = lows[order]
    gap_lows = np.empty(count + 1, dtype=INT)
    gap_lows[0] = 0
    np.maximum.accumulate(highs[order], out=gap_lows[1:])
    if alignment == 1:
        placed = gap_lows
    else:
        placed = gap_lows + (alignment - 1)
        placed &= -alignment  # alignments are powers of two
    ends = placed + size
    fits = ends <= gap_highs
    if capacity < UNBOUNDED:
        fits &= ends <= capacity
    if best_fit:
        room = np.where(fits[:-1], gap_highs[:-1] - gap_lows[:-1], UNBOUNDED)
        best = int(np.argmin(room))
        if room[best] < UNBOUNDED:
            return int(placed[best])
    first = int(np.argmax(fits))
    return int(placed[first]) if fits[first] else -1
