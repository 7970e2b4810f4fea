"""`usmp-validate MODEL`: our C against the reference runtime, as a user runs it.

The MLPerf Tiny int8 models are bit-exact against TFLM (kws through the installed command,
ad01 and str_ww in-process; vww and resnet8, 35 and 14 s of CPU with two inputs, with
`USMP_VALIDATE_ALL=1`: test_mlperf_tiny.py checks them against TFLM anyway), the
float ad01 within the default tolerance, the hybrid kws equal to LiteRT's reference kernels,
an ONNX graph against onnxruntime; generated C with one output bit flipped, a missing reference
runtime, a bad model, a missing C compiler and bad `--input` files end with exit code 1 and the
right line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.validation import host, tflm
from usmp_dialect.validation.tflm import random_inputs

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "examples" / "mlperf_tiny"
LARGER_INT8 = ("vww_96_int8", "pretrainedResnet_quant")

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(not tflm.available(), reason="tflite-micro (the reference) is missing"),
]


def usmp_validate(*arguments: str) -> subprocess.CompletedProcess[str]:
    found = shutil.which("usmp-validate", path=str(Path(sys.executable).parent))
    command = [found] if found else [sys.executable, "-m", "usmp_dialect.tools.usmp_validate"]
    return subprocess.run(
        [*command, *arguments], capture_output=True, text=True, check=False, cwd=ROOT
    )


def run_in_process(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str, str]:
    from usmp_dialect.tools.usmp_validate import main

    with pytest.raises(SystemExit) as exit_info:
        main(list(arguments))
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, captured.err


def test_kws_is_bit_exact_against_tflm() -> None:
    ran = usmp_validate("examples/mlperf_tiny/kws_ref_model.tflite", "--inputs", "2")
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == ""
    lines = ran.stdout.splitlines()
    assert lines[0].startswith(
        "kws_ref_model.tflite: 2 random inputs (seed 0); reference TFLM (tflite-micro "
    )
    assert lines[1] == "output Identity (int8 1x12): bit-exact"
    assert lines[2] == (
        "workspace: 5,696 B (inputs and outputs outside), 6,186 B (inside); "
        "TFLM arena: head 16,000 B, total 24,272 B"
    )
    assert lines[3:] == ["PASS"]


@pytest.mark.parametrize("name", ["ad01_int8", "str_ww_ref_model", *LARGER_INT8])
def test_int8_models_are_bit_exact_against_tflm(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if name in LARGER_INT8 and os.environ.get("USMP_VALIDATE_ALL") != "1":
        pytest.skip("set USMP_VALIDATE_ALL=1 (about a minute of CPU)")
    status, out, err = run_in_process(capsys, str(MODELS / f"{name}.tflite"), "--inputs", "2")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert "reference TFLM (tflite-micro " in lines[0]
    assert lines[1].startswith("output ") and lines[1].endswith(": bit-exact")
    assert lines[-1] == "PASS"
    workspace = lines[-2]
    outside = int(
        workspace.split(" B (inputs and outputs outside)")[0].split()[-1].replace(",", "")
    )
    head = int(workspace.split("TFLM arena: head ")[1].split(" B")[0].replace(",", ""))
    assert 0 < outside <= head


def test_a_float_model_is_within_the_default_tolerance(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_in_process(capsys, str(MODELS / "ad01_fp32.tflite"), "--inputs", "2")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[1].startswith("output Identity (float32 1x640): max abs error ")
    assert lines[1].endswith(": pass (tolerance 1e-05)")
    assert lines[-1] == "PASS"


def test_the_hybrid_kws_is_checked_against_litert(capsys: pytest.CaptureFixture[str]) -> None:
    """TFLM refuses hybrid models; LiteRT's reference kernels run them, quantising the input of
    the hybrid convolution on the fly as our import does: the outputs are equal."""
    pytest.importorskip("ai_edge_litert.interpreter")
    arguments = [str(MODELS / "kws_ref_model_float32.tflite"), "--inputs", "2"]
    status, out, err = run_in_process(capsys, *arguments)
    lines = out.splitlines()
    assert lines[0].endswith(
        "reference LiteRT "
        + lines[0].split("reference LiteRT ")[1].split(" ")[0]
        + " reference kernels (TFLM refuses the model: Hybrid models are not supported on "
        "TFLite Micro.)"
    )
    assert lines[1].startswith("output Identity (float32 1x12): max abs error 0")
    assert lines[1].endswith(": pass (tolerance 1e-05)")
    assert lines[2] == "workspace: 64,000 B (inputs and outputs outside), 64,000 B (inside)"
    assert float(lines[1].split("max rel error ")[1].split(":")[0]) == 0.0
    assert (status, lines[-1], err) == (0, "PASS", "")


def test_an_onnx_model_against_onnxruntime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime")
    helper = pytest.importorskip("onnx.helper")

    from usmp_dialect.testing.onnx_models import graph_model, weights

    model = tmp_path / "net.onnx"
    model.write_bytes(
        graph_model(
            [
                helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
                helper.make_node("Relu", ["c"], ["r"]),
                helper.make_node("GlobalAveragePool", ["r"], ["y"]),
            ],
            [("x", (1, 3, 8, 8))],
            ["y"],
            {"w": weights(1, 4, 3, 3, 3), "b": weights(2, 4)},
        )
    )
    status, out, err = run_in_process(capsys, str(model), "--inputs", "3", "--seed", "7")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("net.onnx: 3 random inputs (seed 7); reference onnxruntime ")
    assert lines[1].startswith("output y (float32 1x4x1x1): max abs error ")
    assert lines[1].endswith(": pass (tolerance 1e-05)")
    assert lines[2].startswith("workspace: ") and "TFLM" not in lines[2]
    assert lines[3] == "PASS"


def test_a_wrong_result_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The generated C with the lowest bit of the first output value flipped at the end of
    `model_run`: one value per input differs by one."""
    generate_c = host.generate_c

    def flipped(*args: object, **kwargs: object) -> Path:
        source = generate_c(*args, **kwargs)  # type: ignore[arg-type]
        text = source.read_text()
        end = text.rindex("  return 0;\n}")
        source.write_text(text[:end] + "  Identity[0] = (int8_t)(Identity[0] ^ 1);\n" + text[end:])
        return source

    monkeypatch.setattr(host, "generate_c", flipped)
    status, out, err = run_in_process(capsys, str(MODELS / "ad01_int8.tflite"), "--inputs", "2")
    assert (status, err) == (1, "")
    lines = out.splitlines()
    assert (
        lines[1] == "output Identity (int8 1x640): 2 of 1280 values differ (max difference 1): FAIL"
    )
    assert lines[-1] == "FAIL: 1 of 1 outputs differ from the reference"


def test_inputs_from_npy_files_through_the_workspace_io_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three inputs stacked in one file, the C built with its I/O in the workspace (U4), the
    steps on stderr with -v."""
    model = MODELS / "ad01_int8.tflite"
    (port,), _ = host.entry_ports(model)
    stacked = np.stack([random_inputs([port], seed)[0] for seed in (3, 4, 5)])
    np.save(tmp_path / "three.npy", stacked)
    given = f"{port.name}={tmp_path / 'three.npy'}"
    status, out, err = run_in_process(capsys, str(model), "--input", given, "--workspace-io", "-v")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].startswith("ad01_int8.tflite: 3 inputs from .npy files; reference TFLM")
    assert lines[1] == "output Identity (int8 1x640): bit-exact"
    # The same figures whichever way the C was built.
    assert lines[2].startswith(
        "workspace: 256 B (inputs and outputs outside), 768 B (inside); TFLM arena: head 768 B"
    )
    steps = err.splitlines()
    assert all(step.startswith("usmp-validate: [") for step in steps)
    assert "compiling" in steps[0] and steps[-1].endswith("] done")


def test_a_missing_reference_runtime_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tflite_micro.python.tflite_micro.runtime", None)
    status, out, err = run_in_process(capsys, str(MODELS / "kws_ref_model.tflite"))
    assert (status, out) == (1, "")
    assert err == (
        "usmp-validate: error: checking a .tflite model needs tflite-micro, which is not "
        "installed: pip install 'usmp-dialect[validate]'\n"
    )


def test_a_missing_onnx_runtime_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    model = tmp_path / "net.onnx"
    model.write_bytes(b"")
    status, _, err = run_in_process(capsys, str(model))
    assert status == 1
    assert err == (
        "usmp-validate: error: checking a .onnx model needs onnxruntime, which is not "
        "installed: pip install 'usmp-dialect[validate]'\n"
    )


def test_litert_missing_for_a_model_tflm_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    from usmp_dialect.validation import oracles

    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    with pytest.raises(oracles.OracleMissing) as error:
        oracles.load(MODELS / "kws_ref_model_float32.tflite")
    assert str(error.value) == (
        "TFLM refuses this model and LiteRT (ai-edge-litert) is not installed: "
        "pip install 'usmp-dialect[validate]'"
    )


def test_a_bad_model_is_one_line(tmp_path: Path) -> None:
    model = tmp_path / "broken.tflite"
    model.write_bytes(b"not a flatbuffer")
    ran = usmp_validate(str(model))
    assert (ran.returncode, ran.stdout) == (1, "")
    assert ran.stderr == (
        f"usmp-validate: error: {model}: not a TFLite model (no 'TFL3' file identifier)\n"
    )


def test_an_unsupported_operator_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    helper = pytest.importorskip("onnx.helper")
    from usmp_dialect.testing.onnx_models import graph_model

    model = tmp_path / "exp.onnx"
    model.write_bytes(
        graph_model([helper.make_node("Exp", ["x"], ["y"])], [("x", (1, 4))], [("y", (1, 4))])
    )
    status, out, err = run_in_process(capsys, str(model))
    assert (status, out) == (1, "")
    assert err.startswith("usmp-validate: error: ") and err.count("\n") == 1
    assert "Exp" in err and str(model) in err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["missing.tflite"], "cannot read model file 'missing.tflite': No such file or directory"),
        (["README.md"], "README.md: not a .tflite or .onnx model"),
        (
            ["examples/mlperf_tiny/kws_ref_model.tflite", "--inputs", "0"],
            "--inputs must be at least 1",
        ),
        (
            ["examples/mlperf_tiny/kws_ref_model.tflite", "--input", "x"],
            "--input 'x': expected NAME=FILE.npy",
        ),
        (
            ["examples/mlperf_tiny/kws_ref_model.tflite", "--input", "x=missing.npy"],
            "cannot read --input file 'missing.npy': No such file or directory",
        ),
        (
            ["examples/mlperf_tiny/kws_ref_model.tflite", "--tolerance", "-1"],
            "--tolerance must be a number >= 0",
        ),
    ],
)
def test_user_errors_are_one_line(
    arguments: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(ROOT)
    status, out, err = run_in_process(capsys, *arguments)
    assert (status, out, err) == (1, "", f"usmp-validate: error: {message}\n")


def test_no_c_compiler_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CC", "no-such-compiler")
    status, out, err = run_in_process(capsys, str(MODELS / "kws_ref_model.tflite"))
    assert (status, out) == (1, "")
    assert err == "usmp-validate: error: the C compiler 'no-such-compiler' (CC) is not found\n"


def test_a_failing_c_compiler_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    compiler = tmp_path / "broken-cc"
    compiler.write_text(
        "#!/bin/sh\n"
        "echo 'model.c:1:1: note: first' >&2\n"
        "echo 'model.c:9:2: error: broken' >&2\n"
        "exit 1\n"
    )
    compiler.chmod(0o755)
    monkeypatch.setenv("CC", str(compiler))
    status, out, err = run_in_process(capsys, str(MODELS / "ad01_int8.tflite"))
    assert (status, out) == (1, "")
    gist = "model.c:9:2: error: broken"
    assert err == f"usmp-validate: error: {compiler} failed on the generated C: {gist}\n"
