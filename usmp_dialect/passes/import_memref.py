"""`usmp-import-memref`: standard MLIR allocations become buffers the planner can place.

* `memref.alloc` / `memref.alloca` with a static shape and the identity layout become
  `usmp.allocate` (same SSA name, same `alignment`, same `usmp.tensor`: the model's name of
  the tensor, which the frontends put there); the `memref.dealloc`s of those buffers
  (directly or through a `memref.cast`) are removed, since pool memory is never freed.
* `memref.get_global` of a constant `memref.global` with dense initial data becomes
  `usmp.allocate_const` holding that data, re-typed to the memref type (same `alignment`).
  Each `memref.get_global` gets its own constant buffer (run `cse` first to share one per
  function). A private global left without any reference is erased; a public one is kept,
  since other modules may link it.
* `memref.get_global` of a non-constant `memref.global` marked `usmp.state` (a unit attribute;
  the frontends mark the variable tensors of stateful models so) becomes `usmp.allocate_state`
  holding the global's initial value: a buffer that keeps its value from one run to the next,
  planned in a state pool (SPEC §13). Such a global must be read by exactly one
  `memref.get_global` (one buffer per state variable); it is then erased if private.
* Other non-constant globals, and constant globals without initial data (external
  declarations), are left alone.

Functions that return buffers (upstream bufferization's default) first get out-parameters
(`usmp-buffer-results-to-out-params`). A `bufferization.to_tensor`/`to_buffer` round trip of
one memref is that memref; other ops left on tensors or from `bufferization` (a partial
bufferization, `bufferization.dealloc`) are an error that says what to run.

An allocation the planner cannot handle (dynamic shape, non-identity layout, unsupported
element type) is an error on that op: nothing is skipped silently.
"""

from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import bufferization, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import Rewriter
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException, VerifyException

from usmp_dialect.dialects.upstream import DEALLOC_MESSAGE, DEALLOCATION_ADVICE, DeallocOp
from usmp_dialect.dialects.usmp import (
    STATE_ATTRIBUTE,
    TENSOR_ATTRIBUTE,
    AllocateConstOp,
    AllocateOp,
    AllocateStateOp,
    verify_buffer_type,
)
from usmp_dialect.passes.buffer_results_to_out_params import buffer_results_to_out_params


def imported_constant_global(get_global: memref.GetGlobalOp) -> memref.GlobalOp | None:
    """The constant, initialised `memref.global` that `get_global` reads, or None."""
    found = SymbolTable.lookup_symbol(get_global, get_global.name_)
    if (
        isinstance(found, memref.GlobalOp)
        and found.constant is not None
        and isinstance(found.initial_value, DenseIntOrFPElementsAttr)
    ):
        return found
    return None


def imported_state_global(get_global: memref.GetGlobalOp) -> memref.GlobalOp | None:
    """The mutable, initialised `memref.global` marked `usmp.state` that `get_global` reads,
    or None."""
    found = SymbolTable.lookup_symbol(get_global, get_global.name_)
    if (
        isinstance(found, memref.GlobalOp)
        and found.constant is None
        and STATE_ATTRIBUTE in found.attributes
        and isinstance(found.initial_value, DenseIntOrFPElementsAttr)
    ):
        return found
    return None


def _describe(value: SSAValue) -> str:
    return f" %{value.name_hint}" if value.name_hint else ""


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, PassFailedException(message))


def _check_importable(module: ModuleOp) -> None:
    """Fails on the first allocation the import cannot turn into a plannable buffer."""
    for op in module.walk():
        if isinstance(op, memref.AllocOp | memref.AllocaOp):
            memref_type = op.memref.type
            try:
                verify_buffer_type(memref_type)
            except VerifyException as error:
                _fail(
                    op,
                    f"cannot import {op.name}{_describe(op.memref)}: {error}; the planner needs "
                    "static shapes and the identity layout",
                )
        elif isinstance(op, memref.GetGlobalOp):
            global_op = imported_constant_global(op) or imported_state_global(op)
            if global_op is None:
                continue
            kind = "state" if global_op.constant is None else "constant"
            if global_op.type != op.memref.type:
                _fail(
                    op,
                    f"memref.get_global of @{global_op.sym_name.data} returns "
                    f"{op.memref.type} but the global has type {global_op.type}",
                )
            try:
                verify_buffer_type(global_op.type)
            except VerifyException as error:
                _fail(op, f"{kind} global @{global_op.sym_name.data} cannot be planned: {error}")
            data = global_op.initial_value
            assert isinstance(data, DenseIntOrFPElementsAttr)
            expected = global_op.type.element_count()
            if len(data) != expected or data.get_element_type() != global_op.type.element_type:
                _fail(
                    op,
                    f"the initial value of {kind} global @{global_op.sym_name.data} "
                    f"({data.type}) does not fit its type {global_op.type}",
                )


def _check_state_reads(module: ModuleOp) -> None:
    """Fails on a state global read by more than one `memref.get_global`: each read would
    become a buffer of its own, and the state would not be one variable any more."""
    first: dict[str, memref.GetGlobalOp] = {}
    for op in module.walk():
        if isinstance(op, memref.GetGlobalOp) and imported_state_global(op) is not None:
            name = op.name_.root_reference.data
            if name in first:
                _fail(
                    op,
                    f"state global @{name} is read by a second memref.get_global: pass the "
                    "first one's memref to the functions that need the state",
                )
            first[name] = op


def _fold_tensor_round_trips(module: ModuleOp) -> None:
    """`bufferization.to_buffer (bufferization.to_tensor %m)` of the same type is `%m`."""
    for op in list(module.walk()):
        if not isinstance(op, bufferization.ToBufferOp):
            continue
        source = op.tensor.owner
        if isinstance(source, bufferization.ToTensorOp) and source.memref.type == op.memref.type:
            op.memref.replace_all_uses_with(source.memref)
            Rewriter.erase_op(op)
            if not source.tensor.uses:
                Rewriter.erase_op(source)


def _check_bufferized(module: ModuleOp) -> None:
    """Fails on the first op left over from a partial bufferization."""
    for op in module.walk():
        if op.name == DeallocOp.name:
            _fail(op, DEALLOC_MESSAGE)
        if isinstance(op, memref.ExtractAlignedPointerAsIndexOp):
            _fail(
                op,
                "memref.extract_aligned_pointer_as_index compares buffer addresses, which "
                f"planning changes: {DEALLOCATION_ADVICE}",
            )
        if op.name.startswith("bufferization.") or any(
            isinstance(t, TensorType) for t in (*op.operand_types, *op.result_types)
        ):
            _fail(
                op,
                f"{op.name} works on tensors: bufferize the whole program first (mlir-opt "
                '--one-shot-bufferize="bufferize-function-boundaries '
                'function-boundary-type-conversion=identity-layout-map")',
            )


def _alignment_bytes(alignment: Attribute | None) -> int | None:
    if alignment is None:
        return None
    assert isinstance(alignment, IntegerAttr)
    return alignment.value.data


_VIEW_OPS = (
    memref.CastOp,
    memref.ExtractStridedMetaDataOp,
    memref.SubviewOp,
    memref.ReinterpretCastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    memref.ViewOp,
)


def _check_no_planned_frees(module: ModuleOp) -> None:
    """Fails on a `memref.dealloc` left on (a view of) an imported buffer: pool memory is never
    freed, and what the deallocation pipeline leaves frees views conditionally."""
    for op in module.walk():
        if not isinstance(op, memref.DeallocOp):
            continue
        owner = op.memref.owner
        while isinstance(owner, _VIEW_OPS):
            owner = owner.operands[0].owner
        if isinstance(owner, AllocateOp):
            _fail(op, f"memref.dealloc of a view of a planned buffer: {DEALLOCATION_ADVICE}")


def _is_imported_buffer(value: SSAValue) -> bool:
    """Whether `value` is (a cast of) a buffer that the import turned into `usmp.allocate`."""
    owner = value.owner
    while isinstance(owner, memref.CastOp):
        owner = owner.source.owner
    return isinstance(owner, AllocateOp)


@dataclass(frozen=True)
class AllocToAllocate(RewritePattern):
    """`memref.alloc` / `memref.alloca` (static, identity layout) → `usmp.allocate`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: memref.AllocOp | memref.AllocaOp, rewriter: PatternRewriter
    ) -> None:
        memref_type = op.memref.type
        assert isinstance(memref_type, MemRefType)
        allocation = AllocateOp(memref_type, alignment=_alignment_bytes(op.alignment))
        tensor = op.attributes.get(TENSOR_ATTRIBUTE)
        if tensor is not None:
            allocation.attributes[TENSOR_ATTRIBUTE] = tensor
        rewriter.replace(op, allocation)


@dataclass(frozen=True)
class EraseDealloc(RewritePattern):
    """Removes the `memref.dealloc` of an imported buffer: pool memory is never freed."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.DeallocOp, rewriter: PatternRewriter) -> None:
        if _is_imported_buffer(op.memref):
            rewriter.erase(op)


@dataclass(frozen=True)
class GetGlobalToAllocateConst(RewritePattern):
    """`memref.get_global` of a constant global → `usmp.allocate_const` with its data."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter) -> None:
        global_op = imported_constant_global(op)
        if global_op is None:
            return
        data = global_op.initial_value
        assert isinstance(data, DenseIntOrFPElementsAttr)
        value = DenseIntOrFPElementsAttr(global_op.type, data.data)
        rewriter.replace(
            op, AllocateConstOp(value, alignment=_alignment_bytes(global_op.alignment))
        )


@dataclass(frozen=True)
class GetGlobalToAllocateState(RewritePattern):
    """`memref.get_global` of a state global → `usmp.allocate_state` with its initial value."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter) -> None:
        global_op = imported_state_global(op)
        if global_op is None:
            return
        data = global_op.initial_value
        assert isinstance(data, DenseIntOrFPElementsAttr)
        value = DenseIntOrFPElementsAttr(global_op.type, data.data)
        allocation = AllocateStateOp(value, alignment=_alignment_bytes(global_op.alignment))
        tensor = global_op.attributes.get(TENSOR_ATTRIBUTE)
        if tensor is not None:
            allocation.attributes[TENSOR_ATTRIBUTE] = tensor
        rewriter.replace(op, allocation)
        allocation.memref.name_hint = op.memref.name_hint or global_op.sym_name.data


def _referenced_symbols(attr: Attribute, names: set[str]) -> None:
    if isinstance(attr, SymbolRefAttr):
        names.add(attr.root_reference.data)
    elif isinstance(attr, ArrayAttr):
        for element in attr.data:
            _referenced_symbols(element, names)
    elif isinstance(attr, DictionaryAttr):
        for element in attr.data.values():
            _referenced_symbols(element, names)


def _erase_unreferenced_globals(module: ModuleOp, candidates: list[memref.GlobalOp]) -> None:
    referenced: set[str] = set()
    for op in module.walk():
        for attr in (*op.properties.values(), *op.attributes.values()):
            _referenced_symbols(attr, referenced)
    for global_op in candidates:
        if global_op.sym_name.data not in referenced and global_op.sym_visibility.data != "public":
            global_op.detach()
            global_op.erase()


@dataclass(frozen=True)
class UsmpImportMemrefPass(ModulePass):
    """Turns memref allocations and constant globals into `usmp` buffers."""

    name = "usmp-import-memref"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _fold_tensor_round_trips(op)
        _check_bufferized(op)
        buffer_results_to_out_params(op)
        _check_importable(op)
        _check_state_reads(op)
        # Ordered set of the globals whose reads become constant or state buffers.
        imported_globals: dict[memref.GlobalOp, None] = {}
        for get_global in op.walk():
            if isinstance(get_global, memref.GetGlobalOp):
                global_op = imported_constant_global(get_global) or imported_state_global(
                    get_global
                )
                if global_op is not None:
                    imported_globals[global_op] = None
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    AllocToAllocate(),
                    EraseDealloc(),
                    GetGlobalToAllocateConst(),
                    GetGlobalToAllocateState(),
                ],
                dce_enabled=False,
            ),
            apply_recursively=False,
        ).rewrite_module(op)
        _erase_unreferenced_globals(op, list(imported_globals))
        _check_no_planned_frees(op)
