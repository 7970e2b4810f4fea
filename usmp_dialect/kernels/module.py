"""The module a frontend builds: constant `memref.global`s and operator functions, with unique
symbol names, and the parameters every integer kernel shares (requantisation)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Generic, TypeVar

import numpy as np
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
    f32,
    f64,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

from usmp_dialect.dialects.usmp import (
    OPERATOR_ATTRIBUTE,
    STATE_ATTRIBUTE,
    TENSOR_ATTRIBUTE,
    OperatorFacts,
    buffer_size_bytes,
)
from usmp_dialect.kernels.builder import KernelBuilder, Value, dense
from usmp_dialect.kernels.fixed_point import (
    emit_multiply_by_quantized_multiplier,
    emit_multiply_by_quantized_multiplier_64,
    emit_multiply_shift_high,
    emit_rounding_divide_by_pot,
    emit_saturating_rounding_doubling_high_mul,
    reduced_multiplier,
    rounding_high_word,
)

_ELEMENT_TYPES: dict[np.dtype, Attribute] = {
    np.dtype(np.bool_): i1,  # one byte per element, 0 or 1
    np.dtype(np.int8): i8,
    # uint8 (TFLM's QUANTIZE to and from int8, as model inputs and outputs): the same byte in
    # an i8, its kernels read it zero-extended; `quantization_attribute(unsigned=True)` says so
    np.dtype(np.uint8): i8,
    np.dtype(np.int16): i16,
    np.dtype(np.int32): i32,
    np.dtype(np.int64): i64,
    np.dtype(np.float32): f32,
}


def element_type(dtype: np.dtype) -> Attribute:
    return _ELEMENT_TYPES[np.dtype(dtype)]


def memref_of(shape: tuple[int, ...], dtype: np.dtype) -> MemRefType:
    return MemRefType(element_type(dtype), list(shape))


def c_identifier(name: str, fallback: str) -> str:
    """`name` made a valid C identifier and SSA name hint: TensorFlow's output index suffix
    (`:0`) dropped, other characters `_`, and no `_<digits>` ending (xDSL drops such endings
    from name hints: `input_1` becomes `input1`)."""
    text = re.sub(r":\d+$", "", name)
    text = re.sub(r"[^A-Za-z0-9_]", "_", text).strip("_")
    text = re.sub(r"_+", "_", text)
    if not text:
        text = fallback
    if text[0].isdigit():
        text = f"{fallback}{text}"
    while re.search(r"_\d+$", text):
        text = re.sub(r"_(\d+)$", r"\1", text)
    return text


SHORT_NAME_CHARS = 40  # the longest SSA name / C identifier the frontends give a tensor
IO_NAME_CHARS = 32  # model inputs and outputs: the C backend's struct fields (FIELD_CHARS)


def short_identifier(name: str, fallback: str, limit: int = SHORT_NAME_CHARS) -> str:
    """A short, readable C identifier for the model tensor `name` (SSA name hint and C field).

    TensorFlow names a fused tensor after every op it came from, joined by `;` (kws: 258
    characters); the first is the op that wrote it (`functional_1/activation/Relu`). Of its
    `/` scopes the last two are kept (`activation/Relu`), then `c_identifier`'s rules apply,
    and the result is cut to `limit` characters (never ending in `_<digits>` or `_`). The
    full name stays in the `usmp.tensor` attribute."""
    first = name.split(";")[0]
    scopes = [scope for scope in first.split("/") if scope]
    text = c_identifier("/".join(scopes[-2:]), fallback)
    if len(text) > limit:
        text = c_identifier(text[:limit], fallback)
    return text


class TensorNames:
    """Unique short identifiers for a model's tensors (`short_identifier`), one per original
    name: a clash gets `_v2`, `_v3`, ... (not `_2`, which xDSL would drop from a name hint)."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._taken: set[str] = set()

    def reserve(self, name: str) -> None:
        self._taken.add(name)

    def __call__(self, original: str, fallback: str = "t", limit: int = SHORT_NAME_CHARS) -> str:
        if original in self._names:
            return self._names[original]
        base = short_identifier(original, fallback, limit)
        name, count = base, 2
        while name in self._taken:
            tail = f"_v{count}"
            name = c_identifier(base[: limit - len(tail)], fallback) + tail
            count += 1
        self._taken.add(name)
        self._names[original] = name
        return name


def quantization_attribute(scale: float, zero_point: int, unsigned: bool = False) -> DictionaryAttr:
    """`{scale = <f64>, zero_point = <i64>}`: per-tensor affine quantisation of a tensor;
    `unsigned`: its bytes are uint8 (an i8 in the IR), `storage = "uint8"`."""
    fields: dict[str, Attribute] = {
        "scale": FloatAttr(float(scale), f64),
        "zero_point": IntegerAttr(int(zero_point), i64),
    }
    if unsigned:
        fields["storage"] = StringAttr("uint8")
    return DictionaryAttr(fields)


def model_attribute(data: bytes, path: str) -> DictionaryAttr:
    """`{name = <file stem>, source = <file name>, sha256 = <hex>}` of the model file."""
    file = PurePath(path)
    return DictionaryAttr(
        {
            "name": StringAttr(file.stem),
            "source": StringAttr(file.name),
            "sha256": StringAttr(hashlib.sha256(data).hexdigest()),
        }
    )


def _constant_global(name: str, array: np.ndarray) -> memref.GlobalOp:
    """A private constant `memref.global` holding `array` (little-endian bytes)."""
    shape = tuple(array.shape) or (1,)
    element = element_type(array.dtype)
    data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
    return memref.GlobalOp.get(
        StringAttr(name),
        MemRefType(element, list(shape)),
        dense(TensorType(element, list(shape)), data),
        constant=UnitAttr(),
    )


class ModelModule:
    """Collects the globals and functions of an imported model, in order."""

    def __init__(self) -> None:
        self.globals: list[Operation] = []
        self.functions: list[Operation] = []
        self._names: set[str] = set()
        self._arrays: dict[str, np.ndarray] = {}
        # (id(owner), role) -> (owner, symbol): the owner is kept so that its id stays unique.
        self._shared: dict[tuple[int, str], tuple[object, tuple[str, MemRefType]]] = {}
        self._named: dict[str, tuple[str, MemRefType]] = {}

    def shared_constant(
        self, owner: object, role: str, hint: str, array: np.ndarray
    ) -> tuple[str, MemRefType]:
        """`constant(hint, array)` made once per (`owner`, `role`): the functions of one
        operator (its row functions, when it is streamed) share one table."""
        key = (id(owner), role)
        if key not in self._shared:
            self._shared[key] = (owner, self.constant(hint, array))
        return self._shared[key][1]

    def unique(self, hint: str) -> str:
        name, count = hint, 1
        while name in self._names:
            name = f"{hint}_{count}"
            count += 1
        self._names.add(name)
        return name

    def constant(self, hint: str, array: np.ndarray) -> tuple[str, MemRefType]:
        """A private constant `memref.global` holding `array` (little-endian bytes)."""
        array = np.ascontiguousarray(array)
        shape = tuple(array.shape) or (1,)
        element = element_type(array.dtype)
        name = self.unique(hint)
        self.globals.append(_constant_global(name, array))
        self._arrays[name] = array
        return name, MemRefType(element, list(shape))

    def array(self, name: str) -> np.ndarray:
        """The contents of the constant `name` (as `constant` received them)."""
        return self._arrays[name]

    def replace_constant(self, name: str, array: np.ndarray) -> tuple[str, MemRefType]:
        """Gives the constant `name` new contents and shape (a kernel's reordering of its
        weights: the old layout is not kept, so the bytes are not stored twice)."""
        array = np.ascontiguousarray(array)
        position = next(
            index
            for index, op in enumerate(self.globals)
            if isinstance(op, memref.GlobalOp) and op.sym_name.data == name
        )
        self.globals[position] = _constant_global(name, array)
        self._arrays[name] = array
        return name, MemRefType(element_type(array.dtype), list(array.shape or (1,)))

    def named_constant(self, name: str, array: np.ndarray) -> tuple[str, MemRefType]:
        """`constant`, created once per module under `name` and shared by every kernel that
        asks for it (a fixed table, e.g. TFLite's `sigmoid_table_uint16`)."""
        if name not in self._named:
            self._named[name] = self.constant(name, array)
        return self._named[name]

    def state(self, hint: str, array: np.ndarray) -> tuple[str, MemRefType]:
        """A private mutable `memref.global` marked `usmp.state` with `array` as its initial
        value: a variable whose value persists across runs (SPEC §13)."""
        name, type_ = self.constant(hint, array)
        global_op = self.globals[-1]
        assert isinstance(global_op, memref.GlobalOp)
        global_op.constant = None
        global_op.attributes[STATE_ATTRIBUTE] = UnitAttr()
        # Aligned for its elements only: the state pool then packs the variables without the
        # 16-byte padding of activations (its bytes are the variables' bytes).
        global_op.alignment = IntegerAttr(max(1, array.dtype.itemsize), 64)
        return name, type_

    def add(self, op: func.FuncOp) -> None:
        self.functions.append(op)

    def module(self) -> ModuleOp:
        return ModuleOp([*self.globals, *self.functions])


def mark_operator(functions: Sequence[Operation], facts: OperatorFacts) -> None:
    """Marks the functions a frontend emitted for one model operator with its facts (the
    `usmp.operator` attribute), for reports and `usmp-opt --analyze`."""
    for op in functions:
        if isinstance(op, func.FuncOp):
            op.attributes[OPERATOR_ATTRIBUTE] = facts.attribute()


def reshape_view(value: SSAValue, shape: tuple[int, ...]) -> memref.ReinterpretCastOp | None:
    """The `memref.reinterpret_cast` seeing the contiguous `value` with `shape` (no copy), or
    None when it already has that shape."""
    source = value.type
    assert isinstance(source, MemRefType)
    if tuple(source.get_shape()) == tuple(shape):
        return None
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return memref.ReinterpretCastOp.build(
        operands=[value, [], [], []],
        result_types=[MemRefType(source.element_type, list(shape))],
        properties={
            "static_offsets": DenseArrayBase.from_list(i64, [0]),
            "static_sizes": DenseArrayBase.from_list(i64, list(shape)),
            "static_strides": DenseArrayBase.from_list(i64, strides),
        },
    )


def load_constant(kernel: KernelBuilder, symbol: tuple[str, MemRefType]) -> Value:
    return kernel.get_global(*symbol)


@dataclass(frozen=True, eq=False)
class Requantization:
    """int32 accumulator -> int8/int16 output, per output channel (or one for all):
    `clamp(MultiplyByQuantizedMultiplier(acc, multiplier, shift) + zero_point, min, max)`.
    `wide`: the accumulator is an int64 (TFLite's 16x8 kernels with an int64 bias), scaled by
    the 64-bit `MultiplyByQuantizedMultiplier` (a 16-bit reduced multiplier, one rounding)."""

    multipliers: np.ndarray  # int32 [channels] or [1]
    shifts: np.ndarray  # int32, TFLite's convention (positive = left)
    output_zero_point: int
    activation_min: int
    activation_max: int
    wide: bool = False

    @property
    def per_channel(self) -> bool:
        return len(self.multipliers) > 1


class RequantizeEmitter:
    """Emits a `Requantization` inside a kernel: per-tensor parameters become constants, per
    channel ones tables read at the channel index.

    Where every right shift is at least 2 and the sums stay in int64
    (`fixed_point.rounding_high_word`), the double rounding of `MultiplyByQuantizedMultiplier`
    and the output zero point are one 64-bit multiply-accumulate into a constant and one
    shift (`fixed_point.emit_multiply_shift_high`); per channel the constant's high word and
    the shift of the high word are two more tables (`<prefix>_rounding`, `<prefix>_shift`:
    4 bytes per channel more than the general form's right shifts).
    The clamp saturates to the output type first (the C backend prints a Cortex-M `SSAT`).
    `wide` parameters (16x8 layers summing in int64) use TFLite's 64-bit
    `MultiplyByQuantizedMultiplier` (`fixed_point.emit_multiply_by_quantized_multiplier_64`)."""

    def __init__(
        self, module: ModelModule, kernel: KernelBuilder, prefix: str, params: Requantization
    ) -> None:
        self.kernel = kernel
        self.params = params
        self.tables: tuple[Value, Value, Value | None] | None = None
        self.high_tables: tuple[Value, Value, Value] | None = None
        self.wide_tables: tuple[Value, Value] | None = None
        if params.per_channel and params.wide:
            reduced = np.array([reduced_multiplier(int(m)) for m in params.multipliers])
            self.wide_tables = (
                kernel.get_global(
                    *module.shared_constant(
                        params,
                        "reduced",
                        f"{prefix}_reduced_multiplier",
                        reduced.astype(np.int32),
                    )
                ),
                kernel.get_global(
                    *module.shared_constant(
                        params,
                        "total_shift",
                        f"{prefix}_total_shift",
                        (15 - params.shifts).astype(np.int32),
                    )
                ),
            )
        elif params.per_channel:
            shifts = params.shifts.astype(np.int64)
            multipliers = kernel.get_global(
                *module.shared_constant(
                    params,
                    "multiplier",
                    f"{prefix}_multiplier",
                    params.multipliers.astype(np.int32),
                )
            )
            highs = [rounding_high_word(-int(e), params.output_zero_point) for e in shifts]
            if all(high is not None for high in highs):
                rounding = kernel.get_global(
                    *module.shared_constant(
                        params, "rounding", f"{prefix}_rounding", np.array(highs, dtype=np.int32)
                    )
                )
                shift = kernel.get_global(
                    *module.shared_constant(
                        params, "shift", f"{prefix}_shift", (-shifts - 1).astype(np.int32)
                    )
                )
                self.high_tables = (multipliers, rounding, shift)
                return
            right = kernel.get_global(
                *module.shared_constant(
                    params,
                    "right",
                    f"{prefix}_right_shift",
                    np.maximum(-shifts, 0).astype(np.int32),
                )
            )
            left = None
            if (shifts > 0).any():
                left = kernel.get_global(
                    *module.shared_constant(
                        params,
                        "left",
                        f"{prefix}_left_shift",
                        np.maximum(shifts, 0).astype(np.int32),
                    )
                )
            self.tables = (multipliers, right, left)

    def scaled(self, accumulator: Value, channel: Value) -> Value:
        """MultiplyByQuantizedMultiplier of the i32 (i64 when `wide`) `accumulator` for output
        `channel`, plus the output zero point."""
        kernel = self.kernel
        zero_point = self.params.output_zero_point
        if self.params.wide:
            if self.wide_tables is None:
                multiplier, shift = int(self.params.multipliers[0]), int(self.params.shifts[0])
                wide = emit_multiply_by_quantized_multiplier_64(
                    kernel, accumulator, reduced_multiplier(multiplier), 15 - shift
                )
            else:
                reduced, total_shift = self.wide_tables  # int32 tables, widened when read
                wide = emit_multiply_by_quantized_multiplier_64(
                    kernel,
                    accumulator,
                    kernel.cast(kernel.load(reduced, [channel]), i64),
                    kernel.cast(kernel.load(total_shift, [channel]), i64),
                )
            return kernel.add(wide, zero_point) if zero_point else wide
        if self.high_tables is not None:
            multipliers, rounding, shift = self.high_tables
            high = emit_multiply_shift_high(
                kernel,
                accumulator,
                kernel.load(multipliers, [channel]),
                kernel.load(rounding, [channel]),
            )
            return kernel.shr(high, kernel.load(shift, [channel]))
        if self.tables is None:
            return emit_multiply_by_quantized_multiplier(
                kernel,
                accumulator,
                int(self.params.multipliers[0]),
                int(self.params.shifts[0]),
                zero_point,
            )
        multipliers, right, left = self.tables
        value = accumulator
        if left is not None:
            value = kernel.shl(value, kernel.load(left, [channel]))
        high = emit_saturating_rounding_doubling_high_mul(
            kernel, value, kernel.load(multipliers, [channel]), may_overflow=False
        )
        result = emit_rounding_divide_by_pot(kernel, high, kernel.load(right, [channel]))
        return kernel.add(result, zero_point) if zero_point else result

    def output(self, accumulator: Value, channel: Value, element: IntegerType) -> Value:
        """The requantised, offset, clamped output element: saturated to `element`'s range
        (one `SSAT`), then clamped to the activation's narrower bounds if any."""
        kernel = self.kernel
        params = self.params
        scaled = self.scaled(accumulator, channel)
        bits = element.width.data
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        value = kernel.clamp(scaled, low, high)
        if params.activation_min > low:
            value = kernel.max(value, params.activation_min)
        if params.activation_max < high:
            value = kernel.min(value, params.activation_max)
        return kernel.cast(value, element)


K = TypeVar("K", bound=Hashable)


class ConcatSlices(Generic[K]):
    """Concat in place, for the frontends: tensors (keys `K`) written by their producer straight
    into their contiguous slice of a concatenation's output. `slices[tensor] = (concatenation
    output, element offset)`; an output may itself be a slice of a later concatenation. The
    outermost output is one byte buffer (`memref.alloc : memref<Nxi8>`, allocated when the first
    tensor placed in it is written) and every tensor in it a `memref.view` at its byte offset,
    with the tensor's own identity-layout type (so operator functions keep their signatures)."""

    def __init__(self, slices: dict[K, tuple[K, int]]) -> None:
        self.slices = slices
        self._outputs = {target for target, _ in slices.values()}
        self._roots: dict[K, SSAValue] = {}
        self._placed: dict[K, SSAValue] = {}

    def covers(self, tensor: K) -> bool:
        """Whether `tensor` lives in a concatenation's byte buffer (a slice or an output)."""
        return tensor in self.slices or tensor in self._outputs

    def placed(self, tensor: K, output: K) -> SSAValue | None:
        """The view `tensor` was written into, when it is a slice of `output`."""
        if self.slices.get(tensor, (None, 0))[0] != output:
            return None
        return self._placed.get(tensor)

    def buffer(
        self,
        main: KernelBuilder,
        tensor: K,
        type_of: Callable[[K], MemRefType],
        name_of: Callable[[K], str],
        tensor_of: Callable[[K], str] | None = None,
    ) -> SSAValue:
        """The view of `tensor` in its outermost concatenation output's byte buffer (the
        buffer carries `usmp.tensor = tensor_of(root)`)."""
        if tensor in self._placed:
            return self._placed[tensor]
        root, offset = tensor, 0
        while root in self.slices:
            root, step = self.slices[root]
            offset += step
        type_ = type_of(tensor)
        element_bytes = buffer_size_bytes(MemRefType(type_.element_type, [1]))
        buffer = self._roots.get(root)
        if buffer is None:
            size = buffer_size_bytes(type_of(root))
            alloc = memref.AllocOp([], [], MemRefType(i8, [size]))
            if tensor_of is not None:
                alloc.attributes[TENSOR_ATTRIBUTE] = StringAttr(tensor_of(root))
            buffer = main.insert(alloc)
            buffer.name_hint = name_of(root)
            self._roots[root] = buffer
        shift = main.index(offset * element_bytes)
        view = main.insert(memref.ViewOp(buffer, shift, [], type_))
        if tensor != root:
            view.name_hint = name_of(tensor)
        self._placed[tensor] = view
        return view
