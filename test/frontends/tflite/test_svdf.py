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
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}
STEPS = 7
RESETS = (4,)  # TFLM's reset() / our <p>_reset_state() before the fifth run


def svdf_tensors(
    prefix: str,
    rng: np.random.Generator,
    dtype: str,
    batches: int,
    input_size: int,
    units: int,
    rank: int,
    memory: int,
    state_zero_point: int = 0,
    bias: bool = True,
) -> list[TensorSpec]:
    """input, weights_feature, weights_time, bias (always written; `bias=False` leaves it out
    of the operator), activation state (variable), output."""
    filters = units * rank
    names = [f"{prefix}_{name}" for name in ("input", "wf", "wt", "bias", "state", "output")]
    if dtype == "float32":
        return [
            TensorSpec(names[0], np.float32, [batches, input_size]),
            TensorSpec(
                names[1],
                np.float32,
                [filters, input_size],
                data=rng.normal(size=(filters, input_size)).astype(np.float32),
            ),
            TensorSpec(
                names[2],
                np.float32,
                [filters, memory],
                data=rng.normal(size=(filters, memory)).astype(np.float32) * 0.5,
            ),
            TensorSpec(
                names[3], np.float32, [units], data=rng.normal(size=units).astype(np.float32)
            ),
            TensorSpec(names[4], np.float32, [batches, filters * memory], variable=True),
            TensorSpec(names[5], np.float32, [batches, units]),
        ]
    state_type = np.int16 if dtype == "int16" else np.int8
    state_scale = 0.004 if dtype == "int16" else 0.6
    time_scale = 0.0005 if dtype == "int16" else 0.004
    time_limit = 400 if dtype == "int16" else 60
    return [
        TensorSpec(names[0], np.int8, [batches, input_size], scales=[0.05], zero_points=[3]),
        TensorSpec(
            names[1],
            np.int8,
            [filters, input_size],
            data=rng.integers(-127, 128, (filters, input_size)).astype(np.int8),
            scales=[0.02],
        ),
        TensorSpec(
            names[2],
            state_type,
            [filters, memory],
            data=rng.integers(-time_limit, time_limit, (filters, memory)).astype(state_type),
            scales=[time_scale],
        ),
        TensorSpec(
            names[3],
            np.int32,
            [units],
            data=rng.integers(-20000, 20000, units).astype(np.int32),
            scales=[state_scale * time_scale],
        ),
        TensorSpec(
            names[4],
            state_type,
            [batches, filters * memory],
            scales=[state_scale],
            zero_points=[state_zero_point],
            variable=True,
        ),
        TensorSpec(names[5], np.int8, [batches, units], scales=[0.15], zero_points=[-5]),
    ]


def svdf_model(variants: list[dict]) -> bytes:
    """One model with an independent SVDF per variant (keyword arguments of `svdf_tensors`
    plus `activation`), each with its own input and output."""
    rng = np.random.default_rng(7)
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []
    inputs: list[int] = []
    outputs: list[int] = []
    for position, variant in enumerate(variants):
        variant = dict(variant)
        activation = ACTIVATIONS[variant.pop("activation", "NONE")]
        bias = variant.get("bias", True)
        base = len(tensors)
        tensors += svdf_tensors(f"v{position}", rng, **variant)
        bias_index = base + 3 if bias else -1
        operators.append(
            OperatorSpec(
                "SVDF",
                [base, base + 1, base + 2, bias_index, base + 4],
                [base + 5],
                "SVDFOptions",
                {"Rank": variant["rank"], "FusedActivationFunction": activation},
            )
        )
        inputs.append(base)
        outputs.append(base + 5)
    return write_model(tensors, operators, inputs, outputs)


INT8_VARIANTS = [
    dict(dtype="int16", batches=1, input_size=6, units=4, rank=1, memory=5),
    dict(dtype="int16", batches=2, input_size=5, units=3, rank=2, memory=4),
    dict(dtype="int16", batches=1, input_size=7, units=2, rank=3, memory=1),
    dict(dtype="int8", batches=2, input_size=4, units=3, rank=2, memory=3, state_zero_point=-7),
]
FLOAT_VARIANTS = [
    dict(dtype="float32", batches=1, input_size=6, units=4, rank=1, memory=5),
    dict(dtype="float32", batches=2, input_size=5, units=3, rank=2, memory=4, activation="RELU"),
    dict(dtype="float32", batches=1, input_size=3, units=2, rank=3, memory=2, activation="TANH"),
    # (no variant without a bias: TFLM's PrepareSvdf dereferences the missing bias and crashes)
    dict(
        dtype="float32",
        batches=1,
        input_size=4,
        units=2,
        rank=2,
        memory=3,
        activation="RELU_N1_TO_1",
    ),
    dict(dtype="float32", batches=1, input_size=4, units=2, rank=1, memory=2, activation="RELU6"),
]


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
