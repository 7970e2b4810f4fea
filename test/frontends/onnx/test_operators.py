"""ONNX float operators, one graph per family with one output per variant, compared with
onnxruntime (our C within 1e-4 of the largest output)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper

from usmp_dialect.testing.onnx_models import (
    check_against_onnxruntime,
    graph_model,
    weights,
)

node = helper.make_node


def test_conv_variants(tmp_path: Path) -> None:
    """Groups (grouped, depthwise), pads, strides, dilations, every auto_pad, no bias, and a
    following BatchNormalization + Relu fused; a Conv + Clip fused."""
    c = 6
    init = {
        "w": weights(1, 4, c, 3, 3),
        "b": weights(2, 4),
        "wg": weights(3, 6, 2, 3, 3),  # group 3
        "wd": weights(4, 12, 1, 3, 3),  # depthwise, multiplier 2
        "w5": weights(5, 3, c, 5, 5),
        "w1": weights(6, 8, c, 1, 1),
        "gamma": np.abs(weights(7, 4)) + 0.5,
        "beta": weights(8, 4),
        "mean": weights(9, 4),
        "var": np.abs(weights(10, 4)) + 0.5,
    }
    nodes = [
        node("Conv", ["x", "w", "b"], ["plain"]),
        node("Conv", ["x", "w", "b"], ["padded"], pads=[1, 2, 0, 1], strides=[2, 1]),
        node("Conv", ["x", "wg"], ["grouped"], group=3, pads=[1, 1, 1, 1]),
        node("Conv", ["x", "wd"], ["depthwise"], group=c, strides=[2, 2], auto_pad="SAME_UPPER"),
        node("Conv", ["x", "w5"], ["dilated"], dilations=[2, 1], pads=[3, 1, 2, 2]),
        node("Conv", ["x", "w"], ["lower"], strides=[2, 2], auto_pad="SAME_LOWER"),
        node("Conv", ["x", "w"], ["valid"], auto_pad="VALID", strides=[3, 2]),
        node("Conv", ["x", "w1"], ["pointwise"]),
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["bn"], epsilon=1e-3),
        node("Relu", ["bn"], ["fused"]),
        node("Conv", ["x", "w"], ["d"]),
        node("Clip", ["d", "lo", "hi"], ["clipped"]),
    ]
    init["lo"], init["hi"] = np.array(-0.5, np.float32), np.array(0.75, np.float32)
    outputs = [
        "plain",
        "padded",
        "grouped",
        "depthwise",
        "dilated",
        "valid",
        "pointwise",
        "fused",
        "clipped",
    ]
    check_against_onnxruntime(graph_model(nodes, [("x", (1, c, 9, 8))], outputs, init), tmp_path)


def test_dense_and_activations(tmp_path: Path) -> None:
    """Gemm (transB, alpha, beta, bias [N] and [1, N], fused Relu), MatMul on a 3-D input,
    Relu, Clip (opset 13 inputs), LeakyRelu, Sigmoid."""
    init = {
        "b": weights(1, 5, 7),
        "bt": weights(2, 7, 5),
        "c": weights(3, 7),
        "c2": weights(4, 1, 7),
        "m": weights(5, 4, 3),
        "lo": np.array(-0.25, np.float32),
    }
    nodes = [
        node("Gemm", ["x", "b", "c"], ["gemm"]),
        node("Gemm", ["x", "bt", "c2"], ["g"], transB=1, alpha=0.5, beta=2.0),
        node("Relu", ["g"], ["gemm_relu"]),
        node("MatMul", ["t", "m"], ["matmul"]),
        node("Relu", ["x"], ["relu"]),
        node("Clip", ["x", "lo"], ["clip"]),
        node("LeakyRelu", ["x"], ["leaky"], alpha=0.2),
        node("Sigmoid", ["t"], ["sigmoid"]),
    ]
    outputs = ["gemm", "gemm_relu", "matmul", "relu", "clip", "leaky", "sigmoid"]
    model = graph_model(nodes, [("x", (2, 5)), ("t", (2, 3, 4))], outputs, init)
    check_against_onnxruntime(model, tmp_path)


def test_broadcast_arithmetic(tmp_path: Path) -> None:
    """Add/Sub/Mul/Div with NumPy broadcasting both ways, a constant operand, and Sum of one,
    two and three inputs."""
    init = {"k": weights(1, 3, 1, 1), "d": np.abs(weights(2, 1, 4)) + 0.5}
    nodes = [
        node("Add", ["x", "y"], ["add"]),
        node("Sub", ["y", "x"], ["sub"]),
        node("Mul", ["x", "k"], ["mul"]),
        node("Div", ["x", "d"], ["div"]),
        node("Sum", ["x", "y", "k"], ["sum3"]),
        node("Sum", ["x", "x"], ["sum2"]),
        node("Sum", ["x"], ["sum1"]),
    ]
    outputs = ["add", "sub", "mul", "div", "sum3", "sum2", "sum1"]
    model = graph_model(nodes, [("x", (2, 3, 5, 4)), ("y", (3, 1, 4))], outputs, init)
    check_against_onnxruntime(model, tmp_path)


def test_pooling(tmp_path: Path) -> None:
    """MaxPool and AveragePool with pads, strides, ceil_mode and count_include_pad,
    GlobalAveragePool, GlobalMaxPool, at opset 11 (the zoo's style of attributes)."""
    nodes = [
        node("MaxPool", ["x"], ["max"], kernel_shape=[3, 3], strides=[2, 2]),
        node(
            "MaxPool",
            ["x"],
            ["max_ceil"],
            kernel_shape=[3, 2],
            strides=[2, 2],
            ceil_mode=1,
            pads=[1, 0, 1, 1],
        ),
        node("AveragePool", ["x"], ["avg"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node(
            "AveragePool",
            ["x"],
            ["avg_pad"],
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 2, 2],
            count_include_pad=1,
        ),
        node(
            "AveragePool",
            ["x"],
            ["avg_same"],
            kernel_shape=[2, 3],
            auto_pad="SAME_UPPER",
            count_include_pad=1,
        ),
        node("AveragePool", ["x"], ["avg_ceil"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        node("GlobalAveragePool", ["x"], ["global"]),
        node("GlobalMaxPool", ["x"], ["global_max"]),
    ]
    outputs = ["max", "max_ceil", "avg", "avg_pad", "avg_same", "avg_ceil", "global", "global_max"]
    model = graph_model(nodes, [("x", (1, 3, 8, 9))], outputs, opset=11)
    check_against_onnxruntime(model, tmp_path)


def test_data_movement(tmp_path: Path) -> None:
    """Concat (activations and a constant, axes 1 and -1), Transpose, Pad, Softmax (opset 13:
    last axis; opset 11 style is tested with the zoo), LRN, standalone BatchNormalization."""
    init = {
        "k": weights(1, 1, 2, 4, 5),
        "pads": np.array([0, 1, 2, 0, 0, 0, 1, 3], np.int64),
        "value": np.array(0.5, np.float32),
        "gamma": np.abs(weights(2, 3)) + 0.5,
        "beta": weights(3, 3),
        "mean": weights(4, 3),
        "var": np.abs(weights(5, 3)) + 0.5,
    }
    nodes = [
        node("Concat", ["x", "k", "x"], ["concat"], axis=1),
        node("Concat", ["x", "x"], ["concat_last"], axis=-1),
        node("Transpose", ["x"], ["transposed"], perm=[0, 2, 3, 1]),
        node("Pad", ["x", "pads", "value"], ["padded"]),
        node("Softmax", ["x"], ["softmax"]),
        node("LRN", ["x"], ["lrn"], size=3, alpha=0.01, beta=0.75, bias=2.0),
        node("BatchNormalization", ["x", "gamma", "beta", "mean", "var"], ["bn"]),
    ]
    outputs = ["concat", "concat_last", "transposed", "padded", "softmax", "lrn", "bn"]
    model = graph_model(nodes, [("x", (1, 3, 4, 5))], outputs, init)
    check_against_onnxruntime(model, tmp_path)


def test_views_and_folded_shapes(tmp_path: Path) -> None:
    """Reshape from a Shape -> Gather -> Unsqueeze -> Concat subgraph (folded), Flatten,
    Squeeze, Unsqueeze, Dropout, Identity: views, and Constant / ConstantOfShape folded into a
    constant operand."""
    init = {
        "zero": np.array([0], np.int64),
        "minus": np.array([-1], np.int64),
        "axes": np.array([0], np.int64),
        "shape": np.array([5], np.int64),
    }
    nodes = [
        node("Shape", ["x"], ["s"]),
        node("Gather", ["s", "zero"], ["batch"], axis=0),
        node("Concat", ["batch", "minus"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["r"]),
        node("Relu", ["r"], ["reshaped"]),
        node("Flatten", ["x"], ["f"], axis=2),
        node("Sigmoid", ["f"], ["flattened"]),
        node("Unsqueeze", ["x", "axes"], ["u"]),
        node("Squeeze", ["u", "axes"], ["q"]),
        node("Dropout", ["q"], ["dr"]),
        node("Identity", ["dr"], ["id"]),
        node("Constant", [], ["c"], value=helper.make_tensor("cv", 1, [1, 5], np.arange(5.0))),
        node("ConstantOfShape", ["shape"], ["ones"], value=helper.make_tensor("o", 1, [1], [2.0])),
        node("Unsqueeze", ["ones", "axes"], ["ones2"]),
        node("Mul", ["c", "ones2"], ["c3"]),
        node("Add", ["id", "c"], ["viewed"]),
    ]
    outputs = [("reshaped", (2, 60)), "flattened", "viewed", "scaled"]
    nodes.append(node("Mul", ["x", "c3"], ["scaled"]))
    model = graph_model(nodes, [("x", (2, 3, 4, 5))], outputs, init)
    check_against_onnxruntime(model, tmp_path)
