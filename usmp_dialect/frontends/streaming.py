"""What the TFLite and ONNX frontends share to emit a fused group (`graph.streaming` decides
it, `kernels.streaming` writes its function): the group function's name, its `usmp.fused`
attribute, and the line buffers `@main` allocates for it. Everything here reads the
`StreamGraph` the frontend described, not the model format."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, MemRefType, StringAttr
from xdsl.ir import SSAValue

from usmp_dialect.dialects.usmp import TENSOR_ATTRIBUTE
from usmp_dialect.graph.streaming import Group, StreamGraph
from usmp_dialect.kernels.builder import KernelBuilder


def group_name(stream: StreamGraph, group: Group) -> str:
    """`fused_<first operator>__<last operator>` (C identifiers stay within 63 characters)."""
    first = stream.operators[group.operators[0]]
    last = stream.operators[group.operators[-1]]
    return f"fused_{first.name}__{last.name}"


def fused_attribute(
    names: Callable[[str], str], stream: StreamGraph, group: Group, written_over: int | None = None
) -> DictionaryAttr:
    """`usmp.fused` of a group function: its operators, per line buffer the tensor (its short
    name, `names`), the rows kept of its height and the bytes, the bytes the group takes off
    the peak, and `written_over`: the input tensor its output was written over, if any."""
    over = (
        {}
        if written_over is None
        else {"written_over": StringAttr(names(stream.tensors[written_over].name))}
    )
    return DictionaryAttr(
        {
            **over,
            "operators": ArrayAttr(
                [StringAttr(stream.operators[index].name) for index in group.operators]
            ),
            "tensors": ArrayAttr(
                [StringAttr(names(stream.tensors[b.tensor].name)) for b in group.line_buffers]
            ),
            "rows": ArrayAttr([IntegerAttr(b.rows, 64) for b in group.line_buffers]),
            "heights": ArrayAttr(
                [IntegerAttr(stream.tensors[b.tensor].height, 64) for b in group.line_buffers]
            ),
            "line_buffer_bytes": ArrayAttr(
                [IntegerAttr(b.size_bytes, 64) for b in group.line_buffers]
            ),
            "saved_bytes": IntegerAttr(group.saved_bytes, 64),
        }
    )


def call_group(
    main: KernelBuilder,
    names: Callable[[str], str],
    stream: StreamGraph,
    group: Group,
    name: str,
    scratch: Sequence[MemRefType],
    sources: Sequence[SSAValue],
    output: SSAValue,
    held: Sequence[int],
) -> None:
    """Allocates the group's scratch (`kernels.streaming.fused_rows`'s types) in `@main` and
    calls `@name(sources..., output, scratch...)`. `held`: the tensor each line buffer keeps
    rows of (`graph.streaming.Schedule.buffer_tensors`); a buffer is named after it
    (`usmp.tensor`, SPEC §14, as every activation buffer is), the reducer's sums after the
    group's output."""
    last = stream.operators[group.operators[-1]]
    buffers = []
    for position, type_ in enumerate(scratch):
        alloc = memref.AllocOp([], [], type_)
        tensor = held[position] if position < len(held) else last.outputs[0]
        alloc.attributes[TENSOR_ATTRIBUTE] = StringAttr(stream.tensors[tensor].name)
        value = main.insert(alloc)
        if position < len(held):
            value.name_hint = f"{names(stream.tensors[tensor].name)}_rows"
        else:
            value.name_hint = f"{name}_sums"
        buffers.append(value)
    main.insert(func.CallOp(name, [*sources, output, *buffers], []))
