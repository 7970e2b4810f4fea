"""Writes a small int8 TFLite model to argv[1] for the header lit test: ADD (the input to
itself, its output named as TensorFlow names fused tensors, several ops joined by ';') then
MAX_POOL_2D 2x2, with TensorFlow's `serving_default_...:0` / `StatefulPartitionedCall:0`
input and output names."""

import sys

import numpy as np

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

FUSED = ";".join(
    [
        "model/activation/Relu",
        "model/batch_normalization/FusedBatchNormV3",
        "model/conv2d/BiasAdd/ReadVariableOp/resource",
        "model/conv2d/BiasAdd",
        "model/conv2d/Conv2D1",
    ]
)
tensors = [
    TensorSpec(
        "serving_default_input_1:0", np.int8, (1, 4, 4, 2), scales=[0.0173], zero_points=[-5]
    ),
    TensorSpec(FUSED, np.int8, (1, 4, 4, 2), scales=[0.0311], zero_points=[10]),
    TensorSpec(
        "StatefulPartitionedCall:0", np.int8, (1, 2, 2, 2), scales=[0.0311], zero_points=[10]
    ),
]
operators = [
    OperatorSpec("ADD", [0, 0], [1], "AddOptions", {"FusedActivationFunction": 1}),
    OperatorSpec(
        "MAX_POOL_2D",
        [1],
        [2],
        "Pool2DOptions",
        {"Padding": 1, "StrideW": 2, "StrideH": 2, "FilterWidth": 2, "FilterHeight": 2},
    ),
]
with open(sys.argv[1], "wb") as file:
    file.write(write_model(tensors, operators, [0], [2]))
