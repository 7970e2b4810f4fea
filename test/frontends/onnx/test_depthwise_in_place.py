"""Depthwise Conv in place in the ONNX frontend (issue 22): an inverted residual block whose
peak is its depthwise Conv (NCHW, group = channels) runs it in place, the output over its
input's first bytes through one plane of scratch (stride 1 and 2), against onnxruntime; the
workspace drops, and `in_place="none"` keeps the Conv's own output buffer. The in-place checks
import with `fuse="none"`: by default the block is one fused row-streamed group (lower still)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper

import usmp_dialect
from usmp_dialect.frontends.onnx.importer import import_onnx
from usmp_dialect.frontends.options import ImportOptions
from usmp_dialect.testing.onnx_models import check_against_onnxruntime, graph_model, weights

node = helper.make_node
SIZE, CHANNELS, EXPANDED = 8, 4, 16


def block(stride: int) -> bytes:
    """x -> 1x1 Conv + Relu e (16 channels) -> 3x3 depthwise Conv + Relu d (stride) -> 1x1 Conv
    p -> Sigmoid y."""
    init = {
        "w1": weights(1, EXPANDED, CHANNELS, 1, 1),
        "wd": weights(2, EXPANDED, 1, 3, 3),
        "bd": weights(3, EXPANDED),
        "w2": weights(4, CHANNELS, EXPANDED, 1, 1),
    }
    nodes = [
        node("Conv", ["x", "w1"], ["e0"]),
        node("Relu", ["e0"], ["e"]),
        node(
            "Conv",
            ["e", "wd", "bd"],
            ["d0"],
            group=EXPANDED,
            pads=[1, 1, 1, 1],
            strides=[stride, stride],
        ),
        node("Relu", ["d0"], ["d"]),
        node("Conv", ["d", "w2"], ["p"]),
        node("Sigmoid", ["p"], ["y"]),
    ]
    return graph_model(nodes, [("x", (1, CHANNELS, SIZE, SIZE))], ["y"], init)


def _calls(text: str) -> dict[str, list[str]]:
    parent = dict(re.findall(r"%(\w+) = memref\.(?:view|reinterpret_cast) %(\w+)", text))

    def root(value: str) -> str:
        while value in parent:
            value = parent[value]
        return value

    return {
        name: [root(value) for value in re.findall(r"%(\w+)", arguments)]
        for name, arguments in re.findall(r"func\.call @(\w+)\((.*?)\)", text)
    }


@pytest.mark.parametrize("stride", [1, 2])
def test_shares_the_input_buffer(stride: int) -> None:
    text = str(import_onnx(block(stride), "block.onnx", ImportOptions(fuse="none")))
    calls = _calls(text)
    assert calls["conv_2"][0] == calls["conv_2"][1] == calls["conv_0"][1]
    out = SIZE // stride
    function = text[text.index("func.func @conv_2") :]
    assert f"memref.alloc() : memref<{out}x{out}xf32>" in function[: function.index("return")]
    plain = ImportOptions(in_place="none", fuse="none")
    none = _calls(str(import_onnx(block(stride), "block.onnx", plain)))
    assert none["conv_2"][0] != none["conv_2"][1]


@pytest.mark.parametrize("stride", [1, 2])
def test_peak_drops(stride: int) -> None:
    before = usmp_dialect.compile(block(stride), frontend="onnx", in_place="none", fuse="none")
    after = usmp_dialect.compile(block(stride), frontend="onnx", fuse="none")
    e_bytes = SIZE * SIZE * EXPANDED * 4
    assert before.workspace_bytes == e_bytes + e_bytes // stride**2
    assert after.workspace_bytes == e_bytes + (SIZE // stride) ** 2 * CHANNELS * 4


@pytest.mark.parametrize("stride", [1, 2])
def test_matches_onnxruntime(tmp_path: Path, stride: int) -> None:
    check_against_onnxruntime(block(stride), tmp_path)
