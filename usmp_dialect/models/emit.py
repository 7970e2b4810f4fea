"""Writes a quantised `Network` as MLIR text that `usmp-opt` (xDSL 0.74) parses.

Shape of the program:

* constant weights are `memref.global`s (generic form: xDSL 0.74 has no custom syntax for it)
  with hex dense data, read with `memref.get_global` inside the operator that uses them;
* `func.func @main(%input, %output)` allocates every intermediate activation with
  `memref.alloc` (freed with `memref.dealloc` after its last use) and calls one operator
  function per layer;
* operator functions compute with `linalg.generic` on memrefs and allocate their own scratch
  buffers: a zero-point-padded copy of the input for padded convolutions and an int32
  accumulator for convolutions, fully connected layers and pooling. A convolution's
  accumulator holds one output row by default (`accumulator="row"`: an `scf.for` over output
  rows computes each row through row `memref.subview`s with a dynamic offset), or the whole
  output (`accumulator="tensor"`: no loop).

Every indexing map is a projection (no affine expressions), so `convert-linalg-to-loops`
lowers the program to `scf.for` with `memref.load`/`memref.store` and no `affine` op. The
convolution windows are a `memref.reinterpret_cast` view of the (padded) input with strides
`[.., stride_h * row, stride_w * pixel, row, pixel, 1]`, and the interior of the padded copy is
a `memref.subview`.
"""

from collections.abc import Sequence

import numpy as np

from usmp_dialect.models.layers import (
    Add,
    Conv2D,
    FullyConnected,
    GlobalAvgPool,
    Layer,
    Network,
    Requantize,
    folded_bias,
    high_word_shift,
    shift_table,
)

Operand = tuple[str, str, Sequence[int]]  # SSA value, memref type, indexing map results


def memref_type(
    shape: Sequence[int],
    element: str,
    strides: Sequence[int] | None = None,
    offset: int | None = 0,
) -> str:
    """The memref type; with `strides`, a strided layout (`offset=None`: a dynamic offset)."""
    dims = "x".join(str(d) for d in shape)
    if strides is None:
        return f"memref<{dims}x{element}>"
    layout = ", ".join(str(s) for s in strides)
    offset_text = ", offset: ?" if offset is None else (f", offset: {offset}" if offset else "")
    return f"memref<{dims}x{element}, strided<[{layout}]{offset_text}>>"


def identity_strides(shape: Sequence[int]) -> list[int]:
    strides = [1] * len(shape)
    for axis in range(len(shape) - 2, -1, -1):
        strides[axis] = strides[axis + 1] * shape[axis + 1]
    return strides


def _affine_map(num_dims: int, results: Sequence[int]) -> str:
    dims = ", ".join(f"d{i}" for i in range(num_dims))
    return f"affine_map<({dims}) -> ({', '.join(f'd{i}' for i in results)})>"


def _element(array: np.ndarray) -> str:
    return {np.dtype(np.int8): "i8", np.dtype(np.int32): "i32"}[array.dtype]


def global_op(name: str, array: np.ndarray, shape: Sequence[int] | None = None) -> str:
    """A private constant `memref.global` holding `array` (little-endian hex)."""
    dims = tuple(array.shape if shape is None else shape)
    element = _element(array)
    data = array.astype(array.dtype.newbyteorder("<")).tobytes().hex().upper()
    tensor = "tensor<" + "x".join(str(d) for d in dims) + f"x{element}>"
    return (
        f'"memref.global"() <{{sym_name = "{name}", sym_visibility = "private", '
        f'type = {memref_type(dims, element)}, initial_value = dense<"0x{data}"> : {tensor}, '
        "constant}> : () -> ()"
    )


class _Function:
    """Collects the text of one function; hands out unique SSA names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.used: dict[str, int] = {}
        self.depth = 0  # enclosing scf.for loops

    def fresh(self, hint: str) -> str:
        count = self.used.get(hint, 0)
        self.used[hint] = count + 1
        return f"%{hint}" if count == 0 else f"%{hint}_{count}"

    def line(self, text: str, indent: int = 1) -> None:
        self.lines.append("  " * (indent + self.depth) + text)

    def generic(
        self,
        num_dims: int,
        reductions: int,
        ins: Sequence[Operand],
        outs: Sequence[Operand],
        body: "_Body",
    ) -> None:
        maps = ", ".join(_affine_map(num_dims, m) for _, _, m in (*ins, *outs))
        iterators = ", ".join(
            ['"parallel"'] * (num_dims - reductions) + ['"reduction"'] * reductions
        )
        head = f"linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iterators}]}}"
        if ins:
            values = ", ".join(v for v, _, _ in ins)
            types = ", ".join(t for _, t, _ in ins)
            head += f" ins({values} : {types})"
        values = ", ".join(v for v, _, _ in outs)
        types = ", ".join(t for _, t, _ in outs)
        self.line(f"{head} outs({values} : {types}) {{")
        self.line(f"^bb0({', '.join(f'{n}: {t}' for n, t in body.args)}):")
        for text in body.lines:
            self.line(text, 2)
        self.line(f"linalg.yield {body.result} : {body.result_type}", 2)
        self.line("}")


class _Body:
    """The scalar body of a `linalg.generic`, built one `arith` op at a time."""

    def __init__(self, function: _Function, args: Sequence[tuple[str, str]]) -> None:
        self.function = function
        self.args = [(function.fresh(hint), t) for hint, t in args]
        self.lines: list[str] = []
        self.result = ""
        self.result_type = ""

    def arg(self, index: int) -> str:
        return self.args[index][0]

    def op(self, hint: str, text: str) -> str:
        name = self.function.fresh(hint)
        self.lines.append(f"{name} = {text}")
        return name

    def constant(self, value: int, type_: str) -> str:
        return self.op("c", f"arith.constant {value} : {type_}")

    def extend(self, value: str, source: str, target: str) -> str:
        return self.op("ext", f"arith.extsi {value} : {source} to {target}")

    def binary(self, name: str, lhs: str, rhs: str, type_: str) -> str:
        return self.op(name, f"arith.{name} {lhs}, {rhs} : {type_}")

    def yield_(self, value: str, type_: str) -> None:
        self.result, self.result_type = value, type_

    def scale(self, value: str, multiplier: str, shift: str) -> str:
        """`(value * multiplier + 2**(shift - 1)) >> shift` on i64 values."""
        product = self.binary("muli", value, multiplier, "i64")
        one = self.constant(1, "i64")
        shift_less_one = self.binary("subi", shift, one, "i64")
        rounding = self.binary("shli", one, shift_less_one, "i64")
        rounded = self.binary("addi", product, rounding, "i64")
        return self.binary("shrsi", rounded, shift, "i64")

    def scale_high_word(self, value: str, multiplier: str, high_shift: str) -> str:
        """The same for a `shift` of at least 33, given `high_shift = shift - 32` (i32):
        `((hi(value * multiplier) + 2**(high_shift - 1)) >> high_shift` with `hi` the upper
        32 bits. Exact: the rounding term is a multiple of 2**32, so it only adds to the upper
        word, and shifting right by 32 then by `high_shift` is shifting by `shift`; the sum
        fits in i32 (|hi| <= 2**30, the term <= 2**29)."""
        wide = self.binary(
            "muli",
            self.extend(value, "i32", "i64"),
            self.extend(multiplier, "i32", "i64"),
            "i64",
        )
        high = self.binary("shrsi", wide, self.constant(32, "i64"), "i64")
        high32 = self.op("high", f"arith.trunci {high} : i64 to i32")
        one = self.constant(1, "i32")
        rounding = self.binary("shli", one, self.binary("subi", high_shift, one, "i32"), "i32")
        rounded = self.binary("addi", high32, rounding, "i32")
        return self.binary("shrsi", rounded, high_shift, "i32")

    def clamp_to_i8(
        self, value: str, zero_point: int, low: int, high: int, type_: str = "i64"
    ) -> str:
        shifted = self.binary("addi", value, self.constant(zero_point, type_), type_)
        bounded = self.binary("maxsi", shifted, self.constant(low, type_), type_)
        bounded = self.binary("minsi", bounded, self.constant(high, type_), type_)
        return self.op("trunc", f"arith.trunci {bounded} : {type_} to i8")


def _get_global(function: _Function, layer: str, kind: str, type_: str) -> str:
    name = function.fresh(kind)
    function.line(f"{name} = memref.get_global @{layer}_{kind} : {type_}")
    return name


def _requantize_into_output(
    function: _Function,
    accumulator: Operand,
    multiplier: str,
    shift: str,
    output: Operand,
    params: Requantize,
    channel_dim: int,
) -> None:
    rank = len(output[2])
    channels = memref_type([len(params.multiplier)], "i32")
    body = _Body(function, [("acc", "i32"), ("multiplier", "i32"), ("shift", "i32"), ("out", "i8")])
    bounds = (params.output_zero_point, params.activation_min, params.activation_max)
    if high_word_shift(params) is not None:
        # The shift table holds `shift - 32`: 32-bit arithmetic after one widening multiply.
        scaled = body.scale_high_word(body.arg(0), body.arg(1), body.arg(2))
        body.yield_(body.clamp_to_i8(scaled, *bounds, type_="i32"), "i8")
    else:
        value = body.extend(body.arg(0), "i32", "i64")
        scaled = body.scale(
            value, body.extend(body.arg(1), "i32", "i64"), body.extend(body.arg(2), "i32", "i64")
        )
        body.yield_(body.clamp_to_i8(scaled, *bounds), "i8")
    function.generic(
        rank,
        0,
        [accumulator, (multiplier, channels, [channel_dim]), (shift, channels, [channel_dim])],
        [output],
        body,
    )


def _bias_init(
    function: _Function, bias: str, channels: int, accumulator: Operand, channel_dim: int
) -> None:
    body = _Body(function, [("bias", "i32"), ("init", "i32")])
    body.yield_(body.arg(0), "i32")
    bias_operand = (bias, memref_type([channels], "i32"), [channel_dim])
    function.generic(len(accumulator[2]), 0, [bias_operand], [accumulator], body)


def _mac_body(function: _Function) -> _Body:
    """`acc + x * w` with int8 x, w and an int32 accumulator (the input zero point is folded
    into the bias: `layers.folded_bias`)."""
    body = _Body(function, [("x", "i8"), ("w", "i8"), ("acc", "i32")])
    x = body.extend(body.arg(0), "i8", "i32")
    product = body.binary("muli", x, body.extend(body.arg(1), "i8", "i32"), "i32")
    body.yield_(body.binary("addi", body.arg(2), product, "i32"), "i32")
    return body


def _signature(names: Sequence[str], types: Sequence[str]) -> str:
    return ", ".join(f"%{n}: {t}" for n, t in zip(names, types, strict=True))


def _operator_function(name: str, arguments: Sequence[tuple[str, str]]) -> _Function:
    """A new operator function `@name` whose header declares `arguments` (name, type)."""
    function = _Function()
    for argument, _ in arguments:
        function.fresh(argument)
    names = [argument for argument, _ in arguments]
    types = [type_ for _, type_ in arguments]
    function.lines.append(f"func.func @{name}({_signature(names, types)}) {{")
    return function


def _is_pointwise(layer: Layer) -> bool:
    """A 1x1, stride 1 convolution: a matrix product on the input, weights `[out, in]`."""
    return (
        isinstance(layer, Conv2D)
        and not layer.depthwise
        and layer.kernel == (1, 1)
        and layer.stride == (1, 1)
    )


def _row_view(
    f: _Function,
    value: str,
    source_type: str,
    shape: Sequence[int],
    strides: Sequence[int],
    row: str,
) -> tuple[str, str]:
    """`memref.subview` of row `row` (dimension 1) of an i8 memref: (value, type)."""
    view_shape = [shape[0], 1, *shape[2:]]
    view_type = memref_type(view_shape, "i8", strides, None)
    offsets = ", ".join(["0", row] + ["0"] * (len(shape) - 2))
    view = f.fresh(f"{value.lstrip('%')}_row")
    f.line(
        f"{view} = memref.subview {value}[{offsets}] [{', '.join(map(str, view_shape))}] "
        f"[{', '.join(['1'] * len(shape))}] : {source_type} to {view_type}"
    )
    return view, view_type


def _conv2d(layer: Conv2D, network: Network, accumulator: str) -> list[str]:
    source = network.tensors[layer.input]
    target = network.tensors[layer.output]
    _, height, width, in_channels = source.shape
    _, out_h, out_w, out_channels = target.shape
    kh, kw = layer.kernel
    sh, sw = layer.stride
    top, bottom, left, right = layer.padding
    in_type = memref_type(source.shape, "i8")
    out_type = memref_type(target.shape, "i8")
    f = _operator_function(layer.name, [("input", in_type), ("output", out_type)])
    pointwise = _is_pointwise(layer)
    if pointwise:
        weight_type = memref_type([out_channels, in_channels], "i8")
    else:
        weight_type = memref_type(layer.weights.shape, "i8")
    channel_type = memref_type([out_channels], "i32")
    weights = _get_global(f, layer.name, "weights", weight_type)
    bias = _get_global(f, layer.name, "bias", channel_type)
    multiplier = _get_global(f, layer.name, "multiplier", channel_type)
    shift = _get_global(f, layer.name, "shift", channel_type)
    scratch: list[tuple[str, str]] = []

    source_value, source_shape = "%input", list(source.shape)
    if any(layer.padding):
        padded_shape = [1, height + top + bottom, width + left + right, in_channels]
        padded_type = memref_type(padded_shape, "i8")
        padded = f.fresh(f"{layer.name}_padded")
        f.line(f"{padded} = memref.alloc() : {padded_type}")
        scratch.append((padded, padded_type))
        fill = _Body(f, [("pad", "i8")])
        fill.yield_(fill.constant(layer.input_zero_point, "i8"), "i8")
        f.generic(4, 0, [], [(padded, padded_type, [0, 1, 2, 3])], fill)
        strides = identity_strides(padded_shape)
        offset = top * strides[1] + left * strides[2]
        interior_type = memref_type(source.shape, "i8", strides, offset)
        interior = f.fresh("interior")
        f.line(
            f"{interior} = memref.subview {padded}[0, {top}, {left}, 0] "
            f"[1, {height}, {width}, {in_channels}] [1, 1, 1, 1] : {padded_type} to "
            f"{interior_type}"
        )
        copy = _Body(f, [("in", "i8"), ("out", "i8")])
        copy.yield_(copy.arg(0), "i8")
        f.generic(
            4,
            0,
            [("%input", in_type, [0, 1, 2, 3])],
            [(interior, interior_type, [0, 1, 2, 3])],
            copy,
        )
        source_value, source_shape = padded, padded_shape

    if pointwise:
        # iteration space (n, h, w, oc, ic)
        mac_shape, mac_strides = list(source_shape), identity_strides(source_shape)
        mac_source, mac_map, weight_map, num_dims = source_value, [0, 1, 2, 4], [3, 4], 5
        mac_type = memref_type(mac_shape, "i8")
    else:
        strides = identity_strides(source_shape)
        mac_shape = [1, out_h, out_w, kh, kw, in_channels]
        mac_strides = [strides[0], sh * strides[1], sw * strides[2], strides[1], strides[2], 1]
        mac_type = memref_type(mac_shape, "i8", mac_strides)
        mac_source = f.fresh("windows")
        f.line(
            f"{mac_source} = memref.reinterpret_cast {source_value} to offset: [0], sizes: "
            f"[{', '.join(map(str, mac_shape))}], strides: "
            f"[{', '.join(map(str, mac_strides))}] : "
            f"{memref_type(source_shape, 'i8')} to {mac_type}"
        )
        if layer.depthwise:
            # iteration space (n, oh, ow, c, kh, kw)
            mac_map, weight_map, num_dims = [0, 1, 2, 4, 5, 3], [4, 5, 3], 6
        else:
            # iteration space (n, oh, ow, oc, kh, kw, ic)
            mac_map, weight_map, num_dims = [0, 1, 2, 4, 5, 6], [3, 4, 5, 6], 7

    output_value, output_type = "%output", out_type
    accumulator_shape = list(target.shape)
    if accumulator == "row":
        accumulator_shape[1] = 1
    accumulator_type = memref_type(accumulator_shape, "i32")
    accumulator_value = f.fresh(f"{layer.name}_acc")
    f.line(f"{accumulator_value} = memref.alloc() : {accumulator_type}")
    scratch.append((accumulator_value, accumulator_type))
    if accumulator == "row":
        # One output row at a time: the MAC source and the output are row views.
        lower, step, upper = f.fresh("c0"), f.fresh("c1"), f.fresh(f"c{out_h}")
        f.line(f"{lower} = arith.constant 0 : index")
        f.line(f"{step} = arith.constant 1 : index")
        f.line(f"{upper} = arith.constant {out_h} : index")
        row = f.fresh("row")
        f.line(f"scf.for {row} = {lower} to {upper} step {step} {{")
        f.depth += 1
        mac_source, mac_type = _row_view(f, mac_source, mac_type, mac_shape, mac_strides, row)
        output_value, output_type = _row_view(
            f, "%output", out_type, list(target.shape), identity_strides(target.shape), row
        )
    acc_operand: Operand = (accumulator_value, accumulator_type, [0, 1, 2, 3])
    _bias_init(f, bias, out_channels, acc_operand, 3)
    f.generic(
        num_dims,
        num_dims - 4,
        [(mac_source, mac_type, mac_map), (weights, weight_type, weight_map)],
        [acc_operand],
        _mac_body(f),
    )
    _requantize_into_output(
        f,
        acc_operand,
        multiplier,
        shift,
        (output_value, output_type, [0, 1, 2, 3]),
        layer.requantize,
        3,
    )
    if accumulator == "row":
        f.depth -= 1
        f.line("}")
    for value, type_ in reversed(scratch):
        f.line(f"memref.dealloc {value} : {type_}")
    f.line("func.return")
    f.lines.append("}")
    return f.lines


def _fully_connected(layer: FullyConnected, network: Network) -> list[str]:
    source = network.tensors[layer.input]
    target = network.tensors[layer.output]
    in_type = memref_type(source.shape, "i8")
    out_type = memref_type(target.shape, "i8")
    out_features, _ = layer.weights.shape
    f = _operator_function(layer.name, [("input", in_type), ("output", out_type)])
    weight_type = memref_type(layer.weights.shape, "i8")
    channel_type = memref_type([out_features], "i32")
    weights = _get_global(f, layer.name, "weights", weight_type)
    bias = _get_global(f, layer.name, "bias", channel_type)
    multiplier = _get_global(f, layer.name, "multiplier", channel_type)
    shift = _get_global(f, layer.name, "shift", channel_type)
    accumulator_type = memref_type(target.shape, "i32")
    accumulator = f.fresh(f"{layer.name}_acc")
    f.line(f"{accumulator} = memref.alloc() : {accumulator_type}")
    acc_operand: Operand = (accumulator, accumulator_type, [0, 1])
    _bias_init(f, bias, out_features, acc_operand, 1)
    # (n, o, k)
    f.generic(
        3,
        1,
        [("%input", in_type, [0, 2]), (weights, weight_type, [1, 2])],
        [acc_operand],
        _mac_body(f),
    )
    _requantize_into_output(
        f, acc_operand, multiplier, shift, ("%output", out_type, [0, 1]), layer.requantize, 1
    )
    f.line(f"memref.dealloc {accumulator} : {accumulator_type}")
    f.line("func.return")
    f.lines.append("}")
    return f.lines


def _avg_pool(layer: GlobalAvgPool, network: Network) -> list[str]:
    source = network.tensors[layer.input]
    target = network.tensors[layer.output]
    in_type = memref_type(source.shape, "i8")
    out_type = memref_type(target.shape, "i8")
    count = source.shape[1] * source.shape[2]
    f = _operator_function(layer.name, [("input", in_type), ("output", out_type)])
    accumulator_type = memref_type(target.shape, "i32")
    accumulator = f.fresh(f"{layer.name}_acc")
    f.line(f"{accumulator} = memref.alloc() : {accumulator_type}")
    acc_operand: Operand = (accumulator, accumulator_type, [0, 1])
    zero = _Body(f, [("init", "i32")])
    zero.yield_(zero.constant(0, "i32"), "i32")
    f.generic(2, 0, [], [acc_operand], zero)
    total = _Body(f, [("x", "i8"), ("acc", "i32")])
    total.yield_(
        total.binary("addi", total.arg(1), total.extend(total.arg(0), "i8", "i32"), "i32"), "i32"
    )
    # (n, c, h, w)
    f.generic(4, 2, [("%input", in_type, [0, 2, 3, 1])], [acc_operand], total)
    mean = _Body(f, [("sum", "i32"), ("out", "i8")])
    wide = mean.extend(mean.arg(0), "i32", "i64")
    half = mean.constant(count // 2, "i64")
    non_negative = mean.op("nonneg", f"arith.cmpi sge, {wide}, {mean.constant(0, 'i64')} : i64")
    up = mean.binary("addi", wide, half, "i64")
    down = mean.binary("subi", wide, half, "i64")
    rounded = mean.op("select", f"arith.select {non_negative}, {up}, {down} : i64")
    quotient = mean.binary("divsi", rounded, mean.constant(count, "i64"), "i64")
    mean.yield_(mean.clamp_to_i8(quotient, 0, -128, 127), "i8")
    f.generic(2, 0, [acc_operand], [("%output", out_type, [0, 1])], mean)
    f.line(f"memref.dealloc {accumulator} : {accumulator_type}")
    f.line("func.return")
    f.lines.append("}")
    return f.lines


def _add(layer: Add, network: Network) -> list[str]:
    target = network.tensors[layer.output]
    type_ = memref_type(target.shape, "i8")
    rank = len(target.shape)
    identity = list(range(rank))
    f = _operator_function(layer.name, [("input", type_), ("other", type_), ("output", type_)])
    body = _Body(f, [("x", "i8"), ("y", "i8"), ("out", "i8")])
    left_shift = body.constant(layer.left_shift, "i64")
    scaled = []
    for arg, zero_point, multiplier, shift in (
        (0, layer.input_zero_point, layer.input_multiplier, layer.input_shift),
        (1, layer.other_zero_point, layer.other_multiplier, layer.other_shift),
    ):
        wide = body.extend(body.arg(arg), "i8", "i64")
        centred = body.binary("subi", wide, body.constant(zero_point, "i64"), "i64")
        shifted = body.binary("shli", centred, left_shift, "i64")
        scaled.append(
            body.scale(shifted, body.constant(multiplier, "i64"), body.constant(shift, "i64"))
        )
    total = body.binary("addi", scaled[0], scaled[1], "i64")
    params = layer.requantize
    out = body.scale(
        total,
        body.constant(int(params.multiplier[0]), "i64"),
        body.constant(int(params.shift[0]), "i64"),
    )
    body.yield_(
        body.clamp_to_i8(
            out, params.output_zero_point, params.activation_min, params.activation_max
        ),
        "i8",
    )
    f.generic(
        rank,
        0,
        [("%input", type_, identity), ("%other", type_, identity)],
        [("%output", type_, identity)],
        body,
    )
    f.line("func.return")
    f.lines.append("}")
    return f.lines


def _globals(layer: Layer) -> list[str]:
    if not isinstance(layer, Conv2D | FullyConnected):
        return []
    weights_shape = None
    if _is_pointwise(layer):
        weights_shape = (layer.weights.shape[0], layer.weights.shape[3])
    params = layer.requantize
    return [
        global_op(f"{layer.name}_weights", layer.weights, weights_shape),
        global_op(f"{layer.name}_bias", folded_bias(layer)),
        global_op(f"{layer.name}_multiplier", params.multiplier),
        global_op(f"{layer.name}_shift", shift_table(params)),
    ]


def _main(network: Network) -> list[str]:
    tensors = network.tensors

    def type_of(name: str) -> str:
        return memref_type(tensors[name].shape, "i8")

    last_use: dict[str, int] = {}
    for index, layer in enumerate(network.layers):
        for name in (layer.input, getattr(layer, "other", layer.input)):
            last_use[name] = index
    io = (network.input, network.output)
    types = [type_of(name) for name in io]
    lines = [f"func.func @main({_signature(io, types)}) {{"]
    for index, layer in enumerate(network.layers):
        operands = [layer.input] + ([layer.other] if isinstance(layer, Add) else [])
        operands.append(layer.output)
        if layer.output not in io:
            lines.append(f"  %{layer.output} = memref.alloc() : {type_of(layer.output)}")
        values = ", ".join(f"%{name}" for name in operands)
        signature = ", ".join(type_of(name) for name in operands)
        lines.append(f"  func.call @{layer.name}({values}) : ({signature}) -> ()")
        for name in sorted(set(operands[:-1])):
            if last_use[name] == index and name not in io:
                lines.append(f"  memref.dealloc %{name} : {type_of(name)}")
    lines.append("  func.return")
    lines.append("}")
    return lines


ACCUMULATORS = ("row", "tensor")


def network_to_mlir(network: Network, accumulator: str = "row") -> str:
    """The whole module as MLIR text (implicit `builtin.module`).

    `accumulator` is the int32 scratch of a convolution: `"row"` (one output row, the
    convolution loops over rows with `scf.for` and row `memref.subview`s, as real int8
    kernels keep a small accumulator) or `"tensor"` (the whole output, no loop).
    """
    if accumulator not in ACCUMULATORS:
        raise ValueError(f"accumulator must be one of: {', '.join(ACCUMULATORS)}")
    lines = [f"// {network.name}: int8 network written by usmp_dialect.models"]
    for layer in network.layers:
        lines.extend(_globals(layer))
    for layer in network.layers:
        if isinstance(layer, Conv2D):
            lines.extend(_conv2d(layer, network, accumulator))
        elif isinstance(layer, FullyConnected):
            lines.extend(_fully_connected(layer, network))
        elif isinstance(layer, GlobalAvgPool):
            lines.extend(_avg_pool(layer, network))
        else:
            lines.extend(_add(layer, network))
    lines.extend(_main(network))
    return "\n".join(lines) + "\n"
