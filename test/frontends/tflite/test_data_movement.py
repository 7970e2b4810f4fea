"""CONCATENATION, PACK, UNPACK, SPLIT, SPLIT_V, STRIDED_SLICE, SLICE, PAD, PADV2, TRANSPOSE,
MEAN, SUM and REDUCE_MAX against TensorFlow Lite Micro: int8 byte for byte, float32 within 1e-5,
on models written with `tflite_writer`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing.mlir_runner import (
    mlir_opt_path,
    mlir_runner_path,
    unplanned_and_planned_outputs,
)
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

requires_tflm = pytest.mark.skipif(
    importlib.util.find_spec("tflite_micro") is None,
    reason="the reference runs need tflite-micro",
)
oracle = load_file(Path(__file__).parent / "tflm_oracle.py")
ModelSpec = oracle.ModelSpec

INT8_Q = {"scales": [0.05], "zero_points": [-3]}
INT16_Q = {"scales": [0.0004], "zero_points": [0]}  # 16x8: zero point 0


def activation(
    name: str, dtype: type, shape: tuple[int, ...], quant: dict | None = None
) -> TensorSpec:
    if dtype is np.int8:
        return TensorSpec(name, np.int8, shape, **(quant or INT8_Q))
    if dtype is np.int16:
        return TensorSpec(name, np.int16, shape, **(quant or INT16_Q))
    return TensorSpec(name, np.float32, shape)


def constant(name: str, values: np.ndarray, quant: dict | None = None) -> TensorSpec:
    return TensorSpec(name, values.dtype, values.shape, data=values, **(quant or {}))


def concat_model(
    dtype: type, shapes: list[tuple[int, ...]], axis: int, constant_input: int = -1
) -> ModelSpec:
    rng = np.random.default_rng(len(shapes) + axis)
    rank = len(shapes[0])
    positive = axis % rank
    out_shape = list(shapes[0])
    out_shape[positive] = sum(s[positive] for s in shapes)
    tensors = []
    for k, shape in enumerate(shapes):
        if k == constant_input:
            if dtype is np.int8:
                values = rng.integers(-128, 128, size=shape, dtype=np.int8)
                tensors.append(constant(f"c{k}", values, INT8_Q))
            else:
                tensors.append(constant(f"c{k}", rng.standard_normal(shape).astype(np.float32)))
        else:
            tensors.append(activation(f"x{k}", dtype, shape))
    tensors.append(activation("y", dtype, tuple(out_shape)))
    inputs = [k for k in range(len(shapes)) if k != constant_input]
    op = OperatorSpec(
        "CONCATENATION",
        list(range(len(shapes))),
        [len(shapes)],
        "ConcatenationOptions",
        {"Axis": axis},
    )
    return oracle.ModelSpec(tensors, [op], inputs, [len(shapes)])


def pad_model(
    dtype: type,
    shape: tuple[int, ...],
    paddings: list[tuple[int, int]],
    value: float | int | None = None,
) -> ModelSpec:
    out_shape = tuple(d + a + b for d, (a, b) in zip(shape, paddings, strict=True))
    tensors = [
        activation("x", dtype, shape),
        constant("p", np.array(paddings, dtype=np.int32)),
        activation("y", dtype, out_shape),
    ]
    inputs = [0, 1]
    opcode = "PAD"
    if value is not None:
        opcode = "PADV2"
        if dtype is np.int8:
            tensors.append(constant("v", np.array([value], dtype=np.int8), INT8_Q))
        else:
            tensors.append(constant("v", np.array([value], dtype=np.float32)))
        inputs.append(3)
    options = "PadV2Options" if opcode == "PADV2" else "PadOptions"
    return oracle.ModelSpec(tensors, [OperatorSpec(opcode, inputs, [2], options)], [0], [2])


def mean_model(
    dtype: type,
    shape: tuple[int, ...],
    axes: list[int],
    keep_dims: bool,
    out_quant: dict | None = None,
    opcode: str = "MEAN",
) -> ModelSpec:
    rank = len(shape)
    reduced = {a % rank for a in axes}
    if keep_dims:
        out_shape = tuple(1 if a in reduced else d for a, d in enumerate(shape))
    else:
        out_shape = tuple(d for a, d in enumerate(shape) if a not in reduced)
    tensors = [
        activation("x", dtype, shape),
        constant("axes", np.array(axes, dtype=np.int32)),
        activation("y", dtype, out_shape, out_quant),
    ]
    op = OperatorSpec(opcode, [0, 1], [2], "ReducerOptions", {"KeepDims": keep_dims})
    return oracle.ModelSpec(tensors, [op], [0], [2])


def slice_model(
    dtype: type,
    shape: tuple[int, ...],
    begin: list[int],
    end: list[int],
    strides: list[int],
    out_shape: tuple[int, ...],
    **masks: int,
) -> ModelSpec:
    """`masks`: StridedSliceOptions fields (BeginMask, EndMask, ShrinkAxisMask, ...)."""
    tensors = [
        activation("x", dtype, shape),
        constant("b", np.array(begin, dtype=np.int32)),
        constant("e", np.array(end, dtype=np.int32)),
        constant("s", np.array(strides, dtype=np.int32)),
        activation("y", dtype, out_shape),
    ]
    op = OperatorSpec("STRIDED_SLICE", [0, 1, 2, 3], [4], "StridedSliceOptions", masks)
    return oracle.ModelSpec(tensors, [op], [0], [4])


def slice_op_model(
    dtype: type,
    shape: tuple[int, ...],
    begin: list[int],
    size: list[int],
    out_shape: tuple[int, ...],
) -> ModelSpec:
    tensors = [
        activation("x", dtype, shape),
        constant("b", np.array(begin, dtype=np.int32)),
        constant("n", np.array(size, dtype=np.int32)),
        activation("y", dtype, out_shape),
    ]
    return oracle.ModelSpec(tensors, [OperatorSpec("SLICE", [0, 1, 2], [3])], [0], [3])


def pack_model(dtype: type, shape: tuple[int, ...], count: int, axis: int) -> ModelSpec:
    rank = len(shape) + 1
    positive = axis % rank
    out_shape = (*shape[:positive], count, *shape[positive:])
    tensors = [activation(f"x{k}", dtype, shape) for k in range(count)]
    tensors.append(activation("y", dtype, out_shape))
    op = OperatorSpec(
        "PACK", list(range(count)), [count], "PackOptions", {"ValuesCount": count, "Axis": axis}
    )
    return oracle.ModelSpec(tensors, [op], list(range(count)), [count])


def unpack_model(dtype: type, shape: tuple[int, ...], axis: int) -> ModelSpec:
    count = shape[axis]
    part = tuple(d for a, d in enumerate(shape) if a != axis % len(shape))
    tensors = [activation("x", dtype, shape)]
    tensors += [activation(f"y{k}", dtype, part) for k in range(count)]
    outputs = list(range(1, count + 1))
    op = OperatorSpec("UNPACK", [0], outputs, "UnpackOptions", {"Num": count, "Axis": axis})
    return oracle.ModelSpec(tensors, [op], [0], outputs)


@requires_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_concatenation_matches_tflm(dtype: type, tmp_path: Path) -> None:
    models = {
        "channels": concat_model(dtype, [(1, 3, 4, 2), (1, 3, 4, 5)], 3),
        "negative_axis": concat_model(dtype, [(1, 3, 4, 2), (1, 3, 4, 1), (1, 3, 4, 3)], -1),
        "height": concat_model(dtype, [(2, 2, 3, 2), (2, 5, 3, 2)], 1),
        "batch_2d": concat_model(dtype, [(3, 4), (1, 4), (2, 4)], 0),
        "constant_input": concat_model(dtype, [(1, 2, 3), (1, 2, 4)], 2, constant_input=0),
    }
    oracle.assert_all_match(models, tmp_path)


@requires_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_pad_matches_tflm(dtype: type, tmp_path: Path) -> None:
    value = -7 if dtype is np.int8 else 1.5
    models = {
        "image": pad_model(dtype, (1, 4, 5, 3), [(0, 0), (1, 2), (2, 1), (0, 0)]),
        "all_dims": pad_model(dtype, (2, 3, 2, 2), [(1, 0), (0, 2), (1, 1), (2, 1)]),
        "2d": pad_model(dtype, (3, 4), [(2, 1), (0, 3)]),
        "v2": pad_model(dtype, (1, 3, 3, 2), [(0, 0), (1, 1), (2, 0), (0, 1)], value),
    }
    oracle.assert_all_match(models, tmp_path)


@requires_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_mean_matches_tflm(dtype: type, tmp_path: Path) -> None:
    requantised = {"scales": [0.021], "zero_points": [9]}
    models = {
        "spatial_keep": mean_model(dtype, (1, 5, 6, 4), [1, 2], True),
        "spatial_drop": mean_model(dtype, (2, 5, 6, 4), [2, 1], False),
        "requantised_spatial": mean_model(dtype, (1, 7, 3, 5), [1, 2], True, requantised),
        "requantised_last": mean_model(dtype, (2, 3, 10), [-1], False, requantised),
        "channels": mean_model(dtype, (1, 4, 4, 6), [3], True),
        "outer": mean_model(dtype, (3, 4, 5), [0], False, requantised),
        "all": mean_model(dtype, (4, 6), [0, 1], True, requantised),
    }
    oracle.assert_all_match(models, tmp_path)


@requires_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_sum_and_reduce_max_match_tflm(dtype: type, tmp_path: Path) -> None:
    rescaled = {"scales": [0.4], "zero_points": [-5]}
    models = {
        "sum_spatial": mean_model(dtype, (1, 3, 4, 2), [1, 2], True, rescaled, "SUM"),
        "sum_last": mean_model(dtype, (2, 3, 5), [-1], False, rescaled, "SUM"),
        "sum_first_two": mean_model(dtype, (2, 3, 4), [0, 1], False, rescaled, "SUM"),
        "max_spatial": mean_model(dtype, (1, 5, 4, 3), [1, 2], True, None, "REDUCE_MAX"),
        "max_last": mean_model(dtype, (3, 7), [1], False, None, "REDUCE_MAX"),
        "max_outer": mean_model(dtype, (4, 2, 3), [0], True, None, "REDUCE_MAX"),
    }
    oracle.assert_all_match(models, tmp_path)


@requires_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_strided_slice_of_activation_matches_tflm(dtype: type, tmp_path: Path) -> None:
    models = {
        "steps": slice_model(
            dtype, (1, 6, 7, 3), [0, 1, 0, 0], [1, 6, 7, 3], [1, 2, 3, 1], (1, 3, 3, 3)
        ),
        "negative": slice_model(
            dtype, (1, 5, 4, 3), [0, -1, 3, 0], [1, 0, 0, 2], [1, -1, -2, 1], (1, 4, 2, 2)
        ),
        "masks": slice_model(
            dtype, (2, 5, 4), [1, 1, 0], [0, 4, 3], [1, 1, 1], (2, 3, 4), BeginMask=1, EndMask=5
        ),
        "slice": slice_op_model(dtype, (2, 5, 4, 3), [1, 2, 0, 1], [1, -1, 3, 2], (1, 3, 3, 2)),
        "shrink": slice_model(
            dtype, (3, 4, 5), [1, 0, 2], [2, 4, 4], [1, 1, 1], (4, 2), ShrinkAxisMask=1
        ),
    }
    oracle.assert_all_match(models, tmp_path)


@requires_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_pack_and_unpack_match_tflm(dtype: type, tmp_path: Path) -> None:
    models = {
        "pack_first": pack_model(dtype, (3, 4), 2, 0),
        "pack_middle": pack_model(dtype, (3, 4), 3, 1),
        "pack_last": pack_model(dtype, (2, 3), 2, -1),
        "unpack_first": unpack_model(dtype, (3, 2, 4), 0),
        "unpack_middle": unpack_model(dtype, (2, 3, 4), 1),
    }
    oracle.assert_all_match(models, tmp_path)


def split_model(
    dtype: type,
    shape: tuple[int, ...],
    axis: int,
    sizes: list[int],
    v: bool,
    size_splits: list[int] | None = None,
) -> ModelSpec:
    """SPLIT (or SPLIT_V, whose size_splits default to `sizes`) into pieces of `sizes`."""
    positive = axis % len(shape)
    tensors = [activation("x", dtype, shape), constant("axis", np.array([axis], dtype=np.int32))]
    parts = [tuple(s if d != positive else n for d, s in enumerate(shape)) for n in sizes]
    outputs = list(range(3, 3 + len(sizes))) if v else list(range(2, 2 + len(sizes)))
    if v:
        tensors.append(constant("sizes", np.array(size_splits or sizes, dtype=np.int32)))
        op = OperatorSpec("SPLIT_V", [0, 2, 1], outputs, "SplitVOptions", {"NumSplits": len(sizes)})
    else:
        op = OperatorSpec("SPLIT", [1, 0], outputs, "SplitOptions", {"NumSplits": len(sizes)})
    tensors += [activation(f"y{k}", dtype, part) for k, part in enumerate(parts)]
    return oracle.ModelSpec(tensors, [op], [0], outputs)


def transpose_model(dtype: type, shape: tuple[int, ...], permutation: list[int]) -> ModelSpec:
    tensors = [
        activation("x", dtype, shape),
        constant("perm", np.array(permutation, dtype=np.int32)),
        activation("y", dtype, tuple(shape[p] for p in permutation)),
    ]
    return oracle.ModelSpec(tensors, [OperatorSpec("TRANSPOSE", [0, 1], [2])], [0], [2])


@requires_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_split_and_transpose_match_tflm(dtype: type, tmp_path: Path) -> None:
    models = {
        "split_channels": split_model(dtype, (1, 2, 3, 6), 3, [2, 2, 2], False),
        "split_outer": split_model(dtype, (4, 3), 0, [2, 2], False),
        "split_v": split_model(dtype, (2, 7, 3), 1, [3, 1, 3], True),
        "split_v_negative_axis": split_model(dtype, (2, 3, 5), -1, [4, 1], True),
        "split_v_inferred": split_model(dtype, (6, 2), 0, [1, 4, 1], True, [1, -1, 1]),
        "transpose_nchw": transpose_model(dtype, (1, 3, 4, 2), [0, 3, 1, 2]),
        "transpose_2d": transpose_model(dtype, (5, 3), [1, 0]),
        "transpose_3d": transpose_model(dtype, (2, 3, 4), [2, 0, 1]),
    }
    oracle.assert_all_match(models, tmp_path)


@requires_tflm
def test_kernels_are_clean_under_sanitizers(tmp_path: Path) -> None:
    models = {
        "concatenation": concat_model(np.int8, [(1, 2, 3, 2), (1, 2, 3, 3)], 3, constant_input=1),
        "pad": pad_model(np.float32, (1, 3, 2, 2), [(0, 1), (2, 0), (1, 1), (0, 2)], 0.25),
        "mean": mean_model(
            np.int8, (1, 4, 3, 2), [1, 2], False, {"scales": [0.2], "zero_points": [1]}
        ),
        "strided_slice": slice_model(
            np.int8, (1, 5, 4, 3), [0, -1, 3, 0], [1, 0, 0, 2], [1, -1, -2, 1], (1, 4, 2, 2)
        ),
        "unpack": unpack_model(np.float32, (2, 3, 2), 1),
        "split_v": split_model(np.int8, (2, 5, 3), 1, [1, 4], True),
        "transpose": transpose_model(np.float32, (2, 3, 4), [2, 0, 1]),
        "sum": mean_model(np.int8, (2, 3, 4), [0, 2], False, {"scales": [0.3]}, "SUM"),
    }
    oracle.assert_all_match(models, tmp_path, trials=1, sanitize=True)


def import_error(model: bytes) -> str:
    with pytest.raises(ModelImportError) as raised:
        import_tflite(model, "bad.tflite")
    message = str(raised.value)
    assert "\n" not in message and message.startswith("bad.tflite: ")
    return message


def test_int8_concatenation_needs_equal_quantisation() -> None:
    tensors = [
        activation("a", np.int8, (1, 2)),
        activation("b", np.int8, (1, 2), {"scales": [0.1], "zero_points": [-3]}),
        activation("y", np.int8, (1, 4)),
    ]
    op = OperatorSpec("CONCATENATION", [0, 1], [2], "ConcatenationOptions", {"Axis": 1})
    message = import_error(write_model(tensors, [op], [0, 1], [2]))
    assert "tensor 'b' (index 1) has the quantisation (scale 0.1" in message
    assert "int8 CONCATENATION needs them equal" in message


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            write_model(
                [activation("a", np.float32, (1, 2)), activation("y", np.float32, (1, 4))],
                [
                    OperatorSpec(
                        "CONCATENATION",
                        [0, 0],
                        [1],
                        "ConcatenationOptions",
                        {"Axis": 1, "FusedActivationFunction": 1},
                    )
                ],
                [0],
                [1],
            ),
            "unsupported: CONCATENATION with fused activation RELU (operator 0)",
        ),
        (
            write_model(
                [activation("a", np.float32, (1, 2)), activation("y", np.float32, (1, 5))],
                [OperatorSpec("CONCATENATION", [0, 0], [1], "ConcatenationOptions", {"Axis": 1})],
                [0],
                [1],
            ),
            "the output shape [1, 5] should be [1, 4]",
        ),
        (
            write_model(
                [activation("a", np.float32, (1, 2)), activation("y", np.float32, (1, 4))],
                [OperatorSpec("CONCATENATION", [0, 0], [1], "ConcatenationOptions", {"Axis": 2})],
                [0],
                [1],
            ),
            "axis 2 is outside a 2-D tensor",
        ),
        (pad_model(np.float32, (2, 3), [(1, -1), (0, 0)]).model(), "negative paddings"),
        (
            write_model(
                [
                    activation("x", np.int8, (2, 3)),
                    constant("p", np.zeros((2, 2), np.int32)),
                    activation("y", np.int8, (2, 3)),
                    constant("v", np.array([1], np.int8), {"scales": [0.5], "zero_points": [0]}),
                ],
                [OperatorSpec("PADV2", [0, 1, 3], [2], "PadV2Options")],
                [0],
                [2],
            ),
            "tensor 'v' (index 3) has the quantisation",
        ),
        (
            write_model(
                [
                    activation("x", np.float32, (2, 3)),
                    activation("axes", np.float32, (1,)),
                    activation("y", np.float32, (2, 1)),
                ],
                [OperatorSpec("MEAN", [0, 1], [2], "ReducerOptions", {"KeepDims": True})],
                [0, 1],
                [2],
            ),
            "input 1 (tensor 'axes' (index 1)) must be a constant",
        ),
        (
            mean_model(np.int8, (2, 3), [1], True, {"scales": [0.1]}, "REDUCE_MAX").model(),
            "int8 REDUCE_MAX needs them equal",
        ),
        (
            split_model(np.float32, (5, 2), 0, [2, 2], False).model(),
            "dimension 0 of size 5 does not split in 2",
        ),
        (
            split_model(np.float32, (5, 2), 0, [2, 2], True).model(),
            "the sizes [2, 2] do not split dimension 0 of size 5",
        ),
        (
            transpose_model(np.float32, (2, 3), [0, 0]).model(),
            "[0, 0] is not a permutation of the 2 dimensions",
        ),
        (mean_model(np.float32, (2, 3), [2], True).model(), "axis 2 is outside the 2-D input"),
        (
            slice_model(np.float32, (3, 4), [0, 0], [1, 4], [1, 1], (1, 4), Offset=True).model(),
            "STRIDED_SLICE with offset=true is not supported",
        ),
        (
            slice_model(
                np.float32, (3, 4), [1, 0], [2, 4], [-1, 1], (4,), ShrinkAxisMask=1
            ).model(),
            "a shrunk axis has a negative stride",
        ),
        (
            slice_model(np.float32, (3, 4), [0, 0], [3, 4], [1, 1], (3, 3)).model(),
            "the output shape [3, 3] should be [3, 4]",
        ),
    ],
    ids=[
        "concat_activation",
        "concat_shape",
        "concat_axis",
        "pad_negative",
        "padv2_value_quantisation",
        "mean_axes_not_constant",
        "reduce_max_quantisation",
        "split_uneven",
        "split_v_sizes",
        "transpose_permutation",
        "mean_axis_range",
        "slice_offset",
        "slice_negative_shrink",
        "slice_shape",
    ],
)
def test_unsupported_variants_fail_clearly(model: bytes, expected: str) -> None:
    assert expected in import_error(model)


def in_place_model(dtype: type) -> ModelSpec:
    """Producers (ADD, SUB, MUL) writing into contiguous slices: `a`, `b` around the constant
    `k` in `y`, which nests in `z` beside `d`; PACK's `p0`, `p1` (axis 0). Strided slices
    (axis 3 of 1x3x4x2): the pools `q0`, `q1` write into `q` through a subview, `r1` into `r`;
    copied: `r0` (ADD's function sees its output flattened), `m` (also read by `twice`)."""
    rng = np.random.default_rng(7)
    shape = (1, 3, 4, 2)
    if dtype is np.int8:
        k = constant("k", rng.integers(-128, 128, size=(1, 1, 4, 2), dtype=np.int8), INT8_Q)
    else:
        k = constant("k", rng.standard_normal((1, 1, 4, 2)).astype(np.float32))
    names = ["x", "x2", "a", "b", "y", "d", "z", "out", "p0", "p1", "p", "out_p"]
    names += ["q0", "q1", "q", "out_q", "m", "n", "mn", "out_mn", "twice"]
    names += ["r0", "r1", "r", "out_r"]
    shapes = {"y": (1, 7, 4, 2), "z": (1, 10, 4, 2), "out": (1, 10, 4, 2)}
    shapes |= {"p": (2, 1, 3, 4, 2), "out_p": (2, 1, 3, 4, 2)}
    shapes |= {"r": (1, 3, 4, 4), "out_r": (1, 3, 4, 4)}
    shapes |= {"q": (1, 3, 4, 4), "out_q": (1, 3, 4, 4), "mn": (1, 6, 4, 2), "out_mn": (1, 6, 4, 2)}
    tensors = [activation(name, dtype, shapes.get(name, shape)) for name in names]
    tensors.append(k)
    t = {name: index for index, name in enumerate([*names, "k"])}

    def op(opcode: str, inputs: list[str], output: str, **fields: int) -> OperatorSpec:
        options = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions"}.get(opcode)
        if opcode == "CONCATENATION":
            options = "ConcatenationOptions"
        if opcode == "PACK":
            options = "PackOptions"
        if opcode.endswith("POOL_2D"):
            options = "Pool2DOptions"
            fields = {"Padding": 0, "StrideH": 1, "StrideW": 1, "FilterHeight": 2}
            fields |= {"FilterWidth": 2}
        return OperatorSpec(opcode, [t[i] for i in inputs], [t[output]], options, fields)

    operators = [
        op("ADD", ["x", "x2"], "a"),
        op("SUB", ["x", "x2"], "b"),
        op("CONCATENATION", ["a", "k", "b"], "y", Axis=1),
        op("MUL", ["x", "x2"], "d"),
        op("CONCATENATION", ["y", "d"], "z", Axis=1),
        op("ADD", ["z", "z"], "out"),
        op("SUB", ["x2", "x"], "p0"),
        op("ADD", ["x2", "x2"], "p1"),
        op("PACK", ["p0", "p1"], "p", Axis=0, ValuesCount=2),
        op("ADD", ["p", "p"], "out_p"),
        op("MAX_POOL_2D", ["x"], "q0"),
        op("AVERAGE_POOL_2D", ["x2"], "q1"),
        op("CONCATENATION", ["q0", "q1"], "q", Axis=3),
        op("ADD", ["q", "q"], "out_q"),
        op("ADD", ["x", "x2"], "m"),
        op("SUB", ["x", "x"], "n"),
        op("CONCATENATION", ["m", "n"], "mn", Axis=1),
        op("ADD", ["mn", "mn"], "out_mn"),
        op("ADD", ["m", "m"], "twice"),
        op("ADD", ["x", "x2"], "r0"),
        op("MAX_POOL_2D", ["x2"], "r1"),
        op("CONCATENATION", ["r0", "r1"], "r", Axis=3),
        op("ADD", ["r", "r"], "out_r"),
    ]
    outputs = [t[name] for name in ("out", "out_p", "out_q", "out_mn", "twice", "out_r")]
    return oracle.ModelSpec(tensors, operators, [t["x"], t["x2"]], outputs)


@requires_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_concatenation_in_place_matches_tflm(dtype: type, tmp_path: Path) -> None:
    oracle.assert_all_match({"in_place": in_place_model(dtype)}, tmp_path)


def test_concatenation_in_place_copies_only_the_rest() -> None:
    import io
    import re

    from xdsl.printer import Printer

    module = import_tflite(in_place_model(np.float32).model(), "in_place.tflite")
    stream = io.StringIO()
    Printer(stream).print_op(module)
    text = stream.getvalue()
    signatures = {
        name: arguments.count("%")
        for name, arguments in re.findall(
            r"func\.func @((?:concatenation|pack)_\d+)\((.*?)\)", text
        )
    }
    # `y` copies the constant only, `z`, `p` and `q` nothing; `mn` copies `m`, `r` `r0`.
    assert signatures == {"concatenation_2": 1, "concatenation_16": 2, "concatenation_21": 2}
    constants = dict(re.findall(r"%(\w+) = arith\.constant (\d+) : index", text))
    views = re.findall(r"%(\w+) = memref\.view %z\[%(\w+)\]\[\] : memref<320xi8>", text)
    offsets = {name: int(constants[shift]) for name, shift in views if not name.isdigit()}
    assert offsets == {"a": 0, "b": 4 * 32, "y": 0, "d": 7 * 32}
    assert '%p = memref.alloc() {usmp.tensor = "p"} : memref<192xi8>' in text
    # The pools' functions write their output through the subview's layout.
    strided = re.escape("memref<1x3x4x2xf32, strided<[48, 16, 4, 1]")
    for pool in ("max_pool_2d_10", "average_pool_2d_11", "max_pool_2d_20"):
        assert re.search(
            rf"func\.func @{pool}\(%input: memref<1x3x4x2xf32>, %output: {strided}", text
        )
    assert re.search(r"%q1 = memref\.subview %q\[0, 0, 0, 2\] \[1, 3, 4, 2\] \[1, 1, 1, 1\]", text)


@pytest.mark.skipif(
    mlir_opt_path() is None or mlir_runner_path() is None, reason="needs LLVM's mlir-opt"
)
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float"])
def test_concatenation_in_place_runs_upstream(dtype: type) -> None:
    """The imported module (views, subviews, strided arguments) and the planned one after
    `convert-pool-to-memref` print the same under `mlir-runner`."""
    import io

    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream).print_op(import_tflite(in_place_model(dtype).model(), "in_place.tflite"))
    reference, planned = unplanned_and_planned_outputs(stream.getvalue())
    assert planned == reference
