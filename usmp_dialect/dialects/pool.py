"""The `pool` dialect: named memory pools and the ops that reach their memory.

A pool is a module-level symbol. Workspace pools hold read/write data, constant pools hold
read-only data (weights). Pools are declared in preference order.

```mlir
pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
pool.workspace @dram {targets = ["c", "accel"], internal}
pool.constant @flash {targets = ["c"]}
%base = pool.base @sram : memref<11424xi8>
```
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Dialect, Operation
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure, SymbolOpInterface, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

DEFAULT_POOL_ALIGNMENT_BYTES = 16
DEFAULT_TARGETS = ("c",)

# The integer properties of a pool, with the smallest value each may take.
POOL_INTEGER_PROPERTIES: dict[str, int] = {
    "size_hint_bytes": 0,
    "alignment": 1,
    "size_bytes": 0,
    "clock_frequency_hz": 1,
    "read_bandwidth_bytes_per_cycle": 1,
    "write_bandwidth_bytes_per_cycle": 1,
    "read_latency_cycles": 0,
    "write_latency_cycles": 0,
}


class PoolOpBase(IRDLOperation):
    """Shared definition of `pool.workspace` and `pool.constant`."""

    sym_name = prop_def(SymbolNameConstraint())
    targets = opt_prop_def(ArrayAttr[StringAttr])
    size_hint_bytes = opt_prop_def(IntegerAttr[I64])
    alignment = opt_prop_def(IntegerAttr[I64])
    internal = opt_prop_def(UnitAttr)
    size_bytes = opt_prop_def(IntegerAttr[I64])
    clock_frequency_hz = opt_prop_def(IntegerAttr[I64])
    read_bandwidth_bytes_per_cycle = opt_prop_def(IntegerAttr[I64])
    write_bandwidth_bytes_per_cycle = opt_prop_def(IntegerAttr[I64])
    read_latency_cycles = opt_prop_def(IntegerAttr[I64])
    write_latency_cycles = opt_prop_def(IntegerAttr[I64])
    # target name -> burst size in bytes, e.g. {c = 8 : i64}
    target_burst_bytes = opt_prop_def(DictionaryAttr)

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict"

    KIND: ClassVar[str] = ""

    @property
    def pool_name(self) -> str:
        return self.sym_name.data

    @property
    def target_names(self) -> tuple[str, ...]:
        if self.targets is None:
            return DEFAULT_TARGETS
        return tuple(t.data for t in self.targets.data)

    @property
    def alignment_bytes(self) -> int:
        if self.alignment is None:
            return DEFAULT_POOL_ALIGNMENT_BYTES
        return self.alignment.value.data

    @property
    def capacity_bytes(self) -> int | None:
        """The hard capacity of the pool (its size hint), or None when unbounded."""
        if self.size_hint_bytes is None:
            return None
        return self.size_hint_bytes.value.data

    @property
    def is_internal(self) -> bool:
        return self.internal is not None

    def verify_(self) -> None:
        parent = self.parent_op()
        if parent is not None and not isinstance(parent, ModuleOp):
            raise VerifyException(f"pool @{self.pool_name} must be declared at module level")
        for prop, minimum in POOL_INTEGER_PROPERTIES.items():
            attr = self.properties.get(prop)
            if isinstance(attr, IntegerAttr) and attr.value.data < minimum:
                raise VerifyException(
                    f"pool @{self.pool_name}: {prop} must be >= {minimum}, got {attr.value.data}"
                )
        alignment = self.alignment_bytes
        if alignment & (alignment - 1):
            raise VerifyException(
                f"pool @{self.pool_name}: alignment {alignment} is not a power of two"
            )
        if self.targets is not None and not self.targets.data:
            raise VerifyException(f"pool @{self.pool_name}: targets must not be empty")
        if self.target_burst_bytes is not None:
            for target, value in self.target_burst_bytes.data.items():
                if not isinstance(value, IntegerAttr) or value.value.data < 1:
                    raise VerifyException(
                        f"pool @{self.pool_name}: target_burst_bytes for '{target}' "
                        "must be a positive integer"
                    )
        if isinstance(parent, ModuleOp):
            for other in parent.ops:
                if other is self:
                    break
                if isinstance(other, PoolOpBase) and other.pool_name == self.pool_name:
                    raise VerifyException(f"pool @{self.pool_name} is declared twice")


@irdl_op_definition
class WorkspacePoolOp(PoolOpBase):
    """A read/write memory pool for intermediate buffers (and I/O under U4)."""

    name = "pool.workspace"
    KIND: ClassVar[str] = "workspace"


@irdl_op_definition
class ConstantPoolOp(PoolOpBase):
    """A read-only memory pool for constants; after planning it holds their packed bytes."""

    name = "pool.constant"
    KIND: ClassVar[str] = "constant"

    # The packed bytes of every constant placed in the pool (written by
    # usmp-convert-to-pool-offsets), as a 1-D i8 dense attribute.
    data = opt_prop_def(DenseIntOrFPElementsAttr)

    def verify_(self) -> None:
        super().verify_()
        if self.data is not None:
            element_type = self.data.get_element_type()
            shape = self.data.get_shape()
            if element_type != IntegerType(8) or len(shape) != 1:
                raise VerifyException(
                    f"pool @{self.pool_name}: data must be a 1-D dense attribute of i8"
                )
            if self.size_bytes is not None and shape[0] != self.size_bytes.value.data:
                raise VerifyException(
                    f"pool @{self.pool_name}: data holds {shape[0]} bytes but size_bytes is "
                    f"{self.size_bytes.value.data}"
                )


def find_pool(op: Operation, pool: SymbolRefAttr | str) -> PoolOpBase | None:
    """The pool named `pool` in the module enclosing `op`, or None."""
    name = pool.root_reference.data if isinstance(pool, SymbolRefAttr) else pool
    module = op if isinstance(op, ModuleOp) else op.get_toplevel_object()
    if not isinstance(module, ModuleOp):
        return None
    for candidate in module.ops:
        if isinstance(candidate, PoolOpBase) and candidate.pool_name == name:
            return candidate
    return None


def module_pools(module: ModuleOp) -> Iterator[PoolOpBase]:
    """The pools of a module in declaration (preference) order."""
    return (op for op in module.ops if isinstance(op, PoolOpBase))


def verify_pool_reference(op: Operation, pool: SymbolRefAttr, what: str) -> PoolOpBase | None:
    """Checks that `pool` names a pool of the module enclosing `op` (detached ops pass)."""
    module = op.get_toplevel_object()
    if not isinstance(module, ModuleOp) or module is op:
        return None
    found = find_pool(module, pool)
    if found is None:
        name = pool.root_reference.data
        for other in module.ops:
            sym = other.properties.get("sym_name") or other.attributes.get("sym_name")
            if isinstance(sym, StringAttr) and sym.data == name:
                raise VerifyException(f"{what} @{name} is not a pool (it is a '{other.name}')")
        raise VerifyException(f"{what} @{name} does not name a pool")
    return found


class PoolSymbolUser(SymbolUserOpInterface):
    def verify(self, op: Operation) -> None:
        assert isinstance(op, BaseOp)
        verify_pool_reference(op, op.pool, "pool")


@irdl_op_definition
class BaseOp(IRDLOperation):
    """The whole memory of a pool as a 1-D i8 memref (its base pointer).

    The entry function gets its pools through this op; operator functions receive them as
    arguments. Buffers are `memref.view`s of the pool at their byte offsets.
    """

    name = "pool.base"

    pool = prop_def(SymbolRefAttr)
    memref = result_def(MemRefType)

    traits = traits_def(Pure(), PoolSymbolUser())
    assembly_format = "$pool attr-dict `:` type($memref)"

    def __init__(self, pool: str | SymbolRefAttr, size_bytes: int):
        if isinstance(pool, str):
            pool = SymbolRefAttr(pool)
        super().__init__(
            properties={"pool": pool},
            result_types=[MemRefType(IntegerType(8), [size_bytes])],
        )

    def verify_(self) -> None:
        memref_type = self.memref.type
        assert isinstance(memref_type, MemRefType)
        if (
            memref_type.element_type != IntegerType(8)
            or memref_type.get_num_dims() != 1
            or not isinstance(memref_type.layout, NoneAttr)
        ):
            raise VerifyException(
                f"pool.base of @{self.pool.root_reference.data} must return a 1-D memref of i8 "
                f"with identity layout, got {memref_type}"
            )


POOL = Dialect("pool", [WorkspacePoolOp, ConstantPoolOp, BaseOp], [])
