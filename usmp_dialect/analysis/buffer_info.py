"""Buffer info: every planned buffer of a program with its live intervals (SPEC §4).

The analysis walks the program from the entry function and inlines every call: a callee's body
is analysed at each call site, its memref arguments aliased to the caller's buffers. Every op
visited takes the next tick of ONE program-wide timeline (pre-order; a loop or a region op with
several blocks takes one more tick when it is left). Tick 0 is the start of the run and the
last tick its end.

Liveness rules:

* A buffer is live from its first to its last access (half-open `[first, last + 1)`); an
  allocation visited several times (an operator called twice) gets one interval per visit.
* An access is any use of the buffer or of one of its aliases (`memref.view`, `subview`,
  `cast`, `reinterpret_cast`, `collapse_shape`, `expand_shape`, `scf.yield`ed results, callee
  arguments). Passing a buffer to a function with a body is not an access by itself: only the
  callee's accesses are. Passing it to a declaration is an access at the call.
* An access inside a loop keeps the buffer live for that whole loop, at the outermost loop
  level below the buffer's definition. Ops with regions other than `scf.if`,
  `scf.index_switch` and `scf.execute_region` count as loops (conservative for unknown ops).
* The regions of an `scf.if` are laid out one after the other, so buffers local to different
  branches never conflict.
* Inputs (`usmp.io = "input"`) are live from the start of the run, outputs until its end;
  constants are live for the whole run, so all constants of a pool conflict; so are state
  buffers (`usmp.allocate_state`, whose value persists from one run to the next).
* Allocations that are never accessed get no interval: they conflict with nothing.

Errors (an `AnalysisError` naming the op): missing entry function, call to an unknown
function, recursion, a buffer that escapes (returned or stored), a dynamically shaped
allocation. The analysis only reads the IR.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from usmp_dialect.dialects.usmp import (
    AllocateConstOp,
    AllocateStateOp,
    AllocationOp,
    io_kind,
    tensor_name,
)
from usmp_dialect.planning.problem import (
    Buffer,
    Interval,
    Problem,
    conflict_lists,
    merged_intervals,
    peak_live_bytes,
)

BUFFER_KINDS = ("intermediate", "input", "output", "constant", "state")
# Buffers of their own pool kind, live for the whole run; outside the workspace's pressure.
WHOLE_RUN_KINDS = ("constant", "state")

# Ops whose memref results view (part of) their first memref operand.
ALIAS_OPS = frozenset(
    {
        "memref.view",
        "memref.subview",
        "memref.cast",
        "memref.reinterpret_cast",
        "memref.collapse_shape",
        "memref.expand_shape",
        "memref.transpose",
        "memref.memory_space_cast",
        "memref.assume_alignment",
        "memref.extract_strided_metadata",
        "builtin.unrealized_conversion_cast",
    }
)

# Ops that turn a buffer into a bare address the analysis cannot follow.
ADDRESS_OPS = frozenset({"memref.extract_aligned_pointer_as_index", "llvm.ptrtoint"})

# Ops with regions that run each region at most once (everything else counts as a loop).
STRAIGHT_REGION_OPS = frozenset({"scf.if", "scf.index_switch", "scf.execute_region"})

# Ops that store their first operand into memory: storing a buffer makes it escape.
STORE_OPS = frozenset({"memref.store", "affine.store", "llvm.store"})


class AnalysisError(Exception):
    """A program the planner cannot analyse; `op` is where the problem is."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op
        self.message = message


@dataclass(frozen=True)
class BufferInfo:
    """One planned buffer, as plain data."""

    name: str
    """Unique in the module (the allocation's SSA name, with a numeric suffix when taken)."""
    function: str
    """The function whose body holds the allocation."""
    kind: str
    """One of BUFFER_KINDS."""
    size_bytes: int
    alignment: int
    candidate_pools: tuple[str, ...]
    live: tuple[Interval, ...]
    """Sorted, disjoint half-open intervals on the program timeline."""
    io_index: int | None = None
    """For U4 I/O buffers, the position of the entry argument they replace."""
    tensor: str | None = None
    """The model's name of the tensor the buffer holds (`usmp.tensor`), when known."""


@dataclass(frozen=True)
class EntryCall:
    """A call in the entry function's body (an operator run), with its span on the timeline."""

    call: func.CallOp
    span: Interval
    """Half-open `[end of the previous call's span (0 for the first), last tick inside the
    callee + 1)`: the entry's own ops between two calls (views of the next call's operands,
    allocations) belong to the call they prepare."""


@dataclass(frozen=True)
class BufferAnalysis:
    """The buffers of a program, in module order, with the allocation op of each."""

    entry: str
    buffers: tuple[BufferInfo, ...]
    allocations: tuple[AllocationOp, ...]
    timeline_end: int
    """The tick of the end of the run (intervals end at most at `timeline_end + 1`)."""
    memory_pressure_bytes: int
    """Peak of the summed sizes of simultaneously live workspace buffers (neither constant
    nor state)."""
    entry_calls: tuple[EntryCall, ...] = ()
    """The calls of the entry's body in execution order (the operators of a model)."""

    def as_problem(self) -> Problem:
        """The buffers as a planning problem on one pool (for conflicts and bounds)."""
        return Problem(
            tuple(
                Buffer(info.name, info.size_bytes, info.alignment, info.live)
                for info in self.buffers
            )
        )


def buffer_names(module: ModuleOp) -> dict[AllocationOp, str]:
    """A unique name for every allocation of the module, in walk order: the SSA name hint (or
    `buffer`), then `name_1`, `name_2`, ... for later ones whose hint is taken. (xDSL drops a
    `_N` suffix from SSA names, so `%sid_9` is named `sid`: write `%sid9`.)"""
    claimed: set[str] = set()
    next_suffix: dict[str, int] = {}
    names: dict[AllocationOp, str] = {}
    for op in module.walk():
        if not isinstance(op, AllocationOp):
            continue
        base = op.memref.name_hint or "buffer"
        name = base
        while name in claimed:
            suffix = next_suffix.get(base, 1)
            next_suffix[base] = suffix + 1
            name = f"{base}_{suffix}"
        claimed.add(name)
        names[op] = name
    return names


def module_functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    """The module's top-level functions by name."""
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def missing_entry_message(entry: str, functions: dict[str, func.FuncOp]) -> str:
    """The error for an entry function that is not there, naming the public functions the
    module defines (IREE names its entry after the ONNX graph, e.g. @main_graph)."""
    public = [
        f"@{name}"
        for name, function in functions.items()
        if not function.is_declaration
        and (function.sym_visibility is None or function.sym_visibility.data == "public")
    ]
    message = f"entry function @{entry} does not exist (option entry=NAME"
    if public:
        shown = ", ".join(public[:4]) + (", ..." if len(public) > 4 else "")
        message += f"; public functions: {shown}"
    return message + ")"


def function_of(op: Operation) -> func.FuncOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


@dataclass
class _Instance:
    """One visit of an allocation: its accessed span on the timeline."""

    buffer: int
    loop_depth: int
    first: int | None = None
    last: int | None = None


@dataclass
class _Loop:
    start: int
    widened: set[int] = field(default_factory=set[int])


class _Walker:
    def __init__(self, module: ModuleOp, entry: str):
        self.functions = module_functions(module)
        self.names = buffer_names(module)
        self.entry = entry
        self.tick = 0
        self.buffer_index: dict[AllocationOp, int] = {}
        self.allocations: list[AllocationOp] = []
        self.instances: list[_Instance] = []
        self.loops: list[_Loop] = []
        self.call_chain: list[str] = []
        self.entry_calls: list[EntryCall] = []

    # -- accesses -------------------------------------------------------------------------

    def access(self, instance_id: int, tick: int) -> None:
        instance = self.instances[instance_id]
        first = tick
        depth = min(instance.loop_depth, len(self.loops))
        if depth < len(self.loops):
            loop = self.loops[depth]
            loop.widened.add(instance_id)
            first = loop.start
        if instance.first is None or first < instance.first:
            instance.first = first
        if instance.last is None or tick > instance.last:
            instance.last = tick

    # -- walking --------------------------------------------------------------------------

    def walk_function(self, function: func.FuncOp, env: dict[SSAValue, int]) -> None:
        self.call_chain.append(function.sym_name.data)
        self.walk_region(function.body, env, function)
        self.call_chain.pop()

    def walk_region(self, region: Region, env: dict[SSAValue, int], owner: Operation) -> None:
        blocks = list(region.blocks)
        if len(blocks) > 1:
            # Unstructured control flow may branch backwards: treat the region as a loop.
            self.loops.append(_Loop(self.tick))
            for block in blocks:
                self.walk_block(block, env)
            self.leave_loop()
        else:
            for block in blocks:
                self.walk_block(block, env)

    def walk_block(self, block: Block, env: dict[SSAValue, int]) -> None:
        for op in block.ops:
            self.walk_op(op, env)

    def leave_loop(self) -> None:
        self.tick += 1
        loop = self.loops.pop()
        for instance_id in loop.widened:
            instance = self.instances[instance_id]
            if instance.last is None or instance.last < self.tick:
                instance.last = self.tick

    def walk_op(self, op: Operation, env: dict[SSAValue, int]) -> None:
        self.tick += 1
        tick = self.tick
        if isinstance(op, AllocationOp):
            self.allocate(op, env)
            return
        if isinstance(op, memref.AllocOp | memref.AllocaOp) and op.dynamic_sizes:
            raise AnalysisError(
                op,
                f"'{op.name}' with the dynamic shape {op.memref.type} cannot be planned statically",
            )
        if isinstance(op, func.CallOp):
            self.call(op, env, tick)
            return
        if isinstance(op, func.ReturnOp):
            for operand in op.operands:
                if operand in env:
                    raise AnalysisError(
                        op, f"{self.describe(env[operand])} escapes: it is returned"
                    )
            return
        if op.name in STORE_OPS and op.operands and op.operands[0] in env:
            raise AnalysisError(
                op, f"{self.describe(env[op.operands[0]])} escapes: it is stored by '{op.name}'"
            )
        if op.name in ADDRESS_OPS and op.operands and op.operands[0] in env:
            raise AnalysisError(
                op,
                f"{self.describe(env[op.operands[0]])} escapes: '{op.name}' takes its address "
                "(plan before lowering to pointers)",
            )
        for operand in op.operands:
            instance_id = env.get(operand)
            if instance_id is not None:
                self.access(instance_id, tick)
        if op.name in ALIAS_OPS and op.operands and op.operands[0] in env:
            for result in op.results:
                if isinstance(result.type, MemRefType) or len(op.results) == 1:
                    env[result] = env[op.operands[0]]
        if op.name == "scf.yield":
            parent = op.parent_op()
            if parent is not None and len(parent.results) == len(op.operands):
                for operand, result in zip(op.operands, parent.results, strict=True):
                    if operand in env:
                        env[result] = env[operand]
        if not op.regions:
            return
        carried = [env[operand] for operand in op.operands if operand in env]
        if carried:
            self.alias_region_values(op, env)
        if op.name in STRAIGHT_REGION_OPS:
            for region in op.regions:
                self.walk_region(region, env, op)
        else:
            self.loops.append(_Loop(tick))
            for region in op.regions:
                self.walk_region(region, env, op)
            self.leave_loop()
        # A buffer handed to a region op (loop-carried, or an operand of an unknown op) is live
        # until the op is left.
        for instance_id in carried:
            self.access(instance_id, self.tick)

    @staticmethod
    def alias_region_values(op: Operation, env: dict[SSAValue, int]) -> None:
        """Loop-carried buffers: the memref block arguments and results of a region op alias
        its memref operands, matched from the end (scf.for's `iter_args`, scf.while's inits)."""
        inits = [operand for operand in op.operands if isinstance(operand.type, MemRefType)]
        if not inits:
            return
        targets: list[list[SSAValue]] = [list(op.results)]
        for region in op.regions:
            for block in region.blocks:
                targets.append(list(block.args))
        for values in targets:
            memref_values = [v for v in values if isinstance(v.type, MemRefType)]
            for init, value in zip(reversed(inits), reversed(memref_values), strict=False):
                if init in env and value.type == init.type:
                    env[value] = env[init]

    def allocate(self, op: AllocationOp, env: dict[SSAValue, int]) -> None:
        index = self.buffer_index.get(op)
        if index is None:
            index = len(self.allocations)
            self.buffer_index[op] = index
            self.allocations.append(op)
        env[op.memref] = len(self.instances)
        self.instances.append(_Instance(index, len(self.loops)))

    def call(self, op: func.CallOp, env: dict[SSAValue, int], tick: int) -> None:
        in_entry = len(self.call_chain) == 1
        self.visit_callee(op, env, tick)
        if in_entry:
            # The entry's own ops before a call (views, allocations) prepare it: its span
            # starts where the previous call's ended.
            start = self.entry_calls[-1].span[1] if self.entry_calls else 0
            self.entry_calls.append(EntryCall(op, (start, self.tick + 1)))

    def visit_callee(self, op: func.CallOp, env: dict[SSAValue, int], tick: int) -> None:
        callee_name = op.callee.root_reference.data
        callee = self.functions.get(callee_name)
        if callee is None:
            raise AnalysisError(op, f"call to unknown function @{callee_name}")
        if callee.is_declaration:
            for operand in op.operands:
                if operand in env:
                    self.access(env[operand], tick)
            return
        if callee_name in self.call_chain:
            chain = " -> ".join([*self.call_chain, callee_name])
            raise AnalysisError(
                op, f"recursive call to @{callee_name} ({chain}): recursion cannot be planned"
            )
        callee_env: dict[SSAValue, int] = {}
        for operand, argument in zip(op.operands, callee.args, strict=False):
            if operand in env:
                callee_env[argument] = env[operand]
        self.walk_function(callee, callee_env)

    def describe(self, instance_id: int) -> str:
        op = self.allocations[self.instances[instance_id].buffer]
        return f"buffer '{self.names[op]}'"


def extract_buffer_info(module: ModuleOp, entry: str = "main") -> BufferAnalysis:
    """The buffers reachable from `entry` with their live intervals (see the module doc)."""
    walker = _Walker(module, entry)
    entry_function = walker.functions.get(entry)
    if entry_function is None:
        raise AnalysisError(module, missing_entry_message(entry, walker.functions))
    if entry_function.is_declaration:
        raise AnalysisError(
            entry_function, f"entry function @{entry} has no body (option entry=NAME)"
        )
    # The walk recurses once per call level and region level: allow deep call graphs.
    recursion_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(recursion_limit, 50_000))
    try:
        walker.walk_function(entry_function, {})
    finally:
        sys.setrecursionlimit(recursion_limit)
    end = walker.tick + 1
    spans: list[list[Interval]] = [[] for _ in walker.allocations]
    for instance in walker.instances:
        if instance.first is not None and instance.last is not None:
            spans[instance.buffer].append((instance.first, instance.last + 1))
    infos: list[BufferInfo] = []
    for index, op in enumerate(walker.allocations):
        infos.append(_buffer_info(op, walker.names[op], spans[index], end))
    problem = Problem(
        tuple(
            Buffer(info.name, info.size_bytes, 1, info.live)
            for info in infos
            if info.kind not in WHOLE_RUN_KINDS
        )
    )
    return BufferAnalysis(
        entry=entry,
        buffers=tuple(infos),
        allocations=tuple(walker.allocations),
        timeline_end=end,
        memory_pressure_bytes=peak_live_bytes(problem),
        entry_calls=tuple(walker.entry_calls),
    )


def _buffer_info(op: AllocationOp, name: str, spans: list[Interval], end: int) -> BufferInfo:
    io = io_kind(op.attributes.get("usmp.io"))
    io_index_attr = op.attributes.get("usmp.io_index")
    io_index = None
    if io is not None and io_index_attr is not None:
        io_index = getattr(getattr(io_index_attr, "value", None), "data", None)
    if isinstance(op, AllocateConstOp):
        kind = "constant"
        spans = [(0, end + 1)]
    elif isinstance(op, AllocateStateOp):
        kind = "state"
        spans = [(0, end + 1)]
    elif io == "input":
        kind = "input"
        last = max((stop for _start, stop in spans), default=1)
        spans = [*spans, (0, last)]
    elif io == "output":
        kind = "output"
        first = min((start for start, _stop in spans), default=end)
        spans = [*spans, (first, end + 1)]
    else:
        kind = "intermediate"
    function = function_of(op)
    return BufferInfo(
        name=name,
        function=function.sym_name.data if function is not None else "",
        kind=kind,
        size_bytes=op.size_bytes,
        alignment=op.alignment_bytes,
        candidate_pools=op.candidate_pool_names,
        live=tuple(merged_intervals(tuple(spans))),
        io_index=io_index if isinstance(io_index, int) else None,
        tensor=tensor_name(op.attributes),
    )


def conflict_names(analysis: BufferAnalysis) -> list[list[str]]:
    """Per buffer, the sorted names of the buffers live at the same time (an interval sweep;
    the output itself may be quadratic in the number of buffers)."""
    neighbours = conflict_lists(analysis.as_problem())
    infos = analysis.buffers
    return [
        sorted(
            infos[other].name
            for other in others
            # Constants, state and workspace buffers live in pools of different kinds: never a
            # conflict.
            if _pool_kind(infos[other].kind) == _pool_kind(info.kind)
        )
        for info, others in zip(infos, neighbours, strict=True)
    ]


def _pool_kind(buffer_kind: str) -> str:
    return buffer_kind if buffer_kind in WHOLE_RUN_KINDS else "workspace"


def reachable_functions(module: ModuleOp, entry: str) -> list[str]:
    """Functions reachable from `entry` through calls, in module order."""
    functions = module_functions(module)
    seen: set[str] = set()
    pending = [entry]
    while pending:
        name = pending.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        pending.extend(_callees(functions[name].walk()))
    return [name for name in functions if name in seen]


def _callees(ops: Iterable[Operation]) -> list[str]:
    return [op.callee.root_reference.data for op in ops if isinstance(op, func.CallOp)]
