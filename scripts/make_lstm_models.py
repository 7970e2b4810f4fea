"""Writes the Keras LSTM models of `test/frontends/tflite/Inputs/` with the TensorFlow Lite
converter, each as float32 and full-integer int8 (int8 activations and weights, int16 cell
state), over 8 steps of 6 features, batch 1, with seeded random weights:
`lstm_keras_{float,int8}.tflite`, one `LSTM(12, return_sequences=True)`, and
`lstm_keras_stacked_{float,int8}.tflite`, `LSTM(12, return_sequences=True)` -> `LSTM(8)` ->
`Dense(4)` (the converter adds a STRIDED_SLICE for the last step). The converter fuses each
LSTM into one UNIDIRECTIONAL_SEQUENCE_LSTM whose hidden and cell state are variable tensors.

TensorFlow is not a dependency of the project (the tests read the committed files); to
regenerate them, in a separate environment:

    python -m venv /path/to/tf && /path/to/tf/bin/pip install tensorflow-cpu tf_keras
    /path/to/tf/bin/python scripts/make_lstm_models.py test/frontends/tflite/Inputs

`tf_keras` (Keras 2) because Keras 3's LSTM converts to a WHILE loop, not the fused operator.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import numpy as np
import tensorflow as tf

STEPS, FEATURES, UNITS = 8, 6, 12


def keras_model(stacked: bool) -> tf.keras.Model:
    inputs = tf.keras.Input(shape=(STEPS, FEATURES), batch_size=1)
    outputs = tf.keras.layers.LSTM(UNITS, return_sequences=True)(inputs)
    if stacked:
        outputs = tf.keras.layers.LSTM(8)(outputs)
        outputs = tf.keras.layers.Dense(4)(outputs)
    model = tf.keras.Model(inputs, outputs)
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(0, 0.4, w.shape).astype(np.float32) for w in model.get_weights()])
    return model


def write(model: tf.keras.Model, directory: Path, name: str) -> None:
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    (directory / f"{name}_float.tflite").write_bytes(converter.convert())

    rng = np.random.default_rng(1)

    def representative():
        for _ in range(64):
            yield [rng.normal(0, 1, (1, STEPS, FEATURES)).astype(np.float32)]

    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    (directory / f"{name}_int8.tflite").write_bytes(converter.convert())


def main(directory: Path) -> None:
    write(keras_model(stacked=False), directory, "lstm_keras")
    write(keras_model(stacked=True), directory, "lstm_keras_stacked")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
