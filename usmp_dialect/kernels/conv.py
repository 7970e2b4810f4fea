"""Convolutions (NHWC): CONV_2D (filters OHWI) and DEPTHWISE_CONV_2D (filters 1HW(I*M)).

Written as TFLite's reference kernels compute them (`reference_integer_ops::ConvPerChannel`,
`DepthwiseConvPerChannel` and the float `reference_ops` versions): for every output element an
accumulator in a register, summed over the filter window in (ky, kx, ic) order, skipping the
window positions outside the input (padding is read implicitly, never materialised), then the
bias, then requantisation (int8) or the activation clamp (float). The output positions of each
dimension are split into segments of equal in-bounds filter taps (shapes are static): each pair of
a row and a column segment is its own loop nest with constant window bounds, so the interior
runs without any test and the border windows as constant-trip loops (`segments`). int8
convolutions compute 2 output channels x 2 positions of equal taps together (`POSITION_BLOCK`):
each input value is loaded for two channels, each weight for two positions; every accumulator
still sums its own element, and integer sums do not depend on the order. An int8 window row
(its taps along x and every input channel: contiguous in NHWC and OHWI) is one run read from
views of equally spaced runs (`KernelBuilder.runs`), the loop the C backend prints with SMLAD.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i32, i64
from xdsl.ir import Attribute

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function
from usmp_dialect.kernels.hybrid import HybridArithmetic, hybrid_output, quantize_input
from usmp_dialect.kernels.module import (
    ModelModule,
    Requantization,
    RequantizeEmitter,
)


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
    per multiply-accumulate (CMSIS-NN's trick; only with `filter_offset == 0`).

    `accumulator`: the type the products are summed in, i32 (int8) or, for TFLite's 16x8
    kernels with an int64 bias, i64 (each product is still an int32, as TFLM computes it)."""

    input_offset: int
    requantization: Requantization
    filter_offset: int = 0
    folded_bias: tuple[str, MemRefType] | None = None
    accumulator: IntegerType = i32


def accumulate_product(
    kernel: KernelBuilder, total: Value, product: Value, arithmetic: QuantizedConv | FloatActivation
) -> Value:
    """`total + product`, the int32 product widened first when the accumulator is 64-bit."""
    if isinstance(arithmetic, QuantizedConv) and arithmetic.accumulator == i64:
        product = kernel.cast(product, i64)
    return kernel.add(total, product)


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

INT8_CHANNEL_BLOCK = 2
"""Output channels an int8 convolution computes together (when the count is a multiple)."""

POSITION_BLOCK = 2
"""Output positions an int8 convolution computes together where their windows keep the same
taps: with `INT8_CHANNEL_BLOCK` channels, four accumulators, each input value loaded for two
channels and each weight for two positions (CMSIS-NN's 2 x 2 block)."""


@dataclass(frozen=True)
class _Position:
    """One output position of a block: its indices and its window's origin."""

    out_y: Value
    out_x: Value
    origin_y: Value
    origin_x: Value
    step: tuple[int, int] = (0, 0)
    """(rows, columns) from the block's first position (static: blocks are consecutive)."""


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
    arithmetic: QuantizedConv | FloatActivation | HybridArithmetic,
    depth_multiplier: int | None = None,
    in_place: bool = False,
) -> None:
    """Adds `@name(%input, %output)`: a convolution, or a depthwise one when
    `depth_multiplier` is given (filters `[1, KH, KW, IC * depth_multiplier]`). Hybrid
    arithmetic quantises the float input into a scratch buffer first (`kernels/hybrid.py`) and
    sums int8 products like the int8 kernel, with float outputs.

    `in_place` (a depthwise convolution with depth multiplier 1): the output is a view of the
    input's first bytes, written over it the way TinyEngine does. Each output channel depends
    on its own input channel only, so the channels run one after the other: the whole output
    plane of channel c into a temporary of one plane (a scratch allocation the planner packs),
    then into the output, whose channel-c elements lie on the input's channel-c elements of
    earlier (or the same) positions, all read already."""
    batches, height, width, in_channels = input_type.get_shape()
    _, out_height, out_width, out_channels = output_type.get_shape()
    filter_shape = filters[1].get_shape()
    kernel_height, kernel_width = filter_shape[1], filter_shape[2]
    (stride_h, stride_w), (dilation_h, dilation_w) = window.stride, window.dilation
    pad_top, pad_left = window.padding
    padded_h = _needs_bounds(height, out_height, kernel_height, stride_h, dilation_h, pad_top)
    padded_w = _needs_bounds(width, out_width, kernel_width, stride_w, dilation_w, pad_left)
    element = output_type.element_type
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    plane: Value | None = None
    if in_place:
        assert depth_multiplier == 1 and in_channels == out_channels
        plane = kernel.insert(memref.AllocOp([], [], MemRefType(element, [out_height, out_width])))
        plane.name_hint = "plane"
    weights = kernel.get_global(*filters)
    hybrid = arithmetic if isinstance(arithmetic, HybridArithmetic) else None
    quantized = isinstance(arithmetic, QuantizedConv) or hybrid is not None
    factors: Value | None = None
    zero_points: Value | None = None
    channel_scales: Value | None = None
    if hybrid is not None:
        source, factors, zero_points = quantize_input(kernel, source, input_type, hybrid)
        if hybrid.channel_scales is not None:
            channel_scales = kernel.get_global(*hybrid.channel_scales)
    if isinstance(arithmetic, QuantizedConv):
        accumulator_type = arithmetic.accumulator
    else:
        accumulator_type = i32 if hybrid is not None else f32
    one_by_one = (kernel_height, kernel_width) == (1, 1)
    pointwise = one_by_one and window.stride == (1, 1) and window.padding == (0, 0)
    if quantized and depth_multiplier is None and pointwise and out_height > 1:
        # A 1x1 convolution of stride 1 maps position p of the input to position p of the
        # output: seen as one row of H * W positions, the blocks of positions run on across the
        # rows (no odd position left at the end of each row).
        positions = height * width
        source = _reshaped(kernel, source, (batches, 1, positions, in_channels))
        target = _reshaped(kernel, target, (batches, 1, positions, out_channels))
        height, width, out_height, out_width = 1, positions, 1, positions
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

    # int8 convolutions read a window row (its taps along x, every input channel) as one run:
    # contiguous in the NHWC input and the OHWI filters when the window is not dilated along x,
    # so the C backend's dot product covers kx and ic at once (SMLAD four elements at a time
    # even for a one-channel first layer, whose 4-tap rows are one step).
    rows_contiguous = quantized and depth_multiplier is None and dilation_w == 1

    def flat(buffer: Value) -> Value:
        """`buffer` as one dimension (the runs are views of it)."""
        memref_type = buffer.type
        assert isinstance(memref_type, MemRefType)
        return _reshaped(kernel, buffer, (int(np.prod(memref_type.get_shape())),))

    flat_input = flat(source) if rows_contiguous else source
    flat_filters = flat(weights) if rows_contiguous else weights

    def position_spacing(positions: Sequence[_Position]) -> int | None:
        """The input elements between the windows of consecutive positions of a block (None
        when they are not equally spaced)."""
        steps = [p.step for p in positions]
        if len(steps) == 1:
            return width * in_channels
        dy, dx = steps[1]
        if any(step != (k * dy, k * dx) for k, step in enumerate(steps)):
            return None
        return (dy * stride_h * width + dx * stride_w) * in_channels

    def widened(value: Value, offset: Value | int) -> Value:
        """An int8 operand as the int32 the product takes (plus its offset), a float as is."""
        if not quantized:
            return value
        return kernel.add(kernel.cast(value, i32), offset)

    def element_at(
        batch: Value,
        positions: Sequence[_Position],
        out_cs: Sequence[Value],
        in_c: Value | None,
        y_taps: tuple[Value | int, Value | int],
        x_taps: tuple[Value | int, Value | int],
    ) -> None:
        """Output elements of the channels `out_cs` at `positions` (windows with the same
        in-bounds taps `y_taps`, `x_taps`, constants where the segment fixes them), each with
        its own accumulator summed in the same (ky, kx, ic) order: one input load serves every
        channel, one weight load every position."""
        zero = kernel.constant(0, accumulator_type)

        def accumulate(
            y_range: tuple[Value | int, Value | int],
            x_range: tuple[Value | int, Value | int],
            offsets: bool,
        ) -> Sequence[Value]:
            offset = isinstance(arithmetic, QuantizedConv) and offsets
            input_offset: Value | int = arithmetic.input_offset if offset else 0
            filter_offset = arithmetic.filter_offset if offset else 0
            if zero_points is not None:  # hybrid, asymmetric: the batch's zero point
                input_offset = kernel.sub(0, kernel.load(zero_points, [batch]))

            def over_row(ky: Value, acc: Sequence[Value]) -> list[Value]:
                """The window row `ky` as one run of `(x_end - x_start) * in_channels`
                elements, contiguous in the input and in the filters."""
                x_start, x_end = x_range
                assert isinstance(x_start, int) and isinstance(x_end, int)
                length = (x_end - x_start) * in_channels
                if length == 0:
                    return list(acc)
                # The positions' runs (and the channels') lie a constant distance apart: one
                # view of equally spaced runs each, so the loop reads them from one pointer.
                first = positions[0]
                in_y = kernel.add(first.origin_y, kernel.mul(ky, dilation_h))
                start = kernel.add(
                    kernel.mul(kernel.add(kernel.mul(batch, height), in_y), width),
                    kernel.add(first.origin_x, x_start),
                )
                spacing = position_spacing(positions)
                assert spacing is not None  # blocks are consecutive along one axis
                xs_view = kernel.runs(
                    flat_input, kernel.mul(start, in_channels), len(positions), spacing, length
                )
                filter_start = kernel.add(
                    kernel.mul(out_cs[0], kernel_height * kernel_width * in_channels),
                    kernel.add(kernel.mul(ky, kernel_width * in_channels), x_start * in_channels),
                )
                ws_view = kernel.runs(
                    flat_filters,
                    filter_start,
                    len(out_cs),
                    kernel_height * kernel_width * in_channels,
                    length,
                )

                def over_t(t: Value, acc_t: Sequence[Value]) -> list[Value]:
                    xs = [
                        widened(kernel.load(xs_view, [k, t]), input_offset)
                        for k in range(len(positions))
                    ]
                    ws = [
                        widened(kernel.load(ws_view, [k, t]), filter_offset)
                        for k in range(len(out_cs))
                    ]
                    products = [kernel.mul(x, w) for x in xs for w in ws]
                    return [
                        accumulate_product(kernel, partial, product, arithmetic)
                        for partial, product in zip(acc_t, products, strict=True)
                    ]

                return list(kernel.loop(0, length, over_t, acc))

            def over_y(ky: Value, acc: Sequence[Value]) -> list[Value]:
                if (
                    rows_contiguous
                    and in_c is None
                    and all(isinstance(v, int) for v in x_range)
                    and position_spacing(positions) is not None
                ):
                    return over_row(ky, acc)
                in_ys = [kernel.add(p.origin_y, kernel.mul(ky, dilation_h)) for p in positions]

                def over_x(kx: Value, acc_x: Sequence[Value]) -> list[Value]:
                    in_xs = [kernel.add(p.origin_x, kernel.mul(kx, dilation_w)) for p in positions]
                    if in_c is not None:  # depthwise: one input channel per output channel
                        (out_c,) = out_cs
                        (in_y,), (in_x,) = in_ys, in_xs
                        x = widened(kernel.load(source, [batch, in_y, in_x, in_c]), input_offset)
                        w = widened(kernel.load(weights, [0, ky, kx, out_c]), filter_offset)
                        return [accumulate_product(kernel, acc_x[0], kernel.mul(x, w), arithmetic)]

                    def over_c(ic: Value, acc_c: Sequence[Value]) -> list[Value]:
                        xs = [
                            widened(kernel.load(source, [batch, in_y, in_x, ic]), input_offset)
                            for in_y, in_x in zip(in_ys, in_xs, strict=True)
                        ]
                        ws = [
                            widened(kernel.load(weights, [out_c, ky, kx, ic]), filter_offset)
                            for out_c in out_cs
                        ]
                        products = [kernel.mul(x, w) for x in xs for w in ws]
                        return [
                            accumulate_product(kernel, partial, product, arithmetic)
                            for partial, product in zip(acc_c, products, strict=True)
                        ]

                    return list(kernel.loop(0, in_channels, over_c, acc_x))

                return list(kernel.loop(*x_range, over_x, acc))

            return kernel.loop(*y_range, over_y, [zero] * (len(positions) * len(out_cs)))

        def with_bias(total: Value, out_c: Value, channel_bias: Value | None) -> Value:
            return (
                total
                if channel_bias is None
                else kernel.add(total, kernel.load(channel_bias, [out_c]))
            )

        inside = (*y_taps, *x_taps) == (0, kernel_height, 0, kernel_width)
        if folded is not None and inside:
            totals = accumulate((0, kernel_height), (0, kernel_width), False)
            channel_bias = folded
        else:
            totals = accumulate(y_taps, x_taps, offsets=True)
            channel_bias = bias_value
        outputs = [(p, out_c) for p in positions for out_c in out_cs]
        for total, (position, out_c) in zip(totals, outputs, strict=True):
            if hybrid is not None:
                assert factors is not None
                factor = kernel.load(factors, [batch])
                result = hybrid_output(
                    kernel, total, factor, channel_bias, out_c, hybrid, channel_scales
                )
                kernel.store(result, target, [batch, position.out_y, position.out_x, out_c])
                continue
            result = accumulated_output(
                kernel,
                with_bias(total, out_c, channel_bias),
                out_c,
                None,
                requantize,
                arithmetic,
                element,
            )
            if plane is not None:
                kernel.store(result, plane, [position.out_y, position.out_x])
            else:
                kernel.store(result, target, [batch, position.out_y, position.out_x, out_c])

    def taps_of(
        segment: Segment, origin: Value, extent: int, size: int, dilation: int
    ) -> tuple[Value | int, Value | int]:
        if segment.taps is not None:
            return segment.taps
        return window_range(kernel, origin, extent, size, dilation, True)

    def block_of(segment: Segment) -> int:
        """Positions of the segment computed together (those of a block share their taps)."""
        blocked = quantized and depth_multiplier is None and segment.taps is not None
        return POSITION_BLOCK if blocked and segment.end - segment.start >= POSITION_BLOCK else 1

    def blocks(start: int, end: int, block: int, body: Callable[[list[Value]], None]) -> None:
        """`body(positions)` over `[start, end)`: `block` positions per iteration, then the
        remainder one at a time."""
        whole = start + (end - start) // block * block

        def run(iv: Value, _: Sequence[Value], count: int) -> list[Value]:
            body([kernel.add(iv, k) for k in range(count)])
            return []

        if whole > start:
            kernel.loop(start, whole, lambda iv, c: run(iv, c, block), step=block)
        if whole < end:
            kernel.loop(whole, end, lambda iv, c: run(iv, c, 1))

    def output_rows(batch: Value, rows: Segment, columns: Segment) -> None:
        # The window's rows depend on the output row only, its columns on the output column.
        # Blocks of positions run along a row (or down a column when the row segment has one
        # position: a 1-wide output).
        block_x = block_of(columns)
        block_y = block_of(rows) if block_x == 1 else 1
        # Window rows read as runs (constant column taps) need the block's first origin only:
        # the other positions' runs lie at a static distance (C rejects unused locals).
        first_only = rows_contiguous and columns.taps is not None

        # A window wholly in the padding (explicit padding wider than the window: a folded
        # PAD) reads nothing: no origin is computed (C rejects unused locals).
        no_reads = any(
            segment.taps is not None and segment.taps[0] >= segment.taps[1]
            for segment in (rows, columns)
        )

        def origins(outs: list[Value], stride: int, pad: int) -> list[Value]:
            if no_reads:
                return list(outs)
            computed = outs[:1] if first_only else outs
            values = [kernel.sub(kernel.mul(out, stride), pad) for out in computed]
            return values + [values[0]] * (len(outs) - len(values))

        def output_row_block(out_ys: list[Value]) -> None:
            origins_y = origins(out_ys, stride_h, pad_top)
            y_taps = (
                (0, 0)
                if no_reads
                else taps_of(rows, origins_y[0], kernel_height, height, dilation_h)
            )

            def output_column_block(out_xs: list[Value]) -> None:
                origins_x = origins(out_xs, stride_w, pad_left)
                x_taps = (
                    (0, 0)
                    if no_reads
                    else taps_of(columns, origins_x[0], kernel_width, width, dilation_w)
                )
                positions = [
                    _Position(out_y, out_x, origin_y, origin_x, (dy, dx))
                    for dy, (out_y, origin_y) in enumerate(zip(out_ys, origins_y, strict=True))
                    for dx, (out_x, origin_x) in enumerate(zip(out_xs, origins_x, strict=True))
                ]
                output_channels(batch, positions, y_taps, x_taps)

            blocks(columns.start, columns.end, block_x, output_column_block)

        blocks(rows.start, rows.end, block_y, output_row_block)

    def output_channels(
        batch: Value,
        positions: list[_Position],
        y_taps: tuple[Value | int, Value | int],
        x_taps: tuple[Value | int, Value | int],
    ) -> None:
        if in_place_channel is not None:  # in place: one channel at a time, outside
            element_at(batch, positions, [in_place_channel], in_place_channel, y_taps, x_taps)
            return

        def channel(c: Value, _: Sequence[Value]) -> list[Value]:
            if depth_multiplier is None:
                block = [kernel.add(c, k) for k in range(channel_block)]
                element_at(batch, positions, block, None, y_taps, x_taps)
                return []

            # c is the input channel; the loop runs over its `depth_multiplier` outputs
            def per_output(m: Value, _: Sequence[Value]) -> list[Value]:
                out_c = kernel.add(kernel.mul(c, depth_multiplier), m)
                element_at(batch, positions, [out_c], c, y_taps, x_taps)
                return []

            kernel.loop(0, depth_multiplier, per_output)
            return []

        if depth_multiplier is None:
            kernel.loop(0, out_channels, channel, step=channel_block)
        else:
            kernel.loop(0, in_channels, channel)

    # Float sums are latency-bound chains: CHANNEL_BLOCK output channels at a time give the
    # compiler independent chains, each summed in TFLite's order. int8 sums are exact in any
    # order: INT8_CHANNEL_BLOCK channels x POSITION_BLOCK positions share their loads, the
    # block of dot products the C backend's DSP variant recognises.
    block = INT8_CHANNEL_BLOCK if quantized else CHANNEL_BLOCK
    channel_block = block if depth_multiplier is None and out_channels % block == 0 else 1

    # Each (row segment, column segment) pair is its own loop nest: inside it the window's
    # taps are constants (or computed once per row / column), and the interior has no test.
    row_segments = segments(height, out_height, kernel_height, stride_h, dilation_h, pad_top)
    column_segments = segments(width, out_width, kernel_width, stride_w, dilation_w, pad_left)

    in_place_channel: Value | None = None

    def batch_body(batch: Value, _: tuple[Value, ...]) -> list[Value]:
        if plane is not None:
            kernel.loop(0, in_channels, lambda c, _: in_place_plane(batch, c))
            return []
        for rows in row_segments:
            for columns in column_segments:
                output_rows(batch, rows, columns)
        return []

    def in_place_plane(batch: Value, c: Value) -> list[Value]:
        """Channel c's output plane into the temporary, then over channel c."""
        nonlocal in_place_channel
        assert plane is not None
        in_place_channel = c
        for rows in row_segments:
            for columns in column_segments:
                output_rows(batch, rows, columns)
        in_place_channel = None
        kernel.loops(
            [out_height, out_width],
            lambda ivs: kernel.store(kernel.load(plane, ivs), target, [batch, *ivs, c]),
        )
        return []

    kernel.loop(0, batches, batch_body)
    finish(kernel)
    module.add(op)


def _reshaped(kernel: KernelBuilder, buffer: Value, shape: tuple[int, ...]) -> Value:
    return kernel.reshaped(buffer, shape)


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
    in_place: bool = False,
) -> None:
    """Adds `@name(%input: NCHW, %output: NCHW)`: ONNX's grouped convolution, filters
    `[O, I / groups, KH, KW]` (depthwise when `groups` is the channel count). Summed in (ic, ky,
    kx) order in a register, padding read implicitly as in `conv2d`.

    `in_place` (depthwise, one input channel per output channel): the output is a view of the
    input's first bytes, as in `conv2d`; channel c's plane goes to a temporary of one plane,
    then to the output, over input channels c and before, all read already."""
    batches, _, height, width = input_type.get_shape()
    _, out_channels, out_height, out_width = output_type.get_shape()
    _, group_channels, kernel_height, kernel_width = filters[1].get_shape()
    outputs_per_group = out_channels // groups
    (stride_h, stride_w), (dilation_h, dilation_w) = window.stride, window.dilation
    pad_top, pad_left = window.padding
    padded_h = _needs_bounds(height, out_height, kernel_height, stride_h, dilation_h, pad_top)
    padded_w = _needs_bounds(width, out_width, kernel_width, stride_w, dilation_w, pad_left)
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    element = output_type.element_type
    plane: Value | None = None
    if in_place:
        assert groups == out_channels and group_channels == 1
        plane = kernel.insert(memref.AllocOp([], [], MemRefType(element, [out_height, out_width])))
        plane.name_hint = "plane"
    weights = kernel.get_global(*filters)
    bias_value = kernel.get_global(*bias) if bias is not None else None
    quantized = isinstance(arithmetic, QuantizedConv)
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
            if plane is not None:
                kernel.store(result, plane, [out_y, out_x])
            else:
                kernel.store(result, target, [batch, out_c, out_y, out_x])
            return []

        kernel.loop(0, out_width, output_column)

    def in_place_plane(ivs: Sequence[Value]) -> None:
        """Channel c's output plane into the temporary, then into the output."""
        assert plane is not None
        batch, out_c = ivs
        kernel.loop(0, out_height, lambda out_y, _: output_plane([batch, out_c, out_y]) or [])
        kernel.loops(
            [out_height, out_width],
            lambda yx: kernel.store(kernel.load(plane, yx), target, [batch, out_c, *yx]),
        )

    if plane is not None:
        kernel.loops([batches, out_channels], in_place_plane)
    else:
        kernel.loops([batches, out_channels, out_height], output_plane)
    finish(kernel)
    module.add(op)
