"""Plan quality benchmark: every instance of the shared data set x every planning algorithm.

Run by hand (not in CI), from the checkout with the virtualenv active:

    python benchmarks/plan_quality.py                       # everything, default limits
    python benchmarks/plan_quality.py --only mlperf --only iree
    python benchmarks/plan_quality.py --algorithms auto,portfolio --time-limit 10
    python benchmarks/plan_quality.py --repeat 5 --only challenging --time-limit 10

Writes a Markdown table to benchmarks/results/plan_quality.md (rewritten after every instance,
so an interrupted run still leaves its rows): per instance the number of buffers, the lower
bound L (max live bytes), the best known peak from the data set's index files, and per
algorithm its peak, peak / L and time.

MiniMalloc's challenging instances are run as published: at their capacity (1,048,576, from the
file name) for `exact` and `auto`, which then answer MiniMalloc's decision problem; the other
algorithms run without a capacity (with it they would simply fail) so that their peak shows.

`--repeat N` measures instead how repeatable the default planner is: N runs of the `usmp-plan`
command (`auto`, `--time-limit`) per instance, one at a time and then N times two at once (both
cores busy, as on a loaded CI machine), at the published capacity and without one, reporting
the median and the worst peak and time. It rewrites only its own section of the results file.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from usmp_dialect.planning import ALGORITHMS, PlanningError, PlanOptions, solve
from usmp_dialect.planning.io import read_csv_problem, with_capacity
from usmp_dialect.planning.problem import Problem, lower_bound

DATA = Path(__file__).resolve().parents[1] / "data"
RESULTS = Path(__file__).parent / "results" / "plan_quality.md"


@dataclass(frozen=True)
class Instance:
    path: Path
    name: str
    best_known: int | None
    capacity: int | None


@dataclass(frozen=True)
class Outcome:
    peak: int | None
    time_s: float
    note: str = ""


def best_known_peaks() -> dict[str, int]:
    """Best known peak per instance file (relative to DATA), from the two index files."""
    known: dict[str, int] = {}
    with open(DATA / "minimalloc" / "INDEX.csv") as index:
        for row in csv.DictReader(index):
            known["minimalloc/" + row["instance"]] = int(row["optimum_or_best_known_peak"])
    with open(DATA / "REAL_INSTANCES_INDEX.csv") as index:
        for row in csv.DictReader(index):
            bound = int(row["lower_bound_maxload"])
            candidates = [int(row["best_simple_greedy_peak"])]
            result = row["minimalloc_result"]
            if result.startswith("optimal"):
                candidates.append(bound)
            candidates += [
                int(n.replace(",", ""))
                for n in re.findall(r"\d[\d,]{6,}", result)
                if int(n.replace(",", "")) >= bound
            ]
            known[row["file"]] = min(candidates)
    return known


def instances(only: list[str]) -> list[Instance]:
    known = best_known_peaks()
    found = []
    for path in sorted(DATA.rglob("*.csv")):
        name = str(path.relative_to(DATA))
        if "INDEX" in path.name or (only and not any(o in name for o in only)):
            continue
        match = re.fullmatch(r"[A-K]\.(\d+)\.csv", path.name)
        capacity = int(match.group(1)) if match and "challenging" in name else None
        found.append(Instance(path, name, known.get(name), capacity))
    # Small instances first: quick feedback, and an interrupted run keeps the cheap rows.
    return sorted(found, key=lambda i: (i.path.stat().st_size, i.name))


def run(problem: Problem, algorithm: str, time_limit_s: float) -> Outcome:
    started = time.perf_counter()
    try:
        result = solve(problem, algorithm, PlanOptions(time_limit_s=time_limit_s))
    except PlanningError as error:
        return Outcome(None, time.perf_counter() - started, str(error)[:60])
    note = "optimal" if result.proven_optimal else ""
    return Outcome(sum(result.pool_sizes), time.perf_counter() - started, note)


def cell(outcome: Outcome | str, bound: int) -> str:
    if isinstance(outcome, str):
        return outcome
    if outcome.peak is None:
        return f"no plan ({outcome.time_s:.1f} s)"
    gap = 100.0 * (outcome.peak - bound) / bound if bound else 0.0
    mark = " ✓" if outcome.note == "optimal" else ""
    return f"{outcome.peak:,} (+{gap:.3f} %, {outcome.time_s:.2f} s){mark}"


REPEAT_BEGIN = "<!-- repeat: benchmarks/plan_quality.py --repeat -->"
REPEAT_END = "<!-- /repeat -->"
SUMMARY = re.compile(r"^peak (\d+) B, .*, ([0-9.]+) s, \w+$")


def repeat_section(output: Path) -> str:
    """The repeatability section of `output` (kept when the main table is rewritten)."""
    text = output.read_text() if output.exists() else ""
    if REPEAT_BEGIN not in text:
        return ""
    return text[text.index(REPEAT_BEGIN) : text.index(REPEAT_END) + len(REPEAT_END)]


def write_table(rows: list[list[str]], algorithms: list[str], settings: str, output: Path) -> None:
    header = ["instance", "buffers", "lower bound L", "best known", *algorithms]
    lines = [
        "# Plan quality",
        "",
        f"Generated by `benchmarks/plan_quality.py` ({settings}).",
        "",
        "Cells: peak bytes (peak / L - 1, time); ✓ = proven optimal by the algorithm "
        "(peak = L, or search exhausted). Challenging instances: `exact`/`auto` run at the "
        "published capacity 1,048,576; the other algorithms without a capacity.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    repeat = repeat_section(output)
    if repeat:
        lines += ["", repeat]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines) + "\n")


@dataclass(frozen=True)
class Run:
    peak: int
    time_s: float
    budget: bool
    """The node budget (not the clock) stopped the search."""


def plan_command(path: Path, time_limit_s: float, capacity: int | None) -> list[str]:
    command = [sys.executable, "-m", "usmp_dialect.tools.usmp_plan", str(path)]
    command += ["--time-limit", f"{time_limit_s:g}", "-o", os.devnull]
    return command + (["--capacity", str(capacity)] if capacity else [])


def run_together(commands: list[list[str]]) -> list[Run]:
    """Runs the commands at once; each one's peak and time from its last stderr line."""
    processes = [
        subprocess.Popen(command, stderr=subprocess.PIPE, text=True) for command in commands
    ]
    runs = []
    for process in processes:
        _, stderr = process.communicate()
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        match = SUMMARY.match(last)
        if process.returncode or not match:
            raise RuntimeError(f"usmp-plan failed: {last}")
        budget = "stopped at its node budget" in last
        runs.append(Run(int(match.group(1)), float(match.group(2)), budget))
    return runs


def runs_cell(runs: list[Run], bound: int) -> str:
    peaks = sorted(run.peak for run in runs)
    worst = peaks[-1]
    median = int(statistics.median_low(peaks))
    times = [run.time_s for run in runs]
    budget = sum(run.budget for run in runs)
    return (
        f"{median:,} / {worst:,} (+{100.0 * (worst - bound) / bound:.3f} %); "
        f"{statistics.median(times):.2f} / {max(times):.2f} s; budget {budget}/{len(runs)}"
    )


def repeat(args: argparse.Namespace) -> int:
    """The --repeat mode (see the module docstring)."""
    rows: list[list[str]] = []
    loads: list[float] = []
    for instance in instances(args.only):
        if any(skip in instance.name for skip in args.skip):
            continue
        problem = read_csv_problem(instance.path.read_text(), instance.name).problem
        bound = lower_bound(problem)
        known = f"{instance.best_known:,}" if instance.best_known else "—"
        row = [instance.name, f"{bound:,}", known]
        for capacity in (instance.capacity, None) if instance.capacity else (None,):
            loads.append(os.getloadavg()[0])
            command = plan_command(instance.path, args.time_limit, capacity)
            alone = [run for _ in range(args.repeat) for run in run_together([command])]
            pairs = [run for _ in range(args.repeat) for run in run_together([command, command])]
            row += [runs_cell(alone, bound), runs_cell(pairs, bound)]
            print(f"{instance.name} capacity {capacity}: {row[-2]} | {row[-1]}", file=sys.stderr)
        rows.append(row)
        write_repeat_section(rows, loads, args)  # an interrupted run keeps its rows
    return 0


def write_repeat_section(
    rows: list[list[str]], loads: list[float], args: argparse.Namespace
) -> None:
    header = [
        "instance",
        "lower bound L",
        "best known",
        "at capacity, alone",
        "at capacity, two at once",
        "no capacity, alone",
        "no capacity, two at once",
    ]
    lines = [
        REPEAT_BEGIN,
        "## Repeatability of `usmp-plan` (auto)",
        "",
        f"Generated by `benchmarks/plan_quality.py --repeat {args.repeat}` on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `--time-limit "
        f"{args.time_limit:g}`, with the native core: {args.repeat} runs one at a time, and "
        f"{args.repeat} times two runs at once (so {2 * args.repeat} results), at the "
        "published capacity (`--capacity 1048576`) and without one. The machine's 1-minute "
        f"load average before each group of runs: {min(loads):.1f}-{max(loads):.1f} "
        f"(median {statistics.median(loads):.1f}) on {os.cpu_count()} cores.",
        "",
        "Cells: median / worst peak (worst / L - 1); median / worst wall time; how many runs "
        "the node budget, not the clock, stopped (the rest proved their plan optimal, or ran "
        "into the clock).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines.append(REPEAT_END)
    section = "\n".join(lines)
    output: Path = args.output
    text = output.read_text() if output.exists() else ""
    old = repeat_section(output)
    text = text.replace(old, section) if old else text.rstrip("\n") + "\n\n" + section
    output.write_text(text.rstrip("\n") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="instance path substring")
    parser.add_argument("--skip", action="append", default=[], help="instance path substring")
    parser.add_argument("--max-buffers", type=int, default=None, help="skip larger instances")
    parser.add_argument("--output", type=Path, default=RESULTS, help="Markdown file to write")
    parser.add_argument("--algorithms", default="", help="comma-separated (default: all)")
    parser.add_argument(
        "--time-limit", type=float, default=10.0, help="seconds, searching algorithms"
    )
    parser.add_argument(
        "--challenging-time-limit", type=float, default=60.0, help="seconds on MiniMalloc A-K"
    )
    parser.add_argument(
        "--hill-climb-max-buffers", type=int, default=2000, help="skip hill_climb above this"
    )
    parser.add_argument(
        "--tvm-max-buffers", type=int, default=20000, help="skip TVM's greedy algorithms above"
    )
    parser.add_argument(
        "--repeat", type=int, default=0, help="repeatability of usmp-plan: N runs (see above)"
    )
    args = parser.parse_args(argv)
    if args.repeat:
        return repeat(args)
    algorithms = [a for a in args.algorithms.split(",") if a] or sorted(ALGORITHMS)
    settings = (
        f"time limit {args.time_limit:g} s, challenging {args.challenging_time_limit:g} s, "
        f"hill_climb up to {args.hill_climb_max_buffers} buffers, TVM greedy up to "
        f"{args.tvm_max_buffers}"
    )
    rows: list[list[str]] = []
    for instance in instances(args.only):
        if any(skip in instance.name for skip in args.skip):
            continue
        loaded = read_csv_problem(instance.path.read_text(), instance.name)
        problem = loaded.problem
        count = len(problem.buffers)
        if args.max_buffers is not None and count > args.max_buffers:
            continue
        bound = lower_bound(problem)
        row = [
            instance.name,
            f"{count:,}",
            f"{bound:,}",
            f"{instance.best_known:,}" if instance.best_known else "—",
        ]
        for algorithm in algorithms:
            if algorithm == "hill_climb" and count > args.hill_climb_max_buffers:
                row.append("skipped (size)")
                continue
            if algorithm in ("greedy_by_size", "greedy_by_conflicts") and (
                count > args.tvm_max_buffers
            ):
                row.append("skipped (size)")
                continue
            limit = args.challenging_time_limit if instance.capacity else args.time_limit
            target = problem
            if instance.capacity and algorithm in ("auto", "exact"):
                target = with_capacity(problem, instance.capacity)
            outcome = run(target, algorithm, limit)
            row.append(cell(outcome, bound))
            print(f"{instance.name} {algorithm}: {row[-1]}", file=sys.stderr, flush=True)
        rows.append(row)
        write_table(rows, algorithms, settings, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
