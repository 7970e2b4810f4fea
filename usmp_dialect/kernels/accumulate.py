"""ADD_N and ZEROS_LIKE as TensorFlow Lite Micro's kernels compute them.

* ADD_N (`reference_ops::AddN`): float32 sums `0 + x_1 + ... + x_n` in input order (so -0
  inputs give +0); int8 rescales every input as ADD does (`left_shift` 20, the inputs' common
  scale over twice itself) and starts the sum from the rescaled *offset* (`x = input1_offset`,
  what TFLite computes though its comment says 0), then requantises once and clamps to int8.
* ZEROS_LIKE: zeros of the input's type (raw 0, also for int8), the input not read.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import MemRefType, i8, i32
from xdsl.ir import Attribute

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function, is_float
from usmp_dialect.kernels.fixed_point import emit_multiply_by_quantized_multiplier
from usmp_dialect.kernels.module import ModelModule


@dataclass(frozen=True)
class QuantizedAddN:
    """int8 ADD_N's parameters (`CalculateOpData`): the inputs' offset (minus their zero
    point), their multiplier and shift, the output's, and the output zero point."""

    input_offset: int
    input_multiplier: int
    input_shift: int
    output_multiplier: int
    output_shift: int
    output_offset: int
    left_shift: int = 20


def _rescaled(kernel: KernelBuilder, parameters: QuantizedAddN, value: Value | int) -> Value:
    shifted = kernel.mul(value, 1 << parameters.left_shift)
    return emit_multiply_by_quantized_multiplier(
        kernel, shifted, parameters.input_multiplier, parameters.input_shift
    )


def add_n(
    module: ModelModule,
    name: str,
    inputs: int,
    size: int,
    element: Attribute,
    parameters: QuantizedAddN | None,
) -> None:
    """Adds `@name(%input0, ..., %output)`, all `[size]`: the elementwise sum of the inputs
    (`parameters` for int8, None for float32)."""
    type_ = MemRefType(element, [size])
    arguments = [(f"input{k}", type_) for k in range(inputs)] + [("output", type_)]
    op, kernel, values = function(name, arguments)
    *sources, target = values

    def body(ivs: list[Value]) -> None:
        if is_float(element):
            total = kernel.constant(0.0, element)
            for source in sources:
                total = kernel.add(total, kernel.load(source, ivs))
            kernel.store(total, target, ivs)
            return
        assert parameters is not None
        total = _rescaled(kernel, parameters, kernel.constant(parameters.input_offset, i32))
        for source in sources:
            code = kernel.add(kernel.cast(kernel.load(source, ivs), i32), parameters.input_offset)
            total = kernel.add(total, _rescaled(kernel, parameters, code))
        output = emit_multiply_by_quantized_multiplier(
            kernel, total, parameters.output_multiplier, parameters.output_shift
        )
        clamped = kernel.clamp(kernel.add(output, parameters.output_offset), -128, 127)
        kernel.store(kernel.cast(clamped, i8), target, ivs)

    kernel.loops([size], body)
    finish(kernel)
    module.add(op)


def zeros(module: ModelModule, name: str, size: int, element: Attribute) -> None:
    """Adds `@name(%output: [size])` storing 0 into every element."""
    op, kernel, (target,) = function(name, [("output", MemRefType(element, [size]))])
    zero = kernel.constant(0.0 if is_float(element) else 0, element)
    kernel.loops([size], lambda ivs: kernel.store(zero, target, ivs))
    finish(kernel)
    module.add(op)
