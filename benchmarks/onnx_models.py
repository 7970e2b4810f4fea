"""The ONNX Model Zoo graphs of the onnx wheel through `usmp-opt`: memory, compile cost, and
correctness against onnxruntime.

Run by hand (not in CI), from the checkout with the virtualenv active (`pip install -e '.[test]'`):

    python benchmarks/onnx_models.py                                  # the default models
    python benchmarks/onnx_models.py --models squeezenet,resnet50 --no-run

Each graph gets seeded random weights of its `ConstantOfShape` shapes (see
`usmp_dialect.testing.onnx_models`) and its logits as a second output. Per model:

* activations: the activation buffers the planner places in the workspace (U1: the graph's
  inputs and outputs are the caller's and not counted), from the plan report;
* bound and workspace: the report's lower bound and the planned workspace (the default import:
  fused row streaming where it lowers the peak, issue 22);
* `--fuse=none` and ratio: the workspace of the plain import (one function per node), and
  workspace / that; fused groups: how many, and their nodes;
* graph-order peak: the largest total size of the intermediate tensors live at once when the
  nodes run in file order, each node output its own buffer (no in-place reuse, views counted
  as copies), live from the node writing it to the last node reading it; inputs, outputs and
  constants (initializers and folded subgraphs) not counted;
* `usmp-opt` wall time and peak memory (the whole command: import, passes, C), C size
  (`--constants`: the C backend's form of constant pools, `string` by default here);
* with running: gcc -O2 time, and our outputs against onnxruntime's (largest error relative
  to the largest output).

Writes the section "Float graphs" of `benchmarks/results/onnx_models.md` (or `--output`),
replacing that section only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

from usmp_dialect.testing.onnx_models import (
    graph_order_peak,
    onnxruntime_outputs,
    with_logits_output,
    with_random_weights,
    zoo_path,
)
from usmp_dialect.testing.results_file import write_section
from usmp_dialect.validation.host import PREFIX, compile_model, pipeline, usmp_opt

DEFAULT = ("squeezenet", "shufflenet", "inception_v1", "densenet121", "resnet50")


@dataclass
class Row:
    model: str
    activations: int
    bound: int
    workspace: int
    graph_order_peak: int
    usmp_opt_s: float
    usmp_opt_mb: float
    c_mb: float
    unfused: int = 0
    groups: int = 0
    fused_nodes: int = 0
    gcc_s: float | None = None
    error: float | None = None


def measure(name: str, directory: Path, run: bool, constants: str) -> Row:
    model = with_logits_output(with_random_weights(onnx.load(zoo_path(name)), seed=0))
    path = directory / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    report = directory / "plan.json"
    source = directory / f"{PREFIX}.c"
    memory = directory / "time.txt"
    target = f"c{{prefix={PREFIX} constants={constants}}}"
    command = [str(path), "-p", pipeline(False, report), "-t", target]
    started = time.perf_counter()
    subprocess.run(
        ["/usr/bin/time", "-f", "%M", "-o", str(memory), *usmp_opt(), *command, "-o", str(source)],
        check=True,
        capture_output=True,
    )
    usmp_opt_s = time.perf_counter() - started
    peak_kb = int(memory.read_text().split()[-1])
    plan = json.loads(report.read_text())
    pools = {pool["kind"]: pool for pool in plan["pools"]}
    workspace = pools["workspace"]
    activations = sum(1 for buffer in plan["buffers"] if buffer["pool"] == workspace["name"])
    row = Row(
        name,
        activations,
        workspace["lower_bound_bytes"],
        workspace["size_bytes"],
        graph_order_peak(path),
        usmp_opt_s,
        peak_kb / 1024,
        source.stat().st_size / 1e6,
    )
    row.unfused = _unfused_workspace(path, directory)
    fused = [op["fused"] for op in plan["operators"] if "fused" in op]
    row.groups, row.fused_nodes = len(fused), sum(len(group["operators"]) for group in fused)
    if run:
        subprocess.run(
            [
                *usmp_opt(),
                str(path),
                "-p",
                pipeline(),
                "-t",
                f"c-header{{prefix={PREFIX}}}",
                "-o",
                str(directory / f"{PREFIX}.h"),
            ],
            check=True,
            capture_output=True,
        )
        started = time.perf_counter()
        compiled = compile_model(path, directory, source=source)
        row.gcc_s = time.perf_counter() - started
        rng = np.random.default_rng(1)
        inputs = [rng.standard_normal(p.shape).astype(np.float32) for p in compiled.inputs]
        ours, _ = compiled.run(inputs, timeout_s=600)
        expected = onnxruntime_outputs(path.read_bytes(), inputs)
        row.error = max(
            float(np.abs(got.reshape(want.shape) - want).max() / np.abs(want).max())
            for got, want in zip(ours, expected, strict=True)
        )
    return row


def _unfused_workspace(path: Path, directory: Path) -> int:
    """The workspace of the import with `--fuse=none` (U1, as the row's)."""
    report = directory / "plan_unfused.json"
    subprocess.run(
        [*usmp_opt(), str(path), "--fuse=none", "-p", pipeline(False, report), "-o", os.devnull],
        check=True,
        capture_output=True,
    )
    plan = json.loads(report.read_text())
    return next(pool["size_bytes"] for pool in plan["pools"] if pool["kind"] == "workspace")


TITLE = """# ONNX Model Zoo graphs (onnx wheel, seeded random weights)

Bytes. U1 (`usmp-import-memref,convert-linalg-to-loops,usmp`, inputs and outputs outside the
workspace). Activations: buffers planned in the workspace. Bound: the plan report's lower bound.
Graph-order peak: the largest total of intermediate tensors live at once when the nodes run in
file order, each node output its own buffer (no in-place reuse, views counted as copies).
usmp-opt: the whole command (import, passes, C), wall time and maximum resident set (GNU time).
Error: our C against onnxruntime (CPU), largest difference over the largest output, over the
probabilities and the logits. Each section is written by the script it names.
"""

SECTION = "## Float graphs"


def table(rows: list[Row], constants: str) -> str:
    """The section "Float graphs" of the results file."""
    lines = [
        SECTION,
        "",
        f"`python benchmarks/onnx_models.py --models {','.join(r.model for r in rows)}`, C "
        f"constant pools as `constants={constants}`.",
        "",
        "| model | activations | bound | workspace | `--fuse=none` | ratio | fused groups "
        "(nodes) | graph-order peak | workspace / peak | usmp-opt s | usmp-opt MB | C MB "
        "| gcc -O2 s | error |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        gcc = f"{r.gcc_s:.1f}" if r.gcc_s is not None else "—"
        error = f"{r.error:.1e}" if r.error is not None else "—"
        lines.append(
            f"| {r.model} | {r.activations} | {r.bound:,} | {r.workspace:,} | {r.unfused:,} | "
            f"{r.workspace / r.unfused:.3f} | {r.groups} ({r.fused_nodes}) | "
            f"{r.graph_order_peak:,} | {r.workspace / r.graph_order_peak:.3f} | "
            f"{r.usmp_opt_s:.1f} | {r.usmp_opt_mb:.0f} | {r.c_mb:.1f} | {gcc} | {error} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(DEFAULT))
    parser.add_argument("--no-run", action="store_true", help="skip gcc and onnxruntime")
    parser.add_argument("--constants", default="string", choices=["text", "string"])
    parser.add_argument(
        "--output", type=Path, default=Path(__file__).parent / "results" / "onnx_models.md"
    )
    args = parser.parse_args()
    rows = []
    for name in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix=f"onnx-{name}-") as directory:
            rows.append(measure(name, Path(directory), not args.no_run, args.constants))
        print(table(rows[-1:], args.constants).splitlines()[-1], file=sys.stderr, flush=True)
    write_section(args.output, table(rows, args.constants), TITLE)


if __name__ == "__main__":
    main()
