"""float32 one-input operators as TensorFlow Lite Micro's kernels compute them, one element at a
time: RELU and RELU6 (`ReluFloat`, `Relu6Float`: comparisons, so NaN passes through),
LEAKY_RELU (`val > 0 ? val : val * alpha`), HARD_SWISH (`x * min(6, max(0, x + 3)) / 6` with
`std::min`/`std::max`'s comparisons), ELU (`expm1` below zero), and the `<cmath>` functions of
`elementwise.cc`, `exp.cc` and `neg.cc`: ABS, NEG, EXP, LOG, SQRT, RSQRT (`1 / sqrt`), SQUARE,
SIN and COS; FLOOR and CEIL (`std::floor`, `std::ceil`) and ROUND (TFLite's `RoundToNearest`:
halves to even, from the floor `f` and `x - f`, so that -0.4 and -0.5 give +0 where C's
`nearbyint` gives -0).
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
    "floor": math.FloorOp,
    "ceil": math.CeilOp,
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
    "round",
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
    if kind == "round":
        return _round_to_nearest(kernel, x)
    raise ValueError(f"unknown float function {kind}")


def _round_to_nearest(kernel: KernelBuilder, x: Value) -> Value:
    """`RoundToNearest`: `f = floor(x)`, `d = x - f`; `f` where `d < 0.5` or `d == 0.5` and `f`
    is even, else `f + 1` (NaN and infinities give `d` NaN, hence `f + 1`, themselves). TFLite
    tests evenness by `int(f) % 2`; `f` halved is an integer exactly when it is even, and for
    `f` beyond int's range `d` is 0 (the cast, undefined there, is never reached)."""
    floor = kernel.insert(math.FloorOp(x))
    fraction = kernel.sub(x, floor)
    half = kernel.mul(floor, 0.5)
    even = kernel.cmp("eq", kernel.insert(math.FloorOp(half)), half)
    tie_to_even = kernel.and_(kernel.cmp("eq", fraction, 0.5), even)
    keep = kernel.or_(kernel.cmp("lt", fraction, 0.5), tie_to_even)
    return kernel.select(keep, floor, kernel.add(floor, 1.0))
