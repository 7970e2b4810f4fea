"""Operator-level view of a program's memory: what each operator of the entry reads, writes
and allocates, how many workspace bytes are live while it runs, and where the peak is.

The operators are the calls of the entry function's body, in execution order (an imported
model calls one function per model operator). A function marked `usmp.operator` (what the
frontends write) gives its model operator type, index and multiply-accumulates; any other
callee is its own type (its name), indexed by its position among the calls.

* `input_bytes` / `output_bytes`: the bytes of the call's memref operands the callee reads /
  writes (an operand it may write counts as an output; a declaration may write all of them).
* `scratch_bytes`: read/write buffers allocated below the call (in callees) live during it.
* `live_bytes`: the peak, over the call's span of the timeline, of the read/write bytes live
  (the memory pressure while the operator runs: what a workspace needs at least then).
  `live_buffers` are the buffers live at that tick, largest first; their sizes sum to it.

Buffers' live intervals become operator ranges: each interval maps to the first and last
operator whose span it meets (`[first, last]`, operator indices). Reads the IR and the buffer
analysis, returns plain data.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import cast

import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue

from usmp_dialect.analysis.buffer_info import (
    ALIAS_OPS,
    WHOLE_RUN_KINDS,
    BufferAnalysis,
    module_functions,
)
from usmp_dialect.dialects.usmp import (
    OPERATOR_ATTRIBUTE,
    AllocationOp,
    buffer_size_bytes,
    operator_facts,
)
from usmp_dialect.planning.problem import Interval

TENSOR_ATTRIBUTE = "usmp.tensor"
"""The allocation attribute naming the model tensor a buffer holds (written by frontends)."""


FUSED_ATTRIBUTE = "usmp.fused"
"""The attribute of a fused group's function (fused row streaming): what it contains."""


@dataclass(frozen=True)
class FusedGroup:
    """What a fused group's function (`usmp.fused`) says about itself."""

    operators: tuple[str, ...]
    """The model operators it runs (`<type>_<index>`), in order."""
    line_buffers: tuple[tuple[str, int, int, int], ...]
    """Per intermediate tensor: (tensor, rows kept, its height, line buffer bytes)."""
    saved_bytes: int
    """How much lower the model's peak of live bytes is with the group (the decision's
    estimate)."""
    written_over: str | None = None
    """The input tensor whose bytes the group's output was written over, if any."""


def fused_group(attr: Attribute | None) -> FusedGroup | None:
    """The group of a `usmp.fused` attribute, or None when it is absent or malformed."""
    if not isinstance(attr, DictionaryAttr):
        return None
    try:
        fields = attr.data
        operators = tuple(cast(StringAttr, a).data for a in cast(ArrayAttr, fields["operators"]))
        tensors = [cast(StringAttr, a).data for a in cast(ArrayAttr, fields["tensors"])]
        numbers = [
            [cast(IntegerAttr, a).value.data for a in cast(ArrayAttr, fields[key])]
            for key in ("rows", "heights", "line_buffer_bytes")
        ]
        saved = cast(IntegerAttr, fields["saved_bytes"]).value.data
        over = fields.get("written_over")
        written_over = cast(StringAttr, over).data if over is not None else None
    except (KeyError, AttributeError):
        return None
    buffers = tuple(zip(tensors, *numbers, strict=True))
    return FusedGroup(operators, buffers, saved, written_over)  # type: ignore[arg-type]


@dataclass(frozen=True)
class OperatorRun:
    """One call of the entry: an operator run, with its memory."""

    position: int
    """Position among the entry's calls (execution order)."""
    index: int
    """The model's operator index (`usmp.operator`), else `position`."""
    name: str
    """The callee."""
    type: str
    """The model's operator type (`usmp.operator`), else the callee's name."""
    macs: int | None
    """Multiply-accumulates (`usmp.operator`); None when the function does not say."""
    span: Interval
    input_bytes: int
    output_bytes: int
    scratch_bytes: int
    live_bytes: int
    peak_tick: int
    live_buffers: tuple[int, ...]
    """Indices (into the analysis' buffers) of the buffers live at `peak_tick`, largest first."""
    inputs: tuple[int, ...]
    """Buffers the call reads (by index), through its operands."""
    outputs: tuple[int, ...]
    """Buffers the call may write, through its operands."""
    fused: FusedGroup | None = None
    """The fused group the callee runs (fused row streaming), if it is one."""


@dataclass(frozen=True)
class OperatorAnalysis:
    operators: tuple[OperatorRun, ...]
    peak: int | None
    """Position of the operator during which the live bytes reach their peak (the first one),
    or None when the program calls nothing or the peak lies outside every call."""
    live_operators: tuple[tuple[tuple[int, int], ...], ...]
    """Per buffer, its live intervals as `(first, last)` operator indices."""
    producers: tuple[int | None, ...]
    """Per buffer, the position of the first operator that writes it (None: no operator)."""

    def peak_operator(self) -> OperatorRun | None:
        return None if self.peak is None else self.operators[self.peak]


def tensor_name(op: AllocationOp, buffer_name: str) -> str:
    """The model tensor a buffer holds (its `usmp.tensor`), else the buffer's own name."""
    attr = op.attributes.get(TENSOR_ATTRIBUTE)
    return attr.data if isinstance(attr, StringAttr) else buffer_name


def _operand_buffer(value: SSAValue, buffers: dict[AllocationOp, int]) -> int | None:
    """The planned buffer behind a call operand (through views), or None (an entry argument)."""
    while True:
        owner = value.owner
        if isinstance(owner, AllocationOp):
            return buffers.get(owner)
        if not isinstance(owner, Operation) or owner.name not in ALIAS_OPS or not owner.operands:
            return None
        value = owner.operands[0]


def _written(module: ModuleOp) -> dict[str, list[bool]]:
    # The C backend's analysis of which arguments a function (transitively) writes: the one
    # place that answers it for the whole module.
    from usmp_dialect.backend.c.program import written_arguments

    return written_arguments(list(module_functions(module).values()))


def analyse_operators(module: ModuleOp, analysis: BufferAnalysis) -> OperatorAnalysis:
    """The operator view of `analysis` (made from `module`); see the module doc."""
    functions = module_functions(module)
    written = _written(module)
    buffer_index = {op: index for index, op in enumerate(analysis.allocations)}
    workspace = [info.kind not in WHOLE_RUN_KINDS for info in analysis.buffers]
    sizes = np.array([info.size_bytes for info in analysis.buffers], dtype=np.int64)

    # The live read/write bytes at every tick, and the flattened intervals to find who is live.
    end = analysis.timeline_end + 2
    delta = np.zeros(end + 1, dtype=np.int64)
    starts: list[int] = []
    stops: list[int] = []
    owners: list[int] = []
    for index, info in enumerate(analysis.buffers):
        if not workspace[index] or not info.size_bytes:
            continue
        for start, stop in info.live:
            delta[start] += info.size_bytes
            delta[stop] -= info.size_bytes
            starts.append(start)
            stops.append(stop)
            owners.append(index)
    live = np.cumsum(delta)
    start_array = np.array(starts, dtype=np.int64)
    stop_array = np.array(stops, dtype=np.int64)
    owner_array = np.array(owners, dtype=np.int64)

    def live_at(tick: int) -> tuple[int, ...]:
        mask = (start_array <= tick) & (stop_array > tick)
        found = sorted(set(owner_array[mask].tolist()), key=lambda i: (-int(sizes[i]), i))
        return tuple(found)

    # Scratch: buffers allocated below the entry, by the intervals they occupy.
    scratch_starts = sorted(
        (start, stop, index)
        for index, info in enumerate(analysis.buffers)
        if workspace[index] and info.function != analysis.entry
        for start, stop in info.live
    )

    runs: list[OperatorRun] = []
    for position, entry_call in enumerate(analysis.entry_calls):
        call = entry_call.call
        callee_name = call.callee.root_reference.data
        callee = functions.get(callee_name)
        facts = operator_facts(callee.attributes.get(OPERATOR_ATTRIBUTE)) if callee else None
        flags = written.get(callee_name)
        input_bytes = output_bytes = 0
        inputs: list[int] = []
        outputs: list[int] = []
        for operand_index, operand in enumerate(call.operands):
            if not isinstance(operand.type, MemRefType):
                continue
            size = buffer_size_bytes(operand.type)
            buffer = _operand_buffer(operand, buffer_index)
            is_output = flags is None or operand_index >= len(flags) or flags[operand_index]
            if is_output:
                output_bytes += size
            else:
                input_bytes += size
            if buffer is not None:
                (outputs if is_output else inputs).append(buffer)
        start, stop = entry_call.span
        scratch = {
            index
            for first, last, index in scratch_starts
            if first < stop and last > start and index not in inputs and index not in outputs
        }
        window = live[start:stop]
        peak_tick = start + int(np.argmax(window)) if len(window) else start
        runs.append(
            OperatorRun(
                position=position,
                index=facts.index if facts is not None else position,
                name=callee_name,
                type=facts.type if facts is not None else callee_name,
                macs=facts.macs if facts is not None else None,
                span=entry_call.span,
                input_bytes=input_bytes,
                output_bytes=output_bytes,
                scratch_bytes=int(sum(int(sizes[i]) for i in scratch)),
                live_bytes=int(live[peak_tick]) if len(window) else 0,
                peak_tick=peak_tick,
                live_buffers=live_at(peak_tick),
                inputs=tuple(dict.fromkeys(inputs)),
                outputs=tuple(dict.fromkeys(outputs)),
                fused=fused_group(callee.attributes.get(FUSED_ATTRIBUTE)) if callee else None,
            )
        )

    peak: int | None = None
    if runs and len(live):
        peak_tick = int(np.argmax(live))
        for run in runs:
            if run.span[0] <= peak_tick < run.span[1]:
                peak = run.position
                break
        if peak is None and max(run.live_bytes for run in runs) == int(live[peak_tick]):
            peak = max(runs, key=lambda run: (run.live_bytes, -run.position)).position

    # Spans are disjoint and in order: an interval meets the runs from the first that ends
    # after its start to the last that starts before its end.
    span_starts = [run.span[0] for run in runs]
    span_ends = [run.span[1] for run in runs]
    live_operators: list[tuple[tuple[int, int], ...]] = []
    for info in analysis.buffers:
        ranges: list[tuple[int, int]] = []
        for start, stop in info.live:
            first = bisect.bisect_right(span_ends, start)
            last = bisect.bisect_left(span_starts, stop)
            if last > first:
                ranges.append((runs[first].index, runs[last - 1].index))
        live_operators.append(tuple(ranges))

    producers: list[int | None] = [None] * len(analysis.buffers)
    for run in runs:
        for buffer in run.outputs:
            if producers[buffer] is None:
                producers[buffer] = run.position

    return OperatorAnalysis(tuple(runs), peak, tuple(live_operators), tuple(producers))
