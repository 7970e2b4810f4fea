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
    float with the weights dequantised at import.

    `workspace_size_hint_bytes`: the workspace pool's size hint (`usmp-opt
    --workspace-pools-size-hint-bytes`): with it the import applies the cheapest set of
    transformations whose peak fits, or fails naming the lowest peak it reaches (SPEC §12).
    `workspace_io`: the pipeline plans the model's inputs and outputs in the workspace (U4), so
    their bytes count against the hint."""

    fuse: str = "rows"
    in_place: str = "all"
    hybrid: str = "quantize"
    workspace_size_hint_bytes: int | None = None
    workspace_io: bool = False

    def __post_init__(self) -> None:
        for option, value, modes in (
            ("fuse", self.fuse, FUSE_MODES),
            ("in_place", self.in_place, IN_PLACE_MODES),
            ("hybrid", self.hybrid, HYBRID_MODES),
        ):
            if value not in modes:
                raise ValueError(f"{option} must be one of {', '.join(modes)}, not '{value}'")
        hint = self.workspace_size_hint_bytes
        if hint is not None and hint < 0:
            raise ValueError(f"workspace_size_hint_bytes must not be negative, not {hint}")
