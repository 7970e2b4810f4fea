"""An exact branch and bound in the spirit of MiniMalloc (Moffitt, ASPLOS '23).

At heart a decision procedure: can every buffer of one pool be placed under capacity C?

* Each buffer is placed at its *minimum viable offset*: the highest (aligned) top among the
  already-placed buffers it conflicts with. Any packing can be compacted so that every buffer
  rests on such a top, so this loses no solution.
* Canonical search: offsets never decrease along a search path, and buffers placed at the same
  offset go in preorder. Every compacted packing has exactly one such sequence.
* Dominance: never place a buffer at or above min(mvo + size) over the unplaced buffers (that
  buffer could drop into the gap left below), which also kills nodes where some unplaced buffer
  can no longer be placed canonically.
* Inference per section (a maximal time span over which the live set does not change, or for
  explicit conflicts an edge): its unplaced buffers all conflict with each other and lie above
  max(floor, current offset), so `max(floor, offset) + unplaced bytes <= C` must hold; more
  strongly, for every t, the unplaced buffers of a section whose minimum offset is >= t must
  fit in [t, C). Only the sections touched by the last placement are re-checked.
* Several static preorders are run round-robin under a node limit that doubles (restarts), as
  MiniMalloc does; independent time partitions are solved separately, and when placements
  split the rest into independent parts, each part is re-ranked by the preorder with T from
  the bytes still unplaced (MiniMalloc's SubSolve; this solves its challenging H and I).

`exact` minimises the pools' sizes by probing capacities between the lower bound and the best
plan known (the greedy portfolio's), within a node budget derived from the time limit (so
that the result does not depend on machine load) and the time limit itself; it reports the
space exhausted only when the optimum is proven. When the native core is built, each search
runs in C (csrc/exact.c), visiting the same nodes as `Search`.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from usmp_dialect.planning import AlgorithmResult, PlanOptions, native
from usmp_dialect.planning._core import INT, UNBOUNDED, Instance, prepare, run_positions
from usmp_dialect.planning.greedy import GreedyPlan, best_of_portfolio, diagnose_no_fit
from usmp_dialect.planning.problem import Plan, PlanningError, Problem, lower_bound

EXACT_BUFFER_LIMIT = 4_000
"""Pools with more buffers than this are not searched (the greedy plan is kept)."""

EXACT_EDGE_LIMIT = 3_000_000

NATIVE_EXACT_BUFFER_LIMIT = 30_000
NATIVE_EXACT_EDGE_LIMIT = 30_000_000
"""The same limits with the native core (~0.3-1M nodes/s): up to the PanGu and BERT networks;
the graph of IOPDDL S_1 (86M edges) or Y_1 (360M) would take longer to build than to use."""

THRESHOLD_BITS = 41
THRESHOLD_LIMIT = 1 << THRESHOLD_BITS
"""Capacities below this use the threshold form of section inference (offsets are packed
into a sort key next to the section index)."""

NATIVE_NODES_PER_SECOND = 120_000
PYTHON_NODES_PER_SECOND = 2_000
"""Node rates the exact search beats on this machine class (2 cores) even when loaded: on
MiniMalloc's instances 0.4-1.1M nodes/s native on an idle core, about 200k with the machine
loaded three times over, 5-10k in Python. The default node budget is the time limit times the
rate, so that searches end on the budget, deterministically, before the clock (which stays as
a hard stop for slower machines and huge pools) even for two planners sharing a core."""

NEAR_BOUND_DIVISOR = 1_000
NEAR_FIRST_BUFFERS = 2_000
"""Pools of at least this many buffers are first probed at bound + bound / NEAR_BOUND_DIVISOR
(0.1 % above the lower bound) with half the budget, before the rounds of `minimise_pool`."""

DESCENT_FIRST_NODES = 2_048
DESCENT_FIRST_NODES_PER_BUFFER = 16
"""Nodes per probe in the first round of `minimise_pool` (doubling every round)."""

DESCENT_SKIPS = 4
"""Capacities in a row one unit apart that a descent steps over before the round ends."""

BOUND_SHARE = 0.3
"""The share of a pool's budget for the probe at its lower bound, beside the descent:
MiniMalloc's perfect packings (A-K) are found there far sooner than at any capacity above it
(A in 108k nodes, B in 206k), where D and J never are."""

PREORDERS = ("WAT", "TAW", "TWA")
"""Preorders, MiniMalloc's defaults: W = live width (time span), A = area (size x live length),
T = largest section total the buffer is in (all descending, ties by index). Like MiniMalloc,
each independent part of a split is re-ranked with T from the bytes still unplaced."""


class SearchTimeout(Exception):
    pass


class NodeLimit(Exception):
    pass


@dataclass
class Subproblem:
    """One pool's buffers (local indices) with everything the search reads."""

    members: np.ndarray
    """Global buffer indices."""
    sizes: np.ndarray
    alignments: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    """Conflicts between members, CSR over local indices."""
    section_indptr: np.ndarray
    section_indices: np.ndarray
    """Per member, the sections (cliques) it belongs to."""
    section_count: int
    section_total: np.ndarray
    """Per section, the total size of its members."""
    preorder_keys: dict[str, np.ndarray]
    """Per preorder, each member's rank (static: T from the section totals)."""
    width: np.ndarray
    area: np.ndarray
    """The W and A columns of the preorders (int64, A saturating at UNBOUNDED)."""


def build_subproblem(instance: Instance, members: np.ndarray) -> Subproblem:
    count = len(members)
    local = np.full(instance.count, -1, dtype=INT)
    local[members] = np.arange(count, dtype=INT)
    indptr, indices = _restricted_adjacency(instance, members, local)
    sizes = instance.sizes[members]

    # Sections: elementary time spans of the members' intervals, plus one per explicit edge.
    item_mask = local[instance.item_owner] >= 0
    owners = local[instance.item_owner[item_mask]]
    starts = instance.item_start[item_mask]
    ends = instance.item_end[item_mask]
    bounds = np.unique(np.concatenate([starts, ends]))
    first = np.searchsorted(bounds, starts)
    last = np.searchsorted(bounds, ends)
    spans = last - first
    sec_owner = np.repeat(owners, spans)
    sec_index = run_positions(first, spans)
    section_count = max(0, len(bounds) - 1)
    explicit_pairs = []
    for member in members.tolist():
        for other in instance.explicit_indices[
            instance.explicit_indptr[member] : instance.explicit_indptr[member + 1]
        ].tolist():
            if member < other and local[other] >= 0:
                explicit_pairs.append((int(local[member]), int(local[other])))
    if explicit_pairs:
        pairs = np.array(explicit_pairs, dtype=INT)
        ids = section_count + np.arange(len(pairs), dtype=INT)
        sec_owner = np.concatenate([sec_owner, pairs[:, 0], pairs[:, 1]])
        sec_index = np.concatenate([sec_index, ids, ids])
        section_count += len(pairs)
    steps = np.diff(sec_owner)
    if not ((steps > 0) | ((steps == 0) & (np.diff(sec_index) > 0))).all():
        # Several intervals per buffer or explicit pairs: sort by (owner, section).
        order = np.lexsort((sec_index, sec_owner))
        sec_owner, sec_index = sec_owner[order], sec_index[order]
    section_indptr = np.zeros(count + 1, dtype=INT)
    section_indptr[1:] = np.cumsum(np.bincount(sec_owner, minlength=count))
    section_total = np.zeros(section_count, dtype=INT)
    np.add.at(section_total, sec_index, sizes[sec_owner])

    largest_total = np.zeros(count, dtype=INT)
    if len(sec_owner):
        np.maximum.at(largest_total, sec_owner, section_total[sec_index])
    spans_per_member = np.diff(section_indptr)
    length = np.zeros(count, dtype=INT)
    np.add.at(length, owners, ends - starts)
    length = np.maximum(length, 1)
    area = np.where(sizes > UNBOUNDED // length, UNBOUNDED, sizes * length)
    first_start = np.full(count, np.iinfo(INT).max, dtype=INT)
    last_end = np.zeros(count, dtype=INT)
    np.minimum.at(first_start, owners, starts)
    np.maximum.at(last_end, owners, ends)
    width = np.where(last_end > 0, last_end - first_start, 0)
    columns = {"T": largest_total, "C": spans_per_member, "A": area, "Z": sizes, "W": width}
    index = np.arange(count)
    keys = {}
    for name in PREORDERS:
        sort_keys = [index] + [-columns[letter] for letter in reversed(name)]
        ranks = np.empty(count, dtype=INT)
        ranks[np.lexsort(sort_keys)] = index
        keys[name] = ranks
    return Subproblem(
        members=members,
        sizes=sizes,
        alignments=instance.alignments[members],
        indptr=indptr,
        indices=indices,
        section_indptr=section_indptr,
        section_indices=sec_index,
        section_count=section_count,
        section_total=section_total,
        preorder_keys=keys,
        width=width,
        area=area,
    )


def _restricted_adjacency(
    instance: Instance, members: np.ndarray, local: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The conflict graph among `members` as CSR over local indices (`local` maps a buffer to
    its local index or -1), cut out of the instance's graph without a per-buffer loop."""
    indptr_all, indices_all = instance.adjacency()
    if len(members) == instance.count:  # every buffer, in order: the graph itself
        return indptr_all, indices_all
    starts, ends = indptr_all[members], indptr_all[members + 1]
    lengths = ends - starts
    positions = run_positions(starts, lengths)
    targets = local[indices_all[positions]]
    rows = np.repeat(np.arange(len(members), dtype=INT), lengths)
    keep = targets >= 0
    indptr = np.zeros(len(members) + 1, dtype=INT)
    indptr[1:] = np.cumsum(np.bincount(rows[keep], minlength=len(members)))
    return indptr, targets[keep]


def partitions(sub: Subproblem) -> list[np.ndarray]:
    """Connected components of the conflict graph (local indices), each sorted."""
    count = len(sub.sizes)
    runs = _section_runs(sub)
    if runs is not None:
        # Every member lives over one run of sections (or none): members are connected exactly
        # when a chain of overlapping runs joins them, so a sweep over the sections finds the
        # parts; a member in no section is a part of its own.
        first, last = runs
        live = first >= 0
        covered = np.zeros(sub.section_count + 1, dtype=INT)
        np.add.at(covered, first[live], 1)
        np.add.at(covered, last[live], -1)
        joined = np.cumsum(covered)[:-1] > 0  # some member spans sections s and s + 1
        part_of_section = np.concatenate(([0], np.cumsum(~joined[:-1]))).astype(INT)
        part = np.where(live, part_of_section[np.maximum(first, 0)], -1 - np.arange(count))
        order = np.argsort(part, kind="stable")
        boundaries = np.flatnonzero(np.diff(part[order])) + 1
        return [np.sort(c) for c in np.split(order, boundaries)] if count else []
    label = np.full(count, -1, dtype=INT)
    components = []
    for root in range(count):
        if label[root] >= 0:
            continue
        label[root] = root
        stack = [root]
        members = [root]
        while stack:
            node = stack.pop()
            for other in sub.indices[sub.indptr[node] : sub.indptr[node + 1]].tolist():
                if label[other] < 0:
                    label[other] = root
                    stack.append(other)
                    members.append(other)
        components.append(np.array(sorted(members), dtype=INT))
    return components


def _section_runs(sub: Subproblem) -> tuple[np.ndarray, np.ndarray] | None:
    """Per member, the first and last section it is live in (-1 for a member in none), when
    each member's sections form one contiguous run; else None."""
    spans = np.diff(sub.section_indptr)
    if not sub.section_count:
        return None
    present = spans > 0
    first = np.full(len(spans), -1, dtype=INT)
    last = np.full(len(spans), -1, dtype=INT)
    first[present] = sub.section_indices[sub.section_indptr[:-1][present]]
    last[present] = sub.section_indices[sub.section_indptr[1:][present] - 1]
    if not (last[present] - first[present] + 1 == spans[present]).all():
        return None
    return first, last


class Search:
    """The decision search for one connected component at one capacity."""

    def __init__(self, sub: Subproblem, component: np.ndarray, deadline: float) -> None:
        self.sub = sub
        self.component = component
        self.deadline = deadline
        self.nodes = 0
        self.node_limit = 0
        count = len(sub.sizes)
        # Section membership as (section, buffer) pairs sorted by section, restricted to the
        # sections of this component, for one reduceat per node.
        owners = np.repeat(np.arange(count, dtype=INT), np.diff(sub.section_indptr))
        inside = np.zeros(count, dtype=bool)
        inside[component] = True
        keep = inside[owners]
        pair_sections, pair_owners = sub.section_indices[keep], owners[keep]
        order = np.lexsort((pair_owners, pair_sections))
        pair_sections, self.pair_owners = pair_sections[order], pair_owners[order]
        self.sections, self.section_starts = np.unique(pair_sections, return_index=True)
        self.section_starts = np.append(self.section_starts, len(self.pair_owners))
        self.pair_section = np.searchsorted(self.sections, pair_sections).astype(INT)
        local = np.full(sub.section_count, -1, dtype=INT)
        local[self.sections] = np.arange(len(self.sections), dtype=INT)
        self.member_sections: list[np.ndarray | slice] = [
            local[sub.section_indices[sub.section_indptr[m] : sub.section_indptr[m + 1]]]
            for m in range(count)
        ]
        # Dynamic decomposition needs each buffer's sections to be one contiguous run of
        # time sections (one live interval, no explicit-conflict pseudo-sections).
        self.first_section = np.zeros(count, dtype=INT)
        self.end_section = np.zeros(count, dtype=INT)
        self.decompose = True
        for member in component.tolist():
            run = self.member_sections[member]
            if not len(run) or int(run[-1]) - int(run[0]) + 1 != len(run):
                self.decompose = False
                break
            self.first_section[member] = run[0]
            self.end_section[member] = run[-1] + 1
        if self.decompose:
            # Contiguous runs: slices update the section totals faster than index arrays.
            self.member_sections = [
                slice(int(self.first_section[m]), int(self.end_section[m])) for m in range(count)
            ]

    def run(self, capacity: int, preorder: str, node_limit: int) -> np.ndarray | None:
        """Offsets (indexed like sub.sizes, valid on the component) or None when proven
        infeasible; raises NodeLimit or SearchTimeout."""
        sub = self.sub
        count = len(sub.sizes)
        self.capacity = capacity
        self.preorder = preorder
        self.rank = sub.preorder_keys[preorder].copy()  # parts of a split re-rank in place
        self.unplaced = np.zeros(count, dtype=bool)
        self.unplaced[self.component] = True
        self.mvo = np.zeros(count, dtype=INT)
        # mvo for unplaced buffers, UNBOUNDED for placed ones: the per-section minimum.
        self.open_mvo = np.where(self.unplaced, 0, UNBOUNDED).astype(INT)
        self.solution = np.zeros(count, dtype=INT)
        self.total = np.zeros(len(self.sections), dtype=INT)
        self.cuts = np.zeros(len(self.sections), dtype=INT)
        for member in self.component.tolist():
            self.total[self.member_sections[member]] += sub.sizes[member]
            if self.decompose:
                self.cuts[self.first_section[member] : self.end_section[member] - 1] += 1
        if (self.total > capacity).any() or (sub.sizes[self.component] > capacity).any():
            return None
        self.aligned = bool((sub.alignments == 1).all())
        self.neighbours = [sub.indices[sub.indptr[m] : sub.indptr[m + 1]] for m in range(count)]
        self.nodes = 0
        self.node_limit = node_limit
        found = self._search(self.component, 0, len(self.sections), -1)
        return self.solution.copy() if found else None

    def _search(
        self,
        members: np.ndarray,
        first: int,
        end: int,
        last_key: int,
        changed: tuple[int, int] | None = None,
    ) -> bool:
        """Places the unplaced `members`, whose sections are [first, end), after the buffer of
        canonical key `last_key` (offset x count + preorder rank). `changed` is the section
        range whose floors or totals changed since the last check (None: all). The state is
        restored on return; the offsets of a success are in self.solution."""
        self.nodes += 1
        if self.nodes > self.node_limit:
            raise NodeLimit
        if not self.nodes & 63 and time.perf_counter() > self.deadline:
            raise SearchTimeout
        sub = self.sub
        capacity = self.capacity
        unplaced = members[self.unplaced[members]]
        if not len(unplaced):
            return True
        mvo = self.mvo[unplaced]
        heights = mvo + sub.sizes[unplaced]
        if np.maximum.reduce(heights) > capacity:
            return False
        count = len(sub.sizes)
        # Section inference: the unplaced buffers of a section conflict with each other and
        # all go at or above both the lowest of their minimum offsets and the last offset.
        # The last-offset half holds by construction (candidates are chosen below
        # capacity - fullest section); the lowest-offset half can only have changed in the
        # sections of the buffers just placed or raised.
        low, high = (
            (first, end) if changed is None else (max(first, changed[0]), min(end, changed[1]))
        )
        if low < high:
            pair_first = self.section_starts[low]
            lowest = np.minimum.reduceat(
                self.open_mvo[self.pair_owners[pair_first : self.section_starts[high]]],
                self.section_starts[low:high] - pair_first,
            )
            if np.logical_or.reduce(np.minimum(lowest, capacity) + self.total[low:high] > capacity):
                return False
            if capacity < THRESHOLD_LIMIT and not self._thresholds_fit(
                pair_first, int(self.section_starts[high])
            ):
                return False
        total = self.total[first:end]
        # Candidates: canonical (key above the last one), below every unplaced buffer's
        # minimum top (dominance), and low enough for the fullest section.
        limit = min(int(np.minimum.reduce(heights)), capacity - int(np.maximum.reduce(total)) + 1)
        keys = mvo * count + self.rank[unplaced]
        eligible = (keys > last_key) & (mvo < limit)
        keys = keys[eligible]
        if not len(keys):
            return False
        chosen = unplaced[eligible]
        order = np.argsort(keys)
        for candidate, key in zip(chosen[order].tolist(), keys[order].tolist(), strict=True):
            offset = key // count
            size = int(sub.sizes[candidate])
            height = offset + size
            self.unplaced[candidate] = False
            self.open_mvo[candidate] = UNBOUNDED
            self.solution[candidate] = offset
            neighbours = self.neighbours[candidate]
            neighbours = neighbours[self.unplaced[neighbours]]
            old_mvo = self.mvo[neighbours]
            if self.aligned:
                raised = np.maximum(old_mvo, height)
            else:
                alignments = sub.alignments[neighbours]
                raised = np.maximum(old_mvo, -(-height // alignments) * alignments)
            moved = raised != old_mvo
            hatless = not np.logical_or.reduce(moved)
            self.mvo[neighbours] = raised
            self.open_mvo[neighbours] = raised
            sections = self.member_sections[candidate]
            self.total[sections] -= size
            changed = None
            if self.decompose:
                low = int(self.first_section[candidate])
                high = int(self.end_section[candidate])
                if not hatless:
                    raised_buffers = neighbours[moved]
                    low = min(low, int(np.minimum.reduce(self.first_section[raised_buffers])))
                    high = max(high, int(np.maximum.reduce(self.end_section[raised_buffers])))
                changed = (low, high)
            found = self._place_rest(members, first, end, candidate, key, changed)
            self.total[sections] += size
            self.mvo[neighbours] = old_mvo
            self.open_mvo[neighbours] = old_mvo
            self.open_mvo[candidate] = offset
            self.unplaced[candidate] = True
            if found:
                return True
            if hatless:
                # Nothing rests on this buffer: placing others first cannot help (MiniMalloc's
                # hatless pruning).
                break
        return False

    def _thresholds_fit(self, pair_first: int, pair_end: int) -> bool:
        """The stronger form of section inference: in a section, the unplaced buffers whose
        minimum offset is at least t all lie in [t, capacity), so for every t their sizes must
        add up to at most capacity - t (the basic check is t = the lowest minimum offset)."""
        owners = self.pair_owners[pair_first:pair_end]
        values = self.open_mvo[owners]
        open_pairs = values < UNBOUNDED
        owners, values = owners[open_pairs], values[open_pairs]
        if len(owners) < 2:
            return True
        sections = self.pair_section[pair_first:pair_end][open_pairs]
        # Section ascending, minimum offset descending.
        order = np.argsort((sections << THRESHOLD_BITS) | (THRESHOLD_LIMIT - 1 - values))
        values, sections = values[order], sections[order]
        sizes = self.sub.sizes[owners[order]]
        sums = np.cumsum(sizes)
        firsts = np.flatnonzero(np.concatenate(([True], sections[1:] != sections[:-1])))
        before = np.repeat(sums[firsts] - sizes[firsts], np.diff(np.append(firsts, len(sums))))
        return not np.logical_or.reduce(values + sums - before > self.capacity)

    def _place_rest(
        self,
        members: np.ndarray,
        first: int,
        end: int,
        placed: int,
        key: int,
        changed: tuple[int, int] | None,
    ) -> bool:
        """Continues after placing `placed`; splits the rest into independent parts when no
        unplaced buffer crosses some section boundary any more, each searched under its own
        preorder ranks (`_rerank`)."""
        if not self.decompose:
            return self._search(members, first, end, key, changed)
        low = int(self.first_section[placed])
        high = int(self.end_section[placed]) - 1
        if high <= low:
            return self._search(members, first, end, key, changed)
        crossing = self.cuts[low:high]
        crossing -= 1
        try:
            if np.minimum.reduce(crossing) > 0:
                return self._search(members, first, end, key, changed)
            freed = np.flatnonzero(crossing == 0)
            points = [first, *(low + freed + 1).tolist(), end]
            rest = members[self.unplaced[members]]
            starts, ends = self.first_section[rest], self.end_section[rest]
            for part_first, part_end in pairwise(points):
                part = rest[(starts < part_end) & (ends > part_first)]
                if not len(part):
                    continue
                saved = self.rank[part]
                self._rerank(part)
                try:
                    if not self._search(part, part_first, part_end, -1, changed):
                        return False
                finally:
                    self.rank[part] = saved
            return True
        finally:
            crossing += 1

    def _rerank(self, part: np.ndarray) -> None:
        """Ranks the buffers of `part` 0, 1, ... by the preorder with T from the bytes still
        unplaced, as MiniMalloc's SubSolve does: after a split the static T (the full section
        totals) no longer says which buffers are the hard ones in a part."""
        sub = self.sub
        # Decomposition implies contiguous runs: T is the largest total over each run.
        runs = np.empty(2 * len(part), dtype=INT)
        runs[0::2] = self.first_section[part]
        runs[1::2] = self.end_section[part]
        columns = {
            "T": np.maximum.reduceat(np.append(self.total, 0), runs)[0::2],
            "C": runs[1::2] - runs[0::2],
            "A": sub.area[part],
            "Z": sub.sizes[part],
            "W": sub.width[part],
        }
        order = np.lexsort([part] + [-columns[letter] for letter in reversed(self.preorder)])
        self.rank[part[order]] = np.arange(len(part), dtype=INT)


Runner = Callable[[int, str, int], tuple[int, np.ndarray | None, int]]
"""Runs the decision search of one component: (capacity, preorder, node limit) -> (status,
offsets indexed like the subproblem when found, nodes visited); status as `native_search`."""

FOUND, INFEASIBLE, OVER_NODE_LIMIT, OVER_TIME = 1, 0, -1, -2


@dataclass
class NodeBudget:
    """The nodes the exact search may still visit, shared by every probe of every pool.

    The default is the time limit times a node rate this machine class beats (see
    `default_node_budget`), so that the budget, not the clock, ends a search: the result then
    does not depend on machine load. The time limit stays as a hard stop."""

    remaining: int
    clock_stopped: bool = False
    """Whether the clock (the hard stop), not the budget, ended a search that drew on it."""


def default_node_budget(options: PlanOptions, share: float = 1.0) -> NodeBudget:
    """`options.node_budget` (all of it: it is the search's), or `share` of the time limit at
    the node rate."""
    if options.node_budget is not None:
        return NodeBudget(options.node_budget)
    rate = NATIVE_NODES_PER_SECOND if native.load() is not None else PYTHON_NODES_PER_SECOND
    return NodeBudget(int(options.time_limit_s * share * rate))


def native_search(
    library: ctypes.CDLL,
    sub: Subproblem,
    component: np.ndarray,
    capacity: int,
    preorder: str,
    node_limit: int,
    time_limit_s: float,
) -> tuple[int, np.ndarray | None, int]:
    """`Search.run` in C (csrc/exact.c): (status, offsets indexed like sub.sizes when found,
    nodes), status 1 found, 0 infeasible, -1 node limit, -2 time limit."""
    arrays = [
        native.int64_array(a)
        for a in (
            sub.sizes,
            sub.alignments,
            sub.indptr,
            sub.indices,
            sub.section_indptr,
            sub.section_indices,
            component,
            sub.preorder_keys[preorder],
            sub.width,
            sub.area,
        )
    ]
    sizes, alignments, indptr, indices, section_indptr, section_indices = arrays[:6]
    members, rank, width, area = arrays[6:]
    offsets = np.zeros(len(sub.sizes), dtype=INT)
    nodes = np.zeros(1, dtype=INT)
    status = library.usmp_exact_search(
        len(sizes),
        native.pointer(sizes),
        native.pointer(alignments),
        native.pointer(indptr),
        native.pointer(indices),
        native.pointer(section_indptr),
        native.pointer(section_indices),
        sub.section_count,
        native.pointer(members),
        len(members),
        native.pointer(rank),
        native.pointer(width),
        native.pointer(area),
        preorder.encode(),
        capacity,
        node_limit,
        max(0.0, time_limit_s),
        native.pointer(offsets),
        native.pointer(nodes),
    )
    return int(status), offsets if status == FOUND else None, int(nodes[0])


def component_runner(sub: Subproblem, component: np.ndarray, deadline: float) -> Runner:
    """The search of `component`: native when the core is built, else `Search`."""
    library = native.load()
    if library is not None:
        return lambda capacity, preorder, node_limit: native_search(
            library, sub, component, capacity, preorder, node_limit, deadline - time.perf_counter()
        )
    search = Search(sub, component, deadline)

    def run(capacity: int, preorder: str, node_limit: int) -> tuple[int, np.ndarray | None, int]:
        search.nodes = 0
        try:
            result = search.run(capacity, preorder, node_limit)
        except NodeLimit:
            return OVER_NODE_LIMIT, None, search.nodes
        except SearchTimeout:
            return OVER_TIME, None, search.nodes
        return (INFEASIBLE, None, search.nodes) if result is None else (FOUND, result, search.nodes)

    return run


Restarts = dict[int, "tuple[int, int] | np.ndarray"]
"""Per component (by position), where the restarts of a decision at one capacity got to: the
node limit and preorder position of the next run, or the offsets found."""


def decide(
    sub: Subproblem,
    components: list[np.ndarray],
    capacity: int,
    deadline: float,
    budget: NodeBudget,
    restarts: Restarts | None = None,
) -> tuple[str, np.ndarray | None]:
    """('found', offsets) / ('infeasible', None) / ('timeout', None) for the whole pool;
    'timeout' also when the node budget runs out (the nodes visited are taken from it).

    Each component runs the preorders round-robin under a node limit that doubles. With
    `restarts`, a decision that ran out of nodes resumes where the last one at the same
    capacity stopped (the runs before are deterministic and known to fail): the same nodes in
    total as one decision with the sum of the budgets."""
    restarts = {} if restarts is None else restarts
    offsets = np.zeros(len(sub.sizes), dtype=INT)
    for position, component in enumerate(components):
        if len(component) == 1:
            if sub.sizes[component[0]] > capacity:
                return "infeasible", None
            continue
        known = restarts.get(position)
        if isinstance(known, np.ndarray):
            offsets[component] = known[component]
            continue
        limit, first = known if known is not None else (4 * len(component), 0)
        run = component_runner(sub, component, deadline)
        result = None
        while result is None:
            for index in range(first, len(PREORDERS)):
                allowed = min(limit, budget.remaining)
                if allowed <= 0:
                    restarts[position] = (limit, index)
                    return "timeout", None
                status, result, nodes = run(capacity, PREORDERS[index], allowed)
                budget.remaining -= nodes
                if status == OVER_TIME or (status == OVER_NODE_LIMIT and allowed < limit):
                    # Stopped short of its limit: this run is the one to redo.
                    budget.clock_stopped = budget.clock_stopped or status == OVER_TIME
                    restarts[position] = (limit, index)
                    return "timeout", None
                if status == INFEASIBLE:
                    return "infeasible", None
                if status == FOUND:
                    break
            limit, first = 2 * limit, 0
        assert result is not None
        restarts[position] = result
        offsets[component] = result[component]
    return "found", offsets


def granule(sub: Subproblem) -> int:
    """The largest unit every size and alignment above 1 of `sub` is a multiple of: every
    compacted packing (each buffer on a top, rounded up to its alignment) has offsets and peak
    in whole units, so capacities between two multiples of it decide alike and the optimum is
    a multiple of it."""
    values = np.concatenate([sub.sizes, sub.alignments[sub.alignments > 1]])
    return max(1, int(np.gcd.reduce(values))) if len(values) else 1


class _Probes:
    """The state of one pool's minimisation: the proven range [low, high) of the optimum, the
    best offsets found (kept the moment a probe finds them) and the budget the probes draw
    on."""

    def __init__(
        self,
        sub: Subproblem,
        bound: int,
        offsets: np.ndarray | None,
        capacity: int,
        deadline: float,
        budget: NodeBudget,
        progress: Callable[[str], None] | None,
        components: list[np.ndarray] | None = None,
    ) -> None:
        self.sub = sub
        self.components = partitions(sub) if components is None else components
        self.unit = granule(sub)
        self.low = -(-bound // self.unit) * self.unit  # every capacity below is infeasible
        self.best = offsets
        self.best_peak = (
            int((offsets + sub.sizes).max()) if offsets is not None and len(sub.sizes) else None
        )
        # Capacities at or above `high` are known feasible (with no plan: the capacity + 1).
        self.high = self.best_peak if self.best_peak is not None else capacity + 1
        self.deadline = deadline
        self.budget = budget
        self.progress = progress
        self.spent = 0
        self.restarts: dict[int, Restarts] = {}
        """Per capacity probed, where its restarts got to (a probe resumes there)."""

    def can_go_on(self) -> bool:
        if self.budget.remaining > 0 and time.perf_counter() >= self.deadline:
            self.budget.clock_stopped = True
        return self.low < self.high and self.budget.remaining > 0 and not self.budget.clock_stopped

    def probe(self, capacity: int, nodes: int) -> str:
        """Decides `capacity` within `nodes` (and the budget); keeps a plan found at once."""
        return self.apply(capacity, self.run(capacity, min(nodes, self.budget.remaining)))

    def probe_pair(self, first: int, second: int, nodes: int) -> tuple[str, str]:
        """`probe(first)` and `probe(second)` at once, the second on a thread (each within
        `nodes`, the second within what the first leaves of the budget), applied in order:
        the same plans whichever finishes first."""
        allowed = min(nodes, self.budget.remaining)
        other: list[Decision] = []
        thread = threading.Thread(
            target=lambda: other.append(
                self.run(second, min(nodes, self.budget.remaining - allowed), quiet=True)
            ),
            daemon=True,
        )
        thread.start()
        try:
            decision = self.run(first, allowed)
        finally:
            thread.join()
        return self.apply(first, decision), self.apply(second, other[0])

    def run(self, capacity: int, allowed: int, quiet: bool = False) -> Decision:
        """The decision at `capacity` within `allowed` nodes (its restarts resume), without
        touching the state but its restarts."""
        if self.progress and not quiet:
            self.progress(f"exact: probing capacity {capacity} (bounds [{self.low}, {self.high}])")
        share = NodeBudget(max(1, allowed))
        restarts = self.restarts.setdefault(capacity, {})
        status, found = decide(self.sub, self.components, capacity, self.deadline, share, restarts)
        return Decision(status, found, max(1, allowed) - share.remaining, share.clock_stopped)

    def apply(self, capacity: int, decision: Decision) -> str:
        """Takes a decision's nodes from the budget and keeps what it found or proved."""
        self.budget.remaining -= decision.nodes
        self.spent += decision.nodes
        self.budget.clock_stopped = self.budget.clock_stopped or decision.clock_stopped
        if decision.status == "found":
            assert decision.offsets is not None
            peak = int((decision.offsets + self.sub.sizes).max())
            if self.best_peak is None or peak < self.best_peak:
                self.best, self.best_peak, self.high = decision.offsets, peak, peak
        elif decision.status == "infeasible":
            self.low = max(self.low, (capacity // self.unit + 1) * self.unit)
        return decision.status


@dataclass(frozen=True)
class Decision:
    """What one probe found: its status, offsets when found, nodes spent, clock stop."""

    status: str
    offsets: np.ndarray | None
    nodes: int
    clock_stopped: bool


def minimise_pool(
    instance: Instance,
    members: np.ndarray,
    offsets: np.ndarray | None,
    capacity: int,
    deadline: float,
    budget: NodeBudget,
    progress: Callable[[str], None] | None,
) -> tuple[np.ndarray | None, bool]:
    """Improves the offsets of one pool's members (None: no known plan fits) within the node
    budget (which it draws on) and the deadline. Returns the best offsets found (global array
    slice order = members) and whether they are optimal.

    An anytime schedule of two searches side by side (the second on a thread):

    * a descent from the best plan, in rounds each with twice the nodes per probe of the last
      (starting from DESCENT_FIRST_NODES_PER_BUFFER per buffer): probes one unit (`granule`)
      below the best plan, a step that doubles while probes succeed and halves when one runs
      out of nodes; at one unit, a capacity that runs out of nodes is stepped over (the
      search's difficulty is far from monotone in the capacity: on MiniMalloc's D, 1,031,168
      is found in 17k nodes where 1,032,192 takes over 2M), two at a time on two threads
      (`probe_pair`, whose results apply in a fixed order), and DESCENT_SKIPS of those in a
      row end the round;
    * a probe at the lower bound with BOUND_SHARE of the budget, which proves the plan optimal
      when it succeeds (as on most real networks and MiniMalloc's A-K), and then ends the
      descent. Its plan is the result whenever it finds one (the descent never probes the
      bound), so which search finishes first does not change the plan.

    A capacity probed again resumes its restarts where they stopped (`decide`), so the rounds
    waste little. Every plan a probe finds is kept the moment it is found, so the budget or
    the clock stopping a probe loses nothing, and the schedule depends on node counts only:
    a larger budget follows the same probes further, to a plan at least as good."""
    sub = build_subproblem(instance, members)
    bound = lower_bound(instance.problem, members.tolist())
    state = _Probes(sub, bound, offsets, capacity, deadline, budget, progress)
    unit = state.unit
    if state.best_peak is not None and state.best_peak <= state.low:
        return state.best, True
    if state.best is None:
        # No plan to descend from: the capacity itself first, with everything there is.
        status = state.probe(capacity, budget.remaining)
        if status != "found":
            return None, status == "infeasible"
    if len(members) >= NEAR_FIRST_BUFFERS:
        # A probe costs at least a node per buffer: on large pools the rounds would spend the
        # budget on few probes, while a little slack above the bound is found fast.
        near = state.low + state.low // NEAR_BOUND_DIVISOR
        near -= near % unit
        if state.low < near < state.high:
            state.probe(near, budget.remaining // 2)
    nodes = max(DESCENT_FIRST_NODES, DESCENT_FIRST_NODES_PER_BUFFER * len(members))
    # The probe at the bound runs beside the descent, on a thread (the native search releases
    # the GIL) with a budget of its own: neither waits for the other, and each one's probes
    # depend on its own node counts only.
    bound_budget = NodeBudget(int(BOUND_SHARE * budget.remaining))
    budget.remaining -= bound_budget.remaining
    at_bound = _Probes(sub, bound, None, capacity, deadline, bound_budget, None, state.components)
    found_at_bound = threading.Event()

    def probe_the_bound() -> None:
        if at_bound.can_go_on() and at_bound.probe(state.low, bound_budget.remaining) == "found":
            found_at_bound.set()

    thread = threading.Thread(target=probe_the_bound, daemon=True)
    thread.start()
    try:
        _descend(state, nodes, found_at_bound)
    finally:
        thread.join()
    budget.remaining += max(0, bound_budget.remaining)
    budget.clock_stopped = budget.clock_stopped or bound_budget.clock_stopped
    if at_bound.best is not None:  # the descent never probes the bound: this plan is the one
        return at_bound.best, True
    low = max(state.low, at_bound.low)
    return state.best, state.best_peak is not None and low >= state.best_peak


def _descend(state: _Probes, nodes: int, stop: threading.Event) -> None:
    """The descent rounds of `minimise_pool` (until `stop` is set, the budget is spent or the
    clock runs out)."""
    unit = state.unit
    if state.low < state.high - unit and state.can_go_on():
        # One cheap step first, so that the first improvement comes within milliseconds.
        state.probe(state.high - unit, nodes)
    while state.can_go_on() and not stop.is_set():
        tried = {state.low}  # the bound is the other thread's
        steps, skipped = 1, 0
        target = state.high - unit
        while skipped < DESCENT_SKIPS and state.can_go_on() and not stop.is_set():
            target = max(state.low, target - target % unit)
            if target in tried:  # the bound, or a capacity that ran out of nodes this round
                if target == state.low:
                    if steps == 1:
                        break
                    steps //= 2  # a step past the bound: a shorter one
                    target = state.high - steps * unit
                else:
                    target -= unit
                continue
            tried.add(target)
            below = target - unit
            if (
                steps == 1
                and below > state.low
                and below not in tried
                and state.budget.remaining > nodes
            ):
                # Stepping over capacities one unit at a time: the next one is probed at once,
                # on a second thread (as though the first ran out of nodes).
                tried.add(below)
                status, second = state.probe_pair(target, below, nodes)
                if status == "found" or second == "found":
                    steps, skipped = 2, 0
                    target = state.high - steps * unit
                elif "infeasible" in (status, second):
                    steps, skipped = 1, 0
                    target = state.high - unit
                else:
                    skipped += 2
                    target = below - unit
                continue
            status = state.probe(target, nodes)
            if status == "found":
                steps, skipped = 2 * steps, 0
                target = state.high - steps * unit
            elif status == "infeasible":
                steps, skipped = 1, 0
                target = state.high - unit
            elif steps > 1:
                steps //= 2
                target = state.high - steps * unit
            else:
                skipped += 1
                target -= unit
        nodes *= 2


def exact_applicable(instance: Instance) -> bool:
    """Whether the exact search may run: small enough to build the conflict graph."""
    if native.load() is not None:
        buffers, edges = NATIVE_EXACT_BUFFER_LIMIT, NATIVE_EXACT_EDGE_LIMIT
    else:
        buffers, edges = EXACT_BUFFER_LIMIT, EXACT_EDGE_LIMIT
    return instance.count <= buffers and instance.estimated_edges() <= edges


def exact(problem: Problem, options: PlanOptions) -> AlgorithmResult:
    """Branch and bound (see the module docstring) from the greedy portfolio's plan; on pools
    too large for it, on their large buffers (the size split, as `auto` does)."""
    deadline = time.perf_counter() + options.time_limit_s
    instance = prepare(problem)
    start = best_of_portfolio(instance, deadline=deadline)
    budget = default_node_budget(options)
    if start is not None and not exact_applicable(instance):
        # Imported here: the size split is built on this module's search.
        from usmp_dialect.planning.size_split import size_split

        start = size_split(instance, start, deadline, budget, options) or start
    return exact_from(instance, start, deadline, budget, options)


def exact_from(
    instance: Instance,
    start: GreedyPlan | None,
    deadline: float,
    budget: NodeBudget,
    options: PlanOptions,
) -> AlgorithmResult:
    """Improves `start` (pools, offsets) pool by pool; with no start, searches each pool at
    its capacity with the pool choice of the first candidates."""
    problem = instance.problem
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * instance.count + 1000))
    if start is None:
        if not instance.forced:
            # Several candidate pools and no greedy fit: report the greedy's diagnosis.
            raise diagnose_no_fit(instance)
        pools = np.array([p[0] for p in instance.candidate_pools], dtype=INT)
        offsets = None
    else:
        pools, offsets = start.pools, start.offsets.copy()
    result_offsets = np.zeros(instance.count, dtype=INT) if offsets is None else offsets
    proven = True
    searched_unproven = False
    for pool in range(len(problem.pools)):
        members = np.flatnonzero((pools == pool) & (instance.sizes > 0))
        if not len(members):
            continue
        if not exact_applicable(instance):
            if offsets is None:
                raise PlanningError("the problem is too large for the exact search")
            proven = False
            continue
        capacity = int(instance.capacities[pool])
        found, optimal = minimise_pool(
            instance,
            members,
            None if offsets is None else offsets[members],
            capacity,
            deadline,
            budget,
            options.progress,
        )
        if found is None:
            if optimal:
                raise PlanningError(
                    f"the buffers of pool '{problem.pools[pool].name}' cannot fit its "
                    f"capacity of {capacity} bytes (proven by exhaustive search)"
                )
            limit = "the time limit" if budget.clock_stopped else "its node budget ran out"
            raise PlanningError(
                f"no plan found within the capacity of pool '{problem.pools[pool].name}' "
                f"({capacity} bytes) before {limit}"
            )
        result_offsets[members] = found
        proven = proven and optimal
        searched_unproven = searched_unproven or not optimal
    plan = Plan(pools=tuple(int(p) for p in pools), offsets=tuple(int(o) for o in result_offsets))
    return AlgorithmResult(
        plan,
        exhausted=proven and instance.forced,
        limit_reached=searched_unproven,
        budget_stopped=searched_unproven and not budget.clock_stopped,
    )
