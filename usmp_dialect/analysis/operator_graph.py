"""The entry function as a graph of operators and buffers (`usmp_dialect.graph.graph.Graph`).

Reads the IR both frontends produce (SPEC §9: `@main` allocating buffers, taking views of them
and calling one operator function per model operator) and returns plain data; it never rewrites
the IR. Works before and after `usmp-import-memref` (`memref.alloc`/`get_global` or
`usmp.allocate`/`allocate_const`).

* **Buffers**: the entry's memref arguments (the caller's: `planned=False`, input or output as
  `usmp.io` says), its allocations (`usmp.io` allocations of U4 are inputs and outputs) and the
  constants and globals it reads. Every alias of a buffer (the `ALIAS_OPS` of the buffer
  analysis) is an access to a byte range of it: a `memref.view` at a constant byte shift to
  its bytes (a Concat's slices), other views to their source's bytes.
* **Operators**: every op of the entry block that touches memory — calls, copies, loads and
  stores, linalg ops. The allocations, views and scalar ops (constants) are not operators; they
  go wherever the operators that use them go. A call reads the arguments its callee (with
  everything it calls) loads from and writes those it stores to (`memref.copy`, linalg
  `outputs` likewise); its scratch is the bytes the callee allocates. An op with regions in the
  entry (a loop nest, a linalg op) is read the same way, its uses of the entry's buffers as
  the arguments. Whatever the analysis cannot follow makes the operator a barrier: a call to a
  declaration, a callee touching memory it was not given (a mutable global, a memref of
  unknown origin). Operators using another's SSA results follow it (`after`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, NoneAttr
from xdsl.ir import Block, Operation, SSAValue

from usmp_dialect.analysis.buffer_info import (
    ALIAS_OPS,
    AnalysisError,
    missing_entry_message,
    module_functions,
)
from usmp_dialect.dialects.usmp import (
    AllocateConstOp,
    AllocateStateOp,
    AllocationOp,
    buffer_size_bytes,
    io_kind,
)
from usmp_dialect.graph.graph import Access, Buffer, Graph, Operator

# Aliases that see exactly the bytes of their source (or fewer): they keep its byte range.
_SAME_BYTES_OPS = frozenset(
    {
        "memref.cast",
        "memref.subview",
        "memref.collapse_shape",
        "memref.expand_shape",
        "memref.transpose",
        "memref.memory_space_cast",
        "memref.assume_alignment",
    }
)

# Memory ops: name -> (operand positions read, operand positions written).
_MEMORY_OPS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "memref.load": ((0,), ()),
    "affine.load": ((0,), ()),
    "memref.store": ((), (1,)),
    "affine.store": ((), (1,)),
    "memref.copy": ((0,), (1,)),
    "memref.dim": ((), ()),
    "memref.dealloc": ((), ()),
}


@dataclass(frozen=True)
class OperatorGraph:
    """The entry function's graph, with the entry block's op of each operator."""

    graph: Graph
    block: Block
    operations: tuple[Operation, ...]
    """Per operator (index in `graph.operators`), its op in `block`."""


@dataclass
class _Effects:
    """What a function does with its memref arguments."""

    reads: set[int] = field(default_factory=set[int])
    writes: set[int] = field(default_factory=set[int])
    scratch_bytes: int = 0
    opaque: bool = False


def operator_graph(module: ModuleOp, entry: str = "main") -> OperatorGraph | None:
    """The graph of `entry`'s operators, or None when its body is not one block (control flow
    the graph does not describe). Raises `AnalysisError` for a missing entry."""
    functions = module_functions(module)
    function = functions.get(entry)
    if function is None:
        raise AnalysisError(module, missing_entry_message(entry, functions))
    if function.is_declaration:
        raise AnalysisError(function, f"entry function @{entry} has no body (option entry=NAME)")
    if len(function.body.blocks) != 1:
        return None
    return _EntryBuilder(module, functions).build(function)


class _EntryBuilder:
    def __init__(self, module: ModuleOp, functions: dict[str, func.FuncOp]):
        self.functions = functions
        self.constant_globals = {
            op.sym_name.data
            for op in module.ops
            if isinstance(op, memref.GlobalOp) and op.constant is not None
        }
        self.effects: dict[str, _Effects] = {}
        self.in_progress: set[str] = set()
        self.buffers: list[Buffer] = []
        self.accesses: dict[SSAValue, Access] = {}
        self.producers: dict[SSAValue, frozenset[int]] = {}

    def add_buffer(self, value: SSAValue, buffer: Buffer) -> None:
        self.accesses[value] = Access(len(self.buffers), 0, buffer.size_bytes)
        self.buffers.append(buffer)

    def build(self, function: func.FuncOp) -> OperatorGraph:
        block = function.body.block
        arg_attrs = function.arg_attrs.data if function.arg_attrs is not None else ()
        for index, argument in enumerate(block.args):
            if not isinstance(argument.type, MemRefType):
                continue
            kind = None
            if index < len(arg_attrs):
                kind = io_kind(arg_attrs[index].data.get("usmp.io"))
            name = argument.name_hint or f"arg{index}"
            size = _size_bytes(argument.type)
            self.add_buffer(argument, Buffer(name, size, kind or "input", planned=False))
        operators: list[Operator] = []
        operations: list[Operation] = []
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                continue
            if self.define_buffer(op) or self.define_alias(op):
                self.forward_producers(op)
                continue
            operator = self.operator(op)
            if operator is None:
                self.forward_producers(op)
                continue
            for result in op.results:
                self.producers[result] = frozenset({len(operators)})
            operators.append(operator)
            operations.append(op)
        graph = Graph(tuple(self.buffers), tuple(operators))
        return OperatorGraph(graph, block, tuple(operations))

    # -- buffers and views ------------------------------------------------------------------

    def define_buffer(self, op: Operation) -> bool:
        name = op.results[0].name_hint if op.results else None
        if isinstance(op, AllocationOp):
            if isinstance(op, AllocateConstOp):
                kind = "constant"
            elif isinstance(op, AllocateStateOp):
                kind = "state"
            else:
                kind = io_kind(op.attributes.get("usmp.io")) or "intermediate"
            self.add_buffer(op.memref, Buffer(name or "buffer", op.size_bytes, kind))
            return True
        if isinstance(op, memref.AllocOp | memref.AllocaOp) and not op.dynamic_sizes:
            size = _size_bytes(op.memref.type)
            self.add_buffer(op.memref, Buffer(name or "buffer", size))
            return True
        if isinstance(op, memref.GetGlobalOp):
            global_name = op.name_.root_reference.data
            constant = global_name in self.constant_globals
            size = _size_bytes(op.memref.type)
            kind = "constant" if constant else "intermediate"
            # A mutable global is the program's state, not the planner's: ordered, not counted.
            self.add_buffer(op.memref, Buffer(global_name, size, kind, planned=constant))
            return True
        return False

    def define_alias(self, op: Operation) -> bool:
        if op.name not in ALIAS_OPS or not op.operands or op.operands[0] not in self.accesses:
            return False
        if not any(result.uses for result in op.results):
            return False  # a view nobody uses still touches the buffer: an operator, kept in order
        source = self.accesses[op.operands[0]]
        root = self.buffers[source.buffer]
        whole = Access(source.buffer, 0, root.size_bytes)
        for result in op.results:
            if not isinstance(result.type, MemRefType):
                continue
            view = whole
            if op.name in _SAME_BYTES_OPS:
                view = source
            elif isinstance(op, memref.ViewOp):
                shift = _constant_index(op.byte_shift)
                size = _size_bytes(result.type)
                if (
                    shift is not None
                    and size
                    and source.start_byte + shift + size <= source.stop_byte
                ):
                    start = source.start_byte + shift
                    view = Access(source.buffer, start, start + size)
            elif isinstance(op, memref.ReinterpretCastOp):
                view = _reinterpreted(op, source, result.type) or whole
            self.accesses[result] = view
        return True

    def forward_producers(self, op: Operation) -> None:
        producers = self.operand_producers(op)
        for result in op.results:
            self.producers[result] = producers

    def operand_producers(self, op: Operation) -> frozenset[int]:
        found: set[int] = set()
        for nested in op.walk():
            for operand in nested.operands:
                found |= self.producers.get(operand, frozenset())
        return frozenset(found)

    # -- operators --------------------------------------------------------------------------

    def operator(self, op: Operation) -> Operator | None:
        after = tuple(sorted(self.operand_producers(op)))
        name = op.name
        reads: list[Access] = []
        writes: list[Access] = []
        scratch = 0
        barrier = False
        if isinstance(op, func.CallOp):
            callee = op.callee.root_reference.data
            name = callee
            effects = self.function_effects(callee)
            for position, operand in enumerate(op.operands):
                access = self.accesses.get(operand)
                if access is None:
                    continue
                if position in effects.reads:
                    reads.append(access)
                if position in effects.writes:
                    writes.append(access)
            scratch = effects.scratch_bytes
            barrier = effects.opaque
        elif op.regions:
            # A loop nest or a linalg op in the entry: read like a callee whose arguments are
            # the entry's buffers it uses.
            outer: list[Access] = []
            origins: dict[SSAValue, int | None] = {}
            for nested in op.walk():
                for operand in nested.operands:
                    if operand in self.accesses and operand not in origins:
                        origins[operand] = len(outer)
                        outer.append(self.accesses[operand])
            effects = _Effects()
            for nested in op.walk():
                self.callee_op(nested, origins, effects)
            reads = [outer[index] for index in sorted(effects.reads)]
            writes = [outer[index] for index in sorted(effects.writes)]
            scratch = effects.scratch_bytes
            barrier = effects.opaque
        else:
            touched = [self.accesses[v] for v in op.operands if v in self.accesses]
            if not touched and not any(isinstance(r.type, MemRefType) for r in op.results):
                return None  # scalar arithmetic: goes where its users go
            read_positions, write_positions = _operand_effects(op)
            for position, operand in enumerate(op.operands):
                access = self.accesses.get(operand)
                if access is None:
                    continue
                if read_positions is None or position in read_positions:
                    reads.append(access)
                if write_positions is None or position in write_positions:
                    writes.append(access)
        for result in op.results:
            if isinstance(result.type, MemRefType) and result not in self.accesses:
                # Memory the analysis does not know (e.g. `pool.base` of a planned program):
                # a buffer of its own, not counted, so every access to it stays in order.
                hint = result.name_hint or op.name
                size = _size_bytes(result.type)
                self.add_buffer(result, Buffer(hint, size, "intermediate", planned=False))
        return Operator(name, tuple(reads), tuple(writes), scratch, after, barrier)

    def function_effects(self, name: str) -> _Effects:
        """What `name` (and everything it calls) does with its memref arguments."""
        known = self.effects.get(name)
        if known is not None:
            return known
        effects = _Effects()
        function = self.functions.get(name)
        if function is None or function.is_declaration or name in self.in_progress:
            # A declaration, or recursion (which the planner's analysis rejects): opaque.
            effects.opaque = True
            return effects
        self.in_progress.add(name)
        origins: dict[SSAValue, int | None] = {}
        for position, argument in enumerate(
            function.body.blocks[0].args if function.body.blocks else ()
        ):
            if isinstance(argument.type, MemRefType):
                origins[argument] = position
        for op in function.walk():
            self.callee_op(op, origins, effects)
        self.in_progress.discard(name)
        self.effects[name] = effects
        return effects

    def callee_op(
        self, op: Operation, origins: dict[SSAValue, int | None], effects: _Effects
    ) -> None:
        """Records `op`'s effect on the function's arguments; `origins` maps a memref value to
        the argument it views, or None for the function's own buffers and constants."""
        if isinstance(op, AllocationOp | memref.AllocOp | memref.AllocaOp):
            if not isinstance(op, AllocateConstOp | AllocateStateOp):
                effects.scratch_bytes += _size_bytes(op.results[0].type)
            origins[op.results[0]] = None
            return
        if isinstance(op, memref.GetGlobalOp):
            if op.name_.root_reference.data in self.constant_globals:
                origins[op.memref] = None
            return  # a mutable global stays unknown: touching it is opaque
        if op.name in ALIAS_OPS and op.operands and op.operands[0] in origins:
            for result in op.results:
                origins[result] = origins[op.operands[0]]
            return
        if isinstance(op, func.CallOp):
            callee = self.function_effects(op.callee.root_reference.data)
            effects.scratch_bytes += callee.scratch_bytes
            effects.opaque |= callee.opaque
            _record_accesses(op, origins, effects, tuple(callee.reads), tuple(callee.writes))
            return
        _record_accesses(op, origins, effects, *_operand_effects(op))


def _record_accesses(
    op: Operation,
    origins: dict[SSAValue, int | None],
    effects: _Effects,
    read_positions: tuple[int, ...] | None,
    write_positions: tuple[int, ...] | None,
) -> None:
    """Adds the arguments that `op`'s memref operands view to `effects` (positions None: any);
    a memref of unknown origin makes the function opaque."""
    for position, operand in enumerate(op.operands):
        if not isinstance(operand.type, MemRefType):
            continue
        if operand not in origins:
            effects.opaque = True
            continue
        origin = origins[operand]
        if origin is None:
            continue
        if read_positions is None or position in read_positions:
            effects.reads.add(origin)
        if write_positions is None or position in write_positions:
            effects.writes.add(origin)


def _operand_effects(op: Operation) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
    """Operand positions `op` reads and writes; None for "any of them" (unknown ops)."""
    known = _MEMORY_OPS.get(op.name)
    if known is not None:
        return known
    if op.name.startswith("linalg."):
        inputs = getattr(op, "inputs", None)
        outputs = getattr(op, "outputs", None)
        if inputs is not None and outputs is not None:
            count = len(inputs)
            every = tuple(range(len(op.operands)))
            return every, tuple(range(count, count + len(outputs)))
    return None, None


def _size_bytes(memref_type: object) -> int:
    if not isinstance(memref_type, MemRefType) or any(d < 0 for d in memref_type.get_shape()):
        return 0
    return buffer_size_bytes(memref_type)


def _constant_index(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _reinterpreted(
    op: memref.ReinterpretCastOp, source: Access, result_type: object
) -> Access | None:
    """The bytes a `reinterpret_cast` of an identity-layout source sees, when its offset is
    static (a reshape view: offset 0)."""
    source_type = op.source.type
    if not isinstance(source_type, MemRefType) or not isinstance(result_type, MemRefType):
        return None
    if not isinstance(source_type.layout, NoneAttr):
        return None
    offsets = op.static_offsets.get_values()
    if len(offsets) != 1 or offsets[0] < 0:
        return None
    element = buffer_size_bytes(MemRefType(result_type.element_type, [1]))
    start = source.start_byte + offsets[0] * element
    stop = start + _size_bytes(result_type)
    if stop > source.stop_byte or stop <= start:
        return None
    return Access(source.buffer, start, stop)
