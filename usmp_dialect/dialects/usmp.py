"""The `usmp` dialect: buffers the planner places in memory pools.

```mlir
%a = usmp.allocate : memref<1x16x16x8xi8>
%b = usmp.allocate {alignment = 64 : i64, pools = [@sram, @dram]} : memref<256xf32>
%w = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
%v = usmp.allocate_const {alignment = 32 : i64} dense<"0x0000803F00000040"> : memref<2xf32>
%s = usmp.allocate_state dense<0> : memref<1x40xi16>
```

After planning all three carry `pool = @name` and `offset = N : i64`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Self

from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.irdl import (
    AnyAttr,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import MemoryAllocEffect, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

from usmp_dialect.dialects.pool import (
    ConstantPoolOp,
    Described,
    StatePoolOp,
    WorkspacePoolOp,
    i64_constraint,
    symbol_constraint,
    verify_pool_reference,
)

DEFAULT_BUFFER_ALIGNMENT_BYTES = 16

# The properties every allocation may carry, in the order they print.
ALLOCATION_PROPERTIES = ("alignment", "pools", "pool", "offset")


def element_size_bytes(element_type: Attribute) -> int:
    """Bytes one element of `element_type` takes in memory (i1 takes a byte, index 8)."""
    if isinstance(element_type, IntegerType):
        return max(1, (element_type.width.data + 7) // 8)
    if isinstance(element_type, IndexType):
        return 8
    if isinstance(element_type, AnyFloat):
        return (element_type.bitwidth + 7) // 8
    raise ValueError(f"unsupported element type {element_type}")


def buffer_size_bytes(memref_type: MemRefType) -> int:
    """Bytes a statically shaped, identity-layout memref occupies."""
    return memref_type.element_count() * element_size_bytes(memref_type.element_type)


def verify_buffer_type(memref_type: Attribute) -> MemRefType:
    """Checks that a buffer type is a statically shaped memref with identity layout."""
    if not isinstance(memref_type, MemRefType):
        raise VerifyException(f"a buffer must be a memref, got {memref_type}")
    shape = memref_type.get_shape()
    if DYNAMIC_INDEX in shape:
        raise VerifyException(f"buffer type {memref_type} has a dynamic shape")
    if any(dim < 0 for dim in shape):
        raise VerifyException(f"buffer type {memref_type} has a negative dimension")
    if not isinstance(memref_type.layout, NoneAttr):
        raise VerifyException(f"buffer type {memref_type} must have the identity layout")
    try:
        element_size_bytes(memref_type.element_type)
    except ValueError as error:
        raise VerifyException(f"buffer type {memref_type}: {error}") from None
    return memref_type


def verify_alignment(alignment: int) -> None:
    """Checks an alignment in bytes: a positive power of two."""
    if alignment <= 0:
        raise VerifyException(f"alignment must be positive, got {alignment}")
    if alignment & (alignment - 1):
        raise VerifyException(f"alignment {alignment} is not a power of two")


class AllocationUser(SymbolUserOpInterface):
    """Verifies the pools an allocation refers to: they exist, are pools of the right kind,
    and a planned buffer lies inside its pool."""

    def verify(self, op: Operation) -> None:
        if not isinstance(op, AllocationOp):
            return
        kind = op.POOL_KIND
        if op.pools is not None:
            for candidate in op.pools.data:
                verify_pool_reference(op, candidate, "candidate pool", kind)
        if op.pool is None:
            return
        pool = verify_pool_reference(op, op.pool, "pool", kind)
        if op.pools is not None and op.pool.root_reference.data not in op.candidate_pool_names:
            candidates = ", ".join(f"@{name}" for name in op.candidate_pool_names)
            raise VerifyException(
                f"pool @{op.pool.root_reference.data} is not one of the candidate pools "
                f"[{candidates}]"
            )
        if pool is None or op.offset is None:
            return
        verify_buffer_type(op.memref.type)
        limit = pool.size_bytes.value.data if pool.size_bytes is not None else pool.capacity_bytes
        if limit is None:
            return
        end = op.offset.value.data + op.size_bytes
        if end > limit:
            what = "size_bytes" if pool.size_bytes is not None else "size_hint_bytes"
            raise VerifyException(
                f"buffer ends at byte {end}, beyond the {what} {limit} of pool @{pool.pool_name}"
            )


class AllocationOp(IRDLOperation):
    """What `usmp.allocate` and `usmp.allocate_const` share: a planned buffer."""

    alignment = opt_prop_def(i64_constraint("alignment"))
    pools = opt_prop_def(
        Described(ArrayAttr[SymbolRefAttr], "pools", "an array of pool symbols (e.g. [@sram])")
    )
    pool = opt_prop_def(symbol_constraint("pool"))
    offset = opt_prop_def(i64_constraint("offset"))

    # Any type parses; verify_ says clearly what is expected.
    memref = result_def(AnyAttr())

    irdl_options = (ParsePropInAttrDict(),)

    # The kind of pool (`PoolOpBase.KIND`) this allocation may be placed in.
    POOL_KIND: ClassVar[str] = ""

    @property
    def buffer_type(self) -> MemRefType:
        memref_type = self.memref.type
        if not isinstance(memref_type, MemRefType):
            raise VerifyException(f"'{self.name}' must return a memref, got {memref_type}")
        return memref_type

    @property
    def alignment_bytes(self) -> int:
        if self.alignment is None:
            return DEFAULT_BUFFER_ALIGNMENT_BYTES
        return self.alignment.value.data

    @property
    def size_bytes(self) -> int:
        return buffer_size_bytes(self.buffer_type)

    @property
    def candidate_pool_names(self) -> tuple[str, ...]:
        if self.pools is None:
            return ()
        return tuple(pool.root_reference.data for pool in self.pools.data)

    @property
    def pool_name(self) -> str | None:
        """The pool the plan placed this buffer in, or None before planning."""
        return None if self.pool is None else self.pool.root_reference.data

    @property
    def offset_bytes(self) -> int | None:
        """The planned offset from the pool's start, or None before planning."""
        return None if self.offset is None else self.offset.value.data

    @property
    def is_planned(self) -> bool:
        return self.pool is not None and self.offset is not None

    def verify_(self) -> None:
        verify_buffer_type(self.memref.type)
        if self.alignment is not None:
            verify_alignment(self.alignment.value.data)
        if self.pools is not None:
            names = self.candidate_pool_names
            if not names:
                raise VerifyException("'pools' must list at least one candidate pool")
            for position, name in enumerate(names):
                if name in names[:position]:
                    raise VerifyException(f"candidate pool @{name} is listed twice in 'pools'")
        if self.offset is not None:
            offset = self.offset.value.data
            if self.pool is None:
                raise VerifyException("'offset' is given without 'pool'")
            if offset < 0:
                raise VerifyException(f"offset {offset} is negative")
            if offset % self.alignment_bytes:
                raise VerifyException(
                    f"offset {offset} is not a multiple of the alignment {self.alignment_bytes}"
                )


def allocation_properties(
    alignment: int | None,
    pools: tuple[str, ...] | None,
    pool: str | None = None,
    offset: int | None = None,
) -> dict[str, Attribute]:
    """The properties of an allocation, from plain Python values (None leaves one out)."""
    properties: dict[str, Attribute] = {}
    if alignment is not None:
        properties["alignment"] = IntegerAttr(alignment, 64)
    if pools is not None:
        properties["pools"] = ArrayAttr([SymbolRefAttr(name) for name in pools])
    if pool is not None:
        properties["pool"] = SymbolRefAttr(pool)
    if offset is not None:
        properties["offset"] = IntegerAttr(offset, 64)
    return properties


@irdl_op_definition
class AllocateOp(AllocationOp):
    """A read/write buffer with a static shape, to be placed in a workspace pool."""

    name = "usmp.allocate"

    traits = traits_def(MemoryAllocEffect(), AllocationUser())
    assembly_format = "attr-dict `:` type($memref)"

    POOL_KIND: ClassVar[str] = WorkspacePoolOp.KIND

    def __init__(
        self,
        memref_type: MemRefType,
        alignment: int | None = None,
        pools: tuple[str, ...] | None = None,
        *,
        pool: str | None = None,
        offset: int | None = None,
    ):
        super().__init__(
            properties=allocation_properties(alignment, pools, pool, offset),
            result_types=[memref_type],
        )


class InitializedAllocationOp(AllocationOp):
    """What `usmp.allocate_const` and `usmp.allocate_state` share: a buffer with data, written
    like `arith.constant`: `{attrs} dense<...> : memref<...>`, the dense literal typed by the
    buffer's memref type."""

    value = prop_def(
        Described(
            DenseIntOrFPElementsAttr,
            "value",
            "a dense literal typed by the buffer (e.g. dense<[1, 2]> : memref<2xi32>)",
        )
    )

    def __init__(
        self,
        value: DenseIntOrFPElementsAttr,
        alignment: int | None = None,
        pools: tuple[str, ...] | None = None,
        *,
        pool: str | None = None,
        offset: int | None = None,
    ):
        properties = allocation_properties(alignment, pools, pool, offset)
        properties["value"] = value
        super().__init__(properties=properties, result_types=[value.type])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        attributes = parser.parse_optional_attr_dict()
        if "value" in attributes:
            parser.raise_error(
                f"the data of {cls.name} is the dense literal after the attribute "
                "dictionary, not a 'value' entry"
            )
        start = parser.pos
        value = parser.parse_attribute()
        if not isinstance(value, DenseIntOrFPElementsAttr):
            parser.raise_error(
                "expected a dense literal typed by the buffer's memref type, "
                "e.g. dense<[1, 2]> : memref<2xi32>",
                start,
                parser.pos,
            )
        properties: dict[str, Attribute] = {
            name: attributes.pop(name) for name in ALLOCATION_PROPERTIES if name in attributes
        }
        properties["value"] = value
        return cls.create(properties=properties, attributes=attributes, result_types=[value.type])

    def print(self, printer: Printer) -> None:
        if not self.attributes.keys().isdisjoint(self.properties.keys()):
            raise ValueError(
                "cannot print attributes and properties with the same name in one dictionary"
            )
        dictionary = self.attributes | {
            name: attr for name, attr in self.properties.items() if name != "value"
        }
        printer.print_op_attributes(dictionary)
        printer.print_string(" ")
        printer.print_attribute(self.value)

    def verify_(self) -> None:
        super().verify_()
        buffer_type = self.buffer_type
        value_type = self.value.type
        if not isinstance(value_type, MemRefType):
            raise VerifyException(
                f"the data of {self.name} must be typed by its memref type "
                f"{buffer_type}, got {value_type}"
            )
        if value_type.element_type != buffer_type.element_type:
            raise VerifyException(
                f"data of element type {value_type.element_type} does not match the element "
                f"type of {buffer_type}"
            )
        expected = buffer_type.element_count()
        if value_type.element_count() != expected or len(self.value) != expected:
            raise VerifyException(
                f"data holds {len(self.value)} elements but {buffer_type} needs {expected}"
            )
        if value_type != buffer_type:
            raise VerifyException(
                f"data typed {value_type} does not match the result type {buffer_type}"
            )


@irdl_op_definition
class AllocateConstOp(InitializedAllocationOp):
    """A read-only buffer holding the given data, to be placed in a constant pool.

    Written like `arith.constant`: `usmp.allocate_const {attrs} dense<...> : memref<...>`,
    the dense literal typed by the buffer's memref type.
    """

    name = "usmp.allocate_const"

    traits = traits_def(AllocationUser())

    POOL_KIND: ClassVar[str] = ConstantPoolOp.KIND


@irdl_op_definition
class AllocateStateOp(InitializedAllocationOp):
    """A read/write buffer that keeps its value from one run to the next (SPEC §13), to be
    placed in a state pool; the dense literal is its initial value (what the program's state
    holds before the first run and after `<p>_reset_state()`).

    `usmp.allocate_state dense<0> : memref<1x40xi16>`
    """

    name = "usmp.allocate_state"

    traits = traits_def(MemoryAllocEffect(), AllocationUser())

    POOL_KIND: ClassVar[str] = StatePoolOp.KIND


# Discardable attributes naming what a buffer or entry argument holds in the model it came
# from (the frontends write them; passes carry them; the report and the C header read them).
TENSOR_ATTRIBUTE = "usmp.tensor"  # the model's own name of the tensor (a string)
QUANTIZATION_ATTRIBUTE = "usmp.quantization"  # {scale = <f64>, zero_point = <i64>}, per tensor
MODEL_ATTRIBUTE = "usmp.model"  # on the module: {name, source, sha256} of the model file
# A unit attribute on a mutable `memref.global`: its value persists from one run to the next
# (a state variable, SPEC §13); `usmp-import-memref` makes its read a `usmp.allocate_state`.
STATE_ATTRIBUTE = "usmp.state"


def tensor_name(attributes: Mapping[str, Attribute]) -> str | None:
    """The `usmp.tensor` in `attributes` (an op's attributes or an argument's), or None."""
    attr = attributes.get(TENSOR_ATTRIBUTE)
    return attr.data if isinstance(attr, StringAttr) else None


def io_kind(attr: Attribute | None) -> str | None:
    """The value of a `usmp.io` attribute (`"input"` / `"output"`), or None."""
    if isinstance(attr, StringAttr) and attr.data in ("input", "output"):
        return attr.data
    return None


NOINLINE_ATTRIBUTE = "usmp.noinline"
"""A unit `func.func` attribute: the C backend prints the function `__attribute__((noinline))`
under gcc (a kernel whose register block gcc spills when it is inlined into its caller)."""

OPERATOR_ATTRIBUTE = "usmp.operator"
"""The `func.func` attribute a frontend puts on each operator function: what model operator
it computes, `{type = "CONV_2D", index = 0 : i64, macs = N : i64}` (a plain dictionary, so the
module stays standard MLIR)."""


@dataclass(frozen=True)
class OperatorFacts:
    """The model operator an operator function computes (its `usmp.operator` attribute)."""

    type: str
    """The model's operator type: a TFLite builtin operator name, an ONNX op type."""
    index: int
    """The operator's index in the model (TFLite operator index, ONNX node index)."""
    macs: int
    """Multiply-accumulates of one run, from the static shapes (0 for operators without)."""

    def attribute(self) -> DictionaryAttr:
        return DictionaryAttr(
            {
                "type": StringAttr(self.type),
                "index": IntegerAttr(self.index, 64),
                "macs": IntegerAttr(self.macs, 64),
            }
        )


def operator_facts(attr: Attribute | None) -> OperatorFacts | None:
    """The facts of a `usmp.operator` attribute, or None when it is absent or malformed."""
    if not isinstance(attr, DictionaryAttr):
        return None
    type_ = attr.data.get("type")
    index = attr.data.get("index")
    macs = attr.data.get("macs")
    if not isinstance(type_, StringAttr) or not isinstance(index, IntegerAttr):
        return None
    return OperatorFacts(
        type_.data,
        index.value.data,
        macs.value.data if isinstance(macs, IntegerAttr) else 0,
    )


USMP = Dialect("usmp", [AllocateOp, AllocateConstOp, AllocateStateOp], [])
