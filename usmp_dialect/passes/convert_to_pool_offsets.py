"""`usmp-convert-to-pool-offsets`: every planned allocation becomes a view into its pool.

The planned program (docs/DESIGN.md):

* The entry function (`entry=main`) gets `%sram = pool.base @sram : memref<SIZExi8>` at the
  start of its body for each pool it uses itself or through its callees; its signature does not
  change.
* Every other function that (transitively) uses a pool receives it as a trailing argument
  `memref<SIZExi8> {pool.pool = @sram}`, in pool declaration order; call sites pass them.
  Functions that use no pool keep their signature.
* A planned allocation becomes `%off = arith.constant OFFSET : index` and
  `%a = memref.view %pool[%off][] : memref<SIZExi8> to memref<...> {usmp.buffer = "a"}`.
* A constant pool gets `data`: its `size_bytes` bytes with each constant's little-endian
  element bytes at its offset (`i1` as 0 or 1), zero elsewhere; a state pool likewise gets
  the initial values of its state buffers (what the C backend's `<p>_reset_state()` restores).
* Under U4 the module gets `usmp.io_allocations`: per I/O buffer in entry-argument order,
  `{name, kind, pool, offset, type}` (plus `tensor` and `quantization` when the allocation
  carries `usmp.tensor` / `usmp.quantization`); `name` is the entry argument's name (the
  allocation's SSA name), even where the buffer's unique name needed a suffix.

Allocations without a plan are left alone; nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    BytesAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    i8,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from usmp_dialect.analysis.buffer_info import (
    buffer_names,
    function_of,
    missing_entry_message,
    module_functions,
)
from usmp_dialect.dialects.pool import (
    BaseOp,
    ConstantPoolOp,
    PoolOpBase,
    StatePoolOp,
    module_pools,
)
from usmp_dialect.dialects.usmp import (
    QUANTIZATION_ATTRIBUTE,
    TENSOR_ATTRIBUTE,
    AllocationOp,
    InitializedAllocationOp,
    io_kind,
)

POOL_ARGUMENT_ATTRIBUTE = "pool.pool"
BUFFER_NAME_ATTRIBUTE = "usmp.buffer"
IO_ALLOCATIONS_ATTRIBUTE = "usmp.io_allocations"


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, PassFailedException(message))


def pool_type(pool: PoolOpBase) -> MemRefType:
    assert pool.size_bytes is not None
    return MemRefType(i8, [pool.size_bytes.value.data])


def constant_bytes(op: InitializedAllocationOp) -> bytes:
    """The little-endian bytes of a constant buffer (a state buffer's initial value), as they
    sit in the pool."""
    data = op.value.data.data
    element_type = op.buffer_type.element_type
    if isinstance(element_type, IntegerType) and element_type.width.data == 1:
        data = bytes(1 if byte else 0 for byte in data)
    size = op.size_bytes
    if len(data) != size and data and size % len(data) == 0:
        data = data * (size // len(data))  # a splat stored once
    return data


def function_calls(functions: dict[str, func.FuncOp]) -> dict[str, list[func.CallOp]]:
    """Per function, its `func.call` ops in walk order."""
    return {
        name: [op for op in function.walk() if isinstance(op, func.CallOp)]
        for name, function in functions.items()
    }


def transitive_pool_uses(
    functions: dict[str, func.FuncOp],
    direct: dict[str, set[str]],
    calls: dict[str, list[func.CallOp]] | None = None,
) -> dict[str, set[str]]:
    """Per function, the pools it uses itself or through its callees (a fixpoint over calls).
    `calls` (from `function_calls`) saves walking the functions again."""
    if calls is None:
        calls = function_calls(functions)
    callees = {
        name: sorted(
            {
                op.callee.root_reference.data
                for op in calls[name]
                if op.callee.root_reference.data in functions
            }
        )
        for name in functions
    }
    uses = {name: set(direct.get(name, ())) for name in functions}
    # Callees first (iterative post-order DFS), so one sweep settles a call DAG; the loop only
    # repeats for call cycles, which planning rejects anyway.
    order: list[str] = []
    visited: set[str] = set()
    for root in functions:
        if root in visited:
            continue
        visited.add(root)
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            name, position = stack.pop()
            if position < len(callees[name]):
                stack.append((name, position + 1))
                callee = callees[name][position]
                if callee not in visited:
                    visited.add(callee)
                    stack.append((callee, 0))
            else:
                order.append(name)
    changed = True
    while changed:
        changed = False
        for name in order:
            for callee in callees[name]:
                missing = uses[callee] - uses[name]
                if missing:
                    uses[name] |= missing
                    changed = True
    return uses


def add_pool_arguments(
    function: func.FuncOp,
    pools: list[PoolOpBase],
    types: dict[str, MemRefType] | None = None,
) -> list[SSAValue]:
    """Appends one argument per pool to a function with a body; returns them. `types` caches
    the pool memref types by pool name (built with `pool_type` when missing)."""
    block = function.body.block
    old_count = len(block.args)
    arguments: list[SSAValue] = []
    for pool in pools:
        argument_type = _cached_pool_type(pool, types)
        argument = block.insert_arg(argument_type, len(block.args))
        argument.name_hint = pool.pool_name
        arguments.append(argument)
    old_attrs: list[Attribute] = (
        list(function.arg_attrs.data)
        if function.arg_attrs is not None
        else [_EMPTY_DICTIONARY] * old_count
    )
    new_attrs = [_pool_argument_attrs(pool.pool_name) for pool in pools]
    function.properties["arg_attrs"] = ArrayAttr([*old_attrs, *new_attrs])
    function.update_function_type()
    return arguments


_EMPTY_DICTIONARY = DictionaryAttr({})


@cache
def _pool_argument_attrs(pool_name: str) -> DictionaryAttr:
    return DictionaryAttr({POOL_ARGUMENT_ATTRIBUTE: SymbolRefAttr(pool_name)})


def _cached_pool_type(pool: PoolOpBase, types: dict[str, MemRefType] | None) -> MemRefType:
    if types is None:
        return pool_type(pool)
    result = types.get(pool.pool_name)
    if result is None:
        result = types[pool.pool_name] = pool_type(pool)
    return result


def add_pool_bases(function: func.FuncOp, pools: list[PoolOpBase]) -> list[SSAValue]:
    """Puts one `pool.base` per pool at the start of the entry function's body."""
    block = function.body.block
    bases: list[SSAValue] = []
    for pool in pools:
        base = BaseOp(pool.pool_name, pool_type(pool).get_shape()[0])
        base.memref.name_hint = pool.pool_name
        _insert_at_start(block, base, bases)
        bases.append(base.memref)
    return bases


def _insert_at_start(block: Block, op: Operation, before: list[SSAValue]) -> None:
    if before:
        previous = before[-1].owner
        assert isinstance(previous, Operation)
        Rewriter.insert_op(op, InsertPoint.after(previous))
    else:
        Rewriter.insert_op(op, InsertPoint.at_start(block))


def io_allocations(
    planned: list[AllocationOp], names: dict[AllocationOp, str]
) -> ArrayAttr[DictionaryAttr] | None:
    """The `usmp.io_allocations` entries of the U4 I/O buffers, in argument order."""
    entries: list[tuple[int, int, DictionaryAttr]] = []
    for position, op in enumerate(planned):
        kind = io_kind(op.attributes.get("usmp.io"))
        if kind is None or op.pool is None or op.offset is None:
            continue
        index_attr = op.attributes.get("usmp.io_index")
        index = index_attr.value.data if isinstance(index_attr, IntegerAttr) else position
        fields: dict[str, Attribute] = {
            "name": StringAttr(op.memref.name_hint or names[op]),
            "kind": StringAttr(kind),
            "pool": op.pool,
            "offset": IntegerAttr(op.offset.value.data, 64),
            "type": op.buffer_type,
        }
        carried = {"tensor": TENSOR_ATTRIBUTE, "quantization": QUANTIZATION_ATTRIBUTE}
        for key, attribute in carried.items():
            if attribute in op.attributes:
                fields[key] = op.attributes[attribute]
        entry = DictionaryAttr(fields)
        entries.append((index, position, entry))
    if not entries:
        return None
    return ArrayAttr([entry for _index, _position, entry in sorted(entries, key=lambda e: e[:2])])


@dataclass(frozen=True)
class UsmpConvertToPoolOffsetsPass(ModulePass):
    """Rewrites planned allocations into views of pool memory passed down the call graph."""

    name = "usmp-convert-to-pool-offsets"

    entry: str = "main"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pools = list(module_pools(op))
        pools_by_name = {pool.pool_name: pool for pool in pools}
        names = buffer_names(op)
        planned = [a for a in op.walk() if isinstance(a, AllocationOp) and a.is_planned]
        if not planned:
            return
        functions = module_functions(op)
        direct: dict[str, set[str]] = {}
        planned_functions: list[func.FuncOp] = []
        for allocation in planned:
            assert allocation.pool is not None
            pool = pools_by_name.get(allocation.pool.root_reference.data)
            if pool is None:
                _fail(allocation, f"pool @{allocation.pool.root_reference.data} is not declared")
            if pool.size_bytes is None:
                _fail(pool, f"pool @{pool.pool_name} has no size_bytes (run usmp-plan first)")
            if type(pool).KIND != allocation.POOL_KIND:
                what = {"constant": "constant", "state": "state"}.get(
                    allocation.POOL_KIND, "read/write"
                )
                _fail(
                    allocation,
                    f"{what} buffer '{names[allocation]}' is planned in the {pool.KIND} pool "
                    f"@{pool.pool_name}",
                )
            function = function_of(allocation)
            if function is None:
                _fail(allocation, f"buffer '{names[allocation]}' is not inside a func.func")
            planned_functions.append(function)
            direct.setdefault(function.sym_name.data, set()).add(pool.pool_name)
        if self.entry not in functions:
            _fail(op, missing_entry_message(self.entry, functions))

        io_attr = io_allocations(planned, names)
        self._write_constant_data(pools, planned)

        calls = function_calls(functions)
        uses = transitive_pool_uses(functions, direct, calls)
        types: dict[str, MemRefType] = {}
        pool_values: dict[str, dict[str, SSAValue]] = {}
        for name, function in functions.items():
            used = [pool for pool in pools if pool.pool_name in uses[name]]
            if not used or function.is_declaration:
                continue
            if name == self.entry:
                values = add_pool_bases(function, used)
            else:
                values = add_pool_arguments(function, used, types)
            pool_values[name] = {
                pool.pool_name: value for pool, value in zip(used, values, strict=True)
            }

        callee_pool_names: dict[str, list[str]] = {}
        for name, function_call_ops in calls.items():
            for call in function_call_ops:
                callee = call.callee.root_reference.data
                if callee not in pool_values or callee == self.entry:
                    continue
                callee_pools = callee_pool_names.get(callee)
                if callee_pools is None:
                    callee_pools = [p.pool_name for p in pools if p.pool_name in uses[callee]]
                    callee_pool_names[callee] = callee_pools
                extra = [pool_values[name][pool_name] for pool_name in callee_pools]
                call.operands = (*call.operands, *extra)

        # Built with `create` (no constructor checks; the module is verified after the pass)
        # and with one offset attribute per distinct offset.
        index = IndexType()
        offset_attrs: dict[int, IntegerAttr[IndexType]] = {}
        for allocation, function in zip(planned, planned_functions, strict=True):
            assert allocation.pool is not None and allocation.offset is not None
            base = pool_values[function.sym_name.data][allocation.pool.root_reference.data]
            offset_value = allocation.offset.value.data
            offset_attr = offset_attrs.get(offset_value)
            if offset_attr is None:
                offset_attr = offset_attrs[offset_value] = IntegerAttr(offset_value, index)
            offset = arith.ConstantOp.create(
                result_types=[index], properties={"value": offset_attr}
            )
            offset.result.name_hint = f"{names[allocation]}_offset"
            view = memref.ViewOp.create(
                operands=[base, offset.result],
                result_types=[allocation.buffer_type],
                attributes={BUFFER_NAME_ATTRIBUTE: StringAttr(names[allocation])},
            )
            Rewriter.replace_op(allocation, [offset, view])

        if io_attr is not None:
            op.attributes[IO_ALLOCATIONS_ATTRIBUTE] = io_attr

    @staticmethod
    def _write_constant_data(pools: list[PoolOpBase], planned: list[AllocationOp]) -> None:
        """Constant pools get their bytes, state pools their initial bytes (`data`)."""
        for pool in pools:
            if not isinstance(pool, ConstantPoolOp | StatePoolOp) or pool.size_bytes is None:
                continue
            size = pool.size_bytes.value.data
            data = bytearray(size)
            for allocation in planned:
                if (
                    isinstance(allocation, InitializedAllocationOp)
                    and allocation.POOL_KIND == pool.KIND
                    and allocation.pool is not None
                    and allocation.offset is not None
                    and allocation.pool.root_reference.data == pool.pool_name
                ):
                    start = allocation.offset.value.data
                    chunk = constant_bytes(allocation)
                    data[start : start + len(chunk)] = chunk
            if size:
                pool.properties["data"] = DenseIntOrFPElementsAttr(
                    TensorType(i8, [size]), BytesAttr(bytes(data))
                )
