"""`usmp-opt MODEL -t project -o DIR` (SPEC §14): every file, written atomically, and the
project builds and runs: CMake and make on the host, CMake with the shipped toolchain file on a
Cortex-M4F under QEMU, and as a subdirectory of another CMake project. The outputs `main.c`
prints equal TensorFlow Lite Micro's on the same input pattern."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import usmp_dialect
from usmp_dialect.project.main_source import input_values, parse_outputs
from usmp_dialect.testing import firmware, tflm
from usmp_dialect.testing.harness import STRICT_FLAGS
from usmp_dialect.validation.oracles import litert_outputs

pytest.importorskip("tflite")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mlperf_tiny"
KWS = EXAMPLES / "kws_ref_model.tflite"
FILES = [
    "kws.c",
    "kws.h",
    "kws_plan.json",
    "kws_memory_map.svg",
    "metadata.json",
    "main.c",
    "CMakeLists.txt",
    "Makefile",
    "README.md",
    "cortex-m/arm-none-eabi.cmake",
    "cortex-m/startup.c",
    "cortex-m/mps2_an386.ld",
]
NO_HOST_BUILD = (
    None
    if shutil.which("cmake") and shutil.which("gcc") and shutil.which("make")
    else "needs cmake, make and gcc"
)
TIMEOUT_S = 300


def usmp_opt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "usmp_dialect.tools.usmp_opt", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )


def run(command: list[str], cwd: Path | None = None) -> str:
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=cwd, timeout=TIMEOUT_S
    )
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The kws project written by usmp-opt, and what usmp-opt printed."""
    parent = tmp_path_factory.mktemp("project")
    ran = usmp_opt(str(KWS), "-t", "project{prefix=kws}", "-o", "kws", cwd=parent)
    assert ran.returncode == 0, ran.stderr
    return parent / "kws", ran.stdout


@pytest.fixture(scope="module")
def expected(project: tuple[Path, str]) -> dict[str, np.ndarray]:
    """TFLM's output for main.c's input pattern (the input as metadata.json describes it)."""
    if not tflm.available():
        pytest.skip("needs tflite-micro (the reference runtime)")
    meta = json.loads((project[0] / "metadata.json").read_text())
    (tensor,) = meta["inputs"]
    inputs = [input_values(0, tuple(tensor["shape"]), tensor["dtype"])]
    (output,) = tflm.run(KWS.read_bytes(), inputs, 1)
    return {"Identity": np.asarray(output).reshape(1, 12)}


def check_outputs(printed: str, expected: dict[str, np.ndarray]) -> None:
    status, outputs = parse_outputs(printed)
    assert status == 0, printed
    assert outputs.keys() == expected.keys()
    for name, values in expected.items():
        np.testing.assert_array_equal(outputs[name], values, err_msg=name)


def test_every_file_is_written(project: tuple[Path, str]) -> None:
    directory, printed = project
    written = sorted(
        str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file()
    )
    assert written == sorted(FILES)
    # The same files as the API's project, byte for byte.
    compiled = usmp_dialect.compile(KWS, prefix="kws")
    for name in FILES:
        if name != "kws_plan.json":  # its plan_time_s differs
            assert (directory / name).read_text() == compiled.files[name], name
    report = json.loads((directory / "kws_plan.json").read_text())
    assert {**report, "plan_time_s": 0} == {**compiled.report, "plan_time_s": 0}
    lines = printed.splitlines()
    assert lines[0] == f"wrote kws/: {' '.join(FILES)}"
    assert lines[1] == (
        f"workspace 5,696 bytes, constants {compiled.constant_bytes:,} bytes, "
        "inputs and outputs 502 bytes"
    )
    if tflm.available():
        assert lines[2].startswith("TFLM (tflite-micro) on the same model: arena head ")
    assert lines[-1] == (
        "build: cmake -S kws -B kws/build && cmake --build kws/build && kws/build/kws_main"
    )


def test_a_previous_project_is_replaced(tmp_path: Path) -> None:
    mlir = tmp_path / "tiny.mlir"
    mlir.write_text(
        "func.func @main(%x: memref<4xi8>, %y: memref<4xi8>) {\n"
        "  %t = memref.alloc() : memref<4xi8>\n"
        "  memref.copy %x, %t : memref<4xi8> to memref<4xi8>\n"
        "  memref.copy %t, %y : memref<4xi8> to memref<4xi8>\n"
        "  func.return\n}\n"
    )
    pipeline = "usmp-import-memref,usmp"
    out = tmp_path / "tiny"
    ran = usmp_opt(str(mlir), "-p", pipeline, "-t", "project{prefix=tiny}", "-o", str(out))
    assert ran.returncode == 0, ran.stderr
    (out / "extra.txt").write_text("left over")
    ran = usmp_opt(str(mlir), "-p", pipeline, "-t", "project{prefix=tiny}", "-o", str(out))
    assert ran.returncode == 0, ran.stderr
    assert not (out / "extra.txt").exists()
    assert json.loads((out / "metadata.json").read_text())["model"]["source"] == "tiny.mlir"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny", "tiny.mlir"]  # no temp dirs


def test_nothing_is_written_on_failure(tmp_path: Path) -> None:
    out = tmp_path / "out"
    ran = usmp_opt(str(KWS), "-t", "project{prefix=kws}")
    assert ran.returncode == 1
    assert ran.stderr == "usmp-opt: error: -t project writes a directory: give it with -o DIR\n"

    truncated = tmp_path / "bad.tflite"
    truncated.write_bytes(KWS.read_bytes()[:2000])
    ran = usmp_opt(str(truncated), "-t", "project", "-o", str(out))
    assert ran.returncode == 1 and ran.stderr.count("\n") == 1
    assert ran.stderr.startswith(f"usmp-opt: error: {truncated}: ")
    # A planning failure after the import: the pool cannot hold the model.
    ran = usmp_opt(
        str(KWS),
        "-t",
        "project",
        "-o",
        str(out),
        "--workspace-pools=sram",
        "--workspace-pools-size-hint-bytes=sram:1000",
    )
    assert ran.returncode == 1 and ran.stderr.count("\n") == 1, ran.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tflite"]

    # A directory that holds something else is not replaced.
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    ran = usmp_opt(str(truncated), "-t", "project", "-o", str(other))
    assert ran.returncode == 1
    assert "it exists and is not empty" in ran.stderr
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    ran = usmp_opt(str(truncated), "-t", "project", "-o", ".", cwd=other)
    assert ran.stderr == (
        "usmp-opt: error: cannot write project directory '.': it is the current directory or "
        "one of its parents\n"
    )


def test_a_model_file_implies_the_canonical_pipeline_for_c(tmp_path: Path) -> None:
    implied = usmp_opt(str(KWS), "-t", "c-header{prefix=kws}")
    explicit = usmp_opt(
        str(KWS),
        "-p",
        "usmp-import-memref,convert-linalg-to-loops,usmp",
        "-t",
        "c-header{prefix=kws}",
    )
    assert implied.returncode == 0, implied.stderr
    assert implied.stdout == explicit.stdout
    assert "kws_run" in implied.stdout
    # MLIR text keeps its own pipeline: unplanned, the C backend says what to run.
    mlir = tmp_path / "a.mlir"
    mlir.write_text("func.func @main() {\n  %a = memref.alloc() : memref<4xi8>\n  func.return\n}\n")
    ran = usmp_opt("a.mlir", "-t", "project", "-o", "p", cwd=tmp_path)
    assert ran.returncode == 1
    assert ran.stderr == (
        "usmp-opt: error: a.mlir: project target: no plan was made; the pipeline must run usmp "
        "(or usmp-plan), e.g. -p 'usmp-import-memref,convert-linalg-to-loops,usmp'\n"
    )
    assert not (tmp_path / "p").exists()


@pytest.mark.skipif(NO_HOST_BUILD is not None, reason=NO_HOST_BUILD or "")
def test_cmake_host_build_prints_tflm_s_outputs(
    project: tuple[Path, str], expected: dict[str, np.ndarray], tmp_path: Path
) -> None:
    directory, _ = project
    build = tmp_path / "build"
    strict = " ".join(STRICT_FLAGS)
    run(["cmake", "-S", str(directory), "-B", str(build), f"-DCMAKE_C_FLAGS={strict}"])
    run(["cmake", "--build", str(build)])
    check_outputs(run([str(build / "kws_main")]), expected)


@pytest.mark.skipif(NO_HOST_BUILD is not None, reason=NO_HOST_BUILD or "")
def test_makefile_host_build(
    project: tuple[Path, str], expected: dict[str, np.ndarray], tmp_path: Path
) -> None:
    directory, _ = project
    copy = tmp_path / "kws"
    shutil.copytree(directory, copy)
    run(["make", "-C", str(copy)])
    check_outputs(run([str(copy / "kws_main")]), expected)


@pytest.mark.skipif(NO_HOST_BUILD is not None, reason=NO_HOST_BUILD or "")
def test_add_subdirectory_from_a_parent_project(
    project: tuple[Path, str], expected: dict[str, np.ndarray], tmp_path: Path
) -> None:
    directory, _ = project
    parent = tmp_path / "app"
    parent.mkdir()
    shutil.copytree(directory, parent / "kws")
    (parent / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\n"
        "project(app C)\n"
        "add_subdirectory(kws)\n"
        "add_executable(app app.c)\n"
        "target_link_libraries(app PRIVATE kws)\n"
    )
    (parent / "app.c").write_text(
        "#include <stdio.h>\n"
        '#include "kws.h"\n'
        "static int8_t input[490], output[12];\n"
        "int main(void) {\n"
        "  for (int i = 0; i < 490; ++i) input[i] = (int8_t)((i * 7 + 3) % 256 - 128);\n"
        "  struct kws_inputs in = { .input1 = input };\n"
        "  struct kws_outputs out = { .Identity = output };\n"
        '  printf("status %d\\noutput Identity int8 [1, 12]\\n ", (int)kws_run(&in, &out));\n'
        '  for (int i = 0; i < 12; ++i) printf(" %d", output[i]);\n'
        '  printf("\\n");\n'
        "  return 0;\n"
        "}\n"
    )
    build = tmp_path / "build"
    run(["cmake", "-S", str(parent), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", str(build)])
    assert not list(build.rglob("kws_main")), "the example is only built at top level"
    check_outputs(run([str(build / "app")]), expected)


@pytest.mark.skipif(
    firmware.toolchain_missing() is not None or shutil.which("cmake") is None,
    reason=firmware.toolchain_missing() or "needs cmake",
)
def test_cortex_m_build_runs_under_qemu(
    project: tuple[Path, str], expected: dict[str, np.ndarray], tmp_path: Path
) -> None:
    directory, _ = project
    build = tmp_path / "build-m4"
    toolchain = directory / "cortex-m" / "arm-none-eabi.cmake"
    run(["cmake", "-S", str(directory), "-B", str(build), f"-DCMAKE_TOOLCHAIN_FILE={toolchain}"])
    run(["cmake", "--build", str(build)])
    elf = build / "kws_main.elf"
    command = ["qemu-system-arm", "-M", "mps2-an386", "-nographic", "-semihosting", "-kernel"]
    # QEMU writes the semihosting console to stderr when stdout is not a terminal.
    env = {**os.environ}
    done = subprocess.run(
        [*command, str(elf)], capture_output=True, text=True, timeout=TIMEOUT_S, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    check_outputs(done.stdout + done.stderr, expected)


@pytest.mark.skipif(NO_HOST_BUILD is not None, reason=NO_HOST_BUILD or "")
def test_a_float_model_prints_tflm_s_outputs(tmp_path: Path) -> None:
    """Float outputs go through main.c's own float printing (9 significant digits)."""
    if not tflm.available():
        pytest.skip("needs tflite-micro (the reference runtime)")
    model = EXAMPLES / "kws_ref_model_float32.tflite"
    compiled = usmp_dialect.compile(model, prefix="kwsf")
    compiled.write_project(tmp_path / "kwsf")
    strict = " ".join(["-O2", *STRICT_FLAGS])
    run(["make", "-C", str(tmp_path / "kwsf"), f"CFLAGS={strict}"])
    status, outputs = parse_outputs(run([str(tmp_path / "kwsf" / "kwsf_main")]))
    assert status == 0
    (tensor,) = compiled.metadata["inputs"]
    assert tensor["dtype"] == "float32"
    inputs = [input_values(0, tuple(tensor["shape"]), "float32")]
    # Hybrid (int8 weights): TFLM refuses it; LiteRT's reference kernels compute it as we do.
    pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed")
    (reference,) = litert_outputs(model.read_bytes(), inputs)
    tflm.assert_matches([outputs["Identity"].astype(np.float32)], [reference], ["Identity"])


@pytest.mark.skipif(NO_HOST_BUILD is not None, reason=NO_HOST_BUILD or "")
def test_main_drives_external_pools_and_workspace_io(
    expected: dict[str, np.ndarray], tmp_path: Path
) -> None:
    """U4 with an external workspace pool and a constant pool in a section: main.c defines
    the pool from the header's macros and reaches the I/O through kws_map_inputs/outputs."""
    compiled = usmp_dialect.compile(
        KWS,
        prefix="kws",
        workspace_pools=["sram"],
        constant_pools=[{"name": "flash", "internal": True, "section": ".rodata.weights"}],
        workspace_io=True,
    )
    assert compiled.metadata["interface"] == {
        "run": "kws_run",
        "header": "kws.h",
        "workspace_io": True,
        "external_pools": True,
    }
    compiled.write_project(tmp_path / "kws")
    main = (tmp_path / "kws" / "main.c").read_text()
    assert "static _Alignas(64) uint8_t pool_sram[KWS_SRAM_WORKSPACE_POOL_SIZE" in main
    assert "kws_map_inputs(&pools)" in main
    strict = " ".join(["-O2", *STRICT_FLAGS])
    run(["make", "-C", str(tmp_path / "kws"), f"CFLAGS={strict}"])
    check_outputs(run([str(tmp_path / "kws" / "kws_main")]), expected)
