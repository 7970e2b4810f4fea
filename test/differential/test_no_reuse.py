"""`no_reuse`, the reference lowering: every buffer has its own bytes."""

from __future__ import annotations

import pytest

from usmp_dialect.planning import Buffer, PlanningError, Pool, Problem, solve


def test_buffers_never_share_bytes_even_when_never_live_together() -> None:
    problem = Problem(
        buffers=(
            Buffer("a", 10, live=((0, 1),)),
            Buffer("b", 6, alignment=8, live=((2, 3),)),
            Buffer("c", 4, alignment=4, live=((4, 5),)),
        )
    )
    result = solve(problem, "no_reuse")
    assert result.plan.offsets == (0, 16, 24)
    assert result.pool_sizes == (28,)


def test_first_candidate_pool_with_room_in_order() -> None:
    problem = Problem(
        buffers=(
            Buffer("a", 8, pools=(0, 1)),
            Buffer("b", 8, pools=(0, 1)),
            Buffer("c", 8, pools=(1, 0)),
        ),
        pools=(Pool("small", capacity_bytes=12), Pool("big")),
    )
    result = solve(problem, "no_reuse")
    assert result.plan.pools == (0, 1, 1)
    assert result.plan.offsets == (0, 0, 8)


def test_no_room_anywhere_is_a_planning_error_naming_the_buffer() -> None:
    problem = Problem(buffers=(Buffer("big", 32),), pools=(Pool("tiny", capacity_bytes=16),))
    with pytest.raises(PlanningError, match="'big'"):
        solve(problem, "no_reuse")
