"""UNIDIRECTIONAL_SEQUENCE_LSTM as TensorFlow Lite Micro computes it (`lstm_eval.h`
`LstmStep`, the standard LSTM: no CIFG, no peephole, no projection, no layer norm), float32,
int8 (int8 weights and activations, int32 biases, int16 cell state and gates) and 16x8.

One step, per batch row and time step, for every unit `s` of the state:

    f = sigmoid(FC(x, W_f) + b_f + FC(h, R_f))      (forget gate)
    i = sigmoid(FC(x, W_i) + b_i + FC(h, R_i))      (input gate)
    g = act(FC(x, W_g) + b_g + FC(h, R_g))          (cell gate, act = tanh or sigmoid)
    c = clip(f * c + i * g)
    o = sigmoid(FC(x, W_o) + b_o + FC(h, R_o))      (output gate, still the old h)
    h' = tanh(c) * o

TFLM computes each stage over all units into four scratch vectors; every stage is elementwise
except the fully connected products, which read only the input and the old hidden state, so
the kernel computes the stages of one unit together and writes `h'` into the output's row of
this step: the output row is the new hidden state, copied into the state once every unit of
the row is done. No scratch memory; the arithmetic of each element is TFLM's, in its order.

int8 (`EvalLstm<int8_t, int8_t, int16_t, int32_t>`): each fully connected product is TFLite's
integer FullyConnected into int16 (the gate input in Q3.12, multiplier `input_scale *
weight_scale` taken in float, then divided by 2**-12 in double), the two are added with int16
saturation, and the gates are `reference_integer_ops::Logistic` / `Tanh` on int16
(`int16_activation`, shared with the int16 LOGISTIC and TANH operators: a 256-entry table of
sigmoid(i/24) in Q0.16 with linear interpolation; outputs in Q0.15). The products of two int16
values are `MulElementwise` with TFLite's double-rounding requantisation into the
int16 cell state (a power-of-two scale) or the int8 hidden state.

16x8 (`EvalLstm<int16_t, int8_t, int16_t, int64_t>`, `IntegerLstm.wide`): the same with int16
input and hidden state (zero point 0, so no offsets to fold), int64 biases, each fully
connected product summed in int64 (the int32 products widened) and requantised with TFLite's
64-bit `MultiplyByQuantizedMultiplier` (the multiplier reduced to 16 bits); the hidden state
is clamped to int16.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import MemRefType, f32, i16, i32, i64

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function, i8
from usmp_dialect.kernels.elementwise import LOGISTIC_LOWER, LOGISTIC_UPPER
from usmp_dialect.kernels.fixed_point import (
    emit_multiply_by_quantized_multiplier,
    emit_multiply_by_quantized_multiplier_64,
    reduced_multiplier,
)
from usmp_dialect.kernels.int16_activation import (
    Int16Activation,
    emit_int16_activation,
    sigmoid_table,
)
from usmp_dialect.kernels.module import ModelModule

GATES = ("forget", "input", "cell", "output")  # the order of the packed weights


@dataclass(frozen=True)
class Multiplier:
    """TFLite's quantised multiplier: `MultiplyByQuantizedMultiplier(x, multiplier, shift)`."""

    multiplier: int
    shift: int


def tanh_of_cell_state(cell_scale_power: int) -> Int16Activation:
    """TFLM's `lstm_internal::Tanh` on the cell state of scale 2**cell_scale_power: the
    input's left shift `15 + power - 3`, a negative one becoming a right shift with
    multiplier 3."""
    shift = 15 + cell_scale_power - 3
    if shift < 0:
        return Int16Activation("tanh", 3, -shift)
    return Int16Activation("tanh", 0, shift)


@dataclass(frozen=True)
class IntegerLstm:
    """The int8 LSTM's parameters, all derived at import (TFLM's `Prepare`), gates in `GATES`
    order: `input_scales` / `recurrent_scales` requantise the two products of each gate into
    Q3.12 (the zero points of the input and the hidden state are in `LstmWeights`' biases)."""

    input_scales: tuple[Multiplier, ...]
    recurrent_scales: tuple[Multiplier, ...]
    cell_activation: Int16Activation  # the cell gate's (tanh or sigmoid, Q3.12 input)
    forget_cell: Multiplier  # f (Q0.15) * c -> c
    input_cell: Multiplier  # i (Q0.15) * g (Q0.15) -> c
    hidden: Multiplier  # tanh(c) (Q0.15) * o (Q0.15) -> h
    hidden_zero_point: int
    cell_tanh: Int16Activation  # tanh of the cell state
    cell_clip: int  # quantised; 0: no clipping
    wide: bool = False  # 16x8: int16 activations, int64 biases and accumulators


@dataclass(frozen=True)
class FloatLstm:
    cell_activation: str  # "tanh" or "sigmoid"
    cell_clip: float  # 0: no clipping


@dataclass(frozen=True)
class LstmShape:
    """Sizes and layout: the input is [time, batch, features] when `time_major`, else
    [batch, time, features]; the output likewise with `units` features."""

    time_major: bool
    batches: int
    steps: int
    features: int
    units: int

    def sequence(self, shape_features: int) -> tuple[int, int, int]:
        if self.time_major:
            return (self.steps, self.batches, shape_features)
        return (self.batches, self.steps, shape_features)


@dataclass(frozen=True)
class LstmWeights:
    """The constant symbols, gates in `GATES` order: input weights [4, units, features],
    recurrent weights [4, units, units], biases [4, units]. int8: two int32 biases with the
    zero points of the input and of the hidden state folded in (`fold_zero_point`)."""

    input_weights: tuple[str, MemRefType]
    recurrent_weights: tuple[str, MemRefType]
    input_bias: tuple[str, MemRefType]
    recurrent_bias: tuple[str, MemRefType] | None  # int8 only (the folded hidden zero point)


def fold_zero_point(weights: np.ndarray, bias: np.ndarray | None, zero_point: int) -> np.ndarray:
    """`bias - zero_point * sum(weights of each unit)` over the last axis, wrapped to int32:
    TFLite's `(x + input_offset) * w` summed, with the offset moved out of the loop."""
    sums = weights.astype(np.int64).sum(axis=-1)
    total = -zero_point * sums + (0 if bias is None else bias.astype(np.int64))
    return ((total + 2**31) % 2**32 - 2**31).astype(np.int32)


def lstm(
    module: ModelModule,
    name: str,
    shape: LstmShape,
    weights: LstmWeights,
    arithmetic: IntegerLstm | FloatLstm,
) -> None:
    """Adds `@name(%input, %hidden: [batches, units], %cell: [batches, units], %output)`: the
    whole sequence, reading and updating the state in place."""
    quantized = isinstance(arithmetic, IntegerLstm)
    wide = isinstance(arithmetic, IntegerLstm) and arithmetic.wide
    activation = (i16 if wide else i8) if quantized else f32
    cell_element = i16 if quantized else f32
    input_type = MemRefType(activation, list(shape.sequence(shape.features)))
    output_type = MemRefType(activation, list(shape.sequence(shape.units)))
    state_type = MemRefType(activation, [shape.batches, shape.units])
    cell_type = MemRefType(cell_element, [shape.batches, shape.units])
    op, kernel, (source, hidden, cell, target) = function(
        name,
        [
            ("input", input_type),
            ("hidden", state_type),
            ("cell", cell_type),
            ("output", output_type),
        ],
    )
    w_in = kernel.get_global(*weights.input_weights)
    w_rec = kernel.get_global(*weights.recurrent_weights)
    b_in = kernel.get_global(*weights.input_bias)
    b_rec = kernel.get_global(*weights.recurrent_bias) if weights.recurrent_bias else None
    table = sigmoid_table(module, kernel) if quantized else None

    def at(batch: Value, step: Value, feature: Value) -> list[Value]:
        return [step, batch, feature] if shape.time_major else [batch, step, feature]

    def dot(
        gate: int, unit: Value, matrix: Value, vector: Callable[[Value], Value], depth: int
    ) -> Value:
        """sum_d vector(d) * matrix[gate, unit, d] from 0, in d order (i32 or f32)."""
        zero = kernel.constant(0, i64 if wide else i32) if quantized else kernel.constant(0.0, f32)
        gate_index = kernel.index(gate)

        def body(d: Value, carried: tuple[Value, ...] | list[Value]) -> list[Value]:
            x, w = vector(d), kernel.load(matrix, [gate_index, unit, d])
            if quantized:
                x, w = kernel.cast(x, i32), kernel.cast(w, i32)
            product = kernel.mul(x, w)  # int32, widened before a 64-bit sum (TFLM's 16x8 FC)
            return [kernel.add(carried[0], kernel.cast(product, i64) if wide else product)]

        return kernel.loop(0, depth, body, [zero])[0]

    def step(batch: Value, time: Value) -> None:
        def x(d: Value) -> Value:
            return kernel.load(source, at(batch, time, d))

        def h(d: Value) -> Value:
            return kernel.load(hidden, [batch, d])

        def unit_body(unit: Value, _: object) -> list[Value]:
            gates: dict[str, Value] = {}
            for index, gate in enumerate(GATES):
                from_input = dot(index, unit, w_in, x, shape.features)
                from_state = dot(index, unit, w_rec, h, shape.units)
                gate_index = kernel.index(index)
                if isinstance(arithmetic, IntegerLstm):
                    assert table is not None
                    a = _requantize16(
                        kernel,
                        kernel.add(from_input, kernel.load(b_in, [gate_index, unit])),
                        arithmetic.input_scales[index],
                        wide,
                    )
                    if b_rec is not None:
                        from_state = kernel.add(from_state, kernel.load(b_rec, [gate_index, unit]))
                    r = _requantize16(kernel, from_state, arithmetic.recurrent_scales[index], wide)
                    total = kernel.clamp(kernel.add(a, r), -32768, 32767)
                    function_ = (
                        arithmetic.cell_activation if gate == "cell" else Int16Activation("sigmoid")
                    )
                    gates[gate] = emit_int16_activation(kernel, table, total, function_)
                else:
                    biased = kernel.add(from_input, kernel.load(b_in, [gate_index, unit]))
                    total = kernel.add(biased, from_state)
                    kind = arithmetic.cell_activation if gate == "cell" else "sigmoid"
                    gates[gate] = _float_activation(kernel, total, kind)
            old = kernel.load(cell, [batch, unit])
            if isinstance(arithmetic, IntegerLstm):
                assert table is not None
                c = kernel.cast(old, i32)
                kept = _requantize16(kernel, kernel.mul(gates["forget"], c), arithmetic.forget_cell)
                added = _requantize16(
                    kernel, kernel.mul(gates["input"], gates["cell"]), arithmetic.input_cell
                )
                updated = kernel.clamp(kernel.add(kept, added), -32768, 32767)
                if arithmetic.cell_clip > 0:
                    updated = kernel.clamp(updated, -arithmetic.cell_clip, arithmetic.cell_clip)
                kernel.store(kernel.cast(updated, i16), cell, [batch, unit])
                squashed = emit_int16_activation(kernel, table, updated, arithmetic.cell_tanh)
                scaled = emit_multiply_by_quantized_multiplier(
                    kernel,
                    kernel.mul(squashed, gates["output"]),
                    arithmetic.hidden.multiplier,
                    arithmetic.hidden.shift,
                )
                shifted = kernel.add(scaled, arithmetic.hidden_zero_point)
                bits = 16 if wide else 8
                limits = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
                new = kernel.cast(kernel.clamp(shifted, *limits), activation)
            else:
                kept = kernel.mul(gates["forget"], old)
                added = kernel.mul(gates["input"], gates["cell"])
                updated = kernel.add(kept, added)
                if arithmetic.cell_clip > 0:
                    clip = arithmetic.cell_clip
                    updated = kernel.max(kernel.min(updated, clip), -clip)
                kernel.store(updated, cell, [batch, unit])
                new = kernel.mul(kernel.tanh(updated), gates["output"])
            kernel.store(new, target, at(batch, time, unit))
            return []

        kernel.loop(0, shape.units, unit_body)

        def copy(unit: Value, _: object) -> list[Value]:
            kernel.store(kernel.load(target, at(batch, time, unit)), hidden, [batch, unit])
            return []

        kernel.loop(0, shape.units, copy)

    def over_time(batch: Value, _: object) -> list[Value]:
        kernel.loop(0, shape.steps, lambda time, __: step(batch, time) or [])
        return []

    kernel.loop(0, shape.batches, over_time)
    finish(kernel)
    module.add(op)


def _requantize16(
    kernel: KernelBuilder, value: Value, scale: Multiplier, wide: bool = False
) -> Value:
    """MultiplyByQuantizedMultiplier into int16 (zero point 0), kept as i32; `wide`: of an
    int64 accumulator (TFLite's 64-bit form, the multiplier reduced to 16 bits)."""
    if wide:
        reduced, total_shift = reduced_multiplier(scale.multiplier), 15 - scale.shift
        scaled = emit_multiply_by_quantized_multiplier_64(kernel, value, reduced, total_shift)
        return kernel.clamp(scaled, -32768, 32767)
    scaled = emit_multiply_by_quantized_multiplier(kernel, value, scale.multiplier, scale.shift)
    return kernel.clamp(scaled, -32768, 32767)


def _float_activation(kernel: KernelBuilder, x: Value, kind: str) -> Value:
    """TFLite's float `Tanh` (std::tanh) and `Logistic` (1 above 16.62, exp(x) below -9)."""
    if kind == "tanh":
        return kernel.tanh(x)
    below = kernel.cmp("lt", x, LOGISTIC_LOWER)
    exp = kernel.exp(kernel.select(below, x, kernel.sub(0.0, x)))
    inside = kernel.div(1.0, kernel.add(exp, 1.0))
    return kernel.select(
        kernel.cmp("gt", x, LOGISTIC_UPPER), 1.0, kernel.select(below, exp, inside)
    )


__all__ = [
    "GATES",
    "FloatLstm",
    "IntegerLstm",
    "LstmShape",
    "LstmWeights",
    "Multiplier",
    "fold_zero_point",
    "lstm",
    "tanh_of_cell_state",
]
