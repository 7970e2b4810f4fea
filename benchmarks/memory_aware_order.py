"""The memory-aware order (`usmp{order=memory}`, the default) against the program's order
(`usmp{order=program}`): the planned workspace of each model both ways.

Run by hand (not in CI), from the checkout with the virtualenv active (`pip install -e '.[test]'`):

    python benchmarks/memory_aware_order.py                  # every model below
    python benchmarks/memory_aware_order.py --models squeezenet,kws_ref_model

Models: the ONNX Model Zoo graphs with branches (the onnx wheel's stripped files, seeded random
weights as in `benchmarks/onnx_models.py`), each also with its nodes in breadth-first order (a
valid order some exporters write: every branch's first node before any second one), the
MLPerf Tiny TFLite models of `examples/mlperf_tiny/`, and the small branching models of the
tests (`branches_model`, ONNX; the int8 TFLite one of `test/passes/test_memory_aware_order.py`).
Per model, in process: import, `usmp-import-memref`, `convert-linalg-to-loops`, then the `usmp`
pass with `order=program` and with `order=memory` (U1: inputs and outputs outside the
workspace), the workspace from the planned pools; and the graph the order runs on
(`analysis/operator_graph.py`): operators, the peak of live bytes in program order and in the
chosen order, the largest operator's own bytes (a lower bound for every order), whether the
order is proven optimal, and the time to choose it.

Writes the section "Memory-aware order" of `benchmarks/results/onnx_models.md` (or `--output`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.convert_linalg_to_loops import ConvertLinalgToLoopsPass

from usmp_dialect.analysis.operator_graph import operator_graph
from usmp_dialect.dialects.pool import WorkspacePoolOp, module_pools
from usmp_dialect.graph.order import memory_aware_order
from usmp_dialect.passes.import_memref import UsmpImportMemrefPass
from usmp_dialect.passes.usmp import UsmpPass
from usmp_dialect.testing.harness import pipeline_context
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.testing.results_file import write_section

ROOT = Path(__file__).resolve().parents[1]
MLPERF = ROOT / "examples" / "mlperf_tiny"
RESULTS = Path(__file__).parent / "results" / "onnx_models.md"
ZOO_MODELS = ("squeezenet", "inception_v1", "inception_v2", "densenet121", "resnet50")
SECTION = "## Memory-aware order"


@dataclass
class Row:
    model: str
    operators: int
    program_peak: int
    order_peak: int
    bound: int
    proven: bool
    order_s: float
    workspace_program: int
    workspace_memory: int


def breadth_first(model: object) -> object:
    """The ONNX `model` with its nodes in breadth-first topological order (Kahn's algorithm,
    a first-in first-out queue, ties in file order)."""
    import onnx

    model = onnx.ModelProto.FromString(model.SerializeToString())  # type: ignore[attr-defined]
    nodes = list(model.graph.node)
    producer = {name: index for index, node in enumerate(nodes) for name in node.output}
    waiting = [len({producer[n] for n in node.input if n in producer}) for node in nodes]
    readers: list[list[int]] = [[] for _ in nodes]
    for index, node in enumerate(nodes):
        for source in sorted({producer[n] for n in node.input if n in producer}):
            readers[source].append(index)
    queue = deque(index for index, count in enumerate(waiting) if count == 0)
    order: list[int] = []
    while queue:
        index = queue.popleft()
        order.append(index)
        for reader in readers[index]:
            waiting[reader] -= 1
            if waiting[reader] == 0:
                queue.append(reader)
    del model.graph.node[:]
    model.graph.node.extend(nodes[index] for index in order)
    return model


def onnx_importer(name: str, reorder: bool) -> Callable[[], ModuleOp]:
    def load() -> ModuleOp:
        import onnx

        from usmp_dialect.frontends.onnx import import_onnx
        from usmp_dialect.testing.onnx_models import (
            branches_model,
            with_random_weights,
            zoo_path,
        )

        if name == "branches":
            model = onnx.ModelProto.FromString(branches_model())
        else:
            model = with_random_weights(onnx.load(zoo_path(name)), seed=0)
        if reorder:
            model = breadth_first(model)
        return import_onnx(model.SerializeToString(), f"{name}.onnx")

    return load


def tflite_importer(path: Path | None) -> Callable[[], ModuleOp]:
    def load() -> ModuleOp:
        from usmp_dialect.frontends.tflite import import_tflite

        if path is None:
            test = load_file(ROOT / "test" / "passes" / "test_memory_aware_order.py")
            return import_tflite(test.tflite_branches_model(), "branches.tflite")
        return import_tflite(path.read_bytes(), str(path))

    return load


def models() -> dict[str, Callable[[], ModuleOp]]:
    """Every model of the benchmark, by the name in the table."""
    table: dict[str, Callable[[], ModuleOp]] = {}
    for name in ZOO_MODELS:
        table[name] = onnx_importer(name, False)
        table[f"{name}-breadth-first"] = onnx_importer(name, True)
    table["branches-onnx"] = onnx_importer("branches", False)
    for path in sorted(MLPERF.glob("*.tflite")):
        table[path.stem] = tflite_importer(path)
    table["branches-tflite"] = tflite_importer(None)
    return table


def workspace_bytes(load: Callable[[], ModuleOp], order: str) -> int:
    context = pipeline_context()
    module = load()
    UsmpImportMemrefPass().apply(context, module)
    ConvertLinalgToLoopsPass().apply(context, module)
    UsmpPass(order=order).apply(context, module)
    return sum(
        pool.size_bytes.value.data
        for pool in module_pools(module)
        if isinstance(pool, WorkspacePoolOp) and pool.size_bytes is not None
    )


def measure(name: str, load: Callable[[], ModuleOp]) -> Row:
    module = load()
    UsmpImportMemrefPass().apply(pipeline_context(), module)
    described = operator_graph(module)
    if described is None:
        raise SystemExit(f"{name}: the entry function is not one block")
    started = time.process_time()
    result = memory_aware_order(described.graph)
    order_s = time.process_time() - started
    return Row(
        name,
        len(described.graph.operators),
        result.program_peak_bytes,
        result.peak_bytes,
        result.lower_bound_bytes,
        result.proven_optimal,
        order_s,
        workspace_bytes(load, "program"),
        workspace_bytes(load, "memory"),
    )


def table(rows: list[Row], command: str) -> str:
    lines = [
        SECTION,
        "",
        f"`{command}`: the `usmp` pass with `order=program` and with `order=memory` (the "
        "default), U1. Operators: the entry function's steps the order moves. Peaks: the "
        "order's count of live bytes (every operand of a call live while it runs), in program "
        "order and in the chosen order; bound: the largest operator's own bytes, which every "
        "order needs. Order s: CPU time to choose the order.",
        "",
        "| model | operators | program-order peak | chosen-order peak | bound | proven | "
        "order s | workspace order=program | workspace order=memory | ratio |",
        "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row.model} | {row.operators} | {row.program_peak:,} | {row.order_peak:,} | "
            f"{row.bound:,} | {'yes' if row.proven else 'no'} | {row.order_s:.2f} | "
            f"{row.workspace_program:,} | {row.workspace_memory:,} | "
            f"{row.workspace_memory / row.workspace_program:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    available = models()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="comma-separated names (default: all)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    arguments = parser.parse_args()
    names = list(available) if arguments.models is None else arguments.models.split(",")
    unknown = [name for name in names if name not in available]
    if unknown:
        parser.error(f"unknown models: {', '.join(unknown)}")
    rows = []
    for name in names:
        row = measure(name, available[name])
        print(row, file=sys.stderr, flush=True)
        rows.append(row)
    command = "python benchmarks/memory_aware_order.py"
    if arguments.models is not None:
        command += f" --models {arguments.models}"
    write_section(arguments.output, table(rows, command))


if __name__ == "__main__":
    main()
