"""The `pool` dialect: named memory pools and the ops that reach their memory.

A pool is a module-level symbol. Workspace pools hold read/write data, constant pools hold
read-only data (weights), state pools hold data that keeps its value from one run to the next
(recurrent state, TFLite variable tensors). Pools are declared in preference order.

```mlir
pool.workspace @sram {size_hint_bytes = 65536 : i64, targets = ["c"]}
pool.workspace @dram {targets = ["c", "accel"], internal}
pool.workspace @dtcm {internal, section = ".dtcm"}
pool.constant @flash {targets = ["c"]}
pool.state @persistent {internal}
%base = pool.base @sram : memref<11424xi8>
```
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from typing import ClassVar, Generic, TypeVar
from weakref import WeakKeyDictionary

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
from xdsl.ir import Attribute, Block, Dialect, Operation
from xdsl.irdl import (
    AnyAttr,
    AttrConstraint,
    IntConstraint,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    irdl_to_attr_constraint,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.irdl.constraints import InferenceContext, VerificationContext
from xdsl.traits import Pure, SymbolOpInterface, SymbolUserOpInterface
from xdsl.utils.exceptions import VerifyException

DEFAULT_POOL_ALIGNMENT_BYTES = 16
DEFAULT_TARGETS = ("c",)
SECTION_NAME = re.compile(r"[A-Za-z0-9_.$]+")
"""What a `section` may be: a name the C attribute and a linker script both take as written."""

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

_AttributeCovT = TypeVar("_AttributeCovT", bound=Attribute, covariant=True)


@dataclass(frozen=True, init=False)
class Described(AttrConstraint[_AttributeCovT], Generic[_AttributeCovT]):
    """A constraint that fails with one clear line: `'name' must be EXPECTED, got ATTR`.

    xDSL's own constraint messages ("1 : i64 should be of base attribute string") do not say
    which attribute is wrong; this wrapper names it and shows the expected form.
    """

    constraint: AttrConstraint[_AttributeCovT]
    field_name: str
    expected: str

    def __init__(
        self,
        constraint: AttrConstraint[_AttributeCovT] | type[_AttributeCovT] | _AttributeCovT,
        field_name: str,
        expected: str,
    ):
        object.__setattr__(self, "constraint", irdl_to_attr_constraint(constraint))
        object.__setattr__(self, "field_name", field_name)
        object.__setattr__(self, "expected", expected)

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        try:
            self.constraint.verify(attr, constraint_context)
        except VerifyException:
            raise VerifyException(
                f"'{self.field_name}' must be {self.expected}, got {attr}"
            ) from None

    def variables(self) -> set[str]:
        return self.constraint.variables()

    def get_bases(self) -> set[type[Attribute]] | None:
        return self.constraint.get_bases()

    def can_infer(self, var_constraint_names: Set[str]) -> bool:
        return self.constraint.can_infer(var_constraint_names)

    def infer(self, context: InferenceContext) -> _AttributeCovT:
        return self.constraint.infer(context)

    def mapping_type_vars(
        self, type_var_mapping: Mapping[TypeVar, AttrConstraint | IntConstraint]
    ) -> Described[_AttributeCovT]:
        return Described(
            self.constraint.mapping_type_vars(type_var_mapping), self.field_name, self.expected
        )


def i64_constraint(field_name: str) -> Described[IntegerAttr[I64]]:
    """An `N : i64` property whose type error names the property."""
    return Described(IntegerAttr[I64], field_name, "an integer of type i64 (e.g. 64 : i64)")


def symbol_constraint(field_name: str) -> Described[SymbolRefAttr]:
    """A `@name` property whose type error names the property."""
    return Described(SymbolRefAttr, field_name, "a pool symbol (e.g. @sram)")


# ---------------------------------------------------------------------------------------------
# Symbol lookup
# ---------------------------------------------------------------------------------------------

# name -> first op defining it, per module body. Entries are checked on every hit and the
# index is rebuilt on a miss, so it never returns a stale op; verifying N references to pools
# in a module of M top-level ops costs O(N + M), not O(N * M).
_MODULE_SYMBOLS: WeakKeyDictionary[Block, dict[str, Operation]] = WeakKeyDictionary()


def symbol_name(op: Operation) -> str | None:
    """The `sym_name` an op defines, or None."""
    sym = op.get_attr_or_prop("sym_name")
    return sym.data if isinstance(sym, StringAttr) else None


def enclosing_module(op: Operation) -> ModuleOp | None:
    """The nearest `builtin.module` strictly above `op`, or None for a detached op."""
    current = op.parent_op()
    while current is not None and not isinstance(current, ModuleOp):
        current = current.parent_op()
    return current


def lookup_module_symbol(module: ModuleOp, name: str) -> Operation | None:
    """The first top-level op of `module` whose `sym_name` is `name`, or None."""
    block = module.body.block
    index = _MODULE_SYMBOLS.get(block)
    if index is not None:
        found = index.get(name)
        if found is not None and found.parent is block and symbol_name(found) == name:
            return found
    index = {}
    for op in block.ops:
        if (sym := symbol_name(op)) is not None:
            index.setdefault(sym, op)
    _MODULE_SYMBOLS[block] = index
    return index.get(name)


def _reference_name(pool: SymbolRefAttr | str) -> str:
    return pool.root_reference.data if isinstance(pool, SymbolRefAttr) else pool


def find_pool(op: Operation, pool: SymbolRefAttr | str) -> PoolOpBase | None:
    """The pool named `pool` in `op` (a module) or in the module enclosing `op`, or None."""
    module = op if isinstance(op, ModuleOp) else enclosing_module(op)
    if module is None:
        return None
    found = lookup_module_symbol(module, _reference_name(pool))
    return found if isinstance(found, PoolOpBase) else None


def module_pools(module: ModuleOp) -> Iterator[PoolOpBase]:
    """The pools of a module in declaration (preference) order."""
    return (op for op in module.ops if isinstance(op, PoolOpBase))


def verify_pool_reference(
    op: Operation, pool: SymbolRefAttr, what: str, kind: str | None = None
) -> PoolOpBase | None:
    """Checks that `pool` names a pool (of `kind`, when given) of the module enclosing `op`.

    Returns the pool, or None for a detached op (nothing to check it against).
    """
    name = pool.root_reference.data
    if pool.nested_references.data:
        raise VerifyException(f"{what} {pool} must be a flat symbol reference like @{name}")
    module = enclosing_module(op)
    if module is None:
        return None
    found = lookup_module_symbol(module, name)
    if found is None:
        raise VerifyException(f"{what} @{name} does not name a pool")
    if not isinstance(found, PoolOpBase):
        raise VerifyException(f"{what} @{name} is not a pool (it is a '{found.name}')")
    if kind is not None and kind != found.KIND:
        raise VerifyException(
            f"{what} @{name} is a {found.KIND} pool, but '{op.name}' needs a {kind} pool"
        )
    return found


# ---------------------------------------------------------------------------------------------
# Pools
# ---------------------------------------------------------------------------------------------


class PoolOpBase(IRDLOperation):
    """Shared definition of `pool.workspace`, `pool.constant` and `pool.state`."""

    sym_name = prop_def(SymbolNameConstraint())
    targets = opt_prop_def(
        Described(ArrayAttr[StringAttr], "targets", 'an array of target names (e.g. ["c"])')
    )
    size_hint_bytes = opt_prop_def(i64_constraint("size_hint_bytes"))
    alignment = opt_prop_def(i64_constraint("alignment"))
    internal = opt_prop_def(Described(UnitAttr, "internal", "a unit attribute (just `internal`)"))
    # The linker section the generated C places an internal pool in (SPEC §11).
    section = opt_prop_def(Described(StringAttr, "section", 'a string (e.g. ".dtcm")'))
    size_bytes = opt_prop_def(i64_constraint("size_bytes"))
    clock_frequency_hz = opt_prop_def(i64_constraint("clock_frequency_hz"))
    read_bandwidth_bytes_per_cycle = opt_prop_def(i64_constraint("read_bandwidth_bytes_per_cycle"))
    write_bandwidth_bytes_per_cycle = opt_prop_def(
        i64_constraint("write_bandwidth_bytes_per_cycle")
    )
    read_latency_cycles = opt_prop_def(i64_constraint("read_latency_cycles"))
    write_latency_cycles = opt_prop_def(i64_constraint("write_latency_cycles"))
    # target name -> burst size in bytes, e.g. {c = 8 : i64}
    target_burst_bytes = opt_prop_def(
        Described(DictionaryAttr, "target_burst_bytes", "a dictionary like {c = 8 : i64}")
    )

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict"

    KIND: ClassVar[str] = ""

    def __init__(
        self,
        name: str,
        *,
        targets: tuple[str, ...] | None = None,
        size_hint_bytes: int | None = None,
        alignment: int | None = None,
        internal: bool = False,
        section: str | None = None,
        size_bytes: int | None = None,
        target_burst_bytes: Mapping[str, int] | None = None,
        **performance: int,
    ):
        """Builds a pool; `performance` takes the integer properties such as
        `clock_frequency_hz=...` by name."""
        properties: dict[str, Attribute | None] = {
            "sym_name": StringAttr(name),
            "targets": None if targets is None else ArrayAttr([StringAttr(t) for t in targets]),
            "internal": UnitAttr() if internal else None,
            "section": None if section is None else StringAttr(section),
            "target_burst_bytes": None
            if target_burst_bytes is None
            else DictionaryAttr({t: IntegerAttr(b, 64) for t, b in target_burst_bytes.items()}),
        }
        integers = {
            "size_hint_bytes": size_hint_bytes,
            "alignment": alignment,
            "size_bytes": size_bytes,
        } | performance
        for prop, value in integers.items():
            if prop not in POOL_INTEGER_PROPERTIES:
                raise TypeError(f"unknown pool property '{prop}'")
            properties[prop] = None if value is None else IntegerAttr(value, 64)
        super().__init__(properties=properties)

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

    @property
    def section_name(self) -> str | None:
        """The linker section of the pool's C array (None: the compiler's default)."""
        return None if self.section is None else self.section.data

    def verify_(self) -> None:
        where = f"pool @{self.pool_name}"
        parent = self.parent_op()
        if parent is not None and not isinstance(parent, ModuleOp):
            raise VerifyException(
                f"{where} must be declared at module level, not inside '{parent.name}'"
            )
        for prop, minimum in POOL_INTEGER_PROPERTIES.items():
            attr = self.properties.get(prop)
            if isinstance(attr, IntegerAttr) and attr.value.data < minimum:
                raise VerifyException(
                    f"{where}: {prop} must be >= {minimum}, got {attr.value.data}"
                )
        alignment = self.alignment_bytes
        if alignment & (alignment - 1):
            raise VerifyException(f"{where}: alignment {alignment} is not a power of two")
        section = self.section_name
        if section is not None and not SECTION_NAME.fullmatch(section):
            raise VerifyException(
                f"{where}: section {section!r} is not a linker section name (letters, digits, "
                "'_', '.', '$', not empty)"
            )
        if section is not None and not self.is_internal:
            raise VerifyException(
                f"{where}: section needs an internal pool (the application defines an external "
                "pool's memory and places it itself)"
            )
        targets = self.target_names
        if not targets:
            raise VerifyException(f"{where}: targets must not be empty")
        for position, target in enumerate(targets):
            if not target:
                raise VerifyException(f"{where}: a target name must not be empty")
            if target in targets[:position]:
                raise VerifyException(f"{where}: target '{target}' is listed twice")
        if self.target_burst_bytes is not None:
            for target, value in sorted(self.target_burst_bytes.data.items()):
                if target not in targets:
                    raise VerifyException(
                        f"{where}: target_burst_bytes names '{target}', which is not one of "
                        f"its targets {ArrayAttr([StringAttr(t) for t in targets])}"
                    )
                if not isinstance(value, IntegerAttr) or value.value.data < 1:
                    raise VerifyException(
                        f"{where}: target_burst_bytes for '{target}' must be a positive "
                        f"integer, got {value}"
                    )
        capacity = self.capacity_bytes
        if (
            self.size_bytes is not None
            and capacity is not None
            and self.size_bytes.value.data > capacity
        ):
            raise VerifyException(
                f"{where}: size_bytes {self.size_bytes.value.data} exceeds "
                f"size_hint_bytes {capacity}"
            )
        if isinstance(parent, ModuleOp):
            first = lookup_module_symbol(parent, self.pool_name)
            if first is not None and first is not self:
                if isinstance(first, PoolOpBase):
                    raise VerifyException(f"{where} is declared twice")
                raise VerifyException(
                    f"{where}: symbol @{self.pool_name} is already a '{first.name}'"
                )


@irdl_op_definition
class WorkspacePoolOp(PoolOpBase):
    """A read/write memory pool for intermediate buffers (and I/O under U4)."""

    name = "pool.workspace"
    KIND: ClassVar[str] = "workspace"


def _data_property() -> Described[DenseIntOrFPElementsAttr]:
    return Described(
        DenseIntOrFPElementsAttr, "data", 'a dense literal (e.g. dense<"0x01"> : tensor<1xi8>)'
    )


def _verify_pool_data(pool: PoolOpBase, data: DenseIntOrFPElementsAttr | None) -> None:
    """`data`, when present, is 1-D i8 and holds exactly the pool's `size_bytes` bytes."""
    if data is None:
        return
    element_type = data.get_element_type()
    shape = data.get_shape()
    if element_type != IntegerType(8) or len(shape) != 1:
        raise VerifyException(
            f"pool @{pool.pool_name}: data must be a 1-D dense attribute of i8, got {data.type}"
        )
    if len(data) != shape[0]:
        raise VerifyException(
            f"pool @{pool.pool_name}: data holds {len(data)} bytes but its type "
            f"{data.type} says {shape[0]}"
        )
    if pool.size_bytes is not None and shape[0] != pool.size_bytes.value.data:
        raise VerifyException(
            f"pool @{pool.pool_name}: data holds {shape[0]} bytes but size_bytes is "
            f"{pool.size_bytes.value.data}"
        )


@irdl_op_definition
class ConstantPoolOp(PoolOpBase):
    """A read-only memory pool for constants; after planning it holds their packed bytes."""

    name = "pool.constant"
    KIND: ClassVar[str] = "constant"

    # The packed bytes of every constant placed in the pool (written by
    # usmp-convert-to-pool-offsets), as a 1-D i8 dense attribute typed tensor<Nxi8>.
    data = opt_prop_def(_data_property())

    def verify_(self) -> None:
        super().verify_()
        _verify_pool_data(self, self.data)


@irdl_op_definition
class StatePoolOp(PoolOpBase):
    """A read/write memory pool whose contents persist from one run to the next (SPEC §13).

    It holds the buffers of `usmp.allocate_state` only, never shared with anything else (every
    state buffer is live for the whole program, and across runs). After
    usmp-convert-to-pool-offsets, `data` holds the pool's initial bytes (each state buffer's
    initial value at its offset): what `<p>_reset_state()` restores.
    """

    name = "pool.state"
    KIND: ClassVar[str] = "state"

    data = opt_prop_def(_data_property())

    def verify_(self) -> None:
        super().verify_()
        _verify_pool_data(self, self.data)


# ---------------------------------------------------------------------------------------------
# Reaching pool memory
# ---------------------------------------------------------------------------------------------


class PoolSymbolUser(SymbolUserOpInterface):
    """Verifies that `pool.base` names a pool, and that the memref covers its planned size."""

    def verify(self, op: Operation) -> None:
        if not isinstance(op, BaseOp):
            return
        pool = verify_pool_reference(op, op.pool, "pool")
        memref_type = op.memref.type
        if (
            pool is not None
            and pool.size_bytes is not None
            and isinstance(memref_type, MemRefType)
            and memref_type.get_shape()
            and memref_type.get_shape()[0] != pool.size_bytes.value.data
        ):
            raise VerifyException(
                f"pool.base of @{pool.pool_name} returns {memref_type}, but the pool's "
                f"size_bytes is {pool.size_bytes.value.data}"
            )


@irdl_op_definition
class BaseOp(IRDLOperation):
    """The whole memory of a pool as a 1-D i8 memref (its base pointer).

    The entry function gets its pools through this op; operator functions receive them as
    arguments. Buffers are `memref.view`s of the pool at their byte offsets.
    """

    name = "pool.base"

    pool = prop_def(symbol_constraint("pool"))
    # Any type parses; verify_ says clearly what is expected.
    memref = result_def(AnyAttr())

    traits = traits_def(Pure(), PoolSymbolUser())
    assembly_format = "$pool attr-dict `:` type($memref)"

    def __init__(self, pool: str | SymbolRefAttr, size_bytes: int):
        if isinstance(pool, str):
            pool = SymbolRefAttr(pool)
        super().__init__(
            properties={"pool": pool},
            result_types=[MemRefType(IntegerType(8), [size_bytes])],
        )

    @property
    def pool_name(self) -> str:
        return self.pool.root_reference.data

    def verify_(self) -> None:
        memref_type = self.memref.type
        if (
            not isinstance(memref_type, MemRefType)
            or memref_type.element_type != IntegerType(8)
            or memref_type.get_num_dims() != 1
            or memref_type.get_shape()[0] < 0
            or not isinstance(memref_type.layout, NoneAttr)
        ):
            raise VerifyException(
                f"pool.base of @{self.pool_name} must return a statically sized 1-D memref of "
                f"i8 with identity layout (e.g. memref<1024xi8>), got {memref_type}"
            )


POOL = Dialect("pool", [WorkspacePoolOp, ConstantPoolOp, StatePoolOp, BaseOp], [])
