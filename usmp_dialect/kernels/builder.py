"""Builds the scalar-loop body of an operator function with xDSL's builders.

`KernelBuilder` appends ops at the end of the current block and offers what operator kernels
are written in: typed constants (hoisted to the function entry and shared), `arith` and `math`
on scalars, `memref.load`/`store`, and structured control flow (`scf.for` with loop-carried
values, `scf.if`) whose bodies are Python callables. Kernels are written with it the way
TFLite's reference kernels are written in C++: loops over output elements, a scalar
accumulator, conditions where a window leaves the input.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, func, math, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StridedLayoutAttr,
    StringAttr,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

Value = SSAValue
Scalar = Value | int | float
LoopBody = Callable[[Value, Sequence[Value]], Sequence[Value]]

INDEX = IndexType()


def is_float(type_: Attribute) -> bool:
    return type_ in (f32, f64)


class KernelBuilder:
    """Appends ops to a function body; constants are created once, at the function entry."""

    def __init__(self, entry: Block) -> None:
        self.entry = entry
        self.builder = Builder(InsertPoint.at_end(entry))
        self._constants: dict[tuple[Attribute, int | float], Value] = {}
        self._last_constant: Operation | None = None

    # -- constants -----------------------------------------------------------------------

    def constant(self, value: int | float, type_: Attribute) -> Value:
        key = (type_, value)
        if key in self._constants:
            return self._constants[key]
        if isinstance(type_, IndexType):
            attr: Attribute = IntegerAttr(int(value), INDEX)
        elif is_float(type_):
            attr = FloatAttr(float(value), type_)  # type: ignore[arg-type]
        else:
            assert isinstance(type_, IntegerType)
            attr = IntegerAttr(int(value), type_)
        op = arith.ConstantOp(attr, type_)
        if self._last_constant is None:
            point = InsertPoint.at_start(self.entry)
        else:
            point = InsertPoint.after(self._last_constant)
        Builder(point).insert(op)
        self._last_constant = op
        self._constants[key] = op.result
        return op.result

    def index(self, value: int) -> Value:
        return self.constant(value, INDEX)

    def as_index(self, value: Value | int) -> Value:
        return self._value(value, INDEX)

    def _value(self, value: Scalar, type_: Attribute) -> Value:
        return value if isinstance(value, SSAValue) else self.constant(value, type_)

    def insert(self, op: Operation) -> Value:
        self.builder.insert(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    # -- arithmetic ----------------------------------------------------------------------

    def _binary(
        self,
        integer_op: type[Operation],
        float_op: type[Operation] | None,
        lhs: Scalar,
        rhs: Scalar,
    ) -> Value:
        type_ = lhs.type if isinstance(lhs, SSAValue) else rhs.type  # type: ignore[union-attr]
        left, right = self._value(lhs, type_), self._value(rhs, type_)
        if is_float(type_):
            assert float_op is not None
            return self.insert(float_op(left, right))
        return self.insert(integer_op(left, right))

    def add(self, lhs: Scalar, rhs: Scalar) -> Value:
        if isinstance(lhs, SSAValue) and isinstance(rhs, int) and rhs == 0:
            return lhs
        return self._binary(arith.AddiOp, arith.AddfOp, lhs, rhs)

    def sub(self, lhs: Scalar, rhs: Scalar) -> Value:
        if isinstance(lhs, SSAValue) and isinstance(rhs, int) and rhs == 0:
            return lhs
        return self._binary(arith.SubiOp, arith.SubfOp, lhs, rhs)

    def mul(self, lhs: Scalar, rhs: Scalar) -> Value:
        if isinstance(lhs, SSAValue) and isinstance(rhs, int) and rhs == 1:
            return lhs
        return self._binary(arith.MuliOp, arith.MulfOp, lhs, rhs)

    def div(self, lhs: Scalar, rhs: Scalar) -> Value:
        """Signed division truncating toward zero (C's `/`), or float division."""
        return self._binary(arith.DivSIOp, arith.DivfOp, lhs, rhs)

    def ceil_div(self, lhs: Scalar, rhs: Scalar) -> Value:
        return self._binary(arith.CeilDivSIOp, None, lhs, rhs)

    def max(self, lhs: Scalar, rhs: Scalar) -> Value:
        return self._binary(arith.MaxSIOp, arith.MaximumfOp, lhs, rhs)

    def min(self, lhs: Scalar, rhs: Scalar) -> Value:
        return self._binary(arith.MinSIOp, arith.MinimumfOp, lhs, rhs)

    def and_(self, lhs: Scalar, rhs: Scalar) -> Value:
        return self._binary(arith.AndIOp, None, lhs, rhs)

    def or_(self, lhs: Scalar, rhs: Scalar) -> Value:
        return self._binary(arith.OrIOp, None, lhs, rhs)

    def shl(self, lhs: Scalar, rhs: Scalar) -> Value:
        return self._binary(arith.ShLIOp, None, lhs, rhs)

    def shr(self, lhs: Scalar, rhs: Scalar) -> Value:
        """Arithmetic shift right."""
        return self._binary(arith.ShRSIOp, None, lhs, rhs)

    def cmp(self, predicate: str, lhs: Scalar, rhs: Scalar) -> Value:
        """`arith.cmpi` (signed predicates: slt, sle, sgt, sge, eq, ne) or ordered `cmpf`."""
        type_ = lhs.type if isinstance(lhs, SSAValue) else rhs.type  # type: ignore[union-attr]
        left, right = self._value(lhs, type_), self._value(rhs, type_)
        if is_float(type_):
            return self.insert(arith.CmpfOp(left, right, "o" + predicate.lstrip("s")))
        return self.insert(arith.CmpiOp(left, right, predicate))

    def select(
        self,
        condition: Value,
        if_true: Scalar,
        if_false: Scalar,
        type_: Attribute | None = None,
    ) -> Value:
        """`arith.select`; `type_` is needed when both values are literals."""
        if type_ is None:
            value = if_true if isinstance(if_true, SSAValue) else if_false
            assert isinstance(value, SSAValue), "select of two literals needs a type"
            type_ = value.type
        return self.insert(
            arith.SelectOp(condition, self._value(if_true, type_), self._value(if_false, type_))
        )

    def clamp(self, value: Value, low: Scalar, high: Scalar) -> Value:
        return self.min(self.max(value, low), high)

    def cast(self, value: Value, type_: Attribute) -> Value:
        """Converts between integer widths (sign-extending or truncating), index, f32 and
        f64."""
        source = value.type
        if source == type_:
            return value
        if is_float(source) and is_float(type_):
            widen = source == f32
            return self.insert(
                arith.ExtFOp(value, type_) if widen else arith.TruncFOp(value, type_)
            )
        if isinstance(source, IndexType) or isinstance(type_, IndexType):
            return self.insert(arith.IndexCastOp(value, type_))
        if is_float(type_):
            return self.insert(arith.SIToFPOp(value, type_))
        if is_float(source):
            return self.insert(arith.FPToSIOp(value, type_))
        assert isinstance(source, IntegerType) and isinstance(type_, IntegerType)
        if source.width.data < type_.width.data:
            return self.insert(arith.ExtSIOp(value, type_))
        return self.insert(arith.TruncIOp(value, type_))

    def exp(self, value: Value) -> Value:
        return self.insert(math.ExpOp(value))

    def tanh(self, value: Value) -> Value:
        return self.insert(math.TanhOp(value))

    def abs(self, value: Value) -> Value:
        """The magnitude of a float (`fabsf`)."""
        return self.insert(math.AbsFOp(value))

    def round(self, value: Value) -> Value:
        """A float rounded to the nearest integer, halves away from zero (`roundf`)."""
        return self.insert(math.RoundOp(value))

    # -- memory --------------------------------------------------------------------------

    def load(self, buffer: Value, indices: Sequence[Value | int]) -> Value:
        return self.insert(memref.LoadOp.get(buffer, [self._value(i, INDEX) for i in indices]))

    def store(self, value: Value, buffer: Value, indices: Sequence[Value | int]) -> None:
        self.insert(memref.StoreOp.get(value, buffer, [self._value(i, INDEX) for i in indices]))

    def runs(
        self, flat: Value, offset: Value | int, count: int, spacing: int, length: int
    ) -> Value:
        """The `[count, length]` view of the 1-D buffer `flat` whose rows start at `offset`,
        `offset + spacing`, ... (a `memref.reinterpret_cast`, no copy): `count` equally spaced
        runs read in one loop from one base pointer, each element of the loop's induction
        variable `t` at `view[row, t]`."""
        source = flat.type
        assert isinstance(source, MemRefType) and source.get_num_dims() == 1
        flat, offset = self.based(flat, offset)
        layout = StridedLayoutAttr([spacing, 1], offset if isinstance(offset, int) else NoneAttr())
        dynamic = [] if isinstance(offset, int) else [self.as_index(offset)]
        return self.insert(
            memref.ReinterpretCastOp.build(
                operands=[flat, dynamic, [], []],
                result_types=[MemRefType(source.element_type, [count, length], layout)],
                properties={
                    "static_offsets": DenseArrayBase.from_list(
                        i64, [offset if isinstance(offset, int) else DYNAMIC_INDEX]
                    ),
                    "static_sizes": DenseArrayBase.from_list(i64, [count, length]),
                    "static_strides": DenseArrayBase.from_list(i64, [spacing, 1]),
                },
            )
        )

    def based(self, buffer: Value, offset: Value | int) -> tuple[Value, Value | int]:
        """What a `memref.reinterpret_cast` of the element `offset` of `buffer` casts from, and
        its offset: `buffer` itself when its own offset is static and 0; otherwise (a window
        passed in with a dynamic offset, e.g. a streamed row) its base buffer and
        `buffer's offset + offset` (`memref.extract_strided_metadata`), since a cast's offset
        counts from the base."""
        memref_type = buffer.type
        assert isinstance(memref_type, MemRefType)
        if memref_type.get_offset() == 0:
            return buffer, offset
        metadata = memref.ExtractStridedMetaDataOp(buffer)
        self.insert(metadata)
        return metadata.base_buffer, self.add(metadata.offset, self.as_index(offset))

    def reshaped(self, buffer: Value, shape: Sequence[int]) -> Value:
        """The contiguous `buffer` seen with `shape` (a `memref.reinterpret_cast`, no copy);
        a dynamic offset stays dynamic."""
        memref_type = buffer.type
        assert isinstance(memref_type, MemRefType)
        if tuple(memref_type.get_shape()) == tuple(shape):
            return buffer
        strides = [1] * len(shape)
        for axis in range(len(shape) - 2, -1, -1):
            strides[axis] = strides[axis + 1] * shape[axis + 1]
        base, offset = self.based(buffer, 0)
        dynamic = [] if isinstance(offset, int) else [offset]
        layout = NoneAttr() if isinstance(offset, int) else StridedLayoutAttr(strides, NoneAttr())
        return self.insert(
            memref.ReinterpretCastOp.build(
                operands=[base, dynamic, [], []],
                result_types=[MemRefType(memref_type.element_type, list(shape), layout)],
                properties={
                    "static_offsets": DenseArrayBase.from_list(
                        i64, [offset if isinstance(offset, int) else DYNAMIC_INDEX]
                    ),
                    "static_sizes": DenseArrayBase.from_list(i64, list(shape)),
                    "static_strides": DenseArrayBase.from_list(i64, strides),
                },
            )
        )

    def get_global(self, name: str, type_: MemRefType) -> Value:
        return self.insert(memref.GetGlobalOp(name, type_))

    def call(
        self, callee: str, arguments: Sequence[Value], result_types: Sequence[Attribute]
    ) -> Value:
        return self.insert(func.CallOp(callee, arguments, result_types))

    # -- control flow --------------------------------------------------------------------

    def _nested(self, block: Block, body: Callable[[], Sequence[Value]]) -> Sequence[Value]:
        saved = self.builder
        self.builder = Builder(InsertPoint.at_end(block))
        try:
            return body()
        finally:
            self.builder = saved

    def loop(
        self,
        lower: Value | int,
        upper: Value | int,
        body: LoopBody,
        carried: Sequence[Value] = (),
        step: int = 1,
    ) -> Sequence[Value]:
        """`scf.for` from `lower` to `upper`; `body(iv, carried)` returns the next carried
        values (an empty sequence when there are none). Returns the final carried values."""
        if isinstance(lower, int) and isinstance(upper, int) and upper - lower == step:
            return list(body(self.index(lower), carried))  # one iteration: no loop
        block = Block(arg_types=[INDEX, *(value.type for value in carried)])

        def build() -> Sequence[Value]:
            results = body(block.args[0], block.args[1:])
            self.insert(scf.YieldOp(*results))
            return results

        self._nested(block, build)
        op = scf.ForOp(
            self._value(lower, INDEX),
            self._value(upper, INDEX),
            self.index(step),
            list(carried),
            Region(block),
        )
        self.builder.insert(op)
        return op.results

    def loops(self, extents: Sequence[int], body: Callable[[Sequence[Value]], None]) -> None:
        """A perfect nest of `scf.for` from 0 to each extent; `body(ivs)` fills the innermost."""

        def level(depth: int, ivs: list[Value]) -> None:
            if depth == len(extents):
                body(ivs)
                return
            self.loop(0, extents[depth], lambda iv, _: level(depth + 1, [*ivs, iv]) or ())

        level(0, [])

    def if_(
        self,
        condition: Value,
        then: Callable[[], Sequence[Value]],
        otherwise: Callable[[], Sequence[Value]] | None = None,
    ) -> Sequence[Value]:
        """`scf.if`; both branches return values of the same types (or nothing)."""
        then_block, else_block = Block(), Block()
        then_results = self._nested(then_block, lambda: self._yield(then()))
        if otherwise is None:
            else_results: Sequence[Value] = ()
            self._nested(else_block, lambda: self._yield(()))
        else:
            else_results = self._nested(else_block, lambda: self._yield(otherwise()))
        assert len(then_results) == len(else_results)
        op = scf.IfOp(
            condition, [v.type for v in then_results], Region(then_block), Region(else_block)
        )
        self.builder.insert(op)
        return op.results

    def _yield(self, values: Sequence[Value]) -> Sequence[Value]:
        self.insert(scf.YieldOp(*values))
        return values


def function(
    name: str,
    arguments: Sequence[tuple[str, MemRefType | Attribute]],
    result_types: Sequence[Attribute] = (),
    arg_attrs: Sequence[dict[str, Attribute]] | None = None,
    private: bool = False,
) -> tuple[func.FuncOp, KernelBuilder, tuple[Value, ...]]:
    """A new `func.func @name(arguments)`: the op, a builder at its body and its arguments."""
    block = Block(arg_types=[type_ for _, type_ in arguments])
    for argument, (argument_name, _) in zip(block.args, arguments, strict=True):
        argument.name_hint = argument_name
    op = func.FuncOp(
        name,
        FunctionType.from_lists([t for _, t in arguments], list(result_types)),
        Region(block),
        visibility="private" if private else None,
        arg_attrs=(
            ArrayAttr([DictionaryAttr(attrs) for attrs in arg_attrs])
            if arg_attrs is not None
            else None
        ),
    )
    return op, KernelBuilder(block), tuple(block.args)


def finish(kernel: KernelBuilder, results: Sequence[Value] = ()) -> None:
    kernel.insert(func.ReturnOp(*results))


def dense(type_: Attribute, data: bytes) -> DenseIntOrFPElementsAttr:
    """A dense attribute over raw little-endian bytes (never a Python list of numbers)."""
    from xdsl.dialects.builtin import BytesAttr

    return DenseIntOrFPElementsAttr(type_, BytesAttr(data))  # type: ignore[arg-type]


__all__ = [
    "INDEX",
    "KernelBuilder",
    "StringAttr",
    "dense",
    "f32",
    "finish",
    "function",
    "i1",
    "i8",
    "i32",
    "i64",
]
