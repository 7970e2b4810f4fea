"""Runs a stateful model's generated C on a sequence of inputs in one process, so the state
(recurrent models' variables, SPEC §13) carries over from one run to the next, with
`<p>_reset_state()` called before the runs that ask for it: what the tests of recurrent
operators compare with TensorFlow Lite Micro invoked the same way.

The harness reads, per run, one flag byte (1: reset the state first) and the inputs, calls
`<p>_run` and writes the outputs; all runs go through one file each way. With `expose_state`
the model's state lives in one external state pool (`--state-pools=state`) that the harness
owns, resets before the first run and writes after every run, and the plan report says where
each variable lies in it: the state can then be compared with the reference's variables.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usmp_dialect.validation.host import (
    PREFIX,
    SANITIZE_FLAGS,
    STRICT_FLAGS,
    ModelBuildError,
    Port,
    entry_ports,
    named_as_in_header,
    pipeline,
    usmp_opt,
)

# The generated C's warning contract (README), on top of the host harness's flags.
WARNINGS = ("-Wpedantic", "-Wcast-align=strict", "-Wconversion", "-Wshadow", "-Wdouble-promotion")
STATE_POOL = "state"


def sequence_harness(inputs: Sequence[Port], outputs: Sequence[Port], state_bytes: int) -> str:
    """A C `main(argc, argv)`: `argv[1]` the runs (a flag byte, then the inputs' bytes, per
    run), `argv[2]` the file for the outputs of every run (each followed by the state pool's
    bytes when `state_bytes`, the external state pool's size), `argv[3]` the number of runs."""
    p = PREFIX
    lines = [
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        f'#include "{p}.h"',
    ]
    for port in (*inputs, *outputs):
        lines.append(f"static _Alignas(16) uint8_t io_{port.name}[{port.size_bytes}];")
    if state_bytes:
        lines.append(f"static _Alignas(16) uint8_t state_pool[{state_bytes}];")
    fields_in = ", ".join(f".{t.name} = io_{t.name}" for t in inputs)
    fields_out = ", ".join(f".{t.name} = io_{t.name}" for t in outputs)
    pools = ", &pools" if state_bytes else ""
    lines += [
        "int main(int argc, char** argv) {",
        "  if (argc != 4) return 2;",
        "  int runs = atoi(argv[3]);",
        f"  struct {p}_inputs inputs = {{ {fields_in} }};",
        f"  struct {p}_outputs outputs = {{ {fields_out} }};",
    ]
    if state_bytes:
        lines += [
            f"  struct {p}_workspace_pools pools = {{ .{STATE_POOL} = state_pool }};",
            f"  if ({p}_reset_state(&pools) != 0) return 4;",
        ]
    lines += [
        '  FILE* in = fopen(argv[1], "rb");',
        '  FILE* out = fopen(argv[2], "wb");',
        "  if (!in || !out) return 3;",
        "  for (int r = 0; r < runs; ++r) {",
        "    int reset = fgetc(in);",
        "    if (reset == EOF) return 3;",
        f"    if (reset && {p}_reset_state({pools.lstrip(', ')}) != 0) return 4;",
    ]
    for port in inputs:
        lines.append(
            f"    if (fread(inputs.{port.name}, 1, {port.size_bytes}, in) != {port.size_bytes}) "
            "return 3;"
        )
    lines.append(f"    if ({p}_run(&inputs, &outputs{pools}) != 0) return 5;")
    for port in outputs:
        lines.append(f"    fwrite(outputs.{port.name}, 1, {port.size_bytes}, out);")
    if state_bytes:
        lines.append(f"    fwrite(state_pool, 1, {state_bytes}, out);")
    lines += ["  }", "  fclose(in);", "  fclose(out);", "  return 0;", "}", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class Run:
    """One run of a sequence: the inputs, and whether the state is reset before it."""

    inputs: Sequence[np.ndarray]
    reset: bool = False


@dataclass(frozen=True)
class Result:
    """A run's outputs and, when the state is exposed, the bytes of each variable after it
    (by model tensor name)."""

    outputs: list[np.ndarray]
    state: dict[str, bytes]


@dataclass(frozen=True)
class SequenceModel:
    executable: Path
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    state_bytes: int = 0  # the exposed state pool's size (0: internal state pools)
    variables: tuple[tuple[str, int, int], ...] = ()  # (tensor, offset, bytes) in it

    def run(self, runs: Sequence[Run], timeout_s: float = 120.0) -> list[Result]:
        """The results of every run, in order, from one process (the state carries over)."""
        directory = self.executable.parent
        data = bytearray()
        for run in runs:
            data.append(1 if run.reset else 0)
            for array, port in zip(run.inputs, self.inputs, strict=True):
                data += np.ascontiguousarray(array, dtype=port.dtype).tobytes()
        (directory / "runs.bin").write_bytes(bytes(data))
        ran = subprocess.run(
            [str(self.executable), "runs.bin", "outputs.bin", str(len(runs))],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env={"ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "halt_on_error=1"},
        )
        if ran.returncode or ran.stderr.strip():
            raise ModelBuildError(f"the model run failed ({ran.returncode}): {ran.stderr[-2000:]}")
        raw = (directory / "outputs.bin").read_bytes()
        results, offset = [], 0
        for _ in runs:
            outputs = []
            for port in self.outputs:
                chunk = raw[offset : offset + port.size_bytes]
                outputs.append(np.frombuffer(chunk, dtype=port.dtype).reshape(port.shape).copy())
                offset += port.size_bytes
            pool = raw[offset : offset + self.state_bytes]
            offset += self.state_bytes
            state = {name: pool[at : at + size] for name, at, size in self.variables}
            results.append(Result(outputs, state))
        return results


def _usmp_opt(arguments: Sequence[str]) -> None:
    ran = subprocess.run([*usmp_opt(), *arguments], capture_output=True, text=True, check=False)
    if ran.returncode:
        raise ModelBuildError(f"usmp-opt {' '.join(arguments)}: {ran.stderr.strip()}")


def compile_sequence(
    model: Path,
    directory: Path,
    sanitize: bool = False,
    expose_state: bool = False,
    cc: str = "gcc",
) -> SequenceModel:
    """Generates the C of `model` (the README's pipeline; with `expose_state` its state in an
    external pool the harness owns) and compiles it with the sequence harness
    (AddressSanitizer and UBSan when `sanitize`)."""
    directory.mkdir(parents=True, exist_ok=True)
    source, header = directory / f"{PREFIX}.c", directory / f"{PREFIX}.h"
    report = directory / "plan.json"
    flags = [f"--state-pools={STATE_POOL}"] if expose_state else []
    for target, output in (("c", source), ("c-header", header)):
        generate = f"{target}{{prefix={PREFIX}}}"
        _usmp_opt(
            [str(model), *flags, "-p", pipeline(report=report), "-t", generate, "-o", str(output)]
        )
    state_bytes, variables = 0, ()
    if expose_state:
        plan = json.loads(report.read_text())
        state_bytes = sum(p["size_bytes"] for p in plan["pools"] if p["name"] == STATE_POOL)
        variables = tuple(
            (buffer["tensor"], buffer["offset"], buffer["size_bytes"])
            for buffer in plan["buffers"]
            if buffer.get("pool") == STATE_POOL
        )
    inputs, outputs = entry_ports(model)
    inputs = named_as_in_header(inputs, header, f"{PREFIX}_inputs")
    outputs = named_as_in_header(outputs, header, f"{PREFIX}_outputs")
    harness = directory / "sequence.c"
    harness.write_text(sequence_harness(inputs, outputs, state_bytes))
    executable = directory / ("sequence_asan" if sanitize else "sequence_run")
    command = [
        cc,
        *STRICT_FLAGS,
        *WARNINGS,
        *(SANITIZE_FLAGS if sanitize else ("-O2",)),
        "-I",
        str(directory),
        str(source),
        str(harness),
        "-o",
        str(executable),
        "-lm",
    ]
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    if built.returncode:
        raise ModelBuildError(f"{' '.join(command)}:\n{built.stderr[-4000:]}")
    return SequenceModel(executable, tuple(inputs), tuple(outputs), state_bytes, variables)
