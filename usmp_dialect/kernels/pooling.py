"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (NHWC; L2 float32 only, `sqrt(sum of squares
/ taps)` in float as TFLite's `L2Pool`), as TFLite's reference pooling kernels compute them:
the window is clipped to the input (padding never counts), an int8 average rounds half away
from zero with integer division by the number of taps, and the result is clamped to the fused
activation's range. int8 pooling keeps the input's quantisation (TFLite requires equal
input and output parameters).

NHWC loops over the output positions first and the channels inside (the window's bounds,
tap count and rounding half computed once per position, not per channel); the positions are
split by their windows' in-bounds taps (`conv.segments`), so a window that never leaves the
input — every window of a global pool or of VALID padding — has constant loop bounds and a
constant divisor: the C backend unrolls a small window completely and gcc turns the division
into a multiplication. A global pool (one output position, its window the whole input) reads
the input as `[batches, height * width, channels]` and reduces `CHANNEL_BLOCK` channels per
pass over the taps, each tap's channels one 32-bit word apart from the next tap's: the C
backend sums int8 words with two `SXTAB16`s on a DSP core (`loops.int8_lane_sums`). The sums
and the rounding are the same integers either way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import math
from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i32
from xdsl.ir import Attribute

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function
from usmp_dialect.kernels.conv import Segment, Window, segments, window_range
from usmp_dialect.kernels.module import ModelModule

FLOAT_LOWEST = -3.4028234663852886e38  # std::numeric_limits<float>::lowest()

CHANNEL_BLOCK = 4
"""Channels a global pool reduces per pass over its taps (one int8 word per tap)."""


@dataclass(frozen=True)
class Pool:
    kind: str  # "average", "max" or "l2"
    filter_size: tuple[int, int]
    window: Window
    activation_min: float
    activation_max: float
    layout: str = "NHWC"  # or "NCHW" (ONNX)
    # ONNX's count_include_pad: the divisor counts the padding, up to these padded extents
    padded_size: tuple[int, int] | None = None


def pool2d(
    module: ModelModule, name: str, input_type: MemRefType, output_type: MemRefType, pool: Pool
) -> None:
    """Adds `@name(%input, %output)` computing `pool`."""
    nchw = pool.layout == "NCHW"
    if nchw:
        batches, channels, height, width = input_type.get_shape()
        _, _, out_height, out_width = output_type.get_shape()
    else:
        batches, height, width, channels = input_type.get_shape()
        _, out_height, out_width, _ = output_type.get_shape()
    filter_h, filter_w = pool.filter_size
    (stride_h, stride_w), pad = pool.window.stride, pool.window.padding
    element = output_type.element_type
    integer = isinstance(element, IntegerType)
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])

    if not nchw:
        _pool_nhwc(kernel, source, target, pool)
        finish(kernel)
        module.add(op)
        return

    def at(batch: Value, y: Value, x: Value, channel: Value) -> list[Value]:
        return [batch, channel, y, x] if nchw else [batch, y, x, channel]

    def body(ivs: Sequence[Value]) -> None:
        if nchw:
            batch, channel, out_y, out_x = ivs
        else:
            batch, out_y, out_x, channel = ivs
        origin_y = kernel.sub(kernel.mul(out_y, stride_h), pad[0])
        origin_x = kernel.sub(kernel.mul(out_x, stride_w), pad[1])
        y_start, y_end = window_range(kernel, origin_y, filter_h, height, 1, True)
        x_start, x_end = window_range(kernel, origin_x, filter_w, width, 1, True)
        if pool.kind != "max":
            start: Value = kernel.constant(0, i32 if integer else f32)
        elif integer:
            start = kernel.constant(-(2 ** (element.width.data - 1)), i32)
        else:
            start = kernel.constant(FLOAT_LOWEST, f32)

        def over_y(fy: Value, acc: tuple[Value, ...]) -> list[Value]:
            in_y = kernel.add(origin_y, fy)

            def over_x(fx: Value, acc_x: tuple[Value, ...]) -> list[Value]:
                x = kernel.load(source, at(batch, in_y, kernel.add(origin_x, fx), channel))
                if integer:
                    x = kernel.cast(x, i32)
                return [_accumulate(kernel, pool, acc_x[0], x)]

            return list(kernel.loop(x_start, x_end, over_x, acc))

        (total,) = kernel.loop(y_start, y_end, over_y, [start])
        if pool.kind != "max":
            if pool.padded_size is not None:
                y_limit, x_limit = pool.padded_size
                rows = kernel.sub(kernel.min(kernel.add(origin_y, filter_h), y_limit), origin_y)
                columns = kernel.sub(kernel.min(kernel.add(origin_x, filter_w), x_limit), origin_x)
            else:
                rows = kernel.sub(kernel.as_index(y_end), kernel.as_index(y_start))
                columns = kernel.sub(kernel.as_index(x_end), kernel.as_index(x_start))
            count = kernel.mul(rows, columns)
            if integer:
                count = kernel.cast(count, i32)
                half = kernel.div(count, 2)
                positive = kernel.cmp("sgt", total, 0)
                rounded = kernel.select(positive, kernel.add(total, half), kernel.sub(total, half))
                total = kernel.div(rounded, count)
            else:
                total = kernel.div(total, kernel.cast(kernel.cast(count, i32), f32))
                if pool.kind == "l2":
                    total = kernel.insert(math.SqrtOp(total))
        if integer:
            low, high = int(pool.activation_min), int(pool.activation_max)
            total = kernel.cast(kernel.clamp(total, low, high), element)
        else:
            if pool.activation_min != float("-inf"):
                total = kernel.max(total, pool.activation_min)
            if pool.activation_max != float("inf"):
                total = kernel.min(total, pool.activation_max)
        kernel.store(total, target, at(batch, out_y, out_x, channel))

    extents = (
        [batches, channels, out_height, out_width]
        if nchw
        else [batches, out_height, out_width, channels]
    )
    kernel.loops(extents, body)
    finish(kernel)
    module.add(op)


def _accumulate(kernel: KernelBuilder, pool: Pool, total: Value, x: Value) -> Value:
    """One tap into the accumulator: its sum, its square's sum (L2) or the maximum."""
    if pool.kind == "average":
        return kernel.add(total, x)
    if pool.kind == "l2":
        return kernel.add(total, kernel.mul(x, x))
    return kernel.max(total, x)


def _start(kernel: KernelBuilder, pool: Pool, element: Attribute) -> Value:
    """The accumulator's first value: 0 for an average, the lowest value for a maximum."""
    integer = isinstance(element, IntegerType)
    if pool.kind != "max":
        return kernel.constant(0, i32 if integer else f32)
    if isinstance(element, IntegerType):
        return kernel.constant(-(2 ** (element.width.data - 1)), i32)
    return kernel.constant(FLOAT_LOWEST, f32)


def _finish(
    kernel: KernelBuilder,
    pool: Pool,
    element: Attribute,
    total: Value,
    count: tuple[Value | int, Value | int],
) -> Value:
    """The average of `total` over `count` (taps, taps // 2) (TFLite's rounding for integers)
    and the activation's clamp, in the output's type."""
    count, half = count
    integer = isinstance(element, IntegerType)
    if pool.kind != "max":
        if integer:
            positive = kernel.cmp("sgt", total, 0)
            rounded = kernel.select(positive, kernel.add(total, half), kernel.sub(total, half))
            total = kernel.div(rounded, count)
        else:
            divisor = float(count) if isinstance(count, int) else kernel.cast(count, f32)
            total = kernel.div(total, divisor)
            if pool.kind == "l2":
                total = kernel.insert(math.SqrtOp(total))
    if integer:
        low, high = int(pool.activation_min), int(pool.activation_max)
        return kernel.cast(kernel.clamp(total, low, high), element)
    if pool.activation_min != float("-inf"):
        total = kernel.max(total, pool.activation_min)
    if pool.activation_max != float("inf"):
        total = kernel.min(total, pool.activation_max)
    return total


def _pool_nhwc(kernel: KernelBuilder, source: Value, target: Value, pool: Pool) -> None:
    """NHWC: per output position its window, then every channel's reduction (module
    docstring)."""
    input_type, output_type = source.type, target.type
    assert isinstance(input_type, MemRefType) and isinstance(output_type, MemRefType)
    batches, height, width, channels = input_type.get_shape()
    _, out_height, out_width, _ = output_type.get_shape()
    filter_h, filter_w = pool.filter_size
    (stride_h, stride_w), (pad_y, pad_x) = pool.window.stride, pool.window.padding
    element = output_type.element_type
    integer = isinstance(element, IntegerType)
    rows = segments(height, out_height, filter_h, stride_h, 1, pad_y)
    columns = segments(width, out_width, filter_w, stride_w, 1, pad_x)
    whole = [Segment(0, 1, (0, height))], [Segment(0, 1, (0, width))]
    if (rows, columns) == whole and pool.padded_size is None and _contiguous(input_type):
        _global_pool(kernel, source, target, pool)
        return

    def taps(segment: Segment, origin: Value, extent: int, size: int) -> tuple[Value | int, ...]:
        if segment.taps is not None:
            return segment.taps
        return window_range(kernel, origin, extent, size, 1, True)

    def position(batch: Value, out_y: Value, out_x: Value, row: Segment, column: Segment) -> None:
        origin_y = kernel.sub(kernel.mul(out_y, stride_h), pad_y)
        origin_x = kernel.sub(kernel.mul(out_x, stride_w), pad_x)
        y_start, y_end = taps(row, origin_y, filter_h, height)
        x_start, x_end = taps(column, origin_x, filter_w, width)
        count: Value | int
        if pool.kind == "max":
            count = 1
        elif pool.padded_size is not None:  # ONNX count_include_pad
            y_limit, x_limit = pool.padded_size
            rows_ = kernel.sub(kernel.min(kernel.add(origin_y, filter_h), y_limit), origin_y)
            columns_ = kernel.sub(kernel.min(kernel.add(origin_x, filter_w), x_limit), origin_x)
            count = kernel.mul(rows_, columns_)
        elif all(isinstance(bound, int) for bound in (y_start, y_end, x_start, x_end)):
            # A window wholly in the padding (TFLite divides by zero there) divides by 1
            # rather than print a constant division by zero.
            count = max((int(y_end) - int(y_start)) * (int(x_end) - int(x_start)), 1)
        else:
            rows_ = kernel.sub(kernel.as_index(y_end), kernel.as_index(y_start))
            columns_ = kernel.sub(kernel.as_index(x_end), kernel.as_index(x_start))
            count = kernel.mul(rows_, columns_)
        if not isinstance(count, int):
            count = kernel.cast(count, i32)
        half = count // 2 if isinstance(count, int) else kernel.div(count, 2)

        def channel(c: Value, _: Sequence[Value]) -> list[Value]:
            def over_y(fy: Value, acc: Sequence[Value]) -> list[Value]:
                in_y = kernel.add(origin_y, fy)

                def over_x(fx: Value, acc_x: Sequence[Value]) -> list[Value]:
                    x = kernel.load(source, [batch, in_y, kernel.add(origin_x, fx), c])
                    if integer:
                        x = kernel.cast(x, i32)
                    return [_accumulate(kernel, pool, acc_x[0], x)]

                return list(kernel.loop(x_start, x_end, over_x, acc))

            (total,) = kernel.loop(y_start, y_end, over_y, [_start(kernel, pool, element)])
            kernel.store(
                _finish(kernel, pool, element, total, (count, half)),
                target,
                [batch, out_y, out_x, c],
            )
            return []

        kernel.loop(0, channels, channel)

    def per_batch(batch: Value, _: Sequence[Value]) -> list[Value]:
        for row in rows:
            for column in columns:

                def over_rows(
                    out_y: Value, _: Sequence[Value], row: Segment = row, column: Segment = column
                ) -> list[Value]:
                    def over_columns(out_x: Value, _: Sequence[Value]) -> list[Value]:
                        position(batch, out_y, out_x, row, column)
                        return []

                    kernel.loop(column.start, column.end, over_columns)
                    return []

                kernel.loop(row.start, row.end, over_rows)
        return []

    kernel.loop(0, batches, per_batch)


def _contiguous(memref_type: MemRefType) -> bool:
    """Whether the elements are packed row-major (whatever the offset): a window of whole rows
    of a tensor is, so its taps can be read as one run."""
    shape = memref_type.get_shape()
    expected, running = [], 1
    for size in reversed(shape):
        expected.append(running)
        running *= size
    strides = memref_type.get_strides()
    return strides is None or list(strides) == expected[::-1]


def _global_pool(kernel: KernelBuilder, source: Value, target: Value, pool: Pool) -> None:
    """One output position whose window is the whole input: the taps as one loop over the
    input seen as `[batches, taps, channels]`, `CHANNEL_BLOCK` channels per pass (their
    accumulators carried together), the last `channels % CHANNEL_BLOCK` one at a time."""
    input_type, output_type = source.type, target.type
    assert isinstance(input_type, MemRefType) and isinstance(output_type, MemRefType)
    batches, height, width, channels = input_type.get_shape()
    taps = height * width
    element = output_type.element_type
    integer = isinstance(element, IntegerType)
    # A streamed row window has a dynamic offset: `reshaped` casts from its base buffer.
    view = kernel.reshaped(source, [batches, taps, channels])
    count = (taps, taps // 2)

    def reduce(batch: Value, first: Value, block: int) -> None:
        """Channels `[first, first + block)`: their sums over every tap, then their outputs."""
        # The channel indices computed before the loop: its body is the loads and sums only.
        indices = [first, *(kernel.add(first, k) for k in range(1, block))]

        def over_taps(tap: Value, acc: Sequence[Value]) -> list[Value]:
            values = [kernel.load(view, [batch, tap, c]) for c in indices]
            if integer:
                values = [kernel.cast(value, i32) for value in values]
            return [_accumulate(kernel, pool, a, v) for a, v in zip(acc, values, strict=True)]

        start = [_start(kernel, pool, element) for _ in indices]
        totals = kernel.loop(0, taps, over_taps, start)
        for c, total in zip(indices, totals, strict=True):
            value = _finish(kernel, pool, element, total, count)
            kernel.store(value, target, [batch, kernel.index(0), kernel.index(0), c])

    blocked = channels - channels % CHANNEL_BLOCK

    def per_batch(batch: Value, _: Sequence[Value]) -> list[Value]:
        if blocked:
            kernel.loop(
                0,
                blocked,
                lambda c, _: reduce(batch, c, CHANNEL_BLOCK) or [],
                step=CHANNEL_BLOCK,
            )
        if blocked < channels:
            kernel.loop(blocked, channels, lambda c, _: reduce(batch, c, 1) or [])
        return []

    kernel.loop(0, batches, per_batch)
