"""int8 concatenation whose inputs have other quantisations than its output: each input is
written into its slice of the output through a 256-entry table (its values requantised to the
output's, computed at import), or copied where the quantisations are equal."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects.builtin import MemRefType, i32

from usmp_dialect.kernels.builder import INDEX, KernelBuilder, Value, finish, function
from usmp_dialect.kernels.module import ModelModule


def _write_slice(
    kernel: KernelBuilder,
    source: Value,
    lookup: Value | None,
    target: Value,
    extents: tuple[int, int],
    offset: int,
) -> None:
    def body(ivs: Sequence[Value]) -> None:
        row, column = ivs
        value = kernel.load(source, [row, column])
        if lookup is not None:
            index = kernel.cast(kernel.add(kernel.cast(value, i32), 128), INDEX)
            value = kernel.load(lookup, [index])
        kernel.store(value, target, [row, kernel.add(column, offset) if offset else column])

    kernel.loops(list(extents), body)


def requantized_concatenation(
    module: ModelModule,
    name: str,
    inputs: Sequence[tuple[MemRefType, np.ndarray | None]],
    output_type: MemRefType,
) -> None:
    """Adds `@name(%input..., %output)`: the 2-D int8 inputs `[outer, width_k]` side by side
    along dimension 1 of the output, input k mapped through its table (`[256]` int8 indexed by
    `x + 128`) when it has one."""
    outer, _ = output_type.get_shape()
    arguments = [(f"input{k}", type_) for k, (type_, _) in enumerate(inputs)]
    op, kernel, values = function(name, [*arguments, ("output", output_type)])
    *sources, target = values
    offset = 0
    for k, (source, (type_, table)) in enumerate(zip(sources, inputs, strict=True)):
        width = type_.get_shape()[1]
        lookup = None
        if table is not None:
            symbol = module.constant(f"{name}_table{k}", table.astype(np.int8))
            lookup = kernel.get_global(*symbol)
        _write_slice(kernel, source, lookup, target, (outer, width), offset)
        offset += width
    finish(kernel)
    module.add(op)
