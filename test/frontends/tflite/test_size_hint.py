"""The workspace size hint steers the import (issue 22, SPEC §12): the cheapest transformations
whose peak fits the hint, none when the plain program fits, and one line with exit 1 (no output
file) when even the lowest peak does not fit."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from usmp_dialect.validation.host import usmp_opt

U4 = 'usmp-import-memref,convert-linalg-to-loops,usmp{workspace-io=true report="REPORT"}'


def _chain(tmp_path: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "streamed_chain", Path(__file__).parent / "Inputs" / "streamed_chain.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = tmp_path / "chain.tflite"
    model.write_bytes(module.chain_model(0, 40))
    return model


def _run(model: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*usmp_opt(), str(model), *flags], capture_output=True, text=True, check=False
    )


def _planned(model: Path, tmp_path: Path, *flags: str) -> tuple[int, str]:
    """The workspace the plan reaches (U4) and the planned module."""
    report = tmp_path / "plan.json"
    ran = _run(model, "-p", U4.replace("REPORT", str(report)), *flags)
    assert ran.returncode == 0, ran.stderr
    pools = json.loads(report.read_text())["pools"]
    return sum(p["size_bytes"] for p in pools if p["kind"] == "workspace"), ran.stdout


def _hint(bytes_: int) -> tuple[str, str]:
    return "--workspace-pools=sram", f"--workspace-pools-size-hint-bytes=sram:{bytes_}"


def test_a_hint_only_streaming_meets_is_met_by_streaming(tmp_path: Path) -> None:
    model = _chain(tmp_path)
    unfused, _ = _planned(model, tmp_path, "--fuse=none")
    fused, _ = _planned(model, tmp_path)
    assert fused < unfused
    hint = (fused + unfused) // 2
    workspace, text = _planned(model, tmp_path, *_hint(hint))
    assert "fused_" in text
    assert workspace <= hint


def test_the_cheapest_group_that_fits_is_chosen(tmp_path: Path) -> None:
    """A hint between the plain peak and the lowest one: a shorter group than the default's
    fits, and it adds fewer instructions."""
    model = _chain(tmp_path)
    _, default_text = _planned(model, tmp_path)
    unfused, _ = _planned(model, tmp_path, "--fuse=none")
    workspace, text = _planned(model, tmp_path, *_hint(unfused - 1))
    assert workspace < unfused
    assert "fused_" in text
    assert text.count("_rows_") < default_text.count("_rows_")


def test_a_hint_the_plain_program_meets_changes_nothing(tmp_path: Path) -> None:
    model = _chain(tmp_path)
    unfused, _ = _planned(model, tmp_path, "--fuse=none")
    hinted = _run(model, *_hint(unfused))
    plain = _run(model, "--workspace-pools=sram", "--fuse=none")
    assert hinted.returncode == 0 and plain.returncode == 0
    assert "fused_" not in hinted.stdout

    def body(text: str) -> list[str]:
        return [line for line in text.splitlines() if "pool.workspace" not in line]

    assert body(hinted.stdout) == body(plain.stdout)


def test_an_impossible_hint_is_one_line_and_no_output(tmp_path: Path) -> None:
    """Below the lowest peak: the lowest-peak program is planned, and planning fails with one
    line naming that peak (not the untransformed one), the group running then and the tensors
    live."""
    model = _chain(tmp_path)
    unfused, _ = _planned(model, tmp_path, "--fuse=none")
    output = tmp_path / "out.c"
    ran = _run(
        model,
        *_hint(1100),
        "-p",
        "usmp-import-memref,convert-linalg-to-loops,usmp{workspace-io=true}",
        "-t",
        "c",
        "-o",
        str(output),
    )
    assert ran.returncode == 1
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    assert lines[0].startswith("usmp-opt: error: ")
    # The lowest peak: a group written over the model input (its line buffers beside it).
    assert "pool @sram (1100 bytes) is too small: at least 1440 bytes" in lines[0]
    assert unfused > 1440
    assert "while operator 0 (FUSED @fused_conv_2d_0__max_pool_2d_3) runs" in lines[0]
    assert "'t0' (1080 bytes" in lines[0]  # the model input, inside the workspace (U4)
    assert not output.exists()


def test_without_workspace_io_the_inputs_do_not_count(tmp_path: Path) -> None:
    """U1: the model's input and output are the caller's, so a hint below the input's size can
    still fit."""
    model = _chain(tmp_path)
    ran = _run(
        model,
        *_hint(700),
        "-p",
        "usmp-import-memref,convert-linalg-to-loops,usmp",
        "-t",
        "c",
    )
    assert ran.returncode == 0, ran.stderr


@pytest.mark.parametrize("hint", [0, 1])
def test_tiny_hints_fail_without_a_traceback(tmp_path: Path, hint: int) -> None:
    ran = _run(_chain(tmp_path), *_hint(hint), "-t", "c")
    assert ran.returncode == 1
    assert ran.stderr.count("\n") == 1 and "Traceback" not in ran.stderr


def test_compile_api_reads_the_hint_too(tmp_path: Path) -> None:
    import usmp_dialect
    from usmp_dialect.compiler import Pool

    model = _chain(tmp_path)
    unfused, _ = _planned(model, tmp_path, "--fuse=none")
    default = usmp_dialect.compile(model, workspace_pools=["sram"], workspace_io=True)
    compiled = usmp_dialect.compile(
        model, workspace_pools=[Pool("sram", size_hint_bytes=unfused - 1)], workspace_io=True
    )
    # The cheaper group that fits, not the default's lowest-peak one.
    assert default.workspace_bytes < compiled.workspace_bytes <= unfused - 1
