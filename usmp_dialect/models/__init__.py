"""Synthetic int8 TFLite models, compiled through the same frontend and kernels as real ones.

`build("mobilenetv2", seed=0, resolution=96, width_multiplier=0.35)` gives a `Model` whose
`.tflite` is the flatbuffer (`usmp-opt model.tflite` compiles it; TensorFlow Lite Micro runs
it). Weights are random (seeded), quantised as TFLite's converter quantises them, and every
activation's scale is calibrated on random data (see `builder`). Models: `mobilenetv2`
(options `resolution`, `width_multiplier`, `classes`, `export`: `tflite`, `keras` or
`pytorch` padding and layout). The real MLPerf Tiny models are in
examples/mlperf_tiny.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from usmp_dialect.models import networks
from usmp_dialect.models.builder import Activation, ModelBuilder

MODELS: dict[str, Callable[..., tuple[ModelBuilder, Activation]]] = {
    "mobilenetv2": networks.mobilenetv2,
}


@dataclass(frozen=True)
class Model:
    """A built network: its TFLite flatbuffer and I/O signature (int8 in, int8 out)."""

    name: str
    builder: ModelBuilder
    output: Activation

    @property
    def tflite(self) -> bytes:
        return self.builder.finish(self.output)

    def tflite_with_every_activation(self) -> bytes:
        """The model with every activation as an extra output, after `output`."""
        return self.builder.finish(self.output, every_activation=True)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.builder.input.shape

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.output.shape

    def random_input(self, seed: int = 0) -> np.ndarray:
        """A seeded int8 input of the right shape."""
        rng = np.random.default_rng(seed)
        return rng.integers(-128, 128, size=self.input_shape, dtype=np.int8)


def options_of(name: str) -> list[str]:
    """The options model `name` accepts."""
    return list(inspect.signature(MODELS[name]).parameters)[1:]


def build(name: str, seed: int = 0, **options: int | float | str) -> Model:
    """The model `name` with weights drawn from `seed` (see the module docstring for options).
    Raises `ValueError` for an unknown model or option, or an option value out of range."""
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}' (known: {', '.join(sorted(MODELS))})")
    accepted = options_of(name)
    for option in sorted(options):
        if option not in accepted:
            raise ValueError(
                f"model '{name}' has no option '{option}' (options: {', '.join(accepted)})"
            )
    builder, output = MODELS[name](seed, **options)
    return Model(name, builder, output)


__all__ = ["MODELS", "Model", "build", "options_of"]
