"""`usmp-opt MODEL --analyze`: the memory of a model per operator, as a table, without C.

The module (after the `-p` passes, by default the import passes of a model) is planned as
`usmp-plan` does (algorithm `auto`, entry `main`), and the table printed instead of the module:

* a header: the model, its operators and multiply-accumulates, each pool's planned size
  against its lower bound (and its size hint), the peak of live workspace bytes, and the
  inputs and outputs the application holds outside the pools;
* one row per operator in execution order (the entry's calls): index, function, type, MACs,
  input / output / scratch bytes and the workspace bytes live while it runs; the operators where
  the live bytes reach their peak are marked `<- peak`, those over a single workspace pool's
  size hint `<- over`;
* the peak: the operator, and every tensor live then (size, model tensor name, the operator
  that writes it, its offset), largest first: the tensors to shrink or split to lower the peak.

When the plan cannot be made (a size hint too small), the table is still printed (to stdout,
without offsets) before the one-line error, so the user sees which operators are over.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from usmp_dialect.analysis.buffer_info import BufferAnalysis, module_functions
from usmp_dialect.analysis.operators import OperatorAnalysis, analyse_operators, tensor_name
from usmp_dialect.dialects.pool import WorkspacePoolOp, module_pools
from usmp_dialect.dialects.usmp import buffer_size_bytes
from usmp_dialect.planning import PlanOptions
from usmp_dialect.planning.problem import PlanResult, Problem

ANALYZE_PASSES = "usmp-import-memref,convert-linalg-to-loops"
"""The passes `--analyze` runs before planning when `-p` is not given (a model's import)."""

NAME_WIDTH = 28
TENSOR_WIDTH = 72


@dataclass(frozen=True)
class Analysis:
    """What the table shows: the program's buffers and operators, and the plan when made."""

    source: str
    analysis: BufferAnalysis
    operators: OperatorAnalysis
    pools: tuple[tuple[str, bool, int | None], ...]
    """Per pool (declaration order): name, whether it is a workspace pool, size hint."""
    arguments: tuple[tuple[str, int], ...] = ()
    """The entry's memref arguments (the model's inputs and outputs, which the application
    provides outside the pools): name and bytes."""
    problem: Problem | None = None
    result: PlanResult | None = None


def analyse_module(
    ctx: Context, module: ModuleOp, source: str, entry: str, options: PlanOptions
) -> tuple[Analysis, DiagnosticException | None]:
    """Analyses and plans `module` in place; the planning error, if any, comes back beside
    the analysis made before it (so the table can still be printed)."""
    from usmp_dialect.passes.assign_pools import UsmpAssignPoolsPass
    from usmp_dialect.passes.extract_buffer_info import analyse
    from usmp_dialect.passes.plan import plan_module

    UsmpAssignPoolsPass().apply(ctx, module)
    analysis = analyse(module, entry)
    operators = analyse_operators(module, analysis)
    pools = tuple(
        (pool.pool_name, isinstance(pool, WorkspacePoolOp), pool.capacity_bytes)
        for pool in module_pools(module)
    )
    function = module_functions(module).get(entry)
    arguments = tuple(
        (argument.name_hint or f"argument {position}", buffer_size_bytes(argument.type))
        for position, argument in enumerate(function.args if function is not None else ())
        if isinstance(argument.type, MemRefType)
    )
    unplanned = Analysis(source, analysis, operators, pools, arguments)
    try:
        _, problem, result = plan_module(ctx, module, entry, "auto", options)
    except DiagnosticException as error:  # reported by the driver after the table
        return unplanned, error
    return Analysis(source, analysis, operators, pools, arguments, problem, result), None


def _bytes(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _shortened(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 1] + "\u2026"


def _budget(result: Analysis) -> int | None:
    """The size hint of the one workspace pool, when there is exactly one and it has a hint."""
    workspace = [hint for _name, is_workspace, hint in result.pools if is_workspace]
    return workspace[0] if len(workspace) == 1 else None


def analysis_table(result: Analysis) -> str:
    """The text `--analyze` prints (see the module doc)."""
    analysis, operators = result.analysis, result.operators
    runs = operators.operators
    lines: list[str] = []
    total_macs = sum(run.macs or 0 for run in runs)
    lines.append(
        f"{result.source}: {len(runs)} operator calls, {total_macs:,} MACs, entry @{analysis.entry}"
    )
    if result.problem is not None and result.result is not None:
        for pool, size, bound in zip(
            result.problem.pools, result.result.pool_sizes, result.result.lower_bounds, strict=True
        ):
            hint = f", size hint {pool.capacity_bytes:,}" if pool.capacity_bytes else ""
            at = "at the lower bound" if size == bound else f"{size - bound:,} B over it"
            lines.append(f"pool @{pool.name}: {size:,} bytes (lower bound {bound:,}, {at}{hint})")
    else:
        for name, _is_workspace, hint in result.pools:
            lines.append(f"pool @{name}: not planned (size hint {_bytes(hint)})")
    lines.append(f"peak of live workspace bytes: {analysis.memory_pressure_bytes:,}")
    if result.arguments:
        listed = ", ".join(f"{name} {size:,}" for name, size in result.arguments)
        total = sum(size for _name, size in result.arguments)
        lines.append(f"inputs and outputs (outside the pools): {total:,} bytes ({listed})")
    lines.append("")

    peak_bytes = max((run.live_bytes for run in runs), default=0)
    budget = _budget(result)
    header = (
        f"{'#':>4}  {'function':<{NAME_WIDTH}} {'type':<20} {'MACs':>12} {'in B':>10} "
        f"{'out B':>10} {'scratch B':>10} {'live B':>10}"
    )
    lines.append(header)
    for run in runs:
        marks = []
        if run.live_bytes == peak_bytes and peak_bytes:
            marks.append("<- peak")
        if budget is not None and run.live_bytes > budget:
            marks.append("<- over")
        lines.append(
            f"{run.index:>4}  {_shortened(run.name, NAME_WIDTH):<{NAME_WIDTH}} "
            f"{_shortened(run.type, 20):<20} {_bytes(run.macs):>12} {run.input_bytes:>10,} "
            f"{run.output_bytes:>10,} {run.scratch_bytes:>10,} {run.live_bytes:>10,}"
            + (f"  {' '.join(marks)}" if marks else "")
        )
    at_peak = [run for run in runs if run.live_bytes == peak_bytes and peak_bytes]
    if budget is not None:
        over = [run for run in runs if run.live_bytes > budget]
        if over:
            needs = "1 operator needs" if len(over) == 1 else f"{len(over)} operators need"
            lines.append(f"{needs} more than the size hint ({budget:,} bytes)")
    lines.append("")

    peak = operators.peak_operator()
    if peak is None:
        lines.append("peak: outside every operator call")
        return "\n".join(lines) + "\n"
    also = f" ({len(at_peak)} operators reach it)" if len(at_peak) > 1 else ""
    lines.append(
        f"peak: {peak.live_bytes:,} bytes live while operator {peak.index} ({peak.type} "
        f"@{peak.name}) runs{also}; tensors live then:"
    )
    for index in peak.live_buffers:
        info = analysis.buffers[index]
        producer = operators.producers[index]
        written = (
            f"written by operator {runs[producer].index}"
            if producer is not None
            else f"{info.kind}"
        )
        where = ""
        if result.problem is not None and result.result is not None:
            pool = result.problem.pools[result.result.plan.pools[index]].name
            where = f", @{pool} + {result.result.plan.offsets[index]:,}"
        name = _shortened(tensor_name(analysis.allocations[index], info.name), TENSOR_WIDTH)
        lines.append(f"  {info.size_bytes:>10,} B  {name}  ({written}{where})")
    return "\n".join(lines) + "\n"
