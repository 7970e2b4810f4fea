"""The `usmp-plan` command (SPEC §8)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from usmp_dialect.planning import ALGORITHMS
from usmp_dialect.planning.problem import Buffer, Plan, Problem, validate
from usmp_dialect.tools import usmp_plan
from usmp_dialect.tools.usmp_plan import main

INPUTS = Path(__file__).parent / "usmp-plan" / "Inputs"
README_CSV = INPUTS / "input.12.csv"
NO_GAP_CSV = INPUTS / "no-gap.csv"
FIRST_FIT_GAP_CSV = INPUTS / "first-fit-gap.csv"


def run_main(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, captured.err


def parse_csv_plan(text: str) -> tuple[Problem, Plan]:
    lines = text.splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]
    problem = Problem(
        tuple(
            Buffer(r["id"], int(r["size"]), live=((int(r["lower"]), int(r["upper"])),))
            for r in rows
        )
    )
    return problem, Plan(tuple(0 for _ in rows), tuple(int(r["offset"]) for r in rows))


@pytest.mark.parametrize("algorithm", ["greedy_by_size", "greedy_by_conflicts", "hill_climb"])
def test_csv_plan_to_stdout(algorithm: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_main([str(README_CSV), "--algorithm", algorithm], capsys)
    assert status == 0
    assert out.splitlines()[0] == "id,lower,upper,size,offset"
    problem, plan = parse_csv_plan(out)
    assert validate(problem, plan) == []
    peak = max(o + b.size_bytes for o, b in zip(plan.offsets, problem.buffers, strict=True))
    assert err.splitlines()[-1].startswith(f"peak {peak} B, lower bound 12 B")
    assert err.splitlines()[-1].endswith(f" s, {algorithm}")


def test_default_algorithm(capsys: pytest.CaptureFixture[str]) -> None:
    status, _out, err = run_main([str(README_CSV)], capsys)
    assert status == 0
    expected = "auto" if "auto" in ALGORITHMS else "greedy_by_size"
    assert err.splitlines()[-1].endswith(f", {expected}")
    assert "(optimal)" in err  # every algorithm reaches 12 on the README instance


def test_output_and_report_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output, report = tmp_path / "plan.csv", tmp_path / "report.json"
    argv = [str(README_CSV), "--algorithm", "greedy_by_size", "-o", str(output)]
    status, out, _err = run_main([*argv, "--report", str(report)], capsys)
    assert status == 0 and out == ""
    problem, plan = parse_csv_plan(output.read_text())
    assert validate(problem, plan) == []
    data = json.loads(report.read_text())
    assert data["algorithm"] == "greedy_by_size"
    assert data["lower_bound_bytes"] == 12
    assert data["pools"][0]["size_bytes"] == data["peak_bytes"]
    assert [b["offset"] for b in data["buffers"]] == list(plan.offsets)
    assert isinstance(data["proven_optimal"], bool) and data["plan_time_s"] >= 0


def test_json_problem_with_pools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "p.json"
    source.write_text(
        json.dumps(
            {
                "buffers": [
                    {"name": "A", "size": 80, "conflicts": ["X"]},
                    {"name": "B", "size": 40, "conflicts": ["X"]},
                    {"name": "X", "size": 30},
                ],
                "pools": [
                    {"name": "sram", "size_hint_bytes": 100},
                    {"name": "dram", "size_hint_bytes": -1},
                ],
            }
        )
    )
    status, out, err = run_main([str(source), "--algorithm", "greedy_by_size"], capsys)
    assert status == 0
    placed = {b["name"]: (b["pool"], b["offset"]) for b in json.loads(out)["buffers"]}
    # TVM's greedy_by_size puts X at sram 40, over A (tvm-usmp.md §4.1); ours does not.
    assert placed == {"A": ("sram", 0), "B": ("sram", 0), "X": ("dram", 0)}
    assert err.splitlines()[-1].startswith("peak sram 80 B, dram 30 B; lower bounds 80 B, 30 B")


def test_capacity_that_fits(capsys: pytest.CaptureFixture[str]) -> None:
    status, _out, err = run_main(
        [str(README_CSV), "--capacity", "12", "--algorithm", "hill_climb"], capsys
    )
    assert status == 0
    assert err.splitlines()[-1].startswith("peak 12 B")


def test_capacity_the_algorithm_cannot_meet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """no-gap.csv: lower bound 14; greedy_by_size needs 16 (it never fills gaps), hill_climb 14.
    With capacity 14 greedy_by_size fails naming the buffer and the pool's free space, and
    writes no output; hill_climb succeeds."""
    output = tmp_path / "out.csv"
    argv = [str(NO_GAP_CSV), "--capacity", "14", "-o", str(output)]
    status, out, err = run_main([*argv, "--algorithm", "greedy_by_size"], capsys)
    assert status == 1 and out == "" and not output.exists()
    assert err == (
        f"usmp-plan: error: {NO_GAP_CSV}: greedy_by_size: buffer 'b' (2 B) fits in none of its "
        "candidate pools: 'pool' has 0 B free (conflicting buffers reach 14 B, capacity 14 B)\n"
    )
    status, out, err = run_main([*argv, "--algorithm", "hill_climb"], capsys)
    assert status == 0 and output.exists()
    assert err.splitlines()[-1].startswith("peak 14 B, lower bound 14 B (optimal)")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.csv"], "usmp-plan: error: missing.csv: file not found"),
        ([str(README_CSV), "--algorithm", "magic"], "usmp-plan: error: unknown algorithm 'magic'"),
        (
            [str(README_CSV), "--capacity", "-3"],
            "usmp-plan: error: argument --capacity: '-3' is negative",
        ),
        ([str(README_CSV), "--capacity", "11"], "the buffers cannot fit in 11 B: at least 12 B"),
        ([str(README_CSV), "--time-limit", "0"], "not a positive number of seconds"),
        ([], "usmp-plan: error: the following arguments are required: input"),
    ],
)
def test_errors_are_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = run_main(argv, capsys)
    assert status == 1 and out == ""
    assert len(err.splitlines()) == 1 and message in err


def test_bad_rows_report_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.csv"
    source.write_text("id,lower,upper,size\na,0,4,8\nb,5,5,8\n")
    status, _out, err = run_main([str(source)], capsys)
    assert status == 1
    assert err == (
        f"usmp-plan: error: {source}:3: buffer 'b': lower 5 >= upper 5 "
        "(the live interval [lower, upper) must not be empty)\n"
    )


def test_buffer_that_fits_nowhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "p.json"
    source.write_text(
        json.dumps(
            {
                "buffers": [
                    {"name": "a", "size": 8, "conflicts": ["b"]},
                    {"name": "b", "size": 6},
                ],
                "pools": [{"name": "tiny", "size_hint_bytes": 10}],
            }
        )
    )
    status, _out, err = run_main([str(source), "--algorithm", "greedy_by_size"], capsys)
    assert status == 1
    # Caught before any algorithm runs: the conflicting buffers alone exceed the only pool.
    expected = f"{source}: the buffers cannot fit in 10 B: at least 14 B are live together"
    assert err == f"usmp-plan: error: {expected}\n"


def test_offset_column_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "iree.csv"
    source.write_text("id,lower,upper,size,offset\n0,0,1,8,100\n1,0,2,8,0")
    status, out, err = run_main([str(source), "--algorithm", "greedy_by_size"], capsys)
    assert status == 0
    assert "note:" in err and "'offset' column is ignored" in err
    assert out.splitlines()[0] == "id,lower,upper,size,offset"


def test_progress_is_printed_for_long_searches(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Progress lines appear once a search has run PROGRESS_AFTER_S (1 s; 0 here)."""
    monkeypatch.setattr(usmp_plan, "PROGRESS_AFTER_S", 0.0)
    status, _out, err = run_main([str(FIRST_FIT_GAP_CSV), "--algorithm", "hill_climb"], capsys)
    assert status == 0
    lines = err.splitlines()
    # hill_climb's first first-fit pass needs 18 B; later orders reach the bound, 16 B.
    assert lines[0] == "usmp-plan: hill_climb: attempt 0/500, best 18 B"
    assert lines[-1].startswith("peak 16 B, lower bound 16 B (optimal)")
    status, _out, err = run_main([str(NO_GAP_CSV), "--algorithm", "greedy_by_size"], capsys)
    assert len(err.splitlines()) == 1  # no search, no progress


@pytest.mark.skipif(shutil.which("usmp-plan") is None, reason="usmp-plan not installed")
def test_console_script_exit_code_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\na,0,4,x\n")
    done = subprocess.run(["usmp-plan", str(bad)], capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert done.stderr == f"usmp-plan: error: {bad}:2: buffer 'a': size 'x' is not an integer\n"
    done = subprocess.run(
        ["usmp-plan", str(README_CSV), "--algorithm", "greedy_by_size"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("id,lower,upper,size,offset\n")


def test_stdin_input(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(README_CSV.read_text()))
    status, out, err = run_main(["-", "--algorithm", "greedy_by_size"], capsys)
    assert status == 0 and out.startswith("id,lower,upper,size,offset\n")
    assert err.splitlines()[-1].startswith("peak 12 B")


@pytest.mark.parametrize("seed", ["0", "7"])
def test_same_seed_same_bytes(
    seed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Planning is deterministic: the same input and seed give byte-identical output."""
    outputs = []
    for attempt in range(2):
        target = tmp_path / f"plan{attempt}.csv"
        argv = [str(FIRST_FIT_GAP_CSV), "--algorithm", "hill_climb", "--seed", seed]
        status, _out, _err = run_main([*argv, "-o", str(target)], capsys)
        assert status == 0
        outputs.append(target.read_bytes())
    assert outputs[0] == outputs[1]
