"""The native exact search (csrc/exact.c) is a mirror of exact.py's `Search.run`: on random
components it returns the same status, the same offsets and the same node count; it also
solves MiniMalloc's challenging instance A, and deep components without overflowing the stack.
Its optional MiniMalloc-style re-ranking of decomposed parts stays complete and valid."""

from __future__ import annotations

import ctypes
import random
import time
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.planning import native
from usmp_dialect.planning._core import INT, Instance, prepare
from usmp_dialect.planning.exact import (
    PREORDERS,
    NodeLimit,
    Search,
    Subproblem,
    build_subproblem,
    native_search,
    partitions,
)
from usmp_dialect.planning.io import read_problem
from usmp_dialect.planning.problem import Buffer, Plan, Pool, Problem, lower_bound, validate

LIBRARY = native.load()
pytestmark = pytest.mark.skipif(LIBRARY is None, reason="native core not built")

HERE = Path(__file__).resolve()
SHARED = next(
    (p / "shared" / "data" for p in (HERE.parents[3], Path("/work")) if (p / "shared").is_dir()),
    None,
)
CHALLENGING = None if SHARED is None else SHARED / "minimalloc" / "challenging"
MINIMALLOC_A = None if CHALLENGING is None else CHALLENGING / "A.1048576.csv"
PART_PREORDER = 1
"""exact.c's USMP_EXACT_PART_PREORDER flag."""

Outcome = tuple[int, list[int] | None, int]
"""Status (1 found, 0 infeasible, -1 node limit, -2 time limit), the component's offsets
when found, and the nodes visited."""


def native_run(
    sub: Subproblem,
    component: np.ndarray,
    capacity: int,
    preorder: str,
    node_limit: int,
    time_limit_s: float = 1e9,
) -> tuple[int, np.ndarray, int]:
    """usmp_exact_search on one component: (status, offsets indexed like sub.sizes, nodes)."""
    assert LIBRARY is not None
    members = native.int64_array(component)
    return native_search(LIBRARY, sub, members, capacity, preorder, node_limit, time_limit_s)


def native_outcome(
    sub: Subproblem, component: np.ndarray, capacity: int, preorder: str, node_limit: int
) -> Outcome:
    status, offsets, nodes = native_run(sub, component, capacity, preorder, node_limit)
    outside = np.setdiff1d(np.arange(len(sub.sizes)), component)
    assert not offsets[outside].any(), "wrote outside the component"
    return status, offsets[component].tolist() if status == 1 else None, nodes


def python_outcome(
    sub: Subproblem, component: np.ndarray, capacity: int, preorder: str, node_limit: int
) -> Outcome:
    search = Search(sub, component, time.perf_counter() + 1e9)
    try:
        result = search.run(capacity, preorder, node_limit)
    except NodeLimit:
        return -1, None, search.nodes
    if result is None:
        return 0, None, search.nodes
    return 1, result[component].tolist(), search.nodes


def random_problem(rng: random.Random) -> Problem:
    """A small pool: live intervals (some buffers with two), explicit conflicts, or both;
    alignments above 1."""
    count = rng.randint(2, 12)
    form = rng.choice(("intervals", "several intervals", "explicit", "mixed"))
    buffers = []
    for index in range(count):
        live = []
        if form != "explicit":
            for _ in range(1 if form == "intervals" else rng.randint(1, 2)):
                start = rng.randint(0, 12)
                live.append((start, start + rng.randint(1, 6)))
        conflicts: tuple[int, ...] = ()
        if form in ("explicit", "mixed"):
            others = rng.sample(range(count), rng.randint(0, min(3, count)))
            conflicts = tuple(o for o in others if o != index)
        buffers.append(
            Buffer(
                f"b{index}",
                rng.randint(1, 40),
                rng.choice((1, 1, 1, 2, 4, 8)),
                tuple(live),
                conflicts,
            )
        )
    return Problem(tuple(buffers), (Pool("pool"),))


def subproblem_of(problem: Problem) -> tuple[Subproblem, list[int]]:
    instance = prepare(problem)
    members = np.flatnonzero(instance.sizes > 0)
    return build_subproblem(instance, members), members.tolist()


def preorder_columns(instance: Instance, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The W (live width) and A (size x live length) columns of build_subproblem."""
    count = len(members)
    local = np.full(instance.count, -1, dtype=INT)
    local[members] = np.arange(count, dtype=INT)
    mask = local[instance.item_owner] >= 0
    owners = local[instance.item_owner[mask]]
    starts, ends = instance.item_start[mask], instance.item_end[mask]
    length = np.zeros(count, dtype=INT)
    np.add.at(length, owners, ends - starts)
    first_start = np.full(count, np.iinfo(INT).max, dtype=INT)
    last_end = np.zeros(count, dtype=INT)
    np.minimum.at(first_start, owners, starts)
    np.maximum.at(last_end, owners, ends)
    width = np.where(last_end > 0, last_end - first_start, 0).astype(INT)
    area = (instance.sizes[members] * np.maximum(length, 1)).astype(INT)
    return width, area


def native_run_flags(
    problem: Problem, capacity: int, preorder: str, node_limit: int, flags: int
) -> list[tuple[np.ndarray, int, np.ndarray]]:
    """usmp_exact_search_ex on every component of `problem`'s one pool: per component, the
    component, the status and the offsets (indexed like the subproblem)."""
    assert LIBRARY is not None
    function = LIBRARY.usmp_exact_search_ex
    function.restype = ctypes.c_int32
    pointer = ctypes.c_void_p
    function.argtypes = [
        *LIBRARY.usmp_exact_search.argtypes,
        ctypes.c_int32,
        pointer,
        pointer,
        ctypes.c_char_p,
    ]
    instance = prepare(problem)
    members = np.flatnonzero(instance.sizes > 0)
    sub = build_subproblem(instance, members)
    width, area = preorder_columns(instance, members)
    columns = (sub.sizes, sub.alignments, sub.indptr, sub.indices, sub.section_indptr)
    sizes, alignments, indptr, indices, section_indptr = map(native.int64_array, columns)
    section_indices = native.int64_array(sub.section_indices)
    rank = native.int64_array(sub.preorder_keys[preorder])
    results = []
    for component in partitions(sub):
        offsets = np.zeros(len(sizes), dtype=INT)
        nodes = np.zeros(1, dtype=INT)
        status = function(
            len(sizes),
            *(native.pointer(a) for a in (sizes, alignments, indptr, indices)),
            native.pointer(section_indptr),
            native.pointer(section_indices),
            sub.section_count,
            native.pointer(component),
            len(component),
            native.pointer(rank),
            capacity,
            node_limit,
            ctypes.c_double(1e9),
            native.pointer(offsets),
            native.pointer(nodes),
            flags,
            native.pointer(width),
            native.pointer(area),
            preorder.encode(),
        )
        results.append((component, int(status), offsets))
    return results


@pytest.mark.parametrize("seed", range(4))
def test_same_search_as_python_on_random_components(seed: int) -> None:
    rng = random.Random(seed)
    outcomes = {-1: 0, 0: 0, 1: 0}
    for _ in range(40):
        problem = random_problem(rng)
        sub, members = subproblem_of(problem)
        bound = lower_bound(problem, members)
        for component in partitions(sub):
            if len(component) < 2:
                continue
            capacities = {bound - 1, bound, bound + 1, bound + rng.randint(2, 30), 1 << 41}
            for capacity in sorted(capacities):
                for preorder in PREORDERS:
                    for node_limit in (rng.randint(1, 12), 2_000):
                        expected = python_outcome(sub, component, capacity, preorder, node_limit)
                        got = native_outcome(sub, component, capacity, preorder, node_limit)
                        assert got == expected, (problem, capacity, preorder, node_limit)
                        outcomes[got[0]] += 1
    assert all(outcomes.values()), outcomes  # found, infeasible and node-limited cases all ran


def read_minimalloc_a() -> Problem:
    assert MINIMALLOC_A is not None
    path = MINIMALLOC_A
    return read_problem(path.read_text(), str(path)).problem


@pytest.mark.skipif(
    MINIMALLOC_A is None or not MINIMALLOC_A.is_file(), reason="shared data not available"
)
def test_same_nodes_as_python_on_minimalloc_a() -> None:
    problem = read_minimalloc_a()
    sub, _members = subproblem_of(problem)
    (component,) = [c for c in partitions(sub) if len(c) > 1]
    for preorder in PREORDERS:
        expected = python_outcome(sub, component, 1_048_576, preorder, 1_500)
        assert native_outcome(sub, component, 1_048_576, preorder, 1_500) == expected


@pytest.mark.skipif(
    MINIMALLOC_A is None or not MINIMALLOC_A.is_file(), reason="shared data not available"
)
def test_solves_minimalloc_a_with_restarts() -> None:
    problem = read_minimalloc_a()
    capacity = 1_048_576
    sub, members = subproblem_of(problem)
    offsets = np.zeros(len(sub.sizes), dtype=INT)
    deadline = time.perf_counter() + 60
    for component in partitions(sub):
        if len(component) == 1:
            continue
        # exact.decide's restarts: the preorders round robin, the node limit doubling.
        limit, status = 2 * len(component), -1
        while status == -1:
            limit *= 2
            for preorder in PREORDERS:
                left = deadline - time.perf_counter()
                status, found, _nodes = native_run(sub, component, capacity, preorder, limit, left)
                if status != -1:
                    break
        assert status == 1
        offsets[component] = found[component]
    plan_offsets = [0] * len(problem.buffers)
    for local, member in enumerate(members):
        plan_offsets[member] = int(offsets[local])
    plan = Plan(pools=(0,) * len(problem.buffers), offsets=tuple(plan_offsets))
    assert validate(problem, plan) == []
    assert int((offsets + sub.sizes).max()) <= capacity


def test_deep_component_does_not_overflow_the_stack() -> None:
    # A chain of 5,000 buffers, each in explicit conflict with the next: no decomposition, so
    # the search goes 5,000 deep.
    count = 5_000
    buffers = tuple(
        Buffer(f"b{i}", 8 + i % 5, 1, (), (i + 1,) if i + 1 < count else ()) for i in range(count)
    )
    problem = Problem(buffers, (Pool("pool"),))
    sub, _members = subproblem_of(problem)
    (component,) = partitions(sub)
    status, offsets, nodes = native_run(sub, component, 24, "WAT", 10 * count)
    assert status == 1 and nodes >= count
    plan = Plan(pools=(0,) * count, offsets=tuple(int(o) for o in offsets))
    assert validate(problem, plan) == []
    assert int((offsets + sub.sizes).max()) <= 24


@pytest.mark.skipif(
    MINIMALLOC_A is None or not MINIMALLOC_A.is_file(), reason="shared data not available"
)
def test_time_limit() -> None:
    sub, _members = subproblem_of(read_minimalloc_a())
    (component,) = [c for c in partitions(sub) if len(c) > 1]
    status, _offsets, nodes = native_run(sub, component, 1_048_576, "WAT", 1 << 40, 0.0)
    assert status == -2 and 0 < nodes < 10_000


needs_flags = pytest.mark.skipif(
    LIBRARY is None or not hasattr(LIBRARY, "usmp_exact_search_ex"),
    reason="no usmp_exact_search_ex in the native core",
)


@needs_flags
def test_part_preorder_is_complete_and_valid() -> None:
    # A different search order, but the same decision: found exactly when the mirror finds.
    rng = random.Random(5)
    for _ in range(60):
        problem = random_problem(rng)
        sub, members = subproblem_of(problem)
        bound = lower_bound(problem, members)
        for capacity in (bound - 1, bound, bound + 3):
            for preorder in PREORDERS:
                mirror = native_run_flags(problem, capacity, preorder, 1 << 40, 0)
                flagged = native_run_flags(problem, capacity, preorder, 1 << 40, PART_PREORDER)
                for (component, status, _), (_, flagged_status, offsets) in zip(
                    mirror, flagged, strict=True
                ):
                    assert flagged_status == status
                    if status != 1 or len(component) < 2:
                        continue
                    chosen = offsets[component]
                    assert (chosen % sub.alignments[component] == 0).all()
                    assert (chosen + sub.sizes[component] <= capacity).all()
                    for member in component.tolist():
                        for other in sub.indices[sub.indptr[member] : sub.indptr[member + 1]]:
                            low, high = sorted((member, int(other)), key=lambda i: offsets[i])
                            assert offsets[low] + sub.sizes[low] <= offsets[high]


@needs_flags
@pytest.mark.skipif(CHALLENGING is None or not CHALLENGING.is_dir(), reason="no shared data")
@pytest.mark.parametrize("name", ["H", "I"])
def test_part_preorder_solves_minimalloc_h_and_i(name: str) -> None:
    # The static ranks need more than 60 s (20-50 million nodes) on these two.
    assert CHALLENGING is not None
    path = CHALLENGING / f"{name}.1048576.csv"
    problem = read_problem(path.read_text(), str(path)).problem
    found = [
        status
        for preorder in PREORDERS
        for _component, status, _offsets in native_run_flags(
            problem, 1_048_576, preorder, 200_000, PART_PREORDER
        )
    ]
    assert 1 in found
