"""How the command-line tools end when something unexpected happens.

Exit codes of `usmp-opt` and `usmp-plan`: 0 success, 1 a user error (one line
`PROG: error: ...`), 2 an internal error (a bug: one line `PROG: internal error: ...`, the
traceback only with `USMP_DEBUG=1`), 130 interrupted (Ctrl-C). A reader that goes away
(`usmp-opt ... | head`) ends the tool quietly with exit code 1.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

INTERNAL_ERROR_EXIT_CODE = 2
INTERRUPTED_EXIT_CODE = 130
DEBUG_VARIABLE = "USMP_DEBUG"


def debugging() -> bool:
    """Whether `USMP_DEBUG` asks for tracebacks (set, and not empty or `0`)."""
    return os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def describe(error: BaseException) -> str:
    """The exception as one line: its type and its message."""
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _silence_stdout() -> None:
    """Points stdout at /dev/null so that Python's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@contextmanager
def reported_as_one_line(program: str) -> Iterator[None]:
    """Ends the process with one line instead of a traceback for anything the tool itself
    did not report: an internal error (exit 2), Ctrl-C (130), a closed pipe (1)."""
    try:
        yield
    except BrokenPipeError:
        _silence_stdout()
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        print(f"{program}: interrupted", file=sys.stderr)
        raise SystemExit(INTERRUPTED_EXIT_CODE) from None
    except Exception as error:
        if debugging():
            traceback.print_exc()
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            _silence_stdout()
        print(
            f"{program}: internal error: {describe(error)} "
            f"(please report; set {DEBUG_VARIABLE}=1 for the traceback)",
            file=sys.stderr,
        )
        raise SystemExit(INTERNAL_ERROR_EXIT_CODE) from None
