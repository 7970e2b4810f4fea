"""Resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, CALL_ONCE) on the state pool
(SPEC §13), against TensorFlow Lite Micro: an accumulator `acc += x` (READ_VARIABLE, ADD,
ASSIGN_VARIABLE), with and without a CALL_ONCE init subgraph, int8 and float32, run five times
in a row with a reset before the fourth run, also under ASan/UBSan.

After a reset, TFLM sets resource variables to their default (the zero point) and does not run
CALL_ONCE again; `<p>_reset_state()` restores the model's initial values, the init subgraph's:
the runs after our reset are compared with a fresh TFLM interpreter (which runs CALL_ONCE),
which for a model without an init subgraph is the same as TFLM's reset; a test pins TFLM's
reset behaviour and the difference."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import tflite

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.stateful import compile_sequence, tflm_sequence
from usmp_dialect.testing.stateful_models import accumulator

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
RESOURCE = tflite.TensorType.RESOURCE
STEPS, RESET = 5, 3


def _check(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    if ours.dtype.kind == "f":
        np.testing.assert_allclose(ours, theirs.reshape(ours.shape), rtol=1e-5, err_msg=what)
    else:
        np.testing.assert_array_equal(ours, theirs.reshape(ours.shape), err_msg=what)


@needs_tflm
@needs_gcc
@pytest.mark.parametrize("init", [True, False], ids=["call_once", "default"])
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_accumulator_matches_tflm(tmp_path: Path, dtype: str, init: bool) -> None:
    model = accumulator(dtype, init)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    sanitize = dtype == "int8" and init
    compiled = compile_sequence(path, tmp_path, sanitize=sanitize)
    rng = np.random.default_rng(11)
    steps = [tflm.random_inputs(compiled.inputs, rng) for _ in range(STEPS)]
    ours = compiled.run(steps, [RESET])
    before = tflm_sequence(model, steps[:RESET])
    after = tflm_sequence(model, steps[RESET:])  # a fresh interpreter: the initial values
    for step, (mine, (theirs, _)) in enumerate(zip(ours, before + after, strict=True)):
        _check(mine.outputs[0], theirs[0], f"run {step}")
    if not init:  # TFLM's own reset gives the same values
        reset = tflm_sequence(model, steps, [RESET])
        for step, (mine, (theirs, _)) in enumerate(zip(ours, reset, strict=True)):
            _check(mine.outputs[0], theirs[0], f"run {step} (TFLM reset)")


@needs_tflm
@needs_gcc
@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_reset_restores_the_init_values_where_tflm_restores_the_defaults(
    tmp_path: Path, dtype: str
) -> None:
    """What TFLM's `MicroInterpreter::Reset()` does, pinned: `ResetSubgraphs` calls each
    kernel's reset hook and CALL_ONCE has none, so its `has_run` stays set and the init
    subgraph never runs again, and `ResetVariableTensors` sets every resource variable to its
    default (the int8 zero point, else 0): after TFLM's reset the model with an init subgraph
    runs exactly as the model without one. `<p>_reset_state()` instead restores the init
    values, so our runs after a reset are those of a fresh TFLM interpreter; if TFLM ever
    reruns CALL_ONCE on reset, the first assertion fails and the two agree."""
    model, plain = accumulator(dtype, True), accumulator(dtype, False)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_sequence(path, tmp_path)
    rng = np.random.default_rng(5)
    steps = [tflm.random_inputs(compiled.inputs, rng) for _ in range(STEPS)]
    tflm_reset = tflm_sequence(model, steps, [RESET])[RESET:]
    defaults = tflm_sequence(plain, steps[RESET:])
    fresh = tflm_sequence(model, steps[RESET:])
    for step, ((theirs, _), (default, _)) in enumerate(zip(tflm_reset, defaults, strict=True)):
        _check(theirs[0], default[0], f"TFLM after its reset, run {step}: the defaults")
    ours = compiled.run(steps, [RESET])[RESET:]
    for step, (mine, (initial, _), (theirs, _)) in enumerate(
        zip(ours, fresh, tflm_reset, strict=True)
    ):
        _check(mine.outputs[0], initial[0], f"after our reset, run {step}: the init values")
        assert not np.array_equal(mine.outputs[0], theirs[0].reshape(mine.outputs[0].shape))


def test_imported_variable_holds_the_init_value() -> None:
    text = str(import_tflite(accumulator("int8", True), "acc.tflite"))
    assert 'sym_name = "acc"' in text and "dense<[[5, -7, 9, 1]]> : tensor<1x4xi8>" in text
    assert "usmp.state" in text
    text = str(import_tflite(accumulator("int8", False), "acc.tflite"))
    assert "dense<-3> : tensor<1x4xi8>" in text  # TFLM's default: the zero point


def test_init_subgraph_with_other_operators_is_refused() -> None:
    with pytest.raises(
        ModelImportError, match=r"init subgraph 1: ADD \(operator 1\) is not supported there"
    ):
        import_tflite(accumulator("float32", True, init_op="ADD"), "acc.tflite")
