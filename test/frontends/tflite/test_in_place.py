"""In-place operators in the TFLite frontend (issue 22): elementwise operators (ADD, MUL,
requantising QUANTIZE, LOGISTIC, TANH) write over an input they read last, and a depthwise
convolution at the peak runs in place (TinyEngine's scheme: one plane of temporary, the output
over its input's first bytes, stride 1 or 2). Checked against TFLM (int8 byte for byte, float to
1e-5), once under ASan/UBSan, on the imported IR (which calls share a buffer) and on the planned
workspace (the peak drops; `in_place="none"` gives the program without them). Fused row
streaming, on by default, would stream this block instead: the tests import with `fuse="none"`
to see in-place operators alone."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import usmp_dialect
from usmp_dialect.frontends.options import ImportOptions
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.in_place_models import CHANNELS, EXPANDED, SIZE, block_model
from usmp_dialect.validation.host import usmp_opt

from .tflm_oracle import assert_matches

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
needs_tflm = pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed")


PLAIN_ROWS = ("--fuse=none",)  # one function per operator: in place, not streamed


def _roots_of_calls(text: str) -> dict[str, list[str]]:
    """Each operator function `@main` calls, with the buffer (`memref.alloc` or argument)
    behind each of its arguments, through reinterpret casts and views."""
    parent = dict(re.findall(r"%(\w+) = memref\.(?:view|reinterpret_cast) %(\w+)", text))

    def root(value: str) -> str:
        while value in parent:
            value = parent[value]
        return value

    return {
        name: [root(value) for value in re.findall(r"%(\w+)", arguments)]
        for name, arguments in re.findall(r"func\.call @(\w+)\((.*?)\)", text)
    }


def _imported(model: bytes, in_place: str = "all") -> str:
    return str(import_tflite(model, "block.tflite", ImportOptions(fuse="none", in_place=in_place)))


def test_int8_calls_share_buffers() -> None:
    calls = _roots_of_calls(_imported(block_model(False, 1)))
    e = calls["conv_2d_0"][1]
    assert calls["depthwise_conv_2d_1"] == [e, e]  # in place, with its temporary plane
    p = calls["conv_2d_2"][1]
    assert calls["add_3"] == [p, "x", p]  # over p, not over the model input x
    assert calls["quantize_4"] == [p, p]  # a requantising copy
    assert calls["logistic_5"][0] == p and calls["logistic_5"][1] != p  # p is read later
    assert calls["mul_6"] == [calls["logistic_5"][1], p, calls["logistic_5"][1]]
    assert calls["tanh_7"][1] == "y"  # the model output: never in place


def test_in_place_none_and_elementwise() -> None:
    none = _roots_of_calls(_imported(block_model(False, 1), "none"))
    assert len({root for roots in none.values() for root in roots}) == 9  # x, y, 7 buffers
    elementwise = _roots_of_calls(_imported(block_model(False, 1), "elementwise"))
    assert elementwise["depthwise_conv_2d_1"][0] != elementwise["depthwise_conv_2d_1"][1]
    assert elementwise["quantize_4"][0] == elementwise["quantize_4"][1]


def test_depthwise_in_place_kernel_has_one_plane_of_scratch() -> None:
    text = _imported(block_model(False, 2))
    function = text[text.index("func.func @depthwise_conv_2d_1") :]
    function = function[: function.index("func.return")]
    assert re.search(r"memref\.alloc\(\) : memref<4x4xi8>", function)
    calls = _roots_of_calls(text)
    e = calls["conv_2d_0"][1]
    assert calls["depthwise_conv_2d_1"] == [e, e]  # the output: the input's first bytes


@pytest.mark.parametrize("stride", [1, 2])
def test_peak_drops(stride: int) -> None:
    model = block_model(False, stride)
    before = usmp_dialect.compile(model, fuse="none", in_place="none").workspace_bytes
    after = usmp_dialect.compile(model, fuse="none").workspace_bytes
    e_bytes = SIZE * SIZE * EXPANDED
    d_bytes = e_bytes // stride**2
    assert before == e_bytes + d_bytes  # e and d live while the depthwise convolution runs
    # in place: e's buffer (then holding d) with the plane, then with the projection p
    assert after == e_bytes + (SIZE // stride) ** 2 * CHANNELS


@pytest.mark.parametrize(
    ("float32", "stride", "sanitize"),
    [(False, 1, True), (False, 2, False), (True, 1, False), (True, 2, False)],
    ids=["int8-asan", "int8-stride2", "float", "float-stride2"],
)
@needs_gcc
@needs_tflm
def test_matches_tflm(tmp_path: Path, float32: bool, stride: int, sanitize: bool) -> None:
    assert_matches(
        block_model(float32, stride), tmp_path, trials=3, sanitize=sanitize, options=PLAIN_ROWS
    )


def test_bad_option() -> None:
    with pytest.raises(usmp_dialect.CompileError, match="in_place must be one of"):
        usmp_dialect.compile(block_model(False, 1), in_place="some")


def test_usmp_opt_option(tmp_path: Path) -> None:
    model = tmp_path / "block.tflite"
    model.write_bytes(block_model(False, 1))
    command = [*usmp_opt(), str(model), "--fuse=none"]
    bad = subprocess.run([*command, "--in-place=some"], capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout == ""
    (line,) = bad.stderr.splitlines()
    assert line.startswith("usmp-opt: error: ") and "--in-place" in line
    none = subprocess.run([*command, "--in-place=none"], capture_output=True, text=True)
    assert none.returncode == 0, none.stderr
    calls = _roots_of_calls(none.stdout)
    assert calls["depthwise_conv_2d_1"][0] != calls["depthwise_conv_2d_1"][1]
