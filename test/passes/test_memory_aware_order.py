"""`usmp-memory-aware-order` on imported models: the reordered programs compute what
onnxruntime and TFLite Micro compute, the workspace shrinks where branches allow it, the graph
read from the IR agrees with the planner's liveness, and models already in their best order are
left as they were."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.analysis.buffer_info import extract_buffer_info
from usmp_dialect.analysis.operator_graph import operator_graph
from usmp_dialect.frontends.options import ImportOptions
from usmp_dialect.graph.graph import Access, peak_live_bytes
from usmp_dialect.graph.order import memory_aware_order
from usmp_dialect.passes.import_memref import UsmpImportMemrefPass
from usmp_dialect.passes.memory_aware_order import UsmpMemoryAwareOrderPass
from usmp_dialect.testing import tflm
from usmp_dialect.testing.harness import pipeline_context
from usmp_dialect.validation.host import compile_model, usmp_opt

ROOT = Path(__file__).resolve().parents[2]
MLPERF = ROOT / "examples" / "mlperf_tiny"
PLAN = "usmp-import-memref,convert-linalg-to-loops,usmp"
needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


def workspace_bytes(model: Path, options: str, tmp_path: Path) -> int:
    """The planned workspace of `model` through the pipeline with `usmp{options}`."""
    report = tmp_path / "plan.json"
    extra = f" {options}" if options else ""
    subprocess.run(
        [*usmp_opt(), str(model), "-p", f'{PLAN}{{report="{report}"{extra}}}', "-o", "/dev/null"],
        check=True,
        capture_output=True,
    )
    pools = json.loads(report.read_text())["pools"]
    return sum(pool["size_bytes"] for pool in pools if pool["kind"] == "workspace")


def imported(model: bytes, frontend: str, in_place: str = "all"):
    """The module a frontend imports from `model`, after `usmp-import-memref` (one function
    per operator: no fused row streaming)."""
    if frontend == "onnx":
        from usmp_dialect.frontends.onnx import import_onnx as import_model
    else:
        from usmp_dialect.frontends.tflite import import_tflite as import_model
    module = import_model(model, f"model.{frontend}", ImportOptions(fuse="none", in_place=in_place))
    UsmpImportMemrefPass().apply(pipeline_context(), module)
    return module


# -- ONNX ---------------------------------------------------------------------------------


@needs_gcc
def test_onnx_branches_reordered_match_onnxruntime(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from usmp_dialect.testing.onnx_models import branches_model, check_against_onnxruntime

    model = branches_model()
    check_against_onnxruntime(model, tmp_path)  # the default pipeline reorders
    path = tmp_path / "model.onnx"
    # Breadth first, the three convolution outputs are live together; branch by branch the
    # first pooling (its 16 KiB input and the 8 KiB Concat) is the peak.
    assert workspace_bytes(path, "", tmp_path) == 24_576
    assert workspace_bytes(path, "order=program", tmp_path) == 40_960


def test_onnx_branches_graph_has_concat_slices() -> None:
    pytest.importorskip("onnx")
    from usmp_dialect.testing.onnx_models import branches_model

    described = operator_graph(imported(branches_model(), "onnx"))
    assert described is not None
    graph = described.graph
    names = [operator.name for operator in graph.operators]
    assert names == [
        "conv_0",
        "conv_1",
        "conv_2",
        "maxpool_4",
        "averagepool_5",
        "maxpool_6",
        "conv_8",
    ]
    buffers = {buffer.name: index for index, buffer in enumerate(graph.buffers)}
    cat = buffers["cat"]
    # Each pooling writes its slice of the Concat's one byte buffer; the last conv reads it all.
    assert graph.operators[3].writes == (Access(cat, 0, 4096),)
    assert graph.operators[4].writes == (Access(cat, 4096, 6144),)
    assert graph.operators[5].writes == (Access(cat, 6144, 8192),)
    assert graph.operators[6].reads == (Access(cat, 0, 8192),)
    assert graph.buffers[buffers["x"]].kind == "input" and not graph.buffers[buffers["x"]].planned
    result = memory_aware_order(graph)
    assert (result.program_peak_bytes, result.peak_bytes) == (40_960, 24_576)
    assert result.proven_optimal
    assert result.order == (0, 3, 1, 2, 4, 5, 6)


def test_zoo_graph_already_in_its_best_order_is_left_as_it_was() -> None:
    """squeezenet's peak is its first convolution's own tensors: no order needs less, and the
    pass leaves the entry function exactly as imported."""
    onnx = pytest.importorskip("onnx")
    from usmp_dialect.testing.onnx_models import with_random_weights, zoo_path

    model = with_random_weights(onnx.load(zoo_path("squeezenet")), seed=0).SerializeToString()
    module = imported(model, "onnx")
    main = next(
        op for op in module.ops if getattr(op, "sym_name", None) and op.sym_name.data == "main"
    )
    before = str(main)
    described = operator_graph(module)
    assert described is not None
    result = memory_aware_order(described.graph)
    assert not result.changed and result.proven_optimal
    assert result.peak_bytes == result.lower_bound_bytes == 3_928_576
    UsmpMemoryAwareOrderPass().apply(pipeline_context(), module)
    assert str(main) == before


# -- TFLite -------------------------------------------------------------------------------


def tflite_branches_model() -> bytes:
    """int8, two branches of one input written breadth first: a 3x3 convolution to 16 channels
    then a strided 1x1 one to 8, and a 3x3 convolution to 8 channels then a 2x2 max pool, added.
    In file order both 3x3 outputs are live under the strided one (6,656 bytes); branch by
    branch the strided convolution's own tensors are the peak (4,608)."""
    from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

    rng = np.random.default_rng(7)

    def conv_tensors(
        name: str, out_channels: int, in_channels: int, kernel: int
    ) -> list[TensorSpec]:
        scales = list(rng.uniform(0.002, 0.02, out_channels))
        shape = (out_channels, kernel, kernel, in_channels)
        return [
            TensorSpec(
                f"w{name}",
                np.int8,
                shape,
                data=rng.integers(-127, 128, size=shape, dtype=np.int8),
                scales=scales,
                zero_points=[0] * out_channels,
            ),
            TensorSpec(
                f"b{name}",
                np.int32,
                (out_channels,),
                data=rng.integers(-3000, 3000, size=out_channels, dtype=np.int32),
                scales=[0.05 * s for s in scales],
            ),
        ]

    tensors = [
        TensorSpec("x", np.int8, (1, 16, 16, 4), scales=[0.05], zero_points=[-7]),  # 0
        *conv_tensors("a", 16, 4, 3),  # 1, 2
        TensorSpec("a", np.int8, (1, 16, 16, 16), scales=[0.09], zero_points=[4]),  # 3
        *conv_tensors("b", 8, 4, 3),  # 4, 5
        TensorSpec("b", np.int8, (1, 16, 16, 8), scales=[0.08], zero_points=[-2]),  # 6
        *conv_tensors("s", 8, 16, 1),  # 7, 8
        TensorSpec("pa", np.int8, (1, 8, 8, 8), scales=[0.1], zero_points=[1]),  # 9
        TensorSpec("pb", np.int8, (1, 8, 8, 8), scales=[0.08], zero_points=[-2]),  # 10
        TensorSpec("y", np.int8, (1, 8, 8, 8), scales=[0.12], zero_points=[0]),  # 11
    ]
    same = {"Padding": 0, "StrideH": 1, "StrideW": 1, "FusedActivationFunction": 1}
    strided = {"Padding": 1, "StrideH": 2, "StrideW": 2, "FusedActivationFunction": 0}
    pool = {"Padding": 1, "StrideH": 2, "StrideW": 2, "FilterHeight": 2, "FilterWidth": 2}
    operators = [
        OperatorSpec("CONV_2D", [0, 1, 2], [3], "Conv2DOptions", same),
        OperatorSpec("CONV_2D", [0, 4, 5], [6], "Conv2DOptions", same),
        OperatorSpec("CONV_2D", [3, 7, 8], [9], "Conv2DOptions", strided),
        OperatorSpec("MAX_POOL_2D", [6], [10], "Pool2DOptions", pool),
        OperatorSpec("ADD", [9, 10], [11], "AddOptions", {"FusedActivationFunction": 0}),
    ]
    return write_model(tensors, operators, [0], [11])


@needs_gcc
@pytest.mark.skipif(not tflm.available(), reason="tflite-micro is not installed")
@pytest.mark.parametrize("workspace_io", [False, True])
def test_tflite_branches_reordered_match_tflm(workspace_io: bool, tmp_path: Path) -> None:
    model = tflite_branches_model()
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path, workspace_io=workspace_io)
    tflm.compare(compiled, model, seeds=range(3))
    described = operator_graph(imported(model, "tflite"))
    assert described is not None
    result = memory_aware_order(described.graph)
    assert (result.program_peak_bytes, result.peak_bytes) == (6_656, 4_608)
    assert workspace_bytes(path, "", tmp_path) == 4_608
    assert workspace_bytes(path, "order=program", tmp_path) == 6_656


@pytest.mark.parametrize(
    "name", ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8", "vww_96_int8"]
)
def test_mlperf_tiny_graph_liveness_agrees_with_the_planner(name: str) -> None:
    """The graph's peak in program order is the planner's memory pressure, and every model is
    already in its best order (its peak is one operator's own tensors) — the program as the
    file gives it (in place, the ResNet's residual ADD needs fewer bytes of its own while the
    peak stays, so the bound no longer shows the order is best)."""
    pytest.importorskip("tflite")
    module = imported((MLPERF / f"{name}.tflite").read_bytes(), "tflite", in_place="none")
    described = operator_graph(module)
    assert described is not None
    assert not any(operator.barrier for operator in described.graph.operators)
    pressure = extract_buffer_info(module).memory_pressure_bytes
    assert peak_live_bytes(described.graph) == pressure
    result = memory_aware_order(described.graph)
    assert not result.changed and result.peak_bytes == result.lower_bound_bytes == pressure


def test_order_option_is_checked(tmp_path: Path) -> None:
    source = ROOT / "test" / "passes" / "usmp-memory-aware-order.mlir"
    run = subprocess.run(
        [*usmp_opt(), str(source), "-p", "usmp{order=fastest}", "-o", str(tmp_path / "out.mlir")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1
    assert run.stderr.strip().splitlines() == [
        "usmp-opt: error: invalid -p 'usmp{order=fastest}': order must be one of memory, "
        "program, not fastest"
    ]
    assert not (tmp_path / "out.mlir").exists()
