"""MaxPool, AveragePool (count_include_pad, ceil_mode) and GlobalAveragePool/GlobalMaxPool on
NCHW float tensors; MaxPool and GlobalMaxPool on int8 tensors too, and onnxruntime's
QLinearAveragePool of equal input and output quantisations (TFLite's int8 average: rounded half
away from zero)."""

from __future__ import annotations

import numpy as np

from usmp_dialect.frontends.onnx.importer import MICROSOFT, NodeContext, operator
from usmp_dialect.frontends.onnx.ops.common import FLOAT32, require_float, spatial_window
from usmp_dialect.frontends.onnx.ops.qlinear import per_tensor, require_int8
from usmp_dialect.kernels.conv import Window
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.pooling import Pool, pool2d

INT8 = np.dtype(np.int8)


def _integer(context: NodeContext) -> bool:
    """int8 pooling: QLinearAveragePool, or a MaxPool/GlobalMaxPool of an int8 tensor."""
    if context.node.op_type == "QLinearAveragePool":
        return True
    return context.node.op_type in ("MaxPool", "GlobalMaxPool") and context.dtype(0) == INT8


def _emit(context: NodeContext, pool: Pool) -> None:
    dtype = INT8 if _integer(context) else FLOAT32
    pool2d(
        context.module,
        context.name,
        memref_of(context.shape(0), dtype),
        memref_of(context.output_shape(), dtype),
        pool,
    )
    context.call([context.value(0)], [context.result()])


def _source(context: NodeContext) -> tuple[int, ...]:
    if _integer(context):
        require_int8(context, 0)
    else:
        require_float(context, 0)
    source, output = context.shape(0), context.output_shape()
    if len(source) != 4:
        raise context.fail(f"input shape {list(source)}: only 2-D pooling (NCHW) is supported")
    if len(output) != 4 or output[:2] != source[:2]:
        raise context.fail(f"the output shape {list(output)} does not match the input")
    return source


def pool_dtype(context: NodeContext) -> np.dtype:
    """The element type a pooling node computes in."""
    return INT8 if _integer(context) else FLOAT32


def pooling_parameters(context: NodeContext) -> Pool:
    """A MaxPool, AveragePool or QLinearAveragePool node's pooling."""
    source = _source(context)
    if context.node.op_type == "QLinearAveragePool":
        if context.attr("channels_last", 0):
            raise context.fail("channels_last is not supported")
        if per_tensor(context, 1, 2, "input 0") != per_tensor(context, 3, 4, "the output"):
            raise context.fail("the input and output quantisations differ")  # qdq.py expands it
    maximum = context.node.op_type == "MaxPool"
    if maximum and len(context.node.outputs) > 1 and context.used(context.node.outputs[1]):
        raise context.fail("the Indices output is not supported")
    if context.attr("storage_order", 0):
        raise context.fail("storage_order 1 is not supported")
    kernel = list(context.attr("kernel_shape", []))
    if len(kernel) != 2:
        raise context.fail(f"kernel_shape {kernel}: only 2-D pooling is supported")
    dilations = list(context.attr("dilations", [1, 1]))
    if dilations != [1, 1]:
        raise context.fail(f"dilations {dilations} are not supported")
    window, after = spatial_window(
        context,
        source[2:],
        kernel,
        context.output_shape()[2:],
        dilation_default=False,
        ceil_mode=bool(context.attr("ceil_mode", 0)),
    )
    padded = None
    if not maximum and context.attr("count_include_pad", 0):
        padded = (source[2] + after[0], source[3] + after[1])
    low, high = (-128.0, 127.0) if _integer(context) else (float("-inf"), float("inf"))
    return Pool(
        "max" if maximum else "average",
        (kernel[0], kernel[1]),
        window,
        low,
        high,
        layout="NCHW",
        padded_size=padded,
    )


@operator("MaxPool", "AveragePool")
@operator("QLinearAveragePool", domain=MICROSOFT)
def pool(context: NodeContext) -> None:
    _emit(context, pooling_parameters(context))


@operator("GlobalAveragePool", "GlobalMaxPool")
def global_pool(context: NodeContext) -> None:
    source = _source(context)
    if context.output_shape()[2:] != (1, 1):
        raise context.fail(f"the output shape {list(context.output_shape())} is not [N, C, 1, 1]")
    kind = "max" if context.node.op_type == "GlobalMaxPool" else "average"
    window = Window((1, 1), (1, 1), (0, 0))
    low, high = (-128.0, 127.0) if _integer(context) else (float("-inf"), float("inf"))
    _emit(context, Pool(kind, (source[2], source[3]), window, low, high, layout="NCHW"))
