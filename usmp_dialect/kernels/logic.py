"""Kernels with bool values, as TensorFlow Lite Micro computes them (bool is MLIR's i1, one
byte per element holding 0 or 1 in memory and C's `uint8_t`):

* the comparisons EQUAL, NOT_EQUAL, GREATER, GREATER_EQUAL, LESS, LESS_EQUAL
  (`reference_ops::*NoScaling` and `*WithScaling` of TFLM's `comparisons.h`): float32, int32,
  int64 and bool compared as C++ compares them (`!=` is true when either float is NaN, the
  others false), int8 and int16 through `ComparisonWithScaling`: each input offset by minus
  its zero point, shifted left by 8 and scaled by its own scale
  (`MultiplyByQuantizedMultiplierSmallerThanOneExp` with `QuantizeMultiplierSmallerThanOneExp
  (scale)`), then compared in int32;
* LOGICAL_AND and LOGICAL_OR (`BinaryFunction` on bools) and LOGICAL_NOT;
* SELECT_V2 (`reference_ops::Select` and `BroadcastSelect5DSlow`): `condition ? x : y` with
  NumPy broadcasting of the three inputs, values copied as they are stored (TFLM does not
  requantise).

The binary ones are `elementwise.binary`'s arithmetic (its broadcasting and constant inputs);
SELECT_V2 broadcasts three inputs the same way (`broadcast_shapes_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, i1, i32

from usmp_dialect.kernels.builder import KernelBuilder, Value, finish, function, is_float
from usmp_dialect.kernels.fixed_point import emit_multiply_by_quantized_multiplier
from usmp_dialect.kernels.module import ModelModule

# TFLite opcode -> (signed integer predicate of `arith.cmpi`, `arith.cmpf` predicate as C++
# compares floats: ordered, except `!=`, which is true for NaN)
PREDICATES = {
    "EQUAL": ("eq", "oeq"),
    "NOT_EQUAL": ("ne", "une"),
    "GREATER": ("sgt", "ogt"),
    "GREATER_EQUAL": ("sge", "oge"),
    "LESS": ("slt", "olt"),
    "LESS_EQUAL": ("sle", "ole"),
}


@dataclass(frozen=True)
class Comparison:
    """A comparison (`opcode` a key of PREDICATES) of the stored values."""

    opcode: str


@dataclass(frozen=True)
class QuantizedComparison:
    """An int8/int16 comparison after TFLM's rescaling: `ComparisonParams` of
    `ComparisonsPrepare` (offsets minus the zero points, shifts non-positive)."""

    opcode: str
    input_offsets: tuple[int, int]
    input_multipliers: tuple[int, int]
    input_shifts: tuple[int, int]
    left_shift: int = 8


@dataclass(frozen=True)
class Logical:
    """LOGICAL_AND (`operation` "and") or LOGICAL_OR ("or") of two bools."""

    operation: str


@dataclass(frozen=True)
class LogicalNot:
    """LOGICAL_NOT of a bool."""


LogicArithmetic = Comparison | QuantizedComparison | Logical


def _compare(kernel: KernelBuilder, opcode: str, x: Value, y: Value) -> Value:
    integer, floating = PREDICATES[opcode]
    if is_float(x.type):
        return kernel.insert(arith.CmpfOp(x, y, floating))
    return kernel.insert(arith.CmpiOp(x, y, integer))


def emit_logic(kernel: KernelBuilder, arithmetic: LogicArithmetic, x: Value, y: Value) -> Value:
    """The i1 result of `x op y`."""
    if isinstance(arithmetic, Logical):
        return kernel.and_(x, y) if arithmetic.operation == "and" else kernel.or_(x, y)
    if isinstance(arithmetic, Comparison):
        return _compare(kernel, arithmetic.opcode, x, y)
    scaled = [
        emit_multiply_by_quantized_multiplier(
            kernel,
            kernel.shl(
                kernel.add(kernel.cast(value, i32), arithmetic.input_offsets[side]),
                arithmetic.left_shift,
            ),
            arithmetic.input_multipliers[side],
            arithmetic.input_shifts[side],
        )
        for side, value in enumerate((x, y))
    ]
    return _compare(kernel, arithmetic.opcode, scaled[0], scaled[1])


def emit_logical_not(kernel: KernelBuilder, x: Value) -> Value:
    return kernel.insert(arith.XOrIOp(x, kernel.constant(1, i1)))


def broadcast_shapes_of(
    output: Sequence[int], inputs: Sequence[Sequence[int]]
) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """The reduced loops of an operation of several `inputs` broadcast (NumPy's rules) to
    `output`: dimensions of extent 1 dropped, neighbours along which every input is read or
    broadcast alike merged (as `elementwise.broadcast_shapes` does for two); the loop extents
    and each input's shape over them (extent 1 where it is broadcast)."""
    rank = len(output)
    padded = [(1,) * (rank - len(shape)) + tuple(shape) for shape in inputs]
    dims: list[list[int]] = []  # [extent, reads input 0, reads input 1, ...]
    for axis, extent in enumerate(output):
        if extent == 1:
            continue
        reads = [int(shape[axis] == extent) for shape in padded]
        if dims and dims[-1][1:] == reads:
            dims[-1][0] *= extent
        else:
            dims.append([extent, *reads])
    if not dims:
        return (1,), tuple((1,) for _ in inputs)
    loops = tuple(d[0] for d in dims)
    shapes = tuple(
        tuple(d[0] if d[1 + position] else 1 for d in dims) for position in range(len(inputs))
    )
    return loops, shapes


def select(
    module: ModelModule,
    name: str,
    operands: Sequence[tuple[MemRefType, str | None]],
    output_type: MemRefType,
) -> None:
    """Adds `@name(%condition?, %x?, %y?, %output)`: `output = condition ? x : y`, the three
    inputs of the reduced broadcast shapes (`broadcast_shapes_of`) over the output's loops;
    an operand with a symbol is read from that constant `memref.global`, not an argument."""
    labels = ("condition", "x", "y")
    arguments = [
        (labels[position], type_)
        for position, (type_, constant) in enumerate(operands)
        if constant is None
    ]
    op, kernel, values = function(name, [*arguments, ("output", output_type)])
    arguments_left = iter(values[:-1])
    sources = [
        kernel.get_global(constant, type_) if constant is not None else next(arguments_left)
        for type_, constant in operands
    ]
    target = values[-1]
    shapes = [tuple(type_.get_shape()) for type_, _ in operands]

    def body(ivs: Sequence[Value]) -> None:
        condition, x, y = (
            kernel.load(
                source, [iv if extent != 1 else 0 for iv, extent in zip(ivs, shape, strict=True)]
            )
            for source, shape in zip(sources, shapes, strict=True)
        )
        kernel.store(kernel.select(condition, x, y), target, ivs)

    kernel.loops(output_type.get_shape(), body)
    finish(kernel)
    module.add(op)
