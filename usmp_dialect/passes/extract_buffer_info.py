"""`usmp-extract-buffer-info`: the liveness analysis, written onto the IR for inspection.

Every allocation reachable from the entry gets `usmp.live` (its half-open live intervals on the
program timeline, `[array<i64: start, end>, ...]`) and `usmp.conflicts` (the sorted names of
the buffers live at the same time); the module gets `usmp.memory_pressure` (the peak of live
non-constant bytes, a lower bound for the workspace). Nothing else changes. The analysis itself
is `usmp_dialect.analysis.buffer_info`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from usmp_dialect.analysis.buffer_info import (
    AnalysisError,
    BufferAnalysis,
    conflict_names,
    extract_buffer_info,
)


def raise_analysis_error(error: AnalysisError) -> NoReturn:
    """Reports an analysis error as a diagnostic on the op it names."""
    error.op.emit_error(error.message, PassFailedException(error.message))


def analyse(module: ModuleOp, entry: str) -> BufferAnalysis:
    """`extract_buffer_info`, with errors turned into diagnostics."""
    try:
        return extract_buffer_info(module, entry)
    except AnalysisError as error:
        raise_analysis_error(error)


@dataclass(frozen=True)
class UsmpExtractBufferInfoPass(ModulePass):
    """Writes the buffers' live intervals and conflicts onto the allocations."""

    name = "usmp-extract-buffer-info"

    entry: str = "main"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        analysis = analyse(op, self.entry)
        conflicts = conflict_names(analysis)
        for allocation, info, names in zip(
            analysis.allocations, analysis.buffers, conflicts, strict=True
        ):
            allocation.attributes["usmp.live"] = ArrayAttr(
                [DenseArrayBase.from_list(i64, interval) for interval in info.live]
            )
            allocation.attributes["usmp.conflicts"] = ArrayAttr([StringAttr(n) for n in names])
        op.attributes["usmp.memory_pressure"] = IntegerAttr(analysis.memory_pressure_bytes, 64)
