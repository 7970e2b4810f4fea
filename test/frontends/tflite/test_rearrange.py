"""DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, MIRROR_PAD, GATHER and
GATHER_ND of an activation and REDUCE_MIN against TensorFlow Lite Micro (int8 byte for byte,
float32 within 1e-5), on models written with `tflite_writer`: several block sizes, paddings,
crops, 3-D and 4-D inputs, both mirror modes, gathers along every axis."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec
from usmp_dialect.validation.host import compile_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
oracle = load_file(Path(__file__).parent / "tflm_oracle.py")

REFLECT, SYMMETRIC = 0, 1
S2B, B2S = "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"


def _activation(name: str, dtype: type, shape: tuple[int, ...]) -> TensorSpec:
    if dtype == np.int8:
        return TensorSpec(name, np.int8, shape, None, [0.05], [-3])
    return TensorSpec(name, np.float32, shape)


def _int32(name: str, values: list) -> TensorSpec:
    array = np.array(values, dtype=np.int32)
    return TensorSpec(name, np.int32, array.shape, array)


def block_op(
    opcode: str, dtype: type, shape: tuple[int, ...], block: int, out: tuple[int, ...]
) -> oracle.ModelSpec:
    options = "DepthToSpaceOptions" if opcode == "DEPTH_TO_SPACE" else "SpaceToDepthOptions"
    tensors = [_activation("x", dtype, shape), _activation("y", dtype, out)]
    op = OperatorSpec(opcode, [0], [1], options, {"BlockSize": block})
    return oracle.ModelSpec(tensors, [op], [0], [1])


def nd_op(
    opcode: str,
    dtype: type,
    shape: tuple[int, ...],
    block: list[int],
    pads: list[list[int]],
    out: tuple[int, ...],
) -> oracle.ModelSpec:
    tensors = [
        _activation("x", dtype, shape),
        _int32("block", block),
        _int32("pads", pads),
        _activation("y", dtype, out),
    ]
    return oracle.ModelSpec(tensors, [OperatorSpec(opcode, [0, 1, 2], [3])], [0], [3])


def mirror_op(
    dtype: type, shape: tuple[int, ...], pads: list[list[int]], mode: int
) -> oracle.ModelSpec:
    out = tuple(s + sum(p) for s, p in zip(shape, pads, strict=True))
    tensors = [_activation("x", dtype, shape), _int32("pads", pads), _activation("y", dtype, out)]
    op = OperatorSpec("MIRROR_PAD", [0, 1], [2], "MirrorPadOptions", {"Mode": mode})
    return oracle.ModelSpec(tensors, [op], [0], [2])


def reduce_min(
    dtype: type, shape: tuple[int, ...], axes: list[int], keep: bool
) -> oracle.ModelSpec:
    reduced = [axis % len(shape) for axis in axes]
    kept = tuple(1 if a in reduced else s for a, s in enumerate(shape))
    out = kept if keep else tuple(s for a, s in enumerate(shape) if a not in reduced)
    tensors = [_activation("x", dtype, shape), _int32("axes", axes), _activation("y", dtype, out)]
    op = OperatorSpec("REDUCE_MIN", [0, 1], [2], "ReducerOptions", {"KeepDims": keep})
    return oracle.ModelSpec(tensors, [op], [0], [2])


def gather_op(dtype: type, shape: tuple[int, ...], indices: list, axis: int) -> oracle.ModelSpec:
    index_array = np.array(indices, dtype=np.int32)
    positive = axis % len(shape)
    out = (*shape[:positive], *index_array.shape, *shape[positive + 1 :])
    tensors = [
        _activation("x", dtype, shape),
        TensorSpec("indices", np.int32, index_array.shape, index_array),
        _activation("y", dtype, out),
    ]
    op = OperatorSpec("GATHER", [0, 1], [2], "GatherOptions", {"Axis": axis})
    return oracle.ModelSpec(tensors, [op], [0], [2])


def gather_nd_op(dtype: type, shape: tuple[int, ...], indices: list) -> oracle.ModelSpec:
    index_array = np.array(indices, dtype=np.int32)
    out = (*index_array.shape[:-1], *shape[index_array.shape[-1] :])
    tensors = [
        _activation("x", dtype, shape),
        TensorSpec("indices", np.int32, index_array.shape, index_array),
        _activation("y", dtype, out),
    ]
    return oracle.ModelSpec(tensors, [OperatorSpec("GATHER_ND", [0, 1], [2])], [0], [2])


def parts(dtype: type) -> dict[str, oracle.ModelSpec]:
    return {
        "d2s_2": block_op("DEPTH_TO_SPACE", dtype, (1, 3, 4, 8), 2, (1, 6, 8, 2)),
        "d2s_3": block_op("DEPTH_TO_SPACE", dtype, (2, 2, 2, 9), 3, (2, 6, 6, 1)),
        "s2d_2": block_op("SPACE_TO_DEPTH", dtype, (1, 4, 6, 3), 2, (1, 2, 3, 12)),
        "s2d_3": block_op("SPACE_TO_DEPTH", dtype, (2, 3, 6, 2), 3, (2, 1, 2, 18)),
        "s2b_plain": nd_op(S2B, dtype, (1, 4, 4, 2), [2, 2], [[0, 0], [0, 0]], (4, 2, 2, 2)),
        "s2b_3d": nd_op(S2B, dtype, (2, 6, 3), [3], [[0, 0]], (6, 2, 3)),
        "b2s_crop": nd_op(B2S, dtype, (12, 3, 2, 3), [2, 3], [[1, 0], [1, 1]], (2, 5, 4, 3)),
        "b2s_plain": nd_op(B2S, dtype, (4, 2, 3, 2), [2, 2], [[0, 0], [0, 0]], (1, 4, 6, 2)),
        "b2s_3d": nd_op(B2S, dtype, (6, 3, 3), [3], [[2, 1]], (2, 6, 3)),
        "mirror_reflect": mirror_op(dtype, (1, 4, 5, 3), [[0, 0], [3, 2], [1, 4], [0, 0]], REFLECT),
        "mirror_symmetric": mirror_op(dtype, (3, 4, 2), [[3, 1], [0, 4], [2, 2]], SYMMETRIC),
        "min_spatial": reduce_min(dtype, (1, 5, 4, 3), [1, 2], True),
        "min_last": reduce_min(dtype, (3, 7), [1], False),
        "min_outer": reduce_min(dtype, (4, 2, 3), [0, -1], False),
        "gather_rows": gather_op(dtype, (5, 3), [4, 0, 0, 2], 0),
        "gather_middle": gather_op(dtype, (2, 6, 3), [[5, 1], [0, 3], [2, 2]], 1),
        "gather_last": gather_op(dtype, (2, 3, 4), [3, 1], -1),
        "gather_nd_rows": gather_nd_op(dtype, (4, 3, 2), [[3], [0], [3]]),
        "gather_nd_pairs": gather_nd_op(dtype, (4, 3, 2), [[[1, 2], [3, 0]], [[0, 0], [2, 1]]]),
        "gather_nd_full": gather_nd_op(dtype, (3, 5), [[2, 4], [0, 1], [1, 3]]),
    }  # fmt: skip


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_rearrangements_match_tflite_micro(tmp_path: Path, dtype: type) -> None:
    oracle.assert_matches(oracle.merge(parts(dtype)), tmp_path, trials=3)


@needs_gcc
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_space_to_batch_padding_matches_litert(tmp_path: Path, dtype: type) -> None:
    """Padded SPACE_TO_BATCH_ND against LiteRT: TFLM pads with whatever its never-written
    `SpaceToBatchParams.output_offset` holds (0 in a fresh arena, garbage after other models
    ran in the process), TFLite with the real 0 (int8: the output's zero point)."""
    for k, (shape, block, pads, out) in enumerate(
        [
            ((2, 5, 4, 3), [2, 3], [[1, 0], [1, 1]], (12, 3, 2, 3)),
            ((2, 5, 3), [3], [[2, 2]], (6, 3, 3)),
        ]
    ):
        spec = nd_op(S2B, dtype, shape, block, pads, out)
        oracle.assert_matches_litert(spec.model(), tmp_path / str(k))


@needs_gcc
@needs_tflm
def test_rearrangements_under_the_sanitizers(tmp_path: Path) -> None:
    """SPACE_TO_BATCH_ND -> BATCH_TO_SPACE_ND -> MIRROR_PAD -> DEPTH_TO_SPACE in a chain,
    inputs and outputs in the workspace, under ASan and UBSan."""
    tensors = [
        _activation("x", np.int8, (1, 5, 4, 4)),
        _int32("block", [2, 2]),
        _int32("pads", [[1, 0], [0, 0]]),
        _activation("batched", np.int8, (4, 3, 2, 4)),
        _int32("crops", [[1, 0], [0, 0]]),
        _activation("space", np.int8, (1, 5, 4, 4)),
        _int32("mirror", [[0, 0], [2, 1], [1, 3], [0, 0]]),
        _activation("padded", np.int8, (1, 8, 8, 4)),
        _activation("y", np.int8, (1, 16, 16, 1)),
    ]
    operators = [
        OperatorSpec("SPACE_TO_BATCH_ND", [0, 1, 2], [3]),
        OperatorSpec("BATCH_TO_SPACE_ND", [3, 1, 4], [5]),
        OperatorSpec("MIRROR_PAD", [5, 6], [7], "MirrorPadOptions", {"Mode": REFLECT}),
        OperatorSpec("DEPTH_TO_SPACE", [7], [8], "DepthToSpaceOptions", {"BlockSize": 2}),
    ]
    model = oracle.ModelSpec(tensors, operators, [0], [8]).model()
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", workspace_io=True, sanitize=True)
    for seed in range(2):
        inputs = tflm.random_inputs(compiled.inputs, seed)
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(ours, tflm.run(model, inputs, len(ours)))


def test_mirror_pad_beyond_the_input_is_refused() -> None:
    spec = mirror_op(np.float32, (3, 4), [[3, 0], [0, 0]], REFLECT)
    with pytest.raises(ModelImportError, match="exceed what REFLECT allows"):
        import_tflite(spec.model(), "m.tflite")


def _runtime_gather(
    dtype: type, shape: tuple[int, ...], count: tuple[int, ...], axis: int, table: bool
) -> oracle.ModelSpec:
    """GATHER by an int32 indices input of shape `count` along `axis`, of an activation or of
    a constant `table`."""
    positive = axis % len(shape)
    out = (*shape[:positive], *count, *shape[positive + 1 :])
    data = None
    if table:
        rng = np.random.default_rng(len(shape) + positive)
        data = (
            rng.integers(-128, 128, shape).astype(np.int8)
            if dtype == np.int8
            else rng.standard_normal(shape).astype(np.float32)
        )
    source = _activation("x", dtype, shape)
    tensors = [
        TensorSpec(source.name, dtype, shape, data, source.scales, source.zero_points),
        TensorSpec("indices", np.int32, count),
        _activation("y", dtype, out),
    ]
    op = OperatorSpec("GATHER", [0, 1], [2], "GatherOptions", {"Axis": axis})
    return oracle.ModelSpec(tensors, [op], [1] if table else [0, 1], [2])


RUNTIME_GATHERS = {
    "rows": ((5, 3), (4,), 0, False),
    "middle": ((2, 6, 3), (3, 2), 1, False),
    "last": ((2, 3, 4), (2,), -1, False),
    "table_rows": ((7, 4), (3,), 0, True),  # an embedding table looked up with GATHER
    "table_middle": ((2, 5, 3), (2,), 1, True),
}


@needs_gcc
@needs_tflm
@pytest.mark.parametrize("dtype", [np.int8, np.float32], ids=["int8", "float32"])
def test_gather_by_indices_read_at_run_time_matches_tflite_micro(
    tmp_path: Path, dtype: type
) -> None:
    """GATHER whose int32 indices are an input (a WHILE body's loop counter in a Keras RNN),
    of an activation or a constant, along each axis, under ASan/UBSan; indices drawn within
    the axis (TFLM fails on others; ours read the nearest slice: checked by hand below)."""
    parts = {
        name: _runtime_gather(dtype, *case)  # type: ignore[arg-type]
        for name, case in RUNTIME_GATHERS.items()
    }
    model = oracle.merge(parts)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path / "build", sanitize=True)
    sizes = {f"{name}_indices": case[0][case[2]] for name, case in RUNTIME_GATHERS.items()}
    rng = np.random.default_rng(0)
    for _ in range(3):
        inputs = tflm.random_inputs(compiled.inputs, rng)
        for position, port in enumerate(compiled.inputs):
            if port.name in sizes:
                inputs[position] = rng.integers(0, sizes[port.name], port.shape, dtype=np.int32)
        ours, _ = compiled.run(inputs)
        tflm.assert_matches(ours, tflm.run(model, inputs, len(ours)))
    # An index outside the axis reads the nearest slice (-7 the first, 99 the last row).
    spec = _runtime_gather(dtype, (5, 3), (2,), 0, False)
    path.write_bytes(spec.model())
    compiled = compile_model(path, tmp_path / "clamped", sanitize=True)
    x = np.arange(15).reshape(5, 3).astype(dtype)
    ours, _ = compiled.run([x, np.array([-7, 99], np.int32)])
    np.testing.assert_array_equal(ours[0], x[[0, 4]])


def test_gather_by_indices_of_another_type_is_refused() -> None:
    """TFLM's GATHER reads int32 positions only: int64 indices of an activation are refused
    in the scan."""
    spec = _runtime_gather(np.float32, (5, 3), (2,), 0, False)
    spec.tensors[1] = TensorSpec("indices", np.int64, (2,))
    with pytest.raises(ModelImportError, match="operator GATHER on int64"):
        import_tflite(spec.model(), "m.tflite")
