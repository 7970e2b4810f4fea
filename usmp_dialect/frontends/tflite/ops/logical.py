"""LOGICAL_AND, LOGICAL_OR (bool, NumPy broadcasting at any rank, as the TFLM we test
against), LOGICAL_NOT (bool) and SELECT_V2 (`condition ? x : y`: a bool condition, values of
float32, int8 or int16 — TFLM's `select.cc` types — broadcast together, copied as stored).
TFLM registers no SELECT (the first version), so it stays refused."""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import MemRefType

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import FLOAT32, INT8, INT16, require_types
from usmp_dialect.frontends.tflite.ops.comparisons import BOOL
from usmp_dialect.frontends.tflite.ops.elementwise import (
    check_broadcast,
    emit_broadcast,
    emit_unary,
)
from usmp_dialect.kernels.logic import Logical, LogicalNot, broadcast_shapes_of, select
from usmp_dialect.kernels.module import memref_of

SELECT_VALUE_TYPES = (INT8, INT16, FLOAT32)


@operator("LOGICAL_AND", "LOGICAL_OR", types=(BOOL,))
def logical_binary(context: OperatorContext) -> None:
    if len(context.op.inputs) != 2:
        raise context.fail(f"{len(context.op.inputs)} inputs, 2 expected")
    require_types(
        context, context.tensor(0), context.tensor(1), context.tensor(0, output=True),
        allowed=(BOOL,),
    )  # fmt: skip
    check_broadcast(context)
    operation = "and" if context.op.opcode == "LOGICAL_AND" else "or"
    emit_broadcast(context, Logical(operation), BOOL, in_place=True)


@operator("LOGICAL_NOT", types=(BOOL,))
def logical_not(context: OperatorContext) -> None:
    require_types(context, context.tensor(0), context.tensor(0, output=True), allowed=(BOOL,))
    emit_unary(context, LogicalNot(), in_place=True)


@operator("SELECT_V2", types=(BOOL, *SELECT_VALUE_TYPES), outputs=SELECT_VALUE_TYPES)
def select_v2(context: OperatorContext) -> None:
    if len(context.op.inputs) != 3:
        raise context.fail(f"{len(context.op.inputs)} inputs, 3 expected")
    condition, x, y = (context.tensor(position) for position in range(3))
    output = context.tensor(0, output=True)
    require_types(context, condition, allowed=(BOOL,))
    dtype = require_types(context, x, y, output, allowed=SELECT_VALUE_TYPES)
    shapes = [condition.shape, x.shape, y.shape]
    try:
        expected = tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise context.fail(
            f"the input shapes {[list(s) for s in shapes]} do not broadcast"
        ) from None
    sizes = [int(np.prod(shape)) for shape in (*shapes, output.shape)]
    if expected != output.shape and sizes != [1, 1, 1, 1]:  # TFLM keeps a one-element output
        raise context.fail(
            f"the output shape {list(output.shape)} is not the broadcast {list(expected)} of "
            f"the inputs {[list(s) for s in shapes]}"
        )
    if all(context.is_constant(position) for position in range(3)):
        raise context.fail("all inputs are constants (a converter folds such operators)")
    loops, reduced = broadcast_shapes_of(expected if sizes != [1, 1, 1, 1] else (1,), shapes)
    operands: list[tuple[MemRefType, str | None]] = []
    values = []
    for position, shape in enumerate(reduced):
        element = BOOL if position == 0 else dtype
        if context.is_constant(position):
            array = np.ascontiguousarray(context.constant(position)).reshape(shape)
            symbol, type_ = context.module.constant(f"{context.name}_input{position + 1}", array)
            operands.append((type_, symbol))
        else:
            operands.append((memref_of(shape, element), None))
            values.append(context.view(context.value(position), shape))
    select(context.module, context.name, operands, memref_of(loops, dtype))
    context.call(values, [context.view(context.result(), loops)])
