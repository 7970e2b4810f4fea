"""DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND and MIRROR_PAD (int8
and float32; values are moved, never rescaled, as in TFLM). DEPTH_TO_SPACE and SPACE_TO_DEPTH
are transposes of 6-D views; the others index arithmetic per output dimension
(`kernels.rearrange`). SPACE_TO_BATCH_ND pads with the real 0 as TFLite does (TFLM's pad value
is uninitialised memory). GATHER of an activation by constant indices, or of an activation or
a constant by int32 indices read at run time (`gather_activation`, called by GATHER's handler
in `fold`, which folds it when both are constants), and GATHER_ND by constant indices."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import INT8, quantization, require_types
from usmp_dialect.kernels.data_movement import transpose
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.rearrange import SourceAxis, gather, remap

_BLOCK_OPTIONS = {
    "DEPTH_TO_SPACE": tflite.DepthToSpaceOptions,
    "SPACE_TO_DEPTH": tflite.SpaceToDepthOptions,
}


def _expect(context: OperatorContext, expected: tuple[int, ...]) -> None:
    output = context.tensor(0, output=True)
    if tuple(output.shape) != expected:
        raise context.fail(f"the output shape {list(output.shape)} should be {list(expected)}")


@operator("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
def depth_and_space(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output)
    options = context.op.option(_BLOCK_OPTIONS[context.op.opcode])
    block = options.BlockSize() if options is not None else 0
    if len(source.shape) != 4 or block < 1:
        raise context.fail(f"a 4-D input and a positive block size are required ({block})")
    n, h, w, c = source.shape
    if context.op.opcode == "DEPTH_TO_SPACE":
        if c % (block * block):
            raise context.fail(f"{c} channels are not a multiple of {block}x{block}")
        depth = c // (block * block)
        _expect(context, (n, h * block, w * block, depth))
        view_in, view_out = (n, h, w, block, block, depth), (n, h, block, w, block, depth)
    else:
        if h % block or w % block:
            raise context.fail(f"the size {h}x{w} is not a multiple of the block {block}")
        _expect(context, (n, h // block, w // block, c * block * block))
        view_in = (n, h // block, block, w // block, block, c)
        view_out = (n, h // block, w // block, block, block, c)
    transpose(
        context.module,
        context.name,
        memref_of(view_in, dtype),
        memref_of(view_out, dtype),
        [0, 1, 3, 2, 4, 5],
    )
    context.call(
        [context.view(context.value(0), view_in)], [context.view(context.result(), view_out)]
    )


def _blocks(context: OperatorContext) -> tuple[tuple[int, int], np.ndarray, bool]:
    """The block shape and paddings (or crops) as 2-D ones ([1, b] for a 3-D input), and
    whether the input is 3-D."""
    source = context.tensor(0)
    rank = len(source.shape)
    if rank not in (3, 4):
        raise context.fail(f"the input has rank {rank}; 3 or 4 is required")
    spatial = rank - 2
    block = np.asarray(context.constant(1)).reshape(-1).astype(np.int64)
    pads = np.asarray(context.constant(2)).astype(np.int64)
    if block.size != spatial or pads.shape != (spatial, 2):
        raise context.fail(
            f"the block shape {block.tolist()} and paddings {pads.tolist()} do not fit the "
            f"{spatial} spatial dimensions"
        )
    if (block < 1).any() or (pads < 0).any():
        raise context.fail(f"invalid block shape {block.tolist()} or paddings {pads.tolist()}")
    if spatial == 1:
        return (1, int(block[0])), np.vstack([[0, 0], pads]), True
    return (int(block[0]), int(block[1])), pads, False


def _as_4d(shape: tuple[int, ...], three: bool) -> tuple[int, int, int, int]:
    if three:
        return (shape[0], 1, shape[1], shape[2])
    return (shape[0], shape[1], shape[2], shape[3])


@operator("SPACE_TO_BATCH_ND")
def space_to_batch(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output)
    (bh, bw), pads, three = _blocks(context)
    n, h, w, c = _as_4d(source.shape, three)
    padded_h, padded_w = h + pads[0].sum(), w + pads[1].sum()
    if padded_h % bh or padded_w % bw:
        raise context.fail(f"the padded size {padded_h}x{padded_w} is not a multiple of the block")
    oh, ow = int(padded_h // bh), int(padded_w // bw)
    out4 = (n * bh * bw, oh, ow, c)
    _expect(context, (out4[0], ow, c) if three else out4)
    view_out = (bh, bw, n, oh, ow, c)
    top, left = int(pads[0][0]), int(pads[1][0])
    axes = [
        SourceAxis(((2, 1),), 0, n),
        SourceAxis(((3, bh), (0, 1)), -top, h, padded=True),
        SourceAxis(((4, bw), (1, 1)), -left, w, padded=True),
        SourceAxis(((5, 1),), 0, c),
    ]
    # TFLite pads with the real 0: the output's zero point (int8) or 0.0. TFLM's pad value is
    # whatever its never-written `SpaceToBatchParams.output_offset` holds in the arena.
    pad_value = quantization(context, output).zero_point if dtype == INT8 else 0.0
    view_in = (n, h, w, c)
    remap(
        context.module,
        context.name,
        memref_of(view_in, dtype),
        memref_of(view_out, dtype),
        axes,
        pad_value,
    )
    context.call(
        [context.view(context.value(0), view_in)], [context.view(context.result(), view_out)]
    )


@operator("BATCH_TO_SPACE_ND")
def batch_to_space(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output)
    (bh, bw), crops, three = _blocks(context)
    batches, h, w, c = _as_4d(source.shape, three)
    if batches % (bh * bw):
        raise context.fail(f"{batches} batches are not a multiple of the block {bh}x{bw}")
    n = batches // (bh * bw)
    oh, ow = int(h * bh - crops[0].sum()), int(w * bw - crops[1].sum())
    if min(oh, ow) < 1:
        raise context.fail(f"the crops {crops.tolist()} leave nothing")
    out4 = (n, oh, ow, c)
    _expect(context, (n, ow, c) if three else out4)
    top, left = int(crops[0][0]), int(crops[1][0])
    axes = [
        SourceAxis(((1, 1),), top, bh, modulo=bh),
        SourceAxis(((2, 1),), left, bw, modulo=bw),
        SourceAxis(((0, 1),), 0, n),
        SourceAxis(((1, 1),), top, h, divide=bh),
        SourceAxis(((2, 1),), left, w, divide=bw),
        SourceAxis(((3, 1),), 0, c),
    ]
    view_in = (bh, bw, n, h, w, c)
    remap(context.module, context.name, memref_of(view_in, dtype), memref_of(out4, dtype), axes)
    context.call([context.view(context.value(0), view_in)], [context.view(context.result(), out4)])


@operator("MIRROR_PAD")
def mirror_pad(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output)
    options = context.op.option(tflite.MirrorPadOptions)
    mode = options.Mode() if options is not None else tflite.MirrorPadMode.REFLECT
    offset = 1 if mode == tflite.MirrorPadMode.REFLECT else 0
    rank = len(source.shape)
    pads = np.asarray(context.constant(1)).astype(np.int64)
    if pads.shape != (rank, 2) or (pads < 0).any():
        raise context.fail(f"the paddings {pads.tolist()} must be [{rank}, 2] and non-negative")
    for size, (before, after) in zip(source.shape, pads.tolist(), strict=True):
        if max(before, after) > size - offset:
            raise context.fail(
                f"the paddings {pads.tolist()} exceed what {'REFLECT' if offset else 'SYMMETRIC'} "
                f"allows for the input {list(source.shape)}"
            )
    _expect(context, tuple(s + int(p.sum()) for s, p in zip(source.shape, pads, strict=True)))
    axes = [
        SourceAxis(((d, 1),), -int(pads[d][0]), size, mirror=offset)
        for d, size in enumerate(source.shape)
    ]
    remap_input(context, dtype, axes)


def remap_input(context: OperatorContext, dtype: np.dtype, axes: list[SourceAxis]) -> None:
    """Emits and calls the operator's function writing its output from input 0 through `axes`
    (`kernels.rearrange.remap`, no padding)."""
    source, output = context.tensor(0), context.tensor(0, output=True)
    remap(
        context.module,
        context.name,
        memref_of(source.shape, dtype),
        memref_of(output.shape, dtype),
        axes,
    )
    context.call([context.value(0)], [context.result()])


def gather_activation(
    context: OperatorContext,
    axis: int,
    indices: np.ndarray | None,
    params: np.ndarray | None = None,
) -> None:
    """GATHER (int8 or float32 values, copied as TFLM copies them) along `axis` of an
    activation by constant `indices` (in range, checked by the caller), or of an activation or
    the constant `params` by the int32 indices of input 1 read at run time (`indices` None;
    one outside the axis reads the nearest slice, where TFLM's `Invoke` fails)."""
    source, output = context.tensor(0), context.tensor(0, output=True)
    if params is None:
        dtype = require_types(context, source, output)
    else:
        dtype = require_types(context, output)
        if params.dtype != dtype:
            raise context.fail(f"a {params.dtype.name} input into a {dtype.name} output")
    shape = source.shape if params is None else params.shape
    positions = indices.shape if indices is not None else tuple(context.tensor(1).shape)
    output_shape = tuple(context.tensor(0, output=True).shape)
    if (
        indices is None
        and positions == (1,)
        and output_shape == (*shape[:axis], *shape[axis + 1 :])
    ):
        positions = ()  # a scalar index (a loop counter), a one-element vector of ours
    _expect(context, (*shape[:axis], *positions, *shape[axis + 1 :]))
    outer, inner = int(np.prod(shape[:axis])), int(np.prod(shape[axis + 1 :]))
    count = int(np.prod(positions))
    view_in = (outer, shape[axis], inner)
    view_out = (outer, count, inner)
    values = []
    input_global = None
    if params is None:
        values.append(context.view(context.value(0), view_in))
    else:
        input_global, _ = context.module.constant(f"{context.name}_input", params.reshape(view_in))
    if indices is None:
        values.append(context.view(context.value(1), (count,)))
    gather(
        context.module,
        context.name,
        memref_of(view_in, dtype),
        memref_of(view_out, dtype),
        None if indices is None else indices.reshape(-1),
        input_global,
    )
    context.call(values, [context.view(context.result(), view_out)])


@operator("GATHER_ND")
def gather_nd(context: OperatorContext) -> None:
    """GATHER_ND of an activation by constant indices: each index tuple names a row of the
    input seen as `[prod(first k dimensions), rest]`, so it is GATHER along that middle axis
    with the tuples flattened to row numbers at import."""
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output)
    indices = np.asarray(context.constant(1))
    if indices.dtype.kind not in "iu" or indices.ndim < 1:
        raise context.fail(f"the indices must be integers of rank >= 1 ({indices.dtype.name})")
    depth = indices.shape[-1]
    shape = source.shape
    if not 1 <= depth <= len(shape):
        raise context.fail(f"index tuples of {depth} values for a {len(shape)}-D input")
    tuples = indices.reshape(-1, depth).astype(np.int64)
    bounds = np.array(shape[:depth])
    if ((tuples < 0) | (tuples >= bounds)).any():
        raise context.fail(f"an index lies outside the input's shape {list(shape[:depth])}")
    _expect(context, (*indices.shape[:-1], *shape[depth:]))
    rows = np.ravel_multi_index(tuple(tuples.T), tuple(shape[:depth]))
    inner = int(np.prod(shape[depth:]))
    view_in = (1, int(np.prod(shape[:depth])), inner)
    view_out = (1, len(rows), inner)
    gather(
        context.module,
        context.name,
        memref_of(view_in, dtype),
        memref_of(view_out, dtype),
        np.asarray(rows),
    )
    context.call(
        [context.view(context.value(0), view_in)], [context.view(context.result(), view_out)]
    )
