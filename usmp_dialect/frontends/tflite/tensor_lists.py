"""The TensorList write the TensorFlow Lite converter lowers `TensorArray.write(i, item)` to (a
Keras 3 RNN with `return_sequences=True`, exported as a WHILE over the steps, writes each
step's output so):

    head = SLICE(list, begin [0, 0, ...],          size CONCATENATION([RESHAPE(i), [-1, ...]]))
    tail = SLICE(list, begin CONCATENATION([RESHAPE(i + 1), [0, ...]]), size [-1, -1, ...])
    list' = CONCATENATION(head, item, tail)   (axis 0; item: one row, [1, ...])

`head` and `tail` have shapes that depend on `i` (the model marks them dynamic), `list'` has
`list`'s shape: it is `list` with row `i` replaced by `item`. `rewrite_list_writes` replaces
the two SLICEs and the CONCATENATION by one `SET_ROW` operator (`list, item, i -> list'`, at
the CONCATENATION's index; `Operator.folded` names the SLICEs) after proving each part of the
pattern from the graph: the constants' values, `i + 1` an ADD of the constant 1 to `i`, the
shapes, and `head` and `tail` read by nothing else. The operators that only built the SLICEs'
begin and size go too. The reader refuses the dynamic shapes that are left (`check_static`).

TFLM computes the SLICEs with their run-time shapes; for `i` in `[0, rows)` the row written is
the same. `SET_ROW` clamps `i` into that range (a compiled model cannot fail where TFLM's would).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import tflite

from usmp_dialect.frontends.errors import ModelImportError

if TYPE_CHECKING:  # the reader calls this module
    from usmp_dialect.frontends.tflite.reader import Graph, Operator, Tensor

SET_ROW = "SET_ROW"
"""The operator a list write becomes (no TFLite builtin: the reader writes it)."""


def _only(values: np.ndarray | None, value: int, count: int) -> bool:
    return values is not None and values.shape == (count,) and bool((values == value).all())


class _Graph:
    """Who writes and who reads each tensor of a graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.writer: dict[int, Operator] = {}
        self.readers: dict[int, list[Operator]] = {}
        for op in graph.operators:
            for index in op.outputs:
                self.writer[index] = op
            for index in op.inputs:
                if index >= 0:
                    self.readers.setdefault(index, []).append(op)

    def tensor(self, index: int) -> Tensor:
        return self.graph.tensors[index]

    def constant(self, index: int) -> np.ndarray | None:
        return self.tensor(index).data if index >= 0 else None

    def read_only_by(self, index: int, op: Operator) -> bool:
        return index not in self.graph.outputs and self.readers.get(index) == [op]

    def first_of(self, index: int, rest: int, value: int) -> int | None:
        """`i` when tensor `index` is CONCATENATION([RESHAPE(i) to one value, `rest` constant
        `value`s]) on axis 0; None otherwise."""
        op = self.writer.get(index)
        if op is None or op.opcode != "CONCATENATION" or len(op.inputs) != 2:
            return None
        options = op.option(tflite.ConcatenationOptions)
        if options is None or options.Axis() != 0 or options.FusedActivationFunction() != 0:
            return None
        first, constant = op.inputs
        if not _only(self.constant(constant), value, rest):
            return None
        reshape = self.writer.get(first)
        if reshape is None or reshape.opcode != "RESHAPE" or self.tensor(first).shape != (1,):
            return None
        counter = reshape.inputs[0]
        if self.tensor(counter).dtype != np.int32 or self.tensor(counter).shape not in ((), (1,)):
            return None  # a scalar counter (a one-element vector once the reader sees it so)
        return counter

    def plus_one(self, index: int) -> int | None:
        """`i` when tensor `index` is ADD(i, 1) (int32, no activation); None otherwise."""
        op = self.writer.get(index)
        if op is None or op.opcode != "ADD" or len(op.inputs) != 2:
            return None
        options = op.option(tflite.AddOptions)
        if options is not None and options.FusedActivationFunction() != 0:
            return None
        for counter, one in (op.inputs, op.inputs[::-1]):
            value = self.constant(one)
            if value is not None and value.size == 1 and int(value.reshape(-1)[0]) == 1:
                return counter if self.constant(counter) is None else None
        return None


def _list_write(g: _Graph, op: Operator) -> tuple[Operator, tuple[int, ...]] | None:
    """The SET_ROW operator `op` (a CONCATENATION) becomes, and the indices of the operators
    it replaces; None when `op` is no list write."""
    if op.opcode != "CONCATENATION" or len(op.inputs) != 3:
        return None
    options = op.option(tflite.ConcatenationOptions)
    if options is None or options.Axis() != 0 or options.FusedActivationFunction() != 0:
        return None
    head, item, tail = op.inputs
    (output,) = op.outputs
    head_op, tail_op = g.writer.get(head), g.writer.get(tail)
    if head_op is None or tail_op is None or {head_op.opcode, tail_op.opcode} != {"SLICE"}:
        return None
    source = head_op.inputs[0]
    if tail_op.inputs[0] != source or not g.read_only_by(head, op) or not g.read_only_by(tail, op):
        return None
    shape = g.tensor(source).shape
    rank = len(shape)
    if rank < 1 or g.tensor(output).shape != shape or g.tensor(item).shape != (1, *shape[1:]):
        return None
    if {g.tensor(t).dtype for t in (source, item, output)} != {g.tensor(source).dtype}:
        return None
    if not _only(g.constant(head_op.inputs[1]), 0, rank):
        return None
    if not _only(g.constant(tail_op.inputs[2]), -1, rank):
        return None
    counter = g.first_of(head_op.inputs[2], rank - 1, -1)
    following = g.first_of(tail_op.inputs[1], rank - 1, 0)
    if counter is None or following is None or g.plus_one(following) != counter:
        return None
    replaced = (head_op.index, tail_op.index)
    return replace(op, opcode=SET_ROW, inputs=(source, item, counter), folded=replaced), replaced


def _unused(g: Graph, kept: list[Operator]) -> set[int]:
    """The int32 RESHAPE, CONCATENATION and ADD operators of `kept` whose outputs nothing
    reads any more (nor the graph outputs), repeatedly: those that built the removed SLICEs'
    begin and size (a dead one elsewhere in the graph goes too; it computed nothing read)."""
    dropped: set[int] = set()
    while True:
        read = {i for op in kept if op.index not in dropped for i in op.inputs}
        more = {
            op.index
            for op in kept
            if op.index not in dropped
            and op.opcode in ("RESHAPE", "CONCATENATION", "ADD")
            and all(g.tensors[i].dtype == np.int32 for i in op.outputs)
            and not any(i in read or i in g.outputs for i in op.outputs)
        }
        if not more:
            return dropped
        dropped |= more


def rewrite_list_writes(graph: Graph) -> Graph:
    """`graph` with every list write a SET_ROW (see the module's text); itself when it has
    none."""
    g = _Graph(graph)
    writes = {}
    replaced: set[int] = set()
    for op in graph.operators:
        found = _list_write(g, op)
        if found is not None:
            writes[op.index] = found[0]
            replaced.update(found[1])
    if not writes:
        return graph
    kept = [writes.get(op.index, op) for op in graph.operators if op.index not in replaced]
    dropped = _unused(graph, kept)
    return replace(graph, operators=tuple(op for op in kept if op.index not in dropped))


def check_static(graph: Graph, dynamic: dict[int, tuple[int, ...]]) -> None:
    """Refuses a tensor of dynamic shape (`dynamic`: index -> its shape signature) that an
    operator of `graph` still reads or writes, or that is a graph input or output."""
    used = {i for op in graph.operators for i in (*op.inputs, *op.outputs)}
    used |= set(graph.inputs) | set(graph.outputs)
    for index in sorted(dynamic):
        if index in used:
            tensor = graph.tensors[index]
            raise ModelImportError(
                f"{tensor.describe()} has a dynamic shape {list(dynamic[index])}"
            )
