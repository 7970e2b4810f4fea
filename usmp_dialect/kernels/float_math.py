"""float32 one-input operators as TensorFlow Lite Micro's kernels compute them, one element at a
time: RELU and RELU6 (`ReluFloat`, `Relu6Float`: comparisons, so NaN passes through),
LEAKY_RELU (`val > 0 ? val : val * alpha`), HARD_SWISH (`x * min(6, max(0, x + 3)) / 6` with
`std::min`/`std::max`'s comparisons), ELU (`expm1` below zero), and the `<cmath>` functions of
`elementwise.cc`, `exp.cc` and `neg.cc`: ABS, NEG, EXP, LOG, SQRT, RSQRT (`1 / sqrt`), SQUARE,
SIN and COS.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, math

from usmp_dialect.kernels.builder import KernelBuilder, Value

_MATH = {
    "abs": math.AbsFOp,
    "exp": math.ExpOp,
    "log": math.LogOp,
    "sqrt": math.SqrtOp,
    "sin": math.SinOp,
    "cos": math.CosOp,
}
KINDS = (
    "relu",
    "relu6",
    "leaky_relu",
    "hard_swish",
    "elu",
    "neg",
    "rsqrt",
    "square",
    *_MATH,
)


@dataclass(frozen=True)
class FloatMath:
    """float32 -> float32 of `kind` (one of `KINDS`); `alpha` is LEAKY_RELU's."""

    kind: str
    alpha: float = 0.0


def emit_float_math(kernel: KernelBuilder, arithmetic: FloatMath, x: Value) -> Value:
    kind = arithmetic.kind
    if kind in _MATH:
        return kernel.insert(_MATH[kind](x))
    if kind == "relu":
        return kernel.select(kernel.cmp("lt", x, 0.0), 0.0, x)
    if kind == "relu6":
        below = kernel.select(kernel.cmp("lt", x, 0.0), 0.0, x)
        return kernel.select(kernel.cmp("gt", x, 6.0), 6.0, below)
    if kind == "leaky_relu":
        return kernel.select(kernel.cmp("gt", x, 0.0), x, kernel.mul(x, arithmetic.alpha))
    if kind == "hard_swish":
        shifted = kernel.add(x, 3.0)
        low = kernel.select(kernel.cmp("lt", 0.0, shifted), shifted, 0.0)
        high = kernel.select(kernel.cmp("lt", low, 6.0), low, 6.0)
        return kernel.div(kernel.mul(x, high), 6.0)
    if kind == "elu":
        return kernel.select(kernel.cmp("lt", x, 0.0), kernel.insert(math.ExpM1Op(x)), x)
    if kind == "neg":
        return kernel.insert(arith.NegfOp(x))
    if kind == "rsqrt":
        return kernel.div(1.0, kernel.insert(math.SqrtOp(x)))
    if kind == "square":
        return kernel.mul(x, x)
    raise ValueError(f"unknown float function {kind}")
