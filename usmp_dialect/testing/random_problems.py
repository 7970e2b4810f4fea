"""Hypothesis strategies for random planning problems (used by the planning tests; needs the
`test` extra)."""

from __future__ import annotations

from hypothesis import strategies as st

from usmp_dialect.planning.problem import Buffer, Pool, Problem


@st.composite
def problems(draw: st.DrawFn) -> Problem:
    count = draw(st.integers(1, 9))
    pool_count = draw(st.integers(1, 3))
    interval_form = draw(st.booleans())
    pools = tuple(
        Pool(f"p{i}", draw(st.one_of(st.none(), st.integers(0, 160)))) for i in range(pool_count)
    )
    buffers = []
    for index in range(count):
        size = draw(st.integers(0, 40))
        alignment = draw(st.sampled_from((1, 1, 2, 4, 8, 16)))
        if interval_form:
            live = []
            for _ in range(draw(st.integers(1, 2))):
                start = draw(st.integers(0, 10))
                live.append((start, start + draw(st.integers(1, 5))))
            conflicts: tuple[int, ...] = ()
        else:
            live = []
            conflicts = tuple(
                draw(st.lists(st.integers(0, count - 1), max_size=3)) if count > 1 else ()
            )
        candidates = draw(st.permutations(range(pool_count)))
        candidates = candidates[: draw(st.integers(1, pool_count))]
        buffers.append(
            Buffer(f"b{index}", size, alignment, tuple(live), conflicts, tuple(candidates))
        )
    return Problem(tuple(buffers), pools)


@st.composite
def mixed_problems(draw: st.DrawFn, max_buffers: int = 40) -> Problem:
    """Larger problems mixing both forms: live intervals (some buffers with several) and
    explicit conflicts in one problem, zero-size buffers, alignments and capacities."""
    count = draw(st.integers(1, max_buffers))
    pool_count = draw(st.integers(1, 3))
    pools = tuple(
        Pool(f"p{i}", draw(st.one_of(st.none(), st.integers(0, 2_000)))) for i in range(pool_count)
    )
    buffers = []
    for index in range(count):
        live = []
        for _ in range(draw(st.integers(0, 3))):
            start = draw(st.integers(0, 60))
            live.append((start, start + draw(st.integers(1, 30))))
        conflicts = tuple(draw(st.lists(st.integers(0, count - 1), max_size=2)))
        candidates = draw(st.permutations(range(pool_count)))
        buffers.append(
            Buffer(
                f"b{index}",
                draw(st.one_of(st.just(0), st.integers(1, 300))),
                draw(st.sampled_from((1, 1, 4, 16, 64))),
                tuple(live),
                conflicts,
                tuple(candidates[: draw(st.integers(1, pool_count))]),
            )
        )
    return Problem(tuple(buffers), pools)
