"""Which fused groups to apply: the cheapest set whose peak of live bytes fits a budget (plain
data, no IR).

The candidates are groups of operators (`graph.streaming`: the contiguous parts of the chains),
each with the scratch it needs while it runs (line buffers, sums) and the instructions it adds
(`graph.stream_cost`). Fusing a group makes it one step of the program. A selection is a set of
candidates no two of which share an operator.

The peak of a selection decomposes: a candidate covers consecutive operators and every tensor
inside it is read only inside it, so the bytes live while an operator outside every chosen
group runs do not depend on the selection, and the bytes live while a chosen group runs depend
on that group alone. A selection fits a limit exactly when every unfused operator's and every
chosen group's own live bytes do, so the cheapest fitting selection is a shortest path along
the program (`_cheapest`: one pass over the operators), and the lowest reachable peak is the
smallest limit some selection fits (a binary search over the distinct step values). Both are
exact for this model of liveness (`graph.graph.live_bytes_per_step`: a tensor live from its
producer to its last reader, model inputs from the start, outputs to the end).

`outside` names tensors the workspace does not hold (the model's inputs and outputs when they
are the caller's, U1): they count for nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from usmp_dialect.graph.graph import Access, Buffer, Graph, Operator, live_bytes_per_step
from usmp_dialect.graph.stream_cost import group_cost
from usmp_dialect.graph.streaming import (
    Group,
    LineBuffer,
    StreamGraph,
    candidate_groups,
    group_scratch_bytes,
    schedule,
    writable_input,
)


@dataclass(frozen=True)
class Candidate:
    """A group that may be fused: consecutive operators (indices in program order), the scratch
    bytes it needs while it runs and the instructions it adds (`graph.stream_cost`)."""

    operators: tuple[int, ...]
    scratch_bytes: int
    cost_instructions: int
    over: int | None = None
    """The input tensor whose bytes the group writes its output over (`Group.over`)."""


@dataclass(frozen=True)
class Selection:
    """The chosen candidates (indices into the candidate list, in program order), the peak of
    live bytes with them fused and their added instructions."""

    chosen: tuple[int, ...]
    peak_bytes: int
    cost_instructions: int


def fused_graph(
    graph: StreamGraph, groups: Sequence[Candidate], outside: frozenset[int] = frozenset()
) -> tuple[Graph, tuple[tuple[int, ...], ...]]:
    """The program with each group as one operator (reading what its members read from outside
    it, writing what they write that is read outside it or pinned, its scratch live while it
    runs), and per step the model operators it runs. A group written over its input (`over`)
    writes its output into the input's buffer, where its readers then read it: that buffer
    stays live until the output's last reader."""
    fused = {index: group for group in groups for index in group.operators}
    buffers = tuple(
        Buffer(tensor.name, tensor.size_bytes, planned=index not in outside)
        for index, tensor in enumerate(graph.tensors)
    )
    readers: dict[int, set[int]] = {}
    for index, op in enumerate(graph.operators):
        for tensor in op.inputs:
            readers.setdefault(tensor, set()).add(index)
    home = {
        graph.operators[group.operators[-1]].outputs[0]: group.over
        for group in groups
        if group.over is not None
    }

    def whole(tensors: Sequence[int]) -> tuple[Access, ...]:
        return tuple(
            Access(home.get(t, t), 0, graph.tensors[t].size_bytes) for t in sorted(set(tensors))
        )

    operators: list[Operator] = []
    steps: list[tuple[int, ...]] = []
    index = 0
    while index < len(graph.operators):
        group = fused.get(index)
        if group is None:
            op = graph.operators[index]
            operators.append(Operator(op.name, whole(op.inputs), whole(op.outputs)))
            steps.append((index,))
            index += 1
            continue
        members = set(group.operators)
        written = {t for i in group.operators for t in graph.operators[i].outputs}
        reads = [t for i in group.operators for t in graph.operators[i].inputs if t not in written]
        writes = [
            t for t in written if graph.tensors[t].pinned or not readers.get(t, set()) <= members
        ]
        operators.append(
            Operator(
                graph.operators[group.operators[0]].name,
                whole(reads),
                whole(writes),
                scratch_bytes=group.scratch_bytes,
            )
        )
        steps.append(group.operators)
        index = group.operators[-1] + 1
    return Graph(buffers, tuple(operators)), tuple(steps)


def peak_bytes(
    graph: StreamGraph, groups: Sequence[Candidate], outside: frozenset[int] = frozenset()
) -> int:
    """The peak of live bytes with `groups` fused."""
    program, _ = fused_graph(graph, groups, outside)
    return max(live_bytes_per_step(program, range(len(program.operators))), default=0)


def _contiguous(candidate: Candidate) -> bool:
    first, last = candidate.operators[0], candidate.operators[-1]
    return candidate.operators == tuple(range(first, last + 1))


def _reach(graph: StreamGraph, candidate: Candidate) -> int:
    """The operator after the last one whose live bytes depend on `candidate` alone: the
    group's end, or, written over its input, its output's last reader (the input's buffer
    lives until then)."""
    stop = candidate.operators[-1] + 1
    if candidate.over is None:
        return stop
    output = graph.operators[candidate.operators[-1]].outputs[0]
    for index in range(stop, len(graph.operators)):
        if output in graph.operators[index].inputs:
            stop = index + 1
    return stop


def _step_bytes(
    graph: StreamGraph, candidates: Sequence[Candidate], outside: frozenset[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The live bytes of every operator unfused, and of every candidate fused alone: while it
    runs, and, written over its input, while the operators up to its reach run (unfused)."""
    plain, _ = fused_graph(graph, (), outside)
    base = live_bytes_per_step(plain, range(len(plain.operators)))
    own: list[int] = []
    for candidate in candidates:
        program, steps = fused_graph(graph, (candidate,), outside)
        live = live_bytes_per_step(program, range(len(program.operators)))
        first, reach = candidate.operators[0], _reach(graph, candidate)
        own.append(
            max(
                bytes_
                for bytes_, members in zip(live, steps, strict=True)
                if first <= members[0] < reach
            )
        )
    return base, tuple(own)


def _cheapest(
    base: Sequence[int],
    candidates: Sequence[Candidate],
    own: Sequence[int],
    limit: int,
    reach: Sequence[int] | None = None,
) -> tuple[int, ...] | None:
    """The cheapest selection (fewest added instructions, then fewest groups, then the earliest)
    whose every step fits `limit`; None when none does. A candidate covers the operators from
    its first to its `reach` (default: its last), the ones after the group unfused."""
    count = len(base)
    stops = [candidate.operators[-1] + 1 for candidate in candidates] if reach is None else reach
    starting: dict[int, list[int]] = {}
    for position, candidate in enumerate(candidates):
        starting.setdefault(candidate.operators[0], []).append(position)
    # best[p]: the cheapest way to run operators [0, p) within the limit.
    best: list[tuple[int, int, tuple[int, ...]] | None] = [None] * (count + 1)
    best[0] = (0, 0, ())

    def relax(position: int, entry: tuple[int, int, tuple[int, ...]]) -> None:
        current = best[position]
        if current is None or entry < current:
            best[position] = entry

    for position in range(count):
        entry = best[position]
        if entry is None:
            continue
        cost, groups, chosen = entry
        if base[position] <= limit:
            relax(position + 1, entry)
        for candidate in starting.get(position, []):
            if own[candidate] <= limit:
                relax(
                    stops[candidate],
                    (
                        cost + candidates[candidate].cost_instructions,
                        groups + 1,
                        (*chosen, candidate),
                    ),
                )
    final = best[count]
    return None if final is None else final[2]


def select(
    graph: StreamGraph,
    candidates: Sequence[Candidate],
    budget_bytes: int | None = None,
    outside: frozenset[int] = frozenset(),
) -> tuple[Selection, bool]:
    """The cheapest selection whose peak fits `budget_bytes` and True; when no selection fits
    (or without a budget), the cheapest of those reaching the lowest peak, and whether that
    fits. Non-contiguous candidates are left out (the decomposition needs consecutive
    operators)."""
    positions = [
        position
        for position, candidate in enumerate(candidates)
        if len(candidate.operators) > 1 and _contiguous(candidate)
    ]
    usable = [candidates[position] for position in positions]
    base, own = _step_bytes(graph, usable, outside)
    reach = [_reach(graph, candidate) for candidate in usable]
    chosen = _cheapest(base, usable, own, budget_bytes, reach) if budget_bytes is not None else None
    fits = chosen is not None
    if chosen is None:
        levels = sorted(set(base) | set(own))
        low, high = 0, len(levels) - 1  # the highest level always fits: nothing fused
        while low < high:
            middle = (low + high) // 2
            if _cheapest(base, usable, own, levels[middle], reach) is None:
                low = middle + 1
            else:
                high = middle
        lowest = levels[low] if levels else 0  # no operators: nothing is live
        chosen = _cheapest(base, usable, own, lowest, reach) or ()
        fits = budget_bytes is None or lowest <= budget_bytes
    picked = [usable[c] for c in chosen]
    selection = Selection(
        tuple(positions[c] for c in chosen),
        peak_bytes(graph, picked, outside),
        sum(c.cost_instructions for c in picked),
    )
    return selection, fits


@dataclass(frozen=True)
class PeakFacts:
    """What sets a program's peak: the operators of the step at the peak and the tensors live
    then (indices), for a one-line diagnostic."""

    peak_bytes: int
    operators: tuple[int, ...]
    tensors: tuple[int, ...]


def peak_facts(
    graph: StreamGraph, groups: Sequence[Candidate], outside: frozenset[int] = frozenset()
) -> PeakFacts:
    """The first step at the peak of live bytes with `groups` fused, and what is live then."""
    program, steps = fused_graph(graph, groups, outside)
    live = live_bytes_per_step(program, range(len(program.operators)))
    if not live:
        return PeakFacts(0, (), ())
    step = live.index(max(live))
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for position, op in enumerate(program.operators):
        for access in (*op.reads, *op.writes):
            first.setdefault(access.buffer, position)
            last[access.buffer] = position
    tensors = tuple(
        tensor
        for tensor in sorted(first)
        if program.buffers[tensor].planned and first[tensor] <= step <= last[tensor]
    )
    return PeakFacts(max(live), steps[step], tensors)


@dataclass(frozen=True)
class StreamChoice:
    """The fused groups chosen, whether their peak fits the budget (always without one), and
    what sets that peak."""

    groups: list[Group]
    fits: bool
    peak: PeakFacts
    cost_instructions: int


def choose_stream_groups(
    graph: StreamGraph,
    budget_bytes: int | None = None,
    outside: frozenset[int] = frozenset(),
    lowest: bool = False,
) -> StreamChoice:
    """The groups to fuse. Without a budget (or with `lowest`): the cheapest set reaching the
    lowest peak. With `budget_bytes`: the cheapest set whose peak fits it, or, when none does,
    the lowest-peak set (`fits` False). `outside`: tensors the workspace does not hold."""
    groups = candidate_groups(graph)
    buffers: dict[tuple[int, ...], list[LineBuffer]] = {}
    candidates: list[Candidate] = []
    for group in groups:
        plan = schedule(graph, group)
        scratch, buffers[group] = group_scratch_bytes(graph, group, plan)
        cost = group_cost(graph, group, plan).instructions
        candidates.append(Candidate(group, scratch, cost))
        # The same group writing its output over its input: fewer bytes while it runs, its
        # input's bytes live until the output's last reader (never the caller's bytes).
        over = writable_input(graph, group, plan)
        if over is not None and over not in outside:
            candidates.append(Candidate(group, scratch, cost, over))
    budget = None if lowest else budget_bytes
    selection, fits = select(graph, candidates, budget, outside)
    if lowest and budget_bytes is not None:
        fits = selection.peak_bytes <= budget_bytes
    picked = [candidates[position] for position in selection.chosen]
    result: list[Group] = []
    for candidate in picked:
        others = [other for other in picked if other is not candidate]
        saved = peak_bytes(graph, others, outside) - selection.peak_bytes
        result.append(
            Group(
                candidate.operators,
                tuple(buffers[candidate.operators]),
                candidate.scratch_bytes,
                saved,
                candidate.over,
            )
        )
    return StreamChoice(
        result, fits, peak_facts(graph, picked, outside), selection.cost_instructions
    )


__all__ = [
    "Candidate",
    "PeakFacts",
    "Selection",
    "StreamChoice",
    "choose_stream_groups",
    "fused_graph",
    "peak_bytes",
    "peak_facts",
    "select",
]
