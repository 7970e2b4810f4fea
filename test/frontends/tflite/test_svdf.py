"""SVDF and the state pool (SPEC §13) against TensorFlow Lite Micro: models written with
`tflite_writer` run as a sequence of runs in one process, in our C and in TFLM, with a reset
in the middle; the outputs after every run must be TFLM's (int8 byte for byte, float to 1e-5)
and, with the state in an external pool the harness reads, the activation state too. Also
under AddressSanitizer and UBSan, and the state pool's size against TFLM's variable tensors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.stateful import compile_sequence, tflm_sequence
from usmp_dialect.testing.stateful_models import (
    FLOAT_VARIANTS,
    INT8_VARIANTS,
    svdf_model,
    svdf_tensors,
)
from usmp_dialect.testing.tflite_writer import OperatorSpec, write_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

STEPS = 7
RESETS = (4,)  # TFLM's reset() / our <p>_reset_state() before the fifth run


def _variable_tensors(model: bytes) -> dict[str, int]:
    import tflite

    graph = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    return {
        graph.Tensors(i).Name().decode(): i
        for i in range(graph.TensorsLength())
        if graph.Tensors(i).IsVariable()
    }


def _close(ours: np.ndarray, theirs: np.ndarray, what: str) -> None:
    if ours.dtype.kind == "f":
        scale = max(1.0, float(np.abs(theirs).max(initial=0.0)))
        assert np.abs(ours - theirs).max(initial=0.0) <= 1e-5 * scale, what
    else:
        assert np.array_equal(ours, theirs), f"{what}: {ours.ravel()} != {theirs.ravel()}"


def assert_sequence_matches(
    model: bytes, directory: Path, external_state: bool, sanitize: bool = False
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.tflite"
    path.write_bytes(model)
    compiled = compile_sequence(path, directory, external_state, sanitize)
    rng = np.random.default_rng(3)
    steps = [tflm.random_inputs(compiled.inputs, rng) for _ in range(STEPS)]
    variables = _variable_tensors(model)
    ours = compiled.run(steps, RESETS)
    theirs = tflm_sequence(model, steps, RESETS, list(variables.values()))
    report = json.loads(compiled.report.read_text())
    state_buffers = {b["tensor"]: b for b in report["buffers"] if b["kind"] == "state"}
    assert set(state_buffers) == set(variables)
    for step, (mine, (outputs, states)) in enumerate(zip(ours, theirs, strict=True)):
        for position, (a, b) in enumerate(zip(mine.outputs, outputs, strict=True)):
            _close(a, b.reshape(a.shape), f"run {step}, output {position}")
        if not external_state:
            continue
        assert mine.state is not None
        for (name, _), reference in zip(variables.items(), states, strict=True):
            buffer = state_buffers[name]
            start = buffer["offset"]
            raw = mine.state[start : start + buffer["size_bytes"]]
            value = np.frombuffer(raw, dtype=reference.dtype).reshape(reference.shape)
            _close(value, reference, f"run {step}, state {name}")


@needs_tflm
@needs_gcc
@pytest.mark.parametrize("external_state", [False, True], ids=["internal", "external"])
@pytest.mark.parametrize("variants", ["int8", "float32"])
def test_svdf_sequence_matches_tflm(tmp_path: Path, variants: str, external_state: bool) -> None:
    """Seven runs in a row with a reset before the fifth: outputs (and, external, the state
    after every run) equal TFLM's."""
    model = svdf_model(INT8_VARIANTS if variants == "int8" else FLOAT_VARIANTS)
    assert_sequence_matches(model, tmp_path, external_state)


@needs_tflm
@needs_gcc
def test_svdf_sequence_under_sanitizers(tmp_path: Path) -> None:
    model = svdf_model(INT8_VARIANTS[1:2] + FLOAT_VARIANTS[1:2])
    assert_sequence_matches(model, tmp_path / "internal", False, sanitize=True)
    assert_sequence_matches(model, tmp_path / "external", True, sanitize=True)


@needs_tflm
def test_state_pool_no_larger_than_tflm_variables(tmp_path: Path) -> None:
    """The state pool holds the variable tensors and nothing else: its bytes are at most TFLM's
    variable tensors' bytes; the workspace with I/O inside stays within TFLM's arena head."""
    from usmp_dialect.validation.host import plan, workspace_bytes

    for name, variants in (("int8", INT8_VARIANTS), ("float32", FLOAT_VARIANTS)):
        model = svdf_model(variants)
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(model)
        report = plan(path, tmp_path / name, workspace_io=True)
        state = sum(p["size_bytes"] for p in report["pools"] if p["kind"] == "state")
        variables = sum(
            b["size_bytes"] for b in report["buffers"] if b["kind"] == "state"
        )  # = the variable tensors' bytes
        import tflite

        graph = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
        tflm_variables = 0
        for i in range(graph.TensorsLength()):
            tensor = graph.Tensors(i)
            if tensor.IsVariable():
                size = {tflite.TensorType.INT16: 2, tflite.TensorType.INT8: 1}.get(tensor.Type(), 4)
                tflm_variables += size * int(np.prod(tensor.ShapeAsNumpy()))
        assert variables == tflm_variables
        assert state <= tflm_variables  # packed at their elements' alignment: no padding
        assert workspace_bytes(report) <= tflm.arena(path).head_bytes


def test_variable_tensor_becomes_state_global() -> None:
    """The imported module keeps the state as a mutable `memref.global` marked `usmp.state`
    (standard MLIR), initialised as TFLM resets it: the int8 zero point, else 0."""
    model = svdf_model(INT8_VARIANTS[3:4] + FLOAT_VARIANTS[:1])
    module = import_tflite(model, "svdf.tflite")
    text = str(module)
    assert 'sym_name = "v0_state"' in text and "dense<-7> : tensor<2x18xi8>" in text
    assert 'sym_name = "v1_state"' in text and "dense<0.000000e+00> : tensor<1x20xf32>" in text
    assert text.count("usmp.state") == 2


def test_svdf_refusals() -> None:
    rng = np.random.default_rng(0)
    tensors = svdf_tensors("s", rng, "int16", 1, 4, 3, 2, 3)
    bad_rank = OperatorSpec("SVDF", [0, 1, 2, 3, 4], [5], "SVDFOptions", {"Rank": 4})
    with pytest.raises(ModelImportError, match="rank 4"):
        import_tflite(write_model(tensors, [bad_rank], [0], [5]), "svdf.tflite")
    sign = OperatorSpec(
        "SVDF", [0, 1, 2, 3, 4], [5], "SVDFOptions", {"Rank": 2, "FusedActivationFunction": 5}
    )
    with pytest.raises(ModelImportError, match="SVDF with fused activation SIGN_BIT"):
        import_tflite(write_model(tensors, [sign], [0], [5]), "svdf.tflite")


@needs_tflm
@needs_gcc
def test_usmp_validate_runs_every_input_from_the_initial_state(tmp_path: Path) -> None:
    """`usmp-validate` runs each input in a fresh process; TFLM gets a fresh interpreter per
    input for a stateful model, so both start from the initial state."""
    import subprocess
    import sys

    path = tmp_path / "svdf.tflite"
    path.write_bytes(svdf_model(INT8_VARIANTS[1:2]))
    ran = subprocess.run(
        [sys.executable, "-m", "usmp_dialect.tools.usmp_validate", str(path), "--inputs", "3"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "bit-exact" in ran.stdout and ran.stdout.rstrip().endswith("PASS")
