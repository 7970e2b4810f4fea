"""Model frontends of `usmp-opt`: a lazy table from file extension to importer.

Each importer takes the file's bytes, its name (for messages) and the import's choices
(`options.ImportOptions`) and returns a `ModuleOp` of standard MLIR (SPEC §9). Importing a
frontend module pulls in its optional dependency, so the table holds factories that are only
called when a file of that kind is read.
"""

from collections.abc import Callable
from typing import Protocol

from xdsl.dialects.builtin import ModuleOp

from usmp_dialect.frontends.options import ImportOptions


class Importer(Protocol):
    def __call__(
        self, data: bytes, path: str, options: ImportOptions | None = None
    ) -> ModuleOp: ...


def _tflite() -> Importer:
    from usmp_dialect.frontends.tflite import import_tflite

    return import_tflite


def _onnx() -> Importer:
    from usmp_dialect.frontends.onnx import import_onnx

    return import_onnx


def get_all_frontends() -> dict[str, Callable[[], Importer]]:
    """File extension (also the `-f` name) -> factory of its importer."""
    return {"tflite": _tflite, "onnx": _onnx}
