"""Differential testing at scale: thousands of generated programs, planned vs. no_reuse.

    python benchmarks/differential.py --count 2000 --seed-start 1000 --time-budget 1800

For each seed, generates a program (`usmp_dialect.testing.generator`), plans it with
`--per-program` algorithms (rotating over every registered one, or `--algorithms`) and with the
`no_reuse` reference, compiles and runs the C of each and compares the outputs
(`usmp_dialect.testing.harness`). Stops after `--count` programs or `--time-budget` seconds,
whichever comes first. A program with any finding (mismatch, pass or printer failure, gcc error,
sanitizer report) is saved to `test/differential/regressions/<seed>.mlir`, which
`test/differential/test_regressions.py` replays. Prints one line per finding and a summary;
exit code 1 when anything was found.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from usmp_dialect.testing.generator import generate_program
from usmp_dialect.testing.harness import (
    PendingProgram,
    ProgramReport,
    describe,
    gcc_path,
    planner_algorithms,
    rotate,
    start_differential,
)

REGRESSIONS = Path(__file__).resolve().parent.parent / "test" / "differential" / "regressions"


def save_regression(report: ProgramReport, text: str, directory: Path) -> Path:
    """Writes the failing program with its findings as comments (after the metadata line)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{report.seed}.mlir"
    metadata, rest = text.split("\n", 1)
    algorithms = sorted({f.algorithm for f in report.findings if f.algorithm not in ("-",)})
    notes = [f"// replay-algorithms: {','.join(algorithms)}"]
    for finding in report.findings:
        first_line = finding.detail.strip().splitlines()[0] if finding.detail.strip() else ""
        notes.append(f"// finding: [{finding.algorithm}] {finding.kind}: {first_line[:300]}")
    path.write_text("\n".join([metadata, *notes, rest]))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100, help="most programs to run")
    parser.add_argument("--seed-start", type=int, default=0, help="first seed")
    parser.add_argument("--time-budget", type=float, default=600.0, help="seconds")
    parser.add_argument(
        "--algorithms", default="", help="comma-separated (default: every one but no_reuse)"
    )
    parser.add_argument(
        "--per-program", type=int, default=3, help="algorithms per program (rotating)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="parallel gcc/run jobs")
    parser.add_argument("--workdir", type=Path, default=None, help="keep files here")
    parser.add_argument(
        "--regressions", type=Path, default=REGRESSIONS, help="where failing programs go"
    )
    args = parser.parse_args(argv)
    if gcc_path() is None:
        print("differential: error: gcc not found", file=sys.stderr)
        return 1
    algorithms = (
        [a for a in args.algorithms.split(",") if a] if args.algorithms else planner_algorithms()
    )
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="usmp-differential-"))
    started = time.perf_counter()
    kinds: Counter[str] = Counter()
    use_cases: Counter[str] = Counter()
    lowerings: Counter[str] = Counter()
    failing: list[int] = []
    done = 0
    last_seed = args.seed_start - 1
    pending: PendingProgram | None = None

    def collect(item: PendingProgram) -> None:
        nonlocal done, last_seed
        report = item.finish()
        done += 1
        last_seed = max(last_seed, report.seed)
        use_cases[report.use_case] += 1
        for algorithm in report.algorithms:
            lowerings[algorithm] += 1
        if report.findings:
            failing.append(report.seed)
            for finding in report.findings:
                kinds[finding.kind] += 1
            path = save_regression(report, item.program.text, args.regressions)
            print(describe(report.findings), flush=True)
            print(f"  saved {path} (files in {item.directory})", flush=True)

    with ThreadPoolExecutor(max_workers=args.jobs) as executor:
        for index in range(args.count):
            if time.perf_counter() - started > args.time_budget:
                break
            seed = args.seed_start + index
            program = generate_program(seed)
            chosen = rotate(algorithms, index, args.per_program)
            # Lower this program while the previous one compiles and runs.
            current = start_differential(program, chosen, executor, workdir)
            if pending is not None:
                collect(pending)
            pending = current
            if done and done % 25 == 0:
                elapsed = time.perf_counter() - started
                print(f"... {done} programs, {len(failing)} failing, {elapsed:.0f} s", flush=True)
        if pending is not None:
            collect(pending)
    elapsed = time.perf_counter() - started
    print(
        f"differential: {done} programs (seeds {args.seed_start}..{last_seed}), "
        f"{len(failing)} with findings, {elapsed:.0f} s"
    )
    print("  use cases: " + ", ".join(f"{k} {v}" for k, v in sorted(use_cases.items())))
    print("  lowerings: " + ", ".join(f"{k} {v}" for k, v in sorted(lowerings.items())))
    if kinds:
        print("  findings: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
        print("  failing seeds: " + " ".join(str(s) for s in failing))
    return 1 if failing else 0


if __name__ == "__main__":
    raise SystemExit(main())
