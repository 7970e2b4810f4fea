"""Fused row streaming: which chains of operators run row by row, and in what steps (plain data).

A chain of operators whose output rows each depend on a bounded window of input rows
(convolutions, depthwise convolutions, pooling) can run depth-first: the chain's last operator
produces its output one row at a time, and every earlier operator produces a row only when a
later window needs it. Of every intermediate tensor only the rows that later windows still need
are kept, in a line buffer of at most `(kernel - 1) * dilation + 1` rows (its consumer's window),
so the whole tensor is never live; every row is computed exactly once (no recomputation). A
global reducer at the end (a global average pool) consumes rows as they come into a per-channel
int32 sum, so its input is never more than one row either.

A group need not be a chain: a tensor may have several readers inside it (a residual block's
input, read by its first convolution and by the ADD that closes the block), and an elementwise
operator (ADD, MUL) reads the same row of two streamed branches. Such a tensor keeps every row
some reader's next window still needs.

This module decides on a description of the operators (no IR, no model format): `StreamGraph`
lists the tensors (height, bytes per row, whether something outside the operators sees them)
and the operators in program order; `candidate_runs` finds the runs of row operators,
`is_group` the parts of them that can be fused, `choose_groups` keeps the groups that lower the
model's peak of live bytes (the liveness of `graph.graph`: a tensor is live from its producer to
its last reader, model inputs from the start and outputs to the end), and `schedule` turns a
group into its steps — shift a line buffer, compute a row — which `loops` compresses into
counted loops for the emitter (`kernels.streaming`).
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
    """Seen whole by something other than the operators (a model input or output, a Concat
    slice): never a line buffer. (Several readers are no pin: a group may hold them all.)"""
    element: str = ""
    """The element type (a group's output is written over an input of the same one only)."""
    overwritable: bool = False
    """A group reading it last may write its output over its bytes: the frontend owns them
    (not the caller's), and row `r` lies at bytes `[r * row_bytes, (r + 1) * row_bytes)`."""

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
    over: int | None = None
    """The input tensor whose bytes the group writes its output over (`writable_input`), or
    None: the output has a buffer of its own."""


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


def _readers(graph: StreamGraph) -> dict[int, list[int]]:
    readers: dict[int, list[int]] = {}
    for index, op in enumerate(graph.operators):
        for tensor in dict.fromkeys(op.inputs):
            readers.setdefault(tensor, []).append(index)
    return readers


def _row_operator(graph: StreamGraph, op: StreamOperator) -> bool:
    """Whether `op` can run row by row inside a group (windows narrower than their stride
    too: another reader of their input may need every row)."""
    if op.kind not in ROW_KINDS or len(op.outputs) != 1 or not op.inputs:
        return False
    if op.kind == "global_reduce":
        return len(op.inputs) == 1
    assert op.window is not None
    heights = {graph.tensors[tensor].height for tensor in op.inputs}
    return len(heights) == 1  # several inputs: elementwise, read at the same rows


def candidate_runs(graph: StreamGraph) -> list[tuple[int, ...]]:
    """The maximal runs of consecutive row operators (program order) each reading a tensor
    an earlier one of the run writes; a `global_reduce` ends a run. The groups are contiguous
    parts of runs (`is_group`): diamonds (a residual ADD of two streamed branches) included."""
    runs: list[tuple[int, ...]] = []
    current: list[int] = []
    written: set[int] = set()
    for index, op in enumerate(graph.operators):
        streamable = _row_operator(graph, op)
        if not streamable or (current and not written.intersection(op.inputs)):
            if len(current) > 1:
                runs.append(tuple(current))
            current, written = [], set()
            if not streamable:
                continue
        current.append(index)
        written.update(op.outputs)
        if op.kind == "global_reduce":
            if len(current) > 1:
                runs.append(tuple(current))
            current, written = [], set()
    if len(current) > 1:
        runs.append(tuple(current))
    return runs


def _reads_every_row(op: StreamOperator) -> bool:
    return op.window is None or op.window.span >= op.window.stride


def is_group(
    graph: StreamGraph, group: Sequence[int], readers: dict[int, list[int]] | None = None
) -> bool:
    """Whether the consecutive row operators `group` can run as one fused group: every tensor
    they write but the last operator's output is read only inside the group (and not pinned),
    and some reader of it reads every row (a window no narrower than its stride); a reducer
    only ends a group, reading a tensor the group writes."""
    if len(group) < 2 or list(group) != list(range(group[0], group[0] + len(group))):
        return False
    readers = _readers(graph) if readers is None else readers
    ops = [graph.operators[index] for index in group]
    if any(not _row_operator(graph, op) for op in ops):
        return False
    if any(op.kind == "global_reduce" for op in ops[:-1]):
        return False
    _, internal, _, _ = _group_tensors(graph, group)
    members = set(group)
    for tensor in internal:
        tensor_readers = readers.get(tensor, [])
        if graph.tensors[tensor].pinned or not tensor_readers:
            return False
        if any(reader not in members for reader in tensor_readers):
            return False
        if not any(_reads_every_row(graph.operators[reader]) for reader in tensor_readers):
            return False
    return ops[-1].kind != "global_reduce" or ops[-1].inputs[0] in internal


# ---- the steps of a group ----------------------------------------------------------------


@dataclass(frozen=True)
class Shift:
    """Moves rows `[first, first + rows)` of line buffer `layer - 1` (`Schedule.buffer_tensors`;
    in a chain: layer `layer`'s input) to its start."""

    layer: int
    first: int
    rows: int


@dataclass(frozen=True)
class Compute:
    """Layer `layer` (position in the group) computes one output row from `rows` input rows
    starting at `source_row` (of its input tensor when the group reads it whole, of its line
    buffer otherwise), the window's first `top_pad` rows lying above the input; the row goes
    to `target_row` (of the output tensor for the last layer, of its line buffer otherwise; a
    reducer's input row: 0)."""

    layer: int
    top_pad: int
    rows: int
    source_row: int
    target_row: int
    out_rows: int = 1
    """Output rows computed (the operator's `row_block`, fewer at the bottom)."""
    other_source_rows: tuple[int, ...] = ()
    """Where the window starts in the operator's further inputs (an ADD's second input), each
    in its own tensor or line buffer as `source_row` in the first."""


@dataclass(frozen=True)
class Reduce:
    """The reducer adds the row just computed to its per-channel sums."""


Step = Shift | Compute | Reduce


@dataclass(frozen=True)
class Schedule:
    steps: tuple[Step, ...]
    buffer_rows: tuple[int, ...]
    """Per line buffer (in the order of the operators writing them; for a chain: per layer
    after the first): the rows it holds (1 before a reducer)."""
    buffer_tensors: tuple[int, ...] = ()
    """The tensor each line buffer keeps rows of."""
    inputs: tuple[int, ...] = ()
    """The group's inputs: whole tensors produced before it (first read first)."""
    output: int = -1
    """The group's output tensor, written whole (or the reducer's one row)."""


def _group_tensors(
    graph: StreamGraph, group: Sequence[int]
) -> tuple[list[int], list[int], int, dict[int, list[int]]]:
    """The group's inputs (read, produced outside), its internal tensors (produced inside, in
    the order of their producers), its output (the last operator's) and every tensor's readers
    inside the group (positions)."""
    produced = {
        t: position for position, index in enumerate(group) for t in graph.operators[index].outputs
    }
    readers: dict[int, list[int]] = {}
    inputs: list[int] = []
    for position, index in enumerate(group):
        for tensor in dict.fromkeys(graph.operators[index].inputs):
            readers.setdefault(tensor, []).append(position)
            if tensor not in produced and tensor not in inputs:
                inputs.append(tensor)
    output = graph.operators[group[-1]].outputs[0]
    internal = [t for t in produced if t != output]
    return inputs, internal, output, readers


def _window_of(op: StreamOperator) -> RowWindow:
    """The rows an operator reads per output row (a reducer: its input rows one by one)."""
    return op.window if op.window is not None else RowWindow(1, 1, 1, 0)


def schedule(graph: StreamGraph, group: Sequence[int]) -> Schedule:
    """The steps of a group, demand-driven: the last operator's rows in order, each first making
    the producers of its inputs compute the rows they still lack (after dropping the rows no
    reader inside the group needs anymore: the union of the readers' next windows), so every
    row is computed exactly once and a line buffer holds only rows some window still reads.

    A tensor with several readers (a residual's block input, read by a convolution and by the
    ADD) keeps every row from the lagging reader's window to the leading one's."""
    ops = [graph.operators[index] for index in group]
    reducer = ops[-1].kind == "global_reduce"
    inputs, internal, output, readers = _group_tensors(graph, group)
    producer = {t: position for position, op in enumerate(ops) for t in op.outputs}
    buffer_of = {tensor: position for position, tensor in enumerate(internal)}
    out_heights = [
        graph.tensors[op.inputs[0]].height
        if op.kind == "global_reduce"
        else graph.tensors[op.outputs[0]].height
        for op in ops
    ]
    produced = [0] * len(ops)  # rows each operator has computed (a reducer: consumed)
    base = dict.fromkeys(internal, 0)  # first row held in the tensor's line buffer
    held = dict.fromkeys(internal, 0)  # rows held
    capacity = dict.fromkeys(internal, 0)
    steps: list[Step] = []

    def still_needed(tensor: int) -> int:
        """The first row of `tensor` a reader's next window reads (its height: none)."""
        height = graph.tensors[tensor].height
        return min(
            (
                _window_of(ops[reader]).rows(produced[reader], height)[0]
                if produced[reader] < out_heights[reader]
                else height
            )
            for reader in readers[tensor]
        )

    def produce(position: int) -> None:
        op = ops[position]
        window = _window_of(op)
        y = produced[position]
        target = op.outputs[0] if op.kind != "global_reduce" else None
        feeds_reducer = reducer and target is not None and readers.get(target) == [len(ops) - 1]
        count = (
            1 if feeds_reducer or target is None else min(op.row_block, out_heights[position] - y)
        )
        # Every input shares the window; elementwise inputs have the same height.
        height = graph.tensors[op.inputs[0]].height
        first = window.rows(y, height)[0]
        end = window.rows(y + count - 1, height)[1]
        for tensor in dict.fromkeys(op.inputs):
            if tensor not in buffer_of:
                continue
            drop = min(still_needed(tensor) - base[tensor], held[tensor])
            if drop > 0 and held[tensor] > drop:
                steps.append(Shift(buffer_of[tensor] + 1, drop, held[tensor] - drop))
            if drop > 0:
                held[tensor] -= drop
                base[tensor] += drop
            while base[tensor] + held[tensor] < end:
                produce(producer[tensor])
        # Producing one input may have shifted another's rows (never dropped those this window
        # reads): the rows are looked up once every input is there.
        sources = [first - base[t] if t in buffer_of else first for t in op.inputs]
        if target is None:
            steps.append(Reduce())
            produced[position] += 1
            return
        top_pad = max(window.pad_top - y * window.stride, 0)
        if target in buffer_of:
            target_row = produced[position] - base[target]
            held[target] += count
            capacity[target] = max(capacity[target], held[target])
        else:
            target_row = y
        steps.append(
            Compute(
                position, top_pad, end - first, sources[0], target_row, count, tuple(sources[1:])
            )
        )
        produced[position] += count

    last = len(ops) - 1
    while produced[last] < out_heights[last]:
        produce(last)
    for position in range(len(ops)):
        # Rows below the last window (VALID padding with a stride) are never read: they are
        # not computed either.
        assert produced[position] <= out_heights[position], "every row is computed once"
    return Schedule(
        tuple(steps),
        tuple(capacity[tensor] for tensor in internal),
        tuple(internal),
        tuple(inputs),
        output,
    )


@dataclass(frozen=True)
class Slot:
    """Where a layer of a group reads or writes rows: `input` (the group's input `index`, a
    whole tensor), `buffer` (line buffer `index`) or `output` (the group's output tensor)."""

    kind: str
    index: int = 0


def slots(
    graph: StreamGraph, group: Sequence[int], plan: Schedule
) -> tuple[tuple[tuple[Slot, ...], ...], tuple[Slot, ...]]:
    """Per layer of the group: the slots of its inputs (in order) and of its output."""
    buffers = {tensor: index for index, tensor in enumerate(plan.buffer_tensors)}
    inputs = {tensor: index for index, tensor in enumerate(plan.inputs)}

    def slot(tensor: int) -> Slot:
        if tensor in buffers:
            return Slot("buffer", buffers[tensor])
        if tensor in inputs:
            return Slot("input", inputs[tensor])
        return Slot("output")

    ops = [graph.operators[index] for index in group]
    return (
        tuple(tuple(slot(tensor) for tensor in op.inputs) for op in ops),
        tuple(slot(op.outputs[0]) for op in ops),
    )


def line_buffers(graph: StreamGraph, group: Sequence[int], plan: Schedule) -> list[LineBuffer]:
    """The line buffer of every tensor inside the group (the reducer's input: one row)."""
    return [
        LineBuffer(tensor, rows, graph.tensors[tensor].row_bytes)
        for tensor, rows in zip(plan.buffer_tensors, plan.buffer_rows, strict=True)
    ]


def group_scratch_bytes(
    graph: StreamGraph, group: Sequence[int], plan: Schedule | None = None
) -> tuple[int, list[LineBuffer]]:
    """The group's scratch bytes (line buffers and a reducer's sums) and its line buffers;
    `plan`: its schedule, when already computed."""
    plan = schedule(graph, group) if plan is None else plan
    buffers = line_buffers(graph, group, plan)
    accumulator = graph.operators[group[-1]].accumulator_bytes
    return sum(buffer.size_bytes for buffer in buffers) + accumulator, buffers


def writable_input(
    graph: StreamGraph,
    group: Sequence[int],
    plan: Schedule,
    readers: dict[int, list[int]] | None = None,
) -> int | None:
    """The group input whose bytes the group may write its output over, from the input's
    first byte on (None: none may).

    The input must be overwritable (`StreamTensor.overwritable`), of the output's element type
    and no smaller, read by no operator outside the group; the output must not be pinned. And
    no row may be written over input rows a step still reads: when the last operator writes
    output rows `[y, y + n)`, their bytes `(y + n) * out_row` must end at or below the first
    row of the input that step or any later one reads. A reducer writes its output once,
    after its last step. As the group's other inputs and its line buffers have buffers of
    their own, the rows of this one input decide alone."""
    readers = _readers(graph) if readers is None else readers
    members = set(group)
    ops = [graph.operators[index] for index in group]
    output = graph.tensors[plan.output]
    if output.pinned:
        return None
    last = len(ops) - 1
    for tensor in plan.inputs:
        source = graph.tensors[tensor]
        if not source.overwritable or source.element != output.element:
            continue
        if source.size_bytes < output.size_bytes or not source.row_bytes:
            continue
        if any(reader not in members for reader in readers.get(tensor, [])):
            continue
        # The first row of `tensor` each step and every later one reads, from the end.
        first_read: list[int] = []
        lowest = source.height
        for step in reversed(plan.steps):
            if isinstance(step, Compute):
                op = ops[step.layer]
                starts = (step.source_row, *step.other_source_rows)
                for position, start in enumerate(starts):
                    if op.inputs[position] == tensor:
                        lowest = min(lowest, start)
            first_read.append(lowest)
        first_read.reverse()
        safe = all(
            (step.target_row + step.out_rows) * output.row_bytes <= first * source.row_bytes
            for step, first in zip(plan.steps, first_read, strict=True)
            if isinstance(step, Compute) and step.layer == last
        )
        if safe:
            return tensor
    return None


# ---- which groups --------------------------------------------------------------------------


def candidate_groups(graph: StreamGraph) -> list[tuple[int, ...]]:
    """Every group that may be fused: each contiguous part of two operators or more of a
    candidate run (`candidate_runs`) that is a group (`is_group`)."""
    readers = _readers(graph)
    return [
        run[start:stop]
        for run in candidate_runs(graph)
        for start in range(len(run))
        for stop in range(start + 2, len(run) + 1)
        if is_group(graph, run[start:stop], readers)
    ]


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
    deltas: tuple[tuple[int, ...], ...]
    """Per step: how its (source_row, target_row, *other_source_rows) grow per repetition."""


def _fields(step: Step) -> tuple[tuple[object, ...], tuple[int, ...]]:
    """A step's fixed part and its row offsets: (source_row, target_row, *other_source_rows)."""
    if isinstance(step, Compute):
        fixed = (Compute, step.layer, step.top_pad, step.rows, step.out_rows)
        return fixed, (step.source_row, step.target_row, *step.other_source_rows)
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
            deltas = [_difference(a[1], b[1]) for a, b in zip(first, second, strict=True)]
            count = 2
            while position + (count + 1) * period <= len(steps):
                chunk = keyed[position + count * period : position + (count + 1) * period]
                if not all(
                    c[0] == a[0]
                    and all(
                        now == then + count * step
                        for now, then, step in zip(c[1], a[1], d, strict=True)
                    )
                    for a, c, d in zip(first, chunk, deltas, strict=True)
                ):
                    break
                count += 1
            if count * period > best_count * best_period:
                best_period, best_count = period, count
        body = tuple(steps[position : position + best_period])
        if best_count > 1:
            deltas = tuple(
                _difference(a[1], b[1])
                for a, b in zip(
                    keyed[position : position + best_period],
                    keyed[position + best_period : position + 2 * best_period],
                    strict=True,
                )
            )
        else:
            deltas = tuple(tuple(0 for _ in keyed[position + k][1]) for k in range(len(body)))
        result.append(Loop(best_count, body, deltas))
        position += best_period * best_count
    return result


def _difference(first: tuple[int, ...], second: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(b - a for a, b in zip(first, second, strict=True))
