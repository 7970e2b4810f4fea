"""Model metadata through the IR (issue 25): both frontends put `usmp.model` on the module,
`usmp.tensor` (and, for integer tensors, `usmp.quantization`) on `@main`'s arguments and
`usmp.tensor` on every activation `memref.alloc`; `usmp-import-memref` and
`usmp-create-io-allocates` carry them to the planned buffers, where the analysis reports them
(`BufferInfo.tensor`). SSA names and C identifiers are short forms of the tensor names."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import memref
from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, ModuleOp, StringAttr

from usmp_dialect.analysis.buffer_info import extract_buffer_info
from usmp_dialect.dialects.usmp import AllocateOp
from usmp_dialect.kernels.module import (
    SHORT_NAME_CHARS,
    TensorNames,
    short_identifier,
)
from usmp_dialect.passes.create_io_allocates import UsmpCreateIoAllocatesPass
from usmp_dialect.passes.import_memref import UsmpImportMemrefPass

ROOT = Path(__file__).resolve().parents[2]
MLPERF = ROOT / "examples" / "mlperf_tiny"


def _main_arguments(module: ModuleOp) -> list[tuple[str, DictionaryAttr]]:
    main = next(op for op in module.ops if getattr(op, "sym_name", None) == StringAttr("main"))
    block = main.body.block
    attrs = main.arg_attrs.data
    return [(arg.name_hint or "", attr) for arg, attr in zip(block.args, attrs, strict=True)]


def _quantization(attrs: DictionaryAttr) -> tuple[float, int] | None:
    attr = attrs.data.get("usmp.quantization")
    if attr is None:
        return None
    assert isinstance(attr, DictionaryAttr)
    scale, zero_point = attr.data["scale"], attr.data["zero_point"]
    assert isinstance(scale, FloatAttr) and isinstance(zero_point, IntegerAttr)
    return scale.value.data, zero_point.value.data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "functional_1/activation/Relu;functional_1/batch_normalization/FusedBatchNormV3;"
            "functional_1/conv2d/BiasAdd/ReadVariableOp/resource;functional_1/conv2d/BiasAdd",
            "activation_Relu",
        ),
        ("model/depthwise_conv2d/depthwise2", "depthwise_conv2d_depthwise2"),
        ("serving_default_input_1:0", "serving_default_input1"),
        ("input_1", "input1"),
        ("model/activation_12/Relu_1", "activation_12_Relu1"),
        ("", "t"),
        ("0abc", "t0abc"),
    ],
)
def test_short_identifier(text: str, expected: str) -> None:
    assert short_identifier(text, "t") == expected


def test_tensor_names_are_short_unique_and_stable() -> None:
    names = TensorNames()
    long = "x" * 100
    first, second = names(long + "a"), names(long + "b")
    assert len(first) <= SHORT_NAME_CHARS and len(second) <= SHORT_NAME_CHARS
    assert first != second and second.endswith("_v2")
    assert names(long + "a") == first  # one name per tensor
    assert names("input_1", limit=32) == "input1"
    names.reserve("main")
    assert names("main") == "main_v2"


def _import_tflite(path: Path) -> ModuleOp:
    from usmp_dialect.frontends.tflite.importer import import_tflite

    return import_tflite(path.read_bytes(), str(path))


def test_tflite_metadata_matches_the_file() -> None:
    from ai_edge_litert.interpreter import Interpreter

    path = MLPERF / "kws_ref_model.tflite"
    module = _import_tflite(path)
    model = module.attributes["usmp.model"]
    assert isinstance(model, DictionaryAttr)
    assert {key: value.data for key, value in model.data.items()} == {  # type: ignore[attr-defined]
        "name": "kws_ref_model",
        "source": "kws_ref_model.tflite",
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }
    interpreter = Interpreter(model_path=str(path))
    details = [*interpreter.get_input_details(), *interpreter.get_output_details()]
    arguments = _main_arguments(module)
    for (_, attrs), detail in zip(arguments, details, strict=True):
        assert attrs.data["usmp.tensor"] == StringAttr(detail["name"])
        scale, zero_point = detail["quantization"]
        quantization = _quantization(attrs)
        assert quantization is not None
        assert np.float32(quantization[0]) == np.float32(scale)
        assert quantization[1] == zero_point
    # Every activation buffer is named after its tensor, and has a short SSA name.
    allocs = [op for op in module.walk() if isinstance(op, memref.AllocOp)]
    tensors = {t["name"] for t in interpreter.get_tensor_details()}
    assert allocs
    for alloc in allocs:
        tensor = alloc.attributes["usmp.tensor"]
        assert isinstance(tensor, StringAttr) and tensor.data in tensors
        assert alloc.memref.name_hint is not None
        assert len(alloc.memref.name_hint) <= SHORT_NAME_CHARS


def test_float_model_has_no_quantization() -> None:
    module = _import_tflite(MLPERF / "kws_ref_model_float32.tflite")
    for _, attrs in _main_arguments(module):
        assert "usmp.tensor" in attrs.data
        assert "usmp.quantization" not in attrs.data


def test_buffers_carry_their_tensor_through_the_passes() -> None:
    path = MLPERF / "kws_ref_model.tflite"
    module = _import_tflite(path)
    allocs = [op for op in module.walk() if isinstance(op, memref.AllocOp)]
    expected = [op.attributes["usmp.tensor"] for op in allocs]
    context = Context()
    UsmpImportMemrefPass().apply(context, module)
    allocations = [op for op in module.walk() if isinstance(op, AllocateOp)]
    assert [op.attributes.get("usmp.tensor") for op in allocations] == expected
    UsmpCreateIoAllocatesPass().apply(context, module)
    infos = extract_buffer_info(module).buffers
    by_kind = {info.kind: info for info in infos if info.kind in ("input", "output")}
    assert by_kind["input"].tensor == "input_1"
    assert by_kind["output"].tensor == "Identity"
    intermediate = [info.tensor for info in infos if info.kind == "intermediate"]
    assert intermediate == [attr.data for attr in expected]  # type: ignore[attr-defined]


def test_onnx_metadata(tmp_path: Path) -> None:
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from usmp_dialect.frontends.onnx.importer import import_onnx

    nodes = [
        helper.make_node("DequantizeLinear", ["images/int8", "s_in", "z_in"], ["real"]),
        helper.make_node("Relu", ["real"], ["net/relu;fused"]),
        helper.make_node("QuantizeLinear", ["net/relu;fused", "s_out", "z_out"], ["scores"]),
    ]
    initializers = {
        "s_in": np.array(0.25, np.float32),
        "z_in": np.array(-7, np.int8),
        "s_out": np.array(0.125, np.float32),
        "z_out": np.array(3, np.int8),
    }
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("images/int8", TensorProto.INT8, [1, 4])],
        [helper.make_tensor_value_info("scores", TensorProto.INT8, [1, 4])],
        [numpy_helper.from_array(value, name) for name, value in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    data = model.SerializeToString()
    path = tmp_path / "tiny_net.onnx"
    module = import_onnx(data, str(path))
    model_attr = module.attributes["usmp.model"]
    assert isinstance(model_attr, DictionaryAttr)
    assert model_attr.data["name"] == StringAttr("tiny_net")
    assert model_attr.data["sha256"] == StringAttr(hashlib.sha256(data).hexdigest())
    (input_name, input_attrs), (_, output_attrs) = _main_arguments(module)
    assert input_name == "images_int8"
    assert input_attrs.data["usmp.tensor"] == StringAttr("images/int8")
    assert _quantization(input_attrs) == (0.25, -7)
    assert output_attrs.data["usmp.tensor"] == StringAttr("scores")
    assert _quantization(output_attrs) == (0.125, 3)
    tensors = {
        op.attributes["usmp.tensor"].data: op.memref.name_hint  # type: ignore[attr-defined]
        for op in module.walk()
        if isinstance(op, memref.AllocOp)
    }
    assert tensors == {"real": "real"}  # the Relu writes over its input (in place)


def test_onnx_qoperator_metadata(tmp_path: Path) -> None:
    """QOperator form: the QLinearConv reading the input gives its scale and zero point
    (operands 1, 2) and, writing the output, the output's (operands 6, 7)."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from usmp_dialect.frontends.onnx.importer import import_onnx

    initializers = {
        "xs": np.array(0.1, np.float32),
        "xz": np.array(-2, np.int8),
        "w": np.ones((2, 2, 1, 1), np.int8),
        "ws": np.array([0.1, 0.2], np.float32),
        "wz": np.array([0, 0], np.int8),
        "ys": np.array(0.375, np.float32),
        "yz": np.array(4, np.int8),
    }
    conv = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"])
    graph = helper.make_graph(
        [conv],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, [1, 2, 4, 4])],
        [numpy_helper.from_array(value, name) for name, value in initializers.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    module = import_onnx(model.SerializeToString(), str(tmp_path / "conv.onnx"))
    (_, input_attrs), (_, output_attrs) = _main_arguments(module)
    assert _quantization(input_attrs) == (np.float32(0.1), -2)
    assert _quantization(output_attrs) == (0.375, 4)
