"""Reads a `.tflite` flatbuffer (with PyPI `tflite`, the generated schema reader) into plain data.

Only what the importer needs is kept: subgraph 0's tensors (shape, element type, quantisation,
constant data as numpy arrays over the file's bytes), its operators in execution order with
their builtin options table, and its inputs and outputs. Everything a model can get wrong at
this level — not a TFLite file, malformed or truncated (`verify.verify_model` checks every
offset first), a subgraph no operator runs, dynamic shapes — is a `ModelImportError` naming the
file and the tensor or operator. The subgraphs IF and WHILE operators run (control flow, nested
too) are read along with subgraph 0 (`Graph.subgraphs`), as are CALL_ONCE's init subgraphs.
Tensor types we cannot read (COMPLEX64, STRING, ...) and custom operators are kept as they are
(`UNREADABLE`, `Operator.custom_code`): the importer's scan reports them with every other
unsupported construct at once.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.tflite.tensor_lists import check_static, rewrite_list_writes
from usmp_dialect.frontends.tflite.verify import VerificationError, verify_model

try:
    import tflite
except ImportError as error:  # pragma: no cover - exercised without the extra
    raise ModelImportError(
        "reading .tflite files needs the optional extra: pip install 'usmp-dialect[tflite]'"
    ) from error

_TENSOR_TYPES: dict[int, np.dtype] = {
    tflite.TensorType.FLOAT32: np.dtype(np.float32),
    tflite.TensorType.INT8: np.dtype(np.int8),
    tflite.TensorType.UINT8: np.dtype(np.uint8),
    tflite.TensorType.INT16: np.dtype(np.int16),
    tflite.TensorType.INT32: np.dtype(np.int32),
    tflite.TensorType.INT64: np.dtype(np.int64),
    tflite.TensorType.BOOL: np.dtype(np.bool_),
}
# The dtype of a tensor whose TFLite type we cannot read (its data is never read either).
UNREADABLE = np.dtype(np.void)
_TYPE_NAMES = {
    value: name for name, value in vars(tflite.TensorType).items() if not name.startswith("_")
}
_OPERATOR_NAMES = {
    value: name for name, value in vars(tflite.BuiltinOperator).items() if not name.startswith("_")
}


@dataclass(frozen=True, eq=False)
class Quantization:
    """Affine quantisation, real = scale * (q - zero_point), per tensor or along `axis`."""

    scales: np.ndarray  # float32
    zero_points: np.ndarray  # int64
    axis: int

    @property
    def scale(self) -> float:
        """The per-tensor scale (as float32, the precision TFLite computes with)."""
        return float(self.scales[0])

    @property
    def zero_point(self) -> int:
        return int(self.zero_points[0])


@dataclass(frozen=True, eq=False)
class Tensor:
    index: int
    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    quantization: Quantization | None
    data: np.ndarray | None  # the constant value, shaped; None for activations
    type_name: str  # TFLite's name of the element type, e.g. "INT8"
    variable: bool = False
    """A TFLite variable tensor (`is_variable`): state that keeps its value from one run to
    the next (SPEC §13). Its `data` is None (it is no constant); `initial` holds the data of
    its buffer, if it has one."""
    initial: np.ndarray | None = None

    @property
    def size_bytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def describe(self) -> str:
        return f"tensor '{self.name}' (index {self.index})"


@dataclass(frozen=True, eq=False)
class Operator:
    index: int
    opcode: str  # the builtin operator name, e.g. "CONV_2D"
    inputs: tuple[int, ...]  # tensor indices, -1 for an omitted optional input
    outputs: tuple[int, ...]
    options: Any  # the builtin options table (a `tflite.*Options`), or None
    custom_code: str = ""  # a CUSTOM operator's name
    options_type: int = 0  # the `tflite.BuiltinOptions` code of `options`
    padding: tuple[tuple[int, int], tuple[int, int]] | None = None
    """Zero-point padding (before, after) of the height and the width that a PAD read by this
    windowed operator wrote and that its window now reads implicitly instead, on top of the
    padding its options describe (`frontends/tflite/folding.py`); None: none folded."""
    folded: tuple[int, ...] = ()
    """The operators (indices) folded into this one (`frontends/tflite/folding.py`)."""

    def option(self, options_class: type) -> Any:
        """The builtin options as `options_class` (e.g. `tflite.Conv2DOptions`); None when the
        operator has none or options of another type (as TFLM's `builtin_options_as_*`)."""
        expected = getattr(tflite.BuiltinOptions, options_class.__name__, None)
        if self.options is None or self.options_type != expected:
            return None
        table = options_class()
        table.Init(self.options.Bytes, self.options.Pos)
        return table


@dataclass(frozen=True, eq=False)
class Graph:
    """Subgraph 0 of a TFLite model (or, `index` > 0, one of the subgraphs it runs)."""

    path: str
    tensors: tuple[Tensor, ...]
    operators: tuple[Operator, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    init_subgraphs: tuple[tuple[int, Graph], ...] = ()
    """The subgraphs subgraph 0's CALL_ONCE operators run (resource variables' initial
    values), by subgraph index."""
    index: int = 0
    subgraphs: tuple[tuple[int, Graph], ...] = ()
    """Subgraph 0's: every subgraph an IF or WHILE operator runs (the branches, conditions and
    bodies, those of nested control flow too), by subgraph index; each is run by exactly one
    operator. A model with a subgraph nothing runs is refused."""

    def init_subgraph(self, index: int) -> Graph | None:
        return dict(self.init_subgraphs).get(index)

    def subgraph(self, index: int) -> Graph:
        """The control-flow subgraph `index` (`subgraphs`)."""
        return dict(self.subgraphs)[index]


def _quantization(raw: Any) -> Quantization | None:
    if raw is None or raw.ScaleLength() == 0:
        return None
    scales = raw.ScaleAsNumpy().astype(np.float32)
    if raw.ZeroPointLength():
        zero_points = raw.ZeroPointAsNumpy().astype(np.int64)
    else:
        zero_points = np.zeros(len(scales), dtype=np.int64)
    return Quantization(scales, zero_points, raw.QuantizedDimension())


def _buffer_bytes(model: Any, data: bytes, index: int) -> memoryview | None:
    if index <= 0 or index >= model.BuffersLength():
        return None
    buffer = model.Buffers(index)
    if buffer.Offset() > 1:  # large models keep data after the flatbuffer
        start, size = buffer.Offset(), buffer.Size()
        if start + size > len(data):
            raise ModelImportError(f"buffer {index} lies beyond the end of the file")
        return memoryview(data)[start : start + size]
    if buffer.DataLength() == 0:
        return None
    view = buffer.DataAsNumpy()
    return memoryview(view.tobytes()) if not view.flags.c_contiguous else memoryview(view)


def _tensor(model: Any, data: bytes, raw: Any, index: int) -> Tensor:
    name = (raw.Name() or b"").decode("utf-8", "replace")
    where = f"tensor '{name}' (index {index})"
    code = raw.Type()
    type_name = _TYPE_NAMES.get(code, f"type {code}")
    dtype = _TENSOR_TYPES.get(code, UNREADABLE)
    shape = tuple(int(d) for d in raw.ShapeAsNumpy()) if raw.ShapeLength() else ()
    if raw.ShapeLength() == 0 and raw.ShapeSignatureLength() > 0:
        raise ModelImportError(f"{where} has an unknown shape")
    if any(d < 0 for d in shape):
        raise ModelImportError(f"{where} has a dynamic shape {list(shape)}")
    constant = _buffer_bytes(model, data, raw.Buffer())
    array = None
    if constant is not None and dtype != UNREADABLE:
        count = int(np.prod(shape, dtype=np.int64))
        if len(constant) != count * dtype.itemsize:
            raise ModelImportError(
                f"{where}: its data holds {len(constant)} bytes, its shape {list(shape)} needs "
                f"{count * dtype.itemsize}"
            )
        array = np.frombuffer(constant, dtype=dtype.newbyteorder("<")).reshape(shape)
    quantization = _quantization(raw.Quantization())
    if raw.IsVariable():
        return Tensor(index, name, dtype, shape, quantization, None, type_name, True, array)
    return Tensor(index, name, dtype, shape, quantization, array, type_name)


def _operator(model: Any, raw: Any, index: int, tensor_count: int) -> Operator:
    code_index = raw.OpcodeIndex()
    if code_index >= model.OperatorCodesLength():
        raise ModelImportError(f"operator {index} has no operator code")
    code = model.OperatorCodes(code_index)
    builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
    custom = ""
    if builtin == tflite.BuiltinOperator.CUSTOM:
        custom = (code.CustomCode() or b"").decode("utf-8", "replace")
    opcode = _OPERATOR_NAMES.get(builtin, f"builtin operator {builtin}")
    inputs = tuple(int(t) for t in raw.InputsAsNumpy()) if raw.InputsLength() else ()
    outputs = tuple(int(t) for t in raw.OutputsAsNumpy()) if raw.OutputsLength() else ()
    for tensor in (*inputs, *outputs):
        if tensor >= tensor_count or tensor < -1:
            raise ModelImportError(f"{opcode} (operator {index}) names a missing tensor {tensor}")
    options_type = raw.BuiltinOptionsType()
    options = raw.BuiltinOptions() if options_type else None
    return Operator(index, opcode, inputs, outputs, options, custom, options_type)


def read_graph(data: bytes, path: str) -> Graph:
    """Subgraph 0 of the TFLite model in `data` (read from `path`, named in messages), with
    the init subgraphs its CALL_ONCE operators run."""
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise ModelImportError(f"{path}: not a TFLite model (no 'TFL3' file identifier)")
    try:
        verify_model(data)
    except VerificationError as error:
        raise ModelImportError(f"{path}: malformed or truncated TFLite file: {error}") from None
    try:
        model = tflite.Model.GetRootAs(data, 0)
        graph = _subgraph(model, data, 0, path)
        init = _init_subgraph_indices(graph)
        count = model.SubgraphsLength()
        for index in init:
            if not 0 < index < count:
                raise ModelImportError(f"CALL_ONCE runs the missing subgraph {index}")
        subgraphs = _control_flow_subgraphs(model, data, graph, path)
        for index in range(1, count):
            if index not in init and index not in subgraphs:
                raise ModelImportError(
                    f"subgraph {index} is run by no IF, WHILE or CALL_ONCE operator; only "
                    "the subgraphs of control flow and resource variables' init subgraphs are "
                    "supported besides subgraph 0"
                )
        inputs, outputs = graph.inputs, graph.outputs
        tensors = graph.tensors
        init_subgraphs = tuple((i, _subgraph(model, data, i, path)) for i in sorted(init))
    except ModelImportError as error:
        message = str(error)
        raise ModelImportError(
            message if message.startswith(path) else f"{path}: {message}"
        ) from None
    except (IndexError, struct.error, ValueError, TypeError, UnicodeDecodeError) as error:
        raise ModelImportError(
            f"{path}: malformed or truncated TFLite file ({type(error).__name__}: {error})"
        ) from None
    if not inputs or not outputs:
        raise ModelImportError(f"{path}: the model has no inputs or no outputs")
    for kind, indices in (("input", inputs), ("output", outputs)):
        for index in indices:
            if not 0 <= index < len(tensors):
                raise ModelImportError(f"{path}: the model {kind} names a missing tensor {index}")
    if subgraphs:  # control flow: its conditions and counters are scalars
        tensors = _scalars_as_vectors(tensors)
        subgraphs = {
            index: replace(subgraph, tensors=_scalars_as_vectors(subgraph.tensors))
            for index, subgraph in subgraphs.items()
        }
    return Graph(
        path,
        tensors,
        graph.operators,
        inputs,
        outputs,
        init_subgraphs,
        subgraphs=tuple(sorted(subgraphs.items())),
    )


def _scalars_as_vectors(tensors: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """The scalar (rank-0) activations of a model with control flow seen as vectors of one
    element: `tf.cond`'s predicate and `tf.while_loop`'s counters are scalars, which the
    importer does not take (a rank-0 memref); one element broadcasts as a scalar does, and its
    byte is the same. Constants, variables and resources keep their shape. Only models with
    control flow: the others import exactly as before."""
    return tuple(
        replace(tensor, shape=(1,))
        if tensor.shape == ()
        and tensor.data is None
        and not tensor.variable
        and tensor.dtype != UNREADABLE
        else tensor
        for tensor in tensors
    )


def dynamic_signature(raw: Any) -> tuple[int, ...] | None:
    """The shape signature of a flatbuffer tensor whose shape is dynamic beyond its batch (a
    dynamic batch with a static shape is fine); None for the others (also `oracles.load`'s
    test for models TFLM does not compute as TensorFlow Lite does)."""
    if not raw.ShapeSignatureLength():
        return None
    signature = tuple(int(d) for d in raw.ShapeSignatureAsNumpy())
    return signature if any(d < 0 for d in signature[1:]) else None


def _subgraph(model: Any, data: bytes, index: int, path: str) -> Graph:
    """Subgraph `index`, its list writes recognised (`tensor_lists.py`: the only tensors of
    dynamic shape the import takes, which they remove); any other dynamic shape is refused."""
    subgraph = model.Subgraphs(index)
    count = subgraph.TensorsLength()
    tensors = tuple(_tensor(model, data, subgraph.Tensors(i), i) for i in range(count))
    dynamic = {
        i: signature
        for i in range(count)
        if (signature := dynamic_signature(subgraph.Tensors(i))) is not None
    }
    operators = tuple(
        _operator(model, subgraph.Operators(i), i, count) for i in range(subgraph.OperatorsLength())
    )
    inputs = tuple(int(t) for t in subgraph.InputsAsNumpy()) if subgraph.InputsLength() else ()
    outputs = tuple(int(t) for t in subgraph.OutputsAsNumpy()) if subgraph.OutputsLength() else ()
    graph = rewrite_list_writes(Graph(path, tensors, operators, inputs, outputs, index=index))
    check_static(graph, dynamic)
    return graph


def branches(op: Operator) -> tuple[int, ...] | None:
    """The subgraphs an IF (then, else) or WHILE (cond, body) operator runs; None for other
    operators. Raises when a control-flow operator has no options."""
    if op.opcode == "IF":
        options = op.option(tflite.IfOptions)
        if options is None:
            raise ModelImportError(f"IF (operator {op.index}) has no IfOptions")
        return (options.ThenSubgraphIndex(), options.ElseSubgraphIndex())
    if op.opcode == "WHILE":
        options = op.option(tflite.WhileOptions)
        if options is None:
            raise ModelImportError(f"WHILE (operator {op.index}) has no WhileOptions")
        return (options.CondSubgraphIndex(), options.BodySubgraphIndex())
    return None


def _control_flow_subgraphs(model: Any, data: bytes, graph: Graph, path: str) -> dict[int, Graph]:
    """Every subgraph the IF and WHILE operators of `graph` run, and of those subgraphs in
    turn, by index. A subgraph run by two operators (or recursively) is refused: each is
    imported once, into the region of its operator."""
    found: dict[int, Graph] = {}
    runner: dict[int, str] = {}
    pending = [graph]
    while pending:
        current = pending.pop()
        for op in current.operators:
            indices = branches(op)
            if indices is None:
                continue
            where = f"{op.opcode} (operator {op.index} of subgraph {current.index})"
            for index in dict.fromkeys(indices):  # an IF may run one subgraph either way
                if not 0 <= index < model.SubgraphsLength():
                    raise ModelImportError(f"{where} runs the missing subgraph {index}")
                if index == 0 or index in runner:
                    raise ModelImportError(
                        f"{where} runs subgraph {index}, which "
                        f"{runner.get(index, 'the model')} runs too; "
                        "a subgraph run by several operators (or recursively) is not supported"
                    )
                runner[index] = where
                subgraph = _subgraph(model, data, index, path)
                found[index] = subgraph
                pending.append(subgraph)
    return found


def _init_subgraph_indices(graph: Graph) -> set[int]:
    """The subgraphs the CALL_ONCE operators of `graph` run."""
    indices: set[int] = set()
    for op in graph.operators:
        options = op.option(tflite.CallOnceOptions) if op.opcode == "CALL_ONCE" else None
        if options is not None:
            indices.add(options.InitSubgraphIndex())
    return indices
