"""Models the TFLite frontend cannot import: one line `usmp-opt: error: FILE: ...` naming the
problem and where it is (operator, tensor), exit code 1, no traceback, no output file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tflite

from usmp_dialect.testing.import_errors import assert_refused_in_one_line, run_usmp_opt
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

ROOT = Path(__file__).resolve().parents[3]
KWS = ROOT / "examples" / "mlperf_tiny" / "kws_ref_model.tflite"


def fully_connected(**changes: object) -> bytes:
    """x[1, 4] -> FULLY_CONNECTED -> y[1, 2], float; `changes` edit the tensors and the op."""
    tensors = [
        TensorSpec("x", np.float32, (1, 4)),
        TensorSpec("w", np.float32, (2, 4), data=np.ones((2, 4), np.float32)),
        TensorSpec("y", np.float32, (1, 2)),
    ]
    operator = OperatorSpec("FULLY_CONNECTED", [0, 1, -1], [2], "FullyConnectedOptions")
    for key, value in changes.items():
        if key == "opcode":
            operator.opcode = str(value)
            operator.options = None
        elif key == "x_shape_signature":
            tensors[0].shape_signature = value  # type: ignore[assignment]
        elif key == "x_type":
            tensors[0].type_code = value  # type: ignore[assignment]
        elif key == "x_shape":
            tensors[0].shape = value  # type: ignore[assignment]
    return write_model(tensors, [operator], [0], [2], subgraphs=int(changes.get("subgraphs", 1)))  # type: ignore[arg-type]


CASES: dict[str, tuple[Callable[[], bytes], str]] = {
    "shuffled weights": (
        lambda: write_model(
            [
                TensorSpec("x", np.float32, (1, 4)),
                TensorSpec("w", np.float32, (2, 4), data=np.ones((2, 4), np.float32)),
                TensorSpec("y", np.float32, (1, 2)),
            ],
            [
                OperatorSpec(
                    "FULLY_CONNECTED",
                    [0, 1, -1],
                    [2],
                    "FullyConnectedOptions",
                    {"WeightsFormat": 1},
                )
            ],
            [0],
            [2],
        ),
        "unsupported: FULLY_CONNECTED with shuffled weights (operator 0)",
    ),
    "unsupported operator": (
        lambda: fully_connected(opcode="LSH_PROJECTION"),  # not a TFLM operator
        "unsupported: operator LSH_PROJECTION (operator 0)",
    ),
    "custom operator": (
        lambda: write_model(
            [TensorSpec("x", np.float32, (1, 4)), TensorSpec("y", np.float32, (1, 4))],
            [OperatorSpec("CUSTOM", [0], [1], custom_code="MyOp")],
            [0],
            [1],
        ),
        "unsupported: operator CUSTOM 'MyOp' (operator 0)",
    ),
    "dynamic shape": (
        lambda: fully_connected(x_shape_signature=[1, -1]),
        "tensor 'x' (index 0) has a dynamic shape [1, -1]",
    ),
    "negative shape": (
        lambda: fully_connected(x_shape=[1, -1]),
        "tensor 'x' (index 0) has a dynamic shape [1, -1]",
    ),
    "several subgraphs": (
        lambda: fully_connected(subgraphs=2),
        "subgraph 1 is run by no IF, WHILE or CALL_ONCE operator",
    ),
    "unsupported tensor type": (
        lambda: fully_connected(x_type=tflite.TensorType.COMPLEX64),
        "unsupported: tensor type COMPLEX64 (tensor 'x' of operator 0)",
    ),
    "uint8 activations": (  # uint8 is QUANTIZE's and DEQUANTIZE's only, as in TFLM
        lambda: fully_connected(x_type=tflite.TensorType.UINT8),
        "unsupported: operator FULLY_CONNECTED on uint8 (tensor 'x' of operator 0)",
    ),
    "int16 on an operator without 16x8": (
        lambda: fully_connected(opcode="REDUCE_MAX", x_type=tflite.TensorType.INT16),
        "unsupported: operator REDUCE_MAX on int16 (tensor 'x' of operator 0)",
    ),
    "int16 input of a float layer": (
        lambda: fully_connected(x_type=tflite.TensorType.INT16),
        "unsupported combination of tensor types",
    ),
    "truncated file": (
        lambda: KWS.read_bytes()[:20000],
        "malformed or truncated TFLite file",
    ),
    "not a model": (lambda: b"this is not a flatbuffer at all", "not a TFLite model"),
    "missing model output": (
        lambda: write_model(
            [TensorSpec("x", np.float32, (1, 4)), TensorSpec("y", np.float32, (1, 4))],
            [OperatorSpec("RELU", [0], [1])],
            [0],
            [5],
        ),
        "the model output names a missing tensor 5",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_import_error_is_one_line(case: str, tmp_path: Path) -> None:
    make, expected = CASES[case]
    path = tmp_path / "model.tflite"
    path.write_bytes(make())
    assert_refused_in_one_line(path, expected)


def several_unsupported() -> bytes:
    """x -> BILSTM(0) -> a -> FC(1) -> b -> WHERE(2) -> c -> ADD(3, uint8 c + uint8 d) -> e ->
    BILSTM(4) -> y, with d a model input: two bidirectional LSTMs, a WHERE, a fused TANH on the
    FC and uint8 activations (only QUANTIZE and DEQUANTIZE read them) on the ADD; the FC's
    int16 input is fine for the scan (16x8)."""
    tensors = [
        TensorSpec("x", np.float32, (1, 4)),
        TensorSpec("a", np.int16, (1, 4)),
        TensorSpec("w", np.float32, (4, 4), data=np.ones((4, 4), np.float32)),
        TensorSpec("b", np.float32, (1, 4)),
        TensorSpec("c", np.uint8, (1, 4)),
        TensorSpec("d", np.uint8, (1, 4)),
        TensorSpec("e", np.float32, (1, 4)),
        TensorSpec("y", np.float32, (1, 4)),
    ]
    operators = [
        OperatorSpec("BIDIRECTIONAL_SEQUENCE_LSTM", [0], [1]),
        OperatorSpec(
            "FULLY_CONNECTED",
            [1, 2, -1],
            [3],
            "FullyConnectedOptions",
            {"FusedActivationFunction": tflite.ActivationFunctionType.TANH},
        ),
        OperatorSpec("WHERE", [3], [4]),
        OperatorSpec("ADD", [4, 5], [6], "AddOptions"),
        OperatorSpec("BIDIRECTIONAL_SEQUENCE_LSTM", [6], [7]),
    ]
    return write_model(tensors, operators, [0, 5], [7])


def test_every_unsupported_construct_in_one_line(tmp_path: Path) -> None:
    """All unsupported operators, options and activation types at once, grouped by kind with
    their operator indices, operators first; nothing is imported."""
    path = tmp_path / "model.tflite"
    path.write_bytes(several_unsupported())
    assert_refused_in_one_line(
        path,
        "unsupported: operator BIDIRECTIONAL_SEQUENCE_LSTM (operators 0, 4), operator WHERE "
        "(operator 2), FULLY_CONNECTED with fused activation TANH (operator 1), operator ADD "
        "on uint8 (tensors 'c', 'd' of operator 3)",
    )


def test_unsupported_types_of_constants_and_folded_tensors_are_not_reported(
    tmp_path: Path,
) -> None:
    """int32 shape tensors (a constant, SHAPE's folded output) are not activations: only the
    unsupported operator is reported."""
    tensors = [
        TensorSpec("x", np.float32, (1, 4)),
        TensorSpec("s", np.int32, (2,)),
        TensorSpec("r", np.float32, (1, 4)),
        TensorSpec("y", np.float32, (1, 4)),
    ]
    operators = [
        OperatorSpec("SHAPE", [0], [1], "ShapeOptions"),
        OperatorSpec("RESHAPE", [0, 1], [2]),
        OperatorSpec("WHERE", [2], [3]),
    ]
    path = tmp_path / "model.tflite"
    path.write_bytes(write_model(tensors, operators, [0], [3]))
    ran = run_usmp_opt(str(path), "-o", str(tmp_path / "out.mlir"))
    assert ran.returncode == 1
    assert ran.stderr == f"usmp-opt: error: {path}: unsupported: operator WHERE (operator 2)\n"


def test_frontend_by_flag_and_module_output(tmp_path: Path) -> None:
    """`-f tflite` reads a model whatever its name; `-o model.mlir` writes the imported module,
    which a stock `xdsl-opt` parses and verifies."""
    renamed = tmp_path / "model.bin"
    renamed.write_bytes(KWS.read_bytes())
    imported = tmp_path / "kws.mlir"
    ran = run_usmp_opt(str(renamed), "-f", "tflite", "-o", str(imported))
    assert ran.returncode == 0, ran.stderr
    text = imported.read_text()
    assert 'func.func @main(%input1: memref<1x49x10x1xi8> {usmp.io = "input", usmp.tensor' in text
    # kws streams its convolutions and the pooling through one fused group (the default)
    assert "func.call @fused_conv_2d_0__average_pool_2d_9(" in text
    assert "memref.reinterpret_cast" in text  # RESHAPE is a view
    xdsl_opt = Path(sys.executable).with_name("xdsl-opt")
    checked = subprocess.run(
        [str(xdsl_opt), str(imported)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stderr
