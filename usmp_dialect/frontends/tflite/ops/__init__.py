"""Operator handlers of the TFLite frontend, one module per operator family; importing this
package registers them all in `importer.OPERATORS`."""

from usmp_dialect.frontends.tflite.ops import (
    conv,
    data_movement,
    elementwise,
    fold,
    pooling,
    reduce,
    shape,
    softmax,
    svdf,
    variables,
)

__all__ = [
    "conv",
    "data_movement",
    "elementwise",
    "fold",
    "pooling",
    "reduce",
    "shape",
    "softmax",
    "svdf",
    "variables",
]
