"""In-place operators (issue 22): the workspace each model needs without and with them.

Run by hand from the checkout with the virtualenv active (`pip install -e '.[test]'`):

    python benchmarks/in_place.py                     # MLPerf Tiny, MobileNetV2, ONNX zoo
    python benchmarks/in_place.py --no-onnx
    python benchmarks/in_place.py --firmware          # also M4F instructions, changed models

Per model, the module is imported with `in_place="none"` (no operator in place: the program as
imported before issue 22, Concat in place aside) and with the default `in_place="all"`, and the
peak of live bytes of its program is computed on the operator graph
(`analysis/operator_graph.py`, the liveness the planner sees, which equals the planned workspace
on these models: the planner reaches the bound), with the model's inputs and outputs outside the
workspace (the default) and inside it (U4, as TFLite Micro counts its arena head). `changed`
says which transformations the default applied: elementwise operators written over their input
(`ew`) and depthwise convolutions in place (`dw`), counted from the imported IR.

With `--firmware`, every TFLite model whose program changed is also built for the Cortex-M4F
both ways (`benchmarks/firmware.py`'s harness, `usmp-opt --in-place=none` against the default)
and run on QEMU: instructions per inference, and the outputs must equal the x86 build's.

Writes `benchmarks/results/inplace.md` (or `--output`).
"""

from __future__ import annotations

import argparse
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import onnx
from xdsl.dialects.builtin import ModuleOp

from usmp_dialect.analysis.operator_graph import operator_graph
from usmp_dialect.frontends import Importer
from usmp_dialect.frontends.onnx.importer import import_onnx
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.graph.graph import peak_live_bytes
from usmp_dialect.graph.in_place import with_io_inside
from usmp_dialect.models import build
from usmp_dialect.testing.onnx_models import with_random_weights, zoo_path

ROOT = Path(__file__).resolve().parents[1]
MLPERF = sorted((ROOT / "examples" / "mlperf_tiny").glob("*.tflite"))
ONNX_ZOO = ("squeezenet", "shufflenet", "inception_v1", "inception_v2", "densenet121", "resnet50")


@dataclass(frozen=True)
class Row:
    model: str
    outside: tuple[int, int]  # before, after
    inside: tuple[int, int]
    elementwise: int  # calls writing over an input (after - before)
    depthwise: int


def _peaks(module: ModuleOp) -> tuple[int, int, str]:
    described = operator_graph(module)
    assert described is not None
    graph = described.graph
    return peak_live_bytes(graph), peak_live_bytes(with_io_inside(graph)), str(module)


def _shared_calls(text: str) -> int:
    """Calls of `@main` whose output argument is (a view of) one of their inputs."""
    parent = dict(re.findall(r"%(\w+) = memref\.(?:view|reinterpret_cast) %(\w+)", text))

    def root(value: str) -> str:
        while value in parent:
            value = parent[value]
        return value

    count = 0
    for arguments in re.findall(r"func\.call @\w+\((.*?)\)", text):
        roots = [root(value) for value in re.findall(r"%(\w+)", arguments)]
        count += len(roots) > 1 and roots[-1] in roots[:-1]
    return count


def measure(name: str, importer: Importer, data: bytes, path: str) -> Row:
    before_out, before_in, before_text = _peaks(importer(data, path, in_place="none"))
    after_out, after_in, after_text = _peaks(importer(data, path, in_place="all"))
    depthwise = sum(
        1
        for body in after_text.split("func.func @depthwise_conv_2d_")[1:]
        if "memref.alloc" in body.split("func.return")[0]
    )
    shared = _shared_calls(after_text) - _shared_calls(before_text)
    return Row(name, (before_out, after_out), (before_in, after_in), shared - depthwise, depthwise)


def instructions(path: Path, in_place: str, directory: Path) -> int:
    """M4F instructions of one inference of the model's firmware (outputs checked on x86)."""
    from usmp_dialect.testing import firmware

    model = firmware.model_from_file(path, flags=[f"--in-place={in_place}"])
    comparison = firmware.compare(model, directory / in_place, firmware.CPUS["m4f"], (1,))
    assert comparison.ok, comparison.mismatches
    return firmware.measurement(comparison.firmware_output).instructions


def firmware_table(rows: list[Row], paths: dict[str, Path]) -> list[str]:
    lines = [
        "| model | M4F instructions, --in-place=none | default | ratio |",
        "|---|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as directory:
        for row in rows:
            if row.model not in paths or not (row.elementwise or row.depthwise):
                continue
            before, after = (
                instructions(paths[row.model], mode, Path(directory) / row.model)
                for mode in ("none", "all")
            )
            lines.append(f"| {row.model} | {before:,} | {after:,} | {after / before:.4f} |")
            print(lines[-1], flush=True)
    return lines


def table(rows: list[Row]) -> list[str]:
    lines = [
        "| model | I/O outside: before | after | ratio | I/O inside: before | after | ratio "
        "| elementwise in place | depthwise in place |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        cells = [row.model]
        for before, after in (row.outside, row.inside):
            cells += [f"{before:,}", f"{after:,}", f"{after / before:.3f}"]
        cells += [str(row.elementwise), str(row.depthwise)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-onnx", action="store_true")
    parser.add_argument("--firmware", action="store_true")
    parser.add_argument("--output", type=Path, default=ROOT / "benchmarks/results/inplace.md")
    args = parser.parse_args()
    rows: list[Row] = []
    for path in MLPERF:
        rows.append(measure(path.stem, import_tflite, path.read_bytes(), path.name))
        print(rows[-1], flush=True)
    mobilenet = build("mobilenetv2", resolution=80, width_multiplier=0.3, classes=1000).tflite
    name = "MobileNetV2 0.3 @ 80x80 (1000 classes)"
    rows.append(measure(name, import_tflite, mobilenet, "mobilenetv2.tflite"))
    print(rows[-1], flush=True)
    paths = {path.stem: path for path in MLPERF}
    firmware_lines: list[str] = []
    if args.firmware:
        with tempfile.TemporaryDirectory() as directory:
            paths[name] = Path(directory) / "mobilenetv2.tflite"
            paths[name].write_bytes(mobilenet)
            firmware_lines = firmware_table(rows, paths)
    onnx_rows: list[Row] = []
    if not args.no_onnx:
        for model in ONNX_ZOO:
            data = with_random_weights(onnx.load(zoo_path(model)), seed=0).SerializeToString()
            onnx_rows.append(measure(model, import_onnx, data, f"{model}.onnx"))
            print(onnx_rows[-1], flush=True)
    text = [
        "# In-place operators: workspace before and after",
        "",
        "Generated by `python benchmarks/in_place.py` (see its docstring). Bytes of the "
        "program's peak of live tensors (the planned workspace: the planner reaches it on "
        "every model here), without in-place operators (`--in-place=none`) and with them (the "
        "default), the model's inputs and outputs outside the workspace (the default) and "
        "inside it (TFLite Micro's arena head).",
        "",
        "## TFLite",
        "",
        *table(rows),
    ]
    if firmware_lines:
        text += ["", "## Cortex-M4F (QEMU `mps2-an386`, `-icount shift=0`)", "", *firmware_lines]
    if onnx_rows:
        text += [
            "",
            "## ONNX Model Zoo (float; `--in-place=elementwise` is the ONNX frontend's import "
            "before issue 22, equal to `after` wherever `depthwise in place` is 0)",
            "",
            *table(onnx_rows),
        ]
    args.output.write_text("\n".join(text) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
