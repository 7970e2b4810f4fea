"""TFLite models with state, written with `tflite_writer`: the tests' and benchmarks' builders
of UNIDIRECTIONAL_SEQUENCE_LSTM (float32, int8, 16x8), SVDF (int8 with int8 or int16 state,
float32) and a resource variable (an accumulator, with or without a CALL_ONCE init subgraph).
Each is run against TensorFlow Lite Micro by `test/frontends/tflite/test_lstm.py`,
`test_svdf.py` and `test_variables.py`, on the emulated Cortex-M by `test/firmware`, and
measured by `benchmarks/stateful_models.py`."""

from __future__ import annotations

import numpy as np
import tflite

from usmp_dialect.testing.tflite_writer import (
    ModelSpec,
    OperatorSpec,
    SubgraphSpec,
    TensorSpec,
    write_model,
)

TANH = 4  # tflite.ActivationFunctionType.TANH
HIDDEN, CELL = 18, 19


def lstm_spec(
    dtype: type,
    batches: int = 2,
    steps: int = 3,
    features: int = 4,
    units: int = 5,
    time_major: bool = False,
    cell_clip: float = 0.0,
    cell_power: int = -11,
    weight_scale: float = 0.05,
    seed: int = 0,
    extra: tuple[int, ...] = (),
    omit: tuple[int, ...] = (),
    activation: int = TANH,
) -> ModelSpec:
    """One LSTM with random weights: int8 ones with per-tensor `weight_scale`, an input of
    scale 0.05 (zero point 3), a hidden state of scale 1/128 (zero point -4) and a cell state of
    scale 2**cell_power. `extra`: optional inputs to add (peephole, projection, layer norm);
    `omit`: inputs to leave out (CIFG)."""
    rng = np.random.default_rng(seed)
    quantized = dtype in (np.int8, np.int16)
    wide = dtype == np.int16  # 16x8: int16 activations (zero point 0), int64 biases
    sequence = (steps, batches) if time_major else (batches, steps)
    tensors: list[TensorSpec] = []

    def add(spec: TensorSpec) -> int:
        tensors.append(spec)
        return len(tensors) - 1

    def weights(position: int, shape: tuple[int, ...]) -> int:
        if quantized:
            data = rng.integers(-127, 128, shape).astype(np.int8)
            return add(TensorSpec(f"w{position}", np.int8, shape, data, [weight_scale], [0]))
        data = rng.normal(0, 0.5, shape).astype(np.float32)
        return add(TensorSpec(f"w{position}", np.float32, shape, data))

    inputs = [-1] * 24
    input_q = ([0.05], [3]) if quantized else (None, None)
    hidden_q = ([1 / 128], [-4]) if quantized else (None, None)
    if wide:
        input_q, hidden_q = ([0.05 / 256], [0]), ([1 / 32768], [0])
    inputs[0] = add(TensorSpec("input", dtype, (*sequence, features), None, *input_q))
    for position in (1, 2, 3, 4, 5, 6, 7, 8, *extra):
        if position in (12, 13, 14, 15):
            continue
        depth = features if position <= 4 else units
        shape = (units, depth) if position <= 8 or position == 16 else (units,)
        inputs[position] = weights(position, shape)
    for position in (12, 13, 14, 15):
        if wide:
            data = rng.integers(-800_000, 800_000, units).astype(np.int64)
            scale = [input_q[0][0] * weight_scale]
            bias = TensorSpec(f"b{position}", np.int64, (units,), data, scale)
        elif quantized:
            data = rng.integers(-3000, 3000, units).astype(np.int32)
            bias = TensorSpec(f"b{position}", np.int32, (units,), data, [0.05 * weight_scale])
        else:
            data = rng.normal(0, 0.5, units).astype(np.float32)
            bias = TensorSpec(f"b{position}", np.float32, (units,), data)
        inputs[position] = add(bias)
    for position in omit:
        inputs[position] = -1
    inputs[HIDDEN] = add(
        TensorSpec("hidden", dtype, (batches, units), None, *hidden_q, variable=True)
    )
    cell_type = np.int16 if quantized else np.float32
    cell_q = ([2.0**cell_power], [0]) if quantized else (None, None)
    inputs[CELL] = add(
        TensorSpec("cell", cell_type, (batches, units), None, *cell_q, variable=True)
    )
    output = add(TensorSpec("output", dtype, (*sequence, units), None, *hidden_q))
    options = {
        "FusedActivationFunction": activation,
        "CellClip": cell_clip,
        "ProjClip": 0.0,
        "TimeMajor": time_major,
    }
    op = OperatorSpec(
        "UNIDIRECTIONAL_SEQUENCE_LSTM",
        inputs,
        [output],
        "UnidirectionalSequenceLSTMOptions",
        options,
    )
    return ModelSpec(tensors, [op], [inputs[0]], [output])


SVDF_ACTIVATIONS = {"NONE": 0, "RELU": 1, "RELU_N1_TO_1": 2, "RELU6": 3, "TANH": 4}


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
        activation = SVDF_ACTIVATIONS[variant.pop("activation", "NONE")]
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


RESOURCE = tflite.TensorType.RESOURCE


def accumulator(dtype: str, init: bool, init_op: str = "ASSIGN_VARIABLE") -> bytes:
    """y = x + acc; acc = y (int8: scale 0.1, zero point -3, so TFLM's default is -3)."""
    element = np.int8 if dtype == "int8" else np.float32
    quantized = {"scales": [0.1], "zero_points": [-3]} if dtype == "int8" else {}
    tensors = [
        TensorSpec("x", element, [1, 4], **quantized),
        TensorSpec("handle", np.int32, [], type_code=RESOURCE),
        TensorSpec("read", element, [1, 4], **quantized),
        TensorSpec("y", element, [1, 4], **quantized),
    ]
    operators = [
        OperatorSpec("VAR_HANDLE", [], [1], "VarHandleOptions", {"SharedName": "acc"}),
        OperatorSpec("READ_VARIABLE", [1], [2]),
        OperatorSpec("ADD", [0, 2], [3], "AddOptions"),
        OperatorSpec("ASSIGN_VARIABLE", [1, 3], []),
    ]
    more = []
    if init:
        operators.insert(
            0, OperatorSpec("CALL_ONCE", [], [], "CallOnceOptions", {"InitSubgraphIndex": 1})
        )
        value = (
            np.array([[5, -7, 9, 1]], dtype=np.int8)
            if dtype == "int8"
            else np.array([[0.5, -1.25, 2.0, 0.0]], dtype=np.float32)
        )
        init_tensors = [
            TensorSpec("init_handle", np.int32, [], type_code=RESOURCE),
            TensorSpec("init_value", element, [1, 4], data=value, **quantized),
        ]
        init_operators = [
            OperatorSpec("VAR_HANDLE", [], [0], "VarHandleOptions", {"SharedName": "acc"}),
            OperatorSpec(init_op, [0, 1], []),
        ]
        more = [SubgraphSpec(init_tensors, init_operators)]
    return write_model(tensors, operators, [0], [3], more_subgraphs=more)
