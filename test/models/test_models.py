"""The synthetic model generator: the TFLite files it writes, its options and its command line
(compiling them and comparing with TensorFlow Lite Micro: test_models_tflm.py)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.tflite.reader import read_graph
from usmp_dialect.models import MODELS, build
from usmp_dialect.models.__main__ import main as models_main

SMALL = {"resolution": 32, "width_multiplier": 0.35, "classes": 10}


def test_mobilenetv2_architecture() -> None:
    """MobileNetV2 1.0 at 224: Keras' layer counts and shapes, weights quantised as TFLite's
    converter quantises them."""
    graph = read_graph(build("mobilenetv2").tflite, "mobilenetv2.tflite")
    opcodes = Counter(op.opcode for op in graph.operators)
    assert opcodes == {
        "CONV_2D": 35,  # the stem, 16 expansions, 17 projections, the last 1x1
        "DEPTHWISE_CONV_2D": 17,
        "ADD": 10,
        "AVERAGE_POOL_2D": 1,
        "RESHAPE": 1,
        "FULLY_CONNECTED": 1,
        "SOFTMAX": 1,
    }
    (source,) = [graph.tensors[i] for i in graph.inputs]
    (output,) = [graph.tensors[i] for i in graph.outputs]
    assert (source.shape, source.dtype) == ((1, 224, 224, 3), np.int8)
    assert (output.name, output.shape, output.dtype) == ("output", (1, 1000), np.int8)
    assert output.quantization is not None
    assert (output.quantization.scale, output.quantization.zero_point) == (1 / 256, -128)
    weights = sum(t.data.size for t in graph.tensors if t.data is not None and t.dtype == np.int8)
    assert 3_400_000 < weights < 3_600_000  # Keras' MobileNetV2: 3.5 M parameters
    for op in graph.operators:
        if op.opcode not in ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"):
            continue
        filters, bias = graph.tensors[op.inputs[1]], graph.tensors[op.inputs[2]]
        assert filters.dtype == np.int8 and bias.dtype == np.int32
        assert filters.quantization is not None and bias.quantization is not None
        assert not filters.quantization.zero_points.any()
        assert np.abs(filters.data).max() == 127  # symmetric, the range used per channel
        channels = filters.shape[3] if op.opcode == "DEPTHWISE_CONV_2D" else filters.shape[0]
        per_channel = op.opcode != "FULLY_CONNECTED"
        assert filters.quantization.scales.size == (channels if per_channel else 1)
        if per_channel:
            axis = 3 if op.opcode == "DEPTHWISE_CONV_2D" else 0
            assert filters.quantization.axis == axis
            assert (np.abs(filters.data).max(axis=tuple({0, 1, 2, 3} - {axis})) == 127).all()
        input_scale = graph.tensors[op.inputs[0]].quantization.scale  # type: ignore[union-attr]
        np.testing.assert_allclose(
            bias.quantization.scales, input_scale * filters.quantization.scales, rtol=1e-6
        )


def test_options_shape_the_network() -> None:
    small = build("mobilenetv2", **SMALL)
    assert small.input_shape == (1, 32, 32, 3) and small.output_shape == (1, 10)
    graph = read_graph(small.tflite, "small.tflite")
    first = graph.tensors[graph.operators[0].outputs[0]]
    assert first.shape == (1, 16, 16, 16)  # 32 * 0.35 channels, rounded to 8s (at least 16)
    assert len(small.tflite) < len(build("mobilenetv2", resolution=32, classes=10).tflite)


def test_export_styles() -> None:
    """`keras`: a PAD (Keras' correct_pad) before each stride-2 depthwise layer, which is VALID;
    `pytorch`: an NCHW input transposed at the head and a PAD of 1 before each stride-2 3x3
    layer; `tflite` (the default): neither."""

    def opcodes(export: str) -> list[str]:
        model = build("mobilenetv2", export=export, **SMALL)
        return [op.opcode for op in read_graph(model.tflite, "m.tflite").operators]

    plain, keras, pytorch = opcodes("tflite"), opcodes("keras"), opcodes("pytorch")
    assert "PAD" not in plain and "TRANSPOSE" not in plain
    assert keras.count("PAD") == 4  # the four stride-2 depthwise layers
    assert all(keras[k + 1] == "DEPTHWISE_CONV_2D" for k, op in enumerate(keras) if op == "PAD")
    assert pytorch[0] == "TRANSPOSE" and pytorch.count("PAD") == 5  # and the first convolution
    model = build("mobilenetv2", export="pytorch", **SMALL)
    assert model.input_shape == (1, 3, 32, 32)
    graph = read_graph(model.tflite, "m.tflite")
    pad = next(op for op in graph.operators if op.opcode == "PAD")
    assert graph.tensors[pad.inputs[1]].data.tolist() == [[0, 0], [1, 1], [1, 1], [0, 0]]
    keras_graph = read_graph(build("mobilenetv2", export="keras", **SMALL).tflite, "k.tflite")
    pad = next(op for op in keras_graph.operators if op.opcode == "PAD")
    assert keras_graph.tensors[pad.inputs[1]].data.tolist() == [[0, 0], [0, 1], [0, 1], [0, 0]]


def test_deterministic_by_seed() -> None:
    assert (
        build("mobilenetv2", seed=4, **SMALL).tflite == build("mobilenetv2", seed=4, **SMALL).tflite
    )
    assert (
        build("mobilenetv2", seed=4, **SMALL).tflite != build("mobilenetv2", seed=5, **SMALL).tflite
    )


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("lenet", {}, "unknown model 'lenet' (known: mobilenetv2)"),
        ("mobilenetv2", {"depth": 3}, "model 'mobilenetv2' has no option 'depth'"),
        ("mobilenetv2", {"resolution": 16}, "resolution must be at least 32"),
        ("mobilenetv2", {"width_multiplier": 0}, "width_multiplier must be positive"),
        ("mobilenetv2", {"classes": 0}, "classes must be at least 1"),
        ("mobilenetv2", {"export": "onnx"}, "export must be one of tflite, keras, pytorch"),
    ],
)
def test_bad_requests(name: str, options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build(name, **options)


def test_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mobilenetv2.tflite"
    arguments = ["--resolution", "32", "--width-multiplier", "0.35", "--classes", "10"]
    assert models_main(["mobilenetv2", "-o", str(target), "--seed", "2", *arguments]) == 0
    assert target.read_bytes() == build("mobilenetv2", seed=2, **SMALL).tflite
    assert models_main(["--list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in listed] == sorted(MODELS)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["lenet"], "error: unknown model 'lenet' (known: mobilenetv2)"),
        (["mobilenetv2", "--resolution", "8"], "error: resolution must be at least 32 (got 8)"),
        (["mobilenetv2", "--resolution", "big"], "error: argument --resolution: invalid int"),
        ([], "error: a model name is required (or --list)"),
    ],
)
def test_command_line_errors(
    arguments: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One line, exit code 1, nothing written."""
    target = tmp_path / "model.tflite"
    try:
        status = models_main([*arguments, "-o", str(target)])
    except SystemExit as exit_:
        status = exit_.code  # type: ignore[assignment]
    assert status == 1
    error = capsys.readouterr().err
    assert error.startswith(message) and error.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_command_line_unwritable_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "missing" / "model.tflite"
    assert models_main(["mobilenetv2", "--resolution", "32", "-o", str(target)]) == 1
    assert capsys.readouterr().err == (
        f"error: cannot write '{target}': No such file or directory\n"
    )
