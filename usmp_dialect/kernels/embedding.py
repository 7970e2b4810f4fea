"""EMBEDDING_LOOKUP as TensorFlow Lite Micro's `embedding_lookup.cc` computes it: output row `i`
is row `ids[i]` of the table (`[rows, columns]` once its trailing dimensions are flattened),
copied, or for an int8 table with a float32 output dequantised as `(code - 0) * scale` in
float (`EvalHybrid`; TFLite requires the zero point 0).

TFLM's `Invoke` fails on an id outside `[0, rows)`; a compiled model cannot fail, so such an
id reads the nearest row (clamped) rather than memory outside the table.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import MemRefType, f32, i32

from usmp_dialect.kernels.builder import INDEX, Value, finish, function
from usmp_dialect.kernels.module import ModelModule


def embedding_lookup(
    module: ModelModule,
    name: str,
    ids: int,
    table_type: MemRefType,
    output_type: MemRefType,
    table_global: str | None,
    scale: float | None,
) -> None:
    """Adds `@name(%ids, [%table,] %output)`: `table_type` `[rows, columns]`, `output_type`
    `[ids, columns]`; `table_global` names the table's constant global when it is one (then
    it is no argument); `scale` dequantises an int8 table into a float32 output."""
    rows, columns = table_type.get_shape()
    arguments = [("ids", MemRefType(i32, [ids]))]
    if table_global is None:
        arguments.append(("table", table_type))
    arguments.append(("output", output_type))
    op, kernel, values = function(name, arguments)
    if table_global is None:
        id_values, table, target = values
    else:
        id_values, target = values
        table = kernel.get_global(table_global, table_type)

    def per_id(i: Value, _: Sequence[Value]) -> list[Value]:
        row = kernel.clamp(kernel.load(id_values, [i]), 0, rows - 1)
        index = kernel.cast(row, INDEX)

        def per_column(c: Value, _: Sequence[Value]) -> list[Value]:
            value = kernel.load(table, [index, c])
            if scale is not None:
                value = kernel.mul(kernel.cast(kernel.cast(value, i32), f32), scale)
            kernel.store(value, target, [i, c])
            return []

        kernel.loop(0, columns, per_column)
        return []

    kernel.loop(0, ids, per_id)
    finish(kernel)
    module.add(op)
