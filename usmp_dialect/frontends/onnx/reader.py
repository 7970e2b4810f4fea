"""Reads an `.onnx` model (with PyPI `onnx`) into plain data: the main graph's nodes in file
order with their attributes as Python values (tensors as numpy arrays), its real inputs (those
that are not initializers) and outputs, the initializers as numpy arrays (never lists), and the
element type and static shape of every tensor from ONNX shape inference.

Everything the model can get wrong at this level (not an ONNX file, an opset outside 9-21, a
symbolic dimension on an input or output) is a `ModelImportError` naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from usmp_dialect.frontends.errors import ModelImportError

try:
    import onnx
    from onnx import numpy_helper
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ModelImportError(
        "reading .onnx files needs the optional extra: pip install 'usmp-dialect[onnx]'"
    ) from error

OPSETS = range(9, 22)


@dataclass(frozen=True)
class TensorInfo:
    """What shape inference knows of a tensor: its element type and shape; `symbolic` names
    the first dimension that is not a number (then `shape` is None)."""

    dtype: np.dtype | None
    shape: tuple[int, ...] | None
    symbolic: str | None = None


@dataclass(frozen=True, eq=False)
class Node:
    index: int
    op_type: str
    name: str
    domain: str
    inputs: tuple[str, ...]  # "" for an omitted optional input
    outputs: tuple[str, ...]
    attributes: dict[str, Any]
    # the op type in the file when the node stands for a QDQ group (`onnx/qdq.py`)
    origin: str | None = None

    def describe(self) -> str:
        named = f" '{self.name}'" if self.name else ""
        return f"{self.origin or self.op_type} node{named} (node {self.index})"


@dataclass(frozen=True, eq=False)
class Graph:
    path: str
    opset: int
    nodes: tuple[Node, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    initializers: dict[str, np.ndarray]
    infos: dict[str, TensorInfo]


def _dtype(elem_type: int) -> np.dtype | None:
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))
    except (KeyError, TypeError, ValueError):
        return None


def _info(value: Any) -> TensorInfo:
    tensor_type = value.type.tensor_type
    dtype = _dtype(tensor_type.elem_type) if tensor_type.elem_type else None
    if not tensor_type.HasField("shape"):
        return TensorInfo(dtype, None, "?")
    shape = []
    for dim in tensor_type.shape.dim:
        if not dim.HasField("dim_value"):
            return TensorInfo(dtype, None, dim.dim_param or "?")
        shape.append(int(dim.dim_value))
    return TensorInfo(dtype, tuple(shape))


def _attribute(attribute: Any) -> Any:
    value = onnx.helper.get_attribute_value(attribute)
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [item.decode("utf-8", "replace") for item in value]
    return value


# Nodes folded before shape inference when their inputs are constants (a Shape node when its
# input's shape is static), so that shapes computed by subgraphs (Shape -> Gather -> Concat ->
# Reshape, as exporters write them) become static for the nodes after them.
_FOLDABLE = frozenset(
    {
        *("Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape", "Cast"),
        *("Constant", "Identity", "Add", "Sub", "Mul", "Div", "Slice", "Range", "Equal"),
        *("Where", "Expand", "Floor", "Ceil", "Neg", "Abs", "Sqrt", "ReduceProd", "Min", "Max"),
    }
)
_FOLD_LIMIT = 1 << 16  # larger folded values stay nodes (the importer folds them itself)


def _static_shapes(model: Any) -> dict[str, tuple[int, ...]]:
    inferred = onnx.shape_inference.infer_shapes(model)
    shapes = {}
    for value in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output):
        info = _info(value)
        if info.shape is not None:
            shapes[value.name] = info.shape
    return shapes


def _fold_shape_subgraphs(model: Any) -> Any:
    """`model` with its small constant subgraphs evaluated (by onnx's reference evaluator)
    into initializers, repeated while shape inference learns more from them."""
    from onnx.reference import ReferenceEvaluator

    for _ in range(8):
        graph = model.graph
        shapes = _static_shapes(model)
        constant = {tensor.name for tensor in graph.initializer}
        picked = []
        for node in graph.node:
            if node.domain not in ("", "ai.onnx") or node.op_type not in _FOLDABLE:
                continue
            inputs = [name for name in node.input if name]
            static_shape = node.op_type == "Shape" and inputs[0] in shapes
            if not static_shape and not all(name in constant for name in inputs):
                continue
            picked.append(node)
            constant.update(node.output)
        if not picked:
            return model
        produced = {name for node in picked for name in node.output}
        needed = {name for node in picked for name in node.input} - produced
        evaluator_nodes = []
        for node in picked:
            if node.op_type == "Shape" and node.input[0] in shapes:
                shape = np.array(shapes[node.input[0]], dtype=np.int64)
                attributes = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
                start, end = attributes.get("start", 0), attributes.get("end")
                value = shape[start:end]
                evaluator_nodes.append(
                    onnx.helper.make_node(
                        "Constant", [], [node.output[0]], value=numpy_helper.from_array(value)
                    )
                )
            else:
                evaluator_nodes.append(node)
        initializers = [tensor for tensor in graph.initializer if tensor.name in needed]
        order = [name for node in evaluator_nodes for name in node.output]
        outputs = [onnx.helper.make_empty_tensor_value_info(name) for name in order]
        sub = onnx.helper.make_model(
            onnx.helper.make_graph(evaluator_nodes, "fold", [], outputs, initializers),
            opset_imports=model.opset_import,
        )
        sub.ir_version = model.ir_version
        folded = dict(zip(order, ReferenceEvaluator(sub).run(None, {}), strict=True))
        changed = False
        for node in picked:  # replaced in place by Constant nodes: node indices stay the file's
            values = [np.asarray(folded[name]) for name in node.output]
            if node.op_type == "Constant" or len(values) != 1 or values[0].size > _FOLD_LIMIT:
                continue
            replacement = onnx.helper.make_node(
                "Constant",
                [],
                [node.output[0]],
                name=node.name,
                value=numpy_helper.from_array(values[0]),
            )
            node.CopyFrom(replacement)
            changed = True
        if not changed:
            return model
    return model


# onnxruntime's contrib operators (domain com.microsoft) that ONNX shape inference does not
# know: the standard operator computing the same output shape, and the inputs it reads
_STAND_INS = {
    "QLinearAdd": ("Add", (0, 3)),
    "QLinearMul": ("Mul", (0, 3)),
    "QLinearGlobalAveragePool": ("GlobalAveragePool", (0,)),
    "QLinearAveragePool": ("AveragePool", (0,)),
    "QLinearSoftmax": ("Identity", (0,)),
    "QLinearSigmoid": ("Identity", (0,)),
    "QLinearLeakyRelu": ("Identity", (0,)),
    "QGemm": ("Gemm", (0, 3)),
    "QLinearConcat": ("Concat", ()),  # inputs 2, 5, 8, ...
}
_OUTPUT_ZERO_POINT = {"QLinearAdd": 7, "QLinearMul": 7, "QGemm": 8, "QLinearConcat": 1}


def _contrib_shapes(model: Any) -> bool:
    """Adds `value_info` for the outputs of the contrib operators in `_STAND_INS` whose
    inputs have static shapes (from a one-node model of the stand-in); True if it added any."""
    known: dict[str, tuple[int, tuple[int, ...]]] = {}
    inferred = onnx.shape_inference.infer_shapes(model)
    for value in (*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output):
        info = _info(value)
        if info.shape is not None and value.type.tensor_type.elem_type:
            known[value.name] = (value.type.tensor_type.elem_type, info.shape)
    initializers = {tensor.name: tensor for tensor in model.graph.initializer}
    for tensor in initializers.values():
        known[tensor.name] = (tensor.data_type, tuple(int(d) for d in tensor.dims))
    opset = next(e.version for e in model.opset_import if e.domain in ("", "ai.onnx"))
    added = False
    for node in model.graph.node:
        if node.domain != "com.microsoft" or node.op_type not in _STAND_INS:
            continue
        if not node.output or node.output[0] in known:
            continue
        stand_in, positions = _STAND_INS[node.op_type]
        if node.op_type == "QLinearConcat":
            positions = tuple(range(2, len(node.input), 3))
        names = [node.input[p] for p in positions if p < len(node.input)]
        if not names or any(name not in known for name in names):
            continue
        attributes = {
            a.name: onnx.helper.get_attribute_value(a)
            for a in node.attribute
            if a.name not in ("channels_last", "opset", "alpha", "beta")
        }
        if any(a.name == "channels_last" and a.i for a in node.attribute):
            continue
        inputs = [
            onnx.helper.make_tensor_value_info(f"i{k}", onnx.TensorProto.FLOAT, known[n][1])
            for k, n in enumerate(names)
        ]
        single = onnx.helper.make_model(
            onnx.helper.make_graph(
                [
                    onnx.helper.make_node(
                        stand_in, [f"i{k}" for k in range(len(names))], ["o"], **attributes
                    )
                ],
                "stand_in",
                inputs,
                [onnx.helper.make_empty_tensor_value_info("o")],
            ),
            opset_imports=[onnx.helper.make_opsetid("", opset)],
        )
        try:
            output = onnx.shape_inference.infer_shapes(single, strict_mode=True).graph.output[0]
        except Exception:  # the importer reports the node's problem
            continue
        shape = _info(output).shape
        if shape is None:
            continue
        zero_point = _OUTPUT_ZERO_POINT.get(node.op_type, 4)
        elem_type = known[names[0]][0]
        if zero_point < len(node.input) and node.input[zero_point] in known:
            elem_type = known[node.input[zero_point]][0]
        model.graph.value_info.append(
            onnx.helper.make_tensor_value_info(node.output[0], elem_type, shape)
        )
        known[node.output[0]] = (elem_type, shape)
        added = True
    return added


def read_graph(data: bytes, path: str) -> Graph:
    try:
        model = onnx.load_model_from_string(data)
    except Exception as error:  # the protobuf decoder raises several kinds
        raise ModelImportError(f"{path}: not an ONNX model ({error})") from None
    if not model.HasField("graph"):
        raise ModelImportError(f"{path}: not an ONNX model (no graph)")
    opset = next(
        (entry.version for entry in model.opset_import if entry.domain in ("", "ai.onnx")), None
    )
    if opset is None or opset not in OPSETS:
        raise ModelImportError(
            f"{path}: ONNX opset {opset} is not supported (opsets {OPSETS.start}-"
            f"{OPSETS.stop - 1} are)"
        )
    del model.graph.value_info[:]  # inferred afresh (tools leave stale or symbolic entries)
    # Before IR 4 initializers had to be graph inputs too; shape inference ignores those that
    # are not (version converters write such models): read them as IR 4 does.
    model.ir_version = max(model.ir_version, 4)
    try:
        contrib = any(node.domain == "com.microsoft" for node in model.graph.node)
        for _ in range(len(model.graph.node) if contrib else 0):
            if not _contrib_shapes(model):
                break
        model = _fold_shape_subgraphs(model)
        for _ in range(len(model.graph.node) if contrib else 0):
            if not _contrib_shapes(model):
                break
        inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error)
        raise ModelImportError(f"{path}: ONNX shape inference failed: {message}") from None
    graph = inferred.graph
    initializers: dict[str, np.ndarray] = {}
    for tensor in graph.initializer:
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            raise ModelImportError(
                f"{path}: initializer '{tensor.name}' is stored in an external file (not supported)"
            )
        initializers[tensor.name] = numpy_helper.to_array(tensor)
    infos: dict[str, TensorInfo] = {}
    for value in (*graph.value_info, *graph.input, *graph.output):
        infos[value.name] = _info(value)
    for name, array in initializers.items():
        infos[name] = TensorInfo(array.dtype, tuple(array.shape))
    nodes = tuple(
        Node(
            index,
            node.op_type,
            node.name,
            node.domain,
            tuple(node.input),
            tuple(node.output),
            {attribute.name: _attribute(attribute) for attribute in node.attribute},
        )
        for index, node in enumerate(graph.node)
    )
    inputs = tuple(value.name for value in graph.input if value.name not in initializers)
    outputs = tuple(value.name for value in graph.output)
    for kind, names in (("input", inputs), ("output", outputs)):
        for name in names:
            info = infos.get(name)
            if info is None or info.shape is None:
                symbol = info.symbolic if info is not None else "?"
                raise ModelImportError(
                    f"{path}: the model {kind} '{name}' has the symbolic dimension "
                    f"'{symbol}' (only static shapes are supported)"
                )
    return Graph(path, opset, nodes, inputs, outputs, initializers, infos)
