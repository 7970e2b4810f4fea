"""A failing run leaves no output file behind: an existing file keeps its old content, a new one
is not created, and no temporary file is left in the directory. Covers `usmp-opt -o`,
`usmp-plan{report= svg=}` and `usmp-plan -o/--report`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from usmp_dialect.testing.module_file import load_file

cli_runs = load_file(Path(__file__).with_name("cli_runs.py"))

INPUTS: Path = cli_runs.INPUTS
Run = cli_runs.Run

OLD_CONTENT = "old content: must survive a failing run\n"


@dataclass(frozen=True)
class Failure:
    """A command that fails, given where its output file `target` goes."""

    tool: str  # "usmp-opt" or "usmp-plan"
    args: Callable[[Path, Path], list[str]]
    """(target, a scratch directory) -> arguments."""
    error: str
    """The start of its one-line error, after `TOOL: error: `."""


FAILURES: dict[str, Failure] = {
    "opt -o, planning fails": Failure(
        "usmp-opt",
        lambda target, _: [str(INPUTS / "too-big.mlir"), "-p", "usmp", "-o", str(target)],
        f"{INPUTS / 'too-big.mlir'}: buffer 'a' (64 bytes) is larger than every candidate pool",
    ),
    "opt -o, second chunk does not verify": Failure(
        "usmp-opt",
        lambda target, _: [
            str(INPUTS / "not-utf8.mlir"),
            "--split-input-file",
            "-o",
            str(target),
        ],
        f"{INPUTS / 'not-utf8.mlir'} (chunk starting at line 4): not UTF-8 text",
    ),
    "opt -o, C backend fails": Failure(
        "usmp-opt",
        lambda target, _: [
            str(INPUTS / "unprintable-op.mlir"),
            "-p",
            "usmp",
            "-t",
            "c",
            "-o",
            str(target),
        ],
        f"{INPUTS / 'unprintable-op.mlir'}: C backend: cannot print 'test.op'",
    ),
    "opt -o, report= unwritable": Failure(
        "usmp-opt",
        lambda target, scratch: [
            str(INPUTS / "program.mlir"),
            "-p",
            f'usmp{{report="{scratch / "missing" / "plan.json"}"}}',
            "-o",
            str(target),
        ],
        f"{INPUTS / 'program.mlir'}: cannot write report='{{scratch}}/missing/plan.json'",
    ),
    "opt report=, C backend fails after planning": Failure(
        "usmp-opt",
        lambda target, _: [
            str(INPUTS / "unprintable-op.mlir"),
            "-p",
            f'usmp{{report="{target}"}}',
            "-t",
            "c",
        ],
        f"{INPUTS / 'unprintable-op.mlir'}: C backend: cannot print 'test.op'",
    ),
    "opt svg=, C backend fails after planning": Failure(
        "usmp-opt",
        lambda target, _: [
            str(INPUTS / "unprintable-op.mlir"),
            "-p",
            f'usmp{{svg="{target}"}}',
            "-t",
            "c",
        ],
        f"{INPUTS / 'unprintable-op.mlir'}: C backend: cannot print 'test.op'",
    ),
    "opt report=, -o unwritable": Failure(
        "usmp-opt",
        lambda target, scratch: [
            str(INPUTS / "program.mlir"),
            "-p",
            f'usmp{{report="{target}"}}',
            "-o",
            str(scratch / "missing" / "out.mlir"),
        ],
        "cannot write output file '{scratch}/missing/out.mlir': No such file or directory",
    ),
    "opt report=, svg= unwritable": Failure(
        "usmp-opt",
        lambda target, scratch: [
            str(INPUTS / "program.mlir"),
            "-p",
            f'usmp-plan{{report="{target}" svg="{scratch}"}}',
        ],
        f"{INPUTS / 'program.mlir'}: cannot write svg='{{scratch}}': Is a directory",
    ),
    "plan -o, capacity too small": Failure(
        "usmp-plan",
        lambda target, _: [str(INPUTS / "problem.csv"), "--capacity", "20", "-o", str(target)],
        f"{INPUTS / 'problem.csv'}: the buffers cannot fit in 20 B",
    ),
    "plan --report, capacity too small": Failure(
        "usmp-plan",
        lambda target, _: [
            str(INPUTS / "problem.csv"),
            "--capacity",
            "20",
            "--report",
            str(target),
        ],
        f"{INPUTS / 'problem.csv'}: the buffers cannot fit in 20 B",
    ),
    "plan -o, bad input": Failure(
        "usmp-plan",
        lambda target, _: [str(INPUTS / "short-row.csv"), "-o", str(target)],
        f"{INPUTS / 'short-row.csv'}:2: expected 4 fields",
    ),
    "plan -o, --report unwritable": Failure(
        "usmp-plan",
        lambda target, scratch: [
            str(INPUTS / "problem.csv"),
            "-o",
            str(target),
            "--report",
            str(scratch / "missing" / "report.json"),
        ],
        "cannot write report file '{scratch}/missing/report.json': No such file or directory",
    ),
    "plan --report, -o unwritable": Failure(
        "usmp-plan",
        lambda target, scratch: [
            str(INPUTS / "problem.csv"),
            "--report",
            str(target),
            "-o",
            str(scratch),
        ],
        "cannot write output file '{scratch}': Is a directory",
    ),
}


def _run(failure: Failure, target: Path, scratch: Path, capsys: pytest.CaptureFixture[str]) -> Run:
    return cli_runs.run_tool(failure.tool, failure.args(target, scratch), capsys)


def _assert_one_line_error(failure: Failure, run: Run, scratch: Path) -> None:
    assert run.exit_code == 1
    assert "Traceback" not in run.stderr
    assert len(run.stderr_lines) == 1, run.stderr
    expected = f"{failure.tool}: error: " + failure.error.replace("{scratch}", str(scratch))
    assert run.stderr_lines[0].startswith(expected), run.stderr


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_existing_output_keeps_its_content(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failure = FAILURES[case]
    outputs, scratch = tmp_path / "outputs", tmp_path / "scratch"
    outputs.mkdir()
    scratch.mkdir()
    target = outputs / "output.txt"
    target.write_text(OLD_CONTENT)
    run = _run(failure, target, scratch, capsys)
    _assert_one_line_error(failure, run, scratch)
    assert target.read_text() == OLD_CONTENT
    assert sorted(os.listdir(outputs)) == ["output.txt"]  # no temporary file left
    assert os.listdir(scratch) == []  # no directory created for a missing path


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_no_output_file_is_created(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failure = FAILURES[case]
    outputs, scratch = tmp_path / "outputs", tmp_path / "scratch"
    outputs.mkdir()
    scratch.mkdir()
    run = _run(failure, outputs / "output.txt", scratch, capsys)
    _assert_one_line_error(failure, run, scratch)
    assert os.listdir(outputs) == []
    assert os.listdir(scratch) == []


def test_the_same_commands_write_their_outputs_when_they_succeed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The failures above are caused by the failing part alone: without it, files appear."""
    report, svg, source = tmp_path / "plan.json", tmp_path / "map.svg", tmp_path / "model.c"
    run = cli_runs.run_tool(
        "usmp-opt",
        [
            str(INPUTS / "program.mlir"),
            "-p",
            f'usmp{{report="{report}" svg="{svg}"}}',
            "-t",
            "c",
            "-o",
            str(source),
        ],
        capsys,
    )
    assert (run.exit_code, run.stderr) == (0, "")
    assert report.read_text().startswith('{"algorithm": "auto"')
    assert svg.read_text().startswith("<svg ")
    assert "int32_t usmp_default_run(" in source.read_text()
    plan, plan_report = tmp_path / "plan.csv", tmp_path / "report.json"
    args = [str(INPUTS / "problem.csv"), "--capacity", "30", "-o", str(plan)]
    run = cli_runs.run_tool("usmp-plan", [*args, "--report", str(plan_report)], capsys)
    assert run.exit_code == 0
    assert plan.read_text().splitlines()[0] == "id,lower,upper,size,offset"
    assert '"proven_optimal": true' in plan_report.read_text()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write read-only files")
@pytest.mark.parametrize("tool", ["usmp-opt", "usmp-plan"])
def test_read_only_output_file_is_an_error_and_stays_unchanged(
    tool: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "read-only.txt"
    target.write_text(OLD_CONTENT)
    target.chmod(0o444)
    source = INPUTS / ("program.mlir" if tool == "usmp-opt" else "problem.csv")
    run = cli_runs.run_tool(tool, [str(source), "-o", str(target)], capsys)
    assert run.exit_code == 1
    assert run.stderr_lines == [
        f"{tool}: error: cannot write output file '{target}': Permission denied"
    ]
    assert target.read_text() == OLD_CONTENT
    assert sorted(os.listdir(tmp_path)) == ["read-only.txt"]


def test_existing_output_is_replaced_keeping_its_permissions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out.mlir"
    target.write_text(OLD_CONTENT)
    target.chmod(0o640)
    run = cli_runs.run_tool("usmp-opt", [str(INPUTS / "program.mlir"), "-o", str(target)], capsys)
    assert run.exit_code == 0
    assert "func.func @main" in target.read_text()
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["out.mlir"]
