"""Shape computations folded at import with numpy: SHAPE, STRIDED_SLICE, SLICE, PACK, UNPACK,
CONCATENATION, GATHER, CAST (`cast_values`), FILL, RANGE, and int32/float ADD, SUB, MUL whose
inputs are all constants (Keras models compute reshape targets this way: SHAPE ->
STRIDED_SLICE -> PACK -> RESHAPE). SHAPE needs only its input's static shape, so it folds on
activations too; CAST runs on activations too (its handler is in `math_extra`).

The pure functions (`strided_slice_index`, `strided_slice`, ...) follow TFLite's semantics on
numpy arrays; the operators that also run on activations (STRIDED_SLICE, SLICE, PACK, UNPACK,
CONCATENATION) have their handlers in `data_movement`, which call `fold_*` here when every
input is a constant; GATHER of an activation (constant indices) is `rearrange`'s kernel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import INT32
from usmp_dialect.frontends.tflite.ops.rearrange import gather_activation
from usmp_dialect.frontends.tflite.reader import Tensor

_TYPES = {
    tflite.TensorType.FLOAT32: np.dtype(np.float32),
    tflite.TensorType.INT8: np.dtype(np.int8),
    tflite.TensorType.INT16: np.dtype(np.int16),
    tflite.TensorType.INT32: np.dtype(np.int32),
    tflite.TensorType.INT64: np.dtype(np.int64),
    tflite.TensorType.BOOL: np.dtype(np.bool_),
}
# Element types whose arithmetic folds exactly in numpy (int8 would need quantised arithmetic).
_ARITHMETIC_TYPES = (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.float32))


class FoldError(ValueError):
    """An operator whose constant inputs TFLite would reject (the message says why)."""


def all_constant(context: OperatorContext) -> bool:
    return all(
        context.is_constant(position)
        for position, index in enumerate(context.op.inputs)
        if index >= 0
    )


def set_folded(context: OperatorContext, position: int, value: np.ndarray) -> None:
    """Folds output `position` to `value`, which must have the tensor's shape (a scalar tensor
    may be declared with no shape) and converts exactly to its type."""
    tensor = context.tensor(position, output=True)
    value = np.asarray(value)
    if tuple(value.shape) != tuple(tensor.shape) and not (value.ndim == 0 and not tensor.shape):
        raise context.fail(
            f"the folded {tensor.describe()} has the shape {list(value.shape)}, the model "
            f"declares {list(tensor.shape)}"
        )
    context.fold(position, np.array(value, dtype=tensor.dtype, order="C"))  # keeps 0-D


def _masked(mask: int, position: int) -> bool:
    return bool(mask >> position & 1)


INT_LOWEST, INT_MAX = -(2**31), 2**31 - 1


@dataclass(frozen=True)
class SliceSpec:
    """What a STRIDED_SLICE (or SLICE) selects: per input dimension (start, step, count), and
    the output shape (shrunk axes dropped, new axes of extent 1 inserted)."""

    boxes: tuple[tuple[int, int, int], ...]
    out_shape: tuple[int, ...]


def _start_stop(
    size: int,
    begin: int,
    end: int,
    stride: int,
    begin_masked: bool,
    end_masked: bool,
    shrink: bool,
) -> tuple[int, int]:
    """TFLite's `StartForAxis` and `StopForAxis`: masks, negative indices, then clamping to
    [0, size] (forward) or [-1, size - 1] (backward); a shrunk axis takes one element."""
    start = (INT_LOWEST if stride > 0 else INT_MAX) if begin_masked else begin
    if start < 0:
        start += size
    if shrink:
        if not 0 <= start < size:
            raise FoldError(f"index {begin} is outside a dimension of size {size}")
        return start, start + 1
    stop = (INT_MAX if stride > 0 else INT_LOWEST) if end_masked else end
    if stop < 0:
        stop += size
    low, high = (0, size) if stride > 0 else (-1, size - 1)
    return min(max(start, low), high), min(max(stop, low), high)


def strided_slice_spec_of(
    shape: Sequence[int],
    begin: Sequence[int],
    end: Sequence[int],
    strides: Sequence[int],
    begin_mask: int = 0,
    end_mask: int = 0,
    ellipsis_mask: int = 0,
    new_axis_mask: int = 0,
    shrink_axis_mask: int = 0,
) -> SliceSpec:
    """TFLite's STRIDED_SLICE on an input of `shape`. The sparse specification (ellipsis and
    new axes, as TensorFlow defines them) is made dense first; dimensions after the last index
    are taken whole."""
    count = len(begin)
    if not len(end) == len(strides) == count:
        raise FoldError(f"begin, end and strides have {count}, {len(end)}, {len(strides)} values")
    if bin(ellipsis_mask).count("1") > 1:
        raise FoldError("more than one ellipsis")
    rank = len(shape)
    new_axes = {p for p in range(count) if _masked(new_axis_mask, p)}
    new_axes -= {p for p in range(count) if _masked(ellipsis_mask, p)}
    explicit = count - len(new_axes) - (1 if ellipsis_mask else 0)
    if explicit > rank:
        raise FoldError(f"{explicit} indices for a {rank}-D input")
    boxes: list[tuple[int, int, int]] = []
    out_shape: list[int] = []

    def whole(dim: int) -> None:
        boxes.append((0, 1, shape[dim]))
        out_shape.append(shape[dim])

    dim = 0
    for position in range(count):
        if _masked(ellipsis_mask, position):
            for _ in range(rank - explicit):
                whole(dim)
                dim += 1
            continue
        if position in new_axes:
            out_shape.append(1)
            continue
        stride = int(strides[position])
        if stride == 0:
            raise FoldError("a stride is 0")
        shrink = _masked(shrink_axis_mask, position)
        if shrink and stride < 0:
            raise FoldError("a shrunk axis has a negative stride")
        start, stop = _start_stop(
            shape[dim],
            int(begin[position]),
            int(end[position]),
            stride,
            _masked(begin_mask, position),
            _masked(end_mask, position),
            shrink,
        )
        length = 1 if shrink else max(0, -(-(stop - start) // stride))
        boxes.append((start, stride if length > 1 else 1, length))
        if not shrink:
            out_shape.append(length)
        dim += 1
    while dim < rank:
        whole(dim)
        dim += 1
    return SliceSpec(tuple(boxes), tuple(out_shape))


def sliced(array: np.ndarray, spec: SliceSpec) -> np.ndarray:
    """The elements of `array` that `spec` selects, in the output shape."""
    picks = [start + step * np.arange(count) for start, step, count in spec.boxes]
    return np.array(array[np.ix_(*picks)].reshape(spec.out_shape), order="C")


def strided_slice_spec(context: OperatorContext, shape: Sequence[int]) -> SliceSpec:
    """The selection of a STRIDED_SLICE operator (constant begin, end and strides)."""
    options = context.op.option(tflite.StridedSliceOptions)
    vectors = []
    for position, name in ((1, "begin"), (2, "end"), (3, "strides")):
        value = context.constant(position)
        if value.dtype not in (np.int32, np.int64) or value.ndim != 1:
            raise context.fail(f"{name} must be a 1-D int32 or int64 constant")
        vectors.append([int(v) for v in value])
    masks = {}
    if options is not None:
        masks = {
            "begin_mask": options.BeginMask(),
            "end_mask": options.EndMask(),
            "ellipsis_mask": options.EllipsisMask(),
            "new_axis_mask": options.NewAxisMask(),
            "shrink_axis_mask": options.ShrinkAxisMask(),
        }
        if options.Offset():
            raise context.fail("STRIDED_SLICE with offset=true is not supported")
    try:
        return strided_slice_spec_of(shape, *vectors, **masks)
    except FoldError as error:
        raise context.fail(str(error)) from None


def slice_spec(context: OperatorContext, shape: Sequence[int]) -> SliceSpec:
    """SLICE's constant begin and size (-1: to the end)."""
    begin, size = context.constant(1), context.constant(2)
    if begin.shape != (len(shape),) or size.shape != (len(shape),):
        raise context.fail(f"begin and size must have {len(shape)} values")
    boxes = []
    for dim, (start, length) in enumerate(zip(begin.tolist(), size.tolist(), strict=True)):
        stop = shape[dim] if length == -1 else start + length
        if not 0 <= start <= stop <= shape[dim]:
            raise context.fail(f"begin {start} and size {length} leave dimension {dim}")
        boxes.append((start, 1, stop - start))
    return SliceSpec(tuple(boxes), tuple(count for _, _, count in boxes))


def fold_concatenation(context: OperatorContext, axis: int) -> None:
    values = [context.constant(p) for p in range(len(context.op.inputs))]
    set_folded(context, 0, np.concatenate(values, axis=axis))


def fold_pack(context: OperatorContext, axis: int) -> None:
    values = [context.constant(p) for p in range(len(context.op.inputs))]
    set_folded(context, 0, np.stack(values, axis=axis))


def fold_unpack(context: OperatorContext, axis: int) -> None:
    value = context.constant(0)
    for position in range(value.shape[axis]):
        set_folded(context, position, np.take(value, position, axis=axis))


def _option_type(context: OperatorContext, code: int) -> np.dtype:
    if code not in _TYPES:
        raise context.fail(f"unsupported element type {code}")
    return _TYPES[code]


@operator("SHAPE", types=())
def shape(context: OperatorContext) -> None:
    output = context.tensor(0, output=True)
    if output.dtype not in (np.int32, np.int64):
        raise context.fail(f"SHAPE of type {output.dtype.name}; int32 or int64 expected")
    set_folded(context, 0, np.array(context.tensor(0).shape, dtype=output.dtype))


def _require_constant(context: OperatorContext, what: str) -> None:
    for position, index in enumerate(context.op.inputs):
        if index >= 0 and not context.is_constant(position):
            tensor = context.tensor(position)
            raise context.fail(
                f"{what} of the activation {tensor.describe()} is not supported (only "
                "constant inputs are folded)"
            )


@operator("GATHER", inputs={1: (INT32,)})
def gather(context: OperatorContext) -> None:
    """Folded when the input and the indices are constants; otherwise gathered by a kernel
    (`rearrange.gather_activation`): constant indices, or int32 indices read at run time (a
    loop counter picking a step of a sequence, as a Keras RNN exported as a WHILE does)."""
    options = context.op.option(tflite.GatherOptions)
    indices = context.constant(1) if context.is_constant(1) else None
    params = context.constant(0) if context.is_constant(0) else None
    shape = context.tensor(0).shape if params is None else params.shape
    axis = options.Axis() if options is not None else 0
    batch_dims = options.BatchDims() if options is not None else 0
    if batch_dims != 0:
        raise context.fail(f"GATHER with batch_dims {batch_dims} is not supported")
    if not -len(shape) <= axis < len(shape):
        raise context.fail(f"axis {axis} is outside the {len(shape)}-D input")
    axis %= len(shape)
    size = shape[axis]
    if indices is None:  # int32 (the scan checks it)
        gather_activation(context, axis, None, params)
        return
    if indices.dtype not in (np.int32, np.int64):
        raise context.fail(f"indices of type {indices.dtype.name}")
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        raise context.fail(f"an index lies outside [0, {size})")
    if params is None:
        gather_activation(context, axis, indices)
        return
    set_folded(context, 0, np.take(params, indices.astype(np.int64), axis=axis))


def cast_values(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """TFLM's CAST of constant values (`kernels.elementwise.Cast`): to bool `!= 0`, float to
    an integer type truncated, saturated and NaN 0, otherwise numpy's conversion (integers
    wrap around)."""
    if dtype == np.bool_:
        return values != 0
    if values.dtype.kind == "f" and dtype.kind == "i":
        limits = np.iinfo(dtype)
        wide = np.trunc(values.astype(np.float64))
        clipped = np.clip(np.nan_to_num(wide, nan=0.0), limits.min, limits.max)
        return clipped.astype(dtype)
    return values.astype(dtype)


@operator("FILL", types=())
def fill(context: OperatorContext) -> None:
    _require_constant(context, "FILL")
    dims, value = context.constant(0), context.constant(1)
    if dims.ndim != 1 or value.size != 1:
        raise context.fail("FILL takes a 1-D shape and a scalar value")
    if (dims < 0).any():
        raise context.fail(f"negative dimension in {dims.tolist()}")
    set_folded(context, 0, np.full(dims.tolist(), value.reshape(()), dtype=value.dtype))


@operator("RANGE", types=())
def range_(context: OperatorContext) -> None:
    _require_constant(context, "RANGE")
    start, limit, delta = (context.constant(p).reshape(()) for p in range(3))
    if delta == 0:
        raise context.fail("RANGE with delta 0")
    output = context.tensor(0, output=True)
    set_folded(context, 0, np.arange(start, limit, delta, dtype=output.dtype))


_ARITHMETIC = {"ADD": np.add, "SUB": np.subtract, "MUL": np.multiply}
_ARITHMETIC_OPTIONS = {
    "ADD": tflite.AddOptions,
    "SUB": tflite.SubOptions,
    "MUL": tflite.MulOptions,
}
_CLAMPS = {
    tflite.ActivationFunctionType.NONE: (None, None),
    tflite.ActivationFunctionType.RELU: (0, None),
    tflite.ActivationFunctionType.RELU6: (0, 6),
    tflite.ActivationFunctionType.RELU_N1_TO_1: (-1, 1),
}


def fold_constant_arithmetic(context: OperatorContext) -> bool:
    """Folds ADD, SUB or MUL when both inputs are constants of type int32, int64 or float32
    (broadcasting, fused activation applied as TFLite does); returns whether it folded. The
    activation handlers of these operators call it first."""
    if not all_constant(context):
        return False
    output: Tensor = context.tensor(0, output=True)
    lhs, rhs = context.constant(0), context.constant(1)
    if not lhs.dtype == rhs.dtype == output.dtype or output.dtype not in _ARITHMETIC_TYPES:
        return False
    options = context.op.option(_ARITHMETIC_OPTIONS[context.op.opcode])
    code = options.FusedActivationFunction() if options is not None else 0
    if code not in _CLAMPS:
        raise context.fail(f"unsupported fused activation {code}")
    try:
        with np.errstate(over="ignore"):  # int32 wraps around, as in TFLite's C++
            result = _ARITHMETIC[context.op.opcode](lhs, rhs)
    except ValueError:
        raise context.fail(f"cannot broadcast {list(lhs.shape)} with {list(rhs.shape)}") from None
    low, high = _CLAMPS[code]
    if low is not None or high is not None:
        result = np.clip(result, low, high).astype(output.dtype)
    set_folded(context, 0, result)
    return True
