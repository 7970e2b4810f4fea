"""A stateful model (SVDF, SPEC §13) through `usmp_dialect.compile` and the project target:
`state_pools` declares the state pool, `state_bytes` and `metadata.json` report it, and the
project's `main.c` resets an external state pool before its run and prints TFLM's outputs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import usmp_dialect
from usmp_dialect.project.main_source import input_values, parse_outputs
from usmp_dialect.testing import tflm
from usmp_dialect.testing.harness import STRICT_FLAGS
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

pytest.importorskip("tflite")
NO_HOST_BUILD = None if shutil.which("gcc") and shutil.which("make") else "needs make and gcc"


def svdf_model() -> bytes:
    """int8 SVDF, int16 state [1, 3 * 2 * 4], rank 2."""
    rng = np.random.default_rng(5)
    tensors = [
        TensorSpec("input", np.int8, [1, 6], scales=[0.05], zero_points=[3]),
        TensorSpec(
            "wf",
            np.int8,
            [6, 6],
            data=rng.integers(-127, 128, (6, 6)).astype(np.int8),
            scales=[0.02],
        ),
        TensorSpec(
            "wt",
            np.int16,
            [6, 4],
            data=rng.integers(-400, 400, (6, 4)).astype(np.int16),
            scales=[0.0005],
        ),
        TensorSpec(
            "bias",
            np.int32,
            [3],
            data=rng.integers(-2000, 2000, 3).astype(np.int32),
            scales=[0.004 * 0.0005],
        ),
        TensorSpec("state", np.int16, [1, 24], scales=[0.004], variable=True),
        TensorSpec("output", np.int8, [1, 3], scales=[0.15], zero_points=[-5]),
    ]
    svdf = OperatorSpec("SVDF", [0, 1, 2, 3, 4], [5], "SVDFOptions", {"Rank": 2})
    return write_model(tensors, [svdf], [0], [5])


def test_compile_reports_the_state_pool() -> None:
    internal = usmp_dialect.compile(svdf_model(), prefix="kw")
    assert internal.state_bytes == 48
    assert internal.metadata["memory"]["state_bytes"] == 48
    assert {"name": "global_state", "kind": "state", "internal": True}.items() <= next(
        pool for pool in internal.metadata["pools"] if pool["kind"] == "state"
    ).items()
    assert "int32_t kw_reset_state(void);" in internal.header
    assert "#define KW_STATE_SIZE 48" in internal.header
    external = usmp_dialect.compile(
        svdf_model(), prefix="kw", state_pools=[{"name": "persist", "size_hint_bytes": 64}]
    )
    assert "int32_t kw_reset_state(struct kw_workspace_pools* workspace_pools);" in (
        external.header
    )
    assert "kw_reset_state(&pools);" in external.files["main.c"]
    with pytest.raises(
        usmp_dialect.CompileError,
        match=r"buffer 'state' \(48 bytes\) is larger than every candidate pool",
    ):
        usmp_dialect.compile(
            svdf_model(), prefix="kw", state_pools=[{"name": "persist", "size_hint_bytes": 40}]
        )


@pytest.mark.skipif(NO_HOST_BUILD is not None, reason=NO_HOST_BUILD or "")
@pytest.mark.parametrize("state_pools", [[], ["persist"]], ids=["internal", "external"])
def test_project_main_prints_tflm_s_outputs(tmp_path: Path, state_pools: list[str]) -> None:
    if not tflm.available():
        pytest.skip("needs tflite-micro (the reference runtime)")
    model = svdf_model()
    compiled = usmp_dialect.compile(model, prefix="kw", state_pools=state_pools)
    compiled.write_project(tmp_path / "kw")
    strict = " ".join(["-O2", *STRICT_FLAGS])
    done = subprocess.run(
        ["make", "-C", str(tmp_path / "kw"), f"CFLAGS={strict}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran = subprocess.run(
        [str(tmp_path / "kw" / "kw_main")], capture_output=True, text=True, check=False
    )
    status, outputs = parse_outputs(ran.stdout + ran.stderr)
    assert status == 0
    inputs = [input_values(0, (1, 6), "int8")]
    (reference,) = tflm.run(model, inputs, 1)
    np.testing.assert_array_equal(outputs["output"], np.asarray(reference).reshape(1, 3))
