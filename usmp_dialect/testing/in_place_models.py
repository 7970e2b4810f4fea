"""Small TFLite models whose operators run in place (issue 22), for the tests: an inverted
residual block followed by an elementwise chain (`block_model`)."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

SIZE, CHANNELS, EXPANDED = 8, 4, 16


def _quant(dtype: type, scale: float, zero_point: int) -> dict[str, object]:
    return {} if dtype is np.float32 else {"scales": [scale], "zero_points": [zero_point]}


def _filters(
    rng: np.random.Generator, dtype: type, shape: tuple[int, ...], axis: int, input_scale: float
) -> tuple[dict[str, object], dict[str, object]]:
    """(filter, bias) tensor fields of a convolution with `shape` weights."""
    channels = shape[axis]
    if dtype is np.float32:
        weights = (rng.standard_normal(shape) * 0.4).astype(np.float32)
        bias = rng.standard_normal(channels).astype(np.float32)
        return {"data": weights}, {"data": bias}
    scales = list(rng.uniform(0.004, 0.02, channels))
    weights = rng.integers(-127, 128, size=shape, dtype=np.int8)
    bias = rng.integers(-2000, 2000, size=channels, dtype=np.int32)
    return (
        {"data": weights, "scales": scales, "zero_points": [0] * channels, "axis": axis},
        {"data": bias, "scales": [input_scale * s for s in scales]},
    )


def block_model(float32: bool, stride: int, seed: int = 0) -> bytes:
    """An inverted residual block, then an elementwise chain:
    x -> 1x1 CONV e (16 ch) -> 3x3 DEPTHWISE d (stride) -> 1x1 CONV p (4 ch)
    -> [stride 1: ADD(p, x)] a -> [int8: QUANTIZE q (another scale)] -> LOGISTIC l
    -> MUL(l, q) m -> TANH y (the output). The peak is the depthwise convolution's (e and d)."""
    rng = np.random.default_rng(seed)
    dtype: type = np.float32 if float32 else np.int8
    out = SIZE // stride
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []

    def tensor(name: str, shape: tuple[int, ...], **fields: object) -> int:
        tensors.append(TensorSpec(name, fields.pop("dtype", dtype), shape, **fields))  # type: ignore[arg-type]
        return len(tensors) - 1

    def conv(source: int, name: str, shape: tuple[int, ...], scale: float, zp: int) -> int:
        in_scale = tensors[source].scales[0] if tensors[source].scales else 1.0
        w, b = _filters(rng, dtype, (shape[3], 1, 1, tensors[source].shape[3]), 0, in_scale)
        wi = tensor(f"{name}_w", (shape[3], 1, 1, tensors[source].shape[3]), **w)
        bi = tensor(f"{name}_b", (shape[3],), dtype=np.float32 if float32 else np.int32, **b)
        result = tensor(name, shape, **_quant(dtype, scale, zp))
        fields = {"Padding": tflite.Padding.SAME, "StrideH": 1, "StrideW": 1}
        operators.append(
            OperatorSpec("CONV_2D", [source, wi, bi], [result], "Conv2DOptions", fields)
        )
        return result

    x = tensor("x", (1, SIZE, SIZE, CHANNELS), **_quant(dtype, 0.05, -7))
    e = conv(x, "e", (1, SIZE, SIZE, EXPANDED), 0.08, 3)
    w, b = _filters(rng, dtype, (1, 3, 3, EXPANDED), 3, 0.08)
    wi = tensor("d_w", (1, 3, 3, EXPANDED), **w)
    bi = tensor("d_b", (EXPANDED,), dtype=np.float32 if float32 else np.int32, **b)
    d = tensor("d", (1, out, out, EXPANDED), **_quant(dtype, 0.1, -2))
    fields = {
        "Padding": tflite.Padding.SAME,
        "StrideH": stride,
        "StrideW": stride,
        "DepthMultiplier": 1,
        "DilationHFactor": 1,
        "DilationWFactor": 1,
    }
    operators.append(
        OperatorSpec("DEPTHWISE_CONV_2D", [e, wi, bi], [d], "DepthwiseConv2DOptions", fields)
    )
    small = (1, out, out, CHANNELS)
    a = conv(d, "p", small, 0.06, 1)
    if stride == 1:
        s = tensor("a", small, **_quant(dtype, 0.09, 0))
        operators.append(OperatorSpec("ADD", [a, x], [s], "AddOptions", {}))
        a = s
    q = a
    if not float32:
        q = tensor("q", small, **_quant(dtype, 0.03, 5))
        operators.append(OperatorSpec("QUANTIZE", [a], [q]))
    logistic = tensor("l", small, **_quant(dtype, 1 / 256, -128))
    operators.append(OperatorSpec("LOGISTIC", [q], [logistic]))
    m = tensor("m", small, **_quant(dtype, 0.02, -1))
    operators.append(OperatorSpec("MUL", [logistic, q], [m], "MulOptions", {}))
    y = tensor("y", small, **_quant(dtype, 1 / 128, 0))
    operators.append(OperatorSpec("TANH", [m], [y]))
    return write_model(tensors, operators, [x], [y])


def main() -> None:
    """`python -m usmp_dialect.testing.in_place_models OUT.tflite [int8|float32] [STRIDE]`."""
    import sys
    from pathlib import Path

    float32 = len(sys.argv) > 2 and sys.argv[2] == "float32"
    stride = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    Path(sys.argv[1]).write_bytes(block_model(float32, stride))


if __name__ == "__main__":
    main()
