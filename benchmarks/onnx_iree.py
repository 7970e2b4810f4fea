"""The IREE route beside our ONNX frontend: the workspace `usmp` plans for the ONNX Model Zoo
graphs of the onnx wheel when they come through IREE's importer and bufferization instead.

Needs IREE's compiler (a benchmark-only tool, not a dependency of this project):

    pip install iree-base-compiler          # 3.13: iree-import-onnx, iree-opt
    python benchmarks/onnx_iree.py --models squeezenet,shufflenet
    python benchmarks/onnx_iree.py --models squeezenet --run    # also run the C vs onnxruntime

Each graph gets the seeded random weights and logits output of benchmarks/onnx_models.py (the
same model file both ways). The IREE route, all automatic:

1. `iree-import-onnx --opset-version 17` (the zoo files are opset 9, whose shapes IREE's
   importer does not infer);
2. `iree-opt --torch-onnx-to-torch-backend-pipeline
   --torch-backend-to-linalg-on-tensors-backend-pipeline`;
3. `iree-opt --one-shot-bufferize="bufferize-function-boundaries
   function-boundary-type-conversion=identity-layout-map"` (IREE's own upstream MLIR, newer than
   LLVM 22: it prints `alignment = 64` on `memref.global`/`alloc`, which our upstream parser
   reads);
4. `usmp-opt model.buf.mlir -p 'usmp-import-memref,convert-linalg-to-loops,usmp{entry=GRAPH}'
   -t 'c{entry=GRAPH constants=string}'`: `usmp-import-memref` turns the returned buffers into
   out-parameters (no `buffer-results-to-out-params` needed), `linalg.map`/`broadcast` parse into
   `linalg.generic`, and GRAPH is the function IREE named after the ONNX graph (read off the
   bufferized file; `usmp` without `entry=` names it in its error).

Per model: our frontend's workspace (U1, as benchmarks/onnx_models.py), the IREE route's
workspace, their ratio, `usmp-opt` wall time and peak resident set on the IREE MLIR (GNU time),
the IREE steps' time, and with `--run` the IREE route's C against onnxruntime (largest error
over the largest output). A step over `--timeout` seconds is recorded as skipped.

Writes the section "The IREE route" of benchmarks/results/onnx_models.md (or `--output`),
replacing that section only.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from onnx_models import measure

from usmp_dialect.testing.onnx_models import onnxruntime_outputs
from usmp_dialect.testing.results_file import write_section
from usmp_dialect.validation.host import (
    OPTIMISED_FLAGS,
    PREFIX,
    STRICT_FLAGS,
    CompiledModel,
    Port,
    harness_source,
    named_as_in_header,
    usmp_opt,
)

DEFAULT = ("squeezenet", "shufflenet")
SECTION = "## The IREE route"
OPSET = 17
BUFFERIZE = (
    "--one-shot-bufferize=bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map"
)
TORCH_PIPELINES = (
    "--torch-onnx-to-torch-backend-pipeline",
    "--torch-backend-to-linalg-on-tensors-backend-pipeline",
)
_PUBLIC_FUNCTION = re.compile(rb"^\s*func\.func @([\w$.-]+)\(", re.MULTILINE)


class StepFailed(Exception):
    """A step of the route failed or ran out of time; the message says which."""


@dataclass
class IreeRow:
    model: str
    ours_workspace: int
    ours_activations: int
    iree_workspace: int | None = None
    iree_buffers: int | None = None
    usmp_opt_s: float | None = None
    usmp_opt_mb: float | None = None
    c_mb: float | None = None
    iree_s: dict[str, float] = field(default_factory=dict)
    error: float | None = None
    note: str = ""


def iree_tool(name: str) -> str:
    """`name` from this environment (pip's iree-base-compiler) or PATH."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found: pip install iree-base-compiler")
    return found


def timed(command: list[str], timeout_s: float, what: str) -> tuple[float, float]:
    """Runs `command` under GNU time: (wall seconds, peak resident MB)."""
    with tempfile.NamedTemporaryFile(suffix=".time") as memory:
        started = time.perf_counter()
        try:
            ran = subprocess.run(
                ["/usr/bin/time", "-f", "%M", "-o", memory.name, *command],
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise StepFailed(f"{what} over {timeout_s:.0f} s") from None
        wall = time.perf_counter() - started
        if ran.returncode:
            last = (ran.stderr.strip().splitlines() or ["?"])[-1]
            raise StepFailed(f"{what} failed: {last[:300]}")
        return wall, int(Path(memory.name).read_text().split()[-1]) / 1024


def entry_name(bufferized: Path) -> str:
    """The public function IREE made of the ONNX graph (named after the graph)."""
    data = bufferized.read_bytes()
    names = [m.group(1).decode() for m in _PUBLIC_FUNCTION.finditer(data)]
    if len(names) != 1:
        raise StepFailed(f"expected one public function in {bufferized.name}, found {names}")
    return names[0]


def iree_route(model: Path, directory: Path, timeout_s: float, row: IreeRow) -> str:
    """Steps 1-3 of the module doc: the bufferized MLIR of `model`; returns the entry name."""
    torch_mlir = directory / "model.torch.mlir"
    linalg_mlir = directory / "model.linalg.mlir"
    buffers = directory / "model.buf.mlir"
    importer = [iree_tool("iree-import-onnx"), str(model), "--opset-version", str(OPSET)]
    row.iree_s["import"] = timed([*importer, "-o", str(torch_mlir)], timeout_s, "import")[0]
    iree_opt = iree_tool("iree-opt")
    command = [iree_opt, str(torch_mlir), *TORCH_PIPELINES, "-o", str(linalg_mlir)]
    row.iree_s["linalg"] = timed(command, timeout_s, "torch-to-linalg")[0]
    torch_mlir.unlink()
    command = [iree_opt, str(linalg_mlir), BUFFERIZE, "-o", str(buffers)]
    row.iree_s["bufferize"] = timed(command, timeout_s, "bufferize")[0]
    linalg_mlir.unlink()
    return entry_name(buffers)


def run_iree_c(model: Path, directory: Path, entry: str, source: Path) -> float:
    """The IREE route's C run on seeded inputs against onnxruntime: largest error relative to
    the largest output."""
    header = directory / f"{PREFIX}.h"
    subprocess.run(
        [
            *usmp_opt(),
            str(directory / "model.buf.mlir"),
            "-p",
            f"usmp-import-memref,convert-linalg-to-loops,usmp{{entry={entry}}}",
            "-t",
            f"c-header{{prefix={PREFIX} entry={entry}}}",
            "-o",
            str(header),
        ],
        check=True,
        capture_output=True,
    )
    import onnxruntime

    session = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    inputs = [
        Port("", np.dtype(np.float32), tuple(int(d) for d in value.shape))
        for value in session.get_inputs()
    ]
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(port.shape).astype(np.float32) for port in inputs]
    expected = onnxruntime_outputs(model.read_bytes(), arrays)
    outputs = [Port("", want.dtype, want.shape) for want in expected]
    inputs = named_as_in_header(inputs, header, f"{PREFIX}_inputs")
    outputs = named_as_in_header(outputs, header, f"{PREFIX}_outputs")
    harness = directory / "harness.c"
    harness.write_text(harness_source(inputs, outputs, False))
    executable = directory / "model_run"
    command = ["gcc", *STRICT_FLAGS, *OPTIMISED_FLAGS, "-I", str(directory)]
    command += [str(source), str(harness), "-o", str(executable), "-lm"]
    subprocess.run(command, check=True, capture_output=True)
    compiled = CompiledModel(executable, tuple(inputs), tuple(outputs), source)
    ours, _ = compiled.run(arrays, timeout_s=600)
    return max(
        float(np.abs(got.reshape(want.shape) - want).max() / np.abs(want).max())
        for got, want in zip(ours, expected, strict=True)
    )


def measure_iree(name: str, directory: Path, timeout_s: float, run: bool) -> IreeRow:
    """Our frontend's row for zoo graph `name` (benchmarks/onnx_models.py), then the IREE
    route's on the same model file."""
    ours = measure(name, directory, False, "string")
    row = IreeRow(name, ours.workspace, ours.activations)
    plan_iree_route(directory / f"{name}.onnx", directory, timeout_s, run, row)
    return row


def plan_iree_route(
    model: Path, directory: Path, timeout_s: float, run: bool, row: IreeRow
) -> None:
    """The IREE route on `model` (files in `directory`), its figures into `row`; a failed or
    timed-out step becomes the row's note."""
    try:
        entry = iree_route(model, directory, timeout_s, row)
        report = directory / "iree_plan.json"
        source = directory / f"{PREFIX}.c"
        passes = (
            f'usmp-import-memref,convert-linalg-to-loops,usmp{{entry={entry} report="{report}"}}'
        )
        command = [*usmp_opt(), str(directory / "model.buf.mlir"), "-p", passes]
        command += ["-t", f"c{{prefix={PREFIX} entry={entry} constants=string}}"]
        row.usmp_opt_s, row.usmp_opt_mb = timed(
            [*command, "-o", str(source)], timeout_s, "usmp-opt"
        )
        row.c_mb = source.stat().st_size / 1e6
        plan = json.loads(report.read_text())
        workspace = next(pool for pool in plan["pools"] if pool["kind"] == "workspace")
        row.iree_workspace = workspace["size_bytes"]
        row.iree_buffers = sum(1 for b in plan["buffers"] if b["pool"] == workspace["name"])
        if run:
            row.error = run_iree_c(model, directory, entry, source)
    except StepFailed as failed:
        row.note = f"skipped: {failed}"


def table(rows: list[IreeRow]) -> str:
    lines = [
        SECTION,
        "",
        "`python benchmarks/onnx_iree.py --models ...` (IREE 3.13, `pip install "
        "iree-base-compiler`, a benchmark-only tool): the same model file through "
        f"`iree-import-onnx --opset-version {OPSET}`, `iree-opt`'s torch-to-linalg pipelines "
        "and its `--one-shot-bufferize` (function boundaries, identity layouts), then "
        "`usmp-opt model.buf.mlir -p 'usmp-import-memref,convert-linalg-to-loops,"
        "usmp{entry=GRAPH}' -t 'c{entry=GRAPH constants=string}'` (U1) — no hand edits. "
        "Ours: our frontend's workspace (the tables above). Buffers: workspace buffers the "
        "IREE MLIR gives the planner (ours: activations). usmp-opt s / MB: that command on "
        "the IREE MLIR (wall time, peak resident set). IREE s: import + linalg + bufferize.",
        "",
        "| model | our workspace | IREE route workspace | ratio | buffers (ours) "
        "| usmp-opt s | usmp-opt MB | C MB | IREE s | error | notes |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        iree_s = f"{sum(r.iree_s.values()):.1f}" if r.iree_s else "—"
        error = f"{r.error:.1e}" if r.error is not None else "—"
        if r.iree_workspace is None:
            cells = ["—", "—", f"— ({r.ours_activations})", "—", "—", "—"]
        else:
            cells = [
                f"{r.iree_workspace:,}",
                f"{r.iree_workspace / r.ours_workspace:.3f}",
                f"{r.iree_buffers} ({r.ours_activations})",
                f"{r.usmp_opt_s:.1f}",
                f"{r.usmp_opt_mb:.0f}",
                f"{r.c_mb:.1f}",
            ]
        lines.append(
            f"| {r.model} | {r.ours_workspace:,} | {' | '.join(cells)} | {iree_s} | {error} "
            f"| {r.note} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT))
    parser.add_argument("--run", action="store_true", help="run the IREE route's C too")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per step")
    parser.add_argument(
        "--output", type=Path, default=Path(__file__).parent / "results" / "onnx_models.md"
    )
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix=f"iree-{name}-") as directory:
            rows.append(measure_iree(name, Path(directory), args.timeout, args.run))
        print(table(rows[-1:]).splitlines()[-1], rows[-1].iree_s, file=sys.stderr, flush=True)
    write_section(args.output, table(rows))


if __name__ == "__main__":
    main()
