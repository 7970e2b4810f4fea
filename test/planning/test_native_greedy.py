"""The native greedy placement (csrc/greedy.c) gives the same plans as the numpy one, bit for
bit: on random problems of every shape, and on real networks for every portfolio variant."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from usmp_dialect.planning import native, solve
from usmp_dialect.planning._core import Instance, prepare
from usmp_dialect.planning.greedy import (
    FITS,
    ORDERS,
    NoFit,
    order_of,
    place,
    place_numpy,
)
from usmp_dialect.planning.io import read_problem
from usmp_dialect.planning.problem import Problem
from usmp_dialect.testing.random_problems import mixed_problems, problems

pytestmark = pytest.mark.skipif(native.load() is None, reason="native core not built")

HERE = Path(__file__).resolve()
SHARED = HERE.parents[2] / "data"


Placer = Callable[[Instance, np.ndarray, bool], tuple[np.ndarray, np.ndarray]]


def outcome(
    placer: Placer, instance: Instance, order: np.ndarray, best_fit: bool
) -> tuple[str, object]:
    try:
        pools, offsets = placer(instance, order, best_fit)
    except NoFit as failure:
        return "no fit", failure.buffer
    return "placed", (pools.tolist(), offsets.tolist())


def assert_same_plans(problem: Problem) -> None:
    instance = prepare(problem)
    for order_name in ORDERS:
        order = order_of(instance, order_name)
        for fit in FITS:
            best_fit = fit == "best"
            native_result = outcome(place, instance, order, best_fit)
            numpy_result = outcome(place_numpy, instance, order, best_fit)
            assert native_result == numpy_result, f"{order_name}/{fit}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_same_plans_on_small_problems(problem: Problem) -> None:
    assert_same_plans(problem)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_problems())
def test_same_plans_on_mixed_problems(problem: Problem) -> None:
    assert_same_plans(problem)


def test_same_plans_around_fixed_buffers() -> None:
    """Local search re-places part of a plan around the rest (`fixed`)."""
    rng = np.random.default_rng(7)
    path = SHARED / "minimalloc" / "challenging" / "A.1048576.csv"
    instance = prepare(read_problem(path.read_text(), str(path)).problem)
    order = order_of(instance, "size")
    pools, offsets = place_numpy(instance, order, False)
    for _ in range(5):
        mask = rng.random(instance.count) < 0.5
        rest = order[~mask[order]]
        fixed = (pools, offsets, mask)
        for best_fit in (False, True):
            expected = place_numpy(instance, rest, best_fit, fixed)
            got = place(instance, rest, best_fit, fixed)
            assert got[0].tolist() == expected[0].tolist()
            assert got[1].tolist() == expected[1].tolist()


@pytest.mark.parametrize(
    "name",
    [
        "idealloc/benchmarks/somas_tensors/resnet50.csv",
        "idealloc/benchmarks/iopddl/G_1.csv",
        "idealloc/iree_2024/iree_mobilebert.csv",
        "minimalloc/challenging/K.1048576.csv",
    ],
)
def test_same_plans_on_real_instances(name: str) -> None:
    path = SHARED / name
    assert_same_plans(read_problem(path.read_text(), str(path)).problem)


@pytest.mark.parametrize("algorithm", ["portfolio", "greedy_first_fit", "greedy_best_fit"])
def test_planners_give_the_same_plans_without_the_native_core(
    algorithm: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """USMP_NATIVE=0 (or a machine without a C compiler) changes speed, never plans: the
    portfolio then runs its variants one by one with numpy."""
    path = SHARED / "idealloc" / "iree_2024" / "iree_mobilebert.csv"
    problem = read_problem(path.read_text(), str(path)).problem
    with_native = solve(problem, algorithm).plan
    monkeypatch.setattr(native, "load", lambda: None)
    assert solve(problem, algorithm).plan == with_native
