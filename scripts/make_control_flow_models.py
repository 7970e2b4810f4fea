"""Writes the control-flow models the TensorFlow Lite converter exports, for
`test/frontends/tflite/test_control_flow.py` (into `test/frontends/tflite/Inputs/`):

* `tf_cond_{float,int8}.tflite`: `tf.cond(reduce_sum(x) > 0, x * 2 + 1, relu(x) - 3)` on a
  1x8 input: SUM, GREATER and an IF whose branches are subgraphs (int8: full-integer, the
  branches in float between the converter's QUANTIZE and DEQUANTIZE);
* `tf_while_{float,int8}.tflite`: `tf.while_loop` growing `x = x * 1.5 + 0.25` while
  `max(x) < 10` and the int32 counter `i < 16`, returning `x` and `i`: the number of turns
  depends on the data;
* `keras3_{lstm,gru,simplernn}_float.tflite`: a Keras 3 `LSTM(12)` / `GRU(12)` /
  `SimpleRNN(12)` over 8 steps of 6 features (batch 1, the last output), which the converter
  writes as a WHILE over the steps (Keras 2's LSTM was the fused UNIDIRECTIONAL_SEQUENCE_LSTM,
  `make_lstm_models.py`): the body GATHERs the step of its int32 counter from the sequence;
* `keras3_gru_sequence_float.tflite`: `GRU(12, return_sequences=True)` -> `Dense(4)`, and
  `keras3_lstm_stacked_float.tflite`: `LSTM(12, return_sequences=True)` -> `LSTM(8)` ->
  `Dense(4)`: the loop body writes each step's output into a TensorList, which the converter
  lowers to SLICEs of dynamic shape and a CONCATENATION (`frontends/tflite/tensor_lists.py`);
* `keras3_gru_hybrid.tflite`: a Keras 3 `GRU(48)` with dynamic-range quantisation: its
  recurrent weights int8 (the converter quantises weights of 1,024 values and more), the
  activations float, so the loop body runs hybrid FULLY_CONNECTEDs (TFLM refuses the model).

Not written, found by this script's author with TensorFlow 2.21 / Keras 3.15: a full-integer
int8 conversion of a Keras 3 LSTM, GRU or SimpleRNN crashes the converter (segmentation
fault).

TensorFlow is not a dependency of the project (the tests read the committed files); to
regenerate them, in a separate environment:

    python -m venv /path/to/tf && /path/to/tf/bin/pip install tensorflow-cpu
    /path/to/tf/bin/python scripts/make_control_flow_models.py test/frontends/tflite/Inputs
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

STEPS, FEATURES, UNITS = 8, 6, 12


@tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
def cond_model(x: tf.Tensor) -> tf.Tensor:
    return tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * 2.0 + 1.0, lambda: tf.nn.relu(x) - 3.0)


@tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
def while_model(x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    def more(i: tf.Tensor, x: tf.Tensor) -> tf.Tensor:
        return tf.logical_and(i < 16, tf.reduce_max(x) < 10.0)

    def body(i: tf.Tensor, x: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return i + 1, x * 1.5 + 0.25

    turns, y = tf.while_loop(more, body, [tf.constant(0), x])
    return y, turns


def representative(shape: tuple[int, ...]) -> Callable[[], Iterator[list[np.ndarray]]]:
    def inputs() -> Iterator[list[np.ndarray]]:
        rng = np.random.default_rng(1)
        for _ in range(64):
            yield [rng.normal(0, 1, shape).astype(np.float32)]

    return inputs


def convert(function: tf.types.experimental.GenericFunction, int8: bool) -> bytes:
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function.get_concrete_function()], function
    )
    if int8:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.representative_dataset = representative((1, 8))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter.convert()


def recurrent(
    kind: str,
    sequence: bool = False,
    stacked: bool = False,
    units: int = UNITS,
    hybrid: bool = False,
) -> bytes:
    inputs = keras.Input(shape=(STEPS, FEATURES), batch_size=1)
    layer = getattr(keras.layers, kind)
    outputs = layer(units, return_sequences=sequence or stacked)(inputs)
    if stacked:
        outputs = layer(8)(outputs)
    if sequence or stacked:
        outputs = keras.layers.Dense(4)(outputs)
    model = keras.Model(inputs, outputs)
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(0, 0.4, w.shape).astype(np.float32) for w in model.get_weights()])
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if hybrid:  # dynamic-range quantisation: int8 weights, float activations
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


def main(directory: Path) -> None:
    for int8 in (False, True):
        suffix = "int8" if int8 else "float"
        (directory / f"tf_cond_{suffix}.tflite").write_bytes(convert(cond_model, int8))
        (directory / f"tf_while_{suffix}.tflite").write_bytes(convert(while_model, int8))
    for kind in ("LSTM", "GRU", "SimpleRNN"):
        (directory / f"keras3_{kind.lower()}_float.tflite").write_bytes(recurrent(kind))
    sequence = recurrent("GRU", sequence=True)
    (directory / "keras3_gru_sequence_float.tflite").write_bytes(sequence)
    stacked = recurrent("LSTM", stacked=True)
    (directory / "keras3_lstm_stacked_float.tflite").write_bytes(stacked)
    hybrid = recurrent("GRU", units=48, hybrid=True)
    (directory / "keras3_gru_hybrid.tflite").write_bytes(hybrid)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
