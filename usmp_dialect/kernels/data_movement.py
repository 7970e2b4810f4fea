"""Data-movement kernels: copies between strided boxes of buffers, and constant fills.

CONCATENATION writes each input into its slice of the output (one loop nest per input, on 2-D
views `[outer, axis * inner]` so the nest is two loops deep whatever the rank); PAD fills the
border of its output and copies the input into the interior, so every output element is
written exactly once and no test runs in any loop; STRIDED_SLICE, UNPACK and SPLIT copy strided
boxes of their input; TRANSPOSE writes its output in order. Inputs that are constants are
`memref.global`s read inside the kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function
from usmp_dialect.kernels.module import ModelModule

Symbol = tuple[str, MemRefType]  # a constant `memref.global`: its name and type
Operand = MemRefType | Symbol  # an activation argument, or a constant read in the kernel


@dataclass(frozen=True)
class Box:
    """The elements `start + step * i` for `0 <= i < extent` of each dimension of a buffer."""

    start: tuple[int, ...]
    step: tuple[int, ...]
    extent: tuple[int, ...]

    @staticmethod
    def dense(start: Sequence[int], extent: Sequence[int]) -> Box:
        return Box(tuple(start), (1,) * len(start), tuple(extent))


def _indices(kernel: KernelBuilder, ivs: Sequence[Value], box: Box) -> list[Value]:
    return [
        kernel.add(kernel.mul(iv, step), start) if step != 1 or start else iv
        for iv, start, step in zip(ivs, box.start, box.step, strict=True)
    ]


def emit_copy(
    kernel: KernelBuilder, source: Value, source_box: Box, target: Value, target_box: Box
) -> None:
    """Copies `source_box` of `source` into `target_box` of `target` (same extents)."""
    assert source_box.extent == target_box.extent

    def body(ivs: Sequence[Value]) -> None:
        value = kernel.load(source, _indices(kernel, ivs, source_box))
        kernel.store(value, target, _indices(kernel, ivs, target_box))

    kernel.loops(list(source_box.extent), body)


def emit_fill(kernel: KernelBuilder, target: Value, box: Box, value: Value) -> None:
    """Stores `value` into every element of `box` of `target`."""
    if 0 in box.extent:
        return
    kernel.loops(
        list(box.extent), lambda ivs: kernel.store(value, target, _indices(kernel, ivs, box))
    )


def _operands(
    kernel: KernelBuilder, operands: Sequence[Operand], arguments: Sequence[Value]
) -> list[Value]:
    """The value of each operand in the kernel: its argument, or its global."""
    values, remaining = [], iter(arguments)
    for operand in operands:
        if isinstance(operand, MemRefType):
            values.append(next(remaining))
        else:
            values.append(kernel.get_global(*operand))
    return values


def _arguments(operands: Sequence[Operand]) -> list[tuple[str, MemRefType]]:
    return [
        (f"input{position}", operand)
        for position, operand in enumerate(operands)
        if isinstance(operand, MemRefType)
    ]


def concatenation(
    module: ModelModule,
    name: str,
    inputs: Sequence[Operand],
    output_type: MemRefType,
    offsets: Sequence[int] | None = None,
) -> None:
    """Adds `@name(%input..., %output)`: the 2-D inputs `[outer, width_k]` side by side along
    dimension 1 of the output `[outer, sum(width_k)]` (constant inputs are not arguments), or
    each at its column `offsets[k]` when given (the other columns are not written: inputs
    already in place)."""
    outer, _ = output_type.get_shape()
    op, kernel, arguments = function(name, [*_arguments(inputs), ("output", output_type)])
    *sources, target = arguments
    offset = 0
    for position, (source, operand) in enumerate(
        zip(_operands(kernel, inputs, sources), inputs, strict=True)
    ):
        type_ = operand if isinstance(operand, MemRefType) else operand[1]
        width = type_.get_shape()[1]
        if offsets is not None:
            offset = offsets[position]
        emit_copy(
            kernel,
            source,
            Box.dense((0, 0), (outer, width)),
            target,
            Box.dense((0, offset), (outer, width)),
        )
        offset += width
    finish(kernel)
    module.add(op)


def pad(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    before: Sequence[int],
    value: int | float,
) -> None:
    """Adds `@name(%input, %output)`: the input at offset `before` in the output, every other
    output element `value`. The border is filled as 2 slabs per dimension (inside the input's
    range in the dimensions before it, the whole extent in those after), so nothing is written
    twice."""
    shape, out_shape = input_type.get_shape(), output_type.get_shape()
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    fill = kernel.constant(value, output_type.element_type)
    rank = len(shape)
    for dim in range(rank):
        inside_start = list(before[:dim])
        inside_extent = list(shape[:dim])
        after = before[dim] + shape[dim]
        for start, extent in ((0, before[dim]), (after, out_shape[dim] - after)):
            box = Box.dense(
                [*inside_start, start, *([0] * (rank - dim - 1))],
                [*inside_extent, extent, *out_shape[dim + 1 :]],
            )
            emit_fill(kernel, target, box, fill)
    emit_copy(kernel, source, Box.dense([0] * rank, shape), target, Box.dense(list(before), shape))
    finish(kernel)
    module.add(op)


def strided_copies(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    outputs: Sequence[tuple[MemRefType, Box]],
) -> None:
    """Adds `@name(%input, %output...)`: output k is `box_k` of the input (STRIDED_SLICE,
    UNPACK); each output has the rank of the input, one element per box position."""
    arguments = [("input", input_type)]
    arguments += [(f"output{k}", type_) for k, (type_, _) in enumerate(outputs)]
    op, kernel, (source, *targets) = function(name, arguments)
    for target, (type_, box) in zip(targets, outputs, strict=True):
        rank = len(type_.get_shape())
        emit_copy(kernel, source, box, target, Box.dense([0] * rank, box.extent))
    finish(kernel)
    module.add(op)


def transpose(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    permutation: Sequence[int],
) -> None:
    """Adds `@name(%input, %output)`: `output[i_0, ..., i_n] = input[j]` with
    `j[permutation[k]] = i_k` (NumPy's and ONNX's `transpose(perm)`), one loop per output
    dimension in order, so the stores are sequential."""
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])

    def body(ivs: Sequence[Value]) -> None:
        indices: list[Value] = list(ivs)
        for k, axis in enumerate(permutation):
            indices[axis] = ivs[k]
        kernel.store(kernel.load(source, indices), target, ivs)

    kernel.loops(output_type.get_shape(), body)
    finish(kernel)
    module.add(op)
