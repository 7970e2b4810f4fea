"""Writes a small TFLite model with bool and int32 inputs and outputs to argv[1] for the
bool-io lit test: `keep = (x > threshold) && mask` (int8 x, bool mask, bool keep) and
`best = ARG_MAX(x, axis 1)` (int32), `hit = best == label` (int32 label, bool hit)."""

import sys

import numpy as np

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

tensors = [
    TensorSpec("x", np.int8, (1, 6), scales=[0.05], zero_points=[-3]),  # 0
    TensorSpec("threshold", np.int8, (6,), np.arange(-3, 3, dtype=np.int8), [0.04], [1]),  # 1
    TensorSpec("above", np.bool_, (1, 6)),  # 2
    TensorSpec("mask", np.bool_, (1, 6)),  # 3
    TensorSpec("keep", np.bool_, (1, 6)),  # 4
    TensorSpec("axis", np.int32, (1,), np.array([1], np.int32)),  # 5
    TensorSpec("best", np.int32, (1,)),  # 6
    TensorSpec("label", np.int32, (1,)),  # 7
    TensorSpec("hit", np.bool_, (1,)),  # 8
]
operators = [
    OperatorSpec("GREATER", [0, 1], [2]),
    OperatorSpec("LOGICAL_AND", [2, 3], [4]),
    OperatorSpec("ARG_MAX", [0, 5], [6], "ArgMaxOptions", {"OutputType": 2}),
    OperatorSpec("EQUAL", [6, 7], [8]),
]
with open(sys.argv[1], "wb") as file:
    file.write(write_model(tensors, operators, [0, 3, 7], [4, 6, 8]))
