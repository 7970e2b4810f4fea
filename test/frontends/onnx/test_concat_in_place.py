"""Concat in place (issue 12): producers write straight into their slice of a Concat's output
where the slices are contiguous, the Concat copies only the rest. Checked against onnxruntime
(our C), against the unplanned program run by upstream `mlir-runner` (the planned program
through `convert-pool-to-memref`), and on the imported IR (which copies are left)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper

from usmp_dialect.testing.mlir_runner import (
    SKIP_REASON,
    mlir_opt_path,
    mlir_runner_path,
    unplanned_and_planned_outputs,
)
from usmp_dialect.testing.onnx_models import (
    check_against_onnxruntime,
    graph_model,
    imported_text,
    weights,
)

node = helper.make_node


def concat_model() -> bytes:
    """In place: `a`, `b` (around the constant `k`) in `c`; `c` (nested) and `d` in `e`; both
    halves of `batch` (axis 0); `a2` in `shared`. Copied: `strided` (2 batches), `last` (axis
    3), `m` (read twice), `exposed`'s inputs (a graph output; `x` a graph input)."""
    init = {"k": weights(1, 1, 2, 4, 5), "w": weights(2, 4, 3, 1, 1)}
    nodes = [
        node("Relu", ["x"], ["a"]),
        node("Sigmoid", ["x"], ["b"]),
        node("Concat", ["a", "k", "b"], ["c"], axis=1),
        node("Conv", ["x", "w"], ["d"]),
        node("Concat", ["c", "d"], ["e"], axis=1),
        node("Relu", ["e"], ["out"]),
        node("Relu", ["x2"], ["s0"]),
        node("Sigmoid", ["x2"], ["s1"]),
        node("Concat", ["s0", "s1"], ["strided"], axis=1),
        node("Relu", ["strided"], ["out_strided"]),
        node("Relu", ["x"], ["l0"]),
        node("Sigmoid", ["x"], ["l1"]),
        node("Concat", ["l0", "l1"], ["last"], axis=3),
        node("Relu", ["last"], ["out_last"]),
        node("Sigmoid", ["x"], ["m"]),
        node("Relu", ["x"], ["a2"]),
        node("Concat", ["m", "a2"], ["shared"], axis=1),
        node("Add", ["shared", "shared"], ["shared2"]),
        node("Add", ["m", "m"], ["out_shared"]),
        node("Relu", ["x"], ["t0"]),
        node("Sigmoid", ["x"], ["t1"]),
        node("Concat", ["t0", "t1"], ["batch"], axis=0),
        node("Relu", ["batch"], ["out_batch"]),
        node("Relu", ["x"], ["u0"]),
        node("Concat", ["u0", "x"], ["exposed"], axis=1),
    ]
    outputs = ["out", "out_strided", "out_last", "shared2", "out_shared", "out_batch", "exposed"]
    return graph_model(nodes, [("x", (1, 3, 4, 5)), ("x2", (2, 3, 4, 5))], outputs, init)


def test_concat_in_place_matches_onnxruntime(tmp_path: Path) -> None:
    check_against_onnxruntime(concat_model(), tmp_path)


def test_only_the_other_inputs_are_copied(tmp_path: Path) -> None:
    text = imported_text(concat_model(), tmp_path)
    signatures = {
        name: arguments.count("%")
        for name, arguments in re.findall(r"func\.func @(concat_\d+)\((.*?)\)", text)
    }
    # By node index: `c` keeps one copy (the constant, no argument), `e` and `batch` none,
    # `shared` copies `m` only; `strided`, `last` and `exposed` copy both inputs.
    assert signatures == {
        "concat_2": 1,
        "concat_8": 3,
        "concat_12": 3,
        "concat_16": 2,
        "concat_24": 3,
    }
    # Everything placed in `e` is a view of its one byte buffer, at its byte offset.
    # (e: 3 + 2 + 3 + 4 channels of 4x5 floats; `c` holds a, k, b.)
    constants = dict(re.findall(r"%(\w+) = arith\.constant (\d+) : index", text))
    views = re.findall(r"%(\w+) = memref\.view %e\[%(\w+)\]\[\] : memref<960xi8>", text)
    offsets = {name: int(constants[shift]) for name, shift in views if not name.isdigit()}
    assert offsets == {"a": 0, "b": 5 * 80, "c": 0, "d": 8 * 80}
    assert '%batch = memref.alloc() {usmp.tensor = "batch"} : memref<480xi8>' in text


@pytest.mark.skipif(mlir_opt_path() is None or mlir_runner_path() is None, reason=SKIP_REASON)
def test_planned_concat_runs_as_the_unplanned_one_upstream(tmp_path: Path) -> None:
    """The imported program (allocations, views) and the planned one after
    `convert-pool-to-memref`, both lowered by `mlir-opt` and run by `mlir-runner`."""
    reference, planned = unplanned_and_planned_outputs(imported_text(concat_model(), tmp_path))
    assert planned == reference
    assert np.isfinite([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", reference)]).all()
