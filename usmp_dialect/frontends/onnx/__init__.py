"""The ONNX frontend: `usmp-opt model.onnx` (SPEC §9). Needs the `onnx` extra."""

from usmp_dialect.frontends.onnx.importer import import_onnx

__all__ = ["import_onnx"]
