"""What several ONNX handlers share: spatial windows (pads, strides, dilations, auto_pad),
axes, the activations fused into a convolution or Gemm, and the fully connected call of Gemm,
MatMul and their int8 forms."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from usmp_dialect.frontends.onnx.importer import NodeContext
from usmp_dialect.kernels.conv import FloatActivation, QuantizedConv, Window
from usmp_dialect.kernels.fully_connected import fully_connected
from usmp_dialect.kernels.module import memref_of

FLOAT32 = np.dtype(np.float32)
NO_ACTIVATION = FloatActivation(float("-inf"), float("inf"))


def require_float(context: NodeContext, *positions: int) -> None:
    for position in positions:
        if context.dtype(position) != FLOAT32:
            raise context.fail(
                f"input {position} is {context.dtype(position).name}; only float32 is supported"
            )
    if context.output_dtype() != FLOAT32:
        raise context.fail(f"the output is {context.output_dtype().name}; float32 expected")


def axis(context: NodeContext, value: int, rank: int) -> int:
    if not -rank <= value < rank:
        raise context.fail(f"axis {value} is out of range for rank {rank}")
    return value % rank


def _ints(context: NodeContext, name: str, default: Sequence[int], count: int) -> list[int]:
    values = list(context.attr(name, default))
    if len(values) != count:
        raise context.fail(f"attribute {name} has {len(values)} values, {count} expected")
    return values


def spatial_window(
    context: NodeContext,
    spatial: Sequence[int],
    kernel: Sequence[int],
    out_spatial: Sequence[int],
    dilation_default: bool = True,
    ceil_mode: bool = False,
) -> tuple[Window, tuple[int, int]]:
    """The 2-D window of a Conv or pooling node (strides, dilations, pads or auto_pad), and
    the padding after (bottom, right); checks the inferred output size against it."""
    if len(spatial) != 2:
        raise context.fail(f"{len(spatial)}-D spatial input; only 2-D (NCHW) is supported")
    strides = _ints(context, "strides", [1, 1], 2)
    dilations = _ints(context, "dilations", [1, 1], 2) if dilation_default else [1, 1]
    if min(*strides, *dilations) < 1:
        raise context.fail(f"invalid strides {strides} or dilations {dilations}")
    auto_pad = context.attr("auto_pad", "NOTSET")
    before, after = [0, 0], [0, 0]
    for dim in range(2):
        effective = (kernel[dim] - 1) * dilations[dim] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = -(-spatial[dim] // strides[dim])
            total = max(0, (out - 1) * strides[dim] + effective - spatial[dim])
            small, large = total // 2, total - total // 2
            before[dim], after[dim] = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
        elif auto_pad == "VALID":
            pass
        elif auto_pad == "NOTSET":
            pads = _ints(context, "pads", [0, 0, 0, 0], 4)
            if min(pads) < 0:
                raise context.fail(f"negative pads {pads}")
            before[dim], after[dim] = pads[dim], pads[dim + 2]
        else:
            raise context.fail(f"unknown auto_pad '{auto_pad}'")
        padded = spatial[dim] + before[dim] + after[dim] - effective
        if padded < 0:
            raise context.fail(f"the window {effective} is larger than the padded input")
        floor = padded // strides[dim] + 1
        accepted = {floor, -(-padded // strides[dim]) + 1} if ceil_mode else {floor}
        if out_spatial[dim] not in accepted:
            expected = max(accepted)
            raise context.fail(
                f"the output size {out_spatial[dim]} does not match the input {spatial[dim]}, "
                f"kernel {kernel[dim]}, stride {strides[dim]}, dilation {dilations[dim]}, pads "
                f"{before[dim]}+{after[dim]} ({expected} expected)"
            )
    window = Window((strides[0], strides[1]), (dilations[0], dilations[1]), (before[0], before[1]))
    return window, (after[0], after[1])


def clip_bounds(context: NodeContext) -> tuple[float, float]:
    """The bounds of a Clip node (attributes before opset 11, constant inputs after)."""
    if context.opset < 11:
        return float(context.attr("min", float("-inf"))), float(context.attr("max", float("inf")))
    bounds = []
    for position, default in ((1, float("-inf")), (2, float("inf"))):
        if context.has_input(position):
            value = context.constant(position)
            if value.size != 1:
                raise context.fail(f"the Clip bound {position} is not a scalar")
            bounds.append(float(value.reshape(())))
        else:
            bounds.append(default)
    return bounds[0], bounds[1]


def activation_of(context: NodeContext) -> FloatActivation:
    """The clamp of a Relu or Clip node fused into the node before it."""
    if context.node.op_type == "Relu":
        return FloatActivation(0.0, float("inf"))
    low, high = clip_bounds(context)
    return FloatActivation(low, high)


def fused_activation(context: NodeContext, tensor: str) -> tuple[FloatActivation, str]:
    """A Relu or Clip that is the only reader of `tensor`: fused (the clamp, and the tensor
    the fused function writes), else no activation and `tensor` itself."""
    reader = context.single_reader(tensor, ("Relu", "Clip"))
    if reader is None:
        return NO_ACTIVATION, tensor
    reader_context = NodeContext(context.importer, reader)
    if reader.op_type == "Clip" and not all(
        reader_context.is_constant(position)
        for position in (1, 2)
        if reader_context.has_input(position)
    ):
        return NO_ACTIVATION, tensor
    context.fuse(reader)
    return activation_of(reader_context), reader.outputs[0]


def check_concatenation(
    context: NodeContext,
    shapes: Sequence[tuple[int, ...]],
    output: tuple[int, ...],
    along: int,
) -> None:
    """Fails unless `shapes` agree with `output` off `along` and add up to it along `along`."""
    fits = all(
        len(shape) == len(output)
        and all(
            size == out
            for dim, (size, out) in enumerate(zip(shape, output, strict=True))
            if dim != along
        )
        for shape in shapes
    )
    if not fits or sum(shape[along] for shape in shapes) != output[along]:
        raise context.fail(
            f"input shapes {[list(s) for s in shapes]} do not concatenate to {list(output)}"
        )


def dense(
    context: NodeContext,
    weights: np.ndarray,
    bias: np.ndarray | None,
    arithmetic: FloatActivation | QuantizedConv,
    produced: str | None = None,
) -> None:
    """`output[b, :] = weights @ input[b, :] + bias` over the rows of input 0 viewed as
    `[batches, depth]` (`weights` is `[units, depth]`, of the activations' type: float32, or
    int8 with an int32 `bias`), written into tensor `produced` (by default output 0)."""
    units, depth = weights.shape
    batches = int(np.prod(context.shape(0))) // depth
    output = context.output_shape()
    if int(np.prod(output)) != batches * units:
        raise context.fail(
            f"the output shape {list(output)} does not hold {batches}x{units} results"
        )
    module = context.module
    dtype = weights.dtype
    filters = module.constant(f"{context.name}_filter", np.ascontiguousarray(weights))
    bias_symbol = module.constant(f"{context.name}_bias", bias) if bias is not None else None
    fully_connected(
        module,
        context.name,
        memref_of((batches, depth), dtype),
        memref_of((batches, units), dtype),
        filters,
        bias_symbol,
        arithmetic,
    )
    source = context.view(context.value(0), (batches, depth))
    context.call([source], [context.view(context.result(name=produced), (batches, units))])
