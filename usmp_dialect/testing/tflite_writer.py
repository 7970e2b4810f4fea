"""Writes small `.tflite` models for tests (with the `tflite` package's flatbuffer builders).

Real models cover few operators; the frontend's other operators and its error paths are
tested on models written here and run by TensorFlow Lite Micro as the reference. A model is
a list of tensors (constant ones carry `data`) and operators with their builtin options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import flatbuffers
import numpy as np
import tflite

_TYPES = {
    np.dtype(np.float32): tflite.TensorType.FLOAT32,
    np.dtype(np.int8): tflite.TensorType.INT8,
    np.dtype(np.uint8): tflite.TensorType.UINT8,
    np.dtype(np.int16): tflite.TensorType.INT16,
    np.dtype(np.int32): tflite.TensorType.INT32,
    np.dtype(np.int64): tflite.TensorType.INT64,
    np.dtype(np.bool_): tflite.TensorType.BOOL,
}


@dataclass
class TensorSpec:
    name: str
    dtype: Any
    shape: Sequence[int]
    data: np.ndarray | None = None
    scales: Sequence[float] | None = None
    zero_points: Sequence[int] | None = None
    axis: int = 0
    shape_signature: Sequence[int] | None = None
    type_code: int | None = None  # overrides the type (e.g. an unsupported one)
    variable: bool = False  # a variable tensor (`is_variable`: state kept across runs)


@dataclass
class OperatorSpec:
    opcode: str  # a `tflite.BuiltinOperator` name, e.g. "CONV_2D"
    inputs: Sequence[int]
    outputs: Sequence[int]
    options: str | None = None  # a builtin options table, e.g. "Conv2DOptions"
    fields: dict[str, Any] = field(default_factory=dict)  # e.g. {"StrideH": 2}
    custom_code: str | None = None


def _vector(builder: flatbuffers.Builder, values: np.ndarray) -> int:
    return builder.CreateNumpyVector(np.ascontiguousarray(values))


def _quantization(builder: flatbuffers.Builder, spec: TensorSpec) -> int | None:
    if spec.scales is None:
        return None
    scales = _vector(builder, np.asarray(spec.scales, dtype=np.float32))
    zero_points = _vector(
        builder,
        np.asarray(
            spec.zero_points if spec.zero_points is not None else [0] * len(spec.scales),
            dtype=np.int64,
        ),
    )
    tflite.QuantizationParametersStart(builder)
    tflite.QuantizationParametersAddScale(builder, scales)
    tflite.QuantizationParametersAddZeroPoint(builder, zero_points)
    tflite.QuantizationParametersAddQuantizedDimension(builder, spec.axis)
    return tflite.QuantizationParametersEnd(builder)


def _options(builder: flatbuffers.Builder, spec: OperatorSpec) -> int | None:
    if spec.options is None:
        return None
    name = spec.options
    # String fields (VarHandleOptions' SharedName) are written before the table.
    values = {
        key: builder.CreateString(value) if isinstance(value, str) else value
        for key, value in spec.fields.items()
    }
    getattr(tflite, f"{name}Start")(builder)
    for key, value in values.items():
        getattr(tflite, f"{name}Add{key}")(builder, value)
    return getattr(tflite, f"{name}End")(builder)


@dataclass
class SubgraphSpec:
    """A further subgraph (e.g. the init subgraph a CALL_ONCE runs)."""

    tensors: Sequence[TensorSpec]
    operators: Sequence[OperatorSpec]
    inputs: Sequence[int] = ()
    outputs: Sequence[int] = ()


def _offsets_vector(builder: flatbuffers.Builder, start: Any, offsets: Sequence[int]) -> int:
    start(builder, len(offsets))
    for offset in reversed(offsets):
        builder.PrependUOffsetTRelative(offset)
    return builder.EndVector()


def _write_subgraph(
    builder: flatbuffers.Builder,
    graph: SubgraphSpec,
    next_buffer: int,
    opcodes: list[tuple[str, str | None]],
) -> tuple[int, int]:
    """Writes one subgraph (its constant tensors take buffers from `next_buffer` on, its
    operator codes are added to `opcodes`); returns its offset and the next free buffer."""
    tensor_offsets = []
    for spec in graph.tensors:
        name = builder.CreateString(spec.name)
        shape = _vector(builder, np.asarray(spec.shape, dtype=np.int32))
        signature = (
            _vector(builder, np.asarray(spec.shape_signature, dtype=np.int32))
            if spec.shape_signature is not None
            else None
        )
        quantization = _quantization(builder, spec)
        buffer = 0
        if spec.data is not None:
            buffer, next_buffer = next_buffer, next_buffer + 1
        tflite.TensorStart(builder)
        tflite.TensorAddShape(builder, shape)
        if signature is not None:
            tflite.TensorAddShapeSignature(builder, signature)
        type_code = spec.type_code if spec.type_code is not None else _TYPES[np.dtype(spec.dtype)]
        tflite.TensorAddType(builder, type_code)
        tflite.TensorAddBuffer(builder, buffer)
        tflite.TensorAddName(builder, name)
        if quantization is not None:
            tflite.TensorAddQuantization(builder, quantization)
        if spec.variable:
            tflite.TensorAddIsVariable(builder, True)
        tensor_offsets.append(tflite.TensorEnd(builder))

    operator_offsets = []
    for spec in graph.operators:
        key = (spec.opcode, spec.custom_code)
        if key not in opcodes:
            opcodes.append(key)
        op_inputs = _vector(builder, np.asarray(spec.inputs, dtype=np.int32))
        op_outputs = _vector(builder, np.asarray(spec.outputs, dtype=np.int32))
        options = _options(builder, spec)
        tflite.OperatorStart(builder)
        tflite.OperatorAddOpcodeIndex(builder, opcodes.index(key))
        tflite.OperatorAddInputs(builder, op_inputs)
        tflite.OperatorAddOutputs(builder, op_outputs)
        if options is not None:
            tflite.OperatorAddBuiltinOptionsType(
                builder,
                getattr(tflite.BuiltinOptions, spec.options),  # type: ignore[arg-type]
            )
            tflite.OperatorAddBuiltinOptions(builder, options)
        operator_offsets.append(tflite.OperatorEnd(builder))

    tensors_vector = _offsets_vector(builder, tflite.SubGraphStartTensorsVector, tensor_offsets)
    operators_vector = _offsets_vector(
        builder, tflite.SubGraphStartOperatorsVector, operator_offsets
    )
    inputs_vector = _vector(builder, np.asarray(graph.inputs, dtype=np.int32))
    outputs_vector = _vector(builder, np.asarray(graph.outputs, dtype=np.int32))
    name = builder.CreateString("main")
    tflite.SubGraphStart(builder)
    tflite.SubGraphAddTensors(builder, tensors_vector)
    tflite.SubGraphAddOperators(builder, operators_vector)
    tflite.SubGraphAddInputs(builder, inputs_vector)
    tflite.SubGraphAddOutputs(builder, outputs_vector)
    tflite.SubGraphAddName(builder, name)
    return tflite.SubGraphEnd(builder), next_buffer


def write_model(
    tensors: Sequence[TensorSpec],
    operators: Sequence[OperatorSpec],
    inputs: Sequence[int],
    outputs: Sequence[int],
    subgraphs: int = 1,
    more_subgraphs: Sequence[SubgraphSpec] = (),
) -> bytes:
    """The flatbuffer of a model with one subgraph (repeated `subgraphs` times, to test the
    frontend's refusal of several), followed by `more_subgraphs`."""
    graphs = [SubgraphSpec(tensors, operators, inputs, outputs)] * subgraphs
    graphs += list(more_subgraphs)
    builder = flatbuffers.Builder(1024)
    # Buffers: 0 is the empty buffer; constant tensors get one each.
    buffer_data = [None] + [t.data for g in graphs for t in g.tensors if t.data is not None]
    buffers = []
    for data in buffer_data:
        vector = None
        if data is not None:
            raw = np.ascontiguousarray(data).astype(data.dtype.newbyteorder("<")).tobytes()
            vector = _vector(builder, np.frombuffer(raw, dtype=np.uint8))
        tflite.BufferStart(builder)
        if vector is not None:
            tflite.BufferAddData(builder, vector)
        buffers.append(tflite.BufferEnd(builder))

    next_buffer = 1
    opcodes: list[tuple[str, str | None]] = []
    subgraph_offsets = []
    for graph in graphs:
        offset, next_buffer = _write_subgraph(builder, graph, next_buffer, opcodes)
        subgraph_offsets.append(offset)

    def offsets_vector(start: Any, offsets: Sequence[int]) -> int:
        return _offsets_vector(builder, start, offsets)

    code_offsets = []
    for opcode, custom in opcodes:
        code = getattr(tflite.BuiltinOperator, opcode)
        custom_offset = builder.CreateString(custom) if custom is not None else None
        tflite.OperatorCodeStart(builder)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(builder, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(builder, code)
        if custom_offset is not None:
            tflite.OperatorCodeAddCustomCode(builder, custom_offset)
        tflite.OperatorCodeAddVersion(builder, 1)
        code_offsets.append(tflite.OperatorCodeEnd(builder))

    codes_vector = offsets_vector(tflite.ModelStartOperatorCodesVector, code_offsets)
    subgraphs_vector = offsets_vector(tflite.ModelStartSubgraphsVector, subgraph_offsets)
    buffers_vector = offsets_vector(tflite.ModelStartBuffersVector, buffers)
    description = builder.CreateString("written by usmp_dialect.testing.tflite_writer")
    tflite.ModelStart(builder)
    tflite.ModelAddVersion(builder, 3)
    tflite.ModelAddOperatorCodes(builder, codes_vector)
    tflite.ModelAddSubgraphs(builder, subgraphs_vector)
    tflite.ModelAddDescription(builder, description)
    tflite.ModelAddBuffers(builder, buffers_vector)
    builder.Finish(tflite.ModelEnd(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@dataclass
class ModelSpec:
    """What `write_model` takes: tensors, operators, graph inputs and outputs."""

    tensors: list[TensorSpec]
    operators: list[OperatorSpec]
    inputs: list[int]
    outputs: list[int]

    def model(self) -> bytes:
        return write_model(self.tensors, self.operators, self.inputs, self.outputs)


def merge(parts: dict[str, ModelSpec]) -> bytes:
    """One model computing every part; tensor names get the part's name as a prefix."""
    tensors: list[TensorSpec] = []
    operators: list[OperatorSpec] = []
    inputs: list[int] = []
    outputs: list[int] = []
    for name, part in parts.items():
        base = len(tensors)

        def moved(indices: Sequence[int], base: int = base) -> list[int]:
            return [index + base if index >= 0 else index for index in indices]

        tensors += [replace(tensor, name=f"{name}_{tensor.name}") for tensor in part.tensors]
        operators += [
            replace(op, inputs=moved(op.inputs), outputs=moved(op.outputs)) for op in part.operators
        ]
        inputs += moved(part.inputs)
        outputs += moved(part.outputs)
    return write_model(tensors, operators, inputs, outputs)
