"""Our generated C beside TensorFlow Lite Micro's CMSIS-NN kernels, on the same emulated Cortex-M.

Run by hand, from the checkout with the virtualenv active (the tools of
`scripts/install_firmware_tools.sh`, and Arm's CMSIS-NN source):

    python benchmarks/cmsis_nn.py                          # the five models, Cortex-M4F
    python benchmarks/cmsis_nn.py --models kws,ad --cpu m4f,m7,m3
    python benchmarks/cmsis_nn.py --cmsis-nn PATH          # another CMSIS-NN checkout

CMSIS-NN is read from `../shared/third_party/cmsis-nn` beside the repository (Arm's source at
the commit TFLM pins) unless `--cmsis-nn` names another; the project never links it, only this
benchmark builds it.

For each MLPerf Tiny int8 model of `examples/mlperf_tiny` (kws, vww, resnet8, ad, str_ww):

1. `generate` reads the `.tflite` file (the project's reader) and writes a C program that runs
   the model layer by layer with the CMSIS-NN calls TFLM's `kernels/cmsis_nn/*.cc` make —
   `arm_convolve_wrapper_s8`, `arm_depthwise_conv_wrapper_s8`, `arm_fully_connected_s8`,
   `arm_avgpool_s8`, `arm_elementwise_add_s8`, `arm_softmax_s8`; RESHAPE aliases its input —
   with the parameters TFLM's `Prepare` functions compute (`PopulateConvolutionQuantization
   Params`, `QuantizeMultiplier`, `CalculateOpDataAdd`, `PreprocessSoftmaxScaling`, the padding
   of `ComputePaddingHeightWidth`), weights and biases as `const` arrays, the per-channel
   multipliers and shifts in RAM (TFLM keeps them in its arena), and the activations and the
   kernels' scratch buffers (sized as the `*_get_buffer_size` functions size them on a DSP
   core, and checked against them at run time) planned into one static arena by the project's
   planner with TFLM's rule (`greedy_first_fit`: size descending, first fit).
2. CMSIS-NN is compiled with the firmware harness's flags (`arm-none-eabi-gcc -O2`, the CPU's
   `-mcpu` / FPU flags, `-ffunction-sections`) into a static library, linked with the program
   and the harness of `usmp_dialect/testing/firmware.py` (same `main`, startup file, linker
   script, SysTick probe) and run under `qemu-system-arm -icount shift=0`.
3. Both programs' outputs, for two seeded inputs, must equal TFLM's (PyPI `tflite-micro`)
   byte for byte; any difference stops the benchmark with an error.
4. Our C for the same model (`usmp-opt ... -t c`, as `benchmarks/firmware.py` lowers it) runs
   on the same harness in the same run. A second build of each program wraps every layer in
   SysTick reads (`benchmarks/firmware_layers.py`'s probe) for the per-layer table.
5. Our C is built a third time with `--fuse=none` (probed, its outputs checked against TFLM's
   too): the default pipeline runs fused groups as one call, so the per-layer and per-kind
   tables take ours from this build, where every operator is its own call — the table that
   shows whether some kind of layer is worse than CMSIS-NN's ("worst layer": the largest ratio
   of one layer of the kind).

Writes `benchmarks/results/cmsis_nn.md` (or `--output`).
"""

from __future__ import annotations

import argparse
import math
import platform
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import tflite

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from firmware import MODELS, model_path  # noqa: E402
from firmware_layers import instrument, operator_macs  # noqa: E402

from usmp_dialect.frontends.tflite.reader import Graph, Operator, read_graph  # noqa: E402
from usmp_dialect.kernels.fixed_point import (  # noqa: E402
    activation_range,
    float32,
    quantize_multiplier,
)
from usmp_dialect.kernels.softmax import softmax_parameters  # noqa: E402
from usmp_dialect.planning import Buffer, Pool, Problem, solve  # noqa: E402
from usmp_dialect.testing import firmware, tflm  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "cmsis_nn.md"
PREFIX = "cmsisnn"
ARENA_ALIGNMENT = 16
"""TFLM's arena alignment (`MicroArenaBufferAlignment`)."""
DATA_SEEDS = (1, 2)
ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6"}
SAME, VALID = 0, 1


class UnsupportedModel(Exception):
    """The model has an operator or a form this generator does not mirror."""


def cmsis_nn_candidates() -> list[Path]:
    """Where the CMSIS-NN source is looked for: `../shared/third_party/cmsis-nn` beside the
    checkout (a worktree one level deeper finds it one level further up)."""
    return [base / "shared" / "third_party" / "cmsis-nn" for base in ROOT.parents[:2]]


def default_cmsis_nn() -> Path | None:
    return next((path for path in cmsis_nn_candidates() if (path / "Include").is_dir()), None)


# ---- the C program ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    """One operator of the model as the CMSIS-NN program runs it."""

    name: str
    """`<opcode>_<index>`, the name our generated C gives the same operator's function."""
    opcode: str
    kernel: str
    """The CMSIS-NN function called ("-" for a reshape)."""
    output_shape: tuple[int, ...]
    kind: str
    """What the layer is, for the per-kind summary (e.g. "conv 1x1", "depthwise 3x3")."""


@dataclass(frozen=True)
class Program:
    """The generated C program of one model and what the benchmark needs to know about it."""

    source: str
    header: str
    input_bytes: tuple[int, ...]
    output_bytes: tuple[int, ...]
    layers: tuple[Layer, ...]
    arena_bytes: int
    scratch_bytes: int
    """The largest scratch buffer of a layer (included in the arena)."""

    def firmware_model(self, name: str) -> firmware.FirmwareModel:
        return firmware.FirmwareModel(
            name,
            self.source,
            self.header,
            tuple(firmware.Tensor(f"input{i}", b) for i, b in enumerate(self.input_bytes)),
            tuple(firmware.Tensor(f"output{i}", b) for i, b in enumerate(self.output_bytes)),
            PREFIX,
        )


def _c_int(value: int) -> str:
    return "(-2147483647 - 1)" if value == -(2**31) else str(value)


def _c_array(qualifiers: str, element: str, name: str, values: np.ndarray) -> list[str]:
    flat = [_c_int(int(v)) for v in np.asarray(values).reshape(-1)]
    lines = [f"{qualifiers} {element} {name}[{len(flat)}] = {{"]
    for start in range(0, len(flat), 24):
        lines.append("  " + ", ".join(flat[start : start + 24]) + ",")
    lines.append("};")
    return lines


def _dims(n: int, h: int, w: int, c: int) -> str:
    return f"{{.n = {n}, .h = {h}, .w = {w}, .c = {c}}}"


def _tile(w: int, h: int) -> str:
    return f"{{.w = {w}, .h = {h}}}"


def _padding(same: bool, size: int, out: int, kernel: int, stride: int, dilation: int) -> int:
    """TFLite's `ComputePaddingHeightWidth` for one dimension: the padding before the input."""
    if not same:
        return 0
    effective = (kernel - 1) * dilation + 1
    return max(0, ((out - 1) * stride + effective - size) // 2)


def _aligned(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


@dataclass(frozen=True)
class _Window:
    """What CMSIS-NN's convolution parameters are made of, read off a TFLite operator."""

    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    kernel: tuple[int, int]
    """(height, width)"""
    stride: tuple[int, int]
    """(w, h), like dilation and padding: the order of `cmsis_nn_tile`"""
    dilation: tuple[int, int]
    padding: tuple[int, int]
    activation: tuple[int, int]
    input_zp: int
    output_zp: int


@dataclass
class _Emitted:
    """The C of one layer: file-scope declarations, its function, its Prepare checks."""

    declarations: list[str] = field(default_factory=list[str])
    function: list[str] = field(default_factory=list[str])
    checks: list[str] = field(default_factory=list[str])


class _Generator:
    """Writes the CMSIS-NN calls of one graph (TFLM's Prepare + Eval for each operator)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def scale_zp(self, index: int) -> tuple[float, int]:
        tensor = self.graph.tensors[index]
        if tensor.quantization is None or tensor.dtype != np.int8:
            raise UnsupportedModel(f"{tensor.describe()} is not int8 with quantisation")
        return tensor.quantization.scale, tensor.quantization.zero_point

    def activation(self, code: int, output: int) -> tuple[int, int]:
        if code not in ACTIVATIONS:
            raise UnsupportedModel(f"fused activation {code}")
        scale, zero_point = self.scale_zp(output)
        return activation_range(ACTIVATIONS[code], scale, zero_point)

    def constant(self, index: int) -> np.ndarray:
        data = self.graph.tensors[index].data
        if data is None:
            raise UnsupportedModel(f"{self.graph.tensors[index].describe()} is not constant")
        return data

    def per_channel(self, op: Operator, channels: int) -> tuple[np.ndarray, np.ndarray]:
        """`PopulateConvolutionQuantizationParams`: input * filter / output scale in double."""
        input_scale, _ = self.scale_zp(op.inputs[0])
        output_scale, _ = self.scale_zp(op.outputs[0])
        filters = self.graph.tensors[op.inputs[1]].quantization
        if filters is None or len(filters.scales) not in (1, channels):
            raise UnsupportedModel(f"operator {op.index}: filter scales do not fit the channels")
        scales = [float(filters.scales[min(i, len(filters.scales) - 1)]) for i in range(channels)]
        pairs = [quantize_multiplier(input_scale * s / output_scale) for s in scales]
        return np.array([m for m, _ in pairs]), np.array([s for _, s in pairs])

    def quant_arrays(self, name: str, op: Operator, channels: int) -> list[str]:
        multipliers, shifts = self.per_channel(op, channels)
        return [
            *_c_array("static", "int32_t", f"{name}_multiplier", multipliers),
            *_c_array("static", "int32_t", f"{name}_shift", shifts),
            f"static const cmsis_nn_per_channel_quant_params {name}_quant = "
            f"{{.multiplier = {name}_multiplier, .shift = {name}_shift}};",
        ]

    def weights(self, name: str, op: Operator) -> list[str]:
        lines = _c_array("static const", "int8_t", f"{name}_filter", self.constant(op.inputs[1]))
        if len(op.inputs) > 2 and op.inputs[2] >= 0:
            lines += _c_array(
                "static const", "int32_t", f"{name}_bias", self.constant(op.inputs[2])
            )
        return lines

    def bias(self, name: str, op: Operator) -> str:
        return f"{name}_bias" if len(op.inputs) > 2 and op.inputs[2] >= 0 else "NULL"

    @staticmethod
    def context(name: str, scratch: int, offset: int | None) -> str:
        buffer = "NULL" if offset is None else f"arena + {offset}"
        return (
            f"static const cmsis_nn_context {name}_context = "
            f"{{.buf = {buffer}, .size = {scratch}}};"
        )

    # Each emitter returns (C, scratch bytes it needs); the scratch offset is planned later,
    # so the context line is a placeholder `@CONTEXT@` replaced once the arena is planned.

    def window(
        self, op: Operator, options: tflite.Conv2DOptions | tflite.DepthwiseConv2DOptions
    ) -> _Window:
        """The shapes, stride, dilation, TFLite's padding, activation bounds and zero points of
        a convolution (plain or depthwise: their options have the same fields)."""
        input_shape = tuple(self.graph.tensors[op.inputs[0]].shape)
        output_shape = tuple(self.graph.tensors[op.outputs[0]].shape)
        _, k_h, k_w, _ = self.graph.tensors[op.inputs[1]].shape
        stride = (options.StrideW(), options.StrideH())
        dilation = (options.DilationWFactor(), options.DilationHFactor())
        same = options.Padding() == SAME
        _, in_h, in_w, _ = input_shape
        _, out_h, out_w, _ = output_shape
        padding = (
            _padding(same, in_w, out_w, k_w, stride[0], dilation[0]),
            _padding(same, in_h, out_h, k_h, stride[1], dilation[1]),
        )
        return _Window(
            input_shape,
            output_shape,
            (k_h, k_w),
            stride,
            dilation,
            padding,
            self.activation(options.FusedActivationFunction(), op.outputs[0]),
            self.scale_zp(op.inputs[0])[1],
            self.scale_zp(op.outputs[0])[1],
        )

    def conv(self, name: str, op: Operator) -> tuple[_Emitted, int, str, str]:
        window = self.window(op, op.option(tflite.Conv2DOptions))
        _, in_h, in_w, in_c = window.input_shape
        out_n, out_h, out_w, out_c = window.output_shape
        k_h, k_w = window.kernel
        stride, dilation, pad_w, pad_h = window.stride, window.dilation, *window.padding
        low, high = window.activation
        input_zp, output_zp = window.input_zp, window.output_zp
        one_by_one = pad_w == pad_h == 0 and k_w == k_h == 1 and dilation == (1, 1)
        # arm_convolve_wrapper_s8_get_buffer_size_dsp (gcc: the 1x1 fast path needs none).
        rhs_cols = k_w * k_h * in_c
        scratch = 0 if one_by_one else 2 * _aligned(rhs_cols, 4) * 2
        emitted = _Emitted()
        emitted.declarations += self.weights(name, op)
        emitted.declarations += self.quant_arrays(name, op, out_c)
        emitted.declarations += [
            f"static const cmsis_nn_conv_params {name}_params = {{.input_offset = {-input_zp}, "
            f".output_offset = {output_zp}, .stride = {_tile(*stride)}, .padding = "
            f"{_tile(pad_w, pad_h)}, .dilation = {_tile(*dilation)}, .activation = "
            f"{{.min = {low}, .max = {high}}}}};",
            f"static const cmsis_nn_dims {name}_input_dims = {_dims(out_n, in_h, in_w, in_c)};",
            f"static const cmsis_nn_dims {name}_filter_dims = {_dims(out_c, k_h, k_w, in_c)};",
            f"static const cmsis_nn_dims {name}_bias_dims = {_dims(1, 1, 1, out_c)};",
            f"static const cmsis_nn_dims {name}_output_dims = {_dims(out_n, out_h, out_w, out_c)};",
            "@CONTEXT@",
        ]
        emitted.function = [
            f"static void {name}(const int8_t* input, int8_t* output) {{",
            f"  if (arm_convolve_wrapper_s8(&{name}_context, &{name}_params, &{name}_quant, "
            f"&{name}_input_dims, input, &{name}_filter_dims, {name}_filter, &{name}_bias_dims, "
            f"{self.bias(name, op)}, &{name}_output_dims, output) != ARM_CMSIS_NN_SUCCESS)",
            "    run_status = 1;",
            "}",
        ]
        emitted.checks = [
            f"  if (arm_convolve_wrapper_s8_get_buffer_size(&{name}_params, &{name}_input_dims, "
            f"&{name}_filter_dims, &{name}_output_dims) > {name}_context.size) return 1;"
        ]
        if one_by_one:
            kind = "conv 1x1 (pointwise)"
        elif op.inputs[0] in self.graph.inputs:
            kind = f"conv {k_h}x{k_w} (first layer, {in_c} input channel{'s' * (in_c > 1)})"
        else:
            kind = f"conv {k_h}x{k_w}"
        return emitted, scratch, "arm_convolve_wrapper_s8", kind

    def depthwise(self, name: str, op: Operator) -> tuple[_Emitted, int, str, str]:
        options = op.option(tflite.DepthwiseConv2DOptions)
        window = self.window(op, options)
        _, in_h, in_w, in_c = window.input_shape
        out_n, out_h, out_w, out_c = window.output_shape
        k_h, k_w = window.kernel
        stride, dilation, pad_w, pad_h = window.stride, window.dilation, *window.padding
        if options.DepthMultiplier() * in_c != out_c:
            raise UnsupportedModel(f"operator {op.index}: depth multiplier does not fit")
        low, high = window.activation
        input_zp, output_zp = window.input_zp, window.output_zp
        # arm_depthwise_conv_wrapper_s8_get_buffer_size_dsp.
        scratch = 0
        if in_c == out_c and out_n == 1 and dilation == (1, 1):
            three_by_three = k_w == k_h == 3 and pad_w <= 1 and pad_h <= 1
            scratch = 0 if three_by_three else in_c * k_w * k_h * 2
        emitted = _Emitted()
        emitted.declarations += self.weights(name, op)
        emitted.declarations += self.quant_arrays(name, op, out_c)
        emitted.declarations += [
            f"static const cmsis_nn_dw_conv_params {name}_params = {{.input_offset = "
            f"{-input_zp}, .output_offset = {output_zp}, .ch_mult = "
            f"{options.DepthMultiplier()}, .stride = {_tile(*stride)}, .padding = "
            f"{_tile(pad_w, pad_h)}, .dilation = {_tile(*dilation)}, .activation = "
            f"{{.min = {low}, .max = {high}}}}};",
            f"static const cmsis_nn_dims {name}_input_dims = {_dims(out_n, in_h, in_w, in_c)};",
            f"static const cmsis_nn_dims {name}_filter_dims = {_dims(1, k_h, k_w, out_c)};",
            f"static const cmsis_nn_dims {name}_bias_dims = {_dims(1, 1, 1, out_c)};",
            f"static const cmsis_nn_dims {name}_output_dims = {_dims(out_n, out_h, out_w, out_c)};",
            "@CONTEXT@",
        ]
        emitted.function = [
            f"static void {name}(const int8_t* input, int8_t* output) {{",
            f"  if (arm_depthwise_conv_wrapper_s8(&{name}_context, &{name}_params, "
            f"&{name}_quant, &{name}_input_dims, input, &{name}_filter_dims, {name}_filter, "
            f"&{name}_bias_dims, {self.bias(name, op)}, &{name}_output_dims, output) != "
            "ARM_CMSIS_NN_SUCCESS)",
            "    run_status = 1;",
            "}",
        ]
        emitted.checks = [
            f"  if (arm_depthwise_conv_wrapper_s8_get_buffer_size(&{name}_params, "
            f"&{name}_input_dims, &{name}_filter_dims, &{name}_output_dims) > "
            f"{name}_context.size) return 1;"
        ]
        return emitted, scratch, "arm_depthwise_conv_wrapper_s8", f"depthwise {k_h}x{k_w}"

    def fully_connected(self, name: str, op: Operator) -> tuple[_Emitted, int, str, str]:
        options = op.option(tflite.FullyConnectedOptions)
        output_shape = self.graph.tensors[op.outputs[0]].shape
        out_c, accum = self.graph.tensors[op.inputs[1]].shape
        if len(output_shape) != 2:
            raise UnsupportedModel(f"operator {op.index}: fully connected output of rank > 2")
        batches = output_shape[0]
        filters = self.graph.tensors[op.inputs[1]].quantization
        if filters is None or len(filters.scales) != 1:
            raise UnsupportedModel(f"operator {op.index}: per-channel fully connected weights")
        input_scale, input_zp = self.scale_zp(op.inputs[0])
        output_scale, output_zp = self.scale_zp(op.outputs[0])
        # GetQuantizedConvolutionMultipler: the scale product in float, then double.
        multiplier, shift = quantize_multiplier(float32(input_scale * filters.scale) / output_scale)
        low, high = self.activation(options.FusedActivationFunction(), op.outputs[0])
        emitted = _Emitted()
        emitted.declarations += self.weights(name, op)
        emitted.declarations += [
            f"static const cmsis_nn_fc_params {name}_params = {{.input_offset = {-input_zp}, "
            f".filter_offset = 0, .output_offset = {output_zp}, .activation = "
            f"{{.min = {low}, .max = {high}}}}};",
            f"static const cmsis_nn_per_tensor_quant_params {name}_quant = "
            f"{{.multiplier = {multiplier}, .shift = {shift}}};",
            f"static const cmsis_nn_dims {name}_input_dims = {_dims(batches, 1, 1, accum)};",
            f"static const cmsis_nn_dims {name}_filter_dims = {_dims(accum, 1, 1, out_c)};",
            f"static const cmsis_nn_dims {name}_bias_dims = {_dims(1, 1, 1, out_c)};",
            f"static const cmsis_nn_dims {name}_output_dims = {_dims(batches, 1, 1, out_c)};",
            "@CONTEXT@",
        ]
        emitted.function = [
            f"static void {name}(const int8_t* input, int8_t* output) {{",
            f"  if (arm_fully_connected_s8(&{name}_context, &{name}_params, &{name}_quant, "
            f"&{name}_input_dims, input, &{name}_filter_dims, {name}_filter, &{name}_bias_dims, "
            f"{self.bias(name, op)}, &{name}_output_dims, output) != ARM_CMSIS_NN_SUCCESS)",
            "    run_status = 1;",
            "}",
        ]
        emitted.checks = [
            f"  if (arm_fully_connected_s8_get_buffer_size(&{name}_filter_dims) > "
            f"{name}_context.size) return 1;"
        ]
        return emitted, 0, "arm_fully_connected_s8", "fully connected"

    def average_pool(self, name: str, op: Operator) -> tuple[_Emitted, int, str, str]:
        options = op.option(tflite.Pool2DOptions)
        _, in_h, in_w, in_c = self.graph.tensors[op.inputs[0]].shape
        out_n, out_h, out_w, out_c = self.graph.tensors[op.outputs[0]].shape
        k_h, k_w = options.FilterHeight(), options.FilterWidth()
        stride = (options.StrideW(), options.StrideH())
        same = options.Padding() == SAME
        pad_w = _padding(same, in_w, out_w, k_w, stride[0], 1)
        pad_h = _padding(same, in_h, out_h, k_h, stride[1], 1)
        low, high = self.activation(options.FusedActivationFunction(), op.outputs[0])
        if self.scale_zp(op.inputs[0]) != self.scale_zp(op.outputs[0]):
            raise UnsupportedModel(f"operator {op.index}: average pool rescales")
        emitted = _Emitted()
        emitted.declarations += [
            f"static const cmsis_nn_pool_params {name}_params = {{.stride = {_tile(*stride)}, "
            f".padding = {_tile(pad_w, pad_h)}, .activation = {{.min = {low}, .max = {high}}}}};",
            f"static const cmsis_nn_dims {name}_input_dims = {_dims(1, in_h, in_w, in_c)};",
            f"static const cmsis_nn_dims {name}_filter_dims = {_dims(1, k_h, k_w, 1)};",
            f"static const cmsis_nn_dims {name}_output_dims = {_dims(1, out_h, out_w, out_c)};",
            "@CONTEXT@",
        ]
        if out_n != 1:
            raise UnsupportedModel(f"operator {op.index}: batched average pool")
        emitted.function = [
            f"static void {name}(const int8_t* input, int8_t* output) {{",
            f"  if (arm_avgpool_s8(&{name}_context, &{name}_params, &{name}_input_dims, input, "
            f"&{name}_filter_dims, &{name}_output_dims, output) != ARM_CMSIS_NN_SUCCESS)",
            "    run_status = 1;",
            "}",
        ]
        emitted.checks = [
            f"  if (arm_avgpool_s8_get_buffer_size({out_w}, {in_c}) > {name}_context.size) "
            "return 1;"
        ]
        # arm_avgpool_s8_get_buffer_size_dsp: one int32 sum per channel.
        return emitted, in_c * 4, "arm_avgpool_s8", "average pool"

    def add(self, name: str, op: Operator) -> tuple[_Emitted, int, str, str]:
        options = op.option(tflite.AddOptions)
        shapes = [self.graph.tensors[i].shape for i in (*op.inputs, *op.outputs)]
        if len(set(shapes)) != 1:
            raise UnsupportedModel(f"operator {op.index}: broadcasting add")
        (first, first_zp), (second, second_zp) = (self.scale_zp(i) for i in op.inputs)
        output, output_zp = self.scale_zp(op.outputs[0])
        # CalculateOpDataAdd (int8): in double precision, left shift 20.
        left_shift = 20
        twice_max = 2 * max(first, second)
        m1, s1 = quantize_multiplier(first / twice_max)
        m2, s2 = quantize_multiplier(second / twice_max)
        mo, so = quantize_multiplier(twice_max / ((1 << left_shift) * output))
        low, high = self.activation(options.FusedActivationFunction(), op.outputs[0])
        size = int(np.prod(shapes[0]))
        emitted = _Emitted()
        emitted.function = [
            f"static void {name}(const int8_t* input1, const int8_t* input2, int8_t* output) {{",
            f"  if (arm_elementwise_add_s8(input1, input2, {-first_zp}, {m1}, {s1}, "
            f"{-second_zp}, {m2}, {s2}, {left_shift}, output, {output_zp}, {mo}, {so}, "
            f"{low}, {high}, {size}) != ARM_CMSIS_NN_SUCCESS)",
            "    run_status = 1;",
            "}",
        ]
        return emitted, 0, "arm_elementwise_add_s8", "add"

    def softmax(self, name: str, op: Operator) -> tuple[_Emitted, int, str, str]:
        options = op.option(tflite.SoftmaxOptions)
        shape = self.graph.tensors[op.inputs[0]].shape
        input_scale, _ = self.scale_zp(op.inputs[0])
        if self.scale_zp(op.outputs[0]) != (float32(1.0 / 256), -128):
            raise UnsupportedModel(f"operator {op.index}: softmax output is not 1/256, -128")
        multiplier, left_shift, diff_min = softmax_parameters(float32(options.Beta()), input_scale)
        rows, row_size = int(np.prod(shape[:-1])), shape[-1]
        emitted = _Emitted()
        emitted.function = [
            f"static void {name}(const int8_t* input, int8_t* output) {{",
            f"  arm_softmax_s8(input, {rows}, {row_size}, {multiplier}, {left_shift}, "
            f"{diff_min}, output);",
            "}",
        ]
        return emitted, 0, "arm_softmax_s8", "softmax"


def _storage_classes(graph: Graph) -> dict[int, int]:
    """Every tensor's storage root: a RESHAPE's output shares its input's bytes."""
    root: dict[int, int] = {}

    def find(tensor: int) -> int:
        while root.get(tensor, tensor) != tensor:
            tensor = root[tensor]
        return tensor

    for op in graph.operators:
        if op.opcode == "RESHAPE":
            root[find(op.outputs[0])] = find(op.inputs[0])
    return {t.index: find(t.index) for t in graph.tensors}


def generate(graph: Graph) -> Program:
    """The C program that runs `graph` with TFLM's CMSIS-NN calls (module docstring)."""
    for index in (*graph.inputs, *graph.outputs):
        if graph.tensors[index].dtype != np.int8:
            raise UnsupportedModel(f"{graph.tensors[index].describe()} is not int8")
    generator = _Generator(graph)
    emitters = {
        "CONV_2D": generator.conv,
        "DEPTHWISE_CONV_2D": generator.depthwise,
        "FULLY_CONNECTED": generator.fully_connected,
        "AVERAGE_POOL_2D": generator.average_pool,
        "ADD": generator.add,
        "SOFTMAX": generator.softmax,
    }
    roots = _storage_classes(graph)
    io_names: dict[int, str] = {}
    for position, index in enumerate(graph.inputs):
        io_names[roots[index]] = f"input{position}"
    for position, index in enumerate(graph.outputs):
        if roots[index] in io_names:
            raise UnsupportedModel("an output aliases an input")
        io_names[roots[index]] = f"output{position}"

    layers: list[Layer] = []
    emitted_layers: list[tuple[str, Operator, _Emitted, int]] = []
    for op in graph.operators:
        name = f"{op.opcode.lower()}_{op.index}"
        shape = graph.tensors[op.outputs[0]].shape
        if op.opcode == "RESHAPE":
            if graph.tensors[op.inputs[0]].size_bytes != graph.tensors[op.outputs[0]].size_bytes:
                raise UnsupportedModel(f"operator {op.index}: reshape changes the size")
            layers.append(Layer(name, op.opcode, "-", shape, "reshape"))
            continue
        if op.opcode not in emitters:
            raise UnsupportedModel(f"operator {op.index}: {op.opcode} is not mirrored")
        emitted, scratch, kernel, kind = emitters[op.opcode](name, op)
        layers.append(Layer(name, op.opcode, kernel, shape, kind))
        emitted_layers.append((name, op, emitted, scratch))

    # The arena: activations live from their producer to their last reader, scratch buffers
    # during their layer; planned like TFLM's GreedyMemoryPlanner.
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for step, (_, op, _, _) in enumerate(emitted_layers):
        for tensor in op.inputs:
            if tensor >= 0 and graph.tensors[tensor].data is None:
                last[roots[tensor]] = step
        for tensor in op.outputs:
            first.setdefault(roots[tensor], step)
            last.setdefault(roots[tensor], step)
    planned = sorted(root for root in first if root not in io_names)
    buffers = [
        Buffer(
            f"t{root}",
            graph.tensors[root].size_bytes,
            ARENA_ALIGNMENT,
            ((first[root], last[root] + 1),),
        )
        for root in planned
    ]
    scratch_steps = [step for step, item in enumerate(emitted_layers) if item[3] > 0]
    buffers += [
        Buffer(f"scratch{step}", emitted_layers[step][3], ARENA_ALIGNMENT, ((step, step + 1),))
        for step in scratch_steps
    ]
    if buffers:
        result = solve(
            Problem(tuple(buffers), (Pool("arena", alignment=ARENA_ALIGNMENT),)), "greedy_first_fit"
        )
        offsets = result.plan.offsets
        arena_bytes = _aligned(result.pool_sizes[0], ARENA_ALIGNMENT)
    else:
        offsets, arena_bytes = (), 0
    location = {root: f"arena + {offsets[i]}" for i, root in enumerate(planned)}
    location.update(io_names)
    scratch_offset = {step: offsets[len(planned) + i] for i, step in enumerate(scratch_steps)}

    upper = PREFIX.upper()
    header = "\n".join(
        [
            f"/* {PREFIX}.h: the model run by TFLM's CMSIS-NN calls (benchmarks/cmsis_nn.py). */",
            f"#ifndef {upper}_H_",
            f"#define {upper}_H_",
            "#include <stdint.h>",
            f"struct {PREFIX}_inputs {{",
            *(f"  void* input{i};" for i in range(len(graph.inputs))),
            "};",
            f"struct {PREFIX}_outputs {{",
            *(f"  void* output{i};" for i in range(len(graph.outputs))),
            "};",
            f"int32_t {PREFIX}_run(struct {PREFIX}_inputs* inputs, "
            f"struct {PREFIX}_outputs* outputs);",
            f"#endif /* {upper}_H_ */",
            "",
        ]
    )
    lines = [
        f"/* {Path(graph.path).name}: run layer by layer with the CMSIS-NN calls of TFLM's",
        "   kernels/cmsis_nn (generated by benchmarks/cmsis_nn.py). */",
        "#include <stddef.h>",
        "#include <stdint.h>",
        '#include "arm_nnfunctions.h"',
        f'#include "{PREFIX}.h"',
        "",
        f"static _Alignas({ARENA_ALIGNMENT}) int8_t arena[{max(arena_bytes, 1)}];",
        "static int32_t run_status;",
        "",
    ]
    checks: list[str] = []
    calls: list[str] = []
    for step, (name, op, emitted, scratch) in enumerate(emitted_layers):
        offset = scratch_offset.get(step)
        context = _Generator.context(name, scratch, offset)
        lines += [line if line != "@CONTEXT@" else context for line in emitted.declarations]
        lines += emitted.function
        lines.append("")
        checks += emitted.checks
        arguments = [
            location[roots[t]] for t in op.inputs if t >= 0 and graph.tensors[t].data is None
        ]
        arguments += [location[roots[t]] for t in op.outputs]
        calls.append(f"  {name}({', '.join(arguments)});")
    lines += [
        "/* TFLM's Prepare: each scratch buffer is as large as CMSIS-NN asks. */",
        "static int32_t prepare(void) {",
        *checks,
        "  return 0;",
        "}",
        "",
        f"int32_t {PREFIX}_run(struct {PREFIX}_inputs* inputs, "
        f"struct {PREFIX}_outputs* outputs) {{",
        *(
            f"  const int8_t* input{i} = (const int8_t*)inputs->input{i};"
            for i in range(len(graph.inputs))
        ),
        *(f"  int8_t* output{i} = (int8_t*)outputs->output{i};" for i in range(len(graph.outputs))),
        "  run_status = prepare();",
        *calls,
        "  return run_status;",
        "}",
        "",
    ]
    largest_scratch = max((item[3] for item in emitted_layers), default=0)
    return Program(
        "\n".join(lines),
        header,
        tuple(graph.tensors[i].size_bytes for i in graph.inputs),
        tuple(graph.tensors[i].size_bytes for i in graph.outputs),
        tuple(layers),
        arena_bytes,
        largest_scratch,
    )


# ---- builds and runs -------------------------------------------------------------------------


def cmsis_sources(cmsis_nn: Path) -> list[Path]:
    """CMSIS-NN's integer kernels (the float ones need headers TFLM does not use)."""
    return sorted(
        path
        for path in (cmsis_nn / "Source").glob("*/*.c")
        if not re.search(r"_f16|_f32|_flt", path.name)
    )


def build_library(
    cmsis_nn: Path,
    directory: Path,
    cpu: firmware.Cpu | None,
    sources: Sequence[Path] | None = None,
) -> Path:
    """`libcmsisnn.a` of `sources` (default: every integer kernel) for `cpu` (the firmware
    harness's compiler and flags), or for the host when `cpu` is None (CMSIS-NN's plain C
    paths)."""
    directory.mkdir(parents=True, exist_ok=True)
    if cpu is None:
        compiler, archiver, flags = "gcc", "ar", ["-O2"]
    else:
        compiler, archiver = firmware.ARM_GCC, "arm-none-eabi-ar"
        flags = [*cpu.flags, "-O2", "-ffunction-sections", "-fdata-sections"]

    def compile_one(source: Path) -> Path:
        obj = directory / f"{source.stem}.o"
        _check(
            [compiler, *flags, "-I", str(cmsis_nn / "Include"), "-c", str(source), "-o", str(obj)],
            f"{compiler} {source.name}",
        )
        return obj

    with ThreadPoolExecutor(max_workers=2) as pool:
        objects = list(pool.map(compile_one, sources or cmsis_sources(cmsis_nn)))
    library = directory / "libcmsisnn.a"
    library.unlink(missing_ok=True)
    _check([archiver, "rcs", str(library), *map(str, objects)], f"{archiver} libcmsisnn.a")
    return library


def _check(command: Sequence[str], what: str) -> str:
    done = subprocess.run(list(command), capture_output=True, text=True, check=False)
    if done.returncode:
        raise firmware.FirmwareError(f"{what}: exit code {done.returncode}\n{done.stderr[-2000:]}")
    return done.stdout


def layer_instructions(output: str) -> dict[str, int]:
    """The `# L <name> <instructions>` lines of the first run (the probed build)."""
    rows: dict[str, int] = {}
    for line in output.splitlines():
        if line.startswith("run "):
            break
        if line.startswith("# L "):
            _, _, name, count = line.split()
            rows[name] = int(count)
    return rows


def code_bytes(map_file: Path) -> dict[str, int]:
    """`.text` bytes the linker kept, per owner: "kernels" (libcmsisnn.a), "model" (model.o)."""
    text = map_file.read_text()
    text = text[text.index("Linker script and memory map") :]
    sizes = {"kernels": 0, "model": 0}
    pattern = r"^ (\.text\S*)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)$"
    for match in re.finditer(pattern, text, re.M):
        owner = match.group(3)
        if "libcmsisnn.a(" in owner:
            sizes["kernels"] += int(match.group(2), 16)
        elif owner.endswith("model.o"):
            sizes["model"] += int(match.group(2), 16)
    return sizes


@dataclass(frozen=True)
class Run:
    """One program (CMSIS-NN's or ours) of one model on one CPU."""

    instructions: int
    stack_bytes: int
    text_bytes: int
    """Code kept in the image: the kernels and the model (not libc, harness, startup)."""
    rodata_bytes: int
    ram_bytes: int
    """The model object's `.data` + `.bss`: arena or workspace pool, multipliers."""
    layers: dict[str, int]
    outputs: list[list[bytes]]


def run_program(
    model: firmware.FirmwareModel,
    directory: Path,
    cpu: firmware.Cpu,
    flags: Sequence[str] = (),
    libraries: Sequence[Path] = (),
) -> Run:
    """Builds and runs `model` twice on `cpu`: as is (totals, outputs) and with every layer call
    wrapped in SysTick reads (per layer)."""
    built = firmware.build_firmware(
        model,
        directory / "whole",
        cpu,
        data_seeds=DATA_SEEDS,
        extra_flags=flags,
        libraries=libraries,
    )
    output = firmware.run_firmware(built)
    measured = firmware.measurement(output)
    probed_model = replace(model, source=instrument(model.source, model.prefix))
    probed = firmware.build_firmware(
        probed_model, directory / "probed", cpu, extra_flags=flags, libraries=libraries
    )
    sizes = firmware.section_sizes(built.model_object)
    code = code_bytes(built.elf.parent / "firmware.map")
    return Run(
        measured.instructions,
        measured.stack_bytes,
        code["kernels"] + code["model"],
        sizes[".rodata"],
        sizes[".data"] + sizes[".bss"],
        layer_instructions(firmware.run_firmware(probed)),
        firmware.printed_outputs(output, len(model.outputs)),
    )


def run_layers(
    model: firmware.FirmwareModel, directory: Path, cpu: firmware.Cpu
) -> tuple[dict[str, int], list[list[bytes]]]:
    """Only the probed build of `model` on `cpu`: per layer instructions and the outputs of
    the first data seed (for the unfused program, whose every operator is its own call)."""
    probed_model = replace(model, source=instrument(model.source, model.prefix))
    probed = firmware.build_firmware(probed_model, directory, cpu)
    output = firmware.run_firmware(probed)
    return layer_instructions(output), firmware.printed_outputs(output, len(model.outputs))


def check_outputs(what: str, printed: list[list[bytes]], expected: list[list[bytes]]) -> None:
    """Fails loudly unless `printed` equals TFLM's outputs byte for byte."""
    if len(printed) != len(expected):
        raise firmware.FirmwareError(f"{what}: {len(printed)} runs printed, {len(expected)} run")
    for run, (mine, theirs) in enumerate(zip(printed, expected, strict=True)):
        for position, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            if a != b:
                differ = sum(x != y for x, y in zip(a, b, strict=False))
                raise firmware.FirmwareError(
                    f"{what}: output {position} of run {run} differs from TFLM in {differ} of "
                    f"{len(b)} bytes\n  ours {a.hex()[:96]}\n  TFLM {b.hex()[:96]}"
                )


def tflm_outputs(path: Path, graph: Graph, program: Program) -> list[list[bytes]]:
    """TFLM's outputs on the harness's inputs for each of DATA_SEEDS."""
    interpreter = tflm.interpreter(path.read_bytes())
    runs: list[list[bytes]] = []
    for seed in DATA_SEEDS:
        inputs = [
            np.frombuffer(raw, dtype=np.int8).reshape(graph.tensors[index].shape)
            for raw, index in zip(
                firmware.harness_inputs(program.firmware_model(path.stem), seed),
                graph.inputs,
                strict=True,
            )
        ]
        outputs = tflm.run_with(interpreter, inputs, len(graph.outputs))
        runs.append([np.asarray(o, dtype=np.int8).tobytes() for o in outputs])
    return runs


@dataclass(frozen=True)
class ModelResult:
    model: str
    cpu: str
    macs: int
    layer_macs: dict[str, int]
    layers: tuple[Layer, ...]
    cmsis: Run
    ours: Run
    """The default pipeline's program (fused groups are one call each)."""
    unfused: dict[str, int]
    """Per layer instructions of our program built with `--fuse=none` (every operator its own
    call, the same kernels as inside the fused groups)."""


UNFUSED_FLAGS = ("--fuse=none",)


def measure(
    name: str, cpus: Sequence[firmware.Cpu], libraries: dict[str, Path], directory: Path
) -> list[ModelResult]:
    """Both programs of one model on every CPU, checked against TFLM."""
    path = model_path(name)
    graph = read_graph(path.read_bytes(), str(path))
    program = generate(graph)
    expected = tflm_outputs(path, graph, program)
    cmsis_model = program.firmware_model(name)
    ours_model = firmware.model_from_file(path)
    unfused_model = firmware.model_from_file(path, flags=UNFUSED_FLAGS)
    layer_macs = dict(operator_macs(name))
    results: list[ModelResult] = []
    for cpu in cpus:
        flags = ("-isystem", str(libraries["include"]))
        cmsis = run_program(
            cmsis_model, directory / name / cpu.name / "cmsis", cpu, flags, [libraries[cpu.name]]
        )
        check_outputs(f"{name} CMSIS-NN on {cpu.name}", cmsis.outputs, expected)
        ours = run_program(ours_model, directory / name / cpu.name / "ours", cpu)
        check_outputs(f"{name} ours on {cpu.name}", ours.outputs, expected)
        unfused, unfused_outputs = run_layers(
            unfused_model, directory / name / cpu.name / "unfused", cpu
        )
        check_outputs(f"{name} ours unfused on {cpu.name}", unfused_outputs, expected[:1])
        macs = sum(layer_macs.values())
        results.append(
            ModelResult(name, cpu.name, macs, layer_macs, program.layers, cmsis, ours, unfused)
        )
        print(
            f"{name} {cpu.name}: CMSIS-NN {cmsis.instructions:,}, ours {ours.instructions:,} "
            f"({ours.instructions / cmsis.instructions:.2f}); both equal TFLM",
            flush=True,
        )
    return results


# ---- the report ------------------------------------------------------------------------------


def _tool_version(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.stdout.splitlines()[0] if done.stdout else "?"


def _ratio(ours: int, theirs: int) -> str:
    return f"{ours / theirs:.2f}" if theirs else "-"


def _per_mac(instructions: int, macs: int) -> str:
    return f"{instructions / macs:.2f}" if macs else "-"


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


@dataclass(frozen=True)
class KindRow:
    """The layers of one kind in one model: sums of the per-layer figures (ours: the unfused
    build, where every operator is measured on its own)."""

    layers: int
    macs: int
    cmsis: int
    ours: int
    worst: float | None
    """The largest ours / CMSIS-NN of a single layer of the kind (None: no measured layer)."""


def kind_rows(result: ModelResult) -> dict[str, KindRow]:
    """Per layer kind (reshapes, which neither program computes, left out)."""
    rows: dict[str, KindRow] = {}
    for layer in result.layers:
        if layer.kernel == "-":
            continue
        cmsis = result.cmsis.layers.get(layer.name, 0)
        ours = result.unfused.get(layer.name, 0)
        ratio = ours / cmsis if cmsis and layer.name in result.unfused else None
        row = rows.get(layer.kind, KindRow(0, 0, 0, 0, None))
        worst = max((r for r in (row.worst, ratio) if r is not None), default=None)
        rows[layer.kind] = KindRow(
            row.layers + 1,
            row.macs + result.layer_macs.get(layer.name, 0),
            row.cmsis + cmsis,
            row.ours + ours,
            worst,
        )
    return rows


def fused_groups(result: ModelResult) -> list[tuple[str, list[Layer]]]:
    """The default pipeline's fused group calls and the layers each one runs: the layers from
    the group's first to its last (`fused_<first>__<last>`) without a call of their own."""
    groups: list[tuple[str, list[Layer]]] = []
    names = [layer.name for layer in result.layers]
    for group in sorted(set(result.ours.layers) - set(names)):
        match = re.fullmatch(r"fused_(.+)__(.+)", group)
        if match is None or match.group(1) not in names or match.group(2) not in names:
            groups.append((group, []))
            continue
        first, last = names.index(match.group(1)), names.index(match.group(2))
        members = [
            layer
            for layer in result.layers[first : last + 1]
            if layer.name not in result.ours.layers and layer.kernel != "-"
        ]
        groups.append((group, members))
    return groups


KERNEL_NOTES = (
    (
        "conv 1x1",
        "`arm_convolve_1x1_s8_fast` -> `arm_nn_mat_mult_nt_t_s8`: no im2col; blocks of 2 "
        "output channels x 2 pixels (4 accumulators), 16 input channels per iteration, 4 "
        "bytes per load widened with `SXTB16` and accumulated with `SMLAD` (2 MACs per "
        "instruction); the input zero point enters once per output channel through the "
        "weight row sums.",
    ),
    (
        "conv ",
        "`arm_convolve_s8`: the windows of two output pixels copied (im2col, padding filled "
        "with the input zero point) and widened to int16 with the input offset added "
        "(`arm_q7_to_q15_with_offset`) in the scratch buffer, then "
        "`arm_nn_mat_mult_kernel_s8_s16`: 2 output channels x 2 pixels, weights widened with "
        "`SXTB16`, `SMLAD` on int16 pairs.",
    ),
    (
        "depthwise 3x3",
        "`arm_depthwise_conv_3x3_s8`: 4 channels per iteration from 32-bit loads of input "
        "and kernel, the window's first valid row decided once per output pixel "
        "(padding <= 1), then requantisation of 4 outputs.",
    ),
    (
        "depthwise",
        "`arm_depthwise_conv_s8_opt` (channel multiplier 1, not 3x3 with padding <= 1): each "
        "output pixel's window copied to the int16 scratch buffer with the input offset "
        "added, then 4 channels at a time, two taps per `SMLAD`.",
    ),
    (
        "fully connected",
        "`arm_nn_vec_mat_mult_t_s8`: 2 weight rows at a time, 4 columns per iteration; the "
        "input widened once for both rows with the offset added (`SXTAB16`), the weights "
        "with `SXTB16`, then `SMLAD`.",
    ),
)


def losses_section(results: Sequence[ModelResult]) -> list[str]:
    """Per CPU, the kinds of layer summed over the models, largest excess of ours first."""
    lines = [
        "## Where our kernels lose, per kind of layer (all models)",
        "",
        "Instructions summed over the models' layers of each kind (probed builds; ours built "
        "with `--fuse=none`, so that every layer is measured on its own); the excess is ours "
        "minus CMSIS-NN, its share the part of the whole excess of the run. The notes say what "
        "CMSIS-NN's kernel on the DSP cores does for that kind.",
        "",
    ]
    for cpu in dict.fromkeys(r.cpu for r in results):
        totals: dict[str, list[int]] = {}
        for r in (r for r in results if r.cpu == cpu):
            for kind, row_ in kind_rows(r).items():
                row = totals.setdefault(kind, [0, 0, 0])
                row[0] += row_.macs
                row[1] += row_.cmsis
                row[2] += row_.ours
        excess = sum(max(ours - cmsis, 0) for _, cmsis, ours in totals.values())
        lines += [
            f"### {cpu}",
            "",
            "| kind | MACs | CMSIS-NN | per MAC | ours | per MAC | ours / CMSIS-NN | excess "
            "| share |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for kind, (macs, cmsis, ours) in sorted(
            totals.items(), key=lambda item: item[1][1] - item[1][2]
        ):
            share = f"{(ours - cmsis) / excess:.0%}" if excess and ours > cmsis else "-"
            lines.append(
                f"| {kind} | {macs:,} | {cmsis:,} | {_per_mac(cmsis, macs)} | {ours:,} | "
                f"{_per_mac(ours, macs)} | {_ratio(ours, cmsis)} | {ours - cmsis:+,} | {share} |"
            )
        lines.append("")
    lines += ["What CMSIS-NN does there:", ""]
    lines += [f"* {kind.strip()}: {note}" for kind, note in KERNEL_NOTES]
    lines.append("")
    return lines


def per_kind_section(results: Sequence[ModelResult]) -> list[str]:
    """Per model and kind of layer: the sums and the worst single layer, ours unfused."""
    lines = [
        "## Per model, per kind of layer",
        "",
        "Sums of the per-layer figures below (probed builds; ours with `--fuse=none`, every "
        "layer its own call, the kernels the fused groups run too). Pointwise = 1x1 "
        "convolution, first layer = the convolution reading the model's input; worst layer = "
        "the largest ours / CMSIS-NN of one layer of the kind. Reshapes (a view in both "
        "programs) are left out.",
        "",
        "| model | cpu | kind | layers | MACs | CMSIS-NN | per MAC | ours | per MAC | "
        "ours / CMSIS-NN | worst layer | ours - CMSIS-NN |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        for kind, row in sorted(kind_rows(r).items()):
            worst = "-" if row.worst is None else f"{row.worst:.2f}"
            lines.append(
                f"| {r.model} | {r.cpu} | {kind} | {row.layers} | {row.macs:,} | "
                f"{row.cmsis:,} | {_per_mac(row.cmsis, row.macs)} | {row.ours:,} | "
                f"{_per_mac(row.ours, row.macs)} | {_ratio(row.ours, row.cmsis)} | {worst} | "
                f"{row.ours - row.cmsis:+,} |"
            )
    for cpu in dict.fromkeys(r.cpu for r in results):
        rows = [row for r in results if r.cpu == cpu for row in kind_rows(r).values()]
        worst_kind = max((row.ours / row.cmsis for row in rows if row.cmsis), default=0.0)
        worst_layer = max((row.worst for row in rows if row.worst is not None), default=0.0)
        lines.append(
            f"| all | {cpu} | largest ratio | | | | | | | {worst_kind:.2f} | {worst_layer:.2f} | |"
        )
    lines.append("")
    return lines


def per_layer_section(results: Sequence[ModelResult]) -> list[str]:
    """Every layer of every model: CMSIS-NN, ours unfused, ours in the default pipeline."""
    lines = [
        "## Per layer",
        "",
        "Each layer call wrapped in SysTick reads (a few dozen instructions each, so the sums "
        "are a little above the totals). `ours`: the program built with `--fuse=none`; "
        "`default`: the same layer in the default pipeline's program, `-` where it runs inside "
        "a fused group (the group rows below, against the sum of CMSIS-NN's calls for its "
        "layers) or is a view (reshape).",
        "",
    ]
    for r in results:
        lines += [
            f"### {r.model} on {r.cpu}",
            "",
            "| layer | kind | CMSIS-NN kernel | output | MACs | CMSIS-NN | per MAC | ours | "
            "per MAC | ours / CMSIS-NN | default |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for layer in r.layers:
            macs = r.layer_macs.get(layer.name, 0)
            cmsis = r.cmsis.layers.get(layer.name)
            ours = r.unfused.get(layer.name)
            default = r.ours.layers.get(layer.name)
            shape = "x".join(map(str, layer.output_shape))
            lines.append(
                f"| {layer.name} | {layer.kind} | {layer.kernel} | {shape} | {macs:,} | "
                f"{'-' if cmsis is None else f'{cmsis:,}'} | "
                f"{_per_mac(cmsis, macs) if cmsis else '-'} | "
                f"{'-' if ours is None else f'{ours:,}'} | "
                f"{_per_mac(ours, macs) if ours else '-'} | "
                f"{_ratio(ours, cmsis) if ours and cmsis else '-'} | "
                f"{'-' if default is None else f'{default:,}'} |"
            )
        for group, members in fused_groups(r):
            cmsis = sum(r.cmsis.layers.get(layer.name, 0) for layer in members)
            macs = sum(r.layer_macs.get(layer.name, 0) for layer in members)
            ours = r.ours.layers[group]
            lines.append(
                f"| {group} (default pipeline, {len(members)} layers) | fused group | | | "
                f"{macs:,} | {cmsis:,} | {_per_mac(cmsis, macs)} | {ours:,} | "
                f"{_per_mac(ours, macs)} | {_ratio(ours, cmsis)} | {ours:,} |"
            )
        lines.append("")
    return lines


def markdown(results: Sequence[ModelResult], command: str, cmsis_nn: Path) -> str:
    origin = cmsis_nn / "ORIGIN.txt"
    commit = re.search(r"[0-9a-f]{40}", origin.read_text()) if origin.exists() else None
    lines = [
        "# Our generated C beside TFLM's CMSIS-NN kernels",
        "",
        f"Written by `{command}` (see `benchmarks/cmsis_nn.py`'s docstring). CMSIS-NN "
        f"{'at ' + commit.group(0) if commit else '(commit unknown)'} (the commit TFLM pins), "
        f"built with the firmware harness's flags. "
        f"{_tool_version([firmware.ARM_GCC, '--version'])}, `-O2`; "
        f"{_tool_version([firmware.QEMU, '--version'])}, `-icount shift=0` (SysTick: 40 "
        f"instructions resolution); host {platform.machine()}. m4f = Cortex-M4 hard float "
        "(`mps2-an386`), m7 = Cortex-M7 (`mps2-an500`), m3 = Cortex-M3 (`mps2-an385`, no DSP "
        "extension: CMSIS-NN's plain C paths).",
        "",
        "Every program's outputs, for the harness's inputs of seeds "
        f"{', '.join(map(str, DATA_SEEDS))}, equal TFLM's (PyPI `tflite-micro`) byte for byte; "
        "the benchmark stops with an error otherwise.",
        "",
        "## Instructions per inference",
        "",
        "| model | cpu | MACs | CMSIS-NN | per MAC | ours | per MAC | ours / CMSIS-NN |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r.model} | {r.cpu} | {r.macs:,} | {r.cmsis.instructions:,} | "
            f"{_per_mac(r.cmsis.instructions, r.macs)} | {r.ours.instructions:,} | "
            f"{_per_mac(r.ours.instructions, r.macs)} | "
            f"{_ratio(r.ours.instructions, r.cmsis.instructions)} |"
        )
    for cpu in dict.fromkeys(r.cpu for r in results):
        ratios = [r.ours.instructions / r.cmsis.instructions for r in results if r.cpu == cpu]
        lines.append(f"| geo-mean | {cpu} | | | | | | {geometric_mean(ratios):.2f} |")
    lines += [
        "",
        "## Code and memory (bytes)",
        "",
        "`.text`: the code the linker kept from the kernels (`libcmsisnn.a`, CMSIS-NN only) and "
        "the model's object (libc, harness and startup excluded for both). `.rodata`: the "
        "model object's constants (weights, biases; ours also its lookup tables). RAM: the "
        "model object's `.data` + `.bss` — CMSIS-NN: the activation arena (planned like "
        "TFLM's greedy planner, scratch buffers included) and the per-channel multipliers and "
        "shifts (TFLM keeps them in its arena); ours: the planned workspace pool. Stack: what "
        "the run wrote below its caller's stack pointer (stack painting).",
        "",
        "| model | cpu | .text CMSIS-NN | .text ours | .rodata CMSIS-NN | .rodata ours | "
        "RAM CMSIS-NN | RAM ours | stack CMSIS-NN | stack ours |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r.model} | {r.cpu} | {r.cmsis.text_bytes:,} | {r.ours.text_bytes:,} | "
            f"{r.cmsis.rodata_bytes:,} | {r.ours.rodata_bytes:,} | {r.cmsis.ram_bytes:,} | "
            f"{r.ours.ram_bytes:,} | {r.cmsis.stack_bytes:,} | {r.ours.stack_bytes:,} |"
        )
    lines += ["", *losses_section(results)]
    lines += per_kind_section(results)
    lines += per_layer_section(results)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--cpu", default="m4f", help="comma-separated: m4f, m7, m3")
    parser.add_argument("--cmsis-nn", type=Path, help="CMSIS-NN source (Include/, Source/)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    arguments = parser.parse_args(argv)
    program = "cmsis_nn.py"
    missing = firmware.toolchain_missing()
    if missing:
        print(f"{program}: error: {missing}", file=sys.stderr)
        return 1
    cmsis_nn = arguments.cmsis_nn or default_cmsis_nn()
    if cmsis_nn is None or not (cmsis_nn / "Include" / "arm_nnfunctions.h").exists():
        where = arguments.cmsis_nn or " or ".join(map(str, cmsis_nn_candidates()))
        print(f"{program}: error: no CMSIS-NN source at {where} (--cmsis-nn PATH)", file=sys.stderr)
        return 1
    names = [name for name in arguments.models.split(",") if name]
    unknown = [name for name in names if name not in MODELS]
    cpu_names = [name for name in arguments.cpu.split(",") if name]
    unknown += [name for name in cpu_names if name not in firmware.CPUS]
    if unknown:
        print(f"{program}: error: unknown model or cpu '{unknown[0]}'", file=sys.stderr)
        return 1
    cpus = [firmware.CPUS[name] for name in cpu_names]
    results: list[ModelResult] = []
    try:
        with tempfile.TemporaryDirectory(prefix="usmp-cmsis-nn-") as temporary:
            directory = Path(temporary)
            libraries = {"include": cmsis_nn / "Include"}
            for cpu in cpus:
                libraries[cpu.name] = build_library(cmsis_nn, directory / "lib" / cpu.name, cpu)
            for name in names:
                results += measure(name, cpus, libraries, directory)
    except (firmware.FirmwareError, UnsupportedModel) as error:
        print(f"{program}: error: {error}", file=sys.stderr)
        return 1
    command = " ".join(["python benchmarks/cmsis_nn.py", *(argv or sys.argv[1:])])
    arguments.output.write_text(markdown(results, command, cmsis_nn))
    print(f"wrote {arguments.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
