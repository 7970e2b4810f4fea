"""Models the ONNX frontend cannot import: one line `usmp-opt: error: FILE: ...` naming the
node (op type, name, index) or tensor, exit code 1, no traceback, no output file; and the
frontend chosen by extension or `-f onnx`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from usmp_dialect.testing.import_errors import (  # noqa: E402
    assert_refused_in_one_line,
    run_usmp_opt,
)

node = helper.make_node


def model(
    nodes: list[object],
    x_shape: list[int | str] | None = None,
    y_shape: list[int | str] | None = None,
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 13,
    domain_opsets: tuple[tuple[str, int], ...] = (),
) -> bytes:
    graph = helper.make_graph(
        nodes,  # type: ignore[arg-type]
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape or [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape or [1, 4])],
        [numpy_helper.from_array(a, n) for n, a in (initializers or {}).items()],
    )
    opsets = [
        helper.make_opsetid("", opset),
        *(helper.make_opsetid(d, v) for d, v in domain_opsets),
    ]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


W = {"w": np.ones((4, 4), np.float32)}
CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "unsupported operator": (
        lambda: model([node("Erf", ["x"], ["y"], name="erf1")]),
        "unsupported: operator Erf (node 0 'erf1')",
    ),
    "other domain": (
        lambda: model(
            [node("Gelu", ["x"], ["y"], domain="com.microsoft")],
            domain_opsets=(("com.microsoft", 1),),
        ),
        "unsupported: operator Gelu of domain 'com.microsoft' (node 0)",
    ),
    "symbolic input dimension": (
        lambda: model([node("Relu", ["x"], ["y"])], ["N", 4], ["N", 4]),
        "the model input 'x' has the symbolic dimension 'N'",
    ),
    "unsupported operator later": (
        lambda: model(
            [node("Relu", ["x"], ["h"], name="r"), node("NonZero", ["h"], ["y"])],
        ),
        "unsupported: operator NonZero (node 1)",
    ),
    "matmul of activations": (
        lambda: model([node("MatMul", ["x", "x"], ["y"], name="mm")], [4, 4], [4, 4]),
        "MatMul node 'mm' (node 0): input B must be a constant",
    ),
    "3-D conv": (
        lambda: model(
            [node("Conv", ["x", "w3"], ["y"], name="c3")],
            [1, 1, 4, 4, 4],
            [1, 1, 4, 4, 4],
            {"w3": np.ones((1, 1, 1, 1, 1), np.float32)},
        ),
        "Conv node 'c3' (node 0): input and weights must be 4-D",
    ),
    "pad mode": (
        lambda: model(
            [node("Pad", ["x", "p"], ["y"], mode="reflect")],
            [1, 4],
            [1, 6],
            {"p": np.array([0, 1, 0, 1], np.int64)},
        ),
        "Pad node (node 0): mode 'reflect' is not supported",
    ),
    "old opset": (
        lambda: model([node("Relu", ["x"], ["y"])], opset=8),
        "ONNX opset 8 is not supported (opsets 9-21 are)",
    ),
    "not a model": (lambda: b"\xff\xfe definitely not protobuf", "not an ONNX model"),
    "several unsupported": (
        lambda: model(
            [
                node("Erf", ["x"], ["a"], name="erf1"),
                node("Relu", ["a"], ["b"], name="r"),
                node("Cast", ["b"], ["c"], to=TensorProto.INT16, name="to16"),
                node("Gelu", ["c"], ["d"], domain="com.microsoft", name="g"),
                node("Erf", ["d"], ["e"]),
                node("Cast", ["e"], ["f"], to=TensorProto.DOUBLE, name="to64"),
                node("Cast", ["f"], ["y"], to=TensorProto.FLOAT, name="back"),
            ],
            domain_opsets=(("com.microsoft", 1),),
        ),
        "unsupported: operator Erf (nodes 0 'erf1', 4), operator Gelu of domain "
        "'com.microsoft' (node 3 'g'), activation type int16 (tensor 'c' of node 2 'to16'), "
        "activation type float64 (tensor 'f' of nodes 5 'to64', 6 'back')",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_import_error_is_one_line(case: str, tmp_path: Path) -> None:
    make, expected = CASES[case]
    path = tmp_path / "model.onnx"
    path.write_bytes(make())
    assert_refused_in_one_line(path, expected)


def test_frontend_by_flag_and_module_shape(tmp_path: Path) -> None:
    """`-f onnx` reads a model whatever its name; the module has `@main` with the graph's input
    then output, one function per node named `<op type>_<index>`, the weights as globals, and
    a Gemm's Relu fused into it."""
    data = model(
        [
            node("Gemm", ["x", "w"], ["h"]),
            node("Relu", ["h"], ["r"]),
            node("Sigmoid", ["r"], ["y"]),
        ],
        initializers=W,
    )
    renamed = tmp_path / "model.bin"
    renamed.write_bytes(data)
    imported = tmp_path / "m.mlir"
    ran = run_usmp_opt(str(renamed), "-f", "onnx", "-o", str(imported))
    assert ran.returncode == 0, ran.stderr
    text = imported.read_text()
    assert '@main(%x: memref<1x4xf32> {usmp.io = "input", usmp.tensor = "x"}, %y: memref' in text
    assert "func.call @gemm_0(" in text
    assert "func.call @sigmoid_2(" in text
    assert "@relu_1" not in text  # fused into the Gemm
    assert 'sym_name = "gemm_0_filter", type = memref<4x4xf32>' in text
