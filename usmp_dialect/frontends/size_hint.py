"""The workspace size hint at import (SPEC §12): the peak of an imported program as the planner
will count it, and the one-line error when even the lowest peak the transformations reach does
not fit the hint.

The peak is the planner's lower bound at operator granularity (`analysis/operator_graph.py`
and `graph.graph.live_bytes_per_step`, which agree with `usmp.memory_pressure` on every MLPerf
Tiny model), with the model's inputs and outputs in the workspace when the pipeline plans them
there (U4, `usmp{workspace-io=true}`).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from usmp_dialect.graph.graph import accessed_buffers, live_bytes_per_step

LISTED_BUFFERS = 6
"""The error names the largest buffers live at the peak, at most this many."""


@dataclass(frozen=True)
class ProgramPeak:
    """The peak of live bytes of `@main`, the operator running then (its callee) and the
    buffers live then, largest first (name, bytes)."""

    peak_bytes: int
    operator: str
    buffers: tuple[tuple[str, int], ...]


def program_peak(module: ModuleOp, io_inside: bool) -> ProgramPeak | None:
    """The peak of `module`'s entry (None when the analysis cannot read it)."""
    from usmp_dialect.analysis.operator_graph import operator_graph
    from usmp_dialect.graph.in_place import with_io_inside

    described = operator_graph(module)
    if described is None:
        return None
    graph = with_io_inside(described.graph) if io_inside else described.graph
    order = range(len(graph.operators))
    live = live_bytes_per_step(graph, order)
    if not live:
        return ProgramPeak(0, "", ())
    step = live.index(max(live))
    first = [len(live)] * len(graph.buffers)
    last = [-1] * len(graph.buffers)
    for position, operator in enumerate(graph.operators):
        for buffer in accessed_buffers(operator):
            first[buffer] = min(first[buffer], position)
            last[buffer] = max(last[buffer], position)
    buffers = []
    for index, buffer in enumerate(graph.buffers):
        if not buffer.counted or last[index] < 0:
            continue
        start = 0 if buffer.kind == "input" else first[index]
        stop = len(live) if buffer.kind == "output" else last[index]
        if start <= step <= stop:
            buffers.append((buffer.name, buffer.size_bytes))
    buffers.sort(key=lambda item: (-item[1], item[0]))
    op = described.operations[step]
    name = op.callee.root_reference.data if isinstance(op, func.CallOp) else op.name
    return ProgramPeak(max(live), name, tuple(buffers))


def too_small(path: str, hint_bytes: int, peak: ProgramPeak) -> str:
    """The one-line error: the hint, the lowest peak reached, what runs and what is live."""
    listed = ", ".join(f"{name} {size} B" for name, size in peak.buffers[:LISTED_BUFFERS])
    more = len(peak.buffers) - LISTED_BUFFERS
    if more > 0:
        listed += f" and {more} more"
    return (
        f"{path}: the workspace size hint of {hint_bytes} bytes is too small: the lowest peak "
        f"the transformations reach is {peak.peak_bytes} bytes, while {peak.operator} runs "
        f"({listed} live)"
    )


__all__ = ["ProgramPeak", "program_peak", "too_small"]
