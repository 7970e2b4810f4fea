"""int8 QDQ groups read as integer operators, before the importer lowers the graph.

onnxruntime's `quantize_static` (QuantFormat.QDQ, int8 activations and weights, per tensor or
per channel) writes every quantised operator as `DequantizeLinear(int8 activation) -> op ->
[Relu | Clip] -> QuantizeLinear`, its weights as `DequantizeLinear` of int8 constants and its
bias as `DequantizeLinear` of an int32 constant. `fuse_qdq` replaces each such group by one
node of the QOperator form (onnxruntime's own fusion does the same before running it):

* Conv -> `QLinearConv`, MatMul -> `QLinearMatMul`, Gemm -> `QGemm`, Add -> `QLinearAdd`,
  GlobalAveragePool -> `QLinearGlobalAveragePool`, Concat -> `QLinearConcat`, AveragePool ->
  `QLinearAveragePool` (input and output quantisation equal), a fused Relu or Clip kept in the
  attribute `usmp.activation` (its float bounds);
* MaxPool and the view operators (Reshape, Flatten, Squeeze, Unsqueeze, Dropout, Identity)
  with equal input and output quantisation -> the same operator on the int8 tensors.

The node keeps the index and name of the operator it stands for (`Node.origin`, so errors name
the file's node); the QuantizeLinear after it and the DequantizeLinears no node reads any more
disappear: the integer kernel reads and writes the int8 tensors, no float buffer between.
A group that does not match (uint8, a blocked or per-axis activation quantisation, a bias of
another scale, unequal pooling quantisations, ...) is left as it is and lowered literally
(float compute between `Dequantize` and `Quantize` kernels).

The QOperator operators without an integer kernel here (`QLinearSoftmax`, `QLinearSigmoid`,
`QLinearLeakyRelu`, `QLinearAveragePool` of unequal quantisations) are expanded the other way,
into `DequantizeLinear -> op -> QuantizeLinear`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from usmp_dialect.frontends.onnx.reader import Graph, Node, TensorInfo

INT8 = np.dtype(np.int8)
INT32 = np.dtype(np.int32)
MICROSOFT = "com.microsoft"
ACTIVATION = "usmp.activation"  # (low, high): the float bounds of a fused Relu or Clip
VIEWS = ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Dropout", "Identity")
EXPANDED = {
    "QLinearSoftmax": "Softmax",
    "QLinearSigmoid": "Sigmoid",
    "QLinearLeakyRelu": "LeakyRelu",
    "QLinearAveragePool": "AveragePool",
}


@dataclass(frozen=True)
class Quantized:
    """An int8 tensor and the names of its scale and zero point ("" when absent: 0)."""

    tensor: str
    scale: str
    zero_point: str


def _default(node: Node, op_type: str) -> bool:
    return node.op_type == op_type and node.domain in ("", "ai.onnx")


class _Matcher:
    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.constants: dict[str, np.ndarray] = dict(graph.initializers)
        for node in graph.nodes:
            value = node.attributes.get("value")
            if _default(node, "Constant") and isinstance(value, np.ndarray) and node.outputs:
                self.constants[node.outputs[0]] = value
        self.producers: dict[str, Node] = {}
        self.readers: dict[str, list[Node]] = {}
        for node in graph.nodes:
            for name in node.outputs:
                if name:
                    self.producers[name] = node
            for name in node.inputs:
                if name:
                    self.readers.setdefault(name, []).append(node)
        self.removed: set[int] = set()  # QuantizeLinear and activation nodes merged
        self.touched: set[int] = set()  # DequantizeLinear nodes a merged node read

    # -- the pieces of a group ---------------------------------------------------------------

    def _dtype(self, name: str) -> np.dtype | None:
        if name in self.constants:
            return self.constants[name].dtype
        info = self.graph.infos.get(name)
        return info.dtype if info is not None else None

    def _parameters(self, node: Node) -> tuple[np.ndarray, np.ndarray] | None:
        """The scale and zero point of a Q/DQ node when they are constants (zero point int8 or
        absent: then the tensor must be int8 too) and the quantisation is not blocked."""
        if node.attributes.get("block_size", 0) or len(node.inputs) < 2:
            return None
        scale = self.constants.get(node.inputs[1])
        if scale is None or scale.dtype != np.float32 or (scale <= 0).any():
            return None
        if len(node.inputs) > 2 and node.inputs[2]:
            zero_point = self.constants.get(node.inputs[2])
            if zero_point is None or zero_point.dtype != INT8:
                return None
        else:
            zero_point = np.zeros(scale.shape, np.int8)
        return scale.reshape(-1), zero_point.reshape(-1).astype(np.int64)

    @staticmethod
    def _quantized(node: Node, tensor: str) -> Quantized:
        zero_point = node.inputs[2] if len(node.inputs) > 2 else ""
        return Quantized(tensor, node.inputs[1], zero_point)

    def activation(self, tensor: str) -> Quantized | None:
        """The int8 activation (per-tensor) a DequantizeLinear turns into `tensor`."""
        node = self.producers.get(tensor)
        if node is None or not _default(node, "DequantizeLinear"):
            return None
        source = node.inputs[0]
        parameters = self._parameters(node)
        if source in self.constants or self._dtype(source) != INT8 or parameters is None:
            return None
        if parameters[0].size != 1:
            return None
        self.touched.add(node.index)
        return self._quantized(node, source)

    def weights(self, tensor: str, axis: int) -> tuple[Quantized, np.ndarray] | None:
        """The int8 constant (per tensor or per channel along `axis`) and its scales."""
        node = self.producers.get(tensor)
        if node is None or not _default(node, "DequantizeLinear"):
            return None
        source = node.inputs[0]
        value = self.constants.get(source)
        parameters = self._parameters(node)
        if value is None or value.dtype != INT8 or parameters is None:
            return None
        scale = parameters[0]
        if scale.size > 1:
            along = int(node.attributes.get("axis", 1)) % max(value.ndim, 1)
            if along != axis or scale.size != value.shape[axis]:
                return None
        self.touched.add(node.index)
        return self._quantized(node, source), scale

    def bias(self, tensor: str, expected: np.ndarray) -> str | None:
        """The int32 constant of a bias dequantised with the scale `expected` (input scale
        times weight scales), zero point 0 — the accumulator's own quantisation."""
        node = self.producers.get(tensor)
        if node is None or not _default(node, "DequantizeLinear") or len(node.inputs) < 2:
            return None
        value = self.constants.get(node.inputs[0])
        scale = self.constants.get(node.inputs[1])
        zero_point = self.constants.get(node.inputs[2]) if len(node.inputs) > 2 else None
        if value is None or value.dtype != INT32 or scale is None:
            return None
        if zero_point is not None and zero_point.any():
            return None
        if node.attributes.get("block_size", 0):
            return None
        scale = scale.astype(np.float64).reshape(-1)
        if scale.size not in (1, expected.size) or not np.allclose(
            scale, expected, rtol=1e-6, atol=0
        ):
            return None
        self.touched.add(node.index)
        return node.inputs[0]

    def _bounds(self, node: Node) -> tuple[float, float] | None:
        if _default(node, "Relu"):
            return 0.0, float("inf")
        if not _default(node, "Clip"):
            return None
        if self.graph.opset < 11:
            low = float(node.attributes.get("min", float("-inf")))
            return low, float(node.attributes.get("max", float("inf")))
        bounds = []
        for position, default in ((1, float("-inf")), (2, float("inf"))):
            if position < len(node.inputs) and node.inputs[position]:
                value = self.constants.get(node.inputs[position])
                if value is None or value.size != 1:
                    return None
                bounds.append(float(value.reshape(())))
            else:
                bounds.append(default)
        return bounds[0], bounds[1]

    def _single_reader(self, tensor: str) -> Node | None:
        readers = self.readers.get(tensor, [])
        if len(readers) != 1 or tensor in self.graph.outputs:
            return None
        reader = readers[0]
        return reader if reader.inputs and reader.inputs[0] == tensor else None

    def sink(
        self, tensor: str, activation: bool = True
    ) -> tuple[Quantized, dict[str, object], list[int]] | None:
        """The int8 tensor (per-tensor) the only QuantizeLinear reading `tensor` (maybe after
        a Relu or Clip) writes; the fused bounds as attributes; the nodes merged."""
        merged: list[int] = []
        attributes: dict[str, object] = {}
        reader = self._single_reader(tensor)
        if reader is not None and activation:
            bounds = self._bounds(reader)
            if bounds is not None:
                attributes[ACTIVATION] = bounds
                merged.append(reader.index)
                reader = self._single_reader(reader.outputs[0])
        if reader is None or not _default(reader, "QuantizeLinear"):
            return None
        parameters = self._parameters(reader)
        output = reader.outputs[0]
        if parameters is None or parameters[0].size != 1 or self._dtype(output) != INT8:
            return None
        merged.append(reader.index)
        return self._quantized(reader, output), attributes, merged

    def same(self, first: Quantized, second: Quantized) -> bool:
        def values(q: Quantized) -> tuple[float, int]:
            scale = float(self.constants[q.scale].reshape(-1)[0])
            zero_point = int(self.constants[q.zero_point].reshape(-1)[0]) if q.zero_point else 0
            return scale, zero_point

        return values(first) == values(second)

    def scale(self, quantized: Quantized) -> np.ndarray:
        return self.constants[quantized.scale].astype(np.float32).reshape(-1)

    # -- the groups --------------------------------------------------------------------------

    def match(self, node: Node) -> Node | None:
        """The QOperator node standing for the group around `node`, or None."""
        if node.domain not in ("", "ai.onnx"):
            return None
        op_type = node.op_type
        if op_type in ("Conv", "MatMul", "Gemm"):
            return self._linear(node)
        if op_type == "Add" and len(node.inputs) == 2:
            sources = [self.activation(name) for name in node.inputs]
            found = self.sink(node.outputs[0])
            if None in sources or found is None:
                return None
            a, b = sources
            assert a is not None and b is not None
            (y, attributes, merged) = found
            inputs = [*_triple(a), *_triple(b), y.scale, y.zero_point]
            return self._merged(node, "QLinearAdd", MICROSOFT, inputs, y, attributes, merged)
        if op_type == "Concat":
            sources = [self.activation(name) for name in node.inputs]
            found = self.sink(node.outputs[0], activation=False)
            if None in sources or found is None:
                return None
            y, attributes, merged = found
            inputs = [y.scale, y.zero_point]
            for source in sources:
                assert source is not None
                inputs += _triple(source)
            attributes = {**node.attributes, **attributes}
            return self._merged(node, "QLinearConcat", MICROSOFT, inputs, y, attributes, merged)
        if op_type in ("MaxPool", "AveragePool", "GlobalAveragePool", *VIEWS):
            if any(
                self.readers.get(name) or name in self.graph.outputs
                for name in node.outputs[1:]
                if name
            ):
                return None  # MaxPool's Indices, Dropout's mask
            source = self.activation(node.inputs[0]) if node.inputs else None
            found = self.sink(node.outputs[0], activation=False)
            if source is None or found is None:
                return None
            y, attributes, merged = found
            if op_type == "GlobalAveragePool":
                inputs = [*_triple(source), y.scale, y.zero_point]
                return self._merged(
                    node, "QLinearGlobalAveragePool", MICROSOFT, inputs, y, attributes, merged
                )
            if not self.same(source, y):
                return None
            if op_type == "AveragePool":
                inputs = [*_triple(source), y.scale, y.zero_point]
                attributes = {**node.attributes, **attributes}
                return self._merged(
                    node, "QLinearAveragePool", MICROSOFT, inputs, y, attributes, merged
                )
            inputs = [source.tensor, *node.inputs[1:]]
            attributes = {**node.attributes, **attributes}
            return self._merged(node, op_type, node.domain, inputs, y, attributes, merged)
        return None

    def _linear(self, node: Node) -> Node | None:
        """Conv, MatMul and Gemm: int8 activation, int8 weights, optional int32 bias."""
        op_type = node.op_type
        attributes = node.attributes
        if len(node.inputs) < 2:
            return None
        if op_type == "Gemm":
            if attributes.get("transA", 0) or float(attributes.get("alpha", 1.0)) != 1.0:
                return None
            if float(attributes.get("beta", 1.0)) != 1.0:
                return None
            axis = 0 if attributes.get("transB", 0) else 1
        else:
            axis = 0 if op_type == "Conv" else 1
        source = self.activation(node.inputs[0])
        weights = self.weights(node.inputs[1], axis)
        found = self.sink(node.outputs[0])
        if source is None or weights is None or found is None:
            return None
        (w, w_scale), (y, extra, merged) = weights, found
        bias = ""
        if op_type != "MatMul" and len(node.inputs) > 2 and node.inputs[2]:
            expected = self.scale(source).astype(np.float64) * w_scale.astype(np.float64)
            found_bias = self.bias(node.inputs[2], expected)
            if found_bias is None:
                return None
            bias = found_bias
        if op_type == "Conv":
            inputs = [*_triple(source), *_triple(w), y.scale, y.zero_point, bias]
            return self._merged(node, "QLinearConv", "", inputs, y, {**attributes, **extra}, merged)
        if op_type == "MatMul":
            inputs = [*_triple(source), *_triple(w), y.scale, y.zero_point]
            return self._merged(
                node, "QLinearMatMul", "", inputs, y, {**attributes, **extra}, merged
            )
        inputs = [*_triple(source), *_triple(w), bias, y.scale, y.zero_point]
        return self._merged(node, "QGemm", MICROSOFT, inputs, y, {**attributes, **extra}, merged)

    def _merged(
        self,
        node: Node,
        op_type: str,
        domain: str,
        inputs: list[str],
        output: Quantized,
        attributes: dict[str, object],
        merged: list[int],
    ) -> Node:
        self.removed.update(merged)
        return Node(
            node.index,
            op_type,
            node.name,
            domain,
            tuple(inputs),
            (output.tensor,),
            dict(attributes),
            origin=node.op_type,
        )


def _triple(quantized: Quantized) -> list[str]:
    return [quantized.tensor, quantized.scale, quantized.zero_point]


def _expand(node: Node, infos: dict[str, TensorInfo]) -> list[Node]:
    """`QLinear<Op>(x, x_scale, x_zp, y_scale, y_zp)` as DequantizeLinear -> Op ->
    QuantizeLinear (the float operator's attributes: the node's, but onnxruntime's own)."""
    source, x_scale, x_zero, y_scale, y_zero = (list(node.inputs) + [""] * 5)[:5]
    dequantized, computed = f"{source}__dequantized_{node.index}", f"{node.outputs[0]}__float"
    for name, like in ((dequantized, source), (computed, node.outputs[0])):
        info = infos.get(like)
        infos[name] = TensorInfo(np.dtype(np.float32), info.shape if info else None, "?")
    attributes = {
        key: value
        for key, value in node.attributes.items()
        if key not in ("channels_last", "opset")
    }
    origin = node.origin or node.op_type
    return [
        Node(
            node.index,
            "DequantizeLinear",
            node.name,
            "",
            (source, x_scale, x_zero),
            (dequantized,),
            {},
            origin,
        ),
        Node(
            node.index,
            EXPANDED[node.op_type],
            node.name,
            "",
            (dequantized,),
            (computed,),
            attributes,
            origin,
        ),
        Node(
            node.index,
            "QuantizeLinear",
            node.name,
            "",
            (computed, y_scale, y_zero),
            node.outputs,
            {},
            origin,
        ),
    ]


def _has_integer_kernel(matcher: _Matcher, node: Node) -> bool:
    if node.op_type != "QLinearAveragePool":
        return False
    inputs = list(node.inputs) + [""] * 5
    source = Quantized(inputs[0], inputs[1], inputs[2])
    target = Quantized(node.outputs[0], inputs[3], inputs[4])
    try:
        return matcher.same(source, target)
    except KeyError:  # not constants: the handler reports it
        return True


def fuse_qdq(graph: Graph) -> Graph:
    """`graph` with its QDQ groups as QOperator nodes (see the module's docstring)."""
    matcher = _Matcher(graph)
    replaced: dict[int, Node] = {}
    for node in graph.nodes:
        if node.index in matcher.removed:
            continue
        found = matcher.match(node)
        if found is not None:
            replaced[node.index] = found
    infos = dict(graph.infos)
    nodes: list[Node] = []
    for node in graph.nodes:
        if node.index in matcher.removed:
            continue
        node = replaced.get(node.index, node)
        if (
            node.domain == MICROSOFT
            and node.op_type in EXPANDED
            and not _has_integer_kernel(matcher, node)
        ):
            nodes.extend(_expand(node, infos))
        else:
            nodes.append(node)
    read = {name for node in nodes for name in node.inputs if name}
    kept = [
        node
        for node in nodes
        if node.index not in matcher.touched
        or not _default(node, "DequantizeLinear")
        or node.outputs[0] in read
        or node.outputs[0] in graph.outputs
    ]
    if len(kept) == len(graph.nodes) and not replaced:
        return graph
    return replace(graph, nodes=tuple(kept), infos=infos)


__all__ = ["ACTIVATION", "fuse_qdq"]
