"""Fused row streaming decisions on hand-made graphs (plain data, no IR)."""

from __future__ import annotations

from usmp_dialect.graph.streaming import (
    Compute,
    Reduce,
    RowWindow,
    Shift,
    StreamGraph,
    StreamOperator,
    StreamTensor,
    candidate_chains,
    choose_groups,
    loops,
    schedule,
)


def _kws_like() -> StreamGraph:
    tensors = (
        StreamTensor("input", 49, 10, pinned=True),
        StreamTensor("a", 25, 320),
        StreamTensor("b", 25, 320),
        StreamTensor("c", 25, 320),
        StreamTensor("pooled", 1, 64),
        StreamTensor("output", 1, 12, pinned=True),
    )
    operators = (
        StreamOperator("conv", "window", (0,), (1,), RowWindow(10, 2, 1, 4)),
        StreamOperator("depthwise", "window", (1,), (2,), RowWindow(3, 1, 1, 1)),
        StreamOperator("pointwise", "window", (2,), (3,), RowWindow(1, 1, 1, 0)),
        StreamOperator("pool", "global_reduce", (3,), (4,), None, 256),
        StreamOperator("dense", "opaque", (4,), (5,)),
    )
    return StreamGraph(tensors, operators)


def test_chain_stops_at_opaque_operators_and_shared_tensors() -> None:
    graph = _kws_like()
    assert candidate_chains(graph) == [(0, 1, 2, 3)]
    shared = StreamGraph(
        tuple(
            StreamTensor(t.name, t.height, t.row_bytes, pinned=t.name == "b") for t in graph.tensors
        ),
        graph.operators,
    )
    assert candidate_chains(shared) == [(0, 1), (2, 3)]


def test_every_row_is_computed_once_and_buffers_hold_one_window() -> None:
    graph = _kws_like()
    plan = schedule(graph, (0, 1, 2, 3))
    computed: dict[int, list[int]] = {}
    for step in plan.steps:
        if isinstance(step, Compute):
            computed.setdefault(step.layer, []).append(step.target_row)
    assert [len(computed[layer]) for layer in range(3)] == [25, 25, 25]
    assert computed[2] == [0] * 25  # into the reducer's one row
    assert sum(isinstance(step, Reduce) for step in plan.steps) == 25
    # The depthwise 3x3 reads three rows of its input; the pointwise and the pool one.
    assert plan.buffer_rows == (3, 1, 1)
    shifts = [step for step in plan.steps if isinstance(step, Shift)]
    assert shifts and all(step.layer == 1 and step.rows == 2 for step in shifts)
    first = next(step for step in plan.steps if isinstance(step, Compute))
    assert (first.layer, first.top_pad, first.rows) == (0, 4, 6)  # the window's top border


def test_loops_expand_to_the_steps() -> None:
    plan = schedule(_kws_like(), (0, 1, 2, 3))
    expanded = []
    for loop in loops(plan.steps):
        for repetition in range(loop.count):
            for step, (source, target) in zip(loop.body, loop.deltas, strict=True):
                if isinstance(step, Compute):
                    step = Compute(
                        step.layer,
                        step.top_pad,
                        step.rows,
                        step.source_row + repetition * source,
                        step.target_row + repetition * target,
                    )
                expanded.append(step)
    assert tuple(expanded) == plan.steps
    assert len(loops(plan.steps)) < len(plan.steps) // 3


def test_groups_lower_the_peak_only_where_it_is() -> None:
    (group,) = choose_groups(_kws_like())
    assert group.operators == (0, 1, 2, 3)
    assert [buffer.rows for buffer in group.line_buffers] == [3, 1, 1]
    # 16,000 (two whole 8,000-byte tensors) down to the input, 3 + 1 + 1 rows of 320 bytes,
    # the sums and the pooled output
    assert group.saved_bytes == 16000 - (490 + 5 * 320 + 256 + 64)


def test_tiny_tensors_stay_unfused() -> None:
    tensors = (
        StreamTensor("input", 4, 100, pinned=True),
        StreamTensor("a", 4, 2),
        StreamTensor("output", 4, 2, pinned=True),
    )
    operators = (
        StreamOperator("conv", "window", (0,), (1,), RowWindow(3, 1, 1, 1)),
        StreamOperator("depthwise", "window", (1,), (2,), RowWindow(3, 1, 1, 1)),
    )
    assert choose_groups(StreamGraph(tensors, operators)) == []


def test_blocked_rows_are_computed_two_at_a_time_once_each() -> None:
    # str_ww's shape: depthwise 3x1 -> pointwise (1-wide output, two rows per step) ->
    # depthwise 5x1 VALID.
    tensors = (
        StreamTensor("input", 30, 40, pinned=True),
        StreamTensor("a", 28, 40),
        StreamTensor("b", 28, 128),
        StreamTensor("output", 24, 128, pinned=True),
    )
    operators = (
        StreamOperator("depthwise", "window", (0,), (1,), RowWindow(3, 1, 1, 0)),
        StreamOperator("pointwise", "window", (1,), (2,), RowWindow(1, 1, 1, 0), row_block=2),
        StreamOperator("depthwise5", "window", (2,), (3,), RowWindow(5, 1, 1, 0)),
    )
    plan = schedule(StreamGraph(tensors, operators), (0, 1, 2))
    pointwise = [step for step in plan.steps if isinstance(step, Compute) and step.layer == 1]
    assert all(step.out_rows == 2 and step.rows == 2 for step in pointwise)
    assert sum(step.out_rows for step in pointwise) == 28
    # The pointwise layer's input holds its two rows; the 5-row window one row more.
    assert plan.buffer_rows == (2, 6)
