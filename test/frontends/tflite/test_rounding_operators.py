"""The last TFLM builtins we import, against TensorFlow Lite Micro bit for bit on models
written with `tflite_writer`, for the types TFLM computes them in: FLOOR, CEIL, ROUND,
FLOOR_DIV, FLOOR_MOD and L2_POOL_2D (float32), ADD_N (float32, int8), ZEROS_LIKE (int8, int32,
int64, float32), REVERSE_V2 and BROADCAST_TO (int8, int16, int32, int64, float32, bool),
EMBEDDING_LOOKUP (float32 and int8 tables, int8 dequantised) and BROADCAST_ARGS (constants,
folded). Inputs with halves (ROUND's ties go to even), negative operands on either side of
FLOOR_DIV and FLOOR_MOD, quotients a float division would round up to an integer (FLOOR_DIV
divides in double), zero divisors for FLOOR_MOD (TFLM's FLOOR_DIV fails on them), NaN,
infinities and signed zeros; broadcasting and constant divisors; a chain under ASan/UBSan;
other types refused."""

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
from usmp_dialect.validation.host import Port, compile_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
oracle = load_file(Path(__file__).parent / "tflm_oracle.py")

SPECIALS = np.array(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 16777215.0, 1e30],
    np.float32,
)
# 1 / 0.1f is 9.99999985 in double, 10 once rounded to float: FLOOR_DIV gives 9
DIVISORS = np.array([0.1, -0.1, 0.3, -0.7, 1.0, -1.0, 2.0, -3.0, 1e-30, np.inf], np.float32)


def _inputs(ports: Sequence[Port], rng: np.random.Generator, zero_divisors: bool) -> list:
    """Dividends (and unary inputs) on a grid of halves scaled over magnitudes, with the
    specials; divisors (ports named `*_d`) from `DIVISORS` or random, zeros only where the
    operator defines them."""
    arrays = []
    for port in ports:
        size = int(np.prod(port.shape))
        if port.dtype == np.bool_:
            arrays.append((rng.random(size) < 0.5).reshape(port.shape))
            continue
        if port.name.endswith("ids"):  # EMBEDDING_LOOKUP's, into tables of `ROWS` rows
            arrays.append(rng.integers(0, ROWS, size=size).astype(np.int32).reshape(port.shape))
            continue
        if port.dtype != np.float32:
            limits = np.iinfo(port.dtype)
            flat = rng.integers(limits.min, limits.max, size=size, endpoint=True)
            arrays.append(flat.astype(port.dtype).reshape(port.shape))
            continue
        if port.name.endswith("_d"):
            flat = rng.choice(DIVISORS, size=size)
            where = rng.random(size) < 0.4
            flat[where] = rng.standard_normal(int(where.sum())) * 4
            if zero_divisors:
                flat[rng.random(size) < 0.1] = 0.0
        else:
            flat = np.round(rng.standard_normal(size) * 8) / 2 * 10.0 ** rng.integers(-2, 3, size)
            where = rng.random(size) < 0.2
            flat[where] = rng.choice(SPECIALS, size=int(where.sum()))
            flat[rng.random(size) < 0.1] = 1.0
        arrays.append(flat.astype(np.float32).reshape(port.shape))
    return arrays


def _assert_bit_exact(mine: np.ndarray, reference: np.ndarray, name: str) -> None:
    reference = np.asarray(reference).reshape(mine.shape)
    assert mine.dtype == reference.dtype, name
    if mine.dtype != np.float32:
        np.testing.assert_array_equal(mine, reference, err_msg=name)
        return
    nan = np.isnan(reference)
    np.testing.assert_array_equal(np.isnan(mine), nan, err_msg=name)
    np.testing.assert_array_equal(
        mine[~nan].view(np.uint32), reference[~nan].view(np.uint32), err_msg=name
    )


def _assert_matches_tflm(
    model: bytes, directory: Path, zero_divisors: bool, trials: int = 3, sanitize: bool = False
) -> list[np.ndarray]:
    """Our outputs equal TFLM's bit for bit (NaN where TFLM has NaN); our last outputs."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, directory / "build", sanitize=sanitize)
    interpreter = tflm.interpreter(model)
    rng = np.random.default_rng(11)
    ours: list[np.ndarray] = []
    for _ in range(trials):
        inputs = _inputs(compiled.inputs, rng, zero_divisors)
        ours, _ = compiled.run(inputs)
        theirs = tflm.run_with(interpreter, inputs, len(ours))
        for port, mine, reference in zip(compiled.outputs, ours, theirs, strict=True):
            _assert_bit_exact(mine, reference, port.name)
    return ours


def _float(name: str, shape: Sequence[int], data: np.ndarray | None = None) -> TensorSpec:
    return TensorSpec(name, np.float32, tuple(shape), data)


def _unary(opcode: str, shape: Sequence[int] = (3, 5, 8)) -> oracle.ModelSpec:
    tensors = [_float("x", shape), _float("y", shape)]
    return oracle.ModelSpec(tensors, [OperatorSpec(opcode, [0], [1])], [0], [1])


def _binary(
    opcode: str,
    lhs: Sequence[int],
    rhs: Sequence[int],
    constant: np.ndarray | None = None,
) -> oracle.ModelSpec:
    out = tuple(np.broadcast_shapes(tuple(lhs), tuple(rhs)))
    tensors = [_float("x", lhs), _float("x_d", rhs, constant), _float("y", out)]
    inputs = [0] if constant is not None else [0, 1]
    return oracle.ModelSpec(tensors, [OperatorSpec(opcode, [0, 1], [2])], inputs, [2])


@needs_gcc
@needs_tflm
def test_floor_ceil_and_round(tmp_path: Path) -> None:
    parts = {opcode.lower(): _unary(opcode) for opcode in ("FLOOR", "CEIL", "ROUND")}
    model = oracle.merge(parts)
    _assert_matches_tflm(model, tmp_path, zero_divisors=False)
    # ties to even, which `round` (half away from zero) would not give
    path = tmp_path / "halves.tflite"
    path.write_bytes(_unary("ROUND", (6,)).model())
    compiled = compile_model(path, tmp_path / "halves")
    halves = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5], np.float32)
    (ours,), _ = compiled.run([halves])
    expected = np.array([-2.0, -2.0, 0.0, 0.0, 2.0, 2.0], np.float32)  # -0.5 gives +0
    np.testing.assert_array_equal(ours.view(np.uint32), expected.view(np.uint32))


def _division_parts(opcode: str) -> dict[str, oracle.ModelSpec]:
    name = opcode.lower()
    constant = np.array([0.1, -0.1, -2.0, 3.0, 0.7, -1e-30, 1.0, -0.3], np.float32)
    return {
        f"{name}_same": _binary(opcode, (4, 6, 8), (4, 6, 8)),
        f"{name}_broadcast": _binary(opcode, (4, 1, 8), (1, 6, 1)),
        f"{name}_constant": _binary(opcode, (4, 6, 8), (8,), constant),
    }


@needs_gcc
@needs_tflm
def test_floor_div(tmp_path: Path) -> None:
    """No zero divisor (TFLM's `Invoke` fails on one); 1 / 0.1 among the inputs (9, not 10)."""
    ours = _assert_matches_tflm(
        oracle.merge(_division_parts("FLOOR_DIV")), tmp_path, zero_divisors=False
    )
    assert len(ours) == 3
    path = tmp_path / "tenth.tflite"
    path.write_bytes(_binary("FLOOR_DIV", (2,), (2,)).model())
    compiled = compile_model(path, tmp_path / "tenth")
    ones, tenths = np.ones(2, np.float32), np.array([0.1, -0.1], np.float32)
    (quotient,), _ = compiled.run([ones, tenths])
    np.testing.assert_array_equal(quotient, [9.0, -10.0])


@needs_gcc
@needs_tflm
def test_floor_mod_with_zero_divisors(tmp_path: Path) -> None:
    _assert_matches_tflm(oracle.merge(_division_parts("FLOOR_MOD")), tmp_path, zero_divisors=True)


def _chain() -> bytes:
    """x FLOOR_MOD a constant -> ROUND -> FLOOR_DIV by the input `x_d` (broadcast) -> CEIL ->
    FLOOR, then ADD_N of that, x and ZEROS_LIKE(x), reversed along two axes and broadcast to
    a leading dimension of 2."""
    shape = (2, 3, 4)
    period = np.array([2.5, -1.5, 0.3, 7.0], np.float32)
    tensors = [
        _float("x", shape),  # 0
        _float("period", (4,), period),  # 1
        _float("wrapped", shape),  # 2
        _float("rounded", shape),  # 3
        _float("x_d", (3, 1)),  # 4
        _float("quotient", shape),  # 5
        _float("raised", shape),  # 6
        _float("floored", shape),  # 7
        _float("zeros", shape),  # 8
        _float("summed", shape),  # 9
        TensorSpec("axes", np.int32, (2,), np.array([1, 2], np.int32)),  # 10
        _float("reversed", shape),  # 11
        TensorSpec("to", np.int32, (4,), np.array([2, *shape], np.int32)),  # 12
        _float("y", (2, *shape)),  # 13
    ]
    operators = [
        OperatorSpec("FLOOR_MOD", [0, 1], [2]),
        OperatorSpec("ROUND", [2], [3]),
        OperatorSpec("FLOOR_DIV", [3, 4], [5]),
        OperatorSpec("CEIL", [5], [6]),
        OperatorSpec("FLOOR", [6], [7]),
        OperatorSpec("ZEROS_LIKE", [0], [8]),
        OperatorSpec("ADD_N", [7, 0, 8], [9]),
        OperatorSpec("REVERSE_V2", [9, 10], [11]),
        OperatorSpec("BROADCAST_TO", [11, 12], [13]),
    ]
    return write_model(tensors, operators, [0, 4], [13, 3])


@needs_gcc
@needs_tflm
def test_a_chain_under_the_sanitizers(tmp_path: Path) -> None:
    _assert_matches_tflm(_chain(), tmp_path, zero_divisors=False, trials=4, sanitize=True)


def _add_n(
    count: int, dtype: type = np.float32, quants: Sequence[tuple[float, int]] = ()
) -> oracle.ModelSpec:
    """`count` inputs of one shape; int8 quantisations (input, output) in `quants`."""
    shape = (2, 3, 7)

    def spec(name: str, quant: tuple[float, int] | None) -> TensorSpec:
        if quant is None:
            return TensorSpec(name, dtype, shape)
        return TensorSpec(name, dtype, shape, None, [quant[0]], [quant[1]])

    inputs = [spec(f"x{k}", quants[0] if quants else None) for k in range(count)]
    output = spec("y", quants[1] if quants else None)
    operators = [OperatorSpec("ADD_N", list(range(count)), [count])]
    return oracle.ModelSpec([*inputs, output], operators, list(range(count)), [count])


@needs_gcc
@needs_tflm
def test_add_n(tmp_path: Path) -> None:
    """float32 with 2 and 5 inputs (-0 inputs sum to +0, NaN and infinities among them);
    int8 with several quantisations, the zero point entering the sum once more as TFLite's
    kernel has it."""
    parts = {"f2": _add_n(2), "f5": _add_n(5)}
    for k, quants in enumerate(
        [((0.1, 0), (0.2, 0)), ((0.05, -20), (0.13, 7)), ((0.5, 100), (1.0, -128))]
    ):
        parts[f"q{k}"] = _add_n(3, np.int8, quants)
    _assert_matches_tflm(oracle.merge(parts), tmp_path, zero_divisors=False)


@needs_gcc
@needs_tflm
def test_zeros_like(tmp_path: Path) -> None:
    parts = {
        np.dtype(dtype).name: oracle.ModelSpec(
            [TensorSpec("x", dtype, (3, 4)), TensorSpec("y", dtype, (3, 4))],
            [OperatorSpec("ZEROS_LIKE", [0], [1])],
            [0],
            [1],
        )
        for dtype in (np.int8, np.int32, np.int64, np.float32)
    }
    ours = _assert_matches_tflm(oracle.merge(parts), tmp_path, zero_divisors=False)
    assert all(not output.any() for output in ours)


def _moved(
    opcode: str, dtype: type, source: Sequence[int], out: Sequence[int], constant: list[int]
) -> oracle.ModelSpec:
    tensors = [
        TensorSpec("x", dtype, tuple(source)),
        TensorSpec("c", np.int32, (len(constant),), np.array(constant, np.int32)),
        TensorSpec("y", dtype, tuple(out)),
    ]
    return oracle.ModelSpec(tensors, [OperatorSpec(opcode, [0, 1], [2])], [0], [2])


ROWS = 10


def _embedding(
    table_shape: tuple[int, ...],
    table_dtype: type,
    output_dtype: type,
    constant: bool,
    scale: float | None = None,
) -> oracle.ModelSpec:
    rng = np.random.default_rng(len(table_shape))
    data = None
    if constant and table_dtype == np.int8:
        data = rng.integers(-128, 128, size=table_shape).astype(np.int8)
    elif constant:
        data = rng.standard_normal(table_shape).astype(np.float32)
    quant = {"scales": [scale], "zero_points": [0]} if scale is not None else {}
    tensors = [
        TensorSpec("ids", np.int32, (6,)),
        TensorSpec("table", table_dtype, table_shape, data, **quant),  # type: ignore[arg-type]
        TensorSpec("y", output_dtype, (6, *table_shape[1:])),
    ]
    inputs = [0] if constant else [0, 1]
    return oracle.ModelSpec(tensors, [OperatorSpec("EMBEDDING_LOOKUP", [0, 1], [2])], inputs, [2])


@needs_gcc
@needs_tflm
def test_embedding_lookup(tmp_path: Path) -> None:
    """float32 and int8 tables (constant and a model input, 2-D and 3-D) copied, and an int8
    table dequantised into float32; repeated ids."""
    parts = {
        "float": _embedding((ROWS, 4), np.float32, np.float32, constant=True),
        "float_input": _embedding((ROWS, 3), np.float32, np.float32, constant=False),
        "int8": _embedding((ROWS, 2, 3), np.int8, np.int8, constant=True, scale=0.1),
        "hybrid": _embedding((ROWS, 5), np.int8, np.float32, constant=True, scale=0.0372),
    }
    _assert_matches_tflm(oracle.merge(parts), tmp_path, zero_divisors=False)


MOVED_TYPES = (np.int8, np.int16, np.int32, np.int64, np.float32, np.bool_)


@needs_gcc
@needs_tflm
def test_reverse_v2(tmp_path: Path) -> None:
    """Every type TFLM reverses; one axis, the last, a negative one, two and three contiguous
    ones."""
    cases = [([0], 1), ([2], 2), ([-1], 3), ([1, 2], 0), ([2, 1, 3], 4), ([-4, -3], 5)]
    parts = {}
    for axes, k in cases:
        dtype = MOVED_TYPES[k]
        parts[f"r{k}"] = _moved("REVERSE_V2", dtype, (2, 3, 4, 5), (2, 3, 4, 5), axes)
    ours = _assert_matches_tflm(oracle.merge(parts), tmp_path, zero_divisors=False)
    assert len(ours) == len(cases)


@needs_gcc
@needs_tflm
def test_broadcast_to(tmp_path: Path) -> None:
    """Lower-rank inputs, inner and outer size-1 dimensions, 5-D outputs, every type."""
    cases = [
        ((3,), (2, 4, 3)),
        ((4, 1), (2, 4, 6)),
        ((1, 3, 1), (2, 3, 5)),
        ((2, 1, 3, 1, 2), (2, 4, 3, 2, 2)),
        ((1,), (7,)),
        ((1, 5), (3, 1, 4, 5)),
    ]
    parts = {
        f"b{k}": _moved("BROADCAST_TO", MOVED_TYPES[k], source, out, list(out))
        for k, (source, out) in enumerate(cases)
    }
    ours = _assert_matches_tflm(oracle.merge(parts), tmp_path, zero_divisors=False)
    assert [o.shape for o in ours] == [out for _, out in cases]


def _l2_pool(
    size: tuple[int, int, int], filter_: int, stride: int, same: bool, activation: int
) -> oracle.ModelSpec:
    height, width, channels = size
    if same:
        out_h, out_w = -(-height // stride), -(-width // stride)
    else:
        out_h, out_w = (height - filter_) // stride + 1, (width - filter_) // stride + 1
    tensors = [_float("x", (2, height, width, channels)), _float("y", (2, out_h, out_w, channels))]
    fields = {
        "Padding": 0 if same else 1,
        "StrideH": stride,
        "StrideW": stride,
        "FilterHeight": filter_,
        "FilterWidth": filter_,
        "FusedActivationFunction": activation,
    }
    operators = [OperatorSpec("L2_POOL_2D", [0], [1], "Pool2DOptions", fields)]
    return oracle.ModelSpec(tensors, operators, [0], [1])


@needs_gcc
@needs_tflm
def test_l2_pool_2d(tmp_path: Path) -> None:
    """SAME windows clipped at the borders (fewer taps), VALID, strides, a global window and
    the fused activations (RELU, RELU_N1_TO_1, RELU6)."""
    parts = {
        "same3": _l2_pool((7, 6, 3), 3, 2, True, 0),
        "valid2": _l2_pool((6, 6, 4), 2, 2, False, 1),
        "same_stride1": _l2_pool((5, 5, 2), 3, 1, True, 2),
        "global": _l2_pool((4, 5, 6), 4, 1, False, 3),
        "overlap": _l2_pool((9, 9, 1), 4, 3, False, 0),
    }
    _assert_matches_tflm(oracle.merge(parts), tmp_path, zero_divisors=False)


@needs_gcc
@needs_tflm
def test_broadcast_args_of_constants_folds_into_a_reshape(tmp_path: Path) -> None:
    """BROADCAST_ARGS([2, 1, 1], [3, 1]) = [2, 3, 1], folded at import, as the shape of a
    RESHAPE (TFLM's BROADCAST_TO wants a constant shape; its RESHAPE reads the computed one)."""
    tensors = [
        _float("x", (6,)),
        TensorSpec("s1", np.int32, (3,), np.array([2, 1, 1], np.int32)),
        TensorSpec("s2", np.int32, (2,), np.array([3, 1], np.int32)),
        TensorSpec("shape", np.int32, (3,)),
        _float("y", (2, 3, 1)),
    ]
    operators = [
        OperatorSpec("BROADCAST_ARGS", [1, 2], [3]),
        OperatorSpec("RESHAPE", [0, 3], [4]),
    ]
    model = write_model(tensors, operators, [0], [4])
    (ours,) = _assert_matches_tflm(model, tmp_path, zero_divisors=False)
    assert ours.shape == (2, 3, 1)


def test_other_types_are_refused_at_once() -> None:
    """TFLM computes these in float32 only: int8 and int32 are refused, both in one line."""
    tensors = [
        TensorSpec("a", np.int8, (4,), scales=[0.1], zero_points=[0]),
        TensorSpec("b", np.int8, (4,), scales=[0.1], zero_points=[0]),
        TensorSpec("c", np.int32, (4,)),
        TensorSpec("d", np.int32, (4,)),
        TensorSpec("e", np.int32, (4,)),
    ]
    operators = [OperatorSpec("FLOOR", [0], [1]), OperatorSpec("FLOOR_DIV", [2, 3], [4])]
    model = write_model(tensors, operators, [0, 2, 3], [1, 4])
    with pytest.raises(ModelImportError) as error:
        import_tflite(model, "m.tflite")
    assert str(error.value) == (
        "m.tflite: unsupported: operator FLOOR on int8 (tensors 'a', 'b' of operator 0), "
        "operator FLOOR_DIV on int32 (tensors 'c', 'd', 'e' of operator 1)"
    )


def test_non_contiguous_reverse_axes_are_refused() -> None:
    """TFLM's `Invoke` fails on axes that are not contiguous; the import refuses them."""
    spec = _moved("REVERSE_V2", np.float32, (2, 3, 4), (2, 3, 4), [0, 2])
    with pytest.raises(ModelImportError, match="not contiguous"):
        import_tflite(spec.model(), "m.tflite")


@pytest.mark.parametrize("declared", [(2, 3, 4), (3, 2, 4)])
def test_broadcast_args_folds_the_broadcast_shape(declared: tuple[int, ...]) -> None:
    """BROADCAST_ARGS([2, 1, 4], [3, 1]) folds to [2, 3, 4]: BROADCAST_TO by it imports into
    that output shape and is refused into any other."""
    tensors = [
        _float("x", (3, 1)),
        TensorSpec("s1", np.int32, (3,), np.array([2, 1, 4], np.int32)),
        TensorSpec("s2", np.int32, (2,), np.array([3, 1], np.int32)),
        TensorSpec("shape", np.int32, (3,)),
        _float("y", declared),
    ]
    operators = [
        OperatorSpec("BROADCAST_ARGS", [1, 2], [3]),
        OperatorSpec("BROADCAST_TO", [0, 3], [4]),
    ]
    model = write_model(tensors, operators, [0], [4])
    if declared == (2, 3, 4):
        import_tflite(model, "m.tflite")
        return
    with pytest.raises(ModelImportError, match=r"the shape \[2, 3, 4\] differs"):
        import_tflite(model, "m.tflite")
