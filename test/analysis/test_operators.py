"""The operator view of a plan (issue 25): `usmp.operator` on imported functions, the report's
`operators` / `peak` / per-buffer `tensor` and `live_operators`, `usmp-opt --analyze`, the
one-line error of a size hint that cannot be met, and the progress line on a terminal."""

from __future__ import annotations

import json
import math
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tflite = pytest.importorskip("tflite")

from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KWS = ROOT / "examples" / "mlperf_tiny" / "kws_ref_model.tflite"
PIPELINE = 'usmp-import-memref,convert-linalg-to-loops,usmp{{report="{report}"}}'
USMP_OPT = shutil.which("usmp-opt") or str(Path(sys.executable).parent / "usmp-opt")


def small_model() -> bytes:
    """x -> CONV_2D -> a -> DEPTHWISE_CONV_2D -> c; ADD(a, c) -> d; FULLY_CONNECTED(d) -> y,
    float32, 8x8 images: every byte count below follows from these shapes."""
    rng = np.random.default_rng(0)

    def weights(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape).astype(np.float32)

    same = {"Padding": tflite.Padding.SAME, "StrideW": 1, "StrideH": 1}
    tensors = [
        TensorSpec("x", np.float32, (1, 8, 8, 3)),  # 0: 768 B, the model input
        TensorSpec("conv/w", np.float32, (4, 3, 3, 3), data=weights(4, 3, 3, 3)),
        TensorSpec("conv/b", np.float32, (4,), data=weights(4)),
        TensorSpec("conv/out", np.float32, (1, 8, 8, 4)),  # 3: a, 1024 B
        TensorSpec("dw/w", np.float32, (1, 3, 3, 4), data=weights(1, 3, 3, 4)),
        TensorSpec("dw/b", np.float32, (4,), data=weights(4)),
        TensorSpec("dw/out", np.float32, (1, 8, 8, 4)),  # 6: c, 1024 B
        TensorSpec("add/out", np.float32, (1, 8, 8, 4)),  # 7: d, 1024 B
        TensorSpec("fc/w", np.float32, (10, 256), data=weights(10, 256)),
        TensorSpec("fc/b", np.float32, (10,), data=weights(10)),
        TensorSpec("y", np.float32, (1, 10)),  # 10: 40 B, the model output
    ]
    operators = [
        OperatorSpec("CONV_2D", [0, 1, 2], [3], "Conv2DOptions", same),
        OperatorSpec(
            "DEPTHWISE_CONV_2D",
            [3, 4, 5],
            [6],
            "DepthwiseConv2DOptions",
            {**same, "DepthMultiplier": 1},
        ),
        OperatorSpec("ADD", [3, 6], [7], "AddOptions", {}),
        OperatorSpec("FULLY_CONNECTED", [7, 8, 9], [10], "FullyConnectedOptions", {}),
    ]
    return write_model(tensors, operators, [0], [10])


# The program as imported, one function per operator, each writing its own output: fused row
# streaming and in-place operators, on by default, change the small model's live bytes.
PLAIN = ("--fuse=none", "--in-place=none")


def run_usmp_opt(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [USMP_OPT, *args], capture_output=True, text=True, cwd=cwd, check=False, timeout=600
    )


def plan_report(model: Path, tmp_path: Path) -> dict:
    """The plan report of `model`, one function per operator writing its own buffers."""
    report = tmp_path / "plan.json"
    run = run_usmp_opt(str(model), *PLAIN, "-p", PIPELINE.format(report=report), "-t", "c")
    assert run.returncode == 0, run.stderr
    return json.loads(report.read_text())


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("small") / "small.tflite"
    path.write_bytes(small_model())
    return path


def test_imported_functions_carry_operator_facts(small: Path) -> None:
    run = run_usmp_opt(str(small), *PLAIN)
    assert run.returncode == 0, run.stderr
    text = run.stdout
    # MACs by hand: 8x8x4 outputs x 3x3x3 taps; 8x8x4 x 3x3; ADD none; 10 x 256.
    for facts in (
        'usmp.operator = {type = "CONV_2D", index = 0 : i64, macs = 6912 : i64}',
        'usmp.operator = {type = "DEPTHWISE_CONV_2D", index = 1 : i64, macs = 2304 : i64}',
        'usmp.operator = {type = "ADD", index = 2 : i64, macs = 0 : i64}',
        'usmp.operator = {type = "FULLY_CONNECTED", index = 3 : i64, macs = 2560 : i64}',
    ):
        assert facts in text
    # Standard MLIR: a stock xdsl-opt parses and verifies it.
    xdsl_opt = shutil.which("xdsl-opt") or str(Path(sys.executable).parent / "xdsl-opt")
    stock = subprocess.run(
        [xdsl_opt], input=text, capture_output=True, text=True, check=False, timeout=600
    )
    assert stock.returncode == 0, stock.stderr
    assert "usmp.operator" in stock.stdout


def test_report_operators_peak_and_live_operators(small: Path, tmp_path: Path) -> None:
    report = plan_report(small, tmp_path)
    operators = report["operators"]
    assert [(o["index"], o["name"], o["type"], o["macs"]) for o in operators] == [
        (0, "conv_2d_0", "CONV_2D", 6912),
        (1, "depthwise_conv_2d_1", "DEPTHWISE_CONV_2D", 2304),
        (2, "add_2", "ADD", 0),
        (3, "fully_connected_3", "FULLY_CONNECTED", 2560),
    ]
    # in / out bytes: the activations each reads and writes (weights are constants, not
    # operands); live: a; a + c; a + c + d; d (x and y are arguments, outside the workspace).
    assert [(o["input_bytes"], o["output_bytes"], o["scratch_bytes"]) for o in operators] == [
        (768, 1024, 0),
        (1024, 1024, 0),
        (2048, 1024, 0),
        (1024, 40, 0),
    ]
    assert [o["live_bytes"] for o in operators] == [1024, 2048, 3072, 1024]
    assert sorted(operators[2]["live_tensors"]) == ["add/out", "conv/out", "dw/out"]
    workspace = next(pool for pool in report["pools"] if pool["kind"] == "workspace")
    assert workspace["size_bytes"] == 3072
    peak = report["peak"]
    assert (peak["operator"], peak["name"], peak["type"], peak["live_bytes"]) == (
        2,
        "add_2",
        "ADD",
        3072,
    )
    assert sorted((t["tensor"], t["size_bytes"], t["producer"]) for t in peak["tensors"]) == [
        ("add/out", 1024, 2),
        ("conv/out", 1024, 0),
        ("dw/out", 1024, 1),
    ]
    buffers = {buffer["name"]: buffer for buffer in report["buffers"]}
    # Buffers keep their C-safe names and map them to the model's tensor names.
    assert buffers["conv_out"]["tensor"] == "conv/out"
    assert buffers["conv_out"]["live_operators"] == [[0, 2]]
    assert buffers["dw_out"]["live_operators"] == [[1, 2]]
    assert buffers["add_out"]["live_operators"] == [[2, 3]]
    # The keys of SPEC §8 are all still there, in their order.
    assert list(buffers["conv_out"])[:9] == [
        "name",
        "function",
        "kind",
        "size_bytes",
        "alignment",
        "pool",
        "offset",
        "live",
        "conflicts",
    ]


def test_hand_written_program_operators_are_its_calls(tmp_path: Path) -> None:
    """Without `usmp.operator`, an operator is a call: its type is the callee's name and its
    index the call's position; a callee's own allocation is its scratch."""
    source = tmp_path / "program.mlir"
    source.write_text(
        """
func.func @main(%x: memref<64xi8>, %y: memref<64xi8>) {
  %t = memref.alloc() : memref<128xi8>
  func.call @produce(%x, %t) : (memref<64xi8>, memref<128xi8>) -> ()
  func.call @consume(%t, %y) : (memref<128xi8>, memref<64xi8>) -> ()
  func.return
}
func.func @produce(%in: memref<64xi8>, %out: memref<128xi8>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %in[%c0] : memref<64xi8>
  memref.store %v, %out[%c0] : memref<128xi8>
  func.return
}
func.func @consume(%in: memref<128xi8>, %out: memref<64xi8>) {
  %c0 = arith.constant 0 : index
  %s = memref.alloc() : memref<256xi8>
  %v = memref.load %in[%c0] : memref<128xi8>
  memref.store %v, %s[%c0] : memref<256xi8>
  %w = memref.load %s[%c0] : memref<256xi8>
  memref.store %w, %out[%c0] : memref<64xi8>
  func.return
}
"""
    )
    report_path = tmp_path / "plan.json"
    pipeline = f'usmp-import-memref,usmp-plan{{report="{report_path}"}}'
    run = run_usmp_opt(str(source), "-p", pipeline)
    assert run.returncode == 0, run.stderr
    report = json.loads(report_path.read_text())
    rows = [
        (o["index"], o["type"], o["macs"], o["input_bytes"], o["output_bytes"])
        for o in report["operators"]
    ]
    assert rows == [(0, "produce", None, 64, 128), (1, "consume", None, 128, 64)]
    assert [o["scratch_bytes"] for o in report["operators"]] == [0, 256]
    # t is read for the last time before s is first written: they never live together.
    assert [o["live_bytes"] for o in report["operators"]] == [128, 256]
    assert report["peak"]["operator"] == 1
    buffers = {buffer["name"]: buffer for buffer in report["buffers"]}
    assert buffers["t"]["live_operators"] == [[0, 1]]
    assert buffers["s"]["live_operators"] == [[1, 1]]
    assert buffers["s"]["tensor"] == "s"


def independent_kws_macs() -> list[tuple[int, str, int]]:
    """(operator index, builtin name, MACs) of kws's convolutions and fully connected layers,
    read with the `tflite` package alone."""
    model = tflite.Model.GetRootAsModel(KWS.read_bytes(), 0)
    graph = model.Subgraphs(0)
    names = {value: name for name, value in vars(tflite.BuiltinOperator).items()}
    found = []
    for index in range(graph.OperatorsLength()):
        op = graph.Operators(index)
        code = model.OperatorCodes(op.OpcodeIndex())
        name = names[max(code.BuiltinCode(), code.DeprecatedBuiltinCode())]
        out = graph.Tensors(op.Outputs(0)).ShapeAsNumpy()
        weights = graph.Tensors(op.Inputs(1)).ShapeAsNumpy() if op.InputsLength() > 1 else None
        if name == "CONV_2D":
            # [out channels, kh, kw, in channels]: one MAC per tap per output element
            macs = math.prod(out) * int(weights[1] * weights[2] * weights[3])
        elif name == "DEPTHWISE_CONV_2D":
            macs = math.prod(out) * int(weights[1] * weights[2])
        elif name == "FULLY_CONNECTED":
            macs = int(out[-1]) * int(weights[1])
        else:
            continue
        found.append((index, name, int(macs)))
    return found


def test_kws_report(tmp_path: Path) -> None:
    report = plan_report(KWS, tmp_path)
    operators = report["operators"]
    by_index = {o["index"]: o for o in operators}
    expected = independent_kws_macs()
    assert len(expected) == 10  # 5 convolutions, 4 depthwise, 1 fully connected
    assert [(i, by_index[i]["type"], by_index[i]["macs"]) for i, _, _ in expected] == expected
    assert all(o["macs"] == 0 for o in operators if o["type"] in ("AVERAGE_POOL_2D", "SOFTMAX"))
    workspace = next(pool for pool in report["pools"] if pool["kind"] == "workspace")
    assert workspace["size_bytes"] == 16000
    assert report["peak"]["live_bytes"] == workspace["size_bytes"]
    assert max(o["live_bytes"] for o in operators) == workspace["size_bytes"]
    assert sum(t["size_bytes"] for t in report["peak"]["tensors"]) == 16000
    assert report["peak"]["operator"] == 1
    # Operators in execution order; RESHAPE (operator 10) is a view and calls nothing.
    assert [o["index"] for o in operators] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12]
    for buffer in report["buffers"]:
        if buffer["kind"] == "intermediate":
            assert buffer["live_operators"], buffer["name"]


def test_analyze_prints_the_table(small: Path) -> None:
    run = run_usmp_opt(str(small), *PLAIN, "--analyze")
    assert run.returncode == 0, run.stderr
    assert run.stderr == ""
    lines = run.stdout.splitlines()
    assert lines[0].endswith("small.tflite: 4 operator calls, 11,776 MACs, entry @main")
    assert "pool @global_workspace: 3,072 bytes (lower bound 3,072, at the lower bound)" in lines
    assert "inputs and outputs (outside the pools): 808 bytes (x 768, y 40)" in lines
    rows = [line.split() for line in lines if line.strip().startswith(("0 ", "1 ", "2 ", "3 "))]
    assert rows == [
        ["0", "conv_2d_0", "CONV_2D", "6,912", "768", "1,024", "0", "1,024"],
        ["1", "depthwise_conv_2d_1", "DEPTHWISE_CONV_2D", "2,304", "1,024", "1,024", "0", "2,048"],
        ["2", "add_2", "ADD", "0", "2,048", "1,024", "0", "3,072", "<-", "peak"],
        ["3", "fully_connected_3", "FULLY_CONNECTED", "2,560", "1,024", "40", "0", "1,024"],
    ]
    assert "peak: 3,072 bytes live while operator 2 (ADD @add_2) runs; tensors live then:" in lines
    assert "#include" not in run.stdout


def test_analyze_with_a_size_hint_too_small(small: Path) -> None:
    run = run_usmp_opt(
        str(small),
        *PLAIN,
        "--analyze",
        "--workspace-pools=sram",
        "--workspace-pools-size-hint-bytes=sram:2500",
    )
    assert run.returncode == 1
    assert "<- peak <- over" in run.stdout  # the table comes first, marking the operator over
    assert "1 operator needs more than the size hint (2,500 bytes)" in run.stdout
    assert run.stderr.count("\n") == 1


def test_size_hint_error_names_the_peak_operator_and_tensors(small: Path, tmp_path: Path) -> None:
    output = tmp_path / "out.c"
    run = run_usmp_opt(
        str(small),
        *PLAIN,
        "-p",
        "usmp-import-memref,convert-linalg-to-loops,usmp",
        "-t",
        "c",
        "-o",
        str(output),
        "--workspace-pools=sram",
        "--workspace-pools-size-hint-bytes=sram:2500",
    )
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("usmp-opt: error: ")
    assert (
        "pool @sram (2500 bytes) is too small: at least 3072 bytes of buffers are live together "
        "while operator 2 (ADD @add_2) runs: 'conv/out' (1024 bytes, written by operator 0), "
        "'dw/out' (1024 bytes, written by operator 1), 'add/out' (1024 bytes, written by "
        "operator 2)"
    ) in run.stderr
    assert not output.exists()


def test_analyze_refuses_planning_passes_and_targets(small: Path) -> None:
    run = run_usmp_opt(str(small), *PLAIN, "--analyze", "-p", "usmp-import-memref,usmp")
    assert run.returncode == 1
    assert "--analyze plans the module itself" in run.stderr
    run = run_usmp_opt(str(small), *PLAIN, "--analyze", "-t", "c")
    assert run.returncode == 1
    assert "drop -t" in run.stderr


def run_on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Runs usmp-opt with stdout and stderr on a pseudo-terminal; (exit code, what it wrote)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.execve(USMP_OPT, [USMP_OPT, *args], env)
    written = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        written.append(data)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(written)


def test_progress_on_a_terminal_only(small: Path, tmp_path: Path) -> None:
    env = {**os.environ, "USMP_PROGRESS_AFTER_S": "0"}
    output = tmp_path / "table.txt"
    code, written = run_on_terminal([str(small), "--analyze", "-o", str(output)], env)
    assert code == 0
    assert b"usmp-opt: importing operator 1/4 (CONV_2D)" in written
    # Later steps may be skipped by the ten-a-second limit; every status line is ours.
    statuses = [line for line in written.split(b"\r\x1b[K") if line]
    assert statuses and all(line.startswith(b"usmp-opt: ") for line in statuses)
    assert written.endswith(b"\r\x1b[K")  # the status line is erased at the end
    # Not a terminal: nothing on stderr (the same environment).
    piped = subprocess.run(
        [USMP_OPT, str(small), "--analyze"], capture_output=True, env=env, check=False
    )
    assert piped.returncode == 0 and piped.stderr == b""


def test_onnx_nodes_carry_operator_facts(tmp_path: Path) -> None:
    """ONNX: the node's op type and index; a Relu fused into its Conv adds nothing."""
    pytest.importorskip("onnx")
    from onnx import helper

    from usmp_dialect.testing.onnx_models import graph_model, imported_text

    rng = np.random.default_rng(1)
    init = {
        "w": rng.standard_normal((6, 3, 3, 3)).astype(np.float32),
        "b": rng.standard_normal(6).astype(np.float32),
        "g": rng.standard_normal((5, 6 * 4 * 4)).astype(np.float32),
        "gb": rng.standard_normal(5).astype(np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Flatten", ["r"], ["f"]),
        helper.make_node("Gemm", ["f", "g", "gb"], ["y"], transB=1),
    ]
    model = graph_model(nodes, [("x", (1, 3, 4, 4))], ["y"], init)
    text = imported_text(model, tmp_path)
    # Conv: 6x4x4 outputs x 3x3x3 taps; Gemm: 5 outputs x 96.
    assert 'usmp.operator = {type = "Conv", index = 0 : i64, macs = 2592 : i64}' in text
    assert 'usmp.operator = {type = "Gemm", index = 3 : i64, macs = 480 : i64}' in text
    assert '"Relu"' not in text


def test_memory_map_names_tensors_and_operators(small: Path, tmp_path: Path) -> None:
    svg = tmp_path / "map.svg"
    pipeline = f'usmp-import-memref,convert-linalg-to-loops,usmp{{svg="{svg}"}}'
    run = run_usmp_opt(str(small), *PLAIN, "-p", pipeline, "-t", "c")
    assert run.returncode == 0, run.stderr
    text = svg.read_text()
    for label in ("0 CONV_2D", "1 DEPTHWISE_CONV_2D", "2 ADD", "3 FULLY_CONNECTED"):
        assert f">{label}</text>" in text
    assert "<title>operator 2: ADD @add_2, 3072 B live</title>" in text
    assert "<title>conv/out (buffer conv_out): 1024 B at offset" in text
    assert "live during operators 0 to 2</title>" in text
    assert ">operators \u2192</text>" in text
