"""Upstream MLIR both ways, with LLVM 22's real tools: tensor programs bufferized by `mlir-opt`,
planned by `usmp-opt -p 'usmp-import-memref,convert-linalg-to-loops,usmp,convert-pool-to-memref'`,
lowered back by `mlir-opt` and run by `mlir-runner` print exactly what the unplanned
(bufferized) program prints; `-t c` on the same inputs prints the same numbers as well."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from functools import cache
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


@cache
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
    assert "memref.alloc" not in planned  # every buffer is planned


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
    assert "@global_workspace" not in planned


def test_upstream_out_params_plan_the_same(bufferized: str) -> None:
    """What upstream's buffer-results-to-out-params produces plans to the same results."""
    out_params = mlir_opt(bufferized, UPSTREAM_OUT_PARAMS)
    reference = run_entry(bufferized, ENTRY, entry_signature(parse_module(bufferized), ENTRY))
    planned = usmp_opt(out_params, "-p", PIPELINE)
    signature = entry_signature(parse_module(planned), ENTRY)
    assert run_entry(planned, ENTRY, signature) == reference


def _c_struct_fields(header: str, struct: str) -> list[str]:
    match = re.search(rf"struct net_{struct} \{{(.*?)\}};", header, re.S)
    return re.findall(r"void\* (\w+);", match.group(1)) if match else []


_C_TYPES = {"f32": "float", "f64": "double", "i8": "int8_t", "i16": "int16_t", "i32": "int32_t"}


def _c_driver(header: str, arguments: list[tuple[str, MemRefType]]) -> str:
    """A C main that fills the inputs with the mlir-runner driver's pattern, runs the model and
    prints every entry argument element by element as the runner's driver does."""
    inputs, outputs = _c_struct_fields(header, "inputs"), _c_struct_fields(header, "outputs")
    lines = ["#include <stdint.h>", "#include <stdio.h>", "#include <string.h>", '#include "net.h"']
    body: list[str] = []
    for k, (name, memref_type) in enumerate(arguments):
        element = str(memref_type.element_type)
        c_type = _C_TYPES[element]
        count = memref_type.element_count()
        lines.append(f"static _Alignas(64) {c_type} {name}_data[{count}];")
        if name in inputs:
            value = f"(int32_t)((uint32_t)(i * 37 + {11 + k}) % 23u) - 11"
            scaled = f"({c_type})({value}) * 0.125{'f' if element == 'f32' else ''}"
            fill = scaled if element.startswith("f") else f"({c_type})({value})"
            body.append(f"  for (int32_t i = 0; i < {count}; ++i) {name}_data[i] = {fill};")
    for struct, names in (("inputs", inputs), ("outputs", outputs)):
        fields = ", ".join(f".{n} = {n}_data" for n in names)
        body.append(f"  struct net_{struct} {struct} = {{ {fields} }};")
    body.append("  if (net_run(&inputs, &outputs) != 0) return 1;")
    for name, memref_type in arguments:
        element = str(memref_type.element_type)
        count = memref_type.element_count()
        if element == "f32":
            convert = f"int32_t v; memcpy(&v, &{name}_data[i], 4);"
        else:
            convert = f"int32_t v = (int32_t){name}_data[i];"
        body.append(f'  for (int32_t i = 0; i < {count}; ++i) {{ {convert} printf("%d\\n", v); }}')
    return "\n".join([*lines, "int main(void) {", *body, "  return 0;", "}", ""])


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not found: compiles the C output")
def test_c_backend_computes_what_mlir_runner_does(bufferized: str, tmp_path: Path) -> None:
    """`-t c` on the same bufferized input prints the numbers the mlir-runner run prints."""
    _reference, runner_output, _planned = reference_and_planned(bufferized)
    pipeline = f"usmp-import-memref,convert-linalg-to-loops,usmp{{entry={ENTRY}}}"
    planned = usmp_opt(bufferized, "-p", pipeline)
    for target, name in (("c", "net.c"), ("c-header", "net.h")):
        target = f"{target}{{entry={ENTRY} prefix=net}}"
        (tmp_path / name).write_text(usmp_opt(planned, "-t", target))
    entry = next(
        op
        for op in parse_module(planned).walk()
        if isinstance(op, func.FuncOp) and op.sym_name.data == ENTRY
    )
    arguments = [(a.name_hint or "", a.type) for a in entry.body.block.args]
    assert all(isinstance(t, MemRefType) for _, t in arguments)
    driver = _c_driver((tmp_path / "net.h").read_text(), arguments)  # pyright: ignore[reportArgumentType]
    (tmp_path / "driver.c").write_text(driver)
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1"]
    subprocess.run(
        ["gcc", *flags, "net.c", "driver.c", "-o", "net", "-lm"], cwd=tmp_path, check=True
    )
    result = subprocess.run([str(tmp_path / "net")], capture_output=True, text=True, check=True)
    assert result.stdout.split() == re.findall(r"-?\d+", runner_output)
