"""The size split (size_split.py): the exact search on the large buffers, the greedy on the
small ones around them, used by `auto` on pools too large for the exact search."""

from __future__ import annotations

import numpy as np
import pytest

from usmp_dialect.planning import PlanOptions, solve, validate
from usmp_dialect.planning import exact as exact_module
from usmp_dialect.planning import size_split as split_module
from usmp_dialect.planning._core import prepare
from usmp_dialect.planning.problem import Buffer, Problem

# A hole (every greedy order leaves one: best 700; optimum = bound = 600), next to 30
# one-byte buffers that all overlap one another at the start.
HOLE_ROWS = ((3, 5, 200), (1, 4, 200), (1, 2, 300), (5, 6, 400), (3, 6, 200))
PROBLEM = Problem(
    tuple(
        Buffer(f"h{i}", size, 1, ((start, end),)) for i, (start, end, size) in enumerate(HOLE_ROWS)
    )
    + tuple(Buffer(f"s{i}", 1, 1, ((0, 1),)) for i in range(30))
)


@pytest.fixture
def too_large_for_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole problem is too large for the exact search, its five large buffers are not."""
    monkeypatch.setattr(exact_module, "EXACT_BUFFER_LIMIT", 10)
    monkeypatch.setattr(exact_module, "NATIVE_EXACT_BUFFER_LIMIT", 10)
    monkeypatch.setattr(split_module, "SPLIT_EDGE_LIMIT", 100)


def test_threshold_is_the_smallest_power_of_two_within_the_edge_limit(
    too_large_for_exact: None,
) -> None:
    instance = prepare(PROBLEM)
    members = np.arange(instance.count)
    # Size 1 and up: the 30 small buffers alone make 900 pairs; from 2 up only the hole's.
    assert split_module.split_threshold(instance, members) == 2
    large = instance.sizes >= 2
    assert (
        split_module.overlap_pairs(instance, large)
        <= 100
        < split_module.overlap_pairs(instance, np.ones(instance.count, dtype=bool))
    )


@pytest.mark.parametrize("algorithm", ["auto", "exact"])
def test_reaches_the_bound_through_the_split(too_large_for_exact: None, algorithm: str) -> None:
    portfolio = solve(PROBLEM, "portfolio")
    assert portfolio.pool_sizes == (700,)
    result = solve(PROBLEM, algorithm, PlanOptions(time_limit_s=5.0))
    assert validate(PROBLEM, result.plan) == []
    assert result.pool_sizes == (600,) == result.lower_bounds
    assert result.proven_optimal


def test_no_split_without_a_useful_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """When even the largest buffers alone exceed the edge limit, nothing is split."""
    monkeypatch.setattr(split_module, "SPLIT_EDGE_LIMIT", 0)
    instance = prepare(PROBLEM)
    assert split_module.split_threshold(instance, np.arange(instance.count)) is None
