"""SVDF (singular value decomposition filter), as TensorFlow Lite Micro's reference kernels
compute it (`EvalIntegerSvdfReference`, `EvalFloatSvdfReference` in `svdf_common.cc`).

One run of `@name(%input: [batches, input_size], %state: [batches, filters * memory],
%output: [batches, units])`, `filters = units * rank`:

1. the state (read and written: it persists from one run to the next) moves one element left,
   as one flat array;
2. the feature matmul writes each filter's newest activation into the last slot of its memory
   (`state[b, f * memory + memory - 1]`); int8 rescales it to the state's type (int16 or int8,
   with the state's zero point) and saturates;
3. each unit sums, over its `rank` filters, the dot product of the filter's time weights with
   its memory, starting from the bias; int8 rescales that to the output and saturates (TFLM's
   integer kernel applies no fused activation), float applies the fused activation.

TFLM's scratch buffers (one value per filter, one per unit) are not needed: the filter sums
are added to the unit's accumulator as they complete, in TFLM's order (int32 sums are exact,
and float sums keep TFLM's order of additions, so both are bit for bit TFLM's).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import IntegerType, MemRefType, f32, i32

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function
from usmp_dialect.kernels.fixed_point import emit_multiply_by_quantized_multiplier
from usmp_dialect.kernels.module import ModelModule

FLOAT_ACTIVATIONS = ("NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH")
"""The fused activations TFLM's `ActivationValFloat` applies to a float SVDF's output that a
TFLite file can name (its schema has no SIGMOID; SIGN_BIT is left out)."""


@dataclass(frozen=True)
class QuantizedSvdf:
    """The integer parameters of TFLM's `PrepareSvdf` (`OpDataSvdf`)."""

    input_zero_point: int
    state_zero_point: int
    output_zero_point: int
    feature_multiplier: int  # effective_scale_1 = input * weights_feature / state scales
    feature_shift: int
    time_multiplier: int  # effective_scale_2 = state * weights_time / output scales
    time_shift: int


def svdf(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    state_type: MemRefType,
    output_type: MemRefType,
    weights_feature: tuple[str, MemRefType],
    weights_time: tuple[str, MemRefType],
    bias: tuple[str, MemRefType] | None,
    rank: int,
    arithmetic: QuantizedSvdf | str,
) -> None:
    """Adds `@name(%input, %state, %output)`; `arithmetic` is the integer parameters, or the
    float kernel's fused activation (one of FLOAT_ACTIVATIONS)."""
    batches, input_size = input_type.get_shape()
    filters, memory = weights_time[1].get_shape()
    units = filters // rank
    op, kernel, (source, state, target) = function(
        name, [("input", input_type), ("state", state_type), ("output", output_type)]
    )
    quantized = isinstance(arithmetic, QuantizedSvdf)
    feature = kernel.get_global(*weights_feature)
    time = kernel.get_global(*weights_time)
    bias_value = kernel.get_global(*bias) if bias is not None else None
    accumulator_type = i32 if quantized else f32
    zero = kernel.constant(0, accumulator_type)

    # 1. Shift the state left by one element (per batch row: the element a row would take
    # from the next row is the newest slot of its last filter, which step 2 overwrites).
    width = filters * memory
    if width > 1:

        def shift(ivs: list[Value]) -> None:
            batch, column = ivs
            next_column = kernel.add(column, kernel.index(1))
            kernel.store(kernel.load(state, [batch, next_column]), state, [batch, column])

        kernel.loops([batches, width - 1], shift)

    # 2. Feature matmul into each filter's newest slot.
    state_element = state_type.element_type

    def feature_body(ivs: list[Value]) -> None:
        batch, filter_ = ivs

        def over_input(c: Value, acc: tuple[Value, ...]) -> list[Value]:
            x = kernel.load(source, [batch, c])
            w = kernel.load(feature, [filter_, c])
            if isinstance(arithmetic, QuantizedSvdf):
                x = kernel.sub(kernel.cast(x, i32), arithmetic.input_zero_point)
                return [kernel.add(acc[0], kernel.mul(kernel.cast(w, i32), x))]
            return [kernel.add(acc[0], kernel.mul(w, x))]

        (dot,) = kernel.loop(0, input_size, over_input, [zero])
        if isinstance(arithmetic, QuantizedSvdf):
            assert isinstance(state_element, IntegerType)
            bits = state_element.width.data
            scaled = emit_multiply_by_quantized_multiplier(
                kernel, dot, arithmetic.feature_multiplier, arithmetic.feature_shift
            )
            # TFLM adds the zero point before the saturating clamp.
            shifted = kernel.add(scaled, arithmetic.state_zero_point)
            clamped = kernel.clamp(shifted, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)
            dot = kernel.cast(clamped, state_element)
        newest = kernel.add(kernel.mul(filter_, kernel.index(memory)), kernel.index(memory - 1))
        kernel.store(dot, state, [batch, newest])

    kernel.loops([batches, filters], feature_body)

    # 3. Time weights, rank reduction, bias, output.
    def output_body(ivs: list[Value]) -> None:
        batch, unit = ivs
        start = kernel.load(bias_value, [unit]) if bias_value is not None else zero

        def over_rank(r: Value, acc: tuple[Value, ...]) -> list[Value]:
            filter_ = kernel.add(kernel.mul(unit, kernel.index(rank)), r)
            base = kernel.mul(filter_, kernel.index(memory))

            def over_memory(j: Value, total: tuple[Value, ...]) -> list[Value]:
                w = kernel.load(time, [filter_, j])
                s = kernel.load(state, [batch, kernel.add(base, j)])
                if isinstance(arithmetic, QuantizedSvdf):
                    s = kernel.sub(kernel.cast(s, i32), arithmetic.state_zero_point)
                    return [kernel.add(total[0], kernel.mul(kernel.cast(w, i32), s))]
                return [kernel.add(total[0], kernel.mul(w, s))]

            (filter_sum,) = kernel.loop(0, memory, over_memory, [zero])
            return [kernel.add(acc[0], filter_sum)]

        (total,) = kernel.loop(0, rank, over_rank, [start])
        if isinstance(arithmetic, QuantizedSvdf):
            scaled = emit_multiply_by_quantized_multiplier(
                kernel, total, arithmetic.time_multiplier, arithmetic.time_shift
            )
            shifted = kernel.add(scaled, arithmetic.output_zero_point)
            element = output_type.element_type
            result = kernel.cast(kernel.clamp(shifted, -128, 127), element)
        else:
            result = _float_activation(kernel, total, arithmetic)
        kernel.store(result, target, [batch, unit])

    kernel.loops([batches, units], output_body)
    finish(kernel)
    module.add(op)


def _float_activation(kernel: KernelBuilder, value: Value, activation: str) -> Value:
    """TFLM's `ActivationValFloat`."""
    if activation == "RELU":
        return kernel.max(value, 0.0)
    if activation == "RELU_N1_TO_1":
        return kernel.max(kernel.min(value, 1.0), -1.0)
    if activation == "RELU6":
        return kernel.max(kernel.min(value, 6.0), 0.0)
    if activation == "TANH":
        return kernel.tanh(value)
    assert activation == "NONE"
    return value
