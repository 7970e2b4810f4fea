"""Concat (each input copied into its slice of the output, unless its producer wrote it there
in place (see the importer); constants folded), Transpose, and Pad (constant mode)."""

from __future__ import annotations

import numpy as np

from usmp_dialect.frontends.onnx.importer import NodeContext, operator
from usmp_dialect.frontends.onnx.ops.common import FLOAT32, axis, check_concatenation, require_float
from usmp_dialect.kernels.data_movement import Operand, concatenation, pad, transpose
from usmp_dialect.kernels.module import memref_of


@operator("Concat")
def concat(context: NodeContext) -> None:
    count = len(context.node.inputs)
    shapes = [context.shape(position) for position in range(count)]
    along = axis(context, int(context.attr("axis", 0)), len(shapes[0]))
    if all(context.is_constant(position) for position in range(count)):
        context.fold(0, np.concatenate([context.constant(p) for p in range(count)], axis=along))
        return
    require_float(context, *range(count))
    output = context.output_shape()
    check_concatenation(context, shapes, output, along)
    outer = int(np.prod(output[:along]))
    inner = int(np.prod(output[along + 1 :]))
    operands: list[Operand] = []
    offsets: list[int] = []
    values = []
    offset = 0
    target = context.result()
    for position, shape in enumerate(shapes):
        flat = (outer, shape[along] * inner)
        offset += flat[1]
        if context.importer.in_slice(context.input_name(position), context.output_name()):
            continue  # its producer wrote it into its slice of the output
        offsets.append(offset - flat[1])
        if context.is_constant(position):
            array = np.ascontiguousarray(context.constant(position).astype(np.float32)).reshape(
                flat
            )
            operands.append(context.module.constant(f"{context.name}_input{position}", array))
        else:
            operands.append(memref_of(flat, FLOAT32))
            values.append(context.view(context.value(position), flat))
    if not operands:
        return
    flat_output = (outer, output[along] * inner)
    concatenation(context.module, context.name, operands, memref_of(flat_output, FLOAT32), offsets)
    context.call(values, [context.view(target, flat_output)])


@operator("Transpose")
def transpose_node(context: NodeContext) -> None:
    source = context.shape(0)
    permutation = [int(p) for p in context.attr("perm", list(range(len(source)))[::-1])]
    if sorted(permutation) != list(range(len(source))):
        raise context.fail(f"perm {permutation} is not a permutation of {len(source)} axes")
    if context.is_constant(0):
        context.fold(0, np.ascontiguousarray(np.transpose(context.constant(0), permutation)))
        return
    require_float(context, 0)
    output = context.output_shape()
    if output != tuple(source[p] for p in permutation):
        raise context.fail(f"the output shape {list(output)} is not the transposed input's")
    transpose(
        context.module,
        context.name,
        memref_of(source, FLOAT32),
        memref_of(output, FLOAT32),
        permutation,
    )
    context.call([context.value(0)], [context.result()])


@operator("Pad")
def pad_node(context: NodeContext) -> None:
    require_float(context, 0)
    source = context.shape(0)
    rank = len(source)
    if context.opset < 11:
        mode = context.attr("mode", "constant")
        pads = [int(p) for p in context.attr("pads", [])]
        value = float(context.attr("value", 0.0))
    else:
        mode = context.attr("mode", "constant")
        pads = [int(p) for p in context.constant(1).reshape(-1)]
        value = float(context.constant(2).reshape(-1)[0]) if context.has_input(2) else 0.0
        if context.has_input(3):
            raise context.fail("the axes input is not supported")
    if mode != "constant":
        raise context.fail(f"mode '{mode}' is not supported (only constant)")
    if len(pads) != 2 * rank or min(pads) < 0:
        raise context.fail(f"pads {pads} are not {2 * rank} non-negative values")
    before = pads[:rank]
    expected = tuple(size + pads[d] + pads[d + rank] for d, size in enumerate(source))
    if context.output_shape() != expected:
        raise context.fail(
            f"the output shape {list(context.output_shape())} is not {list(expected)}"
        )
    pad(
        context.module,
        context.name,
        memref_of(source, FLOAT32),
        memref_of(expected, FLOAT32),
        before,
        value,
    )
    context.call([context.value(0)], [context.result()])
