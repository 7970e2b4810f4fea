"""UNIDIRECTIONAL_SEQUENCE_LSTM, float32, int8 (int16 cell state) and 16x8 (int16 activations
with zero point 0, int8 weights, int64 biases, int16 cell state), as TensorFlow Lite Micro's
kernel computes it: the standard LSTM, which is all TFLM runs (its `Prepare` refuses
CIFG, peephole, projection and layer-norm LSTMs and any cell activation but TANH).

The 24 inputs (TFLite's `lstm_shared.h`): 0 the input; 1-4 the input weights of the input,
forget, cell and output gates; 5-8 their recurrent weights; 9-11 peephole weights; 12-15 the
gate biases; 16-17 the projection; 18 the hidden (output) state and 19 the cell state, both
variable tensors kept in the state pool (`OperatorContext.state`); 20-23 layer-norm
coefficients. The parameters are TFLM's (`lstm_eval_common.cc`: `PrepareGateParameters
Integer`, `CreateInterGateMulParams`, `CreateLstmCellStateInfo`), derived here in Python.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import (
    INT16_ACTIVATION_TYPES,
    OperatorContext,
    operator,
)
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    INT16,
    quantization,
    symmetric_int16,
)
from usmp_dialect.frontends.tflite.reader import Operator, Tensor
from usmp_dialect.kernels.fixed_point import float32, quantize_multiplier
from usmp_dialect.kernels.lstm import (
    FloatLstm,
    IntegerLstm,
    LstmShape,
    LstmWeights,
    Multiplier,
    fold_zero_point,
    lstm,
    tanh_of_cell_state,
)

# Input positions, by gate in `kernels.lstm.GATES` order (forget, input, cell, output).
INPUT_WEIGHTS = (2, 1, 3, 4)
RECURRENT_WEIGHTS = (6, 5, 7, 8)
BIASES = (13, 12, 14, 15)
HIDDEN_STATE, CELL_STATE = 18, 19
_VARIANTS = {
    "peephole": (9, 10, 11),
    "projection": (16, 17),
    "layer normalisation": (20, 21, 22, 23),
}
GATE_INPUT_SCALE = 2.0**-12  # the fully connected products are Q3.12 ...
GATE_OUTPUT_SCALE = 2.0**-15  # ... and the gates Q0.15
_TANH = tflite.ActivationFunctionType.TANH


def _present(op: Operator, position: int) -> bool:
    return position < len(op.inputs) and op.inputs[position] >= 0


def supported_lstm(op: Operator) -> str | None:
    """The pre-scan's check: what TFLM's kernel refuses too."""
    if len(op.inputs) != 24:
        return f"{len(op.inputs)} inputs (24 expected)"
    if not _present(op, 1) or not _present(op, 5):
        return "coupled input and forget gates (CIFG; TFLM runs the standard LSTM only)"
    for variant, positions in _VARIANTS.items():
        if any(_present(op, position) for position in positions):
            return f"{variant} (TFLM runs the standard LSTM only)"
    options = op.option(tflite.UnidirectionalSequenceLSTMOptions)
    if options is None:
        return "no options"
    if options.FusedActivationFunction() != _TANH:
        return f"cell activation {options.FusedActivationFunction()} (TANH only, as TFLM)"
    if options.DiagonalRecurrentTensors():
        return "diagonal recurrent weights"
    return None


@operator("UNIDIRECTIONAL_SEQUENCE_LSTM", types=INT16_ACTIVATION_TYPES, supports=supported_lstm)
def unidirectional_sequence_lstm(context: OperatorContext) -> None:
    problem = supported_lstm(context.op)
    if problem is not None:
        raise context.fail(f"unsupported: {problem}")
    options = context.op.option(tflite.UnidirectionalSequenceLSTMOptions)
    time_major = bool(options.TimeMajor())
    cell_clip = float32(options.CellClip())
    if cell_clip < 0:
        raise context.fail(f"negative cell clip {cell_clip}")
    source, output = context.tensor(0), context.tensor(0, output=True)
    hidden, cell = context.tensor(HIDDEN_STATE), context.tensor(CELL_STATE)
    if len(source.shape) != 3:
        raise context.fail(f"the input has shape {list(source.shape)}; 3-D expected")
    steps, batches = source.shape[:2] if time_major else source.shape[1::-1]
    features = source.shape[2]
    units = _units(context)
    shape = LstmShape(time_major, batches, steps, features, units)
    if tuple(output.shape) != shape.sequence(units):
        raise context.fail(
            f"output shape {list(output.shape)}; {list(shape.sequence(units))} expected"
        )
    for state in (hidden, cell):
        if int(np.prod(state.shape)) != batches * units:
            raise context.fail(f"{state.describe()} holds {batches}x{units} values")
    dtype = source.dtype
    if dtype not in (INT8, INT16, FLOAT32) or hidden.dtype != dtype or output.dtype != dtype:
        raise context.fail(
            f"activations {source.dtype.name}, hidden state {hidden.dtype.name}, output "
            f"{output.dtype.name}: int8, int16 or float32 throughout expected"
        )
    symmetric_int16(context, source, hidden, output)
    input_weights = _weights(context, INPUT_WEIGHTS, (units, features), dtype)
    recurrent_weights = _weights(context, RECURRENT_WEIGHTS, (units, units), dtype)
    biases = np.stack(
        [_constant(context, position, (units,), _bias_type(dtype)) for position in BIASES]
    )
    module = context.module
    if dtype == INT16:  # 16x8: zero points 0, nothing to fold; int64 biases as they are
        if cell.dtype != INT16:
            raise context.fail(f"the 16x8 LSTM's cell state is {cell.dtype.name}; int16 expected")
        arithmetic = replace(_integer(context, source, hidden, cell, cell_clip), wide=True)
        symbols = LstmWeights(
            module.constant(f"{context.name}_input_weights", input_weights),
            module.constant(f"{context.name}_recurrent_weights", recurrent_weights),
            module.constant(f"{context.name}_input_bias", biases),
            None,
        )
        lstm(module, context.name, shape, symbols, arithmetic)
    elif dtype == INT8:
        if cell.dtype != INT16:
            raise context.fail(f"the int8 LSTM's cell state is {cell.dtype.name}; int16 expected")
        source_q, hidden_q = quantization(context, source), quantization(context, hidden)
        arithmetic = _integer(context, source, hidden, cell, cell_clip)
        symbols = LstmWeights(
            module.constant(f"{context.name}_input_weights", input_weights),
            module.constant(f"{context.name}_recurrent_weights", recurrent_weights),
            module.constant(
                f"{context.name}_input_bias",
                fold_zero_point(input_weights, biases, source_q.zero_point),
            ),
            module.constant(
                f"{context.name}_recurrent_bias",
                fold_zero_point(recurrent_weights, None, hidden_q.zero_point),
            ),
        )
        lstm(module, context.name, shape, symbols, arithmetic)
    else:
        if cell.dtype != FLOAT32:
            raise context.fail(f"the float LSTM's cell state is {cell.dtype.name}")
        symbols = LstmWeights(
            module.constant(f"{context.name}_input_weights", input_weights),
            module.constant(f"{context.name}_recurrent_weights", recurrent_weights),
            module.constant(f"{context.name}_bias", biases),
            None,
        )
        lstm(module, context.name, shape, symbols, FloatLstm("tanh", cell_clip))
    state_shape = (batches, units)
    context.call(
        [
            context.view(context.value(0), shape.sequence(features)),
            context.view(context.state(HIDDEN_STATE), state_shape),
            context.view(context.state(CELL_STATE), state_shape),
        ],
        [context.view(context.result(), shape.sequence(units))],
    )


def _units(context: OperatorContext) -> int:
    """The state size: the input-to-forget weights' rows (TFLM checks every weight)."""
    weights = context.tensor(INPUT_WEIGHTS[0])
    if len(weights.shape) != 2:
        raise context.fail(f"{weights.describe()} has shape {list(weights.shape)}; 2-D expected")
    return weights.shape[0]


def _bias_type(dtype: np.dtype) -> np.dtype:
    return {INT8: np.dtype(np.int32), INT16: np.dtype(np.int64)}.get(dtype, FLOAT32)


def _constant(
    context: OperatorContext, position: int, shape: tuple[int, ...], dtype: np.dtype
) -> np.ndarray:
    tensor = context.tensor(position)
    value = context.constant(position)
    if value.dtype != dtype:
        raise context.fail(f"{tensor.describe()} is {value.dtype.name}; {dtype.name} expected")
    if tuple(value.shape) != shape:
        raise context.fail(f"{tensor.describe()} has shape {list(value.shape)}; {list(shape)}")
    return value


def _weights(
    context: OperatorContext, positions: tuple[int, ...], shape: tuple[int, int], dtype: np.dtype
) -> np.ndarray:
    """The four gates' weights, stacked [4, *shape]; int8 ones (of int8 and int16 LSTMs) per
    tensor with zero point 0 (TFLM's LSTM reads one multiplier per product and no weight
    offset)."""
    dtype = INT8 if dtype == INT16 else dtype
    arrays = []
    for position in positions:
        if dtype == FLOAT32 and context.tensor(position).dtype == INT8:
            raise context.fail(
                "int8 weights with float activations (a hybrid LSTM) are not supported: "
                "TFLM's LSTM reads such weights as floats"
            )
        arrays.append(_constant(context, position, shape, dtype))
        if dtype == INT8:
            quant = quantization(context, context.tensor(position))
            if len(quant.scales) != 1 or quant.zero_point != 0:
                raise context.fail(
                    f"{context.tensor(position).describe()} must be quantised per tensor with "
                    "zero point 0 (TFLM's LSTM)"
                )
    return np.stack(arrays)


def _multiplier(real: float) -> Multiplier:
    return Multiplier(*quantize_multiplier(real))


def _integer(
    context: OperatorContext, source: Tensor, hidden: Tensor, cell: Tensor, cell_clip: float
) -> IntegerLstm:
    """TFLM's `PrepareGateParametersInteger` and `CreateLstmCellStateInfo`."""
    input_scale = quantization(context, source).scale
    hidden_q = quantization(context, hidden)
    cell_scale = quantization(context, cell).scale
    power = round(math.log2(cell_scale))
    if cell_scale != 2.0**power:
        raise context.fail(f"the cell state's scale {cell_scale:g} is not a power of two")

    def gate_scale(activation_scale: float, position: int) -> Multiplier:
        # GetQuantizedConvolutionMultipler: the scales' product in float, then double.
        weight_scale = quantization(context, context.tensor(position)).scale
        return _multiplier(float32(activation_scale * weight_scale) / GATE_INPUT_SCALE)

    quantized_clip = 0
    if cell_clip > 0:
        quantized_clip = int(min(max(cell_clip / cell_scale, -32768.0), 32767.0))
    return IntegerLstm(
        input_scales=tuple(gate_scale(input_scale, p) for p in INPUT_WEIGHTS),
        recurrent_scales=tuple(gate_scale(hidden_q.scale, p) for p in RECURRENT_WEIGHTS),
        cell_activation=tanh_of_cell_state(-12),  # TFLM's Tanh of a Q3.12 gate input
        forget_cell=_multiplier(GATE_OUTPUT_SCALE * cell_scale / cell_scale),
        input_cell=_multiplier(GATE_OUTPUT_SCALE * GATE_OUTPUT_SCALE / cell_scale),
        hidden=_multiplier(GATE_OUTPUT_SCALE * GATE_OUTPUT_SCALE / hidden_q.scale),
        hidden_zero_point=hidden_q.zero_point,
        cell_tanh=tanh_of_cell_state(power),
        cell_clip=quantized_clip,
    )
