"""Fused row streaming through residual diamonds and elementwise operators (issue 22) against
TFLM, byte for byte: generated blocks (ResNet's two-convolution block, its stride-2 block with
a 1x1 shortcut, MobileNetV2's inverted residual, a MUL of two branches, RELU, QUANTIZE,
LOGISTIC and RELU6 between convolutions; also under ASan/UBSan) and ResNet-8 (int8, and float
within 1e-5), each fused into one group containing the ADD, MUL or activations."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from usmp_dialect.testing import tflm
from usmp_dialect.validation.host import compile_model, plan, usmp_opt, workspace_bytes

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]

ROOT = Path(__file__).resolve().parents[3]
MODELS = ROOT / "examples" / "mlperf_tiny"


def _blocks_module():
    spec = importlib.util.spec_from_file_location(
        "residual_blocks", Path(__file__).parent / "Inputs" / "residual_blocks.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fused_operators(model: Path) -> list[list[str]]:
    """The operators of every fused group of the imported `model` (`usmp.fused`)."""
    text = subprocess.run(
        [*usmp_opt(), str(model)], check=True, capture_output=True, text=True
    ).stdout
    return [
        re.findall(r'"([a-z0-9_]+)"', found)
        for found in re.findall(r"usmp\.fused = \{operators = \[([^\]]*)\]", text)
    ]


def _workspace(model: Path, directory: Path, fuse: str) -> int:
    return workspace_bytes(plan(model, directory / fuse, True, [f"--fuse={fuse}"]))


@pytest.mark.parametrize(
    ("block", "seed", "height", "global_pool", "sanitize", "combined"),
    [
        ("basic", 0, 24, True, True, "add_3"),
        ("basic", 1, 9, False, False, "add_3"),
        ("stride2", 2, 24, True, False, "add_4"),
        ("stride2", 3, 13, False, True, "add_4"),
        ("inverted", 4, 24, True, True, "add_4"),
        ("inverted", 5, 11, False, False, "add_4"),
        ("mul", 6, 24, True, True, "mul_3"),
        ("mul", 7, 10, False, False, "mul_3"),
        ("activations", 8, 16, True, True, "logistic_5"),
        ("activations", 9, 20, True, False, "relu6_7"),
    ],
)
def test_fused_residual_block_matches_tflm(
    tmp_path: Path,
    block: str,
    seed: int,
    height: int,
    global_pool: bool,
    sanitize: bool,
    combined: str,
) -> None:
    data = _blocks_module().residual_model(block, seed, height, global_pool=global_pool)
    model = tmp_path / f"{block}.tflite"
    model.write_bytes(data)
    groups = _fused_operators(model)
    assert any(combined in group and group[0] == "conv_2d_0" for group in groups), groups
    compiled = compile_model(model, tmp_path, workspace_io=True, sanitize=sanitize)
    tflm.compare(compiled, data, range(3))


def test_residual_block_streams_below_unfused(tmp_path: Path) -> None:
    model = tmp_path / "basic.tflite"
    model.write_bytes(_blocks_module().residual_model("basic", 0, 24))
    # Unfused, the stem's output, the second convolution's and the ADD's are live together;
    # fused, only the input and a few rows of each.
    assert _workspace(model, tmp_path, "rows") < _workspace(model, tmp_path, "none") // 2


@pytest.mark.parametrize(
    ("name", "sanitize", "fused"),
    [
        # int8: the whole network up to the global pool is one group.
        (
            "pretrainedResnet_quant",
            True,
            {"conv_2d_0", "add_3", "add_7", "add_11", "average_pool_2d_12"},
        ),
        # float (no streamed global pool): the first two blocks, which hold the peak.
        ("pretrainedResnet", False, {"conv_2d_0", "add_3", "add_7"}),
    ],
)
def test_fused_resnet8_matches_tflm(
    tmp_path: Path, name: str, sanitize: bool, fused: set[str]
) -> None:
    model = MODELS / f"{name}.tflite"
    groups = _fused_operators(model)
    assert any(fused <= set(group) for group in groups), groups
    compiled = compile_model(model, tmp_path, workspace_io=True, sanitize=sanitize)
    tflm.compare(compiled, model.read_bytes(), range(2))


def test_resnet8_workspace_is_below_six_tenths_of_tflm(tmp_path: Path) -> None:
    model = MODELS / "pretrainedResnet_quant.tflite"
    unfused = _workspace(model, tmp_path, "none")
    assert unfused == 49152  # TFLM's arena head
    assert _workspace(model, tmp_path, "rows") <= 0.60 * unfused
