"""The `usmp-opt` driver in-process: pool flags, one-line errors, output files, help."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from usmp_dialect import backend
from usmp_dialect.backend import get_all_targets
from usmp_dialect.dialects.pool import (
    POOL_INTEGER_PROPERTIES,
    ConstantPoolOp,
    WorkspacePoolOp,
    module_pools,
)
from usmp_dialect.passes import get_all_passes
from usmp_dialect.tools.pool_flags import (
    INTEGER_PROPERTY_FLAGS,
    PoolFlagError,
    add_pool_arguments,
    pool_declarations,
)
from usmp_dialect.tools.usmp_opt import UsmpOptMain

PROGRAM = """\
func.func @main() {
  %a = usmp.allocate : memref<16xi8>
  func.return
}
"""

SPLIT_PROGRAM = """\
func.func @main() {
  func.return
}

// -----

pool.workspace @sram {alignment = 3 : i64}
"""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "program.mlir"
    path.write_text(PROGRAM)
    return path


@pytest.fixture
def failing_program(tmp_path: Path) -> Path:
    """Two chunks; the second does not verify."""
    path = tmp_path / "failing.mlir"
    path.write_text(SPLIT_PROGRAM)
    return path


def run_opt(args: Sequence[str]) -> tuple[UsmpOptMain, ModuleOp]:
    """Runs usmp-opt on `args` and parses what it printed with the driver's own context."""
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        driver = UsmpOptMain(args=list(args))
        driver.run()
    return driver, Parser(driver.ctx, stdout.getvalue()).parse_module()


def expect_error(args: Sequence[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Runs usmp-opt expecting a user error; returns its one stderr line."""
    with pytest.raises(SystemExit) as exit_info:
        UsmpOptMain(args=list(args)).run()
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("usmp-opt: error: ")
    return lines[0].removeprefix("usmp-opt: error: ")


def pool_flag_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_pool_arguments(parser)
    return parser


# --- pools declared by flags ---------------------------------------------------------------


def test_flags_declare_pools_before_the_input_pools(program: Path) -> None:
    _, module = run_opt(
        [
            str(program),
            "--workspace-pools=sram,dram",
            "--workspace-pools-targets=sram:c,dram:c",
            "--workspace-pools-targets=dram:accel",
            "--workspace-pools-size-hint-bytes=sram:65536",
            "--workspace-pools-read-latency-cycles=dram:40",
            "--workspace-pools-target-burst-bytes=dram:accel:64,dram:c:8",
            "--constant-pools=flash",
            "--constant-pools-write-bandwidth-bytes-per-cycle=flash:2",
            "--internal-pools=dram,flash",
        ]
    )
    pools = list(module_pools(module))
    assert [(type(pool), pool.pool_name) for pool in pools] == [
        (WorkspacePoolOp, "sram"),
        (WorkspacePoolOp, "dram"),
        (ConstantPoolOp, "flash"),
    ]
    sram, dram, flash = pools
    assert sram.target_names == ("c",)
    assert sram.capacity_bytes == 65536
    assert not sram.is_internal
    assert sram.target_burst_bytes is None
    assert dram.target_names == ("c", "accel")
    assert dram.capacity_bytes is None
    assert dram.read_latency_cycles is not None and dram.read_latency_cycles.value.data == 40
    assert dram.target_burst_bytes is not None
    assert {
        target: value.value.data  # pyright: ignore[reportAttributeAccessIssue]
        for target, value in dram.target_burst_bytes.data.items()
    } == {"accel": 64, "c": 8}
    assert dram.is_internal
    assert flash.is_internal
    assert flash.write_bandwidth_bytes_per_cycle is not None
    assert flash.write_bandwidth_bytes_per_cycle.value.data == 2
    # the pools come first, the input follows unchanged
    assert [op.name for op in module.ops][3:] == ["func.func"]


def test_targets_default_to_c_and_are_explicit_in_the_ir(program: Path) -> None:
    _, module = run_opt([str(program), "--constant-pools=flash"])
    (flash,) = module_pools(module)
    assert flash.targets is not None
    assert [target.data for target in flash.targets.data] == ["c"]
    assert not flash.is_internal


def test_every_chunk_gets_the_pools(tmp_path: Path) -> None:
    path = tmp_path / "split.mlir"
    path.write_text(
        "func.func @a() {\n  func.return\n}\n// -----\nfunc.func @b() {\n  func.return\n}\n"
    )
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        UsmpOptMain(args=[str(path), "--split-input-file", "--workspace-pools=sram"]).run()
    chunks = stdout.getvalue().split("// -----")
    assert len(chunks) == 2
    for chunk in chunks:
        assert chunk.count("pool.workspace @sram") == 1


@given(
    prop_flag=st.sampled_from(sorted(INTEGER_PROPERTY_FLAGS)),
    kind=st.sampled_from(["workspace", "constant"]),
    value=st.integers(min_value=0, max_value=2**63 - 1),
)
def test_integer_flags_keep_their_value(prop_flag: str, kind: str, value: int) -> None:
    prop = INTEGER_PROPERTY_FLAGS[prop_flag].prop
    args = pool_flag_parser().parse_args(
        [f"--{kind}-pools=p", f"--{kind}-pools-{prop_flag}=p:{value}"]
    )
    if value < POOL_INTEGER_PROPERTIES[prop]:
        with pytest.raises(PoolFlagError, match=r"must be >= 1"):
            pool_declarations(args)
        return
    (declaration,) = pool_declarations(args)
    assert declaration.kind == kind
    assert dict(declaration.integer_properties) == {prop: value}


def test_flags_without_pools_declare_nothing(program: Path) -> None:
    driver, module = run_opt([str(program)])
    assert driver.pool_declarations == ()
    assert list(module_pools(module)) == []


# --- errors: one line, exit code 1 ----------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--workspace-pools=sram", "--workspace-pools-size-hint-bytes=sram:lots"],
            "invalid --workspace-pools-size-hint-bytes item 'sram:lots': 'lots' is not a "
            "non-negative integer",
        ),
        (
            ["--constant-pools=flash", "--constant-pools-write-latency-cycles=flash:-3"],
            "invalid --constant-pools-write-latency-cycles item 'flash:-3': '-3' is not a "
            "non-negative integer",
        ),
        (
            ["--workspace-pools=sram", "--workspace-pools-targets=sram"],
            "invalid --workspace-pools-targets item 'sram': expected POOL:TARGET",
        ),
        (
            ["--workspace-pools=sram", "--workspace-pools-read-latency-cycles=dram:1"],
            "--workspace-pools-read-latency-cycles names pool 'dram', which is not listed in "
            "--workspace-pools",
        ),
        (
            ["--workspace-pools=sram", "--constant-pools=sram"],
            "pool 'sram' is listed in both --workspace-pools and --constant-pools",
        ),
        (
            ["--internal-pools=sram"],
            "--internal-pools names pool 'sram', which is not declared by --workspace-pools, "
            "--constant-pools or --state-pools",
        ),
        (
            ["--constant-pools=flash", "--constant-pools-target-burst-bytes=flash:npu:4"],
            "invalid --constant-pools-target-burst-bytes item 'flash:npu:4': 'npu' is not a "
            "target of pool 'flash' (its targets: c)",
        ),
        (["-p", "usmp-no-such-pass"], "Unrecognized passes: ['usmp-no-such-pass']"),
        (["-p", "canonicalize{bogus=1}"], 'Provided arguments ["bogus"] not found'),
        (["-t", "no-such-target"], "invalid choice: 'no-such-target'"),
    ],
)
def test_command_line_errors(
    program: Path, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert message in expect_error([str(program), *flags], capsys)


def test_missing_input_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.mlir"
    assert expect_error([str(missing)], capsys) == (
        f"cannot read input file '{missing}': No such file or directory"
    )


def test_parse_error_names_file_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "broken.mlir"
    path.write_text("func.func @f() {\n  func.return\n}\n// -----\nfunc.func @g( {\n}\n")
    message = expect_error([str(path), "--split-input-file"], capsys)
    # line 5 of the file (the second chunk's first line), column 15 (the stray `{`)
    assert message.startswith(f"{path}:5:15: Expected ")


def test_verifier_failure_names_the_chunk(
    failing_program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert expect_error([str(failing_program), "--split-input-file"], capsys) == (
        f"{failing_program} (chunk starting at line 5): pool @sram: alignment 3 is not a "
        "power of two"
    )


def test_pool_declared_by_flag_and_input(
    failing_program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = expect_error([str(failing_program), "--workspace-pools=sram"], capsys)
    assert message.endswith(
        "pool @sram of --workspace-pools is also declared in the input (by 'pool.workspace')"
    )


def test_verify_diagnostics_keeps_xdsl_behaviour(
    failing_program: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    UsmpOptMain(args=[str(failing_program), "--split-input-file", "--verify-diagnostics"]).run()
    captured = capsys.readouterr()
    assert "pool @sram: alignment 3 is not a power of two" in captured.out
    assert "func.func @main()" in captured.out
    assert captured.err == ""


# --- output files ---------------------------------------------------------------------------


def test_output_file_is_not_created_on_failure(
    failing_program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out.mlir"
    expect_error([str(failing_program), "--split-input-file", "-o", str(output)], capsys)
    assert not output.exists()


def test_output_file_is_kept_on_failure(
    failing_program: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "out.mlir"
    output.write_text("previous\n")
    expect_error([str(failing_program), "--split-input-file", "-o", str(output)], capsys)
    assert output.read_text() == "previous\n"
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []


def test_output_file_is_written_on_success(program: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.mlir"
    output.write_text("previous\n")
    os.chmod(output, 0o640)
    UsmpOptMain(args=[str(program), "--workspace-pools=sram", "-o", str(output)]).run()
    text = output.read_text()
    assert text.startswith("builtin.module {\n  pool.workspace @sram")
    assert os.stat(output).st_mode & 0o777 == 0o640


# --- help and version -----------------------------------------------------------------------


def test_help_lists_our_passes_and_the_pool_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        UsmpOptMain(args=["--help"])
    assert exit_info.value.code == 0
    words = capsys.readouterr().out.replace(",", " ").split()
    for pass_name in get_all_passes():
        assert pass_name in words
    for kind in ("workspace", "constant"):
        assert f"--{kind}-pools" in words
        assert f"--{kind}-pools-targets" in words
        assert f"--{kind}-pools-target-burst-bytes" in words
        for suffix in INTEGER_PROPERTY_FLAGS:
            assert f"--{kind}-pools-{suffix}" in words
    assert "--internal-pools" in words


def test_help_starts_with_the_projects_passes_targets_and_pipeline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        UsmpOptMain(args=["--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    overview, _, rest = text.partition("positional arguments:")
    assert overview.startswith("usage: usmp-opt [-p PASSES] [-t TARGET]")
    assert "usmp-opt compiles ML models" in overview
    flat = " ".join(overview.split())
    positions = []
    for name, factory in get_all_passes().items():  # registry order, one line each
        summary = " ".join(factory().__doc__.strip().splitlines()[0].split())
        positions.append(flat.index(f" {name} {summary}"))
    assert positions == sorted(positions)
    for name in get_all_targets():
        assert f"\n  {name} " in overview
    assert " .tflite -f tflite; needs pip install 'usmp-dialect[tflite]'" in flat
    assert " .onnx -f onnx; needs pip install 'usmp-dialect[onnx]'" in flat
    assert "-p 'usmp-import-memref,convert-linalg-to-loops,usmp' -t 'c{prefix=net}'" in flat
    # xDSL's own lists come after ours.
    assert "arm-asm" not in overview and "arm-asm" in rest


def test_a_newly_registered_target_appears_in_the_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(backend._TARGETS, "c-project", ("c.target", "CHeaderTarget"))
    with pytest.raises(SystemExit):
        UsmpOptMain(args=["--help"])
    overview = capsys.readouterr().out.partition("positional arguments:")[0]
    assert "\n  c-project  the header declaring `<prefix>_run`" in overview


def test_version_names_the_tool_and_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        UsmpOptMain(args=["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usmp-opt {version('usmp-dialect')} ")


def test_output_through_a_symlink_replaces_its_target(program: Path, tmp_path: Path) -> None:
    target = tmp_path / "target.mlir"
    target.write_text("previous\n")
    link = tmp_path / "link.mlir"
    link.symlink_to(target)
    UsmpOptMain(args=[str(program), "-o", str(link)]).run()
    assert link.is_symlink()
    assert target.read_text().startswith("builtin.module {")


def test_output_to_a_device_is_written_in_place(program: Path) -> None:
    UsmpOptMain(args=[str(program), "-o", os.devnull]).run()
    assert Path(os.devnull).is_char_device()
