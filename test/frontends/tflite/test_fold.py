"""Shape computations folded at import: the Keras SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE
chain (whose RESHAPE stays a view), constant FILL, CAST, GATHER, RANGE, CONCATENATION, PACK,
UNPACK, SLICE, STRIDED_SLICE and PAD, and constant-only ADD/SUB/MUL; STRIDED_SLICE's index
semantics against TensorFlow Lite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects import func, memref

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite import importer
from usmp_dialect.frontends.tflite.importer import OperatorContext, TfliteImporter, import_tflite
from usmp_dialect.frontends.tflite.ops.fold import (
    FoldError,
    fold_constant_arithmetic,
    sliced,
    strided_slice_spec_of,
)
from usmp_dialect.frontends.tflite.reader import read_graph
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

oracle = load_file(Path(__file__).parent / "tflm_oracle.py")
ModelSpec = oracle.ModelSpec


def i32(name: str, values: object) -> TensorSpec:
    array = np.asarray(values, dtype=np.int32)
    return TensorSpec(name, np.int32, array.shape, data=array)


def concat_with_input(
    tensors: list[TensorSpec], ops: list[OperatorSpec], folded: int, width: int
) -> ModelSpec:
    """The model `concat(x, folded tensor)` along axis 1, x a float [1, 3] input (tensor 0)."""
    output = len(tensors)
    tensors = [*tensors, TensorSpec("y", np.float32, (1, 3 + width))]
    concat = OperatorSpec(
        "CONCATENATION", [0, folded], [output], "ConcatenationOptions", {"Axis": 1}
    )
    return ModelSpec(tensors, [*ops, concat], [0], [output])


def keras_chain() -> bytes:
    """x [2, 3, 4] -> reshape to [shape(x)[0], -1] -> concat with itself along axis 1."""
    tensors = [
        TensorSpec("x", np.float32, (2, 3, 4)),
        TensorSpec("shape", np.int32, (3,)),
        i32("begin", [0]),
        i32("end", [1]),
        i32("strides", [1]),
        TensorSpec("batch", np.int32, ()),
        i32("minus_one", -1),
        TensorSpec("target", np.int32, (2,)),
        TensorSpec("flat", np.float32, (2, 12)),
        TensorSpec("y", np.float32, (2, 24)),
    ]
    ops = [
        OperatorSpec("SHAPE", [0], [1], "ShapeOptions", {"OutType": 2}),
        OperatorSpec(
            "STRIDED_SLICE", [1, 2, 3, 4], [5], "StridedSliceOptions", {"ShrinkAxisMask": 1}
        ),
        OperatorSpec("PACK", [5, 6], [7], "PackOptions", {"ValuesCount": 2, "Axis": 0}),
        OperatorSpec("RESHAPE", [0, 7], [8]),
        OperatorSpec("CONCATENATION", [8, 8], [9], "ConcatenationOptions", {"Axis": 1}),
    ]
    return write_model(tensors, ops, [0], [9])


def test_keras_reshape_chain_folds_to_a_view(tmp_path: Path) -> None:
    model = keras_chain()
    module = import_tflite(model, "chain.tflite")
    functions = [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]
    assert functions == ["concatenation_4", "main"]
    main = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )
    kinds = {type(op) for op in main.walk()}
    assert memref.ReinterpretCastOp in kinds
    assert memref.CopyOp not in kinds
    pytest.importorskip("tflite_micro", reason="the reference run needs tflite-micro")
    oracle.assert_matches(model, tmp_path)


def folded_models() -> dict[str, ModelSpec]:
    """Models whose folded constant is concatenated to the input (tensor 0), so the folded
    values reach the output."""
    x = TensorSpec("x", np.float32, (1, 3))
    table = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.5 - 1
    t = TensorSpec("t", np.float32, table.shape, data=table)
    return {
        "fill_cast_reshape": concat_with_input(
            [
                x,
                i32("dims", [4]),
                i32("value", 3),
                TensorSpec("f", np.int32, (4,)),
                TensorSpec("fc", np.float32, (4,)),
                i32("to", [1, 4]),
                TensorSpec("fr", np.float32, (1, 4)),
            ],
            [
                OperatorSpec("FILL", [1, 2], [3]),
                OperatorSpec("CAST", [3], [4]),
                OperatorSpec("RESHAPE", [4, 5], [6]),
            ],
            6,
            4,
        ),
        "concat_pack_unpack": concat_with_input(
            [
                x,
                t,
                TensorSpec("c", np.float32, (3, 8)),
                TensorSpec("p", np.float32, (3, 1, 8)),
                *(TensorSpec(f"u{k}", np.float32, (1, 8)) for k in range(3)),
            ],
            [
                OperatorSpec("CONCATENATION", [1, 1], [2], "ConcatenationOptions", {"Axis": 1}),
                OperatorSpec("PACK", [2], [3], "PackOptions", {"ValuesCount": 1, "Axis": 1}),
                OperatorSpec("UNPACK", [3], [4, 5, 6], "UnpackOptions", {"Num": 3, "Axis": 0}),
            ],
            5,
            8,
        ),
        "strided_slice_pad_slice": concat_with_input(
            [
                x,
                t,
                i32("b", [2, 0]),
                i32("e", [1, 4]),
                i32("s", [-1, 2]),
                TensorSpec("ss", np.float32, (1, 2)),
                i32("pads", [[0, 0], [1, 2]]),
                TensorSpec("pd", np.float32, (1, 5)),
                i32("sb", [0, 1]),
                i32("sz", [1, -1]),
                TensorSpec("sl", np.float32, (1, 4)),
            ],
            [
                OperatorSpec("STRIDED_SLICE", [1, 2, 3, 4], [5], "StridedSliceOptions"),
                OperatorSpec("PAD", [5, 6], [7], "PadOptions"),
                OperatorSpec("SLICE", [7, 8, 9], [10]),
            ],
            10,
            4,
        ),
    }


def test_folded_constants_match_tflm(tmp_path: Path) -> None:
    pytest.importorskip("tflite_micro", reason="the reference runs need tflite-micro")
    models = folded_models()
    for name, model in models.items():  # nothing but the concatenation is left
        module = import_tflite(model.model(), f"{name}.tflite")
        functions = [op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)]
        assert len(functions) == 2, (name, functions)
    oracle.assert_all_match(models, tmp_path, trials=1)


def test_gather_and_range_fold_as_tflite_computes(tmp_path: Path) -> None:
    """TFLite Micro has no RANGE and no int32 GATHER: TensorFlow Lite is the reference."""
    pytest.importorskip("ai_edge_litert", reason="the reference run needs ai-edge-litert")
    x = TensorSpec("x", np.float32, (1, 3))
    model = concat_with_input(
        [
            x,
            TensorSpec("shape", np.int32, (2,)),
            i32("index", [1, 1, 0]),
            TensorSpec("g", np.int32, (3,)),
            i32("start", 5),
            i32("limit", -3),
            i32("delta", -3),
            TensorSpec("r", np.int32, (3,)),
            TensorSpec("c", np.int32, (6,)),
            TensorSpec("cf", np.float32, (6,)),
            i32("to", [1, 6]),
            TensorSpec("y6", np.float32, (1, 6)),
        ],
        [
            OperatorSpec("SHAPE", [0], [1], "ShapeOptions", {"OutType": 2}),
            OperatorSpec("GATHER", [1, 2], [3], "GatherOptions", {"Axis": 0}),
            OperatorSpec("RANGE", [4, 5, 6], [7]),
            OperatorSpec("CONCATENATION", [3, 7], [8], "ConcatenationOptions", {"Axis": 0}),
            OperatorSpec("CAST", [8], [9]),
            OperatorSpec("RESHAPE", [9, 10], [11]),
        ],
        11,
        6,
    )
    oracle.assert_matches_litert(model.model(), tmp_path)


def strided_slice_model(
    shape: tuple[int, ...],
    begin: np.ndarray,
    end: np.ndarray,
    strides: np.ndarray,
    out_shape: tuple[int, ...],
    fields: dict[str, int],
) -> bytes:
    tensors = [
        TensorSpec("x", np.int32, shape),
        TensorSpec("b", np.int32, begin.shape, data=begin),
        TensorSpec("e", np.int32, end.shape, data=end),
        TensorSpec("s", np.int32, strides.shape, data=strides),
        TensorSpec("y", np.int32, out_shape),
    ]
    op = OperatorSpec("STRIDED_SLICE", [0, 1, 2, 3], [4], "StridedSliceOptions", fields)
    return write_model(tensors, [op], [0], [4])


def test_strided_slice_masks_match_tflite() -> None:
    """begin, end and shrink masks, negative indices and strides, out-of-range clamping, on
    150 random slices: our folding equals TensorFlow Lite's kernel."""
    pytest.importorskip("ai_edge_litert", reason="the reference needs ai-edge-litert")
    rng = np.random.default_rng(7)
    shape = (2, 3, 4, 5)
    x = np.arange(np.prod(shape), dtype=np.int32).reshape(shape)
    compared = 0
    for _ in range(150):
        count = int(rng.integers(1, 5))
        begin, end = (rng.integers(-6, 6, count).astype(np.int32) for _ in range(2))
        strides = rng.choice([-2, -1, 1, 2, 3], count).astype(np.int32)
        begin_mask, end_mask, shrink = (int(rng.integers(0, 1 << count)) for _ in range(3))
        # TFLite refuses negative strides on shrunk axes; TFLite and TensorFlow disagree on
        # masked shrunk axes (the converter emits neither).
        shrink &= ~sum(1 << k for k in range(count) if strides[k] < 0) & ~begin_mask & ~end_mask
        try:
            spec = strided_slice_spec_of(
                shape, begin, end, strides, begin_mask, end_mask, 0, 0, shrink
            )
        except FoldError:  # a shrunk axis indexed outside: TensorFlow refuses it too
            continue
        fields = {"BeginMask": begin_mask, "EndMask": end_mask, "ShrinkAxisMask": shrink}
        model = strided_slice_model(shape, begin, end, strides, spec.out_shape, fields)
        (theirs,) = oracle.litert_outputs(model, [x])
        ours = sliced(x, spec)
        assert ours.shape == theirs.shape, (begin, end, strides, fields)
        np.testing.assert_array_equal(ours, theirs, err_msg=str((begin, end, strides, fields)))
        compared += ours.size > 0
    assert compared > 50


@pytest.mark.parametrize(
    ("begin", "end", "strides", "masks", "expected"),
    [
        ([0, 1], [0, 3], [1, 1], {"ellipsis_mask": 1}, np.s_[..., 1:3]),
        (
            [0, 2, 0],
            [0, 0, 0],
            [1, 1, 1],
            {"ellipsis_mask": 1, "shrink_axis_mask": 2, "new_axis_mask": 4},
            np.s_[..., 2, None],
        ),
        (
            [0, 0, 1],
            [0, 0, 3],
            [1, 1, 1],
            {"new_axis_mask": 2, "begin_mask": 1, "end_mask": 1},
            np.s_[:, None, 1:3],
        ),
        (
            [1, 0, 3],
            [2, 0, 0],
            [1, 1, -1],
            {"ellipsis_mask": 2, "end_mask": 4},
            np.s_[1:2, ..., 3::-1],
        ),
        ([-1], [0], [1], {"shrink_axis_mask": 1}, np.s_[-1]),
    ],
)
def test_ellipsis_and_new_axis_follow_tensorflow(
    begin: list[int],
    end: list[int],
    strides: list[int],
    masks: dict[str, int],
    expected: tuple[object, ...],
) -> None:
    """TensorFlow Lite Micro ignores these masks; we follow TensorFlow's (numpy's) meaning."""
    x = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    ours = sliced(x, strided_slice_spec_of(x.shape, begin, end, strides, **masks))
    np.testing.assert_array_equal(ours, x[expected])
    assert ours.shape == x[expected].shape


def test_strided_slice_refusals() -> None:
    with pytest.raises(FoldError, match="negative stride"):
        strided_slice_spec_of((3, 4), [1], [2], [-1], shrink_axis_mask=1)
    with pytest.raises(FoldError, match="more than one ellipsis"):
        strided_slice_spec_of((3, 4), [0, 0], [0, 0], [1, 1], ellipsis_mask=3)
    with pytest.raises(FoldError, match="3 indices for a 2-D input"):
        strided_slice_spec_of((3, 4), [0, 0, 0], [1, 1, 1], [1, 1, 1])
    with pytest.raises(FoldError, match="stride is 0"):
        strided_slice_spec_of((3, 4), [0], [1], [0])


def arithmetic_model(opcode: str, lhs: np.ndarray, rhs: np.ndarray, activation: int = 0) -> bytes:
    result = np.broadcast_shapes(lhs.shape, rhs.shape)
    tensors = [
        TensorSpec("x", np.float32, (1, 3)),
        TensorSpec("a", lhs.dtype, lhs.shape, data=lhs),
        TensorSpec("b", rhs.dtype, rhs.shape, data=rhs),
        TensorSpec("c", lhs.dtype, result),
        TensorSpec("y", np.float32, (1, 3)),
    ]
    options = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}[opcode]
    ops = [
        OperatorSpec(opcode, [1, 2], [3], options, {"FusedActivationFunction": activation}),
        OperatorSpec("RESHAPE", [0, 3], [4]),
    ]
    return write_model(tensors, ops, [0], [4])


def folded_value(model: bytes, tensor: int, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    """Imports `model` with ADD, SUB and MUL handled only by `fold_constant_arithmetic`."""

    def constant_only(context: OperatorContext) -> None:
        if not fold_constant_arithmetic(context):
            raise context.fail("not folded")

    from usmp_dialect.frontends.tflite import ops  # noqa: F401  (registers the handlers)

    for opcode in ("ADD", "SUB", "MUL"):
        monkeypatch.setitem(importer.OPERATORS, opcode, constant_only)
    frontend = TfliteImporter(read_graph(model, "arithmetic.tflite"))
    frontend.run()
    return frontend.folded[tensor]


def test_constant_arithmetic_folds(monkeypatch: pytest.MonkeyPatch) -> None:
    column = np.array([[1], [-4]], dtype=np.int32)
    row = np.array([3, 5, -7], dtype=np.int32)
    cases = [
        ("ADD", column, row, 0, column + row),
        ("SUB", column, row, 1, np.maximum(column - row, 0)),
        ("MUL", column, row, 3, np.clip(column * row, 0, 6)),
        ("MUL", np.float32([0.5, 2]), np.float32([3, -1.25]), 0, np.float32([1.5, -2.5])),
    ]
    for opcode, lhs, rhs, activation, expected in cases:
        model = arithmetic_model(opcode, lhs, rhs, activation)
        value = folded_value(model, 3, monkeypatch)
        assert value.dtype == expected.dtype
        np.testing.assert_array_equal(value, expected)


def test_constant_int8_arithmetic_is_not_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.array([1, 2, 3], dtype=np.int8)
    model = arithmetic_model("ADD", values, values)
    with pytest.raises(ModelImportError, match=r"ADD .*not folded"):
        folded_value(model, 3, monkeypatch)


def one_op_model(
    opcode: str,
    tensors: list[TensorSpec],
    inputs: list[int],
    outputs: list[int],
    options: str | None = None,
    fields: dict | None = None,
    graph_inputs: list[int] | None = None,
) -> bytes:
    op = OperatorSpec(opcode, inputs, outputs, options, fields or {})
    return write_model(tensors, [op], graph_inputs or [0], outputs)


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (
            one_op_model(
                "GATHER",
                [
                    TensorSpec("x", np.int32, (4, 3)),
                    TensorSpec("i", np.int32, (1,)),
                    TensorSpec("y", np.int32, (1, 3)),
                ],
                [0, 1],
                [2],
                "GatherOptions",
                {"Axis": 0},
                graph_inputs=[0, 1],
            ),
            # int32 indices are read at run time; int32 values are not gathered (nor in TFLM)
            r"operator GATHER on int32 \(tensors 'x', 'y'",
        ),
        (
            one_op_model(
                "CAST",
                [TensorSpec("x", np.int32, (4,)), TensorSpec("y", np.int64, (4,))],
                [0],
                [1],
            ),
            "operator CAST on int64",  # CAST runs on activations, not to int64 (nor in TFLM)
        ),
        (
            one_op_model(
                "GATHER",
                [
                    TensorSpec("x", np.float32, (2,)),
                    TensorSpec("t", np.float32, (4,), data=np.ones(4, np.float32)),
                    i32("i", [4]),
                    TensorSpec("y", np.float32, (1,)),
                ],
                [1, 2],
                [3],
                "GatherOptions",
                {"Axis": 0},
            ),
            r"an index lies outside \[0, 4\)",
        ),
        (
            write_model(
                [
                    TensorSpec("x", np.float32, (2, 3)),
                    TensorSpec("s", np.int32, (3,)),
                    TensorSpec("y", np.float32, (6,)),
                ],
                [
                    OperatorSpec("SHAPE", [0], [1], "ShapeOptions", {"OutType": 2}),
                    OperatorSpec("RESHAPE", [0, 1], [2]),
                ],
                [0],
                [2],
            ),
            r"the folded tensor 's' .* has the shape \[2\], the model declares \[3\]",
        ),
    ],
    ids=["gather_activation_indices", "cast_activation", "gather_range", "shape_mismatch"],
)
def test_fold_errors(model: bytes, message: str) -> None:
    with pytest.raises(ModelImportError, match=message) as raised:
        import_tflite(model, "bad.tflite")
    assert "\n" not in str(raised.value)
