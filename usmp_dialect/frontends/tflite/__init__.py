"""The TFLite frontend: `usmp-opt model.tflite` (SPEC §9). Needs the `tflite` extra."""

from usmp_dialect.frontends.tflite.importer import import_tflite

__all__ = ["import_tflite"]
