"""Stateful, recurrent, 16x8, bool/int32 and uint8 models on the emulated Cortex-M (QEMU), run after
run in one firmware: the state (LSTM hidden and cell state, SVDF activation state, resource
variables) carries over from one `<p>_run` to the next and `<p>_reset_state()` is called
before one of them. Every run's outputs must equal the x86 build's byte for byte and TFLM's
(PyPI `tflite-micro`, fed the harness's inputs in the same order, a fresh interpreter where we
reset: TFLM's `reset()` would not run a CALL_ONCE init again) — integers bit for bit, floats
to 1e-5. The frontend tests hold the same models to TFLM on x86; these hold the Cortex-M
builds, whose DSP paths (M4F, M7) and plain C paths (M3) differ from x86's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.testing import control_flow_models, firmware, tflm
from usmp_dialect.testing.int16_models import activation, chain, softmax
from usmp_dialect.testing.stateful_models import (
    INT8_VARIANTS,
    accumulator,
    lstm_spec,
    svdf_model,
)
from usmp_dialect.testing.tflite_writer import ModelSpec, OperatorSpec, TensorSpec, merge
from usmp_dialect.testing.uint8_models import camera_add, camera_streamed
from usmp_dialect.validation.host import entry_ports

pytestmark = [
    pytest.mark.skipif(
        firmware.toolchain_missing() is not None, reason=firmware.toolchain_missing() or ""
    ),
    pytest.mark.skipif(
        not tflm.available(), reason="tflite-micro (the reference) is not installed"
    ),
]

KERAS = Path(__file__).parents[1] / "frontends" / "tflite" / "Inputs"
# Odd seeds (the harness's generator starts from `seed | 1`), on which variable_in_loop's
# bound `n` is positive: its WHILE turns and the variable changes in every run.
SEEDS = (5, 7, 13, 17, 19)
RESETS = (3,)  # <p>_reset_state() before the fourth run


def typed_model() -> bytes:
    """bool and int32 activations: GREATER of two int8 inputs (rescaled, as TFLM compares
    int8), SELECT_V2 on it between x and a third input, CAST of x and y to int32, their int32
    MUL and ADD, and ARG_MAX over the last axis."""
    int8 = {"scales": [0.05], "zero_points": [-3]}
    tensors = [
        TensorSpec("x", np.int8, (2, 16), **int8),  # type: ignore[arg-type]
        TensorSpec("y", np.int8, (2, 16), scales=[0.04], zero_points=[5]),
        TensorSpec("greater", np.bool_, (2, 16)),
        TensorSpec("chosen", np.int8, (2, 16), **int8),  # type: ignore[arg-type]
        TensorSpec("xi", np.int32, (2, 16)),
        TensorSpec("yi", np.int32, (2, 16)),
        TensorSpec("product", np.int32, (2, 16)),
        TensorSpec("total", np.int32, (2, 16)),
        TensorSpec("axis", np.int32, (1,), data=np.array([1], np.int32)),
        TensorSpec("largest", np.int32, (2,)),
        TensorSpec("z", np.int8, (2, 16), **int8),  # type: ignore[arg-type]
    ]
    operators = [
        OperatorSpec("GREATER", [0, 1], [2]),
        OperatorSpec("SELECT_V2", [2, 0, 10], [3]),
        OperatorSpec("CAST", [0], [4]),
        OperatorSpec("CAST", [1], [5]),
        OperatorSpec("MUL", [4, 5], [6], "MulOptions"),
        OperatorSpec("ADD", [6, 4], [7], "AddOptions"),
        OperatorSpec("ARG_MAX", [0, 8], [9], "ArgMaxOptions", {"OutputType": 2}),
    ]
    return ModelSpec(tensors, operators, [0, 1, 10], [2, 3, 7, 9]).model()


def int16_model() -> bytes:
    """A 16x8 network (QUANTIZE, CONV_2D, DEPTHWISE_CONV_2D, ADD, MAX_POOL_2D, RESHAPE,
    FULLY_CONNECTED, DEQUANTIZE) beside int16 LOGISTIC, TANH and SOFTMAX."""
    return merge(
        {
            "chain": chain(),
            "logistic": activation("LOGISTIC", 1 / 2048, (1, 64)),
            "tanh": activation("TANH", 1 / 4096, (1, 64)),
            "softmax": softmax((2, 10), 1 / 1024),
        }
    )


MODELS: dict[str, Callable[[], bytes]] = {
    "lstm_keras_int8": lambda: (KERAS / "lstm_keras_int8.tflite").read_bytes(),
    "lstm_16x8": lambda: lstm_spec(
        np.int16, batches=2, steps=6, features=8, units=16, time_major=True, cell_clip=3.0
    ).model(),
    "svdf_int8": lambda: svdf_model(INT8_VARIANTS),
    "accumulator_call_once": lambda: accumulator("int8", init=True),
    "variable_in_loop": control_flow_models.variable_in_loop,
    "int16": int16_model,
    "bool_int32": typed_model,
    # uint8 image in and out, int8 convolutions streamed in rows between them
    "uint8": lambda: merge({"camera": camera_streamed(), "add": camera_add()}),
}


def _tflm_runs(
    model: bytes, runs: list[list[np.ndarray]], outputs: int, resets: tuple[int, ...]
) -> list[list[np.ndarray]]:
    """TFLM's outputs of each run in turn, from a fresh interpreter before the runs in
    `resets` (it runs CALL_ONCE again, as our reset restores the initial values)."""
    interpreter = tflm.interpreter(model)
    results = []
    for index, inputs in enumerate(runs):
        if index in resets:
            interpreter = tflm.interpreter(model)
        results.append(tflm.run_with(interpreter, inputs, outputs))
    return results


@pytest.mark.parametrize(
    ("name", "cpu"),
    [
        *((name, "m4f") for name in MODELS),
        ("lstm_16x8", "m3"),
        ("svdf_int8", "m3"),
        ("int16", "m3"),
        ("lstm_keras_int8", "m7"),
        ("uint8", "m3"),
    ],
)
def test_runs_on_cortex_m_like_tflm_run_after_run(name: str, cpu: str, tmp_path: Path) -> None:
    data = MODELS[name]()
    path = tmp_path / f"{name}.tflite"
    path.write_bytes(data)
    model = firmware.model_from_file(path)
    stateful = model.reset_takes_pools is not None
    resets = RESETS if stateful else ()
    assert stateful == (name not in ("int16", "bool_int32", "uint8")), "the model's state pool"
    comparison = firmware.compare(model, tmp_path, firmware.CPUS[cpu], SEEDS, resets=resets)
    assert comparison.ok, "\n".join(comparison.mismatches)

    inputs, outputs = entry_ports(path)
    assert [p.size_bytes for p in inputs] == [t.size_bytes for t in model.inputs]
    arrays = [
        [
            np.frombuffer(raw, dtype=port.dtype).reshape(port.shape)
            for raw, port in zip(firmware.harness_inputs(model, seed), inputs, strict=True)
        ]
        for seed in SEEDS
    ]
    printed = firmware.printed_outputs(comparison.firmware_output, len(outputs))
    assert len(printed) == len(SEEDS)
    references = _tflm_runs(data, arrays, len(outputs), resets)
    for run, (ours, theirs) in enumerate(zip(printed, references, strict=True)):
        mine = [
            np.frombuffer(raw, dtype=port.dtype).reshape(port.shape)
            for raw, port in zip(ours, outputs, strict=True)
        ]
        names = [f"run {run}: {port.name}" for port in outputs]
        tflm.assert_matches(mine, theirs, names)
