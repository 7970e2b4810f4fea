"""Real int8 networks as IR plus their bit-exact numpy references.

`build("kws", seed=0)` gives a `Model` with the MLIR text (`.mlir`), the numpy reference
(`.reference(x)`) and the input/output shapes. Models: MLPerf Tiny's `kws` (DS-CNN), `vww`
(MobileNetV1 0.25), `resnet8`, `ad` (autoencoder), and `mobilenetv2` (1.0, 224x224).
Options make the image models smaller for tests: `vww(resolution=)`,
`mobilenetv2(resolution=, width_multiplier=)`. A convolution keeps one output row of int32
accumulators (`accumulator="row"`, the default) or the whole output (`accumulator="tensor"`).
"""

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from usmp_dialect.models import networks, reference
from usmp_dialect.models.emit import ACCUMULATORS, network_to_mlir
from usmp_dialect.models.layers import Network

MODELS: dict[str, Callable[..., Network]] = {
    "ad": networks.ad,
    "kws": networks.kws,
    "mobilenetv2": networks.mobilenetv2,
    "resnet8": networks.resnet8,
    "vww": networks.vww,
}


@dataclass(frozen=True)
class Model:
    """A built network: its IR, its reference and its I/O signature (int8 in, int8 out)."""

    network: Network
    accumulator: str = "row"  # the convolutions' int32 scratch: "row" or "tensor"

    @property
    def name(self) -> str:
        return self.network.name

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.network.tensors[self.network.input].shape

    @property
    def output_shape(self) -> tuple[int, ...]:
        return self.network.tensors[self.network.output].shape

    input_dtype = np.dtype(np.int8)
    output_dtype = np.dtype(np.int8)

    @cached_property
    def mlir(self) -> str:
        return network_to_mlir(self.network, self.accumulator)

    def reference(self, x: np.ndarray) -> np.ndarray:
        """The int8 output for the int8 input `x` (shape `input_shape`), bit-exact with the IR."""
        return reference.reference(self.network, x)

    def random_input(self, seed: int = 0) -> np.ndarray:
        """A seeded int8 input of the right shape."""
        rng = np.random.default_rng(seed)
        return rng.integers(-128, 128, size=self.input_shape, dtype=np.int8)


def build(name: str, seed: int = 0, accumulator: str = "row", **options: int | float) -> Model:
    """The model `name` with weights drawn from `seed` (see the module docstring for options).

    `accumulator` chooses the convolutions' int32 scratch buffer: `"row"` (one output row, the
    kernel loops over rows) or `"tensor"` (the whole output).
    """
    if accumulator not in ACCUMULATORS:
        raise ValueError(f"accumulator must be one of: {', '.join(ACCUMULATORS)}")
    if name not in MODELS:
        raise ValueError(f"unknown model '{name}' (known: {', '.join(sorted(MODELS))})")
    accepted = list(inspect.signature(MODELS[name]).parameters)[1:]
    for option in sorted(options):
        if option not in accepted:
            known = ", ".join(accepted) if accepted else "none"
            raise ValueError(f"model '{name}' has no option '{option}' (options: {known})")
    return Model(MODELS[name](seed, **options), accumulator)


__all__ = ["MODELS", "Model", "build"]
