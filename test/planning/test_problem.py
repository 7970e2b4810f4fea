"""The problem model's utilities: conflicts, lower bound, validation (planning/problem.py)."""

from __future__ import annotations

import itertools
import random

import pytest

from usmp_dialect.planning.problem import (
    Buffer,
    Plan,
    Pool,
    Problem,
    ProblemError,
    align_up,
    check_problem,
    conflict_lists,
    lower_bound,
    peak_live_bytes,
    pool_sizes,
    validate,
)


def interval_problem(*rows: tuple[int, int, int]) -> Problem:
    return Problem(
        tuple(
            Buffer(f"b{i}", size, live=((start, end),)) for i, (start, end, size) in enumerate(rows)
        )
    )


def test_touching_half_open_intervals_do_not_add_up() -> None:
    problem = interval_problem((0, 3, 10), (3, 6, 20), (2, 4, 5))
    # At time 2: 10 + 5; at time 3: 20 + 5. [0,3) and [3,6) never overlap.
    assert peak_live_bytes(problem) == 25
    assert lower_bound(problem) == 25


def test_lower_bound_counts_alignment_padding_of_all_but_the_top_buffer() -> None:
    # All live together, alignment 16: the best stack puts the 33-byte buffer (15 bytes of
    # padding) on top: 16 + 64 + 16 + 33 = 129 bytes, above the 112 live bytes.
    sizes = (10, 33, 64, 5)
    problem = Problem(
        tuple(Buffer(f"b{i}", s, alignment=16, live=((0, 10),)) for i, s in enumerate(sizes))
    )
    assert peak_live_bytes(problem) == 112
    assert lower_bound(problem) == 129


def test_aligned_bound_ignores_buffers_of_smaller_alignment_and_other_times() -> None:
    problem = Problem(
        (
            Buffer("a", 1, alignment=8, live=((0, 2),)),
            Buffer("b", 1, alignment=8, live=((0, 2),)),
            Buffer("c", 1, alignment=1, live=((0, 2),)),  # may sit in a's padding
            Buffer("d", 9, alignment=8, live=((2, 4),)),  # never live with a or b
        )
    )
    # a at 0, c at 1, b at 8: 9 bytes; d alone: 9 bytes.
    assert lower_bound(problem) == 9


def test_aligned_lower_bound_never_exceeds_the_optimum() -> None:
    # A clique's optimum is the best stacking order: check every order on small cliques.
    rng = random.Random(7)
    for _ in range(200):
        count = rng.randint(1, 5)
        buffers = tuple(
            Buffer(f"b{i}", rng.randint(1, 40), alignment=rng.choice((1, 4, 16)), live=((0, 1),))
            for i in range(count)
        )
        best = None
        for order in itertools.permutations(range(count)):
            top = 0
            for index in order:
                top = align_up(top, buffers[index].alignment) + buffers[index].size_bytes
            best = top if best is None else min(best, top)
        assert lower_bound(Problem(buffers)) <= best


def test_lower_bound_of_members_only() -> None:
    problem = interval_problem((0, 3, 10), (1, 4, 20), (2, 5, 40))
    assert lower_bound(problem, [0, 1]) == 30
    assert lower_bound(problem, [2]) == 40
    assert lower_bound(problem, []) == 0


def test_multiple_intervals_per_buffer_count_once_when_overlapping() -> None:
    problem = Problem(
        (
            Buffer("a", 8, live=((0, 4), (2, 6))),  # overlapping intervals of one buffer
            Buffer("b", 3, live=((5, 9),)),
            Buffer("c", 100, live=((6, 7),)),
        )
    )
    assert peak_live_bytes(problem) == 103
    assert conflict_lists(problem) == [[1], [0, 2], [1]]


def test_explicit_conflicts_are_symmetric_and_deduplicated() -> None:
    problem = Problem(
        (
            Buffer("a", 1, conflicts=(1, 1, 2)),
            Buffer("b", 1, conflicts=(0,)),
            Buffer("c", 1, conflicts=(2,)),  # self-conflict ignored
        )
    )
    assert conflict_lists(problem) == [[1, 2], [0], [0]]


def test_lower_bound_counts_explicit_cliques() -> None:
    # A triangle of explicit conflicts must be stacked: 3 + 4 + 5.
    triangle = Problem(
        (
            Buffer("a", 3, conflicts=(1, 2)),
            Buffer("b", 4, conflicts=(2,)),
            Buffer("c", 5),
        )
    )
    assert lower_bound(triangle) == 12
    # A path a - b - c: a and c may share, so the bound is the heaviest edge.
    path = Problem((Buffer("a", 3, conflicts=(1,)), Buffer("b", 4, conflicts=(2,)), Buffer("c", 5)))
    assert lower_bound(path) == 9


def test_lower_bound_mixes_intervals_and_explicit_conflicts() -> None:
    problem = Problem(
        (
            Buffer("a", 10, live=((0, 2),), conflicts=(2,)),
            Buffer("b", 10, live=((0, 2),)),
            Buffer("c", 10, live=((5, 6),), conflicts=(1,)),
        )
    )
    # {a, b} overlap in time, c conflicts with both explicitly: a clique of 30.
    assert lower_bound(problem) == 30


def test_check_problem_names_the_bad_buffer() -> None:
    bad = [
        (Buffer("neg", -1), "negative size"),
        (Buffer("al", 4, alignment=3), "not a power of two"),
        (Buffer("iv", 4, live=((3, 3),)), "empty live interval"),
        (Buffer("cf", 4, conflicts=(7,)), "conflict index 7 out of range"),
        (Buffer("pl", 4, pools=(2,)), "candidate pool index 2 out of range"),
        (Buffer("np", 4, pools=()), "no candidate pool"),
    ]
    for buffer, message in bad:
        with pytest.raises(ProblemError, match=f"'{buffer.name}'.*{message}"):
            check_problem(Problem((buffer,)))


def test_validate_accepts_a_valid_plan() -> None:
    problem = interval_problem((0, 3, 10), (3, 6, 20), (2, 4, 5))
    plan = Plan(pools=(0, 0, 0), offsets=(0, 0, 20))
    assert validate(problem, plan) == []
    assert pool_sizes(problem, plan) == (25,)


def test_validate_names_every_violation() -> None:
    problem = Problem(
        (
            Buffer("a", 8, alignment=8, live=((0, 4),)),
            Buffer("b", 8, live=((2, 6),)),
            Buffer("c", 8, conflicts=(0,), pools=(1,)),
            Buffer("d", 8, live=((0, 9),), pools=(1,)),
        ),
        (Pool("sram"), Pool("dram", capacity_bytes=10)),
    )
    plan = Plan(pools=(0, 0, 0, 1), offsets=(4, 0, 12, 4))
    errors = validate(problem, plan)
    assert any("'a'" in e and "not aligned to 8" in e for e in errors)
    assert any("'a'" in e and "'b'" in e and "both live at time 2" in e for e in errors)
    assert any("'c' is in pool #0, not one of its candidates" in e for e in errors)
    assert any("'d' ends at 12" in e and "capacity of pool 'dram'" in e for e in errors)
    assert len(errors) == 4


def test_validate_reports_explicit_conflict_overlaps_and_negative_offsets() -> None:
    problem = Problem((Buffer("a", 4, conflicts=(1,)), Buffer("b", 4), Buffer("z", 0)))
    errors = validate(problem, Plan(pools=(0, 0, 0), offsets=(0, 2, -1)))
    assert any("'a'" in e and "'b'" in e and "in conflict" in e for e in errors)
    assert any("'z' has negative offset -1" in e for e in errors)
    assert validate(problem, Plan(pools=(0,), offsets=(0,))) == ["plan has 1 offsets for 3 buffers"]


def test_validate_finds_an_overlap_hidden_between_many_live_buffers() -> None:
    # 200 disjoint live buffers, then one placed across two of them.
    rows = [(0, 10, 4)] * 200 + [(5, 6, 6)]
    problem = interval_problem(*rows)
    offsets = [4 * i for i in range(200)] + [402]
    errors = validate(problem, Plan(pools=(0,) * 201, offsets=tuple(offsets)))
    assert len(errors) == 2
    assert all("'b200'" in e for e in errors)


def test_zero_size_buffers_never_overlap() -> None:
    problem = interval_problem((0, 5, 0), (0, 5, 8))
    assert validate(problem, Plan(pools=(0, 0), offsets=(3, 0))) == []


def test_utilities_scale_to_tens_of_thousands_of_buffers() -> None:
    rng = random.Random(7)
    rows = []
    for _ in range(20_000):
        start = rng.randrange(0, 50_000)
        rows.append((start, start + rng.randrange(1, 400), rng.randrange(1, 1000)))
    problem = interval_problem(*rows)
    offsets = [0]
    for _start, _end, size in rows[:-1]:
        offsets.append(offsets[-1] + size)  # everything stacked: trivially valid
    plan = Plan(pools=(0,) * len(rows), offsets=tuple(offsets))
    assert validate(problem, plan) == []
    assert 0 < lower_bound(problem) < sum(size for _s, _e, size in rows)
    # Move the last buffer onto the first one's bytes: exactly that overlap is reported
    # when they are live together.
    clash = Plan(pools=plan.pools, offsets=(*offsets[:-1], 0))
    overlapping = rows[0][0] < rows[-1][1] and rows[-1][0] < rows[0][1]
    assert len(validate(problem, clash)) == (1 if overlapping else 0)
