"""The int8 squeezenets onnxruntime's `quantize_static` writes (QDQ per tensor and per channel,
QOperator per tensor) beside the float one: the workspace the planner places, its ratio to the
float workspace, `usmp-opt` time, and the distance to onnxruntime in output quantisation steps.

Run by hand from the checkout with the virtualenv active (`pip install -e '.[test]'`):

    python benchmarks/onnx_qdq.py [--seeds 4] [--no-run]

The squeezenet of the onnx wheel gets seeded random weights (seed 0), is converted to opset 13
and quantised, calibrated on 4 random images, with the logits (the input of its final Softmax)
as a second output (`usmp_dialect.testing.onnx_models.quantized_squeezenet`, as
`test/frontends/onnx/test_qdq.py`). Per model: activations and workspace from the plan report
(bytes; inputs and outputs are the caller's), the workspace over the float model's, `usmp-opt`
wall time to C, and, running the C on `--seeds` random inputs, the largest difference from
onnxruntime of the probabilities and of the logits in steps of their quantisation (float:
relative to the largest output).

Writes the section "int8 squeezenets" of benchmarks/results/onnx_models.md (or `--output`),
replacing that section only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import version_converter

from usmp_dialect.testing.onnx_models import (
    onnxruntime_outputs,
    quantized_squeezenet,
    with_logits_output,
    with_random_weights,
    zoo_path,
)
from usmp_dialect.testing.results_file import write_section
from usmp_dialect.validation.host import PREFIX, compile_model, pipeline, usmp_opt

FORMS = (("float", False), ("qdq", False), ("qdq", True), ("qoperator", False))
SECTION = "## int8 squeezenets"


@dataclass
class Row:
    model: str
    activations: int
    workspace: int
    usmp_opt_s: float
    distance: str = "—"


def _float_squeezenet(directory: Path) -> Path:
    model = version_converter.convert_version(
        with_random_weights(onnx.load(zoo_path("squeezenet")), 0), 13
    )
    path = directory / "float.onnx"
    onnx.save(with_logits_output(model), path)
    return path


def measure(form: str, per_channel: bool, directory: Path, seeds: int, run: bool) -> Row:
    name = form if form == "float" else f"{form} {'per channel' if per_channel else 'per tensor'}"
    if form == "float":
        path, steps = _float_squeezenet(directory), None
    else:
        path, steps = quantized_squeezenet(directory, form, per_channel)
    report, source = directory / "plan.json", directory / f"{PREFIX}.c"
    started = time.perf_counter()
    command = [str(path), "-p", pipeline(False, report), "-t", f"c{{prefix={PREFIX}}}"]
    subprocess.run([*usmp_opt(), *command, "-o", str(source)], check=True, capture_output=True)
    seconds = time.perf_counter() - started
    plan = json.loads(report.read_text())
    pool = next(p for p in plan["pools"] if p["kind"] == "workspace")
    activations = sum(1 for buffer in plan["buffers"] if buffer["pool"] == pool["name"])
    row = Row(f"squeezenet {name}", activations, pool["size_bytes"], seconds)
    if run:
        compiled = compile_model(path, directory)
        worst = [0.0, 0.0]
        for seed in range(seeds):
            x = np.random.default_rng(seed + 1).standard_normal((1, 3, 224, 224))
            inputs = [x.astype(np.float32)]
            ours, _ = compiled.run(inputs)
            expected = onnxruntime_outputs(path.read_bytes(), inputs)
            for k, (got, want) in enumerate(zip(ours, expected, strict=True)):
                error = np.abs(got.reshape(want.shape).astype(np.float64) - want).max()
                unit = float(np.abs(want).max()) if steps is None else steps[k]
                worst[k] = max(worst[k], float(error) / unit)
        unit = "relative" if steps is None else "steps"
        row.distance = f"{worst[0]:.3g} / {worst[1]:.3g} {unit}"
    return row


def table(rows: list[Row], seeds: int) -> str:
    floating = rows[0].workspace
    lines = [
        SECTION,
        "",
        f"`python benchmarks/onnx_qdq.py --seeds {seeds}`: the zoo squeezenet (opset 13) and "
        "onnxruntime's `quantize_static` of it (int8 activations and weights). onnxruntime: "
        "largest difference of our C's probabilities / logits over all seeds, in their "
        "quantisation steps (float: relative to the largest output).",
        "",
        "| model | activations | workspace | / float | usmp-opt s | onnxruntime |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.model} | {r.activations} | {r.workspace:,} | {r.workspace / floating:.3f} | "
            f"{r.usmp_opt_s:.1f} | {r.distance} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--no-run", action="store_true", help="skip gcc and onnxruntime")
    parser.add_argument(
        "--output", type=Path, default=Path(__file__).parent / "results" / "onnx_models.md"
    )
    args = parser.parse_args()
    rows = []
    for form, per_channel in FORMS:
        with tempfile.TemporaryDirectory(prefix="onnx-qdq-") as directory:
            rows.append(measure(form, per_channel, Path(directory), args.seeds, not args.no_run))
        print(rows[-1], file=sys.stderr, flush=True)
    write_section(args.output, table(rows, args.seeds))


if __name__ == "__main__":
    main()
