"""TRANSPOSE_CONV on NHWC tensors (filters OHWI), as TFLite's reference kernels compute it
(`reference_ops::TransposeConv`, `reference_integer_ops::TransposeConv`).

TFLite scatters: every input element adds `x * w` to each output element it reaches, into a
zeroed output (int32 scratch buffer for int8), then adds the bias and requantises or clamps.
Here each output element gathers the same products instead, in one register, with no scratch
buffer: the input rows reaching output row `oy` are those with
`0 <= oy + pad - in_y * stride < filter height`, visited in increasing `in_y`, then `in_x`, then
input channel — the order in which TFLite's scatter adds them to that element, so float sums
round alike. int8 products are `(x + input_offset) * w` (TFLite ignores the filter zero point)
summed in wrapping int32; int16 (16x8) products are int32, summed in int64.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i32

from usmp_dialect.kernels.builder import INDEX, KernelBuilder, Value, finish, function
from usmp_dialect.kernels.conv import (
    FloatActivation,
    QuantizedConv,
    accumulate_product,
    accumulated_output,
)
from usmp_dialect.kernels.module import ModelModule, RequantizeEmitter


def _taps(
    kernel: KernelBuilder, position: Value, pad: int, stride: int, filter_size: int, size: int
) -> tuple[Value, Value, Value]:
    """`[first, end)` of the input positions reaching output `position` (an index), and
    `position + pad` (the filter tap of input 0)."""
    origin = kernel.add(kernel.cast(position, i32), pad)
    first = kernel.max(kernel.ceil_div(kernel.sub(origin, filter_size - 1), stride), 0)
    end = kernel.min(kernel.add(kernel.div(origin, stride), 1), size)
    return first, end, origin


def transpose_conv2d(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    filters: tuple[str, MemRefType],
    bias: tuple[str, MemRefType] | None,
    stride: tuple[int, int],
    padding: tuple[int, int],
    arithmetic: QuantizedConv | FloatActivation,
) -> None:
    """Adds `@name(%input, %output)`: the transposed convolution of `input` with the constant
    `filters` ([out channels, height, width, in channels]) and optional `bias`."""
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    weights = kernel.get_global(*filters)
    bias_table = kernel.get_global(*bias) if bias is not None else None
    _, in_height, in_width, in_channels = input_type.get_shape()
    batches, height, width, channels = output_type.get_shape()
    _, filter_height, filter_width, _ = filters[1].get_shape()
    element = output_type.get_element_type()
    quantized = isinstance(arithmetic, QuantizedConv)
    requantize = (
        RequantizeEmitter(module, kernel, name, arithmetic.requantization)
        if isinstance(arithmetic, QuantizedConv)
        else None
    )
    zero = (
        kernel.constant(0, arithmetic.accumulator)
        if isinstance(arithmetic, QuantizedConv)
        else kernel.constant(0.0, f32)
    )

    def output_element(ivs: Sequence[Value]) -> None:
        b, oy, ox, oc = ivs
        first_y, end_y, origin_y = _taps(
            kernel, oy, padding[0], stride[0], filter_height, in_height
        )
        first_x, end_x, origin_x = _taps(kernel, ox, padding[1], stride[1], filter_width, in_width)

        def row(in_y: Value, carried: Sequence[Value]) -> Sequence[Value]:
            tap_y = kernel.sub(origin_y, kernel.mul(kernel.cast(in_y, i32), stride[0]))
            ky = kernel.cast(tap_y, INDEX)

            def column(in_x: Value, carried: Sequence[Value]) -> Sequence[Value]:
                tap_x = kernel.sub(origin_x, kernel.mul(kernel.cast(in_x, i32), stride[1]))
                kx = kernel.cast(tap_x, INDEX)

                def channel(ic: Value, carried: Sequence[Value]) -> Sequence[Value]:
                    x = kernel.load(source, [b, in_y, in_x, ic])
                    w = kernel.load(weights, [oc, ky, kx, ic])
                    if isinstance(arithmetic, QuantizedConv):
                        x = kernel.add(kernel.cast(x, i32), arithmetic.input_offset)
                        w = kernel.cast(w, i32)
                    return [accumulate_product(kernel, carried[0], kernel.mul(x, w), arithmetic)]

                return kernel.loop(0, in_channels, channel, carried)

            return kernel.loop(
                kernel.cast(first_x, INDEX), kernel.cast(end_x, INDEX), column, carried
            )

        (total,) = kernel.loop(kernel.cast(first_y, INDEX), kernel.cast(end_y, INDEX), row, [zero])
        assert isinstance(element, IntegerType) or not quantized
        value = accumulated_output(kernel, total, oc, bias_table, requantize, arithmetic, element)
        kernel.store(value, target, ivs)

    kernel.loops([batches, height, width, channels], output_element)
    finish(kernel)
    module.add(op)
