"""Runs `usmp-opt` and `usmp-plan` in-process exactly as their console scripts do (through
their `main`), capturing the exit code and both streams. Loaded by the tests of this folder."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import pytest

from usmp_dialect.tools import usmp_opt, usmp_plan

INPUTS = Path(__file__).parent / "Inputs"


@dataclass(frozen=True)
class Run:
    """How a command ended."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def stderr_lines(self) -> list[str]:
        return self.stderr.splitlines()


def _exit_code(error: SystemExit) -> int:
    if error.code is None:
        return 0
    return error.code if isinstance(error.code, int) else 1


def run_tool(tool: str, args: Sequence[str], capsys: pytest.CaptureFixture[str]) -> Run:
    """Runs `tool ARGS` (`usmp-opt` or `usmp-plan`) through its console-script entry point."""
    capsys.readouterr()
    try:
        if tool == "usmp-opt":
            with mock.patch.object(sys, "argv", ["usmp-opt", *args]):
                usmp_opt.main()
        else:
            usmp_plan.main(list(args))
        code = 0
    except SystemExit as error:
        code = _exit_code(error)
    out, err = capsys.readouterr()
    return Run(code, out, err)
