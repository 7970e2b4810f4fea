"""What a firmware project says about its model, as plain data read off the planned module.

`project_facts` collects, for the files of `usmp_dialect.project.files`: the model's identity
(name, source file, SHA-256), every input and output (C field, shape, dtype, bytes,
quantisation), the pools with their planned sizes, and the operator functions `@main` calls in
order. Quantisation is not in the IR; the caller passes it (`tflite_io_quantization` reads it
from a `.tflite` file).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute

from usmp_dialect.backend.c.program import (
    IO_ALLOCATIONS_ATTR,
    Interface,
    find_entry,
    written_arguments,
)
from usmp_dialect.dialects import pool
from usmp_dialect.dialects.usmp import buffer_size_bytes

MODEL_ATTR = "usmp.model"
"""The module attribute `{name, source, sha256}` a frontend may record."""


@dataclass(frozen=True)
class ModelIdentity:
    """Which model a project was compiled from."""

    name: str
    source: str
    """The file name (or `<bytes>` for a model given as bytes)."""
    sha256: str

    @staticmethod
    def of(data: bytes, source: str) -> ModelIdentity:
        name = Path(source).stem if source != "<bytes>" else "model"
        return ModelIdentity(name, Path(source).name, hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class Quantization:
    """Affine quantisation of a tensor: `real = scale * (q - zero_point)`."""

    scale: float
    zero_point: int


@dataclass(frozen=True)
class IoTensor:
    """One model input or output as the application sees it."""

    field: str
    """The field of `struct <p>_inputs` / `struct <p>_outputs`."""
    kind: str
    """`input` or `output`."""
    shape: tuple[int, ...]
    dtype: str
    """numpy's name: `int8`, `float32`, ..."""
    c_type: str
    size_bytes: int
    quantization: Quantization | None = None

    @property
    def elements(self) -> int:
        count = 1
        for extent in self.shape:
            count *= extent
        return count


@dataclass(frozen=True)
class PoolFacts:
    name: str
    field: str
    """The C identifier (struct field, macro part)."""
    kind: str
    internal: bool
    size_bytes: int
    size_hint_bytes: int | None
    section: str | None


@dataclass(frozen=True)
class ProjectFacts:
    """Everything the project files state about the compiled model."""

    prefix: str
    model: ModelIdentity
    inputs: tuple[IoTensor, ...]
    outputs: tuple[IoTensor, ...]
    pools: tuple[PoolFacts, ...]
    operators: tuple[str, ...]
    """The operator functions the entry calls, in execution order."""
    workspace_io: bool
    external_pools: bool

    @property
    def workspace_bytes(self) -> int:
        return sum(p.size_bytes for p in self.pools if p.kind == "workspace")

    @property
    def constant_bytes(self) -> int:
        return sum(p.size_bytes for p in self.pools if p.kind == "constant")

    @property
    def io_bytes(self) -> int:
        return sum(t.size_bytes for t in self.inputs + self.outputs)


def dtype_name(element_type: Attribute) -> str:
    """numpy's name of an MLIR element type (signless integers are signed, as in C)."""
    if isinstance(element_type, Float32Type):
        return "float32"
    if isinstance(element_type, Float64Type):
        return "float64"
    if isinstance(element_type, IndexType):
        return "int64"
    if isinstance(element_type, IntegerType):
        width = element_type.width.data
        if width == 1:
            return "bool"
        unsigned = element_type.signedness.data == Signedness.UNSIGNED
        return f"{'u' if unsigned else ''}int{width}"
    return str(element_type)


def _io_types(module: ModuleOp, entry_name: str) -> list[tuple[str, MemRefType]]:
    """(kind, type) of every model input and output, in the order of the C interface."""
    io_attr = module.attributes.get(IO_ALLOCATIONS_ATTR)
    if isinstance(io_attr, ArrayAttr):
        types: list[tuple[str, MemRefType]] = []
        for item in io_attr.data:
            assert isinstance(item, DictionaryAttr)  # build_interface checked the form
            kind, type_ = item.data["kind"], item.data["type"]
            assert isinstance(kind, StringAttr) and isinstance(type_, MemRefType)
            types.append((kind.data, type_))
        return types
    entry = find_entry(module, entry_name)
    written = written_arguments([op for op in module.ops if isinstance(op, func.FuncOp)])
    types = []
    for index, arg in enumerate(entry.body.block.args):
        assert isinstance(arg.type, MemRefType)  # build_interface checked it
        attrs = entry.arg_attrs.data[index].data if entry.arg_attrs is not None else {}
        io = attrs.get("usmp.io")
        kind = (
            io.data
            if isinstance(io, StringAttr)
            else "output"
            if written[entry_name][index]
            else "input"
        )
        types.append((kind, arg.type))
    return types


def _model_identity(module: ModuleOp, fallback: ModelIdentity) -> ModelIdentity:
    attr = module.attributes.get(MODEL_ATTR)
    if not isinstance(attr, DictionaryAttr):
        return fallback
    values = {key: value.data for key, value in attr.data.items() if isinstance(value, StringAttr)}
    return ModelIdentity(
        values.get("name", fallback.name),
        values.get("source", fallback.source),
        values.get("sha256", fallback.sha256),
    )


def project_facts(
    module: ModuleOp,
    interface: Interface,
    entry_name: str,
    model: ModelIdentity,
    quantization: Sequence[Quantization | None] = (),
) -> ProjectFacts:
    """The facts of a planned module and its C interface; `quantization` lists the inputs'
    then the outputs' quantisation (empty: none known)."""
    io_types = _io_types(module, entry_name)
    in_types = [t for kind, t in io_types if kind == "input"]
    out_types = [t for kind, t in io_types if kind == "output"]
    quantized = list(quantization) + [None] * (len(io_types) - len(quantization))

    def tensor(field: str, kind: str, c_type: str, type_: MemRefType, q: Quantization | None):
        return IoTensor(
            field,
            kind,
            tuple(type_.get_shape()),
            dtype_name(type_.element_type),
            c_type,
            buffer_size_bytes(type_),
            q,
        )

    inputs = tuple(
        tensor(t.name, "input", t.element_type, type_, quantized[index])
        for index, (t, type_) in enumerate(zip(interface.inputs, in_types, strict=True))
    )
    outputs = tuple(
        tensor(t.name, "output", t.element_type, type_, quantized[len(inputs) + index])
        for index, (t, type_) in enumerate(zip(interface.outputs, out_types, strict=True))
    )
    hints = {p.pool_name: p.capacity_bytes for p in pool.module_pools(module)}
    pools = tuple(
        PoolFacts(p.name, p.field, p.kind, p.internal, p.size_bytes, hints.get(p.name), p.section)
        for p in interface.pools
    )
    entry = find_entry(module, entry_name)
    operators = tuple(
        op.callee.root_reference.data for op in entry.walk() if isinstance(op, func.CallOp)
    )
    return ProjectFacts(
        interface.prefix,
        _model_identity(module, model),
        inputs,
        outputs,
        pools,
        operators,
        interface.workspace_io,
        bool(interface.external_pools),
    )


def tflite_io_quantization(data: bytes, source: str) -> list[Quantization | None]:
    """The per-tensor quantisation of a `.tflite` model's inputs then outputs (None for a
    float tensor or per-channel quantisation)."""
    from usmp_dialect.frontends.tflite.reader import read_graph

    graph = read_graph(data, source)
    found: list[Quantization | None] = []
    for index in graph.inputs + graph.outputs:
        q = graph.tensors[index].quantization
        if q is None or q.scales.size != 1:
            found.append(None)
        else:
            found.append(Quantization(float(q.scales[0]), int(q.zero_points[0])))
    return found
