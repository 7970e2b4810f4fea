"""Fused row streaming: which chains of operators run row by row, and in what steps (plain data).

A chain of operators whose output rows each depend on a bounded window of input rows
(convolutions, depthwise convolutions, pooling) can run depth-first: the chain's last operator
produces its output one row at a time, and every earlier operator produces a row only when a
later window needs it. Of every intermediate tensor only the rows that later windows still need
are kept, in a line buffer of at most `(kernel - 1) * dilation + 1` rows (its consumer's window),
so the whole tensor is never live; every row is computed exactly once (no recomputation). A
global reducer at the end (a global average pool) consumes rows as they come into a per-channel
int32 sum, so its input is never more than one row either.

This module decides on a description of the operators (no IR, no model format): `StreamGraph`
lists the tensors (height, bytes per row, whether something outside a chain sees them) and the
operators in program order; `candidate_chains` finds the maximal chains, `choose_groups` keeps
the sub-chains that lower the model's peak of live bytes (the liveness of `graph.graph`: a
tensor is live from its producer to its last reader, model inputs from the start and outputs to
the end), and `schedule` turns a group into its steps — shift a line buffer, compute a row —
which `loops` compresses into counted loops for the emitter (`kernels.streaming`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RowWindow:
    """How an operator's output rows read its input rows: output row `y` reads input rows
    `y * stride - pad_top + dilation * k` for `k` in `[0, kernel)` that lie in the input."""

    kernel: int
    stride: int
    dilation: int
    pad_top: int

    @property
    def span(self) -> int:
        """Input rows one window covers, first to last."""
        return (self.kernel - 1) * self.dilation + 1

    def rows(self, y: int, height: int) -> tuple[int, int]:
        """The input rows `[first, end)` in the input (height `height`) of output row `y`."""
        origin = y * self.stride - self.pad_top
        return max(origin, 0), min(origin + self.span, height)


@dataclass(frozen=True)
class StreamTensor:
    """An activation as streaming sees it."""

    name: str
    height: int
    row_bytes: int
    pinned: bool = False
    """Model input or output, or read by more than one operator: never a line buffer."""

    @property
    def size_bytes(self) -> int:
        return self.height * self.row_bytes


ROW_KINDS = ("window", "global_reduce")


@dataclass(frozen=True)
class StreamOperator:
    """One model operator in program order. `kind`: `window` (rows from a window of input
    rows), `global_reduce` (one output from every input row, summed per channel), or
    `opaque` (anything else: it only reads and writes whole tensors)."""

    name: str
    kind: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    window: RowWindow | None = None
    accumulator_bytes: int = 0
    """`global_reduce`: the bytes of its per-channel sums."""
    row_block: int = 1
    """Output rows the operator computes per step where it can (its kernel is faster on
    several rows at once: int8 convolutions of a 1-wide output block two rows)."""


@dataclass(frozen=True)
class StreamGraph:
    tensors: tuple[StreamTensor, ...]
    operators: tuple[StreamOperator, ...]


@dataclass(frozen=True)
class LineBuffer:
    """The rows kept of an intermediate tensor: its consumer's window."""

    tensor: int
    rows: int
    row_bytes: int

    @property
    def size_bytes(self) -> int:
        return self.rows * self.row_bytes


@dataclass(frozen=True)
class Group:
    """Operators `operators` (indices, a chain in program order) fused into one function."""

    operators: tuple[int, ...]
    line_buffers: tuple[LineBuffer, ...]
    scratch_bytes: int
    """Line buffers plus the reducer's sums and the row it reduces."""
    saved_bytes: int
    """How much the model's peak of live bytes drops with this group (given the others)."""


def _streamable(graph: StreamGraph, op: StreamOperator) -> bool:
    if op.kind not in ROW_KINDS or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    if op.kind == "global_reduce":
        return True
    assert op.window is not None
    # A window narrower than its stride skips input rows: their producer would compute rows
    # nobody reads, so the chain stops there.
    return op.window.span >= op.window.stride


def candidate_chains(graph: StreamGraph) -> list[tuple[int, ...]]:
    """The maximal chains of streamable operators, each operator's output read by the next one
    only (and not pinned); a `global_reduce` only ends a chain."""
    readers: dict[int, list[int]] = {}
    for index, op in enumerate(graph.operators):
        for tensor in op.inputs:
            readers.setdefault(tensor, []).append(index)
    chains: list[tuple[int, ...]] = []
    current: list[int] = []
    for index, op in enumerate(graph.operators):
        if not _streamable(graph, op):
            if len(current) > 1:
                chains.append(tuple(current))
            current = []
            continue
        previous = graph.operators[current[-1]] if current else None
        linked = (
            previous is not None
            and previous.kind != "global_reduce"
            and previous.outputs[0] == op.inputs[0]
            and readers.get(op.inputs[0]) == [index]
            and not graph.tensors[op.inputs[0]].pinned
        )
        if not linked:
            if len(current) > 1:
                chains.append(tuple(current))
            current = []
        current.append(index)
    if len(current) > 1:
        chains.append(tuple(current))
    return chains


# ---- the steps of a group ----------------------------------------------------------------


@dataclass(frozen=True)
class Shift:
    """Moves rows `[first, first + rows)` of layer `layer`'s line buffer to its start."""

    layer: int
    first: int
    rows: int


@dataclass(frozen=True)
class Compute:
    """Layer `layer` computes one output row from `rows` input rows starting at `source_row`
    (of its input tensor for the first layer, of its line buffer otherwise), the window's first
    `top_pad` rows lying above the input; the row goes to `target_row` (of the output tensor
    for the last layer, of the next layer's line buffer otherwise; a reducer's input row: 0)."""

    layer: int
    top_pad: int
    rows: int
    source_row: int
    target_row: int
    out_rows: int = 1
    """Output rows computed (the operator's `row_block`, fewer at the bottom)."""


@dataclass(frozen=True)
class Reduce:
    """The reducer adds the row just computed to its per-channel sums."""


Step = Shift | Compute | Reduce


@dataclass(frozen=True)
class Schedule:
    steps: tuple[Step, ...]
    buffer_rows: tuple[int, ...]
    """Per layer after the first: the rows its line buffer holds (1 before a reducer)."""


def schedule(graph: StreamGraph, group: Sequence[int]) -> Schedule:
    """The steps of a group, demand-driven: the last layer's rows in order, each first making
    its producer compute the input rows it still lacks (after dropping those no later window
    reads), so no line buffer holds more than its consumer's window."""
    layers = [graph.operators[index] for index in group]
    reducer = layers[-1].kind == "global_reduce"
    windowed = layers[:-1] if reducer else layers
    heights = [graph.tensors[op.inputs[0]].height for op in windowed]
    out_heights = [graph.tensors[op.outputs[0]].height for op in windowed]
    produced = [0] * len(windowed)  # rows each layer has computed
    base = [0] * len(windowed)  # first input row held in the layer's line buffer
    held = [0] * len(windowed)  # rows held
    capacity = [0] * len(windowed)
    steps: list[Step] = []

    def produce(layer: int) -> None:
        op = windowed[layer]
        assert op.window is not None
        y = produced[layer]
        feeds_reducer = reducer and layer + 1 == len(windowed)
        count = 1 if feeds_reducer else min(op.row_block, out_heights[layer] - y)
        first = op.window.rows(y, heights[layer])[0]
        end = op.window.rows(y + count - 1, heights[layer])[1]
        top_pad = max(op.window.pad_top - y * op.window.stride, 0)
        if layer == 0:
            source_row = first
        else:
            drop = min(first - base[layer], held[layer])
            if drop > 0 and held[layer] > drop:
                steps.append(Shift(layer, drop, held[layer] - drop))
            held[layer] -= drop
            base[layer] = first
            while base[layer] + held[layer] < end:
                produce(layer - 1)
            source_row = 0
        if layer + 1 < len(windowed):
            target_row = produced[layer] - base[layer + 1]
            held[layer + 1] += count
            capacity[layer + 1] = max(capacity[layer + 1], held[layer + 1])
        elif reducer:
            target_row = 0
        else:
            target_row = y
        steps.append(Compute(layer, top_pad, end - first, source_row, target_row, count))
        produced[layer] += count

    last = len(windowed) - 1
    while produced[last] < out_heights[last]:
        produce(last)
        if reducer:
            steps.append(Reduce())
    if len(windowed) > 1:
        for layer in range(1, len(windowed)):
            # Rows below the last window (VALID padding with a stride) are never read: they
            # are not computed either.
            assert produced[layer - 1] <= heights[layer], "every row is computed once"
    rows = tuple(capacity[1:]) + ((1,) if reducer else ())
    return Schedule(tuple(steps), rows)


def line_buffers(graph: StreamGraph, group: Sequence[int], plan: Schedule) -> list[LineBuffer]:
    """The line buffer of every tensor inside the group (the reducer's input: one row)."""
    buffers: list[LineBuffer] = []
    for layer, rows in zip(group[1:], plan.buffer_rows, strict=True):
        tensor = graph.operators[layer].inputs[0]
        buffers.append(LineBuffer(tensor, rows, graph.tensors[tensor].row_bytes))
    return buffers


def group_scratch_bytes(graph: StreamGraph, group: Sequence[int]) -> tuple[int, list[LineBuffer]]:
    plan = schedule(graph, group)
    buffers = line_buffers(graph, group, plan)
    accumulator = graph.operators[group[-1]].accumulator_bytes
    return sum(buffer.size_bytes for buffer in buffers) + accumulator, buffers


# ---- which groups --------------------------------------------------------------------------


def candidate_groups(graph: StreamGraph) -> list[tuple[int, ...]]:
    """Every group that may be fused: each contiguous part of two operators or more of each
    candidate chain, not starting with a reducer."""
    groups: list[tuple[int, ...]] = []
    for chain in candidate_chains(graph):
        for start in range(len(chain)):
            if graph.operators[chain[start]].kind == "global_reduce":
                continue
            groups += [chain[start:stop] for stop in range(start + 2, len(chain) + 1)]
    return groups


def choose_groups(graph: StreamGraph) -> list[Group]:
    """The fused groups without a size hint: the cheapest set of candidate groups (the
    instructions they add, `graph.stream_cost`) that reaches the lowest peak of live bytes any
    set reaches, the model's inputs and outputs counted (`graph.selection`). A group that does
    not lower the peak is not applied: it would only add instructions."""
    from usmp_dialect.graph.selection import choose_stream_groups  # it imports this module

    return choose_stream_groups(graph).groups


# ---- steps as loops ------------------------------------------------------------------------


@dataclass(frozen=True)
class Loop:
    """`count` repetitions of `body`; in repetition `j` each step's `source_row` and
    `target_row` grow by `j` times the step's entry of `deltas` (other fields stay)."""

    count: int
    body: tuple[Step, ...]
    deltas: tuple[tuple[int, int], ...]


def _fields(step: Step) -> tuple[tuple[object, ...], tuple[int, int]]:
    """A step's fixed part and its (source_row, target_row)."""
    if isinstance(step, Compute):
        fixed = (Compute, step.layer, step.top_pad, step.rows, step.out_rows)
        return fixed, (step.source_row, step.target_row)
    return (type(step), step), (0, 0)


def loops(steps: Sequence[Step], longest_body: int = 64) -> list[Loop]:
    """`steps` as a sequence of loops (count 1: a plain run of steps): greedily, at each
    position the periodic stretch covering most steps, where each step repeats with only its
    row offsets growing by a constant per period (the steady state between the borders)."""
    keyed = [_fields(step) for step in steps]
    result: list[Loop] = []
    position = 0
    while position < len(steps):
        best_period, best_count = 1, 1
        for period in range(1, min(longest_body, (len(steps) - position) // 2) + 1):
            first = keyed[position : position + period]
            second = keyed[position + period : position + 2 * period]
            if any(a[0] != b[0] for a, b in zip(first, second, strict=True)):
                continue
            deltas = [
                (b[1][0] - a[1][0], b[1][1] - a[1][1]) for a, b in zip(first, second, strict=True)
            ]
            count = 2
            while position + (count + 1) * period <= len(steps):
                chunk = keyed[position + count * period : position + (count + 1) * period]
                if not all(
                    c[0] == a[0]
                    and c[1][0] == a[1][0] + count * d[0]
                    and c[1][1] == a[1][1] + count * d[1]
                    for a, c, d in zip(first, chunk, deltas, strict=True)
                ):
                    break
                count += 1
            if count * period > best_count * best_period:
                best_period, best_count = period, count
        body = tuple(steps[position : position + best_period])
        if best_count > 1:
            deltas = tuple(
                (b[1][0] - a[1][0], b[1][1] - a[1][1])
                for a, b in zip(
                    keyed[position : position + best_period],
                    keyed[position + best_period : position + 2 * best_period],
                    strict=True,
                )
            )
        else:
            deltas = tuple((0, 0) for _ in body)
        result.append(Loop(best_count, body, deltas))
        position += best_period * best_count
    return result
