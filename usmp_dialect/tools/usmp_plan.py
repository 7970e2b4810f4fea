"""`usmp-plan`: plans a bare buffer problem read from a CSV or JSON file (SPEC §8), no IR.

    usmp-plan problem.csv [-o planned.csv] [--algorithm NAME] [--capacity BYTES]
              [--time-limit SECONDS] [--seed N] [--report report.json]

The plan goes to stdout (or `-o`, written only on success); the last line on stderr states the
peak, the lower bound, the time and the algorithm. Errors are one line
`usmp-plan: error: FILE:LINE: ...` and exit code 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from usmp_dialect.planning import ALGORITHMS, PlanningError, PlanOptions, ProblemError, solve
from usmp_dialect.planning.io import (
    InputError,
    dump_json,
    plan_report,
    read_problem,
    with_capacity,
    write_plan,
)
from usmp_dialect.planning.problem import PlanResult, Problem, lower_bound

PROGRAM = "usmp-plan"
PROGRESS_AFTER_S = 1.0


class UsageError(Exception):
    """A bad command line or input: printed as one line, exit code 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {PROGRAM} --help)")


def default_algorithm() -> str:
    """`auto` (SPEC); `greedy_by_size` while no `auto` algorithm is registered."""
    return "auto" if "auto" in ALGORITHMS else "greedy_by_size"


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"'{text}' is negative")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive number of seconds")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROGRAM,
        description="Plan a static memory layout for buffers read from a minimalloc-style CSV "
        "(id,lower,upper,size[,alignment]) or a JSON problem.",
    )
    parser.add_argument("input", help="problem file (CSV or JSON; '-' reads stdin)")
    parser.add_argument(
        "-o", "--output", help="write the plan here instead of stdout (only on success)"
    )
    parser.add_argument(
        "--algorithm",
        default=None,
        help=f"planning algorithm, one of: {', '.join(sorted(ALGORITHMS))} "
        f"(default: {default_algorithm()})",
    )
    parser.add_argument(
        "--capacity",
        type=_non_negative_int,
        metavar="BYTES",
        help="hard size limit of the pool (JSON: of every pool); fails when it cannot fit",
    )
    parser.add_argument(
        "--time-limit",
        type=_positive_seconds,
        default=10.0,
        metavar="SECONDS",
        help="time budget of searching algorithms (default: 10)",
    )
    parser.add_argument(
        "--seed",
        type=_non_negative_int,
        default=0,
        help="seed of randomised algorithms (default: 0)",
    )
    parser.add_argument("--report", metavar="PATH", help="write a JSON report of the plan here")
    return parser


def _progress_printer(stream: TextIO) -> Callable[[str], None]:
    """Prints algorithm progress once the search has run a second, at most once a second."""
    started = time.monotonic()
    last_printed = started

    def report(message: str) -> None:
        nonlocal last_printed
        now = time.monotonic()
        if now - started >= PROGRESS_AFTER_S and now - last_printed >= PROGRESS_AFTER_S:
            last_printed = now
            print(f"{PROGRAM}: {message}", file=stream, flush=True)

    return report


def _summary(problem: Problem, result: PlanResult) -> str:
    """The last stderr line: peak, lower bound, time, algorithm."""
    timing = f"{result.time_s:.2f} s, {result.algorithm}"
    if len(problem.pools) == 1:
        peak, bound = result.pool_sizes[0], result.lower_bounds[0]
        if result.proven_optimal:
            quality = "optimal"
        else:
            quality = f"gap {100.0 * (peak - bound) / bound:.1f}%" if bound else "gap unknown"
        return f"peak {peak} B, lower bound {bound} B ({quality}), {timing}"
    peaks = ", ".join(
        f"{pool.name} {size} B" for pool, size in zip(problem.pools, result.pool_sizes, strict=True)
    )
    bounds = ", ".join(f"{bound} B" for bound in result.lower_bounds)
    quality = "optimal" if result.proven_optimal else "not proven optimal"
    return f"peak {peaks}; lower bounds {bounds} ({quality} for this pool assignment), {timing}"


def _read_input(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(encoding="utf-8"), path
    except FileNotFoundError:
        raise UsageError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not UTF-8 text") from None
    except OSError as error:
        raise UsageError(f"{path}: {error.strerror}") from None


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{path}: cannot write: {error.strerror}") from None


def run(argv: Sequence[str] | None, stdout: TextIO, stderr: TextIO) -> int:
    args = build_parser().parse_args(argv)
    algorithm = args.algorithm or default_algorithm()
    if algorithm not in ALGORITHMS:
        raise UsageError(
            f"unknown algorithm '{algorithm}' (known: {', '.join(sorted(ALGORITHMS))})"
        )
    text, source = _read_input(args.input)
    try:
        loaded = read_problem(text, source)
    except InputError as error:
        raise UsageError(str(error)) from None
    for note in loaded.notes:
        print(f"{PROGRAM}: note: {note}", file=stderr)
    problem = loaded.problem
    if args.capacity is not None:
        problem = with_capacity(problem, args.capacity)
        if len(problem.pools) == 1:
            bound = lower_bound(problem)
            if bound > args.capacity:
                raise UsageError(
                    f"{source}: the buffers cannot fit in {args.capacity} B: at least "
                    f"{bound} B are live together"
                )
    options = PlanOptions(
        time_limit_s=args.time_limit, seed=args.seed, progress=_progress_printer(stderr)
    )
    try:
        result = solve(problem, algorithm, options)
    except (ProblemError, PlanningError) as error:
        raise UsageError(f"{source}: {error}") from None
    plan_text = write_plan(loaded, problem, result.plan, result.pool_sizes)
    if args.report:
        report = plan_report(problem, result, source, args.seed, lower_bound(problem))
        _write(args.report, dump_json(report))
    if args.output:
        _write(args.output, plan_text)
    else:
        stdout.write(plan_text)
        stdout.flush()
    print(_summary(problem, result), file=stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    try:
        status = run(argv, sys.stdout, sys.stderr)
    except UsageError as error:
        print(f"{PROGRAM}: error: {error}", file=sys.stderr)
        status = 1
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly, as Unix tools do.
        sys.stderr.close()
        status = 1
    except KeyboardInterrupt:
        print(f"{PROGRAM}: interrupted", file=sys.stderr)
        status = 130
    sys.exit(status)


if __name__ == "__main__":
    main()
