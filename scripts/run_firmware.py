#!/usr/bin/env python3
"""Runs generated models on an emulated Cortex-M and compares them with the x86 build.

    python scripts/run_firmware.py examples/mlperf_tiny/kws_ref_model.tflite --cpu m4f,m3
    python scripts/run_firmware.py model.tflite -- --workspace-pools=sram ...   # usmp-opt flags
    python scripts/run_firmware.py --source model.c --header usmp_default.h \\
        --input input:490 --output output:12          # any generated C and its I/O sizes

Each input is lowered in process like `usmp-opt FILE -p PIPELINE FLAGS... -t c` (and
`-t c-header`); or `--source`/`--header` name C files generated elsewhere, with their inputs and
outputs as NAME:BYTES (NAME:BYTES:f32 fills an input with small floats). Prints one line per
model and CPU (instructions per inference under `-icount shift=0`, stack bytes) and exits 1 when
an output differs from the x86 build's. Needs arm-none-eabi-gcc and qemu-system-arm
(scripts/install_firmware_tools.sh).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from usmp_dialect.testing import firmware


def _tensor(text: str) -> firmware.Tensor:
    parts = text.split(":")
    if len(parts) not in (2, 3) or not parts[1].isdigit() or parts[2:] not in ([], ["f32"]):
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME:BYTES or NAME:BYTES:f32")
    return firmware.Tensor(parts[0], int(parts[1]), parts[2:] == ["f32"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("inputs", nargs="*", type=Path, help="model files usmp-opt reads")
    parser.add_argument("--cpu", default="m4f", help=f"comma-separated: {', '.join(firmware.CPUS)}")
    parser.add_argument("--pipeline", default=firmware.PIPELINE)
    parser.add_argument("--source", type=Path, help="a generated C source")
    parser.add_argument("--header", type=Path, help="its header")
    parser.add_argument("--prefix", default="usmp_default")
    parser.add_argument("--input", action="append", type=_tensor, default=[], metavar="NAME:BYTES")
    parser.add_argument("--output", action="append", type=_tensor, default=[], metavar="NAME:BYTES")
    parser.add_argument("--seeds", default="1,2", help="data seeds, comma-separated")
    parser.add_argument("-O", dest="optimization", default="2", help="optimisation level")
    parser.add_argument("--keep", type=Path, help="keep the build files in this directory")
    arguments, flags = parser.parse_known_args(argv)
    flags = [flag for flag in flags if flag != "--"]
    missing = firmware.toolchain_missing()
    if missing:
        print(f"run_firmware: {missing}", file=sys.stderr)
        return 1
    cpus = []
    for name in arguments.cpu.split(","):
        if name not in firmware.CPUS:
            print(f"run_firmware: unknown cpu '{name}' (known: {', '.join(firmware.CPUS)})")
            return 1
        cpus.append(firmware.CPUS[name])
    seeds = [int(seed) for seed in arguments.seeds.split(",")]
    models: list[firmware.FirmwareModel] = []
    if arguments.source is not None:
        if arguments.header is None or not arguments.output:
            print("run_firmware: --source needs --header and at least one --output")
            return 1
        models.append(
            firmware.FirmwareModel(
                arguments.source.stem,
                arguments.source.read_text(),
                arguments.header.read_text(),
                tuple(arguments.input),
                tuple(arguments.output),
                arguments.prefix,
            )
        )
    for path in arguments.inputs:
        models.append(firmware.model_from_file(path, arguments.pipeline, flags, arguments.prefix))
    if not models:
        parser.error("give model files or --source")
    root = arguments.keep or Path(tempfile.mkdtemp(prefix="usmp-firmware-"))
    failed = False
    for model in models:
        native: str | None = None
        for cpu in cpus:
            try:
                comparison = firmware.compare(
                    model, root / model.name, cpu, seeds, f"-O{arguments.optimization}", native
                )
            except firmware.FirmwareError as error:
                print(f"{model.name} {cpu.name}: FAILED\n{error}")
                failed = True
                continue
            native = comparison.native_output
            measured = firmware.measurement(comparison.firmware_output)
            verdict = "matches x86" if comparison.ok else "DIFFERS from x86"
            print(
                f"{model.name} {cpu.name}: {verdict}; {measured.instructions} instructions, "
                f"{measured.stack_bytes} stack bytes"
            )
            for mismatch in comparison.mismatches[:5]:
                print(f"  {mismatch}")
            failed |= not comparison.ok
    if arguments.keep is None:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
