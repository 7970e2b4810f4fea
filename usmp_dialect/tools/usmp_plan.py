"""`usmp-plan`: plans a bare buffer problem read from a CSV or JSON file (SPEC §8), no IR.

    usmp-plan problem.csv [-o planned.csv] [--algorithm NAME] [--capacity BYTES]
              [--time-limit SECONDS] [--node-budget NODES] [--seed N]
              [--report report.json]

The plan goes to stdout (or `-o`); the last line on stderr states the peak, the lower bound,
whether the plan is proven optimal (a search stopped by its node budget or `--time-limit`
returns its best valid plan, "not proven optimal", and says which one stopped it), the time
and the algorithm. `-o` and `--report` are checked before
planning and written atomically only once the plan exists. Errors are one line
`usmp-plan: error: FILE:LINE: ...` and exit code 1; an internal error (a bug) is one line
`usmp-plan: internal error: ...` and exit code 2 (`USMP_DEBUG=1` adds the traceback).
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
from usmp_dialect.tools.internal_error import reported_as_one_line

PROGRAM = "usmp-plan"
PROGRESS_AFTER_S = 1.0
MAX_BYTES = 2**63 - 1
"""Sizes, capacities and interval ends must fit in a signed 64-bit integer (the planner's)."""
EXIT_STATUS_HELP = (
    "Exit status: 0 on success, 1 on a user error (one line 'usmp-plan: error: ...'), 2 on an "
    "internal error (please report it; USMP_DEBUG=1 prints the traceback)."
)


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
    if value > MAX_BYTES:
        raise argparse.ArgumentTypeError(f"'{text}' does not fit in 64 bits")
    return value


def _positive_int(text: str) -> int:
    value = _non_negative_int(text)
    if not value:
        raise argparse.ArgumentTypeError(f"'{text}' is not positive")
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
        epilog=EXIT_STATUS_HELP,
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
        "--node-budget",
        type=_positive_int,
        metavar="NODES",
        help="search nodes `exact` and `auto` may visit (default: set from --time-limit at a "
        "rate a loaded machine reaches, so that the plan does not depend on its load)",
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


def _summary(problem: Problem, result: PlanResult, time_limit_s: float) -> str:
    """The last stderr line: peak, lower bound, time, algorithm."""
    timing = f"{result.time_s:.2f} s, {result.algorithm}"
    stopped = ""
    if result.limit_reached:
        stopped = f", search stopped at {result.stop_phrase(time_limit_s)}"
    if len(problem.pools) == 1:
        peak, bound = result.pool_sizes[0], result.lower_bounds[0]
        if result.proven_optimal:
            quality = "optimal"
        else:
            gap = f"gap {100.0 * (peak - bound) / bound:.1f}%" if bound else "gap unknown"
            quality = f"not proven optimal: {gap}{stopped}"
        return f"peak {peak} B, lower bound {bound} B ({quality}), {timing}"
    peaks = ", ".join(
        f"{pool.name} {size} B" for pool, size in zip(problem.pools, result.pool_sizes, strict=True)
    )
    bounds = ", ".join(f"{bound} B" for bound in result.lower_bounds)
    quality = "optimal" if result.proven_optimal else f"not proven optimal{stopped}"
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


def _check_output(path: str | None, what: str) -> None:
    """Fails before planning when an output file cannot be written."""
    if path is None:
        return
    try:
        # Imported here (as below): tempfile is a noticeable share of a small run's start-up.
        from usmp_dialect.tools.output_file import check_writable

        check_writable(path)
    except OSError as error:
        raise UsageError(f"cannot write {what} '{path}': {error.strerror}") from None


def _write(path: str, text: str, what: str) -> None:
    try:
        from usmp_dialect.tools.output_file import write_text_atomically

        write_text_atomically(path, text)
    except OSError as error:
        raise UsageError(f"cannot write {what} '{path}': {error.strerror}") from None


def _check_fits(problem: Problem, source: str) -> None:
    """Fails clearly on numbers too large for the planner (instead of an overflow inside it)."""
    for buffer in problem.buffers:
        numbers = [("size", buffer.size_bytes), ("alignment", buffer.alignment)]
        numbers += [("live interval end", end) for interval in buffer.live for end in interval]
        for what, value in numbers:
            if abs(value) > MAX_BYTES:
                raise UsageError(
                    f"{source}: buffer '{buffer.name}': {what} {value} does not fit in 64 bits"
                )
    for pool in problem.pools:
        if pool.capacity_bytes is not None and pool.capacity_bytes > MAX_BYTES:
            raise UsageError(
                f"{source}: pool '{pool.name}': size_hint_bytes {pool.capacity_bytes} does not "
                "fit in 64 bits"
            )


def _check_capacities(problem: Problem, source: str) -> None:
    """Fails clearly when the pools' capacities cannot possibly hold the buffers."""
    for buffer in problem.buffers:
        capacities = [problem.pools[index].capacity_bytes for index in buffer.pools]
        if capacities and all(cap is not None and cap < buffer.size_bytes for cap in capacities):
            room = ", ".join(
                f"'{problem.pools[index].name}' holds {cap} B"
                for index, cap in zip(buffer.pools, capacities, strict=True)
            )
            raise UsageError(
                f"{source}: buffer '{buffer.name}' ({buffer.size_bytes} B) is larger than every "
                f"pool it may go to: {room}"
            )
    if len(problem.pools) == 1 and problem.pools[0].capacity_bytes is not None:
        capacity = problem.pools[0].capacity_bytes
        bound = lower_bound(problem)
        if bound > capacity:
            raise UsageError(
                f"{source}: the buffers cannot fit in {capacity} B: at least {bound} B are live "
                "together"
            )


def run(argv: Sequence[str] | None, stdout: TextIO, stderr: TextIO) -> int:
    args = build_parser().parse_args(argv)
    _check_output(args.output, "output file")
    _check_output(args.report, "report file")
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
    _check_fits(problem, source)
    if args.capacity is not None:
        problem = with_capacity(problem, args.capacity)
    _check_capacities(problem, source)
    options = PlanOptions(
        time_limit_s=args.time_limit,
        seed=args.seed,
        progress=_progress_printer(stderr),
        node_budget=args.node_budget,
    )
    try:
        result = solve(problem, algorithm, options)
    except (ProblemError, PlanningError) as error:
        raise UsageError(f"{source}: {error}") from None
    plan_text = write_plan(loaded, problem, result.plan, result.pool_sizes)
    if args.report:
        report = plan_report(problem, result, source, args.seed, lower_bound(problem))
        _write(args.report, dump_json(report), "report file")
    if args.output:
        _write(args.output, plan_text, "output file")
    else:
        stdout.write(plan_text)
        stdout.flush()
    print(_summary(problem, result, args.time_limit), file=stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> NoReturn:
    with reported_as_one_line(PROGRAM):
        try:
            status = run(argv, sys.stdout, sys.stderr)
        except UsageError as error:
            print(f"{PROGRAM}: error: {error}", file=sys.stderr)
            status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
