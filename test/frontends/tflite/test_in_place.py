"""In-place operators in the TFLite frontend (issue 22): elementwise operators (ADD, MUL,
requantising QUANTIZE, LOGISTIC, TANH) write over an input they read last, and a depthwise
convolution at the peak runs in place (TinyEngine's scheme: one plane of temporary, the output
over its input's first bytes, stride 1 or 2). Checked against TFLM (int8 byte for byte, float to
1e-5), once under ASan/UBSan, on the imported IR (which calls share a buffer) and on the planned
workspace (the peak drops; `in_place="none"` gives the program without them)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import tflite

import usmp_dialect
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import usmp_opt

from .tflm_oracle import assert_matches

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
needs_tflm = pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed")

SIZE, CHANNELS, EXPANDED = 8, 4, 16


def _quant(dtype: type, scale: float, zero_point: int) -> dict[str, object]:
    return {} if dtype is np.float32 else {"scales": [scale], "zero_points": [zero_point]}


def _filters(
    rng: np.random.Generator, dtype: type, shape: tuple[int, ...], axis: int, input_scale: float
) -> tuple[dict[str, object], dict[str, object]]:
    """(filter, bias) tensor fields of a convolution with `shape` weights."""
    channels = shape[axis]
    if dtype is np.float32:
        weights = (rng.standard_normal(shape) * 0.4).astype(np.float32)
        bias = rng.standard_normal(channels).astype(np.float32)
        return {"data": weights}, {"data": bias}
    scales = list(rng.uniform(0.004, 0.02, channels))
    weights = rng.integers(-127, 128, size=shape, dtype=np.int8)
    bias = rng.integers(-2000, 2000, size=channels, dtype=np.int32)
    return (
        {"data": weights, "scales": scales, "zero_points": [0] * channels, "axis": axis},
        {"data": bias, "scales": [input_scale * s for s in scales]},
    )


def block_model(float32: bool, stride: int, seed: int = 0) -> bytes:
    """An inverted residual block, then an elementwise chain:
    x -> 1x1 CONV e (16 ch) -> 3x3 DEPTHWISE d (stride) -> 1x1 CONV p (4 ch)
    -> [stride 1: ADD(p, x)] a -> [int8: QUANTIZE q (another scale)] -> LOGISTIC l
    -> MUL(l, q) m -> TANH y (the output). The peak is the depthwise convolution's (e and d)."""
    rng = np.random.default_rng(seed)
    dtype: type = np.float32 if float32 else np.int8
    out = SIZE // stride
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []

    def tensor(name: str, shape: tuple[int, ...], **fields: object) -> int:
        tensors.append(TensorSpec(name, fields.pop("dtype", dtype), shape, **fields))  # type: ignore[arg-type]
        return len(tensors) - 1

    def conv(source: int, name: str, shape: tuple[int, ...], scale: float, zp: int) -> int:
        in_scale = tensors[source].scales[0] if tensors[source].scales else 1.0
        w, b = _filters(rng, dtype, (shape[3], 1, 1, tensors[source].shape[3]), 0, in_scale)
        wi = tensor(f"{name}_w", (shape[3], 1, 1, tensors[source].shape[3]), **w)
        bi = tensor(f"{name}_b", (shape[3],), dtype=np.float32 if float32 else np.int32, **b)
        result = tensor(name, shape, **_quant(dtype, scale, zp))
        fields = {"Padding": tflite.Padding.SAME, "StrideH": 1, "StrideW": 1}
        operators.append(
            OperatorSpec("CONV_2D", [source, wi, bi], [result], "Conv2DOptions", fields)
        )
        return result

    x = tensor("x", (1, SIZE, SIZE, CHANNELS), **_quant(dtype, 0.05, -7))
    e = conv(x, "e", (1, SIZE, SIZE, EXPANDED), 0.08, 3)
    w, b = _filters(rng, dtype, (1, 3, 3, EXPANDED), 3, 0.08)
    wi = tensor("d_w", (1, 3, 3, EXPANDED), **w)
    bi = tensor("d_b", (EXPANDED,), dtype=np.float32 if float32 else np.int32, **b)
    d = tensor("d", (1, out, out, EXPANDED), **_quant(dtype, 0.1, -2))
    fields = {
        "Padding": tflite.Padding.SAME,
        "StrideH": stride,
        "StrideW": stride,
        "DepthMultiplier": 1,
        "DilationHFactor": 1,
        "DilationWFactor": 1,
    }
    operators.append(
        OperatorSpec("DEPTHWISE_CONV_2D", [e, wi, bi], [d], "DepthwiseConv2DOptions", fields)
    )
    small = (1, out, out, CHANNELS)
    a = conv(d, "p", small, 0.06, 1)
    if stride == 1:
        s = tensor("a", small, **_quant(dtype, 0.09, 0))
        operators.append(OperatorSpec("ADD", [a, x], [s], "AddOptions", {}))
        a = s
    q = a
    if not float32:
        q = tensor("q", small, **_quant(dtype, 0.03, 5))
        operators.append(OperatorSpec("QUANTIZE", [a], [q]))
    logistic = tensor("l", small, **_quant(dtype, 1 / 256, -128))
    operators.append(OperatorSpec("LOGISTIC", [q], [logistic]))
    m = tensor("m", small, **_quant(dtype, 0.02, -1))
    operators.append(OperatorSpec("MUL", [logistic, q], [m], "MulOptions", {}))
    y = tensor("y", small, **_quant(dtype, 1 / 128, 0))
    operators.append(OperatorSpec("TANH", [m], [y]))
    return write_model(tensors, operators, [x], [y])


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
    return str(import_tflite(model, "block.tflite", in_place=in_place))


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
    before = usmp_dialect.compile(model, in_place="none").workspace_bytes
    after = usmp_dialect.compile(model).workspace_bytes
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
    assert_matches(block_model(float32, stride), tmp_path, trials=3, sanitize=sanitize)


def test_bad_option() -> None:
    with pytest.raises(usmp_dialect.CompileError, match="in_place must be one of"):
        usmp_dialect.compile(block_model(False, 1), in_place="some")


def test_usmp_opt_option(tmp_path: Path) -> None:
    model = tmp_path / "block.tflite"
    model.write_bytes(block_model(False, 1))
    command = [*usmp_opt(), str(model)]
    bad = subprocess.run([*command, "--in-place=some"], capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout == ""
    (line,) = bad.stderr.splitlines()
    assert line.startswith("usmp-opt: error: ") and "--in-place" in line
    none = subprocess.run([*command, "--in-place=none"], capture_output=True, text=True)
    assert none.returncode == 0, none.stderr
    calls = _roots_of_calls(none.stdout)
    assert calls["depthwise_conv_2d_1"][0] != calls["depthwise_conv_2d_1"][1]
