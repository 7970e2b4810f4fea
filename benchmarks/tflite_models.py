"""Real TFLite models against TensorFlow Lite Micro: memory, compile time, C size and speed.

Run by hand (not in CI), from the checkout with the virtualenv active (`pip install -e '.[test]'`):

    python benchmarks/tflite_models.py                       # every model of examples/mlperf_tiny
    python benchmarks/tflite_models.py --models kws_ref_model,vww_96_int8 --runs 50

For each model, side by side in one run:

* Memory. `usmp-opt MODEL -p 'usmp-import-memref,convert-linalg-to-loops,usmp{workspace-io=true
  report=...}'` (U4: inputs and outputs inside the workspace, counted as TFLM counts its arena);
  the workspace and its lower bound come from the plan report. TFLM's arena (`tflite-micro`,
  `print_allocations()`): head (planned activations with inputs and outputs) and total (head
  plus the persistent tail). RAM on the device = our workspace + the deepest stack use of the
  generated code (gcc `-fstack-usage` at -O2: `<p>_run`'s frame plus the largest operator
  function's; the operator functions call no other function).
* Constants: the constant pool against the bytes of the model's constant tensors.
* `usmp-opt` time (wall, the whole command: import, passes, C printing) and the C size.
* Speed: our C (gcc -O2, U1) and TFLM's `invoke()` (its reference kernels), each run `--runs`
  times on the same input, alternating in rounds so that both see the same machine load;
  medians, and the worst round's ratio.

Writes `benchmarks/results/tflite_models.md` (or `--output`).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from usmp_dialect.frontends.tflite.reader import read_graph
from usmp_dialect.testing import tflm
from usmp_dialect.validation.host import (
    PREFIX,
    compile_model,
    generate_c,
    pipeline,
    usmp_opt,
)

ROOT = Path(__file__).resolve().parents[1]
MODELS_DIR = ROOT / "examples" / "mlperf_tiny"
RESULTS = Path(__file__).parent / "results" / "tflite_models.md"
HYBRID = {"kws_ref_model_float32"}
ROUNDS = 5
MOBILENET = "mobilenetv2_a030_80"
MOBILENET_ARGS = ["--resolution", "80", "--width-multiplier", "0.3", "--classes", "1000"]


@dataclass
class Row:
    model: str
    workspace_bytes: int
    unfused_workspace_bytes: int
    lower_bound_bytes: int
    tflm_head_bytes: int | None
    tflm_total_bytes: int | None
    stack_bytes: int
    constant_pool_bytes: int
    weight_bytes: int
    usmp_opt_s: float
    c_bytes: int
    ours_s: float
    tflm_s: float | None
    worst_ratio: float | None


def stack_bytes(source: Path, directory: Path) -> int:
    """`<p>_run`'s frame plus the largest other frame, from gcc's `-fstack-usage` at -O2."""
    obj = directory / "stack.o"
    flags = ["-std=c11", "-O2", "-fstack-usage", "-I", str(source.parent)]
    subprocess.run(
        ["gcc", *flags, "-c", str(source), "-o", str(obj)],
        check=True,
        capture_output=True,
    )
    frames: dict[str, int] = {}
    for line in obj.with_suffix(".su").read_text().splitlines():
        match = re.match(r".*:(\w+)\t(\d+)\t", line)
        if match:
            frames[match.group(1)] = int(match.group(2))
    run = frames.pop(f"{PREFIX}_run", 0)
    return run + max(frames.values(), default=0)


def weight_bytes(model: Path) -> int:
    graph = read_graph(model.read_bytes(), str(model))
    return sum(t.data.nbytes for t in graph.tensors if t.data is not None)


def measure(model: Path, runs: int, directory: Path) -> Row:
    report = directory / "plan.json"
    started = time.perf_counter()
    command = [str(model), "-p", pipeline(True, report), "-t", f"c{{prefix={PREFIX}}}"]
    subprocess.run(
        [*usmp_opt(), *command, "-o", str(directory / "u4.c")],
        check=True,
        capture_output=True,
    )
    usmp_opt_s = time.perf_counter() - started
    plan = json.loads(report.read_text())
    pools = {pool["kind"]: pool for pool in plan["pools"]}
    unfused_report = directory / "plan_unfused.json"
    subprocess.run(
        [
            *usmp_opt(),
            str(model),
            "--fuse=none",
            "-p",
            pipeline(True, unfused_report),
            "-o",
            str(directory / "unfused.mlir"),
        ],
        check=True,
        capture_output=True,
    )
    unfused = json.loads(unfused_report.read_text())
    unfused_workspace = sum(p["size_bytes"] for p in unfused["pools"] if p["kind"] == "workspace")
    u1 = directory / "u1"
    source = generate_c(model, u1)
    compiled = compile_model(model, u1, source=source)
    rng = np.random.default_rng(0)
    inputs = [
        rng.integers(-128, 128, size=p.shape, dtype=np.int8)
        if p.dtype == np.int8
        else rng.standard_normal(p.shape).astype(np.float32)
        for p in compiled.inputs
    ]
    reference = model.read_bytes()
    if model.stem in HYBRID:
        reference = tflm.dequantize_weights(reference)
    interpreter = tflm.interpreter(reference)
    ours_rounds, tflm_rounds = [], []
    for _ in range(ROUNDS):
        _, seconds = compiled.run(inputs, runs=runs)
        ours_rounds.append(seconds)
        times = []
        for _ in range(runs):
            for index, value in enumerate(inputs):
                interpreter.set_input(value, index)
            start = time.perf_counter()
            interpreter.invoke()
            times.append(time.perf_counter() - start)
        tflm_rounds.append(statistics.median(times))
    arena = None if model.stem in HYBRID else tflm.arena(model)
    ratios = [t / o for o, t in zip(ours_rounds, tflm_rounds, strict=True)]
    return Row(
        model=model.stem,
        workspace_bytes=pools["workspace"]["size_bytes"],
        unfused_workspace_bytes=unfused_workspace,
        lower_bound_bytes=pools["workspace"]["lower_bound_bytes"],
        tflm_head_bytes=arena.head_bytes if arena else None,
        tflm_total_bytes=arena.total_bytes if arena else None,
        stack_bytes=stack_bytes(source, u1),
        constant_pool_bytes=pools["constant"]["size_bytes"] if "constant" in pools else 0,
        weight_bytes=weight_bytes(model),
        usmp_opt_s=usmp_opt_s,
        c_bytes=(directory / "u4.c").stat().st_size,
        ours_s=statistics.median(ours_rounds),
        tflm_s=statistics.median(tflm_rounds),
        worst_ratio=min(ratios),
    )


def _bytes(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def table(rows: list[Row], runs: int) -> str:
    lines = [
        "# Real TFLite models: usmp-dialect against TensorFlow Lite Micro",
        "",
        "Written by `python benchmarks/tflite_models.py` (method in its docstring; this "
        "project's shared 2-core machine). Pipeline: `usmp-opt MODEL.tflite -p "
        "'usmp-import-memref,convert-linalg-to-loops,usmp{workspace-io=true}' -t c`. "
        "TFLM: PyPI `tflite-micro`, reference kernels. The hybrid kws (int8 weights, float "
        "activations) is refused by TFLM; its times are TFLM's on the same model with its "
        "weights dequantised.",
        "",
        "## Memory (bytes)",
        "",
        "Workspace: inputs, outputs and every activation (U4), as TFLM's head counts them; "
        "*before*: one function per operator (`usmp-opt --fuse=none`), *after*: the default "
        "pipeline (fused row streaming where it lowers the peak). The lower bound is the "
        "planner's for the program it plans (after). RAM = workspace (after) + deepest stack "
        "use of the generated C. mobilenetv2_a030_80: `python -m usmp_dialect.models "
        "mobilenetv2 --resolution 80 --width-multiplier 0.3 --classes 1000`.",
        "",
        "| model | workspace before | workspace after | lower bound | peak / bound | TFLM head "
        "| after / TFLM head | stack | RAM (workspace + stack) | TFLM total | RAM / TFLM total |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        ram = row.workspace_bytes + row.stack_bytes
        head_ratio = (
            f"{row.workspace_bytes / row.tflm_head_bytes:.3f}" if row.tflm_head_bytes else "—"
        )
        total_ratio = f"{ram / row.tflm_total_bytes:.3f}" if row.tflm_total_bytes else "—"
        lines.append(
            f"| {row.model} | {row.unfused_workspace_bytes:,} | {row.workspace_bytes:,} "
            f"| {row.lower_bound_bytes:,} | {row.workspace_bytes / row.lower_bound_bytes:.3f} "
            f"| {_bytes(row.tflm_head_bytes)} | {head_ratio} | {row.stack_bytes:,} | {ram:,} "
            f"| {_bytes(row.tflm_total_bytes)} | {total_ratio} |"
        )
    lines += [
        "",
        "## Constants, compile time, C size, speed",
        "",
        f"Speed: medians over {ROUNDS} alternating rounds of {runs} runs each (ours: gcc -O2, "
        "U1); *worst* is the smallest TFLM / ours ratio of the rounds.",
        "",
        "| model | constant pool | model's constant tensors | usmp-opt (s) | C size | ours (ms) "
        "| TFLM invoke (ms) | TFLM / ours | worst |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        tflm_ms = f"{row.tflm_s * 1e3:.3f}" if row.tflm_s is not None else "—"
        speedup = f"{row.tflm_s / row.ours_s:.2f}" if row.tflm_s else "—"
        worst = f"{row.worst_ratio:.2f}" if row.worst_ratio else "—"
        lines.append(
            f"| {row.model} | {row.constant_pool_bytes:,} | {row.weight_bytes:,} | "
            f"{row.usmp_opt_s:.2f} | {row.c_bytes:,} | {row.ours_s * 1e3:.3f} | {tflm_ms} | "
            f"{speedup} | {worst} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--runs", type=int, default=20, help="runs per round (default 20)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        generated = Path(scratch) / f"{MOBILENET}.tflite"
        subprocess.run(
            [sys.executable, "-m", "usmp_dialect.models", "mobilenetv2", *MOBILENET_ARGS],
            check=True,
            stdout=generated.open("wb"),
        )
        models = [*sorted(MODELS_DIR.glob("*.tflite")), generated]
        if args.models:
            wanted = set(args.models.split(","))
            models = [m for m in models if m.stem in wanted]
        for model in models:
            print(f"{model.stem} ...", file=sys.stderr, flush=True)
            directory = Path(scratch) / model.stem
            directory.mkdir()
            rows.append(measure(model, args.runs, directory))
    args.output.write_text(table(rows, args.runs))
    print(args.output.read_text())


if __name__ == "__main__":
    main()
