"""A compiled model: its C, plan and project files (what `usmp_dialect.compile` returns and
`usmp-opt -t project` writes), assembled from a planned module."""

from __future__ import annotations

import io
import json
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException

from usmp_dialect.backend.c.program import ModelInfo
from usmp_dialect.passes.plan import PlanRecord
from usmp_dialect.project.facts import ProjectFacts, project_facts
from usmp_dialect.project.files import metadata, project_files


@dataclass(frozen=True)
class CompiledModel:
    """A model compiled to C, with its plan; `write_project` writes the firmware project."""

    prefix: str
    c_source: str
    header: str
    report: dict[str, Any]
    """The plan report (SPEC §8), parsed."""
    memory_map_svg: str
    metadata: dict[str, Any]
    """`metadata.json` of the project: model, inputs/outputs, pools, operators."""
    workspace_bytes: int
    constant_bytes: int
    state_bytes: int
    """The state pools' bytes (SPEC §13): 0 for a model without state."""
    facts: ProjectFacts = field(repr=False)
    files: dict[str, str] = field(repr=False)
    """Every file of the project by relative path."""

    def write_project(self, directory: str | os.PathLike[str]) -> list[str]:
        """Writes the project directory atomically (see `usmp_dialect.project.directory`);
        returns the relative paths written. Raises `ProjectDirectoryError`."""
        from usmp_dialect.project.directory import write_project_directory

        write_project_directory(directory, self.files)
        return list(self.files)


def assemble(
    ctx: Context,
    module: ModuleOp,
    prefix: str,
    entry: str,
    plans: Sequence[PlanRecord],
    model: ModelInfo,
    constants: str = "text",
) -> CompiledModel:
    """The compiled model of a planned module; `plans` are the plans recorded while its
    passes ran (`recording_plans`), the last one is the module's. Raises
    `DiagnosticException` (the C backend's errors, a missing plan)."""
    from usmp_dialect.backend.c.program import build_interface
    from usmp_dialect.backend.c.target import CHeaderTarget, CTarget
    from usmp_dialect.dialects import pool

    if not plans:
        raise DiagnosticException(
            "project target: no plan was made; the pipeline must run usmp (or usmp-plan), "
            "e.g. -p 'usmp-import-memref,convert-linalg-to-loops,usmp'"
        )
    source, header = io.StringIO(), io.StringIO()
    CTarget(prefix=prefix, entry=entry, constants=constants).emit(ctx, module, source)
    CHeaderTarget(prefix=prefix, entry=entry).emit(ctx, module, header)
    interface = build_interface(module, prefix, entry)
    facts = project_facts(module, interface, entry, model)
    sections = tuple(
        sorted(
            {
                (p.section_name, p.KIND)
                for p in pool.module_pools(module)
                if p.section_name is not None and p.is_internal
            }
        )
    )
    plan = plans[-1]
    files = project_files(
        facts, source.getvalue(), header.getvalue(), plan.report, plan.svg, sections
    )
    return CompiledModel(
        prefix=prefix,
        c_source=source.getvalue(),
        header=header.getvalue(),
        report=json.loads(plan.report),
        memory_map_svg=plan.svg,
        metadata=metadata(facts),
        workspace_bytes=facts.workspace_bytes,
        constant_bytes=facts.constant_bytes,
        state_bytes=facts.state_bytes,
        facts=facts,
        files=files,
    )


def summary(directory: str, project: CompiledModel, tflm_arena: tuple[int, int] | None) -> str:
    """What `usmp-opt -t project` prints once the directory is written."""
    facts = project.facts
    directory = directory.rstrip("/") or "/"
    lines = [
        f"wrote {directory}/: {' '.join(project.files)}",
        f"workspace {facts.workspace_bytes:,} bytes, constants {facts.constant_bytes:,} bytes, "
        f"inputs and outputs {facts.io_bytes:,} bytes"
        + (" (inside the workspace)" if facts.workspace_io else ""),
    ]
    if tflm_arena is not None:
        head, total = tflm_arena
        lines.append(
            f"TFLM (tflite-micro) on the same model: arena head {head:,} bytes "
            f"(activations, inputs and outputs), total {total:,} bytes"
        )
    source, build = shlex.quote(directory), shlex.quote(f"{directory}/build")
    main = shlex.quote(f"{directory}/build/{project.prefix}_main")
    lines.append(f"build: cmake -S {source} -B {build} && cmake --build {build} && {main}")
    return "\n".join(lines) + "\n"
