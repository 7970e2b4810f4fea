"""Writes mlp.onnx, the small float ONNX model of the README's IREE route (needs `onnx`):
conv (pads) -> relu -> reshape -> matmul -> add -> relu -> matmul, weights multiples of 1/4.

    python examples/iree/make_onnx_mlp.py mlp.onnx
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quarter_weights(
    rng: np.random.Generator, name: str, shape: tuple[int, ...]
) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.integers(-4, 5, shape) / 4).astype(np.float32), name)


def main(path: str) -> None:
    rng = np.random.default_rng(0)
    initializers = [
        quarter_weights(rng, "w", (8, 4)),
        quarter_weights(rng, "b", (4,)),
        quarter_weights(rng, "w2", (4, 3)),
        quarter_weights(rng, "f", (2, 1, 3, 3)),
        numpy_helper.from_array(np.array([-1, 8], dtype=np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "f"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["a"]),
        helper.make_node("Relu", ["a"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mlp.onnx")
