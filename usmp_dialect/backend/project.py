"""`-t project`: a planned module as a firmware project directory (SPEC §14).

```
usmp-opt model.tflite -t 'project{prefix=kws}' -o kws
```

A directory is not a text stream, so `usmp-opt` writes the project itself
(`UsmpOptMain.output_resulting_program`, with the plans recorded while the passes ran); this
class holds the target's options, which `usmp-opt` checks like any other target's. Called
through a stock `xdsl-opt`, it says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target


@dataclass(frozen=True)
class ProjectTarget(Target):
    """`-t 'project{prefix=P entry=main constants=text}'`: the project directory given by
    `-o DIR` (see `usmp_dialect.project.files` for its files)."""

    name = "project"

    prefix: str = "model"
    entry: str = "main"
    constants: str = "text"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        raise DiagnosticException(
            "project target: it writes a directory, which only usmp-opt does: "
            "usmp-opt MODEL -t 'project{prefix=P}' -o DIR"
        )
