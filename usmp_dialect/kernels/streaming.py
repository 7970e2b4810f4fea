"""A fused group of operators as one function that produces its output row by row
(`usmp_dialect.graph.streaming` decides the group and its steps).

`@fused_<first>__<last>(%input, %output, %rows_1, ..., [%sums])` (several inputs: `%input0`,
`%input1`, ...; `Wiring` says which layer reads and writes which) runs the group's steps as
counted loops: a step computes one output row of one layer by calling that layer's *row
function* — the layer's own kernel (`conv2d`, `pool2d`, ...) emitted for an input of just the
rows one window reads and an output of one row — on a `memref.subview` of its input (the model
tensor for the first layer, the layer's line buffer otherwise) and of its output (the next
layer's line buffer, or the group's output tensor). A layer has one row function per distinct
window shape (top border rows, interior, bottom border rows), as the unfused kernel has one loop
nest per row segment, so the interior runs the same inner loops as the unfused kernel. A shift
moves the rows a line buffer still needs to its start (`memref.copy`, a `memmove`). The line
buffers and the reducer's sums are arguments: `@main` allocates them (`memref.alloc`), so the
planner packs them with every other buffer.

A global reducer at the end (an AVERAGE_POOL_2D over the whole input, or a MEAN over height and
width; int8 or float32) sums each incoming row per channel (`%sums`: int32, whose sums do not
depend on the order, or float32, added in the unfused kernels' order: rows, then columns) and
finishes once at the end as the unfused kernel does (`_average`).

Layouts: NHWC (TFLite; `height_axis` 1) or NCHW (ONNX; `height_axis` 2). Rows are taken along
the height axis either way: a row view keeps the tensor's strides, and a line buffer has the
tensor's layout with fewer rows (in NCHW a shift then copies each channel's rows).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FunctionType,
    IntegerType,
    MemRefType,
    StridedLayoutAttr,
    f32,
    i32,
    i64,
)
from xdsl.ir import Operation
from xdsl.rewriter import InsertPoint

from usmp_dialect.graph.streaming import Compute, Loop, Reduce, Shift, Slot, Step
from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function
from usmp_dialect.kernels.fixed_point import emit_multiply_by_quantized_multiplier, wrap32
from usmp_dialect.kernels.module import ModelModule
from usmp_dialect.kernels.reduce import QuantizedMean, mean_multiplier

DYNAMIC = -9223372036854775808  # MLIR's dynamic offset marker in static_offsets

RowEmitter = Callable[[str, MemRefType, MemRefType, int], None]
"""`(name, input, output, top_pad)`: adds `@name(%input, %output)` computing the one output row
of `output` from the rows of `input`, the window's first `top_pad` rows lying above them."""


ManyRowEmitter = Callable[[str, Sequence[MemRefType], MemRefType, int], None]
"""`(name, inputs, output, top_pad)`: as `RowEmitter`, for `@name(%input1, %input2, ...,
%output)` reading the same rows of every input."""


@dataclass(frozen=True)
class StreamLayer:
    """One windowed layer of a group: its model operator's name, full tensor types and its row
    function emitter."""

    name: str
    input_type: MemRefType
    output_type: MemRefType
    emit_rows: RowEmitter
    other_input_types: tuple[MemRefType, ...] = ()
    """Further inputs read at the same rows (an ADD's second input)."""
    emit_many_rows: ManyRowEmitter | None = None
    """The row functions of a layer with further inputs: `(name, inputs, output, top_pad)`."""


@dataclass(frozen=True)
class GlobalAverage:
    """The reducer: the average over every row and column of each channel (int8 or float32),
    clamped to `[low, high]` (infinite for ONNX's float GlobalAveragePool). `mean`: an int8
    MEAN, requantised as TFLite Micro's `QuantizedMeanOrSum` (`kernels.reduce`) instead of the
    average pool's rounding division.
    The output is `[1, 1, 1, C]` or (a MEAN without `keep_dims`) `[1, C]`."""

    input_type: MemRefType
    output_type: MemRefType
    low: int | float
    high: int | float
    mean: QuantizedMean | None = None


def _strides(shape: Sequence[int]) -> list[int]:
    strides, running = [], 1
    for size in reversed(shape):
        strides.append(running)
        running *= size
    return list(reversed(strides))


def _with_rows(shape: Sequence[int], rows: int, height_axis: int) -> list[int]:
    return [rows if axis == height_axis else size for axis, size in enumerate(shape)]


def _row_view_type(source: MemRefType, rows: int, height_axis: int = 1) -> MemRefType:
    """`rows` rows of `source` (NHWC, or NCHW with `height_axis` 2) at a run-time row: its
    strides, a dynamic offset."""
    return MemRefType(
        source.element_type,
        _with_rows(source.get_shape(), rows, height_axis),
        StridedLayoutAttr(_strides(source.get_shape()), None),
    )


def _rows_of(
    kernel: KernelBuilder, source: Value, row: Value | int, rows: int, height_axis: int = 1
) -> Value:
    """The subview of rows `[row, row + rows)` of the memref `source` (rows along
    `height_axis`)."""
    source_type = source.type
    assert isinstance(source_type, MemRefType)
    offsets = [DYNAMIC if axis == height_axis else 0 for axis in range(4)]
    view = memref.SubviewOp(
        source,
        [kernel.as_index(row)],
        [],
        [],
        DenseArrayBase.from_list(i64, offsets),
        DenseArrayBase.from_list(i64, _with_rows(source_type.get_shape(), rows, height_axis)),
        DenseArrayBase.from_list(i64, [1, 1, 1, 1]),
        _row_view_type(source_type, rows, height_axis),
    )
    return kernel.insert(view)


def _flat_rows(kernel: KernelBuilder, flat: Value, first: int, count: int) -> Value:
    return kernel.insert(
        memref.SubviewOp.from_static_parameters(flat, flat.type, [first], [count], [1])
    )  # type: ignore[arg-type]


def buffer_type(tensor_type: MemRefType, rows: int, height_axis: int = 1) -> MemRefType:
    """The line buffer of `rows` rows of the tensor `tensor_type` (NHWC, or NCHW with
    `height_axis` 2)."""
    return MemRefType(
        tensor_type.element_type, _with_rows(tensor_type.get_shape(), rows, height_axis)
    )


def fused_rows(
    module: ModelModule,
    name: str,
    layers: Sequence[StreamLayer],
    reducer: GlobalAverage | None,
    buffer_rows: Sequence[int],
    plan: Sequence[Loop],
    wiring: Wiring | None = None,
    height_axis: int = 1,
) -> tuple[func.FuncOp, list[MemRefType]]:
    """Adds the row functions of `layers` and `@name`, which runs `plan`; returns the group
    function (not yet added) and the types of its scratch arguments, in order: the line
    buffers (`wiring.buffers`; for a chain: of every layer after the first, then with a reducer
    its input row), then the reducer's sums. `@name`'s arguments are the group's inputs
    (`wiring.inputs`; a chain: the first layer's input), its output and the scratch.
    `height_axis`: 1 for NHWC tensors, 2 for NCHW."""
    if wiring is None:
        wiring = chain_wiring(layers, reducer)
    scratch: list[MemRefType] = [
        buffer_type(full, rows, height_axis)
        for full, rows in zip(wiring.buffers, buffer_rows, strict=True)
    ]
    if reducer is not None:
        scratch.append(_sums_type(reducer, height_axis))
    output_type = reducer.output_type if reducer is not None else layers[-1].output_type
    if len(wiring.inputs) == 1:
        arguments = [("input", wiring.inputs[0])]
    else:
        arguments = [(f"input{position}", type_) for position, type_ in enumerate(wiring.inputs)]
    arguments += [("output", output_type)]
    arguments += [(f"rows{position}", type_) for position, type_ in enumerate(scratch)]
    op, kernel, values = function(name, arguments)
    sources = values[: len(wiring.inputs)]
    target = values[len(wiring.inputs)]
    buffers = values[len(wiring.inputs) + 1 :]
    sums = buffers[-1] if reducer is not None else None
    reduce_row = buffers[wiring.reduced] if reducer is not None else None

    def value_of(slot: Slot) -> Value:
        if slot.kind == "input":
            return sources[slot.index]
        if slot.kind == "buffer":
            return buffers[slot.index]
        return target

    def input_of(layer: int, position: int = 0) -> Value:
        return value_of(wiring.reads[layer][position])

    def output_of(layer: int) -> Value:
        return value_of(wiring.writes[layer])

    def axis_of(layer: int, position: int = 0) -> int:
        slot = wiring.reads[layer][position]
        if slot.kind == "input" and wiring.input_height_axes:
            return wiring.input_height_axes[slot.index]
        return height_axis

    row_functions: dict[tuple[int, int, int, int], str] = {}

    def row_function(step: Compute) -> str:
        key = (step.layer, step.top_pad, step.rows, step.out_rows)
        if key not in row_functions:
            layer = layers[step.layer]
            block = f"_by{step.out_rows}" if step.out_rows > 1 else ""
            symbol = module.unique(f"{layer.name}_rows_{step.top_pad}_{step.rows}{block}")
            in_types = [
                input_of(step.layer, position).type
                for position in range(len(wiring.reads[step.layer]))
            ]
            out_type = output_of(step.layer).type
            assert isinstance(out_type, MemRefType)
            assert all(isinstance(type_, MemRefType) for type_ in in_types)
            views = [
                _row_view_type(type_, step.rows, axis_of(step.layer, position))  # type: ignore[arg-type]
                for position, type_ in enumerate(in_types)
            ]
            emitted = len(module.functions)
            if layer.emit_many_rows is not None:
                layer.emit_many_rows(
                    symbol,
                    views,
                    _row_view_type(out_type, step.out_rows, height_axis),
                    step.top_pad,
                )
            else:
                layer.emit_rows(
                    symbol,
                    views[0],
                    _row_view_type(out_type, step.out_rows, height_axis),
                    step.top_pad,
                )
            for function_op in module.functions[emitted:]:
                if isinstance(function_op, func.FuncOp) and function_op.sym_name.data == symbol:
                    constant_arguments[symbol] = _constants_as_arguments(function_op)
            row_functions[key] = symbol
        return row_functions[key]

    # Constants a row function reads become its arguments, read once by the group function:
    # every row function of a layer then shares one constant buffer (the planner gives each
    # `memref.get_global` its own).
    constant_arguments: dict[str, list[tuple[str, MemRefType]]] = {}
    constant_values: dict[str, Value] = {}

    def constant_value(symbol: str, type_: MemRefType) -> Value:
        if symbol not in constant_values:
            constant_values[symbol] = _insert_at_entry(kernel, memref.GetGlobalOp(symbol, type_))
        return constant_values[symbol]

    flat_buffers: dict[int, Value] = {}

    def flat(layer: int) -> Value:
        if layer not in flat_buffers:
            buffer = buffers[layer - 1]
            buffer_type_ = buffer.type
            assert isinstance(buffer_type_, MemRefType)
            size = 1
            for dim in buffer_type_.get_shape():
                size *= dim
            cast = memref.ReinterpretCastOp.build(
                operands=[buffer, [], [], []],
                result_types=[MemRefType(buffer_type_.element_type, [size])],
                properties={
                    "static_offsets": DenseArrayBase.from_list(i64, [0]),
                    "static_sizes": DenseArrayBase.from_list(i64, [size]),
                    "static_strides": DenseArrayBase.from_list(i64, [1]),
                },
            )
            flat_buffers[layer] = _insert_at_entry(kernel, cast)
        return flat_buffers[layer]

    def run(step: Step, delta: tuple[int, ...], repetition: Value | None) -> None:
        if isinstance(step, Shift) and height_axis != 1:
            # Rows are not outermost: each channel's rows move (an element copy, from the
            # start: every element is read before a later one overwrites it).
            buffer = buffers[step.layer - 1]
            kernel.insert(
                memref.CopyOp(
                    _rows_of(kernel, buffer, step.first, step.rows, height_axis),
                    _rows_of(kernel, buffer, 0, step.rows, height_axis),
                )
            )
            return
        if isinstance(step, Shift):
            buffer_type_ = buffers[step.layer - 1].type
            assert isinstance(buffer_type_, MemRefType)
            _, _, width, channels = buffer_type_.get_shape()
            row = width * channels
            whole = flat(step.layer)
            kernel.insert(
                memref.CopyOp(
                    _flat_rows(kernel, whole, step.first * row, step.rows * row),
                    _flat_rows(kernel, whole, 0, step.rows * row),
                )
            )
            return
        if isinstance(step, Reduce):
            assert reducer is not None and sums is not None and reduce_row is not None
            _accumulate(kernel, reduce_row, sums, height_axis)
            return

        def row_index(base: int, step_rows: int) -> Value | int:
            if repetition is None or step_rows == 0:
                return base
            return kernel.add(kernel.as_index(base), kernel.mul(repetition, step_rows))

        callee = row_function(step)
        rows = (step.source_row, *step.other_source_rows)
        growth = (delta[0], *delta[2:])
        source_rows = [
            _rows_of(
                kernel,
                input_of(step.layer, position),
                row_index(row, grows),
                step.rows,
                axis_of(step.layer, position),
            )
            for position, (row, grows) in enumerate(zip(rows, growth, strict=True))
        ]
        target_row = _rows_of(
            kernel,
            output_of(step.layer),
            row_index(step.target_row, delta[1]),
            step.out_rows,
            height_axis,
        )
        constants = [constant_value(*symbol) for symbol in constant_arguments.get(callee, [])]
        kernel.insert(func.CallOp(callee, [*source_rows, target_row, *constants], []))

    if reducer is not None:
        assert sums is not None
        sums_type = _sums_type(reducer, height_axis)
        zero = kernel.constant(0, sums_type.element_type)
        kernel.loop(0, sums_type.get_shape()[0], lambda c, _: kernel.store(zero, sums, [c]) or [])
    for loop in plan:
        if loop.count == 1:
            for step, delta in zip(loop.body, loop.deltas, strict=True):
                run(step, delta, None)
            continue

        def body(j: Value, _: Sequence[Value], loop: Loop = loop) -> list[Value]:
            for step, delta in zip(loop.body, loop.deltas, strict=True):
                run(step, delta, j)
            return []

        kernel.loop(0, loop.count, body)
    if reducer is not None:
        assert sums is not None
        _average(kernel, reducer, sums, target, height_axis)
    finish(kernel)
    return op, scratch


@dataclass(frozen=True)
class Wiring:
    """Where a group's layers read and write (`graph.streaming.slots`): the full types of the
    group's inputs and of every line buffer's tensor, per layer its inputs' slots and its
    output's slot, and the line buffer a reducer reads its rows from."""

    inputs: tuple[MemRefType, ...]
    buffers: tuple[MemRefType, ...]
    reads: tuple[tuple[Slot, ...], ...]
    writes: tuple[Slot, ...]
    reduced: int = -1
    input_height_axes: tuple[int, ...] = ()
    """Per group input, the axis its rows lie along when it is not the group's (an NCHW model
    input that a head TRANSPOSE reads row by row in an NHWC group); empty: the group's."""


def chain_wiring(layers: Sequence[StreamLayer], reducer: GlobalAverage | None) -> Wiring:
    """A chain's wiring: layer `i` reads line buffer `i - 1` and writes buffer `i`; the first
    reads the group's input, the last writes its output (or, with a reducer, its row)."""
    buffers = [layer.input_type for layer in layers[1:]]
    if reducer is not None:
        buffers.append(reducer.input_type)
    last = len(layers) - 1
    return Wiring(
        (layers[0].input_type,),
        tuple(buffers),
        tuple((Slot("input"),) if i == 0 else (Slot("buffer", i - 1),) for i in range(len(layers))),
        tuple(
            Slot("buffer", i) if i < last or reducer is not None else Slot("output")
            for i in range(len(layers))
        ),
        len(buffers) - 1 if reducer is not None else -1,
    )


def _insert_at_entry(kernel: KernelBuilder, op: Operation) -> Value:
    """Inserts a view at the function entry (after the constants), so that loops share it."""
    saved = kernel.builder
    last = kernel._last_constant  # the entry's constants come first
    point = InsertPoint.after(last) if last is not None else InsertPoint.at_start(kernel.entry)
    kernel.builder = Builder(point)
    try:
        kernel.insert(op)
    finally:
        kernel.builder = saved
    return op.results[0]


def _constants_as_arguments(function_op: func.FuncOp) -> list[tuple[str, MemRefType]]:
    """Replaces every `memref.get_global` of `function_op` by a new argument (one per global,
    after the others); returns the globals in argument order."""
    block = function_op.body.block
    globals_: list[tuple[str, MemRefType]] = []
    arguments: dict[str, Value] = {}
    for op in list(function_op.walk()):
        if not isinstance(op, memref.GetGlobalOp):
            continue
        symbol = op.name_.root_reference.data
        type_ = op.memref.type
        assert isinstance(type_, MemRefType)
        if symbol not in arguments:
            argument = block.insert_arg(type_, len(block.args))
            argument.name_hint = symbol
            arguments[symbol] = argument
            globals_.append((symbol, type_))
        op.memref.replace_all_uses_with(arguments[symbol])
        op.detach()
        op.erase()
    function_op.function_type = FunctionType.from_lists(
        [argument.type for argument in block.args], list(function_op.function_type.outputs.data)
    )
    return globals_


def _sums_type(reducer: GlobalAverage, height_axis: int) -> MemRefType:
    """The reducer's per-channel sums: int32 for int8, float32 for float32."""
    channels = reducer.input_type.get_shape()[3 if height_axis == 1 else 1]
    floating = not isinstance(reducer.input_type.element_type, IntegerType)
    return MemRefType(f32 if floating else i32, [channels])


def _at(height_axis: int, y: Value | int, x: Value | int, c: Value) -> list[Value | int]:
    """The indices of row `y`, column `x`, channel `c` (batch 0) in the layout."""
    return [0, y, x, c] if height_axis == 1 else [0, c, y, x]


def _accumulate(kernel: KernelBuilder, row: Value, sums: Value, height_axis: int = 1) -> None:
    """`sums[c] += row[0, 0, x, c]` over the row's columns (in NCHW `row[0, c, 0, x]`)."""
    row_type = row.type
    assert isinstance(row_type, MemRefType)
    shape = row_type.get_shape()
    width, channels = (shape[2], shape[3]) if height_axis == 1 else (shape[3], shape[1])
    integer = isinstance(row_type.element_type, IntegerType)

    def channel(c: Value, _: Sequence[Value]) -> list[Value]:
        def column(x: Value, total: Sequence[Value]) -> list[Value]:
            value = kernel.load(row, _at(height_axis, 0, x, c))
            return [kernel.add(total[0], kernel.cast(value, i32) if integer else value)]

        (total,) = kernel.loop(0, width, column, [kernel.load(sums, [c])])
        kernel.store(total, sums, [c])
        return []

    kernel.loop(0, channels, channel)


def _average(
    kernel: KernelBuilder,
    reducer: GlobalAverage,
    sums: Value,
    target: Value,
    height_axis: int = 1,
) -> None:
    """Every channel's sum into the output, as the unfused kernels finish: the int8 average
    pool's `(sum +- count / 2) / count` (rounding half away from zero, `kernels.pooling`), an
    int8 MEAN's `QuantizedMeanOrSum` (`kernels.reduce`), float `sum / count`; then clamped."""
    shape = reducer.input_type.get_shape()
    height, width = (shape[1], shape[2]) if height_axis == 1 else (shape[2], shape[3])
    channels = _sums_type(reducer, height_axis).get_shape()[0]
    count = height * width
    element = reducer.output_type.element_type
    rank = len(reducer.output_type.get_shape())

    def channel(c: Value, _: Sequence[Value]) -> list[Value]:
        total = kernel.load(sums, [c])
        if not isinstance(element, IntegerType):
            value = kernel.div(total, kernel.constant(float(count), f32))
            if reducer.low != float("-inf"):
                value = kernel.max(value, float(reducer.low))
            if reducer.high != float("inf"):
                value = kernel.min(value, float(reducer.high))
        elif reducer.mean is not None:
            quantized = reducer.mean
            multiplier, shift = mean_multiplier(quantized.multiplier, quantized.shift, count)
            offset = kernel.sub(total, wrap32(quantized.input_zero_point * count))
            scaled = emit_multiply_by_quantized_multiplier(kernel, offset, multiplier, shift)
            shifted = kernel.add(scaled, quantized.output_zero_point)
            value = kernel.cast(kernel.clamp(shifted, int(reducer.low), int(reducer.high)), element)
        else:
            half = count // 2
            positive = kernel.cmp("sgt", total, 0)
            rounded = kernel.select(positive, kernel.add(total, half), kernel.sub(total, half))
            average = kernel.div(rounded, count)
            value = kernel.cast(kernel.clamp(average, int(reducer.low), int(reducer.high)), element)
        indices = [0] * (rank - 1) + [c] if height_axis == 1 else _at(height_axis, 0, 0, c)
        kernel.store(value, target, indices)
        return []

    kernel.loop(0, channels, channel)
