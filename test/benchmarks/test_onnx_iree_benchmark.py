"""`benchmarks/onnx_iree.py`: the entry function it reads off IREE's output, and (with IREE's
compiler installed, `pip install iree-base-compiler`; skipped otherwise: it is not a dependency)
the IREE route on a small ONNX graph with a depthwise Conv and an LRN plans, and its C matches
onnxruntime."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.onnx_models import RELATIVE, graph_model

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "benchmarks" / "onnx_iree.py"


def _iree_installed() -> bool:
    here = str(Path(sys.executable).parent)
    return all(
        shutil.which(tool, path=here) or shutil.which(tool)
        for tool in ("iree-import-onnx", "iree-opt")
    )


def test_entry_name_is_the_one_public_function(tmp_path: Path) -> None:
    script = load_file(SCRIPT)
    bufferized = tmp_path / "model.buf.mlir"
    bufferized.write_text(
        'memref.global "private" constant @w : memref<2xf32> = dense<1.0> alignment = 64\n'
        "func.func @main_graph(%arg0: memref<2xf32>) -> memref<2xf32> {\n"
        "  return %arg0 : memref<2xf32>\n}\n"
    )
    assert script.entry_name(bufferized) == "main_graph"


@pytest.mark.skipif(not _iree_installed(), reason="IREE's compiler not installed (benchmark-only)")
def test_iree_route_plans_and_matches_onnxruntime(tmp_path: Path) -> None:
    script = load_file(SCRIPT)
    rng = np.random.default_rng(3)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], group=4, pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("LRN", ["r"], ["n"], size=3, alpha=1e-2, beta=0.75, bias=1.0),
        helper.make_node("MaxPool", ["n"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "g"], ["y"], transB=1),
    ]
    weights = {
        "w": rng.standard_normal((4, 1, 3, 3)).astype(np.float32),
        "g": rng.standard_normal((5, 16)).astype(np.float32),
    }
    model = tmp_path / "small.onnx"
    model.write_bytes(graph_model(nodes, [("x", (1, 4, 8, 8))], ["y"], weights, opset=17))
    row = script.IreeRow("small", 0, 0)
    script.plan_iree_route(model, tmp_path, 300.0, True, row)
    assert row.note == ""
    assert row.iree_workspace is not None and row.iree_workspace > 0
    assert row.error is not None and row.error <= RELATIVE
