"""Operator handlers of the TFLite frontend, one module per operator family; importing this
package registers them all in `importer.OPERATORS`."""

from usmp_dialect.frontends.tflite.ops import (
    activations,
    batch_matmul,
    binary,
    conv,
    cumsum,
    data_movement,
    elementwise,
    fold,
    lstm,
    normalization,
    pooling,
    rearrange,
    reduce,
    resize,
    shape,
    softmax,
    svdf,
    transpose_conv,
)

__all__ = [
    "activations",
    "batch_matmul",
    "binary",
    "conv",
    "cumsum",
    "data_movement",
    "elementwise",
    "fold",
    "lstm",
    "normalization",
    "pooling",
    "rearrange",
    "reduce",
    "resize",
    "shape",
    "softmax",
    "svdf",
    "transpose_conv",
]
