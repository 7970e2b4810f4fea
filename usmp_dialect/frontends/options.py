"""Choices of a model import that change the program it writes (SPEC §9), kept apart from the
importers so that `usmp-opt` and `usmp_dialect.compile` can read them without importing
`tflite` or `onnx`. Every model frontend takes one `ImportOptions`."""

from __future__ import annotations

from dataclasses import dataclass

IN_PLACE_MODES = ("all", "elementwise", "none")
"""`in_place`: which operators write their output over an input they read last, most first."""

FUSE_MODES = ("rows", "none")
"""`fuse`: `rows` (fused row streaming where it lowers the peak, PADs folded into their readers'
windows) or `none`."""

HYBRID_MODES = ("quantize", "dequantize")
"""`hybrid`: how TFLite layers with int8 weights and float activations compute."""


@dataclass(frozen=True)
class ImportOptions:
    """`fuse`: `rows` (fused row streaming where it lowers the peak, `graph/streaming.py`, and
    TFLite PADs folded into the window of the layer that reads them, `frontends/tflite/
    folding.py`) or `none` (one function per model operator). `in_place`: `all` (elementwise
    operators, and depthwise convolutions where that lowers the peak), `elementwise`, or `none`
    (`frontends/in_place.py`). `hybrid`: `quantize` as
    LiteRT's hybrid kernels do (the input quantised on the fly, int8 products), `dequantize` in
    float with the weights dequantised at import."""

    fuse: str = "rows"
    in_place: str = "all"
    hybrid: str = "quantize"

    def __post_init__(self) -> None:
        for option, value, modes in (
            ("fuse", self.fuse, FUSE_MODES),
            ("in_place", self.in_place, IN_PLACE_MODES),
            ("hybrid", self.hybrid, HYBRID_MODES),
        ):
            if value not in modes:
                raise ValueError(f"{option} must be one of {', '.join(modes)}, not '{value}'")
