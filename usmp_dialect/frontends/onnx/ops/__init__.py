"""The ONNX node handlers; importing this package registers them all."""

from usmp_dialect.frontends.onnx.ops import (
    conv,
    data_movement,
    elementwise,
    normalization,
    pooling,
    qlinear,
    quantize,
    shape,
)

__all__ = [
    "conv",
    "data_movement",
    "elementwise",
    "normalization",
    "pooling",
    "qlinear",
    "quantize",
    "shape",
]
