"""Bit-exact numpy reference of the int8 networks: the same integer arithmetic as the IR.

Accumulators wrap like int32 (the IR accumulates in i32); requantisation runs in int64 exactly
as the IR's `arith` ops do. `dequantized_float_layer` is an independent float64 computation of
one layer, used by the tests to check the integer kernels.
"""

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from usmp_dialect.models.layers import (
    Add,
    Conv2D,
    FullyConnected,
    GlobalAvgPool,
    Layer,
    Network,
    Requantize,
    Tensor,
    requantize,
)


def _finish(accumulator: np.ndarray, params: Requantize) -> np.ndarray:
    scaled = requantize(accumulator, params.multiplier, params.shift)
    shifted = scaled + params.output_zero_point
    return np.clip(shifted, params.activation_min, params.activation_max).astype(np.int8)


def _wrap_int32(values: np.ndarray) -> np.ndarray:
    return values.astype(np.int64).astype(np.int32)


def conv2d_accumulator(layer: Conv2D, x: np.ndarray) -> np.ndarray:
    """The int32 accumulator `[1, OH, OW, OC]` of a (depthwise) convolution, bias included."""
    top, bottom, left, right = layer.padding
    centred = x.astype(np.int64) - layer.input_zero_point
    padded = np.pad(centred, ((0, 0), (top, bottom), (left, right), (0, 0)))
    kh, kw = layer.kernel
    sh, sw = layer.stride
    out_h = (padded.shape[1] - kh) // sh + 1
    out_w = (padded.shape[2] - kw) // sw + 1
    # windows[n, oh, ow, c, kh, kw]
    windows = sliding_window_view(padded, (kh, kw), axis=(1, 2))[
        :, : out_h * sh : sh, : out_w * sw : sw
    ]
    # Products are below 2**15 and sums below 2**31: float64 matmul is exact and fast.
    windows_f = windows.astype(np.float64)
    if layer.depthwise:
        weights = layer.weights.astype(np.float64)  # [kh, kw, c]
        acc = np.einsum("nhwcij,ijc->nhwc", windows_f, weights)
    else:
        weights = layer.weights.astype(np.float64)  # [oc, kh, kw, ic]
        patches = windows_f.transpose(0, 1, 2, 4, 5, 3).reshape(1, out_h, out_w, -1)
        acc = patches @ weights.reshape(weights.shape[0], -1).T
    return _wrap_int32(np.rint(acc).astype(np.int64) + layer.bias.astype(np.int64))


def conv2d(layer: Conv2D, x: np.ndarray) -> np.ndarray:
    return _finish(conv2d_accumulator(layer, x), layer.requantize)


def fully_connected_accumulator(layer: FullyConnected, x: np.ndarray) -> np.ndarray:
    centred = x.astype(np.float64) - layer.input_zero_point
    acc = centred @ layer.weights.astype(np.float64).T
    return _wrap_int32(np.rint(acc).astype(np.int64) + layer.bias.astype(np.int64))


def fully_connected(layer: FullyConnected, x: np.ndarray) -> np.ndarray:
    return _finish(fully_connected_accumulator(layer, x), layer.requantize)


def global_avg_pool(layer: GlobalAvgPool, x: np.ndarray) -> np.ndarray:
    count = x.shape[1] * x.shape[2]
    total = _wrap_int32(x.astype(np.int64).sum(axis=(1, 2))).astype(np.int64)
    half = count // 2
    # C division truncates: (total +- half) / count rounds half away from zero.
    rounded = np.where(total >= 0, (total + half) // count, -((half - total) // count))
    return np.clip(rounded, -128, 127).astype(np.int8)


def add(layer: Add, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    shifted_x = (x.astype(np.int64) - layer.input_zero_point) << layer.left_shift
    shifted_y = (y.astype(np.int64) - layer.other_zero_point) << layer.left_shift
    scaled_x = requantize(shifted_x, np.int64(layer.input_multiplier), np.int64(layer.input_shift))
    scaled_y = requantize(shifted_y, np.int64(layer.other_multiplier), np.int64(layer.other_shift))
    return _finish(scaled_x + scaled_y, layer.requantize)


def run_layer(layer: Layer, values: dict[str, np.ndarray]) -> np.ndarray:
    """The int8 output of one layer, reading its inputs from `values` (tensor name -> array)."""
    if isinstance(layer, Conv2D):
        return conv2d(layer, values[layer.input])
    if isinstance(layer, FullyConnected):
        return fully_connected(layer, values[layer.input])
    if isinstance(layer, GlobalAvgPool):
        return global_avg_pool(layer, values[layer.input])
    return add(layer, values[layer.input], values[layer.other])


def run_network(network: Network, x: np.ndarray) -> dict[str, np.ndarray]:
    """Every tensor of the network (int8 arrays by name) for the input `x`."""
    expected = network.tensors[network.input].shape
    if x.shape != expected or x.dtype != np.int8:
        raise ValueError(f"input must be int8 of shape {expected}, got {x.dtype} {x.shape}")
    values = {network.input: x}
    for layer in network.layers:
        values[layer.output] = run_layer(layer, values)
    return values


def reference(network: Network, x: np.ndarray) -> np.ndarray:
    """The network's int8 output for the int8 input `x`."""
    return run_network(network, x)[network.output]


# --- independent float64 computation, for checking -------------------------------------------


def dequantize(q: np.ndarray, tensor: Tensor) -> np.ndarray:
    return tensor.scale * (q.astype(np.float64) - tensor.zero_point)


def dequantized_float_layer(
    layer: Layer, network: Network, values: dict[str, np.ndarray]
) -> np.ndarray:
    """One layer in float64 on the dequantised int8 inputs, in output quantisation units
    (`real / output_scale + output_zero_point`), before rounding and clamping.

    Computed directly (a loop over kernel positions, plain sums), not with the reference's
    sliding windows, so that it checks the integer kernels' indexing and arithmetic.
    """
    out = network.tensors[layer.output]
    if isinstance(layer, Conv2D | FullyConnected):
        x = values[layer.input].astype(np.float64) - layer.input_zero_point
        # accumulator units -> output units: the real multiplier (scale_in * scale_w / scale_out)
        params = layer.requantize
        unit = params.multiplier.astype(np.float64) / 2.0 ** params.shift.astype(np.float64)
        if isinstance(layer, FullyConnected):
            acc = np.zeros((1, layer.weights.shape[0]))
            for o in range(layer.weights.shape[0]):
                acc[0, o] = float(np.sum(x[0] * layer.weights[o])) + float(layer.bias[o])
        else:
            top, _, left, _ = layer.padding
            kh, kw = layer.kernel
            sh, sw = layer.stride
            _, oh, ow, oc = out.shape
            acc = np.zeros((1, oh, ow, oc)) + layer.bias.astype(np.float64)
            for i in range(kh):
                for j in range(kw):
                    for y in range(oh):
                        for z in range(ow):
                            row, col = y * sh + i - top, z * sw + j - left
                            if not (0 <= row < x.shape[1] and 0 <= col < x.shape[2]):
                                continue
                            pixel = x[0, row, col]
                            if layer.depthwise:
                                acc[0, y, z] += pixel * layer.weights[i, j]
                            else:
                                acc[0, y, z] += layer.weights[:, i, j, :] @ pixel
        return acc * unit + layer.requantize.output_zero_point
    if isinstance(layer, GlobalAvgPool):
        return values[layer.input].astype(np.float64).mean(axis=(1, 2))
    first = dequantize(values[layer.input], network.tensors[layer.input])
    second = dequantize(values[layer.other], network.tensors[layer.other])
    return (first + second) / out.scale + out.zero_point
