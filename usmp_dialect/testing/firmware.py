"""The firmware harness: a generated model on an emulated Cortex-M, compared with the x86 build.

A `FirmwareModel` is any generated C source and header (`usmp-opt ... -t c` / `-t c-header`)
with its C prefix and the byte sizes of its inputs and outputs; `model_from_file` makes one from
any input `usmp-opt` reads (`.mlir`, and every frontend it registers), `model_from_module` from
a planned module. For a model and a CPU (`CPUS`: `m4f` Cortex-M4 hard float on QEMU's
`mps2-an386`, `m3` Cortex-M3 soft float on `mps2-an385`, `m7` Cortex-M7 on `mps2-an500`):

* `harness_source` is a C `main` (the same text for both builds) that fills the inputs from a
  seeded xorshift generator, runs the model and prints every output in hex (the format of the
  differential harness); on the firmware it also prints `# instructions N` (QEMU `-icount
  shift=0`, read from SysTick around `<p>_run`) and `# stack N` (bytes below the caller's stack
  pointer that `<p>_run` overwrote, by stack painting).
* `STARTUP_SOURCE` (in `usmp_dialect.project.cortex_m`, shared with the projects that
  `usmp-opt -t project` writes) is the tiny runtime: vector table, reset handler (`.data`
  copied from flash, `.bss` and the extra workspace sections zeroed, FPU enabled), SysTick
  wrap counter, raw ARM semihosting (`SYS_WRITE0`, `SYS_EXIT`). No newlib stdio, no
  syscalls; libc and libm only for what the model itself calls (`memmove`, math functions).
* `linker_script` places the code and constants in SSRAM1 (the "flash", 4 MiB at 0), data, bss and
  the stack in SSRAM2/3 (4 MiB at 0x20000000), and any named pool section (`section = ".x"` on
  a pool, SPEC §11) in the board's 16 MiB PSRAM (0x21000000; 0x60000000 on the AN500):
  workspace sections `NOLOAD` and zeroed at reset, constant sections loaded.
* `build_firmware` cross-compiles with `arm-none-eabi-gcc` under the strict warning set;
  `run_firmware` runs the ELF under `qemu-system-arm -nographic -semihosting` with a timeout;
  `run_native` builds and runs the same harness with the host gcc; `compare` runs both.

`scripts/run_firmware.py` is the command line; `benchmarks/firmware.py` the measurements.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import struct
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.dialects import func
from xdsl.dialects.builtin import MemRefType, ModuleOp, StringAttr

from usmp_dialect.project.cortex_m import EXTRA_REGION_BYTES as EXTRA_REGION_BYTES
from usmp_dialect.project.cortex_m import M4F_FLAGS, STARTUP_SOURCE, linker_script
from usmp_dialect.testing.harness import STRICT_FLAGS, pipeline_context, strict_flags

PIPELINE = "usmp-import-memref,convert-linalg-to-loops,usmp"
"""The lowering of the example models (README)."""
RUN_TIMEOUT_S = 120.0
ARM_GCC = "arm-none-eabi-gcc"
QEMU = "qemu-system-arm"
OUTPUT_PREFIX = "# "
"""Lines the firmware prints beyond the outputs (measurements): not compared."""


@dataclass(frozen=True)
class Cpu:
    """A Cortex-M profile: compiler flags and the QEMU board that emulates it."""

    name: str
    flags: tuple[str, ...]
    machine: str
    has_fpu: bool
    extra_region: int = 0x21000000
    """Where the board has the 16 MiB RAM the named pool sections go to (its PSRAM)."""


CPUS: dict[str, Cpu] = {
    "m4f": Cpu(
        "m4f",
        M4F_FLAGS,
        "mps2-an386",
        True,
    ),
    "m3": Cpu("m3", ("-mcpu=cortex-m3", "-mthumb", "-mfloat-abi=soft"), "mps2-an385", False),
    "m7": Cpu(
        "m7",
        ("-mcpu=cortex-m7", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-d16"),
        "mps2-an500",
        True,
        0x60000000,
    ),
}


@dataclass(frozen=True)
class Tensor:
    """One model input or output, as the harness fills or prints it."""

    name: str
    """The field of `struct <p>_inputs` / `struct <p>_outputs`."""
    size_bytes: int
    is_float: bool = False
    """Inputs: filled with small exact f32 values instead of random bytes."""


@dataclass(frozen=True)
class ExternalPool:
    """A pool the application provides: the harness defines it from the header's macros."""

    field: str
    macro: str
    """`<P>_<POOL>` of `<P>_<POOL>_WORKSPACE_POOL_SIZE` / `_CONSTANT_POOL_SIZE` / `_DATA`."""
    const: bool


@dataclass(frozen=True)
class FirmwareModel:
    """A generated model: its C, its interface, and (for the benchmark) its multiply-adds."""

    name: str
    source: str
    header: str
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    prefix: str = "usmp_default"
    external_pools: tuple[ExternalPool, ...] = ()
    sections: tuple[tuple[str, str], ...] = ()
    """(section name, "workspace" | "constant") the source places pools in: the linker script
    gives each an output section in the extra region."""
    workspace_io: bool = False
    """U4: the inputs and outputs live in the workspace (`<p>_map_inputs` / `_map_outputs`)."""
    reset_takes_pools: bool | None = None
    """None: the model has no state (SPEC §13); else whether `<p>_reset_state` takes the
    pools struct (an external state pool) or nothing."""


def toolchain_missing() -> str | None:
    """Why the firmware cannot be built and run here (None when it can)."""
    missing = [tool for tool in (ARM_GCC, QEMU) if shutil.which(tool) is None]
    if missing:
        return f"needs {' and '.join(missing)} (install with scripts/install_firmware_tools.sh)"
    return None


# ---- models --------------------------------------------------------------------------------


def _io_sizes(module: ModuleOp, entry_name: str) -> list[tuple[str, int]]:
    """(kind, bytes) of the entry function's memref arguments, in order (the C interface's
    classification: `usmp.io`, else written anywhere = output)."""
    from usmp_dialect.backend.c.program import find_entry, written_arguments
    from usmp_dialect.dialects.usmp import buffer_size_bytes

    entry = find_entry(module, entry_name)
    written = written_arguments([op for op in module.ops if isinstance(op, func.FuncOp)])
    flags = written[entry_name]
    sizes: list[tuple[str, int]] = []
    for index, arg in enumerate(entry.body.block.args):
        assert isinstance(arg.type, MemRefType)
        attrs = entry.arg_attrs.data[index].data if entry.arg_attrs is not None else {}
        io_attr = attrs.get("usmp.io")
        written_kind = "output" if flags[index] else "input"
        kind = io_attr.data if isinstance(io_attr, StringAttr) else written_kind
        sizes.append((kind, buffer_size_bytes(arg.type)))
    return sizes


def model_from_module(
    name: str, module: ModuleOp, prefix: str = "usmp_default", entry: str = "main"
) -> FirmwareModel:
    """The model of a planned module (U1-U3: inputs and outputs passed to `<p>_run`)."""
    from usmp_dialect.backend.c.program import build_interface
    from usmp_dialect.backend.c.target import CHeaderTarget, CTarget
    from usmp_dialect.dialects import pool

    ctx = pipeline_context()
    source, header = io.StringIO(), io.StringIO()
    CTarget(prefix=prefix, entry=entry).emit(ctx, module, source)
    CHeaderTarget(prefix=prefix, entry=entry).emit(ctx, module, header)
    interface = build_interface(module, prefix, entry)
    if interface.workspace_io:  # U4: the interface states the sizes of the mapped tensors
        input_sizes = iter(t.size_bytes for t in interface.inputs)
        output_sizes = iter(t.size_bytes for t in interface.outputs)
    else:
        sizes = _io_sizes(module, entry)
        input_sizes = iter(size for kind, size in sizes if kind == "input")
        output_sizes = iter(size for kind, size in sizes if kind == "output")
    inputs = tuple(
        Tensor(t.name, next(input_sizes), t.element_type in ("float", "double"))
        for t in interface.inputs
    )
    outputs = tuple(Tensor(t.name, next(output_sizes)) for t in interface.outputs)
    upper = prefix.upper()
    external = tuple(
        ExternalPool(p.field, f"{upper}_{p.field.upper()}", p.const)
        for p in interface.pools
        if not p.internal
    )
    sections = tuple(
        sorted(
            {
                (p.section_name, p.KIND)
                for p in pool.module_pools(module)
                if p.section_name is not None and p.is_internal
            }
        )
    )
    return FirmwareModel(
        name,
        source.getvalue(),
        header.getvalue(),
        inputs,
        outputs,
        prefix,
        external,
        sections,
        interface.workspace_io,
        any(not p.internal for p in interface.state_pools) if interface.state_pools else None,
    )


def model_from_file(
    path: Path, pipeline: str = PIPELINE, flags: Sequence[str] = (), prefix: str = "usmp_default"
) -> FirmwareModel:
    """Runs `usmp-opt PATH -p PIPELINE FLAGS...` in process (any input format its frontends
    read) and makes the model of the planned module."""
    from usmp_dialect.tools.usmp_opt import UsmpOptMain

    driver = UsmpOptMain(args=[str(path), "-p", pipeline, *flags])
    chunks, extension = driver.prepare_input()
    (chunk, offset), *_ = chunks
    module = driver.parse_chunk(chunk, extension, offset)
    chunk.close()
    if module is None:
        raise ValueError(f"{path}: usmp-opt could not parse it")
    driver.apply_passes(module)
    return model_from_module(path.stem, module, prefix)


# ---- C sources -----------------------------------------------------------------------------


def harness_source(
    model: FirmwareModel, data_seeds: Sequence[int] = (1,), resets: Sequence[int] = ()
) -> str:
    """The `main` of both builds: for each data seed, fill the inputs, run, print the outputs;
    a stateful model's state carries over from run to run, and `<p>_reset_state` is called
    before the runs whose index is in `resets`. Compiled with `-DUSMP_FIRMWARE` it prints
    through semihosting and adds the measurements of the first run."""
    p = model.prefix
    if resets and model.reset_takes_pools is None:
        raise ValueError(f"{model.name} has no state to reset")
    lines = [
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        f'#include "{p}.h"',
        "",
        "#ifdef USMP_FIRMWARE",
        "void usmp_write(const char* text);",
        "uint64_t usmp_ticks(void);",
        "uint32_t usmp_ticks_to_instructions(uint64_t ticks);",
        "size_t usmp_paint_stack(void);",
        "size_t usmp_stack_used(void);",
        "#else",
        "#include <stdio.h>",
        "static void usmp_write(const char* text) { fputs(text, stdout); }",
        "#endif",
        "",
        "static uint32_t random_state;",
        "static uint32_t next_random(void) {",
        "  random_state ^= random_state << 13;",
        "  random_state ^= random_state >> 17;",
        "  random_state ^= random_state << 5;",
        "  return random_state;",
        "}",
        "static void fill(void* data, size_t bytes, int is_float) {",
        "  uint8_t* out = (uint8_t*)data;",
        "  if (is_float) {",
        "    for (size_t i = 0; i + 4 <= bytes; i += 4) {",
        "      float value = (float)((int32_t)(next_random() % 129u) - 64) / 4.0f;",
        "      memcpy(out + i, &value, 4);",
        "    }",
        "  } else {",
        "    for (size_t i = 0; i < bytes; ++i) out[i] = (uint8_t)next_random();",
        "  }",
        "}",
        "static void write_number(const char* label, uint64_t value) {",
        "  char text[48];",
        "  char digits[24];",
        "  size_t length = 0, count = 0;",
        "  while (*label) text[length++] = *label++;",
        "  do {",
        "    digits[count++] = (char)('0' + (int)(value % 10u));",
        "    value /= 10u;",
        "  } while (value);",
        "  while (count) text[length++] = digits[--count];",
        "  text[length++] = '\\n';",
        "  text[length] = 0;",
        "  usmp_write(text);",
        "}",
        "static void dump(const char* name, const void* data, size_t bytes) {",
        '  static const char hex[] = "0123456789abcdef";',
        "  const uint8_t* in = (const uint8_t*)data;",
        "  char text[3 * 64 + 2];",
        "  usmp_write(name);",
        "  for (size_t i = 0; i < bytes; i += 64) {",
        "    size_t length = 0;",
        "    for (size_t k = i; k < bytes && k < i + 64; ++k) {",
        "      text[length++] = ' ';",
        "      text[length++] = hex[in[k] >> 4];",
        "      text[length++] = hex[in[k] & 15];",
        "    }",
        "    text[length] = 0;",
        "    usmp_write(text);",
        "  }",
        '  usmp_write("\\n");',
        "}",
        "",
    ]
    for pool_info in model.external_pools:
        if pool_info.const:
            size = f"{pool_info.macro}_CONSTANT_POOL_SIZE"
            lines.append(
                f"static const _Alignas(64) uint8_t pool_{pool_info.field}"
                f"[{size} > 0 ? {size} : 1] = {{ {pool_info.macro}_CONSTANT_POOL_DATA }};"
            )
        else:
            size = f"{pool_info.macro}_WORKSPACE_POOL_SIZE"
            lines.append(
                f"static _Alignas(64) uint8_t pool_{pool_info.field}[{size} > 0 ? {size} : 1];"
            )
    if not model.workspace_io:
        for tensor in model.inputs + model.outputs:
            lines.append(f"static _Alignas(16) uint8_t io_{tensor.name}[{tensor.size_bytes}];")
    lines += ["", "int main(void) {", "  int32_t status = 0;"]
    if model.external_pools:
        fields = ", ".join(f".{p.field} = (void*)pool_{p.field}" for p in model.external_pools)
        lines.append(f"  struct {p}_workspace_pools pools = {{ {fields} }};")
    pools_pointer = "&pools" if model.external_pools else "NULL"
    if model.workspace_io:
        # U4: the tensors are the workspace's bytes; every run writes its inputs again.
        lines.append(f"  struct {p}_inputs inputs = {p}_map_inputs({pools_pointer});")
        lines.append(f"  struct {p}_outputs outputs = {p}_map_outputs({pools_pointer});")
        for kind, tensors in (("inputs", model.inputs), ("outputs", model.outputs)):
            for tensor in tensors:
                lines.append(f"  void* io_{tensor.name} = (void*){kind}.{tensor.name};")
    else:
        inputs = ", ".join(f".{t.name} = io_{t.name}" for t in model.inputs)
        outputs = ", ".join(f".{t.name} = io_{t.name}" for t in model.outputs)
        lines.append(f"  struct {p}_inputs inputs = {{ {inputs or '0'} }};")
        lines.append(f"  struct {p}_outputs outputs = {{ {outputs or '0'} }};")
    pools_argument = ", &pools" if model.external_pools else ""
    for run, seed in enumerate(data_seeds):
        lines.append(f"  random_state = {seed & 0x7FFFFFFF | 1}u;")
        for tensor in model.inputs:
            lines.append(f"  fill(io_{tensor.name}, {tensor.size_bytes}, {int(tensor.is_float)});")
        for tensor in model.outputs:
            lines.append(f"  memset(io_{tensor.name}, 0xA5, {tensor.size_bytes});")
        if run in resets:
            lines.append(
                f"  status |= {p}_reset_state({pools_pointer if model.reset_takes_pools else ''});"
            )
        call = (
            f"{p}_run({pools_pointer})"
            if model.workspace_io
            else f"{p}_run(&inputs, &outputs{pools_argument})"
        )
        if run == 0:
            lines += [
                "  {",
                "#ifdef USMP_FIRMWARE",
                "    usmp_paint_stack();",
                "    uint64_t start = usmp_ticks();",
                "#endif",
                f"    status |= {call};",
                "#ifdef USMP_FIRMWARE",
                "    uint64_t ticks = usmp_ticks() - start;",
                "    size_t stack = usmp_stack_used();",
                f'    write_number("{OUTPUT_PREFIX}instructions ", '
                "usmp_ticks_to_instructions(ticks));",
                f'    write_number("{OUTPUT_PREFIX}stack ", stack);',
                "#endif",
                "  }",
            ]
        else:
            lines.append(f"  status |= {call};")
        lines.append(f'  write_number("run {run} status ", (uint64_t)(uint32_t)status);')
        for tensor in model.outputs:
            lines.append(f'  dump("{tensor.name}", io_{tensor.name}, {tensor.size_bytes});')
    lines += ["  return status != 0;", "}", ""]
    return "\n".join(lines)


# ---- builds and runs -----------------------------------------------------------------------


class FirmwareError(Exception):
    """A build or a run failed (the message carries the compiler's or QEMU's diagnostics)."""


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _run(command: Sequence[str], what: str, timeout_s: float | None = None) -> str:
    try:
        done = subprocess.run(
            list(command),
            capture_output=True,
            text=True,
            check=False,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as error:
        raise FirmwareError(f"{what}: timed out after {timeout_s} s") from error
    if done.returncode:
        raise FirmwareError(
            f"{what}: exit code {done.returncode}\n{_tail(done.stderr + done.stdout)}"
        )
    return done.stdout


def write_sources(
    model: FirmwareModel, directory: Path, data_seeds: Sequence[int], resets: Sequence[int] = ()
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.c").write_text(model.source)
    (directory / f"{model.prefix}.h").write_text(model.header)
    (directory / "harness.c").write_text(harness_source(model, data_seeds, resets))


@dataclass(frozen=True)
class Firmware:
    """A linked firmware image and the object of the model alone."""

    elf: Path
    model_object: Path
    cpu: Cpu


def build_firmware(
    model: FirmwareModel,
    directory: Path,
    cpu: Cpu,
    optimization: str = "-O2",
    data_seeds: Sequence[int] = (1,),
    extra_flags: Sequence[str] = (),
    libraries: Sequence[Path] = (),
    resets: Sequence[int] = (),
) -> Firmware:
    """Cross-compiles the model (strict warnings, plus `extra_flags`), the harness and the
    runtime, and links them and the static `libraries` with the harness's linker script
    (`-fstack-usage` writes `model.su`, the linker `firmware.map`)."""
    write_sources(model, directory, data_seeds, resets)
    (directory / "startup.c").write_text(STARTUP_SOURCE)
    (directory / "firmware.ld").write_text(linker_script(model.sections, cpu.extra_region))
    base = [ARM_GCC, *cpu.flags, optimization, "-ffunction-sections", "-fdata-sections"]
    objects: list[str] = []
    for name, flags in (
        ("model", (*STRICT_FLAGS, "-fstack-usage", *extra_flags)),
        ("harness", (*STRICT_FLAGS, "-DUSMP_FIRMWARE")),
        ("startup", ("-std=c11", "-Wall", "-Wextra", "-Werror")),
    ):
        obj = directory / f"{name}.o"
        _run(
            [
                *base,
                *flags,
                "-I",
                str(directory),
                "-c",
                str(directory / f"{name}.c"),
                "-o",
                str(obj),
            ],
            f"{ARM_GCC} {name}.c ({cpu.name})",
        )
        objects.append(str(obj))
    elf = directory / "firmware.elf"
    _run(
        [
            *base,
            "-nostartfiles",
            "--specs=nano.specs",
            "--specs=nosys.specs",
            f"-T{directory / 'firmware.ld'}",
            "-Wl,--gc-sections",
            f"-Wl,-Map={directory / 'firmware.map'}",
            *objects,
            *(str(library) for library in libraries),
            "-lm",
            "-o",
            str(elf),
        ],
        f"{ARM_GCC} link ({cpu.name})",
    )
    return Firmware(elf, directory / "model.o", cpu)


def run_firmware(firmware: Firmware, timeout_s: float = RUN_TIMEOUT_S) -> str:
    """What the firmware prints under QEMU (`-icount shift=0`: one instruction per ns). The
    semihosting console goes to a file (QEMU sends it to stderr when stdout is no terminal,
    mixed with its own messages)."""
    console = firmware.elf.with_suffix(".out")
    console.unlink(missing_ok=True)
    _run(
        [
            QEMU,
            "-M",
            firmware.cpu.machine,
            "-nographic",
            "-chardev",
            f"file,id=semihosting,path={console}",
            "-semihosting-config",
            "enable=on,target=native,chardev=semihosting",
            "-icount",
            "shift=0",
            "-kernel",
            str(firmware.elf),
        ],
        f"{QEMU} -M {firmware.cpu.machine} {firmware.elf.name}",
        timeout_s,
    )
    return console.read_text() if console.exists() else ""


def run_native(
    model: FirmwareModel,
    directory: Path,
    data_seeds: Sequence[int] = (1,),
    cc: str | None = None,
    optimization: str = "-O2",
    extra_flags: Sequence[str] = (),
    libraries: Sequence[Path] = (),
    resets: Sequence[int] = (),
) -> str:
    """Builds the same harness with the host compiler (strict warnings, plus `extra_flags`),
    links the static `libraries`, and runs it."""
    compiler = cc or os.environ.get("USMP_DIFFERENTIAL_CC", "gcc")
    write_sources(model, directory, data_seeds, resets)
    program = directory / "native"
    _run(
        [
            compiler,
            *strict_flags(compiler),
            optimization,
            "-I",
            str(directory),
            str(directory / "model.c"),
            str(directory / "harness.c"),
            *extra_flags,
            *(str(library) for library in libraries),
            "-o",
            str(program),
            "-lm",
        ],
        f"{compiler} (native)",
    )
    return _run([str(program)], "native run", RUN_TIMEOUT_S)


def harness_inputs(model: FirmwareModel, seed: int) -> list[bytes]:
    """The bytes the harness's `fill` writes into the model's inputs for `seed` (its
    xorshift32: a byte per number, or a float `(n % 129 - 64) / 4` per four bytes)."""
    state = seed & 0x7FFFFFFF | 1

    def next_random() -> int:
        nonlocal state
        state ^= (state << 13) & 0xFFFFFFFF
        state ^= state >> 17
        state ^= (state << 5) & 0xFFFFFFFF
        return state

    values: list[bytes] = []
    for tensor in model.inputs:
        if tensor.is_float:
            floats = [(next_random() % 129 - 64) / 4.0 for _ in range(tensor.size_bytes // 4)]
            values.append(struct.pack(f"<{len(floats)}f", *floats).ljust(tensor.size_bytes, b"\0"))
        else:
            values.append(bytes(next_random() & 0xFF for _ in range(tensor.size_bytes)))
    return values


def printed_outputs(output: str, count: int) -> list[list[bytes]]:
    """Per run, the `count` output tensors the harness printed (`dump`: a name, then hex
    bytes); a run whose status is not 0 is an error."""
    lines = compared_lines(output)
    runs: list[list[bytes]] = []
    for index, line in enumerate(lines):
        match = re.fullmatch(r"run \d+ status (\d+)", line)
        if match is None:
            continue
        if match.group(1) != "0":
            raise FirmwareError(f"the model returned status {match.group(1)}")
        dumps = lines[index + 1 : index + 1 + count]
        runs.append([bytes.fromhex("".join(d.split()[1:])) for d in dumps])
    return runs


def compared_lines(output: str) -> list[str]:
    """The output lines both builds must print identically (not the measurements)."""
    return [line for line in output.splitlines() if not line.startswith(OUTPUT_PREFIX)]


@dataclass(frozen=True)
class Measurement:
    """What one firmware run measured."""

    instructions: int
    stack_bytes: int


def measurement(output: str) -> Measurement:
    values: dict[str, int] = {}
    for line in output.splitlines():
        match = re.fullmatch(rf"{re.escape(OUTPUT_PREFIX)}(\w+) (\d+)", line)
        if match:
            values[match.group(1)] = int(match.group(2))
    return Measurement(values.get("instructions", -1), values.get("stack", -1))


@dataclass
class Comparison:
    """The firmware's and the host's outputs for one model and CPU."""

    model: str
    cpu: str
    firmware_output: str
    native_output: str
    firmware: Firmware
    mismatches: list[str] = field(default_factory=list[str])

    @property
    def ok(self) -> bool:
        return not self.mismatches


def compare(
    model: FirmwareModel,
    directory: Path,
    cpu: Cpu,
    data_seeds: Sequence[int] = (1, 2),
    optimization: str = "-O2",
    native_output: str | None = None,
    resets: Sequence[int] = (),
) -> Comparison:
    """Runs the model on the emulated CPU and on the host (one run per data seed, the state
    reset before the runs in `resets`); lists the output lines that differ."""
    firmware = build_firmware(
        model, directory / cpu.name, cpu, optimization, data_seeds, resets=resets
    )
    firmware_output = run_firmware(firmware)
    if native_output is None:
        native_output = run_native(model, directory / "native", data_seeds, resets=resets)
    want, got = compared_lines(native_output), compared_lines(firmware_output)
    mismatches = [
        f"line {index}: x86 {a[:60]!r} vs {cpu.name} {b[:60]!r}"
        for index, (a, b) in enumerate(zip(want, got, strict=False))
        if a != b
    ]
    if len(want) != len(got):
        mismatches.append(f"x86 printed {len(want)} lines, {cpu.name} {len(got)}")
    return Comparison(model.name, cpu.name, firmware_output, native_output, firmware, mismatches)


def section_sizes(obj: Path) -> dict[str, int]:
    """Bytes of `.text`, `.rodata`, `.data`, `.bss` (each with its `-f*-sections` pieces) and
    of every other allocated section of an object file."""
    listing = _run(["arm-none-eabi-size", "-A", str(obj)], f"size {obj.name}")
    sizes = {".text": 0, ".rodata": 0, ".data": 0, ".bss": 0}
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) < 2 or not parts[0].startswith(".") or not parts[1].isdigit():
            continue
        name, size = parts[0], int(parts[1])
        group = next((g for g in sizes if name == g or name.startswith(g + ".")), None)
        if group is None:
            if name.startswith((".ARM", ".comment", ".debug", ".note")):
                continue
            group = name
        sizes[group] = sizes.get(group, 0) + size
    return sizes


def symbol_address(elf: Path, symbol: str) -> int | None:
    """The address of a symbol in a linked image (None when it has none)."""
    listing = _run(["arm-none-eabi-nm", str(elf)], f"nm {elf.name}")
    for line in listing.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == symbol:
            return int(parts[0], 16)
    return None
