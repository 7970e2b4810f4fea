"""Fused row streaming in the ONNX frontend (issue 22): chains of Conv (group 1 and depthwise,
stride 2, dilation, pads, a fused Relu/Clip), MaxPool/AveragePool, LRN and a final
GlobalAveragePool, NCHW, become one function that produces the output row by row, decided
on the shared `graph.streaming` description. Float against onnxruntime (also under
ASan/UBSan), int8 (onnxruntime's QDQ and QOperator forms) byte for byte against the unfused
program and within the quantisation tests' steps of onnxruntime; the workspace drops, and
`fuse="none"` keeps one function per node."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper

import usmp_dialect
from usmp_dialect.frontends.onnx.importer import import_onnx
from usmp_dialect.frontends.options import ImportOptions
from usmp_dialect.testing.onnx_models import (
    RELATIVE,
    graph_model,
    onnxruntime_outputs,
    quantization_scales,
    quantize,
    weights,
)
from usmp_dialect.validation.host import compile_model

node = helper.make_node
SIZE = 17  # odd: stride 2 leaves a last row, the bottom border differs from the top


def conv_chain(global_pool: bool = True) -> bytes:
    """x (3 channels) -> 3x3 Conv + Relu -> 3x3 depthwise Conv (dilation 2) -> 3x3 Conv stride 2
    + Clip -> 1x1 Conv -> MaxPool 2x2 stride 1 -> GlobalAveragePool (or the pool's output)."""
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["a"]),
        node("Conv", ["a", "wd"], ["d"], group=8, pads=[2, 2, 2, 2], dilations=[2, 2]),
        node("Conv", ["d", "w2", "b2"], ["c2"], strides=[2, 2], pads=[1, 0, 1, 2]),
        node("Clip", ["c2", "low", "high"], ["p"]),
        node("Conv", ["p", "w3"], ["q"]),
        node("MaxPool", ["q"], ["m"], kernel_shape=[2, 2]),
    ]
    if global_pool:
        nodes.append(node("GlobalAveragePool", ["m"], ["y"]))
    initializers = {
        "w1": weights(1, 8, 3, 3, 3) * 0.4,
        "b1": weights(2, 8) * 0.1,
        "wd": weights(3, 8, 1, 3, 3) * 0.4,
        "w2": weights(4, 12, 8, 3, 3) * 0.2,
        "b2": weights(5, 12) * 0.1,
        "w3": weights(6, 6, 12, 1, 1) * 0.3,
        "low": np.array(0.0, np.float32),
        "high": np.array(6.0, np.float32),
    }
    return graph_model(
        nodes, [("x", (1, 3, SIZE, SIZE))], ["y" if global_pool else "m"], initializers
    )


def pool_chain() -> bytes:
    """x -> AveragePool 3x3 (SAME_UPPER) -> LRN (size 3, a window of one row) -> 5x5 Conv
    stride 2 (auto_pad SAME_LOWER) + Relu -> MaxPool 3x3 stride 2 (ceil_mode) -> AveragePool
    2x2."""
    nodes = [
        node("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], auto_pad="SAME_UPPER"),
        node("LRN", ["a"], ["n"], size=3, alpha=0.5, beta=0.75, bias=2.0),
        node("Conv", ["n", "w"], ["c"], strides=[2, 2], auto_pad="SAME_LOWER"),
        node("Relu", ["c"], ["r"]),
        node("MaxPool", ["r"], ["m"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        node("AveragePool", ["m"], ["y"], kernel_shape=[2, 2]),
    ]
    return graph_model(
        nodes, [("x", (1, 4, 2 * SIZE, SIZE))], ["y"], {"w": weights(7, 8, 4, 5, 5) * 0.2}
    )


def elementwise_chain() -> bytes:
    """The zoo's unfolded batch norm: 7x7 Conv stride 2 -> Mul by a [C, 1, 1] constant (a
    Constant node's, between the two) -> Add of a [1, C, 1, 1] constant -> LeakyRelu ->
    Sigmoid -> MaxPool 3x3 stride 2 -> 3x3 Conv (its weights an Add of constants, folded) +
    Relu."""
    scale = helper.make_tensor("scale", 1, [8, 1, 1], (weights(2, 8) * 0.5 + 1).tolist())
    nodes = [
        node("Conv", ["x", "w1"], ["c"], strides=[2, 2], pads=[3, 3, 3, 3]),
        node("Constant", [], ["s"], value=scale),
        node("Mul", ["c", "s"], ["m"]),
        node("Add", ["m", "shift"], ["b"]),
        node("LeakyRelu", ["b"], ["l"], alpha=0.2),
        node("Sigmoid", ["l"], ["g"]),
        node("MaxPool", ["g"], ["p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("Add", ["w2a", "w2b"], ["w2"]),
        node("Conv", ["p", "w2"], ["q"], pads=[1, 1, 1, 1]),
        node("Relu", ["q"], ["y"]),
    ]
    return graph_model(
        nodes,
        [("x", (1, 3, 2 * SIZE, 2 * SIZE))],
        ["y"],
        {
            "w1": weights(1, 8, 3, 7, 7) * 0.2,
            "shift": weights(3, 1, 8, 1, 1) * 0.1,
            "w2a": weights(4, 6, 8, 3, 3) * 0.3,
            "w2b": weights(5, 6, 8, 3, 3) * 0.1,
        },
    )


MODELS = {"conv_chain": conv_chain, "pool_chain": pool_chain, "elementwise": elementwise_chain}


def _fused_groups(model: bytes, fuse: str = "rows") -> list[str]:
    text = str(import_onnx(model, "model.onnx", ImportOptions(fuse=fuse)))
    return re.findall(r"func\.call @(fused_\w+)\(", text)


def _run(model: bytes, directory: Path, sanitize: bool, options: tuple[str, ...] = ()):
    path = directory / "model.onnx"
    path.write_bytes(model)
    return compile_model(path, directory, sanitize=sanitize, options=options)


@pytest.mark.parametrize(
    ("name", "sanitize"),
    [
        ("conv_chain", False),
        ("conv_chain", True),
        ("pool_chain", False),
        ("pool_chain", True),
        ("elementwise", False),
        ("elementwise", True),
    ],
)
def test_streamed_chain_matches_onnxruntime(tmp_path: Path, name: str, sanitize: bool) -> None:
    model = MODELS[name]()
    assert len(_fused_groups(model)) == 1
    compiled = _run(model, tmp_path, sanitize)
    assert "fused_" in (tmp_path / "model.c").read_text()
    for seed in (0, 1):
        x = np.random.default_rng(seed).standard_normal(compiled.inputs[0].shape)
        x = x.astype(np.float32)
        (ours,), _ = compiled.run([x])
        (want,) = onnxruntime_outputs(model, [x])
        bound = RELATIVE * float(np.abs(want).max())
        np.testing.assert_allclose(ours.reshape(want.shape), want, rtol=0, atol=bound)


def test_lrn_is_inside_the_pool_chain_group() -> None:
    text = str(import_onnx(pool_chain(), "model.onnx"))
    assert 'operators = ["averagepool_0", "lrn_1", "conv_2", "maxpool_4", "averagepool_5"]' in text


def test_elementwise_nodes_are_inside_the_group() -> None:
    """The Constant node between the members is folded first (the group runs at its last
    node); after the pool the peak is the input's, so the group ends there."""
    text = str(import_onnx(elementwise_chain(), "model.onnx"))
    assert (
        'operators = ["conv_0", "mul_2", "add_3", "leakyrelu_4", "sigmoid_5", "maxpool_6"]' in text
    )


def test_the_whole_chain_is_one_group_with_its_line_buffers() -> None:
    text = str(import_onnx(conv_chain(), "model.onnx"))
    (function,) = re.findall(r"func\.func @fused_conv_0__globalaveragepool_7\(.*", text)
    assert (
        'operators = ["conv_0", "conv_2", "conv_3", "conv_5", "maxpool_6", '
        '"globalaveragepool_7"]' in function
    )
    # NCHW line buffers: the 5 rows of a's dilated window, 3 of d, 1 of p, 2 of q, the
    # reducer's row of m and its float sums
    for buffer in ("1x8x5x17xf32", "1x8x3x17xf32", "1x12x1x9xf32", "1x6x2x9xf32", "1x6x1x8xf32"):
        assert f"memref<{buffer}>" in function
    assert "memref<6xf32>" in function


@pytest.mark.parametrize("name", MODELS)
def test_workspace_drops_and_fuse_none_keeps_the_nodes(name: str) -> None:
    model = MODELS[name]()
    fused = usmp_dialect.compile(model, frontend="onnx")
    unfused = usmp_dialect.compile(model, frontend="onnx", fuse="none")
    # elementwise: after the group the 3x3 Conv's input and output (U1) set the peak
    most = 0.6 if name == "elementwise" else 0.5
    assert fused.workspace_bytes < most * unfused.workspace_bytes
    assert _fused_groups(model, "none") == []


def test_a_tensor_read_twice_is_not_streamed() -> None:
    """The depthwise Conv's output feeds the next Conv and the graph output: it stays whole,
    the chains stop there."""
    nodes = [
        node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
        node("Conv", ["a", "wd"], ["d"], group=8, pads=[1, 1, 1, 1]),
        node("Conv", ["d", "w2"], ["y"], pads=[1, 1, 1, 1]),
    ]
    model = graph_model(
        nodes,
        [("x", (1, 3, SIZE, SIZE))],
        ["y", "d"],
        {
            "w1": weights(1, 8, 3, 3, 3),
            "wd": weights(2, 8, 1, 3, 3),
            "w2": weights(3, 4, 8, 3, 3),
        },
    )
    assert _fused_groups(model) == ["fused_conv_0__conv_1"]


def _quantized_chain() -> bytes:
    """x -> 3x3 Conv + Relu (16 channels) -> 3x3 depthwise Conv stride 2 -> 3x3 Conv dilation 2
    + Relu -> MaxPool 3x3 stride 2 -> 1x1 Conv, int8 from the input's QuantizeLinear to the
    output's DequantizeLinear once quantised. 16 channels: the peak is then inside the chain,
    not at the float input's QuantizeLinear."""
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["a"]),
        node("Conv", ["a", "wd", "bd"], ["d"], group=16, pads=[1, 1, 1, 1], strides=[2, 2]),
        node("Conv", ["d", "w2", "b2"], ["c2"], pads=[2, 2, 2, 2], dilations=[2, 2]),
        node("Relu", ["c2"], ["p"]),
        node("MaxPool", ["p"], ["m"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("Conv", ["m", "w3", "b3"], ["y"]),
    ]
    return graph_model(
        nodes,
        [("x", (1, 1, 2 * SIZE, SIZE))],
        ["y"],
        {
            "w1": weights(1, 16, 1, 3, 3) * 0.4,
            "b1": weights(2, 16) * 0.1,
            "wd": weights(3, 16, 1, 3, 3) * 0.4,
            "bd": weights(4, 16) * 0.1,
            "w2": weights(5, 12, 16, 3, 3) * 0.2,
            "b2": weights(6, 12) * 0.1,
            "w3": weights(7, 6, 12, 1, 1) * 0.3,
            "b3": weights(8, 6) * 0.1,
        },
    )


@pytest.mark.parametrize(
    ("form", "per_channel", "sanitize"),
    [("qdq", True, False), ("qdq", False, True), ("qoperator", False, False)],
    ids=["qdq_per_channel", "qdq_per_tensor_sanitized", "qoperator"],
)
def test_quantized_chain_is_exact(
    tmp_path: Path, form: str, per_channel: bool, sanitize: bool
) -> None:
    """int8: the streamed program's output equals the unfused one's byte for byte (the same
    integer kernels), and onnxruntime's within the 2 steps of `test_qdq.py`."""
    floating, quantized = tmp_path / "float.onnx", tmp_path / "quantized.onnx"
    floating.write_bytes(_quantized_chain())
    written = quantize(floating, quantized, (1, 1, 2 * SIZE, SIZE), form, per_channel)
    model = quantized.read_bytes()
    groups = _fused_groups(model)
    # the whole int8 chain, from the first QLinearConv to the last
    assert len(groups) == 1 and re.fullmatch(r"fused_qlinearconv_\d+__qlinearconv_\d+", groups[0])
    (tmp_path / "rows").mkdir()
    (tmp_path / "none").mkdir()
    streamed = _run(model, tmp_path / "rows", sanitize)
    unfused = _run(model, tmp_path / "none", False, ("--fuse=none",))
    assert "fused_" not in (tmp_path / "none" / "model.c").read_text()
    step = quantization_scales(written)[written.graph.output[0].name]
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal((1, 1, 2 * SIZE, SIZE))
        x = x.astype(np.float32)
        (ours,), _ = streamed.run([x])
        (plain,), _ = unfused.run([x])
        np.testing.assert_array_equal(ours, plain)
        (want,) = onnxruntime_outputs(model, [x])
        difference = np.abs(ours.reshape(want.shape).astype(np.float64) - want) / step
        assert difference.max() <= 2 + 1e-3


def _hinted(model: bytes, directory: Path, hint: int | None, *flags: str) -> tuple[int, str, str]:
    """usmp-opt with a workspace size hint (U4): the planned workspace (0 when planning
    failed), the module printed and the error."""
    import json
    import subprocess

    from usmp_dialect.validation.host import pipeline, usmp_opt

    path = directory / "model.onnx"
    path.write_bytes(model)
    report = directory / "plan.json"
    report.unlink(missing_ok=True)
    pools = ["--workspace-pools=sram"]
    if hint is not None:
        pools.append(f"--workspace-pools-size-hint-bytes=sram:{hint}")
    ran = subprocess.run(
        [*usmp_opt(), str(path), *pools, *flags, "-p", pipeline(True, report)],
        capture_output=True,
        text=True,
        check=False,
    )
    if ran.returncode:
        return 0, ran.stdout, ran.stderr
    planned = json.loads(report.read_text())["pools"]
    return sum(p["size_bytes"] for p in planned if p["kind"] == "workspace"), ran.stdout, ""


def test_a_size_hint_steers_the_onnx_import(tmp_path: Path) -> None:
    """As for TFLite (SPEC §12): a hint the plain program meets changes nothing, one between
    the lowest peak and the plain one is met by streaming, one below the lowest peak fails in
    one line naming that peak and the group running then."""
    model = conv_chain()
    plain, plain_text, _ = _hinted(model, tmp_path, None, "--fuse=none", "--in-place=elementwise")
    lowest, lowest_text, _ = _hinted(model, tmp_path, None)
    assert lowest < plain and "fused_" in lowest_text
    workspace, text, _ = _hinted(model, tmp_path, plain)

    def body(text: str) -> list[str]:  # the pools' declarations carry the hint
        return [line for line in text.splitlines() if "pool.workspace" not in line]

    assert workspace == plain and body(text) == body(plain_text)
    hint = (plain + lowest) // 2
    workspace, text, _ = _hinted(model, tmp_path, hint)
    assert "fused_" in text and workspace <= hint
    workspace, _, error = _hinted(model, tmp_path, lowest // 2)
    assert workspace == 0
    lines = error.strip().splitlines()
    assert len(lines) == 1, error
    assert f"pool @sram ({lowest // 2} bytes) is too small: at least" in lines[0]
    assert "(FUSED @fused_conv_0__" in lines[0]
