"""Stateful models (SPEC §13) run as a sequence: our C and TensorFlow Lite Micro each run the
same inputs one after the other in one process (the state carries over), reset where asked, and
give the outputs — and, with an external state pool, the state — after every run.

The C harness reads `steps` sets of inputs from one file, calls `<p>_reset_state` before the
runs listed in `resets`, runs, and appends the outputs (and the state pool's bytes) to the
output file after each run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usmp_dialect.validation.host import (
    OPTIMISED_FLAGS,
    PIPELINE,
    PREFIX,
    SANITIZE_FLAGS,
    STRICT_FLAGS,
    ModelBuildError,
    Port,
    entry_ports,
    named_as_in_header,
    usmp_opt,
)

STATE_POOL = "persistent"
"""The external state pool the harness provides when `external_state` is asked."""


def harness_source(inputs: Sequence[Port], outputs: Sequence[Port], state_bytes: int | None) -> str:
    """`main(argc, argv)`: `argv[1]` the inputs of every step, `argv[2]` the output file,
    `argv[3]` the number of steps, `argv[4]` a string of `0`/`1` per step (`1`: reset the state
    first). `state_bytes`: the size of the external state pool (None: internal pools)."""
    p = PREFIX
    lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>"]
    lines += ["#include <string.h>", f'#include "{p}.h"', ""]
    for port in (*inputs, *outputs):
        lines.append(f"static _Alignas(16) uint8_t io_{port.name}[{port.size_bytes}];")
    if state_bytes is not None:
        lines.append(f"static _Alignas(16) uint8_t state_pool[{max(1, state_bytes)}];")
    fields_in = ", ".join(f".{t.name} = io_{t.name}" for t in inputs)
    fields_out = ", ".join(f".{t.name} = io_{t.name}" for t in outputs)
    lines += [
        "int main(int argc, char** argv) {",
        "  if (argc != 5) return 2;",
        "  int steps = atoi(argv[3]);",
        "  if (steps < 1 || (int)strlen(argv[4]) != steps) return 2;",
        f"  struct {p}_inputs inputs = {{ {fields_in} }};",
        f"  struct {p}_outputs outputs = {{ {fields_out} }};",
    ]
    run_arguments = "&inputs, &outputs"
    reset_arguments = ""
    if state_bytes is not None:
        lines.append(f"  struct {p}_workspace_pools pools = {{ .{STATE_POOL} = state_pool }};")
        run_arguments += ", &pools"
        reset_arguments = "&pools"
    lines += [
        '  FILE* in = fopen(argv[1], "rb");',
        '  FILE* out = fopen(argv[2], "wb");',
        "  if (!in || !out) return 3;",
        "  for (int step = 0; step < steps; ++step) {",
    ]
    for port in inputs:
        lines.append(
            f"    if (fread(io_{port.name}, 1, {port.size_bytes}, in) != {port.size_bytes}) "
            "return 3;"
        )
    lines += [
        f"    if (argv[4][step] == '1' && {p}_reset_state({reset_arguments}) != 0) return 4;",
        f"    if ({p}_run({run_arguments}) != 0) return 5;",
    ]
    for port in outputs:
        lines.append(f"    fwrite(io_{port.name}, 1, {port.size_bytes}, out);")
    if state_bytes is not None:
        lines.append(f"    fwrite(state_pool, 1, {max(1, state_bytes)}, out);")
    lines += ["  }", "  fclose(in);", "  fclose(out);", "  return 0;", "}", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class Step:
    """What one run gave: the outputs and, with an external state pool, its bytes."""

    outputs: list[np.ndarray]
    state: bytes | None


@dataclass(frozen=True)
class SequenceModel:
    executable: Path
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    state_bytes: int | None
    report: Path

    def run(self, steps: Sequence[Sequence[np.ndarray]], resets: Sequence[int] = ()) -> list[Step]:
        """Runs `steps` (each: one array per input) in order, resetting the state before the
        steps whose index is in `resets`."""
        directory = self.executable.parent
        data = b"".join(
            np.ascontiguousarray(array, dtype=port.dtype).tobytes()
            for arrays in steps
            for array, port in zip(arrays, self.inputs, strict=True)
        )
        (directory / "steps.bin").write_bytes(data)
        # An external state pool is the application's memory: it resets it before the first run.
        first = {0} if self.state_bytes is not None else set()
        flags = "".join(
            "1" if index in resets or index in first else "0" for index in range(len(steps))
        )
        ran = subprocess.run(
            [str(self.executable), "steps.bin", "outputs.bin", str(len(steps)), flags],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={"ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "halt_on_error=1"},
        )
        if ran.returncode or ran.stderr.strip():
            raise ModelBuildError(f"the sequence run failed ({ran.returncode}): {ran.stderr}")
        raw = (directory / "outputs.bin").read_bytes()
        results, offset = [], 0
        for _ in steps:
            outputs = []
            for port in self.outputs:
                chunk = raw[offset : offset + port.size_bytes]
                outputs.append(np.frombuffer(chunk, dtype=port.dtype).reshape(port.shape).copy())
                offset += port.size_bytes
            state = None
            if self.state_bytes is not None:
                size = max(1, self.state_bytes)
                state = raw[offset : offset + size]
                offset += size
            results.append(Step(outputs, state))
        return results


def compile_sequence(
    model: Path, directory: Path, external_state: bool = False, sanitize: bool = False
) -> SequenceModel:
    """Compiles `model` (the canonical pipeline) with the sequence harness; `external_state`:
    the state in an external pool `@state` the harness provides (declared by
    `--state-pools=persistent`), so that the state after each run can be compared."""
    import json

    directory.mkdir(parents=True, exist_ok=True)
    source, header = directory / f"{PREFIX}.c", directory / f"{PREFIX}.h"
    report = directory / "plan.json"
    flags = [f"--state-pools={STATE_POOL}"] if external_state else []
    for target, output in (("c", source), ("c-header", header)):
        pipeline = PIPELINE + (f'{{report="{report}"}}' if target == "c" else "")
        command = [*usmp_opt(), str(model), *flags, "-p", pipeline]
        command += ["-t", f"{target}{{prefix={PREFIX}}}", "-o", str(output)]
        ran = subprocess.run(command, capture_output=True, text=True, check=False)
        if ran.returncode:
            raise ModelBuildError(f"usmp-opt failed: {ran.stderr}")
    inputs, outputs = entry_ports(model)
    inputs = named_as_in_header(inputs, header, f"{PREFIX}_inputs")
    outputs = named_as_in_header(outputs, header, f"{PREFIX}_outputs")
    state_bytes = None
    if external_state:
        pools = json.loads(report.read_text())["pools"]
        state_bytes = next(pool["size_bytes"] for pool in pools if pool["name"] == STATE_POOL)
    harness = directory / "sequence.c"
    harness.write_text(harness_source(inputs, outputs, state_bytes))
    executable = directory / ("sequence_asan" if sanitize else "sequence")
    command = ["gcc", *STRICT_FLAGS, *(SANITIZE_FLAGS if sanitize else OPTIMISED_FLAGS)]
    command += ["-I", str(directory), str(source), str(harness), "-o", str(executable), "-lm"]
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    if built.returncode:
        raise ModelBuildError(f"gcc failed on the generated C:\n{built.stderr[-4000:]}")
    return SequenceModel(executable, tuple(inputs), tuple(outputs), state_bytes, report)


def tflm_sequence(
    model: bytes,
    steps: Sequence[Sequence[np.ndarray]],
    resets: Sequence[int] = (),
    state_tensors: Sequence[int] = (),
) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    """TFLM's outputs, and the values of the variable tensors `state_tensors` (subgraph 0),
    after each step, calling the interpreter's `reset()` before the steps in `resets`."""
    from tflite_micro.python.tflite_micro import runtime

    from usmp_dialect.validation.tflm import ARENA_SIZE_BYTES

    # GetTensor needs the interpreter that keeps every tensor.
    interpreter = runtime.Interpreter.from_bytes(
        model,
        arena_size=ARENA_SIZE_BYTES,
        intrepreter_config=runtime.InterpreterConfig.kPreserveAllTensors,
    )
    results = []
    for index, arrays in enumerate(steps):
        if index in resets:
            interpreter.reset()
        for position, array in enumerate(arrays):
            interpreter.set_input(array, position)
        interpreter.invoke()
        outputs = [np.array(interpreter.get_output(i)) for i in range(_output_count(model))]
        states = [np.array(interpreter.GetTensor(t, 0)["tensor_data"]) for t in state_tensors]
        results.append((outputs, states))
    return results


def _output_count(model: bytes) -> int:
    import tflite

    return tflite.Model.GetRootAs(model, 0).Subgraphs(0).OutputsLength()
