"""Writes mlp.onnx and cnn.onnx, the small float ONNX models of the README's IREE route (needs
`onnx`; weights are multiples of 1/4):

* mlp: conv (pads) -> relu -> reshape -> matmul -> add -> relu -> matmul;
* cnn: conv (bias, pads) -> relu -> maxpool -> averagepool -> reshape -> gemm (transB) ->
  sigmoid -> softmax.

    python examples/iree/make_onnx_models.py OUTPUT_DIRECTORY
"""

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def quarter_weights(
    rng: np.random.Generator, name: str, shape: tuple[int, ...]
) -> onnx.TensorProto:
    return numpy_helper.from_array((rng.integers(-4, 5, shape) / 4).astype(np.float32), name)


def save(
    path: Path,
    nodes: list[onnx.NodeProto],
    initializers: list[onnx.TensorProto],
    input_shape: list[int],
    output_shape: list[int],
) -> None:
    graph = helper.make_graph(
        nodes,
        path.stem,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def mlp(path: Path) -> None:
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
    save(path, nodes, initializers, [1, 1, 2, 2], [1, 3])


def cnn(path: Path) -> None:
    rng = np.random.default_rng(1)
    initializers = [
        quarter_weights(rng, "f", (4, 2, 3, 3)),
        quarter_weights(rng, "fb", (4,)),
        quarter_weights(rng, "w", (10, 4)),
        quarter_weights(rng, "b", (10,)),
        numpy_helper.from_array(np.array([1, 4], dtype=np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "f", "fb"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("AveragePool", ["p"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Reshape", ["a", "shape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "w", "b"], ["g"], transB=1),
        helper.make_node("Sigmoid", ["g"], ["s"]),
        helper.make_node("Softmax", ["s"], ["y"], axis=1),
    ]
    save(path, nodes, initializers, [1, 2, 4, 4], [1, 10])


if __name__ == "__main__":
    directory = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    mlp(directory / "mlp.onnx")
    cnn(directory / "cnn.onnx")
