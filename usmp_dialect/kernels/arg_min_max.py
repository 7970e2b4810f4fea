"""ARG_MAX and ARG_MIN along one axis, as TensorFlow Lite Micro's `reference_ops::ArgMinMax`
computes them: for each (outer, inner) position the first element is the running best, and a
later element replaces it only when strictly greater (ARG_MAX, `GreaterFn`) or strictly less
(ARG_MIN, `LessFn`) — ties keep the first index, and a float NaN never replaces (nor is
replaced once it is the first element, since every comparison with it is false). int8 codes
are compared as stored (TFLM does not dequantise).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerType, MemRefType

from usmp_dialect.kernels.builder import Value, finish, function
from usmp_dialect.kernels.module import ModelModule


def arg_min_max(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    maximum: bool,
) -> None:
    """Adds `@name(%input: [outer, axis, inner], %output: [outer, inner])`: the index along
    the middle axis of the largest (`maximum`) or smallest element, in the output's integer
    type."""
    outer, extent, inner = input_type.get_shape()
    index_type = output_type.element_type
    assert isinstance(index_type, IntegerType)
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    predicate = "sgt" if maximum else "slt"

    def body(ivs: Sequence[Value]) -> None:
        def step(position: Value, carried: Sequence[Value]) -> list[Value]:
            best, best_index = carried
            value = kernel.load(source, [ivs[0], position, ivs[1]])
            better = kernel.cmp(predicate, value, best)
            return [
                kernel.select(better, value, best),
                kernel.select(better, kernel.cast(position, index_type), best_index),
            ]

        if extent == 1:  # the one element is the answer (the input is never read)
            index = kernel.constant(0, index_type)
        else:
            first = kernel.load(source, [ivs[0], 0, ivs[1]])
            _, index = kernel.loop(1, extent, step, [first, kernel.constant(0, index_type)])
        kernel.store(index, target, ivs)

    kernel.loops([outer, inner], body)
    finish(kernel)
    module.add(op)
