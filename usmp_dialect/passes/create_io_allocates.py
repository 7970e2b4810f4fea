"""`usmp-create-io-allocates`: use case U4, the model's inputs and outputs become planned buffers.

Each memref argument of the entry function (`entry=main`) is removed from its signature and
replaced by `usmp.allocate {usmp.io = "input" | "output", usmp.io_index = N : i64}` at the
start of the entry body (N is the argument's position in the original signature, the
allocation takes the argument's name and its `usmp.tensor` / `usmp.quantization` attributes).
The analysis then keeps inputs live from the start of the run and outputs until its end, so
the application can write every input before the run and read every output after it (TVM's
U4 let them share memory, tvm-usmp.md §7.3-2).

An argument is an output when it is written anywhere, directly or through aliases and callees
(`memref.store`, `memref.copy` targets, linalg `outs`, ops declaring a write effect on it, and
calls to function declarations, whose effect is unknown); otherwise it is an input. The
argument attribute `{usmp.io = "input"}` / `{usmp.io = "output"}` overrides the rule. Non-memref
arguments stay. Running the pass twice changes nothing (the second time there are no memref
arguments left).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import MemoryEffectKind, get_effects
from xdsl.utils.exceptions import PassFailedException, VerifyException

from usmp_dialect.analysis.buffer_info import ALIAS_OPS, module_functions
from usmp_dialect.dialects.usmp import (
    QUANTIZATION_ATTRIBUTE,
    TENSOR_ATTRIBUTE,
    AllocateOp,
    io_kind,
    verify_buffer_type,
)

IO_ATTRIBUTE = "usmp.io"
IO_INDEX_ATTRIBUTE = "usmp.io_index"

# op name -> index of the memref operand it writes
WRITTEN_OPERAND = {
    "memref.store": 1,
    "affine.store": 1,
    "memref.copy": 1,
    "memref.atomic_rmw": 1,
    "memref.generic_atomic_rmw": 0,
    "vector.store": 1,
    "vector.transfer_write": 1,
}


def _fail(op: Operation, message: str) -> NoReturn:
    op.emit_error(message, PassFailedException(message))


def written_arguments(module: ModuleOp, entry: func.FuncOp) -> set[int]:
    """Positions of the entry arguments written anywhere (through aliases and callees)."""
    functions = module_functions(module)
    written: set[int] = set()
    visited: set[tuple[str, tuple[tuple[int, int], ...]]] = set()

    def walk(function: func.FuncOp, env: dict[SSAValue, int]) -> None:
        key = (
            function.sym_name.data,
            tuple(sorted((i, env[a]) for i, a in enumerate(function.args) if a in env)),
        )
        if key in visited:
            return
        visited.add(key)
        for op in function.body.walk():
            if isinstance(op, func.CallOp):
                callee = functions.get(op.callee.root_reference.data)
                if callee is None or callee.is_declaration:
                    written.update(env[o] for o in op.operands if o in env)
                    continue
                walk(
                    callee,
                    {
                        arg: env[o]
                        for o, arg in zip(op.operands, callee.args, strict=False)
                        if o in env
                    },
                )
                continue
            if op.name in ALIAS_OPS and op.operands and op.operands[0] in env:
                for result in op.results:
                    env[result] = env[op.operands[0]]
            index = WRITTEN_OPERAND.get(op.name)
            if index is not None and len(op.operands) > index and op.operands[index] in env:
                written.add(env[op.operands[index]])
            outputs = getattr(op, "outputs", None)
            if isinstance(outputs, tuple | list):
                written.update(env[o] for o in outputs if isinstance(o, SSAValue) and o in env)
            effects = get_effects(op)
            for effect in effects or ():
                if effect.kind == MemoryEffectKind.WRITE and effect.value in env:
                    assert isinstance(effect.value, SSAValue)
                    written.add(env[effect.value])

    walk(entry, {arg: index for index, arg in enumerate(entry.args)})
    return written


@dataclass(frozen=True)
class UsmpCreateIoAllocatesPass(ModulePass):
    """Turns the entry function's memref arguments into I/O buffers planned in the workspace."""

    name = "usmp-create-io-allocates"

    entry: str = "main"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entry = module_functions(op).get(self.entry)
        if entry is None or entry.is_declaration:
            _fail(op, f"entry function @{self.entry} does not exist or has no body")
        written = written_arguments(op, entry)
        arg_attrs: list[Attribute] = (
            list(entry.arg_attrs.data)
            if entry.arg_attrs is not None
            else [DictionaryAttr({}) for _ in entry.args]
        )
        block = entry.body.block
        kept_attrs: list[Attribute] = []
        allocations: list[AllocateOp] = []
        for index, argument in enumerate(list(block.args)):
            attrs = arg_attrs[index]
            assert isinstance(attrs, DictionaryAttr)
            if not isinstance(argument.type, MemRefType):
                kept_attrs.append(attrs)
                continue
            try:
                buffer_type = verify_buffer_type(argument.type)
            except VerifyException as error:
                _fail(entry, f"argument #{index} of @{self.entry}: {error}")
            override = attrs.data.get(IO_ATTRIBUTE)
            if override is not None and io_kind(override) is None:
                _fail(entry, f'argument #{index}: {IO_ATTRIBUTE} must be "input" or "output"')
            kind = io_kind(override) or ("output" if index in written else "input")
            allocation = AllocateOp(buffer_type)
            allocation.attributes[IO_ATTRIBUTE] = StringAttr(kind)
            allocation.attributes[IO_INDEX_ATTRIBUTE] = IntegerAttr(index, 64)
            for carried in (TENSOR_ATTRIBUTE, QUANTIZATION_ATTRIBUTE):
                if carried in attrs.data:
                    allocation.attributes[carried] = attrs.data[carried]
            allocation.memref.name_hint = argument.name_hint or f"arg{index}"
            allocations.append(allocation)
            argument.replace_all_uses_with(allocation.memref)
        if not allocations:
            return
        for argument in [a for a in block.args if isinstance(a.type, MemRefType)]:
            block.erase_arg(argument)
        Rewriter.insert_op(allocations, InsertPoint.at_start(block))
        entry.properties["arg_attrs"] = ArrayAttr(kept_attrs)
        if all(not attrs.data for attrs in kept_attrs if isinstance(attrs, DictionaryAttr)):
            del entry.properties["arg_attrs"]
        entry.update_function_type()
