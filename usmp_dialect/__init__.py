"""usmp-dialect: a unified static memory planner for ML inference programs, on xDSL.

`usmp_dialect.compile(model, prefix=...)` compiles a model to C and a firmware project
(`usmp_dialect.compiler`); importing the package stays light: the API is loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["CompileError", "CompiledModel", "Pool", "compile"]

if TYPE_CHECKING:
    from usmp_dialect.compiler import CompileError, Pool, compile
    from usmp_dialect.project.compiled import CompiledModel


def __getattr__(name: str) -> Any:
    if name in ("compile", "CompileError", "Pool"):
        from usmp_dialect import compiler

        return getattr(compiler, name)
    if name == "CompiledModel":
        from usmp_dialect.project.compiled import CompiledModel

        return CompiledModel
    raise AttributeError(f"module 'usmp_dialect' has no attribute '{name}'")
