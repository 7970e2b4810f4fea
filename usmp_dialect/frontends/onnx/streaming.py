"""Fused row streaming for ONNX graphs: the graph as `graph.streaming` sees it, and the emission
of a chosen group through the nodes' own kernels (`kernels.streaming`, NCHW rows: the height is
axis 2, the layout the ONNX frontend keeps).

Streamable (batch 1, one activation input): a float Conv (group 1 or depthwise, any stride,
dilation and pads; with the BatchNormalization and Relu/Clip the handler fuses into it), a
QLinearConv (also what `qdq.py` makes of a QDQ Conv, its Relu/Clip included) of the same
shapes, MaxPool, AveragePool (not `count_include_pad`) and QLinearAveragePool, float or int8
(a window of input rows per output row), a float LRN (across channels at each position: a
window of one row), float elementwise nodes of one activation — Relu, Clip, LeakyRelu, Sigmoid,
and Add/Sub/Mul/Div by a constant the same on every row (the zoo's unfolded batch norms) — also
windows of one row, and a float GlobalAveragePool (the global reducer, float32 sums). Every
other node is opaque.

The graph is the one the plain import wrote (`NodeRecord`s: what each handler read, wrote and
fused), so the decision sees exactly the nodes that become functions: a Conv with its fused
activation is one operator writing the activation's output.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from xdsl.dialects.builtin import MemRefType

from usmp_dialect.analysis.operators import FUSED_ATTRIBUTE
from usmp_dialect.dialects.usmp import OperatorFacts
from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.onnx.importer import (
    MICROSOFT,
    NodeContext,
    OnnxImporter,
    StreamedGroups,
)
from usmp_dialect.frontends.onnx.macs import node_macs
from usmp_dialect.frontends.onnx.ops.common import FLOAT32, NO_ACTIVATION, spatial_window
from usmp_dialect.frontends.onnx.ops.conv import convolution_kernel
from usmp_dialect.frontends.onnx.ops.elementwise import unary_arithmetic
from usmp_dialect.frontends.onnx.ops.normalization import lrn_parameters
from usmp_dialect.frontends.onnx.ops.pooling import pool_dtype, pooling_parameters
from usmp_dialect.frontends.onnx.ops.qlinear import qlinear_conv_kernel
from usmp_dialect.frontends.onnx.reader import Node
from usmp_dialect.frontends.streaming import call_group, fused_attribute, group_name
from usmp_dialect.graph.selection import choose_stream_groups
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
from usmp_dialect.kernels.elementwise import FloatBinary, Operand, binary, unary_shaped
from usmp_dialect.kernels.module import mark_operator, memref_of
from usmp_dialect.kernels.normalization import lrn
from usmp_dialect.kernels.pooling import pool2d
from usmp_dialect.kernels.streaming import GlobalAverage, RowEmitter, StreamLayer, fused_rows

HEIGHT_AXIS = 2  # NCHW
INT8 = np.dtype(np.int8)
_CONVOLUTIONS = {"Conv": FLOAT32, "QLinearConv": INT8}
_POOLS = ("MaxPool", "AveragePool", "QLinearAveragePool")
_UNARY = ("Relu", "Clip", "LeakyRelu", "Sigmoid")
_BINARY = ("Add", "Sub", "Mul", "Div")
_PER_POSITION = ("LRN", *_UNARY, *_BINARY)  # windows of one row


@dataclass(frozen=True)
class StreamedGroup:
    """A chosen group: the graph it was chosen on, the group, and the node of each operator."""

    stream: StreamGraph
    group: Group
    nodes: tuple[int, ...]


def _domain(node: Node) -> str:
    return "" if node.domain in ("", "ai.onnx") else node.domain


def _four_d(importer: OnnxImporter, name: str) -> tuple[tuple[int, ...], np.dtype] | None:
    info = importer.graph.infos.get(name)
    if info is None or info.shape is None or info.dtype is None or len(info.shape) != 4:
        return None
    return info.shape, info.dtype


def _row_window(importer: OnnxImporter, node: Node, source: str, target: str) -> RowWindow | None:
    """The window along the height of a streamable node reading `source` and writing `target`
    (its fused activation's output for a Conv); None: not streamable."""
    expected = _CONVOLUTIONS.get(node.op_type)
    pool = node.op_type in _POOLS
    streamable = expected is not None or pool or node.op_type in _PER_POSITION
    if not streamable or _domain(node) not in ("", MICROSOFT):
        return None
    if (node.op_type == "QLinearAveragePool") != (_domain(node) == MICROSOFT):
        return None
    found, written = _four_d(importer, source), _four_d(importer, target)
    if found is None or written is None:
        return None
    (shape, dtype), (out_shape, out_dtype) = found, written
    if shape[0] != 1 or dtype != out_dtype or out_shape[0] != 1:
        return None
    if node.inputs[0] != source:
        return None
    context = NodeContext(importer, node)
    try:
        if node.op_type in _PER_POSITION:
            return RowWindow(1, 1, 1, 0) if _per_position(context, shape, out_shape) else None
        if expected is not None:
            weights = 3 if node.op_type == "QLinearConv" else 1
            if dtype != expected or not context.is_constant(weights):
                return None
            out_channels, _, kernel_h, kernel_w = context.constant(weights).shape
            groups = int(context.attr("group", 1))
            if groups != 1 and not groups == shape[1] == out_channels:
                return None  # grouped convolutions stay unfused
            window, _ = spatial_window(
                context, shape[2:], (kernel_h, kernel_w), context.output_shape()[2:]
            )
            return RowWindow(kernel_h, window.stride[0], window.dilation[0], window.padding[0])
        if dtype not in (FLOAT32, INT8):
            return None
        parameters = pooling_parameters(context)
    except ModelImportError:
        return None  # the handler reports it
    if parameters.padded_size is not None:
        return None  # count_include_pad: the divisor counts padding a row view cannot see
    window = parameters.window
    return RowWindow(parameters.filter_size[0], window.stride[0], 1, window.padding[0])


def _per_position(context: NodeContext, shape: tuple[int, ...], out_shape: tuple[int, ...]) -> bool:
    """Whether an LRN or elementwise node computes each output position from the input's at
    the same position (float, one shape; a binary node's other input a constant that does not
    vary along the height)."""
    if shape != out_shape or context.dtype(0) != FLOAT32 or context.output_dtype() != FLOAT32:
        return False
    op_type = context.node.op_type
    if op_type == "LRN":
        lrn_parameters(context)
        return True
    if op_type in _UNARY:
        if op_type == "Clip" and not all(
            context.is_constant(position) for position in (1, 2) if context.has_input(position)
        ):
            return False
        unary_arithmetic(context)
        return True
    if len(context.node.inputs) != 2 or not context.is_constant(1):
        return False  # the activation first: `constant op x` stays unfused
    constant = context.constant(1)
    if constant.ndim > 4 or constant.dtype != FLOAT32:
        return False
    padded = (1,) * (4 - constant.ndim) + tuple(constant.shape)
    return (
        padded[0] == 1
        and padded[2] == 1
        and padded[1] in (1, shape[1])
        and padded[3]
        in (
            1,
            shape[3],
        )
    )


def _global_average(importer: OnnxImporter, node: Node, source: str, target: str) -> bool:
    if node.op_type != "GlobalAveragePool" or _domain(node):
        return False
    found, written = _four_d(importer, source), _four_d(importer, target)
    if found is None or written is None:
        return False
    (shape, dtype), (out_shape, out_dtype) = found, written
    return (
        shape[0] == 1
        and dtype == out_dtype == FLOAT32
        and out_shape == (1, shape[1], 1, 1)
        and node.inputs[0] == source
    )


def stream_graph(importer: OnnxImporter) -> tuple[StreamGraph, tuple[int, ...]]:
    """The graph the plain import `importer` wrote, as streaming sees it, and the node of each
    operator. Pinned: graph inputs and outputs, tensors more than one node reads, Concat slices
    (written in place into the Concat's output)."""
    graph = importer.graph
    index: dict[str, int] = {}
    names: list[str] = []
    for record in importer.records.values():
        for name in (*record.read, *record.written):
            if name not in index:
                index[name] = len(names)
                names.append(name)
    boundary = set(graph.inputs) | set(graph.outputs)
    tensors: list[StreamTensor] = []
    for name in names:
        info = graph.infos.get(name)
        shape = info.shape if info is not None and info.shape else (1,)
        itemsize = info.dtype.itemsize if info is not None and info.dtype is not None else 1
        height = shape[2] if len(shape) == 4 else 1
        size = int(np.prod(shape, dtype=np.int64)) * itemsize
        readers = {node.index for node in importer.readers.get(name, [])}
        pinned = name in boundary or len(readers) > 1 or importer.concat_slices.covers(name)
        tensors.append(StreamTensor(name, height, size // max(height, 1), pinned=pinned))
    operators: list[StreamOperator] = []
    nodes: list[int] = []
    by_index = {node.index: node for node in graph.nodes}
    for node_index, record in importer.records.items():
        if not record.read and not record.written:
            continue  # folded at import (a Constant, a Shape subgraph): no function
        node = by_index[node_index]
        inputs = tuple(index[name] for name in record.read)
        outputs = tuple(index[name] for name in record.written)
        name = f"{node.op_type.lower()}_{node.index}"
        kind, window, accumulator = "opaque", None, 0
        if len(record.read) == 1 and len(record.written) == 1:
            source, target = record.read[0], record.written[0]
            if _global_average(importer, node, source, target):
                kind, accumulator = "global_reduce", 4 * graph.infos[source].shape[1]
            else:
                window = _row_window(importer, node, source, target)
                kind = "window" if window is not None else "opaque"
        operators.append(StreamOperator(name, kind, inputs, outputs, window, accumulator))
        nodes.append(node_index)
    return StreamGraph(tuple(tensors), tuple(operators)), tuple(nodes)


def choose_streaming(
    importer: OnnxImporter,
    budget_bytes: int | None = None,
    lowest: bool = False,
    io_inside: bool = True,
) -> StreamedGroups | None:
    """The groups to stream on the graph of the plain import `importer` (None: none): without
    a budget (or with `lowest`) the cheapest set reaching the lowest peak, the inputs and
    outputs counted (`graph.selection.choose_stream_groups`); with `budget_bytes` (a workspace
    size hint, SPEC §12) the cheapest set that fits it, the inputs and outputs counted only
    when the pipeline plans them in the workspace (`io_inside`). A group runs at its last node
    (every constant its nodes read is folded by then); its other nodes and the nodes they fuse
    are skipped."""
    stream, nodes = stream_graph(importer)
    outside: frozenset[int] = frozenset()
    if budget_bytes is not None and not io_inside:
        boundary = set(importer.graph.inputs) | set(importer.graph.outputs)
        outside = frozenset(i for i, t in enumerate(stream.tensors) if t.name in boundary)
    choice = choose_stream_groups(stream, budget_bytes, outside, lowest)
    emit_at: dict[int, StreamedGroup] = {}
    inside: set[int] = set()
    for group in choice.groups:
        members = tuple(nodes[operator] for operator in group.operators)
        emit_at[members[-1]] = StreamedGroup(stream, group, members)
        for member in members:
            inside |= {member, *importer.records[member].fused}
        inside.discard(members[-1])
    if not emit_at:
        return None
    return StreamedGroups(emit_at, frozenset(inside))


def _with_top(full: Window, top_pad: int) -> Window:
    return Window(full.stride, full.dilation, (top_pad, full.padding[1]))


def _layer(context: NodeContext) -> StreamLayer:
    """A windowed node's row functions: its kernel on the rows one window reads."""
    op_type = context.node.op_type
    if op_type in _CONVOLUTIONS:
        dtype = _CONVOLUTIONS[op_type]
        input_type = memref_of(context.shape(0), dtype)
        output_type = memref_of(context.output_shape(), dtype)
        if op_type == "Conv":
            emit, full, _ = convolution_kernel(context)

            def rows(name: str, in_type: MemRefType, out_type: MemRefType, top_pad: int) -> None:
                emit(name, in_type, out_type, _with_top(full, top_pad), False)

            return StreamLayer(context.name, input_type, output_type, rows)
        quantized, window = qlinear_conv_kernel(context)

        def quantized_rows(
            name: str, in_type: MemRefType, out_type: MemRefType, top_pad: int
        ) -> None:
            quantized(name, in_type, out_type, _with_top(window, top_pad))

        return StreamLayer(context.name, input_type, output_type, quantized_rows)
    if op_type in _UNARY or op_type in _BINARY:
        whole = memref_of(context.shape(0), FLOAT32)
        return StreamLayer(context.name, whole, whole, _elementwise_rows(context))
    if op_type == "LRN":
        params = lrn_parameters(context)
        whole = memref_of(context.shape(0), FLOAT32)

        def lrn_rows(name: str, in_type: MemRefType, out_type: MemRefType, top_pad: int) -> None:
            lrn(context.module, name, in_type, params, out_type)

        return StreamLayer(context.name, whole, whole, lrn_rows)
    pool = pooling_parameters(context)
    dtype = pool_dtype(context)

    def pool_rows(name: str, in_type: MemRefType, out_type: MemRefType, top_pad: int) -> None:
        pool2d(
            context.module,
            name,
            in_type,
            out_type,
            replace(pool, window=_with_top(pool.window, top_pad)),
        )

    return StreamLayer(
        context.name,
        memref_of(context.shape(0), dtype),
        memref_of(context.output_shape(), dtype),
        pool_rows,
    )


def _elementwise_rows(context: NodeContext) -> RowEmitter:
    """The row function of a unary node, or of a binary one with a constant second input (as
    a 4-D global broadcast over the row)."""
    module = context.module
    if context.node.op_type in _UNARY:
        arithmetic = unary_arithmetic(context)

        def unary_rows(name: str, in_type: MemRefType, out_type: MemRefType, _: int) -> None:
            unary_shaped(module, name, in_type, out_type, arithmetic)

        return unary_rows
    constant = context.constant(1).astype(np.float32)
    array = np.ascontiguousarray(constant.reshape((1,) * (4 - constant.ndim) + constant.shape))
    symbol, constant_type = module.constant(f"{context.name}_input2", array)
    operation = FloatBinary(context.node.op_type.lower(), NO_ACTIVATION)

    def binary_rows(name: str, in_type: MemRefType, out_type: MemRefType, _: int) -> None:
        operands = (Operand(in_type), Operand(constant_type, symbol))
        binary(module, name, operands, out_type, operation)

    return binary_rows


def emit_group(importer: OnnxImporter, streamed: StreamedGroup) -> None:
    """Emits the group's row functions and group function, allocates its line buffers in
    `@main` and calls it."""
    stream, group = streamed.stream, streamed.group
    by_index = {node.index: node for node in importer.graph.nodes}
    contexts = [NodeContext(importer, by_index[index]) for index in streamed.nodes]
    last = stream.operators[group.operators[-1]]
    reducer = None
    if last.kind == "global_reduce":
        source, output = contexts[-1].shape(0), contexts[-1].output_shape()
        reducer = GlobalAverage(
            memref_of(source, FLOAT32), memref_of(output, FLOAT32), float("-inf"), float("inf")
        )
    windowed = contexts[:-1] if reducer is not None else contexts
    layers = [_layer(context) for context in windowed]
    plan = schedule(stream, group.operators)
    module = importer.module
    name = module.unique(group_name(stream, group))
    emitted = len(module.functions)
    function, scratch = fused_rows(
        module, name, layers, reducer, plan.buffer_rows, loops(plan.steps), height_axis=HEIGHT_AXIS
    )
    module.add(function)
    macs = sum(node_macs(context) for context in contexts)
    mark_operator(module.functions[emitted:], OperatorFacts("FUSED", streamed.nodes[0], macs))
    function.attributes[FUSED_ATTRIBUTE] = fused_attribute(importer.names, stream, group)
    first_input = contexts[0].value(0)
    output = importer.output_buffer(contexts[-1], stream.tensors[last.outputs[0]].name)
    call_group(
        importer.main,
        importer.names,
        stream,
        group,
        name,
        scratch,
        [first_input],
        output,
        plan.buffer_tensors,
    )
