"""Per-channel normalisations of NCHW float tensors: ONNX LRN (across channels) and a
standalone BatchNormalization (`x * scale[c] + shift[c]`, folded at import from mean,
variance, epsilon, gamma and beta when it does not follow a convolution)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import math
from xdsl.dialects.builtin import MemRefType, f32

from usmp_dialect.kernels.builder import Value, finish, function
from usmp_dialect.kernels.module import ModelModule


@dataclass(frozen=True)
class Lrn:
    """`y = x / (bias + alpha / size * sum of x^2 over the channel window) ** beta`, the window
    `[c - (size - 1) // 2, c + size // 2]` clipped to the channels (ONNX's definition)."""

    size: int
    alpha: float
    beta: float
    bias: float


def lrn(
    module: ModelModule,
    name: str,
    type_: MemRefType,
    params: Lrn,
    output_type: MemRefType | None = None,
) -> None:
    """Adds `@name(%input, %output)` of `type_` (N, C, ...); the output of `output_type` when
    given (the same shape, another layout: a row view of a streamed group)."""
    channels = type_.get_shape()[1]
    arguments = [("input", type_), ("output", output_type or type_)]
    op, kernel, (source, target) = function(name, arguments)
    before, after = (params.size - 1) // 2, params.size // 2

    def body(ivs: Sequence[Value]) -> None:
        batch, channel, *rest = ivs
        start = kernel.max(kernel.sub(channel, before), 0)
        end = kernel.min(kernel.add(channel, after + 1), channels)

        def over_c(c: Value, acc: tuple[Value, ...]) -> list[Value]:
            x = kernel.load(source, [batch, c, *rest])
            return [kernel.add(acc[0], kernel.mul(x, x))]

        (total,) = kernel.loop(start, end, over_c, [kernel.constant(0.0, f32)])
        base = kernel.add(kernel.mul(total, params.alpha / params.size), params.bias)
        power = kernel.insert(math.PowFOp(base, kernel.constant(params.beta, f32)))
        kernel.store(kernel.div(kernel.load(source, ivs), power), target, ivs)

    kernel.loops(type_.get_shape(), body)
    finish(kernel)
    module.add(op)


def channel_affine(
    module: ModelModule,
    name: str,
    type_: MemRefType,
    scale: tuple[str, MemRefType],
    shift: tuple[str, MemRefType],
) -> None:
    """Adds `@name(%input, %output)` of `type_` (N, C, ...): `x * scale[c] + shift[c]`."""
    op, kernel, (source, target) = function(name, [("input", type_), ("output", type_)])
    scales, shifts = kernel.get_global(*scale), kernel.get_global(*shift)

    def body(ivs: Sequence[Value]) -> None:
        channel = ivs[1]
        value = kernel.mul(kernel.load(source, ivs), kernel.load(scales, [channel]))
        kernel.store(kernel.add(value, kernel.load(shifts, [channel])), target, ivs)

    kernel.loops(type_.get_shape(), body)
    finish(kernel)
    module.add(op)
