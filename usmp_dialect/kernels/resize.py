"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR on NHWC tensors, as TFLite's reference kernels
compute them (`reference_ops::ResizeNearestNeighbor`, `ResizeBilinear` for float32 and
`ResizeBilinearInteger` for int8).

What the kernels compute per output row or column depends only on the sizes and the options
(`align_corners`, `half_pixel_centers`), so it is computed here at import, in Python with
TFLite's float32 (or integer) arithmetic, and stored as small constant tables: the source index
(nearest), or the two source indices and their weights (bilinear). The kernels loop over the
output and read the tables; the per-element arithmetic is TFLite's, in its order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import MemRefType, i8, i32, i64

from usmp_dialect.kernels.builder import INDEX, KernelBuilder, Value, finish, function, is_float
from usmp_dialect.kernels.module import ModelModule

_F32 = np.float32


def _scale(input_size: int, output_size: int, align_corners: bool) -> np.float32:
    if align_corners and output_size > 1:
        return _F32(input_size - 1) / _F32(output_size - 1)
    return _F32(input_size) / _F32(output_size)


def nearest_indices(
    input_size: int, output_size: int, align_corners: bool, half_pixel_centers: bool
) -> np.ndarray:
    """`GetNearestNeighbor` for every output position (float32 arithmetic)."""
    scale = _scale(input_size, output_size, align_corners)
    offset = _F32(0.5 if half_pixel_centers else 0.0)
    indices = []
    for position in range(output_size):
        value = float((_F32(position) + offset) * scale)
        index = (
            math.floor(abs(value) + 0.5) * (1 if value >= 0 else -1)  # TfLiteRound
            if align_corners
            else math.floor(value)
        )
        index = min(index, input_size - 1)
        if half_pixel_centers:
            index = max(0, index)
        indices.append(index)
    return np.array(indices, dtype=np.int32)


@dataclass(frozen=True, eq=False)
class BilinearAxis:
    """Per output position: the lower and upper source index (`indices`, [n, 2] int32) and the
    weights of the two (`weights`, [n, 2]: float32 `1 - d, d` or int32 out of 1024)."""

    indices: np.ndarray
    weights: np.ndarray


def bilinear_float_axis(
    input_size: int, output_size: int, align_corners: bool, half_pixel_centers: bool
) -> BilinearAxis:
    """`ComputeInterpolationValues` (float32): bounds and the weights `1 - (v - lower)` and
    `v - lower` as the float kernel forms them."""
    scale = _scale(input_size, output_size, align_corners)
    indices, weights = [], []
    for position in range(output_size):
        if half_pixel_centers:
            value = (_F32(position) + _F32(0.5)) * scale - _F32(0.5)
        else:
            value = _F32(position) * scale
        lower = max(math.floor(float(value)), 0)
        upper = min(math.ceil(float(value)), input_size - 1)
        fraction = _F32(value - _F32(lower))
        indices.append((lower, upper))
        weights.append((_F32(1) - fraction, fraction))
    return BilinearAxis(np.array(indices, np.int32), np.array(weights, np.float32))


def _c_divide(a: int, b: int) -> int:
    """C's integer division, truncating toward zero."""
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b > 0) else -quotient


def bilinear_integer_axis(
    input_size: int, output_size: int, align_corners: bool, half_pixel_centers: bool
) -> BilinearAxis:
    """`ComputeInterpolationValuesInteger` with `ResizeBilinearInteger`'s scale in 1/1024:
    bounds and the weights `1024 - (v - 1024 * lower)` and `v - 1024 * lower`."""
    if align_corners and output_size > 1:
        scale = _c_divide(1024 * (input_size - 1) + (output_size - 1) // 2, output_size - 1)
    else:
        scale = _c_divide(1024 * input_size + output_size // 2, output_size)
    indices, weights = [], []
    for position in range(output_size):
        value = position * scale + (_c_divide(scale, 2) - 512 if half_pixel_centers else 0)
        lower = max(_c_divide(value, 1024), 0)
        upper = min(_c_divide(value + 1023, 1024), input_size - 1)
        fraction = value - 1024 * lower
        indices.append((lower, upper))
        weights.append((1024 - fraction, fraction))
    return BilinearAxis(np.array(indices, np.int32), np.array(weights, np.int32))


def _table(module: ModelModule, kernel: KernelBuilder, hint: str, array: np.ndarray) -> Value:
    return kernel.get_global(*module.constant(hint, array))


def resize_nearest(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    rows: np.ndarray,
    columns: np.ndarray,
) -> None:
    """Adds `@name(%input, %output)`: `output[b, y, x, c] = input[b, rows[y], columns[x], c]`."""
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    row_table = _table(module, kernel, f"{name}_rows", rows)
    column_table = _table(module, kernel, f"{name}_columns", columns)
    batches, height, width, depth = output_type.get_shape()

    def row(b: Value, y: Value) -> None:
        source_y = kernel.cast(kernel.load(row_table, [y]), INDEX)

        def column(x: Value, _: object) -> list[Value]:
            source_x = kernel.cast(kernel.load(column_table, [x]), INDEX)

            def channel(c: Value, _: object) -> list[Value]:
                value = kernel.load(source, [b, source_y, source_x, c])
                kernel.store(value, target, [b, y, x, c])
                return []

            kernel.loop(0, depth, channel)
            return []

        kernel.loop(0, width, column)

    kernel.loops([batches, height], lambda ivs: row(*ivs))
    finish(kernel)
    module.add(op)


def resize_bilinear(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    rows: BilinearAxis,
    columns: BilinearAxis,
) -> None:
    """Adds `@name(%input, %output)` interpolating between the two source rows and columns of
    each output position: float32 `((v00 * wy0) * wx0 + (v10 * wy1) * wx0) + ...` in TFLite's
    order, int8 the int64 sum of the four values times their 1/1024 weights, rounded half away
    from zero and divided by 2**20."""
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    element = input_type.get_element_type()
    row_indices = _table(module, kernel, f"{name}_row_indices", rows.indices)
    row_weights = _table(module, kernel, f"{name}_row_weights", rows.weights)
    column_indices = _table(module, kernel, f"{name}_column_indices", columns.indices)
    column_weights = _table(module, kernel, f"{name}_column_weights", columns.weights)
    batches, height, width, depth = output_type.get_shape()
    floating = is_float(element)

    def weight(table: Value, position: Value, side: int) -> Value:
        value = kernel.load(table, [position, side])
        return value if floating else kernel.cast(value, i64)

    def row(b: Value, y: Value) -> None:
        ys = [kernel.cast(kernel.load(row_indices, [y, side]), INDEX) for side in (0, 1)]
        wy = [weight(row_weights, y, side) for side in (0, 1)]

        def column(x: Value, _: object) -> list[Value]:
            xs = [kernel.cast(kernel.load(column_indices, [x, side]), INDEX) for side in (0, 1)]
            wx = [weight(column_weights, x, side) for side in (0, 1)]

            def channel(c: Value, _: object) -> list[Value]:
                total: Value | None = None
                # TFLite's order: (y0, x0), (y1, x0), (y0, x1), (y1, x1)
                for side_x, side_y in ((0, 0), (0, 1), (1, 0), (1, 1)):
                    value = kernel.load(source, [b, ys[side_y], xs[side_x], c])
                    if not floating:
                        value = kernel.cast(value, i64)
                    term = kernel.mul(kernel.mul(value, wy[side_y]), wx[side_x])
                    total = term if total is None else kernel.add(total, term)
                assert total is not None
                if not floating:
                    half = kernel.select(
                        kernel.cmp("sgt", total, kernel.constant(0, i64)), 1 << 19, -(1 << 19), i64
                    )
                    quotient = kernel.div(kernel.add(total, half), kernel.constant(1 << 20, i64))
                    total = kernel.cast(kernel.cast(quotient, i32), i8)
                kernel.store(total, target, [b, y, x, c])
                return []

            kernel.loop(0, depth, channel)
            return []

        kernel.loop(0, width, column)

    kernel.loops([batches, height], lambda ivs: row(*ivs))
    finish(kernel)
    module.add(op)
