"""The `c` and `c-header` targets: a planned module as a C source file and its header."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from usmp_dialect.backend.c.names import sanitize
from usmp_dialect.backend.c.printer import check_planned
from usmp_dialect.backend.c.program import (
    CONSTANT_FORMS,
    build_interface,
    emit_header,
    emit_source,
    model_ops,
)


def _checked_prefix(prefix: str) -> str:
    if sanitize(prefix) != prefix:
        raise DiagnosticException(
            f"C backend: prefix '{prefix}' is not a C identifier (letters, digits, '_')"
        )
    return prefix


def _check_structured(ops: list[Operation]) -> None:
    """Fails clearly on regions with several blocks: the backend prints structured control
    flow only (the program builder would otherwise stumble over them)."""
    for op in (op for top in ops for op in top.walk()):
        for region in op.regions:
            first_block = region.blocks.first
            if first_block is None or first_block is region.blocks.last:
                continue
            branch = first_block.last_op.name if first_block.last_op else "a branch"
            function: Operation | None = op
            while function is not None and not isinstance(function, func.FuncOp):
                function = function.parent_op()
            where = f" in function @{function.sym_name.data}" if function else ""
            raise DiagnosticException(
                f"C backend: cannot print unstructured control flow ('{branch}' between "
                f"blocks){where}; use structured control flow (scf)"
            )


def _check_printable(module: ModuleOp, entry: str) -> None:
    """The model (the entry and what it reaches) is planned and structured, or a one-line
    error says what to run."""
    model = model_ops(module, entry)
    check_planned(model)
    _check_structured(model)


@dataclass(frozen=True)
class CTarget(Target):
    """`-t c`: the C source of a planned program (`-t 'c{prefix=net entry=main}'`).
    `constants=string` writes internal constant pools as string literals instead of decimal
    initializer lists (`text`, the default): for large models, which gcc then compiles in a
    fraction of the time."""

    name = "c"

    prefix: str = "usmp_default"
    entry: str = "main"
    constants: str = "text"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        if self.constants not in CONSTANT_FORMS:
            raise DiagnosticException(
                f"C backend: constants '{self.constants}' is not one of {', '.join(CONSTANT_FORMS)}"
            )
        _check_printable(module, self.entry)
        output.write(emit_source(module, _checked_prefix(self.prefix), self.entry, self.constants))


@dataclass(frozen=True)
class CHeaderTarget(Target):
    """`-t c-header`: the header declaring `<prefix>_run` and its structs and macros."""

    name = "c-header"

    prefix: str = "usmp_default"
    entry: str = "main"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        _check_printable(module, self.entry)
        output.write(emit_header(build_interface(module, _checked_prefix(self.prefix), self.entry)))
