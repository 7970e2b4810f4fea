"""Nodes that only change how a tensor is seen, and the constant subgraphs that compute
shapes: Reshape, Flatten, Squeeze, Unsqueeze, Dropout and Identity are views of their input
(folded on constants); Constant, ConstantOfShape, Shape, Gather and Cast are folded (Gather and
Cast on activations are refused)."""

from __future__ import annotations

import numpy as np

from usmp_dialect.frontends.onnx.importer import NodeContext, operator
from usmp_dialect.frontends.onnx.ops.common import axis


def _axes(context: NodeContext) -> list[int] | None:
    """The raw `axes` of Squeeze/Unsqueeze: an attribute before opset 13, an input after."""
    if context.opset >= 13:
        if not context.has_input(1):
            return None
        return [int(value) for value in context.constant(1).reshape(-1)]
    attribute = context.attr("axes")
    return None if attribute is None else [int(value) for value in attribute]


def _folded_shape(context: NodeContext, value: np.ndarray) -> tuple[int, ...]:
    """The output shape of a reshape-like node applied to the constant `value`."""
    op_type, shape = context.node.op_type, value.shape
    if op_type == "Reshape":
        target = [int(size) for size in context.constant(1).reshape(-1)]
        if not context.attr("allowzero", 0):
            target = [shape[i] if size == 0 else size for i, size in enumerate(target)]
        if target.count(-1) == 1:
            known = int(np.prod([size for size in target if size != -1]))
            target[target.index(-1)] = value.size // known if known else 0
        return tuple(target)
    if op_type == "Flatten":
        split = axis(context, int(context.attr("axis", 1)), len(shape) + 1)
        return (int(np.prod(shape[:split])), int(np.prod(shape[split:])))
    if op_type == "Squeeze":
        axes = _axes(context)
        if axes is None:
            return tuple(size for size in shape if size != 1)
        dropped = {axis(context, value, len(shape)) for value in axes}
        return tuple(size for i, size in enumerate(shape) if i not in dropped)
    if op_type == "Unsqueeze":
        axes = _axes(context) or []
        rank = len(shape) + len(axes)
        result = list(shape)
        for position in sorted(axis(context, value, rank) for value in axes):
            result.insert(position, 1)
        return tuple(result)
    return shape


@operator("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Dropout", "Identity")
def view(context: NodeContext) -> None:
    op_type = context.node.op_type
    if (
        op_type == "Dropout"
        and len(context.node.outputs) > 1
        and context.used(context.node.outputs[1])
    ):
        raise context.fail("the mask output is not supported (inference only)")
    if op_type == "Dropout" and context.opset >= 12 and context.has_input(2):
        training = context.constant(2)
        if bool(training.reshape(-1)[0]):
            raise context.fail("training_mode is not supported (inference only)")
    if context.is_constant(0):
        value = context.constant(0)
        shape = _folded_shape(context, value)
        if int(np.prod(shape)) != value.size:
            raise context.fail(f"cannot view shape {list(value.shape)} as {list(shape)}")
        context.fold(0, value.reshape(shape))
        return
    source, output = context.shape(0), context.output_shape()
    if int(np.prod(source)) != int(np.prod(output)):
        raise context.fail(f"cannot view shape {list(source)} as {list(output)}")
    if context.dtype(0) != context.output_dtype():
        raise context.fail("the output type differs from the input's")
    context.alias(context.value(0))


@operator("Constant")
def constant(context: NodeContext) -> None:
    attributes = context.node.attributes
    if "value" in attributes:
        context.fold(0, np.asarray(attributes["value"]))
    elif "value_float" in attributes:
        context.fold(0, np.array(attributes["value_float"], dtype=np.float32))
    elif "value_floats" in attributes:
        context.fold(0, np.array(attributes["value_floats"], dtype=np.float32))
    elif "value_int" in attributes:
        context.fold(0, np.array(attributes["value_int"], dtype=np.int64))
    elif "value_ints" in attributes:
        context.fold(0, np.array(attributes["value_ints"], dtype=np.int64))
    else:
        names = sorted(attributes)
        raise context.fail(f"unsupported Constant attributes {names}")


@operator("ConstantOfShape")
def constant_of_shape(context: NodeContext) -> None:
    shape = tuple(int(size) for size in context.constant(0).reshape(-1))
    if min(shape, default=0) < 0:
        raise context.fail(f"negative shape {list(shape)}")
    fill = context.attr("value")
    value = np.zeros(1, dtype=np.float32) if fill is None else np.asarray(fill).reshape(-1)
    context.fold(0, np.full(shape, value[0], dtype=value.dtype))


@operator("Shape")
def shape_of(context: NodeContext) -> None:
    shape = context.shape(0)
    start, end = int(context.attr("start", 0)), context.attr("end")
    context.fold(0, np.array(shape[start : None if end is None else int(end)], dtype=np.int64))


@operator("Gather")
def gather(context: NodeContext) -> None:
    if not (context.is_constant(0) and context.is_constant(1)):
        raise context.fail("Gather is only supported on constants (folded)")
    data = context.constant(0)
    gathered = np.take(
        data, context.constant(1), axis=axis(context, int(context.attr("axis", 0)), data.ndim)
    )
    context.fold(0, gathered)


@operator("Cast")
def cast(context: NodeContext) -> None:
    import onnx

    target = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(int(context.attr("to"))))
    if context.is_constant(0):
        context.fold(0, context.constant(0).astype(target))
        return
    if context.dtype(0) != target:
        raise context.fail(
            f"Cast of an activation from {context.dtype(0).name} to {target.name} is not supported"
        )
    context.alias(context.value(0))
