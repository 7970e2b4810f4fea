"""Rounding and flooring operators of TFLM's float kernels: FLOOR, CEIL and ROUND (`floor.cc`,
`ceil.cc`, `round.cc`: float32 only, ROUND halves to even as TFLite's `RoundToNearest`), and
FLOOR_DIV and FLOOR_MOD (`floor_div.cc`, `floor_mod.cc`: float32 only, NumPy broadcasting and
a constant input as ADD's).

TFLM's FLOOR_DIV fails at `Invoke` when a divisor is zero; a compiled model cannot fail, so it
computes the IEEE quotient's floor there (an infinity, or NaN for 0 / 0). FLOOR_MOD checks
nothing in TFLM either: a zero divisor gives `fmodf`'s NaN in both."""

from __future__ import annotations

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import FLOAT32, require_types
from usmp_dialect.frontends.tflite.ops.elementwise import (
    check_broadcast,
    emit_broadcast,
    emit_unary,
)
from usmp_dialect.kernels.binary_math import FloorDivision
from usmp_dialect.kernels.float_math import FloatMath


@operator("FLOOR", "CEIL", "ROUND", types=(FLOAT32,))
def rounding(context: OperatorContext) -> None:
    require_types(context, context.tensor(0), context.tensor(0, output=True), allowed=(FLOAT32,))
    emit_unary(context, FloatMath(context.op.opcode.lower()), in_place=True)


@operator("FLOOR_DIV", "FLOOR_MOD", types=(FLOAT32,))
def floor_division(context: OperatorContext) -> None:
    if len(context.op.inputs) != 2:
        raise context.fail(f"{len(context.op.inputs)} inputs, 2 expected")
    lhs, rhs, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    dtype = require_types(context, lhs, rhs, output, allowed=(FLOAT32,))
    check_broadcast(context)
    modulo = context.op.opcode == "FLOOR_MOD"
    emit_broadcast(context, FloorDivision(modulo), dtype, in_place=True)
