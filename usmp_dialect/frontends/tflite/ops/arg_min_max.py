"""ARG_MAX and ARG_MIN over a constant axis: float32 or int8 inputs, int32 outputs, an int32
axis — what TFLM's `arg_min_max.cc` evaluates ("Only float32, uint8_t and int8_t are
supported", "Only int32_t are supported"); an int16 input or an int64 output is refused in
the import's pre-scan, an int64 axis by the handler. Ties resolve to the first index, as
TFLM's `ArgMinMax`."""

from __future__ import annotations

import numpy as np

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import FLOAT32, INT8, require_types
from usmp_dialect.kernels.arg_min_max import arg_min_max
from usmp_dialect.kernels.module import memref_of

INT32 = np.dtype(np.int32)


@operator("ARG_MAX", "ARG_MIN", types=(INT8, FLOAT32), outputs=(INT32,))
def arg_min_max_operator(context: OperatorContext) -> None:
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, allowed=(INT8, FLOAT32))
    require_types(context, output, allowed=(INT32,))
    axis_values = context.constant(1)
    if axis_values.dtype != INT32 or axis_values.size != 1:
        raise context.fail(
            f"the axis is {axis_values.size} {axis_values.dtype.name} values; TFLM takes one int32"
        )
    rank = len(source.shape)
    axis = int(axis_values.reshape(-1)[0])
    if not -rank <= axis < rank:
        raise context.fail(f"axis {axis} is outside the {rank}-D input")
    axis %= rank
    expected = source.shape[:axis] + source.shape[axis + 1 :]
    if output.shape != expected:
        raise context.fail(f"the output shape {list(output.shape)} should be {list(expected)}")
    outer = int(np.prod(source.shape[:axis]))
    inner = int(np.prod(source.shape[axis + 1 :]))
    folded = (outer, source.shape[axis], inner)
    arg_min_max(
        context.module,
        context.name,
        memref_of(folded, dtype),
        memref_of((outer, inner), INT32),
        maximum=context.op.opcode == "ARG_MAX",
    )
    context.call(
        [context.view(context.value(0), folded)], [context.view(context.result(), (outer, inner))]
    )
