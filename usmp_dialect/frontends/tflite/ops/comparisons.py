"""EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS and LESS_EQUAL: bool outputs, with NumPy
broadcasting at any rank (TFLM's `BroadcastBinaryOpSimple`; older TFLM broadcast up to 4-D)
and constant inputs as ADD's, for the input types TFLM's `comparisons.cc` evaluates:
float32, int8 (each input rescaled by its own scale, `ComparisonsPrepare`), int32 and int64
for all six, bool for EQUAL and NOT_EQUAL. Other types are refused in the import's pre-scan,
as TFLM refuses them ("Type ... not supported").

int16 GREATER, the one int16 comparison TFLM's `GreaterEval` accepts, is refused too: TFLM's
`ComparisonsPrepare` derives the rescaling parameters for uint8 and int8 only, so its int16
path reads an `OpDataComparisons` that was never written. The answer depends on what the
arena held before (all false on one machine, the true comparison on another), so there is
no reference to be bit-exact with."""

from __future__ import annotations

import numpy as np

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    INT8,
    INT16,
    quantization,
    require_types,
)
from usmp_dialect.frontends.tflite.ops.elementwise import check_broadcast, emit_broadcast
from usmp_dialect.frontends.tflite.reader import Tensor
from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.kernels.logic import Comparison, QuantizedComparison

BOOL = np.dtype(np.bool_)
INT32 = np.dtype(np.int32)
INT64 = np.dtype(np.int64)
_ORDERED = (INT8, INT32, INT64, FLOAT32)
INPUT_TYPES = {
    "EQUAL": (BOOL, *_ORDERED),
    "NOT_EQUAL": (BOOL, *_ORDERED),
    "GREATER": _ORDERED,
    "GREATER_EQUAL": _ORDERED,
    "LESS": _ORDERED,
    "LESS_EQUAL": _ORDERED,
}


def _rescaling(context: OperatorContext, tensor: Tensor) -> tuple[int, int, int]:
    """(offset, multiplier, shift) of an int8/int16 input: minus its zero point and TFLite's
    `QuantizeMultiplierSmallerThanOneExp(scale)`, which needs 0 < scale < 1."""
    quant = quantization(context, tensor)
    if len(quant.scales) != 1:
        raise context.fail(f"{tensor.describe()} is quantised per channel")
    multiplier, shift = quantize_multiplier(quant.scale) if 0 < quant.scale < 1 else (0, 1)
    if shift > 0:
        raise context.fail(
            f"{tensor.describe()} has the scale {quant.scale:g}; TFLM compares int8/int16 "
            "values with scales between 0 and 1 only"
        )
    return -quant.zero_point, multiplier, shift


def _compare(context: OperatorContext) -> None:
    opcode = context.op.opcode
    if len(context.op.inputs) != 2 or len(context.op.outputs) != 1:
        raise context.fail("2 inputs and 1 output expected")
    lhs, rhs, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    dtype = require_types(context, lhs, rhs, allowed=INPUT_TYPES[opcode])
    require_types(context, output, allowed=(BOOL,))
    check_broadcast(context)
    if dtype in (INT8, INT16):
        (o1, m1, s1), (o2, m2, s2) = (_rescaling(context, t) for t in (lhs, rhs))
        arithmetic: Comparison | QuantizedComparison = QuantizedComparison(
            opcode, (o1, o2), (m1, m2), (s1, s2)
        )
    else:
        arithmetic = Comparison(opcode)
    emit_broadcast(context, arithmetic, dtype, in_place=False, output_dtype=BOOL)


for _opcode, _types in INPUT_TYPES.items():
    operator(_opcode, types=_types, outputs=(BOOL,))(_compare)
