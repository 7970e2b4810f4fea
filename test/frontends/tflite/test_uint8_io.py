"""uint8 at a model's edges, as the TFLite converter writes a camera model with
`inference_input_type=tf.uint8` / `inference_output_type=tf.uint8`: a uint8 input requantised
to int8 by QUANTIZE, an int8 -> uint8 QUANTIZE into a uint8 output (TFLM's
`reference_ops::Requantize` pairs), with CONV_2D and ADD between; uint8 -> DEQUANTIZE ->
float32; RESHAPE and SQUEEZE views of uint8 on either side. Compared with TFLM byte for byte
on random inputs and on 0 and 255, under ASan/UBSan, the C clean under the strict warning
set. Everything else on uint8 (an ADD, QUANTIZE to int16 or uint8, which TFLM does not run)
is refused in one line, and TFLM refuses it too."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.testing import tflm
from usmp_dialect.testing.harness import STRICT_FLAGS
from usmp_dialect.testing.import_errors import assert_refused_in_one_line
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec
from usmp_dialect.testing.uint8_models import (
    I8,
    U8,
    camera_add,
    camera_conv,
    camera_streamed,
    quantized,
)
from usmp_dialect.validation.host import PREFIX, compile_model

from .tflm_oracle import ModelSpec, merge

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed"),
]


def requantize(source: tuple, target: tuple) -> ModelSpec:
    """One QUANTIZE from (type, scale, zero point) `source` to `target`."""
    tensors = [
        quantized(name, dtype, (4, 16), scale, zero)
        for name, (dtype, scale, zero) in (("x", source), ("y", target))
    ]
    return ModelSpec(tensors, [OperatorSpec("QUANTIZE", [0], [1])], [0], [1])


def dequantize(scale: float, zero: int) -> ModelSpec:
    """uint8 -> DEQUANTIZE -> float32 (a camera model with a float graph behind it)."""
    tensors = [quantized("x", U8, (3, 11), scale, zero), TensorSpec("y", np.float32, (3, 11))]
    return ModelSpec(tensors, [OperatorSpec("DEQUANTIZE", [0], [1])], [0], [1])


def reshaped() -> ModelSpec:
    """uint8 -> RESHAPE -> QUANTIZE int8 -> QUANTIZE uint8 -> SQUEEZE -> uint8 output: the
    views TFLM copies whatever the type, on both uint8 sides."""
    shape = np.array([1, 6, 5], dtype=np.int32)
    tensors = [
        quantized("x", U8, (30,), 0.02, 77),
        TensorSpec("shape", np.int32, (3,), data=shape),
        quantized("x_view", U8, (1, 6, 5), 0.02, 77),
        quantized("q", I8, (1, 6, 5), 0.03, -9),
        quantized("u", U8, (1, 6, 5), 0.025, 120),
        quantized("y", U8, (6, 5), 0.025, 120),
    ]
    return ModelSpec(
        tensors,
        [
            OperatorSpec("RESHAPE", [0, 1], [2]),
            OperatorSpec("QUANTIZE", [2], [3]),
            OperatorSpec("QUANTIZE", [3], [4]),
            OperatorSpec("SQUEEZE", [4], [5]),
        ],
        [0],
        [5],
    )


PARTS = {
    "views": reshaped(),
    "conv": camera_conv(),
    "streamed": camera_streamed(),
    "add": camera_add(),
    # the converter's pair (scale kept, zero point moved by 128) and general rescalings,
    # saturating at both ends
    "u8_i8_same": requantize((U8, 0.1, 128), (I8, 0.1, 0)),
    "u8_i8_scaled": requantize((U8, 0.3, 7), (I8, 0.11, -20)),
    "u8_i8_shrunk": requantize((U8, 0.004, 255), (I8, 0.05, 3)),
    "i8_u8_same": requantize((I8, 0.1, -128), (U8, 0.1, 0)),
    "i8_u8_scaled": requantize((I8, 0.07, 4), (U8, 0.02, 140)),
    "i8_u8_shrunk": requantize((I8, 0.01, -100), (U8, 0.3, 250)),
    "dequantize_image": dequantize(1 / 255, 0),
    "dequantize_centred": dequantize(0.0078125, 128),
    "dequantize_odd": dequantize(0.0371, 201),
}

EDGES = {np.dtype(U8): [0, 255, 1, 254, 128, 127], np.dtype(I8): [-128, 127, 0, -1]}


def test_uint8_quantize_at_the_edges_matches_tflm_under_the_sanitizers(tmp_path: Path) -> None:
    model = merge(PARTS)
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path, sanitize=True)
    strict = [*STRICT_FLAGS, "-c", str(tmp_path / f"{PREFIX}.c"), "-o", str(tmp_path / "s.o")]
    subprocess.run(["gcc", *strict], check=True, capture_output=True)
    assert any(port.dtype == np.dtype(U8) for port in compiled.inputs)
    assert any(port.dtype == np.dtype(U8) for port in compiled.outputs)
    assert "_rows_" in (tmp_path / f"{PREFIX}.c").read_text()  # the convolutions streamed
    interpreter = tflm.interpreter(model)
    names = [port.name for port in compiled.outputs]
    for seed in range(4):
        inputs = tflm.random_inputs(compiled.inputs, seed)
        if seed == 3:  # every input at its type's extremes
            inputs = [np.resize(np.array(EDGES[x.dtype], x.dtype), x.shape) for x in inputs]
        ours, _ = compiled.run(inputs)
        theirs = tflm.run_with(interpreter, inputs, len(ours))
        for name, mine, other in zip(names, ours, theirs, strict=True):
            assert mine.dtype == other.dtype, name
            assert mine.tobytes() == other.tobytes(), name  # floats too: byte for byte


def test_uint8_in_the_header(tmp_path: Path) -> None:
    """The header declares the uint8 input and output with their scale and zero point."""
    path = tmp_path / "model.tflite"
    path.write_bytes(camera_conv().model())
    compile_model(path, tmp_path)
    header = (tmp_path / f"{PREFIX}.h").read_text()
    upper = PREFIX.upper()
    assert f"#define {upper}_INPUT_IMAGE_DTYPE uint8_t" in header
    assert f"#define {upper}_INPUT_IMAGE_ZERO_POINT 0" in header
    assert f"#define {upper}_OUTPUT_OUT_DTYPE uint8_t" in header
    assert f"#define {upper}_OUTPUT_OUT_ZERO_POINT 133" in header


# uint8 where TFLM does not compute it: refused by the pre-scan in one line, as TFLM fails
REFUSED = {
    "add": (
        ModelSpec(
            [quantized(n, U8, (2, 5), 0.1, 128) for n in ("a", "b", "y")],
            [OperatorSpec("ADD", [0, 1], [2], "AddOptions", {"FusedActivationFunction": 0})],
            [0, 1],
            [2],
        ),
        "unsupported: operator ADD on uint8 (tensor",
    ),
    "quantize_uint8_uint8": (
        requantize((U8, 0.1, 128), (U8, 0.2, 0)),
        "QUANTIZE (operator 0): uint8 -> uint8 is not supported",
    ),
    "quantize_uint8_int16": (
        requantize((U8, 0.1, 128), (np.int16, 0.01, 0)),
        "QUANTIZE (operator 0): uint8 -> int16 is not supported",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_uint8_tflm_does_not_compute_is_refused_in_one_line(tmp_path: Path, case: str) -> None:
    """Should TFLM start running one of these, the test fails: then import it."""
    spec, message = REFUSED[case]
    path = tmp_path / "model.tflite"
    path.write_bytes(spec.model())
    assert_refused_in_one_line(path, message)
    rng = np.random.default_rng(0)
    inputs = [rng.integers(0, 256, size=spec.tensors[i].shape).astype(U8) for i in spec.inputs]
    with pytest.raises(RuntimeError):
        tflm.run(spec.model(), inputs, len(spec.outputs))


def test_usmp_validate_compares_uint8_inputs_and_outputs_bit_for_bit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The camera model with a uint8 image in and a uint8 map out, as a user validates it."""
    from usmp_dialect.tools.usmp_validate import main

    model = tmp_path / "camera.tflite"
    model.write_bytes(camera_conv().model())
    with pytest.raises(SystemExit) as exit_info:
        main([str(model), "--inputs", "3"])
    out = capsys.readouterr().out
    assert exit_info.value.code in (0, None), out
    assert "output out (uint8 1x6x6x4): bit-exact" in out
    assert out.splitlines()[-1] == "PASS"
