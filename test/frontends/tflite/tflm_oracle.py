"""Runs a model written with `tflite_writer` through our C and through TensorFlow Lite Micro on
seeded random inputs and returns both outputs (the test files beside this one compare them)."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from usmp_dialect.testing.model_runner import compile_model


def random_inputs(ports: Sequence, rng: np.random.Generator) -> list[np.ndarray]:
    arrays = []
    for port in ports:
        if port.dtype == np.int8:
            arrays.append(rng.integers(-128, 128, size=port.shape, dtype=np.int8))
        else:
            arrays.append(rng.standard_normal(port.shape).astype(np.float32))
    return arrays


def run_both(
    model: bytes, directory: Path, trials: int = 3, seed: int = 0, sanitize: bool = False
) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    """(ours, TFLM's) outputs for `trials` random inputs; `sanitize`: our C built with
    AddressSanitizer and UndefinedBehaviorSanitizer."""
    from tflite_micro.python.tflite_micro import runtime

    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, directory, sanitize=sanitize)
    interpreter = runtime.Interpreter.from_file(str(path), arena_size=1 << 22)
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(trials):
        arrays = random_inputs(compiled.inputs, rng)
        for position, array in enumerate(arrays):
            interpreter.set_input(array, position)
        interpreter.invoke()
        reference = [interpreter.get_output(j).copy() for j in range(len(compiled.outputs))]
        ours, _ = compiled.run(arrays)
        results.append((ours, reference))
    return results


def assert_matches(
    model: bytes, directory: Path, trials: int = 3, seed: int = 0, sanitize: bool = False
) -> None:
    """int8 outputs byte for byte, float outputs within 1e-5 relative."""
    for ours, reference in run_both(model, directory, trials, seed, sanitize):
        assert len(ours) == len(reference)
        for mine, theirs in zip(ours, reference, strict=True):
            assert mine.shape == tuple(theirs.shape)
            if mine.dtype == np.int8:
                np.testing.assert_array_equal(mine, theirs)
            else:
                np.testing.assert_allclose(mine, theirs, rtol=1e-5, atol=1e-6)


def assert_all_match(
    models: dict[str, bytes], directory: Path, trials: int = 3, sanitize: bool = False
) -> None:
    """`assert_matches` on several models, compiled two at a time; names the failing ones."""

    def check(item: tuple[str, bytes]) -> str | None:
        name, model = item
        try:
            assert_matches(model, directory / name, trials, sanitize=sanitize)
        except Exception as error:  # a build failure of one model must not hide the others
            return f"{name}: {error}"
        return None

    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [failure for failure in pool.map(check, models.items()) if failure]
    assert not failures, "\n".join(failures)


def litert_outputs(model: bytes, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """TensorFlow Lite's reference kernels (for operators TFLite Micro lacks, e.g. RANGE)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    interpreter = Interpreter(
        model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF
    )
    interpreter.allocate_tensors()
    for detail, array in zip(interpreter.get_input_details(), arrays, strict=True):
        interpreter.set_tensor(detail["index"], array)
    interpreter.invoke()
    return [interpreter.get_tensor(d["index"]).copy() for d in interpreter.get_output_details()]


def assert_matches_litert(model: bytes, directory: Path, seed: int = 0) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, directory)
    arrays = random_inputs(compiled.inputs, np.random.default_rng(seed))
    ours, _ = compiled.run(arrays)
    for mine, theirs in zip(ours, litert_outputs(model, arrays), strict=True):
        np.testing.assert_array_equal(mine, theirs)
