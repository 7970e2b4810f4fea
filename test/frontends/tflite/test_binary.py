"""MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, PRELU and DIV (int8 and float32) against
TensorFlow Lite Micro, on models written with `tflite_writer`: int8 byte for byte on every pair
of int8 inputs (a [256, 1] input broadcast against a [1, 256] one) over several
quantisations, float32 within 1e-5; broadcasting and constant inputs (PRELU's usual
per-channel alpha)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.kernels.fixed_point import activation_range, quantize_multiplier
from usmp_dialect.testing import tflm
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import compile_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
oracle = load_file(Path(__file__).parent / "tflm_oracle.py")

ALL_INT8 = np.arange(-128, 128, dtype=np.int8)

# (opcode, input1 (scale, zp), input2 (scale, zp), output (scale, zp))
PAIRS = [
    ("MAXIMUM", (0.1, 0), (0.3, 5), (0.2, -3)),
    ("MINIMUM", (0.0173, -20), (0.0091, 77), (0.0311, 10)),
    ("SQUARED_DIFFERENCE", (0.1, 0), (0.3, 5), (0.2, -3)),
    ("SQUARED_DIFFERENCE", (0.0173, -20), (0.0091, 77), (0.011, -128)),
    ("SQUARED_DIFFERENCE", (0.05, 127), (0.05, -128), (2.5, 0)),
    ("SQUARED_DIFFERENCE", (0.004, -3), (0.9, 10), (0.0005, 100)),
    ("PRELU", (0.1, 0), (0.003, 5), (0.2, -3)),
    ("PRELU", (0.0173, -20), (0.0091, 77), (0.0011, 10)),
    ("PRELU", (0.05, 127), (0.01, -128), (0.09, 0)),
    ("PRELU", (0.7, 3), (0.011, -7), (0.013, -100)),
]


def _spec(
    name: str,
    dtype: type,
    shape: tuple[int, ...],
    quant: tuple[float, int] | None,
    data: np.ndarray | None = None,
) -> TensorSpec:
    if quant is None:
        return TensorSpec(name, dtype, shape, data)
    return TensorSpec(name, dtype, shape, data, [quant[0]], [quant[1]])


@needs_gcc
@needs_tflm
def test_int8_operators_on_every_pair_of_inputs(tmp_path: Path) -> None:
    parts = {}
    for k, (opcode, first, second, out) in enumerate(PAIRS):
        tensors = [
            _spec("a", np.int8, (256, 1), first),
            _spec("b", np.int8, (1, 256), second),
            _spec("y", np.int8, (256, 256), out),
        ]
        parts[f"{opcode.lower()}{k}"] = oracle.ModelSpec(
            tensors, [OperatorSpec(opcode, [0, 1], [2])], [0, 1], [2]
        )
    model = oracle.merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build")
    inputs = [ALL_INT8.reshape(port.shape) for port in compiled.inputs]
    ours, _ = compiled.run(inputs)
    tflm.assert_matches(
        ours, tflm.run(model, inputs, len(ours)), [p.name for p in compiled.outputs]
    )


def _broadcast_part(
    opcode: str, dtype: type, lhs: tuple[int, ...], rhs: tuple[int, ...], constant_rhs: bool
) -> oracle.ModelSpec:
    quantized = dtype == np.int8
    rng = np.random.default_rng(len(lhs) + len(rhs))
    q1, q2, qo = ((0.05, -3), (0.02, 4), (0.04, 1)) if quantized else (None, None, None)
    if opcode == "SQUARED_DIFFERENCE" and quantized:
        qo = (0.01, -128)
    data = None
    if constant_rhs:
        data = (
            rng.integers(-128, 128, size=rhs, dtype=np.int8)
            if quantized
            else rng.uniform(-1.5, 1.5, size=rhs).astype(np.float32)
        )
    out = tuple(np.broadcast_shapes(lhs, rhs))
    tensors = [
        _spec("a", dtype, lhs, q1),
        _spec("b", dtype, rhs, q2, data),
        _spec("y", dtype, out, qo),
    ]
    options, fields = (
        ("DivOptions", {"FusedActivationFunction": 1}) if opcode == "DIV" else (None, {})
    )
    inputs = [0] if constant_rhs else [0, 1]
    return oracle.ModelSpec(
        tensors, [OperatorSpec(opcode, [0, 1], [2], options, fields)], inputs, [2]
    )


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_broadcasting_and_constant_inputs(tmp_path: Path, dtype: type) -> None:
    opcodes = ["MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "PRELU"]
    opcodes.append("DIV")
    parts = {}
    for opcode in opcodes:
        parts[f"{opcode.lower()}_same"] = _broadcast_part(
            opcode, dtype, (2, 3, 5), (2, 3, 5), False
        )
        parts[f"{opcode.lower()}_4d"] = _broadcast_part(
            opcode, dtype, (1, 4, 1, 6), (2, 1, 5, 1), False
        )
        parts[f"{opcode.lower()}_channel"] = _broadcast_part(
            opcode, dtype, (1, 3, 4, 8), (1, 1, 8), True
        )
    model = oracle.merge(parts)
    oracle.assert_matches(model, tmp_path, trials=3)


@needs_gcc
@needs_tflm
def test_float_edge_values(tmp_path: Path) -> None:
    """Zeros, negative zeros, equal values, infinities and NaN through MAXIMUM, MINIMUM and
    PRELU (TFLM's comparisons decide which operand a NaN yields)."""
    parts = {
        opcode.lower(): _broadcast_part(opcode, np.float32, (12,), (12,), False)
        for opcode in ("MAXIMUM", "MINIMUM", "PRELU", "SQUARED_DIFFERENCE")
    }
    model = oracle.merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build")
    a = np.array([0, -0.0, 1, -1, 2, np.inf, -np.inf, np.nan, 3, -5, 1e30, -1e-30], np.float32)
    b = np.array([-0.0, 0, 1, 2, -1, 3, 4, 1, np.nan, -5, -1e30, 2], np.float32)
    inputs = [a if k % 2 == 0 else b for k in range(len(compiled.inputs))]
    ours, _ = compiled.run(inputs)
    theirs = tflm.run(model, inputs, len(ours))
    for mine, reference in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, np.asarray(reference).reshape(mine.shape))


@needs_gcc
@needs_tflm
def test_a_mixed_chain_under_the_sanitizers(tmp_path: Path) -> None:
    """PRELU -> MAXIMUM -> SQUARED_DIFFERENCE on int8 with a constant alpha, inputs and
    outputs in the workspace, under ASan and UBSan."""
    rng = np.random.default_rng(1)
    alpha = rng.integers(-128, 128, size=(1, 1, 6), dtype=np.int8)
    tensors = [
        _spec("x", np.int8, (1, 4, 5, 6), (0.05, 3)),
        _spec("alpha", np.int8, (1, 1, 6), (0.004, -10), alpha),
        _spec("p", np.int8, (1, 4, 5, 6), (0.04, -7)),
        _spec("z", np.int8, (1, 4, 5, 6), (0.03, 2)),
        _spec("m", np.int8, (1, 4, 5, 6), (0.04, -7)),
        _spec("d", np.int8, (1, 4, 5, 6), (0.02, -128)),
    ]
    operators = [
        OperatorSpec("PRELU", [0, 1], [2]),
        OperatorSpec("MAXIMUM", [2, 3], [4]),
        OperatorSpec("SQUARED_DIFFERENCE", [4, 0], [5]),
    ]
    model = write_model(tensors, operators, [0, 3], [5])
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    for seed in range(3):
        inputs = tflm.random_inputs(compiled.inputs, seed)
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(ours, tflm.run(model, inputs, len(ours)))


# int8 DIV: (input1, input2, output) quantisations and the fused activation
DIVISIONS = [
    ((0.1, 0), (0.1, 3), (0.1, -2), 0),
    ((0.02, 5), (0.1, 3), (0.3, -2), 0),
    ((0.5, 5), (0.01, -100), (0.1, 10), 0),  # the multiplier's last bit: double precision
    ((0.0173, -20), (0.0091, 77), (0.0311, 10), 1),
    ((0.05, 127), (0.2, -128), (0.004, -128), 3),
    ((0.9, -128), (0.001, 127), (2.5, 0), 0),
]


def _beyond_int32_shift(
    first: tuple[float, int], second: tuple[float, int], out: tuple[float, int]
) -> np.ndarray:
    """[256, 256]: where TFLite's final shift (`RoundingDivideByPOT`) reaches 32 or more for
    input1 = row - 128, input2 = column - 128: the dividend's leading sign bits plus the
    reciprocal's shift minus the output shift."""
    _, shift = quantize_multiplier(
        float(np.float32(first[0])) / (float(np.float32(second[0])) * float(np.float32(out[0])))
    )
    # CountLeadingSignBits of the dividend (negated with a negative divisor, as TFLite does)
    # and GetReciprocal's num_bits_over_unit of |divisor| (-1 for a zero divisor)
    dividends = range(-128 - first[1], 128 - first[1])
    divisors = range(-128 - second[1], 128 - second[1])
    exponents = [
        [
            31 - (v if v >= 0 else ~v).bit_length() + abs(d).bit_length() - 1 - shift
            for d in divisors
            for v in [-n if d < 0 else n]
        ]
        for n in dividends
    ]
    return np.array(exponents) > 31


@needs_gcc
@needs_tflm
def test_int8_div_on_every_pair_of_inputs(tmp_path: Path) -> None:
    """Every int8 dividend against every int8 divisor (zero, near-zero and the extremes among
    them) byte for byte with TFLM; where TFLite's last shift reaches 32 bits (undefined in C,
    x86 gives the saturated value for quotients below half an output step) ours is the zero
    point clamped by the activation, the rounding of such a quotient."""
    parts = {}
    for k, (first, second, out, activation) in enumerate(DIVISIONS):
        tensors = [
            _spec("a", np.int8, (256, 1), first),
            _spec("b", np.int8, (1, 256), second),
            _spec("y", np.int8, (256, 256), out),
        ]
        options = {"FusedActivationFunction": activation}
        parts[f"div{k}"] = oracle.ModelSpec(
            tensors, [OperatorSpec("DIV", [0, 1], [2], "DivOptions", options)], [0, 1], [2]
        )
    model = oracle.merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", sanitize=True)
    inputs = [ALL_INT8.reshape(port.shape) for port in compiled.inputs]
    ours, _ = compiled.run(inputs)
    theirs = tflm.run(model, inputs, len(ours))
    undefined_total = 0
    for (first, second, out, activation), mine, reference in zip(
        DIVISIONS, ours, theirs, strict=True
    ):
        mine = mine.reshape(256, 256)
        reference = np.asarray(reference).reshape(256, 256)
        undefined = _beyond_int32_shift(first, second, out)
        undefined_total += int(undefined.sum())
        np.testing.assert_array_equal(mine[~undefined], reference[~undefined])
        low, high = activation_range(
            ("NONE", "RELU", "RELU_N1_TO_1", "RELU6")[activation], float(np.float32(out[0])), out[1]
        )
        np.testing.assert_array_equal(mine[undefined], min(max(out[1], low), high))
        assert not undefined[:, second[1] + 128].all()  # division by zero is compared too
    assert 0 < undefined_total < 0.2 * len(DIVISIONS) * 65536


def test_int8_div_refuses_scales_tflite_cannot_shift() -> None:
    tensors = [
        _spec("a", np.int8, (4,), (1000.0, 0)),
        _spec("b", np.int8, (4,), (1e-3, 0)),
        _spec("c", np.int8, (4,), (1e-3, 0)),
    ]
    data = write_model(tensors, [OperatorSpec("DIV", [0, 1], [2])], [0, 1], [2])
    with pytest.raises(ModelImportError, match="negative amount"):
        import_tflite(data, "m.tflite")
