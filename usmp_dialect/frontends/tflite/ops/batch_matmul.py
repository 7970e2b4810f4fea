"""BATCH_MATMUL: int8, int16 (16x8: both operands and the output int16 with zero point 0,
summed in int64 as TFLM's `EvalInt16`) and float32, ranks 2 to 5 with broadcast batch
dimensions, `adj_x` and `adj_y`, either operand a constant. int8 and int16 parameters as
TFLM's `BatchMatMulPrepare` (`GetQuantizedConvolutionMultipler`: the two input scales
multiplied in float, divided by the output scale in double)."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import (
    INT16_ACTIVATION_TYPES,
    OperatorContext,
    operator,
)
from usmp_dialect.frontends.tflite.ops.common import (
    FLOAT32,
    quantization,
    require_types,
    symmetric_int16,
)
from usmp_dialect.kernels.batch_matmul import QuantizedMatmul, batch_matmul
from usmp_dialect.kernels.elementwise import Operand
from usmp_dialect.kernels.fixed_point import float32, quantize_multiplier
from usmp_dialect.kernels.module import memref_of


@operator("BATCH_MATMUL", types=INT16_ACTIVATION_TYPES)
def batch_matmul_layer(context: OperatorContext) -> None:
    lhs, rhs, output = context.tensor(0), context.tensor(1), context.tensor(0, output=True)
    dtype = require_types(context, lhs, rhs, output, allowed=INT16_ACTIVATION_TYPES)
    options = context.op.option(tflite.BatchMatMulOptions)
    adjoint = (
        (bool(options.AdjX()), bool(options.AdjY())) if options is not None else (False, False)
    )
    ranks = (len(lhs.shape), len(rhs.shape))
    if min(ranks) < 2 or max(ranks) > 5:
        raise context.fail(f"ranks {ranks[0]} and {ranks[1]}; 2 to 5 are supported")
    rank = max(ranks)
    shapes = [(1,) * (rank - len(t.shape)) + tuple(t.shape) for t in (lhs, rhs)]
    rows = shapes[0][-1] if adjoint[0] else shapes[0][-2]
    depth = shapes[0][-2] if adjoint[0] else shapes[0][-1]
    rhs_depth = shapes[1][-1] if adjoint[1] else shapes[1][-2]
    columns = shapes[1][-2] if adjoint[1] else shapes[1][-1]
    if depth != rhs_depth:
        raise context.fail(f"the depths {depth} and {rhs_depth} differ")
    batch = []
    for a, b in zip(shapes[0][:-2], shapes[1][:-2], strict=True):
        if a != b and 1 not in (a, b):
            raise context.fail(
                f"the batch dimensions of {list(lhs.shape)} and {list(rhs.shape)} do not broadcast"
            )
        batch.append(max(a, b))
    expected = (*batch, rows, columns)
    if tuple(output.shape) != expected:
        raise context.fail(f"the output shape {list(output.shape)} should be {list(expected)}")
    quantized = None
    if dtype != FLOAT32:
        symmetric_int16(context, lhs, rhs, output)
        lq, rq, oq = (quantization(context, t) for t in (lhs, rhs, output))
        if any(len(q.scales) != 1 for q in (lq, rq, oq)):
            raise context.fail(f"{dtype.name} BATCH_MATMUL needs per-tensor quantisation")
        multiplier, shift = quantize_multiplier(float32(lq.scale * rq.scale) / oq.scale)
        quantized = QuantizedMatmul(lq.zero_point, rq.zero_point, multiplier, shift, oq.zero_point)
    operands, values = [], []
    for position, shape in enumerate(shapes):
        if context.is_constant(position):
            array = np.ascontiguousarray(context.constant(position)).reshape(shape)
            name, type_ = context.module.constant(f"{context.name}_input{position + 1}", array)
            operands.append(Operand(type_, name))
        else:
            operands.append(Operand(memref_of(shape, dtype)))
            values.append(context.view(context.value(position), shape))
    if len(values) == 0:
        raise context.fail("both inputs are constants (a converter folds such operators)")
    batch_matmul(
        context.module,
        context.name,
        (operands[0], operands[1]),
        memref_of(expected, dtype),
        adjoint,
        quantized,
    )
    context.call(values, [context.result()])
