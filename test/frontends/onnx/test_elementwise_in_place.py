"""Elementwise nodes in place (issue 12): Relu, Clip, LeakyRelu, Sigmoid, a standalone
BatchNormalization and Add/Sub/Mul/Div write over the buffer of an input of the output's shape
when nothing reads that buffer later (a Concat's byte buffer included), so a chain like DenseNet's
Concat -> BatchNormalization -> Relu needs one buffer. Checked against onnxruntime and on the
imported IR (which nodes share a buffer, which may not)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper

from usmp_dialect.testing.onnx_models import (
    check_against_onnxruntime,
    graph_model,
    imported_text,
    weights,
)

node = helper.make_node


def chain_model() -> bytes:
    """`c1`, `c2` in place in `cat`; `bn`, `r` over `cat`; `s` not over `r` (the Add reads `r`
    after it); `a` over `r`; `g` over `a` seen through the Flatten view `f`; `q` not over `x`
    (a graph input); `y` and `out` are graph outputs."""
    init = {
        "w1": weights(1, 4, 4, 1, 1),
        "w2": weights(2, 4, 4, 3, 3),
        "scale": np.abs(weights(3, 8)) + 0.5,
        "bias": weights(4, 8),
        "mean": weights(5, 8),
        "var": np.abs(weights(6, 8)) + 0.5,
        "wg": weights(7, 3, 288),
    }
    nodes = [
        node("Conv", ["x", "w1"], ["c1"]),
        node("Conv", ["x", "w2"], ["c2"], pads=[1, 1, 1, 1]),
        node("Concat", ["c1", "c2"], ["cat"], axis=1),
        node("BatchNormalization", ["cat", "scale", "bias", "mean", "var"], ["bn"]),
        node("Relu", ["bn"], ["r"]),
        node("Sigmoid", ["r"], ["s"]),
        node("Add", ["r", "s"], ["a"]),
        node("Flatten", ["a"], ["f"]),
        node("LeakyRelu", ["f"], ["g"], alpha=0.1),
        node("Gemm", ["g", "wg"], ["y"], transB=1),
        node("Relu", ["x"], ["q"]),
        node("Mul", ["q", "x"], ["out"]),
    ]
    return graph_model(nodes, [("x", (1, 4, 6, 6))], ["y", "out"], init)


def test_in_place_chain_matches_onnxruntime(tmp_path: Path) -> None:
    check_against_onnxruntime(chain_model(), tmp_path)


def _buffers_of_calls(text: str) -> dict[str, list[str]]:
    """Each node function `@main` calls, with the buffer (`memref.alloc` or `@main` argument)
    behind each of its arguments, through views and reinterpret casts."""
    parent = dict(re.findall(r"%(\w+) = memref\.(?:view|reinterpret_cast) %(\w+)", text))

    def root(value: str) -> str:
        while value in parent:
            value = parent[value]
        return value

    return {
        name: [root(value) for value in re.findall(r"%(\w+)", arguments)]
        for name, arguments in re.findall(r"func\.call @(\w+)\((.*?)\)", text)
    }


def test_only_buffers_read_later_are_kept(tmp_path: Path) -> None:
    text = imported_text(chain_model(), tmp_path)
    allocations = re.findall(
        r"%(\w+) = memref\.alloc\(\) \{usmp\.tensor = \"\1\"\} : (memref<[^>]*>)", text
    )
    # the Concat's byte buffer (8x6x6 floats), the Sigmoid's output and the Relu's of `x`
    assert sorted(allocations) == [
        ("cat", "memref<1152xi8>"),
        ("q", "memref<1x4x6x6xf32>"),
        ("s", "memref<1x8x6x6xf32>"),
    ]
    calls = _buffers_of_calls(text)
    assert calls["conv_0"] == calls["conv_1"] == ["x", "cat"]
    assert calls["batchnormalization_3"] == calls["relu_4"] == ["cat", "cat"]
    assert calls["sigmoid_5"] == ["cat", "s"]
    assert calls["add_6"] == ["cat", "s", "cat"]
    assert calls["leakyrelu_8"] == ["cat", "cat"]
    assert calls["gemm_9"] == ["cat", "y"]
    assert calls["relu_10"] == ["x", "q"]
    assert calls["mul_11"] == ["q", "x", "out"]
