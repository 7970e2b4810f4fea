"""Choices of a model import that change the program it writes (SPEC §9), kept apart from the
importers so that `usmp-opt` can read them from its command line without importing `tflite`."""

from __future__ import annotations

from dataclasses import dataclass

HYBRID_MODES = ("quantize", "dequantize")


@dataclass(frozen=True)
class ImportOptions:
    """`hybrid`: how TFLite layers with int8 weights and float activations compute —
    `quantize` as LiteRT's hybrid kernels do (the input quantised on the fly, int8 products),
    `dequantize` in float with the weights dequantised at import."""

    hybrid: str = "quantize"

    def __post_init__(self) -> None:
        if self.hybrid not in HYBRID_MODES:
            raise ValueError(f"hybrid must be one of {', '.join(HYBRID_MODES)}: {self.hybrid!r}")
