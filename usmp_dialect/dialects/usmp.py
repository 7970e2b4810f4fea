"""The `usmp` dialect: buffers the planner places in memory pools.

```mlir
%a = usmp.allocate : memref<1x16x16x8xi8>
%b = usmp.allocate {alignment = 64 : i64, pools = [@sram, @dram]} : memref<256xf32>
%w = usmp.allocate_const dense<[1, 2, 3]> : memref<3xi32>
```

After planning both carry `pool = @name` and `offset = N : i64`.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    AnyFloat,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
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
    ParamAttrConstraint,
    ParsePropInAttrDict,
    VarConstraint,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import MemoryAllocEffect, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

from usmp_dialect.dialects.pool import verify_pool_reference

DEFAULT_BUFFER_ALIGNMENT_BYTES = 16


def element_size_bytes(element_type: Attribute) -> int:
    """Bytes one element of `element_type` takes in memory (i1 takes a byte, index 8)."""
    if isinstance(element_type, IntegerType):
        return max(1, (element_type.width.data + 7) // 8)
    if isinstance(element_type, IndexType):
        return 8
    if isinstance(element_type, AnyFloat):
        return element_type.bitwidth // 8
    raise ValueError(f"unsupported element type {element_type}")


def buffer_size_bytes(memref_type: MemRefType) -> int:
    """Bytes a statically shaped, identity-layout memref occupies."""
    return memref_type.element_count() * element_size_bytes(memref_type.element_type)


def verify_buffer_type(memref_type: Attribute) -> MemRefType:
    """Checks that a buffer type is a statically shaped memref with identity layout."""
    if not isinstance(memref_type, MemRefType):
        raise VerifyException(f"expected a memref type, got {memref_type}")
    if any(dim < 0 for dim in memref_type.get_shape()):
        raise VerifyException(f"buffer type {memref_type} has a dynamic shape")
    if not isinstance(memref_type.layout, NoneAttr):
        raise VerifyException(f"buffer type {memref_type} must have the identity layout")
    try:
        element_size_bytes(memref_type.element_type)
    except ValueError as error:
        raise VerifyException(str(error)) from error
    return memref_type


class AllocationUser(SymbolUserOpInterface):
    """Verifies the pool symbols an allocation refers to."""

    def verify(self, op: Operation) -> None:
        assert isinstance(op, AllocationOp)
        if op.pools is not None:
            for pool in op.pools.data:
                verify_pool_reference(op, pool, "candidate pool")
        if op.pool is not None:
            verify_pool_reference(op, op.pool, "pool")


class AllocationOp(IRDLOperation):
    """What `usmp.allocate` and `usmp.allocate_const` share: a planned buffer."""

    alignment = opt_prop_def(IntegerAttr[I64])
    pools = opt_prop_def(ArrayAttr[SymbolRefAttr])
    pool = opt_prop_def(SymbolRefAttr)
    offset = opt_prop_def(IntegerAttr[I64])

    memref = result_def(MemRefType)

    irdl_options = (ParsePropInAttrDict(),)

    @property
    def buffer_type(self) -> MemRefType:
        memref_type = self.memref.type
        assert isinstance(memref_type, MemRefType)
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
    def is_planned(self) -> bool:
        return self.pool is not None and self.offset is not None

    def verify_(self) -> None:
        verify_buffer_type(self.memref.type)
        if self.alignment is not None:
            alignment = self.alignment.value.data
            if alignment <= 0 or alignment & (alignment - 1):
                raise VerifyException(f"alignment {alignment} is not a power of two")
        if self.offset is not None:
            if self.pool is None:
                raise VerifyException("'offset' is given without 'pool'")
            if self.offset.value.data < 0:
                raise VerifyException(f"offset {self.offset.value.data} is negative")
        if self.pools is not None:
            names = self.candidate_pool_names
            if len(set(names)) != len(names):
                raise VerifyException("a candidate pool is listed twice in 'pools'")


@irdl_op_definition
class AllocateOp(AllocationOp):
    """A read/write buffer with a static shape, to be placed in a workspace pool."""

    name = "usmp.allocate"

    traits = traits_def(MemoryAllocEffect(), AllocationUser())
    assembly_format = "attr-dict `:` type($memref)"

    def __init__(
        self,
        memref_type: MemRefType,
        alignment: int | None = None,
        pools: tuple[str, ...] | None = None,
    ):
        super().__init__(
            properties=allocation_properties(alignment, pools),
            result_types=[memref_type],
        )


@irdl_op_definition
class AllocateConstOp(AllocationOp):
    """A read-only buffer holding the given data, to be placed in a constant pool."""

    name = "usmp.allocate_const"

    _T: ClassVar = VarConstraint("T", AnyAttr())
    value = prop_def(ParamAttrConstraint(DenseIntOrFPElementsAttr, (_T, AnyAttr())))
    memref = result_def(_T)

    traits = traits_def(AllocationUser())
    assembly_format = "attr-dict $value"

    def __init__(
        self,
        value: DenseIntOrFPElementsAttr,
        alignment: int | None = None,
        pools: tuple[str, ...] | None = None,
    ):
        properties = allocation_properties(alignment, pools)
        properties["value"] = value
        super().__init__(properties=properties, result_types=[value.type])

    def verify_(self) -> None:
        super().verify_()
        value_type = self.value.type
        if not isinstance(value_type, MemRefType):
            raise VerifyException(
                f"the data of usmp.allocate_const must be typed by its memref type, "
                f"got {value_type}"
            )
        expected = self.buffer_type.element_count()
        if len(self.value) != expected and not self.value.is_splat():
            raise VerifyException(
                f"data holds {len(self.value)} elements but {self.buffer_type} needs {expected}"
            )


def allocation_properties(
    alignment: int | None, pools: tuple[str, ...] | None
) -> dict[str, Attribute]:
    properties: dict[str, Attribute] = {}
    if alignment is not None:
        properties["alignment"] = IntegerAttr(alignment, 64)
    if pools is not None:
        properties["pools"] = ArrayAttr([SymbolRefAttr(name) for name in pools])
    return properties


def io_kind(attr: Attribute | None) -> str | None:
    """The value of a `usmp.io` attribute (`"input"` / `"output"`), or None."""
    if isinstance(attr, StringAttr) and attr.data in ("input", "output"):
        return attr.data
    return None


USMP = Dialect("usmp", [AllocateOp, AllocateConstOp], [])
