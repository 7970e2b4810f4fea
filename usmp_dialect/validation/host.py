"""Compiles the C that `usmp-opt` generates for a model and runs it on the host.

`compile_model` runs the `usmp-opt` command line as a user would (`usmp-opt MODEL -p PIPELINE
-t c`, then `-t c-header`), writes a small C `main` that reads the inputs from a binary file,
calls `<p>_run` (U1, or U4 with `workspace_io=True` through `<p>_map_inputs`/`_map_outputs`)
a given number of times and writes the outputs and the median time per run, and compiles it
with the C compiler. `CompiledModel.run` feeds numpy arrays through it. Used by `usmp-validate`
(which compares the outputs with a reference runtime), the tests and the benchmarks.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PREFIX = "model"
STRICT_FLAGS = ("-std=c11", "-Wall", "-Wextra", "-Werror")
OPTIMISED_FLAGS = ("-O2",)
SANITIZE_FLAGS = ("-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all")
PIPELINE = "usmp-import-memref,convert-linalg-to-loops,usmp"


@dataclass(frozen=True)
class Port:
    """A model input or output: its C field name, element type and shape."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]

    @property
    def size_bytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize


class ModelBuildError(Exception):
    """usmp-opt, the C compiler or the compiled model failed: the message holds their
    diagnostics, `diagnostic` the gist in one line (usmp-opt's own error line, the compiler's
    first error)."""

    def __init__(self, message: str, diagnostic: str = ""):
        super().__init__(message)
        self.diagnostic = diagnostic or _first_line(message)


def _first_line(text: str, containing: str = "") -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    wanted = [line for line in lines if containing in line]
    return (wanted or lines or [""])[0]


def usmp_opt() -> list[str]:
    """The `usmp-opt` command of this environment."""
    found = shutil.which("usmp-opt", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "usmp_dialect.tools.usmp_opt"]


def _run_usmp_opt(arguments: Sequence[str]) -> None:
    ran = subprocess.run([*usmp_opt(), *arguments], capture_output=True, text=True, check=False)
    if ran.returncode:
        lines = [line for line in ran.stderr.splitlines() if line.strip()]
        raise ModelBuildError(
            f"usmp-opt {' '.join(arguments)}: {ran.stderr.strip()}", lines[-1] if lines else ""
        )


_DTYPES = {
    "i1": np.dtype(np.bool_),  # TFLite BOOL: a byte holding 0 or 1
    "i8": np.dtype(np.int8),
    "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "f32": np.dtype(np.float32),
}


def entry_ports(model: Path) -> tuple[list[Port], list[Port]]:
    """The inputs and outputs of the imported model's `@main` (from `usmp-opt MODEL`)."""
    from xdsl.dialects import func
    from xdsl.dialects.builtin import DictionaryAttr, MemRefType, StringAttr

    from usmp_dialect.dialects.usmp import QUANTIZATION_ATTRIBUTE
    from usmp_dialect.frontends import get_all_frontends

    importer = get_all_frontends()[model.suffix.lstrip(".")]()
    module = importer(model.read_bytes(), str(model))
    entry = next(
        op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "main"
    )
    inputs: list[Port] = []
    outputs: list[Port] = []
    attrs = entry.arg_attrs.data if entry.arg_attrs is not None else ()
    for argument, attr in zip(entry.body.block.args, attrs, strict=True):
        type_ = argument.type
        assert isinstance(type_, MemRefType)
        dtype = _DTYPES[str(type_.element_type)]
        quantization = attr.data.get(QUANTIZATION_ATTRIBUTE)
        if isinstance(quantization, DictionaryAttr) and quantization.data.get(
            "storage"
        ) == StringAttr("uint8"):
            dtype = np.dtype(np.uint8)  # an i8 holding uint8 bytes (TFLite UINT8)
        port = Port(argument.name_hint or "", dtype, tuple(type_.get_shape()))
        kind = attr.data.get("usmp.io")
        (outputs if isinstance(kind, StringAttr) and kind.data == "output" else inputs).append(port)
    return inputs, outputs


def harness_source(inputs: Sequence[Port], outputs: Sequence[Port], workspace_io: bool) -> str:
    """A C `main(argc, argv)`: `argv[1]` the inputs (concatenated bytes), `argv[2]` the file
    for the outputs, `argv[3]` the number of runs; prints the median nanoseconds per run."""
    p = PREFIX
    lines = [
        "#define _POSIX_C_SOURCE 199309L",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <stdlib.h>",
        "#include <string.h>",
        "#include <time.h>",
        f'#include "{p}.h"',
        "",
        "static int compare(const void* a, const void* b) {",
        "  long long x = *(const long long*)a, y = *(const long long*)b;",
        "  return (x > y) - (x < y);",
        "}",
        "",
    ]
    if not workspace_io:
        for port in (*inputs, *outputs):
            lines.append(f"static _Alignas(16) uint8_t io_{port.name}[{port.size_bytes}];")
    lines += [
        "int main(int argc, char** argv) {",
        "  if (argc != 4) return 2;",
        "  int runs = atoi(argv[3]);",
        "  if (runs < 1 || runs > 100000) return 2;",
    ]
    if workspace_io:
        lines += [
            f"  struct {p}_inputs inputs = {p}_map_inputs(NULL);",
            f"  struct {p}_outputs outputs = {p}_map_outputs(NULL);",
        ]
    else:
        fields_in = ", ".join(f".{t.name} = io_{t.name}" for t in inputs)
        fields_out = ", ".join(f".{t.name} = io_{t.name}" for t in outputs)
        lines += [
            f"  struct {p}_inputs inputs = {{ {fields_in} }};",
            f"  struct {p}_outputs outputs = {{ {fields_out} }};",
        ]
    lines += ['  FILE* in = fopen(argv[1], "rb");', "  if (!in) return 3;"]
    for port in inputs:
        lines.append(
            f"  if (fread(inputs.{port.name}, 1, {port.size_bytes}, in) != {port.size_bytes}) "
            "return 3;"
        )
    lines += [
        "  fclose(in);",
        "  long long* times = malloc(sizeof(long long) * (size_t)runs);",
        "  if (!times) return 4;",
        "  for (int r = 0; r < runs; ++r) {",
        "    struct timespec start, end;",
        "    clock_gettime(CLOCK_MONOTONIC, &start);",
    ]
    lines.append(
        f"    int32_t status = {p}_run(NULL);"
        if workspace_io
        else f"    int32_t status = {p}_run(&inputs, &outputs);"
    )
    lines += [
        "    clock_gettime(CLOCK_MONOTONIC, &end);",
        "    if (status != 0) return 5;",
        "    times[r] = (end.tv_sec - start.tv_sec) * 1000000000LL"
        " + (end.tv_nsec - start.tv_nsec);",
    ]
    if workspace_io and len(inputs):
        # Under U4 the run may overwrite an input whose life has ended: reload it.
        lines += [
            "    if (r + 1 < runs) {",
            '      in = fopen(argv[1], "rb");',
            "      if (!in) return 3;",
        ]
        for port in inputs:
            lines.append(
                f"      if (fread(inputs.{port.name}, 1, {port.size_bytes}, in) != "
                f"{port.size_bytes}) return 3;"
            )
        lines += ["      fclose(in);", "    }"]
    lines += [
        "  }",
        "  qsort(times, (size_t)runs, sizeof(long long), compare);",
        '  printf("%lld\\n", times[runs / 2]);',
        "  free(times);",
        '  FILE* out = fopen(argv[2], "wb");',
        "  if (!out) return 6;",
    ]
    for port in outputs:
        lines.append(f"  fwrite(outputs.{port.name}, 1, {port.size_bytes}, out);")
    lines += ["  fclose(out);", "  return 0;", "}", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class CompiledModel:
    executable: Path
    inputs: tuple[Port, ...]
    outputs: tuple[Port, ...]
    source: Path

    def run(
        self, arrays: Sequence[np.ndarray], runs: int = 1, timeout_s: float = 120.0
    ) -> tuple[list[np.ndarray], float]:
        """The outputs for `arrays` (one per input) and the median seconds per run."""
        directory = self.executable.parent
        data = b"".join(
            np.ascontiguousarray(array, dtype=port.dtype).tobytes()
            for array, port in zip(arrays, self.inputs, strict=True)
        )
        (directory / "input.bin").write_bytes(data)
        ran = subprocess.run(
            [str(self.executable), "input.bin", "output.bin", str(runs)],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
            env={"ASAN_OPTIONS": "detect_leaks=0", "UBSAN_OPTIONS": "halt_on_error=1"},
        )
        if ran.returncode or ran.stderr.strip():
            raise ModelBuildError(
                f"the model run failed ({ran.returncode}): {ran.stderr[-2000:]}",
                f"the model run failed (exit status {ran.returncode}): "
                f"{_first_line(ran.stderr, 'ERROR') or 'no message'}",
            )
        raw = (directory / "output.bin").read_bytes()
        outputs, offset = [], 0
        for port in self.outputs:
            chunk = raw[offset : offset + port.size_bytes]
            outputs.append(np.frombuffer(chunk, dtype=port.dtype).reshape(port.shape).copy())
            offset += port.size_bytes
        return outputs, int(ran.stdout.split()[0]) * 1e-9


def pipeline(workspace_io: bool = False, report: Path | None = None) -> str:
    """The README's pipeline, with U4 and a plan report when asked."""
    options = []
    if workspace_io:
        options.append("workspace-io=true")
    if report is not None:
        options.append(f'report="{report}"')
    return PIPELINE + (f"{{{' '.join(options)}}}" if options else "")


def generate_c(
    model: Path,
    directory: Path,
    workspace_io: bool = False,
    report: Path | None = None,
    constants: str = "text",
    options: Sequence[str] = (),
) -> Path:
    """Writes `model.c` and `model.h` for `model` into `directory` (and the plan report to
    `report`); returns the source. `constants`: the `-t c` option (`text` or `string`);
    `options`: more `usmp-opt` arguments (e.g. `--hybrid=dequantize`)."""
    directory.mkdir(parents=True, exist_ok=True)
    source, header = directory / f"{PREFIX}.c", directory / f"{PREFIX}.h"
    for target, output, plan_report in (("c", source, report), ("c-header", header, None)):
        extra = f" constants={constants}" if target == "c" and constants != "text" else ""
        arguments = [
            *options,
            "-p",
            pipeline(workspace_io, plan_report),
            "-t",
            f"{target}{{prefix={PREFIX}{extra}}}",
        ]
        _run_usmp_opt([str(model), *arguments, "-o", str(output)])
    return source


def plan(
    model: Path, directory: Path, workspace_io: bool = False, options: Sequence[str] = ()
) -> dict:
    """The plan report (SPEC §8) of `model` through the README's pipeline, without C;
    `options`: more `usmp-opt` arguments."""
    directory.mkdir(parents=True, exist_ok=True)
    report = directory / ("plan_u4.json" if workspace_io else "plan.json")
    planned = directory / ("planned_u4.mlir" if workspace_io else "planned.mlir")
    arguments = [str(model), *options, "-p", pipeline(workspace_io, report), "-o", str(planned)]
    _run_usmp_opt(arguments)
    return json.loads(report.read_text())


def workspace_bytes(plan_report: dict) -> int:
    """The bytes of every workspace pool of a plan report."""
    return sum(pool["size_bytes"] for pool in plan_report["pools"] if pool["kind"] == "workspace")


def _struct_fields(header: str, struct: str) -> list[str]:
    match = re.search(rf"struct {struct} {{(.*?)}};", header, re.DOTALL)
    if match is None:
        raise ModelBuildError(f"the header declares no struct {struct}")
    return re.findall(r"void\* (\w+);", match.group(1))


def named_as_in_header(ports: Sequence[Port], header: Path, struct: str) -> list[Port]:
    """`ports` renamed to the fields of `struct` in the generated header, in order (the C
    backend makes names unique and keeps clear of C's reserved words)."""
    fields = _struct_fields(header.read_text(), struct)
    if len(fields) != len(ports):
        raise ModelBuildError(f"struct {struct} has {len(fields)} fields for {len(ports)} ports")
    return [Port(name, port.dtype, port.shape) for name, port in zip(fields, ports, strict=True)]


def compile_model(
    model: Path,
    directory: Path,
    workspace_io: bool = False,
    sanitize: bool = False,
    cc: str = "gcc",
    source: Path | None = None,
    report: Path | None = None,
    constants: str = "text",
    options: Sequence[str] = (),
) -> CompiledModel:
    """Generates (unless `source` is given) and compiles the C of `model` with a harness;
    `options`: more `usmp-opt` arguments."""
    if source is None:
        source = generate_c(model, directory, workspace_io, report, constants, options)
    inputs, outputs = entry_ports(model)
    header = source.parent / f"{PREFIX}.h"
    inputs = named_as_in_header(inputs, header, f"{PREFIX}_inputs")
    outputs = named_as_in_header(outputs, header, f"{PREFIX}_outputs")
    harness = directory / ("harness_u4.c" if workspace_io else "harness.c")
    harness.write_text(harness_source(inputs, outputs, workspace_io))
    executable = directory / ("model_asan" if sanitize else "model_run")
    command = [
        cc,
        *STRICT_FLAGS,
        *(SANITIZE_FLAGS if sanitize else OPTIMISED_FLAGS),
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
        raise ModelBuildError(
            f"{' '.join(command)}:\n{built.stderr[-4000:]}",
            f"{cc} failed on the generated C: "
            f"{_first_line(built.stderr, 'error') or f'exit status {built.returncode}'}",
        )
    return CompiledModel(executable, tuple(inputs), tuple(outputs), source)
