"""int8 QDQ models as onnxruntime's `quantize_static` writes them (opset 13, int8 activations
and weights, per-tensor and per-channel): a squeezenet with seeded random weights, calibrated
on random inputs, compiled to C and compared with onnxruntime running the same QDQ model:
within two steps of the output's quantisation. (The operators between a DequantizeLinear
and a QuantizeLinear compute in float; see docs of `frontends/onnx/ops/quantize.py`.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx import numpy_helper, version_converter  # noqa: E402
from onnxruntime.quantization import (  # noqa: E402
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_static,
)

from usmp_dialect.testing.model_runner import compile_model  # noqa: E402
from usmp_dialect.testing.onnx_models import (  # noqa: E402
    onnxruntime_outputs,
    with_random_weights,
    zoo_path,
)


class RandomImages(CalibrationDataReader):
    def __init__(self, name: str, shape: tuple[int, ...], count: int = 4) -> None:
        rng = np.random.default_rng(5)
        self.batches = iter(
            [{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(count)]
        )

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.batches, None)


def _output_step(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear before the graph's output."""
    constants = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    output = model.graph.output[0].name
    producers = {name: node for node in model.graph.node for name in node.output}
    node = producers[output]
    while node.op_type != "DequantizeLinear":
        node = producers[node.input[0]]
    return float(constants[node.input[1]].reshape(()))


@pytest.mark.parametrize("per_channel", [False, True], ids=["per_tensor", "per_channel"])
def test_quantized_squeezenet_matches_onnxruntime(per_channel: bool, tmp_path: Path) -> None:
    path = zoo_path("squeezenet")
    if not path.exists():
        pytest.skip(f"{path} is not in this onnx wheel")
    model = version_converter.convert_version(with_random_weights(onnx.load(path), 0), 13)
    floating, quantized = tmp_path / "float.onnx", tmp_path / "qdq.onnx"
    onnx.save(model, floating)
    quantize_static(
        str(floating),
        str(quantized),
        RandomImages("data_0", (1, 3, 224, 224)),
        quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        per_channel=per_channel,
    )
    qdq = onnx.load(quantized)
    assert sum(node.op_type == "QuantizeLinear" for node in qdq.graph.node) > 20
    compiled = compile_model(quantized, tmp_path)
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    (ours,), _ = compiled.run([x])
    (expected,) = onnxruntime_outputs(quantized.read_bytes(), [x])
    step = _output_step(qdq)
    np.testing.assert_allclose(ours.reshape(expected.shape), expected, rtol=0, atol=2 * step)
    assert ours.argmax() == expected.argmax()


def test_uint8_quantisation_is_refused(tmp_path: Path) -> None:
    """onnxruntime's default (uint8 activations) gets the one-line error."""
    import subprocess
    import sys

    from onnx import TensorProto, helper

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
        f"usmp-opt: error: {path}: QuantizeLinear node 'q' (node 0): quantisation to uint8 is "
        "not supported (only int8: quantise with activation_type=QInt8 and weight_type=QInt8)"
    )
