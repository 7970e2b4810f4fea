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

from usmp_dialect.backend.c.program import Interface, ModelInfo, TensorIO, find_entry
from usmp_dialect.dialects import pool


def model_identity(data: bytes, source: str) -> ModelInfo:
    """The identity of a model given as a file's bytes (`source` is `<bytes>` without a file)."""
    name = Path(source).stem if source != "<bytes>" else "model"
    return ModelInfo(name, Path(source).name, hashlib.sha256(data).hexdigest())


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
    model: ModelInfo
    inputs: tuple[TensorIO, ...]
    outputs: tuple[TensorIO, ...]
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
    def state_bytes(self) -> int:
        """The state pools' bytes: the model's state, kept from one run to the next."""
        return sum(p.size_bytes for p in self.pools if p.kind == "state")

    @property
    def external_state(self) -> bool:
        """Whether the application provides a state pool, and so resets the state itself."""
        return any(p.kind == "state" and not p.internal and p.size_bytes for p in self.pools)

    @property
    def io_bytes(self) -> int:
        return sum(t.size_bytes for t in self.inputs + self.outputs)


def project_facts(
    module: ModuleOp, interface: Interface, entry_name: str, model: ModelInfo
) -> ProjectFacts:
    """The facts of a planned module and its C interface. The model's identity is the
    module's `usmp.model` (the frontends record it), else `model`."""
    if interface.model is not None:
        model = interface.model
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
        interface.inputs,
        interface.outputs,
        pools,
        operators,
        interface.workspace_io,
        bool(interface.external_pools),
    )
