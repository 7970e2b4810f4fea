"""Quantised constructs the ONNX frontend cannot lower: one line `usmp-opt: error: FILE: ...`
naming the node (op type, name, index), exit code 1, no traceback, no output file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from usmp_dialect.testing.import_errors import assert_refused_in_one_line  # noqa: E402

node = helper.make_node


def int8_model(
    nodes: list[object],
    initializers: dict[str, np.ndarray],
    x_shape: list[int],
    y: tuple[int, list[int]],
    opset: int = 13,
    x_type: int = TensorProto.INT8,
) -> bytes:
    graph = helper.make_graph(
        nodes,  # type: ignore[arg-type]
        "g",
        [helper.make_tensor_value_info("x", x_type, x_shape)],
        [helper.make_tensor_value_info("y", y[0], y[1])],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def conv_parameters(**changes: np.ndarray) -> dict[str, np.ndarray]:
    values = {
        "xs": np.array(0.1, np.float32),
        "xz": np.array(0, np.int8),
        "w": np.ones((2, 2, 1, 1), np.int8),
        "ws": np.array([0.1, 0.2], np.float32),
        "wz": np.array([0, 0], np.int8),
        "ys": np.array(0.2, np.float32),
        "yz": np.array(0, np.int8),
    }
    values.update(changes)
    return values


CONV_INPUTS = ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"]
CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "uint8 output": (
        lambda: int8_model(
            [
                node("QLinearConv", CONV_INPUTS, ["u"], name="qc"),
                node("DequantizeLinear", ["u", "ys", "yz"], ["y"]),
            ],
            conv_parameters(yz=np.array(128, np.uint8)),
            [1, 2, 4, 4],
            (TensorProto.FLOAT, [1, 2, 4, 4]),
        ),
        "unsupported: activation type uint8 (tensor 'u' of nodes 0 'qc', 1; quantise with "
        "activation_type=QInt8 and weight_type=QInt8)",
    ),
    "asymmetric per-channel weights": (
        lambda: int8_model(
            [node("QLinearConv", CONV_INPUTS, ["y"], name="qc")],
            conv_parameters(wz=np.array([1, 0], np.int8)),
            [1, 2, 4, 4],
            (TensorProto.INT8, [1, 2, 4, 4]),
        ),
        "QLinearConv node 'qc' (node 0): asymmetric per-channel weights (zero points other "
        "than 0) are not supported",
    ),
    "per-axis activation": (
        lambda: int8_model(
            [
                node(
                    "QLinearAdd",
                    ["x", "s2", "xz", "x", "xs", "xz", "ys", "yz"],
                    ["y"],
                    name="a",
                    domain="com.microsoft",
                )
            ],
            {**conv_parameters(), "s2": np.array([0.1, 0.2], np.float32)},
            [1, 2],
            (TensorProto.INT8, [1, 2]),
        ),
        "QLinearAdd node 'a' (node 0): per-axis quantisation of input A is not supported",
    ),
    "per-axis activation in QDQ": (
        lambda: int8_model(
            [
                node("DequantizeLinear", ["x", "s2", "z2"], ["f"], name="dq", axis=1),
                node("Relu", ["f"], ["y"]),
            ],
            {"s2": np.array([0.1, 0.2], np.float32), "z2": np.array([0, 0], np.int8)},
            [1, 2],
            (TensorProto.FLOAT, [1, 2]),
        ),
        "DequantizeLinear node 'dq' (node 0): per-axis quantisation of an activation is not "
        "supported",
    ),
    "blocked weights in QDQ": (
        lambda: int8_model(
            [
                node("DequantizeLinear", ["x", "xs", "xz"], ["f"]),
                node(
                    "DequantizeLinear", ["wb", "sb", "zb"], ["wf"], name="w", axis=0, block_size=2
                ),
                node("MatMul", ["f", "wf"], ["m"]),
                node("QuantizeLinear", ["m", "ys", "yz"], ["y"]),
            ],
            {
                **conv_parameters(),
                "wb": np.ones((4, 2), np.int8),
                "sb": np.ones((2, 2), np.float32),
                "zb": np.zeros((2, 2), np.int8),
            },
            [1, 4],
            (TensorProto.INT8, [1, 2]),
            opset=21,
        ),
        "DequantizeLinear node 'w' (node 1): blocked quantisation is not supported",
    ),
    "matmul of activations": (
        lambda: int8_model(
            [
                node(
                    "QLinearMatMul",
                    ["x", "xs", "xz", "x", "xs", "xz", "ys", "yz"],
                    ["y"],
                    name="mm",
                )
            ],
            conv_parameters(),
            [2, 2],
            (TensorProto.INT8, [2, 2]),
        ),
        "QLinearMatMul node 'mm' (node 0): input 3 (the weights) must be a constant",
    ),
    "uint8 weights": (
        lambda: int8_model(
            [node("QLinearConv", CONV_INPUTS, ["y"], name="qc")],
            conv_parameters(w=np.ones((2, 2, 1, 1), np.uint8), wz=np.array([0, 0], np.uint8)),
            [1, 2, 4, 4],
            (TensorProto.INT8, [1, 2, 4, 4]),
        ),
        "QLinearConv node 'qc' (node 0): the weights are uint8; only int8 is supported",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_quantised_import_error_is_one_line(case: str, tmp_path: Path) -> None:
    make, expected = CASES[case]
    path = tmp_path / "model.onnx"
    path.write_bytes(make())
    assert_refused_in_one_line(path, expected)
