"""Hybrid layers (int8 weights, float activations), which TFLM refuses, against LiteRT's
reference kernels: CONV_2D and FULLY_CONNECTED with per-tensor weights, CONV_2D and
DEPTHWISE_CONV_2D with per-channel weights (asymmetric input quantisation) and
FULLY_CONNECTED with `asymmetric_quantize_inputs` compute as LiteRT's hybrid kernels do (the
input quantised on the fly per batch), bit for bit; `hybrid="dequantize"` keeps the float form,
which equals TFLM on the model with its weights dequantised."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import tflite

from usmp_dialect.frontends.options import ImportOptions
from usmp_dialect.frontends.tflite.importer import import_tflite
from usmp_dialect.testing import tflm
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec
from usmp_dialect.validation.host import compile_model

from .tflm_oracle import ModelSpec, merge

litert = pytest.importorskip("ai_edge_litert.interpreter", reason="ai-edge-litert is not installed")

pytestmark = [pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")]

ROOT = Path(__file__).resolve().parents[3]
KWS_HYBRID = ROOT / "examples" / "mlperf_tiny" / "kws_ref_model_float32.tflite"
SAME, VALID = tflite.Padding.SAME, tflite.Padding.VALID
NONE, RELU, RELU6 = 0, 1, 3


def hybrid_conv(
    rng: np.random.Generator,
    size: tuple[int, int, int, int],
    kernel: tuple[int, int],
    out_channels: int,
    stride: int,
    padding: int,
    activation: int,
) -> ModelSpec:
    batches, height, width, channels = size
    kh, kw = kernel
    if padding == SAME:
        out_h, out_w = -(-height // stride), -(-width // stride)
    else:
        out_h, out_w = (height - kh) // stride + 1, (width - kw) // stride + 1
    weights = rng.integers(-127, 128, size=(out_channels, kh, kw, channels), dtype=np.int8)
    tensors = [
        TensorSpec("input", np.float32, size),
        TensorSpec("filter", np.int8, weights.shape, weights, scales=[0.0123]),
        TensorSpec(
            "bias",
            np.float32,
            (out_channels,),
            rng.standard_normal(out_channels).astype(np.float32),
        ),
        TensorSpec("output", np.float32, (batches, out_h, out_w, out_channels)),
    ]
    fields = {"Padding": padding, "StrideH": stride, "StrideW": stride}
    fields["FusedActivationFunction"] = activation
    operators = [OperatorSpec("CONV_2D", [0, 1, 2], [3], "Conv2DOptions", fields)]
    return ModelSpec(tensors, operators, [0], [3])


def hybrid_fully_connected(
    rng: np.random.Generator, batches: int, depth: int, units: int, activation: int
) -> ModelSpec:
    weights = rng.integers(-127, 128, size=(units, depth), dtype=np.int8)
    tensors = [
        TensorSpec("input", np.float32, (batches, depth)),
        TensorSpec("filter", np.int8, weights.shape, weights, scales=[0.021]),
        TensorSpec("bias", np.float32, (units,), rng.standard_normal(units).astype(np.float32)),
        TensorSpec("output", np.float32, (batches, units)),
    ]
    fields = {"FusedActivationFunction": activation}
    operators = [OperatorSpec("FULLY_CONNECTED", [0, 1, 2], [3], "FullyConnectedOptions", fields)]
    return ModelSpec(tensors, operators, [0], [3])


def hybrid_layers() -> bytes:
    rng = np.random.default_rng(7)
    return merge(
        {
            "same_s2_relu6": hybrid_conv(rng, (2, 9, 7, 3), (3, 3), 5, 2, SAME, RELU6),
            "valid_s1": hybrid_conv(rng, (1, 6, 5, 4), (2, 3), 8, 1, VALID, NONE),
            "wide_s2_relu": hybrid_conv(rng, (1, 11, 8, 1), (5, 2), 6, 2, SAME, RELU),
            "fc_batch3": hybrid_fully_connected(rng, 3, 20, 7, NONE),
            "fc_relu": hybrid_fully_connected(rng, 1, 33, 4, RELU),
        }
    )


def litert_outputs(model: bytes, arrays: list[np.ndarray]) -> list[np.ndarray]:
    from usmp_dialect.validation.oracles import litert_outputs as outputs

    return outputs(model, arrays)


def inputs_of(compiled_inputs: list[tflm.Port], seed: int) -> list[np.ndarray]:
    """Seeded normal inputs at a few magnitudes, and one all-zero input (factor 1 in LiteRT)."""
    arrays = tflm.random_inputs(compiled_inputs, seed, float_scale=(0.1, 1.0, 30.0)[seed % 3])
    if seed == 3:
        arrays[0] = np.zeros_like(arrays[0])
    return arrays


def test_hybrid_layers_equal_litert(tmp_path: Path) -> None:
    model = hybrid_layers()
    path = tmp_path / "hybrid.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path, sanitize=True)
    for seed in range(4):
        arrays = inputs_of(compiled.inputs, seed)
        ours, _ = compiled.run(arrays)
        for port, mine, theirs in zip(
            compiled.outputs, ours, litert_outputs(model, arrays), strict=True
        ):
            np.testing.assert_array_equal(mine, theirs, err_msg=f"{port.name}, seed {seed}")


def per_channel_conv(
    rng: np.random.Generator,
    size: tuple[int, int, int, int],
    kernel: tuple[int, int],
    out_channels: int,
    stride: int,
    padding: int,
    activation: int,
    dilation: int = 1,
    depth_multiplier: int | None = None,
    equal_scales: bool = False,
) -> ModelSpec:
    """A hybrid CONV_2D (or DEPTHWISE_CONV_2D with `depth_multiplier`) with a filter scale per
    output channel, every one different: LiteRT's `EvalHybridPerChannel`."""
    batches, height, width, channels = size
    kh, kw = kernel
    effective_h, effective_w = (kh - 1) * dilation + 1, (kw - 1) * dilation + 1
    if depth_multiplier is not None:
        out_channels = channels * depth_multiplier
    if padding == SAME:
        out_h, out_w = -(-height // stride), -(-width // stride)
    else:
        out_h = (height - effective_h) // stride + 1
        out_w = (width - effective_w) // stride + 1
    shape = (1, kh, kw, out_channels) if depth_multiplier else (out_channels, kh, kw, channels)
    weights = rng.integers(-127, 128, size=shape, dtype=np.int8)
    scales = list(rng.uniform(0.002, 0.03, out_channels))
    if equal_scales:  # LiteRT's per-tensor kernel (symmetric input) with that scale
        scales = [scales[0]] * out_channels
    tensors = [
        TensorSpec("input", np.float32, size),
        TensorSpec(
            "filter",
            np.int8,
            shape,
            weights,
            scales=scales,
            zero_points=[0] * out_channels,
            axis=3 if depth_multiplier else 0,
        ),
        TensorSpec(
            "bias",
            np.float32,
            (out_channels,),
            rng.standard_normal(out_channels).astype(np.float32),
        ),
        TensorSpec("output", np.float32, (batches, out_h, out_w, out_channels)),
    ]
    fields = {
        "Padding": padding,
        "StrideH": stride,
        "StrideW": stride,
        "FusedActivationFunction": activation,
        "DilationHFactor": dilation,
        "DilationWFactor": dilation,
    }
    if depth_multiplier is not None:
        fields["DepthMultiplier"] = depth_multiplier
        op = OperatorSpec("DEPTHWISE_CONV_2D", [0, 1, 2], [3], "DepthwiseConv2DOptions", fields)
    else:
        op = OperatorSpec("CONV_2D", [0, 1, 2], [3], "Conv2DOptions", fields)
    return ModelSpec(tensors, [op], [0], [3])


def asymmetric_fully_connected(
    rng: np.random.Generator, batches: int, depth: int, units: int, activation: int
) -> ModelSpec:
    spec = hybrid_fully_connected(rng, batches, depth, units, activation)
    spec.operators[0].fields["AsymmetricQuantizeInputs"] = True
    return spec


def per_channel_fully_connected(
    rng: np.random.Generator, batches: int, depth: int, units: int, asymmetric: bool
) -> ModelSpec:
    """A hybrid FULLY_CONNECTED with a filter scale per unit."""
    spec = hybrid_fully_connected(rng, batches, depth, units, RELU6)
    filters = spec.tensors[1]
    scales = list(rng.uniform(0.002, 0.03, units))
    spec.tensors[1] = TensorSpec(
        "filter", np.int8, filters.shape, filters.data, scales, [0] * units, axis=0
    )
    spec.operators[0].fields["AsymmetricQuantizeInputs"] = asymmetric
    return spec


def per_channel_layers() -> bytes:
    rng = np.random.default_rng(21)
    return merge(
        {
            "conv_same_s2": per_channel_conv(rng, (2, 9, 7, 3), (3, 3), 5, 2, SAME, RELU6),
            "conv_valid": per_channel_conv(rng, (1, 6, 5, 4), (2, 3), 8, 1, VALID, NONE),
            "conv_dilated": per_channel_conv(rng, (1, 9, 8, 2), (3, 3), 4, 1, SAME, RELU, 2),
            "conv_1x1": per_channel_conv(rng, (1, 4, 4, 6), (1, 1), 3, 1, VALID, NONE),
            "conv_equal": per_channel_conv(
                rng, (1, 5, 6, 3), (3, 3), 4, 2, SAME, NONE, equal_scales=True
            ),
            "conv_equal_dilated": per_channel_conv(
                rng, (2, 9, 8, 3), (3, 3), 4, 1, SAME, RELU, 2, equal_scales=True
            ),
            "dw_same": per_channel_conv(rng, (2, 7, 6, 4), (3, 3), 0, 1, SAME, NONE, 1, 1),
            "dw_mult_s2": per_channel_conv(rng, (1, 8, 9, 3), (3, 3), 0, 2, SAME, RELU6, 1, 2),
            "dw_dilated": per_channel_conv(rng, (1, 9, 9, 2), (2, 2), 0, 1, VALID, NONE, 3, 1),
            "fc_asymmetric": asymmetric_fully_connected(rng, 3, 20, 7, NONE),
            "fc_asymmetric_relu": asymmetric_fully_connected(rng, 1, 33, 4, RELU),
            "fc_channels": per_channel_fully_connected(rng, 2, 24, 5, False),
            "fc_channels_asymmetric": per_channel_fully_connected(rng, 3, 17, 6, True),
        }
    )


def test_per_channel_and_asymmetric_hybrid_layers_equal_litert(tmp_path: Path) -> None:
    """Per-channel hybrid convolutions (plain, strided, 1x1, dilated; equal scales, LiteRT's
    per-tensor path, dilated too), depthwise ones (depth
    multipliers 1 and 2, dilated), asymmetric fully connected layers and per-unit ones
    (symmetric and asymmetric), with inputs of
    either sign only, mixed, at several magnitudes and all zero (LiteRT's asymmetric
    quantisation picks its zero point from the range), bit for bit under ASan/UBSan."""
    model = per_channel_layers()
    path = tmp_path / "hybrid.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path, sanitize=True)
    # every per-channel layer takes the per-channel hybrid form (its scales a table), none is
    # dequantised
    text = str(import_tflite(model, "hybrid.tflite"))
    assert len(set(re.findall(r"@(\w+_channel_scales)\b", text))) == 9
    for seed in range(6):
        arrays = inputs_of(compiled.inputs, seed)
        if seed == 4:
            arrays = [np.abs(array) + 0.25 for array in arrays]  # all positive: zero point -128
        if seed == 5:
            arrays = [-np.abs(array) for array in arrays]  # all negative: zero point 127
        ours, _ = compiled.run(arrays)
        for port, mine, theirs in zip(
            compiled.outputs, ours, litert_outputs(model, arrays), strict=True
        ):
            np.testing.assert_array_equal(mine, theirs, err_msg=f"{port.name}, seed {seed}")


def test_the_hybrid_kws_equals_litert(tmp_path: Path) -> None:
    compiled = compile_model(KWS_HYBRID, tmp_path)
    model = KWS_HYBRID.read_bytes()
    for seed in range(3):
        arrays = inputs_of(compiled.inputs, seed)
        ours, _ = compiled.run(arrays)
        (theirs,) = litert_outputs(model, arrays)
        np.testing.assert_array_equal(ours[0], theirs)


def test_dequantize_keeps_the_float_form(tmp_path: Path) -> None:
    """With the weights dequantised, the layers are float ones: TFLM runs the same model with
    its weights dequantised and agrees to 1e-5 of the largest output."""
    pytest.importorskip("tflite_micro", reason="tflite-micro is not installed")
    model = hybrid_layers()
    path = tmp_path / "hybrid.tflite"
    path.write_bytes(model)
    compiled = compile_model(path, tmp_path, options=["--hybrid=dequantize"])
    reference = tflm.interpreter(tflm.dequantize_weights(model))
    names = [port.name for port in compiled.outputs]
    for seed in range(2):
        arrays = inputs_of(compiled.inputs, seed)
        ours, _ = compiled.run(arrays)
        tflm.assert_matches(ours, tflm.run_with(reference, arrays, len(ours)), names)


def test_import_options_reject_an_unknown_hybrid_mode() -> None:
    with pytest.raises(ValueError, match="hybrid must be one of quantize, dequantize"):
        ImportOptions(hybrid="float")
