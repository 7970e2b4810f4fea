"""TFLite's 16x8 quantisation (int16 activations with zero point 0, int8 weights, int64 or
int32 biases) on models written here, against TensorFlow Lite Micro bit for bit on random
inputs over the whole int16 range (so saturating sums and clamps are exercised)."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import memref

from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.kernels.int16_activation import SIGMOID_TABLE_UINT16
from usmp_dialect.testing import tflm
from usmp_dialect.testing.harness import STRICT_FLAGS
from usmp_dialect.testing.import_errors import assert_refused_in_one_line
from usmp_dialect.testing.int16_models import (
    NONE,
    RELU,
    RELU6,
    SAME,
    VALID,
    activation,
    chain,
    convolution,
    fully_connected,
    int16,
    softmax,
)
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec
from usmp_dialect.validation.host import PREFIX, compile_model

from . import test_data_movement as data_movement
from .tflm_oracle import ModelSpec, assert_all_match, merge

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]


def test_fully_connected_16x8_matches_tflm(tmp_path: Path) -> None:
    models = {
        "int64": fully_connected(0),
        "relu6": fully_connected(1, activation=RELU6),
        "channels": fully_connected(2, per_channel=True, activation=RELU),
        "nobias": fully_connected(3, bias_dtype=None, batches=1, depth=300),
        "int32": fully_connected(4, bias_dtype=np.int32),
    }
    assert_all_match(models, tmp_path)


def test_convolutions_16x8_match_tflm(tmp_path: Path) -> None:
    models = {
        "same": convolution(0),
        "strided": convolution(1, stride=2, dilation=2, activation=RELU),
        "valid": convolution(2, padding=VALID, kernel=(2, 3), per_channel=False, out_channels=3),
        "int32": convolution(3, bias_dtype=np.int32, activation=RELU6),
        "nobias": convolution(4, bias_dtype=None, stride=2),
        "dw": convolution(5, depthwise=True),
        "dw_mult": convolution(6, depthwise=True, multiplier=2, dilation=2, activation=RELU),
        "dw_valid": convolution(7, depthwise=True, padding=VALID, stride=2, per_channel=False),
    }
    assert_all_match(models, tmp_path, sanitize=True)


def test_data_movement_on_int16_matches_tflm(tmp_path: Path) -> None:
    i16 = np.int16
    models = {
        "concat_channels": data_movement.concat_model(i16, [(1, 3, 4, 2), (1, 3, 4, 5)], 3),
        "concat_batch": data_movement.concat_model(i16, [(3, 4), (1, 4), (2, 4)], 0),
        "pad": data_movement.pad_model(i16, (1, 4, 5, 3), [(0, 0), (1, 2), (2, 1), (0, 0)]),
        "pad_2d": data_movement.pad_model(i16, (3, 4), [(2, 1), (0, 3)]),
        "strided": data_movement.slice_model(
            i16, (1, 5, 4, 3), [0, -1, 3, 0], [1, 0, 0, 2], [1, -1, -2, 1], (1, 4, 2, 2)
        ),
        "slice": data_movement.slice_op_model(
            i16, (2, 5, 4, 3), [1, 2, 0, 1], [1, -1, 3, 2], (1, 3, 3, 2)
        ),
        "transpose": data_movement.transpose_model(i16, (2, 3, 4), [2, 0, 1]),
        "split": data_movement.split_model(i16, (1, 2, 3, 6), 3, [2, 2, 2], False),
        "pack": data_movement.pack_model(i16, (3, 4), 2, 0),
        "unpack": data_movement.unpack_model(i16, (3, 2, 4), 0),
        "reshape": reshape(),
    }
    assert_all_match(models, tmp_path)


def reshape() -> ModelSpec:
    """RESHAPE then EXPAND_DIMS and SQUEEZE: views, the last one copied into the output."""
    tensors = [
        int16("x", (2, 12)),
        TensorSpec("shape", np.int32, (3,), data=np.array([2, 3, 4], dtype=np.int32)),
        int16("r", (2, 3, 4)),
        TensorSpec("axis", np.int32, (1,), data=np.array([0], dtype=np.int32)),
        int16("e", (1, 2, 3, 4)),
        int16("y", (2, 3, 4)),
    ]
    operators = [
        OperatorSpec("RESHAPE", [0, 1], [2]),
        OperatorSpec("EXPAND_DIMS", [2, 3], [4]),
        OperatorSpec("SQUEEZE", [4], [5], "SqueezeOptions", {}),
    ]
    return ModelSpec(tensors, operators, [0], [5])


def pool(kind: str, stride: int, padding: int, activation: int = NONE) -> ModelSpec:
    size, filter_size = (1, 9, 8, 3), (3, 3)
    out = [
        (n + stride - 1) // stride if padding == SAME else (n + stride - 3) // stride
        for n in size[1:3]
    ]
    tensors = [int16("x", size), int16("y", (1, *out, 3))]
    fields = {
        "Padding": padding,
        "StrideH": stride,
        "StrideW": stride,
        "FilterHeight": filter_size[0],
        "FilterWidth": filter_size[1],
        "FusedActivationFunction": activation,
    }
    return ModelSpec(tensors, [OperatorSpec(kind, [0], [1], "Pool2DOptions", fields)], [0], [1])


def test_pooling_on_int16_matches_tflm(tmp_path: Path) -> None:
    models = {
        "average": pool("AVERAGE_POOL_2D", 2, SAME),
        "average_relu": pool("AVERAGE_POOL_2D", 1, VALID, RELU6),
        "max": pool("MAX_POOL_2D", 2, SAME),
        "max_relu": pool("MAX_POOL_2D", 1, VALID, RELU),
    }
    assert_all_match(models, tmp_path)


def binary(
    opcode: str,
    scales: tuple[float, float, float],
    lhs: tuple[int, ...] = (2, 3, 4),
    rhs: tuple[int, ...] = (2, 3, 4),
    activation: int = NONE,
    constant: bool = False,
) -> ModelSpec:
    rng = np.random.default_rng(len(opcode) + len(rhs))
    output = tuple(max(a, b) for a, b in zip(lhs, rhs, strict=True))
    second = int16("b", rhs, scales[1])
    if constant:
        second.data = rng.integers(-32768, 32768, size=rhs, dtype=np.int16)
    tensors = [int16("a", lhs, scales[0]), second, int16("y", output, scales[2])]
    options = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}[opcode]
    fields = {"FusedActivationFunction": activation}
    op = OperatorSpec(opcode, [0, 1], [2], options, fields)
    return ModelSpec(tensors, [op], [0] if constant else [0, 1], [2])


def test_add_sub_mul_on_int16_match_tflm(tmp_path: Path) -> None:
    models = {
        "add": binary("ADD", (1 / 4096, 1 / 2048, 1 / 1024)),
        "add_broadcast": binary("ADD", (0.001, 0.0003, 0.002), rhs=(1, 3, 1), activation=RELU),
        "add_constant": binary("ADD", (1 / 4096, 1 / 4096, 1 / 4096), constant=True),
        "sub": binary("SUB", (1 / 4096, 1 / 8192, 1 / 4096)),
        "sub_broadcast": binary("SUB", (0.002, 0.0005, 0.001), lhs=(2, 1, 4), activation=RELU6),
        "mul": binary("MUL", (1 / 4096, 1 / 4096, 1 / 1024)),
        "mul_broadcast": binary("MUL", (0.01, 0.002, 0.3), rhs=(1, 1, 4), activation=RELU),
    }
    assert_all_match(models, tmp_path)


def convert(
    source: type, target: type, source_scale: float = 1.0, target_scale: float = 1.0
) -> ModelSpec:
    """QUANTIZE from `source` to `target` (or DEQUANTIZE to float32)."""
    shape = (3, 50)

    def tensor(name: str, dtype: type, scale: float, zero_point: int) -> TensorSpec:
        if dtype is np.float32:
            return TensorSpec(name, np.float32, shape)
        return TensorSpec(name, dtype, shape, scales=[scale], zero_points=[zero_point])

    zero = {np.int8: -5, np.int16: 0, np.float32: 0}
    tensors = [
        tensor("x", source, source_scale, zero[source]),
        tensor("y", target, target_scale, zero[target]),
    ]
    opcode = "DEQUANTIZE" if target is np.float32 else "QUANTIZE"
    return ModelSpec(tensors, [OperatorSpec(opcode, [0], [1])], [0], [1])


def test_quantize_and_dequantize_int16_match_tflm(tmp_path: Path) -> None:
    models = {
        # float inputs are standard normal: values beyond 2 saturate at this scale
        "from_float": convert(np.float32, np.int16, target_scale=1 / 16384),
        "int8_to_int16": convert(np.int8, np.int16, 0.05, 1 / 4096),
        "int16_to_int8": convert(np.int16, np.int8, 1 / 4096, 0.01),
        "int16_to_int16": convert(np.int16, np.int16, 1 / 4096, 1 / 1000),
        "dequantize": convert(np.int16, np.float32, 1 / 4096),
    }
    assert_all_match(models, tmp_path)


def test_a_16x8_network_matches_tflm_under_the_sanitizers_within_its_arena(
    tmp_path: Path,
) -> None:
    """The chain end to end through the C backend, built with ASan and UBSan, inputs and
    outputs in the workspace: bit for bit with TFLM, a workspace no larger than TFLM's arena
    head, and the header describing the int16 output (type, scale, zero point)."""
    model = tmp_path / "chain.tflite"
    data = chain().model()
    model.write_bytes(data)
    report = tmp_path / "plan.json"
    compiled = compile_model(model, tmp_path, workspace_io=True, sanitize=True, report=report)
    tflm.compare(compiled, data, range(4))
    pools = json.loads(report.read_text())["pools"]
    (workspace,) = [pool for pool in pools if pool["kind"] == "workspace"]
    assert workspace["size_bytes"] <= tflm.arena(model).head_bytes
    header = (tmp_path / f"{PREFIX}.h").read_text()
    stem = f"{PREFIX.upper()}_OUTPUT_LOGITS"
    assert f"#define {stem}_DTYPE int16_t" in header
    assert f"#define {stem}_SCALE 0.01f" in header
    assert f"#define {stem}_ZERO_POINT 0" in header
    source = tmp_path / f"{PREFIX}.c"  # the embedded warning set, beyond the harness's
    strict = [*STRICT_FLAGS, "-c", str(source), "-o", str(tmp_path / "strict.o")]
    subprocess.run(["gcc", *strict], check=True, capture_output=True)


def test_softmax_int16_matches_tflm(tmp_path: Path) -> None:
    """Input scales from a range of a few units (most differences inside the `exp` table's
    [-10, 0]) to one of hundreds (most beyond it), over long and short rows."""
    models = {
        "narrow": softmax((3, 40), 1 / 8192),
        "wide": softmax((2, 10), 0.01),
        "beta": softmax((1, 4, 25), 1 / 2048, beta=0.7),
        "single": softmax((5, 1), 1 / 4096),
    }
    assert_all_match(models, tmp_path)


def test_mean_and_sum_on_int16_match_tflm(tmp_path: Path) -> None:
    i16 = np.int16
    requantised = {"scales": [0.0007], "zero_points": [0]}
    models = {
        "spatial_keep": data_movement.mean_model(i16, (1, 5, 6, 4), [1, 2], True),
        "spatial_requantised": data_movement.mean_model(
            i16, (1, 7, 3, 5), [1, 2], True, requantised
        ),
        "last": data_movement.mean_model(i16, (2, 3, 10), [-1], False, requantised),
        "all": data_movement.mean_model(i16, (4, 6), [0, 1], True),
        "sum": data_movement.mean_model(i16, (2, 3, 5), [-1], False, {"scales": [0.004]}, "SUM"),
    }
    assert_all_match(models, tmp_path)


# Input scales of int16 LOGISTIC and TANH: TFLM's power-of-two case (2**-12; 2**-11 for tanh
# only), scales `CheckedLog2` takes for 2**-12 (within 1e-3 in the exponent) and one just
# beyond, other powers of two and general scales, down to a tiny one (shift 27) and up to
# near the largest TFLM's multiplier allows (32767 / 12288).
ACTIVATION_SCALES = {
    "pot12": 2.0**-12,
    "pot11": 2.0**-11,
    "pot15": 2.0**-15,
    "pot8": 2.0**-8,
    "near_pot": 2.0 ** (-12 + 0.0008),
    "beyond_pot": 2.0 ** (-12 + 0.0015),
    "third": 1 / 3000,
    "milli": 0.001,
    "wide": 0.0123,
    "tiny": 1e-8,
    "half": 0.5,
    "large": 2.6,
}


def test_logistic_and_tanh_on_int16_match_tflm_on_every_input(tmp_path: Path) -> None:
    """Every one of the 65536 int16 inputs, at each input scale, both operators, bit for bit
    (built with the sanitizers: the rescaling must not overflow int32)."""
    every = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)
    parts = {
        f"{opcode.lower()}_{name}": activation(opcode, scale, every.shape)
        for opcode in ("LOGISTIC", "TANH")
        for name, scale in ACTIVATION_SCALES.items()
    }
    model = merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path, sanitize=True)
    inputs = [every] * len(parts)
    ours, _ = compiled.run(inputs)
    theirs = tflm.run(model, inputs, len(parts))
    tflm.assert_matches(ours, theirs, [port.name for port in compiled.outputs])


# int16 LEAKY_RELU: (input scale, output scale, alpha); a negative alpha gives TFLite a
# negative multiplier, alpha > 1 and an output scale below the input's a multiplier above 1
LEAKY_RELUS = [
    (1 / 4096, 1 / 4096, 0.2),
    (0.001, 0.0007, 0.01),
    (0.003, 0.005, -0.7),
    (1 / 4096, 1 / 8192, 1.5),
    (0.02, 0.3, 0.1),
]


def test_leaky_relu_on_int16_matches_tflm_on_every_input(tmp_path: Path) -> None:
    """Every int16 input through int16 LEAKY_RELU at each quantisation and alpha, bit for bit,
    under ASan/UBSan (the outputs saturate where the multiplier exceeds 1)."""
    every = np.arange(-32768, 32768, dtype=np.int16).reshape(256, 256)
    parts = {
        f"leaky{k}": ModelSpec(
            [int16("x", every.shape, source), int16("y", every.shape, target)],
            [OperatorSpec("LEAKY_RELU", [0], [1], "LeakyReluOptions", {"Alpha": alpha})],
            [0],
            [1],
        )
        for k, (source, target, alpha) in enumerate(LEAKY_RELUS)
    }
    model = merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path, sanitize=True)
    inputs = [every] * len(parts)
    ours, _ = compiled.run(inputs)
    theirs = tflm.run(model, inputs, len(parts))
    tflm.assert_matches(ours, theirs, [port.name for port in compiled.outputs])


def test_int16_activations_share_one_sigmoid_table() -> None:
    """The LOGISTIC and TANH kernels of a model read one `sigmoid_table_uint16` global."""
    parts = {
        f"{op.lower()}{n}": activation(op, 0.001 * n, (4,))
        for op in ("LOGISTIC", "TANH")
        for n in (1, 2)
    }
    module = import_tflite(merge(parts), "activations.tflite")
    tables = [
        op
        for op in module.walk()
        if isinstance(op, memref.GlobalOp) and op.sym_name.data.startswith("sigmoid_table")
    ]
    assert len(tables) == 1
    assert bytes(tables[0].initial_value.data.data) == SIGMOID_TABLE_UINT16.tobytes()


def test_reduce_max_on_int16_is_refused_as_tflm_refuses_it(tmp_path: Path) -> None:
    """TFLM's REDUCE_MAX computes int8 and float32 only; a 16x8 model with one is refused in
    one line. Should TFLM start running it, this test fails: then import it."""
    spec = data_movement.mean_model(np.int16, (2, 5), [1], False, None, "REDUCE_MAX")
    path = tmp_path / "model.tflite"
    path.write_bytes(spec.model())
    assert_refused_in_one_line(
        path, "unsupported: operator REDUCE_MAX on int16 (tensors 'x', 'y' of operator 0)"
    )
    inputs = [np.arange(10, dtype=np.int16).reshape(2, 5)]
    with pytest.raises(RuntimeError):
        tflm.run(spec.model(), inputs, 1)


def _with_zero_point(spec: ModelSpec, position: int, zero_point: int) -> ModelSpec:
    spec.tensors[position] = replace(spec.tensors[position], zero_points=[zero_point])
    return spec


def _with_bias(spec: ModelSpec, dtype: type) -> ModelSpec:
    bias = spec.tensors[2]
    assert bias.data is not None
    spec.tensors[2] = replace(bias, dtype=dtype, data=bias.data.astype(dtype))
    return spec


REFUSED = {
    "zero point": (
        lambda: _with_zero_point(convolution(0), 0, 3),
        "CONV_2D (operator 0): the int16 tensor 'x' (index 0) has zero point 3; 16x8 "
        "quantisation needs zero point 0",
    ),
    "depthwise int32 bias": (
        lambda: _with_bias(convolution(0, depthwise=True), np.int32),
        "DEPTHWISE_CONV_2D (operator 0): a 16x8 depthwise convolution needs an int64 bias",
    ),
    "softmax scale": (
        lambda: ModelSpec(
            [int16("x", (1, 8)), int16("y", (1, 8), 1 / 256)],
            [OperatorSpec("SOFTMAX", [0], [1], "SoftmaxOptions", {"Beta": 1.0})],
            [0],
            [1],
        ),
        "int16 softmax needs the output scale 1/32768 and zero point 0",
    ),
    "logistic output scale": (
        lambda: ModelSpec(
            [int16("x", (1, 8)), int16("y", (1, 8), 1 / 256)],
            [OperatorSpec("LOGISTIC", [0], [1])],
            [0],
            [1],
        ),
        "LOGISTIC (operator 0): the int16 output must have scale 2**-15 (it has 0.00390625)",
    ),
    "tanh input scale": (
        lambda: activation("TANH", 3.0, (1, 8)),
        "TANH (operator 0): input scale 3 is outside the range of TFLite's int16 kernel",
    ),
    "tanh zero point": (
        lambda: _with_zero_point(activation("TANH", 2.0**-12, (1, 8)), 0, 5),
        "TANH (operator 0): the int16 tensor 'x' (index 0) has zero point 5",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_16x8_models_outside_tflms_arithmetic_are_refused_in_one_line(
    case: str, tmp_path: Path
) -> None:
    make, expected = REFUSED[case]
    path = tmp_path / "model.tflite"
    path.write_bytes(make().model())
    assert_refused_in_one_line(path, expected)


def test_usmp_validate_compares_int16_inputs_and_outputs_bit_for_bit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A 16x8 fully connected layer with an int16 input and output, as a user validates it."""
    from usmp_dialect.tools.usmp_validate import main

    model = tmp_path / "dense16.tflite"
    model.write_bytes(fully_connected(5, per_channel=True).model())
    with pytest.raises(SystemExit) as exit_info:
        main([str(model), "--inputs", "3"])
    out = capsys.readouterr().out
    assert exit_info.value.code in (0, None), out
    assert "output y (int16 2x7): bit-exact" in out
    assert out.splitlines()[-1] == "PASS"
