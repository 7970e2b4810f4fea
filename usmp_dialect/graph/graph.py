"""A program's entry function as a graph of operators and buffers (plain data, no xDSL).

An operator is one step of the entry function (an operator call, a copy): the byte ranges of
buffers it reads and writes, the scratch bytes it allocates for itself, and the operators it
must follow for reasons the buffers do not show (SSA values, side effects the analysis cannot
see). A buffer is one allocation: every view of it (a Concat's slices, a reshape) is an access
to a byte range of that buffer, so two operators writing different slices of one buffer stay
independent while the buffer is live from the first slice written to the last read.

Liveness, as the planner's analysis sees it at operator granularity: a buffer is live from the
first operator that accesses it to the last; a model input from the start, a model output to the
end; constants are not counted (they sit in their own pools), and neither are buffers the
planner does not place (`planned=False`: the entry's arguments, which are the caller's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

BUFFER_KINDS = ("intermediate", "input", "output", "constant", "state")


@dataclass(frozen=True)
class Buffer:
    """One buffer of the graph."""

    name: str
    size_bytes: int
    kind: str = "intermediate"
    """One of BUFFER_KINDS."""
    planned: bool = True
    """Whether the planner places it (an allocation; the entry's arguments are the caller's)."""

    @property
    def counted(self) -> bool:
        """Whether the buffer's bytes count towards the peak of live bytes."""
        return self.planned and self.kind not in ("constant", "state")


@dataclass(frozen=True)
class Access:
    """The bytes `[start_byte, stop_byte)` of buffer `buffer` (a view of it, or all of it)."""

    buffer: int
    start_byte: int
    stop_byte: int

    def overlaps(self, other: Access) -> bool:
        return (
            self.buffer == other.buffer
            and self.start_byte < other.stop_byte
            and other.start_byte < self.stop_byte
        )


@dataclass(frozen=True)
class Operator:
    """One step of the entry function."""

    name: str
    reads: tuple[Access, ...] = ()
    writes: tuple[Access, ...] = ()
    scratch_bytes: int = 0
    """Bytes the operator allocates for itself, live only while it runs."""
    after: tuple[int, ...] = ()
    """Earlier operators (by index) this one must follow whatever the buffers say."""
    barrier: bool = False
    """Has effects the analysis cannot see: it stays after every earlier operator and before
    every later one."""


@dataclass(frozen=True)
class Graph:
    """Buffers and the operators that access them, in program order."""

    buffers: tuple[Buffer, ...]
    operators: tuple[Operator, ...]


class GraphError(ValueError):
    """A graph or an order that is not well formed (a bug in whoever built it)."""


def whole(graph_buffers: Sequence[Buffer], buffer: int) -> Access:
    """An access to every byte of `buffer`."""
    return Access(buffer, 0, graph_buffers[buffer].size_bytes)


def accessed_buffers(operator: Operator) -> tuple[int, ...]:
    """The buffers `operator` reads or writes, each once, sorted."""
    return tuple(sorted({access.buffer for access in (*operator.reads, *operator.writes)}))


def dependencies(graph: Graph) -> tuple[tuple[int, ...], ...]:
    """Per operator, the sorted earlier operators it must follow: a write to bytes an earlier
    operator reads or writes, a read of bytes an earlier operator writes, `after`, barriers."""
    # Per buffer, the earlier accesses: a read need only be checked against earlier writes.
    earlier_reads: dict[int, list[tuple[Access, int]]] = {}
    earlier_writes: dict[int, list[tuple[Access, int]]] = {}
    predecessors: list[set[int]] = []
    last_barrier: int | None = None
    for index, operator in enumerate(graph.operators):
        before: set[int] = set()
        for after in operator.after:
            if not 0 <= after < index:
                raise GraphError(f"operator {index} follows operator {after}, not an earlier one")
            before.add(after)
        if operator.barrier:
            before.update(range(index))
        elif last_barrier is not None:
            before.add(last_barrier)
        accesses = [(access, False) for access in operator.reads]
        accesses += [(access, True) for access in operator.writes]
        for access, writes in accesses:
            if not 0 <= access.buffer < len(graph.buffers):
                raise GraphError(f"operator {index} accesses unknown buffer {access.buffer}")
            others = earlier_writes.get(access.buffer, [])
            if writes:
                others = others + earlier_reads.get(access.buffer, [])
            for other, other_index in others:
                if access.overlaps(other):
                    before.add(other_index)
        for access, writes in accesses:
            table = earlier_writes if writes else earlier_reads
            table.setdefault(access.buffer, []).append((access, index))
        if operator.barrier:
            last_barrier = index
        before.discard(index)
        predecessors.append(before)
    return tuple(tuple(sorted(before)) for before in predecessors)


def check_order(graph: Graph, order: Sequence[int]) -> None:
    """Raises `GraphError` unless `order` runs every operator once, after all it depends on."""
    if sorted(order) != list(range(len(graph.operators))):
        raise GraphError("the order is not a permutation of the operators")
    position = {operator: step for step, operator in enumerate(order)}
    for index, before in enumerate(dependencies(graph)):
        for predecessor in before:
            if position[predecessor] > position[index]:
                raise GraphError(
                    f"operator {index} ({graph.operators[index].name}) runs before operator "
                    f"{predecessor} ({graph.operators[predecessor].name}), which it depends on"
                )


def live_bytes_per_step(graph: Graph, order: Sequence[int]) -> tuple[int, ...]:
    """The live bytes while each operator of `order` runs (its scratch included)."""
    steps = len(order)
    first = [steps] * len(graph.buffers)
    last = [-1] * len(graph.buffers)
    for step, index in enumerate(order):
        for buffer in accessed_buffers(graph.operators[index]):
            first[buffer] = min(first[buffer], step)
            last[buffer] = max(last[buffer], step)
    # A difference array: +size where a buffer becomes live, -size after its last step.
    change = [0] * (steps + 1)
    for buffer, info in enumerate(graph.buffers):
        if not info.counted or last[buffer] < 0:
            continue  # never accessed: nothing to keep
        start = 0 if info.kind == "input" else first[buffer]
        stop = steps if info.kind == "output" else last[buffer] + 1
        change[start] += info.size_bytes
        change[stop] -= info.size_bytes
    live: list[int] = []
    running = 0
    for step, index in enumerate(order):
        running += change[step]
        live.append(running + graph.operators[index].scratch_bytes)
    return tuple(live)


def peak_live_bytes(graph: Graph, order: Sequence[int] | None = None) -> int:
    """The peak of live bytes when the operators run in `order` (program order by default)."""
    if order is None:
        order = range(len(graph.operators))
    return max(live_bytes_per_step(graph, order), default=0)
