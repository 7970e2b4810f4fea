"""Multiply-accumulates of an ONNX node, from its static shapes (the `macs` of the
`usmp.operator` attribute on its function).

Counted as the usual model profilers do: every tap of every window, padding included. Conv and
QLinearConv: output elements x the weight's `C/group x kH x kW` (the weight is `[M, C/group,
kH, kW]`); Gemm, QGemm, MatMul and QLinearMatMul: output elements x the reduced dimension of A.
Every other node counts 0 (a BatchNormalization or Relu fused into a Conv adds nothing).
"""

from __future__ import annotations

import math

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.onnx.importer import NodeContext

_WEIGHT_INPUT = {"Conv": 1, "QLinearConv": 3}
_MATMULS = ("Gemm", "QGemm", "MatMul", "QLinearMatMul")


def node_macs(context: NodeContext) -> int:
    """The multiply-accumulates of one run of the node (0 for nodes that do none)."""
    op_type = context.node.op_type
    try:
        if op_type in _WEIGHT_INPUT:
            weights = context.shape(_WEIGHT_INPUT[op_type])
            return math.prod(context.output_shape()) * math.prod(weights[1:])
        if op_type in _MATMULS:
            a = context.shape(0)
            transposed = op_type in ("Gemm", "QGemm") and bool(context.attr("transA", 0))
            reduced = a[0] if transposed and len(a) == 2 else a[-1]
            return math.prod(context.output_shape()) * reduced
    except ModelImportError:
        return 0  # a shape the handler itself would have refused
    return 0
