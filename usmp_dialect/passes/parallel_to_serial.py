"""`usmp-parallel-to-serial`: `scf.parallel` loops become nested `scf.for` loops.

A buffer allocated inside a parallel loop would need one copy per concurrent iteration, which a
static plan (one offset per allocation) cannot express; run serially, every iteration can reuse
the same bytes (TVM's `ConvertForLoopsToSerial` does the same, for every parallel loop).

By default only the loops that need it are converted: those whose body (at any depth) allocates
a buffer (`usmp.allocate`, `memref.alloc`, `memref.alloca`) or calls a function that
(transitively) does. Constants (`usmp.allocate_const`) are read-only and do not force a loop
serial. With `all=true` every `scf.parallel` is converted.

The dimensions become loops nested in order (the first dimension outermost); the body is moved
unchanged into the innermost loop. A loop with reductions carries its accumulators as
`iter_args` of every loop of the nest, starting from the `scf.parallel` init values; each
`scf.reduce` region is inlined as the combiner (`lhs` = the accumulator, `rhs` = the value the
iteration reduces), which is the order MLIR's own lowering uses.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from usmp_dialect.dialects.usmp import AllocateOp

BUFFER_ALLOCATIONS = (AllocateOp, memref.AllocOp, memref.AllocaOp)


def allocating_functions(module: ModuleOp) -> frozenset[str]:
    """Names of the functions that allocate a buffer themselves or through their callees."""
    callers: dict[str, set[str]] = {}
    allocating: set[str] = set()
    for function in module.walk():
        if not isinstance(function, func.FuncOp):
            continue
        name = function.sym_name.data
        for op in function.walk():
            if isinstance(op, BUFFER_ALLOCATIONS):
                allocating.add(name)
            elif isinstance(op, func.CallOp):
                callers.setdefault(op.callee.root_reference.data, set()).add(name)
    pending = sorted(allocating)
    while pending:
        callee = pending.pop()
        for caller in sorted(callers.get(callee, ())):
            if caller not in allocating:
                allocating.add(caller)
                pending.append(caller)
    return frozenset(allocating)


def _allocates_inside(loop: scf.ParallelOp, allocating: frozenset[str]) -> bool:
    for op in loop.body.walk():
        if isinstance(op, BUFFER_ALLOCATIONS):
            return True
        if isinstance(op, func.CallOp) and op.callee.root_reference.data in allocating:
            return True
    return False


def _loop_nest(
    loop: scf.ParallelOp,
) -> tuple[list[scf.ForOp], Block, Sequence[SSAValue], list[SSAValue]]:
    """Builds the (empty, detached) `scf.for` nest for `loop`.

    Returns the loops (outermost first), the block the body goes into, the values that stand
    for the induction variables there, and the accumulators there.
    """
    accumulators: list[SSAValue] = list(loop.initVals)
    loops: list[scf.ForOp] = []
    induction_variables: list[SSAValue] = []
    innermost: Block | None = None
    for dimension, (lower, upper, step) in enumerate(
        zip(loop.lowerBound, loop.upperBound, loop.step, strict=True)
    ):
        block = Block(arg_types=[IndexType(), *(value.type for value in accumulators)])
        block.args[0].name_hint = loop.body.block.args[dimension].name_hint
        for_op = scf.ForOp(lower, upper, step, accumulators, block)
        # Accumulators are named after the results they become.
        for carried, loop_result, result in zip(block.args[1:], for_op.res, loop.res, strict=True):
            carried.name_hint = loop_result.name_hint = result.name_hint
        if innermost is not None:
            innermost.add_op(for_op)
            innermost.add_op(scf.YieldOp(*for_op.res))
        loops.append(for_op)
        induction_variables.append(block.args[0])
        accumulators = list(block.args[1:])
        innermost = block
    assert innermost is not None
    return loops, innermost, induction_variables, accumulators


@dataclass(frozen=True)
class ParallelToFor(RewritePattern):
    """One `scf.parallel` → a nest of `scf.for`, reductions carried as `iter_args`."""

    convert_all: bool
    allocating: frozenset[str]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, loop: scf.ParallelOp, rewriter: PatternRewriter) -> None:
        if not self.convert_all and not _allocates_inside(loop, self.allocating):
            return
        if loop.lowerBound:
            loops, body_block, induction_variables, accumulators = _loop_nest(loop)
            rewriter.insert(loops[0], InsertPoint.before(loop))
            # The innermost block is still empty: the body becomes its whole content.
            body_end = InsertPoint.at_end(body_block)
        else:
            # A zero-dimensional scf.parallel runs its body once, in place.
            loops, induction_variables, accumulators = [], [], list(loop.initVals)
            body_end = InsertPoint.before(loop)
        reduce_op = loop.body.block.last_op
        assert isinstance(reduce_op, scf.ReduceOp)
        rewriter.inline_block(loop.body.block, body_end, induction_variables)
        combined = [
            self._combine(region_block, accumulator, value, reduce_op, rewriter)
            for region_block, accumulator, value in zip(
                (region.block for region in reduce_op.reductions),
                accumulators,
                reduce_op.args,
                strict=True,
            )
        ]
        if loops:
            rewriter.replace(reduce_op, scf.YieldOp(*combined))
            rewriter.replace(loop, [], new_results=list(loops[0].res))
        else:
            rewriter.erase(reduce_op)
            rewriter.replace(loop, [], new_results=combined)

    @staticmethod
    def _combine(
        region_block: Block,
        accumulator: SSAValue,
        value: SSAValue,
        reduce_op: Operation,
        rewriter: PatternRewriter,
    ) -> SSAValue:
        """Inlines one reduction region before `reduce_op`; returns the combined value."""
        reduce_return = region_block.last_op
        assert isinstance(reduce_return, scf.ReduceReturnOp)
        rewriter.inline_block(region_block, InsertPoint.before(reduce_op), [accumulator, value])
        combined = reduce_return.result
        rewriter.erase(reduce_return)
        return combined


@dataclass(frozen=True)
class UsmpParallelToSerialPass(ModulePass):
    """Serialises the `scf.parallel` loops that allocate buffers (or all of them)."""

    name = "usmp-parallel-to-serial"

    all: bool = False
    """Convert every `scf.parallel`, not only those that allocate buffers inside."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [ParallelToFor(self.all, allocating_functions(op))], dce_enabled=False
            ),
            apply_recursively=False,
        ).rewrite_module(op)
