"""AVERAGE_POOL_2D and MAX_POOL_2D (NHWC), as TFLite's reference pooling kernels compute them:
the window is clipped to the input (padding never counts), an int8 average rounds half away
from zero with integer division by the number of taps, and the result is clamped to the fused
activation's range. int8 pooling keeps the input's quantisation (TFLite requires equal
input and output parameters)."""

from __future__ import annotations

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


def pool2d(
    module: ModelModule, name: str, input_type: MemRefType, output_type: MemRefType, pool: Pool
) -> None:
    """Adds `@name(%input, %output)` computing `pool`."""
    batches, height, width, channels = input_type.get_shape()
    _, out_height, out_width, _ = output_type.get_shape()
    filter_h, filter_w = pool.filter_size
    (stride_h, stride_w), pad = pool.window.stride, pool.window.padding
    element = output_type.element_type
    integer = isinstance(element, IntegerType)
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])

    def body(ivs: list[Value]) -> None:
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
                x = kernel.load(source, [batch, in_y, kernel.add(origin_x, fx), channel])
                if integer:
                    x = kernel.cast(x, i32)
                if pool.kind == "average":
                    return [kernel.add(acc_x[0], x)]
                return [kernel.max(acc_x[0], x)]

            return list(kernel.loop(x_start, x_end, over_x, acc))

        (total,) = kernel.loop(y_start, y_end, over_y, [start])
        if pool.kind == "average":
            count = kernel.mul(
                kernel.sub(kernel.as_index(y_end), kernel.as_index(y_start)),
                kernel.sub(kernel.as_index(x_end), kernel.as_index(x_start)),
            )
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
        kernel.store(total, target, [batch, out_y, out_x, channel])

    kernel.loops([batches, out_height, out_width, channels], body)
    finish(kernel)
    module.add(op)
