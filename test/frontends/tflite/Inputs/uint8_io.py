"""Writes a small camera-style TFLite model to argv[1] for the uint8-io lit test: a uint8
image requantised to int8 (QUANTIZE), an int8 -> uint8 QUANTIZE into a uint8 output, as the
converter writes `inference_input_type=tf.uint8` / `inference_output_type=tf.uint8`."""

import sys

import numpy as np

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

tensors = [
    TensorSpec("image", np.uint8, (1, 4, 4, 3), scales=[1 / 255], zero_points=[0]),  # 0
    TensorSpec("image_q", np.int8, (1, 4, 4, 3), scales=[1 / 255], zero_points=[-128]),  # 1
    TensorSpec("score", np.uint8, (1, 4, 4, 3), scales=[0.02], zero_points=[133]),  # 2
]
operators = [OperatorSpec("QUANTIZE", [0], [1]), OperatorSpec("QUANTIZE", [1], [2])]
with open(sys.argv[1], "wb") as file:
    file.write(write_model(tensors, operators, [0], [2]))
