"""`graph.in_place`: which depthwise convolutions run in place, on hand-made graphs (bytes)."""

from __future__ import annotations

from usmp_dialect.graph.graph import Access, Buffer, Graph, Operator, peak_live_bytes
from usmp_dialect.graph.in_place import Merge, choose_merges, merged, with_io_inside


def _chain(sizes: list[int], kinds: tuple[str, str] = ("input", "output")) -> Graph:
    """Operator i reads buffer i and writes buffer i + 1; the first buffer is an input and the
    last an output (not planned: the caller's)."""
    buffers = [Buffer(f"b{i}", size) for i, size in enumerate(sizes)]
    buffers[0] = Buffer("b0", sizes[0], kinds[0], planned=False)
    buffers[-1] = Buffer(f"b{len(sizes) - 1}", sizes[-1], kinds[1], planned=False)
    operators = [
        Operator(
            f"op{i}",
            reads=(Access(i, 0, sizes[i]),),
            writes=(Access(i + 1, 0, sizes[i + 1]),),
        )
        for i in range(len(sizes) - 1)
    ]
    return Graph(tuple(buffers), tuple(operators))


def test_merge_shares_the_buffer_and_adds_scratch() -> None:
    graph = _chain([10, 100, 100, 40, 10])  # op1: 100 -> 100 is the peak (200)
    assert peak_live_bytes(graph) == 200
    after = merged(graph, [Merge(1, 1, 2, scratch_bytes=8)])
    assert peak_live_bytes(after) == 140  # op2: the shared 100 + 40
    assert after.operators[1].scratch_bytes == 8
    assert after.operators[2].reads == (Access(1, 0, 100),)


def test_chosen_only_where_the_peak_drops() -> None:
    graph = _chain([10, 100, 100, 40, 10])
    assert choose_merges(graph, [Merge(1, 1, 2, 8)]) == (Merge(1, 1, 2, 8),)
    # the peak is elsewhere (op0: 10 -> 300): merging op2 lowers nothing
    other = _chain([10, 300, 50, 50, 10])
    assert choose_merges(other, [Merge(2, 2, 3, 4)]) == ()


def test_the_fewest_that_reach_the_lowest_peak() -> None:
    # two depthwise steps, 100 -> 100 (op1) and 60 -> 60 (op3): only op1's sets the peak
    graph = _chain([10, 100, 100, 60, 60, 10])
    candidates = [Merge(1, 1, 2, 8), Merge(3, 3, 4, 4)]
    assert peak_live_bytes(merged(graph, candidates)) == 160  # op2: 100 + 60
    assert choose_merges(graph, candidates) == (Merge(1, 1, 2, 8),)


def test_chained_merges_follow_each_other() -> None:
    graph = _chain([10, 100, 100, 100, 10])
    merges = [Merge(1, 1, 2), Merge(2, 2, 3)]
    assert peak_live_bytes(merged(graph, merges)) == 100
    assert choose_merges(graph, merges) == tuple(merges)


def test_inputs_and_outputs_inside() -> None:
    graph = _chain([100, 100, 10])
    assert peak_live_bytes(graph) == 100
    assert peak_live_bytes(with_io_inside(graph)) == 200
    # merging an input away is the frontend's to refuse; here only the accounting matters
    assert choose_merges(graph, [Merge(0, 0, 1, 4)]) == (Merge(0, 0, 1, 4),)
