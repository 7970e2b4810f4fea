"""A bug never shows a user a traceback: `PROG: internal error: ...` on one line, exit code 2,
no output file; `USMP_DEBUG=1` adds the traceback. Ctrl-C is one line and exit code 130."""

from __future__ import annotations

from pathlib import Path

import pytest

from usmp_dialect.testing.module_file import load_file
from usmp_dialect.tools import usmp_opt, usmp_plan
from usmp_dialect.tools.internal_error import INTERNAL_ERROR_EXIT_CODE

cli_runs = load_file(Path(__file__).with_name("cli_runs.py"))

INPUTS: Path = cli_runs.INPUTS
HINT = "(please report; set USMP_DEBUG=1 for the traceback)"


def _explode(*args: object, **kwargs: object) -> None:
    raise RuntimeError("the planner's state is\ninconsistent")


def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


@pytest.fixture
def broken_opt(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in the middle of usmp-opt's pipeline."""
    monkeypatch.setattr(usmp_opt.UsmpOptMain, "apply_passes", _explode)


@pytest.fixture
def broken_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug inside usmp-plan's planner."""
    monkeypatch.setattr(usmp_plan, "solve", _explode)


def test_usmp_opt_internal_error_is_one_line(
    broken_opt: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("USMP_DEBUG", raising=False)
    output = tmp_path / "out.mlir"
    run = cli_runs.run_tool("usmp-opt", [str(INPUTS / "program.mlir"), "-o", str(output)], capsys)
    assert run.exit_code == INTERNAL_ERROR_EXIT_CODE == 2
    assert run.stderr_lines == [
        f"usmp-opt: internal error: RuntimeError: the planner's state is inconsistent {HINT}"
    ]
    assert not output.exists()


def test_usmp_plan_internal_error_is_one_line(
    broken_plan: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("USMP_DEBUG", "0")  # 0 means off
    output = tmp_path / "plan.csv"
    run = cli_runs.run_tool("usmp-plan", [str(INPUTS / "problem.csv"), "-o", str(output)], capsys)
    assert run.exit_code == 2
    assert run.stderr_lines == [
        f"usmp-plan: internal error: RuntimeError: the planner's state is inconsistent {HINT}"
    ]
    assert not output.exists()


@pytest.mark.parametrize("tool", ["usmp-opt", "usmp-plan"])
def test_usmp_debug_adds_the_traceback(
    tool: str,
    broken_opt: None,
    broken_plan: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("USMP_DEBUG", "1")
    source = INPUTS / ("program.mlir" if tool == "usmp-opt" else "problem.csv")
    run = cli_runs.run_tool(tool, [str(source)], capsys)
    assert run.exit_code == 2
    assert run.stderr_lines[0] == "Traceback (most recent call last):"
    assert "in _explode" in run.stderr
    assert run.stderr_lines[-1] == (
        f"{tool}: internal error: RuntimeError: the planner's state is inconsistent {HINT}"
    )


@pytest.mark.parametrize("tool", ["usmp-opt", "usmp-plan"])
def test_interrupt_is_one_line(
    tool: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(usmp_opt.UsmpOptMain, "apply_passes", _interrupt)
    monkeypatch.setattr(usmp_plan, "solve", _interrupt)
    source = INPUTS / ("program.mlir" if tool == "usmp-opt" else "problem.csv")
    run = cli_runs.run_tool(tool, [str(source)], capsys)
    assert (run.exit_code, run.stderr_lines) == (130, [f"{tool}: interrupted"])


@pytest.mark.parametrize("tool", ["usmp-opt", "usmp-plan"])
def test_user_errors_keep_exit_code_1(tool: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Internal errors are told apart from user errors by their exit code."""
    run = cli_runs.run_tool(tool, [str(INPUTS / "no-such-file")], capsys)
    assert run.exit_code == 1
    assert run.stderr_lines[0].startswith(f"{tool}: error: ")
