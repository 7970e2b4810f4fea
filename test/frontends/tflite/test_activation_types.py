"""The activation types TFLM computes beyond int8 and float32 for operators whose int8 and
float32 forms are tested elsewhere: int16 (16x8, zero point 0) MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, RELU, RELU6, ABS, RESIZE_NEAREST_NEIGHBOR, PRELU, BATCH_MATMUL and SOFTMAX
from int8; int32 / int64 arithmetic, data movement and QUANTIZE (the counters and indices of
exported control flow); bool CONCATENATION, SLICE and STRIDED_SLICE; CAST between every pair of
types; resource variables of every type. One small model per operator and type, merged into
one program per test, built with ASan and UBSan and compared with TFLM bit for bit on random
inputs over each type's whole range and on its extremes; and the types TFLM refuses, refused
in one line."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import tflite

from usmp_dialect.testing import tflm
from usmp_dialect.testing.harness import STRICT_FLAGS
from usmp_dialect.testing.import_errors import assert_refused_in_one_line
from usmp_dialect.testing.stateful import compile_sequence, tflm_sequence
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec
from usmp_dialect.validation.host import PREFIX, compile_model

from .tflm_oracle import ModelSpec, merge

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]

NONE, RELU, RELU6 = 0, 1, 3


def tensor(name: str, dtype: type, shape: tuple[int, ...], scale: float = 1 / 4096) -> TensorSpec:
    """An activation: int16 quantised symmetrically with `scale`, other types plain."""
    if dtype is np.int16:
        return TensorSpec(name, np.int16, shape, scales=[scale], zero_points=[0])
    return TensorSpec(name, dtype, shape)


def ints(name: str, values: list) -> TensorSpec:
    array = np.array(values, dtype=np.int32)
    return TensorSpec(name, np.int32, array.shape, data=array)


def binary(
    opcode: str,
    dtype: type,
    scales: tuple[float, float, float] = (1 / 4096, 1 / 4096, 1 / 4096),
    rhs: tuple[int, ...] = (2, 3, 4),
    options: str | None = None,
    activation: int = NONE,
) -> ModelSpec:
    """`opcode` of two activations, the second broadcast when `rhs` says so."""
    tensors = [
        tensor("a", dtype, (2, 3, 4), scales[0]),
        tensor("b", dtype, rhs, scales[1]),
        tensor("y", dtype, (2, 3, 4), scales[2]),
    ]
    fields = {"FusedActivationFunction": activation} if options else {}
    return ModelSpec(tensors, [OperatorSpec(opcode, [0, 1], [2], options, fields)], [0, 1], [2])


def unary(
    opcode: str, dtype: type, scales: tuple[float, float] = (1 / 4096, 1 / 4096)
) -> ModelSpec:
    tensors = [tensor("x", dtype, (3, 40), scales[0]), tensor("y", dtype, (3, 40), scales[1])]
    return ModelSpec(tensors, [OperatorSpec(opcode, [0], [1])], [0], [1])


def resize_nearest(dtype: type, align_corners: bool) -> ModelSpec:
    tensors = [
        tensor("x", dtype, (1, 3, 4, 2)),
        ints("size", [5, 7]),
        tensor("y", dtype, (1, 5, 7, 2)),
    ]
    fields = {"AlignCorners": align_corners}
    op = OperatorSpec(
        "RESIZE_NEAREST_NEIGHBOR", [0, 1], [2], "ResizeNearestNeighborOptions", fields
    )
    return ModelSpec(tensors, [op], [0], [2])


def matmul(
    lhs: tuple[int, ...], rhs: tuple[int, ...], out: tuple[int, ...], adjoint: tuple[bool, bool]
) -> ModelSpec:
    """int16 BATCH_MATMUL (scales giving outputs that saturate as well as fit)."""
    tensors = [
        tensor("a", np.int16, lhs, 1 / 4096),
        tensor("b", np.int16, rhs, 1 / 2048),
        tensor("y", np.int16, out, 1 / 16),
    ]
    fields = {"AdjX": adjoint[0], "AdjY": adjoint[1]}
    op = OperatorSpec("BATCH_MATMUL", [0, 1], [2], "BatchMatMulOptions", fields)
    return ModelSpec(tensors, [op], [0, 1], [2])


def prelu(constant: bool) -> ModelSpec:
    """int16 PRELU with an int8 alpha per channel (a constant, or an input)."""
    alpha = TensorSpec("alpha", np.int8, (1, 1, 4), scales=[0.01], zero_points=[-20])
    if constant:
        alpha.data = np.array([[[-128, -20, 40, 127]]], dtype=np.int8)
    tensors = [tensor("x", np.int16, (2, 3, 4)), alpha, tensor("y", np.int16, (2, 3, 4), 1 / 2000)]
    return ModelSpec(
        tensors, [OperatorSpec("PRELU", [0, 1], [2])], [0] if constant else [0, 1], [2]
    )


def softmax_int8_to_int16(shape: tuple[int, ...], input_scale: float) -> ModelSpec:
    tensors = [
        TensorSpec("x", np.int8, shape, scales=[input_scale], zero_points=[5]),
        TensorSpec("y", np.int16, shape, scales=[1 / 65536], zero_points=[-32768]),
    ]
    op = OperatorSpec("SOFTMAX", [0], [1], "SoftmaxOptions", {"Beta": 1.0})
    return ModelSpec(tensors, [op], [0], [1])


def int16_parts() -> dict[str, ModelSpec]:
    i16 = np.int16
    return {
        "maximum": binary("MAXIMUM", i16),
        "minimum_broadcast": binary("MINIMUM", i16, rhs=(1, 3, 1)),
        "squared_difference": binary("SQUARED_DIFFERENCE", i16, (1 / 4096, 1 / 2048, 1 / 16)),
        "squared_difference_broadcast": binary(
            "SQUARED_DIFFERENCE", i16, (0.002, 0.0005, 0.5), rhs=(2, 1, 4)
        ),
        "relu": unary("RELU", i16),
        "relu_rescaled": unary("RELU", i16, (1 / 4096, 1 / 1000)),
        "relu6": unary("RELU6", i16),
        "relu6_coarse": unary("RELU6", i16, (1 / 1024, 1 / 1024)),
        "abs": unary("ABS", i16),
        "abs_rescaled": unary("ABS", i16, (1 / 4096, 1 / 3000)),
        "resize_nearest": resize_nearest(i16, False),
        "resize_nearest_corners": resize_nearest(i16, True),
        "softmax_from_int8": softmax_int8_to_int16((3, 10), 0.1),
        "softmax_from_int8_sharp": softmax_int8_to_int16((2, 2, 33), 0.5),
        "prelu": prelu(True),
        "prelu_alpha_input": prelu(False),
        "batch_matmul": matmul((2, 3, 40), (2, 40, 5), (2, 3, 5), (False, False)),
        "batch_matmul_adjoint": matmul((1, 6, 2), (3, 4, 6), (3, 2, 4), (True, True)),
    }


# Values every integer input also takes in one run (no 0 or -1 for int32: TFLM fails on a
# zero divisor and INT32_MIN / -1 traps)
EDGES = {
    np.dtype(np.int8): [-128, 127, 0, -1],
    np.dtype(np.int16): [-32768, 32767, -32767, 0, 1, -1, 16384, -16384],
    np.dtype(np.int32): [-(2**31), 2**31 - 1, -(2**31) + 1, 2**31 - 2, 2, -2, 3, -7],
    np.dtype(np.int64): [-(2**63), 2**63 - 1, 5, -5],
}


def compile_strictly(directory: Path) -> None:
    """The generated C compiles with the embedded warning set (beyond the harness's)."""
    source = directory / f"{PREFIX}.c"
    strict = [*STRICT_FLAGS, "-c", str(source), "-o", str(directory / "strict.o")]
    subprocess.run(["gcc", *strict], check=True, capture_output=True)


def assert_match_with_edges(parts: dict[str, ModelSpec], directory: Path) -> None:
    """The merged parts under ASan/UBSan against TFLM: two random runs over each type's
    whole range, then one with the extremes of each integer type; the C also compiles with
    the strict warning set."""
    model = merge(parts)
    path = directory / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, directory, sanitize=True)
    compile_strictly(directory)
    interpreter = tflm.interpreter(model)
    names = [port.name for port in compiled.outputs]
    for seed in range(3):
        inputs = tflm.random_inputs(compiled.inputs, seed)
        if seed == 2:
            inputs = [
                np.resize(np.array(EDGES[x.dtype], x.dtype), x.shape) if x.dtype in EDGES else x
                for x in inputs
            ]
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(ours, tflm.run_with(interpreter, inputs, len(ours)), names)


def test_int16_operators_match_tflm_under_the_sanitizers(tmp_path: Path) -> None:
    assert_match_with_edges(int16_parts(), tmp_path)


def joined(opcode: str, dtype: type, count: int = 2) -> ModelSpec:
    """CONCATENATION along axis 1 or PACK along axis 0 of `count` [2, 3] inputs."""
    shapes = {"CONCATENATION": (2, 3 * count), "PACK": (count, 2, 3)}
    tensors = [tensor(f"x{k}", dtype, (2, 3)) for k in range(count)]
    tensors.append(tensor("y", dtype, shapes[opcode]))
    options, fields = (
        ("ConcatenationOptions", {"Axis": 1})
        if opcode == "CONCATENATION"
        else ("PackOptions", {"ValuesCount": count, "Axis": 0})
    )
    op = OperatorSpec(opcode, list(range(count)), [count], options, fields)
    return ModelSpec(tensors, [op], list(range(count)), [count])


def moved(dtype: type) -> dict[str, ModelSpec]:
    """UNPACK, SPLIT, SPLIT_V, SLICE, STRIDED_SLICE, PAD and PADV2 of one [3, 4] input."""
    x = tensor("x", dtype, (3, 4))
    padded = tensor("y", dtype, (4, 7))
    pad_value = TensorSpec("v", dtype, (1,), data=np.array([-7], dtype=dtype))
    split_outputs = [tensor("a", dtype, (3, 1)), tensor("b", dtype, (3, 3))]
    sliced = tensor("y", dtype, (2, 2))
    return {
        "unpack": ModelSpec(
            [x, *(tensor(f"y{k}", dtype, (4,)) for k in range(3))],
            [OperatorSpec("UNPACK", [0], [1, 2, 3], "UnpackOptions", {"Num": 3, "Axis": 0})],
            [0],
            [1, 2, 3],
        ),
        "split": ModelSpec(
            [ints("axis", [1]), x, tensor("a", dtype, (3, 2)), tensor("b", dtype, (3, 2))],
            [OperatorSpec("SPLIT", [0, 1], [2, 3], "SplitOptions", {"NumSplits": 2})],
            [1],
            [2, 3],
        ),
        "split_v": ModelSpec(
            [x, ints("sizes", [1, 3]), ints("axis", [1]), *split_outputs],
            [OperatorSpec("SPLIT_V", [0, 1, 2], [3, 4], "SplitVOptions", {"NumSplits": 2})],
            [0],
            [3, 4],
        ),
        "slice": ModelSpec(
            [x, ints("begin", [1, 1]), ints("size", [2, 3]), tensor("y", dtype, (2, 3))],
            [OperatorSpec("SLICE", [0, 1, 2], [3])],
            [0],
            [3],
        ),
        "strided_slice": ModelSpec(
            [x, ints("begin", [2, 3]), ints("end", [0, 0]), ints("strides", [-1, -2]), sliced],
            [OperatorSpec("STRIDED_SLICE", [0, 1, 2, 3], [4], "StridedSliceOptions", {})],
            [0],
            [4],
        ),
        "pad": ModelSpec(
            [x, ints("paddings", [[1, 0], [2, 1]]), padded],
            [OperatorSpec("PAD", [0, 1], [2])],
            [0],
            [2],
        ),
        "padv2": ModelSpec(
            [x, ints("paddings", [[0, 1], [1, 2]]), padded, pad_value],
            [OperatorSpec("PADV2", [0, 1, 3], [2])],
            [0],
            [2],
        ),
    }


def divide_by_constant(activation: int) -> ModelSpec:
    """int32 DIV by small constant divisors of both signs (truncating toward zero)."""
    divisors = np.array([[[3, -7, 1000, -1]]], dtype=np.int32)
    tensors = [
        tensor("a", np.int32, (2, 3, 4)),
        TensorSpec("d", np.int32, (1, 1, 4), data=divisors),
        tensor("y", np.int32, (2, 3, 4)),
    ]
    fields = {"FusedActivationFunction": activation}
    return ModelSpec(tensors, [OperatorSpec("DIV", [0, 1], [2], "DivOptions", fields)], [0], [2])


def requantize(source: tuple, target: tuple) -> ModelSpec:
    """QUANTIZE from (type, scale, zero point) `source` to `target`."""
    tensors = [
        TensorSpec(name, dtype, (3, 9), scales=[scale], zero_points=[zero_point])
        for name, (dtype, scale, zero_point) in (("x", source), ("y", target))
    ]
    return ModelSpec(tensors, [OperatorSpec("QUANTIZE", [0], [1])], [0], [1])


def int32_parts() -> dict[str, ModelSpec]:
    i32, i64 = np.int32, np.int64
    arithmetic = {
        f"{opcode.lower()}_{name}": binary(opcode, i32, rhs=rhs, options=options, activation=act)
        for opcode, options in (("ADD", "AddOptions"), ("SUB", "SubOptions"), ("MUL", "MulOptions"))
        for name, rhs, act in (
            ("plain", (2, 3, 4), NONE),
            ("relu", (1, 3, 1), RELU),
            ("relu6", (2, 1, 4), RELU6),
        )
    }
    return {
        **arithmetic,
        "maximum_int32": binary("MAXIMUM", i32),
        "minimum_int32": binary("MINIMUM", i32, rhs=(1, 1, 4)),
        "maximum_int64": binary("MAXIMUM", i64, rhs=(2, 3, 1)),
        "minimum_int64": binary("MINIMUM", i64),
        "div_int32": binary("DIV", i32, rhs=(2, 1, 4), options="DivOptions"),
        "div_constant": divide_by_constant(NONE),
        "div_constant_relu6": divide_by_constant(RELU6),
        "squared_difference_int32": binary("SQUARED_DIFFERENCE", i32, rhs=(1, 3, 4)),
        "concatenation_int32": joined("CONCATENATION", i32),
        "concatenation_int64": joined("CONCATENATION", i64, 3),
        "pack_int32": joined("PACK", i32, 3),
        "pack_int64": joined("PACK", i64),
        **{f"{name}_int32": part for name, part in moved(i32).items()},
        "quantize_int8_int32": requantize((np.int8, 0.1, 3), (i32, 0.05, 7)),
        "quantize_int16_int32": requantize((np.int16, 1 / 4096, 0), (i32, 1 / 10000, -5)),
        "quantize_int32_int8": requantize((i32, 1e-7, 100), (np.int8, 0.9, -3)),
        "quantize_int32_int16": requantize((i32, 1e-5, 0), (np.int16, 0.7, 0)),
        "concatenation_bool": joined("CONCATENATION", np.bool_, 3),
        **{
            f"{name}_bool": part
            for name, part in moved(np.bool_).items()
            if name in ("slice", "strided_slice")
        },
    }


def test_int32_int64_and_bool_operators_match_tflm_under_the_sanitizers(tmp_path: Path) -> None:
    assert_match_with_edges(int32_parts(), tmp_path)


def test_int32_division_where_tflm_fails_or_c_is_undefined(tmp_path: Path) -> None:
    """A zero divisor (TFLM fails at Invoke) gives 0 and INT32_MIN / -1 (undefined in C)
    INT32_MIN, without UBSan findings; the other quotients truncate toward zero."""
    path = tmp_path / "div.tflite"
    path.write_bytes(binary("DIV", np.int32, rhs=(2, 3, 4), options="DivOptions").model())
    compiled = compile_model(path, tmp_path, sanitize=True)
    lowest = np.iinfo(np.int32).min
    dividends = np.resize(np.array([lowest, 5, -5, 7, -7, lowest], np.int32), (2, 3, 4))
    divisors = np.resize(np.array([-1, 0, 0, 2, 2, 1], np.int32), (2, 3, 4))
    (quotients,), _ = compiled.run([dividends, divisors])
    expected = np.resize(np.array([lowest, 0, 0, 3, -3, lowest], np.int32), (2, 3, 4))
    np.testing.assert_array_equal(quotients.reshape(2, 3, 4), expected)


def test_variables_of_every_type_carry_over_as_in_tflm(tmp_path: Path) -> None:
    """One resource variable per type: each run outputs the previous run's input (the
    first run TFLM's zero default) and stores its own."""
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []
    inputs, outputs = [], []
    for dtype in (np.int16, np.int32, np.int64, np.bool_):
        name, base = np.dtype(dtype).name, len(tensors)
        tensors += [
            tensor(f"{name}_x", dtype, (2, 3)),
            TensorSpec(f"{name}_handle", np.int32, [], type_code=tflite.TensorType.RESOURCE),
            tensor(f"{name}_previous", dtype, (2, 3)),
        ]
        operators += [
            OperatorSpec("VAR_HANDLE", [], [base + 1], "VarHandleOptions", {"SharedName": name}),
            OperatorSpec("READ_VARIABLE", [base + 1], [base + 2]),
            OperatorSpec("ASSIGN_VARIABLE", [base + 1, base], []),
        ]
        inputs.append(base)
        outputs.append(base + 2)
    model = ModelSpec(tensors, operators, inputs, outputs).model()
    path = tmp_path / "variables.tflite"
    path.write_bytes(model)
    compiled = compile_sequence(path, tmp_path, sanitize=True)
    rng = np.random.default_rng(5)
    steps = [tflm.random_inputs(compiled.inputs, rng) for _ in range(3)]
    for step, (mine, (theirs, _)) in enumerate(
        zip(compiled.run(steps, []), tflm_sequence(model, steps), strict=True)
    ):
        tflm.assert_matches(
            mine.outputs, theirs, [f"run {step}: {p.name}" for p in compiled.outputs]
        )


CAST_TYPES = (np.int8, np.int16, np.int32, np.float32, np.bool_)


def cast(source: type, target: type) -> ModelSpec:
    tensors = [TensorSpec("x", source, (3, 7)), TensorSpec("y", target, (3, 7))]
    return ModelSpec(tensors, [OperatorSpec("CAST", [0], [1])], [0], [1])


def test_cast_matches_tflm_between_every_pair_of_types(tmp_path: Path) -> None:
    """Every pair, bit for bit: float inputs scaled to exceed int8's and int16's ranges (with
    fractions: truncation and saturation), then the edge values (NaN, infinities, beyond
    int32)."""
    parts = {
        f"{np.dtype(a).name}_{np.dtype(b).name}": cast(a, b)
        for a in CAST_TYPES
        for b in CAST_TYPES
        if a is not b
    }
    model = merge(parts)
    path = tmp_path / "cast.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path, sanitize=True)
    compile_strictly(tmp_path)
    interpreter = tflm.interpreter(model)
    edges = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 2.2e9, -0.5, 0.5, 127.9, -128.9, 0.0])
    for seed in range(3):
        inputs = tflm.random_inputs(compiled.inputs, seed, float_scale=40000.0)
        if seed == 2:
            inputs = [
                np.resize(edges, x.shape).astype(np.float32) if x.dtype == np.float32 else x
                for x in inputs
            ]
        ours, _ = compiled.run(inputs)
        theirs = tflm.run_with(interpreter, inputs, len(ours))
        tflm.assert_matches(ours, theirs, [port.name for port in compiled.outputs])


# Types TFLM refuses at Prepare or fails on at Invoke: refused in the import's pre-scan
REFUSED = {
    "gather_int16": (
        ModelSpec(
            [tensor("x", np.int16, (4, 3)), ints("i", [3, 0]), tensor("y", np.int16, (2, 3))],
            [OperatorSpec("GATHER", [0, 1], [2], "GatherOptions", {"Axis": 0})],
            [0],
            [2],
        ),
        "GATHER on int16",
    ),
    "hard_swish_int16": (unary("HARD_SWISH", np.int16), "HARD_SWISH on int16"),
    "add_int64": (binary("ADD", np.int64, options="AddOptions"), "ADD on int64"),
    "transpose_int32": (
        ModelSpec(
            [tensor("x", np.int32, (2, 3)), ints("p", [1, 0]), tensor("y", np.int32, (3, 2))],
            [OperatorSpec("TRANSPOSE", [0, 1], [2])],
            [0],
            [2],
        ),
        "TRANSPOSE on int32",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_types_tflm_does_not_compute_are_refused_in_one_line(tmp_path: Path, case: str) -> None:
    """Should TFLM start running one of these, the test fails: then import it."""
    spec, kind = REFUSED[case]
    path = tmp_path / "model.tflite"
    path.write_bytes(spec.model())
    assert_refused_in_one_line(path, f"unsupported: operator {kind} (tensors")
    rng = np.random.default_rng(0)
    inputs = [
        rng.integers(-100, 100, size=spec.tensors[i].shape).astype(spec.tensors[i].dtype)
        for i in spec.inputs
    ]
    with pytest.raises(RuntimeError):
        tflm.run(spec.model(), inputs, len(spec.outputs))
