"""Stateful, recurrent and 16x8 models against TensorFlow Lite Micro: memory and a run sequence.

Run by hand (not in CI), from the checkout with the virtualenv active (`pip install -e '.[test]'`):

    python benchmarks/stateful_models.py
    python benchmarks/stateful_models.py --models svdf_kws_int8,lstm_keras_int8

The figures GitHub issue 24 asks for: the workspace with inputs and outputs inside must stay
within TFLM's arena head on every model, and the state pool within TFLM's variable tensors.

Models (none is committed as a generated file; the builders are the tests' own, in
`usmp_dialect/testing/`: `stateful_models.py`, `int16_models.py`, `control_flow_models.py`):

* `lstm_keras_*`: the committed Keras LSTMs of `test/frontends/tflite/Inputs`
  (`scripts/make_lstm_models.py`);
* `lstm_16x8`: `stateful_models.lstm_spec(np.int16, batches=2, steps=6, features=8,
  units=16)`, the 16x8 LSTM (int16 activations, int8 weights, int64 biases) of
  `test_16x8_lstm_memory_within_tflm`;
* `svdf_int8`, `svdf_float`: `stateful_models.svdf_model` on its int8 (int16 and int8 state)
  and float variants (four and five independent SVDFs in one model);
* `svdf_kws_int8`, `svdf_kws_float`: one keyword-spotting-sized SVDF (our choice of size, in the
  shape of TFLM's keyword benchmark's first layer): a frame of 40 features in, 64 units, rank 1,
  a memory of 32 frames (state 64 x 32, int16 in the int8 model);
* `accumulator_call_once`: `stateful_models.accumulator("int8", init=True)`, a resource variable
  (VAR_HANDLE, READ_VARIABLE, ADD, ASSIGN_VARIABLE) initialised by a CALL_ONCE subgraph;
* `variable_in_loop`: `control_flow_models.variable_in_loop`, a resource variable updated in a
  WHILE body, initialised by CALL_ONCE (input `n`, the number of turns, drawn from 0..3);
* `fc_16x8`, `chain_16x8`: `int16_models.fully_connected(2, per_channel=True, depth=300)` and
  `int16_models.chain()` (QUANTIZE, CONV_2D, DEPTHWISE_CONV_2D, ADD, MAX_POOL_2D, RESHAPE,
  FULLY_CONNECTED, DEQUANTIZE on int16 activations).

For each model:

* Workspace: `usmp-opt MODEL -p 'usmp-import-memref,convert-linalg-to-loops,usmp{workspace-io=true
  report=...}'` (U4: inputs and outputs inside the workspace, as TFLM counts its arena), the
  workspace pools' bytes and their lower bound from the plan report; the state: the bytes of the
  report's pools of kind `state`.
* TFLM: `print_allocations()` (PyPI `tflite-micro`): head (planned activations with inputs and
  outputs) and total (head plus the persistent tail, which holds the variables). TFLM's variable
  bytes: every `is_variable` tensor of every subgraph at its shape's bytes (TFLM allocates them
  in the tail) plus each resource variable (one per VAR_HANDLE shared name) at the bytes of the
  largest value ASSIGN_VARIABLE writes to it (`MicroResourceVariables::Allocate` sizes the buffer
  from the assigned tensor).
* Stack: gcc `-fstack-usage` at -O2 of the generated C (`<p>_run`'s frame plus the largest
  operator function's), as `benchmarks/tflite_models.py` measures it.
* Correctness: `usmp_dialect.testing.stateful` — our C (`compile_sequence`, the state in its
  internal pool) and TFLM (`tflm_sequence`) run the same 7 seeded inputs one after the other in
  one process, resetting before the fifth run (`<p>_reset_state()`, TFLM's `reset()`); the
  outputs of every run are compared: "bit-exact" or the largest absolute difference (float), or
  the number of differing values (integer). A stateless model (the 16x8 ones) runs the same
  inputs without a reset (it has no `<p>_reset_state`). A model with CALL_ONCE is compared
  after the reset with a fresh TFLM interpreter: TFLM's `reset()` does not run CALL_ONCE again
  and sets resource variables to their defaults, `<p>_reset_state()` restores the init
  subgraph's values (SPEC §13, pinned by `test_variables.py`).

Writes `benchmarks/results/stateful_models.md` (or `--output`).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tflite

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "test" / "frontends" / "tflite"
sys.path.insert(0, str(Path(__file__).parent))

from tflite_models import stack_bytes  # noqa: E402

from usmp_dialect.testing import control_flow_models, int16_models, stateful_models, tflm  # noqa: E402
from usmp_dialect.testing.stateful import compile_sequence, tflm_sequence  # noqa: E402
from usmp_dialect.validation.host import PREFIX, compile_model, plan  # noqa: E402

RESULTS = Path(__file__).parent / "results" / "stateful_models.md"
STEPS, RESET = 7, 4
ELEMENT_BYTES = {
    tflite.TensorType.FLOAT32: 4,
    tflite.TensorType.INT8: 1,
    tflite.TensorType.UINT8: 1,
    tflite.TensorType.BOOL: 1,
    tflite.TensorType.INT16: 2,
    tflite.TensorType.INT32: 4,
    tflite.TensorType.INT64: 8,
}
KWS = dict(batches=1, input_size=40, units=64, rank=1, memory=32)


def _keras(kind: str) -> Callable[[], bytes]:
    return lambda: (TESTS / "Inputs" / f"lstm_keras_{kind}.tflite").read_bytes()


MODELS: dict[str, Callable[[], bytes]] = {
    **{f"lstm_keras_{kind}": _keras(kind) for kind in ("float", "int8", "stacked_float")},
    "lstm_keras_stacked_int8": _keras("stacked_int8"),
    "lstm_16x8": lambda: stateful_models.lstm_spec(
        np.int16, batches=2, steps=6, features=8, units=16
    ).model(),
    "svdf_int8": lambda: stateful_models.svdf_model(stateful_models.INT8_VARIANTS),
    "svdf_float": lambda: stateful_models.svdf_model(stateful_models.FLOAT_VARIANTS),
    "svdf_kws_int8": lambda: stateful_models.svdf_model([dict(dtype="int16", **KWS)]),
    "svdf_kws_float": lambda: stateful_models.svdf_model([dict(dtype="float32", **KWS)]),
    "accumulator_call_once": lambda: stateful_models.accumulator("int8", init=True),
    "variable_in_loop": control_flow_models.variable_in_loop,
    "fc_16x8": lambda: int16_models.fully_connected(2, per_channel=True, depth=300).model(),
    "chain_16x8": lambda: int16_models.chain().model(),
}


@dataclass
class Row:
    model: str
    workspace_bytes: int
    lower_bound_bytes: int
    state_bytes: int
    tflm_head_bytes: int
    tflm_total_bytes: int
    tflm_variable_bytes: int
    stack_bytes: int
    correctness: str


def _operators(model: tflite.Model):
    codes = [model.OperatorCodes(i) for i in range(model.OperatorCodesLength())]
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for o in range(graph.OperatorsLength()):
            op = graph.Operators(o)
            code = codes[op.OpcodeIndex()]
            yield graph, op, max(code.BuiltinCode(), code.DeprecatedBuiltinCode())


def _tensor_bytes(tensor: tflite.Tensor) -> int:
    return ELEMENT_BYTES[tensor.Type()] * int(np.prod(tensor.ShapeAsNumpy(), dtype=np.int64))


def tflm_variable_bytes(data: bytes) -> int:
    """The `is_variable` tensors of every subgraph plus each resource variable at the largest
    value assigned to it: what TFLM keeps in its arena's persistent tail as variables."""
    model = tflite.Model.GetRootAs(data, 0)
    total = 0
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for t in range(graph.TensorsLength()):
            if graph.Tensors(t).IsVariable():
                total += _tensor_bytes(graph.Tensors(t))
    resources: dict[str, int] = {}
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for o in range(graph.OperatorsLength()):
            op = graph.Operators(o)
            code = model.OperatorCodes(op.OpcodeIndex())
            builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            if builtin != tflite.BuiltinOperator.ASSIGN_VARIABLE:
                continue
            name = _shared_name(graph, op.Inputs(0), model)
            size = _tensor_bytes(graph.Tensors(op.Inputs(1)))
            resources[name] = max(resources.get(name, 0), size)
    return total + sum(resources.values())


def _shared_name(graph: tflite.SubGraph, handle: int, model: tflite.Model) -> str:
    """The shared name of the VAR_HANDLE in `graph` that writes tensor `handle`."""
    for o in range(graph.OperatorsLength()):
        op = graph.Operators(o)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == tflite.BuiltinOperator.VAR_HANDLE and op.Outputs(0) == handle:
            table = op.BuiltinOptions()
            options = tflite.VarHandleOptions()
            options.Init(table.Bytes, table.Pos)
            return (options.SharedName() or b"").decode()
    raise ValueError(f"no VAR_HANDLE writes tensor {handle}")


def _has_call_once(data: bytes) -> bool:
    model = tflite.Model.GetRootAs(data, 0)
    return any(code == tflite.BuiltinOperator.CALL_ONCE for _, _, code in _operators(model))


def _inputs(ports, rng: np.random.Generator) -> list[np.ndarray]:
    values = tflm.random_inputs(ports, rng)
    # a loop bound: a few turns, as the control-flow tests run it
    return [
        np.array([float(rng.integers(0, 4))], np.float32) if port.name == "n" else value
        for port, value in zip(ports, values, strict=True)
    ]


def _runs(data: bytes, path: Path, directory: Path, stateful: bool) -> tuple[list, list, Path]:
    """Our outputs and TFLM's for seven runs in one process, resetting before the fifth (a
    stateless model has no `<p>_reset_state`: its runs are plain runs); the generated C."""
    rng = np.random.default_rng(3)
    if not stateful:
        compiled = compile_model(path, directory / "plain")
        steps = [_inputs(compiled.inputs, rng) for _ in range(STEPS)]
        interpreter = tflm.interpreter(data)
        ours = [compiled.run(step)[0] for step in steps]
        theirs = [tflm.run_with(interpreter, step, len(compiled.outputs)) for step in steps]
        return ours, theirs, directory / "plain" / f"{PREFIX}.c"
    sequence = compile_sequence(path, directory / "sequence")
    steps = [_inputs(sequence.inputs, rng) for _ in range(STEPS)]
    ours = [step.outputs for step in sequence.run(steps, [RESET])]
    if _has_call_once(data):  # after the reset: the init values, a fresh interpreter's
        ran = tflm_sequence(data, steps[:RESET]) + tflm_sequence(data, steps[RESET:])
    else:
        ran = tflm_sequence(data, steps, [RESET])
    return ours, [outputs for outputs, _ in ran], directory / "sequence" / f"{PREFIX}.c"


def correctness(ours: list, theirs: list) -> str:
    float_diff, int_differ = 0.0, 0
    for mine, outputs in zip(ours, theirs, strict=True):
        for a, b in zip(mine, outputs, strict=True):
            b = np.asarray(b).reshape(a.shape)
            if a.dtype.kind == "f":
                float_diff = max(float_diff, float(np.abs(a - b).max(initial=0.0)))
            else:
                int_differ += int(np.count_nonzero(a != b))
    if int_differ:
        return f"{int_differ} values differ"
    if float_diff:
        return f"max diff {float_diff:.2e}"
    return "bit-exact"


def measure(name: str, data: bytes, directory: Path) -> Row:
    directory.mkdir(parents=True)
    path = directory / f"{name}.tflite"
    path.write_bytes(data)
    report = plan(path, directory / "plan", workspace_io=True)
    workspaces = [p for p in report["pools"] if p["kind"] == "workspace"]
    arena = tflm.arena(path)
    state_bytes = sum(p["size_bytes"] for p in report["pools"] if p["kind"] == "state")
    ours, theirs, source = _runs(data, path, directory, stateful=state_bytes > 0)
    return Row(
        model=name,
        workspace_bytes=sum(p["size_bytes"] for p in workspaces),
        lower_bound_bytes=sum(p["lower_bound_bytes"] for p in workspaces),
        state_bytes=state_bytes,
        tflm_head_bytes=arena.head_bytes,
        tflm_total_bytes=arena.total_bytes,
        tflm_variable_bytes=tflm_variable_bytes(data),
        stack_bytes=stack_bytes(source, source.parent),
        correctness=correctness(ours, theirs),
    )


def _ratio(ours: int, theirs: int) -> str:
    return f"{ours / theirs:.3f}" if theirs else "—"


def table(rows: list[Row], seconds: float) -> str:
    lines = [
        "# Stateful, recurrent and 16x8 models: usmp-dialect against TensorFlow Lite Micro",
        "",
        "Written by `python benchmarks/stateful_models.py` (method and models in its docstring; "
        f"{seconds:.0f} s on this project's shared 2-core machine). Pipeline: `usmp-opt "
        "MODEL.tflite -p 'usmp-import-memref,convert-linalg-to-loops,usmp{workspace-io=true}'`. "
        "TFLM: PyPI `tflite-micro`, `print_allocations()`. Bytes. Workspace: inputs, outputs "
        "and every activation (U4), as TFLM's head counts them; state: our state pools; TFLM "
        "variables: its `is_variable` tensors plus its resource variables. Correctness: "
        f"{STEPS} runs in one process with a reset before run {RESET + 1}, every run's outputs "
        "against TFLM's.",
        "",
        "| model | workspace | lower bound | TFLM head | workspace / TFLM head | state "
        "| TFLM variables | state / TFLM variables | stack | TFLM total | correctness |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row.model} | {row.workspace_bytes:,} | {row.lower_bound_bytes:,} "
            f"| {row.tflm_head_bytes:,} | {_ratio(row.workspace_bytes, row.tflm_head_bytes)} "
            f"| {row.state_bytes:,} | {row.tflm_variable_bytes:,} "
            f"| {_ratio(row.state_bytes, row.tflm_variable_bytes)} | {row.stack_bytes:,} "
            f"| {row.tflm_total_bytes:,} | {row.correctness} |"
        )
    over = [r.model for r in rows if r.workspace_bytes > r.tflm_head_bytes]
    over_state = [r.model for r in rows if r.state_bytes > r.tflm_variable_bytes]
    lines += [
        "",
        "Over TFLM's head: "
        + (", ".join(over) or "none")
        + ". State over TFLM's variables: "
        + (", ".join(over_state) or "none")
        + ".",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help=f"comma-separated, of: {', '.join(MODELS)}")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    names = list(MODELS)
    if args.models:
        wanted = args.models.split(",")
        unknown = [name for name in wanted if name not in MODELS]
        if unknown:
            parser.error(f"unknown models: {', '.join(unknown)}")
        names = [name for name in names if name in wanted]
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            print(f"{name} ...", file=sys.stderr, flush=True)
            rows.append(measure(name, MODELS[name](), Path(scratch) / name))
    args.output.write_text(table(rows, time.perf_counter() - started))
    print(args.output.read_text())


if __name__ == "__main__":
    main()
