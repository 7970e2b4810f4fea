"""The MLPerf Tiny reference models (examples/mlperf_tiny, the files of ../shared/data/models)
through `usmp-opt MODEL.tflite -p 'usmp-import-memref,convert-linalg-to-loops,usmp' -t c`,
compiled with `gcc -std=c11 -Wall -Wextra -Werror`, against TensorFlow Lite Micro.

* int8 models: every output byte equals TFLM's on seeded random inputs; float models within
  1e-5 of the largest output. The hybrid kws (int8 weights, float activations), which TFLM
  refuses, equals LiteRT's reference kernels bit for bit (its hybrid convolution quantises the
  input on the fly, as ours does); imported with `--hybrid=dequantize` it is compared with
  TFLM running the same model with its weights dequantised.
* Under ASan/UBSan with the inputs and outputs inside the workspace (U4), the outputs still
  match, and the planned workspace is at most TFLM's arena head (which also holds the inputs
  and outputs), and below it where TFLM's greedy planner is above the lower bound.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflm import assert_matches, random_inputs
from usmp_dialect.validation.host import CompiledModel, compile_model
from usmp_dialect.validation.oracles import litert_outputs

ROOT = Path(__file__).resolve().parents[3]
MODELS = sorted((ROOT / "examples" / "mlperf_tiny").glob("*.tflite"))
SHARED = ROOT.parent / "shared" / "data" / "models" / "mlperf_tiny"
HYBRID = {"kws_ref_model_float32"}

pytestmark = [
    pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed"),
    pytest.mark.skipif(
        not tflm.available(), reason="tflite-micro (the reference) is not installed"
    ),
]


def reference_model(model: Path) -> bytes:
    data = model.read_bytes()
    return tflm.dequantize_weights(data) if model.stem in HYBRID else data


def compare_hybrid_with_litert(compiled: CompiledModel, model: Path, seeds: range) -> None:
    """A hybrid model imported as LiteRT computes it equals LiteRT's reference kernels."""
    pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed")
    for seed in seeds:
        inputs = random_inputs(compiled.inputs, seed)
        ours, _ = compiled.run(inputs)
        for mine, theirs in zip(ours, litert_outputs(model.read_bytes(), inputs), strict=True):
            np.testing.assert_array_equal(mine, theirs)


def test_the_bundled_models_are_the_shared_ones() -> None:
    assert len(MODELS) == 9
    if SHARED.is_dir():
        for model in MODELS:
            assert model.read_bytes() == (SHARED / model.name).read_bytes()


@pytest.mark.parametrize("model", MODELS, ids=lambda path: path.stem)
def test_matches_tflm(model: Path, tmp_path: Path) -> None:
    options = ["--hybrid=dequantize"] if model.stem in HYBRID else []
    compiled = compile_model(model, tmp_path, options=options)
    tflm.compare(compiled, reference_model(model), range(3))


@pytest.mark.parametrize("model", MODELS, ids=lambda path: path.stem)
def test_workspace_io_sanitized_within_tflm_head(model: Path, tmp_path: Path) -> None:
    report = tmp_path / "plan.json"
    compiled = compile_model(model, tmp_path, workspace_io=True, sanitize=True, report=report)
    if model.stem in HYBRID:
        compare_hybrid_with_litert(compiled, model, range(100, 101))
    else:
        tflm.compare(compiled, reference_model(model), range(100, 101))
    plan = json.loads(report.read_text())
    (workspace,) = [pool for pool in plan["pools"] if pool["kind"] == "workspace"]
    assert workspace["size_bytes"] == workspace["lower_bound_bytes"]
    if model.stem in HYBRID:
        return  # TFLM refuses the model: no arena to compare with
    head = tflm.arena(model).head_bytes
    assert workspace["size_bytes"] <= head
    if model.stem == "vww_96_int8":  # TFLM's greedy planner is above the bound here
        assert workspace["size_bytes"] < head


FLOAT = {"ad01_fp32", "kws_ref_model_float32", "pretrainedResnet", "vww_96_float"}
FLOAT_MODELS = [model for model in MODELS if model.stem in FLOAT]


@pytest.mark.parametrize("model", FLOAT_MODELS, ids=lambda path: path.stem)
def test_float_models_match_litert(model: Path, tmp_path: Path) -> None:
    """A second, independent reference for float: LiteRT's optimised (XNNPACK) kernels sum in
    other orders, so agreement is to 1e-5 of the largest output, not bit for bit. (The hybrid
    kws runs on LiteRT's own optimised kernels, whose hybrid convolution quantises the input as
    its reference kernel and ours do; the XNNPACK delegate quantises it its own way, 0.5-1.3 %
    of the largest output away from both.)"""
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    compiled = compile_model(model, tmp_path)
    resolver = (
        {"experimental_op_resolver_type": litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}
        if model.stem in HYBRID
        else {}
    )
    interpreter = litert.Interpreter(model_content=model.read_bytes(), **resolver)
    interpreter.allocate_tensors()
    for seed in range(2):
        inputs = random_inputs(compiled.inputs, seed)
        for detail, value in zip(interpreter.get_input_details(), inputs, strict=True):
            interpreter.set_tensor(detail["index"], value)
        interpreter.invoke()
        theirs = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
        ours, _ = compiled.run(inputs)
        assert_matches(ours, theirs)
