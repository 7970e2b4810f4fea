"""FULLY_CONNECTED (ONNX Gemm/MatMul with constant weights): `output[b, o] = sum_d input[b, d] *
filters[o, d] + bias[o]`, accumulated in a register in `d` order as TFLite's reference
`FullyConnected` kernels do, then requantised (int8) or clamped (float).

int8 with the input zero point folded into the bias (`QuantizedConv.folded_bias`, filter offset
0) computes `ROW_BLOCK` output units per pass over the input, their accumulators starting at the
folded bias: each input element is loaded once for all of them, the block of dot products the C
backend prints with `SMLAD` on `SXTB16`-widened words on a DSP core (`loops.int8_dot_product`:
the input word widened once for the four rows). The depth runs in a multiple of 4 first (the DSP
variant's step), the rest after it. Units beyond a multiple of `ROW_BLOCK` go two at a time
(one pass over the input for both rows of the remainder, in their row order), a last odd one
alone. Integer sums do not depend on the order, so every output is TFLite's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerType,
    MemRefType,
    StridedLayoutAttr,
    UnitAttr,
    f32,
    i8,
    i32,
    i64,
)

from usmp_dialect.dialects.usmp import NOINLINE_ATTRIBUTE
from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function
from usmp_dialect.kernels.conv import (
    FloatActivation,
    QuantizedConv,
    accumulate_product,
    accumulated_output,
)
from usmp_dialect.kernels.module import ModelModule, RequantizeEmitter

ROW_BLOCK = 4
"""Output units an int8 fully connected layer computes per pass over the input: four
accumulators, the input word and its two widened halves and one weight word's halves stay in
registers (13 on a Cortex-M), and each input word is loaded and widened once for four rows."""

PAIR = 2
"""Units of the remainder computed per pass over the input (a 2-unit layer such as vww's
last one: the input word loaded and widened once for both rows)."""

DEPTH_STEP = 4
"""Input elements per step of the DSP variant (one 32-bit word)."""


def fully_connected(
    module: ModelModule,
    name: str,
    input_type: MemRefType,
    output_type: MemRefType,
    filters: tuple[str, MemRefType],
    bias: tuple[str, MemRefType] | None,
    arithmetic: QuantizedConv | FloatActivation,
) -> None:
    """Adds `@name(%input: [batches, depth], %output: [batches, units])`. The int8 blocked
    form reorders the constant `filters` (`pack_weights`)."""
    batches, depth = input_type.get_shape()
    _, units = output_type.get_shape()
    op, kernel, (source, target) = function(name, [("input", input_type), ("output", output_type)])
    requantize = (
        RequantizeEmitter(module, kernel, name, arithmetic.requantization)
        if isinstance(arithmetic, QuantizedConv)
        else None
    )
    if (
        isinstance(arithmetic, QuantizedConv)
        and input_type.element_type == i8
        and arithmetic.folded_bias is not None
        and arithmetic.filter_offset == 0
    ):
        assert requantize is not None
        packed = pack_weights(module, name, filters)
        folded = kernel.get_global(*arithmetic.folded_bias)
        _blocked_int8(kernel, source, target, packed, folded, requantize)
        # Inlined into the run function, gcc -O2 spilled the block's pointers and weight
        # words in most layers (ad01 on the M4F: 2.9 instead of 1.4 instructions per MAC).
        op.attributes[NOINLINE_ATTRIBUTE] = UnitAttr()
    else:
        weights = kernel.get_global(*filters)
        bias_value = kernel.get_global(*bias) if bias is not None else None
        _reference_order(
            kernel,
            (source, weights, target),
            (batches, depth, units),
            bias_value,
            arithmetic,
            requantize,
        )
    finish(kernel)
    module.add(op)


@dataclass(frozen=True)
class PackedWeights:
    """An int8 `[units, depth]` weight matrix in the order the blocked kernel reads it:
    `blocks` `[units // 4, depth // 4, 4, 4]` (block of 4 rows, group of 4 columns, row, column:
    the 16 bytes one step of the inner loop reads, at one pointer), `columns` `[units // 4 * 4,
    depth % 4]` the last columns of the blocked rows, `rows` `[units % 4, depth]` the last
    rows (each None when empty). The same bytes as the matrix, none twice."""

    blocks: tuple[str, MemRefType] | None
    columns: tuple[str, MemRefType] | None
    rows: tuple[str, MemRefType] | None
    units: int
    depth: int


def pack_weights(module: ModelModule, name: str, filters: tuple[str, MemRefType]) -> PackedWeights:
    """Reorders the constant `filters` in place into `PackedWeights.blocks` (the remainders
    become two more constants)."""
    matrix = module.array(filters[0])
    units, depth = matrix.shape
    row_blocks, groups = units // ROW_BLOCK, depth // DEPTH_STEP
    blocked_units, blocked_depth = row_blocks * ROW_BLOCK, groups * DEPTH_STEP
    if not row_blocks or not groups:  # nothing to block: every row on its own
        return PackedWeights(None, None, filters, units, depth)
    blocks = (
        matrix[:blocked_units, :blocked_depth]
        .reshape(row_blocks, ROW_BLOCK, groups, DEPTH_STEP)
        .transpose(0, 2, 1, 3)
    )
    rows = matrix[blocked_units:, :]
    columns = matrix[:blocked_units, blocked_depth:]
    return PackedWeights(
        module.replace_constant(filters[0], blocks),
        module.constant(f"{name}_filter_columns", columns) if columns.size else None,
        module.constant(f"{name}_filter_rows", rows) if rows.size else None,
        units,
        depth,
    )


def _words_view(source: Value, batches: int, depth: int) -> memref.ReinterpretCastOp:
    """`source` (`[batches, depth]`) seen as `[batches, depth // 4, 4]` with the row stride
    `depth` (the last `depth % 4` elements of each row are not in the view)."""
    shape = [batches, depth // DEPTH_STEP, DEPTH_STEP]
    strides = [depth, DEPTH_STEP, 1]
    return memref.ReinterpretCastOp.build(
        operands=[source, [], [], []],
        result_types=[MemRefType(i8, shape, StridedLayoutAttr(strides, 0))],
        properties={
            "static_offsets": DenseArrayBase.from_list(i64, [0]),
            "static_sizes": DenseArrayBase.from_list(i64, shape),
            "static_strides": DenseArrayBase.from_list(i64, strides),
        },
    )


def _blocked_int8(
    kernel: KernelBuilder,
    source: Value,
    target: Value,
    packed: PackedWeights,
    folded: Value,
    requantize: RequantizeEmitter,
) -> None:
    """int8, input offset in the (folded) bias: `acc += x * w`, `ROW_BLOCK` units per pass
    over `PackedWeights.blocks`, the remaining units `PAIR` at a time from `PackedWeights.rows`,
    a last odd one alone."""
    batches = target.type.get_shape()[0]  # type: ignore[union-attr]
    element = target.type.element_type  # type: ignore[union-attr]
    assert isinstance(element, IntegerType)
    units, depth = packed.units, packed.depth
    groups = depth // DEPTH_STEP
    blocked_depth = groups * DEPTH_STEP
    blocks = kernel.get_global(*packed.blocks) if packed.blocks is not None else None
    columns = kernel.get_global(*packed.columns) if packed.columns is not None else None
    rows = kernel.get_global(*packed.rows) if packed.rows is not None else None
    blocked_units = units - units % ROW_BLOCK if blocks is not None else 0
    words = None
    if blocks is not None:  # the input as [batches, depth / 4, 4], as the blocks read it
        words = kernel.insert(_words_view(source, batches, depth))

    def finish_units(batch: Value, units_: Sequence[Value], totals: Sequence[Value]) -> None:
        for total, unit in zip(totals, units_, strict=True):
            kernel.store(requantize.output(total, unit, element), target, [batch, unit])

    def block(batch: Value, block_index: Value) -> None:
        assert blocks is not None and words is not None
        first = kernel.mul(block_index, ROW_BLOCK)
        units_ = [kernel.add(first, k) for k in range(ROW_BLOCK)]

        def over_groups(group: Value, acc: Sequence[Value]) -> list[Value]:
            def over_word(c: Value, acc_c: Sequence[Value]) -> list[Value]:
                x = kernel.cast(kernel.load(words, [batch, group, c]), i32)
                return [
                    kernel.add(
                        partial,
                        kernel.mul(
                            kernel.cast(kernel.load(blocks, [block_index, group, k, c]), i32), x
                        ),
                    )
                    for k, partial in enumerate(acc_c)
                ]

            return list(kernel.loop(0, DEPTH_STEP, over_word, acc))

        totals: Sequence[Value] = [kernel.load(folded, [u]) for u in units_]
        totals = kernel.loop(0, groups, over_groups, totals)
        if columns is not None:

            def over_columns(d: Value, acc: Sequence[Value]) -> list[Value]:
                x = kernel.cast(kernel.load(source, [batch, d]), i32)
                column = kernel.sub(d, blocked_depth)
                return [
                    kernel.add(
                        partial, kernel.mul(kernel.cast(kernel.load(columns, [u, column]), i32), x)
                    )
                    for u, partial in zip(units_, acc, strict=True)
                ]

            totals = kernel.loop(blocked_depth, depth, over_columns, totals)
        finish_units(batch, units_, totals)

    def remainder(batch: Value, first_unit: Value, count: int) -> None:
        """`count` (1 or `PAIR`) units from `first_unit` in one pass over the input."""
        assert rows is not None
        first_row = kernel.sub(first_unit, blocked_units)
        units_ = [kernel.add(first_unit, k) for k in range(count)]
        rows_ = [kernel.add(first_row, k) for k in range(count)]

        def over_depth(d: Value, acc: Sequence[Value]) -> list[Value]:
            x = kernel.cast(kernel.load(source, [batch, d]), i32)
            return [
                kernel.add(partial, kernel.mul(kernel.cast(kernel.load(rows, [r, d]), i32), x))
                for r, partial in zip(rows_, acc, strict=True)
            ]

        totals: Sequence[Value] = [kernel.load(folded, [u]) for u in units_]
        if blocked_depth:
            totals = kernel.loop(0, blocked_depth, over_depth, totals)
        if blocked_depth < depth:
            totals = kernel.loop(blocked_depth, depth, over_depth, totals)
        finish_units(batch, units_, totals)

    def per_batch(batch: Value, _: Sequence[Value]) -> list[Value]:
        def each_block(block_index: Value, _: Sequence[Value]) -> list[Value]:
            block(batch, block_index)
            return []

        def each_pair(pair: Value, _: Sequence[Value]) -> list[Value]:
            remainder(batch, kernel.add(kernel.mul(pair, PAIR), blocked_units), PAIR)
            return []

        if blocked_units:
            kernel.loop(0, blocked_units // ROW_BLOCK, each_block)
        pairs = (units - blocked_units) // PAIR
        if pairs:
            kernel.loop(0, pairs, each_pair)
        if blocked_units + pairs * PAIR < units:
            remainder(batch, kernel.as_index(units - 1), 1)
        return []

    kernel.loop(0, batches, per_batch)


def _reference_order(
    kernel: KernelBuilder,
    buffers: tuple[Value, Value, Value],
    shape: tuple[int, int, int],
    bias_value: Value | None,
    arithmetic: QuantizedConv | FloatActivation,
    requantize: RequantizeEmitter | None,
) -> None:
    """One unit at a time, summed in `d` order (float; int8 with the offsets in the loop)."""
    source, weights, target = buffers
    batches, depth, units = shape
    element = target.type.element_type  # type: ignore[union-attr]

    def body(ivs: Sequence[Value]) -> None:
        batch, unit = ivs

        def over_depth(d: Value, acc: Sequence[Value]) -> list[Value]:
            x = kernel.load(source, [batch, d])
            w = kernel.load(weights, [unit, d])
            if isinstance(arithmetic, QuantizedConv):
                x, w = kernel.cast(x, i32), kernel.cast(w, i32)
                x = kernel.add(x, arithmetic.input_offset)
                w = kernel.add(w, arithmetic.filter_offset)
                return [accumulate_product(kernel, acc[0], kernel.mul(w, x), arithmetic)]
            return [kernel.add(acc[0], kernel.mul(x, w))]

        accumulator = arithmetic.accumulator if isinstance(arithmetic, QuantizedConv) else f32
        zero = kernel.constant(0, accumulator)
        (total,) = kernel.loop(0, depth, over_depth, [zero])
        result = accumulated_output(
            kernel, total, unit, bias_value, requantize, arithmetic, element
        )
        kernel.store(result, target, [batch, unit])

    kernel.loops([batches, units], body)
