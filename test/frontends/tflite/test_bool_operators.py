"""The operators of bool and int32 activations against TensorFlow Lite Micro, bit for bit:
EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL (float32, int8 rescaled, int16 for
GREATER, int32, int64, bool for (NOT_)EQUAL), LOGICAL_AND / OR / NOT, SELECT_V2 (float32, int8,
int16 values) and ARG_MAX / ARG_MIN (float32 and int8 inputs, int32 outputs), on models written
with `tflite_writer`: every pair of int8 inputs, inputs drawn from few values so that ties and
equal values are common (float NaN, infinities and signed zeros among them), broadcasting and
constant inputs, bool model inputs and outputs, and a chain under ASan/UBSan. What TFLM does
not evaluate is refused, every case in one line."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import Port, compile_model, generate_c
from usmp_dialect.validation.validate import validate

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
oracle = load_file(Path(__file__).parent / "tflm_oracle.py")

COMPARISONS = ("EQUAL", "NOT_EQUAL", "GREATER", "GREATER_EQUAL", "LESS", "LESS_EQUAL")
ALL_INT8 = np.arange(-128, 128, dtype=np.int8)
FLOAT_SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5], np.float32)


def _tensor(
    name: str,
    dtype: type,
    shape: Sequence[int],
    quant: tuple[float, int] | None = None,
    data: np.ndarray | None = None,
) -> TensorSpec:
    if quant is None:
        return TensorSpec(name, dtype, tuple(shape), data)
    return TensorSpec(name, dtype, tuple(shape), data, [quant[0]], [quant[1]])


def _tied_inputs(ports: Sequence[Port], rng: np.random.Generator) -> list[np.ndarray]:
    """Inputs drawn from few values, so that equal elements are common: floats on a grid of
    halves with NaN, infinities and signed zeros among them, integers mostly in [-3, 3] with
    a few of their type's extremes, int8 over its whole range, bools either way."""
    arrays = []
    for port in ports:
        size = int(np.prod(port.shape))
        if port.dtype == np.bool_:
            flat = rng.integers(0, 2, size=size).astype(np.bool_)
        elif port.dtype == np.int8:
            flat = rng.integers(-128, 128, size=size).astype(np.int8)
        elif port.dtype == np.float32:
            flat = (np.round(rng.standard_normal(size) * 2) / 2).astype(np.float32)
            where = rng.random(size) < 0.15
            flat[where] = rng.choice(FLOAT_SPECIALS, size=int(where.sum()))
        else:
            limits = np.iinfo(port.dtype)
            flat = rng.integers(-3, 4, size=size).astype(port.dtype)
            where = rng.random(size) < 0.1
            flat[where] = rng.choice([limits.min, limits.max], size=int(where.sum()))
        arrays.append(flat.reshape(port.shape))
    return arrays


def _assert_matches_tflm(
    model: bytes,
    directory: Path,
    trials: int = 3,
    sanitize: bool = False,
    workspace_io: bool = False,
) -> None:
    """Our outputs equal TFLM's bit for bit (floats too: NaN where TFLM has NaN) on
    `_tied_inputs`."""
    path = directory / "model.tflite"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model)
    compiled = compile_model(
        path, directory / "build", sanitize=sanitize, workspace_io=workspace_io
    )
    interpreter = tflm.interpreter(model)
    rng = np.random.default_rng(7)
    for _ in range(trials):
        inputs = _tied_inputs(compiled.inputs, rng)
        ours, _ = compiled.run(inputs)
        theirs = tflm.run_with(interpreter, inputs, len(ours))
        for port, mine, reference in zip(compiled.outputs, ours, theirs, strict=True):
            assert mine.dtype == np.asarray(reference).dtype, port.name
            np.testing.assert_array_equal(
                mine, np.asarray(reference).reshape(mine.shape), err_msg=port.name
            )


def _comparison(
    opcode: str,
    dtype: type,
    lhs: Sequence[int],
    rhs: Sequence[int],
    quants: tuple[tuple[float, int] | None, tuple[float, int] | None] = (None, None),
    constant_rhs: np.ndarray | None = None,
) -> oracle.ModelSpec:
    out = tuple(np.broadcast_shapes(tuple(lhs), tuple(rhs)))
    tensors = [
        _tensor("a", dtype, lhs, quants[0]),
        _tensor("b", dtype, rhs, quants[1], constant_rhs),
        _tensor("y", np.bool_, out),
    ]
    inputs = [0] if constant_rhs is not None else [0, 1]
    return oracle.ModelSpec(tensors, [OperatorSpec(opcode, [0, 1], [2])], inputs, [2])


# int8 quantisations of the two inputs: equal ones (raw comparison), equal scales with
# different zero points, different scales (the rescaled values tie at some pairs).
INT8_QUANTISATIONS = [
    ((0.1, 0), (0.1, 0)),
    ((0.05, -20), (0.05, 7)),
    ((0.0173, -5), (0.0091, 77)),
    ((0.5, 127), (0.25, -128)),
    ((0.9, 3), (0.003, -100)),
]


@needs_gcc
@needs_tflm
def test_int8_comparisons_on_every_pair_of_inputs(tmp_path: Path) -> None:
    """Every (a, b) of int8 codes (a [256, 1] input against a [1, 256] one) through the six
    comparisons over several pairs of quantisations: TFLM's rescaling, bit for bit."""
    parts = {
        f"{opcode.lower()}{k}": _comparison(opcode, np.int8, (256, 1), (1, 256), quants)
        for opcode in COMPARISONS
        for k, quants in enumerate(INT8_QUANTISATIONS)
    }
    model = oracle.merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build")
    inputs = [ALL_INT8.reshape(port.shape) for port in compiled.inputs]
    ours, _ = compiled.run(inputs)
    theirs = tflm.run(model, inputs, len(ours))
    for port, mine, reference in zip(compiled.outputs, ours, theirs, strict=True):
        assert mine.dtype == np.bool_
        np.testing.assert_array_equal(mine, reference, err_msg=port.name)
    # the rescaling matters: the raw codes would compare otherwise
    assert not np.array_equal(ours[len(INT8_QUANTISATIONS) * 2 + 2], inputs[4] > inputs[5])


def test_int16_greater_is_refused_as_tflite_micro_leaves_its_rescaling_unset() -> None:
    """TFLM accepts int16 GREATER but its Prepare derives the rescaling for int8 only, so its
    answer depends on what its arena held before: there is no reference, and the import
    refuses the operator, naming it, the type and the tensors."""
    spec = _comparison("GREATER", np.int16, (4,), (4,), ((0.001, 0), (0.001, 0)))
    model = spec.model()
    with pytest.raises(ModelImportError, match=r"operator GREATER on int16 \(tensors 'a', 'b'"):
        import_tflite(model, "m.tflite")


@needs_gcc
@needs_tflm
@pytest.mark.parametrize(
    "dtype", [np.float32, np.int32, np.int64], ids=["float32", "int32", "int64"]
)
def test_comparisons_broadcasting_and_constants(tmp_path: Path, dtype: type) -> None:
    """float32 (NaN: only NOT_EQUAL is true), int32 and int64 comparisons on tied inputs: equal
    shapes, 4-D and 6-D broadcasts both ways, a constant per-channel input."""
    rng = np.random.default_rng(3)
    constant = _tied_inputs([Port("c", np.dtype(dtype), (1, 1, 6))], rng)[0]
    parts = {}
    for opcode in COMPARISONS:
        name = opcode.lower()
        parts[f"{name}_same"] = _comparison(opcode, dtype, (2, 3, 5), (2, 3, 5))
        parts[f"{name}_4d"] = _comparison(opcode, dtype, (1, 4, 1, 6), (2, 1, 5, 1))
        parts[f"{name}_6d"] = _comparison(opcode, dtype, (2, 1, 3, 1, 2, 2), (1, 2, 1, 2, 1, 1))
        parts[f"{name}_channel"] = _comparison(
            opcode, dtype, (1, 3, 4, 6), (1, 1, 6), (None, None), constant
        )
    _assert_matches_tflm(oracle.merge(parts), tmp_path)


@needs_gcc
@needs_tflm
def test_bool_comparisons_and_logical_operators(tmp_path: Path) -> None:
    """Bool inputs and outputs: EQUAL and NOT_EQUAL of bools, LOGICAL_AND / OR with
    broadcasting and a constant input, LOGICAL_NOT."""
    mask = np.array([True, False, True, True], np.bool_)
    parts = {
        "equal": _comparison("EQUAL", np.bool_, (3, 4), (3, 4)),
        "not_equal": _comparison("NOT_EQUAL", np.bool_, (2, 1, 4), (3, 1)),
    }
    for opcode in ("LOGICAL_AND", "LOGICAL_OR"):
        name = opcode.lower()
        for label, lhs, rhs, data in (
            ("same", (5, 7), (5, 7), None),
            ("4d", (2, 1, 3, 4), (1, 5, 1, 4), None),
            ("5d", (2, 1, 3, 1, 2), (1, 2, 1, 2, 1), None),
            ("constant", (3, 4), (4,), mask),
        ):
            out = tuple(np.broadcast_shapes(lhs, rhs))
            tensors = [
                _tensor("a", np.bool_, lhs),
                _tensor("b", np.bool_, rhs, data=data),
                _tensor("y", np.bool_, out),
            ]
            parts[f"{name}_{label}"] = oracle.ModelSpec(
                tensors,
                [OperatorSpec(opcode, [0, 1], [2])],
                [0] if data is not None else [0, 1],
                [2],
            )
    parts["not"] = oracle.ModelSpec(
        [_tensor("a", np.bool_, (2, 9)), _tensor("y", np.bool_, (2, 9))],
        [OperatorSpec("LOGICAL_NOT", [0], [1])],
        [0],
        [1],
    )
    _assert_matches_tflm(oracle.merge(parts), tmp_path)


def _select(
    dtype: type,
    shapes: tuple[Sequence[int], Sequence[int], Sequence[int]],
    constants: dict[int, np.ndarray] | None = None,
) -> oracle.ModelSpec:
    constants = constants or {}
    quant = (0.05, -3) if dtype == np.int8 else (0.001, 0) if dtype == np.int16 else None
    out = tuple(np.broadcast_shapes(*map(tuple, shapes)))
    tensors = [
        _tensor("c", np.bool_, shapes[0], data=constants.get(0)),
        _tensor("x", dtype, shapes[1], quant, constants.get(1)),
        _tensor("y", dtype, shapes[2], quant, constants.get(2)),
        _tensor("out", dtype, out, quant),
    ]
    inputs = [position for position in range(3) if position not in constants]
    return oracle.ModelSpec(tensors, [OperatorSpec("SELECT_V2", [0, 1, 2], [3])], inputs, [3])


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.int16], ids=["float32", "int8", "int16"])
def test_select_v2(tmp_path: Path, dtype: type) -> None:
    """SELECT_V2: equal shapes, the three inputs broadcast against each other (up to 6-D), a
    constant condition and a constant value."""
    rng = np.random.default_rng(5)
    condition = rng.integers(0, 2, size=(1, 6)).astype(np.bool_)
    values = _tied_inputs([Port("v", np.dtype(dtype), (4, 1))], rng)[0]
    parts = {
        "same": _select(dtype, ((3, 4, 5), (3, 4, 5), (3, 4, 5))),
        "broadcast": _select(dtype, ((4, 1), (1, 6), (4, 6))),
        "condition_row": _select(dtype, ((6,), (2, 3, 6), (2, 3, 1))),
        "five_d": _select(dtype, ((2, 1, 3, 1, 2), (1, 2, 1, 2, 1), (2, 2, 3, 2, 2))),
        "six_d": _select(dtype, ((2, 1, 3, 1, 2, 2), (1, 2, 1, 2, 1, 1), (2,))),
        "constant_condition": _select(dtype, ((1, 6), (4, 6), (4, 1)), {0: condition}),
        "constant_value": _select(dtype, ((4, 6), (4, 6), (4, 1)), {2: values}),
    }
    _assert_matches_tflm(oracle.merge(parts), tmp_path)


def _arg(
    opcode: str,
    dtype: type,
    shape: Sequence[int],
    axis: int,
) -> oracle.ModelSpec:
    quant = (0.1, 2) if dtype == np.int8 else None
    kept = [extent for position, extent in enumerate(shape) if position != axis % len(shape)]
    tensors = [
        _tensor("x", dtype, shape, quant),
        _tensor("axis", np.int32, (1,), data=np.array([axis], np.int32)),
        _tensor("y", np.int32, kept),
    ]
    options = "ArgMaxOptions" if opcode == "ARG_MAX" else "ArgMinOptions"
    return oracle.ModelSpec(
        tensors, [OperatorSpec(opcode, [0, 1], [2], options, {"OutputType": 2})], [0], [2]
    )


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.float32, np.int8], ids=["float32", "int8"])
def test_arg_max_and_arg_min(tmp_path: Path, dtype: type) -> None:
    """ARG_MAX and ARG_MIN along every axis (negative ones too), ties resolved to the first
    index as TFLM (int8 from [-3, 3] and floats on a grid of halves tie often; a float NaN
    first stays)."""
    parts = {}
    for opcode in ("ARG_MAX", "ARG_MIN"):
        for axis in (0, 1, 2, -1):
            parts[f"{opcode.lower()}_{axis % 3}_{axis < 0}"] = _arg(opcode, dtype, (3, 7, 4), axis)
        parts[f"{opcode.lower()}_row"] = _arg(opcode, dtype, (1, 10), 1)
        parts[f"{opcode.lower()}_single"] = _arg(opcode, dtype, (5, 1), 1)
    model = oracle.merge(parts)
    if dtype == np.int8:  # few distinct int8 codes: ties everywhere
        path = tmp_path / "model.tflite"
        path.write_bytes(model)
        compiled = compile_model(path, tmp_path / "build")
        rng = np.random.default_rng(11)
        for _ in range(3):
            inputs = [
                rng.integers(-3, 4, size=port.shape).astype(np.int8) for port in compiled.inputs
            ]
            ours, _ = compiled.run(inputs)
            theirs = tflm.run(model, inputs, len(ours))
            for mine, reference in zip(ours, theirs, strict=True):
                assert mine.dtype == np.int32
                np.testing.assert_array_equal(mine, reference)
    _assert_matches_tflm(model, tmp_path / "tied")


def _chain() -> bytes:
    """x (int8) -> GREATER than a constant -> LOGICAL_AND with the bool input `mask` ->
    SELECT_V2 between x and y -> ARG_MAX over channels (int32) -> EQUAL to the int32 input
    `label`: a bool output, an int32 one (the arg max) and every kind of activation between."""
    q = (0.05, -3)
    threshold = np.array([5, -7, 0, 12], np.int8)
    tensors = [
        _tensor("x", np.int8, (1, 3, 5, 4), q),  # 0
        _tensor("threshold", np.int8, (4,), (0.04, 1), threshold),  # 1
        _tensor("above", np.bool_, (1, 3, 5, 4)),  # 2
        _tensor("mask", np.bool_, (1, 3, 5, 1)),  # 3
        _tensor("chosen", np.bool_, (1, 3, 5, 4)),  # 4
        _tensor("y", np.int8, (1, 3, 5, 4), q),  # 5
        _tensor("selected", np.int8, (1, 3, 5, 4), q),  # 6
        _tensor("axis", np.int32, (1,), data=np.array([3], np.int32)),  # 7
        _tensor("best", np.int32, (1, 3, 5)),  # 8
        _tensor("label", np.int32, (1, 3, 1)),  # 9
        _tensor("hit", np.bool_, (1, 3, 5)),  # 10
    ]
    operators = [
        OperatorSpec("GREATER", [0, 1], [2]),
        OperatorSpec("LOGICAL_AND", [2, 3], [4]),
        OperatorSpec("SELECT_V2", [4, 0, 5], [6]),
        OperatorSpec("ARG_MAX", [6, 7], [8], "ArgMaxOptions", {"OutputType": 2}),
        OperatorSpec("EQUAL", [8, 9], [10]),
    ]
    return write_model(tensors, operators, [0, 3, 5, 9], [10, 8])


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("workspace_io", [False, True], ids=["io_outside", "io_in_workspace"])
def test_a_chain_of_bool_and_int32_activations_under_the_sanitizers(
    tmp_path: Path, workspace_io: bool
) -> None:
    """Bool and int32 model inputs and outputs and activations between operators, with the
    inputs and outputs outside the workspace and inside it, under ASan and UBSan."""
    _assert_matches_tflm(_chain(), tmp_path, trials=4, sanitize=True, workspace_io=workspace_io)


def test_the_header_states_bool_and_int32_types(tmp_path: Path) -> None:
    """The header names each input's and output's C type: a bool is a byte (`uint8_t`, 0 or 1,
    said in its comment), an int32 `int32_t`; the plan sizes a bool tensor a byte an
    element."""
    path = tmp_path / "chain.tflite"
    path.write_bytes(_chain())
    generate_c(path, tmp_path)
    header = (tmp_path / "model.h").read_text()
    assert "#define MODEL_INPUT_MASK_DTYPE uint8_t" in header
    assert "/* input 'mask' (model tensor 'mask'), bool: one byte per element, 0 or 1 */" in header
    assert "#define MODEL_INPUT_MASK_SIZE 15" in header
    assert "#define MODEL_INPUT_LABEL_DTYPE int32_t" in header
    assert "#define MODEL_INPUT_LABEL_SIZE 12" in header
    assert "#define MODEL_OUTPUT_HIT_DTYPE uint8_t" in header
    assert "#define MODEL_OUTPUT_HIT_SIZE 15" in header
    assert "#define MODEL_OUTPUT_BEST_DTYPE int32_t" in header


def test_what_tflite_micro_does_not_evaluate_is_refused_at_once() -> None:
    """TFLM's type lists: int16 only for GREATER, no bool ordering, SELECT_V2 without int32
    values, ARG_MAX without int16 inputs or int64 outputs, no SELECT."""
    tensors = [
        _tensor("s", np.int16, (4,), (0.001, 0)),  # 0
        _tensor("t", np.int16, (4,), (0.001, 0)),  # 1
        _tensor("ge", np.bool_, (4,)),  # 2
        _tensor("b", np.bool_, (4,)),  # 3
        _tensor("lt", np.bool_, (4,)),  # 4
        _tensor("i", np.int32, (4,)),  # 5
        _tensor("sel", np.int32, (4,)),  # 6
        _tensor("axis", np.int32, (1,), data=np.array([0], np.int32)),  # 7
        _tensor("am", np.int32, (1,)),  # 8
        _tensor("f", np.float32, (2, 4)),  # 9
        _tensor("am64", np.int64, (4,)),  # 10
        _tensor("old", np.int32, (4,)),  # 11
    ]
    operators = [
        OperatorSpec("GREATER_EQUAL", [0, 1], [2]),
        OperatorSpec("LESS", [3, 3], [4]),
        OperatorSpec("SELECT_V2", [3, 5, 5], [6]),
        OperatorSpec("ARG_MAX", [0, 7], [8]),
        OperatorSpec("ARG_MIN", [9, 7], [10]),
        OperatorSpec("SELECT", [3, 5, 5], [11]),
    ]
    model = write_model(tensors, operators, [0, 1, 3, 5, 9], [2, 4, 6, 8, 10, 11])
    with pytest.raises(ModelImportError) as error:
        import_tflite(model, "m.tflite")
    assert str(error.value) == (
        "m.tflite: unsupported: operator SELECT (operator 5), operator GREATER_EQUAL on int16 "
        "(tensors 's', 't' of operator 0), operator LESS on bool (tensor 'b' of operator 1), "
        "operator SELECT_V2 on int32 (tensors 'i', 'sel' of operator 2), operator ARG_MAX on "
        "int16 (tensor 's' of operator 3), operator ARG_MIN on int64 (tensor 'am64' of "
        "operator 4)"
    )


@needs_gcc
@needs_tflm
def test_usmp_validate_reads_and_compares_bool_and_int32_io(tmp_path: Path) -> None:
    """`usmp-validate`'s library: random bool and int32 inputs, bool and int32 outputs
    compared bit for bit (`bit-exact`, not a float tolerance)."""
    path = tmp_path / "chain.tflite"
    path.write_bytes(_chain())
    result = validate(path, inputs=3)
    assert result.passed
    lines = [check.line() for check in result.checks]
    assert lines == ["output hit (bool 1x3x5): bit-exact", "output best (int32 1x3x5): bit-exact"]


@needs_gcc
@needs_tflm
def test_reshapes_of_bool_and_int32_activations(tmp_path: Path) -> None:
    """RESHAPE and SQUEEZE are views of bool and int32 activations too: a classifier head's
    ARG_MAX reshaped to the model output, a comparison squeezed, a bool model input reshaped
    into LOGICAL_NOT. (TFLM's EXPAND_DIMS takes int8, int16 and float32 only.)"""
    shape_2x5 = np.array([2, 5], np.int32)
    tensors = [
        _tensor("logits", np.float32, (1, 10)),  # 0
        _tensor("axis", np.int32, (1,), data=np.array([1], np.int32)),  # 1
        _tensor("best", np.int32, (1,)),  # 2
        _tensor("shape11", np.int32, (2,), data=np.array([1, 1], np.int32)),  # 3
        _tensor("best2d", np.int32, (1, 1)),  # 4
        _tensor("zero", np.float32, (1,), data=np.zeros(1, np.float32)),  # 5
        _tensor("positive", np.bool_, (1, 10)),  # 6
        _tensor("squeezed", np.bool_, (10,)),  # 7
        _tensor("flags", np.bool_, (10,)),  # 8
        _tensor("shape2x5", np.int32, (2,), data=shape_2x5),  # 9
        _tensor("grid", np.bool_, (2, 5)),  # 10
        _tensor("negated", np.bool_, (2, 5)),  # 11
    ]
    operators = [
        OperatorSpec("ARG_MAX", [0, 1], [2], "ArgMaxOptions", {"OutputType": 2}),
        OperatorSpec("RESHAPE", [2, 3], [4]),
        OperatorSpec("GREATER", [0, 5], [6]),
        OperatorSpec("SQUEEZE", [6], [7]),
        OperatorSpec("RESHAPE", [8, 9], [10]),
        OperatorSpec("LOGICAL_NOT", [10], [11]),
    ]
    model = write_model(tensors, operators, [0, 8], [4, 7, 11])
    _assert_matches_tflm(model, tmp_path, trials=4)
