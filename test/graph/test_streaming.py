"""Fused row streaming decisions on hand-made graphs (plain data, no IR)."""

from __future__ import annotations

from usmp_dialect.graph.streaming import (
    Compute,
    Reduce,
    RowWindow,
    Shift,
    Step,
    StreamGraph,
    StreamOperator,
    StreamTensor,
    candidate_chains,
    candidate_runs,
    choose_groups,
    is_group,
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


# ---- residual diamonds ----------------------------------------------------------------------


def _residual() -> StreamGraph:
    """ResNet's block: stem 3x3 -> a; a -> 3x3 -> b -> 3x3 -> c; ADD(a, c) -> d; global pool."""
    tensors = (
        StreamTensor("input", 16, 48, pinned=True),
        StreamTensor("a", 16, 256),
        StreamTensor("b", 16, 256),
        StreamTensor("c", 16, 256),
        StreamTensor("d", 16, 256),
        StreamTensor("pooled", 1, 16),
        StreamTensor("output", 1, 10, pinned=True),
    )
    same3 = RowWindow(3, 1, 1, 1)
    operators = (
        StreamOperator("stem", "window", (0,), (1,), same3),
        StreamOperator("conv1", "window", (1,), (2,), same3),
        StreamOperator("conv2", "window", (2,), (3,), same3),
        StreamOperator("add", "window", (1, 3), (4,), RowWindow(1, 1, 1, 0)),
        StreamOperator("pool", "global_reduce", (4,), (5,), None, 64),
        StreamOperator("dense", "opaque", (5,), (6,)),
    )
    return StreamGraph(tensors, operators)


def _computed_rows(plan_steps: tuple[Step, ...], layers: int) -> list[int]:
    counts = [0] * layers
    for step in plan_steps:
        if isinstance(step, Compute):
            counts[step.layer] += step.out_rows
    return counts


def test_residual_block_computes_every_row_once_and_keeps_what_the_add_needs() -> None:
    graph = _residual()
    assert candidate_runs(graph) == [(0, 1, 2, 3, 4)]
    plan = schedule(graph, (0, 1, 2, 3, 4))
    assert _computed_rows(plan.steps, 4) == [16, 16, 16, 16]
    assert sum(isinstance(step, Reduce) for step in plan.steps) == 16
    # `a` is read by conv1 (3 rows) and by the ADD, which lags two rows behind conv1 (conv2
    # needs conv1's next row first): rows y..y+2 of `a` stay; b keeps a window, c and d a row.
    assert plan.buffer_tensors == (1, 2, 3, 4)
    assert plan.buffer_rows == (3, 3, 1, 1)
    assert plan.inputs == (0,) and plan.output == 5
    adds = [step for step in plan.steps if isinstance(step, Compute) and step.layer == 3]
    # The ADD reads `a` (first input) and `c` (its one row) at the rows it computes.
    assert all(step.rows == 1 and step.other_source_rows == (0,) for step in adds)
    (group,) = choose_groups(graph)
    assert group.operators == (0, 1, 2, 3, 4)
    # Unfused: a, c and d (4,096 B each) live at the ADD; fused: the 768-byte input, the line
    # buffers, the sums and the pooled row.
    assert group.saved_bytes == 3 * 4096 - (768 + (3 + 3 + 1 + 1) * 256 + 64 + 16)


def test_residual_rows_are_read_where_they_are_kept() -> None:
    """Replays the steps on row numbers: every window reads exactly the rows it needs."""
    graph = _residual()
    group = (0, 1, 2, 3, 4)
    plan = schedule(graph, group)
    buffers: dict[int, list[int | None]] = {
        tensor: [None] * rows
        for tensor, rows in zip(plan.buffer_tensors, plan.buffer_rows, strict=True)
    }
    produced = [0] * len(group)
    for step in plan.steps:
        if isinstance(step, Shift):
            rows = buffers[plan.buffer_tensors[step.layer - 1]]
            rows[: step.rows] = rows[step.first : step.first + step.rows]
        if not isinstance(step, Compute):
            continue
        op = graph.operators[group[step.layer]]
        assert op.window is not None
        y = produced[step.layer]
        first, end = op.window.rows(y, graph.tensors[op.inputs[0]].height)
        for tensor, source in zip(
            op.inputs, (step.source_row, *step.other_source_rows), strict=True
        ):
            if tensor in buffers:
                assert buffers[tensor][source : source + step.rows] == list(range(first, end))
            else:
                assert source == first
        if op.outputs[0] in buffers:
            buffers[op.outputs[0]][step.target_row] = y
        produced[step.layer] += 1


def test_stride_two_block_shares_its_input_with_the_shortcut() -> None:
    # a -> 3x3 stride 2 -> b -> 3x3 -> c; a -> 1x1 stride 2 (reads every other row) -> s;
    # ADD(s, c). The 1x1 shortcut alone may not read a tensor of the group: its producer would
    # compute rows nobody reads.
    tensors = (
        StreamTensor("input", 16, 48, pinned=True),
        StreamTensor("a", 16, 256),
        StreamTensor("b", 8, 512),
        StreamTensor("c", 8, 512),
        StreamTensor("s", 8, 512),
        StreamTensor("output", 8, 512, pinned=True),
    )
    operators = (
        StreamOperator("stem", "window", (0,), (1,), RowWindow(3, 1, 1, 1)),
        StreamOperator("down", "window", (1,), (2,), RowWindow(3, 2, 1, 0)),
        StreamOperator("conv", "window", (2,), (3,), RowWindow(3, 1, 1, 1)),
        StreamOperator("shortcut", "window", (1,), (4,), RowWindow(1, 2, 1, 0)),
        StreamOperator("add", "window", (4, 3), (5,), RowWindow(1, 1, 1, 0)),
    )
    graph = StreamGraph(tensors, operators)
    assert is_group(graph, (0, 1, 2, 3, 4))
    shortcut_only = StreamGraph(tensors, operators[:1] + operators[3:4])
    assert not is_group(shortcut_only, (0, 1))
    plan = schedule(graph, (0, 1, 2, 3, 4))
    assert _computed_rows(plan.steps, 5) == [16, 8, 8, 8, 8]
    assert dict(zip(plan.buffer_tensors, plan.buffer_rows, strict=True)) == {1: 3, 2: 3, 3: 1, 4: 1}
    expanded = []
    for loop in loops(plan.steps):
        for repetition in range(loop.count):
            for step, delta in zip(loop.body, loop.deltas, strict=True):
                if isinstance(step, Compute):
                    step = Compute(
                        step.layer,
                        step.top_pad,
                        step.rows,
                        step.source_row + repetition * delta[0],
                        step.target_row + repetition * delta[1],
                        step.out_rows,
                        tuple(
                            row + repetition * grows
                            for row, grows in zip(step.other_source_rows, delta[2:], strict=True)
                        ),
                    )
                expanded.append(step)
    assert tuple(expanded) == plan.steps


def test_a_group_holds_every_reader_of_its_tensors() -> None:
    graph = _residual()
    assert is_group(graph, (1, 2))  # a chain: `a` whole, `c` its output
    assert not is_group(graph, (0, 1, 2))  # `a` is read by the ADD outside
    assert is_group(graph, (1, 2, 3))  # `a` whole, read by conv1 and the ADD
    assert not is_group(graph, (3, 4, 5))  # the opaque dense layer
