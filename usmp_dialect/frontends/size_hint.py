"""The workspace size hint at import (SPEC §12): the peak of an imported program as the planner
will count it, which the import compares with the hint.

The peak is the planner's lower bound at operator granularity (`analysis/operator_graph.py`
and `graph.graph.peak_live_bytes`, which agree with `usmp.memory_pressure` on every MLPerf Tiny
model), with the model's inputs and outputs in the workspace when the pipeline plans them there
(U4, `usmp{workspace-io=true}`).
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp

from usmp_dialect.graph.graph import peak_live_bytes


def program_peak_bytes(module: ModuleOp, io_inside: bool) -> int | None:
    """The peak of live bytes of `module`'s entry (None when the analysis cannot read it)."""
    from usmp_dialect.analysis.operator_graph import operator_graph
    from usmp_dialect.graph.in_place import with_io_inside

    described = operator_graph(module)
    if described is None:
        return None
    graph = with_io_inside(described.graph) if io_inside else described.graph
    return peak_live_bytes(graph)


__all__ = ["program_peak_bytes"]
