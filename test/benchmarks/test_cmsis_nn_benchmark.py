"""`benchmarks/cmsis_nn.py`: the CMSIS-NN program it generates is bit-exact with TFLM.

The benchmark itself is run by hand (QEMU, five models); this builds the generated program of
the smallest model (ad01_int8, ten fully connected layers) against CMSIS-NN's plain C kernels
with the host gcc, runs it under the firmware harness's `main`, and compares its outputs with
TFLM's on the same inputs. Needs Arm's CMSIS-NN source at `../shared/third_party/cmsis-nn`
beside the checkout (CI has it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from usmp_dialect.testing import firmware, tflm
from usmp_dialect.testing.module_file import load_file

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "benchmarks" / "cmsis_nn.py"
KERNELS = {
    "arm_convolve_wrapper_s8",
    "arm_depthwise_conv_wrapper_s8",
    "arm_fully_connected_s8",
    "arm_avgpool_s8",
    "arm_elementwise_add_s8",
    "arm_softmax_s8",
    "-",
}


def test_every_mlperf_tiny_model_is_mirrored() -> None:
    """Each operator of the five models becomes a CMSIS-NN call named like our function."""
    script = load_file(SCRIPT)
    for name in script.MODELS:
        path = script.model_path(name)
        graph = script.read_graph(path.read_bytes(), str(path))
        program = script.generate(graph)
        assert [layer.name for layer in program.layers] == [
            f"{op.opcode.lower()}_{op.index}" for op in graph.operators
        ]
        assert {layer.kernel for layer in program.layers} <= KERNELS
        io = {*graph.inputs, *graph.outputs}
        intermediate = [t.size_bytes for t in graph.tensors if t.data is None and t.index not in io]
        assert program.arena_bytes >= max(intermediate)


def test_a_difference_from_tflm_fails_loudly() -> None:
    script = load_file(SCRIPT)
    script.check_outputs("same", [[b"\x01\x02"]], [[b"\x01\x02"]])
    with pytest.raises(firmware.FirmwareError, match="differs from TFLM in 1 of 2 bytes"):
        script.check_outputs("model", [[b"\x01\x03"]], [[b"\x01\x02"]])


def test_ad01_on_host_cmsis_nn_equals_tflm(tmp_path: Path) -> None:
    script = load_file(SCRIPT)
    cmsis_nn = script.default_cmsis_nn()
    if cmsis_nn is None:
        pytest.skip("no CMSIS-NN source at ../shared/third_party/cmsis-nn beside the checkout")
    if not tflm.available():
        pytest.skip("needs PyPI tflite-micro")
    path = script.model_path("ad")
    graph = script.read_graph(path.read_bytes(), str(path))
    program = script.generate(graph)
    sources = [
        source
        for source in script.cmsis_sources(cmsis_nn)
        if source.parent.name in ("FullyConnectedFunctions", "NNSupportFunctions")
    ]
    library = script.build_library(cmsis_nn, tmp_path / "lib", None, sources)
    output = firmware.run_native(
        program.firmware_model("ad"),
        tmp_path / "native",
        script.DATA_SEEDS,
        extra_flags=("-isystem", str(cmsis_nn / "Include")),
        libraries=(library,),
    )
    printed = firmware.printed_outputs(output, 1)
    assert len(printed) == len(script.DATA_SEEDS)
    script.check_outputs("ad01 CMSIS-NN (host)", printed, script.tflm_outputs(path, graph, program))


def test_per_kind_rows_use_the_unfused_build_and_name_the_worst_layer() -> None:
    """The per-kind table (the "no worse per layer type" check) sums ours from the unfused
    build, where every layer has its own call; the fused group rows pair a group with the
    CMSIS-NN calls of its layers."""
    script = load_file(SCRIPT)
    layers = tuple(
        script.Layer(name, "", kernel, (1,), kind)
        for name, kernel, kind in (
            ("conv_2d_0", "arm_convolve_wrapper_s8", "conv 1x1 (pointwise)"),
            ("conv_2d_1", "arm_convolve_wrapper_s8", "conv 1x1 (pointwise)"),
            ("average_pool_2d_2", "arm_avgpool_s8", "average pool"),
            ("reshape_3", "-", "reshape"),
        )
    )

    def run(layer_counts: dict[str, int]) -> object:
        return script.Run(0, 0, 0, 0, 0, layer_counts, [])

    cmsis = run({"conv_2d_0": 100, "conv_2d_1": 200, "average_pool_2d_2": 50})
    default = run({"fused_conv_2d_0__average_pool_2d_2": 300})
    unfused = {"conv_2d_0": 90, "conv_2d_1": 210, "average_pool_2d_2": 20}
    macs = {"conv_2d_0": 10, "conv_2d_1": 20}
    result = script.ModelResult("m", "m4f", 30, macs, layers, cmsis, default, unfused)
    rows = script.kind_rows(result)
    assert set(rows) == {"conv 1x1 (pointwise)", "average pool"}
    pointwise = rows["conv 1x1 (pointwise)"]
    assert (pointwise.layers, pointwise.macs, pointwise.cmsis, pointwise.ours) == (2, 30, 300, 300)
    assert pointwise.worst == pytest.approx(1.05)
    ((group, members),) = script.fused_groups(result)
    assert group == "fused_conv_2d_0__average_pool_2d_2"
    assert [layer.name for layer in members] == ["conv_2d_0", "conv_2d_1", "average_pool_2d_2"]
    text = "\n".join(script.per_kind_section([result]))
    assert (
        "| m | m4f | conv 1x1 (pointwise) | 2 | 30 | 300 | 10.00 | 300 | 10.00 | 1.00 | 1.05 |"
        in text
    )
    assert "| all | m4f | largest ratio | | | | | | | 1.00 | 1.05 | |" in text
