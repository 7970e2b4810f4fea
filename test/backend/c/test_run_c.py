"""End-to-end tests of the C backend: plan, print C, compile it, run it, compare with numpy.

Every program of `programs.py` goes through `usmp-opt -p convert-linalg-to-loops,usmp -t c`
(and `-t c-header`), is compiled with `gcc` (and clang when installed) under the strict warning
set of SPEC §11 (`strict_flags`: `-std=c11 -Wall -Wextra -Werror -Wpedantic -Wcast-align=strict
-Wconversion -Wshadow -Wdouble-promotion`; the harness itself without the last five), once
plain and once with `-fsanitize=address,undefined`, and is run by a small C harness on seeded
random data. Integers must match exactly, floats to 1e-5 relative.
Use cases: U1 (internal pools), U2 (two models sharing one external pool), U3 (several pools,
internal and external, workspace and constant), U4 (inputs and outputs inside the pool).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stdout
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.testing.harness import strict_flags
from usmp_dialect.testing.module_file import load_file
from usmp_dialect.tools.usmp_opt import UsmpOptMain

HERE = Path(__file__).parent
programs = load_file(HERE / "programs.py")

PLAN = "usmp"
CFLAGS = ["-std=c11", "-Wall", "-Wextra", "-Werror"]
BUILDS = {
    "plain": ["-O2"],
    "sanitized": ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"],
}
COMPILERS = [cc for cc in ("gcc", "clang") if shutil.which(cc)]

pytestmark = pytest.mark.skipif(not COMPILERS, reason="no C compiler (gcc/clang) installed")


def generate(
    program: programs.Program,
    directory: Path,
    prefix: str,
    pipeline: str = PLAN,
    flags: Sequence[str] = (),
) -> None:
    """Writes `<prefix>.c` and `<prefix>.h` for `program` through the usmp-opt driver."""
    source = directory / f"{prefix}.mlir"
    source.write_text(program.mlir)
    for target, suffix in (("c", "c"), ("c-header", "h")):
        args = [
            str(source),
            "-p",
            ",".join(p for p in ("convert-linalg-to-loops", pipeline) if p),
            "-t",
            f"{target}{{prefix={prefix}}}",
            "-o",
            str(directory / f"{prefix}.{suffix}"),
            *flags,
        ]
        with redirect_stdout(StringIO()):
            UsmpOptMain(args=args).run()


def c_array_bytes(shape: tuple[int, ...], dtype: np.dtype[np.generic]) -> int:
    return int(np.prod(shape)) * dtype.itemsize


HARNESS_PRELUDE = """
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* load(const char* path, size_t size) {
  void* data = calloc(size ? size : 1, 1);
  FILE* file = fopen(path, "rb");
  if (!data || !file || fread(data, 1, size, file) != size) {
    fprintf(stderr, "cannot read %s\\n", path);
    exit(2);
  }
  fclose(file);
  return data;
}

static void save(const char* path, const void* data, size_t size) {
  FILE* file = fopen(path, "wb");
  if (!file || fwrite(data, 1, size, file) != size) {
    fprintf(stderr, "cannot write %s\\n", path);
    exit(2);
  }
  fclose(file);
}
"""


@dataclass(frozen=True)
class Model:
    """A generated model inside a harness: its prefix and program."""

    prefix: str
    program: programs.Program


def run_call_u1(model: Model, tag: str, pools_arg: str | None) -> str:
    """Harness statements that load inputs, run the model (SPEC U1-U3) and save outputs."""
    p, program = model.prefix, model.program
    lines = [f"  {{ struct {p}_inputs in; struct {p}_outputs out;"]
    for name, array in program.inputs.items():
        lines.append(f'    in.{name} = load("{p}_in_{name}_{tag}.bin", {array.nbytes});')
    for name, (shape, dtype) in program.outputs.items():
        lines.append(f"    out.{name} = calloc({c_array_bytes(shape, dtype)}, 1);")
    arguments = "&in, &out" + (f", {pools_arg}" if pools_arg else "")
    lines.append(f"    if ({p}_run({arguments}) != 0) return 1;")
    for name, (shape, dtype) in program.outputs.items():
        size = c_array_bytes(shape, dtype)
        lines.append(f'    save("{p}_out_{name}_{tag}.bin", out.{name}, {size});')
    for name in program.inputs:
        lines.append(f"    free(in.{name});")
    for name in program.outputs:
        lines.append(f"    free(out.{name});")
    lines.append("  }")
    return "\n".join(lines)


def run_call_u4(model: Model, tag: str, pools_arg: str) -> str:
    """Harness statements for U4: copy inputs into the pool, run, copy outputs out."""
    p, program = model.prefix, model.program
    lines = [
        f"  {{ struct {p}_inputs in = {p}_map_inputs({pools_arg});",
        f"    struct {p}_outputs out = {p}_map_outputs({pools_arg});",
    ]
    for name, array in program.inputs.items():
        lines += [
            f'    void* data_{name} = load("{p}_in_{name}_{tag}.bin", {array.nbytes});',
            f"    memcpy(in.{name}, data_{name}, {array.nbytes}); free(data_{name});",
        ]
    lines.append(f"    if ({p}_run({pools_arg}) != 0) return 1;")
    for name, (shape, dtype) in program.outputs.items():
        size = c_array_bytes(shape, dtype)
        lines.append(f'    save("{p}_out_{name}_{tag}.bin", out.{name}, {size});')
    lines.append("  }")
    return "\n".join(lines)


def compile_and_run(directory: Path, sources: list[str], harness: str) -> None:
    """Compiles harness + sources with every compiler and build, runs each binary."""
    (directory / "harness.c").write_text(harness)
    jobs: list[tuple[str, str]] = [(cc, build) for cc in COMPILERS for build in BUILDS]

    def build_and_run(job: tuple[str, str]) -> str:
        cc, build = job
        binary = directory / f"harness_{cc}_{build}"
        objects: list[str] = []
        for source in sources:
            obj = directory / f"{Path(source).stem}_{cc}_{build}.o"
            # The generated C under the strict embedded warning set (SPEC §11).
            command = [cc, *strict_flags(cc), *BUILDS[build], "-c", source, "-o", str(obj)]
            result = subprocess.run(command, cwd=directory, capture_output=True, text=True)
            if result.returncode != 0:
                return f"{' '.join(command)} failed:\n{result.stderr}"
            objects.append(str(obj))
        command = [
            cc,
            *CFLAGS,
            *BUILDS[build],
            "harness.c",
            *objects,
            "-o",
            str(binary),
            "-lm",
        ]
        result = subprocess.run(command, cwd=directory, capture_output=True, text=True)
        if result.returncode != 0:
            return f"{' '.join(command)} failed:\n{result.stderr}"
        run = subprocess.run(
            [str(binary), f"{cc}_{build}"], cwd=directory, capture_output=True, text=True
        )
        if run.returncode != 0:
            return f"{binary.name} exited with {run.returncode}:\n{run.stderr}"
        return ""

    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = [e for e in pool.map(build_and_run, jobs) if e]
    assert not errors, "\n".join(errors)


def write_inputs(directory: Path, model: Model, tag: str) -> None:
    for name, array in model.program.inputs.items():
        (directory / f"{model.prefix}_in_{name}_{tag}.bin").write_bytes(
            np.ascontiguousarray(array).tobytes()
        )


def check_outputs(directory: Path, model: Model, tag: str, run: str) -> None:
    """Compares the outputs a binary wrote with numpy."""
    program = model.program
    expected = program.reference(program.inputs)
    for name, (shape, dtype) in program.outputs.items():
        path = directory / f"{model.prefix}_out_{name}_{tag}_{run}.bin"
        actual = np.frombuffer(path.read_bytes(), dtype=dtype).reshape(shape)
        reference = expected[name]
        if dtype.kind == "f":
            scale = float(np.max(np.abs(reference))) or 1.0
            np.testing.assert_allclose(
                actual, reference, rtol=1e-5, atol=1e-6 * scale, err_msg=f"{name} ({run})"
            )
        else:
            np.testing.assert_array_equal(
                actual, reference.astype(dtype), err_msg=f"{name} ({run})"
            )


def runs() -> list[str]:
    return [f"{cc}_{build}" for cc in COMPILERS for build in BUILDS]


def harness_main(body: str, includes: list[str], globals_: str = "") -> str:
    include_lines = "\n".join(f'#include "{header}"' for header in includes)
    return (
        f"{include_lines}\n{HARNESS_PRELUDE}\n{globals_}\n"
        "int main(int argc, char** argv) {\n"
        "  if (argc != 2) return 2;\n"
        "  const char* run = argv[1];\n"
        "  char path[256];\n"
        "  (void)path; (void)run;\n"
        f"{body}\n"
        "  return 0;\n"
        "}\n"
    )


def tagged_save_paths(body: str) -> str:
    """Output files get the run name appended (one binary per compiler/build writes them)."""
    return body.replace('save("', 'snprintf(path, sizeof path, "').replace(
        '.bin", out.', '_%s.bin", run); save(path, out.'
    )


# ---- U1: internal pools ----------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(programs.ALL_PROGRAMS))
def test_u1_internal_pools(name: str, tmp_path: Path) -> None:
    program = programs.ALL_PROGRAMS[name](np.random.default_rng(1234))
    model = Model("model", program)
    generate(program, tmp_path, model.prefix)
    header = (tmp_path / "model.h").read_text()
    assert "int32_t model_run(struct model_inputs* inputs, struct model_outputs* outputs);" in (
        header
    )
    write_inputs(tmp_path, model, "a")
    body = tagged_save_paths(run_call_u1(model, "a", None))
    compile_and_run(tmp_path, ["model.c"], harness_main(body, ["model.h"]))
    for run in runs():
        check_outputs(tmp_path, model, "a", run)


# ---- U2: one external workspace pool shared by two models --------------------------------------


def test_u2_two_models_share_one_pool(tmp_path: Path) -> None:
    rng = np.random.default_rng(99)
    first = Model("net_a", programs.residual(rng))
    second = Model("net_b", programs.int8_requant(rng))
    for model in (first, second):
        generate(model.program, tmp_path, model.prefix, flags=["--workspace-pools=sram"])
    header_a = (tmp_path / "net_a.h").read_text()
    header_b = (tmp_path / "net_b.h").read_text()
    assert "#define NET_A_SRAM_WORKSPACE_POOL_SIZE" in header_a
    assert "#define NET_B_SRAM_WORKSPACE_POOL_SIZE" in header_b
    # A second input set for each model: alternate runs see different data in the pool.
    first_b = Model("net_a", _with_fresh_inputs(first.program, rng))
    second_b = Model("net_b", _with_fresh_inputs(second.program, rng))
    for model in (first, second):
        write_inputs(tmp_path, model, "a")
    for model in (first_b, second_b):
        write_inputs(tmp_path, model, "b")
    globals_ = (
        "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n"
        "#define SHARED_SIZE MAX(NET_A_SRAM_WORKSPACE_POOL_SIZE, "
        "NET_B_SRAM_WORKSPACE_POOL_SIZE)\n"
        "static _Alignas(16) uint8_t shared_sram[SHARED_SIZE > 0 ? SHARED_SIZE : 1];\n"
    )
    calls = []
    for tag in ("a", "b"):
        calls += [
            "  { struct net_a_workspace_pools pools = { shared_sram };",
            "  memset(shared_sram, 0xA5, sizeof shared_sram);",
            run_call_u1(first, tag, "&pools"),
            "  }",
            "  { struct net_b_workspace_pools pools = { shared_sram };",
            "  memset(shared_sram, 0x5A, sizeof shared_sram);",
            run_call_u1(second, tag, "&pools"),
            "  }",
        ]
    body = tagged_save_paths("\n".join(calls))
    harness = harness_main(body, ["net_a.h", "net_b.h"], globals_)
    compile_and_run(tmp_path, ["net_a.c", "net_b.c"], harness)
    for run in runs():
        check_outputs(tmp_path, first, "a", run)
        check_outputs(tmp_path, second, "a", run)
        check_outputs(tmp_path, first_b, "b", run)
        check_outputs(tmp_path, second_b, "b", run)


def _with_fresh_inputs(program: programs.Program, rng: np.random.Generator) -> programs.Program:
    """The same model (same weights) with new random inputs."""
    inputs: dict[str, np.ndarray] = {}
    for name, array in program.inputs.items():
        if array.dtype.kind == "f":
            inputs[name] = rng.uniform(-1, 1, array.shape).astype(array.dtype)
        else:
            info = np.iinfo(array.dtype)
            inputs[name] = rng.integers(info.min, info.max, array.shape, dtype=array.dtype)
    return programs.Program(program.name, program.mlir, inputs, program.outputs, program.reference)


# ---- U3: several pools, internal and external, workspace and constant -------------------------


@pytest.mark.parametrize(
    ("name", "sram_bytes"),
    [
        ("residual", 600),  # one 576-byte activation fits the SRAM, the others spill to DRAM
        ("conv2d", 512),  # nothing fits: the external SRAM pool stays empty
        ("unused_buffers", 16),  # nothing fits: pools only unused buffers reach are no parameters
    ],
)
def test_u3_several_pools(name: str, sram_bytes: int, tmp_path: Path) -> None:
    program = programs.ALL_PROGRAMS[name](np.random.default_rng(5))
    model = Model("net", program)
    flags = [
        "--workspace-pools=sram,dram",
        f"--workspace-pools-size-hint-bytes=sram:{sram_bytes}",
        "--internal-pools=dram",
        "--constant-pools=flash",
    ]
    generate(program, tmp_path, "net", flags=flags)
    header = (tmp_path / "net.h").read_text()
    source = (tmp_path / "net.c").read_text()
    assert "#define NET_SRAM_WORKSPACE_POOL_SIZE" in header
    assert "#define NET_FLASH_CONSTANT_POOL_SIZE" in header
    assert "#define NET_FLASH_CONSTANT_POOL_DATA" in header
    assert "NET_DRAM_" not in header  # internal: defined by the source itself
    assert "static _Alignas(16) uint8_t dram_pool[" in source
    write_inputs(tmp_path, model, "a")
    globals_ = (
        "static _Alignas(16) uint8_t sram[NET_SRAM_WORKSPACE_POOL_SIZE > 0 ? "
        "NET_SRAM_WORKSPACE_POOL_SIZE : 1];\n"
        "static const _Alignas(16) uint8_t flash[NET_FLASH_CONSTANT_POOL_SIZE] = "
        "{ NET_FLASH_CONSTANT_POOL_DATA };\n"
    )
    body = (
        "  struct net_workspace_pools pools = { 0 };\n"
        "  pools.sram = sram;\n"
        "  pools.flash = (void*)flash;\n" + tagged_save_paths(run_call_u1(model, "a", "&pools"))
    )
    compile_and_run(tmp_path, ["net.c"], harness_main(body, ["net.h"], globals_))
    for run in runs():
        check_outputs(tmp_path, model, "a", run)


# ---- U4: inputs and outputs inside the workspace pool ----------------------------------------


@pytest.mark.parametrize("name", ["matmul", "int8_requant", "pooling", "unused_buffers"])
def test_u4_io_in_workspace(name: str, tmp_path: Path) -> None:
    program = programs.ALL_PROGRAMS[name](np.random.default_rng(11))
    model = Model("net", program)
    generate(
        program,
        tmp_path,
        "net",
        pipeline="usmp{workspace-io=true}",
        flags=["--workspace-pools=sram"],
    )
    header = (tmp_path / "net.h").read_text()
    assert "struct net_inputs net_map_inputs(struct net_workspace_pools* workspace_pools);" in (
        header
    )
    assert "int32_t net_run(struct net_workspace_pools* workspace_pools);" in header
    write_inputs(tmp_path, model, "a")
    globals_ = "static _Alignas(16) uint8_t sram[NET_SRAM_WORKSPACE_POOL_SIZE];\n"
    body = "  struct net_workspace_pools pools = { sram };\n" + tagged_save_paths(
        run_call_u4(model, "a", "&pools")
    )
    compile_and_run(tmp_path, ["net.c"], harness_main(body, ["net.h"], globals_))
    for run in runs():
        check_outputs(tmp_path, model, "a", run)


def test_u4_hand_planned(tmp_path: Path) -> None:
    """U4 on IR in the planned form of DESIGN.md, independent of the planning passes."""
    rng = np.random.default_rng(21)
    weights = rng.uniform(-1, 1, (16, 8)).astype(np.float32)
    mlir = (
        (programs.PROGRAMS_DIR / "hand_planned_u4.mlir")
        .read_text()
        .replace(
            "$weight_bytes",
            "dense<[" + ", ".join(str(int(b)) for b in weights.view(np.int8).reshape(-1)) + "]>"
            " : tensor<512xi8>",
        )
    )
    x = rng.uniform(-1, 1, (4, 16)).astype(np.float32)

    def reference(inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {"y": np.maximum(inputs["x"].astype(np.float64) @ weights.astype(np.float64), 0)}

    program = programs.Program(
        "hand_u4", mlir, {"x": x}, {"y": ((4, 8), np.dtype(np.float32))}, reference
    )
    model = Model("net", program)
    generate(program, tmp_path, "net", pipeline="")
    header = (tmp_path / "net.h").read_text()
    assert "#define NET_SRAM_WORKSPACE_POOL_SIZE 512" in header
    assert "struct net_outputs net_map_outputs(struct net_workspace_pools* workspace_pools);" in (
        header
    )
    write_inputs(tmp_path, model, "a")
    globals_ = "static _Alignas(16) uint8_t sram[NET_SRAM_WORKSPACE_POOL_SIZE];\n"
    body = "  struct net_workspace_pools pools = { sram };\n" + tagged_save_paths(
        run_call_u4(model, "a", "&pools")
    )
    compile_and_run(tmp_path, ["net.c"], harness_main(body, ["net.h"], globals_))
    for run in runs():
        check_outputs(tmp_path, model, "a", run)


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--workspace-pools=sram", "--constant-pools=flash"],
    ],
    ids=["u1", "u3"],
)
def test_header_is_self_contained_and_cpp_safe(flags: list[str], tmp_path: Path) -> None:
    """The header compiles on its own as C, and as C++ with C linkage for `<p>_run`."""
    program = programs.matmul(np.random.default_rng(3))
    generate(program, tmp_path, "net", flags=flags)
    (tmp_path / "use.c").write_text('#include "net.h"\nint main(void) { return 0; }\n')
    commands = [[cc, *CFLAGS, "-c", "use.c", "-o", f"use_{cc}.o"] for cc in COMPILERS]
    cxx = next((c for c in ("g++", "clang++") if shutil.which(c)), None)
    if cxx is not None:
        (tmp_path / "use.cpp").write_text(
            '#include "net.h"\n'
            "static auto volatile run = &net_run;\n"
            "int main() { return run == nullptr; }\n"
            'static_assert(sizeof(net_inputs) == sizeof(void*), "one input");\n'
        )
        commands.append([cxx, "-std=c++11", "-Wall", "-Wextra", "-Werror", "-c", "use.cpp"])
    for command in commands:
        result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
        assert result.returncode == 0, f"{' '.join(command)}:\n{result.stderr}"
    if cxx is not None:
        symbols = subprocess.run(
            ["nm", "use.o"], cwd=tmp_path, capture_output=True, text=True
        ).stdout
        assert " net_run" in symbols  # not a mangled C++ name
