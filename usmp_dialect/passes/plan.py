"""`usmp-plan`: runs the liveness analysis and a planning algorithm, writes the plan onto the IR.

```
usmp-plan{algorithm=auto entry=main report="plan.json" svg="map.svg" time-limit=10 seed=0}
```

* Candidate pools first: the pass runs `usmp-assign-pools` (which changes nothing on IR that
  already went through it), so allocations without `pools` get the pools that serve their
  function's target and a module without pools gets the internal defaults.
* The planning problem: the buffers of `usmp_dialect.analysis.buffer_info` reachable from the
  entry; pools in declaration order with capacity `size_hint_bytes` (unbounded when absent);
  each buffer keeps its own alignment (offsets are multiples of it). Offsets are relative to
  the pool base, so after planning a pool's `alignment` is raised to the largest alignment of
  the buffers placed in it when that is larger. State buffers (`usmp.allocate_state`) are live
  for the whole run and have only state pools as candidates: they are packed among
  themselves, never with workspace buffers (SPEC §13).
* Writes `pool` and `offset` onto every planned allocation and `size_bytes` onto every pool
  (0 for a pool nothing was placed in). Allocations in functions the entry never reaches are
  not planned. A program with nothing to plan (e.g. already converted) keeps its pool sizes.
* `report=` writes the JSON plan of SPEC §8, `svg=` a memory map (see `plan_report`); under
  `usmp-opt` both are written only once the whole run succeeded (`write_output_file`).
* Inside `recording_plans()` (the project target and `usmp_dialect.compile` use it) every plan
  also appends its report and memory map to the recording, whatever `report=`/`svg=` say.
* A search stopped by `time-limit` returns its best valid plan; the pass then says on stderr
  that the plan is not proven optimal (and the report has `"proven_optimal": false`).

Options are checked when the pass is built: `time-limit` must be a positive number of seconds
and `seed` a non-negative integer.

Errors are diagnostics on the op at fault: an unknown algorithm, a buffer larger than every
candidate pool, buffers pinned to one pool that exceed it while live together, a read/write
buffer listed for a constant pool, a plan the algorithm cannot find, and everything the
analysis rejects (missing entry, unknown callee, recursion, escaping buffers, dynamic shapes).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from usmp_dialect.analysis.buffer_info import (
    BufferAnalysis,
    missing_entry_message,
    module_functions,
)
from usmp_dialect.dialects.pool import ConstantPoolOp, PoolOpBase, StatePoolOp, module_pools
from usmp_dialect.passes.extract_buffer_info import analyse
from usmp_dialect.planning import ALGORITHMS, PlanOptions, solve
from usmp_dialect.planning.problem import Buffer, PlanResult, Pool, Problem, ProblemError
from usmp_dialect.tools.progress import clear_progress, current_progress, progress


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, PassFailedException(message))


def check_plan_options(time_limit: float, seed: int) -> None:
    """Raises `ValueError` (reported as a bad `-p` by the drivers) for unusable options."""
    # `true` passes xDSL's type check for numbers (a bool is an int); it is no duration.
    if isinstance(time_limit, bool) or math.isnan(time_limit) or time_limit <= 0:
        shown = str(time_limit).lower() if isinstance(time_limit, bool) else time_limit
        raise ValueError(f"time-limit must be a positive number of seconds, not {shown}")
    if isinstance(seed, bool) or seed < 0:
        shown = str(seed).lower() if isinstance(seed, bool) else seed
        raise ValueError(f"seed must be a non-negative integer, not {shown}")


def not_optimal_note(problem: Problem, result: PlanResult, time_limit_s: float) -> str | None:
    """The stderr note for a search its limit (the time limit, or the node budget that stands
    for it) stopped before it proved its plan optimal.

    The note names the pass, not a program: the pass runs inside `usmp-opt` and other drivers."""
    if result.proven_optimal or not result.limit_reached:
        return None
    pools = ", ".join(
        f"@{pool.name} {size} bytes (lower bound {bound})"
        for pool, size, bound in zip(
            problem.pools, result.pool_sizes, result.lower_bounds, strict=True
        )
        if size
    )
    return (
        f"note: usmp-plan pass: search stopped at {result.stop_phrase(time_limit_s)}: the plan is "
        f"valid but not proven optimal: {pools}"
    )


def build_problem(analysis: BufferAnalysis, pools: list[PoolOpBase]) -> Problem:
    """The planning problem of an analysed program; fails on buffers that cannot be placed."""
    pool_index = {pool.pool_name: index for index, pool in enumerate(pools)}
    buffers: list[Buffer] = []
    for info, op in zip(analysis.buffers, analysis.allocations, strict=True):
        if not info.candidate_pools:
            _fail(op, f"buffer '{info.name}' has no candidate pool (run usmp-assign-pools)")
        candidates: list[int] = []
        for name in info.candidate_pools:
            if name not in pool_index:
                _fail(op, f"buffer '{info.name}' lists @{name}, which is not a pool")
            if info.kind != "constant" and isinstance(pools[pool_index[name]], ConstantPoolOp):
                _fail(
                    op,
                    f"buffer '{info.name}' is written, so it cannot be placed in the constant "
                    f"pool @{name}",
                )
            if (info.kind == "state") != isinstance(pools[pool_index[name]], StatePoolOp):
                what = "state" if info.kind == "state" else "not state"
                _fail(
                    op,
                    f"buffer '{info.name}' is {what}, so it cannot be placed in the "
                    f"{pools[pool_index[name]].KIND} pool @{name} (state is planned in state "
                    "pools only)",
                )
            candidates.append(pool_index[name])
        capacities = [pools[index].capacity_bytes for index in candidates]
        if all(cap is not None and cap < info.size_bytes for cap in capacities):
            free = ", ".join(
                f"@{pools[index].pool_name} has {cap} bytes"
                for index, cap in zip(candidates, capacities, strict=True)
            )
            _fail(
                op,
                f"buffer '{info.name}' ({info.size_bytes} bytes) is larger than every candidate "
                f"pool: {free}",
            )
        buffers.append(
            Buffer(info.name, info.size_bytes, info.alignment, info.live, (), tuple(candidates))
        )
    return Problem(
        tuple(buffers),
        tuple(Pool(pool.pool_name, pool.capacity_bytes, pool.alignment_bytes) for pool in pools),
    )


def forced_overflow(problem: Problem) -> tuple[int, int, list[int]] | None:
    """A pool whose single-candidate buffers alone exceed its capacity at some tick: (pool,
    the tick where they peak, the buffers live then, largest first), or None. A sweep over the
    live intervals."""
    for pool_index, pool in enumerate(problem.pools):
        if pool.capacity_bytes is None:
            continue
        events: list[tuple[int, int, int]] = []  # (tick, 0 = end / 1 = start, buffer)
        for index, buffer in enumerate(problem.buffers):
            if buffer.pools == (pool_index,) and buffer.size_bytes:
                for start, end in buffer.live:
                    events.append((start, 1, index))
                    events.append((end, 0, index))
        events.sort()
        live: set[int] = set()
        live_bytes = peak_bytes = 0
        peak: tuple[int, list[int]] | None = None
        for tick, is_start, index in events:
            if not is_start:
                live.discard(index)
                live_bytes -= problem.buffers[index].size_bytes
                continue
            live.add(index)
            live_bytes += problem.buffers[index].size_bytes
            if live_bytes > pool.capacity_bytes and live_bytes > peak_bytes:
                peak_bytes = live_bytes
                peak = tick, sorted(live, key=lambda i: (-problem.buffers[i].size_bytes, i))
        if peak is not None:
            return pool_index, *peak
    return None


def overflow_message(
    module: ModuleOp,
    analysis: BufferAnalysis,
    problem: Problem,
    overflow: tuple[int, int, list[int]],
) -> str:
    """One line for a pool too small for the buffers pinned to it: the operator running when
    they peak, the bytes the pool needs, and the tensors live then (with their producers)."""
    from usmp_dialect.analysis.operators import analyse_operators, tensor_name

    pool_index, tick, live = overflow
    pool = problem.pools[pool_index]
    operators = analyse_operators(module, analysis)
    running = next((run for run in operators.operators if run.span[0] <= tick < run.span[1]), None)
    if running is None:
        where = f"at time {tick}"
    elif running.type == running.name:
        where = f"while operator {running.index} (@{running.name}) runs"
    else:
        where = f"while operator {running.index} ({running.type} @{running.name}) runs"

    def described(index: int) -> str:
        buffer = problem.buffers[index]
        name = tensor_name(analysis.allocations[index], buffer.name)
        producer = operators.producers[index]
        written = (
            f", written by operator {operators.operators[producer].index}"
            if producer is not None
            else ""
        )
        return f"'{name}' ({buffer.size_bytes} bytes{written})"

    total = sum(problem.buffers[i].size_bytes for i in live)
    pinned = (
        ""
        if all(
            buffer.pools == (pool_index,)
            for buffer in problem.buffers
            if pool_index in buffer.pools
        )
        else " that have no other candidate pool"
    )
    return (
        f"pool @{pool.name} ({pool.capacity_bytes} bytes) is too small: at least {total} bytes "
        f"of buffers{pinned} are live together {where}: "
        + ", ".join(described(index) for index in live)
    )


def plan_module(
    ctx: Context,
    module: ModuleOp,
    entry: str,
    algorithm: str,
    options: PlanOptions,
) -> tuple[BufferAnalysis, Problem, PlanResult]:
    """Plans `module` in place (see the module doc) and returns what the reports need."""
    from usmp_dialect.passes.assign_pools import UsmpAssignPoolsPass

    if algorithm not in ALGORITHMS:
        known = ", ".join(sorted(ALGORITHMS))
        _fail(module, f"unknown algorithm '{algorithm}' (known: {known})")
    functions = module_functions(module)
    function = functions.get(entry)
    if function is None:
        _fail(module, missing_entry_message(entry, functions))
    UsmpAssignPoolsPass().apply(ctx, module)
    analysis = analyse(module, entry)
    pools = list(module_pools(module))
    problem = build_problem(analysis, pools)
    progress(f"planning {len(problem.buffers)} buffers with '{algorithm}'")
    overflow = forced_overflow(problem)
    if overflow is not None:
        message = overflow_message(module, analysis, problem, overflow)
        _fail(analysis.allocations[overflow[2][0]], message)
    try:
        result = solve(problem, algorithm, options)
    except (ProblemError, ValueError) as error:
        _fail(function, f"planning with '{algorithm}' failed: {error}")
    for op, pool, offset in zip(
        analysis.allocations, result.plan.pools, result.plan.offsets, strict=True
    ):
        op.properties["pool"] = SymbolRefAttr(pools[pool].pool_name)
        op.properties["offset"] = IntegerAttr(offset, 64)
    if not problem.buffers:
        # Nothing to plan (e.g. the program was already converted): pools keep their sizes.
        return analysis, problem, result
    for index, pool in enumerate(pools):
        pool.properties["size_bytes"] = IntegerAttr(result.pool_sizes[index], 64)
        placed_alignments = [
            buffer.alignment
            for buffer, placed in zip(problem.buffers, result.plan.pools, strict=True)
            if placed == index
        ]
        needed = max(placed_alignments, default=1)
        if needed > pool.alignment_bytes:
            pool.properties["alignment"] = IntegerAttr(needed, 64)
    return analysis, problem, result


@dataclass(frozen=True)
class PlanRecord:
    """The outputs of one plan: its JSON report (SPEC §8) and its memory map (SVG)."""

    report: str
    svg: str


_recording: list[PlanRecord] | None = None


@contextmanager
def recording_plans() -> Iterator[list[PlanRecord]]:
    """Within this block every `usmp-plan` run appends its report and memory map to the list
    yielded (the last one is the plan of the program that reaches the target)."""
    global _recording
    previous, _recording = _recording, []
    try:
        yield _recording
    finally:
        _recording = previous


@dataclass(frozen=True)
class UsmpPlanPass(ModulePass):
    """Plans every buffer reachable from the entry into the module's pools."""

    name = "usmp-plan"

    algorithm: str = "auto"
    entry: str = "main"
    report: str | None = None
    svg: str | None = None
    time_limit: int | float = 10.0
    seed: int = 0

    def __post_init__(self) -> None:
        check_plan_options(self.time_limit, self.seed)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        options = PlanOptions(
            time_limit_s=self.time_limit, seed=self.seed, progress=current_progress()
        )
        analysis, problem, result = plan_module(ctx, op, self.entry, self.algorithm, options)
        note = not_optimal_note(problem, result, self.time_limit)
        if note is not None:
            clear_progress()
            print(note, file=sys.stderr)
        if self.report is None and self.svg is None and _recording is None:
            return
        from usmp_dialect.analysis.operators import analyse_operators
        from usmp_dialect.passes.plan_report import memory_map_svg, plan_report, write_text

        pools = list(module_pools(op))
        operators = analyse_operators(op, analysis)
        recording = _recording is not None
        report = (
            plan_report(analysis, problem, result, pools, operators)
            if recording or self.report
            else ""
        )
        svg = memory_map_svg(analysis, problem, result, operators) if recording or self.svg else ""
        if _recording is not None:
            _recording.append(PlanRecord(report, svg))
        if self.report is not None:
            write_text(op, self.report, report, "report")
        if self.svg is not None:
            write_text(op, self.svg, svg, "svg")
