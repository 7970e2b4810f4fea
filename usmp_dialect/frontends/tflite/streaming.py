"""Fused row streaming for TFLite graphs: the graph as `graph.streaming` sees it, and the
emission of a chosen group through the operators' own kernels (`kernels.streaming`).

Streamable: int8 and float32 CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D and MAX_POOL_2D of
batch 1 (a window of input rows per output row), ADD, SUB and MUL of two activations of the
output's shape (one row of each per output row: residual blocks), one-input activations and
QUANTIZE/DEQUANTIZE (one-row windows), a head TRANSPOSE of an NCHW model input into NHWC
(row y from row y of the input's height axis), and, ending a chain, a global reducer: an int8 or
float32 AVERAGE_POOL_2D whose window is the whole input (VALID, a 1 x 1 output) or MEAN over
height and width. Every other operator is opaque.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import tflite
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import SSAValue

from usmp_dialect.analysis.operators import FUSED_ATTRIBUTE
from usmp_dialect.dialects.usmp import OperatorFacts
from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.streaming import call_group, fused_attribute, group_name
from usmp_dialect.frontends.tflite.importer import OperatorContext, TfliteImporter
from usmp_dialect.frontends.tflite.macs import operator_macs
from usmp_dialect.frontends.tflite.ops.common import FLOAT32, INT8, quantization, window
from usmp_dialect.frontends.tflite.ops.conv import convolution_kernel
from usmp_dialect.frontends.tflite.ops.pooling import pooling_parameters
from usmp_dialect.frontends.tflite.reader import Operator
from usmp_dialect.graph.streaming import (
    Group,
    RowWindow,
    StreamGraph,
    StreamOperator,
    StreamTensor,
    loops,
    schedule,
    slots,
)
from usmp_dialect.kernels.conv import Window
from usmp_dialect.kernels.data_movement import transpose
from usmp_dialect.kernels.elementwise import Operand, binary, unary_rows
from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.kernels.module import mark_operator, memref_of
from usmp_dialect.kernels.pooling import Pool, pool2d
from usmp_dialect.kernels.reduce import QuantizedMean
from usmp_dialect.kernels.streaming import GlobalAverage, StreamLayer, Wiring, fused_rows

_WINDOWED = ("CONV_2D", "DEPTHWISE_CONV_2D", "AVERAGE_POOL_2D", "MAX_POOL_2D")
_BINARY = ("ADD", "SUB", "MUL")
# One-input operators of `emit_unary` that stream as one-row windows.
_UNARY = (
    "RELU",
    "RELU6",
    "LEAKY_RELU",
    "HARD_SWISH",
    "ELU",
    "ABS",
    "LOGISTIC",
    "TANH",
    "QUANTIZE",
    "DEQUANTIZE",
)


def _is_global_reduce(importer: TfliteImporter, op: Operator) -> bool:
    """Whether `op` reduces a batch-1 NHWC int8 or float32 tensor over its whole height and
    width: an AVERAGE_POOL_2D whose window is the input (VALID, a 1 x 1 output), or a MEAN over
    axes 1 and 2 (with or without `keep_dims`; int8 with one scale per tensor)."""
    graph = importer.graph
    if op.opcode not in ("AVERAGE_POOL_2D", "MEAN") or not op.inputs or len(op.outputs) != 1:
        return False
    source, output = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if len(source.shape) != 4 or source.shape[0] != 1 or source.dtype not in (INT8, FLOAT32):
        return False
    if output.dtype != source.dtype or importer.constant_value(source) is not None:
        return False
    channels = source.shape[3]
    if op.opcode == "AVERAGE_POOL_2D":
        options = op.option(tflite.Pool2DOptions)
        return (
            options is not None
            and options.Padding() == tflite.Padding.VALID
            and tuple(output.shape) == (1, 1, 1, channels)
            and (options.FilterHeight(), options.FilterWidth()) == tuple(source.shape[1:3])
        )
    if len(op.inputs) != 2 or op.inputs[1] < 0:
        return False
    axes = importer.constant_value(graph.tensors[op.inputs[1]])
    if axes is None or axes.dtype != np.int32:
        return False
    if {int(axis) % 4 for axis in axes.reshape(-1)} != {1, 2} or axes.size > 2:
        return False
    if tuple(output.shape) not in ((1, 1, 1, channels), (1, channels)):
        return False
    if source.dtype == INT8:
        return all(
            tensor.quantization is not None and len(tensor.quantization.scales) == 1
            for tensor in (source, output)
        )
    return True


def _is_elementwise(importer: TfliteImporter, op: Operator, activations: tuple[int, ...]) -> bool:
    """An int8 or float32 ADD, SUB or MUL of two activations of the output's NHWC shape (no
    broadcast, no constant): output row y reads row y of each input."""
    if op.opcode not in _BINARY or len(op.inputs) != 2 or len(activations) != 2:
        return False
    if len(op.outputs) != 1 or op.outputs[0] < 0:
        return False
    tensors = [importer.graph.tensors[index] for index in (*op.inputs, op.outputs[0])]
    output = tensors[-1]
    return (
        len(output.shape) == 4
        and output.shape[0] == 1
        and all(t.shape == output.shape and t.dtype == output.dtype for t in tensors)
        and output.dtype in (INT8, FLOAT32)
    )


def _is_unary(importer: TfliteImporter, op: Operator, activations: tuple[int, ...]) -> bool:
    """An activation, QUANTIZE or DEQUANTIZE of an int8 or float32 NHWC activation into a tensor
    of its shape: output row y is a function of input row y."""
    if op.opcode not in _UNARY or len(activations) != 1 or len(op.outputs) != 1:
        return False
    source, output = importer.graph.tensors[activations[0]], importer.graph.tensors[op.outputs[0]]
    return (
        op.inputs[0] == activations[0]
        and len(output.shape) == 4
        and output.shape[0] == 1
        and source.shape == output.shape
        and source.dtype in (INT8, FLOAT32)
        and output.dtype in (INT8, FLOAT32)
    )


def _is_head_transpose(importer: TfliteImporter, op: Operator) -> bool:
    """A TRANSPOSE with permutation (0, 2, 3, 1) of an NCHW batch-1 model input into NHWC (a
    PyTorch export's head): output row y (every column and channel at height y) reads row y
    of the input along its height axis (2), so it streams as a one-row window."""
    graph = importer.graph
    if op.opcode != "TRANSPOSE" or len(op.inputs) != 2 or len(op.outputs) != 1:
        return False
    source, output = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if source.index not in graph.inputs or len(source.shape) != 4 or source.shape[0] != 1:
        return False
    permutation = importer.constant_value(graph.tensors[op.inputs[1]])
    if permutation is None or [int(p) % 4 for p in permutation.reshape(-1)] != [0, 2, 3, 1]:
        return False
    return source.dtype == output.dtype and source.dtype in (INT8, FLOAT32)


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


def nchw_inputs(importer: TfliteImporter) -> set[int]:
    """The model inputs only head TRANSPOSEs read (`_is_head_transpose`): rows along axis 2."""
    transposed: set[int] = set()
    other: set[int] = set()
    for op in importer.graph.operators:
        if _is_head_transpose(importer, op):
            transposed.add(op.inputs[0])
        else:
            other.update(op.inputs)
    return transposed - other


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
    # A group may write its output over an input it reads last (NHWC: rows outermost) with
    # every in-place operator on; over a model input only when the input is in the workspace.
    may_overwrite = importer.in_place_mode == "all"
    overwritable_inputs = set(graph.inputs) if importer.options.workspace_io else set()
    # NCHW model inputs a head TRANSPOSE reads: rows along axis 2, not outermost.
    channels_first = nchw_inputs(importer)
    tensors: list[StreamTensor] = []
    for tensor in graph.tensors:
        shape = tensor.shape or (1,)
        height = shape[1] if len(shape) == 4 else 1
        if tensor.index in channels_first:
            height = shape[2]
        size = int(np.prod(shape, dtype=np.int64)) * max(tensor.dtype.itemsize, 1)
        constant = importer.constant_value(tensor) is not None
        pinned = tensor.index in boundary or tensor.index in placed
        tensors.append(
            StreamTensor(
                tensor.name,
                height if not constant else 1,
                0 if constant else size // max(height, 1),
                # A tensor with several readers may still be kept in rows by a group that
                # holds all of them (a residual block's input): `graph.streaming` sees them.
                pinned=pinned,
                element=str(tensor.dtype),
                overwritable=may_overwrite
                and not constant
                and len(shape) == 4
                and tensor.index not in channels_first
                and (not pinned or tensor.index in overwritable_inputs),
            )
        )
    operators: list[StreamOperator] = []
    for op in graph.operators:
        activations = tuple(
            i for i in op.inputs if i >= 0 and importer.constant_value(graph.tensors[i]) is None
        )
        outputs = tuple(i for i in op.outputs if i >= 0)
        name = f"{op.opcode.lower()}_{op.index}"
        if _is_global_reduce(importer, op):
            channels = graph.tensors[op.inputs[0]].shape[3]
            operators.append(
                StreamOperator(name, "global_reduce", activations, outputs, None, 4 * channels)
            )
            continue
        row_window = _row_window(importer, op)
        kind = "window" if row_window is not None and len(activations) == 1 else "opaque"
        if (
            _is_elementwise(importer, op, activations)
            or _is_unary(importer, op, activations)
            or (_is_head_transpose(importer, op) and op.inputs[0] in channels_first)
        ):
            row_window, kind = RowWindow(1, 1, 1, 0), "window"
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
    if op.opcode in _BINARY:
        return _elementwise_layer(context, input_type, output_type)
    if op.opcode in _UNARY:
        return _unary_layer(context, input_type, output_type)
    if op.opcode == "TRANSPOSE":  # a head TRANSPOSE: NCHW rows into NHWC rows

        def transpose_rows(name: str, in_type: MemRefType, out_type: MemRefType, _: int) -> None:
            transpose(context.module, name, in_type, out_type, (0, 2, 3, 1))

        return StreamLayer(context.name, input_type, output_type, transpose_rows)
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


def _elementwise_layer(
    context: OperatorContext, input_type: MemRefType, output_type: MemRefType
) -> StreamLayer:
    """ADD, SUB or MUL on one row of each input: the unfused operator's kernel
    (`kernels.elementwise.binary`) on row views, so the arithmetic is the same."""
    from usmp_dialect.frontends.tflite.ops.elementwise import binary_arithmetic_of

    arithmetic, _ = binary_arithmetic_of(context)
    other = context.tensor(1)

    def rows(name: str, in_types: Sequence[MemRefType], out_type: MemRefType, _: int) -> None:
        first, second = in_types
        binary(context.module, name, (Operand(first), Operand(second)), out_type, arithmetic)

    def one_input(name: str, in_type: MemRefType, out_type: MemRefType, top_pad: int) -> None:
        rows(name, (in_type, in_type), out_type, top_pad)

    return StreamLayer(
        context.name,
        input_type,
        output_type,
        one_input,
        (memref_of(other.shape, other.dtype),),
        rows,
    )


def _unary_layer(
    context: OperatorContext, input_type: MemRefType, output_type: MemRefType
) -> StreamLayer:
    """An activation (QUANTIZE, DEQUANTIZE) on one row: the arithmetic its handler emits
    (`UnaryCapture`), element by element as the unfused kernel."""
    from usmp_dialect.frontends.tflite.importer import OPERATORS
    from usmp_dialect.frontends.tflite.ops.elementwise import UnaryCapture

    capture = UnaryCapture(context.importer, context.op)
    OPERATORS[context.op.opcode](capture)
    arithmetic = capture.arithmetic
    if arithmetic is None:
        raise context.fail("cannot run row by row")  # the handler chose another kernel

    def rows(name: str, in_type: MemRefType, out_type: MemRefType, _: int) -> None:
        unary_rows(context.module, name, in_type, out_type, arithmetic)

    return StreamLayer(context.name, input_type, output_type, rows)


def _with_top(full: Window, top_pad: int) -> Window:
    return Window(full.stride, full.dilation, (top_pad, full.padding[1]))


def _reducer(context: OperatorContext) -> GlobalAverage:
    """The group's final reducer, finishing as its unfused handler does (`ops/pooling.py`,
    `ops/reduce.py`)."""
    source, output = context.tensor(0), context.tensor(0, output=True)
    input_type = memref_of(source.shape, source.dtype)
    output_type = memref_of(output.shape, output.dtype)
    if context.op.opcode == "MEAN":
        if source.dtype != INT8:
            return GlobalAverage(input_type, output_type, float("-inf"), float("inf"))
        source_q, output_q = quantization(context, source), quantization(context, output)
        multiplier, shift = quantize_multiplier(source_q.scale / output_q.scale)
        mean = QuantizedMean(source_q.zero_point, multiplier, shift, output_q.zero_point)
        return GlobalAverage(input_type, output_type, -128, 127, mean)
    pool: Pool = pooling_parameters(context)
    if source.dtype == INT8:
        return GlobalAverage(
            input_type, output_type, int(pool.activation_min), int(pool.activation_max)
        )
    return GlobalAverage(input_type, output_type, pool.activation_min, pool.activation_max)


def emit_group(importer: TfliteImporter, stream: StreamGraph, group: Group) -> None:
    """Emits `group`'s row functions and group function, allocates its line buffers in
    `@main` and calls it."""
    graph = importer.graph
    ops = [graph.operators[index] for index in group.operators]
    contexts = [OperatorContext(importer, op) for op in ops]
    reducer = (
        _reducer(contexts[-1])
        if stream.operators[group.operators[-1]].kind == "global_reduce"
        else None
    )
    windowed = contexts[:-1] if reducer is not None else contexts
    layers = [_layer(context) for context in windowed]
    plan = schedule(stream, group.operators)
    reads, writes = slots(stream, group.operators, plan)
    types = {
        index: memref_of(graph.tensors[index].shape, graph.tensors[index].dtype)
        for index in (*plan.inputs, *plan.buffer_tensors)
    }
    reduced = ops[-1].inputs[0] if reducer is not None else None
    channels_first = nchw_inputs(importer)  # NCHW inputs: rows along axis 2
    wiring = Wiring(
        tuple(types[index] for index in plan.inputs),
        tuple(types[index] for index in plan.buffer_tensors),
        reads[: len(layers)],
        writes[: len(layers)],
        plan.buffer_tensors.index(reduced) if reduced is not None else -1,
        tuple(2 if index in channels_first else 1 for index in plan.inputs),
    )
    name = importer.module.unique(group_name(stream, group))
    emitted = len(importer.module.functions)
    function, scratch = fused_rows(
        importer.module, name, layers, reducer, plan.buffer_rows, loops(plan.steps), wiring
    )
    importer.module.add(function)
    macs = sum(operator_macs(graph, op) for op in ops)
    mark_operator(importer.module.functions[emitted:], OperatorFacts("FUSED", ops[0].index, macs))

    inputs = [_input_value(importer, ops, contexts, index) for index in plan.inputs]
    output_tensor = graph.tensors[ops[-1].outputs[0]]
    output = None
    if group.over is not None:
        at = plan.inputs.index(group.over)
        output = importer.group_over_input(
            ops[-1].index,
            output_tensor,
            graph.tensors[group.over],
            [value for position, value in enumerate(inputs) if position != at],
        )
    function.attributes[FUSED_ATTRIBUTE] = fused_attribute(
        importer.names, stream, group, group.over if output is not None else None
    )
    if output is None:
        output = importer.output_buffer(output_tensor)
    call_group(
        importer.main,
        importer.names,
        stream,
        group,
        name,
        scratch,
        inputs,
        output,
        plan.buffer_tensors,
    )


def _input_value(
    importer: TfliteImporter, ops: list[Operator], contexts: list[OperatorContext], tensor: int
) -> SSAValue:
    """The `@main` value of the group's input `tensor` (through its first reader's context, which
    reports a tensor nobody wrote)."""
    for op, context in zip(ops, contexts, strict=True):
        if tensor in op.inputs:
            return context.value(op.inputs.index(tensor))
    raise AssertionError(f"tensor {tensor} is not read by the group")
