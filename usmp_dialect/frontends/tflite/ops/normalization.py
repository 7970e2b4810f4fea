"""LOG_SOFTMAX and L2_NORMALIZATION over the last axis, float32 (TFLM's int8 kernels for them
are not imported)."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import FLOAT32, require_types
from usmp_dialect.frontends.tflite.reader import Operator
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.row_functions import row_function


def _plain_l2(op: Operator) -> str | None:
    """L2_NORMALIZATION's fused activation: TFLM's kernel applies none."""
    if op.opcode != "L2_NORMALIZATION":
        return None
    options = op.option(tflite.L2NormOptions)
    code = options.FusedActivationFunction() if options is not None else 0
    return None if code == 0 else f"fused activation {code}"


@operator("LOG_SOFTMAX", "L2_NORMALIZATION", types=(FLOAT32,), supports=_plain_l2)
def row_normalization(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output)
    if source.shape != output.shape:
        raise context.fail(f"output shape {list(output.shape)} differs from the input's")
    depth = source.shape[-1]
    rows = int(np.prod(source.shape)) // depth
    type_ = memref_of((rows, depth), dtype)
    row_function(context.module, context.name, type_, context.op.opcode.lower())
    source_value = context.view(context.value(0), (rows, depth))
    context.call([source_value], [context.view(context.result(), (rows, depth))])
