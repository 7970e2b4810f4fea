"""Our planners on hand-made problems with known optima (greedy, portfolio, exact, local
search, auto)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from usmp_dialect.planning import PlanningError, PlanOptions, native, solve
from usmp_dialect.planning import _core as core
from usmp_dialect.planning import exact as exact_module
from usmp_dialect.planning import greedy as greedy_module
from usmp_dialect.planning import local_search as local_search_module
from usmp_dialect.planning._core import find_offset
from usmp_dialect.planning.problem import Buffer, Pool, Problem, lower_bound, validate

OURS = ("greedy_first_fit", "greedy_best_fit", "portfolio", "exact", "local_search", "auto")
FAST = PlanOptions(time_limit_s=5.0)


def intervals(*rows: tuple[int, int, int], alignment: int = 1) -> tuple[Buffer, ...]:
    return tuple(
        Buffer(f"b{i}", size, alignment, live=((start, end),))
        for i, (start, end, size) in enumerate(rows)
    )


# MiniMalloc's README instance: optimum 12 = lower bound.
README = Problem(intervals((0, 3, 4), (3, 9, 4), (0, 9, 4), (9, 21, 4), (0, 21, 4)))

# Every greedy order x fit leaves a hole here (best: 7); the optimum is the bound, 6.
HOLE = Problem(intervals((3, 5, 2), (1, 4, 2), (1, 2, 3), (5, 6, 4), (3, 6, 2)))


@pytest.mark.parametrize("algorithm", OURS)
def test_readme_instance(algorithm: str) -> None:
    result = solve(README, algorithm, FAST)
    assert validate(README, result.plan) == []
    assert result.pool_sizes == (12,)
    assert result.lower_bounds == (12,)
    assert result.proven_optimal


@pytest.mark.parametrize("algorithm", OURS)
def test_alignment_is_honoured(algorithm: str) -> None:
    problem = Problem(intervals((0, 4, 10), (0, 4, 10), (2, 6, 10), alignment=64))
    result = solve(problem, algorithm, FAST)
    assert all(offset % 64 == 0 for offset in result.plan.offsets)
    assert validate(problem, result.plan) == []
    # Three buffers pairwise live together: 0, 64, 128 is the best aligned stack.
    assert result.pool_sizes == (138,)


@pytest.mark.parametrize("algorithm", OURS)
def test_spills_to_the_next_candidate_only_when_the_preferred_pool_is_full(
    algorithm: str,
) -> None:
    pools = (Pool("sram", capacity_bytes=100), Pool("dram"))
    buffers = (
        Buffer("x", 60, live=((0, 4),), pools=(0, 1)),
        Buffer("y", 60, live=((0, 4),), pools=(0, 1)),
        Buffer("z", 40, live=((0, 4),), pools=(0, 1)),
        Buffer("w", 30, live=((0, 4),), pools=(1, 0)),  # prefers dram
    )
    problem = Problem(buffers, pools)
    result = solve(problem, algorithm, FAST)
    assert validate(problem, result.plan) == []
    pool_of = dict(zip((b.name for b in buffers), result.plan.pools, strict=True))
    assert pool_of["w"] == 1
    # 60 + 40 fill sram exactly; one 60 spills.
    assert sorted((pool_of["x"], pool_of["y"])) == [0, 1]
    assert pool_of["z"] == 0
    assert result.pool_sizes[0] == 100


@pytest.mark.parametrize("algorithm", OURS)
def test_no_fit_is_a_planning_error_naming_the_buffer(algorithm: str) -> None:
    problem = Problem(intervals((0, 4, 60), (0, 4, 60)), (Pool("sram", capacity_bytes=100),))
    with pytest.raises(PlanningError, match=r"'(sram|b0|b1)'"):
        solve(problem, algorithm, PlanOptions(time_limit_s=1.0))


@pytest.mark.parametrize("algorithm", OURS)
def test_explicit_conflict_graph(algorithm: str) -> None:
    # Path a - b - c: a and c may share bytes; the optimum is the heaviest edge.
    problem = Problem(
        (Buffer("a", 30, conflicts=(1,)), Buffer("b", 20, conflicts=(2,)), Buffer("c", 30))
    )
    result = solve(problem, algorithm, FAST)
    assert validate(problem, result.plan) == []
    assert result.pool_sizes == (50,)
    assert result.plan.offsets[0] == result.plan.offsets[2]


@pytest.mark.parametrize("algorithm", OURS)
def test_multiple_intervals_and_zero_size_buffers(algorithm: str) -> None:
    problem = Problem(
        (
            Buffer("twice", 16, live=((0, 2), (6, 8))),
            Buffer("between", 16, live=((2, 6),)),
            Buffer("empty", 0, live=((0, 8),)),
            Buffer("late", 8, live=((7, 9),)),
        )
    )
    result = solve(problem, algorithm, FAST)
    assert validate(problem, result.plan) == []
    assert result.pool_sizes == (24,)


def test_exact_proves_an_optimum_above_the_clique_bound() -> None:
    # An odd cycle of explicit conflicts needs three colours (offsets), its cliques two.
    cycle = Problem(tuple(Buffer(f"c{i}", 8, conflicts=((i + 1) % 5,)) for i in range(5)))
    assert lower_bound(cycle) == 16
    result = solve(cycle, "exact", FAST)
    assert result.pool_sizes == (24,)
    assert result.proven_optimal


@pytest.mark.parametrize("algorithm", ["exact", "auto"])
def test_exact_search_beats_the_greedy_hole(algorithm: str) -> None:
    assert lower_bound(HOLE) == 6
    assert solve(HOLE, "portfolio").pool_sizes == (7,)
    result = solve(HOLE, algorithm, FAST)
    assert result.pool_sizes == (6,)
    assert result.proven_optimal


def test_exact_finds_a_packing_at_a_tight_capacity_where_greedy_fails() -> None:
    problem = Problem(HOLE.buffers, (Pool("tight", capacity_bytes=6),))
    with pytest.raises(PlanningError, match="does not fit"):
        solve(problem, "portfolio")
    assert solve(problem, "auto", FAST).pool_sizes == (6,)
    assert solve(problem, "exact", FAST).pool_sizes == (6,)


def test_first_fit_takes_the_lowest_gap_and_best_fit_the_tightest() -> None:
    # Occupied [0,8), [12,16), [19,24): free gaps [8,12) (4 bytes) and [16,19) (3 bytes).
    lows = np.array([0, 12, 19])
    highs = np.array([8, 16, 24])
    unbounded = 1 << 40
    assert find_offset(lows, highs, 3, 1, unbounded, best_fit=False) == 8
    assert find_offset(lows, highs, 3, 1, unbounded, best_fit=True) == 16
    assert find_offset(lows, highs, 3, 16, unbounded, best_fit=False) == 16  # aligned
    assert find_offset(lows, highs, 2, 32, unbounded, best_fit=False) == 32  # aligned top
    assert find_offset(lows, highs, 5, 1, unbounded, best_fit=True) == 24  # no gap: top
    assert find_offset(lows, highs, 5, 1, 28, best_fit=False) == -1  # over capacity
    assert find_offset(lows[:0], highs[:0], 5, 1, 4, best_fit=False) == -1


def test_results_are_deterministic_for_a_seed() -> None:
    problem = Problem(
        intervals(*[(i % 7, i % 7 + 1 + i % 5, 8 + (i * 37) % 50) for i in range(16)])
    )
    # A limit that is not reached: local search stops on its own iteration budget.
    options = PlanOptions(time_limit_s=120.0, seed=3)
    for algorithm in ("portfolio", "local_search"):
        assert solve(problem, algorithm, options).plan == solve(problem, algorithm, options).plan


def test_auto_respects_its_time_limit_on_a_hard_instance() -> None:
    # 120 random buffers with no slack structure: the exact search cannot finish at once.
    rows = [((i * 7) % 50, (i * 7) % 50 + 1 + (i * 13) % 30, 1 + (i * 29) % 97) for i in range(120)]
    problem = Problem(intervals(*rows))
    result = solve(problem, "auto", PlanOptions(time_limit_s=1.0))
    assert result.time_s < 6.0
    assert validate(problem, result.plan) == []
    greedy = solve(problem, "portfolio")
    assert result.pool_sizes[0] <= greedy.pool_sizes[0]


def test_exact_and_auto_end_on_their_node_budget_not_the_clock() -> None:
    """Searches that cannot finish stop on their node budget, so the plan does not depend on
    the time limit (nor on how loaded the machine is), as long as the clock is not reached."""
    problem = random_intervals(40, seed=1)  # the greedy is 4 % above the bound
    for algorithm in ("exact", "auto"):
        results = [
            solve(problem, algorithm, PlanOptions(time_limit_s=limit, node_budget=20_000))
            for limit in (30.0, 60.0)
        ]
        assert not results[0].proven_optimal  # the budget, not a proof, ended the search
        assert results[0].plan == results[1].plan


def random_intervals(count: int, seed: int) -> Problem:
    rng = np.random.default_rng(seed)
    starts = rng.integers(0, 200, count)
    lengths = rng.integers(1, 40, count)
    sizes = rng.integers(0, 500, count)
    return Problem(
        tuple(
            Buffer(f"r{i}", int(sizes[i]), int(2 ** rng.integers(0, 4)), ((int(s), int(s + n)),))
            for i, (s, n) in enumerate(zip(starts, lengths, strict=True))
        )
    )


@pytest.mark.parametrize("algorithm", ["greedy_first_fit", "greedy_best_fit"])
def test_interval_index_path_matches_the_conflict_graph_path(
    algorithm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Huge problems never build the conflict graph; both numpy paths must place identically.
    monkeypatch.setattr(native, "load", lambda: None)
    problem = random_intervals(300, seed=5)
    with_graph = solve(problem, algorithm)
    monkeypatch.setattr(core, "CSR_EDGE_LIMIT", 0)
    without_graph = solve(problem, algorithm)
    assert without_graph.plan == with_graph.plan


def test_auto_falls_back_to_local_search_on_problems_too_big_to_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(exact_module, "EXACT_BUFFER_LIMIT", 0)
    monkeypatch.setattr(exact_module, "NATIVE_EXACT_BUFFER_LIMIT", 0)
    result = solve(HOLE, "auto", PlanOptions(time_limit_s=2.0, seed=0))
    assert validate(HOLE, result.plan) == []
    # Local search reorders the greedy: here pulling a top buffer first reaches the bound.
    assert result.pool_sizes[0] <= solve(HOLE, "portfolio").pool_sizes[0]


def test_exact_splits_independent_time_partitions() -> None:
    # Two copies of HOLE side by side in time, joined by one long thin buffer: solving them
    # as one search would multiply the work; the optimum is 6 + 1.
    shifted = [
        Buffer(f"{b.name}'", b.size_bytes, live=tuple((s + 10, e + 10) for s, e in b.live))
        for b in HOLE.buffers
    ]
    problem = Problem((*HOLE.buffers, *shifted, Buffer("thin", 1, live=((0, 20),))))
    result = solve(problem, "exact", FAST)
    assert result.pool_sizes == (7,)
    assert result.proven_optimal


def mixed_problem(count: int, seed: int) -> Problem:
    """Several live intervals per buffer, explicit conflicts and two pools with a capacity:
    every case the placement loops handle."""
    rng = np.random.default_rng(seed)
    buffers = []
    for i in range(count):
        live = []
        for _ in range(int(rng.integers(1, 3))):
            start = int(rng.integers(0, 150))
            live.append((start, start + int(rng.integers(1, 30))))
        conflicts = (int(rng.integers(0, count)),) if i % 9 == 0 else ()
        pools = (0, 1) if i % 4 else (1,)
        size = int(rng.integers(0, 300))
        buffers.append(
            Buffer(f"m{i}", size, int(2 ** rng.integers(0, 4)), tuple(live), conflicts, pools)
        )
    return Problem(tuple(buffers), (Pool("small", capacity_bytes=6000), Pool("big")))


@pytest.mark.parametrize("slices_above", [0, 10**9])
@pytest.mark.parametrize("best_fit", [False, True])
def test_placed_interval_index_matches_the_conflict_graph(
    best_fit: bool, slices_above: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small merge threshold makes the index merge its recent intervals many times; both
    # ways of reading its runs (slices, gathers) are used.
    problem = mixed_problem(400, seed=11)
    instance = core.prepare(problem)
    order = greedy_module.order_of(instance, "size")
    with_graph = greedy_module.place_numpy(instance, order, best_fit)
    monkeypatch.setattr(greedy_module, "RECENT_LIMIT", 7)
    monkeypatch.setattr(greedy_module, "SLICE_QUERY_ABOVE", slices_above)
    monkeypatch.setattr(core, "CSR_EDGE_LIMIT", 0)
    indexed = core.prepare(problem)
    without_graph = greedy_module.place_numpy(indexed, order, best_fit)
    assert not indexed.use_adjacency()
    assert np.array_equal(with_graph[0], without_graph[0])
    assert np.array_equal(with_graph[1], without_graph[1])
    plan = greedy_module.to_plan(*without_graph)
    assert validate(problem, plan) == []


@pytest.mark.parametrize("edge_limit", [core.CSR_EDGE_LIMIT, 0])
def test_placing_around_fixed_buffers_keeps_them_and_avoids_them(
    edge_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core, "CSR_EDGE_LIMIT", edge_limit)
    problem = mixed_problem(200, seed=4)
    instance = core.prepare(problem)
    pools, offsets = greedy_module.place_numpy(
        instance, greedy_module.order_of(instance, "size"), False
    )
    kept = np.ones(instance.count, dtype=bool)
    moved = np.arange(0, instance.count, 3)
    kept[moved] = False
    new_pools, new_offsets = greedy_module.place_numpy(
        instance, moved[::-1], True, fixed=(pools, offsets, kept)
    )
    assert np.array_equal(new_pools[kept], pools[kept])
    assert np.array_equal(new_offsets[kept], offsets[kept])
    assert validate(problem, greedy_module.to_plan(new_pools, new_offsets)) == []


def test_repair_moves_keep_plans_valid_and_never_worse(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_search_module, "REPAIR_ONLY_ABOVE", 0)
    problem = mixed_problem(300, seed=8)
    instance = core.prepare(problem)
    start = greedy_module.best_of_portfolio(instance, [("size", "first")])
    assert start is not None
    runs = [
        local_search_module.improve(instance, start, time.perf_counter() + 60, 5, 150)
        for _ in range(2)
    ]
    assert np.array_equal(runs[0][1], runs[1][1])  # reproducible for a seed
    pools, offsets = runs[0]
    assert validate(problem, greedy_module.to_plan(pools, offsets)) == []
    assert greedy_module.plan_cost(instance, pools, offsets) <= start.cost


def test_portfolio_starts_no_variant_past_a_hard_deadline() -> None:
    instance = core.prepare(random_intervals(200, seed=2))
    # Deadlines already passed: only the first variant (greedy_first_fit's) runs.
    best = greedy_module.best_of_portfolio(instance, deadline=0.0, hard_deadline=0.0)
    assert best is not None and best.variant == "size/first"
    # Without the hard deadline, the second mandatory variant runs too.
    everything = greedy_module.best_of_portfolio(instance, deadline=0.0)
    first_two = greedy_module.best_of_portfolio(instance, list(greedy_module.VARIANTS[:2]))
    assert everything is not None and first_two is not None
    assert everything.cost == first_two.cost
