"""The TensorList write the TensorFlow Lite converter lowers `TensorArray.write(i, item)` to
(`frontends/tflite/tensor_lists.py`: two SLICEs of dynamic shape and a CONCATENATION become one
SET_ROW), on models written with `tflite_writer` in the converter's form, float32 and int8,
against LiteRT's reference kernels (TFLM does not compute tensors of dynamic shape as
TensorFlow Lite does), under ASan/UBSan; an index outside the list writes the nearest row;
near misses of the pattern keep their dynamic shapes and are refused in one line. The Keras 3
exports that write such lists (`return_sequences=True`) are in `test_control_flow.py`."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.reader import read_graph
from usmp_dialect.frontends.tflite.tensor_lists import SET_ROW
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model
from usmp_dialect.validation.host import compile_model
from usmp_dialect.validation.oracles import litert_outputs

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
ROWS, COLUMNS = 5, 3


def _int32(name: str, values: list[int]) -> TensorSpec:
    return TensorSpec(name, np.int32, (len(values),), np.array(values, np.int32))


def list_write(dtype: type, plus: int = 1) -> bytes:
    """`out = CONCATENATION(SLICE(list, 0, [i, -1]), item, SLICE(list, [i + plus, 0], -1))`
    as the converter writes it (`plus` 1: a list write; anything else: a near miss)."""
    quant = {"scales": [0.05], "zero_points": [-3]} if dtype == np.int8 else {}
    tensors = [
        TensorSpec("list", dtype, (ROWS, COLUMNS), **quant),  # 0
        TensorSpec("item", dtype, (1, COLUMNS), **quant),  # 1
        TensorSpec("i", np.int32, (1,)),  # 2
        TensorSpec("shape1", np.int32, (1,), np.array([1], np.int32)),  # 3
        TensorSpec("i1", np.int32, (1,)),  # 4: RESHAPE(i)
        _int32("minus_ones", [-1]),  # 5
        TensorSpec("head_size", np.int32, (2,)),  # 6
        _int32("zeros", [0, 0]),  # 7
        TensorSpec("head", dtype, (1, 1), shape_signature=(-1, -1), **quant),  # 8
        TensorSpec("one", np.int32, (), np.array(plus, np.int32)),  # 9
        TensorSpec("next", np.int32, (1,)),  # 10: i + plus
        TensorSpec("next1", np.int32, (1,)),  # 11
        _int32("zero", [0]),  # 12
        TensorSpec("tail_begin", np.int32, (2,)),  # 13
        _int32("all", [-1, -1]),  # 14
        TensorSpec("tail", dtype, (1, COLUMNS), shape_signature=(-1, COLUMNS), **quant),  # 15
        TensorSpec("out", dtype, (ROWS, COLUMNS), **quant),  # 16
    ]
    cat = {"Axis": 0, "FusedActivationFunction": 0}
    operators = [
        OperatorSpec("RESHAPE", [2, 3], [4]),
        OperatorSpec("CONCATENATION", [4, 5], [6], "ConcatenationOptions", cat),
        OperatorSpec("SLICE", [0, 7, 6], [8]),
        OperatorSpec("ADD", [2, 9], [10], "AddOptions"),
        OperatorSpec("RESHAPE", [10, 3], [11]),
        OperatorSpec("CONCATENATION", [11, 12], [13], "ConcatenationOptions", cat),
        OperatorSpec("SLICE", [0, 13, 14], [15]),
        OperatorSpec("CONCATENATION", [8, 1, 15], [16], "ConcatenationOptions", cat),
    ]
    return write_model(tensors, operators, [0, 1, 2], [16])


def test_a_list_write_becomes_one_set_row() -> None:
    graph = read_graph(list_write(np.float32), "m.tflite")
    (op,) = graph.operators  # the SLICEs and the begin and size arithmetic are gone
    assert op.opcode == SET_ROW and op.index == 7 and op.folded == (2, 6)
    assert op.inputs == (0, 1, 2) and op.outputs == (16,)


@needs_gcc
@pytest.mark.parametrize("dtype", [np.float32, np.int8], ids=["float32", "int8"])
def test_list_write_matches_litert(dtype: type, tmp_path: Path) -> None:
    """Every row written, as LiteRT computes the SLICEs and the CONCATENATION (int8 byte for
    byte, float exactly: values are copied); under ASan/UBSan."""
    model = list_write(dtype)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", sanitize=True)
    rng = np.random.default_rng(0)
    for row in range(ROWS):
        if dtype == np.int8:
            values = rng.integers(-128, 128, (ROWS + 1, COLUMNS)).astype(np.int8)
        else:
            values = rng.standard_normal((ROWS + 1, COLUMNS)).astype(np.float32)
        inputs = [values[:ROWS], values[ROWS:], np.array([row], np.int32)]
        ours, _ = compiled.run(inputs)
        (theirs,) = litert_outputs(model, inputs)
        np.testing.assert_array_equal(ours[0], theirs)
        expected = values[:ROWS].copy()
        expected[row] = values[ROWS]
        np.testing.assert_array_equal(ours[0], expected)


@needs_gcc
def test_an_index_outside_the_list_writes_the_nearest_row(tmp_path: Path) -> None:
    """Where TensorFlow Lite's SLICE fails (a size beyond the list), ours writes row 0 or the
    last row rather than memory outside the list."""
    path = tmp_path / "model.tflite"
    path.write_bytes(list_write(np.float32))
    compiled = compile_model(path, tmp_path / "build", sanitize=True)
    values = np.arange(ROWS * COLUMNS, dtype=np.float32).reshape(ROWS, COLUMNS)
    item = np.full((1, COLUMNS), -1.0, np.float32)
    for index, row in ((-3, 0), (ROWS + 4, ROWS - 1)):
        ours, _ = compiled.run([values, item, np.array([index], np.int32)])
        expected = values.copy()
        expected[row] = item
        np.testing.assert_array_equal(ours[0], expected)


def test_a_near_miss_keeps_its_dynamic_shapes_and_is_refused() -> None:
    """The tail read from `i + 2`: no list write; its SLICEs' dynamic shapes are refused."""
    with pytest.raises(ModelImportError, match=r"tensor 'head' \(index 8\) has a dynamic shape"):
        read_graph(list_write(np.float32, plus=2), "m.tflite")
