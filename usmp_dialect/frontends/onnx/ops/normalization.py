"""Softmax (over the last axis, or the flattened trailing axes before opset 13), LRN, and a
BatchNormalization that was not fused into a convolution (a per-channel affine kernel)."""

from __future__ import annotations

import numpy as np

from usmp_dialect.frontends.onnx.importer import NodeContext, operator
from usmp_dialect.frontends.onnx.ops.common import FLOAT32, axis, require_float
from usmp_dialect.frontends.onnx.ops.conv import batch_norm_parameters
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.normalization import Lrn, channel_affine, lrn
from usmp_dialect.kernels.softmax import softmax_float


@operator("Softmax")
def softmax(context: NodeContext) -> None:
    require_float(context, 0)
    source = context.shape(0)
    rank = len(source)
    along = axis(context, int(context.attr("axis", 1 if context.opset < 13 else -1)), rank)
    if context.opset >= 13 and along != rank - 1 and int(np.prod(source[along + 1 :])) != 1:
        raise context.fail(
            f"softmax over axis {along} of {list(source)}: only the last axis is supported"
        )
    rows = int(np.prod(source[:along]))
    depth = int(np.prod(source[along:]))
    type_ = memref_of((rows, depth), FLOAT32)
    softmax_float(context.module, context.name, type_, 1.0)
    context.call(
        [context.view(context.value(0), (rows, depth))],
        [context.view(context.result(), (rows, depth))],
    )


def lrn_parameters(context: NodeContext) -> Lrn:
    """An LRN node's parameters (checked)."""
    require_float(context, 0)
    source = context.shape(0)
    if len(source) < 3:
        raise context.fail(f"input shape {list(source)}: (N, C, ...) expected")
    size = int(context.attr("size", 0))
    if size < 1:
        raise context.fail(f"invalid size {size}")
    return Lrn(
        size,
        float(context.attr("alpha", 1e-4)),
        float(context.attr("beta", 0.75)),
        float(context.attr("bias", 1.0)),
    )


@operator("LRN")
def local_response_normalization(context: NodeContext) -> None:
    params = lrn_parameters(context)
    lrn(context.module, context.name, memref_of(context.shape(0), FLOAT32), params)
    context.call([context.value(0)], [context.result()])


@operator("BatchNormalization")
def batch_normalization(context: NodeContext) -> None:
    require_float(context, 0)
    source = context.shape(0)
    if len(source) < 2:
        raise context.fail(f"input shape {list(source)}: (N, C, ...) expected")
    scale, shift = batch_norm_parameters(context, source[1])
    module = context.module
    channel_affine(
        module,
        context.name,
        memref_of(source, FLOAT32),
        module.constant(f"{context.name}_scale", scale.astype(np.float32)),
        module.constant(f"{context.name}_shift", shift.astype(np.float32)),
    )
    context.call([context.value(0)], [context.result_over(0)])
