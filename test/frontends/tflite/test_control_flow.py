"""IF and WHILE (TFLite control flow, `ops/control_flow.py`) against TensorFlow Lite Micro: an
int8 IF whose branches compute differently (ADD, CONV_2D), a float IF, a float WHILE running a
data-dependent number of turns (none too), an IF nested in a WHILE body, a resource variable
updated in a WHILE body (initialised by CALL_ONCE), a loop on scalars as TensorFlow exports
it (float and int32 counters), each with both condition values, and models the TensorFlow
Lite converter wrote (`tf.cond`, `tf.while_loop`, float and int8, and Keras 3 LSTM, GRU and
SimpleRNN layers, which it writes as WHILE loops, also with `return_sequences=True`); the
compiled C (the default pipeline: fused streaming, in-place operators, memory-aware order)
byte for byte against TFLM, one under ASan/UBSan, the C clean under the strict warning set;
the refusals in one line and the operator report's labels."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context

from usmp_dialect.analysis.buffer_info import extract_buffer_info
from usmp_dialect.frontends.options import ImportOptions
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.passes.import_memref import UsmpImportMemrefPass
from usmp_dialect.testing import control_flow_models as models
from usmp_dialect.testing import tflm
from usmp_dialect.testing.harness import strict_flags
from usmp_dialect.testing.import_errors import assert_refused_in_one_line, run_usmp_opt
from usmp_dialect.validation import oracles
from usmp_dialect.validation.host import compile_model

needs_tflm = pytest.mark.skipif(
    not tflm.available(), reason="tflite-micro (the reference) is not installed"
)
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")

# Per model: the inputs set by hand (the condition's value, the loop bound), one run each.
CASES: dict[str, list[dict[str, np.ndarray]]] = {
    "int8_if": [{"cond": np.array([True])}, {"cond": np.array([False])}],
    "float_if": [{"cond": np.array([True])}, {"cond": np.array([False])}],
    "if_in_line": [{"cond": np.array([True])}, {"cond": np.array([False])}],
    # n: no turn, one, four, six (i counts 0, 1, 2, ...; the loop stops at i >= n)
    "float_while": [{"n": np.array([value], np.float32)} for value in (-1.0, 0.5, 3.2, 6.0)],
    # nested: doubles x while i < 2, squares it after
    "nested": [{"n": np.array([value], np.float32)} for value in (0.0, 1.0, 2.0, 4.5)],
    # acc += x each turn, from the CALL_ONCE value [1, 2, 3, 4]
    "variable_in_loop": [{"n": np.array([value], np.float32)} for value in (0.0, 3.0)],
    # scalar n (ours a one-element vector), the body's IF on a scalar predicate
    "scalar_loop": [{"n": np.array([value], np.float32)} for value in (0.0, 2.5, 6.0)],
    # the same with an int32 counter and bound (a negative bound runs no turn)
    "int32_loop": [{"n": np.array([value], np.int32)} for value in (-5, 0, 3, 7)],
    # an odd and an even number of swaps
    "swap_loop": [{"n": np.array([value], np.float32)} for value in (1.0, 2.0)],
}


def _compare(name: str, directory: Path, sanitize: bool = False) -> None:
    model = models.MODELS[name]()
    directory.mkdir(parents=True)
    path = directory / f"{name}.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, directory, sanitize=sanitize)
    rng = np.random.default_rng(3)
    for case in CASES[name]:
        # Our runs each start from the initial state (a process per run): so does TFLM's.
        interpreter = tflm.interpreter(model)
        arrays = tflm.random_inputs(compiled.inputs, rng)
        for position, port in enumerate(compiled.inputs):
            if port.name in case:
                arrays[position] = case[port.name]
        ours, _ = compiled.run(arrays)
        theirs = tflm.run_with(interpreter, arrays, len(ours))
        tflm.assert_matches(ours, theirs, [f"{name} {case}: {p.name}" for p in compiled.outputs])


@needs_tflm
@needs_gcc
@pytest.mark.parametrize(
    "name",
    [
        "int8_if",
        "float_if",
        "if_in_line",
        "float_while",
        "variable_in_loop",
        "scalar_loop",
        "int32_loop",
        "swap_loop",
    ],
)
def test_matches_tflm(name: str, tmp_path: Path) -> None:
    _compare(name, tmp_path / name)


@needs_tflm
@needs_gcc
def test_nested_matches_tflm_under_sanitizers(tmp_path: Path) -> None:
    _compare("nested", tmp_path / "nested", sanitize=True)


CONVERTED = Path(__file__).parent / "Inputs"  # scripts/make_control_flow_models.py


def _converted_inputs(name: str, shape: tuple[int, ...], dtype: np.dtype) -> list[np.ndarray]:
    """The runs of a converter-exported model: for the IF, inputs of either sign (both
    branches); for the WHILE, inputs that stop it at once (float: 0 turns), never (the
    counter's 16) and in between; random ones for the RNNs."""
    rng = np.random.default_rng(5)
    if dtype == np.int8:
        codes = [rng.integers(-128, 128, shape) for _ in range(4)]
        if name.startswith("tf_"):
            codes += [
                np.full(shape, 127),
                np.full(shape, -128),
                np.abs(codes[0]),
                -np.abs(codes[1]),
            ]
        return [np.clip(c, -128, 127).astype(np.int8) for c in codes]
    values = [rng.standard_normal(shape) for _ in range(4)]
    if name.startswith("tf_cond"):
        values += [np.abs(values[0]), -np.abs(values[1])]
    if name.startswith("tf_while"):
        values += [np.full(shape, 20.0), np.full(shape, -5.0), np.zeros(shape)]
    return [v.astype(np.float32) for v in values]


@needs_tflm
@needs_gcc
@pytest.mark.parametrize(
    "name",
    [
        "tf_cond_float",
        "tf_cond_int8",
        "tf_while_float",
        "tf_while_int8",
        "keras3_lstm_float",
        "keras3_gru_float",
        "keras3_simplernn_float",
        "keras3_gru_sequence_float",
        "keras3_lstm_stacked_float",
        "keras3_gru_hybrid",
    ],
)
def test_converter_exports_match_the_reference(name: str, tmp_path: Path) -> None:
    """Models the TensorFlow Lite converter wrote from `tf.cond`, `tf.while_loop` and Keras 3
    recurrent layers (a WHILE over the steps whose body GATHERs the step of its int32 counter;
    with `return_sequences=True` it also writes each step into a TensorList,
    `tensor_lists.py`) run as TFLM runs them — int8 byte for byte, float within 1e-5 — or, for
    the TensorList writes, whose dynamic shapes TFLM does not compute as TensorFlow Lite does,
    as LiteRT's reference kernels run them, as for the hybrid GRU (int8 weights, float
    activations), which TFLM refuses; two under ASan/UBSan."""
    path = CONVERTED / f"{name}.tflite"
    sanitize = name in ("keras3_gru_float", "keras3_gru_sequence_float")
    compiled = compile_model(path, tmp_path, sanitize=sanitize)
    reference = oracles.load(path)
    assert reference.is_tflm == all(k not in name for k in ("sequence", "stacked", "hybrid"))
    (port,) = compiled.inputs
    turns = set()
    for x in _converted_inputs(name, port.shape, port.dtype):
        ours, _ = compiled.run([x])
        theirs = reference.run([x])
        tflm.assert_matches(ours, theirs, [f"{name}: {p.name}" for p in compiled.outputs])
        if name.startswith("tf_while"):
            turns.add(int(np.asarray(theirs[1]).reshape(-1)[0]))
    if name.startswith("tf_while"):  # the counter's bound, fewer, and (float) no turn
        assert 16 in turns and len(turns) >= 3, turns
        assert 0 in turns or port.dtype == np.int8, turns  # int8 inputs stay below 10


@needs_gcc
def test_c_is_clean_under_the_strict_warning_set(tmp_path: Path) -> None:
    path = tmp_path / "nested.tflite"
    path.write_bytes(models.nested())
    source = tmp_path / "nested.c"
    pipeline = "usmp-import-memref,convert-linalg-to-loops,usmp"
    ran = run_usmp_opt(str(path), "-p", pipeline, "-t", "c{prefix=model}", "-o", str(source))
    assert ran.returncode == 0, ran.stderr
    header = run_usmp_opt(
        str(path), "-p", pipeline, "-t", "c-header{prefix=model}", "-o", str(tmp_path / "model.h")
    )
    assert header.returncode == 0, header.stderr
    text = source.read_text()
    assert "while (1) {" in text and "if (" in text
    compiled = subprocess.run(
        ["gcc", *strict_flags("gcc"), "-c", str(source), "-o", str(tmp_path / "nested.o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert compiled.returncode == 0, compiled.stderr


def test_subgraph_functions_and_regions() -> None:
    """Every subgraph's operators are functions named by subgraph and index, called from the
    regions of `@main`; their buffers are allocated in the regions."""
    text = str(import_tflite(models.nested(), "nested.tflite"))
    for function in ("less_sg1_0", "add_sg2_0", "less_sg2_1", "add_sg3_0", "mul_sg4_0"):
        assert f"func.func @{function}(" in text
    main = text[text.index("func.func @main") :]
    assert main.index("scf.while") < main.index("scf.condition") < main.index("scf.if")
    assert 'usmp.operator = {type = "WHILE 0 > IF 2 > MUL"' in text


def test_subgraph_inputs_and_if_outputs_without_copies() -> None:
    """With in-place operators (the default), a subgraph input nothing in the subgraph writes
    is its operand's buffer (no copy: the condition's inputs, the body's `i` and `x`, the IF's
    `a`), and an IF branch's operator writes its output straight into the IF's output `x1`;
    the WHILE body's outputs are still copied back (its loop variables are read while it
    runs), and so is `n`, which the body passes through."""
    text = str(import_tflite(models.nested(), "nested.tflite"))
    main = text[text.index("func.func @main") :]
    assert "func.call @less_sg1_0(%count, %n_out, %go)" in main
    assert "func.call @add_sg2_0(%count, %i1)" in main
    assert 'usmp.tensor = "a"' not in main and 'usmp.tensor = "b"' not in main
    assert '"memref.copy"(%n_out, %n_1)' in main
    for copied in ('"memref.copy"(%i1, %count)', '"memref.copy"(%x1, %y)'):
        assert copied in main


def test_if_in_line() -> None:
    """A constant condition runs its branch in line, as does an IF whose branches are one
    subgraph: no `scf.if`, the other branch's operators not imported."""
    text = str(import_tflite(models.if_in_line(), "if_in_line.tflite"))
    assert "scf.if" not in text
    assert "func.func @mul_sg2_0(" in text and "func.func @relu_sg3_0(" in text
    assert "@add_sg1_0" not in text


def test_liveness_of_loop_variables_and_branches() -> None:
    """The buffer analysis on the imported nested model: a loop variable allocated before the
    WHILE (`n_out`) is live for the whole loop, every subgraph buffer within it (one turn);
    the IF's then-branch buffers (`a`, `b`) end before the else-branch's begin. Without
    in-place operators, every input and output of a subgraph is a buffer and a copy."""
    options = ImportOptions(in_place="none")
    module = import_tflite(models.nested(), "nested.tflite", options)
    UsmpImportMemrefPass().apply(Context(), module)
    buffers = [b for b in extract_buffer_info(module).buffers if b.kind == "intermediate"]
    (loop,) = [b.live for b in buffers if b.tensor == "n_out"]
    assert len(loop) == 1
    for buffer in (b for b in buffers if b.tensor != "n_out"):
        ((start, stop),) = buffer.live
        assert loop[0][0] < start and stop <= loop[0][1], buffer
    then = [b.live[0] for b in buffers if b.tensor in ("a", "b")][:2]
    other = [b.live[0] for b in buffers if b.tensor in ("a", "b")][2:]
    assert len(other) == 2 and max(stop for _, stop in then) <= min(start for start, _ in other)


def test_analyze_labels_subgraph_operators(tmp_path: Path) -> None:
    path = tmp_path / "nested.tflite"
    path.write_bytes(models.nested())
    ran = run_usmp_opt(str(path), "--analyze")
    assert ran.returncode == 0, ran.stderr
    assert "WHILE 0 > LESS" in ran.stdout
    assert "WHILE 0 > IF 2 > ADD" in ran.stdout


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        (
            models.while_changing_shape,
            "WHILE (operator 0): subgraph 2's body output tensor 'x2' (index 3) of type float32 "
            "shape [1, 8] does not match tensor 'y' (index 4)",
        ),
        (models.unreferenced_subgraph, "subgraph 1 is run by no IF, WHILE or CALL_ONCE operator"),
        (models.custom_in_branch, "unsupported: operator CUSTOM 'Mystery' in subgraph 1"),
    ],
)
def test_refused_in_one_line(model: Callable[[], bytes], expected: str, tmp_path: Path) -> None:
    path = tmp_path / "model.tflite"
    path.write_bytes(model())
    assert_refused_in_one_line(path, expected)


@needs_tflm
@needs_gcc
def test_usmp_validate_and_project(tmp_path: Path) -> None:
    """`usmp-validate` passes on an IF (random conditions); the project target writes its
    directory."""
    path = tmp_path / "int8_if.tflite"
    path.write_bytes(models.int8_if())
    ran = subprocess.run(
        [sys.executable, "-m", "usmp_dialect.tools.usmp_validate", str(path), "--inputs", "4"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.rstrip().endswith("PASS")
    pipeline = "usmp-import-memref,convert-linalg-to-loops,usmp"
    project = tmp_path / "project"
    made = run_usmp_opt(str(path), "-p", pipeline, "-t", "project", "-o", str(project))
    assert made.returncode == 0, made.stderr
    assert (project / "model.c").is_file() and (project / "model_plan.json").is_file()
