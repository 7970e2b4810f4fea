"""Control flow: IF and WHILE, which run other subgraphs of the model, as TFLM runs them
(`kernels/if.cc`, `kernels/while.cc`), in `@main` as `scf.if` / `scf.while` (SPEC §9).

A subgraph is imported by its own `TfliteImporter` (its `parent` the importer of the graph
holding the operator), emitting into the same module and `@main`, at the operator's region:
its operators are imported by their usual handlers (functions named `<op>_sg<k>_<index>`),
its tensors are buffers allocated in the region, so the planner sees them live within one
branch or one iteration only. Values cross the boundary by `memref.copy`, as TFLM copies them
(but where a copy provably changes nothing, below):

* IF: the condition (input 0, one bool) is loaded; the active branch's inputs receive the
  operator's other inputs, its outputs are copied into the operator's. TFLM's intermediate
  copies (its subgraphs are planned apart and may overlap) are not needed: here every tensor
  of every subgraph is a buffer of one plan.
* WHILE: the operator's inputs are copied into its outputs (the loop variables); each turn
  copies them into the condition subgraph's inputs and runs it (`scf.while`'s before
  region: its output 0, one bool, decides), then into the body's inputs, runs the body and
  copies its outputs back into the loop variables (the after region). The condition runs
  once more than the body, as in TFLM.

Copies left out (with in-place operators, `--in-place` not `none`): a subgraph input no
operator of the subgraph writes (nor, in a WHILE body, one of its outputs) is its operand's
buffer; an IF branch's operator writes the branch's output straight into the IF's output.
An IF on a constant condition, or running one subgraph either way, runs that branch in line.
A constant operand of an IF is a constant of the branch (folded into it, never copied); a
constant initial value of a WHILE's loop variable is copied from its `memref.global`. The
operand and the subgraph tensor it meets must have one element type and element count (TFLM
checks the bytes); shapes may differ (a view). The subgraphs' operators never stream (fused
row streaming stays in subgraph 0, where the IF or WHILE is an opaque operator).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from usmp_dialect.analysis.buffer_info import ALIAS_OPS
from usmp_dialect.dialects.usmp import TENSOR_ATTRIBUTE
from usmp_dialect.frontends.tflite.importer import (
    KNOWN_ACTIVATION_TYPES,
    OperatorContext,
    TfliteImporter,
    operator,
)
from usmp_dialect.frontends.tflite.reader import Graph, Operator, Tensor, branches


def _child(context: OperatorContext, index: int) -> TfliteImporter:
    """The importer of subgraph `index`, emitting at `@main`'s current insertion point."""
    parent = context.importer
    options = replace(parent.options, fuse="none")
    child = TfliteImporter(parent.top.graph.subgraph(index), options, parent=parent)
    child.main = parent.main
    label = f"{context.op.opcode} {context.op.index}"
    child.label = f"{parent.label} > {label}" if parent.label else label
    return child


def _check_pair(context: OperatorContext, ours: Tensor, theirs: Tensor, what: str) -> None:
    """The operand `ours` and the subgraph tensor `theirs` hold the same bytes (TFLM's
    check: one element type and count; a loop variable keeps its type and size)."""
    loop = context.op.opcode == "WHILE"
    same_count = int(np.prod(ours.shape)) == int(np.prod(theirs.shape))
    if ours.dtype != theirs.dtype or not same_count:
        raise context.fail(
            f"{what} {theirs.describe()} of type {theirs.dtype.name} shape {list(theirs.shape)} "
            f"does not match {ours.describe()} of type {ours.dtype.name} shape "
            f"{list(ours.shape)}{' (a loop variable keeps its type and size)' if loop else ''}"
        )


def _load_flag(context: OperatorContext, graph: Graph, value: SSAValue, tensor: Tensor) -> SSAValue:
    """The one bool of `tensor` (TFLM reads `data.b[0]`), loaded from `value`."""
    if tensor.dtype != np.dtype(np.bool_) or int(np.prod(tensor.shape)) != 1:
        raise context.fail(
            f"the condition {tensor.describe()} of subgraph {graph.index} must be one bool, "
            f"not {tensor.dtype.name} of shape {list(tensor.shape)}"
        )
    main = context.importer.main
    zero = main.index(0)
    return main.insert(memref.LoadOp.get(value, [zero] * len(tensor.shape)))


Source = SSAValue | np.ndarray  # an activation's buffer, or a constant's value


def _inputs(
    child: TfliteImporter,
    context: OperatorContext,
    sources: list[Source],
    operands: list[Tensor],
    read_back: bool = False,
) -> None:
    """The subgraph's inputs, receiving `sources`: a constant's value is folded into the
    subgraph; an input no operator of the subgraph writes is the source itself (a view, no
    copy: nothing writes the source while the subgraph runs, and the subgraph's in-place
    operators never write over a buffer it did not allocate); any other input is a buffer
    allocated at the insertion point and a copy. `read_back`: the subgraph's outputs are
    copied into the sources after it ran (a WHILE body), so an input that is also an output
    is copied too (a later copy back could read a source already overwritten)."""
    graph = child.graph
    written = {index for op in graph.operators for index in op.outputs}
    if read_back:
        written.update(graph.outputs)
    if len(graph.inputs) != len(operands):
        raise context.fail(
            f"subgraph {graph.index} has {len(graph.inputs)} inputs, the operator passes "
            f"{len(operands)}"
        )
    for index, source, operand in zip(graph.inputs, sources, operands, strict=True):
        tensor = graph.tensors[index]
        _check_pair(context, operand, tensor, f"subgraph {graph.index}'s input")
        if isinstance(source, np.ndarray):
            child.folded[index] = source.reshape(tensor.shape)
            continue
        if index not in written and child.options.in_place != "none":
            child.values[index] = child.reshaped(source, tensor.shape)
            continue
        buffer = child.output_buffer(tensor)
        child.main.insert(memref.CopyOp(child.reshaped(source, tensor.shape), buffer))


def _write_into(child: TfliteImporter, targets: list[SSAValue]) -> None:
    """An IF branch's operators write each output straight into the IF's output buffer (a
    view, no copy) when an operator of the branch produces it: nothing in the branch reads
    that buffer (it is the IF's fresh output), and its in-place operators never write over a
    buffer the branch did not allocate. (A WHILE body may not: its loop variables are still
    read while it runs.) An operator choosing to write in place elsewhere leaves a copy."""
    graph = child.graph
    if child.options.in_place == "none":
        return
    produced = {index for op in graph.operators for index in op.outputs}
    for index, target in zip(graph.outputs, targets, strict=False):
        if index in produced and index not in graph.inputs and child.placed(index) is None:
            child.place(index, child.reshaped(target, graph.tensors[index].shape))


def _output(child: TfliteImporter, context: OperatorContext, position: int) -> SSAValue:
    """The buffer of the subgraph's output `position`, once its operators ran."""
    graph = child.graph
    index = graph.outputs[position]
    if index in child.values:
        return child.values[index]
    tensor = graph.tensors[index]
    value = child.constant_value(tensor)
    if value is None:
        raise context.fail(
            f"no operator of subgraph {graph.index} writes its output {tensor.describe()}"
        )
    symbol = child.module.constant(child.names(tensor.name, "constant"), value)
    return child.main.get_global(*symbol)


def _outputs(
    child: TfliteImporter,
    context: OperatorContext,
    targets: list[SSAValue],
    outputs: list[Tensor],
    what: str = "output",
) -> None:
    """Copies the subgraph's outputs into `targets` (the operator's `outputs`); `what` names
    them in errors. An output that is a view of a target (a WHILE body's RESHAPE of an input
    that is its loop variable's buffer) is first copied aside: an earlier copy may overwrite
    that target (a body swapping two loop variables)."""
    graph = child.graph
    if len(graph.outputs) != len(outputs):
        raise context.fail(
            f"subgraph {graph.index} has {len(graph.outputs)} outputs, the operator has "
            f"{len(outputs)}"
        )
    sources = [_output(child, context, position) for position in range(len(outputs))]
    roots = {_root(target) for target in targets}
    for position, source in enumerate(sources):
        placed = source is child.placed(graph.outputs[position])
        if _root(source) in roots and source not in targets[position : position + 1] and not placed:
            aside = memref.AllocOp([], [], source.type)
            aside.attributes[TENSOR_ATTRIBUTE] = StringAttr(
                graph.tensors[graph.outputs[position]].name
            )
            child.main.insert(aside)
            aside.memref.name_hint = child.names(
                f"{graph.tensors[graph.outputs[position]].name}_aside"
            )
            child.main.insert(memref.CopyOp(source, aside.memref))
            sources[position] = aside.memref
    for position, (source, target, output) in enumerate(
        zip(sources, targets, outputs, strict=True)
    ):
        tensor = graph.tensors[graph.outputs[position]]
        _check_pair(context, output, tensor, f"subgraph {graph.index}'s {what}")
        if source is child.placed(tensor.index) and position == graph.outputs.index(tensor.index):
            continue  # written there by its operator (`_write_into`)
        child.main.insert(memref.CopyOp(child.reshaped(source, output.shape), target))


def _root(value: SSAValue) -> SSAValue:
    """The buffer `value` views (through reshapes, casts and views), or `value` itself."""
    while isinstance(value.owner, Operation) and value.owner.name in ALIAS_OPS:
        value = value.owner.operands[0]
    return value


def _operands(context: OperatorContext, positions: range) -> tuple[list[Source], list[Tensor]]:
    """The inputs at `positions` (an activation's buffer or a constant's value) and their
    tensors."""
    values: list[Source] = []
    tensors: list[Tensor] = []
    for position in positions:
        tensors.append(context.tensor(position))
        constant = context.is_constant(position)
        values.append(context.constant(position) if constant else context.value(position))
    return values, tensors


def _subgraphs(op: Operator) -> tuple[int, int]:
    indices = branches(op)
    assert indices is not None
    return indices[0], indices[1]


def _branch(
    context: OperatorContext,
    index: int,
    sources: list[Source],
    operands: list[Tensor],
    targets: list[SSAValue],
    outputs: list[Tensor],
) -> None:
    """Runs IF branch `index` at `@main`'s insertion point."""
    child = _child(context, index)
    _inputs(child, context, sources, operands)
    _write_into(child, targets)
    child.emit_operators()
    _outputs(child, context, targets, outputs)


@operator("IF", types=KNOWN_ACTIVATION_TYPES)
def if_(context: OperatorContext) -> None:
    """`scf.if` on the loaded condition; a constant condition, or one subgraph for both
    branches, runs the one branch that can run in line."""
    op, main = context.op, context.importer.main
    then, other = _subgraphs(op)
    sources, operands = _operands(context, range(1, len(op.inputs)))
    outputs = [context.tensor(position, output=True) for position in range(len(op.outputs))]
    targets = [context.result(position) for position in range(len(op.outputs))]
    condition = context.tensor(0)
    if context.is_constant(0) or then == other:
        if context.is_constant(0):
            value = context.constant(0)
            if value.dtype != np.dtype(np.bool_) or value.size != 1:
                raise context.fail(f"the condition {condition.describe()} must be one bool")
            then = then if bool(value.reshape(-1)[0]) else other
        _branch(context, then, sources, operands, targets, outputs)
        return
    flag = _load_flag(context, context.graph, context.value(0), condition)
    regions: list[Region] = []
    for index in (then, other):
        block = Block()
        saved = main.builder
        main.builder = Builder(InsertPoint.at_end(block))
        try:
            _branch(context, index, sources, operands, targets, outputs)
            main.insert(scf.YieldOp())
        finally:
            main.builder = saved
        regions.append(Region(block))
    main.insert(scf.IfOp(flag, [], regions[0], regions[1]))


@operator("WHILE", types=KNOWN_ACTIVATION_TYPES)
def while_(context: OperatorContext) -> None:
    op, importer = context.op, context.importer
    main = importer.main
    count = len(op.inputs)
    if len(op.outputs) != count:
        raise context.fail(f"{count} inputs but {len(op.outputs)} outputs")
    sources, operands = _operands(context, range(count))
    outputs = [context.tensor(position, output=True) for position in range(count)]
    for operand, output in zip(operands, outputs, strict=True):
        same_count = int(np.prod(operand.shape)) == int(np.prod(output.shape))
        if not same_count or operand.dtype != output.dtype:
            raise context.fail(
                f"the loop variable {output.describe()} changes shape or type: "
                f"{operand.dtype.name} {list(operand.shape)} in, "
                f"{output.dtype.name} {list(output.shape)} out"
            )
    # The loop variables: the operator's outputs, holding its inputs first.
    variables = [context.result(position) for position in range(count)]
    for source, operand, output, variable in zip(
        sources, operands, outputs, variables, strict=True
    ):
        if isinstance(source, np.ndarray):
            symbol = importer.module.constant(importer.names(operand.name, "constant"), source)
            source = main.get_global(*symbol)
        main.insert(memref.CopyOp(importer.reshaped(source, output.shape), variable))
    cond_index, body_index = _subgraphs(op)
    before, after = Block(), Block()
    saved = main.builder
    try:
        main.builder = Builder(InsertPoint.at_end(before))
        cond = _child(context, cond_index)
        _inputs(cond, context, list(variables), outputs)
        cond.emit_operators()
        if not cond.graph.outputs:
            raise context.fail(f"the condition subgraph {cond_index} has no output")
        flag_tensor = cond.graph.tensors[cond.graph.outputs[0]]
        flag = _load_flag(context, cond.graph, _output(cond, context, 0), flag_tensor)
        main.insert(scf.ConditionOp(flag))
        main.builder = Builder(InsertPoint.at_end(after))
        body = _child(context, body_index)
        _inputs(body, context, list(variables), outputs, read_back=True)
        body.emit_operators()
        _outputs(body, context, variables, outputs, "body output")
        main.insert(scf.YieldOp())
    finally:
        main.builder = saved
    main.insert(scf.WhileOp([], [], Region(before), Region(after)))
