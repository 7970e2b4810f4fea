"""FULLY_CONNECTED (ONNX Gemm/MatMul with constant weights): `output[b, o] = sum_d input[b, d] *
filters[o, d] + bias[o]`, accumulated in a register in `d` order as TFLite's reference
`FullyConnected` kernels do, then requantised (int8) or clamped (float)."""

from __future__ import annotations

from xdsl.dialects.builtin import MemRefType, f32, i32

from usmp_dialect.kernels.builder import Value, finish, function
from usmp_dialect.kernels.conv import (
    FloatActivation,
    QuantizedConv,
    accumulate_product,
    accumulated_output,
)
from usmp_dialect.kernels.module import ModelModule, RequantizeEmitter


def fully_connected(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    filters: tuple[str, MemRefType],
    bias: tuple[str, MemRefType] | None,
    arithmetic: QuantizedConv | FloatActivation,
) -> None:
    """Adds `@name(%input: [batches, depth], %output: [batches, units])`."""
    batches, depth = input_type.get_shape()
    _, units = output_type.get_shape()
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    weights = kernel.get_global(*filters)
    requantize = (
        RequantizeEmitter(module, kernel, name, arithmetic.requantization)
        if isinstance(arithmetic, QuantizedConv)
        else None
    )
    element = output_type.element_type
    folded = (
        isinstance(arithmetic, QuantizedConv)
        and arithmetic.folded_bias is not None
        and arithmetic.filter_offset == 0
    )
    if folded:  # the input offset is in the bias: `acc += x * w`
        assert isinstance(arithmetic, QuantizedConv) and arithmetic.folded_bias is not None
        bias_value: Value | None = kernel.get_global(*arithmetic.folded_bias)
    else:
        bias_value = kernel.get_global(*bias) if bias is not None else None

    def body(ivs: list[Value]) -> None:
        batch, unit = ivs

        def over_depth(d: Value, acc: tuple[Value, ...]) -> list[Value]:
            x = kernel.load(source, [batch, d])
            w = kernel.load(weights, [unit, d])
            if isinstance(arithmetic, QuantizedConv):
                x, w = kernel.cast(x, i32), kernel.cast(w, i32)
                if not folded:
                    x = kernel.add(x, arithmetic.input_offset)
                    w = kernel.add(w, arithmetic.filter_offset)
                return [accumulate_product(kernel, acc[0], kernel.mul(w, x), arithmetic)]
            return [kernel.add(acc[0], kernel.mul(x, w))]

        accumulator = arithmetic.accumulator if isinstance(arithmetic, QuantizedConv) else f32
        zero = kernel.constant(0, accumulator)
        (total,) = kernel.loop(0, depth, over_depth, [zero])
        result = accumulated_output(
            kernel, total, unit, bias_value, requantize, arithmetic, element
        )
        kernel.store(result, target, [batch, unit])

    kernel.loops([batches, units], body)
    finish(kernel)
    module.add(op)
