"""The `c` and `c-header` targets: a planned module as a C source file and its header."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from usmp_dialect.backend.c.names import sanitize
from usmp_dialect.backend.c.printer import check_planned
from usmp_dialect.backend.c.program import build_interface, emit_header, emit_source


def _checked_prefix(prefix: str) -> str:
    if sanitize(prefix) != prefix:
        raise DiagnosticException(
            f"C backend: prefix '{prefix}' is not a C identifier (letters, digits, '_')"
        )
    return prefix


@dataclass(frozen=True)
class CTarget(Target):
    """`-t c`: the C source of a planned program (`-t 'c{prefix=net entry=main}'`)."""

    name = "c"

    prefix: str = "usmp_default"
    entry: str = "main"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        output.write(emit_source(module, _checked_prefix(self.prefix), self.entry))


@dataclass(frozen=True)
class CHeaderTarget(Target):
    """`-t c-header`: the header declaring `<prefix>_run` and its structs and macros."""

    name = "c-header"

    prefix: str = "usmp_default"
    entry: str = "main"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        check_planned(module)
        output.write(emit_header(build_interface(module, _checked_prefix(self.prefix), self.entry)))
