"""A linear-time symbol lookup for `usmp-opt`.

xDSL 0.74's `SymbolTable.lookup_symbol` scans the symbol table's ops on every call, so
verifying a module with N `func.call`s against N functions is quadratic (75 s for 5,000 calls;
the driver verifies before and after the passes). `indexed_symbol_lookup()` replaces it, for
the driver's process, by a per-table name index. A hit is re-checked (still in the table,
same name) and a miss rebuilds the index, so IR changes between lookups never give a stale
answer; results equal xDSL's for tables without duplicate names.
"""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.ir import Block, Operation
from xdsl.traits import SymbolOpInterface, SymbolTable

_original_lookup = SymbolTable.lookup_symbol
# id(symbol table op) -> (the op, its block, name -> first op defining it)
_indexes: dict[int, tuple[Operation, Block, dict[str, Operation]]] = {}


def _symbol_name(op: Operation) -> str | None:
    if op.get_trait(SymbolOpInterface) is None:
        return None
    sym_name = op.get_attr_or_prop("sym_name")
    return sym_name.data if isinstance(sym_name, StringAttr) else None


def _index(table: Operation) -> dict[str, Operation]:
    block = table.regions[0].block
    names: dict[str, Operation] = {}
    for op in block.ops:
        name = _symbol_name(op)
        if name is not None:
            names.setdefault(name, op)
    _indexes[id(table)] = (table, block, names)
    return names


def _lookup(op: Operation, name: str | StringAttr | SymbolRefAttr) -> Operation | None:
    if isinstance(name, SymbolRefAttr) and name.nested_references.data:
        return _original_lookup(op, name)
    root = (
        name
        if isinstance(name, str)
        else (name.data if isinstance(name, StringAttr) else name.root_reference.data)
    )
    table: Operation | None = op
    while table is not None and not table.has_trait(SymbolTable):
        table = table.parent_op()
    if table is None or len(table.regions) != 1 or len(table.regions[0].blocks) != 1:
        return _original_lookup(op, name)
    entry = _indexes.get(id(table))
    if entry is not None and entry[0] is table and entry[1] is table.regions[0].block:
        found = entry[2].get(root)
        if found is not None and found.parent is entry[1] and _symbol_name(found) == root:
            return found
    return _index(table).get(root)


def indexed_symbol_lookup() -> None:
    """Makes `SymbolTable.lookup_symbol` use the per-table index (idempotent)."""
    SymbolTable.lookup_symbol = staticmethod(_lookup)  # type: ignore[method-assign]


def stock_symbol_lookup() -> None:
    """Restores xDSL's own `SymbolTable.lookup_symbol` (for side-by-side measurements)."""
    SymbolTable.lookup_symbol = staticmethod(_original_lookup)  # type: ignore[method-assign]
    _indexes.clear()
