"""RESIZE_NEAREST_NEIGHBOR (int8, int16 and float32: the types of TFLM's
`resize_nearest_neighbor.cc`, values copied) and RESIZE_BILINEAR (int8 and float32), NHWC, a
constant size, with `align_corners` and `half_pixel_centers`. As in TFLM, int8 values are
interpolated as stored: the output is read with the input's quantisation."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.frontends.tflite.importer import (
    INT16_ACTIVATION_TYPES,
    OperatorContext,
    operator,
)
from usmp_dialect.frontends.tflite.ops.common import INT8, require_types
from usmp_dialect.kernels import resize
from usmp_dialect.kernels.module import memref_of

_OPTIONS = {
    "RESIZE_NEAREST_NEIGHBOR": tflite.ResizeNearestNeighborOptions,
    "RESIZE_BILINEAR": tflite.ResizeBilinearOptions,
}


@operator("RESIZE_NEAREST_NEIGHBOR", types=INT16_ACTIVATION_TYPES)
@operator("RESIZE_BILINEAR")
def resize_operator(context: OperatorContext) -> None:
    opcode = context.op.opcode
    source, output = context.tensor(0), context.tensor(0, output=True)
    dtype = require_types(context, source, output, allowed=INT16_ACTIVATION_TYPES)
    if len(source.shape) != 4:
        raise context.fail(f"the input has rank {len(source.shape)}; 4 (NHWC) is required")
    size = np.asarray(context.constant(1)).reshape(-1)
    if size.size != 2 or size.dtype.kind not in "iu":
        raise context.fail(f"the size must hold two integers (it is {size.tolist()})")
    height, width = (int(value) for value in size)
    expected = (source.shape[0], height, width, source.shape[3])
    if tuple(output.shape) != expected or min(height, width) < 1:
        raise context.fail(
            f"the output shape {list(output.shape)} does not match the input "
            f"{list(source.shape)} resized to {size.tolist()}"
        )
    options = context.op.option(_OPTIONS[opcode])
    align_corners = bool(options.AlignCorners()) if options is not None else False
    half_pixel_centers = bool(options.HalfPixelCenters()) if options is not None else False
    if align_corners and half_pixel_centers and opcode == "RESIZE_BILINEAR":
        raise context.fail("align_corners and half_pixel_centers are both set (TFLite refuses)")
    sizes = ((source.shape[1], height), (source.shape[2], width))
    input_type, output_type = memref_of(source.shape, dtype), memref_of(output.shape, dtype)
    if opcode == "RESIZE_NEAREST_NEIGHBOR":
        rows, columns = (
            resize.nearest_indices(before, after, align_corners, half_pixel_centers)
            for before, after in sizes
        )
        resize.resize_nearest(context.module, context.name, input_type, output_type, rows, columns)
    else:
        axis = resize.bilinear_integer_axis if dtype == INT8 else resize.bilinear_float_axis
        rows, columns = (
            axis(before, after, align_corners, half_pixel_centers) for before, after in sizes
        )
        resize.resize_bilinear(context.module, context.name, input_type, output_type, rows, columns)
    context.call([context.value(0)], [context.result()])
