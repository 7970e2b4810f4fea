"""Rounding and flooring operators of TFLM's float kernels: FLOOR, CEIL and ROUND (`floor.cc`,
`ceil.cc`, `round.cc`: float32 only, ROUND halves to even as TFLite's `RoundToNearest`), and
FLOOR_DIV and FLOOR_MOD (`floor_div.cc`, `floor_mod.cc`: float32 only, NumPy broadcasting and
a constant input as ADD's), ADD_N (`add_n.cc`: float32 and int8, inputs of one shape, and
for int8 of one quantisation) and ZEROS_LIKE (`zeros_like.cc`: int8, int32, int64, float32);
REVERSE_V2 along constant axes (`reverse.cc`: contiguous axes, up to 8) and BROADCAST_TO to a
constant shape (`broadcast_to.cc`, up to 5-D), of int8, int16, int32, int64, float32 and bool:
values moved, never rescaled (`kernels.rearrange.remap`), as TFLM copies bytes;
BROADCAST_ARGS of constant shapes, folded at import (the output shapes are static); CAST between
int8, int16, int32, float32 and bool (`cast.cc`'s types; `kernels.elementwise.Cast`, folded on
a constant); and EMBEDDING_LOOKUP (`embedding_lookup.cc`: int32 ids, a float32 or int8 table,
copied, or an int8 table dequantised into a float32 output; `kernels.embedding`).

TFLM's FLOOR_DIV fails at `Invoke` when a divisor is zero; a compiled model cannot fail, so it
computes the IEEE quotient's floor there (an infinity, or NaN for 0 / 0). FLOOR_MOD checks
nothing in TFLM either: a zero divisor gives `fmodf`'s NaN in both."""

from __future__ import annotations

import itertools

import numpy as np

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    INT16,
    quantization,
    require_types,
)
from usmp_dialect.frontends.tflite.ops.elementwise import (
    check_broadcast,
    emit_broadcast,
    emit_unary,
)
from usmp_dialect.frontends.tflite.ops.fold import cast_values, set_folded
from usmp_dialect.frontends.tflite.ops.rearrange import remap_input
from usmp_dialect.frontends.tflite.reader import Tensor
from usmp_dialect.kernels.accumulate import QuantizedAddN, add_n, zeros
from usmp_dialect.kernels.binary_math import FloorDivision
from usmp_dialect.kernels.elementwise import Cast
from usmp_dialect.kernels.embedding import embedding_lookup
from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.kernels.float_math import FloatMath
from usmp_dialect.kernels.module import element_type, memref_of
from usmp_dialect.kernels.rearrange import SourceAxis

INT32 = np.dtype(np.int32)
INT64 = np.dtype(np.int64)
BOOL = np.dtype(np.bool_)
_MOVED = (INT8, INT16, INT32, INT64, FLOAT32, BOOL)  # REVERSE_V2's and BROADCAST_TO's types


@operator("FLOOR", "CEIL", "ROUND", types=(FLOAT32,))
def rounding(context: OperatorContext) -> None:
    require_types(context, context.tensor(0), context.tensor(0, output=True), allowed=(FLOAT32,))
    emit_unary(context, FloatMath(context.op.opcode.lower()), in_place=True)


@operator("FLOOR_DIV", "FLOOR_MOD", types=(FLOAT32,))
def floor_division(context: OperatorContext) -> None:
    if len(context.op.inputs) != 2:
        raise context.fail(f"{len(context.op.inputs)} inputs, 2 expected")
    lhs, rhs, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    dtype = require_types(context, lhs, rhs, output, allowed=(FLOAT32,))
    check_broadcast(context)
    modulo = context.op.opcode == "FLOOR_MOD"
    emit_broadcast(context, FloorDivision(modulo), dtype, in_place=True)


def _per_tensor(context: OperatorContext, tensor: Tensor) -> tuple[float, int]:
    quant = quantization(context, tensor)
    if len(quant.scales) != 1:
        raise context.fail(f"{tensor.describe()} is quantised per channel")
    if not quant.scale > 0:
        raise context.fail(f"{tensor.describe()} has the invalid scale {quant.scale:g}")
    return float(np.float32(quant.scale)), int(quant.zero_point)


def _quantized_add_n(context: OperatorContext, sources: list[Tensor]) -> QuantizedAddN:
    """TFLM's `CalculateOpData` for int8: one quantisation for all inputs; the multipliers of
    the input scale to twice itself and of that to the output, in double precision, both
    below 1 (`QuantizeMultiplierSmallerThanOneExp`)."""
    scale, zero_point = _per_tensor(context, sources[0])
    for source in sources[1:]:
        if _per_tensor(context, source) != (scale, zero_point):
            raise context.fail(
                f"{source.describe()} is quantised otherwise than {sources[0].describe()} "
                "(TFLite requires one scale and zero point for all inputs)"
            )
    output_scale, output_zero_point = _per_tensor(context, context.tensor(0, output=True))
    left_shift = 20
    twice = 2 * scale
    input_multiplier, input_shift = quantize_multiplier(scale / twice)
    output_multiplier, output_shift = quantize_multiplier(
        twice / ((1 << left_shift) * output_scale)
    )
    if output_shift > 0:
        raise context.fail(
            f"the output multiplier {twice / ((1 << left_shift) * output_scale):g} is not below "
            "1 (TFLite requires it)"
        )
    return QuantizedAddN(
        -zero_point,
        input_multiplier,
        input_shift,
        output_multiplier,
        output_shift,
        output_zero_point,
        left_shift,
    )


@operator("ADD_N", types=(INT8, FLOAT32))
def sum_of_inputs(context: OperatorContext) -> None:
    count = len(context.op.inputs)
    if count < 2:
        raise context.fail(f"{count} input, at least 2 expected")
    sources = [context.tensor(position) for position in range(count)]
    output = context.tensor(0, output=True)
    dtype = require_types(context, *sources, output, allowed=(INT8, FLOAT32))
    for source in sources:
        if source.shape != output.shape:
            raise context.fail(
                f"{source.describe()} has the shape {list(source.shape)}, the output "
                f"{list(output.shape)} (ADD_N does not broadcast)"
            )
    parameters = _quantized_add_n(context, sources) if dtype == INT8 else None
    size = int(np.prod(output.shape))
    add_n(context.module, context.name, count, size, element_type(dtype), parameters)
    values = [context.view(context.value(position), (size,)) for position in range(count)]
    context.call(values, [context.view(context.result(), (size,))])


_CAST_TYPES = (INT8, INT16, INT32, FLOAT32, BOOL)


@operator("CAST", types=_CAST_TYPES)
def cast(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    if context.is_constant(0):
        set_folded(context, 0, cast_values(np.asarray(context.constant(0)), output.dtype))
        return
    require_types(context, source, allowed=_CAST_TYPES)
    require_types(context, output, allowed=_CAST_TYPES)
    emit_unary(context, Cast(), in_place=False)


@operator("ZEROS_LIKE", types=(INT8, INT32, INT64, FLOAT32))
def zeros_like(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output, allowed=(INT8, INT32, INT64, FLOAT32))
    if source.shape != output.shape:
        raise context.fail(
            f"the output shape {list(output.shape)} differs from the input's {list(source.shape)}"
        )
    if context.is_constant(0):
        context.fold(0, np.zeros(output.shape, dtype))
        return
    size = int(np.prod(output.shape))
    zeros(context.module, context.name, size, element_type(dtype))
    context.call([], [context.view(context.result(), (size,))])


def _remap(context: OperatorContext, axes: list[SourceAxis]) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output, allowed=_MOVED)
    if context.is_constant(0):
        raise context.fail("the input is a constant (a converter folds such operators)")
    remap_input(context, dtype, axes)


def _constant_integers(context: OperatorContext, position: int, what: str) -> list[int]:
    tensor = context.tensor(position)
    if tensor.dtype not in (INT32, INT64):
        raise context.fail(f"the {what} {tensor.describe()} is {tensor.dtype.name}, not int32")
    return [int(v) for v in np.asarray(context.constant(position)).reshape(-1)]


@operator("REVERSE_V2", types=_MOVED)
def reverse(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    rank = len(source.shape)
    if context.tensor(1).dtype != INT32 or len(context.tensor(1).shape) != 1:
        raise context.fail("the axes must be a 1-D int32 constant (TFLite's only axis type)")
    axes = _constant_integers(context, 1, "axes")
    if not axes or len(axes) > rank or any(not -rank <= a < rank for a in axes):
        raise context.fail(f"the axes {axes} do not fit the {rank}-D input")
    normal = sorted(a % rank for a in axes)
    if any(b != a + 1 for a, b in itertools.pairwise(normal)):
        raise context.fail(f"the axes {axes} are not contiguous (TFLM reverses contiguous axes)")
    if tuple(output.shape) != tuple(source.shape):
        raise context.fail(
            f"the output shape {list(output.shape)} differs from the input's {list(source.shape)}"
        )
    _remap(
        context,
        [
            SourceAxis(((d, -1),), size - 1, size)
            if d in normal
            else SourceAxis(((d, 1),), 0, size)
            for d, size in enumerate(source.shape)
        ],
    )


@operator("BROADCAST_TO", types=_MOVED)
def broadcast_to(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    shape = tuple(_constant_integers(context, 1, "shape"))
    if len(shape) > 5:
        raise context.fail(f"the shape {list(shape)} has more than 5 dimensions (TFLM's limit)")
    if shape != tuple(output.shape):
        raise context.fail(
            f"the shape {list(shape)} differs from the output's {list(output.shape)}"
        )
    lead = len(shape) - len(source.shape)
    if lead < 0 or any(
        size not in (1, target) for size, target in zip(source.shape, shape[lead:], strict=True)
    ):
        raise context.fail(f"the input {list(source.shape)} does not broadcast to {list(shape)}")
    _remap(
        context,
        [
            SourceAxis((), 0, 1) if size == 1 else SourceAxis(((lead + d, 1),), 0, size)
            for d, size in enumerate(source.shape)
        ],
    )


@operator("EMBEDDING_LOOKUP", types=(INT32, INT8, FLOAT32))
def embedding(context: OperatorContext) -> None:
    ids, table, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    if ids.dtype != INT32 or len(ids.shape) != 1:
        raise context.fail(f"the ids {ids.describe()} must be a 1-D int32 tensor")
    if context.is_constant(0):
        raise context.fail("the ids are a constant (a converter folds such lookups)")
    if len(table.shape) < 2:
        raise context.fail(f"the table {table.describe()} must have 2 or more dimensions")
    pairs = {(FLOAT32, FLOAT32), (INT8, INT8), (INT8, FLOAT32)}
    if (table.dtype, output.dtype) not in pairs:
        raise context.fail(
            f"a {table.dtype.name} table into a {output.dtype.name} output is not supported "
            "(float32 -> float32, int8 -> int8 or int8 -> float32)"
        )
    expected = (ids.shape[0], *table.shape[1:])
    if tuple(output.shape) != expected:
        raise context.fail(f"the output shape {list(output.shape)} should be {list(expected)}")
    scale = None
    if table.dtype == INT8 and output.dtype == FLOAT32:
        table_scale, zero_point = _per_tensor(context, table)
        if zero_point != 0:
            raise context.fail(f"the table's zero point is {zero_point} (TFLite requires 0)")
        scale = table_scale
    rows, columns = table.shape[0], int(np.prod(table.shape[1:]))
    table_type = memref_of((rows, columns), table.dtype)
    output_type = memref_of((ids.shape[0], columns), output.dtype)
    values = [context.value(0)]
    table_global = None
    if context.is_constant(1):
        array = np.asarray(context.constant(1)).reshape(rows, columns)
        table_global, _ = context.module.constant(f"{context.name}_table", array)
    else:
        values.append(context.view(context.value(1), (rows, columns)))
    embedding_lookup(
        context.module, context.name, ids.shape[0], table_type, output_type, table_global, scale
    )
    context.call(values, [context.view(context.result(), (ids.shape[0], columns))])


@operator("BROADCAST_ARGS", types=())
def broadcast_args(context: OperatorContext) -> None:
    """The broadcast of two constant shapes (int32 or int64, as TFLM's `broadcast_args.cc`)."""
    for position in (0, 1):
        if not context.is_constant(position):
            raise context.fail(
                f"BROADCAST_ARGS of the activation {context.tensor(position).describe()} is not "
                "supported (only constant shapes are folded)"
            )
    first, second = (np.asarray(context.constant(p)) for p in (0, 1))
    output = context.tensor(0, output=True)
    if first.ndim != 1 or second.ndim != 1 or output.dtype not in (INT32, INT64):
        raise context.fail("BROADCAST_ARGS takes two 1-D int32 or int64 shapes")
    try:
        shape = np.broadcast_shapes(tuple(first.tolist()), tuple(second.tolist()))
    except ValueError:
        raise context.fail(
            f"the shapes {first.tolist()} and {second.tolist()} do not broadcast"
        ) from None
    set_folded(context, 0, np.array(shape, output.dtype))
