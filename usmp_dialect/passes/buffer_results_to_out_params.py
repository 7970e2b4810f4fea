"""`usmp-buffer-results-to-out-params`: functions that return buffers write them into
out-parameters instead, so that every buffer is allocated where the planner can see it.

Upstream bufferization (`mlir-opt --one-shot-bufferize=bufferize-function-boundaries`) by
default makes each function allocate its result and return it. This pass does what upstream's
`--buffer-results-to-out-params="hoist-static-allocs modify-public-functions"` does, for every
function with a body:

* each memref result becomes a trailing argument of the same type (named `result<k>`); a
  returned `memref.alloc`/`memref.alloca` of that type in the function's top-level block is
  replaced by the argument (no copy), any other returned value is copied into it with
  `memref.copy` before the `func.return`;
* each call site allocates the result buffer (`memref.alloc`, named after the call's result)
  right before the call and passes it: that buffer is an intermediate of the caller, live from
  the call until the caller's last use of the result, and is planned like any other;
* the entry function's returned buffers become arguments it writes, i.e. model outputs.

`usmp-import-memref` runs it first, so bufferized programs go through the README's pipeline as
they are. Results of a function declaration (no body) cannot be moved and are an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, MemRefType, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from usmp_dialect.dialects.upstream import CopyOp


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, PassFailedException(message))


def _memref_results(function: func.FuncOp) -> list[int]:
    return [
        index
        for index, result_type in enumerate(function.function_type.outputs.data)
        if isinstance(result_type, MemRefType)
    ]


def _hoistable(value: SSAValue, function: func.FuncOp, result_type: Attribute) -> bool:
    """Whether `value` is an allocation of exactly the result's type in the top-level block."""
    owner = value.owner
    return (
        isinstance(owner, memref.AllocOp | memref.AllocaOp)
        and owner.parent_block() is function.body.block
        and value.type == result_type
        and not owner.dynamic_sizes
    )


def _rewrite_function(function: func.FuncOp, positions: list[int]) -> None:
    returns = [op for op in function.walk() if isinstance(op, func.ReturnOp)]
    if len(returns) != 1 or returns[0].parent_block() is not function.body.block:
        _fail(function, f"@{function.sym_name.data} returns buffers from several places")
    (return_op,) = returns
    result_types = function.function_type.outputs.data
    block = function.body.block
    old_count = len(block.args)
    hoisted: set[Operation] = set()
    for k, position in enumerate(positions):
        result_type = result_types[position]
        argument = block.insert_arg(result_type, len(block.args))
        argument.name_hint = "result" if len(positions) == 1 else f"result{k}"
        value = return_op.operands[position]
        owner = value.owner
        if (
            _hoistable(value, function, result_type)
            and isinstance(owner, Operation)
            and owner not in hoisted
        ):
            hoisted.add(owner)
            for use in list(value.uses):
                if isinstance(use.operation, memref.DeallocOp):
                    Rewriter.erase_op(use.operation)
            value.replace_all_uses_with(argument)
            Rewriter.erase_op(owner)
        else:
            Rewriter.insert_op(
                CopyOp.build(operands=[value, argument]), InsertPoint.before(return_op)
            )
    kept = [v for i, v in enumerate(return_op.operands) if i not in positions]
    return_op.operands = kept
    old_attrs: list[Attribute] = (
        list(function.arg_attrs.data)
        if function.arg_attrs is not None
        else [DictionaryAttr({})] * old_count
    )
    if function.arg_attrs is not None or function.res_attrs is not None:
        new_attrs = [DictionaryAttr({})] * len(positions)
        if function.res_attrs is not None:
            new_attrs = [function.res_attrs.data[p] for p in positions]
            remaining = [a for i, a in enumerate(function.res_attrs.data) if i not in positions]
            function.properties.pop("res_attrs")
            if remaining:
                function.properties["res_attrs"] = ArrayAttr(remaining)
        function.properties["arg_attrs"] = ArrayAttr([*old_attrs, *new_attrs])
    function.update_function_type()


def _rewrite_call(call: func.CallOp, positions: list[int]) -> None:
    buffers: list[SSAValue] = []
    for position in positions:
        result = call.results[position]
        result_type = result.type
        assert isinstance(result_type, MemRefType)
        alloc = memref.AllocOp([], [], result_type)
        alloc.memref.name_hint = result.name_hint
        Rewriter.insert_op(alloc, InsertPoint.before(call))
        result.replace_all_uses_with(alloc.memref)
        buffers.append(alloc.memref)
    kept_types = [r.type for i, r in enumerate(call.results) if i not in positions]
    new_call = func.CallOp(call.callee, [*call.arguments, *buffers], kept_types)
    new_call.attributes.update(call.attributes)
    kept_results = [r for i, r in enumerate(call.results) if i not in positions]
    Rewriter.insert_op(new_call, InsertPoint.before(call))
    for old, new in zip(kept_results, new_call.results, strict=True):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    Rewriter.erase_op(call)


def buffer_results_to_out_params(module: ModuleOp) -> None:
    """Rewrites every function of `module` that returns memrefs (see the module docstring)."""
    functions = {op.sym_name.data: op for op in module.walk() if isinstance(op, func.FuncOp)}
    rewritten: dict[str, list[int]] = {}
    for name, function in functions.items():
        positions = _memref_results(function)
        if not positions:
            continue
        if function.is_declaration:
            _fail(
                function,
                f"@{name} is a declaration that returns a buffer: the planner cannot see or "
                "move that allocation",
            )
        rewritten[name] = positions
    if not rewritten:
        return
    for op in list(module.walk()):
        if isinstance(op, func.CallOp) and op.callee.root_reference.data in rewritten:
            _rewrite_call(op, rewritten[op.callee.root_reference.data])
    for name, positions in rewritten.items():
        _rewrite_function(functions[name], positions)


@dataclass(frozen=True)
class UsmpBufferResultsToOutParamsPass(ModulePass):
    """Turns returned buffers into out-parameters that the caller allocates."""

    name = "usmp-buffer-results-to-out-params"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        buffer_results_to_out_params(op)
