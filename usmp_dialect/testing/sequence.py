"""Runs a stateful model's generated C on a sequence of inputs in one process, so the state
(recurrent models' variables, SPEC §13) carries over from one run to the next, with
`<p>_reset_state()` called before the runs that ask for it: what the tests of recurrent
operators compare with TensorFlow Lite Micro invoked the same way.

The harness reads, per run, one flag byte (1: reset the state first) and the inputs, calls
`<p>_run` and writes the outputs; all runs go through one file each way.
"""

from __future__ import annotations

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
    generate_c,
    named_as_in_header,
)

# The generated C's warning contract (README), on top of the host harness's flags.
WARNINGS = ("-Wpedantic", "-Wcast-align=strict", "-Wconversion", "-Wshadow", "-Wdouble-promotion")


def sequence_harness(inputs: Sequence[Port], outputs: Sequence[Port]) -> str:
    """A C `main(argc, argv)`: `argv[1]` the runs (a flag byte, then the inputs' bytes, per
    run), `argv[2]` the file for the outputs of every run, `argv[3]` the number of runs."""
    p = PREFIX
    lines = [
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        f'#include "{p}.h"',
    ]
    for port in (*inputs, *outputs):
        lines.append(f"static _Alignas(16) uint8_t io_{port.name}[{port.size_bytes}];")
    fields_in = ", ".join(f".{t.name} = io_{t.name}" for t in inputs)
    fields_out = ", ".join(f".{t.name} = io_{t.name}" for t in outputs)
    lines += [
        "int main(int argc, char** argv) {",
        "  if (argc != 4) return 2;",
        "  int runs = atoi(argv[3]);",
        f"  struct {p}_inputs inputs = {{ {fields_in} }};",
        f"  struct {p}_outputs outputs = {{ {fields_out} }};",
        '  FILE* in = fopen(argv[1], "rb");',
        '  FILE* out = fopen(argv[2], "wb");',
        "  if (!in || !out) return 3;",
        "  for (int r = 0; r < runs; ++r) {",
        "    int reset = fgetc(in);",
        "    if (reset == EOF) return 3;",
        f"    if (reset && {p}_reset_state() != 0) return 4;",
    ]
    for port in inputs:
        lines.append(
            f"    if (fread(inputs.{port.name}, 1, {port.size_bytes}, in) != {port.size_bytes}) "
            "return 3;"
        )
    lines.append(f"    if ({p}_run(&inputs, &outputs) != 0) return 5;")
    for port in outputs:
        lines.append(f"    fwrite(outputs.{port.name}, 1, {port.size_bytes}, out);")
    lines += ["  }", "  fclose(in);", "  fclose(out);", "  return 0;", "}", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class Run:
    """One run of a sequence: the inputs, and whether the state is reset before it."""

    inputs: Sequence[np.ndarray]
    reset: bool = False


@dataclass(frozen=True)
class SequenceModel:
    executable: Path
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]

    def run(self, runs: Sequence[Run], timeout_s: float = 120.0) -> list[list[np.ndarray]]:
        """The outputs of every run, in order, from one process (the state carries over)."""
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
            results.append(outputs)
        return results


def compile_sequence(
    model: Path, directory: Path, sanitize: bool = False, cc: str = "gcc"
) -> SequenceModel:
    """Generates the C of `model` (the README's pipeline) and compiles it with the sequence
    harness (AddressSanitizer and UBSan when `sanitize`)."""
    source = generate_c(model, directory)
    inputs, outputs = entry_ports(model)
    header = source.parent / f"{PREFIX}.h"
    inputs = named_as_in_header(inputs, header, f"{PREFIX}_inputs")
    outputs = named_as_in_header(outputs, header, f"{PREFIX}_outputs")
    harness = directory / "sequence.c"
    harness.write_text(sequence_harness(inputs, outputs))
    executable = directory / ("sequence_asan" if sanitize else "sequence_run")
    command = [
        cc,
        *STRICT_FLAGS,
        *WARNINGS,
        *(SANITIZE_FLAGS if sanitize else ("-O2",)),
        "-I",
        str(source.parent),
        str(source),
        str(harness),
        "-o",
        str(executable),
        "-lm",
    ]
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    if built.returncode:
        raise ModelBuildError(f"{' '.join(command)}:\n{built.stderr[-4000:]}")
    return SequenceModel(executable, tuple(inputs), tuple(outputs))
