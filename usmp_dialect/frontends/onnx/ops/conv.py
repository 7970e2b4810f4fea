"""Conv (grouped, depthwise, padded, strided, dilated; a following BatchNormalization and
Relu/Clip fused), Gemm and MatMul with constant weights (a following Relu/Clip fused)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from xdsl.dialects.builtin import MemRefType

from usmp_dialect.frontends.onnx.importer import NodeContext, operator
from usmp_dialect.frontends.onnx.ops.common import (
    FLOAT32,
    dense,
    fused_activation,
    require_float,
    spatial_window,
)
from usmp_dialect.kernels.conv import Window, conv2d_nchw
from usmp_dialect.kernels.module import memref_of


def batch_norm_parameters(context: NodeContext, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """A BatchNormalization node's per-channel `scale, shift` (inference form:
    `y = x * scale + shift`), computed in float64 from its constant inputs."""
    if context.attr("training_mode", 0):
        raise context.fail("training_mode is not supported (inference only)")
    if any(context.used(name) for name in context.node.outputs[1:] if name):
        raise context.fail("the running mean and variance outputs are not supported")
    gamma, beta, mean, variance = (
        context.constant(position).astype(np.float64) for position in (1, 2, 3, 4)
    )
    for name, array in (("scale", gamma), ("B", beta), ("mean", mean), ("var", variance)):
        if array.shape != (channels,):
            raise context.fail(f"{name} has shape {list(array.shape)}, [{channels}] expected")
    scale = gamma / np.sqrt(variance + float(context.attr("epsilon", 1e-5)))
    return scale, beta - mean * scale


def _batch_norm_constants(context: NodeContext) -> bool:
    return all(context.is_constant(position) for position in (1, 2, 3, 4))


ConvEmitter = Callable[[str, MemRefType, MemRefType, Window, bool], None]
"""`(name, input, output, window, in_place)`: adds `@name(%input, %output)` computing the Conv
with `window` (the node's, or a row's: `frontends/onnx/streaming.py`)."""


def convolution_kernel(context: NodeContext) -> tuple[ConvEmitter, Window, str]:
    """A float Conv node's emitter (its constants added, a BatchNormalization and a Relu/Clip
    reading only its output fused), its window, and the tensor the fused function writes."""
    require_float(context, 0, 1)
    source, weights_shape = context.shape(0), context.shape(1)
    if len(source) != 4 or len(weights_shape) != 4:
        raise context.fail("input and weights must be 4-D (NCHW, OIHW); only 2-D Conv is supported")
    weights = context.constant(1).astype(np.float64)
    groups = int(context.attr("group", 1))
    batches, channels, height, width = source
    out_channels, group_channels, kernel_h, kernel_w = weights.shape
    kernel_shape = list(context.attr("kernel_shape", [kernel_h, kernel_w]))
    if kernel_shape != [kernel_h, kernel_w]:
        raise context.fail(
            f"kernel_shape {kernel_shape} differs from the weights' {[kernel_h, kernel_w]}"
        )
    if (
        groups < 1
        or channels % groups
        or out_channels % groups
        or channels // groups != group_channels
    ):
        raise context.fail(
            f"weights {list(weights.shape)} with group {groups} do not fit {channels} channels"
        )
    bias = None
    if context.has_input(2):
        bias = context.constant(2).astype(np.float64)
        if bias.shape != (out_channels,):
            raise context.fail(f"the bias has shape {list(bias.shape)}, [{out_channels}] expected")
    output = context.output_shape()
    if len(output) != 4 or output[:2] != (batches, out_channels):
        raise context.fail(f"the output shape {list(output)} does not match the weights")
    window, _ = spatial_window(context, (height, width), (kernel_h, kernel_w), output[2:])
    produced = context.output_name()
    batch_norm = context.single_reader(produced, ("BatchNormalization",))
    if batch_norm is not None and _batch_norm_constants(NodeContext(context.importer, batch_norm)):
        scale, shift = batch_norm_parameters(context.fuse(batch_norm), out_channels)
        weights = weights * scale[:, None, None, None]
        bias = (bias if bias is not None else np.zeros(out_channels)) * scale + shift
        produced = batch_norm.outputs[0]
    activation, produced = fused_activation(context, produced)
    module = context.module
    filters = module.constant(f"{context.name}_filter", weights.astype(np.float32))
    bias_symbol = (
        module.constant(f"{context.name}_bias", bias.astype(np.float32))
        if bias is not None
        else None
    )

    def emit(
        name: str, input_type: MemRefType, output_type: MemRefType, at: Window, in_place: bool
    ) -> None:
        conv2d_nchw(
            module,
            name,
            input_type,
            output_type,
            filters,
            bias_symbol,
            at,
            activation,
            groups,
            in_place=in_place,
        )

    return emit, window, produced


@operator("Conv")
def convolution(context: NodeContext) -> None:
    emit, window, produced = convolution_kernel(context)
    source, output = context.shape(0), context.output_shape()
    # TinyEngine's in-place depthwise convolution, where it lowers the peak (importer).
    groups = int(context.attr("group", 1))
    depthwise = groups == source[1] == output[1] and source[0] == 1
    target = context.depthwise_in_place(produced) if depthwise else None
    emit(
        context.name,
        memref_of(source, FLOAT32),
        memref_of(output, FLOAT32),
        window,
        target is not None,
    )
    context.call(
        [context.value(0)], [target if target is not None else context.result(name=produced)]
    )


def _dense(context: NodeContext, weights: np.ndarray, bias: np.ndarray | None) -> None:
    """Gemm/MatMul in float32 (`weights` `[units, depth]`), a Relu/Clip reading only its
    output fused into it."""
    activation, produced = fused_activation(context, context.output_name())
    float_bias = bias.astype(np.float32) if bias is not None else None
    dense(context, weights.astype(np.float32), float_bias, activation, produced)


@operator("Gemm")
def gemm(context: NodeContext) -> None:
    require_float(context, 0, 1)
    source = context.shape(0)
    if len(source) != 2:
        raise context.fail(f"input A has shape {list(source)}, 2-D expected")
    if context.attr("transA", 0):
        raise context.fail("transA is not supported")
    if not context.is_constant(1):
        raise context.fail(
            "input B must be a constant (a Gemm of two activations is not supported)"
        )
    b = context.constant(1).astype(np.float64)
    if b.ndim != 2:
        raise context.fail(f"input B has shape {list(b.shape)}, 2-D expected")
    weights = (b if context.attr("transB", 0) else b.T) * float(context.attr("alpha", 1.0))
    units, depth = weights.shape
    if depth != source[1]:
        raise context.fail(f"input B {list(b.shape)} does not fit input A {list(source)}")
    bias = None
    if context.has_input(2):
        c = context.constant(2).astype(np.float64) * float(context.attr("beta", 1.0))
        if c.size == 1:
            bias = np.full(units, float(c.reshape(())))
        elif c.shape in ((units,), (1, units)) or (
            c.shape == (source[0], units) and source[0] == 1
        ):
            bias = c.reshape(units)
        else:
            raise context.fail(
                f"input C of shape {list(c.shape)} is not supported (only [N] or [1, N])"
            )
    _dense(context, weights, bias)


@operator("MatMul")
def matmul(context: NodeContext) -> None:
    require_float(context, 0, 1)
    if not context.is_constant(1):
        raise context.fail(
            "input B must be a constant (a MatMul of two activations is not supported)"
        )
    b = context.constant(1).astype(np.float64)
    source = context.shape(0)
    if b.ndim != 2 or len(source) < 1 or source[-1] != b.shape[0]:
        raise context.fail(
            f"input B {list(b.shape)} does not fit input A {list(source)} (B must be 2-D)"
        )
    _dense(context, b.T, None)
