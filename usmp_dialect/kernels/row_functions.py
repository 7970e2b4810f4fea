"""float32 functions of a whole row (the last axis), as TFLite's reference kernels compute
them, each row with scalar accumulators in TFLite's order:

* LOG_SOFTMAX (`reference_ops::LogSoftmax`): the row's maximum (from the lowest float), the
  sum of `exp(x - max)`, then `x - max - log(sum)`;
* L2_NORMALIZATION (`reference_ops::L2Normalization`): `x / max(sqrt(sum of x * x), 1e-6)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import math
from xdsl.dialects.builtin import MemRefType, f32

from usmp_dialect.kernels.builder import Value, finish, function
from usmp_dialect.kernels.module import ModelModule
from usmp_dialect.kernels.pooling import FLOAT_LOWEST

L2_EPSILON = 1e-6


def row_function(module: ModelModule, name: str, type_: MemRefType, kind: str) -> None:
    """Adds `@name(%input, %output)` of `type_` ([rows, depth]) computing `kind`
    ("log_softmax" or "l2_normalization") on every row."""
    rows, depth = type_.get_shape()
    op, kernel, (source, target) = function(name, [("input", type_), ("output", type_)])

    def fold(row: Value, start: float, step: Callable[[Value, Value], Value]) -> Value:
        def body(c: Value, carried: Sequence[Value]) -> list[Value]:
            return [step(carried[0], kernel.load(source, [row, c]))]

        (total,) = kernel.loop(0, depth, body, [kernel.constant(start, f32)])
        return total

    def each(row: Value, element: Callable[[Value], Value]) -> None:
        def body(c: Value, _: Sequence[Value]) -> list[Value]:
            kernel.store(element(kernel.load(source, [row, c])), target, [row, c])
            return []

        kernel.loop(0, depth, body)

    def per_row(ivs: Sequence[Value]) -> None:
        (row,) = ivs
        if kind == "log_softmax":
            # std::max(max, x): (max < x) ? x : max
            largest = fold(
                row, FLOAT_LOWEST, lambda m, x: kernel.select(kernel.cmp("lt", m, x), x, m)
            )
            total = fold(row, 0.0, lambda s, x: kernel.add(s, kernel.exp(kernel.sub(x, largest))))
            log_sum = kernel.insert(math.LogOp(total))
            each(row, lambda x: kernel.sub(kernel.sub(x, largest), log_sum))
        else:
            squares = fold(row, 0.0, lambda s, x: kernel.add(s, kernel.mul(x, x)))
            root = kernel.insert(math.SqrtOp(squares))
            norm = kernel.select(kernel.cmp("lt", root, L2_EPSILON), L2_EPSILON, root)
            each(row, lambda x: kernel.div(x, norm))

    kernel.loops([rows], per_row)
    finish(kernel)
    module.add(op)
