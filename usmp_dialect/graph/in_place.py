"""Which operators to run in place, on a graph of operators and buffers (plain data, no xDSL).

An operator in place writes its output over an input it reads for the last time, so the two
tensors share one buffer. For an elementwise operator that is always at least as good (the
input dies where the output is born), and the frontends do it wherever it is allowed. A
depthwise convolution in place (TinyEngine's scheme) needs a temporary of one channel plane
while it runs and costs a copy of every output element, so it is chosen only where it lowers
the peak: `choose_merges` keeps the fewest candidates that reach the lowest peak all of them
together reach, in both accountings of the model's inputs and outputs (outside the workspace,
the default, and inside it, as TFLite Micro counts its arena).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from usmp_dialect.graph.graph import Access, Graph, peak_live_bytes


@dataclass(frozen=True)
class Merge:
    """Operator `operator` writes buffer `target` over buffer `source` (same size), with
    `scratch_bytes` of temporary while it runs."""

    operator: int
    source: int
    target: int
    scratch_bytes: int = 0


def merged(graph: Graph, merges: Sequence[Merge]) -> Graph:
    """The graph with each merge's target buffer replaced by its source (followed through
    chains: a target that is itself another merge's source), and its scratch added."""
    root = list(range(len(graph.buffers)))

    def find(buffer: int) -> int:
        while root[buffer] != buffer:
            buffer = root[buffer]
        return buffer

    scratch = [0] * len(graph.operators)
    for merge in merges:
        root[find(merge.target)] = find(merge.source)
        scratch[merge.operator] += merge.scratch_bytes

    def moved(accesses: tuple[Access, ...]) -> tuple[Access, ...]:
        return tuple(replace(access, buffer=find(access.buffer)) for access in accesses)

    operators = tuple(
        replace(
            operator,
            reads=moved(operator.reads),
            writes=moved(operator.writes),
            scratch_bytes=operator.scratch_bytes + scratch[index],
        )
        for index, operator in enumerate(graph.operators)
    )
    # A buffer merged into another is never accessed again, so it counts for nothing.
    return Graph(graph.buffers, operators)


def with_io_inside(graph: Graph) -> Graph:
    """The graph with the model's inputs and outputs planned in the workspace (U4)."""
    buffers = tuple(
        replace(buffer, planned=True) if buffer.kind in ("input", "output") else buffer
        for buffer in graph.buffers
    )
    return Graph(buffers, graph.operators)


def _peaks(graphs: Sequence[Graph], merges: Sequence[Merge]) -> tuple[int, ...]:
    return tuple(peak_live_bytes(merged(graph, merges)) for graph in graphs)


def choose_merges(graph: Graph, candidates: Sequence[Merge]) -> tuple[Merge, ...]:
    """The candidates worth applying: none when all of them together lower the peak in neither
    accounting of the inputs and outputs (`with_io_inside`); otherwise, dropping candidates in
    program order while neither peak rises, the fewest that keep both peaks where all of them
    put them. Deterministic."""
    if not candidates:
        return ()
    graphs = (graph, with_io_inside(graph))
    before = _peaks(graphs, ())
    best = _peaks(graphs, candidates)
    if all(after >= peak for after, peak in zip(best, before, strict=True)):
        return ()
    kept = list(candidates)
    for candidate in candidates:
        trial = [merge for merge in kept if merge is not candidate]
        if _peaks(graphs, trial) == best:
            kept = trial
    return tuple(kept)


__all__ = ["Merge", "choose_merges", "merged", "with_io_inside"]
