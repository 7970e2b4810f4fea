"""RELU, RELU6, LEAKY_RELU, HARD_SWISH, ELU, ABS, RSQRT (int8 and float32) and NEG, EXP, LOG,
SQRT, SQUARE, SIN, COS (float32) against TensorFlow Lite Micro, on models written with
`tflite_writer`: int8 byte for byte on all 256 inputs over many quantisations (the tables
computed at import, then the compiled C), float32 within 1e-5 on random and edge values."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.kernels import tables
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
INT8_OPS = ("RELU", "RELU6", "LEAKY_RELU", "HARD_SWISH", "ELU", "ABS", "RSQRT")
FLOAT_ONLY = ("NEG", "EXP", "LOG", "SQRT", "SQUARE", "SIN", "COS")


def _options(opcode: str, alpha: float) -> tuple[str | None, dict]:
    if opcode == "LEAKY_RELU":
        return "LeakyReluOptions", {"Alpha": alpha}
    return None, {}


def _quantisations(seed: int, count: int) -> list[tuple[tuple[float, int], tuple[float, int]]]:
    """(input, output) quantisations: scales from 1e-3 to 2, any zero points."""
    rng = np.random.default_rng(seed)
    scales = np.exp(rng.uniform(np.log(1e-3), np.log(2.0), size=(count, 2))).astype(np.float32)
    zero_points = rng.integers(-128, 128, size=(count, 2))
    return [
        ((float(s[0]), int(z[0])), (float(s[1]), int(z[1])))
        for s, z in zip(scales, zero_points, strict=True)
    ]


def _hard_swish_ok(source: tuple[float, int], target: tuple[float, int]) -> bool:
    try:
        tables.hard_swish_table(source, target)
    except tables.UnsupportedHardSwish:
        return False
    return True


def _table(
    opcode: str, source: tuple[float, int], target: tuple[float, int], alpha: float
) -> np.ndarray:
    if opcode == "RELU":
        return tables.relu_table(source, target)
    if opcode == "RELU6":
        return tables.relu6_table(source)
    if opcode == "LEAKY_RELU":
        return tables.leaky_relu_table(source, target, alpha)
    if opcode == "HARD_SWISH":
        return tables.hard_swish_table(source, target)
    if opcode == "ELU":
        return tables.elu_table(source, target)
    if opcode == "RSQRT":
        return tables.rsqrt_table(source, target)
    return tables.abs_table(source, target)


def _int8_model(
    opcode: str, cases: list[tuple[tuple[float, int], tuple[float, int]]], alpha: float
) -> bytes:
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []
    for k, (source, target) in enumerate(cases):
        tensors.append(TensorSpec(f"x{k}", np.int8, (256,), None, [source[0]], [source[1]]))
        tensors.append(TensorSpec(f"y{k}", np.int8, (256,), None, [target[0]], [target[1]]))
        options, fields = _options(opcode, alpha)
        operators.append(OperatorSpec(opcode, [2 * k], [2 * k + 1], options, fields))
    count = len(cases)
    return write_model(
        tensors, operators, [2 * k for k in range(count)], [2 * k + 1 for k in range(count)]
    )


@needs_tflm
@pytest.mark.parametrize("opcode", INT8_OPS)
def test_int8_tables_reproduce_tflite_micro_on_every_input(opcode: str) -> None:
    """The tables computed at import equal TFLM's outputs on all 256 inputs, for 40 random
    quantisations plus equal input and output ones (ABS's no-rescale path, RELU's identity)."""
    cases = _quantisations(INT8_OPS.index(opcode), 40)
    cases += [((0.05, -3), (0.05, -3)), ((0.1, 0), (0.1, 0)), ((1 / 128, 0), (3 / 128, -128))]
    if opcode == "HARD_SWISH":
        cases = [case for case in cases if _hard_swish_ok(*case)]
        cases += [((0.1, 5), (0.05, -100)), ((0.023, -128), (0.0117, 3))]
        assert len(cases) > 20
    # RSQRT of a negative real stops TFLM with an error: its inputs start at the zero point
    inputs = [
        np.maximum(ALL_INT8, source[1]).astype(np.int8) if opcode == "RSQRT" else ALL_INT8
        for source, _ in cases
    ]
    for alpha in (0.2, -0.7, 1.5) if opcode == "LEAKY_RELU" else (0.0,):
        theirs = tflm.run(_int8_model(opcode, cases, alpha), inputs, len(cases))
        for (source, target), reference, x in zip(cases, theirs, inputs, strict=True):
            ours = _table(opcode, source, target, alpha)[x.astype(np.int32) + 128]
            differ = np.flatnonzero(ours != reference)
            assert not differ.size, (
                f"{opcode} {source} -> {target}, alpha {alpha}: inputs {x[differ]} give "
                f"{ours[differ]}, TFLM {reference[differ]}"
            )


def _unary_part(opcode: str, dtype: type, shape: tuple[int, ...]) -> oracle.ModelSpec:
    if dtype is np.int8:
        source = TensorSpec("x", np.int8, shape, None, [0.043], [-9])
        target = TensorSpec("y", np.int8, shape, None, [0.031], [11])
    else:
        source, target = TensorSpec("x", np.float32, shape), TensorSpec("y", np.float32, shape)
    options, fields = _options(opcode, 0.3)
    return oracle.ModelSpec(
        [source, target], [OperatorSpec(opcode, [0], [1], options, fields)], [0], [1]
    )


@needs_gcc
@needs_tflm
def test_compiled_operators_match_tflite_micro(tmp_path: Path) -> None:
    """Every operator of this family in one model, int8 on all 256 values, float on a range
    with ties and zeros; the positive-only functions on positive inputs."""
    parts = {f"{opcode.lower()}_i8": _unary_part(opcode, np.int8, (2, 128)) for opcode in INT8_OPS}
    parts |= {
        f"{opcode.lower()}_f32": _unary_part(opcode, np.float32, (4, 100))
        for opcode in (*INT8_OPS, *FLOAT_ONLY)
    }
    model = oracle.merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build")
    wide = np.concatenate(
        [np.linspace(-9, 9, 361, dtype=np.float32), np.array([0.0, -0.0, 3.0, -3.0] * 10)]
    )[:400].astype(np.float32)
    positive = np.abs(wide) + np.float32(1e-3)
    inputs = []
    for port in compiled.inputs:
        if port.dtype == np.int8 and port.name.startswith("rsqrt"):
            inputs.append(np.maximum(ALL_INT8, -9).astype(np.int8).reshape(port.shape))
        elif port.dtype == np.int8:
            inputs.append(ALL_INT8.reshape(port.shape))
        elif port.name.split("_")[0] in ("log", "sqrt", "rsqrt"):
            inputs.append(positive.reshape(port.shape))
        else:
            inputs.append(wide.reshape(port.shape))
    ours, _ = compiled.run(inputs)
    theirs = tflm.run(model, inputs, len(ours))
    tflm.assert_matches(ours, theirs, [port.name for port in compiled.outputs])


@needs_gcc
@needs_tflm
def test_a_chain_of_activations_under_the_sanitizers(tmp_path: Path) -> None:
    """HARD_SWISH -> LEAKY_RELU -> RELU6 -> ABS -> ELU on int8 and EXP -> SQRT -> LOG on float,
    inputs and outputs in the workspace, under ASan and UBSan."""
    tensors = [
        TensorSpec("x", np.int8, (3, 5, 7), None, [0.05], [4]),
        TensorSpec("a", np.int8, (3, 5, 7), None, [0.04], [-20]),
        TensorSpec("b", np.int8, (3, 5, 7), None, [0.03], [-5]),
        TensorSpec("c", np.int8, (3, 5, 7), None, [0.03], [-5]),
        TensorSpec("d", np.int8, (3, 5, 7), None, [0.02], [-128]),
        TensorSpec("e", np.int8, (3, 5, 7), None, [0.025], [0]),
        TensorSpec("f", np.float32, (11,)),
        TensorSpec("g", np.float32, (11,)),
        TensorSpec("h", np.float32, (11,)),
        TensorSpec("i", np.float32, (11,)),
    ]
    operators = [
        OperatorSpec("HARD_SWISH", [0], [1]),
        OperatorSpec("LEAKY_RELU", [1], [2], "LeakyReluOptions", {"Alpha": 0.1}),
        OperatorSpec("RELU6", [2], [3]),
        OperatorSpec("ABS", [3], [4]),
        OperatorSpec("ELU", [4], [5]),
        OperatorSpec("EXP", [6], [7]),
        OperatorSpec("SQRT", [7], [8]),
        OperatorSpec("LOG", [8], [9]),
    ]
    model = write_model(tensors, operators, [0, 6], [5, 9])
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    for seed in range(3):
        inputs = tflm.random_inputs(compiled.inputs, seed, float_scale=3.0)
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(ours, tflm.run(model, inputs, len(ours)))


def test_int8_of_a_float_only_function_is_refused_with_every_other_finding(tmp_path: Path) -> None:
    tensors = [
        TensorSpec("x", np.int8, (4,), None, [0.1], [0]),
        TensorSpec("y", np.int8, (4,), None, [0.1], [0]),
        TensorSpec("z", np.int8, (4,), None, [0.1], [0]),
    ]
    operators = [OperatorSpec("EXP", [0], [1]), OperatorSpec("NEG", [1], [2])]
    data = write_model(tensors, operators, [0], [2])
    with pytest.raises(ModelImportError) as error:
        import_tflite(data, "m.tflite")
    message = str(error.value)
    assert "operator EXP on int8" in message and "operator NEG on int8" in message


def test_hard_swish_refuses_an_output_scale_tflite_refuses() -> None:
    tensors = [
        TensorSpec("x", np.int8, (4,), None, [1.0], [0]),
        TensorSpec("y", np.int8, (4,), None, [0.0001], [0]),
    ]
    data = write_model(tensors, [OperatorSpec("HARD_SWISH", [0], [1])], [0], [1])
    with pytest.raises(ModelImportError, match="non-positive output shift"):
        import_tflite(data, "m.tflite")
