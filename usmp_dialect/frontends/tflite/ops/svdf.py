"""SVDF: int8 (with an int16 or int8 activation state) and float32, rank >= 1, as TFLM's
reference kernels compute it (`usmp_dialect.kernels.svdf`). The activation state is a variable
tensor: it lives in a state pool and carries over from one run to the next (SPEC §13)."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import OperatorContext, operator
from usmp_dialect.frontends.tflite.ops.common import FLOAT32, INT8, quantization
from usmp_dialect.frontends.tflite.reader import Operator
from usmp_dialect.kernels.fixed_point import quantize_multiplier
from usmp_dialect.kernels.module import memref_of
from usmp_dialect.kernels.svdf import FLOAT_ACTIVATIONS, QuantizedSvdf, svdf

_ACTIVATION_NAMES = {
    code: name
    for name, code in vars(tflite.ActivationFunctionType).items()
    if not name.startswith("_")
}
INT16 = np.dtype(np.int16)


def _activation(op: Operator) -> str:
    options = op.option(tflite.SVDFOptions)
    code = options.FusedActivationFunction() if options is not None else 0
    return _ACTIVATION_NAMES.get(code, str(code))


def _supports(op: Operator) -> str | None:
    activation = _activation(op)
    if activation not in FLOAT_ACTIVATIONS:
        return f"fused activation {activation}"
    return None


@operator("SVDF", supports=_supports)
def _svdf(context: OperatorContext) -> None:
    options = context.op.option(tflite.SVDFOptions)
    rank = options.Rank() if options is not None else 0
    source = context.tensor(0)
    feature_tensor = context.tensor(1)
    time_tensor = context.tensor(2)
    bias_tensor = context.optional_tensor(3)
    state_tensor = context.tensor(4)
    output = context.tensor(0, output=True)
    feature = context.constant(1)
    time = context.constant(2)
    bias = context.constant(3) if bias_tensor is not None else None
    if len(source.shape) != 2 or feature.ndim != 2 or time.ndim != 2:
        raise context.fail("the input, weights_feature and weights_time must be 2-D")
    batches, input_size = source.shape
    filters, memory = time.shape
    if rank < 1 or filters % rank or feature.shape != (filters, input_size):
        raise context.fail(
            f"rank {rank}, weights_feature {list(feature.shape)} and weights_time "
            f"{list(time.shape)} do not fit the input {list(source.shape)}"
        )
    units = filters // rank
    if output.shape != (batches, units) or state_tensor.shape != (batches, filters * memory):
        raise context.fail(
            f"the output {list(output.shape)} or the activation state "
            f"{list(state_tensor.shape)} does not fit {batches} batches, {units} units, "
            f"{filters} filters of memory {memory}"
        )
    if bias is not None and bias.shape != (units,):
        raise context.fail(f"the bias {list(bias.shape)} does not have {units} values")
    activation = _activation(context.op)
    if source.dtype == FLOAT32:
        if {feature.dtype, time.dtype, state_tensor.dtype, output.dtype} != {FLOAT32} or (
            bias is not None and bias.dtype != FLOAT32
        ):
            raise context.fail("a float32 SVDF needs float32 weights, bias, state and output")
        arithmetic: QuantizedSvdf | str = activation
    elif source.dtype == INT8:
        state_type = time.dtype
        if (
            feature.dtype != INT8
            or state_type not in (INT8, INT16)
            or state_tensor.dtype != state_type
            or output.dtype != INT8
            or (bias is not None and bias.dtype != np.dtype(np.int32))
        ):
            raise context.fail(
                "an int8 SVDF needs int8 weights_feature, int16 (or int8) weights_time and "
                "activation state of that type, an int32 bias and an int8 output"
            )
        input_q = quantization(context, source)
        state_q = quantization(context, state_tensor)
        output_q = quantization(context, output)
        feature_scale = quantization(context, feature_tensor).scale
        time_scale = quantization(context, time_tensor).scale
        # TFLM's PrepareSvdf (as the tflite-micro runtime computes it): the float32 scales
        # multiplied and divided in double precision.
        scale_1 = input_q.scale * float(feature_scale) / state_q.scale
        scale_2 = state_q.scale * float(time_scale) / output_q.scale
        multiplier_1, shift_1 = quantize_multiplier(scale_1)
        multiplier_2, shift_2 = quantize_multiplier(scale_2)
        arithmetic = QuantizedSvdf(
            input_q.zero_point,
            state_q.zero_point,
            output_q.zero_point,
            multiplier_1,
            shift_1,
            multiplier_2,
            shift_2,
        )
    else:
        raise context.fail(f"SVDF on {source.dtype.name} is not supported")
    module = context.module
    svdf(
        module,
        context.name,
        memref_of(source.shape, source.dtype),
        memref_of(state_tensor.shape, state_tensor.dtype),
        memref_of(output.shape, output.dtype),
        module.constant(f"{context.name}_weights_feature", feature),
        module.constant(f"{context.name}_weights_time", time),
        module.constant(f"{context.name}_bias", bias) if bias is not None else None,
        rank,
        arithmetic,
    )
    context.call([context.value(0), context.state(4)], [context.result()])
