"""The MLPerf Tiny int8 models on an emulated Cortex-M (QEMU mps2-an386 / an385):
cross-compiled under the strict warning set, their outputs must equal the x86 build's bit for
bit; a pool given a linker section lands in its own memory region of the linked firmware."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.testing import firmware
from usmp_dialect.testing.tflite_writer import OperatorSpec, TensorSpec, write_model

pytestmark = pytest.mark.skipif(
    firmware.toolchain_missing() is not None, reason=firmware.toolchain_missing() or ""
)

MODELS = Path(__file__).parents[2] / "examples" / "mlperf_tiny"
NAMES = {
    "kws": "kws_ref_model",
    "vww": "vww_96_int8",
    "resnet8": "pretrainedResnet_quant",
    "ad": "ad01_int8",
}
DATA_SEEDS = (1, 2)


@cache
def _model(name: str, flags: tuple[str, ...] = ()) -> firmware.FirmwareModel:
    return firmware.model_from_file(MODELS / f"{NAMES[name]}.tflite", flags=flags)


def _check(comparison: firmware.Comparison) -> None:
    assert comparison.ok, "\n".join(comparison.mismatches)
    lines = firmware.compared_lines(comparison.firmware_output)
    assert lines[0] == "run 0 status 0", comparison.firmware_output[:400]
    measured = firmware.measurement(comparison.firmware_output)
    assert measured.instructions > 0 and measured.stack_bytes > 0


# The int8 MLPerf Tiny models on the M4F; the M3
# (soft float, no DSP instructions) and the M7 on kws.
@pytest.mark.parametrize(
    ("name", "cpu"),
    [
        ("kws", "m4f"),
        ("resnet8", "m4f"),
        ("ad", "m4f"),
        ("vww", "m4f"),
        ("kws", "m3"),
        ("kws", "m7"),
    ],
)
def test_example_runs_on_cortex_m_like_on_x86(name: str, cpu: str, tmp_path: Path) -> None:
    model = _model(name)
    if name == "kws":  # its convolutions take the DSP variant on the M4F, border windows too
        assert "__smlad" in model.source and "__sxtab16" in model.source
    _check(firmware.compare(model, tmp_path, firmware.CPUS[cpu], DATA_SEEDS))


def test_u4_model_runs_on_cortex_m_like_on_x86(tmp_path: Path) -> None:
    """U4 (inputs and outputs in the workspace, reached through `<p>_map_inputs` /
    `_map_outputs`): vww's first fused group writes its output over the input, so each run
    writes its inputs again; both runs equal the x86 build's."""
    pipeline = "usmp-import-memref,convert-linalg-to-loops,usmp{workspace-io=true}"
    model = firmware.model_from_file(MODELS / f"{NAMES['vww']}.tflite", pipeline=pipeline)
    assert model.workspace_io and "_map_inputs" in model.header
    _check(firmware.compare(model, tmp_path, firmware.CPUS["m4f"], DATA_SEEDS))


def test_pools_with_a_section_are_linked_into_their_region(tmp_path: Path) -> None:
    flags = (
        "--workspace-pools=sram2",
        "--constant-pools=weights",
        "--internal-pools=sram2,weights",
        "--workspace-pools-section=sram2:.sram2_bss",
        "--constant-pools-section=weights:.weights",
    )
    model = _model("kws", flags)
    assert model.sections == ((".sram2_bss", "workspace"), (".weights", "constant"))
    assert '__attribute__((section(".sram2_bss")))' in model.source
    comparison = firmware.compare(model, tmp_path, firmware.CPUS["m4f"], DATA_SEEDS)
    _check(comparison)
    origin = firmware.CPUS["m4f"].extra_region
    region = range(origin, origin + firmware.EXTRA_REGION_BYTES)
    elf = comparison.firmware.elf
    for symbol in ("sram2_pool", "weights_pool"):
        address = firmware.symbol_address(elf, symbol)
        assert address in region, f"{symbol} at {address}"
    # Without the flags both pools are in the default sections (flash and RAM).
    default = firmware.build_firmware(_model("kws"), tmp_path / "default", firmware.CPUS["m4f"])
    for symbol in ("global_workspace_pool", "global_constant_pool"):
        address = firmware.symbol_address(default.elf, symbol)
        assert address is not None and address not in region


def test_model_object_sizes_are_reported(tmp_path: Path) -> None:
    report = tmp_path / "plan.json"
    pipeline = f'usmp-import-memref,convert-linalg-to-loops,usmp{{report="{report}"}}'
    model = firmware.model_from_file(MODELS / f"{NAMES['kws']}.tflite", pipeline=pipeline)
    pools = {pool["kind"]: pool for pool in json.loads(report.read_text())["pools"]}
    built = firmware.build_firmware(model, tmp_path, firmware.CPUS["m4f"])
    sizes = firmware.section_sizes(built.model_object)
    # The weights are read-only data, the workspace pool is zero-initialised.
    assert sizes[".rodata"] >= pools["constant"]["size_bytes"] > 0
    assert sizes[".bss"] >= pools["workspace"]["size_bytes"] > 0
    assert sizes[".data"] == 0
    assert sizes[".text"] > 0


def _narrow_layers_model() -> bytes:
    """A global int8 average pool of 256 taps (the most `SXTAB16` halves hold) over 14
    channels (three blocks of four, two alone) beside a 3-unit fully connected layer (a pair
    of rows and a last one)."""
    rng = np.random.default_rng(23)
    quant = {"scales": [0.05], "zero_points": [-3]}
    tensors = [
        TensorSpec("x", np.int8, (1, 16, 16, 14), **quant),  # type: ignore[arg-type]
        TensorSpec("pooled", np.int8, (1, 1, 1, 14), **quant),  # type: ignore[arg-type]
        TensorSpec("z", np.int8, (1, 37), scales=[0.05], zero_points=[5]),
        TensorSpec(
            "w",
            np.int8,
            (3, 37),
            data=rng.integers(-127, 128, size=(3, 37), dtype=np.int8),
            scales=[0.01],
            zero_points=[0],
        ),
        TensorSpec(
            "b",
            np.int32,
            (3,),
            data=rng.integers(-3000, 3000, size=3, dtype=np.int32),
            scales=[0.0005],
        ),
        TensorSpec("y", np.int8, (1, 3), scales=[0.04], zero_points=[2]),
    ]
    pool = {
        "Padding": 1,  # VALID
        "StrideH": 1,
        "StrideW": 1,
        "FilterHeight": 16,
        "FilterWidth": 16,
        "FusedActivationFunction": 0,
    }
    operators = [
        OperatorSpec("AVERAGE_POOL_2D", [0], [1], "Pool2DOptions", pool),
        OperatorSpec("FULLY_CONNECTED", [2, 3, 4], [5], "FullyConnectedOptions", {}),
    ]
    return write_model(tensors, operators, [0, 2], [1, 5])


def test_narrow_layers_take_their_dsp_variants_like_on_x86(tmp_path: Path) -> None:
    """The global pool's word sums and the fully connected pair of rows on the M4F (their DSP
    variants) equal the x86 build (the portable C, which the frontend tests hold to TFLM)."""
    path = tmp_path / "narrow.tflite"
    path.write_bytes(_narrow_layers_model())
    model = firmware.model_from_file(path)
    assert "__sxtab16(even, word)" in model.source and "__smlad" in model.source
    _check(firmware.compare(model, tmp_path / "run", firmware.CPUS["m4f"], DATA_SEEDS))


_TINY_HEADER = """#include <stdint.h>
struct usmp_default_inputs { void* input; };
struct usmp_default_outputs { void* output; };
int32_t usmp_default_run(struct usmp_default_inputs* inputs, struct usmp_default_outputs* outputs);
"""
_TINY_SOURCE = """#include "usmp_default.h"
int32_t usmp_default_run(struct usmp_default_inputs* inputs, struct usmp_default_outputs* outputs) {
  const int8_t* in = (const int8_t*)inputs->input;
  int8_t* out = (int8_t*)outputs->output;
  for (int i = 0; i < 4; ++i) out[i] = (int8_t)(in[i] + OFFSET);
  return 0;
}
"""


@pytest.mark.parametrize("offset", ["1", "(__ARM_ARCH == 0)"])
def test_a_firmware_that_computes_otherwise_is_reported(offset: str, tmp_path: Path) -> None:
    """Any generated C and its I/O sizes run through the harness; an output the Cortex-M build
    computes differently (here: only on Arm) is a mismatch."""
    model = firmware.FirmwareModel(
        "tiny",
        f"#ifndef __ARM_ARCH\n#define __ARM_ARCH 0\n#endif\n#define OFFSET {offset}\n"
        + _TINY_SOURCE,
        _TINY_HEADER,
        (firmware.Tensor("input", 4),),
        (firmware.Tensor("output", 4),),
    )
    comparison = firmware.compare(model, tmp_path, firmware.CPUS["m3"], DATA_SEEDS)
    assert comparison.ok == (offset == "1"), comparison.mismatches
