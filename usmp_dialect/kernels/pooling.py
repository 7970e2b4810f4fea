"""AVERAGE_POOL_2D and MAX_POOL_2D (NHWC), as TFLite's reference pooling kernels compute them:
the window is clipped to the input (padding never counts), an int8 average rounds half away
from zero with integer division by the number of taps, and the result is clamped to the fused
activation's range. int8 pooling keeps the input's quantisation (TFLite requires equal
input and output parameters)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i32

from usmp_dialect.kernels.builder import Value, finish, function
from usmp_dialect.kernels.conv import Window, window_range
from usmp_dialect.kernels.module import ModelModule

FLOAT_LOWEST = -3.4028234663852886e38  # std::numeric_limits<float>::lowest()


@dataclass(frozen=True)
class Pool:
    kind: str  # "average" or "max"
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
        if pool.kind == "average":
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
                if pool.kind == "average":
                    return [kernel.add(acc_x[0], x)]
                return [kernel.max(acc_x[0], x)]

            return list(kernel.loop(x_start, x_end, over_x, acc))

        (total,) = kernel.loop(y_start, y_end, over_y, [start])
        if pool.kind == "average":
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
