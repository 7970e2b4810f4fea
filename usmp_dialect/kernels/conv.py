"""Convolutions (NHWC): CONV_2D (filters OHWI) and DEPTHWISE_CONV_2D (filters 1HW(I*M)).

Written as TFLite's reference kernels compute them (`reference_integer_ops::ConvPerChannel`,
`DepthwiseConvPerChannel` and the float `reference_ops` versions): for every output element an
accumulator in a register, summed over the filter window in (ky, kx, ic) order, skipping the
window positions outside the input (padding is read implicitly, never materialised), then the
bias, then requantisation (int8) or the activation clamp (float). The output positions of each
dimension are split into segments of equal in-bounds filter taps (shapes are static): each pair of
a row and a column segment is its own loop nest with constant window bounds, so the interior
runs without any test and the border windows as constant-trip loops (`segments`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i32
from xdsl.ir import Attribute

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function
from usmp_dialect.kernels.module import ModelModule, Requantization, RequantizeEmitter


@dataclass(frozen=True)
class Window:
    """A sliding window over (height, width): strides, dilations, padding before."""

    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: tuple[int, int]  # top, left


@dataclass(frozen=True, eq=False)
class QuantizedConv:
    """int8 arithmetic: `acc += (x + input_offset) * (w + filter_offset)`, then requantise.

    `folded_bias` (see `fold_input_offset`), when given, is the bias plus `input_offset` times
    each output channel's filter sum: where the whole window lies in the input, the kernel
    computes `acc += x * w` from it, the same int32 sum modulo 2**32 with one operation less
    per multiply-accumulate (CMSIS-NN's trick; only with `filter_offset == 0`)."""

    input_offset: int
    requantization: Requantization
    filter_offset: int = 0
    folded_bias: tuple[str, MemRefType] | None = None


def fold_input_offset(
    weights: np.ndarray, bias: np.ndarray | None, input_offset: int, depthwise: bool
) -> np.ndarray:
    """`bias + input_offset * sum(filter of each output channel)`, wrapped to int32 as the
    kernel's arithmetic wraps (filters OHWI, or 1HWC for depthwise ones)."""
    axes = (0, 1, 2) if depthwise else tuple(range(1, weights.ndim))
    sums = weights.astype(np.int64).sum(axis=axes)
    total = sums * input_offset + (0 if bias is None else bias.astype(np.int64))
    return ((total + 2**31) % 2**32 - 2**31).astype(np.int32)


@dataclass(frozen=True)
class FloatActivation:
    """Float arithmetic, clamped to [low, high] (infinite bounds are not emitted)."""

    low: float
    high: float


def clamp_float(kernel: KernelBuilder, value: Value, activation: FloatActivation) -> Value:
    if activation.low != float("-inf"):
        value = kernel.max(value, activation.low)
    if activation.high != float("inf"):
        value = kernel.min(value, activation.high)
    return value


def accumulated_output(
    kernel: KernelBuilder,
    total: Value,
    channel: Value,
    bias: Value | None,
    requantize: RequantizeEmitter | None,
    arithmetic: QuantizedConv | FloatActivation,
    element: Attribute,
) -> Value:
    """An output element from its accumulator: plus the channel's bias, then requantised
    (int8) or clamped to the activation (float)."""
    if bias is not None:
        total = kernel.add(total, kernel.load(bias, [channel]))
    if requantize is not None:
        assert isinstance(element, IntegerType)
        return requantize.output(total, channel, element)
    assert isinstance(arithmetic, FloatActivation)
    return clamp_float(kernel, total, arithmetic)


def window_range(
    kernel: KernelBuilder, origin: Value, extent: int, size: int, dilation: int, padded: bool
) -> tuple[Value | int, Value | int]:
    """The filter taps `[start, end)` of one dimension whose input position
    `origin + dilation * tap` lies in `[0, size)`."""
    if not padded:
        return 0, extent
    before, after = kernel.sub(0, origin), kernel.sub(size, origin)
    if dilation > 1:
        before, after = kernel.ceil_div(before, dilation), kernel.ceil_div(after, dilation)
    return kernel.max(before, 0), kernel.min(after, extent)


def _needs_bounds(
    size: int, out_size: int, extent: int, stride: int, dilation: int, pad: int
) -> bool:
    """Whether some window of this dimension leaves the input."""
    last = (out_size - 1) * stride - pad + (extent - 1) * dilation
    return pad > 0 or last >= size


@dataclass(frozen=True)
class Segment:
    """Output positions `[start, end)` of one dimension whose windows keep the same filter taps
    `taps` in the input (`None`: computed per position at run time)."""

    start: int
    end: int
    taps: tuple[int, int] | None


MAX_SEGMENTS = 7
"""Beyond this many runs of equal tap ranges per dimension, the positions outside the interior
compute their taps at run time (one loop instead of one per position)."""


CHANNEL_BLOCK = 4
"""Output channels a float convolution computes together (when the count is a multiple)."""


def _taps(origin: int, extent: int, size: int, dilation: int) -> tuple[int, int]:
    start = max(-(origin // dilation), 0) if origin < 0 else 0
    end = min(-((origin - size) // dilation), extent)
    return (start, end) if end > start else (0, 0)


def segments(
    size: int, out_size: int, extent: int, stride: int, dilation: int, pad: int
) -> list[Segment]:
    """The output positions of one dimension split by their windows' in-bounds taps (shapes
    are static): runs of equal taps, each with its constant range, so no window position is
    tested at run time; the interior (every tap inside) is one run."""
    taps = [_taps(o * stride - pad, extent, size, dilation) for o in range(out_size)]
    runs: list[Segment] = []
    for position, range_ in enumerate(taps):
        if runs and runs[-1].taps == range_:
            runs[-1] = Segment(runs[-1].start, position + 1, range_)
        else:
            runs.append(Segment(position, position + 1, range_))
    if len(runs) <= MAX_SEGMENTS:
        return runs
    full = [run for run in runs if run.taps == (0, extent)]
    if not full:
        return [Segment(0, out_size, None)]
    interior = max(full, key=lambda run: run.end - run.start)
    parts = [
        Segment(0, interior.start, None),
        interior,
        Segment(interior.end, out_size, None),
    ]
    return [part for part in parts if part.end > part.start]


def conv2d(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    filters: tuple[str, MemRefType],
    bias: tuple[str, MemRefType] | None,
    window: Window,
    arithmetic: QuantizedConv | FloatActivation,
    depth_multiplier: int | None = None,
) -> None:
    """Adds `@name(%input, %output)`: a convolution, or a depthwise one when
    `depth_multiplier` is given (filters `[1, KH, KW, IC * depth_multiplier]`)."""
    batches, height, width, in_channels = input_type.get_shape()
    _, out_height, out_width, out_channels = output_type.get_shape()
    filter_shape = filters[1].get_shape()
    kernel_height, kernel_width = filter_shape[1], filter_shape[2]
    (stride_h, stride_w), (dilation_h, dilation_w) = window.stride, window.dilation
    pad_top, pad_left = window.padding
    padded_h = _needs_bounds(height, out_height, kernel_height, stride_h, dilation_h, pad_top)
    padded_w = _needs_bounds(width, out_width, kernel_width, stride_w, dilation_w, pad_left)
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    weights = kernel.get_global(*filters)
    quantized = isinstance(arithmetic, QuantizedConv)
    accumulator_type = i32 if quantized else f32
    element = output_type.element_type
    requantize = (
        RequantizeEmitter(module, kernel, name, arithmetic.requantization)
        if isinstance(arithmetic, QuantizedConv)
        else None
    )

    folded = (
        kernel.get_global(*arithmetic.folded_bias)
        if isinstance(arithmetic, QuantizedConv)
        and arithmetic.folded_bias is not None
        and arithmetic.filter_offset == 0
        else None
    )
    # The bias as given serves the windows that leave the input (or every window, unfolded).
    clipping = folded is None or padded_h or padded_w
    bias_value = kernel.get_global(*bias) if bias is not None and clipping else None

    def product(x: Value, w: Value, offsets: bool) -> Value:
        if isinstance(arithmetic, QuantizedConv):
            x, w = kernel.cast(x, i32), kernel.cast(w, i32)
            if offsets:
                x = kernel.add(x, arithmetic.input_offset)
                w = kernel.add(w, arithmetic.filter_offset)
        return kernel.mul(w, x)

    def element_at(
        batch: Value,
        out_y: Value,
        out_x: Value,
        out_cs: Sequence[Value],
        in_c: Value | None,
        rows: tuple[Value, Value | int, Value | int],
        columns: tuple[Value, Value | int, Value | int],
    ) -> None:
        """Output elements of the channels `out_cs` at one position, each with its own
        accumulator summed in the same order (one input load serves them all);
        `rows`/`columns`: the window's origin and in-bounds taps (constants where the segment
        fixes them)."""
        origin_y, y_start, y_end = rows
        origin_x, x_start, x_end = columns
        zero = kernel.constant(0, accumulator_type)

        def accumulate(
            y_taps: tuple[Value | int, Value | int],
            x_taps: tuple[Value | int, Value | int],
            offsets: bool,
        ) -> Sequence[Value]:
            def over_y(ky: Value, acc: Sequence[Value]) -> list[Value]:
                in_y = kernel.add(origin_y, kernel.mul(ky, dilation_h))

                def over_x(kx: Value, acc_x: Sequence[Value]) -> list[Value]:
                    in_x = kernel.add(origin_x, kernel.mul(kx, dilation_w))
                    if in_c is not None:  # depthwise: one input channel per output channel
                        (out_c,) = out_cs
                        x = kernel.load(source, [batch, in_y, in_x, in_c])
                        w = kernel.load(weights, [0, ky, kx, out_c])
                        return [kernel.add(acc_x[0], product(x, w, offsets))]

                    def over_c(ic: Value, acc_c: Sequence[Value]) -> list[Value]:
                        x = kernel.load(source, [batch, in_y, in_x, ic])
                        return [
                            kernel.add(
                                partial,
                                product(x, kernel.load(weights, [out_c, ky, kx, ic]), offsets),
                            )
                            for partial, out_c in zip(acc_c, out_cs, strict=True)
                        ]

                    return list(kernel.loop(0, in_channels, over_c, acc_x))

                return list(kernel.loop(*x_taps, over_x, acc))

            return kernel.loop(*y_taps, over_y, [zero] * len(out_cs))

        def with_bias(total: Value, out_c: Value, channel_bias: Value | None) -> Value:
            return (
                total
                if channel_bias is None
                else kernel.add(total, kernel.load(channel_bias, [out_c]))
            )

        inside = (y_start, y_end, x_start, x_end) == (0, kernel_height, 0, kernel_width)
        if folded is not None and inside:
            totals = accumulate((0, kernel_height), (0, kernel_width), False)
            channel_bias = folded
        else:
            totals = accumulate((y_start, y_end), (x_start, x_end), offsets=True)
            channel_bias = bias_value
        for total, out_c in zip(totals, out_cs, strict=True):
            result = accumulated_output(
                kernel,
                with_bias(total, out_c, channel_bias),
                out_c,
                None,
                requantize,
                arithmetic,
                element,
            )
            kernel.store(result, target, [batch, out_y, out_x, out_c])

    def taps_of(
        segment: Segment, origin: Value, extent: int, size: int, dilation: int
    ) -> tuple[Value | int, Value | int]:
        if segment.taps is not None:
            return segment.taps
        return window_range(kernel, origin, extent, size, dilation, True)

    def output_rows(batch: Value, rows: Segment, columns: Segment) -> None:
        # The window's rows depend on the output row only, its columns on the output column.
        def output_row(out_y: Value, _: tuple[Value, ...]) -> list[Value]:
            origin_y = kernel.sub(kernel.mul(out_y, stride_h), pad_top)
            y_taps = taps_of(rows, origin_y, kernel_height, height, dilation_h)
            kernel.loop(
                columns.start,
                columns.end,
                lambda out_x, _: output_column(batch, out_y, (origin_y, *y_taps), out_x, columns),
            )
            return []

        kernel.loop(rows.start, rows.end, output_row)

    def output_column(
        batch: Value,
        out_y: Value,
        rows: tuple[Value, Value | int, Value | int],
        out_x: Value,
        segment: Segment,
    ) -> list[Value]:
        origin_x = kernel.sub(kernel.mul(out_x, stride_w), pad_left)
        columns = (origin_x, *taps_of(segment, origin_x, kernel_width, width, dilation_w))

        def channel(c: Value, _: tuple[Value, ...]) -> list[Value]:
            if depth_multiplier is None:
                block = [kernel.add(c, k) for k in range(channel_block)]
                element_at(batch, out_y, out_x, block, None, rows, columns)
                return []

            # c is the input channel; the loop runs over its `depth_multiplier` outputs
            def per_output(m: Value, _: tuple[Value, ...]) -> list[Value]:
                out_c = kernel.add(kernel.mul(c, depth_multiplier), m)
                element_at(batch, out_y, out_x, [out_c], c, rows, columns)
                return []

            kernel.loop(0, depth_multiplier, per_output)
            return []

        if depth_multiplier is None:
            kernel.loop(0, out_channels, channel, step=channel_block)
        else:
            kernel.loop(0, in_channels, channel)
        return []

    # Float sums are latency-bound chains: CHANNEL_BLOCK output channels at a time give the
    # compiler independent chains, each summed in TFLite's order (int8 keeps one accumulator,
    # the dot product the C backend's DSP variant recognises).
    channel_block = (
        CHANNEL_BLOCK
        if not quantized and depth_multiplier is None and out_channels % CHANNEL_BLOCK == 0
        else 1
    )

    # Each (row segment, column segment) pair is its own loop nest: inside it the window's
    # taps are constants (or computed once per row / column), and the interior has no test.
    row_segments = segments(height, out_height, kernel_height, stride_h, dilation_h, pad_top)
    column_segments = segments(width, out_width, kernel_width, stride_w, dilation_w, pad_left)

    def batch_body(batch: Value, _: tuple[Value, ...]) -> list[Value]:
        for rows in row_segments:
            for columns in column_segments:
                output_rows(batch, rows, columns)
        return []

    kernel.loop(0, batches, batch_body)
    finish(kernel)
    module.add(op)


def conv2d_nchw(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    filters: tuple[str, MemRefType],
    bias: tuple[str, MemRefType] | None,
    window: Window,
    arithmetic: QuantizedConv | FloatActivation,
    groups: int = 1,
) -> None:
    """Adds `@name(%input: NCHW, %output: NCHW)`: ONNX's grouped convolution, filters
    `[O, I / groups, KH, KW]` (depthwise when `groups` is the channel count). Summed in (ic, ky,
    kx) order in a register, padding read implicitly as in `conv2d`."""
    batches, _, height, width = input_type.get_shape()
    _, out_channels, out_height, out_width = output_type.get_shape()
    _, group_channels, kernel_height, kernel_width = filters[1].get_shape()
    outputs_per_group = out_channels // groups
    (stride_h, stride_w), (dilation_h, dilation_w) = window.stride, window.dilation
    pad_top, pad_left = window.padding
    padded_h = _needs_bounds(height, out_height, kernel_height, stride_h, dilation_h, pad_top)
    padded_w = _needs_bounds(width, out_width, kernel_width, stride_w, dilation_w, pad_left)
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    weights = kernel.get_global(*filters)
    bias_value = kernel.get_global(*bias) if bias is not None else None
    quantized = isinstance(arithmetic, QuantizedConv)
    element = output_type.element_type
    requantize = (
        RequantizeEmitter(module, kernel, name, arithmetic.requantization)
        if isinstance(arithmetic, QuantizedConv)
        else None
    )

    def product(x: Value, w: Value) -> Value:
        if isinstance(arithmetic, QuantizedConv):
            x = kernel.add(kernel.cast(x, i32), arithmetic.input_offset)
            w = kernel.add(kernel.cast(w, i32), arithmetic.filter_offset)
        return kernel.mul(w, x)

    def output_plane(ivs: Sequence[Value]) -> None:
        batch, out_c, out_y = ivs
        first_channel = (
            kernel.mul(kernel.div(out_c, outputs_per_group), group_channels) if groups > 1 else None
        )
        origin_y = kernel.sub(kernel.mul(out_y, stride_h), pad_top)
        y_start, y_end = window_range(kernel, origin_y, kernel_height, height, dilation_h, padded_h)

        def output_column(out_x: Value, _: tuple[Value, ...]) -> list[Value]:
            origin_x = kernel.sub(kernel.mul(out_x, stride_w), pad_left)
            x_start, x_end = window_range(
                kernel, origin_x, kernel_width, width, dilation_w, padded_w
            )

            def over_c(ic: Value, acc: tuple[Value, ...]) -> list[Value]:
                channel = kernel.add(first_channel, ic) if first_channel is not None else ic

                def over_y(ky: Value, acc_y: tuple[Value, ...]) -> list[Value]:
                    in_y = kernel.add(origin_y, kernel.mul(ky, dilation_h))

                    def over_x(kx: Value, acc_x: tuple[Value, ...]) -> list[Value]:
                        in_x = kernel.add(origin_x, kernel.mul(kx, dilation_w))
                        x = kernel.load(source, [batch, channel, in_y, in_x])
                        w = kernel.load(weights, [out_c, ic, ky, kx])
                        return [kernel.add(acc_x[0], product(x, w))]

                    return list(kernel.loop(x_start, x_end, over_x, acc_y))

                return list(kernel.loop(y_start, y_end, over_y, acc))

            zero = kernel.constant(0, i32 if quantized else f32)
            (total,) = kernel.loop(0, group_channels, over_c, [zero])
            result = accumulated_output(
                kernel, total, out_c, bias_value, requantize, arithmetic, element
            )
            kernel.store(result, target, [batch, out_c, out_y, out_x])
            return []

        kernel.loop(0, out_width, output_column)

    kernel.loops([batches, out_channels, out_height], output_plane)
    finish(kernel)
    module.add(op)
