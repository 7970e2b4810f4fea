"""Writes an NCHW chain for the lit test of fused row streaming in the ONNX frontend to argv[1]:
x (1x1x12x10) -> 3x3 Conv + Relu (8 channels) -> 3x3 depthwise Conv stride 2 -> 1x1 Conv +
Clip -> MaxPool 2x2 -> GlobalAveragePool."""

import sys

import numpy as np
from onnx import helper

from usmp_dialect.testing.onnx_models import graph_model, weights

node = helper.make_node
init = {
    "w1": weights(1, 8, 1, 3, 3),
    "wd": weights(2, 8, 1, 3, 3),
    "w2": weights(3, 16, 8, 1, 1),
    "low": np.array(0.0, np.float32),
    "high": np.array(6.0, np.float32),
}
nodes = [
    node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
    node("Relu", ["c1"], ["a"]),
    node("Conv", ["a", "wd"], ["d"], group=8, pads=[1, 1, 1, 1], strides=[2, 2]),
    node("Conv", ["d", "w2"], ["c2"]),
    node("Clip", ["c2", "low", "high"], ["p"]),
    node("MaxPool", ["p"], ["m"], kernel_shape=[2, 2]),
    node("GlobalAveragePool", ["m"], ["y"]),
]
model = graph_model(nodes, [("x", (1, 1, 12, 10))], ["y"], init)
with open(sys.argv[1], "wb") as file:
    file.write(model)
