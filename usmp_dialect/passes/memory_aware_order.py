"""`usmp-memory-aware-order`: runs the entry function's independent operators in the order
that needs the fewest live bytes (SPEC §12).

```
usmp-memory-aware-order{entry=main}
```

The entry function becomes a graph of operators reading and writing buffers
(`usmp_dialect.analysis.operator_graph`); `usmp_dialect.graph.order` chooses the topological
order with the lowest peak of live bytes (exact for graphs whose states fit its budget, a beam
search beyond). When that peak is strictly lower than the program order's, the entry block's
operators are moved into the new order, each taking along the allocations, views and constants
it uses that no earlier operator has used (placed just before it, in their original order, so
SSA values still dominate their uses and a view is taken where the program order would have
taken it). Otherwise the IR is left exactly as it was. Every dependency through memory (a read
after a write, a write after a read or a write of the same bytes, in-place writes) and through
SSA values is kept, so every operator computes the same bytes: the outputs are bit-exact.

An entry function whose body is several blocks is left alone. The `usmp` pipeline runs this
pass by default (`order=memory`; `order=program` keeps the frontend's order).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from usmp_dialect.analysis.buffer_info import AnalysisError
from usmp_dialect.analysis.operator_graph import operator_graph
from usmp_dialect.graph.order import memory_aware_order
from usmp_dialect.passes.extract_buffer_info import raise_analysis_error


@dataclass(frozen=True)
class UsmpMemoryAwareOrderPass(ModulePass):
    """Reorders the entry function's operators when another order lowers the peak."""

    name = "usmp-memory-aware-order"

    entry: str = "main"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            described = operator_graph(op, self.entry)
        except AnalysisError as error:
            raise_analysis_error(error)
        if described is None:
            return
        result = memory_aware_order(described.graph)
        if not result.changed:
            return
        reorder_block(described.block, [described.operations[i] for i in result.order])


def reorder_block(block: Block, operators: list[Operation]) -> None:
    """Moves `operators` (ops of `block`) into the given order; every other op of the block
    goes just before the first op that uses it (or where it was, after the operators, if
    nothing does), the terminator last."""
    original = list(block.ops)
    position = {op: index for index, op in enumerate(original)}
    placed: set[Operation] = set()
    sequence: list[Operation] = []

    def definers(op: Operation) -> list[Operation]:
        """The ops of `block` that define values `op` (or an op nested in it) uses."""
        found: set[Operation] = set()
        for nested in op.walk():
            for operand in nested.operands:
                owner = operand.owner
                if isinstance(owner, Operation) and owner in position and owner is not op:
                    found.add(owner)
        return sorted(found, key=position.__getitem__)

    def place(op: Operation) -> None:
        if op in placed:
            return
        # Depth first through the definers, iteratively (chains of views can be long).
        stack: list[tuple[Operation, list[Operation]]] = [(op, definers(op))]
        while stack:
            current, pending = stack[-1]
            while pending and pending[0] in placed:
                pending.pop(0)
            if pending:
                definer = pending.pop(0)
                stack.append((definer, definers(definer)))
                continue
            stack.pop()
            if current not in placed:
                placed.add(current)
                sequence.append(current)

    for op in operators:
        place(op)
    for op in original:
        place(op)
    if sequence == original:
        return
    for op in sequence:
        block.detach_op(op)
        block.add_op(op)
