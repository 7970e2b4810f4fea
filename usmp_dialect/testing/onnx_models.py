"""ONNX models for the tests and benchmarks: the Model Zoo graphs shipped (weights stripped)
in the `onnx` wheel given seeded random weights, small graphs written with `onnx.helper`, and
onnxruntime as the oracle."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

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


def onnxruntime_outputs(model: bytes, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    names = [value.name for value in session.get_inputs()]
    return list(session.run(None, dict(zip(names, inputs, strict=True))))


def single_node_model(
    op_type: str,
    inputs: Sequence[tuple[str, tuple[int, ...]]],
    output_shape: tuple[int, ...] | None,
    initializers: Sequence[tuple[str, np.ndarray]] = (),
    opset: int = 13,
    **attributes: object,
) -> onnx.ModelProto:
    """A graph of one float node: `inputs` (name, shape) then the initializers' names as its
    inputs; output `y` (shape None: left to shape inference)."""
    node = helper.make_node(
        op_type,
        [*(name for name, _ in inputs), *(name for name, _ in initializers)],
        ["y"],
        **attributes,
    )
    graph = helper.make_graph(
        [node],
        "test",
        [
            helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)
            for name, shape in inputs
        ],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, output_shape)],
        [numpy_helper.from_array(array, name) for name, array in initializers],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
