"""TensorFlow Lite Micro as the reference runtime of `usmp-validate`, the tests and the
benchmarks (PyPI `tflite-micro`, in the `validate` extra): outputs on given inputs, its arena
figures, seeded inputs, and a float copy of hybrid models (which TFLM refuses)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usmp_dialect.validation.host import Port

ARENA_SIZE_BYTES = 8 << 20


def available() -> bool:
    try:
        from tflite_micro.python.tflite_micro import runtime  # noqa: F401
    except ImportError:
        return False
    return True


def interpreter(model: bytes):
    from tflite_micro.python.tflite_micro import runtime

    return runtime.Interpreter.from_bytes(model, arena_size=ARENA_SIZE_BYTES)


class ModelRefused(Exception):
    """TFLM cannot run the model (e.g. a hybrid model): the message is what TFLM printed."""


def load(model: bytes):
    """An interpreter for `model`, or `ModelRefused` with TFLM's own reason. TFLM prints its
    reasons from C on the process's stderr, so that is caught at the file descriptor."""
    sys.stderr.flush()
    with tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            return interpreter(model)
        except RuntimeError as error:
            captured.seek(0)
            printed = captured.read().decode(errors="replace").splitlines()
            reasons = [line.strip() for line in printed if line.strip()]
            # TFLM's first line names its source file; the reason follows it.
            reason = reasons[0].partition(" ")[2] if reasons else ""
            raise ModelRefused(reason.strip() or str(error)) from None
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def run(model: bytes, inputs: Sequence[np.ndarray], output_count: int) -> list[np.ndarray]:
    """TFLM's outputs for `inputs` (one interpreter per call)."""
    return run_with(interpreter(model), inputs, output_count)


def run_with(tflm, inputs: Sequence[np.ndarray], output_count: int) -> list[np.ndarray]:
    """Runs an existing interpreter once on `inputs` (each seen with the model's shape of the
    input: a scalar input of a model with control flow is a one-element vector of ours)."""
    for index, value in enumerate(inputs):
        shape = tuple(int(d) for d in tflm.get_input_details(index)["shape"])
        if value.size == int(np.prod(shape)):
            value = np.ascontiguousarray(value).reshape(shape)
        tflm.set_input(value, index)
    tflm.invoke()
    return [np.array(tflm.get_output(index)) for index in range(output_count)]


@dataclass(frozen=True)
class Arena:
    """TFLM's arena after one `invoke()`: head (planned activations, inputs and outputs
    included) and total (head plus the persistent tail)."""

    head_bytes: int
    total_bytes: int


_ARENA_SCRIPT = """
import sys
from tflite_micro.python.tflite_micro import runtime
tflm = runtime.Interpreter.from_file(sys.argv[1], arena_size={size})
tflm.print_allocations()
"""


def arena(model: Path) -> Arena:
    """TFLM's `print_allocations()` figures for `model` (printed by C code, so read from a
    child process)."""
    ran = subprocess.run(
        [sys.executable, "-c", _ARENA_SCRIPT.format(size=ARENA_SIZE_BYTES), str(model)],
        capture_output=True,
        text=True,
        check=True,
    )
    text = ran.stdout + ran.stderr
    head = re.search(r"Arena allocation head (\d+) bytes", text)
    total = re.search(r"Arena allocation total (\d+) bytes", text)
    if head is None or total is None:
        raise RuntimeError(f"no arena figures from TFLM for {model}: {text[-500:]}")
    return Arena(int(head.group(1)), int(total.group(1)))


def dequantize_weights(model: bytes) -> bytes:
    """A hybrid model (int8 constant weights, float activations) with every int8 constant
    tensor replaced by float32 `scale * (q - zero_point)`: the model our frontend imports,
    which TFLM can run."""
    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as schema

    tree = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    for subgraph in tree.subgraphs:
        for tensor in subgraph.tensors:
            buffer = tree.buffers[tensor.buffer]
            if tensor.type != schema.TensorType.INT8 or buffer.data is None or not len(buffer.data):
                continue
            values = np.frombuffer(bytes(buffer.data), dtype=np.int8).reshape(tensor.shape)
            quant = tensor.quantization
            scales = np.asarray(quant.scale, dtype=np.float32)
            zero_points = np.asarray(quant.zeroPoint, dtype=np.int32)
            shape = [1] * values.ndim
            if scales.size > 1:
                shape[quant.quantizedDimension] = scales.size
            dequantized = (
                (values.astype(np.int32) - zero_points.reshape(shape)).astype(np.float32)
                * scales.reshape(shape)
            ).astype("<f4")
            buffer.data = np.frombuffer(dequantized.tobytes(), dtype=np.uint8)
            tensor.type = schema.TensorType.FLOAT32
            tensor.quantization = None
    builder = flatbuffers.Builder(len(model) * 2)
    builder.Finish(tree.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def random_inputs(
    ports: Sequence[Port], seed: int | np.random.Generator, float_scale: float = 1.0
) -> list[np.ndarray]:
    """Seeded inputs: integers over their type's whole range, bools true or false alike,
    float normal with deviation `float_scale`."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    values = []
    for port in ports:
        if port.dtype.kind == "b":
            values.append(rng.integers(0, 2, size=port.shape).astype(np.bool_))
        elif port.dtype.kind in "iu":  # uint8 too (a camera model's input)
            limits = np.iinfo(port.dtype)
            values.append(
                rng.integers(
                    limits.min, limits.max, size=port.shape, dtype=port.dtype, endpoint=True
                )
            )
        else:
            values.append((rng.standard_normal(port.shape) * float_scale).astype(np.float32))
    return values
