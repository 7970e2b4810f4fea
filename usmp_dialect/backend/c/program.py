"""The whole planned program as a C source file and its header (SPEC §7).

The interface: `int32_t <p>_run(...)` with `struct <p>_inputs`, `struct <p>_outputs` and, when
any pool is external, `struct <p>_workspace_pools` (a `void*` per external pool); under U4
(`usmp.io_allocations` on the module) `<p>_map_inputs` / `<p>_map_outputs` return pointers into
the pools and `<p>_run` takes only the pools.

Only the entry and the functions it (transitively) calls are printed and checked: other
functions are not part of the model. Operator functions are `static` and take only the pools
their printed code uses (a pool reached only through unused buffers is no parameter).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from usmp_dialect.backend.c import c_types, loops
from usmp_dialect.backend.c.names import NameTable, sanitize
from usmp_dialect.backend.c.printer import (
    ARM_SXTAB16_ROR8,
    ARM_SXTB16_ROR8,
    HELPERS,
    CFunctionPrinter,
    FunctionSignature,
    ModuleContext,
    check_planned,
    dead_ops,
    is_dead_use,
    unsupported_op_error,
)
from usmp_dialect.dialects import pool
from usmp_dialect.dialects.usmp import (
    MODEL_ATTRIBUTE,
    NOINLINE_ATTRIBUTE,
    QUANTIZATION_ATTRIBUTE,
    TENSOR_ATTRIBUTE,
    buffer_size_bytes,
)

# Struct fields (inputs, outputs, pools) are at most 32 characters, so that the macros made
# of them (`<P>_OUTPUT_<FIELD>_ZERO_POINT`) stay within C's 63 significant characters for
# prefixes of up to 12 (`usmp_default`).
FIELD_CHARS = 32
IO_ALLOCATIONS_ATTR = "usmp.io_allocations"
TARGET_ATTRIBUTE = "usmp.target"

# Ops through which a memref value reaches another memref value (aliases of one buffer).
_ALIAS_OPS = (
    memref.ViewOp,
    memref.SubviewOp,
    memref.CastOp,
    memref.ReinterpretCastOp,
    memref.CollapseShapeOp,
    memref.ExpandShapeOp,
    memref.AssumeAlignmentOp,
    arith.SelectOp,
)


@dataclass(frozen=True)
class PoolInfo:
    """A pool as the C interface sees it."""

    name: str  # the pool symbol
    field: str  # C identifier (struct field, macro part)
    kind: str  # "workspace" | "constant" | "state"
    internal: bool
    size_bytes: int
    alignment_bytes: int
    data: bytes | None  # constant pools: their bytes; state pools: their initial bytes
    section: str | None = None  # internal pools: the linker section of the C array

    @property
    def const(self) -> bool:
        return self.kind == "constant"


@dataclass(frozen=True)
class TensorIO:
    """One model input or output."""

    name: str  # C field name
    kind: str  # "input" | "output"
    element_type: str  # the C element type, e.g. "int8_t"
    pool: str | None = None  # U4: where it lives
    offset: int = 0
    shape: tuple[int, ...] = ()
    dtype: str = ""  # the element type by its numpy name, e.g. "int8", "float32"
    size_bytes: int = 0
    tensor: str | None = None  # the model's name of the tensor (`usmp.tensor`)
    scale: float | None = None  # per-tensor quantisation (`usmp.quantization`)
    zero_point: int | None = None

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class ModelInfo:
    """Where the program came from (`usmp.model`, written by the model frontends)."""

    name: str
    source: str
    sha256: str


@dataclass(frozen=True)
class Interface:
    prefix: str
    pools: tuple[PoolInfo, ...]
    inputs: tuple[TensorIO, ...]
    outputs: tuple[TensorIO, ...]
    workspace_io: bool  # U4
    model: ModelInfo | None = None

    @property
    def upper(self) -> str:
        return self.prefix.upper()

    @property
    def workspace_size_bytes(self) -> int:
        """All workspace pools, internal and external: the RAM the run needs beside its stack
        (and, except under U4, beside the inputs and outputs)."""
        return sum(p.size_bytes for p in self.pools if p.kind == "workspace")

    @property
    def constants_size_bytes(self) -> int:
        return sum(p.size_bytes for p in self.pools if p.const)

    @property
    def state_size_bytes(self) -> int:
        """All state pools (SPEC §13): the RAM that keeps its value between runs."""
        return sum(p.size_bytes for p in self.pools if p.kind == "state")

    @property
    def state_pools(self) -> tuple[PoolInfo, ...]:
        """The state pools with bytes in them: what `<p>_reset_state()` restores."""
        return tuple(p for p in self.pools if p.kind == "state" and p.size_bytes)

    @property
    def reset_parameters(self) -> str:
        """`<p>_reset_state`'s parameters: the pools struct when a state pool is external."""
        if any(not p.internal for p in self.state_pools):
            return f"struct {self.prefix}_workspace_pools* workspace_pools"
        return "void"

    @property
    def external_pools(self) -> tuple[PoolInfo, ...]:
        return tuple(p for p in self.pools if not p.internal)

    @property
    def run_parameters(self) -> str:
        p = self.prefix
        pools_param = f"struct {p}_workspace_pools* workspace_pools"
        if self.workspace_io:
            return pools_param
        parameters = [f"struct {p}_inputs* inputs", f"struct {p}_outputs* outputs"]
        if self.external_pools:
            parameters.append(pools_param)
        return ", ".join(parameters)


# ---- analysis --------------------------------------------------------------------------------


def _is_written(value: SSAValue, written: dict[str, list[bool]], seen: set[SSAValue]) -> bool:
    """Whether the memory behind `value` may be written (through aliases and calls)."""
    if value in seen:
        return False
    seen.add(value)
    for use in value.uses:
        user = use.operation
        if isinstance(user, memref.LoadOp | memref.DimOp):
            continue
        if isinstance(user, memref.StoreOp):
            if use.index == 1:
                return True
            continue
        if isinstance(user, memref.CopyOp):
            if use.index == 1:
                return True
            continue
        if isinstance(user, _ALIAS_OPS):
            if isinstance(user, arith.SelectOp) and use.index == 0:
                continue
            if any(_is_written(r, written, seen) for r in user.results):
                return True
            continue
        if isinstance(user, func.CallOp):
            callee = written.get(user.callee.root_reference.data)
            if callee is None or use.index >= len(callee) or callee[use.index]:
                return True
            continue
        return True  # anything else: assume it writes
    return False


def written_arguments(functions: list[func.FuncOp]) -> dict[str, list[bool]]:
    """For every function with a body, which arguments it (transitively) writes."""
    written = {
        f.sym_name.data: [False] * len(f.function_type.inputs.data)
        for f in functions
        if f.body.blocks
    }
    changed = True
    while changed:
        changed = False
        for function in functions:
            if not function.body.blocks:
                continue
            flags = written[function.sym_name.data]
            for index, arg in enumerate(function.body.block.args):
                if (
                    not flags[index]
                    and isinstance(arg.type, MemRefType)
                    and _is_written(arg, written, set())
                ):
                    flags[index] = True
                    changed = True
    return written


def _reachable_functions(module: ModuleOp, entry: func.FuncOp) -> list[func.FuncOp]:
    """Functions called (transitively) from the entry, in module order."""
    by_name = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    reached = {entry.sym_name.data}
    work = [entry]
    while work:
        for op in work.pop().walk():
            if isinstance(op, func.CallOp):
                name = op.callee.root_reference.data
                if name in by_name and name not in reached:
                    reached.add(name)
                    work.append(by_name[name])
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data in reached]


def model_ops(module: ModuleOp, entry_name: str) -> list[Operation]:
    """What the C code is made of: the module-level ops other than functions, and the functions
    the entry reaches. Functions the entry never calls are not part of the model: they are not
    printed (nor checked). Without the entry function, the whole module."""
    entry = next(
        (
            op
            for op in module.ops
            if isinstance(op, func.FuncOp) and op.sym_name.data == entry_name and op.body.blocks
        ),
        None,
    )
    if entry is None:
        return [module]
    others: list[Operation] = [op for op in module.ops if not isinstance(op, func.FuncOp)]
    return others + list(_reachable_functions(module, entry))


def unused_pool_parameters(
    functions: list[func.FuncOp], entry: func.FuncOp
) -> dict[str, frozenset[int]]:
    """For every printed operator function, the positions of its pool parameters (`pool.pool`)
    that nothing printed uses, e.g. a pool only reached through an unused buffer: the C
    function does not take them (SPEC §7: operator functions take the pools they use). A pool
    only passed on to callees that drop it is dropped too."""
    dropped: dict[str, frozenset[int]] = {f.sym_name.data: frozenset() for f in functions}
    changed = True
    while changed:
        changed = False
        for function in functions:
            if function is entry or is_external(function):
                continue
            name = function.sym_name.data
            dead = dead_ops(function, dropped)
            unused = {
                arg.index
                for arg in function.body.block.args
                if "pool.pool" in _argument_attributes(function, arg.index)
                and all(is_dead_use(use, dead, dropped) for use in arg.uses)
            }
            if unused != dropped[name]:
                dropped[name] = frozenset(unused)
                changed = True
    return dropped


def _argument_attributes(function: func.FuncOp, index: int) -> dict[str, object]:
    if function.arg_attrs is None:
        return {}
    return dict(function.arg_attrs.data[index].data)


def _pool_info(pool_op: pool.PoolOpBase, module: ModuleOp, names: NameTable) -> PoolInfo:
    size = pool_op.size_bytes.value.data if pool_op.size_bytes is not None else None
    if size is None:
        for op in module.walk():
            if isinstance(op, pool.BaseOp) and op.pool.root_reference.data == pool_op.pool_name:
                memref_type = op.memref.type
                if isinstance(memref_type, MemRefType):
                    size = memref_type.get_shape()[0]
    data: bytes | None = None
    if isinstance(pool_op, pool.ConstantPoolOp | pool.StatePoolOp) and pool_op.data is not None:
        data = bytes(pool_op.data.data.data)  # i8 elements: the raw bytes are the pool's
        if size is None:
            size = len(data)
    return PoolInfo(
        name=pool_op.pool_name,
        field=names.fresh(pool_op.pool_name),
        kind=pool_op.KIND,
        internal=pool_op.is_internal,
        size_bytes=size or 0,
        alignment_bytes=pool_op.alignment_bytes,
        data=data,
        section=pool_op.section_name,
    )


def find_entry(module: ModuleOp, entry: str) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            if not op.body.blocks:
                raise DiagnosticException(f"C backend: the entry function @{entry} has no body")
            return op
    raise DiagnosticException(
        f"C backend: no entry function @{entry} in the module (target option entry=NAME)"
    )


def build_interface(
    module: ModuleOp,
    prefix: str,
    entry_name: str,
    written: dict[str, list[bool]] | None = None,
) -> Interface:
    """The C interface of a planned module (`written`: the module's `written_arguments`, when
    the caller already has them)."""
    entry = find_entry(module, entry_name)
    if written is None:
        written = written_arguments([op for op in module.ops if isinstance(op, func.FuncOp)])
    field_names = NameTable(limit=FIELD_CHARS)
    pools = tuple(_pool_info(p, module, field_names) for p in pool.module_pools(module))
    io_attr = module.attributes.get(IO_ALLOCATIONS_ATTR)
    inputs: list[TensorIO] = []
    outputs: list[TensorIO] = []
    io_names = NameTable(limit=FIELD_CHARS)
    if io_attr is not None:
        if not isinstance(io_attr, ArrayAttr):
            raise DiagnosticException(f"C backend: {IO_ALLOCATIONS_ATTR} must be an array")
        if any(isinstance(t, MemRefType) for t in entry.function_type.inputs.data):
            raise DiagnosticException(
                f"C backend: the module has {IO_ALLOCATIONS_ATTR} (U4) but the entry function "
                f"@{entry_name} still takes memref arguments"
            )
        for item in io_attr.data:
            tensor = _io_allocation(item, pools)
            tensor = replace(tensor, name=_field_name(io_names, tensor.name))
            (inputs if tensor.kind == "input" else outputs).append(tensor)
    else:
        flags = written[entry_name]
        for index, arg in enumerate(entry.body.block.args):
            if not isinstance(arg.type, MemRefType):
                raise DiagnosticException(
                    f"C backend: the entry function @{entry_name} takes a non-memref argument "
                    f"#{index} ({arg.type}); model inputs and outputs are memrefs"
                )
            attributes = _argument_attributes(entry, index)
            io = attributes.get("usmp.io")
            written_kind = "output" if flags[index] else "input"
            kind = io.data if isinstance(io, StringAttr) else written_kind
            tensor = _tensor_io(
                _field_name(io_names, arg.name_hint or f"arg{index}"),
                kind,
                arg.type,
                attributes,
                f"argument #{index} of function @{entry_name}",
            )
            (inputs if kind == "input" else outputs).append(tensor)
    return Interface(
        prefix, pools, tuple(inputs), tuple(outputs), io_attr is not None, _model_info(module)
    )


def _field_name(names: NameTable, hint: str) -> str:
    """A struct field for an input or output, unique also in upper case (the macros)."""
    name = names.fresh(hint)
    while any(name.upper() == other.upper() for other in names.taken if other != name):
        name = names.fresh(hint)
    return name


def _model_info(module: ModuleOp) -> ModelInfo | None:
    attr = module.attributes.get(MODEL_ATTRIBUTE)
    if not isinstance(attr, DictionaryAttr):
        return None
    fields = {key: value.data for key, value in attr.data.items() if isinstance(value, StringAttr)}
    if not all(key in fields for key in ("name", "source", "sha256")):
        raise DiagnosticException(
            f'C backend: malformed {MODEL_ATTRIBUTE} {attr}: expected {{name = "...", '
            'source = "...", sha256 = "..."}'
        )
    return ModelInfo(fields["name"], fields["source"], fields["sha256"])


def _tensor_io(
    name: str,
    kind: str,
    memref_type: MemRefType,
    attributes: Mapping[str, Attribute],
    where: str,
    pool_name: str | None = None,
    offset: int = 0,
) -> TensorIO:
    """A model input or output of type `memref_type`, described by `attributes` (those of an
    entry argument, or of a `usmp.io_allocations` entry with `tensor` / `quantization`)."""
    element_c = _element_c_type(memref_type, where)
    tensor = attributes.get(TENSOR_ATTRIBUTE, attributes.get("tensor"))
    quantization = attributes.get(QUANTIZATION_ATTRIBUTE, attributes.get("quantization"))
    scale = zero_point = None
    if quantization is not None:
        scale_attr = (
            quantization.data.get("scale") if isinstance(quantization, DictionaryAttr) else None
        )
        zero_attr = (
            quantization.data.get("zero_point")
            if isinstance(quantization, DictionaryAttr)
            else None
        )
        if not (
            isinstance(scale_attr, FloatAttr | IntegerAttr) and isinstance(zero_attr, IntegerAttr)
        ):
            raise DiagnosticException(
                f"C backend: malformed {QUANTIZATION_ATTRIBUTE} {quantization} on {where}: "
                "expected {scale = <f64>, zero_point = <i64>}"
            )
        scale, zero_point = float(scale_attr.value.data), int(zero_attr.value.data)
    dtype = _dtype_name(memref_type.element_type)
    storage = quantization.data.get("storage") if isinstance(quantization, DictionaryAttr) else None
    if isinstance(storage, StringAttr) and storage.data == "uint8" and dtype == "int8":
        element_c, dtype = "uint8_t", "uint8"  # an i8 holding uint8 bytes (TFLite UINT8)
    return TensorIO(
        name,
        kind,
        element_c,
        pool_name,
        offset,
        shape=tuple(memref_type.get_shape()),
        dtype=dtype,
        size_bytes=buffer_size_bytes(memref_type),
        tensor=tensor.data if isinstance(tensor, StringAttr) else None,
        scale=scale,
        zero_point=zero_point,
    )


def _dtype_name(element_type: Attribute) -> str:
    """The element type by its numpy name (`int8`, `float32`, `bool` for i1)."""
    if isinstance(element_type, IndexType):
        return "int64"
    if isinstance(element_type, IntegerType):
        bits = element_type.width.data
        return "bool" if bits == 1 else f"int{bits}"
    return f"float{c_types.width(element_type)}"


def _element_c_type(memref_type: MemRefType, where: str) -> str:
    try:
        return c_types.c_type(memref_type.element_type)
    except DiagnosticException as error:
        raise DiagnosticException(f"{error} in {where}") from error


def _io_allocation(item: object, pools: tuple[PoolInfo, ...]) -> TensorIO:
    if not isinstance(item, DictionaryAttr):
        raise DiagnosticException(f"C backend: {IO_ALLOCATIONS_ATTR} entries are dictionaries")
    fields = item.data
    name, kind = fields.get("name"), fields.get("kind")
    pool_ref, offset, type_ = fields.get("pool"), fields.get("offset"), fields.get("type")
    if not (
        isinstance(name, StringAttr)
        and isinstance(kind, StringAttr)
        and kind.data in ("input", "output")
        and isinstance(pool_ref, SymbolRefAttr)
        and isinstance(offset, IntegerAttr)
        and isinstance(type_, MemRefType)
    ):
        raise DiagnosticException(
            f"C backend: malformed {IO_ALLOCATIONS_ATTR} entry {item}: expected "
            '{name = "x", kind = "input"|"output", pool = @p, offset = N : i64, type = memref<..>}'
        )
    pool_name = pool_ref.root_reference.data
    if all(p.name != pool_name for p in pools):
        raise DiagnosticException(
            f"C backend: {IO_ALLOCATIONS_ATTR} entry '{name.data}' names unknown pool @{pool_name}"
        )
    return _tensor_io(
        name.data,
        kind.data,
        type_,
        fields,
        f"{IO_ALLOCATIONS_ATTR} entry '{name.data}'",
        pool_name,
        offset.value.data,
    )


# ---- header ----------------------------------------------------------------------------------


_DECIMAL = tuple(str(value) for value in range(256))


def _data_macro(data: bytes, size: int) -> str:
    """The bytes `data` (zero-padded to `size`) as decimal initializer text, 16 a row."""
    values = data + bytes(size - len(data))
    if not values:
        return "0"
    rows = [
        ", ".join(map(_DECIMAL.__getitem__, values[i : i + 16])) for i in range(0, len(values), 16)
    ]
    return " \\\n    ".join(row + ("," if i < len(rows) - 1 else "") for i, row in enumerate(rows))


_LINE_BYTES = 128  # source bytes per string literal line


def _string_literal(data: bytes, size: int) -> str:
    """The bytes `data` (zero-padded to `size`) as C string literals, one line per 128
    bytes: printable ASCII as itself (but `"`, `\\` and `?`), every other byte a 3-digit
    octal escape, which no following character can extend. gcc reads this far faster than an
    initializer list of numbers; it takes a char array of `size + 1`. Built in numpy, one
    chunk, whatever the size."""
    values = np.frombuffer(data + bytes(size - len(data)), dtype=np.uint8)
    step = _LINE_BYTES * 8192
    return "\n  ".join(
        _literal_lines(values[start : start + step]) for start in range(0, len(values), step)
    )


def _literal_lines(values: np.ndarray) -> str:
    """`values` as `_string_literal` lines (quoted, separated by a newline and indent)."""
    raw = (values >= 0x20) & (values < 0x7F)
    for special in b'"\\?':
        raw &= values != special
    widths = np.where(raw, 1, 4).astype(np.int64)
    rows = np.arange(len(values), dtype=np.int64) // _LINE_BYTES
    separator = b'"\n  "'  # closes a line's literal and opens the next
    starts = np.cumsum(widths) - widths + rows * len(separator) + 1
    total = int(widths.sum()) + (int(rows[-1]) if len(rows) else 0) * len(separator) + 2
    out = np.empty(total, dtype=np.uint8)
    out[0], out[-1] = ord('"'), ord('"')
    out[starts[raw]] = values[raw]
    escaped, codes = starts[~raw], values[~raw]
    out[escaped] = ord("\\")
    out[escaped + 1] = ord("0") + (codes >> 6)
    out[escaped + 2] = ord("0") + ((codes >> 3) & 7)
    out[escaped + 3] = ord("0") + (codes & 7)
    row_ends = np.flatnonzero(np.diff(rows)) + 1  # first byte of every row but the first
    for offset, byte in enumerate(separator):
        out[starts[row_ends] - len(separator) + offset] = byte
    return out.tobytes().decode("ascii")


def _struct(name: str, fields: list[str], comment: str) -> list[str]:
    lines = [f"/* {comment} */", f"struct {name} {{"]
    if fields:
        lines += [f"  void* {field};" for field in fields]
    else:
        lines.append("  char empty_; /* C forbids empty structs */")
    lines.append("};")
    return lines


def _comment_text(text: str) -> str:
    """`text` safe inside a C block comment (no `*/`, no control characters)."""
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text.replace("*/", "*\\/")


def scale_literal(scale: float) -> str:
    """The float32 `scale` as the shortest C float literal that reads back as that float32."""
    text = str(np.float32(scale))
    if not any(c in text for c in ".e"):
        text += ".0"
    text += "f"
    return f"({text})" if text.startswith("-") else text


def _tensor_macros(interface: Interface, tensor: TensorIO) -> list[str]:
    """The macros describing one input or output (`<P>_INPUT_<FIELD>_SIZE`, ...)."""
    stem = f"{interface.upper}_{tensor.kind.upper()}_{tensor.name.upper()}"
    described = f" (model tensor '{_comment_text(tensor.tensor)}')" if tensor.tensor else ""
    if tensor.pool is not None:
        described += f", in pool {tensor.pool} at offset {tensor.offset}"
    if tensor.dtype == "bool":  # i1: stored as a byte (`uint8_t`), as TFLite's C++ bool
        described += ", bool: one byte per element, 0 or 1"
    lines = [
        f"/* {tensor.kind} '{tensor.name}'{described} */",
        f"#define {stem}_SIZE {tensor.size_bytes}",
        f"#define {stem}_ELEMENTS {tensor.elements}",
        f"#define {stem}_RANK {len(tensor.shape)}",
    ]
    if tensor.shape:  # C has no empty initializer list
        lines.append(f"#define {stem}_SHAPE {{{', '.join(map(str, tensor.shape))}}}")
    lines.append(f"#define {stem}_DTYPE {tensor.element_type}")
    if tensor.scale is not None and math.isfinite(tensor.scale):
        lines.append(f"#define {stem}_SCALE {scale_literal(tensor.scale)}")
    if tensor.zero_point is not None:
        text = str(tensor.zero_point)
        lines.append(f"#define {stem}_ZERO_POINT {f'({text})' if tensor.zero_point < 0 else text}")
    return lines


def emit_header(interface: Interface) -> str:
    p, P = interface.prefix, interface.upper
    guard = f"{P}_H_"
    lines = [f"/* {p}.h: interface of the model '{p}', generated by usmp-dialect (C backend)."]
    if interface.model is not None:
        model = interface.model
        lines += [
            f" * Model: {_comment_text(model.name)} (file {_comment_text(model.source)},",
            f" * sha256 {_comment_text(model.sha256)}).",
        ]
    lines[-1] += " */"
    lines += [
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        f"#define {P}_INPUTS_COUNT {len(interface.inputs)}",
        f"#define {P}_OUTPUTS_COUNT {len(interface.outputs)}",
        "/* bytes of all workspace pools (internal and external) and of all constant pools */",
        f"#define {P}_WORKSPACE_SIZE {interface.workspace_size_bytes}",
        f"#define {P}_CONSTANTS_SIZE {interface.constants_size_bytes}",
        "/* bytes of all state pools: the model's state, kept from one run to the next */",
        f"#define {P}_STATE_SIZE {interface.state_size_bytes}",
        "",
    ]
    for tensor in (*interface.inputs, *interface.outputs):
        lines += [*_tensor_macros(interface, tensor), ""]
    for pool_info in interface.external_pools:
        kind = pool_info.kind.upper()
        lines.append(
            f"#define {P}_{pool_info.field.upper()}_{kind}_POOL_SIZE {pool_info.size_bytes}"
        )
        if pool_info.const:
            data = _data_macro(pool_info.data or b"", pool_info.size_bytes)
            lines.append(f"#define {P}_{pool_info.field.upper()}_CONSTANT_POOL_DATA \\\n    {data}")
    if interface.external_pools:
        lines.append("")
    lines += _struct(f"{p}_inputs", [t.name for t in interface.inputs], "model inputs")
    lines.append("")
    lines += _struct(f"{p}_outputs", [t.name for t in interface.outputs], "model outputs")
    lines.append("")
    if interface.external_pools:
        lines += _struct(
            f"{p}_workspace_pools",
            [pool_info.field for pool_info in interface.external_pools],
            "memory pools the application provides (workspace, constant and state)",
        )
        lines.append("")
    elif interface.workspace_io:
        lines += [f"struct {p}_workspace_pools; /* every pool is internal */", ""]
    if interface.workspace_io:
        lines += [
            f"struct {p}_inputs {p}_map_inputs(struct {p}_workspace_pools* workspace_pools);",
            f"struct {p}_outputs {p}_map_outputs(struct {p}_workspace_pools* workspace_pools);",
        ]
    if interface.state_pools:
        lines += _reset_declaration(interface)
    lines += [
        "/* Runs the model; returns 0 on success. */",
        f"int32_t {p}_run({interface.run_parameters});",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        "",
        f"#endif /* {guard} */",
        "",
    ]
    return "\n".join(lines)


def _reset_declaration(interface: Interface) -> list[str]:
    p = interface.prefix
    internal = all(pool_info.internal for pool_info in interface.state_pools)
    when = (
        [" * The first run restores it itself; call it to start a new sequence. */"]
        if internal
        else [
            " * Call it before the first run (the application provides the state pool memory)",
            " * and to start a new sequence. */",
        ]
    )
    return [
        "/* Restores the model's state (its state pools) to its initial value; returns 0.",
        *when,
        f"int32_t {p}_reset_state({interface.reset_parameters});",
        "",
    ]


def interface_dict(interface: Interface) -> dict[str, Any]:
    """The interface as plain JSON-able data (for `metadata.json` and tools): the model, the
    pools, and per input and output its C field, model tensor, shape, types, bytes and
    quantisation (None where the program does not say)."""

    def tensor_dict(tensor: TensorIO) -> dict[str, Any]:
        return {
            "name": tensor.name,
            "tensor": tensor.tensor,
            "shape": list(tensor.shape),
            "elements": tensor.elements,
            "dtype": tensor.dtype,
            "c_type": tensor.element_type,
            "size_bytes": tensor.size_bytes,
            "scale": tensor.scale,
            "zero_point": tensor.zero_point,
            "pool": tensor.pool,
            "offset": tensor.offset if tensor.pool is not None else None,
        }

    model = interface.model
    return {
        "prefix": interface.prefix,
        "model": (
            {"name": model.name, "source": model.source, "sha256": model.sha256}
            if model is not None
            else None
        ),
        "workspace_io": interface.workspace_io,
        "workspace_size_bytes": interface.workspace_size_bytes,
        "constants_size_bytes": interface.constants_size_bytes,
        "state_size_bytes": interface.state_size_bytes,
        "pools": [
            {
                "name": pool_info.name,
                "field": pool_info.field,
                "kind": pool_info.kind,
                "internal": pool_info.internal,
                "size_bytes": pool_info.size_bytes,
                "alignment": pool_info.alignment_bytes,
            }
            for pool_info in interface.pools
        ],
        "inputs": [tensor_dict(tensor) for tensor in interface.inputs],
        "outputs": [tensor_dict(tensor) for tensor in interface.outputs],
    }


# ---- source ----------------------------------------------------------------------------------


def _global_definition(op: memref.GlobalOp, c_name: str) -> str:
    memref_type = op.type
    element_c = c_types.c_type(memref_type.element_type)
    count = max(1, memref_type.element_count())
    const = "const " if op.constant is not None else ""
    alignment = f"_Alignas({op.alignment.value.data}) " if op.alignment is not None else ""
    declaration = f"static {const}{alignment}{element_c} {c_name}[{count}]"
    initial = op.initial_value
    if isinstance(initial, UnitAttr):
        return declaration + ";"
    assert isinstance(initial, DenseIntOrFPElementsAttr)
    values = initial.get_values()
    if initial.is_splat() and len(values) == 1:
        values = list(values) * memref_type.element_count()
    element_type = memref_type.element_type
    if c_types.is_float(element_type):
        texts = [c_types.float_literal(float(v), element_type) for v in values]
    else:
        texts = [c_types.int_literal(int(v), element_type) for v in values]
    rows = [", ".join(texts[i : i + 8]) for i in range(0, len(texts), 8)]
    return declaration + " = {\n  " + ",\n  ".join(rows) + "\n};"


CONSTANT_FORMS = ("text", "string")


def emit_source(module: ModuleOp, prefix: str, entry_name: str, constants: str = "text") -> str:
    """The C source; `constants`: how internal constant pools are written, "text" (an
    initializer list of decimal bytes, the default) or "string" (string literals of octal
    escapes, which gcc compiles many times faster: for large models)."""
    check_planned(model_ops(module, entry_name))
    written = written_arguments([op for op in module.ops if isinstance(op, func.FuncOp)])
    interface = build_interface(module, prefix, entry_name, written)
    entry = find_entry(module, entry_name)
    functions = _reachable_functions(module, entry)
    dropped = unused_pool_parameters(functions, entry)

    global_names = NameTable()
    run_name = f"{prefix}_run"
    for reserved in (
        run_name,
        f"{prefix}_reset_state",
        f"{prefix}_map_inputs",
        f"{prefix}_map_outputs",
        "inputs",
        "outputs",
        "workspace_pools",
        *(f"usmp_{helper}" for helper in HELPERS),
        "usmp_sxtb16_ror8",
    ):
        global_names.taken.add(reserved)
    for op in module.ops:
        if not isinstance(op, func.FuncOp | memref.GlobalOp | pool.PoolOpBase):
            raise unsupported_op_error(op)

    # Pools: internal ones are static arrays, external ones come from workspace_pools.
    dead: set[Operation] = set()
    for function in functions:
        dead |= dead_ops(function, dropped)
    # One walk for the pools and the globals the printed functions use.
    used_pools: set[str] = set()
    used_globals: set[str] = set()
    for function in functions:
        for op in function.walk():
            if isinstance(op, pool.BaseOp) and op not in dead:
                used_pools.add(op.pool.root_reference.data)
            elif isinstance(op, memref.GetGlobalOp) and op not in dead:
                used_globals.add(op.name_.root_reference.data)
    used_pools |= {t.pool for t in interface.inputs + interface.outputs if t.pool is not None}
    # Every pool array is aligned for the widest element any view of pool memory reads.
    element_alignment = max(
        (
            max(1, c_types.width(op.result.type.element_type) // 8)
            for function in functions
            for op in function.walk()
            if isinstance(op, memref.ViewOp) and isinstance(op.result.type, MemRefType)
        ),
        default=1,
    )
    pool_expressions: dict[str, tuple[str, bool]] = {}
    pool_arrays: dict[str, str] = {}
    pool_definitions: list[str] = []
    for pool_info in interface.pools:
        const = "const " if pool_info.const else ""
        if pool_info.internal:
            if pool_info.name not in used_pools:
                continue  # C rejects unused static arrays under -Wall -Werror
            array = global_names.fresh(f"{pool_info.field}_pool")
            pool_arrays[pool_info.name] = array
            pool_expressions[pool_info.name] = (array, pool_info.const)
            size = max(1, pool_info.size_bytes)
            placement = (
                f' __attribute__((section("{pool_info.section}")))'
                if pool_info.section is not None
                else ""
            )
            declaration = (
                f"static {const}_Alignas({max(pool_info.alignment_bytes, element_alignment)}) "
                "uint8_t "
                f"{array}[{size}]{placement}"
            )
            comment = (
                f"/* pool @{pool_info.name}: internal {pool_info.kind} pool, "
                f"{pool_info.size_bytes} bytes */"
            )
            if pool_info.const and constants == "string":
                alignment = pool_info.alignment_bytes
                declaration = f"static const _Alignas({alignment}) uint8_t {array}[{size + 1}]"
                data = _string_literal(pool_info.data or b"", size)
                pool_definitions += [
                    comment,
                    "#pragma GCC diagnostic push  /* beyond C99's 4095 characters, on purpose */",
                    '#pragma GCC diagnostic ignored "-Woverlength-strings"',
                    f"{declaration} =\n  {data};",
                    "#pragma GCC diagnostic pop",
                    "",
                ]
            elif pool_info.const:
                data = _data_macro(pool_info.data or b"", size).replace(" \\\n    ", "\n  ")
                pool_definitions += [comment, f"{declaration} = {{\n  {data}\n}};", ""]
            elif pool_info.kind == "state":
                # Uninitialised (no copy of the initial bytes in the load image):
                # <p>_reset_state() writes them, the first run calls it when they are not 0.
                pool_definitions += [comment, f"{declaration};", ""]
            else:
                pool_definitions += [comment, f"{declaration};", ""]
        else:
            pool_expressions[pool_info.name] = (
                f"({const}uint8_t*)workspace_pools->{pool_info.field}",
                pool_info.const,
            )

    state = _state_reset(interface, pool_arrays, global_names) if interface.state_pools else None
    if state is not None:
        pool_definitions += state.definitions

    # Non-pooled data (memref.global) that the printed functions use.
    globals_: dict[str, tuple[str, bool]] = {}
    global_definitions: list[str] = []
    for op in module.ops:
        if isinstance(op, memref.GlobalOp) and op.sym_name.data in used_globals:
            c_name = global_names.fresh(op.sym_name.data)
            globals_[op.sym_name.data] = (c_name, op.constant is not None)
            global_definitions += [_global_definition(op, c_name), ""]

    # External functions (declarations, other targets) keep their exact names: they link.
    c_names: dict[str, str] = {entry_name: run_name}
    for function in functions:
        name = function.sym_name.data
        if function is not entry and is_external(function):
            if sanitize(name) != name or name in global_names.taken:
                raise DiagnosticException(
                    f"C backend: external function @{name} cannot be called from C under its "
                    "name (not a C identifier, or it clashes with a C or generated name)"
                )
            global_names.taken.add(name)
            c_names[name] = name
    signatures: dict[str, FunctionSignature] = {}
    for function in functions:
        name = function.sym_name.data
        c_name = c_names.get(name) or global_names.fresh(name)
        flags = written.get(name, [True] * len(function.function_type.inputs.data))
        signatures[name] = FunctionSignature(c_name, tuple(not f for f in flags), dropped[name])

    context = ModuleContext(signatures, pool_expressions, globals_, global_names, dead)
    entry_prologue = state.first_run if state is not None else []
    context.provenances = loops.module_provenances(
        functions,
        entry,
        list(pool.module_pools(module)),
        [op for op in module.ops if isinstance(op, memref.GlobalOp)],
    )
    prototypes: list[str] = []
    definitions: list[str] = []
    for function in functions:
        if function is entry:
            continue
        prototype, body = _emit_function(function, context, interface, is_entry=False)
        prototypes.append(prototype + ";")
        if body is not None:
            definitions += [body, ""]
    _, run_body = _emit_function(entry, context, interface, is_entry=True, prologue=entry_prologue)
    assert run_body is not None

    lines = [
        f"/* {prefix}.c: the model '{prefix}', generated by usmp-dialect (C backend). */",
        f'#include "{prefix}.h"',
        "",
        *(
            ["#include <math.h>"]
            if context.uses_math or _globals_use_math(global_definitions)
            else []
        ),
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        *(
            [
                "#if defined(__ARM_FEATURE_DSP)",
                "#include <arm_acle.h>",
                ARM_SXTB16_ROR8,
                *([ARM_SXTAB16_ROR8] if context.uses_arm_sxtab16 else []),
                "#endif",
            ]
            if context.uses_arm_dsp
            else []
        ),
        "",
    ]
    for helper in sorted(context.helpers):
        lines += [HELPERS[helper], ""]
    lines += pool_definitions + global_definitions
    if prototypes:
        lines += [*prototypes, ""]
    lines += definitions
    lines += [run_body, ""]
    if interface.workspace_io:
        lines += _map_functions(interface, pool_arrays)
    if state is not None:
        lines += state.reset_function
    # `"\n".join(lines).rstrip("\n") + "\n"` without the two extra copies of a source that
    # may hold hundreds of MB of constants
    while lines and not lines[-1].rstrip("\n"):
        lines.pop()
    if not lines:
        return "\n"
    lines[-1] = lines[-1].rstrip("\n")
    lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True)
class StateReset:
    """The C of `<p>_reset_state()` (SPEC §13): the initial bytes it copies (`definitions`,
    before the functions), the function itself, and the lines `<p>_run` starts with to reset
    the internal state pools on the first run when their initial bytes are not all 0 (zeroed
    static memory already holds a zero state)."""

    definitions: list[str]
    reset_function: list[str]
    first_run: list[str]


def _state_reset(
    interface: Interface, pool_arrays: dict[str, str], global_names: NameTable
) -> StateReset:
    p = interface.prefix
    definitions: list[str] = []
    internal_lines: list[str] = []
    external_lines: list[str] = []
    needs_first_run = False
    for pool_info in interface.state_pools:
        data = (pool_info.data or b"").ljust(pool_info.size_bytes, b"\0")
        if pool_info.internal:
            target = pool_arrays[pool_info.name]
        else:
            target = f"(uint8_t*)workspace_pools->{pool_info.field}"
        uniform = len(set(data)) == 1
        if uniform:
            line = f"memset({target}, {data[0]}, {len(data)});"
        else:
            initial = global_names.fresh(f"{pool_info.field}_initial")
            literal = _data_macro(data, len(data)).replace(" \\\n    ", "\n  ")
            definitions += [
                f"/* pool @{pool_info.name}: the initial bytes of the model's state */",
                f"static const uint8_t {initial}[{len(data)}] = {{\n  {literal}\n}};",
                "",
            ]
            line = f"memcpy({target}, {initial}, {len(data)});"
        if pool_info.internal:
            internal_lines.append(line)
            needs_first_run |= data.count(0) != len(data)
        else:
            external_lines.append(line)
    ready = global_names.fresh(f"{p}_state_ready")
    first_run: list[str] = []
    if needs_first_run:
        definitions += [
            "/* whether the internal state pools hold the model's state (the first run resets",
            f" * them; {p}_reset_state() does too) */",
            f"static uint8_t {ready} = 0;",
            "",
        ]
        first_run = [f"if (!{ready}) {{", *(f"  {line}" for line in internal_lines)]
        first_run += [f"  {ready} = 1;", "}"]
    body = [*internal_lines, *external_lines]
    if needs_first_run:
        body.append(f"{ready} = 1;")
    reset_function = [
        f"int32_t {p}_reset_state({interface.reset_parameters}) {{",
        *(f"  {line}" for line in body),
        "  return 0;",
        "}",
        "",
    ]
    return StateReset(definitions, reset_function, first_run)


def _globals_use_math(definitions: list[str]) -> bool:
    """Whether a `memref.global` initializer spells a non-finite float (NAN, INFINITY)."""
    return any(re.search(r"\b(NAN|INFINITY)\b", text) for text in definitions)


def _map_functions(interface: Interface, pool_arrays: dict[str, str]) -> list[str]:
    p = interface.prefix
    pools = {pool_info.name: pool_info for pool_info in interface.pools}
    lines: list[str] = []
    for kind, tensors in (("inputs", interface.inputs), ("outputs", interface.outputs)):
        lines += [
            f"struct {p}_{kind} {p}_map_{kind}(struct {p}_workspace_pools* workspace_pools) {{",
            f"  struct {p}_{kind} {kind};",
        ]
        if not any(not pools[t.pool].internal for t in tensors if t.pool is not None):
            lines.append("  (void)workspace_pools;")
        if not tensors:
            lines.append(f"  {kind}.empty_ = 0;")
        for tensor in tensors:
            assert tensor.pool is not None
            pool_info = pools[tensor.pool]
            base = (
                pool_arrays[pool_info.name]
                if pool_info.internal
                else f"(uint8_t*)workspace_pools->{pool_info.field}"
            )
            lines.append(f"  {kind}.{tensor.name} = {base} + {tensor.offset};")
        lines += [f"  return {kind};", "}", ""]
    return lines


def _emit_function(
    function: func.FuncOp,
    context: ModuleContext,
    interface: Interface,
    *,
    is_entry: bool,
    prologue: list[str] | None = None,
) -> tuple[str, str | None]:
    """The prototype and definition (None for a declaration) of one function; `prologue`:
    lines the entry's body starts with."""
    try:
        return _emit_function_unchecked(
            function, context, interface, is_entry=is_entry, prologue=prologue or []
        )
    except DiagnosticException as error:
        message = str(error)
        if "in function @" in message:
            raise
        raise DiagnosticException(f"{message} in function @{function.sym_name.data}") from error


def _emit_function_unchecked(
    function: func.FuncOp,
    context: ModuleContext,
    interface: Interface,
    *,
    is_entry: bool,
    prologue: list[str],
) -> tuple[str, str | None]:
    signature = context.functions[function.sym_name.data]
    output = io.StringIO()
    printer = CFunctionPrinter(
        output, module=context, names=context.global_names.child(), is_entry=is_entry
    )
    result_types = function.function_type.outputs.data
    if len(result_types) > 1 or any(isinstance(t, MemRefType) for t in result_types):
        raise DiagnosticException(
            f"C backend: @{function.sym_name.data} returns {len(result_types)} values; C "
            "functions return at most one scalar (memrefs never escape)"
        )
    if not function.body.blocks:
        parameters = ", ".join(
            _parameter_type(t, not const, "pool.pool" in _argument_attributes(function, i))
            for i, (t, const) in enumerate(
                zip(function.function_type.inputs.data, signature.const_params, strict=True)
            )
        )
        return_c = c_types.c_type(result_types[0]) if result_types else "void"
        return (
            f"/* @{function.sym_name.data} is declared only: the application provides it. */\n"
            f"{return_c} {signature.c_name}({parameters or 'void'})",
            None,
        )

    if is_entry:
        prototype = f"int32_t {signature.c_name}({interface.run_parameters})"
        printer.line(prototype + " {")
        with printer.indented():
            for line in prologue:
                printer.line(line)
            if not interface.workspace_io:
                _bind_entry_arguments(printer, function, interface, signature)
                if not interface.inputs:
                    printer.line("(void)inputs;")
                if not interface.outputs:
                    printer.line("(void)outputs;")
            if interface.external_pools or interface.workspace_io:
                external = {p.name for p in interface.external_pools}
                uses_pools = any(
                    isinstance(op, pool.BaseOp)
                    and op not in context.dead_ops
                    and op.pool.root_reference.data in external
                    for op in function.walk()
                )
                if not uses_pools:
                    printer.line("(void)workspace_pools;")
            printer.print_block(function.body.block)
        printer.line("}")
        return prototype, output.getvalue().rstrip("\n")

    parameters: list[str] = []
    for arg, const in zip(function.body.block.args, signature.const_params, strict=True):
        pool_ref = _argument_attributes(function, arg.index).get("pool.pool")
        hint = pool_ref.root_reference.data if isinstance(pool_ref, SymbolRefAttr) else None
        name = printer.bind_argument(
            arg,
            const,
            printer.names.fresh(arg.name_hint or hint or f"arg{arg.index}"),
            is_pool=hint is not None,
        )
        if arg.index in signature.dropped:
            continue  # a pool nothing printed uses: not a parameter
        parameter_c = printer.memrefs[arg].pointer_c if arg in printer.memrefs else None
        parameters.append(f"{parameter_c or _parameter_type(arg.type, not const)} {name}")
    return_c = c_types.c_type(result_types[0]) if result_types else "void"
    if is_external(function):
        target = function_target(function)
        return (
            f"/* @{function.sym_name.data} runs on target '{target}': the application "
            f"provides it. */\n{return_c} {signature.c_name}({', '.join(parameters) or 'void'})",
            None,
        )
    inline = ""
    if NOINLINE_ATTRIBUTE in function.attributes:
        context.helpers.add("noinline")
        inline = "USMP_NOINLINE "
    prototype = f"static {inline}{return_c} {signature.c_name}({', '.join(parameters) or 'void'})"
    printer.line(prototype + " {")
    with printer.indented():
        for arg in function.body.block.args:
            if not arg.uses and arg.index not in signature.dropped:
                unused = (
                    printer.memrefs[arg].name if arg in printer.memrefs else printer.scalars[arg]
                )
                printer.line(f"(void){unused};")
        printer.print_block(function.body.block)
    printer.line("}")
    return prototype, output.getvalue().rstrip("\n")


def function_target(function: func.FuncOp) -> str:
    """The target a function runs on (`usmp.target`, default "c")."""
    target = function.attributes.get(TARGET_ATTRIBUTE)
    return target.data if isinstance(target, StringAttr) else "c"


def is_external(function: func.FuncOp) -> bool:
    """Whether the C code only declares `function` (no body, or a body for another target)."""
    return not function.body.blocks or function_target(function) != "c"


def _parameter_type(type_: Attribute, writable: bool, is_pool: bool = False) -> str:
    if isinstance(type_, MemRefType):
        element_c = "uint8_t" if is_pool else c_types.c_type(type_.element_type)
        return f"{'' if writable else 'const '}{element_c}*"
    return c_types.c_type(type_)


def _bind_entry_arguments(
    printer: CFunctionPrinter,
    function: func.FuncOp,
    interface: Interface,
    signature: FunctionSignature,
) -> None:
    by_kind = {"input": iter(interface.inputs), "output": iter(interface.outputs)}
    for arg, const in zip(function.body.block.args, signature.const_params, strict=True):
        io = _argument_attributes(function, arg.index).get("usmp.io")
        kind = io.data if isinstance(io, StringAttr) else ("input" if const else "output")
        tensor = next(by_kind[kind])
        struct_name = "inputs" if kind == "input" else "outputs"
        name = printer.bind_argument(arg, const, printer.names.fresh(tensor.name))
        pointer_c = printer.memrefs[arg].pointer_c
        printer.line(f"{pointer_c} {name} = ({pointer_c}){struct_name}->{tensor.name};")
        if not arg.uses:
            printer.line(f"(void){name};")
