"""A PAD folded into the window of the operator that reads it (issue 22, `frontends/tflite/
folding.py`): against TFLM (int8 and int16 byte for byte, float to 1e-5, some under ASan and
UBSan); the padded tensor and the PAD's function are gone from the imported module exactly
when the fold is provably identical; fused row streaming runs through a folded PAD; the
workspace drops; `--fuse=none` keeps the PAD."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.tflite.folding import fold_padding
from usmp_dialect.frontends.tflite.reader import read_graph
from usmp_dialect.testing import tflm
from usmp_dialect.validation.host import compile_model, plan, usmp_opt, workspace_bytes

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]


def _inputs_module():
    spec = importlib.util.spec_from_file_location(
        "padded_chain", Path(__file__).parent / "Inputs" / "padded_chain.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


padded = _inputs_module()
VALID, SAME = padded.VALID, padded.SAME

# name: (padded_model arguments, whether the PAD folds, sanitize)
CASES: dict[str, tuple[dict[str, object], bool, bool]] = {
    "conv_symmetric": (
        {"consumer": "CONV_2D", "pads": ((1, 1), (1, 1)), "stride": 1},
        True,
        False,
    ),
    "depthwise_keras_stride2": ({"pads": ((0, 1), (0, 1)), "stride": 2}, True, True),
    "depthwise_torch_stride2": ({"pads": ((1, 1), (1, 1)), "size": (11, 9, 4)}, True, False),
    "conv_asymmetric_same": (
        {"consumer": "CONV_2D", "pads": ((2, 0), (1, 3)), "stride": 2, "padding": SAME},
        True,
        True,
    ),
    "padv2_zero_point": ({"opcode": "PADV2", "value": -7}, True, False),
    "padv2_other_value": ({"opcode": "PADV2", "value": 5}, False, True),
    "max_pool_lowest": (
        {"consumer": "MAX_POOL_2D", "zero_point": -128, "pads": ((1, 2), (0, 1))},
        True,
        False,
    ),
    "max_pool_zero_point": ({"consumer": "MAX_POOL_2D", "pads": ((1, 2), (0, 1))}, False, False),
    "float_conv": (
        {"consumer": "CONV_2D", "pads": ((1, 0), (2, 1)), "dtype": np.float32},
        True,
        False,
    ),
    "float_padv2_other_value": (
        {"opcode": "PADV2", "value": 0.5, "dtype": np.float32},
        False,
        False,
    ),
    "int16_conv": (
        {"consumer": "CONV_2D", "pads": ((0, 1), (1, 1)), "dtype": np.int16},
        True,
        False,
    ),
}


def _module_text(model: Path, *options: str) -> str:
    return subprocess.run(
        [*usmp_opt(), str(model), *options], check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_padded_model_matches_tflm(tmp_path: Path, name: str) -> None:
    arguments, folds, sanitize = CASES[name]
    data = padded.padded_model(**arguments)
    model = tmp_path / "padded.tflite"
    model.write_bytes(data)
    text = _module_text(model)
    # The padded tensor and the PAD's copy exist exactly when the fold does not apply.
    assert ('usmp.tensor = "padded"' in text) is not folds
    assert ("func.func @pad" in text) is not folds
    assert 'usmp.tensor = "padded"' in _module_text(model, "--fuse=none")
    compiled = compile_model(model, tmp_path, workspace_io=True, sanitize=sanitize)
    tflm.compare(compiled, data, range(3))


def test_fold_keeps_operator_indices() -> None:
    """The PAD is gone from the graph, its reader reads the PAD's input with the padding, and
    every operator keeps its model index (names and messages number them as the model does)."""
    graph = read_graph(padded.padded_model(pre=True, post=True), "padded.tflite")
    folded = fold_padding(graph)
    assert [op.opcode for op in graph.operators] == [
        "CONV_2D",
        "PAD",
        "DEPTHWISE_CONV_2D",
        "CONV_2D",
    ]
    assert [(op.opcode, op.index) for op in folded.operators] == [
        ("CONV_2D", 0),
        ("DEPTHWISE_CONV_2D", 2),
        ("CONV_2D", 3),
    ]
    depthwise = folded.operators[1]
    assert depthwise.inputs[0] == graph.operators[1].inputs[0]
    assert depthwise.padding == ((0, 1), (0, 1)) and depthwise.folded == (1,)


def _workspace(model: Path, directory: Path, fuse: str) -> int:
    return workspace_bytes(plan(model, directory / fuse, True, [f"--fuse={fuse}"]))


def test_streaming_runs_through_a_folded_pad(tmp_path: Path) -> None:
    """CONV 1x1 -> PAD -> stride-2 DEPTHWISE: one fused group once the PAD folds (the PAD, an
    opaque copy, cut the chain), bit-exact with TFLM, and a smaller workspace than unfused."""
    data = padded.padded_model(pre=True, post=True, size=(24, 10, 4))
    model = tmp_path / "chain.tflite"
    model.write_bytes(data)
    text = _module_text(model)
    assert "@fused_conv_2d_0__depthwise_conv_2d_2(" in text
    assert 'operators = ["conv_2d_0", "depthwise_conv_2d_2"' in text
    assert _workspace(model, tmp_path, "rows") < _workspace(model, tmp_path, "none")
    compiled = compile_model(model, tmp_path, workspace_io=True, sanitize=True)
    tflm.compare(compiled, data, range(3))


@pytest.mark.parametrize(("workspace_io", "sanitize"), [(True, True), (False, False)])
def test_a_head_transpose_streams_with_the_stem(
    tmp_path: Path, workspace_io: bool, sanitize: bool
) -> None:
    """A PyTorch-style MobileNetV2 starts with a TRANSPOSE of its NCHW input: the stem group
    reads the input's rows along its height axis and transposes them one row at a time, so
    the transposed copy of the whole input is never live; bit-exact with TFLM."""
    from usmp_dialect.models import build

    data = build(
        "mobilenetv2", resolution=48, width_multiplier=0.1, classes=10, export="pytorch"
    ).tflite
    model = tmp_path / "mobilenetv2_pytorch.tflite"
    model.write_bytes(data)
    fused = plan(model, tmp_path / "rows", workspace_io)
    unfused = plan(model, tmp_path / "none", workspace_io, ["--fuse=none"])
    groups = [op["name"] for op in fused["operators"] if op.get("fused")]
    assert groups[0].startswith("fused_transpose_0__")
    # The stem reads the 3 x 48 x 48 input whole; its transposed copy is gone.
    assert workspace_bytes(fused) < workspace_bytes(unfused)
    if workspace_io:
        assert fused["peak"]["live_bytes"] < 2 * 3 * 48 * 48
    compiled = compile_model(model, tmp_path / "c", workspace_io=workspace_io, sanitize=sanitize)
    tflm.compare(compiled, data, range(3))
