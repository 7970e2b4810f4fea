"""Speed and scale of the whole `usmp-opt model.mlir -p usmp -t c` flow.

Run by hand (not in CI), from the checkout with the virtualenv active:

    python benchmarks/pipeline_speed.py                          # 100, 500, 1000, 5000 calls
    python benchmarks/pipeline_speed.py --calls 100,1000 --repeat 5
    python benchmarks/pipeline_speed.py --algorithm auto --calls 1000

Programs come from `usmp_dialect.testing.bench_programs.operator_chain`: N operator calls, each
operator with a scratch buffer, the intermediates in `@main` (2 x N allocations; 5,000 calls
are the 10,000-allocation program). Each size runs in a fresh subprocess (so its peak RSS,
`resource.getrusage(...).ru_maxrss`, belongs to it alone); inside it, every repetition times,
side by side:

* xDSL: parse + verify + print the MLIR text of the same file (what `xdsl-opt file.mlir` does);
* the pipeline as `usmp-opt file.mlir -p usmp{...} -t c` runs it after parsing: verify, the
  `usmp` pass (by stage: create-io (workspace-io only), assign-pools, liveness analysis,
  planning algorithm, the rest of usmp-plan, convert-to-pool-offsets), verify, C emission.

Times are CPU times of the process (`time.process_time`): the machine is shared, and wall time
mostly measures the other users. The ratio is (pipeline after parsing) / (xDSL parse + verify
+ print), per repetition, and the table quotes medians; `ratio w/o verify` leaves the
verifications out of both sides (xDSL's `func.call` verifier looks its callee up linearly, so
verification alone is quadratic in the number of functions). Compare ratios, not absolute
times. Writes a
Markdown table to benchmarks/results/pipeline_speed.md (or `--output`).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import StringIO
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results" / "pipeline_speed.md"
DEFAULT_CALLS = (100, 500, 1000, 5000)

STAGES = (
    "parse",
    "verify_in",
    "assign_pools",
    "analysis",
    "planning",
    "plan_rest",
    "convert",
    "verify_out",
    "c_print",
)


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextmanager
def _patched(module: Any, name: str, timings: dict[str, float], key: str) -> Iterator[None]:
    """Replaces `module.name` by a wrapper adding its run time to `timings[key]`."""
    original: Callable[..., Any] = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            timings[key] = timings.get(key, 0.0) + time.process_time() - start

    setattr(module, name, timed)
    try:
        yield
    finally:
        setattr(module, name, original)


def _worker(path: str, algorithm: str, repeat: int) -> None:
    """Times one file (in a subprocess) and prints a JSON object on stdout."""
    from xdsl.parser import Parser
    from xdsl.printer import Printer

    import usmp_dialect.passes.plan as plan_module
    from usmp_dialect.backend.c.target import CTarget
    from usmp_dialect.passes.assign_pools import UsmpAssignPoolsPass
    from usmp_dialect.passes.usmp import UsmpPass
    from usmp_dialect.tools.symbol_index import indexed_symbol_lookup, stock_symbol_lookup
    from usmp_dialect.tools.usmp_opt import UsmpOptMain

    rss_start = _max_rss_mb()
    ctx = UsmpOptMain(args=[path, "-p", "usmp", "-t", "c"]).ctx
    text = Path(path).read_text()
    runs: list[dict[str, float]] = []
    c_chars = 0
    for _ in range(repeat):
        run: dict[str, float] = {}
        # xDSL alone: parse, verify, print.
        stock_symbol_lookup()
        start = time.process_time()
        module = Parser(ctx, text, path).parse_module()
        parsed = time.process_time()
        module.verify()
        verified = time.process_time()
        printed = StringIO()
        Printer(stream=printed).print_op(module)
        run["xdsl_parse_print"] = time.process_time() - start
        run["xdsl_verify"] = verified - parsed
        del module, printed

        # The usmp-opt flow, by stage (usmp-opt's main() indexes symbol lookups).
        indexed_symbol_lookup()
        start = time.process_time()
        module = Parser(ctx, text, path).parse_module()
        run["parse"] = time.process_time() - start
        start = time.process_time()
        module.verify()
        run["verify_in"] = time.process_time() - start

        timings: dict[str, float] = {}
        usmp = UsmpPass(algorithm=algorithm)
        start = time.process_time()
        with (
            _patched(UsmpAssignPoolsPass, "apply", timings, "assign_pools"),
            _patched(plan_module, "analyse", timings, "analysis"),
            _patched(plan_module, "solve", timings, "planning"),
            _patched(plan_module, "plan_module", timings, "plan"),
        ):
            from usmp_dialect.passes.convert_to_pool_offsets import (
                UsmpConvertToPoolOffsetsPass,
            )

            with _patched(UsmpConvertToPoolOffsetsPass, "apply", timings, "convert"):
                usmp.apply(ctx, module)
        run["usmp_pass"] = time.process_time() - start
        run["assign_pools"] = timings.get("assign_pools", 0.0)
        run["analysis"] = timings.get("analysis", 0.0)
        run["planning"] = timings.get("planning", 0.0)
        run["plan_rest"] = (
            timings.get("plan", 0.0) - run["assign_pools"] - run["analysis"] - run["planning"]
        )
        run["convert"] = timings.get("convert", 0.0)
        start = time.process_time()
        module.verify()
        run["verify_out"] = time.process_time() - start
        start = time.process_time()
        output = StringIO()
        CTarget().emit(ctx, module, output)
        run["c_print"] = time.process_time() - start
        c_chars = len(output.getvalue())
        run["pipeline"] = run["verify_in"] + run["usmp_pass"] + run["verify_out"] + run["c_print"]
        run["total"] = run["parse"] + run["pipeline"]
        run["ratio"] = run["pipeline"] / run["xdsl_parse_print"]
        run["ratio_no_verify"] = (run["usmp_pass"] + run["c_print"]) / (
            run["xdsl_parse_print"] - run["xdsl_verify"]
        )
        runs.append(run)
        del module, output
    medians = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    print(
        json.dumps(
            {
                "medians": medians,
                "ratios": [run["ratio"] for run in runs],
                "ratios_no_verify": [run["ratio_no_verify"] for run in runs],
                "rss_start_mb": rss_start,
                "rss_peak_mb": _max_rss_mb(),
                "input_bytes": len(text),
                "c_chars": c_chars,
            }
        )
    )


def _measure(calls: int, algorithm: str, repeat: int, workdir: Path) -> dict[str, Any]:
    from usmp_dialect.testing.bench_programs import operator_chain

    path = workdir / f"chain_{calls}.mlir"
    path.write_text(operator_chain(calls))
    command = [sys.executable, __file__, "--worker", str(path), "--algorithm", algorithm]
    command += ["--repeat", str(repeat)]
    completed = subprocess.run(
        command,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(completed.stdout)
    result["calls"] = calls
    return result


def _table(results: list[dict[str, Any]], algorithm: str, repeat: int) -> str:
    lines = [
        "# Pipeline speed: `usmp-opt model.mlir -p usmp -t c`",
        "",
        "Written by `python benchmarks/pipeline_speed.py` "
        f"(algorithm={algorithm}, {repeat} repetitions, medians in seconds).",
        "Programs: `usmp_dialect.testing.bench_programs.operator_chain(N)`: N operator calls, each",
        "operator with a scratch buffer, intermediates in `@main` (2 x N allocations).",
        "`xDSL` = parse + verify + print the same file; `pipeline` = verify + `usmp` + verify +",
        "C emission (everything usmp-opt does after parsing); ratio = pipeline / xDSL, median of",
        "the per-repetition ratios (both measured side by side in one process); ratio w/o verify =",
        "(usmp + C emission) / (xDSL parse + print). CPU seconds (`time.process_time`).",
        "",
        "| calls | allocs | input KB | xDSL | xDSL verify | parse | "
        + " | ".join(STAGES[1:])
        + " | pipeline | ratio | ratio w/o verify | peak RSS MB (start) |",
        "|" + "---:|" * (len(STAGES) + 9),
    ]
    for r in results:
        m = r["medians"]
        cells = [
            f"{r['calls']:,}",
            f"{2 * r['calls']:,}",
            f"{r['input_bytes'] / 1024:,.0f}",
            f"{m['xdsl_parse_print']:.2f}",
            f"{m['xdsl_verify']:.2f}",
            *(f"{m[stage]:.2f}" for stage in STAGES),
            f"{m['pipeline']:.2f}",
            f"{statistics.median(r['ratios']):.2f}",
            f"{statistics.median(r['ratios_no_verify']):.2f}",
            f"{r['rss_peak_mb']:.0f} ({r['rss_start_mb']:.0f})",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", default=",".join(map(str, DEFAULT_CALLS)))
    parser.add_argument("--algorithm", default="greedy_by_size")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "usmp_pipeline_speed"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker, args.algorithm, args.repeat)
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    for calls in (int(c) for c in args.calls.split(",")):
        results.append(_measure(calls, args.algorithm, args.repeat, args.workdir))
        table = _table(results, args.algorithm, args.repeat)
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(table)
        print(table.splitlines()[-1], flush=True)
    print(_table(results, args.algorithm, args.repeat))


if __name__ == "__main__":
    main()
