"""Fused row streaming for TFLite graphs: the graph as `graph.streaming` sees it, and the
emission of a chosen group through the operators' own kernels (`kernels.streaming`).

Streamable: int8 and float32 CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D and MAX_POOL_2D of
batch 1 (a window of input rows per output row), and an int8 AVERAGE_POOL_2D whose window is
the whole input (VALID, a 1 x 1 output: the global reducer). Every other operator is opaque.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import tflite
from xdsl.dialects.builtin import MemRefType

from usmp_dialect.analysis.operators import FUSED_ATTRIBUTE
from usmp_dialect.dialects.usmp import OperatorFacts
from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.streaming import call_group, fused_attribute, group_name
from usmp_dialect.frontends.tflite.importer import OperatorContext, TfliteImporter
from usmp_dialect.frontends.tflite.macs import operator_macs
from usmp_dialect.frontends.tflite.ops.common import FLOAT32, INT8, window
from usmp_dialect.frontends.tflite.ops.conv import convolution_kernel
from usmp_dialect.frontends.tflite.ops.pooling import pooling_parameters
from usmp_dialect.frontends.tflite.reader import Graph, Operator
from usmp_dialect.graph.streaming import (
    Group,
    RowWindow,
    StreamGraph,
    StreamOperator,
    StreamTensor,
    loops,
    schedule,
)
from usmp_dialect.kernels.conv import Window
from usmp_dialect.kernels.module import mark_operator, memref_of
from usmp_dialect.kernels.pooling import Pool, pool2d
from usmp_dialect.kernels.streaming import GlobalAverage, StreamLayer, fused_rows

_WINDOWED = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D")


def _is_global_average(graph: Graph, op: Operator) -> bool:
    if op.opcode != "AVERAGE_POOL_2D":
        return False
    source, output = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    options = op.option(tflite.Pool2DOptions)
    return (
        source.dtype == INT8
        and options is not None
        and options.Padding() == tflite.Padding.VALID
        and tuple(output.shape[1:3]) == (1, 1)
        and (options.FilterHeight(), options.FilterWidth()) == tuple(source.shape[1:3])
    )


def _row_window(importer: TfliteImporter, op: Operator) -> RowWindow | None:
    """The window along the height of a streamable operator (None: not streamable)."""
    graph = importer.graph
    if op.opcode not in _WINDOWED or len(op.outputs) != 1 or not op.inputs:
        return None
    source, output = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(source.shape) != 4 or len(output.shape) != 4 or source.shape[0] != 1:
        return None
    if source.dtype != output.dtype or source.dtype not in (INT8, FLOAT32):
        return None
    if importer.constant_value(source) is not None:
        return None
    context = OperatorContext(importer, op)
    try:
        if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            depthwise = op.opcode == "DEPTHWISE_CONV_2D"
            options = op.option(
                tflite.DepthwiseConv2DOptions if depthwise else tflite.Conv2DOptions
            )
            filters = graph.tensors[op.inputs[1]]
            if options is None or len(filters.shape) != 4:
                return None
            if source.dtype == FLOAT32 and filters.dtype != FLOAT32:
                return None  # hybrid: the input is quantised as a whole (kernels/hybrid.py)
            dilation = (options.DilationHFactor(), options.DilationWFactor())
            kernel = (filters.shape[1], filters.shape[2])
        else:
            options = op.option(tflite.Pool2DOptions)
            if options is None:
                return None
            dilation = (1, 1)
            kernel = (options.FilterHeight(), options.FilterWidth())
        found = window(context, options, source, output, kernel, dilation)
    except ModelImportError:
        return None  # the handler reports it
    return RowWindow(kernel[0], found.stride[0], found.dilation[0], found.padding[0])


def stream_graph(importer: TfliteImporter) -> StreamGraph:
    """The TFLite graph as streaming sees it (tensor indices are the graph's)."""
    graph = importer.graph
    readers: dict[int, int] = {}
    for op in graph.operators:
        for index in op.inputs:
            if index >= 0:
                readers[index] = readers.get(index, 0) + 1
    boundary = set(graph.inputs) | set(graph.outputs)
    placed = set(importer.concat_slices.slices) | set(importer.strided)
    placed |= {target for target, _ in importer.concat_slices.slices.values()}
    tensors: list[StreamTensor] = []
    for tensor in graph.tensors:
        shape = tensor.shape or (1,)
        height = shape[1] if len(shape) == 4 else 1
        size = int(np.prod(shape, dtype=np.int64)) * max(tensor.dtype.itemsize, 1)
        constant = importer.constant_value(tensor) is not None
        tensors.append(
            StreamTensor(
                tensor.name,
                height if not constant else 1,
                0 if constant else size // max(height, 1),
                pinned=tensor.index in boundary
                or tensor.index in placed
                or readers.get(tensor.index, 0) > 1,
            )
        )
    operators: list[StreamOperator] = []
    for op in graph.operators:
        activations = tuple(
            i for i in op.inputs if i >= 0 and importer.constant_value(graph.tensors[i]) is None
        )
        outputs = tuple(i for i in op.outputs if i >= 0)
        name = f"{op.opcode.lower()}_{op.index}"
        if _is_global_average(graph, op):
            channels = graph.tensors[op.inputs[0]].shape[3]
            operators.append(
                StreamOperator(name, "global_reduce", activations, outputs, None, 4 * channels)
            )
            continue
        row_window = _row_window(importer, op)
        kind = "window" if row_window is not None and len(activations) == 1 else "opaque"
        output = graph.tensors[outputs[0]] if outputs else None
        # int8 CONV_2D blocks two output positions down a 1-wide output (kernels.conv): two
        # rows per step keep that block.
        blocked = (
            op.opcode == "CONV_2D"
            and output is not None
            and output.dtype == INT8
            and len(output.shape) == 4
            and output.shape[2] == 1
        )
        operators.append(
            StreamOperator(
                name, kind, activations, outputs, row_window, row_block=2 if blocked else 1
            )
        )
    return StreamGraph(tuple(tensors), tuple(operators))


def _layer(context: OperatorContext) -> StreamLayer:
    """A windowed operator's row functions: its kernel on the rows one window reads."""
    op = context.op
    source, output = context.tensor(0), context.tensor(0, output=True)
    input_type = memref_of(source.shape, source.dtype)
    output_type = memref_of(output.shape, output.dtype)
    if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        emit, full = convolution_kernel(context)

        def rows(name: str, in_type: MemRefType, out_type: MemRefType, top_pad: int) -> None:
            emit(name, in_type, out_type, _with_top(full, top_pad))

        return StreamLayer(context.name, input_type, output_type, rows)
    pool = pooling_parameters(context)

    def pool_rows(name: str, in_type: MemRefType, out_type: MemRefType, top_pad: int) -> None:
        pool2d(
            context.module,
            name,
            in_type,
            out_type,
            replace(pool, window=_with_top(pool.window, top_pad)),
        )

    return StreamLayer(context.name, input_type, output_type, pool_rows)


def _with_top(full: Window, top_pad: int) -> Window:
    return Window(full.stride, full.dilation, (top_pad, full.padding[1]))


def _reducer(context: OperatorContext) -> GlobalAverage:
    pool: Pool = pooling_parameters(context)
    source, output = context.tensor(0), context.tensor(0, output=True)
    return GlobalAverage(
        memref_of(source.shape, source.dtype),
        memref_of(output.shape, output.dtype),
        int(pool.activation_min),
        int(pool.activation_max),
    )


def emit_group(importer: TfliteImporter, stream: StreamGraph, group: Group) -> None:
    """Emits `group`'s row functions and group function, allocates its line buffers in
    `@main` and calls it."""
    graph = importer.graph
    ops = [graph.operators[index] for index in group.operators]
    contexts = [OperatorContext(importer, op) for op in ops]
    reducer = (
        _reducer(contexts[-1]) if stream.operators[ops[-1].index].kind == "global_reduce" else None
    )
    windowed = contexts[:-1] if reducer is not None else contexts
    layers = [_layer(context) for context in windowed]
    plan = schedule(stream, group.operators)
    name = importer.module.unique(group_name(stream, group))
    emitted = len(importer.module.functions)
    function, scratch = fused_rows(
        importer.module, name, layers, reducer, plan.buffer_rows, loops(plan.steps)
    )
    importer.module.add(function)
    macs = sum(operator_macs(graph, op) for op in ops)
    mark_operator(importer.module.functions[emitted:], OperatorFacts("FUSED", ops[0].index, macs))
    function.attributes[FUSED_ATTRIBUTE] = fused_attribute(importer.names, stream, group)

    first_input = contexts[0].value(0)
    output = importer.output_buffer(graph.tensors[ops[-1].outputs[0]])
    call_group(importer.main, importer.names, stream, group, name, scratch, first_input, output)
