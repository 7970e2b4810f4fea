"""`usmp_dialect.compile`: a model file (or its bytes) to C, its plan and a firmware project.

```python
import usmp_dialect

compiled = usmp_dialect.compile("kws_ref_model.tflite", prefix="kws")
compiled.workspace_bytes, compiled.constant_bytes  # 16000, ...
compiled.write_project("kws")  # what `usmp-opt kws_ref_model.tflite -t project -o kws` writes
```

It runs, in this process, what the README's command runs: the frontend of the file type,
the pools of `workspace_pools` / `constant_pools` / `state_pools` declared as `usmp-opt`'s pool
flags declare them (SPEC §6, §13), the canonical pipeline
`usmp-import-memref,convert-linalg-to-loops,usmp`, and the `c` / `c-header` targets. A user
error raises `CompileError` whose message is the line `usmp-opt` prints after
`usmp-opt: error: `.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from usmp_dialect.project.compiled import CompiledModel

CANONICAL_PIPELINE = "usmp-import-memref,convert-linalg-to-loops,usmp"
"""The pipeline the README runs on imported models."""

_BYTES_SOURCE = "<bytes>"


class CompileError(Exception):
    """A model that cannot be compiled as asked; the message is one line."""


@dataclass(frozen=True)
class Pool:
    """A memory pool declared for the compilation, as `usmp-opt`'s pool flags declare one:
    external (the application provides it) unless `internal`; `section` places an internal
    pool's C array in a linker section (SPEC §11)."""

    name: str
    size_hint_bytes: int | None = None
    internal: bool = False
    section: str | None = None
    targets: tuple[str, ...] = ()


PoolSpec = Pool | Mapping[str, Any] | str
"""A `Pool`, a dict of its fields, or just a name."""


def _pool(spec: PoolSpec) -> Pool:
    if isinstance(spec, Pool):
        return spec
    if isinstance(spec, str):
        return Pool(spec)
    try:
        values = dict(spec)
        if "targets" in values:
            values["targets"] = tuple(values["targets"])
        return Pool(**values)
    except TypeError as error:
        raise CompileError(f"invalid pool {spec!r}: {error}") from None


def _pool_flags(kind: str, pools: Sequence[PoolSpec]) -> list[str]:
    """The `usmp-opt` flags that declare `pools` (so they are checked the same way)."""
    flags: list[str] = []
    for pool in map(_pool, pools):
        flags.append(f"--{kind}-pools={pool.name}")
        if pool.size_hint_bytes is not None:
            flags.append(f"--{kind}-pools-size-hint-bytes={pool.name}:{pool.size_hint_bytes}")
        if pool.internal:
            flags.append(f"--internal-pools={pool.name}")
        if pool.section is not None:
            flags.append(f"--{kind}-pools-section={pool.name}:{pool.section}")
        flags += [f"--{kind}-pools-targets={pool.name}:{target}" for target in pool.targets]
    return flags


def _declarations(
    workspace: Sequence[PoolSpec], constant: Sequence[PoolSpec], state: Sequence[PoolSpec] = ()
):
    from usmp_dialect.tools.pool_flags import PoolFlagError, add_pool_arguments, pool_declarations

    parser = argparse.ArgumentParser(add_help=False)
    add_pool_arguments(parser)
    flags = _pool_flags("workspace", workspace) + _pool_flags("constant", constant)
    flags += _pool_flags("state", state)
    try:
        return pool_declarations(parser.parse_args(flags))
    except PoolFlagError as error:
        raise CompileError(str(error)) from None


def _read(model: str | os.PathLike[str] | bytes, frontend: str | None) -> tuple[bytes, str, str]:
    """(bytes, source name, frontend) of the model argument."""
    from usmp_dialect.frontends import get_all_frontends

    known = [*get_all_frontends(), "mlir"]
    if isinstance(model, bytes | bytearray | memoryview):
        data = bytes(model)
        if frontend is None:
            if data[4:8] != b"TFL3":
                raise CompileError(
                    f"{_BYTES_SOURCE}: not a TFLite flatbuffer; give the frontend "
                    f"({', '.join(known)}) with frontend="
                )
            frontend = "tflite"
        source = _BYTES_SOURCE
    else:
        path = Path(model)
        try:
            data = path.read_bytes()
        except OSError as error:
            raise CompileError(f"cannot read input file '{model}': {error.strerror}") from None
        frontend = frontend or path.suffix.removeprefix(".")
        source = str(model)
    if frontend not in known:
        raise CompileError(
            f"Unrecognized file extension '{frontend}'; choose a frontend with frontend= "
            f"({', '.join(known)})"
        )
    return data, source, frontend


def _context():
    """A context that knows every dialect of the universe (ours and xDSL's), lazily."""
    from xdsl.context import Context
    from xdsl.universe import Universe

    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx


def compile(
    model: str | os.PathLike[str] | bytes,
    *,
    prefix: str = "model",
    frontend: str | None = None,
    workspace_pools: Sequence[PoolSpec] = (),
    constant_pools: Sequence[PoolSpec] = (),
    state_pools: Sequence[PoolSpec] = (),
    workspace_io: bool = False,
    algorithm: str = "auto",
    time_limit_s: float = 10.0,
    seed: int = 0,
    entry: str = "main",
    constants: str = "text",
    fuse: str = "rows",
    in_place: str = "all",
    hybrid: str = "quantize",
) -> CompiledModel:
    """Compiles a model (`.tflite`, `.onnx` or `.mlir` path, or the bytes of a `.tflite`
    file) with the canonical pipeline; see the module doc. `fuse`, `in_place`, `hybrid`: the
    import's choices, as `usmp-opt --fuse`, `--in-place`, `--hybrid`
    (`frontends.options.ImportOptions`)."""
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.parser import Parser
    from xdsl.passes import ModulePass, PassPipeline
    from xdsl.transforms.convert_linalg_to_loops import ConvertLinalgToLoopsPass
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from usmp_dialect.frontends import get_all_frontends
    from usmp_dialect.frontends.errors import ModelImportError
    from usmp_dialect.frontends.options import ImportOptions
    from usmp_dialect.passes.import_memref import UsmpImportMemrefPass
    from usmp_dialect.passes.plan import recording_plans
    from usmp_dialect.passes.usmp import UsmpPass
    from usmp_dialect.project.compiled import assemble
    from usmp_dialect.project.facts import model_identity
    from usmp_dialect.tools.pool_flags import declare_pools, workspace_size_hint_bytes
    from usmp_dialect.tools.usmp_opt import one_line

    data, source, frontend = _read(model, frontend)
    declarations = _declarations(workspace_pools, constant_pools, state_pools)
    try:
        import_options = ImportOptions(
            fuse=fuse,
            in_place=in_place,
            hybrid=hybrid,
            workspace_size_hint_bytes=workspace_size_hint_bytes(declarations),
            workspace_io=workspace_io,
        )
        planner = UsmpPass(
            algorithm=algorithm,
            workspace_io=workspace_io,
            entry=entry,
            time_limit=time_limit_s,
            seed=seed,
        )
    except ValueError as error:
        raise CompileError(f"invalid option: {one_line(str(error))}") from None
    ctx = _context()
    try:
        if frontend == "mlir":
            module: ModuleOp = Parser(ctx, data.decode(), source).parse_module()
        else:
            module = get_all_frontends()[frontend]()(data, source, import_options)
    except ModelImportError as error:
        raise CompileError(str(error)) from None
    except ParseError as error:
        raise CompileError(f"{error.span.get_location()}: {one_line(error.msg)}") from None
    except UnicodeDecodeError:
        raise CompileError(f"{source}: not UTF-8 text") from None
    passes: tuple[ModulePass, ...] = (UsmpImportMemrefPass(), ConvertLinalgToLoopsPass(), planner)
    try:
        module.verify()
        declare_pools(module, declarations)
        with recording_plans() as plans:
            PassPipeline(passes).apply(ctx, module)
        module.verify()
        return assemble(
            ctx,
            module,
            prefix,
            entry,
            plans,
            model_identity(data, source),
            constants,
        )
    except DiagnosticException as error:
        raise CompileError(f"{source}: {one_line(str(error))}") from None
