"""QuantizeLinear and DequantizeLinear (int8): on constants folded at import (weights and
biases of a QDQ model become float constants), on activations per-tensor kernels float32 ->
int8 (`clamp(round(x / scale) + zero_point)`) and int8 -> float32 (`scale * (q - zp)`).
The operators between a DequantizeLinear and a QuantizeLinear compute in float."""

from __future__ import annotations

import numpy as np

from usmp_dialect.frontends.onnx.importer import NodeContext, operator
from usmp_dialect.frontends.onnx.ops.common import FLOAT32, axis
from usmp_dialect.kernels.elementwise import Dequantize, Quantize, UnaryArithmetic, unary
from usmp_dialect.kernels.module import element_type

INT8 = np.dtype(np.int8)


def _parameters(context: NodeContext, rank: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The scales (float32), zero points (int64) and axis of a Q/DQ node."""
    scale = context.constant(1).astype(np.float32)
    zero_point = (
        context.constant(2).astype(np.int64)
        if context.has_input(2)
        else np.zeros_like(scale, np.int64)
    )
    if context.attr("block_size", 0):
        raise context.fail("blocked quantisation is not supported")
    along = axis(context, int(context.attr("axis", 1)), max(rank, 1)) if scale.size > 1 else 0
    if (scale <= 0).any():
        raise context.fail("the scales must be positive")
    return scale, zero_point, along


def _broadcast(values: np.ndarray, rank: int, along: int) -> np.ndarray:
    if values.size == 1:
        return values.reshape(())
    shape = [1] * rank
    shape[along] = values.size
    return values.reshape(shape)


def _elementwise(context: NodeContext, arithmetic: UnaryArithmetic) -> None:
    source = context.shape(0)
    size = int(np.prod(source))
    unary(
        context.module,
        context.name,
        size,
        element_type(context.dtype(0)),
        element_type(context.output_dtype()),
        arithmetic,
    )
    context.call(
        [context.view(context.value(0), (size,))], [context.view(context.result(), (size,))]
    )


@operator("QuantizeLinear")
def quantize_linear(context: NodeContext) -> None:
    output_dtype = context.output_dtype()
    if output_dtype != INT8:
        raise context.fail(
            f"quantisation to {output_dtype.name} is not supported (only int8: quantise with "
            "activation_type=QInt8 and weight_type=QInt8)"
        )
    source = context.shape(0)
    scale, zero_point, along = _parameters(context, len(source))
    if context.is_constant(0):
        value = context.constant(0).astype(np.float32)
        quantized = np.rint(value / _broadcast(scale, value.ndim, along)) + _broadcast(
            zero_point, value.ndim, along
        )
        context.fold(0, np.clip(quantized, -128, 127).astype(np.int8))
        return
    if context.dtype(0) != FLOAT32:
        raise context.fail(f"input is {context.dtype(0).name}; only float32 is supported")
    if scale.size != 1:
        raise context.fail("per-axis quantisation of an activation is not supported")
    _elementwise(
        context,
        Quantize(float(scale.reshape(())), int(zero_point.reshape(())), ties_to_even=True),
    )


@operator("DequantizeLinear")
def dequantize_linear(context: NodeContext) -> None:
    source = context.shape(0)
    scale, zero_point, along = _parameters(context, len(source))
    if context.is_constant(0):
        value = context.constant(0)
        if value.dtype not in (INT8, np.dtype(np.int32)):
            raise context.fail(f"dequantising {value.dtype.name} is not supported (int8, int32)")
        real = (value.astype(np.float64) - _broadcast(zero_point, value.ndim, along)) * _broadcast(
            scale, value.ndim, along
        )
        context.fold(0, real.astype(np.float32))
        return
    if context.dtype(0) != INT8:
        raise context.fail(
            f"dequantising a {context.dtype(0).name} activation is not supported (only int8)"
        )
    if scale.size != 1:
        raise context.fail("per-axis quantisation of an activation is not supported")
    _elementwise(context, Dequantize(float(scale.reshape(())), int(zero_point.reshape(()))))
