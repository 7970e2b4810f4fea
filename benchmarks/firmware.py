"""The example models as firmware: sizes, memory, stack and instructions on an emulated Cortex-M.

Run by hand (not in CI), from the checkout with the virtualenv active (needs the tools of
`scripts/install_firmware_tools.sh`):

    python benchmarks/firmware.py                                # every example, Cortex-M4F
    python benchmarks/firmware.py --models kws,resnet8 --cpus m4f,m3
    python benchmarks/firmware.py --save-json before.json        # keep the figures ...
    python benchmarks/firmware.py --baseline before.json         # ... and show them beside
    python benchmarks/firmware.py --models '' --add-rows a.json --add-rows b.json  # join runs
    python benchmarks/firmware.py --models kws --flags='--fuse=none'   # usmp-opt flags
    python benchmarks/firmware.py --workspace-io    # U4: inputs and outputs in the workspace

Each model (the MLPerf Tiny int8 models of `examples/mlperf_tiny`: kws = kws_ref_model, vww =
vww_96_int8, resnet8 = pretrainedResnet_quant, ad = ad01_int8, str_ww = str_ww_ref_model) is
lowered with `usmp-opt MODEL.tflite -p
'usmp-import-memref,convert-linalg-to-loops,usmp{report=...}' -t c` (in process, through the
firmware harness of `usmp_dialect/testing/firmware.py`), cross-compiled with arm-none-eabi-gcc
at `-O2` under the strict warning set, linked with the harness's startup file and run under
`qemu-system-arm -M mps2-an386 -icount shift=0` (an385 for the M3); its outputs must equal the
x86 build's. Per model and CPU:

* `.text` / `.rodata` / `.data` / `.bss` of the model's object file alone (`arm-none-eabi-size`);
* the workspace pool the plan report states against the `.bss` the object really reserves,
  with the report's lower bound;
* stack: the largest frame gcc's `-fstack-usage` reports for the model's functions, and the
  bytes `<p>_run` really used below its caller's stack pointer (stack painting);
* instructions per inference (SysTick on the 25 MHz CPU clock with one instruction per ns: the
  resolution is 40 instructions) and per multiply-accumulate (the MACs of the network's
  convolutions and fully connected layers, counted on the TFLite graph).

Writes `benchmarks/results/firmware.md` (or `--output`).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from usmp_dialect.frontends.tflite.reader import read_graph  # noqa: E402
from usmp_dialect.testing import firmware  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "firmware.md"
MODELS = {
    "kws": "kws_ref_model",
    "vww": "vww_96_int8",
    "resnet8": "pretrainedResnet_quant",
    "ad": "ad01_int8",
    "str_ww": "str_ww_ref_model",
}
DEFAULT_MODELS = tuple(MODELS)


def model_path(name: str) -> Path:
    return ROOT / "examples" / "mlperf_tiny" / f"{MODELS.get(name, name)}.tflite"


def multiply_accumulates(name: str) -> int:
    """The MACs of one inference: convolutions (output elements x filter taps x input
    channels, one input channel per output for depthwise ones) and fully connected layers."""
    path = model_path(name)
    graph = read_graph(path.read_bytes(), str(path))
    total = 0
    for op in graph.operators:
        output = graph.tensors[op.outputs[0]].shape
        if op.opcode in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            filters = graph.tensors[op.inputs[1]].shape
            taps = filters[1] * filters[2] * (filters[3] if op.opcode == "CONV_2D" else 1)
            total += int(np.prod(output)) * taps
        elif op.opcode == "FULLY_CONNECTED":
            total += int(np.prod(output)) * graph.tensors[op.inputs[1]].shape[1]
    return total


@dataclass
class Row:
    model: str
    cpu: str
    text: int
    rodata: int
    data: int
    bss: int
    other_sections: dict[str, int]
    workspace_report: int
    workspace_lower_bound: int
    constant_report: int
    largest_frame: int
    stack_used: int
    instructions: int
    macs: int
    matches_x86: bool
    lower_s: float
    run_s: float

    @property
    def per_mac(self) -> float:
        return self.instructions / self.macs if self.macs else float("nan")


def largest_frame(stack_usage: Path) -> int:
    """The largest frame in a gcc `.su` file (`file:line:col:function  BYTES  static`)."""
    frames = [int(line.split("\t")[1]) for line in stack_usage.read_text().splitlines() if line]
    return max(frames, default=0)


def measure(
    name: str,
    cpus: list[firmware.Cpu],
    directory: Path,
    flags: Sequence[str] = (),
    workspace_io: bool = False,
) -> list[Row]:
    report = directory / f"{name}-plan.json"
    options = f'report="{report}"' + (" workspace-io=true" if workspace_io else "")
    pipeline = "usmp-import-memref,convert-linalg-to-loops," + f"usmp{{{options}}}"
    started = time.perf_counter()
    model = firmware.model_from_file(model_path(name), pipeline=pipeline, flags=flags)
    lower_s = time.perf_counter() - started
    plan = json.loads(report.read_text())
    pools = {pool["kind"]: pool for pool in plan["pools"]}
    macs = multiply_accumulates(name)
    rows: list[Row] = []
    native: str | None = None
    for cpu in cpus:
        started = time.perf_counter()
        comparison = firmware.compare(model, directory / name, cpu, (1,), native_output=native)
        run_s = time.perf_counter() - started
        native = comparison.native_output
        sizes = firmware.section_sizes(comparison.firmware.model_object)
        measured = firmware.measurement(comparison.firmware_output)
        main_sections = (".text", ".rodata", ".data", ".bss")
        rows.append(
            Row(
                name,
                cpu.name,
                *(sizes[s] for s in main_sections),
                {k: v for k, v in sizes.items() if k not in main_sections},
                pools["workspace"]["size_bytes"],
                pools["workspace"].get("lower_bound_bytes", -1),
                pools.get("constant", {}).get("size_bytes", 0),
                largest_frame(comparison.firmware.model_object.with_suffix(".su")),
                measured.stack_bytes,
                measured.instructions,
                macs,
                comparison.ok,
                lower_s,
                run_s,
            )
        )
        print(
            f"{name} {cpu.name}: {measured.instructions} instructions, "
            f"{measured.instructions / macs:.2f}/MAC, stack {measured.stack_bytes} B, "
            f"{'matches' if comparison.ok else 'DIFFERS from'} x86",
            flush=True,
        )
    return rows


def _tool_version(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.stdout.splitlines()[0] if done.stdout else "?"


def markdown(rows: list[Row], baseline: dict[str, dict[str, float]] | None, label: str) -> str:
    lines = [
        "# Firmware: the example models on an emulated Cortex-M",
        "",
        "Written by `python benchmarks/firmware.py` (see its docstring). "
        f"{_tool_version([firmware.ARM_GCC, '--version'])}, `-O2`; "
        f"{_tool_version([firmware.QEMU, '--version'])}, `-icount shift=0`; "
        f"host {platform.machine()}. m4f = Cortex-M4 hard float (`mps2-an386`), "
        "m3 = Cortex-M3 soft float (`mps2-an385`). Every run's outputs equal the x86 build's "
        "unless the last column says otherwise.",
        "",
        "## Instructions per inference",
        "",
    ]
    if baseline:
        lines += [
            f"Before: {label}. After: this tree.",
            "",
            "| model | cpu | MACs | instructions before | per MAC before | instructions after "
            "| per MAC after | speed-up | = x86 |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for row in rows:
            before = baseline.get(f"{row.model}/{row.cpu}")
            if before is None:
                old, old_per_mac, speedup = "-", "-", "-"
            else:
                old = f"{int(before['instructions']):,}"
                old_per_mac = f"{before['instructions'] / row.macs:.2f}"
                speedup = f"{before['instructions'] / row.instructions:.2f}x"
            lines.append(
                f"| {row.model} | {row.cpu} | {row.macs:,} | {old} | {old_per_mac} | "
                f"{row.instructions:,} | {row.per_mac:.2f} | {speedup} | "
                f"{'yes' if row.matches_x86 else '**no**'} |"
            )
    else:
        lines += [
            "| model | cpu | MACs | instructions | per MAC | = x86 |",
            "| --- | --- | ---: | ---: | ---: | --- |",
        ]
        for row in rows:
            lines.append(
                f"| {row.model} | {row.cpu} | {row.macs:,} | {row.instructions:,} | "
                f"{row.per_mac:.2f} | {'yes' if row.matches_x86 else '**no**'} |"
            )
    lines += [
        "",
        "## The model object (`model.o`, bytes)",
        "",
        "| model | cpu | .text | .rodata | .data | .bss | workspace (plan report) | "
        "lower bound | constants (plan report) | largest frame (-fstack-usage) | "
        "stack used (painted) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        before = (baseline or {}).get(f"{row.model}/{row.cpu}")
        text = f"{row.text:,}" + (f" (before {int(before['text']):,})" if before else "")
        lines.append(
            f"| {row.model} | {row.cpu} | {text} | {row.rodata:,} | {row.data:,} | "
            f"{row.bss:,} | {row.workspace_report:,} | {row.workspace_lower_bound:,} | "
            f"{row.constant_report:,} | {row.largest_frame} | {row.stack_used} |"
        )
    lines += [
        "",
        "`.bss` is the internal workspace pool (compare with the plan report's workspace), "
        "`.rodata` the constant pool plus the compiler's tables. Stack used is what `<p>_run` "
        "wrote below its caller's stack pointer; the largest frame is the largest of the "
        "model's functions alone (gcc inlines the operators into `<p>_run`).",
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(DEFAULT_MODELS))
    parser.add_argument("--cpus", default="m4f")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--save-json", type=Path, help="write the rows as JSON too")
    parser.add_argument("--baseline", type=Path, help="JSON of --save-json to compare with")
    parser.add_argument("--baseline-label", default="the baseline JSON")
    parser.add_argument(
        "--add-rows",
        type=Path,
        action="append",
        default=[],
        help="JSON of an earlier --save-json whose rows join the table (--models '' to "
        "measure nothing)",
    )
    parser.add_argument(
        "--flags",
        default="",
        help="usmp-opt flags for every model, space-separated (e.g. '--fuse=none')",
    )
    parser.add_argument(
        "--workspace-io",
        action="store_true",
        help="plan the inputs and outputs in the workspace (U4, as TFLM's arena holds them)",
    )
    arguments = parser.parse_args()
    missing = firmware.toolchain_missing()
    if missing:
        print(f"firmware: {missing}", file=sys.stderr)
        return 1
    cpus = [firmware.CPUS[name] for name in arguments.cpus.split(",")]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="usmp-firmware-bench-") as temporary:
        for name in filter(None, arguments.models.split(",")):
            rows += measure(
                name, cpus, Path(temporary), arguments.flags.split(), arguments.workspace_io
            )
    for saved in arguments.add_rows:
        rows += [Row(**fields) for fields in json.loads(saved.read_text()).values()]
    if arguments.save_json:
        arguments.save_json.write_text(
            json.dumps({f"{r.model}/{r.cpu}": asdict(r) for r in rows}, indent=1)
        )
    baseline = json.loads(arguments.baseline.read_text()) if arguments.baseline else None
    arguments.output.write_text(markdown(rows, baseline, arguments.baseline_label))
    print(f"wrote {arguments.output}")
    return 0 if all(row.matches_x86 for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
