"""`usmp-assign-pools`: every allocation gets its ordered candidate pools (SPEC §3.3).

* `usmp.allocate` goes to workspace pools, `usmp.allocate_const` to constant pools,
  `usmp.allocate_state` to state pools (SPEC §13).
* A function's target is its `usmp.target` string attribute (default `"c"`); an allocation's
  candidates are the pools of its kind whose `targets` contain the target of the function that
  allocates it, in declaration (preference) order, written into its `pools` property.
* An allocation that already lists `pools` keeps them: the list is the user's (or a
  scheduler's) override of the target rule, as `candidate_memory_pools` was in TVM. Its pools
  must be of the allocation's kind; whether they serve the function's target is not checked.
* Default pools: when the module declares no workspace pool and some `usmp.allocate` needs one,
  an internal `pool.workspace @global_workspace` is created; likewise an internal
  `pool.constant @global_constant` for constants (whether or not workspace pools exist; TVM
  left constants unpooled in that case) and an internal `pool.state @global_state` for state.
  A default pool serves every target of the functions whose allocations it receives (`["c"]`,
  the default, is left implicit). New pools go after the module's last existing pool, or at
  the start of the module.
* An allocation that no declared pool of its kind serves is an error naming the buffer, its
  function, the function's target and the pools available.

Running the pass again changes nothing.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, SymbolRefAttr, UnitAttr
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from usmp_dialect.dialects.pool import (
    DEFAULT_TARGETS,
    ConstantPoolOp,
    PoolOpBase,
    StatePoolOp,
    WorkspacePoolOp,
    find_pool,
    module_pools,
)
from usmp_dialect.dialects.usmp import (
    AllocateConstOp,
    AllocateOp,
    AllocateStateOp,
    AllocationOp,
)

TARGET_ATTRIBUTE = "usmp.target"
DEFAULT_TARGET = "c"
DEFAULT_POOL_NAMES: dict[type[PoolOpBase], str] = {
    WorkspacePoolOp: "global_workspace",
    ConstantPoolOp: "global_constant",
    StatePoolOp: "global_state",
}


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, PassFailedException(message))


def pool_kind_for(allocation: AllocationOp) -> type[PoolOpBase]:
    """The kind of pool an allocation is placed in."""
    if isinstance(allocation, AllocateConstOp):
        return ConstantPoolOp
    if isinstance(allocation, AllocateStateOp):
        return StatePoolOp
    return WorkspacePoolOp


def buffer_label(allocation: AllocationOp) -> str:
    """How diagnostics name a buffer: its SSA name."""
    hint = allocation.memref.name_hint
    return f"buffer %{hint}" if hint else "an unnamed buffer"


def function_target(function: func.FuncOp) -> str:
    """The target a function runs on (`usmp.target`, default "c")."""
    target = function.attributes.get(TARGET_ATTRIBUTE)
    if target is None:
        return DEFAULT_TARGET
    if not isinstance(target, StringAttr):
        _fail(
            function,
            f"{TARGET_ATTRIBUTE} of @{function.sym_name.data} must be a string, got {target}",
        )
    return target.data


def enclosing_function(allocation: AllocationOp) -> func.FuncOp:
    parent = allocation.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    if parent is None:
        _fail(allocation, f"{allocation.name} of {buffer_label(allocation)} is not in a func.func")
    return parent


def _describe_pools(pools: Sequence[PoolOpBase]) -> str:
    if not pools:
        return "none"
    described = []
    for pool in pools:
        targets = ", ".join(f'"{target}"' for target in pool.target_names)
        described.append(f"@{pool.pool_name} (targets [{targets}])")
    return ", ".join(described)


def _check_listed_pools(allocation: AllocationOp, module: ModuleOp) -> None:
    kind = pool_kind_for(allocation)
    for name in allocation.candidate_pool_names:
        pool = find_pool(module, name)
        if pool is None:
            _fail(allocation, f"{buffer_label(allocation)} lists @{name}, which is not a pool")
        if not isinstance(pool, kind):
            _fail(
                allocation,
                f"{buffer_label(allocation)} lists @{name}, a {pool.KIND} pool, but "
                f"{allocation.name} needs {kind.KIND} pools",
            )


@dataclass
class PoolAssignment:
    """The candidate pools decided for each allocation, and the default pools to create."""

    candidates: dict[AllocationOp, tuple[str, ...]] = field(default_factory=dict)
    # default pool kind -> targets it must serve
    default_pools: dict[type[PoolOpBase], set[str]] = field(default_factory=dict)


def assign_candidate_pools(module: ModuleOp) -> PoolAssignment:
    """Decides every allocation's candidate pools; fails on the first one without any."""
    declared = list(module_pools(module))
    assignment = PoolAssignment()
    for allocation in module.walk():
        if not isinstance(allocation, AllocateOp | AllocateConstOp | AllocateStateOp):
            continue
        if allocation.pools is not None:
            _check_listed_pools(allocation, module)
            continue
        function = enclosing_function(allocation)
        target = function_target(function)
        kind = pool_kind_for(allocation)
        of_kind = [pool for pool in declared if isinstance(pool, kind)]
        if not of_kind:
            assignment.default_pools.setdefault(kind, set()).add(target)
            assignment.candidates[allocation] = (DEFAULT_POOL_NAMES[kind],)
            continue
        serving = tuple(pool.pool_name for pool in of_kind if target in pool.target_names)
        if not serving:
            _fail(
                allocation,
                f"no {kind.KIND} pool serves {buffer_label(allocation)} of function "
                f"@{function.sym_name.data} (target '{target}'); {kind.KIND} pools: "
                f"{_describe_pools(of_kind)}",
            )
        assignment.candidates[allocation] = serving
    return assignment


def create_default_pools(module: ModuleOp, default_pools: dict[type[PoolOpBase], set[str]]) -> None:
    """Adds the internal default pools after the module's last pool (or at its start)."""
    last_pool: Operation | None = None
    for op in module.ops:
        if isinstance(op, PoolOpBase):
            last_pool = op
    for kind in (WorkspacePoolOp, ConstantPoolOp, StatePoolOp):
        if kind not in default_pools:
            continue
        name = DEFAULT_POOL_NAMES[kind]
        for op in module.ops:
            sym_name = op.properties.get("sym_name") or op.attributes.get("sym_name")
            if isinstance(sym_name, StringAttr) and sym_name.data == name:
                _fail(
                    op,
                    f"cannot create the default {kind.KIND} pool @{name}: the name is taken "
                    f"by this '{op.name}'",
                )
        properties: dict[str, Attribute] = {"sym_name": StringAttr(name)}
        targets = sorted(default_pools[kind])
        if tuple(targets) != DEFAULT_TARGETS:
            properties["targets"] = ArrayAttr([StringAttr(target) for target in targets])
        properties["internal"] = UnitAttr()
        pool = kind.create(properties=properties)
        block = module.body.block
        if last_pool is None:
            if block.first_op is None:
                block.add_op(pool)
            else:
                block.insert_op_before(pool, block.first_op)
        else:
            block.insert_op_after(pool, last_pool)
        last_pool = pool


@dataclass(frozen=True)
class SetCandidatePools(RewritePattern):
    """Writes the decided candidate pools into an allocation's `pools` property."""

    candidates: dict[AllocationOp, tuple[str, ...]]

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: AllocateOp | AllocateConstOp | AllocateStateOp, rewriter: PatternRewriter
    ) -> None:
        names = self.candidates.get(op)
        if names is None or op.candidate_pool_names == names:
            return
        op.pools = ArrayAttr([SymbolRefAttr(name) for name in names])
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class UsmpAssignPoolsPass(ModulePass):
    """Gives every allocation its ordered candidate pools, creating default pools if needed."""

    name = "usmp-assign-pools"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        assignment = assign_candidate_pools(op)
        create_default_pools(op, assignment.default_pools)
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [SetCandidatePools(assignment.candidates)], dce_enabled=False
            ),
            apply_recursively=False,
        ).rewrite_module(op)
