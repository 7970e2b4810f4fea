"""Choosing fused groups under a budget, and the instructions a group adds (plain data)."""

from __future__ import annotations

from collections.abc import Callable
from itertools import combinations, pairwise

from usmp_dialect.graph.selection import (
    Candidate,
    choose_stream_groups,
    peak_bytes,
    peak_facts,
    select,
)
from usmp_dialect.graph.stream_cost import (
    REDUCE_STEP_INSTRUCTIONS,
    ROW_CALL_INSTRUCTIONS,
    SHIFT_INSTRUCTIONS_PER_BYTE,
    group_cost,
)
from usmp_dialect.graph.streaming import (
    RowWindow,
    StreamGraph,
    StreamOperator,
    StreamTensor,
    candidate_groups,
    group_scratch_bytes,
    schedule,
    writable_input,
)


def _chain() -> StreamGraph:
    """input (10 rows of 100 B) -> 3x3 conv -> a (10 x 200) -> 3x3 conv -> b (10 x 200) ->
    1x1 conv -> c (10 x 50) -> dense -> output."""
    tensors = (
        StreamTensor("input", 10, 100, pinned=True),
        StreamTensor("a", 10, 200),
        StreamTensor("b", 10, 200),
        StreamTensor("c", 10, 50),
        StreamTensor("output", 1, 10, pinned=True),
    )
    same = RowWindow(3, 1, 1, 1)
    operators = (
        StreamOperator("conv0", "window", (0,), (1,), same),
        StreamOperator("conv1", "window", (1,), (2,), same),
        StreamOperator("conv2", "window", (2,), (3,), RowWindow(1, 1, 1, 0)),
        StreamOperator("dense", "opaque", (3,), (4,)),
    )
    return StreamGraph(tensors, operators)


def _candidates(graph: StreamGraph, cost: dict[tuple[int, ...], int]) -> list[Candidate]:
    from usmp_dialect.graph.streaming import group_scratch_bytes

    return [
        Candidate(group, group_scratch_bytes(graph, group)[0], cost.get(group, 100))
        for group in candidate_groups(graph)
    ]


def _cheapest_by_brute_force(
    graph: StreamGraph,
    candidates: list[Candidate],
    budget: int,
    reach: Callable[[Candidate], int] = lambda c: c.operators[-1] + 1,
) -> int | None:
    """The fewest added instructions of any set of candidates whose spans (first operator to
    `reach`) do not overlap and whose peak fits `budget`; None when no set fits."""
    feasible = []
    for size in range(len(candidates) + 1):
        for subset in combinations(range(len(candidates)), size):
            spans = sorted((candidates[i].operators[0], reach(candidates[i])) for i in subset)
            if any(a[1] > b[0] for a, b in pairwise(spans)):
                continue
            chosen = [candidates[i] for i in subset]
            if peak_bytes(graph, chosen) <= budget:
                feasible.append(sum(c.cost_instructions for c in chosen))
    return min(feasible, default=None)


def test_the_plain_program_when_it_fits() -> None:
    graph = _chain()
    plain = peak_bytes(graph, [])
    assert plain == 4000  # a and b while conv1 runs
    selection, fits = select(graph, _candidates(graph, {}), plain)
    assert fits and selection.chosen == () and selection.cost_instructions == 0


def test_the_cheapest_set_that_fits_by_brute_force() -> None:
    graph = _chain()
    costs = {(0, 1): 300, (1, 2): 50, (0, 1, 2): 500}
    candidates = _candidates(graph, costs)
    for budget in range(1000, 4001, 50):
        selection, fits = select(graph, candidates, budget)
        cheapest = _cheapest_by_brute_force(graph, candidates, budget)
        if cheapest is not None:
            assert fits and selection.cost_instructions == cheapest, budget
            assert selection.peak_bytes <= budget
        else:
            assert not fits
            lowest = min(peak_bytes(graph, [c]) for c in candidates)  # one group at a time here
            assert selection.peak_bytes == min(lowest, peak_bytes(graph, []))


def test_among_sets_that_fit_the_cheaper_wins() -> None:
    """Budget 3000: fusing (1, 2) leaves conv0's 3000 B step, fusing (0, 1, 2) peaks at 2300 B;
    both fit, and the one adding fewer instructions is chosen, whichever it is."""
    graph = _chain()
    groups = candidate_groups(graph)
    assert peak_bytes(graph, [Candidate((1, 2), 200, 0)]) == 3000
    for costs, expected in (
        ({(1, 2): 50, (0, 1, 2): 500}, (1, 2)),
        ({(1, 2): 500, (0, 1, 2): 50}, (0, 1, 2)),
    ):
        selection, fits = select(graph, _candidates(graph, costs), 3000)
        assert fits and [groups[i] for i in selection.chosen] == [expected]


def test_a_group_away_from_the_peak_is_never_applied() -> None:
    tensors = (
        StreamTensor("input", 10, 100, pinned=True),
        StreamTensor("a", 10, 10),
        StreamTensor("b", 10, 10),
        StreamTensor("big", 1, 5000),
        StreamTensor("output", 1, 10, pinned=True),
    )
    same = RowWindow(3, 1, 1, 1)
    operators = (
        StreamOperator("conv0", "window", (0,), (1,), same),
        StreamOperator("conv1", "window", (1,), (2,), same),
        StreamOperator("expand", "opaque", (2,), (3,)),
        StreamOperator("dense", "opaque", (3,), (4,)),
    )
    graph = StreamGraph(tensors, operators)
    assert choose_stream_groups(graph).groups == []


def test_outside_tensors_count_for_nothing() -> None:
    graph = _chain()
    assert peak_bytes(graph, [], frozenset({0, 4})) == 4000
    facts = peak_facts(graph, [], frozenset({0, 4}))
    assert facts.operators == (1,) and facts.tensors == (1, 2)
    # With the input outside, conv0's step holds only `a`.
    assert peak_bytes(graph, [Candidate((0, 1), 1200, 0)], frozenset({0, 4})) == 3200


def test_an_impossible_budget_reports_the_lowest_peak() -> None:
    graph = _chain()
    choice = choose_stream_groups(graph, budget_bytes=100)
    assert not choice.fits
    assert choice.peak.peak_bytes == choose_stream_groups(graph).peak.peak_bytes
    assert choice.peak.peak_bytes < peak_bytes(graph, [])


def test_group_cost_counts_shifts_and_calls() -> None:
    graph = _chain()
    cost = group_cost(graph, (0, 1))
    # conv1 computes 10 rows, conv0 10 rows: 20 calls. conv1's line buffer (3 rows of `a`)
    # drops one row before each of its rows 2..9 and keeps two: 8 shifts of 2 rows x 200 B.
    assert cost.row_calls == 20
    assert cost.shifted_bytes == 8 * 2 * 200
    assert cost.reduce_steps == 0
    assert cost.row_functions == 6  # each layer: its top border, interior and bottom border
    expected = (
        SHIFT_INSTRUCTIONS_PER_BYTE * cost.shifted_bytes
        + ROW_CALL_INSTRUCTIONS * cost.row_calls
        + REDUCE_STEP_INSTRUCTIONS * cost.reduce_steps
    )
    assert cost.instructions == round(expected)
    longer = group_cost(graph, (0, 1, 2))
    assert longer.instructions > cost.instructions


def test_an_empty_graph_selects_nothing() -> None:
    selection, fits = select(StreamGraph((), ()), [], 0)
    assert fits and selection.chosen == () and selection.peak_bytes == 0


# ---- a group written over its input --------------------------------------------------------


def _over_chain(overwritable: bool = True, element: str = "int8") -> StreamGraph:
    """input (16 rows of 48 B) -> 3x3 stride-2 conv -> a (8 x 64) -> 1x1 conv -> b (8 x 64)
    -> 3x3 stride-2 conv -> c (4 x 64) -> dense -> output."""
    tensors = (
        StreamTensor("input", 16, 48, pinned=True, element="int8", overwritable=overwritable),
        StreamTensor("a", 8, 64, element="int8", overwritable=True),
        StreamTensor("b", 8, 64, element="int8", overwritable=True),
        StreamTensor("c", 4, 64, element=element, overwritable=True),
        StreamTensor("output", 1, 10, pinned=True, element="int8"),
    )
    operators = (
        StreamOperator("conv0", "window", (0,), (1,), RowWindow(3, 2, 1, 0)),
        StreamOperator("conv1", "window", (1,), (2,), RowWindow(1, 1, 1, 0)),
        StreamOperator("conv2", "window", (2,), (3,), RowWindow(3, 2, 1, 0)),
        StreamOperator("dense", "opaque", (3,), (4,)),
    )
    return StreamGraph(tensors, operators)


def test_an_output_row_goes_only_over_input_rows_no_step_reads_again() -> None:
    graph = _over_chain()
    # c's row y (64 B) ends at byte 64 (y + 1); the input is read from row 4y + 4 on (48 B
    # rows) by then: safe.
    assert writable_input(graph, (0, 1, 2), schedule(graph, (0, 1, 2))) == 0
    # A stride-1 3x3 layer writing 48 B rows over 48 B input rows would overwrite row y
    # while the next window still reads it.
    tensors = (
        StreamTensor("input", 8, 48, pinned=True, element="int8", overwritable=True),
        StreamTensor("a", 8, 40, element="int8"),
        StreamTensor("b", 8, 48, element="int8"),
    )
    same = RowWindow(3, 1, 1, 1)
    tight = StreamGraph(
        tensors,
        (
            StreamOperator("conv0", "window", (0,), (1,), same),
            StreamOperator("conv1", "window", (1,), (2,), RowWindow(1, 1, 1, 0)),
        ),
    )
    assert writable_input(tight, (0, 1), schedule(tight, (0, 1))) is None


def test_only_an_overwritable_input_of_the_same_type_read_last_takes_the_output() -> None:
    for graph in (_over_chain(overwritable=False), _over_chain(element="float32")):
        assert writable_input(graph, (0, 1, 2), schedule(graph, (0, 1, 2))) is None
    # Another reader of the input after the group.
    graph = _over_chain()
    operators = (*graph.operators[:3], StreamOperator("dense", "opaque", (3, 0), (4,)))
    graph = StreamGraph(graph.tensors, operators)
    assert writable_input(graph, (0, 1, 2), schedule(graph, (0, 1, 2))) is None


def test_written_over_its_input_the_group_lowers_the_peak() -> None:
    graph = _over_chain()
    plain = peak_bytes(graph, [])
    assert plain == 768 + 512  # the input and a while conv0 runs
    choice = choose_stream_groups(graph)
    (group,) = choice.groups
    # The input (768 B) and the line buffers (a: 1 row, b: 3 rows of 64 B) while the group
    # runs; c lives in the input's bytes, which then stay live through dense (768 + 10 B).
    assert group.over == 0
    assert choice.peak.peak_bytes == 768 + 64 + 192
    # The caller's input (outside the workspace) is never written over.
    outside = choose_stream_groups(graph, outside=frozenset({0, 4}))
    assert all(g.over is None for g in outside.groups)


def test_groups_written_over_their_input_by_brute_force() -> None:
    """The cheapest selection under every budget, against every set of candidates (each
    with and without `over`) whose operators and reaches do not overlap."""
    graph = _over_chain()
    candidates = []
    for group in candidate_groups(graph):
        scratch = group_scratch_bytes(graph, group)[0]
        cost = 100 * len(group)
        candidates.append(Candidate(group, scratch, cost))
        over = writable_input(graph, group, schedule(graph, group))
        if over is not None:
            candidates.append(Candidate(group, scratch, cost + 1, over))
    assert any(c.over is not None for c in candidates)

    def reach(candidate: Candidate) -> int:
        stop = candidate.operators[-1] + 1
        if candidate.over is not None:
            output = graph.operators[candidate.operators[-1]].outputs[0]
            readers = [i for i, op in enumerate(graph.operators) if output in op.inputs]
            stop = max([stop, *(r + 1 for r in readers)])
        return stop

    for budget in range(900, 1400, 16):
        selection, fits = select(graph, candidates, budget)
        cheapest = _cheapest_by_brute_force(graph, candidates, budget, reach)
        if cheapest is not None:
            assert fits and selection.cost_instructions == cheapest, budget
            assert selection.peak_bytes <= budget
        else:
            assert not fits
