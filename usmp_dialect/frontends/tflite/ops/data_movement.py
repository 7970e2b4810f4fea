"""Data movement on activations, int8, int16 and float32: CONCATENATION, PACK, UNPACK, SPLIT,
SPLIT_V, STRIDED_SLICE, SLICE, PAD, PADV2 and TRANSPOSE; all but TRANSPOSE also on int32,
CONCATENATION and PACK on int64, CONCATENATION, SLICE and STRIDED_SLICE on bool (the types
TFLM's kernels copy: `concatenation.cc`, `pack.cc`,
`unpack.cc`, `split.cc`, `split_v.cc`, `strided_slice.cc`, `slice.cc`, `pad.cc`). Each is
folded with numpy when all its inputs are constants (`fold`).

Integer data movement copies values, as TFLite Micro does, so it needs the same quantisation on
every input and the output (TFLite Micro's CONCATENATION does not requantise either; a model
whose quantisations differ is refused rather than silently reinterpreted).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import (
    INT16_ACTIVATION_TYPES,
    OperatorContext,
    operator,
)
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    INT16,
    INT32,
    INT64,
    quantization,
    require_types,
    supported_fused_activation,
)
from usmp_dialect.frontends.tflite.ops.fold import (
    SliceSpec,
    all_constant,
    fold_concatenation,
    fold_pack,
    fold_unpack,
    set_folded,
    slice_spec,
    sliced,
    strided_slice_spec,
)
from usmp_dialect.frontends.tflite.reader import Tensor
from usmp_dialect.frontends.tflite.tensor_lists import SET_ROW
from usmp_dialect.kernels.data_movement import (
    Box,
    Operand,
    concatenation,
    pad,
    strided_copies,
    transpose,
)
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.rearrange import set_row

BOOL = np.dtype(np.bool_)
# The activation types TFLM's kernels move beyond int8, int16 and float32
_WITH_INT32 = (*INT16_ACTIVATION_TYPES, INT32)
_WITH_INT64 = (*_WITH_INT32, INT64)
_CONCATENATED = (*_WITH_INT64, BOOL)  # `concatenation.cc`
_SLICED = (*_WITH_INT32, BOOL)  # `slice.cc`, `strided_slice.cc`


def same_quantization(context: OperatorContext, tensors: Sequence[Tensor], output: Tensor) -> None:
    """Integer tensors that are copied value for value must share the output's quantisation."""
    if output.dtype not in (INT8, INT16):
        return
    expected = quantization(context, output)
    for tensor in tensors:
        quant = quantization(context, tensor)
        if (quant.scale, quant.zero_point) != (expected.scale, expected.zero_point):
            raise context.fail(
                f"{tensor.describe()} has the quantisation (scale {quant.scale}, zero point "
                f"{quant.zero_point}), the output (scale {expected.scale}, zero point "
                f"{expected.zero_point}); int8 {context.op.opcode} needs them equal"
            )


def _axis(context: OperatorContext, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise context.fail(f"axis {axis} is outside a {rank}-D tensor")
    return axis % rank


def _inputs(context: OperatorContext) -> list[Tensor]:
    return [context.tensor(position) for position in range(len(context.op.inputs))]


def _check_shape(context: OperatorContext, output: Tensor, expected: Sequence[int]) -> None:
    if tuple(output.shape) != tuple(expected):
        raise context.fail(
            f"the output shape {list(output.shape)} should be {list(expected)} for these inputs"
        )


def _side_by_side(context: OperatorContext, outer: int, widths: Sequence[int]) -> None:
    """Emits and calls the kernel placing input k (seen as `[outer, widths[k]]`) next to the
    others along dimension 1 of the output (seen as `[outer, sum(widths)]`); inputs their
    producer wrote in place (see the importer) are not copied."""
    output = context.tensor(0, output=True)
    operands: list[Operand] = []
    offsets: list[int] = []
    values = []
    target = context.result()
    for position, width in enumerate(widths):
        tensor = context.tensor(position)
        if context.importer.in_slice(tensor, output):
            continue  # its producer wrote it into its slice of the output
        offsets.append(sum(widths[:position]))
        if context.is_constant(position):
            array = context.constant(position).reshape(outer, width)
            operands.append(context.module.constant(f"{context.name}_input{position}", array))
        else:
            operands.append(memref_of((outer, width), tensor.dtype))
            values.append(context.view(context.value(position), (outer, width)))
    if not operands:
        return
    total = sum(widths)
    output_type = memref_of((outer, total), output.dtype)
    concatenation(context.module, context.name, operands, output_type, offsets)
    context.call(values, [context.view(target, (outer, total))])


@operator("CONCATENATION", types=_CONCATENATED, supports=supported_fused_activation)
def concatenation_layer(context: OperatorContext) -> None:
    options = context.op.option(tflite.ConcatenationOptions)
    if options is not None and options.FusedActivationFunction() != 0:
        raise context.fail("a fused activation on CONCATENATION is not supported")
    output = context.tensor(0, output=True)
    inputs = _inputs(context)
    axis = _axis(context, options.Axis() if options is not None else 0, len(output.shape))
    for tensor in inputs:
        shape = tensor.shape
        if len(shape) != len(output.shape) or any(
            shape[d] != output.shape[d] for d in range(len(shape)) if d != axis
        ):
            raise context.fail(
                f"{tensor.describe()} of shape {list(shape)} does not fit the output "
                f"{list(output.shape)} along axis {axis}"
            )
    expected = list(output.shape)
    expected[axis] = sum(tensor.shape[axis] for tensor in inputs)
    _check_shape(context, output, expected)
    if all_constant(context):
        fold_concatenation(context, axis)
        return
    require_types(context, *inputs, output, allowed=_CONCATENATED)
    same_quantization(context, inputs, output)
    outer = math.prod(output.shape[:axis])
    inner = math.prod(output.shape[axis + 1 :])
    _side_by_side(context, outer, [tensor.shape[axis] * inner for tensor in inputs])


@operator("PACK", types=_WITH_INT64)
def pack(context: OperatorContext) -> None:
    options = context.op.option(tflite.PackOptions)
    inputs = _inputs(context)
    output = context.tensor(0, output=True)
    shape = inputs[0].shape
    if any(tensor.shape != shape for tensor in inputs):
        raise context.fail("PACK needs inputs of one shape")
    if options is not None and options.ValuesCount() not in (0, len(inputs)):
        raise context.fail(f"values_count {options.ValuesCount()} for {len(inputs)} inputs")
    axis = _axis(context, options.Axis() if options is not None else 0, len(shape) + 1)
    _check_shape(context, output, [*shape[:axis], len(inputs), *shape[axis:]])
    if all_constant(context):
        fold_pack(context, axis)
        return
    require_types(context, *inputs, output, allowed=_WITH_INT64)
    same_quantization(context, inputs, output)
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis:])
    _side_by_side(context, outer, [inner] * len(inputs))


@operator("UNPACK", types=_WITH_INT32)
def unpack(context: OperatorContext) -> None:
    options = context.op.option(tflite.UnpackOptions)
    source = context.tensor(0)
    shape = source.shape
    axis = _axis(context, options.Axis() if options is not None else 0, len(shape))
    count = shape[axis]
    if len(context.op.outputs) != count or (
        options is not None and options.Num() not in (0, count)
    ):
        raise context.fail(f"UNPACK of {count} values along axis {axis} needs {count} outputs")
    outputs = [context.tensor(k, output=True) for k in range(count)]
    for output in outputs:
        _check_shape(context, output, [*shape[:axis], *shape[axis + 1 :]])
    if context.is_constant(0):
        fold_unpack(context, axis)
        return
    require_types(context, source, *outputs, allowed=_WITH_INT32)
    same_quantization(context, [source], outputs[0])
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    part = memref_of((outer, 1, inner), source.dtype)
    strided_copies(
        context.module,
        context.name,
        memref_of((outer, count, inner), source.dtype),
        [(part, Box.dense((0, k, 0), (outer, 1, inner))) for k in range(count)],
    )
    context.call(
        [context.view(context.value(0), (outer, count, inner))],
        [context.view(context.result(k), (outer, 1, inner)) for k in range(count)],
    )


def _slice(context: OperatorContext, spec: SliceSpec) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    _check_shape(context, output, spec.out_shape)
    if context.is_constant(0):
        set_folded(context, 0, sliced(context.constant(0), spec))
        return
    require_types(context, source, output, allowed=_SLICED)
    same_quantization(context, [source], output)
    starts, steps, extents = (tuple(column) for column in zip(*spec.boxes, strict=True))
    if 0 in extents:
        raise context.fail("the slice is empty")
    box = Box(starts, steps, extents)
    strided_copies(
        context.module,
        context.name,
        memref_of(source.shape, source.dtype),
        [(memref_of(extents, output.dtype), box)],
    )
    context.call([context.value(0)], [context.view(context.result(), extents)])


@operator("STRIDED_SLICE", types=_SLICED)
def strided_slice_layer(context: OperatorContext) -> None:
    _slice(context, strided_slice_spec(context, context.tensor(0).shape))


@operator("SLICE", types=_SLICED)
def slice_layer(context: OperatorContext) -> None:
    _slice(context, slice_spec(context, context.tensor(0).shape))


@operator("PAD", "PADV2", types=_WITH_INT32)
def pad_layer(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    rank = len(source.shape)
    paddings = context.constant(1)
    if paddings.dtype not in (np.int32, np.int64) or paddings.shape != (rank, 2):
        raise context.fail(f"paddings must be an int32 [{rank}, 2] constant")
    if (paddings < 0).any():
        raise context.fail(f"negative paddings {paddings.tolist()} are not supported")
    before = [int(p) for p in paddings[:, 0]]
    _check_shape(
        context,
        output,
        [d + int(a) + int(b) for d, (a, b) in zip(source.shape, paddings, strict=True)],
    )
    dtype = require_types(context, source, output, allowed=_WITH_INT32)
    same_quantization(context, [source], output)
    value: int | float
    if context.optional_tensor(2) is not None:
        constant = context.constant(2)
        if constant.size != 1 or constant.dtype != dtype:
            raise context.fail(f"the pad value must be one {dtype.name} value")
        same_quantization(context, [context.tensor(2)], output)
        value = constant.reshape(()).item()
    elif dtype == INT8:
        value = quantization(context, output).zero_point
    elif dtype == FLOAT32:
        value = 0.0
    else:  # TFLM pads int16 with 0 whatever the zero point, int32 with 0
        value = 0
    if context.is_constant(0):
        padded = np.pad(context.constant(0), paddings.astype(np.int64), constant_values=value)
        set_folded(context, 0, padded)
        return
    shape, out_shape, offsets = _merge_unpadded(source.shape, output.shape, before)
    pad(
        context.module,
        context.name,
        memref_of(shape, dtype),
        memref_of(out_shape, dtype),
        offsets,
        value,
    )
    context.call(
        [context.view(context.value(0), shape)], [context.view(context.result(), out_shape)]
    )


def _merge_unpadded(
    shape: Sequence[int], out_shape: Sequence[int], before: Sequence[int]
) -> tuple[tuple[int, ...], tuple[int, ...], list[int]]:
    """The input and output shapes and the padding before, with the unpadded trailing
    dimensions merged into the last padded one (padding H and W of NHWC copies whole rows)."""
    padded = [dim for dim in range(len(shape)) if out_shape[dim] != shape[dim]]
    last = padded[-1] if padded else 0
    inner = math.prod(shape[last + 1 :])
    return (
        (*shape[:last], shape[last] * inner),
        (*out_shape[:last], out_shape[last] * inner),
        [*before[:last], before[last] * inner],
    )


def _split(context: OperatorContext, source_position: int, axis: int, sizes: Sequence[int]) -> None:
    """Output k is the k-th piece, `sizes[k]` long, of the input along `axis`."""
    source = context.tensor(source_position)
    shape = source.shape
    if len(context.op.outputs) != len(sizes):
        raise context.fail(f"{len(sizes)} pieces for {len(context.op.outputs)} outputs")
    outputs = [context.tensor(k, output=True) for k in range(len(sizes))]
    for output, size in zip(outputs, sizes, strict=True):
        _check_shape(context, output, [*shape[:axis], size, *shape[axis + 1 :]])
    if context.is_constant(source_position):
        value = context.constant(source_position)
        pieces = np.split(value, np.cumsum(sizes)[:-1].tolist(), axis=axis)
        for k, piece in enumerate(pieces):
            set_folded(context, k, piece)
        return
    require_types(context, source, *outputs, allowed=_WITH_INT32)
    for output in outputs:
        same_quantization(context, [source], output)
    outer, inner = math.prod(shape[:axis]), math.prod(shape[axis + 1 :])
    boxes, offset = [], 0
    for size in sizes:
        piece = memref_of((outer, size, inner), source.dtype)
        boxes.append((piece, Box.dense((0, offset, 0), (outer, size, inner))))
        offset += size
    strided_copies(
        context.module, context.name, memref_of((outer, shape[axis], inner), source.dtype), boxes
    )
    context.call(
        [context.view(context.value(source_position), (outer, shape[axis], inner))],
        [context.view(context.result(k), (outer, size, inner)) for k, size in enumerate(sizes)],
    )


def _scalar_axis(context: OperatorContext, position: int, rank: int) -> int:
    value = context.constant(position)
    if value.size != 1 or value.dtype not in (np.int32, np.int64):
        raise context.fail(f"the axis must be one int32 value, not {value.tolist()}")
    return _axis(context, int(value.reshape(())), rank)


@operator("SPLIT", types=_WITH_INT32)
def split(context: OperatorContext) -> None:
    options = context.op.option(tflite.SplitOptions)
    shape = context.tensor(1).shape
    axis = _scalar_axis(context, 0, len(shape))
    count = options.NumSplits() if options is not None else len(context.op.outputs)
    if count < 1 or shape[axis] % count:
        raise context.fail(f"dimension {axis} of size {shape[axis]} does not split in {count}")
    _split(context, 1, axis, [shape[axis] // count] * count)


@operator("SPLIT_V", types=_WITH_INT32)
def split_v(context: OperatorContext) -> None:
    shape = context.tensor(0).shape
    axis = _scalar_axis(context, 2, len(shape))
    sizes = [int(size) for size in context.constant(1).reshape(-1)]
    unknown = [k for k, size in enumerate(sizes) if size == -1]
    if len(unknown) == 1:
        sizes[unknown[0]] = shape[axis] - (sum(sizes) + 1)
    if any(size < 0 for size in sizes) or sum(sizes) != shape[axis]:
        raise context.fail(f"the sizes {sizes} do not split dimension {axis} of size {shape[axis]}")
    _split(context, 0, axis, sizes)


@operator("TRANSPOSE", types=INT16_ACTIVATION_TYPES)
def transpose_layer(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    rank = len(source.shape)
    permutation = [int(p) for p in context.constant(1).reshape(-1)]
    if sorted(p % rank if -rank <= p < rank else -1 for p in permutation) != list(range(rank)):
        raise context.fail(f"{permutation} is not a permutation of the {rank} dimensions")
    permutation = [p % rank for p in permutation]
    _check_shape(context, output, [source.shape[p] for p in permutation])
    if context.is_constant(0):
        set_folded(context, 0, np.transpose(context.constant(0), permutation))
        return
    dtype = require_types(context, source, output, allowed=INT16_ACTIVATION_TYPES)
    same_quantization(context, [source], output)
    transpose(
        context.module,
        context.name,
        memref_of(source.shape, dtype),
        memref_of(output.shape, dtype),
        permutation,
    )
    context.call([context.value(0)], [context.result()])


@operator(SET_ROW, types=(INT8, INT16, FLOAT32), inputs={2: (INT32,)})
def set_row_layer(context: OperatorContext) -> None:
    """A TensorList write (`tensor_lists.py`: the SLICEs and the CONCATENATION it replaces):
    the list with row `i` replaced by the item, the values copied (one quantisation
    throughout, per tensor)."""
    source, item, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    dtype = require_types(context, source, item, output, allowed=(INT8, INT16, FLOAT32))
    same_quantization(context, [source, item], output)
    if dtype != FLOAT32 and any(
        len(quantization(context, tensor).scales) != 1 for tensor in (source, item, output)
    ):
        raise context.fail("the list and the item it writes must be quantised per tensor")
    rows, inner = source.shape[0], int(np.prod(source.shape[1:]))
    set_row(context.module, context.name, memref_of((rows, inner), dtype))
    context.call(
        [
            context.view(context.value(0), (rows, inner)),
            context.view(context.value(1), (1, inner)),
            context.view(context.value(2), (1,)),
        ],
        [context.view(context.result(), (rows, inner))],
    )
