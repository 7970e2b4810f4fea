"""What a firmware project says about its model, as plain data read off the planned module.

`project_facts` collects, for the files of `usmp_dialect.project.files`: the model's identity
(name, source file, SHA-256), every input and output (C field, shape, dtype, bytes,
quantisation), the pools with their planned sizes, and the operator functions `@main` calls in
order. It is the C backend's interface (`build_interface`: shapes, dtypes and quantisation
from the frontends' `usmp.tensor` / `usmp.quantization` argument attributes, the identity from
`usmp.model`) plus the pools' capacities and the operators.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ModuleOp,
)

from usmp_dialect.backend.c.program import Interface, TensorIO, find_entry
from usmp_dialect.dialects import pool


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
    tensor: str | None = None
    """The model's name of the tensor."""

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


def _io_tensor(tensor: TensorIO) -> IoTensor:
    quantization = (
        Quantization(tensor.scale, tensor.zero_point)
        if tensor.scale is not None and tensor.zero_point is not None
        else None
    )
    return IoTensor(
        tensor.name,
        tensor.kind,
        tensor.shape,
        tensor.dtype,
        tensor.element_type,
        tensor.size_bytes,
        quantization,
        tensor.tensor,
    )


def project_facts(
    module: ModuleOp, interface: Interface, entry_name: str, model: ModelIdentity
) -> ProjectFacts:
    """The facts of a planned module and its C interface. The model's identity is the
    module's `usmp.model` (the frontends record it), else `model`."""
    if interface.model is not None:
        model = ModelIdentity(interface.model.name, interface.model.source, interface.model.sha256)
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
        model,
        tuple(map(_io_tensor, interface.inputs)),
        tuple(map(_io_tensor, interface.outputs)),
        pools,
        operators,
        interface.workspace_io,
        bool(interface.external_pools),
    )
