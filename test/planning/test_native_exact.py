"""The native exact search (csrc/exact.c) is a mirror of exact.py's `Search.run`, re-ranking
of the parts of a split included: on random components it returns the same status, the same
offsets and the same node count. With exact.decide's restarts it solves MiniMalloc's
challenging instances A, H and I, and deep components without overflowing the stack."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.planning import native
from usmp_dialect.planning._core import prepare
from usmp_dialect.planning.exact import (
    PREORDERS,
    NodeBudget,
    NodeLimit,
    Search,
    Subproblem,
    build_subproblem,
    decide,
    native_search,
    partitions,
)
from usmp_dialect.planning.io import read_problem
from usmp_dialect.planning.problem import Buffer, Plan, Pool, Problem, lower_bound, validate

LIBRARY = native.load()
pytestmark = pytest.mark.skipif(LIBRARY is None, reason="native core not built")

HERE = Path(__file__).resolve()
SHARED = HERE.parents[2] / "data"
CHALLENGING = SHARED / "minimalloc" / "challenging"
MINIMALLOC_A = CHALLENGING / "A.1048576.csv"

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
) -> tuple[int, np.ndarray | None, int]:
    """usmp_exact_search on one component: (status, offsets indexed like sub.sizes when found,
    nodes)."""
    assert LIBRARY is not None
    members = native.int64_array(component)
    return native_search(LIBRARY, sub, members, capacity, preorder, node_limit, time_limit_s)


def native_outcome(
    sub: Subproblem, component: np.ndarray, capacity: int, preorder: str, node_limit: int
) -> Outcome:
    status, offsets, nodes = native_run(sub, component, capacity, preorder, node_limit)
    assert (offsets is not None) == (status == 1)
    if offsets is None:
        return status, None, nodes
    outside = np.setdiff1d(np.arange(len(sub.sizes)), component)
    assert not offsets[outside].any(), "wrote outside the component"
    return status, offsets[component].tolist(), nodes


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


def compare_components(
    problem: Problem,
    capacities: Callable[[int], set[int]],
    node_limits: Callable[[], tuple[int, ...]],
    outcomes: dict[int, int],
) -> None:
    """C and Python agree on every component of `problem`, at the capacities derived from the
    lower bound, with every preorder and node limit; counts the outcomes by status."""
    sub, members = subproblem_of(problem)
    bound = lower_bound(problem, members)
    for component in partitions(sub):
        if len(component) < 2:
            continue
        for capacity in sorted(capacities(bound)):
            for preorder in PREORDERS:
                for node_limit in node_limits():
                    expected = python_outcome(sub, component, capacity, preorder, node_limit)
                    got = native_outcome(sub, component, capacity, preorder, node_limit)
                    assert got == expected, (problem, capacity, preorder, node_limit)
                    outcomes[got[0]] += 1


@pytest.mark.parametrize("seed", range(4))
def test_same_search_as_python_on_random_components(seed: int) -> None:
    rng = random.Random(seed)
    outcomes = {-1: 0, 0: 0, 1: 0}
    for _ in range(40):
        compare_components(
            random_problem(rng),
            lambda bound: {bound - 1, bound, bound + 1, bound + rng.randint(2, 30), 1 << 41},
            lambda: (rng.randint(1, 12), 2_000),
            outcomes,
        )
    assert all(outcomes.values()), outcomes  # found, infeasible and node-limited cases all ran


def timeline_problem(rng: random.Random) -> Problem:
    """A longer timeline of single-interval buffers: the search splits often, into parts whose
    re-ranking reorders their buffers."""
    buffers = []
    for index in range(rng.randint(12, 28)):
        start = rng.randint(0, 30)
        size = rng.choice((rng.randint(1, 40), 16 * rng.randint(1, 4)))
        live = ((start, start + rng.randint(1, 8)),)
        buffers.append(Buffer(f"b{index}", size, rng.choice((1, 1, 1, 4)), live, ()))
    return Problem(tuple(buffers), (Pool("pool"),))


@pytest.mark.parametrize("seed", range(2))
def test_same_search_as_python_on_random_timelines(seed: int) -> None:
    rng = random.Random(100 + seed)
    outcomes = {-1: 0, 0: 0, 1: 0}
    for _ in range(15):
        compare_components(
            timeline_problem(rng),
            lambda bound: {bound - 1, bound, bound + 2},
            lambda: (rng.randint(5, 40), 3_000),
            outcomes,
        )
    assert all(outcomes.values()), outcomes


def read_minimalloc_a() -> Problem:
    path = MINIMALLOC_A
    return read_problem(path.read_text(), str(path)).problem


def test_same_nodes_as_python_on_minimalloc_a() -> None:
    problem = read_minimalloc_a()
    sub, _members = subproblem_of(problem)
    (component,) = [c for c in partitions(sub) if len(c) > 1]
    for preorder in PREORDERS:
        expected = python_outcome(sub, component, 1_048_576, preorder, 1_500)
        assert native_outcome(sub, component, 1_048_576, preorder, 1_500) == expected


@pytest.mark.parametrize("name", ["A", "H", "I"])
def test_decide_solves_minimalloc_challenging(name: str) -> None:
    # Re-ranking the parts of a split makes H and I (20-50 million nodes with static ranks)
    # take ~20,000 nodes; A takes ~100,000.
    path = CHALLENGING / f"{name}.1048576.csv"
    problem = read_problem(path.read_text(), str(path)).problem
    capacity = 1_048_576
    sub, members = subproblem_of(problem)
    budget = NodeBudget(2_000_000)
    status, offsets = decide(sub, partitions(sub), capacity, time.perf_counter() + 60, budget)
    assert status == "found" and offsets is not None
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
    assert status == 1 and offsets is not None and nodes >= count
    plan = Plan(pools=(0,) * count, offsets=tuple(int(o) for o in offsets))
    assert validate(problem, plan) == []
    assert int((offsets + sub.sizes).max()) <= 24


def test_time_limit() -> None:
    sub, _members = subproblem_of(read_minimalloc_a())
    (component,) = [c for c in partitions(sub) if len(c) > 1]
    status, _offsets, nodes = native_run(sub, component, 1_048_576, "WAT", 1 << 40, 0.0)
    assert status == -2 and 0 < nodes < 10_000
