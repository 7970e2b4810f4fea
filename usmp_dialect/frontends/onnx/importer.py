"""Builds the MLIR module of an ONNX graph (SPEC §9) with xDSL's builders, in the same shape
as the TFLite frontend's: `@main` takes the graph's inputs then its outputs as memref
arguments (named after the tensors, `{usmp.io = ...}`), allocates every other activation with
`memref.alloc`, and calls one function `@<op type lowercased>_<index>` per computing node in
file order. Reshape-like nodes are views, nodes on constants are folded here (Shape
subgraphs, ConstantOfShape, Constant, ...), weights become constant `memref.global`s, and a
BatchNormalization or activation that is the only reader of a convolution's (or Gemm's) output
is fused into it.

Concat in place: when a Concat's slices are contiguous (every output dimension before the axis
is 1, as NCHW channel concatenation with one batch), each input that a node of the graph writes
and only this Concat reads (not a graph input or output, not a constant, of the output's element
type) is written by its producer straight into its slice of the output, and the Concat copies
only the other inputs (or disappears). The output is then one `memref.alloc` of bytes and every
tensor placed in it a `memref.view` at its byte offset (identity layout, so the node functions
keep their signatures); a Concat output that only a later Concat reads nests in it.

Handlers are registered in `OPERATORS` by the modules of `usmp_dialect.frontends.onnx.ops`;
each receives a `NodeContext` and emits its function through `usmp_dialect.kernels`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr
from xdsl.ir import Attribute, SSAValue

from usmp_dialect.dialects.usmp import (
    MODEL_ATTRIBUTE,
    QUANTIZATION_ATTRIBUTE,
    TENSOR_ATTRIBUTE,
    OperatorFacts,
)
from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.in_place import (
    InPlaceStorage,
    check_mode,
    choose_calls,
    lowers_peak,
)
from usmp_dialect.frontends.onnx.qdq import fuse_qdq
from usmp_dialect.frontends.onnx.reader import Graph, Node, TensorInfo, read_graph
from usmp_dialect.frontends.options import ImportOptions
from usmp_dialect.frontends.unsupported import Finding, report
from usmp_dialect.kernels.builder import KernelBuilder, finish, function
from usmp_dialect.kernels.module import (
    IO_NAME_CHARS,
    ConcatSlices,
    ModelModule,
    TensorNames,
    mark_operator,
    memref_of,
    model_attribute,
    quantization_attribute,
    reshape_view,
)
from usmp_dialect.tools.progress import progress

if TYPE_CHECKING:
    from usmp_dialect.frontends.onnx.streaming import StreamedGroup

ACTIVATION_TYPES = (np.dtype(np.float32), np.dtype(np.int8))
# Nodes that quantise -> the operand position of their output's scale (its zero point follows).
# An input's scale and zero point are operands 1 and 2 of the node reading it first
# (DequantizeLinear, QLinearConv, ...; not QLinearConcat, whose first operand is its scale).
_OUTPUT_SCALE_OPERAND = {
    "QuantizeLinear": 1,
    "DequantizeLinear": 1,
    "QLinearConv": 6,
    "QLinearMatMul": 6,
    "QLinearAdd": 6,
    "QLinearMul": 6,
    "QGemm": 7,
    "QLinearConcat": 0,
    "QLinearGlobalAveragePool": 3,
    "QLinearAveragePool": 3,
    "QLinearSigmoid": 3,
    "QLinearLeakyRelu": 3,
    "QLinearSoftmax": 3,
}


@dataclass
class NodeContext:
    """What a node handler sees: its node, the graph, and the importer."""

    importer: OnnxImporter
    node: Node

    @property
    def graph(self) -> Graph:
        return self.importer.graph

    @property
    def module(self) -> ModelModule:
        return self.importer.module

    @property
    def opset(self) -> int:
        return self.importer.graph.opset

    @property
    def name(self) -> str:
        """The node function's symbol, `<op type lowercased>_<index>` (e.g. `conv_0`)."""
        return f"{self.node.op_type.lower()}_{self.node.index}"

    def fail(self, problem: str) -> ModelImportError:
        return ModelImportError(f"{self.graph.path}: {self.node.describe()}: {problem}")

    def attr(self, name: str, default: Any = None) -> Any:
        return self.node.attributes.get(name, default)

    def has_input(self, position: int) -> bool:
        return position < len(self.node.inputs) and self.node.inputs[position] != ""

    def input_name(self, position: int) -> str:
        if not self.has_input(position):
            raise self.fail(f"missing input {position}")
        return self.node.inputs[position]

    def output_name(self, position: int = 0) -> str:
        if position >= len(self.node.outputs) or not self.node.outputs[position]:
            raise self.fail(f"missing output {position}")
        return self.node.outputs[position]

    def _info(self, name: str) -> TensorInfo:
        constant = self.importer.constants.get(name)
        if constant is not None:
            return TensorInfo(constant.dtype, tuple(constant.shape))
        info = self.graph.infos.get(name)
        if info is None or info.shape is None or info.dtype is None:
            symbol = info.symbolic if info is not None else "?"
            raise self.fail(
                f"tensor '{name}' has no static shape (symbolic dimension '{symbol}'; only "
                "static shapes are supported)"
            )
        return info

    def shape(self, position: int) -> tuple[int, ...]:
        shape = self._info(self.input_name(position)).shape
        assert shape is not None
        return shape

    def dtype(self, position: int) -> np.dtype:
        dtype = self._info(self.input_name(position)).dtype
        assert dtype is not None
        return dtype

    def output_shape(self, position: int = 0) -> tuple[int, ...]:
        shape = self._info(self.output_name(position)).shape
        assert shape is not None
        return shape

    def output_dtype(self, position: int = 0) -> np.dtype:
        dtype = self._info(self.output_name(position)).dtype
        assert dtype is not None
        return dtype

    def is_constant(self, position: int) -> bool:
        return self.has_input(position) and self.node.inputs[position] in self.importer.constants

    def constant(self, position: int) -> np.ndarray:
        name = self.input_name(position)
        value = self.importer.constants.get(name)
        if value is None:
            raise self.fail(f"input {position} ('{name}') must be a constant")
        return value

    def value(self, position: int) -> SSAValue:
        """The activation input at `position`, as an SSA value of `@main`."""
        name = self.input_name(position)
        if name in self.importer.values:
            return self.importer.values[name]
        if name in self.importer.constants:
            raise self.fail(
                f"input {position} ('{name}') is a constant where an activation is expected"
            )
        raise self.fail(f"input {position} ('{name}') is read before any node writes it")

    def result(self, position: int = 0, name: str | None = None) -> SSAValue:
        """The memref the node writes its output `position` (or tensor `name`) into."""
        return self.importer.output_buffer(self, name or self.output_name(position))

    def result_over(self, *positions: int) -> SSAValue:
        """The memref an elementwise node (each output element computed from its inputs'
        elements at the same index) writes its output into: the buffer of the first input at
        `positions` it may overwrite (`OnnxImporter.in_place`), else a new one."""
        for position in positions:
            if self.has_input(position) and not self.is_constant(position):
                value = self.importer.in_place(self, position)
                if value is not None:
                    return value
        return self.result()

    def depthwise_in_place(self, produced: str) -> SSAValue | None:
        """For a depthwise Conv (one input channel per group, one batch) writing `produced`:
        the view of its input's first bytes to write the output into, when the importer chose
        to run it in place and it may overwrite its input (`InPlaceStorage.over`, the output
        no larger); None otherwise (when it may, it is then recorded as a candidate)."""
        return self.importer.depthwise_in_place(self, produced)

    def view(self, value: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        cast = reshape_view(value, shape)
        return value if cast is None else self.importer.main.insert(cast)

    def call(
        self, inputs: list[SSAValue], outputs: list[SSAValue], name: str | None = None
    ) -> None:
        """Calls the node function just emitted (`@<name>`, by default `self.name`)."""
        self.importer.main.insert(func.CallOp(name or self.name, [*inputs, *outputs], []))

    def fold(self, position: int, value: np.ndarray) -> None:
        self.importer.constants[self.output_name(position)] = np.asarray(value)

    def alias(self, value: SSAValue, position: int = 0) -> None:
        """Output `position` is `value` seen with the output's shape (no copy)."""
        self.importer.alias(self, self.output_name(position), value)

    def single_reader(self, tensor: str, op_types: tuple[str, ...]) -> Node | None:
        """The node reading `tensor` (as its input 0) when it is the only reader, `tensor` is
        not a graph output, and its op type is one of `op_types`."""
        readers = self.importer.readers.get(tensor, [])
        if len(readers) != 1 or tensor in self.graph.outputs:
            return None
        reader = readers[0]
        if reader.op_type not in op_types or reader.inputs[0] != tensor:
            return None
        if reader.index in self.importer.fused or reader.domain not in ("", "ai.onnx"):
            return None
        return reader

    def fuse(self, node: Node) -> NodeContext:
        """Marks `node` computed by this node's function; its context (for its attributes)."""
        self.importer.fused.add(node.index)
        return NodeContext(self.importer, node)

    def used(self, name: str) -> bool:
        return bool(self.importer.readers.get(name)) or name in self.graph.outputs


@dataclass(frozen=True)
class NodeRecord:
    """What a node's handler did: the activations it read, the tensors it wrote (in order),
    and the nodes it fused into its function."""

    read: tuple[str, ...]
    written: tuple[str, ...]
    fused: frozenset[int]


@dataclass(frozen=True)
class StreamedGroups:
    """The fused groups an import emits (`frontends/onnx/streaming.py`): each one by the node
    where it runs (its last), and every other node it computes."""

    emit_at: dict[int, StreamedGroup] = field(default_factory=dict)
    inside: frozenset[int] = frozenset()


Handler = Callable[[NodeContext], None]
OPERATORS: dict[str, Handler] = {}
MICROSOFT = "com.microsoft"
MICROSOFT_OPERATORS: dict[str, Handler] = {}  # onnxruntime's contrib operators


def operator(*op_types: str, domain: str = "") -> Callable[[Handler], Handler]:
    """Registers a handler for the ONNX operators `op_types` of the default domain (or of
    onnxruntime's `com.microsoft`)."""
    table = MICROSOFT_OPERATORS if domain == MICROSOFT else OPERATORS

    def register(handler: Handler) -> Handler:
        for op_type in op_types:
            table[op_type] = handler
        return handler

    return register


# Operators folded at import, whatever their inputs are: their outputs are constants.
_ALWAYS_FOLDED = ("Constant", "Shape")
_HINTS = {"uint8": "quantise with activation_type=QInt8 and weight_type=QInt8"}


def unsupported(graph: Graph) -> list[Finding]:
    """Every node without a handler and every activation (a tensor that is not a constant, read
    by a node or a graph output) of a type no kernel computes with, in graph order: the
    pre-scan before the import. Constants are initializers and the outputs of nodes that fold
    (Constant, Shape, and any node whose inputs are all constants)."""
    constant = set(graph.initializers)
    read = {name for node in graph.nodes for name in node.inputs if name}
    operators: list[Finding] = []
    types: list[Finding] = []
    checked: set[str] = set()

    def check(name: str, node: Node | None) -> None:
        info = graph.infos.get(name)
        if info is None or info.dtype is None or info.dtype in ACTIVATION_TYPES:
            return  # an unknown type or shape is reported where the tensor is built
        kind = f"activation type {info.dtype.name}"
        index, node_name = (node.index, node.name) if node is not None else (None, "")
        hint = _HINTS.get(info.dtype.name, "")
        types.append(Finding(kind, index, node_name, tensor=name, hint=hint))
        checked.add(name)

    for node in graph.nodes:
        inputs = [name for name in node.inputs if name]
        folded = node.op_type in _ALWAYS_FOLDED or all(name in constant for name in inputs)
        if handler_of(node) is None:
            domain = f" of domain '{node.domain}'" if node.domain not in ("", "ai.onnx") else ""
            kind = f"operator {node.origin or node.op_type}{domain}"
            operators.append(Finding(kind, node.index, node.name))
            continue
        if folded:
            constant.update(node.outputs)
            continue
        for name in (*inputs, *node.outputs):
            if name not in constant and (name in read or name in graph.outputs):
                check(name, node)
    for name in (*graph.inputs, *graph.outputs):  # entry arguments, whoever reads them
        if name in checked or name in constant:
            continue
        touching = [node for node in graph.nodes if name in (*node.inputs, *node.outputs)]
        for node in touching or [None]:
            check(name, node)
    return operators + types


def handler_of(node: Node) -> Handler | None:
    if node.domain in ("", "ai.onnx"):
        return OPERATORS.get(node.op_type)
    if node.domain == MICROSOFT:
        return MICROSOFT_OPERATORS.get(node.op_type)
    return None


class OnnxImporter:
    def __init__(
        self,
        graph: Graph,
        in_place: str = "all",
        depthwise: frozenset[int] = frozenset(),
        streamed: StreamedGroups | None = None,
    ) -> None:
        self.graph = graph
        self.module = ModelModule()
        self.names = TensorNames()  # short SSA names / C identifiers of the tensors
        self.constants: dict[str, np.ndarray] = dict(graph.initializers)
        self.values: dict[str, SSAValue] = {}
        self.fused: set[int] = set()
        self.readers: dict[str, list[Node]] = {}
        for node in graph.nodes:
            for name in node.inputs:
                if name:
                    self.readers.setdefault(name, []).append(node)
        # The index of the last node reading each tensor (after every node: a graph output).
        self._last_read: dict[str, float] = defaultdict(lambda: -1)
        for name, readers in self.readers.items():
            self._last_read[name] = readers[-1].index
        for name in graph.outputs:
            self._last_read[name] = float("inf")
        self.main: KernelBuilder
        self._arguments: dict[str, SSAValue] = {}
        # Concat in place: tensor -> (the Concat output it is a slice of, element offset).
        self.concat_slices = ConcatSlices(self._plan_concat_slices())
        # Elementwise in place (`frontends/in_place.py`): the storage (a `memref.alloc` of
        # ours) each tensor value lives in and the tensors living in each storage.
        self.in_place_mode = check_mode(in_place)
        self.storage = InPlaceStorage[str](self._last_read, self.in_place_mode != "none")
        # Depthwise Conv nodes (indices) that run in place, and the functions of those that
        # could but do not, with their temporary's bytes (`import_onnx` chooses among them).
        self.depthwise = depthwise
        self.depthwise_candidates: dict[str, int] = {}
        # Fused row streaming (`frontends/onnx/streaming.py`): the groups to emit, and what each
        # handler did (the activations it read, the tensors it wrote, the nodes it fused), which
        # describes the graph to `graph.streaming`.
        self.streamed = streamed or StreamedGroups()
        self.records: dict[int, NodeRecord] = {}

    def _static(self, name: str) -> TensorInfo | None:
        info = self.graph.infos.get(name)
        if info is None or info.shape is None or info.dtype not in ACTIVATION_TYPES:
            return None
        if name in self.constants or 0 in info.shape:
            return None
        return info

    def _plan_concat_slices(self) -> dict[str, tuple[str, int]]:
        """Which Concat inputs are written straight into their slice (see the module doc)."""
        slices: dict[str, tuple[str, int]] = {}
        boundary = set(self.graph.inputs) | set(self.graph.outputs)
        for node in self.graph.nodes:
            if node.op_type != "Concat" or node.domain not in ("", "ai.onnx"):
                continue
            if len(node.outputs) != 1 or node.outputs[0] in boundary:
                continue
            output = node.outputs[0]
            info = self._static(output)
            if info is None or info.shape is None or not info.shape:
                continue
            shape = info.shape
            along = int(node.attributes.get("axis", 0))
            along = along + len(shape) if along < 0 else along
            if not 0 <= along < len(shape) or int(np.prod(shape[:along])) != 1:
                continue  # slices strided: the Concat copies
            inner = int(np.prod(shape[along + 1 :]))
            offset, planned = 0, dict[str, tuple[str, int]]()
            for name in node.inputs:
                source = self._static(name) if name else None
                if source is None or source.shape is None or len(source.shape) != len(shape):
                    if name in self.constants and len(self.constants[name].shape) == len(shape):
                        offset += int(self.constants[name].shape[along]) * inner
                        continue
                    break  # the handler reports the problem or folds the node
                if (
                    name not in boundary
                    and self.readers.get(name) == [node]
                    and node.inputs.count(name) == 1
                    and source.dtype == info.dtype
                ):
                    planned[name] = (output, offset)
                offset += source.shape[along] * inner
            else:
                if offset == int(np.prod(shape)):
                    slices.update(planned)
        return slices

    def in_slice(self, name: str, concat_output: str) -> bool:
        """Whether the tensor `name` was written in place into its slice of `concat_output`."""
        placed = self.concat_slices.placed(name, concat_output)
        return placed is not None and self.values.get(name) is placed

    def _memref_type(self, where: str, name: str, info: TensorInfo | None) -> MemRefType:
        if info is None or info.shape is None or info.dtype is None:
            symbol = info.symbolic if info is not None else "?"
            raise ModelImportError(
                f"{self.graph.path}: {where}: tensor '{name}' has no static shape (symbolic "
                f"dimension '{symbol}'; only static shapes are supported)"
            )
        if info.dtype not in ACTIVATION_TYPES:
            raise ModelImportError(
                f"{self.graph.path}: {where}: tensor '{name}' is an activation of type "
                f"{info.dtype.name}; only float32 and int8 activations are supported"
            )
        if 0 in info.shape:
            raise ModelImportError(
                f"{self.graph.path}: {where}: tensor '{name}' has the empty shape "
                f"{list(info.shape)}"
            )
        return memref_of(info.shape or (1,), info.dtype)

    def output_buffer(self, context: NodeContext, name: str) -> SSAValue:
        """The entry argument of a graph output, otherwise a new `memref.alloc`."""
        if name in self._arguments and name not in self.values:
            value = self._arguments[name]
        elif self.concat_slices.covers(name):
            where = context.node.describe()
            value = self.concat_slices.buffer(
                self.main,
                name,
                lambda tensor: self._memref_type(where, tensor, self.graph.infos.get(tensor)),
                self.names,
                lambda tensor: tensor,
            )
            assert isinstance(value.owner, memref.ViewOp)
            whole = name not in self.concat_slices.slices  # the outermost output
            self.storage.lives_in(name, value, value.owner.source, whole)
        else:
            type_ = self._memref_type(context.node.describe(), name, self.graph.infos.get(name))
            alloc = memref.AllocOp([], [], type_)
            alloc.attributes[TENSOR_ATTRIBUTE] = StringAttr(name)
            value = self.main.insert(alloc)
            value.name_hint = self.names(name)
            self.storage.lives_in(name, value, value, whole=True)
        self.values[name] = value
        return value

    def in_place(
        self,
        context: NodeContext,
        position: int,
        name: str | None = None,
        smaller_output: bool = False,
        dry_run: bool = False,
    ) -> SSAValue | None:
        """For an elementwise node, the buffer of input `position` seen with the shape of output
        0 when the output may overwrite it (`InPlaceStorage.over`: this node is the last to read
        anything in that buffer, the input spans it with the output's element count and size,
        no other input lives there, the output is neither a graph output nor a Concat slice);
        None otherwise. `name`: the output tensor (default output 0; a fused node's);
        `smaller_output`, `dry_run`: as `InPlaceStorage.over`'s."""
        name = name or context.output_name(0)
        value = self.values.get(context.input_name(position))
        if value is None:
            return None
        type_ = self._memref_type(context.node.describe(), name, self.graph.infos.get(name))
        others = [
            self.values[tensor]
            for index, tensor in enumerate(context.node.inputs)
            if index != position and tensor in self.values
        ]
        pinned = name in self._arguments or self.concat_slices.covers(name)
        viewed = self.storage.over(
            context.node.index,
            name,
            type_,
            value,
            others,
            pinned,
            context.view,
            dry_run,
            smaller_output,
        )
        if viewed is not None and not dry_run:
            self.values[name] = viewed
        return viewed

    def depthwise_in_place(self, context: NodeContext, produced: str) -> SSAValue | None:
        """See `NodeContext.depthwise_in_place`."""
        if self.in_place_mode != "all":
            return None
        if context.node.index in self.depthwise:
            return self.in_place(context, 0, produced, smaller_output=True)
        if self.in_place(context, 0, produced, smaller_output=True, dry_run=True) is not None:
            _, _, height, width = context.output_shape()
            self.depthwise_candidates[context.name] = height * width * 4  # float32
        return None

    def alias(self, context: NodeContext, name: str, value: SSAValue) -> None:
        """`name` is `value` with its own shape; a graph output receives a copy instead."""
        type_ = self._memref_type(context.node.describe(), name, self.graph.infos.get(name))
        viewed = context.view(value, tuple(type_.get_shape()))
        if name in self._arguments:
            argument = self._arguments[name]
            self.main.insert(memref.CopyOp(viewed, argument))
            self.values[name] = argument
            return
        self.storage.alias(name, viewed, value)
        self.values[name] = viewed

    def _io_quantization(self, tensor: str, kind: str) -> tuple[float, int] | None:
        """(scale, zero point) of an integer graph input or output, per tensor: the two
        operands after it of the DequantizeLinear / QLinear node reading the input as its
        first operand, or the output scale and zero point of the QuantizeLinear / QLinear node
        writing the output; None when the graph does not say."""
        info = self.graph.infos.get(tensor)
        if info is None or info.dtype is None or info.dtype.kind not in "iu":
            return None
        if kind == "input":
            candidates = [
                (node, 1)
                for node in self.readers.get(tensor, [])
                if node.inputs[0] == tensor and node.op_type in _OUTPUT_SCALE_OPERAND
            ]
        else:
            candidates = [
                (node, _OUTPUT_SCALE_OPERAND[node.op_type])
                for node in self.graph.nodes
                if node.op_type in _OUTPUT_SCALE_OPERAND and tensor in node.outputs
            ]
        for node, position in candidates:
            if len(node.inputs) <= position:
                continue
            scale = self.constants.get(node.inputs[position])
            has_zero_point = len(node.inputs) > position + 1 and node.inputs[position + 1]
            zero_point = (
                self.constants.get(node.inputs[position + 1]) if has_zero_point else np.zeros(1)
            )
            if scale is not None and zero_point is not None and scale.size == zero_point.size == 1:
                return float(scale.reshape(-1)[0]), int(zero_point.reshape(-1)[0])
        return None
        if kind == "input":
            nodes = [
                node
                for node in self.readers.get(tensor, [])
                if node.inputs[0] == tensor
                and (node.op_type == "DequantizeLinear" or node.op_type.startswith("QLinear"))
            ]
        else:
            nodes = [
                node
                for node in self.graph.nodes
                if node.op_type == "QuantizeLinear" and tensor in node.outputs
            ]
        for node in nodes:
            if len(node.inputs) < 2:
                continue
            scale = self.constants.get(node.inputs[1])
            zero_point = self.constants.get(node.inputs[2]) if len(node.inputs) > 2 else np.zeros(1)
            if scale is not None and zero_point is not None and scale.size == zero_point.size == 1:
                return float(scale.reshape(-1)[0]), int(zero_point.reshape(-1)[0])
        return None

    def _entry(self) -> func.FuncOp:
        graph = self.graph
        duplicated = set(graph.inputs) & set(graph.outputs)
        if duplicated:
            raise ModelImportError(
                f"{graph.path}: tensor '{min(duplicated)}' is both a graph input and output"
            )
        self.names.reserve("main")
        arguments: list[tuple[str, MemRefType]] = []
        attrs: list[dict[str, Attribute]] = []
        for kind, tensors in (("input", graph.inputs), ("output", graph.outputs)):
            for position, tensor in enumerate(tensors):
                fallback = kind if len(tensors) == 1 else f"{kind}{position}"
                type_ = self._memref_type(f"graph {kind}", tensor, graph.infos.get(tensor))
                arguments.append((self.names(tensor, fallback, IO_NAME_CHARS), type_))
                attributes: dict[str, Attribute] = {
                    "usmp.io": StringAttr(kind),
                    TENSOR_ATTRIBUTE: StringAttr(tensor),
                }
                quantization = self._io_quantization(tensor, kind)
                if quantization is not None:
                    attributes[QUANTIZATION_ATTRIBUTE] = quantization_attribute(*quantization)
                attrs.append(attributes)
        op, self.main, values = function("main", arguments, arg_attrs=attrs)
        for tensor, value in zip((*graph.inputs, *graph.outputs), values, strict=True):
            self._arguments[tensor] = value
        for tensor in graph.inputs:
            self.values[tensor] = self._arguments[tensor]
        return op

    def run(self) -> ModuleOp:
        graph = self.graph
        report(graph.path, unsupported(graph), unit="node")
        entry = self._entry()
        from usmp_dialect.frontends.onnx.macs import node_macs

        for node in graph.nodes:
            progress(f"importing node {node.index + 1}/{len(graph.nodes)} ({node.op_type})")
            if node.index in self.streamed.emit_at:
                from usmp_dialect.frontends.onnx.streaming import emit_group

                emit_group(self, self.streamed.emit_at[node.index])
                continue
            if node.index in self.streamed.inside:
                continue
            if node.index not in self.fused:
                handler = handler_of(node)
                assert handler is not None
                context = NodeContext(self, node)
                emitted = len(self.module.functions)
                read = tuple(
                    name
                    for name in node.inputs
                    if name in self.values and name not in self.constants
                )
                written, fused = set(self.values), set(self.fused)
                handler(context)
                facts = OperatorFacts(node.op_type, node.index, node_macs(context))
                mark_operator(self.module.functions[emitted:], facts)
                self.records[node.index] = NodeRecord(
                    read,
                    tuple(name for name in self.values if name not in written),
                    frozenset(self.fused - fused),
                )
        for tensor in graph.outputs:
            argument = self._arguments[tensor]
            if tensor in self.values and self.values[tensor] is argument:
                continue
            if tensor in self.values:
                self.main.insert(memref.CopyOp(self.values[tensor], argument))
            elif tensor in self.constants:
                raise ModelImportError(f"{graph.path}: the graph output '{tensor}' is a constant")
            else:
                raise ModelImportError(f"{graph.path}: no node writes the graph output '{tensor}'")
        finish(self.main)
        self.module.add(entry)
        return self.module.module()


def _function(node: Node) -> str:
    return f"{node.op_type.lower()}_{node.index}"


def import_onnx(data: bytes, path: str, options: ImportOptions | None = None) -> ModuleOp:
    """The module of the `.onnx` model in `data` (SPEC §9), carrying `usmp.model`, imported
    with `options` (`frontends.options.ImportOptions`; ONNX runs elementwise nodes in place for
    `in_place="all"` and `"elementwise"`, and streams Conv/pooling chains for `fuse="rows"`)."""
    from usmp_dialect.frontends.onnx import ops  # noqa: F401  (registers the handlers)

    options = options or ImportOptions()
    in_place = options.in_place
    graph = fuse_qdq(read_graph(data, path))
    importer = OnnxImporter(graph, in_place)
    module = importer.run()
    if options.workspace_size_hint_bytes is not None:
        module = _within_hint(graph, options, importer, module)
    else:
        module = _lowest_peak(graph, options, importer, module)
    module.attributes[MODEL_ATTRIBUTE] = model_attribute(data, path)
    return module


def _streamed(
    graph: Graph, in_place: str, module: ModuleOp, streamed: StreamedGroups | None
) -> tuple[OnnxImporter | None, ModuleOp]:
    """The model imported again with `streamed`'s groups, when that lowers the peak of the
    plain import's `module` (`lowers_peak`); (None, `module`) otherwise."""
    if streamed is None:
        return None, module
    grouped = OnnxImporter(graph, in_place, streamed=streamed)
    transformed = grouped.run()
    if lowers_peak(module, transformed):
        return grouped, transformed
    return None, module


def _with_depthwise(
    graph: Graph, in_place: str, importer: OnnxImporter, module: ModuleOp
) -> ModuleOp:
    """`module` imported again with the depthwise convolutions in place that lower its peak
    (`choose_calls`), when that import really does (`lowers_peak`)."""
    chosen = choose_calls(module, importer.depthwise_candidates)
    if not chosen:
        return module
    nodes = frozenset(node.index for node in graph.nodes if _function(node) in chosen)
    transformed = OnnxImporter(graph, in_place, nodes, importer.streamed).run()
    return transformed if lowers_peak(module, transformed) else module


def _lowest_peak(
    graph: Graph, options: ImportOptions, importer: OnnxImporter, module: ModuleOp
) -> ModuleOp:
    """Without a size hint: fused row streaming where it lowers the peak, decided on the graph
    the plain import described (`frontends/onnx/streaming.py`), then depthwise convolutions in
    place where that lowers it further."""
    if options.fuse == "rows":
        from usmp_dialect.frontends.onnx.streaming import choose_streaming

        grouped, module = _streamed(graph, options.in_place, module, choose_streaming(importer))
        importer = grouped or importer
    return _with_depthwise(graph, options.in_place, importer, module)


def _within_hint(
    graph: Graph, options: ImportOptions, importer: OnnxImporter, module: ModuleOp
) -> ModuleOp:
    """The import under a workspace size hint (SPEC §12), as the TFLite frontend's: the plain
    program when it fits; else the cheapest groups that fit; else with depthwise convolutions
    in place; else the lowest-peak groups (and depthwise in place). When nothing fits, the
    program of the lowest peak reached goes on (its planning then fails in one line)."""
    from usmp_dialect.frontends.onnx.streaming import choose_streaming
    from usmp_dialect.frontends.size_hint import program_peak_bytes

    hint = options.workspace_size_hint_bytes
    assert hint is not None

    def peak_of(program: ModuleOp) -> int:
        peak = program_peak_bytes(program, options.workspace_io)
        return peak if peak is not None else 0

    best = (peak_of(module), module)
    if best[0] <= hint:
        return module
    attempts = [False, True] if options.fuse == "rows" else [None]
    for lowest in attempts:
        grouped, program = importer, module
        if lowest is not None:
            streamed = choose_streaming(importer, hint, lowest, options.workspace_io)
            found, program = _streamed(graph, options.in_place, module, streamed)
            grouped = found or importer
        for candidate in (program, _with_depthwise(graph, options.in_place, grouped, program)):
            peak = peak_of(candidate)
            if peak <= hint:
                return candidate
            if peak < best[0]:
                best = (peak, candidate)
    return best[1]


__all__ = ["MICROSOFT_OPERATORS", "OPERATORS", "NodeContext", "import_onnx", "operator"]
