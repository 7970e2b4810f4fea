"""UNIDIRECTIONAL_SEQUENCE_LSTM against TensorFlow Lite Micro, on models written with
`usmp_dialect.testing.tflite_writer` and on two the TFLite converter wrote: float32 and int8
(int16 cell state), batch-major and time-major, with and without cell clipping, over several
runs in one process (the hidden and cell state carry over), then `<p>_reset_state()` and more
runs, as TFLM's `invoke()` and `reset()` do. int8 outputs byte for byte, float ones within
1e-5 of the largest; the hidden and cell state after every run too (the state pool, external
for the test, against TFLM's variable tensors). The LSTM variants TFLM refuses are refused.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.frontends.tflite.reader import read_graph
from usmp_dialect.kernels.int16_activation import SIGMOID_TABLE_UINT16
from usmp_dialect.testing import tflm
from usmp_dialect.testing.stateful import STATE_POOL, compile_sequence, tflm_sequence
from usmp_dialect.testing.stateful_models import CELL, HIDDEN, lstm_spec
from usmp_dialect.testing.tflite_writer import (
    ModelSpec,
    OperatorSpec,
    TensorSpec,
    merge,
    write_model,
)
from usmp_dialect.validation.host import plan, workspace_bytes

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

FLOAT_CASES = {
    "batch_major": {},
    "time_major": {"time_major": True, "batches": 3, "units": 16, "features": 8, "steps": 6},
    "clipped": {"cell_clip": 0.7, "units": 9, "steps": 5, "seed": 1},
}
INT8_CASES = {
    "batch_major": {"weight_scale": 0.1},
    "time_major_clipped": {
        "time_major": True,
        "cell_clip": 3.0,
        "weight_scale": 0.2,
        "units": 16,
        "features": 8,
        "steps": 6,
    },
    # a cell state in Q0.15: TFLM's tanh of it shifts right (multiplier 3, shift 3)
    "cell_q15": {"cell_power": -15, "weight_scale": 0.2, "units": 16, "steps": 6, "seed": 2},
    "cell_q9": {"cell_power": -9, "weight_scale": 0.5, "batches": 3, "time_major": True},
    "one_batch": {"cell_power": -13, "cell_clip": 0.9, "batches": 1, "units": 7, "seed": 3},
}

# 16x8: the int8 cases' shapes and cell formats with int16 activations over their whole range
INT16_CASES = {
    "batch_major": {"weight_scale": 0.1},
    "time_major_clipped": INT8_CASES["time_major_clipped"],
    "cell_q15": INT8_CASES["cell_q15"],
    "cell_q9": {**INT8_CASES["cell_q9"], "weight_scale": 0.05},
    "one_batch": INT8_CASES["one_batch"],
}


def _model(dtype: type, cases: dict[str, dict]) -> bytes:
    return merge({name: lstm_spec(dtype, **kwargs) for name, kwargs in cases.items()})


def _inputs(ports: list, rng: np.random.Generator) -> list[np.ndarray]:
    return [
        rng.integers(-128, 128, port.shape).astype(np.int8)
        if port.dtype == np.int8
        else rng.integers(-32768, 32768, port.shape).astype(np.int16)
        if port.dtype == np.int16
        else rng.normal(0, 1.5, port.shape).astype(np.float32)
        for port in ports
    ]


def _assert_sequence_matches(
    model: bytes, directory: Path, sanitize: bool = False, expose_state: bool = False
) -> None:
    """Three runs, a reset, two runs: our outputs equal TFLM's after every run and, with
    `expose_state`, so do the variables (the external state pool's bytes, placed by the plan
    report, against TFLM's variable tensors)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "model.tflite"
    path.write_bytes(model)
    compiled = compile_sequence(path, directory, external_state=expose_state, sanitize=sanitize)
    rng = np.random.default_rng(0)
    steps = [_inputs(list(compiled.inputs), rng) for _ in range(5)]
    resets = [3]
    ours = compiled.run(steps, resets)
    variables = [t for t in read_graph(model, str(path)).tensors if t.variable]
    watched = [t.index for t in variables] if expose_state else []
    theirs = tflm_sequence(model, steps, resets, watched)
    placed = {}
    if expose_state:
        buffers = json.loads(compiled.report.read_text())["buffers"]
        placed = {
            b["tensor"]: (b["offset"], b["size_bytes"]) for b in buffers if b["pool"] == STATE_POOL
        }
        assert sorted(placed) == sorted(t.name for t in variables)
    names = [port.name for port in compiled.outputs]
    for index, (step, (outputs, states)) in enumerate(zip(ours, theirs, strict=True)):
        tflm.assert_matches(step.outputs, outputs, [f"run {index}: {name}" for name in names])
        for variable, reference in zip(variables if expose_state else [], states, strict=True):
            assert step.state is not None
            offset, size = placed[variable.name]
            mine = np.frombuffer(step.state[offset : offset + size], dtype=variable.dtype)
            mine = mine.reshape(reference.shape)
            where = f"run {index}: state {variable.name}"
            if variable.dtype.kind == "f":
                scale = max(float(np.abs(reference).max()), 1.0)
                np.testing.assert_allclose(
                    mine, reference, rtol=1e-5, atol=1e-6 * scale, err_msg=where
                )
            else:
                np.testing.assert_array_equal(mine, reference, err_msg=where)


@needs_tflm
@needs_gcc
def test_float_lstm_matches_tflm_over_runs_and_reset(tmp_path: Path) -> None:
    _assert_sequence_matches(_model(np.float32, FLOAT_CASES), tmp_path, expose_state=True)


@needs_tflm
@needs_gcc
def test_int8_lstm_matches_tflm_bit_for_bit_over_runs_and_reset(tmp_path: Path) -> None:
    _assert_sequence_matches(_model(np.int8, INT8_CASES), tmp_path, expose_state=True)


@needs_tflm
@needs_gcc
def test_16x8_lstm_matches_tflm_bit_for_bit_over_runs_and_reset(tmp_path: Path) -> None:
    """int16 activations, int8 weights, int64 biases (`EvalLstm<int16_t, int8_t, int16_t,
    int64_t>`), under the sanitizers, the state compared after every run."""
    model = _model(np.int16, INT16_CASES)
    _assert_sequence_matches(model, tmp_path, sanitize=True, expose_state=True)


INPUTS = Path(__file__).parent / "Inputs"
KERAS = ["float", "int8", "stacked_float", "stacked_int8"]


@needs_tflm
@needs_gcc
@pytest.mark.parametrize("kind", KERAS)
def test_keras_lstm_matches_tflm_over_runs_and_reset(kind: str, tmp_path: Path) -> None:
    """Keras LSTMs as the TensorFlow Lite converter writes them (`scripts/make_lstm_models.py`;
    int8: full-integer quantisation with intermediates and an int16 cell state of scale
    2**-14; stacked: LSTM -> LSTM -> STRIDED_SLICE -> FULLY_CONNECTED), state included."""
    model = (INPUTS / f"lstm_keras_{kind}.tflite").read_bytes()
    _assert_sequence_matches(model, tmp_path, expose_state=True)


@needs_tflm
@pytest.mark.parametrize("kind", KERAS)
def test_keras_lstm_memory_within_tflm(kind: str, tmp_path: Path) -> None:
    """The workspace with the input and output inside stays within TFLM's arena head (TFLM
    adds four scratch vectors; the kernel needs none), and the state pool within TFLM's
    variable tensors (each 16-byte aligned in its arena)."""
    path = INPUTS / f"lstm_keras_{kind}.tflite"
    report = plan(path, tmp_path, workspace_io=True)
    assert workspace_bytes(report) <= tflm.arena(path).head_bytes
    state = sum(pool["size_bytes"] for pool in report["pools"] if pool["kind"] == "state")
    variables = [t for t in read_graph(path.read_bytes(), str(path)).tensors if t.variable]
    assert 0 < state <= sum(-(-t.size_bytes // 16) * 16 for t in variables)


@needs_tflm
def test_16x8_lstm_memory_within_tflm(tmp_path: Path) -> None:
    """As for the Keras LSTMs: a 16x8 one's workspace (I/O inside) within TFLM's arena head,
    its int16 state within TFLM's variable tensors."""
    path = tmp_path / "lstm16x8.tflite"
    path.write_bytes(lstm_spec(np.int16, batches=2, steps=6, features=8, units=16).model())
    report = plan(path, tmp_path, workspace_io=True)
    assert workspace_bytes(report) <= tflm.arena(path).head_bytes
    state = sum(pool["size_bytes"] for pool in report["pools"] if pool["kind"] == "state")
    variables = [t for t in read_graph(path.read_bytes(), str(path)).tensors if t.variable]
    assert 0 < state <= sum(-(-t.size_bytes // 16) * 16 for t in variables)


@needs_tflm
@needs_gcc
def test_lstm_under_sanitizers(tmp_path: Path) -> None:
    parts = {
        "f": lstm_spec(np.float32, time_major=True, units=6),
        "q": lstm_spec(np.int8, cell_clip=2.0, weight_scale=0.2, units=6),
    }
    _assert_sequence_matches(merge(parts), tmp_path, sanitize=True)


@needs_tflm
def test_hidden_state_is_the_last_step_of_the_output() -> None:
    """What lets the tests read the hidden state from the output: TFLM's hidden state after
    a run is the output's last time step (per batch row)."""
    from tflite_micro.python.tflite_micro import runtime

    for time_major in (False, True):
        spec = lstm_spec(np.int8, time_major=time_major, weight_scale=0.2)
        model = spec.model()
        interpreter = runtime.Interpreter.from_bytes(
            model, intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors
        )
        shape = spec.tensors[spec.inputs[0]].shape
        x = np.random.default_rng(0).integers(-128, 128, shape).astype(np.int8)
        for _ in range(2):
            (output,) = tflm.run_with(interpreter, [x], 1)
            state = interpreter.GetTensor(spec.operators[0].inputs[HIDDEN], 0)["tensor_data"]
            last = output[-1] if time_major else output[:, -1]
            np.testing.assert_array_equal(state, last)


def _int16_activation(x: np.ndarray, kind: str, multiplier: int, left_shift: int) -> np.ndarray:
    """TFLite's `reference_integer_ops::Logistic` / `Tanh` on int16, in numpy, on the table
    the kernel emits."""
    if multiplier == 0:
        multiplier, left_shift = 3 << left_shift, 0
    rounding = (1 << (left_shift - 1)) if left_shift > 0 else 0
    value = (x.astype(np.int64) * multiplier + rounding) >> left_shift
    magnitude = np.abs(value)
    bits = 9 if kind == "sigmoid" else 8
    high = magnitude >> bits
    index = np.minimum(high, 254)
    table = SIGMOID_TABLE_UINT16.astype(np.int64)
    below, above = table[index], table[index + 1]
    interpolated = (below << bits) + (magnitude & ((1 << bits) - 1)) * (above - below)
    if kind == "sigmoid":
        result = np.where(high >= 255, 0x7FFF << 10, interpolated)
        out = np.where(value >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1) >> 10
    else:
        result = np.where(high >= 255, 0xFFFF << 8, interpolated)
        out = np.where(value >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + 127) >> 8
    return out.astype(np.int16)


@needs_tflm
@pytest.mark.parametrize(
    ("opcode", "kind", "power", "left_shift"),
    [("LOGISTIC", "sigmoid", -12, 0), ("TANH", "tanh", -12, 0), ("TANH", "tanh", -11, 1)],
)
def test_int16_gate_functions_equal_tflm_on_every_input(
    opcode: str, kind: str, power: int, left_shift: int
) -> None:
    """The LSTM's int16 sigmoid and tanh (the table and its interpolation) are TFLM's int16
    LOGISTIC and TANH on inputs of scale 2**power: all 65536 inputs."""
    inputs = np.arange(-32768, 32768, dtype=np.int16)
    tensors = [
        TensorSpec("x", np.int16, (inputs.size,), None, [2.0**power], [0]),
        TensorSpec("y", np.int16, (inputs.size,), None, [2.0**-15], [0]),
    ]
    model = write_model(tensors, [OperatorSpec(opcode, [0], [1])], [0], [1])
    (theirs,) = tflm.run(model, [inputs], 1)
    np.testing.assert_array_equal(_int16_activation(inputs, kind, 0, left_shift), theirs)


REFUSED = {
    "CIFG": ({"omit": (1, 5)}, "CIFG"),
    "peephole": ({"extra": (9, 10, 11)}, "peephole"),
    "projection": ({"extra": (16,)}, "projection"),
    "layer norm": ({"extra": (20, 21, 22, 23)}, "layer normalisation"),
    "relu cell": ({"activation": 1}, "cell activation 1"),
}


@pytest.mark.parametrize("variant", REFUSED)
def test_refuses_what_tflm_refuses(variant: str) -> None:
    kwargs, message = REFUSED[variant]
    model = lstm_spec(np.int8, **kwargs).model()  # type: ignore[arg-type]
    with pytest.raises(ModelImportError, match=message):
        import_tflite(model, "lstm.tflite")


def test_refuses_per_channel_weights_and_non_power_of_two_cell_scale() -> None:
    spec = lstm_spec(np.int8)
    weight = spec.tensors[spec.operators[0].inputs[2]]
    per_channel = replace(weight, scales=[0.05] * 5, zero_points=[0] * 5)
    tensors = [per_channel if t is weight else t for t in spec.tensors]
    model = ModelSpec(tensors, spec.operators, spec.inputs, spec.outputs).model()
    with pytest.raises(ModelImportError, match="per tensor"):
        import_tflite(model, "lstm.tflite")
    cell = spec.tensors[spec.operators[0].inputs[CELL]]
    odd = replace(cell, scales=[0.001])
    tensors = [odd if t is cell else t for t in spec.tensors]
    model = ModelSpec(tensors, spec.operators, spec.inputs, spec.outputs).model()
    with pytest.raises(ModelImportError, match="not a power of two"):
        import_tflite(model, "lstm.tflite")


def test_refuses_hybrid_lstms_and_16x8_ones_outside_the_scheme() -> None:
    """int8 weights with float activations (TFLM runs them reading the weights as floats) are
    refused; so are int16 activations with int32 biases (TFLM's 16x8 kernel reads int64) or a
    zero point (its int16 arithmetic has no offsets)."""
    spec = lstm_spec(np.float32)
    op = spec.operators[0]
    tensors = list(spec.tensors)
    for position in range(1, 9):
        tensor = tensors[op.inputs[position]]
        weights = np.ones(tensor.shape, np.int8)
        tensors[op.inputs[position]] = replace(
            tensor, dtype=np.int8, data=weights, scales=[0.1], zero_points=[0]
        )
    model = ModelSpec(tensors, spec.operators, spec.inputs, spec.outputs).model()
    with pytest.raises(ModelImportError, match="hybrid LSTM"):
        import_tflite(model, "lstm.tflite")
    spec = lstm_spec(np.int8)
    op = spec.operators[0]
    tensors = list(spec.tensors)
    for index in (op.inputs[0], op.outputs[0], op.inputs[HIDDEN]):
        tensors[index] = replace(tensors[index], dtype=np.int16, zero_points=[0])
    model = ModelSpec(tensors, spec.operators, spec.inputs, spec.outputs).model()
    with pytest.raises(ModelImportError, match="is int32; int64 expected"):
        import_tflite(model, "lstm.tflite")
    spec = lstm_spec(np.int16)
    tensors = list(spec.tensors)
    source = spec.operators[0].inputs[0]
    tensors[source] = replace(tensors[source], zero_points=[5])
    model = ModelSpec(tensors, spec.operators, spec.inputs, spec.outputs).model()
    with pytest.raises(ModelImportError, match="has zero point 5; 16x8 quantisation needs"):
        import_tflite(model, "lstm.tflite")
