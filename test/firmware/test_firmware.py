"""The MLPerf Tiny int8 models on an emulated Cortex-M (QEMU mps2-an386 / an385):
cross-compiled under the strict warning set, their outputs must equal the x86 build's bit for
bit; a pool given a linker section lands in its own memory region of the linked firmware."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from usmp_dialect.testing import firmware

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
