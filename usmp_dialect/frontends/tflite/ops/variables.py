"""Resource variables: VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE and CALL_ONCE, as TFLM runs
them (`MicroResourceVariables`), on the state pool (SPEC §13).

A variable is named by VAR_HANDLE's (container, shared name); every handle of one name is the
same variable, a state buffer (`TfliteImporter.state_buffer`) that keeps its value from one
run to the next. READ_VARIABLE copies it into its output, ASSIGN_VARIABLE copies a value into
it (of int8, int16, int32, int64, float32 or bool: bytes copied, as TFLM does). Its initial
value is what the CALL_ONCE init subgraph assigns to it (folded at import: the
subgraph may only hold VAR_HANDLE and ASSIGN_VARIABLE of constants), else TFLM's default:
every byte the variable's int8 zero point (0 without quantisation). CALL_ONCE itself emits
nothing: the state starts with those values.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import tflite
from xdsl.dialects import memref

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import OperatorContext, TfliteImporter, operator
from usmp_dialect.frontends.tflite.reader import Graph, Operator, Tensor
from usmp_dialect.kernels.builder import finish, function
from usmp_dialect.kernels.module import memref_of

# TFLM's variables are bytes of any type (`MicroResourceVariables`); these are the types the
# rest of the import computes with
VARIABLE_TYPES = tuple(
    np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.float32, np.bool_)
)


def _key(op: Operator) -> tuple[str, str]:
    options = op.option(tflite.VarHandleOptions)
    if options is None:
        return ("", f"variable_{op.index}")
    container = (options.Container() or b"").decode("utf-8", "replace")
    shared = (options.SharedName() or b"").decode("utf-8", "replace")
    return (container, shared or f"variable_{op.index}")


def _default(tensor: Tensor) -> np.ndarray:
    """TFLM's `MicroResourceVariables::Allocate`: every byte the zero point (as int8)."""
    byte = 0
    if tensor.quantization is not None:
        byte = int(np.int8(tensor.quantization.zero_point).view(np.uint8))
    raw = np.full(tensor.size_bytes, byte, dtype=np.uint8)
    return raw.view(tensor.dtype).reshape(tensor.shape)


def init_values(graph: Graph) -> dict[tuple[str, str], np.ndarray]:
    """The values the CALL_ONCE init subgraphs assign, by variable."""
    values: dict[tuple[str, str], np.ndarray] = {}
    for index, subgraph in graph.init_subgraphs:
        handles: dict[int, tuple[str, str]] = {}
        for op in subgraph.operators:
            if op.opcode == "VAR_HANDLE":
                handles[op.outputs[0]] = _key(op)
            elif op.opcode == "ASSIGN_VARIABLE" and op.inputs[0] in handles:
                value = subgraph.tensors[op.inputs[1]]
                if value.data is None:
                    raise ModelImportError(
                        f"{graph.path}: init subgraph {index}: ASSIGN_VARIABLE (operator "
                        f"{op.index}) assigns {value.describe()}, which is not a constant"
                    )
                values[handles[op.inputs[0]]] = value.data
            else:
                raise ModelImportError(
                    f"{graph.path}: init subgraph {index}: {op.opcode} (operator {op.index}) "
                    "is not supported there (only VAR_HANDLE and ASSIGN_VARIABLE of constants)"
                )
    return values


def _variable(context: OperatorContext, tensor: Tensor) -> object:
    """The state buffer of the variable the operator's input 0 (a VAR_HANDLE's output) names,
    shaped and typed as `tensor` (the value read or assigned)."""
    importer: TfliteImporter = context.importer
    handle = context.op.inputs[0] if context.op.inputs else -1
    if handle not in importer.resources:
        raise context.fail("input 0 must be the output of a VAR_HANDLE")
    key = importer.resources[handle]
    if tensor.dtype not in VARIABLE_TYPES or not tensor.shape:
        raise context.fail(f"a variable of {tensor.describe()} is not supported")
    initial = init_values(importer.top.graph).get(key)  # subgraph 0 runs CALL_ONCE
    if initial is not None and (
        initial.dtype != tensor.dtype or initial.size != int(np.prod(tensor.shape))
    ):
        raise context.fail(f"the init subgraph assigns {key[1]!r} a value of another type/shape")
    if initial is None:
        initial = _default(tensor)
    named = replace(tensor, name=key[1], variable=True)
    return importer.state_buffer(named, initial.reshape(tensor.shape), key=("resource", key))


@operator("VAR_HANDLE", "CALL_ONCE", types=())
def _handle(context: OperatorContext) -> None:
    """VAR_HANDLE names a variable; CALL_ONCE's init subgraph is folded into the initial
    values: neither computes anything at run time."""
    if context.op.opcode == "VAR_HANDLE":
        context.importer.resources[context.op.outputs[0]] = _key(context.op)


@operator("READ_VARIABLE", types=VARIABLE_TYPES)
def _read(context: OperatorContext) -> None:
    output = context.tensor(0, output=True)
    variable = _variable(context, output)
    type_ = memref_of(output.shape, output.dtype)
    op, kernel, (source, target) = function(context.name, [("variable", type_), ("value", type_)])
    kernel.insert(memref.CopyOp(source, target))
    finish(kernel)
    context.module.add(op)
    context.call([variable], [context.result()])  # type: ignore[list-item]


@operator("ASSIGN_VARIABLE", types=VARIABLE_TYPES)
def _assign(context: OperatorContext) -> None:
    value = context.tensor(1)
    variable = _variable(context, value)
    type_ = memref_of(value.shape, value.dtype)
    if context.is_constant(1):
        symbol = context.module.constant(f"{context.name}_value", context.constant(1))
        op, kernel, (target,) = function(context.name, [("variable", type_)])
        kernel.insert(memref.CopyOp(kernel.get_global(*symbol), target))
        finish(kernel)
        context.module.add(op)
        context.call([], [variable])  # type: ignore[list-item]
        return
    op, kernel, (source, target) = function(context.name, [("value", type_), ("variable", type_)])
    kernel.insert(memref.CopyOp(source, target))
    finish(kernel)
    context.module.add(op)
    context.call([context.value(1)], [variable])  # type: ignore[list-item]
