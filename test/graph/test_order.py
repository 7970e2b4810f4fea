"""The graph description and the memory-aware order on hand-made graphs (usmp_dialect/graph/)."""

from __future__ import annotations

import itertools
import random

import pytest

from usmp_dialect.graph.graph import (
    Access,
    Buffer,
    Graph,
    GraphError,
    Operator,
    check_order,
    dependencies,
    live_bytes_per_step,
    peak_live_bytes,
)
from usmp_dialect.graph.order import memory_aware_order


def op(name: str, reads: tuple[int, ...] = (), writes: tuple[int, ...] = (), **kw) -> Operator:
    """An operator reading and writing whole buffers (sizes filled in by `graph`)."""
    return Operator(
        name,
        tuple(Access(b, 0, 1 << 40) for b in reads),
        tuple(Access(b, 0, 1 << 40) for b in writes),
        **kw,
    )


def two_branches() -> Graph:
    """x -> p1 -> P(10) -> q1 -> Q(1) and x -> p2 -> R(50) -> q2 -> S(1), joined into y; the
    program runs both heads first."""
    buffers = (
        Buffer("x", 4, "input", planned=False),
        Buffer("P", 10),
        Buffer("R", 50),
        Buffer("Q", 1),
        Buffer("S", 1),
        Buffer("y", 4, "output", planned=False),
    )
    operators = (
        op("p1", (0,), (1,)),
        op("p2", (0,), (2,)),
        op("q1", (1,), (3,)),
        op("q2", (2,), (4,)),
        op("join", (3, 4), (5,)),
    )
    return Graph(buffers, operators)


def test_branches_exact_order_beats_the_program_order() -> None:
    graph = two_branches()
    # Program order: p1, p2 leave P and R live together, q1 adds Q: 10 + 50 + 1.
    assert live_bytes_per_step(graph, range(5)) == (10, 60, 61, 52, 2)
    result = memory_aware_order(graph)
    # The heavy branch first: R and S (51) is the most any order needs (q2's own buffers).
    assert result.peak_bytes == 51
    assert result.program_peak_bytes == 61
    assert result.lower_bound_bytes == 51
    assert result.proven_optimal and result.changed
    # Of the orders within 51 bytes, the one that keeps program order where it can.
    assert result.order == (1, 3, 0, 2, 4)
    check_order(graph, result.order)


def test_chain_keeps_the_program_order() -> None:
    buffers = (Buffer("a", 8), Buffer("b", 16), Buffer("c", 4), Buffer("d", 2))
    graph = Graph(
        buffers, (op("f", (), (0,)), op("g", (0,), (1,)), op("h", (1,), (2,)), op("k", (2,), (3,)))
    )
    result = memory_aware_order(graph)
    assert result.order == (0, 1, 2, 3)
    assert result.method == "program" and not result.changed
    assert result.peak_bytes == 24


def test_already_optimal_branches_keep_the_program_order() -> None:
    graph = two_branches()
    # Each branch run through before the next: 51 bytes, the optimum, so nothing moves even
    # though another order (the heavy branch first) has the same peak.
    operators = graph.operators
    reordered = Graph(
        graph.buffers, (operators[1], operators[3], operators[0], operators[2], operators[4])
    )
    result = memory_aware_order(reordered)
    assert result.order == (0, 1, 2, 3, 4)
    assert result.peak_bytes == result.program_peak_bytes == 51
    assert result.method == "program"


def test_exact_search_beats_a_greedy_beam() -> None:
    """A graph where taking the cheapest step each time (a beam of one) is a trap: the exact
    search finds an order a greedy choice misses."""
    graph = _greedy_trap()
    greedy = memory_aware_order(graph, node_budget=0, beam_width=1)
    exact = memory_aware_order(graph)
    assert exact.proven_optimal
    assert exact.peak_bytes < greedy.peak_bytes
    assert exact.peak_bytes == _brute_force_peak(graph) == 115  # x, s and big
    assert exact.program_peak_bytes == 129
    assert exact.order == (0, 2, 1, 3, 4)


def _greedy_trap() -> Graph:
    # A stem s read by three operators: one makes a 50-byte tensor nobody reads later, one a
    # 1-byte output (live to the end), one a tensor that a last operator turns into a 41-byte
    # output. The cheapest step first (the 1-byte output) leaves it live under the 50-byte
    # step; the best order takes the expensive step while little else is live.
    buffers = (
        Buffer("x", 33, "input"),
        Buffer("s", 32),
        Buffer("t", 14),
        Buffer("big", 50),
        Buffer("y1", 1, "output"),
        Buffer("y2", 41, "output"),
    )
    operators = (
        op("stem", (0,), (1,)),
        op("head_t", (0, 1), (2,)),
        op("head_big", (0, 1), (3,)),
        op("head_y1", (0, 1), (4,)),
        op("tail", (2,), (5,)),
    )
    return Graph(buffers, operators)


def test_disjoint_slices_of_one_buffer_are_independent() -> None:
    # Two producers write the halves of a Concat buffer; a third overwrites the first half.
    buffers = (Buffer("x", 8, "input"), Buffer("concat", 16), Buffer("y", 16, "output"))
    operators = (
        Operator("left", (Access(0, 0, 8),), (Access(1, 0, 8),)),
        Operator("right", (Access(0, 0, 8),), (Access(1, 8, 16),)),
        Operator("again", (), (Access(1, 4, 8),)),
        Operator("pool", (Access(1, 0, 16),), (Access(2, 0, 16),)),
    )
    graph = Graph(buffers, operators)
    assert dependencies(graph) == ((), (), (0,), (0, 1, 2))


def test_write_after_read_and_in_place_writes_are_ordered() -> None:
    buffers = (Buffer("x", 8, "input"), Buffer("t", 8), Buffer("u", 8), Buffer("y", 8, "output"))
    operators = (
        op("produce", (0,), (1,)),
        op("read_t", (1,), (2,)),
        op("relu_in_place", (1,), (1,)),  # must wait for read_t: it overwrites t
        op("add", (1, 2), (3,)),
    )
    graph = Graph(buffers, operators)
    assert dependencies(graph) == ((), (0,), (0, 1), (0, 1, 2))
    with pytest.raises(GraphError, match="relu_in_place"):
        check_order(graph, (0, 2, 1, 3))
    assert memory_aware_order(graph).order == (0, 1, 2, 3)


def test_after_and_barriers_are_kept() -> None:
    buffers = (Buffer("a", 100), Buffer("b", 1), Buffer("c", 100), Buffer("d", 1))
    operators = (
        op("make_a", (), (0,)),
        op("use_a", (0,), (1,)),
        op("log", barrier=True),
        op("make_c", (), (2,)),
        op("use_c", (2,), (3,), after=(1,)),
    )
    graph = Graph(buffers, operators)
    deps = dependencies(graph)
    assert deps[2] == (0, 1) and deps[3] == (2,) and deps[4] == (1, 2, 3)


def test_inputs_live_from_the_start_outputs_to_the_end_constants_not_counted() -> None:
    buffers = (
        Buffer("x", 100, "input"),
        Buffer("w", 1000, "constant"),
        Buffer("t", 10),
        Buffer("y", 7, "output"),
        Buffer("arg", 50, "input", planned=False),
    )
    operators = (op("f", (4,), (2,)), op("g", (0, 1, 2), (3,)), op("h", (2,), ()))
    graph = Graph(buffers, operators)
    # x is live from the start until g; y from g to the end; w and arg never count.
    assert live_bytes_per_step(graph, (0, 1, 2)) == (110, 117, 17)
    assert peak_live_bytes(graph) == 117


def test_scratch_counts_while_the_operator_runs() -> None:
    graph = Graph((Buffer("t", 10),), (op("f", (), (0,), scratch_bytes=5), op("g", (0,), ())))
    assert live_bytes_per_step(graph, (0, 1)) == (15, 10)


def _topological_orders(graph: Graph) -> list[tuple[int, ...]]:
    deps = dependencies(graph)
    orders = []
    for order in itertools.permutations(range(len(graph.operators))):
        position = {v: i for i, v in enumerate(order)}
        if all(position[p] < position[v] for v in order for p in deps[v]):
            orders.append(order)
    return orders


def _brute_force_peak(graph: Graph) -> int:
    return min(peak_live_bytes(graph, order) for order in _topological_orders(graph))


def _random_graph(rng: random.Random) -> Graph:
    count = rng.randint(1, 7)
    buffers = [Buffer("x", rng.randint(1, 64), "input")]
    operators: list[Operator] = []
    for index in range(count):
        readable = list(range(len(buffers)))
        reads = tuple(sorted(rng.sample(readable, rng.randint(1, min(2, len(readable))))))
        kind = "output" if index == count - 1 or rng.random() < 0.1 else "intermediate"
        buffers.append(Buffer(f"t{index}", rng.randint(1, 64), kind))
        writes = (len(buffers) - 1,)
        if rng.random() < 0.15:
            writes += (reads[0],) if buffers[reads[0]].kind != "input" else ()
        operators.append(
            op(f"o{index}", reads, writes, scratch_bytes=rng.choice((0, 0, 0, rng.randint(1, 16))))
        )
    return Graph(tuple(buffers), tuple(operators))


@pytest.mark.parametrize("seed", range(40))
def test_exact_order_is_optimal_on_random_graphs(seed: int) -> None:
    graph = _random_graph(random.Random(seed))
    result = memory_aware_order(graph)
    check_order(graph, result.order)
    assert result.proven_optimal
    assert result.peak_bytes == _brute_force_peak(graph)
    assert result.peak_bytes == peak_live_bytes(graph, result.order)
    if result.peak_bytes == result.program_peak_bytes:
        assert not result.changed
    # Deterministic: the same graph gives the same order.
    assert memory_aware_order(graph).order == result.order


@pytest.mark.parametrize("seed", range(10))
def test_heuristic_order_is_valid_and_no_worse_than_the_program(seed: int) -> None:
    graph = _random_graph(random.Random(100 + seed))
    result = memory_aware_order(graph, node_budget=0, beam_width=2)
    check_order(graph, result.order)
    assert result.peak_bytes <= result.program_peak_bytes


def test_wide_graph_beyond_the_budget_gets_a_valid_heuristic_order() -> None:
    """300 independent branches (a large tensor shrunk to a small one each), written breadth
    first: far too many downsets to search, so the beam search's order, branch by branch."""
    branches = 300
    buffers = [Buffer(f"big{i}", 100) for i in range(branches)]
    buffers += [Buffer(f"small{i}", 1) for i in range(branches)]
    buffers.append(Buffer("y", 1, "output"))
    operators = [op(f"widen{i}", (), (i,)) for i in range(branches)]
    operators += [op(f"shrink{i}", (i,), (branches + i,)) for i in range(branches)]
    operators.append(op("join", tuple(range(branches, 2 * branches)), (2 * branches,)))
    graph = Graph(tuple(buffers), tuple(operators))
    result = memory_aware_order(graph, node_budget=2_000)
    check_order(graph, result.order)
    assert result.program_peak_bytes == 100 * branches + 1
    assert result.method == "heuristic" and not result.proven_optimal
    # Branch by branch: one large tensor and the small ones made so far.
    assert result.peak_bytes == 100 + branches
