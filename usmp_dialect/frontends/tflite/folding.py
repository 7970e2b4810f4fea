"""Folds a PAD (or PADV2) into the windowed operator that reads it (issue 22): the operator's
window reads the unpadded tensor with the padding added to its own, so the padded tensor and
the PAD's copy disappear, and fused row streaming sees one windowed operator where there were
an opaque copy and a window (Keras' `ZeroPadding2D` before a VALID stride-2 depthwise
convolution, explicit padding in PyTorch and onnx2tf exports).

The kernels never read padding: a convolution skips the window taps outside its input, a max
pool takes the maximum of the taps inside, starting from the type's lowest value. A fold is
therefore exact only where a padded element changes nothing, which this module proves from the
model's constants before it folds:

* CONV_2D, DEPTHWISE_CONV_2D: the pad value is the input's zero point (int8: every product
  `(x - zero_point) * w` of a padded element is 0; int16 16x8 and float: the value is 0, the
  float weights finite, so a padded product is a signed zero and every sum keeps its value —
  at most the sign of an exact zero differs from TFLM's); not hybrid layers, which quantise
  their whole float input first.
* MAX_POOL_2D: the pad value is at most the kernel's initial maximum (int8 -128, int16 -32768,
  float `lowest`): a padded element never wins.
* AVERAGE_POOL_2D is never folded: TFLite divides by the taps inside the padded tensor and adds
  the pad value's raw integer, which the window of the unpadded input does not reproduce.

A PAD folds when it pads only the height and the width (not the batch or the channels, by
non-negative amounts), its input is an activation (4-D, not a variable) with its output's type
and quantisation, and its output is no model output and is read by exactly one operator, as
that operator's input 0, and every window of the reader still reads a row of the unpadded
input (padding deeper than the window along the height would leave rows that fused row
streaming computes from nothing; along the width the kernels handle it). The graph returned
has the PAD removed (the other operators keep their indices, so names and messages still number
them as the model does) and the reader's `Operator.padding` set; `ops/common.window` adds it to
the window the options describe.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.reader import Graph, Operator, Tensor

_PADS = ("PAD", "PADV2")
_CONVOLUTIONS = ("CONV_2D", "DEPTHWISE_CONV_2D")
_FOLDABLE_INTO = (*_CONVOLUTIONS, "MAX_POOL_2D")
INT8 = np.dtype(np.int8)
INT16 = np.dtype(np.int16)
FLOAT32 = np.dtype(np.float32)
FLOAT_LOWEST = float(np.finfo(np.float32).min)  # the float max pool's initial maximum


def _same_quantization(a: Tensor, b: Tensor) -> bool:
    if a.dtype == FLOAT32:
        return True
    qa, qb = a.quantization, b.quantization
    if qa is None or qb is None:
        return False
    return (
        len(qa.scales) == len(qb.scales) == 1
        and qa.scale == qb.scale
        and qa.zero_point == qb.zero_point
    )


def pad_value(graph: Graph, op: Operator) -> float | None:
    """The value the PAD writes, as TFLM's PAD kernel chooses it: PADV2's constant (its raw
    value), else the output's zero point (int8), 0 (int16: TFLM ignores the zero point) or 0.0
    (float). None when it is not a constant of the output's type."""
    output = graph.tensors[op.outputs[0]]
    if len(op.inputs) > 2 and op.inputs[2] >= 0:
        constant = graph.tensors[op.inputs[2]]
        if constant.data is None or constant.data.size != 1 or constant.dtype != output.dtype:
            return None
        if constant.quantization is not None and not _same_quantization(constant, output):
            return None
        return float(constant.data.reshape(()).item())
    if output.dtype == INT8:
        return None if output.quantization is None else float(output.quantization.zero_point)
    return 0.0


def _spatial_paddings(graph: Graph, op: Operator) -> tuple[tuple[int, int], ...] | None:
    """The (before, after) padding of the height and the width, when the PAD pads only those
    of a 4-D tensor by non-negative constants."""
    if len(op.inputs) < 2 or op.inputs[1] < 0 or len(op.outputs) != 1:
        return None
    paddings = graph.tensors[op.inputs[1]].data
    source = graph.tensors[op.inputs[0]]
    if paddings is None or paddings.dtype not in (np.int32, np.int64):
        return None
    if paddings.shape != (4, 2) or len(source.shape) != 4 or (paddings < 0).any():
        return None
    if paddings[0].any() or paddings[3].any():
        return None
    pairs = tuple((int(before), int(after)) for before, after in paddings[1:3])
    output = graph.tensors[op.outputs[0]]
    expected = (
        source.shape[0],
        source.shape[1] + sum(pairs[0]),
        source.shape[2] + sum(pairs[1]),
        source.shape[3],
    )
    return pairs if tuple(output.shape) == expected else None


def _neutral(graph: Graph, consumer: Operator, source: Tensor, value: float) -> bool:
    """Whether padding `source` with `value` changes nothing `consumer` computes (module doc)."""
    if consumer.opcode == "MAX_POOL_2D":
        if source.dtype == FLOAT32:
            return value <= FLOAT_LOWEST
        return value == float(np.iinfo(source.dtype).min)
    if len(consumer.inputs) < 2 or consumer.inputs[1] < 0:
        return False
    filters = graph.tensors[consumer.inputs[1]]
    if filters.data is None:
        return False
    if source.dtype == INT8:
        return source.quantization is not None and value == source.quantization.zero_point
    if source.dtype == INT16:
        return value == 0 and filters.dtype == INT8
    if source.dtype == FLOAT32:
        # int8 filters on a float input: hybrid (the input is quantised as a whole) or
        # dequantised; only float filters are folded.
        return value == 0 and filters.dtype == FLOAT32 and bool(np.isfinite(filters.data).all())
    return False


def _every_window_reads_a_row(
    graph: Graph, consumer: Operator, height: int, pads: tuple[int, int]
) -> bool:
    """Whether every window of `consumer` over the input padded by `pads` (before, after)
    along the height reads at least one row of the unpadded input of `height` rows: fused row
    streaming computes each output row from the input rows its window covers."""
    if consumer.opcode == "MAX_POOL_2D":
        options = consumer.option(tflite.Pool2DOptions)
        if options is None:
            return False
        kernel, dilation = options.FilterHeight(), 1
    else:
        depthwise = consumer.opcode == "DEPTHWISE_CONV_2D"
        options = consumer.option(
            tflite.DepthwiseConv2DOptions if depthwise else tflite.Conv2DOptions
        )
        filters = graph.tensors[consumer.inputs[1]]
        if options is None or len(filters.shape) != 4:
            return False
        kernel, dilation = filters.shape[1], options.DilationHFactor()
    stride = options.StrideH()
    if min(kernel, dilation, stride) < 1:
        return False  # the handler reports it
    span = (kernel - 1) * dilation + 1
    padded = height + sum(pads)
    if options.Padding() == tflite.Padding.SAME:
        out = -(-padded // stride)
        top = pads[0] + max(0, (out - 1) * stride + span - padded) // 2
    else:
        out = (padded - span) // stride + 1
        top = pads[0]
    return out >= 1 and span - top > 0 and (out - 1) * stride - top < height


def _foldable(graph: Graph, pad: Operator, readers: dict[int, list[Operator]]) -> bool:
    if pad.opcode not in _PADS or len(pad.outputs) != 1 or not pad.inputs:
        return False
    if _spatial_paddings(graph, pad) is None:
        return False
    source = graph.tensors[pad.inputs[0]]
    padded = graph.tensors[pad.outputs[0]]
    if source.data is not None or source.variable or padded.index in graph.outputs:
        return False
    if source.dtype != padded.dtype or source.dtype not in (INT8, INT16, FLOAT32):
        return False
    if not _same_quantization(source, padded):
        return False
    consumers = readers.get(padded.index, [])
    if len(consumers) != 1:
        return False
    (consumer,) = consumers
    if consumer.opcode not in _FOLDABLE_INTO or consumer.padding is not None:
        return False
    if consumer.inputs.count(padded.index) != 1 or consumer.inputs[0] != padded.index:
        return False
    if len(consumer.outputs) != 1 or consumer.outputs[0] < 0:
        return False
    if len(graph.tensors[consumer.outputs[0]].shape) != 4:
        return False
    paddings = _spatial_paddings(graph, pad)
    assert paddings is not None
    if not _every_window_reads_a_row(graph, consumer, source.shape[1], paddings[0]):
        return False
    value = pad_value(graph, pad)
    return value is not None and _neutral(graph, consumer, source, value)


def fold_padding(graph: Graph) -> Graph:
    """`graph` with every PAD that folds (module doc) removed and its reader's window padded."""
    readers: dict[int, list[Operator]] = {}
    for op in graph.operators:
        for index in set(op.inputs):
            if index >= 0:
                readers.setdefault(index, []).append(op)
    pads = [op for op in graph.operators if _foldable(graph, op, readers)]
    if not pads:
        return graph
    rewritten: dict[int, Operator] = {}
    for pad in pads:
        (consumer,) = readers[pad.outputs[0]]
        paddings = _spatial_paddings(graph, pad)
        assert paddings is not None
        height, width = paddings
        rewritten[consumer.index] = replace(
            consumer,
            inputs=(pad.inputs[0], *consumer.inputs[1:]),
            padding=(height, width),
            folded=(*consumer.folded, pad.index),
        )
    removed = {pad.index for pad in pads}
    operators = tuple(
        rewritten.get(op.index, op) for op in graph.operators if op.index not in removed
    )
    return replace(graph, operators=operators)
