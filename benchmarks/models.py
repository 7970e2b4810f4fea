"""Memory and compile time of real and generated TFLite models through `usmp-opt ... -t c`.

Run by hand (not in CI), from the checkout with the virtualenv active (`pip install -e '.[test]'`):

    python benchmarks/models.py                     # examples/mlperf_tiny/*.tflite + mobilenetv2
    python benchmarks/models.py --models kws_ref_model,mobilenetv2 --time-limit 10
    python benchmarks/models.py --models path/to/model.tflite
    python benchmarks/models.py --hill-climb-time-limit 600    # let hill_climb finish its attempts

A model is a `.tflite` path, the name of one in examples/mlperf_tiny (the real MLPerf Tiny
models), or `mobilenetv2`: `usmp_dialect.models.build("mobilenetv2", seed=0)` (1.0, 224x224,
1000 classes, random weights; `python -m usmp_dialect.models mobilenetv2 -o FILE` writes the
same file). Each is compiled with the pipeline of the README:
`usmp-import-memref,convert-linalg-to-loops,usmp{algorithm=auto time-limit=T report=...}`
(U1: the model's inputs and outputs are outside the workspace; `benchmarks/tflite_models.py`
counts them inside, as TFLM does, and compares with TFLM). Each model runs in a fresh
subprocess (its peak RSS is its own). Inside it:

* Memory. The module after import and lowering is cloned; on the clone, the planning problem is
  built exactly as `usmp-plan` builds it (`usmp-assign-pools`, the liveness analysis,
  `build_problem`), then every compared algorithm plans it through `planning.solve`. Workspace
  peak = the size of the workspace pool; the lower bound is the one `solve` proves for that pool
  (a max-clique of live bytes, the `lower_bound_bytes` of the plan report), next to the
  analysis' memory pressure. `no_reuse` (no two buffers share a byte) is the unplanned program.
* Time. The real pipeline runs in-process through xDSL's own APIs, the steps timed apart as
  `usmp-opt` runs them: the TFLite frontend (`usmp-opt`'s own, reading the flatbuffer and
  building the IR), the module verification that `usmp-opt` does before the passes and after
  each pass, `usmp-import-memref` + `convert-linalg-to-loops`, the `usmp` pass (assign pools,
  analysis, plan with `auto`, write the JSON report, convert to pool offsets; the planning
  share is the report's `plan_time_s`), and `CTarget.emit` (`-t c`). Its report is checked
  against the `auto` row of the memory table.
* `--svg-model` (default kws_ref_model): `usmp-plan{algorithm=auto svg=...}` on the clone
  writes the memory map to `benchmarks/results/NAME_memory_map.svg`.

Writes the Markdown tables to `benchmarks/results/models.md` (or `--output`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from io import BytesIO, StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = Path(__file__).parent / "results"
REAL_MODELS_DIR = ROOT / "examples" / "mlperf_tiny"
GENERATED = "mobilenetv2"
ALGORITHMS = (
    "no_reuse",
    "greedy_by_size",
    "greedy_by_conflicts",
    "hill_climb",
    "auto",
    "portfolio",
)
TVM_ALGORITHMS = ("greedy_by_size", "greedy_by_conflicts", "hill_climb")
LOWERING = "usmp-import-memref,convert-linalg-to-loops"


@dataclass(frozen=True)
class AlgorithmRow:
    """One algorithm's plan of one model."""

    algorithm: str
    workspace_bytes: int
    constant_pool_bytes: int
    time_s: float
    proven_optimal: bool


@dataclass
class ModelResult:
    """Everything the tables show for one model."""

    model: str
    input_bytes: int
    workspace_buffers: int
    constant_buffers: int
    workspace_buffer_bytes: int
    """Sum of the workspace buffers' sizes (no alignment padding)."""
    constant_buffer_bytes: int
    memory_pressure_bytes: int
    lower_bound_bytes: int
    constant_lower_bound_bytes: int
    rows: list[AlgorithmRow] = field(default_factory=list)
    times_s: dict[str, float] = field(default_factory=dict)
    report_matches_auto: bool = False
    c_bytes: int = 0
    peak_rss_mb: float = 0.0


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pool_indices(pools: list[Any]) -> tuple[int, int]:
    """(workspace pool, constant pool) indices; the models declare no pools, so planning makes
    exactly one of each (SPEC §3.2, U1)."""
    kinds = [pool.KIND for pool in pools]
    if kinds.count("workspace") != 1 or kinds.count("constant") != 1:
        raise SystemExit(f"expected one workspace and one constant pool, got {kinds}")
    return kinds.index("workspace"), kinds.index("constant")


def measure_model(
    model: Path,
    algorithms: tuple[str, ...] = ALGORITHMS,
    time_limit_s: float = 10.0,
    hill_climb_time_limit_s: float = 600.0,
    svg_path: Path | None = None,
    seed: int = 0,
) -> ModelResult:
    """Plans the `.tflite` file `model` with every algorithm and times the `usmp-opt` pipeline
    (see the module doc). `auto` always runs (the timed pipeline uses it)."""
    from usmp_dialect.backend.c.target import CTarget
    from usmp_dialect.dialects.pool import module_pools
    from usmp_dialect.passes.assign_pools import UsmpAssignPoolsPass
    from usmp_dialect.passes.extract_buffer_info import analyse
    from usmp_dialect.passes.plan import UsmpPlanPass, build_problem
    from usmp_dialect.planning import PlanOptions, solve
    from usmp_dialect.tools.usmp_opt import UsmpOptMain

    name = model.stem
    data = model.read_bytes()
    with tempfile.TemporaryDirectory(prefix="usmp_models_") as workdir:
        report_path = Path(workdir) / "plan.json"
        spec = f'{LOWERING},usmp{{algorithm=auto time-limit={time_limit_s} report="{report_path}"}}'
        driver = UsmpOptMain(args=[str(model), "-p", spec, "-t", "c"])
        frontend = driver.available_frontends[model.suffix.lstrip(".")]
        ctx = driver.ctx
        passes = driver.pipeline.passes
        if [p.name for p in passes] != ["usmp-import-memref", "convert-linalg-to-loops", "usmp"]:
            raise SystemExit(f"unexpected pipeline: {[p.name for p in passes]}")
        times: dict[str, float] = {"verify": 0.0}

        def verify(module: Any) -> None:
            started = time.perf_counter()
            module.verify()
            times["verify"] += time.perf_counter() - started

        started = time.perf_counter()
        module = frontend(BytesIO(data))
        times["frontend"] = time.perf_counter() - started
        verify(module)
        started = time.perf_counter()
        passes[0].apply(ctx, module)
        times["import"] = time.perf_counter() - started
        verify(module)
        started = time.perf_counter()
        passes[1].apply(ctx, module)
        times["lowering"] = time.perf_counter() - started
        verify(module)

        # Memory: every algorithm on the problem usmp-plan builds (on a clone, untimed).
        lowered = module.clone()
        UsmpAssignPoolsPass().apply(ctx, lowered)
        analysis = analyse(lowered, "main")
        pools = list(module_pools(lowered))
        workspace, constant = _pool_indices(pools)
        problem = build_problem(analysis, pools)
        kinds = [info.kind for info in analysis.buffers]
        sizes = [info.size_bytes for info in analysis.buffers]
        result = ModelResult(
            model=name,
            input_bytes=len(data),
            workspace_buffers=sum(kind != "constant" for kind in kinds),
            constant_buffers=kinds.count("constant"),
            workspace_buffer_bytes=sum(
                s for s, k in zip(sizes, kinds, strict=True) if k != "constant"
            ),
            constant_buffer_bytes=sum(
                s for s, k in zip(sizes, kinds, strict=True) if k == "constant"
            ),
            memory_pressure_bytes=analysis.memory_pressure_bytes,
            lower_bound_bytes=0,
            constant_lower_bound_bytes=0,
        )
        auto_sizes: tuple[int, ...] = ()
        for algorithm in dict.fromkeys((*algorithms, "auto")):
            limit = hill_climb_time_limit_s if algorithm == "hill_climb" else time_limit_s
            planned = solve(problem, algorithm, PlanOptions(time_limit_s=limit, seed=seed))
            if algorithm == "auto":
                auto_sizes = planned.pool_sizes
                result.lower_bound_bytes = planned.lower_bounds[workspace]
                result.constant_lower_bound_bytes = planned.lower_bounds[constant]
            if algorithm in algorithms:
                result.rows.append(
                    AlgorithmRow(
                        algorithm,
                        planned.pool_sizes[workspace],
                        planned.pool_sizes[constant],
                        planned.time_s,
                        planned.proven_optimal,
                    )
                )
            print(
                f"  {name} {algorithm}: {planned.pool_sizes[workspace]:,} bytes "
                f"(bound {planned.lower_bounds[workspace]:,}) in {planned.time_s:.2f} s",
                file=sys.stderr,
                flush=True,
            )
        if svg_path is not None:
            UsmpPlanPass(algorithm="auto", time_limit=time_limit_s, svg=str(svg_path)).apply(
                ctx, lowered
            )
        del lowered

        started = time.perf_counter()
        passes[2].apply(ctx, module)
        times["usmp"] = time.perf_counter() - started
        verify(module)
        started = time.perf_counter()
        output = StringIO()
        CTarget().emit(ctx, module, output)
        times["c_print"] = time.perf_counter() - started
        report = json.loads(report_path.read_text())
    times["planning"] = report["plan_time_s"]
    times["total"] = sum(
        times[key] for key in ("frontend", "verify", "import", "lowering", "usmp", "c_print")
    )
    result.times_s = times
    result.c_bytes = len(output.getvalue())
    report_sizes = {pool["name"]: pool["size_bytes"] for pool in report["pools"]}
    result.report_matches_auto = (
        report["memory_pressure_bytes"] == result.memory_pressure_bytes
        and [report_sizes[pool.pool_name] for pool in pools] == list(auto_sizes)
        and report["pools"][workspace]["lower_bound_bytes"] == result.lower_bound_bytes
    )
    result.peak_rss_mb = _max_rss_mb()
    return result


def _load_avg() -> str:
    return " ".join(f"{load:.1f}" for load in os.getloadavg())


def _run_worker(args: argparse.Namespace, model: Path) -> dict[str, Any]:
    command = [
        sys.executable,
        __file__,
        "--worker",
        str(model),
        "--algorithms",
        ",".join(args.algorithms),
        "--time-limit",
        str(args.time_limit),
        "--hill-climb-time-limit",
        str(args.hill_climb_time_limit),
    ]
    if model.stem == args.svg_model:
        command += ["--svg", str(args.output.parent / f"{model.stem}_memory_map.svg")]
    completed = subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True)
    data: dict[str, Any] = json.loads(completed.stdout)
    return data


def _cell(row: dict[str, Any], bound: int) -> str:
    ratio = row["workspace_bytes"] / bound if bound else float("nan")
    mark = " =" if row["workspace_bytes"] == bound else ""
    return f"{row['workspace_bytes']:,} ({ratio:.3f}{mark}, {row['time_s']:.2f} s)"


def _tables(results: list[dict[str, Any]], args: argparse.Namespace, loads: list[str]) -> str:
    algorithms = [a for a in ALGORITHMS if a in args.algorithms and a != "no_reuse"]
    lines = [
        "# TFLite models: memory and `usmp-opt` time",
        "",
        "Written by `python benchmarks/models.py` (see its docstring for the method). Models: "
        "the MLPerf Tiny reference models of `examples/mlperf_tiny` and the generated "
        "`mobilenetv2` (`python -m usmp_dialect.models mobilenetv2`: 1.0, 224x224, 1000 classes, "
        "int8, random weights, seed 0). Pipeline: "
        f"`usmp-opt MODEL.tflite -p '{LOWERING},usmp' -t c` (U1: the model's inputs and "
        "outputs are outside the workspace; against TFLM's arena, with them inside: "
        "`tflite_models.md`).",
        "",
        "## Workspace memory",
        "",
        "Bytes of the workspace pool (all intermediate tensors and operator scratch buffers, "
        "planned together). Cells: peak bytes (peak / lower bound, `=` when equal, planning "
        "time). *no sharing* = `no_reuse` (every buffer its own aligned bytes; the unplanned "
        "program), with the plain sum of buffer sizes. *lower bound* = the bound `solve` proves "
        "(the report's `lower_bound_bytes`), *pressure* = the analysis' peak of live bytes "
        "(`memory_pressure_bytes`). TVM = Apache TVM USMP's algorithms as reproduced in "
        "`usmp_dialect/planning/tvm.py`.",
        "",
        "| model | buffers | no sharing (sum) | pressure | lower bound | "
        + " | ".join(f"{a} (TVM)" if a in TVM_ALGORITHMS else f"{a} (ours)" for a in algorithms)
        + " |",
        "|---|---:|---:|---:|---:|" + "---:|" * len(algorithms),
    ]
    for r in results:
        rows = {row["algorithm"]: row for row in r["rows"]}
        bound = r["lower_bound_bytes"]
        no_reuse = rows.get("no_reuse")
        no_sharing = (
            f"{no_reuse['workspace_bytes']:,} ({r['workspace_buffer_bytes']:,})"
            if no_reuse
            else f"({r['workspace_buffer_bytes']:,})"
        )
        cells = [
            r["model"],
            f"{r['workspace_buffers']:,}",
            no_sharing,
            f"{r['memory_pressure_bytes']:,}",
            f"{bound:,}",
            *(_cell(rows[a], bound) if a in rows else "—" for a in algorithms),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Constants",
        "",
        "Weights, biases and requantisation tables, in the constant pool (all constants are live "
        "for the whole run, so they never share bytes; the pool adds alignment padding between "
        "them).",
        "",
        "| model | constant buffers | constant bytes (sum) | constant pool lower bound | "
        "constant pool, auto | constant pool, no_reuse |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows = {row["algorithm"]: row for row in r["rows"]}
        auto_pool = rows["auto"]["constant_pool_bytes"] if "auto" in rows else None
        no_reuse_pool = rows["no_reuse"]["constant_pool_bytes"] if "no_reuse" in rows else None
        lines.append(
            f"| {r['model']} | {r['constant_buffers']:,} | {r['constant_buffer_bytes']:,} | "
            f"{r['constant_lower_bound_bytes']:,} | "
            + (f"{auto_pool:,}" if auto_pool is not None else "—")
            + " | "
            + (f"{no_reuse_pool:,}" if no_reuse_pool is not None else "—")
            + " |"
        )
    lines += [
        "",
        "## `usmp-opt` time",
        "",
        "Seconds, one run in-process through xDSL's APIs (`usmp-opt`'s TFLite frontend, the "
        "passes of "
        "`usmp-opt`'s own `PassPipeline`, `CTarget.emit`). *verify* = the module verifications "
        "`usmp-opt` runs before the passes and after each pass; *frontend* = reading the "
        "flatbuffer and building the IR; *import + lowering* = "
        "`usmp-import-memref` + `convert-linalg-to-loops`; *usmp* = the whole `usmp` pass with "
        "`algorithm=auto` (of which *planning* is the report's `plan_time_s`).",
        "",
        "| model | model KB | frontend | verify | import + lowering | usmp (planning) | C print "
        "| total | C KB | peak RSS MB | report = auto row |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        t = r["times_s"]
        lines.append(
            f"| {r['model']} | {r['input_bytes'] / 1024:,.0f} | {t['frontend']:.2f} | "
            f"{t['verify']:.2f} | {t['import'] + t['lowering']:.2f} "
            f"({t['import']:.2f} + {t['lowering']:.2f}) | {t['usmp']:.2f} ({t['planning']:.2f}) "
            f"| {t['c_print']:.2f} | {t['total']:.2f} | {r['c_bytes'] / 1024:,.0f} | "
            f"{r['peak_rss_mb']:,.0f} | {'yes' if r['report_matches_auto'] else 'NO'} |"
        )
    at_bound = {
        algorithm: [
            r["model"]
            for r in results
            for row in r["rows"]
            if row["algorithm"] == algorithm and row["workspace_bytes"] == r["lower_bound_bytes"]
        ]
        for algorithm in algorithms
    }
    ran = ", ".join(r["model"] for r in results)
    # auto stops early only when every pool (the constant pool too) is at its lower bound.
    auto_to_limit = [
        r["model"]
        for r in results
        for row in r["rows"]
        if row["algorithm"] == "auto"
        and row["time_s"] >= 0.95 * args.time_limit
        and row["workspace_bytes"] == r["lower_bound_bytes"]
        and row["constant_pool_bytes"] > r["constant_lower_bound_bytes"]
    ]
    lines += [
        "",
        "## Notes",
        "",
        f"* Workspace at the lower bound (models: {ran}):",
        *(
            f"  * {algorithm}: {', '.join(models) or 'none'}"
            for algorithm, models in at_bound.items()
        ),
        f"* Time limits: {args.time_limit:g} s for every algorithm (the `usmp-plan` default; "
        "only `auto` and `hill_climb` search until a limit), "
        f"{args.hill_climb_time_limit:g} s for `hill_climb` (TVM's 500 attempts, or the lower "
        "bound, usually end it first). Seed 0.",
        *(
            [
                f"* auto ran to its time limit on {', '.join(auto_to_limit)} although its "
                "workspace plan is at the lower bound: it stops early only when every pool is at "
                "its bound, and the constant pool's bound (the sum of the constants' sizes) "
                "leaves out the alignment padding between constants, so the exact search spends "
                "the rest of the time on a gap that the padding may make impossible to close."
            ]
            if auto_to_limit
            else []
        ),
        "* The machine is shared (2 cores, other jobs running): load average "
        + "; ".join(loads)
        + " (1/5/15 min, before each model). Times are one run each, not medians: compare "
        "them within a row, not across machines.",
        "",
    ]
    return "\n".join(lines)


def default_models() -> list[str]:
    """Every real model of examples/mlperf_tiny, then the generated MobileNetV2."""
    return [path.stem for path in sorted(REAL_MODELS_DIR.glob("*.tflite"))] + [GENERATED]


def resolve_model(name: str, directory: Path) -> Path:
    """The `.tflite` file of `name`: a path, a model of examples/mlperf_tiny, or the generated
    MobileNetV2 (written into `directory`)."""
    if name == GENERATED:
        from usmp_dialect.models import build

        path = directory / f"{GENERATED}.tflite"
        path.write_bytes(build(GENERATED, seed=0).tflite)
        return path
    path = Path(name)
    if path.suffix == ".tflite" and path.is_file():
        return path
    real = REAL_MODELS_DIR / f"{name}.tflite"
    if real.is_file():
        return real
    raise SystemExit(
        f"error: unknown model '{name}' (a .tflite file, {GENERATED}, or one of: "
        f"{', '.join(default_models()[:-1])})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(default_models()))
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
    parser.add_argument("--time-limit", type=float, default=10.0)
    parser.add_argument("--hill-climb-time-limit", type=float, default=600.0)
    parser.add_argument(
        "--svg-model", default="kws_ref_model", help="model whose memory map is written"
    )
    parser.add_argument("--output", type=Path, default=RESULTS_DIR / "models.md")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--svg", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.algorithms = tuple(a for a in args.algorithms.split(",") if a)
    unknown = sorted(set(args.algorithms) - set(ALGORITHMS))
    if unknown:
        parser.error(f"unknown algorithms {unknown} (compared: {', '.join(ALGORITHMS)})")
    if args.worker:
        measured = measure_model(
            args.worker,
            args.algorithms,
            args.time_limit,
            args.hill_climb_time_limit,
            args.svg,
        )
        print(json.dumps(asdict(measured)))
        return
    results: list[dict[str, Any]] = []
    loads: list[str] = []
    with tempfile.TemporaryDirectory(prefix="usmp_models_") as scratch:
        models = [resolve_model(name, Path(scratch)) for name in args.models.split(",")]
        for model in models:
            loads.append(f"{model.stem} {_load_avg()}")
            print(f"{model.stem} (load {_load_avg()})", file=sys.stderr, flush=True)
            results.append(_run_worker(args, model))
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(_tables(results, args, loads))
    print(args.output.read_text())


if __name__ == "__main__":
    main()
