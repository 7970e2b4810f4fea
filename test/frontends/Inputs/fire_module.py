"""Writes a SqueezeNet fire module (squeeze 1x1, expand 1x1 and 3x3, Concat) as ONNX to argv[1],
for the lit test of Concat in place."""

import sys

from onnx import helper

from usmp_dialect.testing.onnx_models import graph_model, weights

node = helper.make_node
init = {"ws": weights(1, 2, 3, 1, 1), "w1": weights(2, 4, 2, 1, 1), "w3": weights(3, 4, 2, 3, 3)}
nodes = [
    node("Conv", ["x", "ws"], ["squeezed"]),
    node("Relu", ["squeezed"], ["s"]),
    node("Conv", ["s", "w1"], ["e1"]),
    node("Relu", ["e1"], ["expand1"]),
    node("Conv", ["s", "w3"], ["e3"], pads=[1, 1, 1, 1]),
    node("Relu", ["e3"], ["expand3"]),
    node("Concat", ["expand1", "expand3"], ["fire"], axis=1),
    node("MaxPool", ["fire"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
]
model = graph_model(nodes, [("x", (1, 3, 4, 4))], ["y"], init)
with open(sys.argv[1], "wb") as file:
    file.write(model)
