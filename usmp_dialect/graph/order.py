"""A memory-aware order of a graph's operators: the topological order with the lowest peak of
live bytes (plain data, no xDSL).

The planner reaches the peak of live bytes for the program it is given; which independent
operator runs first is the frontend's choice, and on graphs with branches (Inception, ResNet,
SqueezeNet's fire modules) another order can need less. The search runs on the *state* after
some operators have run: the set S of operators done (a downset of the dependency order).
What is live between two steps depends on S alone, and so does the live bytes while operator v
runs next, so the peak of an order is the largest step cost along a path from {} to all
operators in the lattice of downsets:

* **exact** (`node_budget` states, fewer on graphs of thousands of operators): a
  bottleneck-path Dijkstra over downsets (states popped by the best peak that reaches them),
  pruned at the best order known. A chain of branchy modules (Inception, ResNet) has few
  downsets: each module's states add up, they do not multiply. Once the optimal peak is
  known, a depth-first search takes, at every step, the ready operator earliest in program
  order that can still finish within it: the optimal order that stays closest to the
  program's.
* **heuristic** (beyond the budget): a beam search over the same states (the `beam_width`
  states of lowest peak, then fewest live bytes, at each depth; one state once `node_budget`
  transitions are spent), and the program order itself.

Deterministic: ties go to the operator earlier in program order, and the program order is kept
unless another order has a strictly lower peak (TinyEngine's and HMCOS's memory-aware
scheduling, Serenity's dynamic programming over downsets, for the same problem).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from usmp_dialect.graph.graph import Graph, accessed_buffers, dependencies, peak_live_bytes

DEFAULT_NODE_BUDGET = 200_000
"""States the exact search may expand before it gives up on proving optimality."""

DEFAULT_BEAM_WIDTH = 64

STATE_BITS_BUDGET = 1 << 26
"""The exact search keeps every state it reaches as a bitmask of the operators: on graphs of
thousands of operators its budget shrinks so that these stay within about this many bits."""


@dataclass(frozen=True)
class OrderResult:
    """A topological order of a graph's operators and what is known about it."""

    order: tuple[int, ...]
    peak_bytes: int
    program_peak_bytes: int
    """The peak in program order (`order == range(n)`)."""
    lower_bound_bytes: int
    """The largest step any order has (an operator's own buffers and scratch)."""
    proven_optimal: bool
    method: str
    """`program` (program order kept), `exact` or `heuristic`."""

    @property
    def changed(self) -> bool:
        return self.order != tuple(range(len(self.order)))


class _States:
    """The graph as bitmasks, and the cost of running one operator from a state."""

    def __init__(self, graph: Graph):
        operators = graph.operators
        self.count = len(operators)
        self.full = (1 << self.count) - 1
        self.predecessors = [0] * self.count
        self.successors: list[list[int]] = [[] for _ in operators]
        for index, before in enumerate(dependencies(graph)):
            for predecessor in before:
                self.predecessors[index] |= 1 << predecessor
                self.successors[predecessor].append(index)
        accessors = [0] * len(graph.buffers)
        self.touched: list[tuple[int, ...]] = []
        for index, operator in enumerate(operators):
            counted = tuple(b for b in accessed_buffers(operator) if graph.buffers[b].counted)
            self.touched.append(counted)
            for buffer in counted:
                accessors[buffer] |= 1 << index
        self.accessors = accessors
        self.size = [buffer.size_bytes for buffer in graph.buffers]
        self.is_input = [buffer.kind == "input" for buffer in graph.buffers]
        self.is_output = [buffer.kind == "output" for buffer in graph.buffers]
        self.scratch = [operator.scratch_bytes for operator in operators]
        self.start_resident = sum(
            buffer.size_bytes
            for index, buffer in enumerate(graph.buffers)
            if buffer.counted and buffer.kind == "input" and accessors[index]
        )
        self.start_ready = tuple(i for i in range(self.count) if not self.predecessors[i])

    def step(self, done: int, resident: int, operator: int) -> tuple[int, int]:
        """(live bytes while `operator` runs after `done`, bytes resident after it)."""
        new = 0
        freed = 0
        after = done | (1 << operator)
        for buffer in self.touched[operator]:
            mask = self.accessors[buffer]
            if not self.is_input[buffer] and not mask & done:
                new += self.size[buffer]
            if not self.is_output[buffer] and mask & after == mask:
                freed += self.size[buffer]
        return resident + new + self.scratch[operator], resident + new - freed

    def ready_after(self, ready: tuple[int, ...], done: int, operator: int) -> tuple[int, ...]:
        """The ready operators once `operator` (ready in state `done`) has run, sorted."""
        after = done | (1 << operator)
        released = [
            successor
            for successor in self.successors[operator]
            if self.predecessors[successor] & after == self.predecessors[successor]
        ]
        return tuple(sorted([r for r in ready if r != operator] + released))

    def lower_bound(self) -> int:
        return max(
            (
                sum(self.size[b] for b in self.touched[v]) + self.scratch[v]
                for v in range(self.count)
            ),
            default=0,
        )


def memory_aware_order(
    graph: Graph,
    node_budget: int = DEFAULT_NODE_BUDGET,
    beam_width: int = DEFAULT_BEAM_WIDTH,
) -> OrderResult:
    """The topological order of `graph`'s operators with the lowest peak of live bytes found
    (see the module doc); the program order when no order is strictly better."""
    states = _States(graph)
    program = tuple(range(states.count))
    program_peak = peak_live_bytes(graph, program)
    bound = max(states.lower_bound(), states.start_resident)
    if program_peak <= bound:
        return OrderResult(program, program_peak, program_peak, bound, True, "program")
    best_order, best_peak = program, program_peak
    beam_order = _beam_search(states, beam_width, node_budget)
    beam_peak = peak_live_bytes(graph, beam_order)
    if beam_peak < best_peak:
        best_order, best_peak = beam_order, beam_peak
    proven = best_peak <= bound
    if not proven:
        exact_budget = min(node_budget, STATE_BITS_BUDGET // max(states.count, 1))
        exact = _bottleneck_search(states, best_peak, exact_budget)
        if exact is not None:
            proven = True
            optimal_peak, path = exact
            if path is not None:
                best_order, best_peak = path, optimal_peak
    if best_peak == program_peak:
        return OrderResult(program, program_peak, program_peak, bound, proven, "program")
    # Of the orders within the best peak, the one closest to the program's.
    closest = _closest_to_program(states, best_peak, node_budget)
    if closest is not None:
        best_order = closest
    best_peak = peak_live_bytes(graph, best_order)
    method = "exact" if proven else "heuristic"
    return OrderResult(best_order, best_peak, program_peak, bound, proven, method)


def _bottleneck_search(
    states: _States, above: int, node_budget: int
) -> tuple[int, tuple[int, ...] | None] | None:
    """The optimal peak when it is below `above`, with an order reaching it; `(above, None)`
    when no order is below `above`; None when the budget ran out first."""
    # Heap entries: (peak so far, -operators done, done mask); more progress first on ties.
    start = (states.start_resident, 0, 0)
    best: dict[int, int] = {0: states.start_resident}
    came_from: dict[int, tuple[int, int]] = {}
    resident: dict[int, int] = {0: states.start_resident}
    ready: dict[int, tuple[int, ...]] = {0: states.start_ready}
    heap = [start]
    expanded = 0
    while heap:
        peak, _negative_done, done = heapq.heappop(heap)
        if peak > best[done]:
            continue
        if done == states.full:
            return peak, _path(came_from, done)
        expanded += 1
        if expanded > node_budget:
            return None
        for operator in ready[done]:
            step_peak, after_resident = states.step(done, resident[done], operator)
            new_peak = max(peak, step_peak)
            if new_peak >= above:
                continue
            after = done | (1 << operator)
            if new_peak < best.get(after, above):
                best[after] = new_peak
                came_from[after] = (done, operator)
                resident[after] = after_resident
                ready[after] = states.ready_after(ready[done], done, operator)
                heapq.heappush(heap, (new_peak, -after.bit_count(), after))
    return above, None


def _path(came_from: dict[int, tuple[int, int]], done: int) -> tuple[int, ...]:
    order: list[int] = []
    while done:
        done, operator = came_from[done]
        order.append(operator)
    return tuple(reversed(order))


def _closest_to_program(states: _States, peak: int, node_budget: int) -> tuple[int, ...] | None:
    """The order within `peak` that takes, at every step, the ready operator earliest in
    program order from which all operators can still run within `peak` (None past the budget).
    A depth-first search remembering the states from which no order stays within `peak`."""
    dead: set[int] = set()
    # Frames: (done mask, resident bytes, ready operators, next candidate position).
    stack: list[tuple[int, int, tuple[int, ...], int]] = [
        (0, states.start_resident, states.start_ready, 0)
    ]
    order: list[int] = []
    expanded = 0
    while stack:
        done, resident, ready, position = stack[-1]
        if done == states.full:
            return tuple(order)
        advanced = False
        while position < len(ready):
            operator = ready[position]
            position += 1
            after = done | (1 << operator)
            if after in dead:
                continue
            step_peak, after_resident = states.step(done, resident, operator)
            if step_peak > peak:
                continue
            expanded += 1
            if expanded > node_budget:
                return None
            stack[-1] = (done, resident, ready, position)
            stack.append((after, after_resident, states.ready_after(ready, done, operator), 0))
            order.append(operator)
            advanced = True
            break
        if not advanced:
            dead.add(done)
            stack.pop()
            if order:
                order.pop()
    return None


def _beam_search(states: _States, beam_width: int, transition_budget: int) -> tuple[int, ...]:
    """A good order for graphs too large for the exact search: at each depth, the
    `beam_width` states with the lowest peak so far, then the fewest bytes resident (then the
    operators done earliest in program order). Past `transition_budget` transitions the beam
    narrows to one state (a greedy choice), so wide graphs of thousands of operators stay fast."""
    # Entries: (peak so far, resident bytes, done mask, ready, index of parent, operator).
    Entry = tuple[int, int, int, tuple[int, ...], int, int]
    layers: list[list[Entry]] = [
        [(states.start_resident, states.start_resident, 0, states.start_ready, -1, -1)]
    ]
    transitions = 0
    for _depth in range(states.count):
        successors: dict[int, Entry] = {}
        for parent, (peak, resident, done, ready, _grandparent, _operator) in enumerate(layers[-1]):
            for operator in ready:
                transitions += 1
                step_peak, after_resident = states.step(done, resident, operator)
                after = done | (1 << operator)
                candidate = (max(peak, step_peak), after_resident, after, (), parent, operator)
                known = successors.get(after)
                if known is None or candidate[:2] < known[:2]:
                    successors[after] = candidate
        width = beam_width if transitions <= transition_budget else 1
        kept = sorted(successors.values(), key=lambda entry: entry[:3])[:width]
        layer: list[Entry] = []
        for peak, resident, after, _ready, parent, operator in kept:
            parent_entry = layers[-1][parent]
            ready = states.ready_after(parent_entry[3], parent_entry[2], operator)
            layer.append((peak, resident, after, ready, parent, operator))
        layers.append(layer)
    order: list[int] = []
    index = 0
    for layer in reversed(layers[1:]):
        _peak, _resident, _done, _ready, index, operator = layer[index]
        order.append(operator)
    return tuple(reversed(order))
