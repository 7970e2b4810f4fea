"""Upstream MLIR both ways, with LLVM 22's real tools: tensor programs bufferized by `mlir-opt`,
planned by `usmp-opt -p 'usmp-import-memref,convert-linalg-to-loops,usmp,convert-pool-to-memref'`,
lowered back by `mlir-opt` and run by `mlir-runner` print exactly what the unplanned
(bufferized) program prints; `-t c` compiles on the same inputs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, i8

from usmp_dialect.testing.mlir_runner import (
    SKIP_REASON,
    bufferize,
    entry_signature,
    mlir_opt,
    mlir_opt_path,
    mlir_runner_path,
    parse_module,
    run_entry,
)

pytestmark = pytest.mark.skipif(
    mlir_opt_path() is None or mlir_runner_path() is None, reason=SKIP_REASON
)

INPUTS = Path(__file__).parent / "Inputs"
PROGRAMS = sorted(path.stem for path in INPUTS.glob("*.mlir"))
ENTRY = "model"
PIPELINE = (
    f"usmp-import-memref,convert-linalg-to-loops,usmp{{entry={ENTRY}}},"
    f"convert-pool-to-memref{{entry={ENTRY}}}"
)
UPSTREAM_OUT_PARAMS = "--buffer-results-to-out-params=hoist-static-allocs modify-public-functions"


def usmp_opt(text: str, *arguments: str) -> str:
    command = [sys.executable, "-m", "usmp_dialect.tools.usmp_opt", *arguments]
    if shutil.which("usmp-opt"):
        command = ["usmp-opt", *arguments]
    result = subprocess.run(command, input=text, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def reference_and_planned(bufferized: str, *flags: str) -> tuple[str, str, str]:
    """(reference output, planned output, planned IR) of a bufferized program."""
    reference_signature = entry_signature(parse_module(bufferized), ENTRY)
    reference = run_entry(bufferized, ENTRY, reference_signature)
    planned = usmp_opt(bufferized, "-p", PIPELINE, *flags)
    # The entry prints its arguments, then its results: after planning, the results are the
    # arguments that follow the original ones; pools (external) come last and are not printed.
    printed = len(reference_signature.arguments) + len(reference_signature.results)
    signature = entry_signature(parse_module(planned), ENTRY, printed)
    return reference, run_entry(planned, ENTRY, signature), planned


@pytest.fixture(scope="module", params=PROGRAMS)
def bufferized(request: pytest.FixtureRequest) -> str:
    return bufferize((INPUTS / f"{request.param}.mlir").read_text())


def test_inputs_cover_what_the_issue_names() -> None:
    text = "\n".join((INPUTS / f"{name}.mlir").read_text() for name in PROGRAMS)
    for construct in (
        "linalg.matmul",
        "linalg.conv_2d_nhwc_hwcf",
        "tensor.pad",
        "linalg.add",
        "linalg.reduce",
        "call @",
        "arith.constant dense<",
    ):
        assert construct in text, construct


def test_planned_program_computes_what_the_unplanned_one_does(bufferized: str) -> None:
    reference, planned_output, planned = reference_and_planned(bufferized)
    assert planned_output == reference
    assert "pool." not in planned and "usmp." not in planned
    assert 'memref.global "private" @global_workspace' in planned


def test_external_workspace_pool_is_a_trailing_entry_argument(bufferized: str) -> None:
    reference, planned_output, planned = reference_and_planned(bufferized, "--workspace-pools=sram")
    assert planned_output == reference
    entry = next(
        op
        for op in parse_module(planned).walk()
        if isinstance(op, func.FuncOp) and op.sym_name.data == ENTRY
    )
    pool = entry.body.block.args[-1]
    assert pool.name_hint == "sram"
    assert isinstance(pool.type, MemRefType) and pool.type.element_type == i8
    assert 'memref.global "private" @global_workspace' not in planned


def test_upstream_out_params_plan_the_same(bufferized: str) -> None:
    """What upstream's buffer-results-to-out-params produces plans to the same results."""
    out_params = mlir_opt(bufferized, UPSTREAM_OUT_PARAMS)
    reference = run_entry(bufferized, ENTRY, entry_signature(parse_module(bufferized), ENTRY))
    planned = usmp_opt(out_params, "-p", PIPELINE)
    signature = entry_signature(parse_module(planned), ENTRY)
    assert run_entry(planned, ENTRY, signature) == reference


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not found: compiles the C output")
def test_c_backend_takes_the_same_inputs(bufferized: str, tmp_path: Path) -> None:
    pipeline = f"usmp-import-memref,convert-linalg-to-loops,usmp{{entry={ENTRY}}}"
    for target, name in (("c", "net.c"), ("c-header", "net.h")):
        target = f"{target}{{entry={ENTRY} prefix=net}}"
        (tmp_path / name).write_text(usmp_opt(bufferized, "-p", pipeline, "-t", target))
    subprocess.run(
        ["gcc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-c", "net.c", "-o", "net.o"],
        cwd=tmp_path,
        check=True,
    )
