"""`convert-pool-to-memref`: the planned program in upstream dialects only (SPEC §10).

After `usmp` (or `usmp-convert-to-pool-offsets`) the program reaches its pools through
`pool.base` in the entry function and pool arguments in the functions it calls. This pass
leaves a module that LLVM's `mlir-opt` accepts and lowers:

* an internal workspace pool becomes `memref.global "private" @<pool> : memref<Nxi8> =
  uninitialized {alignment = A}` (A = the pool's alignment), an internal constant pool
  `memref.global "private" constant @<pool> : memref<Nxi8> = dense<bytes> {alignment = A}`,
  an internal state pool the mutable `memref.global "private" @<pool> : memref<Nxi8> =
  dense<initial bytes>` (its value before the first run; upstream has no reset);
  the entry function reads them with `memref.get_global`;
* every external pool becomes a trailing `memref<Nxi8>` argument of the entry function, in pool
  declaration order, named after the pool (also a pool the entry does not use: the signature
  follows the declarations); an external constant pool's bytes, which the application must put
  into it, are the public `memref.global constant @<pool>_data` (what the C backend's
  `<P>_<POOL>_CONSTANT_POOL_DATA` is in C); an external state pool's initial bytes likewise
  (`@<pool>_data`, constant);
* buffers stay `memref.view`s of the pool memory at their planned offsets;
* every `pool.`/`usmp.` op is gone and every `pool.`/`usmp.` attribute is dropped (on ops,
  function arguments and results, and the module), including U4's `usmp.io_allocations`.

An internal pool that nothing reads (no buffer in it) gets no global; a pool without a size
(nothing was planned) has 0 bytes. A program with unplanned allocations is an error (run `usmp`
first).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    i8,
)
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException

from usmp_dialect.analysis.buffer_info import missing_entry_message, module_functions
from usmp_dialect.dialects.pool import (
    BaseOp,
    ConstantPoolOp,
    PoolOpBase,
    StatePoolOp,
    module_pools,
)
from usmp_dialect.dialects.upstream import global_op
from usmp_dialect.dialects.usmp import AllocationOp
from usmp_dialect.passes.convert_to_pool_offsets import pool_type

_DIALECT_PREFIXES = ("usmp.", "pool.")
DATA_SUFFIX = "_data"
"""`@<pool>_data`: the contents of an external constant pool."""


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, PassFailedException(message))


def _ours(name: str) -> bool:
    return name.startswith(_DIALECT_PREFIXES)


def _pool_global(pool: PoolOpBase, memref_type: MemRefType) -> memref.GlobalOp:
    data: DenseIntOrFPElementsAttr | None = None
    if isinstance(pool, ConstantPoolOp | StatePoolOp):
        stored = pool.properties.get("data")
        if isinstance(stored, DenseIntOrFPElementsAttr):
            data = stored
        else:  # a pool without data holds no constant (no state): all zeros
            data = DenseIntOrFPElementsAttr.from_list(
                _tensor_of(memref_type), [0] * memref_type.get_shape()[0]
            )
    return global_op(
        pool.pool_name,
        memref_type,
        data,
        constant=isinstance(pool, ConstantPoolOp),
        alignment=pool.alignment_bytes,
    )


def _tensor_of(memref_type: MemRefType) -> TensorType:
    return TensorType(memref_type.element_type, memref_type.get_shape())


def _without_ours(attrs: DictionaryAttr) -> DictionaryAttr:
    return DictionaryAttr({k: v for k, v in attrs.data.items() if not _ours(k)})


def _strip_function_attrs(function: func.FuncOp) -> None:
    for key in ("arg_attrs", "res_attrs"):
        attrs = function.properties.get(key)
        if not isinstance(attrs, ArrayAttr):
            continue
        cleaned = [_without_ours(a) if isinstance(a, DictionaryAttr) else a for a in attrs.data]
        if all(isinstance(a, DictionaryAttr) and not a.data for a in cleaned):
            del function.properties[key]
        else:
            function.properties[key] = ArrayAttr(cleaned)


def _strip_attributes(module: ModuleOp) -> None:
    for op in module.walk():
        for name in [n for n in op.attributes if _ours(n)]:
            del op.attributes[name]
        if isinstance(op, func.FuncOp):
            _strip_function_attrs(op)


@dataclass(frozen=True)
class ConvertPoolToMemrefPass(ModulePass):
    """Turns pools into `memref.global`s and entry arguments, leaving only upstream MLIR."""

    name = "convert-pool-to-memref"

    entry: str = "main"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, AllocationOp):
                _fail(
                    inner,
                    f"{inner.name} is not converted to a pool offset: run usmp (or usmp-plan "
                    "and usmp-convert-to-pool-offsets) before convert-pool-to-memref",
                )
        pools = list(module_pools(op))
        functions = module_functions(op)
        entry = functions.get(self.entry)
        bases = [b for b in op.walk() if isinstance(b, BaseOp)]
        if entry is None or entry.is_declaration:
            if bases or pools:
                _fail(op, missing_entry_message(self.entry, functions))
            return

        by_pool: dict[str, list[BaseOp]] = {}
        for base in bases:
            if base.parent_op() is not entry:
                _fail(base, f"pool.base outside the entry function @{self.entry}")
            by_pool.setdefault(base.pool_name, []).append(base)
        block = entry.body.block
        new_arguments = 0
        for pool in pools:
            uses = by_pool.get(pool.pool_name, [])
            # A pool without a size has nothing planned in it (usmp leaves the sizes of a
            # program without buffers alone): 0 bytes.
            memref_type = pool_type(pool) if pool.size_bytes is not None else MemRefType(i8, [0])
            if pool.is_internal:
                if uses:  # an internal pool that nothing reads gets no global
                    Rewriter.insert_op(_pool_global(pool, memref_type), InsertPoint.before(pool))
                for base in uses:
                    read = memref.GetGlobalOp(pool.pool_name, memref_type)
                    read.memref.name_hint = pool.pool_name
                    Rewriter.replace_op(base, read)
            else:
                if isinstance(pool, ConstantPoolOp | StatePoolOp):
                    self._add_data_global(op, pool, memref_type)
                argument = block.insert_arg(memref_type, len(block.args))
                argument.name_hint = pool.pool_name
                new_arguments += 1
                for base in uses:
                    base.memref.replace_all_uses_with(argument)
                    Rewriter.erase_op(base)
            Rewriter.erase_op(pool)
        if new_arguments:
            attrs = entry.arg_attrs
            if attrs is not None:
                entry.properties["arg_attrs"] = ArrayAttr(
                    [*attrs.data, *[DictionaryAttr({})] * new_arguments]
                )
            entry.update_function_type()
        for inner in op.walk():
            if isinstance(inner, BaseOp) or _ours(inner.name):
                _fail(inner, f"{inner.name} has no upstream equivalent here")
        _strip_attributes(op)

    @staticmethod
    def _add_data_global(module: ModuleOp, pool: PoolOpBase, memref_type: MemRefType) -> None:
        """The bytes an external constant pool must hold, for the application to copy in (the
        counterpart of the C backend's `<P>_<POOL>_CONSTANT_POOL_DATA`)."""
        name = f"{pool.pool_name}{DATA_SUFFIX}"
        if SymbolTable.lookup_symbol(module, name) is not None:
            _fail(pool, f"cannot add @{name} for the data of pool @{pool.pool_name}: taken")
        data = _pool_global(pool, memref_type)
        data.properties["constant"] = UnitAttr()
        data.properties["sym_name"] = StringAttr(name)
        data.properties["sym_visibility"] = StringAttr("public")
        Rewriter.insert_op(data, InsertPoint.before(pool))
