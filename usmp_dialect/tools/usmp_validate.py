"""`usmp-validate`: checks a model's generated C against the reference runtime (SPEC §14).

    usmp-validate MODEL [--inputs N] [--seed S] [--input NAME=file.npy ...] [--workspace-io]
                  [--tolerance T] [-v]

Compiles MODEL (`.tflite` or `.onnx`) with the README's pipeline, builds the C on the host
(`$CC`, else gcc or cc), runs it and the reference (TFLM; LiteRT where TFLM refuses the model;
onnxruntime for ONNX) on the same inputs and prints one line per output (`bit-exact` for
integer outputs, the largest absolute and relative error for float ones), our workspace
against TFLM's arena, and PASS or FAIL. Exit status: 0 when every output passes, 1 when one
does not or on a user error (one line `usmp-validate: error: ...`), 2 on an internal error.
The logic is `usmp_dialect.validation.validate`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

import numpy as np

from usmp_dialect.tools.internal_error import reported_as_one_line
from usmp_dialect.validation.validate import (
    DEFAULT_INPUTS,
    DEFAULT_SEED,
    DEFAULT_TOLERANCE,
    ValidationError,
    validate,
)

PROGRAM = "usmp-validate"
DESCRIPTION = (
    "Compiles a .tflite or .onnx model with usmp-opt's canonical pipeline, builds the C on the "
    "host and compares its outputs with the reference runtime on the same inputs: TFLM "
    "(tflite-micro), LiteRT for the .tflite models TFLM refuses, onnxruntime for .onnx. "
    "Integer outputs must be bit-exact, float outputs within the tolerance of the largest "
    "reference magnitude."
)
EXIT_STATUS_HELP = (
    "Exit status: 0 when every output passes, 1 when one does not or on a user error (one line "
    "'usmp-validate: error: ...'), 2 on an internal error (USMP_DEBUG=1 prints the traceback)."
)


class UsageError(Exception):
    """A bad command line: one line, exit code 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {PROGRAM} --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROGRAM, description=DESCRIPTION, epilog=EXIT_STATUS_HELP)
    parser.add_argument("model", type=Path, help="the .tflite or .onnx model")
    parser.add_argument(
        "--inputs",
        type=int,
        metavar="N",
        help=f"how many random inputs (default {DEFAULT_INPUTS})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        metavar="S",
        default=DEFAULT_SEED,
        help=f"seed of the random inputs (default {DEFAULT_SEED}): integers over their type's "
        "range, floats normal with deviation 1",
    )
    parser.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="NAME=FILE.npy",
        help="the values of input NAME (the field of struct <p>_inputs): an array of its shape, "
        "or N of them along a leading axis; give every input or none",
    )
    parser.add_argument(
        "--workspace-io",
        action="store_true",
        help="build the C with the inputs and outputs inside the workspace "
        "(usmp{workspace-io=true})",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        metavar="T",
        default=DEFAULT_TOLERANCE,
        help="float outputs: the largest difference allowed, relative to the largest reference "
        f"magnitude (default {DEFAULT_TOLERANCE:g}); integer outputs must be bit-exact",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print each step on stderr")
    return parser


def _given_arrays(items: Sequence[str]) -> dict[str, np.ndarray]:
    arrays: dict[str, np.ndarray] = {}
    for item in items:
        name, equals, file = item.partition("=")
        if not equals or not name or not file:
            raise UsageError(f"--input '{item}': expected NAME=FILE.npy")
        if name in arrays:
            raise UsageError(f"--input {name} given twice")
        try:
            arrays[name] = np.load(file, allow_pickle=False)
        except OSError as error:
            reason = error.strerror or str(error)
            raise UsageError(f"cannot read --input file '{file}': {reason}") from None
        except ValueError as error:
            raise UsageError(f"--input file '{file}' is not a .npy array: {error}") from None
    return arrays


def run(arguments: Sequence[str] | None = None) -> int:
    """Runs the command; returns the exit status (user errors raise `UsageError` or
    `ValidationError`)."""
    args = _parser().parse_args(arguments)
    given = _given_arrays(args.input)
    if given and args.inputs is not None:
        raise UsageError("--inputs and --input exclude each other (the files set the count)")
    if not args.tolerance >= 0:
        raise UsageError("--tolerance must be a number >= 0")

    def log(message: str) -> None:
        if args.verbose:
            print(f"{PROGRAM}: {message}", file=sys.stderr, flush=True)

    result = validate(
        args.model,
        inputs=DEFAULT_INPUTS if args.inputs is None else args.inputs,
        seed=args.seed,
        given=given,
        workspace_io=args.workspace_io,
        tolerance=args.tolerance,
        log=log,
    )
    for line in result.lines():
        print(line)
    return 0 if result.passed else 1


def main(arguments: Sequence[str] | None = None) -> None:
    with reported_as_one_line(PROGRAM):
        try:
            status = run(arguments)
        except (UsageError, ValidationError) as error:
            sys.stdout.flush()
            print(f"{PROGRAM}: error: {error}", file=sys.stderr)
            raise SystemExit(1) from None
    raise SystemExit(status)


if __name__ == "__main__":
    main()
