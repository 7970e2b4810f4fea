"""TensorFlow Lite Micro in the tests: the runtime of `usmp_dialect.validation.tflm` (outputs,
arena figures, dequantised hybrid models, seeded inputs) plus the assertions the tests share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from usmp_dialect.validation.host import CompiledModel
from usmp_dialect.validation.tflm import (
    Arena,
    arena,
    available,
    dequantize_weights,
    interpreter,
    random_inputs,
    run,
    run_with,
)

__all__ = [
    "Arena",
    "arena",
    "assert_matches",
    "available",
    "compare",
    "dequantize_weights",
    "interpreter",
    "random_inputs",
    "run",
    "run_with",
]


def assert_matches(
    ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray], names: Sequence[str] = ()
) -> None:
    """Integer (int8, int16, int32, ...) and bool outputs bit for bit; float ones elementwise
    to 1e-5 relative (plus 1e-6 of the largest reference output, for values near zero).
    Messages name the output."""
    assert len(ours) == len(theirs), f"{len(ours)} outputs, the reference has {len(theirs)}"
    for position, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        name = names[position] if position < len(names) else f"output {position}"
        assert mine.size == reference.size, f"{name}: {mine.size} values, {reference.size} expected"
        reference = np.asarray(reference).reshape(mine.shape)
        if mine.dtype.kind in "iub":
            differ = int(np.count_nonzero(mine != reference))
            assert differ == 0, f"{name}: {differ} of {mine.size} values differ"
        else:
            scale = max(float(np.abs(reference).max()), 1.0)
            np.testing.assert_allclose(mine, reference, rtol=1e-5, atol=1e-6 * scale, err_msg=name)


def compare(compiled: CompiledModel, model: bytes, seeds: Iterable[int]) -> None:
    """Our compiled C against TFLM running `model`, on the inputs of each seed."""
    tflm = interpreter(model)
    for seed in seeds:
        inputs = random_inputs(compiled.inputs, seed)
        theirs = run_with(tflm, inputs, len(compiled.outputs))
        ours, _ = compiled.run(inputs)
        assert_matches(ours, theirs, [port.name for port in compiled.outputs])
