"""`usmp_dialect.compile`: the Python entry point (SPEC §14) on the MLPerf Tiny kws model."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

import usmp_dialect
from usmp_dialect import CompileError, Pool

pytest.importorskip("tflite")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mlperf_tiny"
KWS = EXAMPLES / "kws_ref_model.tflite"


@pytest.fixture(scope="module")
def kws() -> usmp_dialect.CompiledModel:
    return usmp_dialect.compile(KWS, prefix="kws")


def test_import_is_light() -> None:
    """`import usmp_dialect` does not load xDSL or the compiler (they load on first use)."""
    code = (
        "import sys, usmp_dialect; "
        "print('xdsl' in sys.modules, 'usmp_dialect.compiler' in sys.modules)"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["False", "False"]


def test_kws_compiles_to_c_plan_and_metadata(kws: usmp_dialect.CompiledModel) -> None:
    assert kws.workspace_bytes == 5696  # the README's figure (streamed), at the lower bound
    assert "int32_t kws_run(struct kws_inputs* inputs, struct kws_outputs* outputs)" in kws.header
    assert '#include "kws.h"' in kws.c_source
    pools = {pool["kind"]: pool for pool in kws.report["pools"]}
    assert pools["workspace"]["size_bytes"] == kws.workspace_bytes
    assert pools["workspace"]["lower_bound_bytes"] == kws.workspace_bytes
    assert pools["constant"]["size_bytes"] == kws.constant_bytes > 30000
    assert kws.memory_map_svg.startswith("<svg") or "<svg" in kws.memory_map_svg[:200]
    meta = kws.metadata
    assert meta["model"] == {
        "name": "kws_ref_model",
        "source": "kws_ref_model.tflite",
        "sha256": hashlib.sha256(KWS.read_bytes()).hexdigest(),
    }
    (tensor,) = meta["inputs"]
    assert tensor["name"] == "input1"
    assert tensor["shape"] == [1, 49, 10, 1] and tensor["dtype"] == "int8"
    assert tensor["size_bytes"] == 490
    assert tensor["quantization"]["zero_point"] == 83
    assert tensor["quantization"]["scale"] == pytest.approx(0.5847029)
    (output,) = meta["outputs"]
    assert output["shape"] == [1, 12]
    assert output["quantization"] == {"scale": 1 / 256, "zero_point": -128}
    assert [(p["name"], p["kind"], p["internal"]) for p in meta["pools"]] == [
        ("global_workspace", "workspace", True),
        ("global_constant", "constant", True),
    ]
    assert meta["memory"] == {
        "workspace_bytes": 5696,
        "constant_bytes": kws.constant_bytes,
        "state_bytes": 0,
        "io_bytes": 502,
    }
    # The ten operators up to the global pool run as one fused group (row streaming).
    assert meta["operators"] == [
        "fused_conv_2d_0__average_pool_2d_9",
        "fully_connected_11",
        "softmax_12",
    ]


def test_bytes_give_the_same_c(kws: usmp_dialect.CompiledModel) -> None:
    from_bytes = usmp_dialect.compile(KWS.read_bytes(), prefix="kws")
    assert from_bytes.c_source == kws.c_source
    # The header's first comment names the model's file.
    assert from_bytes.header.split("*/", 1)[1] == kws.header.split("*/", 1)[1]
    assert from_bytes.metadata["model"]["source"] == "<bytes>"
    assert from_bytes.metadata["model"]["sha256"] == kws.metadata["model"]["sha256"]


def test_pools_as_the_flags_declare_them() -> None:
    compiled = usmp_dialect.compile(
        KWS,
        prefix="kws",
        workspace_pools=[{"name": "sram", "size_hint_bytes": 20000}],
        constant_pools=[Pool("flash", internal=True, section=".weights")],
    )
    pools = {pool["name"]: pool for pool in compiled.metadata["pools"]}
    assert pools["sram"] == {
        "name": "sram",
        "kind": "workspace",
        "internal": False,
        # The plain program (16,000 bytes) fits the hint, so the import takes no
        # transformation: the cheapest set that fits (SPEC §12).
        "size_bytes": 16000,
        "size_hint_bytes": 20000,
        "section": None,
    }
    assert pools["flash"]["internal"] and pools["flash"]["section"] == ".weights"
    assert "struct kws_workspace_pools" in compiled.header
    assert "KWS_SRAM_WORKSPACE_POOL_SIZE 16000" in compiled.header


def _usmp_opt_error(*args: str) -> str:
    ran = subprocess.run(
        [sys.executable, "-m", "usmp_dialect.tools.usmp_opt", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 1, ran.stderr
    return ran.stderr.strip().removeprefix("usmp-opt: error: ")


def test_errors_are_usmp_opt_s_lines(tmp_path: Path) -> None:
    truncated = tmp_path / "truncated.tflite"
    truncated.write_bytes(KWS.read_bytes()[:2000])
    with pytest.raises(CompileError) as error:
        usmp_dialect.compile(truncated)
    assert str(error.value) == _usmp_opt_error(str(truncated), "-t", "c")

    with pytest.raises(CompileError) as error:
        usmp_dialect.compile(KWS, workspace_pools=[Pool("sram", size_hint_bytes=1000)])
    message = str(error.value)
    assert "\n" not in message and "sram" in message
    assert message == _usmp_opt_error(
        str(KWS),
        "-t",
        "c",
        "--workspace-pools=sram",
        "--workspace-pools-size-hint-bytes=sram:1000",
    )

    with pytest.raises(CompileError, match=r"--workspace-pools: pool name 'not a name' is not an"):
        usmp_dialect.compile(KWS, workspace_pools=["not a name"])
    with pytest.raises(CompileError, match="cannot read input file"):
        usmp_dialect.compile(tmp_path / "missing.tflite")
    with pytest.raises(CompileError, match="not a TFLite flatbuffer"):
        usmp_dialect.compile(b"not a model")
    with pytest.raises(CompileError, match="prefix 'k-s' is not a C identifier"):
        usmp_dialect.compile(KWS, prefix="k-s")
