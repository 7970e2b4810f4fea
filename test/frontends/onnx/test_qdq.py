"""int8 ONNX models as onnxruntime's `quantize_static` writes them (opset 13, int8 activations
and weights, per tensor and per channel), in both of its forms: QDQ (QuantizeLinear /
DequantizeLinear around float operators) and QOperator (QLinearConv, QLinearMatMul and the
com.microsoft QLinear* operators). Both are lowered to the integer kernels (see
`frontends/onnx/qdq.py`): the tests check that no float compute is left between the model's
input QuantizeLinear and its final Softmax, and compare the C's outputs with onnxruntime
running the same model.

Tolerance, in steps of the compared tensor's quantisation: our kernels requantise every
accumulator with TFLite's fixed-point multiplier (rounding half away from zero, twice), and
onnxruntime multiplies it by the float scale and rounds half to even: the two differ by one
step where a value lies within rounding error of a half, at most one step per layer and rarely.
A one-step difference in a tensor changes the next layer's accumulator by much less than one
of its output steps (the layer's scales absorb it), so the differences do not grow along the
network: 2 steps on the logits and on the probabilities leaves a margin of one over what we
measure (at most 1 on the squeezenets, see the notes). The argmax must agree."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import helper, numpy_helper  # noqa: E402
from xdsl.dialects import func  # noqa: E402

from usmp_dialect.frontends.onnx import import_onnx  # noqa: E402
from usmp_dialect.frontends.options import ImportOptions  # noqa: E402
from usmp_dialect.testing.onnx_models import (  # noqa: E402
    graph_model,
    onnxruntime_outputs,
    quantization_scales,
    quantize,
    quantized_squeezenet,
    weights,
    zoo_path,
)
from usmp_dialect.validation.host import compile_model  # noqa: E402

STEPS = 2


def _kernels(path: Path, fuse: str = "none") -> list[str]:
    """The names of the functions `@main` calls (`<op type>_<index>`, minus the index), by
    default of the plain import (`fuse="none"`: one function per node, no row-streamed
    group; the programs compared with onnxruntime are the default, streamed ones)."""
    module = import_onnx(path.read_bytes(), str(path), ImportOptions(fuse=fuse))
    names = [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]
    return [name.rsplit("_", 1)[0] for name in names if name != "main"]


def _compare(path: Path, directory: Path, inputs: list[np.ndarray], steps: list[float]) -> None:
    compiled = compile_model(path, directory)
    for x in inputs:
        ours, _ = compiled.run([x])
        expected = onnxruntime_outputs(path.read_bytes(), [x])
        for got, want, step in zip(ours, expected, steps, strict=True):
            got = got.reshape(want.shape).astype(np.float64)
            difference = np.abs(got - want.astype(np.float64)) / step
            assert difference.max() <= STEPS + 1e-3, (path.name, difference.max())
        assert ours[0].argmax() == expected[0].argmax()


SQUEEZENET = [("qdq", False), ("qdq", True), ("qoperator", False)]


@pytest.mark.parametrize(
    ("form", "per_channel"), SQUEEZENET, ids=["qdq_per_tensor", "qdq_per_channel", "qoperator"]
)
def test_quantized_squeezenet_matches_onnxruntime(
    form: str, per_channel: bool, tmp_path: Path
) -> None:
    """The probabilities and the logits (the int8 or dequantised input of the final Softmax)
    within `STEPS` steps; every convolution, pool and concatenation integer."""
    if not zoo_path("squeezenet").exists():
        pytest.skip(f"{zoo_path('squeezenet')} is not in this onnx wheel")
    quantized, steps = quantized_squeezenet(tmp_path, form, per_channel)
    kernels = _kernels(quantized)
    assert kernels.count("qlinearconv") == 26
    assert kernels.count("qlinearconcat") == 8
    assert kernels.count("maxpool") == 3
    assert kernels.count("qlinearglobalaveragepool") == 1
    # by default the first QLinearConv and MaxPool run row by row, in int8 (issue 22)
    assert any(name.startswith("fused_qlinearconv") for name in _kernels(quantized, "rows"))
    # float only at the ends: the input's Quantize, the Softmax and its Q/DQ, the outputs' DQ
    assert kernels.count("dequantizelinear") <= 3
    assert kernels.count("quantizelinear") <= 2
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((1, 3, 224, 224)).astype(np.float32) for _ in range(2)]
    _compare(quantized, tmp_path, inputs, steps)


def _small_float_model() -> bytes:
    """Conv+Relu, a grouped Conv, Add, Relu, MaxPool, AveragePool, a 1x1 Conv, Concat,
    GlobalAveragePool, Flatten, Gemm and MatMul."""
    node = helper.make_node
    return graph_model(
        [
            node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
            node("Relu", ["c1"], ["a"]),
            node("Conv", ["a", "w2", "b2"], ["b"], pads=[1, 1, 1, 1], group=2),
            node("Add", ["a", "b"], ["s"]),
            node("Relu", ["s"], ["r"]),
            node("MaxPool", ["r"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
            node("AveragePool", ["m"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
            node("Conv", ["m", "w3", "b3"], ["f"]),
            node("Concat", ["p", "f"], ["g"], axis=1),
            node("GlobalAveragePool", ["g"], ["h"]),
            node("Flatten", ["h"], ["h2"]),
            node("Gemm", ["h2", "w4", "b4"], ["i"], transB=1),
            node("MatMul", ["i", "w5"], ["y"]),
        ],
        [("x", (1, 3, 16, 16))],
        [("y", (1, 6))],
        {
            "w1": weights(1, 8, 3, 3, 3) * 0.3,
            "b1": weights(2, 8) * 0.1,
            "w2": weights(3, 8, 4, 3, 3) * 0.2,
            "b2": weights(4, 8) * 0.1,
            "w3": weights(5, 4, 8, 1, 1) * 0.4,
            "b3": weights(6, 4) * 0.1,
            "w4": weights(7, 10, 12) * 0.3,
            "b4": weights(8, 10) * 0.1,
            "w5": weights(9, 10, 6) * 0.3,
        },
    )


@pytest.mark.parametrize(
    ("form", "per_channel"),
    [("qdq", False), ("qdq", True), ("qoperator", False), ("qoperator", True)],
    ids=["qdq_per_tensor", "qdq_per_channel", "qoperator_per_tensor", "qoperator_per_channel"],
)
def test_quantized_operators_match_onnxruntime(
    form: str, per_channel: bool, tmp_path: Path
) -> None:
    """Every operator the QDQ matcher and the QOperator handlers know, on one small model:
    the output within `STEPS` steps of onnxruntime's on four random inputs."""
    floating, quantized = tmp_path / "float.onnx", tmp_path / "quantized.onnx"
    floating.write_bytes(_small_float_model())
    written = quantize(floating, quantized, (1, 3, 16, 16), form, per_channel)
    kernels = _kernels(quantized)
    for kernel in ("qlinearconv", "qlinearadd", "maxpool", "qlinearconcat"):
        assert kernel in kernels, kernels
    for kernel in ("qlinearglobalaveragepool", "qgemm", "qlinearmatmul"):
        assert kernel in kernels, kernels
    assert not {"conv", "add", "gemm", "matmul", "concat"} & set(kernels)
    # QDQ: the AveragePool keeps its input's quantisation (int8 average); QOperator gives it
    # its own, and QLinearAveragePool of two quantisations is lowered as DQ, float, Q
    assert ("qlinearaveragepool" if form == "qdq" else "averagepool") in kernels
    rng = np.random.default_rng(3)
    inputs = [rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(4)]
    _compare(
        quantized, tmp_path, inputs, [quantization_scales(written)[written.graph.output[0].name]]
    )


def test_uint8_quantisation_is_refused(tmp_path: Path) -> None:
    """onnxruntime's default (uint8 activations) gets the one-line error."""
    import subprocess
    import sys

    from onnx import TensorProto

    graph = helper.make_graph(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q8"], name="q"),
            helper.make_node("DequantizeLinear", ["q8", "s", "z"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [
            numpy_helper.from_array(np.array(0.1, np.float32), "s"),
            numpy_helper.from_array(np.array(128, np.uint8), "z"),
        ],
    )
    path = tmp_path / "q.onnx"
    path.write_bytes(
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString()
    )
    ran = subprocess.run(
        [sys.executable, "-m", "usmp_dialect.tools.usmp_opt", str(path), "-t", "c"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1
    assert ran.stderr.strip() == (
        f"usmp-opt: error: {path}: unsupported: activation type uint8 (tensor 'q8' of nodes 0 "
        "'q', 1; quantise with activation_type=QInt8 and weight_type=QInt8)"
    )
