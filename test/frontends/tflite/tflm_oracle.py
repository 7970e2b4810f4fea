"""Runs models written with `tflite_writer` through our C and through TensorFlow Lite Micro on
seeded random inputs and compares the outputs. The variants of one test are merged into one
model (`merge`: independent subgraphs side by side), so each test compiles one C program.
`ModelSpec` and `merge` are the writer's (`usmp_dialect.testing.tflite_writer`), kept here
for the tests that reach them as `oracle.ModelSpec`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import ModelSpec, merge
from usmp_dialect.validation.host import compile_model
from usmp_dialect.validation.oracles import litert_outputs

__all__ = ["ModelSpec", "assert_all_match", "assert_matches", "assert_matches_litert", "merge"]


def assert_matches(
    model: bytes,
    directory: Path,
    trials: int = 3,
    seed: int = 0,
    sanitize: bool = False,
    options: Sequence[str] = (),
) -> None:
    """Our outputs equal TFLM's on `trials` random inputs: int8 byte for byte, float within
    1e-5 relative. `sanitize`: our C built with AddressSanitizer and UBSan; `options`: more
    `usmp-opt` arguments."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, directory, sanitize=sanitize, options=options)
    interpreter = tflm.interpreter(model)
    rng = np.random.default_rng(seed)
    names = [port.name for port in compiled.outputs]
    for _ in range(trials):
        arrays = tflm.random_inputs(compiled.inputs, rng)
        ours, _ = compiled.run(arrays)
        tflm.assert_matches(ours, tflm.run_with(interpreter, arrays, len(ours)), names)


def assert_all_match(
    models: dict[str, ModelSpec], directory: Path, trials: int = 3, sanitize: bool = False
) -> None:
    """`assert_matches` on the merged models (failures name the output, prefixed by part)."""
    assert_matches(merge(models), directory, trials, sanitize=sanitize)


def assert_matches_litert(model: bytes, directory: Path, seed: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, directory)
    arrays = tflm.random_inputs(compiled.inputs, seed)
    ours, _ = compiled.run(arrays)
    for mine, theirs in zip(ours, litert_outputs(model, arrays), strict=True):
        np.testing.assert_array_equal(mine, theirs)
