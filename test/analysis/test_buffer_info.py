"""The liveness analysis against TVM's own expectations (../shared/data/tvm-usmp-cases.json),
on TVM's test structures rebuilt in our IR (test/passes/tvm/)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.universe import Universe

from usmp_dialect.analysis.buffer_info import (
    AnalysisError,
    buffer_names,
    conflict_names,
    extract_buffer_info,
    reachable_functions,
)
from usmp_dialect.dialects.usmp import AllocationOp

ROOT = Path(__file__).resolve().parents[2]
TVM_DIR = ROOT / "test" / "passes" / "tvm"
CASES_PATH = ROOT / "data" / "tvm-usmp-cases.json"


def parse(text: str) -> ModuleOp:
    context = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        context.register_dialect(name, factory)
    return Parser(context, text).parse_module()


def tvm_case(case_id: str) -> dict[str, object]:
    cases = json.loads(CASES_PATH.read_text())["cases"]
    return next(case for case in cases if case["id"] == case_id)


def our_name(tvm_name: str) -> str:
    """TVM's `sid_9` is `%sid9` in our files (xDSL drops `_N` suffixes from SSA names); the
    second softmax operator's `T_softmax_norm2` is our `T_softmax_norm_1`."""
    if tvm_name.startswith("T_softmax_") and tvm_name.endswith("2"):
        return tvm_name[:-1] + "_1"
    return re.sub(r"_(\d+)$", r"\1", tvm_name)


def edges_of(module: ModuleOp) -> set[tuple[str, str]]:
    analysis = extract_buffer_info(module)
    edges: set[tuple[str, str]] = set()
    for info, names in zip(analysis.buffers, conflict_names(analysis), strict=True):
        if info.kind == "constant":
            continue
        for other in names:
            edges.add((min(info.name, other), max(info.name, other)))
    return edges


@pytest.mark.parametrize(
    ("file", "case_id", "key"),
    [
        ("mobilenet-subgraph.mlir", "extract_linear_structure", "conflict_edges"),
        ("resnet-subgraph.mlir", "algo_resnet_subgraph", "conflict_edges"),
        (
            "multiple-calls-synthetic.mlir",
            "extract_multiple_calls_same_primfunc_synthetic",
            "conflicts_used_for_reimpl",
        ),
    ],
)
def test_conflicts_are_tvms(file: str, case_id: str, key: str) -> None:
    case = tvm_case(case_id)
    module = parse((TVM_DIR / file).read_text())
    expected: set[tuple[str, str]] = set()
    data = case[key]
    if isinstance(data, dict):
        pairs = [(a, b) for a, others in data.items() for b in others]
    else:
        assert isinstance(data, list)
        pairs = [tuple(pair) for pair in data]
    constants = {b["name"] for b in case["buffers"] if b.get("kind") == "constant"}  # type: ignore[union-attr]
    for a, b in pairs:
        if a != b and a not in constants:
            x, y = our_name(a), our_name(b)
            expected.add((min(x, y), max(x, y)))
    assert edges_of(module) == expected


@pytest.mark.parametrize(
    ("file", "case_id"),
    [
        ("mobilenet-subgraph.mlir", "extract_linear_structure"),
        ("resnet-subgraph.mlir", "algo_resnet_subgraph"),
        ("multiple-calls-synthetic.mlir", "extract_multiple_calls_same_primfunc_synthetic"),
    ],
)
def test_memory_pressure_and_sizes_are_tvms(file: str, case_id: str) -> None:
    case = tvm_case(case_id)
    analysis = extract_buffer_info(parse((TVM_DIR / file).read_text()))
    assert analysis.memory_pressure_bytes == case["memory_pressure"]
    sizes = {info.name: info.size_bytes for info in analysis.buffers}
    for buffer in case["buffers"]:  # type: ignore[union-attr]
        assert sizes[our_name(buffer["name"])] == buffer["size"]


def test_names_are_unique_and_deterministic() -> None:
    text = """
    func.func @f() {
      %a = usmp.allocate : memref<4xi8>
      %a_7 = usmp.allocate : memref<4xi8>
      %0 = usmp.allocate : memref<4xi8>
      func.return
    }
    func.func @main() {
      %a = usmp.allocate : memref<4xi8>
      %a_1 = usmp.allocate : memref<4xi8>
      func.call @f() : () -> ()
      func.return
    }
    """
    module = parse(text)
    names = buffer_names(module)
    in_order = [names[op] for op in module.walk() if isinstance(op, AllocationOp)]
    # xDSL reads `%a_7` as `a`: names follow module order, later duplicates get `_N`
    assert in_order == ["a", "a_1", "buffer", "a_2", "a_3"]
    assert list(buffer_names(parse(text)).values()) == list(names.values())


def test_reachable_functions_and_interval_per_call() -> None:
    module = parse(
        """
        func.func @unused() {
          %u = usmp.allocate : memref<4xi8>
          func.return
        }
        func.func @op() {
          %c0 = arith.constant 0 : index
          %v = arith.constant 1 : i8
          %s = usmp.allocate : memref<4xi8>
          memref.store %v, %s[%c0] : memref<4xi8>
          func.return
        }
        func.func @main() {
          func.call @op() : () -> ()
          func.call @op() : () -> ()
          func.return
        }
        """
    )
    assert reachable_functions(module, "main") == ["op", "main"]
    analysis = extract_buffer_info(module)
    assert [info.name for info in analysis.buffers] == ["s"]
    assert len(analysis.buffers[0].live) == 2


def test_errors_name_the_op() -> None:
    module = parse(
        """
        func.func @main() -> memref<4xi8> {
          %a = usmp.allocate : memref<4xi8>
          func.return %a : memref<4xi8>
        }
        """
    )
    with pytest.raises(AnalysisError) as error:
        extract_buffer_info(module)
    assert error.value.op.name == "func.return"
    assert "escapes" in error.value.message
