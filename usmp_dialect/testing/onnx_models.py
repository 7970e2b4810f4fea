"""ONNX models for the tests and benchmarks: the Model Zoo graphs shipped (weights stripped)
in the `onnx` wheel given seeded random weights, small graphs written with `onnx.helper`, and
onnxruntime as the oracle."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from usmp_dialect.validation.host import compile_model, usmp_opt
from usmp_dialect.validation.oracles import onnxruntime_outputs

ZOO = (
    "squeezenet",
    "shufflenet",
    "inception_v1",
    "inception_v2",
    "densenet121",
    "resnet50",
    "vgg19",
    "bvlc_alexnet",
    "zfnet512",
)


def zoo_path(name: str) -> Path:
    """The stripped `light_<name>.onnx` of the installed onnx wheel."""
    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def _random_weight(
    rng: np.random.Generator, shape: tuple[int, ...], role: str, dtype: np.dtype
) -> np.ndarray:
    if role == "variance":
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    if role == "scale":
        return rng.uniform(0.5, 1.5, shape).astype(dtype)
    if len(shape) >= 2:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 2 else int(min(shape))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / max(fan_in, 1))).astype(dtype)
    return (rng.standard_normal(shape) * 0.1).astype(dtype)


def with_random_weights(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """`model` with every `ConstantOfShape(<initializer>)` replaced by an initializer of seeded
    random values of that shape: He-scaled weights, positive BatchNormalization scales and
    variances, small biases."""
    rng = np.random.default_rng(seed)
    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    roles: dict[str, str] = {}
    for node in graph.node:
        if node.op_type == "BatchNormalization":
            roles[node.input[1]] = "scale"
            if len(node.input) > 4:
                roles[node.input[4]] = "variance"
    kept = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in initializers:
            shape = tuple(int(s) for s in numpy_helper.to_array(initializers[node.input[0]]))
            value = next((a.t for a in node.attribute if a.name == "value"), None)
            dtype = (
                numpy_helper.to_array(value).dtype if value is not None else np.dtype(np.float32)
            )
            array = _random_weight(rng, shape, roles.get(node.output[0], "weight"), dtype)
            graph.initializer.append(numpy_helper.from_array(array, node.output[0]))
            if model.ir_version < 4:  # initializers must also be graph inputs
                graph.input.append(
                    helper.make_tensor_value_info(
                        node.output[0], helper.np_dtype_to_tensor_dtype(array.dtype), shape
                    )
                )
        else:
            kept.append(node)
    del graph.node[:]
    graph.node.extend(kept)
    read = {name for node in graph.node for name in node.input}
    unused = [t for t in graph.initializer if t.name.endswith("__SHAPE") and t.name not in read]
    for tensor in unused:
        graph.initializer.remove(tensor)
    names = {tensor.name for tensor in unused}
    for value in [value for value in graph.input if value.name in names]:
        graph.input.remove(value)
    return model


def with_logits_output(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` with the input of its last Softmax also a graph output (random weights
    saturate the probabilities; the logits are the meaningful comparison)."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    softmax = [node for node in model.graph.node if node.op_type == "Softmax"]
    if softmax:
        model.graph.output.append(helper.make_empty_tensor_value_info(softmax[-1].input[0]))
        model.graph.output[-1].type.tensor_type.elem_type = onnx.TensorProto.FLOAT
    return model


_FOLDED_OPS = {"Constant", "ConstantOfShape", "Shape"}


def graph_order_peak(path: Path) -> int:
    """The largest total size of the intermediate tensors live at once when the nodes run in
    file order, each node output its own buffer (no in-place reuse, views counted as copies),
    live from the node writing it to the last node reading it; inputs, outputs and constants
    (initializers and folded subgraphs) not counted."""
    from usmp_dialect.frontends.onnx.reader import read_graph

    graph = read_graph(path.read_bytes(), str(path))
    constant = set(graph.initializers)
    for node in graph.nodes:
        inputs = [name for name in node.inputs if name]
        if node.op_type in _FOLDED_OPS or all(name in constant for name in inputs):
            constant.update(node.outputs)
    boundary = set(graph.inputs) | set(graph.outputs)
    last_read: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.inputs:
            last_read[name] = node.index
    live: dict[str, int] = {}
    peak = 0
    for node in graph.nodes:
        for name in node.outputs:
            info = graph.infos.get(name)
            if name in constant or name in boundary or not name or info is None:
                continue
            if info.shape is None or info.dtype is None or name not in last_read:
                continue
            live[name] = int(np.prod(info.shape)) * info.dtype.itemsize
        peak = max(peak, sum(live.values()))
        for name in [name for name in live if last_read[name] <= node.index]:
            del live[name]
    return peak


RELATIVE = 1e-4  # float: of the largest output magnitude


def graph_model(
    nodes: Sequence[object],
    inputs: Sequence[tuple[str, Sequence[int]]],
    outputs: Sequence[str | tuple[str, Sequence[int]]],
    initializers: dict[str, np.ndarray] | None = None,
    opset: int = 13,
) -> bytes:
    """A float graph: `inputs` (name, shape), the graph outputs `outputs` (a name: its shape left
    to shape inference, or (name, shape)), the constant `initializers`."""
    graph = helper.make_graph(
        list(nodes),
        "test",
        [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))
            for name, shape in inputs
        ],
        [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
            if isinstance(name, str)
            else helper.make_tensor_value_info(name[0], TensorProto.FLOAT, list(name[1]))
            for name in outputs
        ],
        [numpy_helper.from_array(array, name) for name, array in (initializers or {}).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    known = {v.name: v for v in (*inferred.graph.value_info, *inferred.graph.output)}
    for position, value in enumerate(model.graph.output):
        if value.name in known and not value.type.tensor_type.HasField("shape"):
            model.graph.output[position].CopyFrom(known[value.name])
    onnx.checker.check_model(model)
    return model.SerializeToString()


def imported_text(model: bytes, directory: Path) -> str:
    """The module `usmp-opt` imports from the ONNX `model` (written into `directory`)."""
    path = directory / "model.onnx"
    path.write_bytes(model)
    return subprocess.run(
        [*usmp_opt(), str(path)], capture_output=True, text=True, check=True
    ).stdout


def check_against_onnxruntime(
    model: bytes, directory: Path, seeds: Sequence[int] = (0, 1), constants: str = "text"
) -> None:
    """Our C's outputs equal onnxruntime's within `RELATIVE` of the largest, on random inputs
    (each output and seed checked separately)."""
    path = directory / "model.onnx"
    path.write_bytes(model)
    compiled = compile_model(path, directory, constants=constants)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        inputs = [rng.standard_normal(port.shape).astype(np.float32) for port in compiled.inputs]
        ours, _ = compiled.run(inputs)
        expected = onnxruntime_outputs(model, inputs)
        assert len(ours) == len(expected)
        for got, want in zip(ours, expected, strict=True):
            got = got.reshape(want.shape)
            bound = RELATIVE * max(float(np.abs(want).max()), 1e-30)
            np.testing.assert_allclose(got, want, rtol=0, atol=bound)


def weights(seed: int, *shape: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def quantize(
    floating: Path, target: Path, shape: tuple[int, ...], form: str, per_channel: bool
) -> onnx.ModelProto:
    """onnxruntime's `quantize_static` of `floating` into `target` (int8 activations and
    weights; `form` "qdq" or "qoperator"), calibrated on 4 seeded random inputs of `shape`."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class RandomInputs(CalibrationDataReader):
        def __init__(self, name: str) -> None:
            rng = np.random.default_rng(5)
            self.batches = iter(
                [{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)]
            )

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.batches, None)

    graph = onnx.load(floating).graph
    initializers = {tensor.name for tensor in graph.initializer}
    name = next(value.name for value in graph.input if value.name not in initializers)
    quantize_static(
        str(floating),
        str(target),
        RandomInputs(name),
        quant_format=QuantFormat.QDQ if form == "qdq" else QuantFormat.QOperator,
        activation_type=QuantType.QInt8,
        weight_type=QuantType.QInt8,
        per_channel=per_channel,
    )
    return onnx.load(target)


def quantization_scales(model: onnx.ModelProto) -> dict[str, float]:
    """Each int8 tensor's, and each dequantised float tensor's, scale."""
    constants = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    scales = {}
    for node in model.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            scales[node.output[0]] = float(constants[node.input[1]].reshape(-1)[0])
    return scales


def quantized_squeezenet(directory: Path, form: str, per_channel: bool) -> tuple[Path, list[float]]:
    """The zoo squeezenet (random weights, seed 0) at opset 13, quantised by onnxruntime, with
    the logits (the int8 or dequantised input of its final Softmax) as a second output: the file
    in `directory` and the quantisation step of each output (1 for int8 logits)."""
    from onnx import version_converter

    model = version_converter.convert_version(
        with_random_weights(onnx.load(zoo_path("squeezenet")), 0), 13
    )
    floating, target = directory / "float.onnx", directory / "quantized.onnx"
    onnx.save(model, floating)
    written = quantize(floating, target, (1, 3, 224, 224), form, per_channel)
    softmax = next(n for n in written.graph.node if n.op_type in ("Softmax", "QLinearSoftmax"))
    scales = quantization_scales(written)
    logits, elem_type = softmax.input[0], TensorProto.FLOAT
    if softmax.op_type == "QLinearSoftmax":
        scales[logits], elem_type = 1.0, TensorProto.INT8
    written.graph.output.append(helper.make_tensor_value_info(logits, elem_type, None))
    onnx.save(written, target)
    return target, [scales[written.graph.output[0].name], scales[logits]]


def branches_model() -> bytes:
    """Three branches of one input, written breadth first as some exporters do (every
    convolution, then every pooling): 3x3 convolutions to 16 and 8 channels and a 1x1 one with
    a Relu, each pooled into its slice of a Concat, then a 1x1 convolution. In file order the
    three convolution outputs are live together (40,960 bytes at the peak); branch by branch,
    the first pooling is the peak (24,576 bytes: its input and the Concat)."""
    node = helper.make_node
    init = {
        "wa": weights(11, 16, 4, 3, 3),
        "wb": weights(12, 8, 4, 3, 3),
        "wc": weights(13, 8, 4, 1, 1),
        "wo": weights(14, 8, 32, 1, 1),
    }
    pool = {"kernel_shape": [2, 2], "strides": [2, 2]}
    nodes = [
        node("Conv", ["x", "wa"], ["a"], pads=[1, 1, 1, 1]),
        node("Conv", ["x", "wb"], ["b"], pads=[1, 1, 1, 1]),
        node("Conv", ["x", "wc"], ["c"]),
        node("Relu", ["c"], ["c_relu"]),
        node("MaxPool", ["a"], ["pa"], **pool),
        node("AveragePool", ["b"], ["pb"], **pool),
        node("MaxPool", ["c_relu"], ["pc"], **pool),
        node("Concat", ["pa", "pb", "pc"], ["cat"], axis=1),
        node("Conv", ["cat", "wo"], ["y"]),
    ]
    return graph_model(nodes, [("x", (1, 4, 16, 16))], ["y"], init)
