"""ADD, SUB, MUL, QUANTIZE, DEQUANTIZE, LOGISTIC and TANH of the TFLite frontend against
TensorFlow Lite Micro, on models written with `usmp_dialect.testing.tflite_writer`.

int8 outputs must equal TFLM's byte for byte: the binary operators on every pair of int8
inputs (a [256, 1] input broadcast against a [1, 256] one) for several quantisations and fused
activations, the int8 activations and requantisation on all 256 inputs; float outputs within
1e-5 of the largest. Broadcasting up to 5-D, constant inputs and rejected variants too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func, memref, scf

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.kernels.activation import int8_table
from usmp_dialect.kernels.elementwise import Broadcast, broadcast_shapes
from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import CompiledModel, compile_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}
ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3}
ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


class Model:
    """Tensors and operators of a model being written; `input`/`output` name its ports."""

    def __init__(self) -> None:
        self.tensors: list[TensorSpec] = []
        self.operators: list[OperatorSpec] = []
        self.inputs: list[int] = []
        self.outputs: list[int] = []

    def tensor(
        self,
        dtype: type,
        shape: Sequence[int],
        quant: tuple[float, int] | None = None,
        data: np.ndarray | None = None,
    ) -> int:
        scales, zero_points = ([quant[0]], [quant[1]]) if quant is not None else (None, None)
        name = f"t{len(self.tensors)}"
        self.tensors.append(TensorSpec(name, dtype, shape, data, scales, zero_points))
        return len(self.tensors) - 1

    def input(
        self, dtype: type, shape: Sequence[int], quant: tuple[float, int] | None = None
    ) -> int:
        index = self.tensor(dtype, shape, quant)
        self.inputs.append(index)
        return index

    def op(
        self,
        opcode: str,
        inputs: Sequence[int],
        output: int,
        activation: str | None = None,
    ) -> int:
        options, fields = None, {}
        if activation is not None:
            options, fields = OPTIONS[opcode], {"FusedActivationFunction": ACTIVATIONS[activation]}
        self.operators.append(OperatorSpec(opcode, list(inputs), [output], options, fields))
        return output

    def output(self, index: int) -> int:
        self.outputs.append(index)
        return index

    def data(self) -> bytes:
        return write_model(self.tensors, self.operators, self.inputs, self.outputs)


def build(tmp_path: Path, data: bytes, sanitize: bool = False) -> CompiledModel:
    """The model compiled (U1), or under ASan/UBSan with its inputs and outputs planned
    inside the workspace (U4)."""
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    return compile_model(path, tmp_path / "build", workspace_io=sanitize, sanitize=sanitize)


def assert_outputs_match(compiled: CompiledModel, data: bytes, inputs: list[np.ndarray]) -> None:
    ours, _ = compiled.run(inputs)
    tflm.assert_matches(ours, tflm.run(data, inputs, len(ours)))


def random_inputs(compiled: CompiledModel, seed: int) -> list[np.ndarray]:
    return tflm.random_inputs(compiled.inputs, seed, float_scale=3.0)


# -- int8 binary operators on every pair of inputs -----------------------------------------

# (opcode, input1 (scale, zp), input2 (scale, zp), output (scale, zp), activation)
PAIRS = [
    ("ADD", (0.1, 0), (0.3, 5), (0.2, -3), "NONE"),
    ("ADD", (0.0173, -20), (0.0091, 77), (0.0311, 10), "RELU"),
    ("ADD", (0.05, 127), (0.05, -128), (0.09, 0), "RELU6"),
    ("ADD", (0.7, 3), (0.011, -7), (0.013, -100), "RELU_N1_TO_1"),
    ("SUB", (0.1, 0), (0.3, 5), (0.2, -3), "NONE"),
    ("SUB", (0.0173, -20), (0.0091, 77), (0.0311, 10), "RELU6"),
    ("SUB", (0.004, -128), (0.25, 0), (0.06, 20), "RELU"),
    ("MUL", (0.1, 0), (0.3, 5), (0.2, -3), "NONE"),
    ("MUL", (0.0173, -20), (0.0091, 77), (0.0011, 10), "RELU"),
    ("MUL", (0.05, 127), (0.05, -128), (0.9, 0), "RELU6"),
    ("MUL", (0.7, 3), (0.011, -7), (0.0077, -100), "RELU_N1_TO_1"),
    ("MUL", (0.5, 0), (0.25, 0), (0.00001, 0), "NONE"),  # multiplier > 1: a left shift
]


@needs_gcc
@needs_tflm
def test_int8_binary_operators_on_every_pair_of_inputs(tmp_path: Path) -> None:
    model = Model()
    firsts: dict[tuple[float, int], int] = {}
    seconds: dict[tuple[float, int], int] = {}
    for opcode, first, second, out, activation in PAIRS:
        if first not in firsts:
            firsts[first] = model.input(np.int8, (256, 1), first)
        if second not in seconds:
            seconds[second] = model.input(np.int8, (1, 256), second)
        result = model.tensor(np.int8, (256, 256), out)
        model.output(model.op(opcode, [firsts[first], seconds[second]], result, activation))
    compiled = build(tmp_path, model.data())
    inputs = [ALL_INT8.reshape(port.shape) for port in compiled.inputs]
    assert_outputs_match(compiled, model.data(), inputs)


# -- broadcasting, constants, chains -------------------------------------------------------


def broadcasting_model(dtype: type) -> Model:
    """Binary operators of `dtype` over 1-D to 5-D broadcasts, with constant inputs (a vector
    and a rank-0 scalar), one input used twice, and a chain through an intermediate tensor."""
    quantized = dtype == np.int8
    rng = np.random.default_rng(7)

    def q(scale: float, zero_point: int) -> tuple[float, int] | None:
        return (scale, zero_point) if quantized else None

    def constant(shape: tuple[int, ...], quant: tuple[float, int] | None) -> int:
        if quantized:
            values = rng.integers(-128, 128, size=shape, dtype=np.int8)
        else:
            values = rng.standard_normal(shape).astype(np.float32)
        return model.tensor(dtype, shape, quant, data=values)

    model = Model()
    cases = [
        ("ADD", (2, 3, 4, 5), (3, 1, 5), "NONE"),
        ("SUB", (1, 4, 1, 6), (2, 1, 5, 1), "RELU"),
        ("ADD", (2, 3, 1, 4, 5), (1, 3, 2, 1, 5), "RELU6"),
        ("MUL", (4, 1, 3), (2, 1), "RELU_N1_TO_1"),
        ("MUL", (7,), (7,), "NONE"),
        ("SUB", (3, 1), (1, 1, 4), "NONE"),
    ]
    for k, (opcode, lhs_shape, rhs_shape, activation) in enumerate(cases):
        lhs = model.input(dtype, lhs_shape, q(0.02 + 0.01 * k, k - 3))
        rhs = model.input(dtype, rhs_shape, q(0.05 - 0.005 * k, 4 - 2 * k))
        out_shape = np.broadcast_shapes(lhs_shape, rhs_shape)
        result = model.tensor(dtype, out_shape, q(0.04 + 0.013 * k, k))
        model.output(model.op(opcode, [lhs, rhs], result, activation))
    x = model.input(dtype, (2, 3, 5), q(0.03, -2))
    vector = constant((5,), q(0.02, 3))
    model.output(model.op("ADD", [x, vector], model.tensor(dtype, (2, 3, 5), q(0.05, 1)), "NONE"))
    scalar = constant((), q(0.1, -4))
    model.output(model.op("MUL", [scalar, x], model.tensor(dtype, (2, 3, 5), q(0.02, 0)), "RELU"))
    square = model.op("MUL", [x, x], model.tensor(dtype, (2, 3, 5), q(0.01, -60)), "NONE")
    model.output(model.op("SUB", [square, x], model.tensor(dtype, (2, 3, 5), q(0.04, 5)), "NONE"))
    return model


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_broadcasting_constants_and_chains(tmp_path: Path, dtype: type) -> None:
    model = broadcasting_model(dtype)
    compiled = build(tmp_path, model.data())
    for seed in range(3):
        assert_outputs_match(compiled, model.data(), random_inputs(compiled, seed))


@needs_gcc
@needs_tflm
def test_float_arithmetic_on_constants_folds(tmp_path: Path) -> None:
    data = _constant_sum_model()
    module = import_tflite(data, "constant-sum.tflite")
    assert [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)] == [
        "add_1",
        "main",
    ]
    compiled = build(tmp_path, data)
    assert_outputs_match(compiled, data, random_inputs(compiled, 0))


@needs_gcc
@needs_tflm
def test_broadcasting_in_the_workspace_under_the_sanitizers(tmp_path: Path) -> None:
    model = broadcasting_model(np.int8)
    compiled = build(tmp_path, model.data(), sanitize=True)
    assert_outputs_match(compiled, model.data(), random_inputs(compiled, 11))


# -- unary operators -----------------------------------------------------------------------

INT8_ACTIVATION_INPUTS = [(0.1, 0), (0.05, -3), (0.02, 17), (0.5, 100), (0.0123, -128), (1.0, 5)]
REQUANTIZATIONS = [((0.1, 0), (0.1, 0)), ((0.1, 3), (0.05, -7)), ((0.02, -128), (0.3, 100))]


@needs_gcc
@needs_tflm
def test_int8_activations_and_requantisation_on_every_input(tmp_path: Path) -> None:
    model = Model()
    for opcode, out in (("LOGISTIC", (1 / 256, -128)), ("TANH", (1 / 128, 0))):
        for quant in INT8_ACTIVATION_INPUTS:
            source = model.input(np.int8, (2, 128), quant)
            model.output(model.op(opcode, [source], model.tensor(np.int8, (2, 128), out)))
    for source_quant, target_quant in REQUANTIZATIONS:
        source = model.input(np.int8, (256,), source_quant)
        model.output(model.op("QUANTIZE", [source], model.tensor(np.int8, (256,), target_quant)))
    compiled = build(tmp_path, model.data())
    inputs = [ALL_INT8.reshape(port.shape) for port in compiled.inputs]
    assert_outputs_match(compiled, model.data(), inputs)


@needs_tflm
@pytest.mark.parametrize("opcode", ["LOGISTIC", "TANH"])
def test_int8_tables_reproduce_tflite_micro_on_every_input(opcode: str) -> None:
    """The tables computed at import against TFLM, over many input quantisations."""
    rng = np.random.default_rng(3)
    out = (1 / 256, -128) if opcode == "LOGISTIC" else (1 / 128, 0)
    quants = [
        (float(np.float32(scale)), int(zero_point))
        for scale, zero_point in zip(
            np.exp(rng.uniform(np.log(1e-3), np.log(2.0), size=24)),
            rng.integers(-128, 128, size=24),
            strict=True,
        )
    ]
    model = Model()
    for quant in quants:
        source = model.input(np.int8, (256,), quant)
        model.output(model.op(opcode, [source], model.tensor(np.int8, (256,), out)))
    theirs = tflm.run(model.data(), [ALL_INT8] * len(quants), len(quants))
    for quant, reference in zip(quants, theirs, strict=True):
        np.testing.assert_array_equal(int8_table(opcode.lower(), *quant), reference)


@needs_gcc
@needs_tflm
def test_float_unary_operators(tmp_path: Path) -> None:
    model = Model()
    wide = model.input(np.float32, (4, 100))  # LOGISTIC's cut-offs lie at -9 and 16.6
    model.output(model.op("LOGISTIC", [wide], model.tensor(np.float32, (4, 100))))
    model.output(model.op("TANH", [wide], model.tensor(np.float32, (4, 100))))
    for quant in ((0.1, 0), (0.037, -17)):
        model.output(model.op("QUANTIZE", [wide], model.tensor(np.int8, (4, 100), quant)))
    codes = model.input(np.int8, (3, 7), (0.043, -9))
    model.output(model.op("DEQUANTIZE", [codes], model.tensor(np.float32, (3, 7))))
    compiled = build(tmp_path, model.data())
    rng = np.random.default_rng(5)
    values = np.concatenate(
        [
            np.linspace(-25, 25, 200, dtype=np.float32),
            (np.arange(-100, 100) * 0.05).astype(np.float32),  # ties of the 0.1 scale
        ]
    )
    inputs = [values.reshape(4, 100), rng.integers(-128, 128, (3, 7), dtype=np.int8)]
    assert_outputs_match(compiled, model.data(), inputs)


@needs_gcc
@needs_tflm
def test_quantize_saturates_and_dequantized_constants_fold(tmp_path: Path) -> None:
    """QUANTIZE of values far beyond int8 saturates; a DEQUANTIZE of a constant is folded
    (no operator function) and feeds a float ADD."""
    model = Model()
    x = model.input(np.float32, (6,))
    model.output(model.op("QUANTIZE", [x], model.tensor(np.int8, (6,), (0.5, 10))))
    weights = np.array([-128, -5, 0, 7, 100, 127], dtype=np.int8)
    codes = model.tensor(np.int8, (6,), (0.25, 3), data=weights)
    dequantized = model.op("DEQUANTIZE", [codes], model.tensor(np.float32, (6,)))
    model.output(model.op("ADD", [x, dequantized], model.tensor(np.float32, (6,)), "NONE"))
    data = model.data()
    module = import_tflite(data, "folded.tflite")
    names = [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]
    assert names == ["quantize_0", "add_2", "main"]
    compiled = build(tmp_path, data)
    values = np.array([-1e6, -300.0, -64.25, 63.75, 300.0, 3e9], dtype=np.float32)
    ours, _ = compiled.run([values])
    np.testing.assert_array_equal(ours[0], [-128, -128, -119, 127, 127, 127])
    np.testing.assert_array_equal(ours[1], values + (weights.astype(np.float32) - 3) * 0.25)
    assert_outputs_match(compiled, data, [values[1:5].repeat(2)[:6]])


# -- kernels loop over reduced shapes, through views --------------------------------------


@pytest.mark.parametrize(
    ("lhs", "rhs", "expected"),
    [
        ((2, 3, 4), (2, 3, 4), Broadcast((24,), ((24,), (24,)))),
        ((1, 8, 8, 16), (16,), Broadcast((64, 16), ((64, 16), (1, 16)))),
        ((1, 8, 8, 16), (1, 8, 8, 1), Broadcast((64, 16), ((64, 16), (64, 1)))),
        ((2, 1, 5, 1), (1, 4, 1, 6), Broadcast((2, 4, 5, 6), ((2, 1, 5, 1), (1, 4, 1, 6)))),
        ((5, 3), (), Broadcast((15,), ((15,), (1,)))),
        ((1, 1), (1,), Broadcast((1,), ((1,), (1,)))),
        ((256, 1), (1, 256), Broadcast((256, 256), ((256, 1), (1, 256)))),
    ],
)
def test_broadcast_shapes_merge_and_drop_dimensions(
    lhs: tuple[int, ...], rhs: tuple[int, ...], expected: Broadcast
) -> None:
    assert broadcast_shapes(lhs, rhs) == expected


def test_equal_shapes_add_in_one_loop_over_views() -> None:
    model = Model()
    a, b = (
        model.input(np.int8, (1, 4, 4, 3), (0.1, 0)),
        model.input(np.int8, (1, 4, 4, 3), (0.2, 1)),
    )
    model.output(model.op("ADD", [a, b], model.tensor(np.int8, (1, 4, 4, 3), (0.3, 2)), "NONE"))
    module = import_tflite(model.data(), "same.tflite")
    kernel = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "add_0"
    )
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 1
    main = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )
    assert not [op for op in main.walk() if isinstance(op, memref.CopyOp | memref.AllocOp)]
    assert len([op for op in main.walk() if isinstance(op, memref.ReinterpretCastOp)]) == 3


# -- rejected variants ---------------------------------------------------------------------


def _binary_model(
    lhs: tuple[type, tuple[int, ...], tuple[float, int] | None],
    rhs: tuple[type, tuple[int, ...], tuple[float, int] | None],
    out: tuple[type, tuple[int, ...], tuple[float, int] | None],
    opcode: str = "ADD",
) -> bytes:
    model = Model()
    ports = [model.input(dtype, shape, quant) for dtype, shape, quant in (lhs, rhs)]
    model.output(model.op(opcode, ports, model.tensor(*out), "NONE"))
    return model.data()


def _constant_sum_model(dtype: type = np.float32) -> bytes:
    """x + (c + c): the inner ADD of two constants (float: folded at import)."""
    model = Model()
    quantization = Q if dtype == np.int8 else None
    x = model.input(dtype, (3,), quantization)
    ones = [model.tensor(dtype, (3,), quantization, data=np.ones(3, dtype)) for _ in range(2)]
    total = model.op("ADD", ones, model.tensor(dtype, (3,), quantization), "NONE")
    model.output(model.op("ADD", [x, total], model.tensor(dtype, (3,), quantization), "NONE"))
    return model.data()


def _unary_model(opcode: str, source: tuple, target: tuple) -> bytes:
    model = Model()
    x = model.input(*source)
    y = model.tensor(*target)
    model.operators.append(OperatorSpec(opcode, [x], [y]))
    model.output(y)
    return model.data()


Q = (0.1, 0)
ERRORS = [
    (
        _binary_model((np.int8, (4,), Q), (np.float32, (4,), None), (np.int8, (4,), Q)),
        "unsupported combination of tensor types",
    ),
    (
        _binary_model((np.int8, (4, 3), Q), (np.int8, (4,), Q), (np.int8, (4, 3), Q)),
        "the input shapes [4, 3] and [4] do not broadcast",
    ),
    (
        _binary_model(
            (np.float32, (4, 1), None), (np.float32, (3,), None), (np.float32, (4,), None)
        ),
        "the output shape [4] is not the broadcast [4, 3] of the inputs [4, 1] and [3]",
    ),
    (_constant_sum_model(np.int8), "ADD (operator 0): both inputs are constants"),
    (
        _binary_model((np.int8, (4,), Q), (np.int8, (4,), Q), (np.int8, (4,), (1e-9, 0))),
        "the output multiplier",
    ),
    (
        _binary_model((np.int8, (4,), Q), (np.int8, (4,), None), (np.int8, (4,), Q), "MUL"),
        "has no quantisation parameters",
    ),
    (
        _unary_model("QUANTIZE", (np.float32, (4,)), (np.float32, (4,))),
        "QUANTIZE (operator 0): float32 -> float32 is not supported (only float32 -> int8 or "
        "int16, int8 or int16 -> int8, int16 or int32, int32 -> int8 or int16, uint8 -> int8, "
        "int8 -> uint8)",
    ),
    (
        _unary_model("DEQUANTIZE", (np.float32, (4,)), (np.float32, (4,))),
        "float32 -> float32 is not supported (only int8, int16 or uint8 -> float32)",
    ),
    (
        _unary_model("QUANTIZE", (np.float32, (4,)), (np.int8, (2, 2), Q)),
        "the output shape [2, 2] differs from the input's [4]",
    ),
    (
        _unary_model("LOGISTIC", (np.int8, (4,), Q), (np.int8, (4,), (1 / 256, 0))),
        "the int8 output must have scale 1/256 and zero point -128 (it has 0.00390625 and 0)",
    ),
    (
        _unary_model("TANH", (np.int8, (4,), Q), (np.int8, (4,), (1 / 256, -128))),
        "the int8 output must have scale 1/128 and zero point 0",
    ),
    (
        _unary_model("TANH", (np.int8, (4,), (1e-10, 0)), (np.int8, (4,), (1 / 128, 0))),
        "input scale 1e-10 is out of the supported range",
    ),
    (
        _unary_model("TANH", (np.int8, (4,), Q), (np.float32, (4,))),
        "unsupported combination of tensor types",
    ),
]


@pytest.mark.parametrize(("data", "message"), ERRORS, ids=[m[:40] for _, m in ERRORS])
def test_unsupported_variants_are_one_line_errors(data: bytes, message: str) -> None:
    with pytest.raises(ModelImportError) as error:
        import_tflite(data, "bad.tflite")
    text = str(error.value)
    assert message in text
    assert text.startswith("bad.tflite: ")
    assert "\n" not in text


def test_per_channel_inputs_and_fused_tanh_are_rejected() -> None:
    model = Model()
    a = model.input(np.int8, (2, 3), Q)
    b = model.tensor(np.int8, (2, 3), Q)
    model.tensors[b] = TensorSpec("pc", np.int8, (2, 3), None, [0.1, 0.2, 0.3], [0, 0, 0], axis=1)
    model.inputs.append(b)
    model.output(model.op("ADD", [a, b], model.tensor(np.int8, (2, 3), Q), "NONE"))
    with pytest.raises(ModelImportError, match=r"'pc' .* is quantised per channel"):
        import_tflite(model.data(), "pc.tflite")
    model = Model()
    x, y = model.input(np.float32, (3,)), model.input(np.float32, (3,))
    out = model.tensor(np.float32, (3,))
    model.operators.append(
        OperatorSpec("MUL", [x, y], [out], "MulOptions", {"FusedActivationFunction": 4})
    )
    model.output(out)
    with pytest.raises(
        ModelImportError, match="unsupported: MUL with fused activation TANH \\(operator 0\\)"
    ):
        import_tflite(model.data(), "tanh.tflite")


def test_usmp_opt_reports_an_unsupported_variant_in_one_line(tmp_path: Path) -> None:
    model = tmp_path / "tanh.tflite"
    model.write_bytes(_unary_model("TANH", (np.int8, (4,), Q), (np.int8, (4,), (1 / 256, 0))))
    output = tmp_path / "tanh.c"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "usmp_dialect.tools.usmp_opt",
            str(model),
            "-t",
            "c",
            "-o",
            str(output),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1
    assert ran.stderr == (
        f"usmp-opt: error: {model}: TANH (operator 0): the int8 output must have scale 1/128 and "
        "zero point 0 (it has 0.00390625 and 0)\n"
    )
    assert not output.exists()
