"""Rearrangements whose every output element is one input element (or a pad value) found by
index arithmetic: SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND and MIRROR_PAD (DEPTH_TO_SPACE and
SPACE_TO_DEPTH are transposes of reshaped views, `data_movement.transpose`), and GATHER
(`gather`) of an activation or a constant by constant indices or by indices read at run time.

`remap` loops over the output in order and computes, per output dimension, which input index
it reads; `SourceAxis` describes that per-dimension map as a small affine program so the
frontend states the operator's meaning and the kernel stays one loop nest with no tables:
`input[d] = (sum of coefficient * output[k]) + offset`, then optionally the mirror of a
position outside `[0, size)`, and an output element whose index falls outside the input takes
the pad value (SPACE_TO_BATCH_ND's padding).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import MemRefType, i32

from usmp_dialect.kernels.builder import INDEX, KernelBuilder, Value, finish, function
from usmp_dialect.kernels.module import ModelModule


@dataclass(frozen=True)
class SourceAxis:
    """Input index of one dimension: `sum(c * output[k] for k, c in terms) + offset`, then
    divided (`divide`, the quotient) or reduced (`modulo`, the remainder) by a positive
    constant when given; `mirror` reflects positions outside `[0, size)` as MIRROR_PAD's
    `GetInputDimension` does, its value TFLM's offset (1 REFLECT: the edge is not repeated, 0
    SYMMETRIC: it is); `padded` marks positions outside `[0, size)` as padding."""

    terms: tuple[tuple[int, int], ...]
    offset: int
    size: int
    divide: int | None = None
    modulo: int | None = None
    mirror: int | None = None
    padded: bool = False


def _axis_index(kernel: KernelBuilder, ivs: Sequence[Value], axis: SourceAxis) -> Value:
    value: Value | None = None
    for position, coefficient in axis.terms:
        term = kernel.mul(kernel.cast(ivs[position], i32), coefficient)
        value = term if value is None else kernel.add(value, term)
    value = kernel.constant(axis.offset, i32) if value is None else kernel.add(value, axis.offset)
    if axis.divide is not None:
        value = kernel.div(value, axis.divide)
    if axis.modulo is not None:
        value = kernel.sub(value, kernel.mul(kernel.div(value, axis.modulo), axis.modulo))
    if axis.mirror is not None:
        below = kernel.sub(axis.mirror - 1, value)
        value = kernel.select(kernel.cmp("slt", value, 0), below, value)
        above = kernel.sub(2 * axis.size - 1 - axis.mirror, value)
        value = kernel.select(kernel.cmp("sge", value, axis.size), above, value)
    return value


def remap(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    axes: Sequence[SourceAxis],
    pad_value: int | float | None = None,
) -> None:
    """Adds `@name(%input, %output)`: `output[i] = input[axes(i)]`, or `pad_value` where a
    `padded` axis leaves the input (the load then reads a clamped, valid index)."""
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    element = output_type.get_element_type()

    def body(ivs: Sequence[Value]) -> None:
        indices: list[Value] = []
        outside: Value | None = None
        for axis in axes:
            value = _axis_index(kernel, ivs, axis)
            if axis.padded:
                out = kernel.or_(kernel.cmp("slt", value, 0), kernel.cmp("sge", value, axis.size))
                outside = out if outside is None else kernel.or_(outside, out)
                value = kernel.clamp(value, 0, axis.size - 1)
            indices.append(kernel.cast(value, INDEX))
        loaded = kernel.load(source, indices)
        if outside is not None:
            assert pad_value is not None
            loaded = kernel.select(outside, kernel.constant(pad_value, element), loaded)
        kernel.store(loaded, target, ivs)

    kernel.loops(output_type.get_shape(), body)
    finish(kernel)
    module.add(op)


def gather(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    indices: np.ndarray | None,
    input_global: str | None = None,
) -> None:
    """Adds `@name([%input,] [%indices,] %output)`: GATHER along the middle axis of the 3-D
    views `input [outer, size, inner]` and `output [outer, count, inner]`:
    `output[o, k, i] = input[o, indices[k], i]`. Constant `indices` are read from a table;
    `None`: they are the argument `%indices` (`count` int32 values read at run time, as
    TFLM's GATHER reads its positions tensor), each clamped into `[0, size)` (TFLM's `Invoke`
    fails on one outside; a compiled model cannot fail, so it reads the nearest slice, as
    EMBEDDING_LOOKUP does). `input_global` names the input's constant global (then it is no
    argument)."""
    size, count = input_type.get_shape()[1], output_type.get_shape()[1]
    arguments = [] if input_global is not None else [("input", input_type)]
    if indices is None:
        arguments.append(("indices", MemRefType(i32, [count])))
    op, kernel, values = function(name, [*arguments, ("output", output_type)])
    source = kernel.get_global(input_global, input_type) if input_global else values[0]
    if indices is None:
        table = values[-2]
    else:
        table = kernel.get_global(*module.constant(f"{name}_indices", indices.astype(np.int32)))
    target = values[-1]

    def body(ivs: Sequence[Value]) -> None:
        outer, position, inner = ivs
        index = kernel.load(table, [position])
        if indices is None:
            index = kernel.clamp(index, 0, size - 1)
        index = kernel.cast(index, INDEX)
        kernel.store(kernel.load(source, [outer, index, inner]), target, ivs)

    kernel.loops(output_type.get_shape(), body)
    finish(kernel)
    module.add(op)


def set_row(module: ModelModule, name: str, list_type: MemRefType) -> None:
    """Adds `@name(%list, %item, %index, %output)`: `output` (of `list_type`, `[rows, inner]`)
    is `list` with row `index[0]` replaced by `item` (`[1, inner]`), the index clamped into
    `[0, rows)` (the TensorList write of `frontends/tflite/tensor_lists.py`)."""
    rows, inner = list_type.get_shape()
    item_type = MemRefType(list_type.element_type, [1, inner])
    op, kernel, (source, item, index, target) = function(
        name,
        [
            ("list", list_type),
            ("item", item_type),
            ("index", MemRefType(i32, [1])),
            ("output", list_type),
        ],
    )
    kernel.loops(
        list_type.get_shape(), lambda ivs: kernel.store(kernel.load(source, ivs), target, ivs)
    )
    row = kernel.cast(kernel.clamp(kernel.load(index, [0]), 0, rows - 1), INDEX)
    kernel.loops(
        [inner], lambda ivs: kernel.store(kernel.load(item, [0, *ivs]), target, [row, *ivs])
    )
    finish(kernel)
    module.add(op)
