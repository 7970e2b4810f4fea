"""Elementwise nodes on float32: Add, Sub, Mul, Div and Sum (NumPy broadcasting, a constant
input read from a global; nodes of constants are folded), Relu, Clip, LeakyRelu, Sigmoid."""

from __future__ import annotations

import numpy as np
from xdsl.ir import SSAValue

from usmp_dialect.frontends.onnx.importer import NodeContext, operator
from usmp_dialect.frontends.onnx.ops.common import (
    FLOAT32,
    NO_ACTIVATION,
    clip_bounds,
    require_float,
)
from usmp_dialect.kernels.elementwise import (
    FloatBinary,
    FloatClamp,
    FloatFunction,
    LeakyRelu,
    Operand,
    UnaryArithmetic,
    binary,
    broadcast_shape,
    broadcast_shapes,
    unary,
)
from usmp_dialect.kernels.module import element_type, memref_of

_FOLD = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


def fold_binary(operation: str, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """ONNX's result of `lhs op rhs` on constants (integer Div truncates)."""
    if operation == "div":
        if np.issubdtype(lhs.dtype, np.integer):
            return np.trunc(lhs / rhs).astype(lhs.dtype)
        return (lhs / rhs).astype(lhs.dtype)
    return _FOLD[operation](lhs, rhs).astype(lhs.dtype)


def _binary_call(
    context: NodeContext,
    name: str,
    operation: str,
    sides: list[tuple[tuple[int, ...], SSAValue | np.ndarray]],
    target: SSAValue,
) -> None:
    """Emits `@name` computing `side0 op side1` into `target` (of the broadcast shape)."""
    (lhs, left), (rhs, right) = sides
    shapes = broadcast_shapes(lhs, rhs)
    operands, values = [], []
    for position, (shape, side) in enumerate(zip(shapes.inputs, (left, right), strict=True)):
        type_ = memref_of(shape, FLOAT32)
        if isinstance(side, np.ndarray):
            array = np.ascontiguousarray(side.astype(np.float32)).reshape(shape)
            symbol, type_ = context.module.constant(f"{name}_input{position + 1}", array)
            operands.append(Operand(type_, symbol))
        else:
            operands.append(Operand(type_))
            values.append(context.view(side, shape))
    output_type = memref_of(shapes.output, FLOAT32)
    binary(
        context.module,
        name,
        (operands[0], operands[1]),
        output_type,
        FloatBinary(operation, NO_ACTIVATION),
    )
    context.call(values, [context.view(target, shapes.output)], name)


def _side(context: NodeContext, position: int) -> tuple[tuple[int, ...], SSAValue | np.ndarray]:
    if context.is_constant(position):
        return context.shape(position), context.constant(position)
    return context.shape(position), context.value(position)


@operator("Add", "Sub", "Mul", "Div", "Sum")
def arithmetic(context: NodeContext) -> None:
    op_type = context.node.op_type
    operation = "add" if op_type == "Sum" else op_type.lower()
    count = len(context.node.inputs)
    if op_type != "Sum" and count != 2:
        raise context.fail(f"{count} inputs, 2 expected")
    if all(context.is_constant(position) for position in range(count)):
        folded = context.constant(0)
        for position in range(1, count):
            folded = fold_binary(operation, folded, context.constant(position))
        context.fold(0, folded)
        return
    require_float(context, *range(count))
    output = context.output_shape()
    expected: tuple[int, ...] | None = context.shape(0)
    for position in range(1, count):
        assert expected is not None
        expected = broadcast_shape(expected, context.shape(position))
        if expected is None:
            shapes = [list(context.shape(p)) for p in range(count)]
            raise context.fail(f"the input shapes {shapes} do not broadcast")
    if expected != output:
        raise context.fail(f"the output shape {list(output)} is not the broadcast {list(expected)}")
    if count == 1:
        context.alias(context.value(0))
        return
    # in place over an input of the output's shape whose buffer nothing reads later
    target = context.result_over(*(p for p in (0, 1) if context.shape(p) == output))
    accumulated = _side(context, 0)
    for position in range(1, count):
        name = context.name if position == 1 else f"{context.name}_{position}"
        _binary_call(context, name, operation, [accumulated, _side(context, position)], target)
        accumulated = (output, target)  # later inputs are added to the output, in place


def unary_arithmetic(context: NodeContext) -> UnaryArithmetic:
    """The arithmetic of a Relu, Clip, LeakyRelu or Sigmoid node."""
    op_type = context.node.op_type
    if op_type == "Relu":
        return FloatClamp(0.0, float("inf"))
    if op_type == "Clip":
        return FloatClamp(*clip_bounds(context))
    if op_type == "LeakyRelu":
        return LeakyRelu(float(context.attr("alpha", 0.01)))
    assert op_type == "Sigmoid"
    return FloatFunction("logistic")


def _unary(context: NodeContext, arithmetic: UnaryArithmetic) -> None:
    require_float(context, 0)
    source = context.shape(0)
    if context.output_shape() != source:
        raise context.fail(
            f"the output shape {list(context.output_shape())} differs from the input's"
        )
    size = int(np.prod(source))
    unary(
        context.module, context.name, size, element_type(FLOAT32), element_type(FLOAT32), arithmetic
    )
    context.call(
        [context.view(context.value(0), (size,))],
        [context.view(context.result_over(0), (size,))],
    )


@operator("Relu", "Clip", "LeakyRelu", "Sigmoid")
def activation(context: NodeContext) -> None:
    _unary(context, unary_arithmetic(context))
