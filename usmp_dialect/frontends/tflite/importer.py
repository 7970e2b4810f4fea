"""Builds the MLIR module of a TFLite graph (SPEC §9) with xDSL's builders.

`@main` takes the model's inputs then its outputs as memref arguments (named after the
tensors, `{usmp.io = ...}`), allocates every other activation with `memref.alloc`, and calls
one operator function `@<op>_<index>` per TFLite operator in execution order. Reshape-like
operators are views in `@main` (`memref.reinterpret_cast`), shape computations on constants are
folded here, and weights become constant `memref.global`s read inside the operator functions.

CONCATENATION and PACK in place: when the output's slices are contiguous (every output
dimension before the axis is 1), each input that an operator writes and only this one reads (not
a model input or output, not a constant, of the output's type and, int8, quantisation) is
written by its producer straight into its slice of the output (`kernels.module.ConcatSlices`:
one byte buffer, a `memref.view` per tensor), and the operator copies only the other inputs.
CONCATENATION's strided slices (NHWC channels) are written through a `memref.subview` when the
producer's function only loads and stores its output argument (`_place_strided`).

Operators are handled by the functions registered in `OPERATORS` (the modules of
`usmp_dialect.frontends.tflite.ops`); each receives an `OperatorContext` and emits its function
through the shared kernel library (`usmp_dialect.kernels`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import tflite
from xdsl.builder import Builder
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    FunctionType,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from usmp_dialect.dialects.usmp import (
    MODEL_ATTRIBUTE,
    QUANTIZATION_ATTRIBUTE,
    TENSOR_ATTRIBUTE,
    OperatorFacts,
)
from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.in_place import (
    InPlaceStorage,
    choose_calls,
    lowers_peak,
)
from usmp_dialect.frontends.options import ImportOptions
from usmp_dialect.frontends.tflite.folding import fold_padding
from usmp_dialect.frontends.tflite.macs import operator_macs
from usmp_dialect.frontends.tflite.reader import UNREADABLE, Graph, Operator, Tensor, read_graph
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

ACTIVATION_TYPES = (np.dtype(np.int8), np.dtype(np.float32))
# The operators that run subgraphs (`ops/control_flow.py`).
CONTROL_FLOW = ("IF", "WHILE")
# Every activation type some operator computes with: int16 is TFLite's 16x8 quantisation
# (int16 activations with zero point 0, int8 weights, int64 biases), registered per operator.
INT16_ACTIVATION_TYPES = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.float32))
# bool (TFLite BOOL, one byte per element holding 0 or 1: C's `uint8_t`, MLIR's i1), int32 and
# int64 are the activations of the comparisons, logical operators, SELECT_V2 and ARG_MAX/ARG_MIN
# (registered per operator, as int16 is).
# uint8 is what QUANTIZE reads and writes at a camera model's input and output (the
# converter's `inference_input_type=tf.uint8`), registered for QUANTIZE only as TFLM runs it.
KNOWN_ACTIVATION_TYPES = (
    *INT16_ACTIVATION_TYPES,
    np.dtype(np.bool_),
    np.dtype(np.int32),
    np.dtype(np.int64),
    np.dtype(np.uint8),
)


@dataclass
class OperatorContext:
    """What an operator handler sees: its operator, the graph, and the importer."""

    importer: TfliteImporter
    op: Operator

    @property
    def graph(self) -> Graph:
        return self.importer.graph

    @property
    def module(self) -> ModelModule:
        return self.importer.module

    @property
    def name(self) -> str:
        """The operator function's symbol, `<op>_<index>` (e.g. `conv_2d_0`); in subgraph
        `k` > 0 (control flow) `<op>_sg<k>_<index>` (e.g. `add_sg2_0`)."""
        return function_name(self.graph, self.op)

    @property
    def options(self) -> ImportOptions:
        return self.importer.options

    def where(self) -> str:
        if self.graph.index:  # an operator of a control-flow subgraph
            return f"{self.op.opcode} (operator {self.op.index} of subgraph {self.graph.index})"
        return f"{self.op.opcode} (operator {self.op.index})"

    def fail(self, problem: str) -> ModelImportError:
        return ModelImportError(f"{self.graph.path}: {self.where()}: {problem}")

    def tensor(self, position: int, output: bool = False) -> Tensor:
        indices = self.op.outputs if output else self.op.inputs
        if position >= len(indices) or indices[position] < 0:
            kind = "output" if output else "input"
            raise self.fail(f"missing {kind} {position}")
        return self.graph.tensors[indices[position]]

    def optional_tensor(self, position: int) -> Tensor | None:
        if position >= len(self.op.inputs) or self.op.inputs[position] < 0:
            return None
        return self.graph.tensors[self.op.inputs[position]]

    def constant(self, position: int) -> np.ndarray:
        """The value of a constant (or folded) input."""
        tensor = self.tensor(position)
        value = self.importer.constant_value(tensor)
        if value is None:
            raise self.fail(f"input {position} ({tensor.describe()}) must be a constant")
        return value

    def is_constant(self, position: int) -> bool:
        tensor = self.optional_tensor(position)
        return tensor is not None and self.importer.constant_value(tensor) is not None

    def call(self, inputs: list[SSAValue], outputs: list[SSAValue]) -> None:
        """Calls the operator function just emitted (`@<name>`) from `@main`."""
        self.importer.main.insert(func.CallOp(self.name, [*inputs, *outputs], []))

    def value(self, position: int) -> SSAValue:
        """The activation input at `position`, as an SSA value of `@main`."""
        return self.importer.value_of(self, self.tensor(position))

    def result(self, position: int = 0) -> SSAValue:
        """The memref the operator writes its output `position` into."""
        return self.importer.output_buffer(self.tensor(position, output=True))

    def view(self, value: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        """A contiguous memref seen with another shape (no copy)."""
        return self.importer.reshaped(value, shape)

    def result_over(self, *positions: int) -> SSAValue:
        """The memref an elementwise operator (each output element computed from its inputs'
        elements at the same index) writes its output into: the buffer of the first input at
        `positions` it may overwrite (`TfliteImporter.in_place`), else a new one."""
        for position in positions:
            if self.optional_tensor(position) is not None and not self.is_constant(position):
                value = self.importer.in_place(self, position)
                if value is not None:
                    return value
        return self.result()

    def depthwise_in_place(self) -> SSAValue | None:
        """For a depthwise convolution with depth multiplier 1 and one batch: the view of its
        input's first bytes to write the output into, when the importer chose to run it in
        place and it may overwrite its input (`InPlaceStorage.over`, the output no larger);
        None otherwise (when it may, it is then recorded as a candidate)."""
        return self.importer.depthwise_in_place(self)

    def fold(self, position: int, value: np.ndarray) -> None:
        self.importer.folded[self.op.outputs[position]] = value

    def state(self, position: int) -> SSAValue:
        """The state buffer of the variable tensor at input `position` (SPEC §13): pass it to
        the operator's call, whose function reads the state and writes the new one into it.
        See `TfliteImporter.state_buffer`."""
        tensor = self.tensor(position)
        if not tensor.variable:
            raise self.fail(f"input {position} ({tensor.describe()}) must be a variable tensor")
        return self.importer.state_buffer(tensor)


Handler = Callable[[OperatorContext], None]
OPERATORS: dict[str, Handler] = {}
# What each registered operator computes with: the element types of its activations (inputs
# and outputs that are not constants), or () for operators folded at import, which take
# constants only (SHAPE: any input, it reads only the static shape). The scan checks models
# against it before any IR is built; `operators.py` prints it as the operator table.
ACTIVATION_TYPES_OF: dict[str, tuple[np.dtype, ...]] = {}
# The element types of an operator's outputs where they differ from its inputs' (comparisons
# compute bool from int8, ARG_MAX int32 from float32): its activation inputs are then checked
# against ACTIVATION_TYPES_OF and its outputs against this.
OUTPUT_TYPES_OF: dict[str, tuple[np.dtype, ...]] = {}
# The element types of particular activation inputs where they differ from the operator's
# (GATHER's positions are int32 whatever it gathers): input position -> types.
INPUT_TYPES_OF: dict[str, dict[int, tuple[np.dtype, ...]]] = {}
# A handler's check of an operator's options before the import: what it does not support
# (e.g. "fused activation TANH"), or None.
Supports = Callable[[Operator], str | None]
SUPPORTS: dict[str, Supports] = {}


def operator(
    *opcodes: str,
    types: tuple[np.dtype, ...] = ACTIVATION_TYPES,
    supports: Supports | None = None,
    outputs: tuple[np.dtype, ...] | None = None,
    inputs: dict[int, tuple[np.dtype, ...]] | None = None,
) -> Callable[[Handler], Handler]:
    """Registers a handler for TFLite builtin operators `opcodes` computing on activations of
    `types` (`()`: folded at import, constants only); `outputs`: the types of its outputs when
    they are not `types` (then `types` are its inputs'); `inputs`: the types of the inputs at
    some positions when they are neither; `supports` checks an operator's options in the
    pre-scan."""

    def register(handler: Handler) -> Handler:
        for opcode in opcodes:
            OPERATORS[opcode] = handler
            ACTIVATION_TYPES_OF[opcode] = types
            if outputs is not None:
                OUTPUT_TYPES_OF[opcode] = outputs
            if inputs is not None:
                INPUT_TYPES_OF[opcode] = inputs
            if supports is not None:
                SUPPORTS[opcode] = supports
        return handler

    return register


def function_name(graph: Graph, op: Operator) -> str:
    """See `OperatorContext.name`."""
    if graph.index:
        return f"{op.opcode.lower()}_sg{graph.index}_{op.index}"
    return f"{op.opcode.lower()}_{op.index}"


def _operator_kind(op: Operator) -> str:
    if op.opcode == "CUSTOM":
        return f"operator CUSTOM '{op.custom_code}'"
    return f"operator {op.opcode}"


def unsupported(graph: Graph) -> list[Finding]:
    """Every operator without a handler, every option its handler's `supports` check refuses,
    and every activation of a type its operator does not compute with (model inputs and outputs
    included), in graph order: the pre-scan before the import. A tensor is a constant when it
    has data or an operator that folds (SHAPE, or any operator whose inputs are all constants)
    writes it; constants are never checked."""
    constant = {tensor.index for tensor in graph.tensors if tensor.data is not None}
    operators: list[Finding] = []
    options: list[Finding] = []
    types: list[Finding] = []
    checked: set[int] = set()

    def check(tensor: Tensor, op: Operator | None, allowed: tuple[np.dtype, ...]) -> None:
        # A variable's element type is its operator's to check (SVDF's state is int16).
        if tensor.dtype in allowed or tensor.variable:
            return
        if tensor.dtype == UNREADABLE:
            kind = f"tensor type {tensor.type_name}"
        elif tensor.dtype not in KNOWN_ACTIVATION_TYPES:
            kind = f"activation type {tensor.dtype.name}"
        else:  # an operator registered for fewer types than the frontend knows
            kind = f"operator {op.opcode if op else '?'} on {tensor.dtype.name}"
        name = tensor.name or str(tensor.index)
        types.append(Finding(kind, op.index if op else None, tensor=name))
        checked.add(tensor.index)

    for op in graph.operators:
        inputs = [index for index in op.inputs if index >= 0]
        folded = op.opcode == "SHAPE" or all(index in constant for index in inputs)
        if op.opcode not in OPERATORS:
            operators.append(Finding(_operator_kind(op), op.index))
            continue
        problem = SUPPORTS[op.opcode](op) if op.opcode in SUPPORTS else None
        if problem is not None:
            options.append(Finding(f"{op.opcode} with {problem}", op.index))
        if ACTIVATION_TYPES_OF[op.opcode] and not folded:
            types_in = ACTIVATION_TYPES_OF[op.opcode]
            types_out = OUTPUT_TYPES_OF.get(op.opcode, types_in)
            types_at = INPUT_TYPES_OF.get(op.opcode, {})
            for index, allowed in (
                *(
                    (index, types_at.get(position, types_in))
                    for position, index in enumerate(op.inputs)
                ),
                *((index, types_out) for index in op.outputs),
            ):
                if index >= 0 and index not in constant:
                    check(graph.tensors[index], op, allowed)
        if folded:
            constant.update(op.outputs)
    # Entry arguments, whoever reads them (a subgraph's inputs and outputs are its IF's or
    # WHILE's, checked there and against them by the control-flow handlers).
    for index in (*graph.inputs, *graph.outputs) if not graph.index else ():
        if index in checked or index in constant:
            continue
        touching = [op for op in graph.operators if index in (*op.inputs, *op.outputs)]
        for op in touching or [None]:
            check(graph.tensors[index], op, KNOWN_ACTIVATION_TYPES)
    findings = operators + options + types
    for index, subgraph in graph.subgraphs:  # control flow: what its subgraphs run
        findings += [
            Finding(f"{finding.kind} in subgraph {index}", finding.operator, tensor=finding.tensor)
            for finding in unsupported(subgraph)
        ]
    return findings


class TfliteImporter:
    def __init__(
        self,
        graph: Graph,
        options: ImportOptions | None = None,
        depthwise: frozenset[int] = frozenset(),
        lowest: bool = False,
        parent: TfliteImporter | None = None,
    ) -> None:
        self.graph = graph
        self.options = options or ImportOptions()
        # The importer of the graph whose IF or WHILE runs this subgraph (control flow,
        # `ops/control_flow.py`): this one emits into the same module and `@main`.
        self.parent = parent
        self.top: TfliteImporter = parent.top if parent is not None else self
        self.fuse = self.options.fuse  # "rows": fused row streaming where it lowers the peak
        # With a size hint: the groups reaching the lowest peak rather than the cheapest that
        # fit (`import_graph` retries so when the program misses the hint).
        self.lowest = lowest
        self.stream_fits = True  # whether the chosen groups' peak fits the size hint
        self.module = parent.module if parent is not None else ModelModule()
        # Short SSA names / C identifiers of the tensors (of every subgraph: one `@main`).
        self.names = parent.names if parent is not None else TensorNames()
        self.folded: dict[int, np.ndarray] = {}
        self.values: dict[int, SSAValue] = {}
        # State buffers by variable (state_buffer), of every subgraph.
        self.states: dict[object, SSAValue] = parent.states if parent is not None else {}
        # Resource variables (ops/variables.py): VAR_HANDLE's output tensor -> the variable's
        # (container, shared name).
        self.resources: dict[int, tuple[str, str]] = {}
        self.main: KernelBuilder
        self._arguments: dict[int, SSAValue] = {}
        # Strided slices (CONCATENATION along an axis after a dimension > 1, e.g. NHWC
        # channels): tensor -> (output tensor, axis, start along the axis).
        self.strided: dict[int, tuple[int, int, int]] = {}
        self.concat_slices = ConcatSlices(self._plan_concat_slices())
        self._pending: list[tuple[int, SSAValue]] = []  # strided candidates just written
        self._early: dict[int, SSAValue] = {}  # outputs allocated before their operator runs
        self._strided_placed: dict[int, SSAValue] = {}
        # In-place operators (`frontends/in_place.py`): the storage each tensor lives in.
        self.in_place_mode = self.options.in_place
        last_read: dict[int, float] = {}
        for op in graph.operators:
            for index in op.inputs:
                if index >= 0:
                    last_read[index] = op.index
        for index in graph.outputs:
            last_read[index] = float("inf")
        self.storage = InPlaceStorage[int](last_read, self.in_place_mode != "none")
        # Depthwise convolutions (operator indices) that run in place, and those that could
        # but do not (the candidates `import_graph` chooses among).
        self.depthwise = depthwise
        self.depthwise_candidates: list[int] = []
        # A subgraph's operators' report label prefix: the control flow running it, e.g.
        # `IF 3` or `WHILE 1 > IF 0` (set by `ops/control_flow.py`).
        self.label = ""

    def _plan_concat_slices(self) -> dict[int, tuple[int, int]]:
        """Which CONCATENATION / PACK inputs are written straight into their slice (module
        doc); an operator whose inputs do not fit is left to its handler to report."""
        graph = self.graph
        boundary = set(graph.inputs) | set(graph.outputs)
        readers: dict[int, list[Operator]] = {}
        for op in graph.operators:
            for index in op.inputs:
                if index >= 0:
                    readers.setdefault(index, []).append(op)
        slices: dict[int, tuple[int, int]] = {}
        for op in graph.operators:
            if op.opcode not in ("CONCATENATION", "PACK") or len(op.outputs) != 1:
                continue
            output = graph.tensors[op.outputs[0]]
            if output.index in boundary or output.data is not None or not output.shape:
                continue
            if output.dtype not in KNOWN_ACTIVATION_TYPES or 0 in output.shape:
                continue
            if op.opcode == "CONCATENATION":
                options = op.option(tflite.ConcatenationOptions)
                if options is not None and options.FusedActivationFunction() != 0:
                    continue
                axis = options.Axis() if options is not None else 0
            else:
                options = op.option(tflite.PackOptions)
                axis = options.Axis() if options is not None else 0
            rank = len(output.shape)
            if not -rank <= axis < rank:
                continue
            axis %= rank
            contiguous = math.prod(output.shape[:axis]) == 1
            if any(index < 0 for index in op.inputs) or (not contiguous and op.opcode == "PACK"):
                continue
            inputs = [graph.tensors[index] for index in op.inputs]
            if not contiguous and any(len(t.shape) != rank for t in inputs):
                continue
            widths = [math.prod(tensor.shape[axis:]) for tensor in inputs]
            if sum(widths) * math.prod(output.shape[:axis]) != math.prod(output.shape):
                continue
            offset = start = 0
            for tensor, width in zip(inputs, widths, strict=True):
                if (
                    tensor.index not in boundary
                    and tensor.data is None
                    and readers.get(tensor.index) == [op]
                    and op.inputs.count(tensor.index) == 1
                    and tensor.dtype == output.dtype
                    and _same_quantization(tensor, output)
                ):
                    if contiguous:
                        slices[tensor.index] = (output.index, offset)
                    else:
                        self.strided[tensor.index] = (output.index, axis, start)
                offset += width
                start += tensor.shape[axis] if not contiguous else 0
        return slices

    def _place_strided(self) -> None:
        """Strided slices, once their producer's function is built: when the producer passed
        the buffer straight to its call and its function only loads and stores it, the buffer
        becomes a `memref.subview` of the output (allocated before the call) and the function's
        argument takes the subview's strided layout; otherwise the operator copies it."""
        pending, self._pending = self._pending, []
        for index, buffer in pending:
            uses = list(buffer.uses)
            if len(uses) != 1 or not isinstance(uses[0].operation, func.CallOp):
                continue
            call, position = uses[0].operation, uses[0].index
            callee = self._function(call.callee.root_reference.data)
            if callee is None or callee.is_declaration:
                continue
            argument = callee.body.block.args[position]
            if not all(
                isinstance(use.operation, memref.LoadOp)
                or (isinstance(use.operation, memref.StoreOp) and use.index == 1)
                for use in argument.uses
            ):
                continue
            output_index, axis, start = self.strided[index]
            output = self.graph.tensors[output_index]
            shape = self.graph.tensors[index].shape
            builder = self.main.builder
            self.main.builder = Builder(InsertPoint.before(call))
            try:
                target = self.output_buffer(output)
                self._early[output_index] = target
                target_type = target.type
                assert isinstance(target_type, MemRefType)
                offsets = [start if d == axis else 0 for d in range(len(shape))]
                subview = memref.SubviewOp.from_static_parameters(
                    target, target_type, offsets, list(shape), [1] * len(shape)
                )
                self.main.insert(subview)
            finally:
                self.main.builder = builder
            subview.result.name_hint = buffer.name_hint
            operands = list(call.operands)
            operands[position] = subview.result
            call.operands = operands
            owner = buffer.owner
            assert isinstance(owner, memref.AllocOp)
            owner.detach()
            owner.erase()
            Rewriter.replace_value_with_new_type(argument, subview.result.type)
            callee.function_type = FunctionType.from_lists(
                [arg.type for arg in callee.body.block.args],
                list(callee.function_type.outputs.data),
            )
            self.values[index] = subview.result
            self._strided_placed[index] = subview.result

    def _fused_groups(self) -> tuple[dict[int, tuple[object, object]], set[int]]:
        """Fused row streaming (`frontends.tflite.streaming`): the groups by their first
        operator, and every operator inside a group."""
        if self.fuse == "none":
            return {}, set()
        from usmp_dialect.frontends.tflite.streaming import stream_graph
        from usmp_dialect.graph.selection import choose_stream_groups

        stream = stream_graph(self)
        hint = self.options.workspace_size_hint_bytes
        # Without a hint the choice counts the inputs and outputs (as TFLM's head does); with
        # one, as the pipeline's planner will: outside the workspace unless U4.
        outside: frozenset[int] = frozenset()
        if hint is not None and not self.options.workspace_io:
            outside = frozenset(self.graph.inputs) | frozenset(self.graph.outputs)
        choice = choose_stream_groups(stream, hint, outside, self.lowest)
        self.stream_fits = choice.fits
        starts: dict[int, tuple[object, object]] = {}
        inside: set[int] = set()
        # A group lists positions in the graph's operators; a folded PAD left a gap in the
        # operators' indices (`folding.py`).
        operators = self.graph.operators
        for group in choice.groups:
            starts[operators[group.operators[0]].index] = (stream, group)
            inside.update(operators[position].index for position in group.operators)
        return starts, inside

    def _function(self, name: str) -> func.FuncOp | None:
        for op in reversed(self.module.functions):
            if isinstance(op, func.FuncOp) and op.sym_name.data == name:
                return op
        return None

    def in_slice(self, tensor: Tensor, output: Tensor) -> bool:
        """Whether `tensor` was written in place into its slice of `output`."""
        placed = self.concat_slices.placed(tensor.index, output.index)
        if placed is None and self.strided.get(tensor.index, (-1, 0, 0))[0] == output.index:
            placed = self._strided_placed.get(tensor.index)
        return placed is not None and self.values.get(tensor.index) is placed

    # -- state (SPEC §13) ----------------------------------------------------------------

    def state_buffer(
        self, tensor: Tensor, initial: np.ndarray | None = None, key: object = None
    ) -> SSAValue:
        """The buffer that holds variable `tensor` from one run to the next, as a memref of
        `@main` (one per variable: later calls return the same value).

        It is a mutable `memref.global` marked `usmp.state`, holding the initial value, read
        once by a `memref.get_global` at the start of `@main`; `usmp-import-memref` turns it
        into a `usmp.allocate_state` planned in a state pool, and the C backend's
        `<p>_reset_state()` restores the initial value. Operator handlers pass the memref to
        their call: the function reads the old state from it and writes the new one.

        `initial` defaults to TFLM's value for a variable tensor (its `ResetVariableTensors`):
        every element the zero point for int8, zero for the other types. `key` identifies
        the variable when it is not one tensor (resource variables: their shared name); the
        default is the tensor's index. Element types: any the C backend prints (int8, int16,
        int32, float32, ...), not only activation types.
        """
        if key is None:
            key = (self.graph.index, tensor.index) if self.graph.index else tensor.index
        if key in self.states:
            return self.states[key]
        if initial is None:
            initial = initial_state(tensor)
        initial = np.broadcast_to(np.asarray(initial, dtype=tensor.dtype), tensor.shape)
        if not tensor.shape or 0 in tensor.shape:
            raise ModelImportError(
                f"{self.graph.path}: {tensor.describe()} is a variable of the unsupported "
                f"shape {list(tensor.shape)}"
            )
        name = self.names(tensor.name, "state")
        symbol, type_ = self.module.state(name, initial)
        get = memref.GetGlobalOp(symbol, type_)
        get.memref.name_hint = name
        block = self.main.entry
        block.insert_op_before(get, block.first_op) if block.first_op else block.add_op(get)
        global_op = self.module.globals[-1]
        global_op.attributes[TENSOR_ATTRIBUTE] = StringAttr(tensor.name)
        self.states[key] = get.memref
        return get.memref

    # -- tensors -------------------------------------------------------------------------

    def constant_value(self, tensor: Tensor) -> np.ndarray | None:
        if tensor.data is not None:
            return tensor.data
        return self.folded.get(tensor.index)

    def _check_activation(self, tensor: Tensor) -> None:
        if tensor.dtype not in KNOWN_ACTIVATION_TYPES:
            raise ModelImportError(
                f"{self.graph.path}: {tensor.describe()} is an activation of type "
                f"{tensor.dtype.name}; only int8, uint8, int16, int32, int64, bool and float32 "
                "activations are supported"
            )
        if not tensor.shape or 0 in tensor.shape:
            shape = list(tensor.shape)
            raise ModelImportError(
                f"{self.graph.path}: {tensor.describe()} has the unsupported shape {shape}"
            )

    def memref_type(self, tensor: Tensor) -> MemRefType:
        self._check_activation(tensor)
        return memref_of(tensor.shape, tensor.dtype)

    def value_of(self, context: OperatorContext, tensor: Tensor) -> SSAValue:
        if tensor.index in self.values:
            return self.values[tensor.index]
        if self.constant_value(tensor) is not None:
            raise context.fail(f"{tensor.describe()} is a constant where an activation is expected")
        raise context.fail(f"{tensor.describe()} is read before any operator writes it")

    def place(self, index: int, value: SSAValue) -> None:
        """Tensor `index` is written into `value` by its operator (an IF branch's output
        straight into the IF's output buffer, `ops/control_flow.py`); `value` has no storage
        record, so no in-place operator writes over it."""
        self._early[index] = value

    def placed(self, index: int) -> SSAValue | None:
        """The buffer `place` gave tensor `index`, if any."""
        return self._early.get(index)

    def output_buffer(self, tensor: Tensor) -> SSAValue:
        """The buffer an operator writes `tensor` into: the entry argument of a model output,
        otherwise a new `memref.alloc`."""
        if tensor.index in self._early:
            value = self._early[tensor.index]
        elif tensor.index in self._arguments and tensor.index not in self.values:
            value = self._arguments[tensor.index]
        elif self.concat_slices.covers(tensor.index):
            tensors = self.graph.tensors
            value = self.concat_slices.buffer(
                self.main,
                tensor.index,
                lambda index: self.memref_type(tensors[index]),
                lambda index: self.names(tensors[index].name),
                lambda index: tensors[index].name,
            )
            assert isinstance(value.owner, memref.ViewOp)
            whole = tensor.index not in self.concat_slices.slices  # the outermost output
            self.storage.lives_in(tensor.index, value, value.owner.source, whole)
        else:
            alloc = memref.AllocOp([], [], self.memref_type(tensor))
            alloc.attributes[TENSOR_ATTRIBUTE] = StringAttr(tensor.name)
            value = self.main.insert(alloc)
            value.name_hint = self.names(tensor.name)
            if tensor.index in self.strided:
                self._pending.append((tensor.index, value))
            else:  # a strided slice's buffer may still become a view of the concatenation
                self.storage.lives_in(tensor.index, value, value, whole=True)
        self.values[tensor.index] = value
        return value

    def _overwritable(
        self,
        context: OperatorContext,
        position: int,
        output: Tensor,
        dry_run: bool = False,
        smaller_output: bool = False,
    ) -> SSAValue | None:
        """Input `position`'s value seen as `output` when the operator may write `output` over
        it (`InPlaceStorage.over`), else None; `dry_run`: only whether it may (the input's
        value, nothing recorded)."""
        value = self.values.get(context.op.inputs[position])
        if value is None:
            return None
        others = [
            self.values[index]
            for at, index in enumerate(context.op.inputs)
            if at != position and index in self.values
        ]
        pinned = (
            output.index in self._arguments
            or self.concat_slices.covers(output.index)
            or output.index in self.strided
        )
        return self.storage.over(
            context.op.index,
            output.index,
            self.memref_type(output),
            value,
            others,
            pinned,
            self.reshaped,
            dry_run,
            smaller_output,
        )

    def in_place(
        self, context: OperatorContext, position: int, smaller_output: bool = False
    ) -> SSAValue | None:
        """For an elementwise operator, the buffer of input `position` seen with the shape of
        output 0 when the output may overwrite it (`InPlaceStorage.over`); None otherwise."""
        output = context.tensor(0, output=True)
        viewed = self._overwritable(context, position, output, smaller_output=smaller_output)
        if viewed is not None:
            self.values[output.index] = viewed
        return viewed

    def group_over_input(
        self, last: int, output: Tensor, source: Tensor, others: Sequence[SSAValue]
    ) -> SSAValue | None:
        """The view of `source`'s first bytes a fused group whose last operator is `last` writes
        its `output` into (`graph.streaming.writable_input` proved the rows safe), recorded as
        `output`'s value; None when `source`'s storage may not take it (it is not all of its
        storage, or another input lives there). A model input is ours to overwrite only in
        the workspace (U4): `stream_graph` marks it overwritable then."""
        value = self.values[source.index]
        if source.index in self.graph.inputs:
            if not self.options.workspace_io:
                return None
            viewed = self.reshaped(value, output.shape)
            self.storage.lives_in(output.index, viewed, value, whole=False)
        else:
            viewed = self.storage.over(
                last,
                output.index,
                self.memref_type(output),
                value,
                others,
                output.index in self._arguments,
                self.reshaped,
                smaller_output=True,
            )
            if viewed is None:
                return None
        self.values[output.index] = viewed
        return viewed

    def depthwise_in_place(self, context: OperatorContext) -> SSAValue | None:
        """See `OperatorContext.depthwise_in_place`."""
        if self.in_place_mode != "all":
            return None
        if context.op.index in self.depthwise:
            return self.in_place(context, 0, smaller_output=True)
        output = context.tensor(0, output=True)
        if self._overwritable(context, 0, output, dry_run=True, smaller_output=True) is not None:
            self.depthwise_candidates.append(context.op.index)
        return None

    def reshaped(self, value: SSAValue, shape: tuple[int, ...]) -> SSAValue:
        cast = reshape_view(value, shape)
        return value if cast is None else self.main.insert(cast)

    def alias(self, tensor: Tensor, value: SSAValue) -> None:
        """`tensor` is `value` seen with the tensor's shape (reshape-like operators). A model
        output cannot be an alias: its argument receives a copy."""
        viewed = self.reshaped(value, tensor.shape)
        if tensor.index in self._arguments:
            argument = self._arguments[tensor.index]
            self.main.insert(memref.CopyOp(viewed, argument))
            self.values[tensor.index] = argument
            return
        self.storage.alias(tensor.index, viewed, value)
        self.values[tensor.index] = viewed

    # -- the module ----------------------------------------------------------------------

    def _entry(self) -> func.FuncOp:
        graph = self.graph
        duplicated = set(graph.inputs) & set(graph.outputs)
        if duplicated:
            tensor = graph.tensors[min(duplicated)]
            raise ModelImportError(
                f"{graph.path}: {tensor.describe()} is both a model input and output"
            )
        self.names.reserve("main")
        arguments: list[tuple[str, MemRefType]] = []
        attrs: list[dict[str, Attribute]] = []
        for kind, indices in (("input", graph.inputs), ("output", graph.outputs)):
            for position, index in enumerate(indices):
                tensor = graph.tensors[index]
                fallback = kind if len(indices) == 1 else f"{kind}{position}"
                name = self.names(tensor.name, fallback, IO_NAME_CHARS)
                arguments.append((name, self.memref_type(tensor)))
                attributes: dict[str, Attribute] = {
                    "usmp.io": StringAttr(kind),
                    TENSOR_ATTRIBUTE: StringAttr(tensor.name),
                }
                quantization = tensor.quantization
                if (
                    quantization is not None
                    and tensor.dtype.kind in "iu"
                    and len(quantization.scales) == 1
                ):
                    attributes[QUANTIZATION_ATTRIBUTE] = quantization_attribute(
                        quantization.scale,
                        quantization.zero_point,
                        unsigned=tensor.dtype == np.dtype(np.uint8),
                    )
                attrs.append(attributes)
        op, self.main, values = function("main", arguments, arg_attrs=attrs)
        for index, value in zip((*graph.inputs, *graph.outputs), values, strict=True):
            self._arguments[index] = value
        for index in graph.inputs:
            self.values[index] = self._arguments[index]
        return op

    def emit_operators(self) -> None:
        """Emits the graph's operators at `self.main`'s insertion point, in execution order.
        The functions of a subgraph's operators are marked with their type prefixed by the
        control flow running them (e.g. `WHILE 1 > ADD`: `analysis.operators`' reports)."""
        graph = self.graph
        starts, fused = self._fused_groups()
        for op in graph.operators:
            if not graph.index:
                count = len(graph.operators)
                progress(f"importing operator {op.index + 1}/{count} ({op.opcode})")
            if op.index in starts:
                from usmp_dialect.frontends.tflite.streaming import emit_group

                emit_group(self, *starts[op.index])
                continue
            if op.index in fused:
                continue
            emitted = len(self.module.functions)
            OPERATORS[op.opcode](OperatorContext(self, op))
            if op.opcode not in CONTROL_FLOW:  # its subgraphs' importers marked theirs
                label = f"{self.label} > {op.opcode}" if self.label else op.opcode
                facts = OperatorFacts(label, op.index, operator_macs(graph, op))
                mark_operator(self.module.functions[emitted:], facts)
            self._place_strided()

    def run(self) -> ModuleOp:
        graph = self.graph
        report(graph.path, unsupported(graph))
        entry = self._entry()
        self.emit_operators()
        for index in graph.outputs:
            if index not in self.values or self.values[index] is not self._arguments[index]:
                tensor = graph.tensors[index]
                if index in self.values:
                    self.main.insert(memref.CopyOp(self.values[index], self._arguments[index]))
                elif self.constant_value(tensor) is not None:
                    raise ModelImportError(
                        f"{graph.path}: the model output {tensor.describe()} is a constant"
                    )
                else:
                    raise ModelImportError(
                        f"{graph.path}: no operator writes the model output {tensor.describe()}"
                    )
        finish(self.main)
        self.module.add(entry)
        return self.module.module()


def initial_state(tensor: Tensor) -> np.ndarray:
    """A variable tensor's value before the first run and after a reset, as TFLM sets it
    (`MicroInterpreterGraph::ResetTensorData`): the zero point in every int8 element, zero
    elsewhere (TFLM ignores a variable's buffer data)."""
    value = 0
    if tensor.dtype == np.dtype(np.int8) and tensor.quantization is not None:
        value = tensor.quantization.zero_point
    return np.full(tensor.shape, value, dtype=tensor.dtype)


def _same_quantization(tensor: Tensor, output: Tensor) -> bool:
    """Whether integer values of `tensor` mean the same in `output` (float: always)."""
    if output.dtype not in (np.dtype(np.int8), np.dtype(np.int16)):
        return True
    a, b = tensor.quantization, output.quantization
    if a is None or b is None:
        return False
    return (
        a.scales.shape == b.scales.shape
        and bool((a.scales == b.scales).all())
        and a.zero_points.shape == b.zero_points.shape
        and bool((a.zero_points == b.zero_points).all())
    )


def import_graph(graph: Graph, options: ImportOptions | None = None) -> ModuleOp:
    """The module of `graph`. With `in_place="all"`, the depthwise convolutions that may run
    in place are candidates: the first import runs none of them in place, and when some set of
    them lowers the peak of its program (`choose_depthwise`), the model is imported again with
    that set in place."""
    from usmp_dialect.frontends.tflite import ops  # noqa: F401  (registers the handlers)

    options = options or ImportOptions()
    if options.fuse != "none":  # PADs into their readers' windows (`folding.py`)
        graph = fold_padding(graph)
    importer = TfliteImporter(graph, options)
    module = importer.run()
    if options.workspace_size_hint_bytes is not None:
        return _within_hint(graph, options, importer, module)
    chosen = choose_depthwise(module, importer.depthwise_candidates, graph)
    if not chosen:
        return module
    transformed = TfliteImporter(graph, options, chosen).run()
    return transformed if lowers_peak(module, transformed) else module


def _within_hint(
    graph: Graph, options: ImportOptions, importer: TfliteImporter, module: ModuleOp
) -> ModuleOp:
    """The import under a workspace size hint (SPEC §12): the fused groups are the cheapest
    whose peak fits (`graph.selection`); depthwise convolutions run in place (a copy of every
    output element) only when the program does not fit without them; when the program still
    misses the hint, the groups reaching the lowest peak are tried; when nothing fits, the
    program of the lowest peak reached (whose planning then fails)."""
    from usmp_dialect.frontends.size_hint import program_peak_bytes

    hint = options.workspace_size_hint_bytes
    assert hint is not None

    def peak_of(program: ModuleOp) -> int:
        peak = program_peak_bytes(program, options.workspace_io)
        return peak if peak is not None else 0

    attempts: list[TfliteImporter | None] = [importer]
    if importer.stream_fits and options.fuse != "none":
        attempts.append(None)  # the lowest-peak groups, imported when needed
    best: tuple[int, ModuleOp] | None = None
    for attempt in attempts:
        if attempt is None:
            attempt = TfliteImporter(graph, options, lowest=True)
            program = attempt.run()
        else:
            program = module
        peak = peak_of(program)
        if peak <= hint:
            return program
        chosen = choose_depthwise(program, attempt.depthwise_candidates, graph)
        if chosen:
            in_place = TfliteImporter(graph, options, chosen, lowest=attempt.lowest).run()
            in_place_peak = peak_of(in_place)
            if in_place_peak <= hint:
                return in_place
            if in_place_peak < peak:
                program, peak = in_place, in_place_peak
        if best is None or peak < best[0]:
            best = (peak, program)
    assert best is not None
    # Nothing fits: the lowest-peak program goes on, and planning fails on it with its one-line
    # error naming that peak, the operator running then and the tensors live (SPEC §12), after
    # `--analyze` printed its table.
    return best[1]


def choose_depthwise(module: ModuleOp, candidates: list[int], graph: Graph) -> frozenset[int]:
    """The candidate depthwise convolutions (operator indices) worth running in place in the
    imported `module` (`frontends.in_place.choose_calls`; the temporary is one output plane)."""
    planes: dict[str, int] = {}
    by_index = {op.index: op for op in graph.operators}  # a folded PAD leaves a gap
    for index in candidates:
        output = graph.tensors[by_index[index].outputs[0]]
        _, height, width, _ = output.shape
        planes[f"depthwise_conv_2d_{index}"] = height * width * output.dtype.itemsize
    chosen = choose_calls(module, planes)
    return frozenset(index for index in candidates if f"depthwise_conv_2d_{index}" in chosen)


def import_tflite(data: bytes, path: str, options: ImportOptions | None = None) -> ModuleOp:
    """The module of the `.tflite` model in `data` (SPEC §9), carrying `usmp.model`, imported
    with `options` (`frontends.options.ImportOptions`)."""
    module = import_graph(read_graph(data, path), options)
    module.attributes[MODEL_ATTRIBUTE] = model_attribute(data, path)
    return module


__all__ = [
    "OPERATORS",
    "OUTPUT_TYPES_OF",
    "ImportOptions",
    "OperatorContext",
    "import_tflite",
    "operator",
]
