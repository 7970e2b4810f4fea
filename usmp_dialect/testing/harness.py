"""The differential harness: a program planned with sharing must compute what it computes with
every buffer separate.

For one generated program and each algorithm A, in this process (no driver start-up per call):
parse, run `usmp{algorithm=A workspace-io=...}`, print the C source and header (targets `c`
and `c-header`); the same with `algorithm=no_reuse` (the reference lowering: every buffer has
its own bytes). A small generated C `main` fills the inputs with the same pseudo-random data,
runs the model and prints every output in hex. Each lowering is compiled with the strict
warning set of SPEC §11 (`STRICT_FLAGS`: `-std=c11 -Wall -Wextra -Werror -Wpedantic
-Wcast-align=strict -Wconversion -Wshadow -Wdouble-promotion`; the planned ones also with
`-fsanitize=address,undefined`), run, and the outputs must be identical.

Compilation and runs go to a thread pool (gcc and the programs run in parallel with the
in-process planning of the next lowering).
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from usmp_dialect.testing.generator import GeneratedProgram

REFERENCE_ALGORITHM = "no_reuse"
PREFIX = "model"
STRICT_FLAGS = (
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-Wpedantic",
    "-Wcast-align=strict",
    "-Wconversion",
    "-Wshadow",
    "-Wdouble-promotion",
)
"""The embedded warning set the generated C is clean under (SPEC §11), for gcc."""


def strict_flags(cc: str) -> tuple[str, ...]:
    """`STRICT_FLAGS` for the compiler `cc` (clang spells `-Wcast-align=strict` as
    `-Wcast-align`, which is always strict there)."""
    if "clang" in Path(cc).name:
        return tuple("-Wcast-align" if f == "-Wcast-align=strict" else f for f in STRICT_FLAGS)
    return STRICT_FLAGS


REFERENCE_FLAGS = ("-O1",)
"""The reference build is optimised (gcc's flow warnings need it)."""
SANITIZE_FLAGS = ("-O0", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all")
"""The planned builds run under the sanitizers (-O0: they compile faster)."""
RUN_TIMEOUT_S = 20.0


def gcc_path() -> str | None:
    """The gcc the harness uses (None when there is none)."""
    return shutil.which(os.environ.get("USMP_DIFFERENTIAL_CC", "gcc"))


def planner_algorithms() -> list[str]:
    """Every registered algorithm except the reference, sorted."""
    from usmp_dialect.planning import ALGORITHMS

    return sorted(name for name in ALGORITHMS if name != REFERENCE_ALGORITHM)


@cache
def pipeline_context() -> Context:
    from xdsl.universe import Universe

    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx


@dataclass(frozen=True)
class Lowered:
    """One lowering of a program: the planned IR, the C source and header, the C interface."""

    algorithm: str
    module: ModuleOp
    """The planned module (print it to see the planned IR)."""
    source: str
    header: str
    external_pools: tuple[tuple[str, str, bool], ...]
    """(C field, upper-case macro part, is constant) of each external pool."""


class LoweringError(Exception):
    """The pipeline or the C backend failed on a program."""

    def __init__(self, algorithm: str, stage: str, message: str) -> None:
        super().__init__(f"{stage} ({algorithm}): {message}")
        self.algorithm = algorithm
        self.stage = stage


def pool_flags(program: GeneratedProgram) -> list[str] | None:
    """The `usmp-opt` flags (SPEC §6) declaring the program's pools, or None when its pools
    cannot all be declared by flags (none declared, or a pool alignment, which has no flag)."""
    if not program.pools or any(p.alignment is not None for p in program.pools):
        return None
    flags: list[str] = []
    for kind in ("workspace", "constant"):
        pools = [p for p in program.pools if p.kind == kind]
        if not pools:
            continue
        flags.append(f"--{kind}-pools={','.join(p.name for p in pools)}")
        targets = [f"{p.name}:{t}" for p in pools for t in p.targets]
        flags.append(f"--{kind}-pools-targets={','.join(targets)}")
        hints = [f"{p.name}:{p.capacity_bytes}" for p in pools if p.capacity_bytes is not None]
        if hints:
            flags.append(f"--{kind}-pools-size-hint-bytes={','.join(hints)}")
    internal = [p.name for p in program.pools if p.internal]
    if internal:
        flags.append(f"--internal-pools={','.join(internal)}")
    return flags


def _without_pool_declarations(text: str) -> str:
    return "\n".join(line for line in text.split("\n") if not line.startswith("  pool."))


def parse(program: GeneratedProgram, declare_by_flags: bool = False) -> ModuleOp:
    """The program's module, verified (raises LoweringError when the text is invalid). With
    `declare_by_flags`, its pools are left out of the text and declared through `usmp-opt`'s
    pool-flag machinery instead (`pool_flags`)."""
    try:
        text = program.text
        flags = pool_flags(program) if declare_by_flags else None
        if flags is not None:
            text = _without_pool_declarations(text)
        module = Parser(pipeline_context(), text, f"seed{program.seed}.mlir").parse_module()
        if flags is not None:
            from usmp_dialect.tools.pool_flags import (
                add_pool_arguments,
                declare_pools,
                pool_declarations,
            )

            arguments = argparse.ArgumentParser()
            add_pool_arguments(arguments)
            declare_pools(module, pool_declarations(arguments.parse_args(flags)))
        module.verify()
    except Exception as error:
        message = " ".join(str(error).split()) or type(error).__name__
        raise LoweringError("-", "parse", f"{type(error).__name__}: {message}") from error
    return module


def lower(
    program: GeneratedProgram,
    algorithm: str,
    time_limit_s: float = 2.0,
    seed: int = 0,
    parsed: ModuleOp | None = None,
) -> Lowered:
    """Plans and prints `program` with `algorithm`, in process (on a copy of `parsed` when
    given, which saves parsing the text again)."""
    from usmp_dialect.backend.c.program import build_interface
    from usmp_dialect.backend.c.target import CHeaderTarget, CTarget
    from usmp_dialect.passes.usmp import UsmpPass

    ctx = pipeline_context()
    module = parse(program) if parsed is None else parsed.clone()
    stage = "usmp pass"
    try:
        UsmpPass(
            algorithm=algorithm,
            workspace_io=program.workspace_io,
            time_limit=time_limit_s,
            seed=seed,
        ).apply(ctx, module)
        stage = "verify planned IR"
        module.verify()
        stage = "c target"
        source = io.StringIO()
        CTarget(prefix=PREFIX).emit(ctx, module, source)
        header = io.StringIO()
        CHeaderTarget(prefix=PREFIX).emit(ctx, module, header)
        interface = build_interface(module, PREFIX, "main")
    except Exception as error:  # every failure of a pass or printer is a finding
        message = " ".join(str(error).split()) or type(error).__name__
        raise LoweringError(algorithm, stage, f"{type(error).__name__}: {message}") from error
    upper = PREFIX.upper()
    external = tuple(
        (pool.field, f"{upper}_{pool.field.upper()}", pool.const)
        for pool in interface.pools
        if not pool.internal
    )
    return Lowered(algorithm, module, source.getvalue(), header.getvalue(), external)


def harness_source(program: GeneratedProgram, lowered: Lowered, data_seed: int) -> str:
    """A C `main` that fills the inputs from `data_seed`, runs the model and prints the outputs
    (hex), through the interface of SPEC §7 (U4: `model_map_inputs`/`model_map_outputs`)."""
    p = PREFIX
    lines = [
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <stdio.h>",
        "#include <string.h>",
        f'#include "{p}.h"',
        "",
        f"static uint32_t random_state = {data_seed & 0x7FFFFFFF | 1}u;",
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
        "static void dump(const char* name, const void* data, size_t bytes) {",
        "  const uint8_t* in = (const uint8_t*)data;",
        '  printf("%s", name);',
        '  for (size_t i = 0; i < bytes; ++i) printf(" %02x", in[i]);',
        '  printf("\\n");',
        "}",
        "",
    ]
    for field, macro, const in lowered.external_pools:
        if const:
            size = f"{macro}_CONSTANT_POOL_SIZE"
            lines.append(
                f"static const _Alignas(64) uint8_t pool_{field}[{size} > 0 ? {size} : 1] = "
                f"{{ {macro}_CONSTANT_POOL_DATA }};"
            )
        else:
            size = f"{macro}_WORKSPACE_POOL_SIZE"
            lines.append(f"static _Alignas(64) uint8_t pool_{field}[{size} > 0 ? {size} : 1];")
    if not program.workspace_io:
        for tensor in program.inputs + program.outputs:
            lines.append(f"static _Alignas(64) uint8_t io_{tensor.name}[{tensor.size_bytes}];")
    lines += ["", "int main(void) {"]
    uses_pools = program.workspace_io or bool(lowered.external_pools)
    if lowered.external_pools:
        fields = ", ".join(
            f".{field} = (void*)pool_{field}" for field, _, _ in lowered.external_pools
        )
        lines.append(f"  struct {p}_workspace_pools pools = {{ {fields} }};")
        lines.append(f"  struct {p}_workspace_pools* pools_pointer = &pools;")
    elif uses_pools:
        # Every pool is internal: the struct is only declared, the functions take NULL.
        lines.append(f"  struct {p}_workspace_pools* pools_pointer = NULL;")
    if program.workspace_io:
        lines.append(f"  struct {p}_inputs inputs = {p}_map_inputs(pools_pointer);")
        lines.append(f"  struct {p}_outputs outputs = {p}_map_outputs(pools_pointer);")
        for tensor in program.inputs:
            is_float = int(tensor.element == "f32")
            lines.append(f"  fill(inputs.{tensor.name}, {tensor.size_bytes}, {is_float});")
        # No poison in the outputs here: under U4 an output may share bytes with an input
        # whose life ends before the output's begins.
        lines.append(f"  int32_t status = {p}_run(pools_pointer);")
    else:
        for tensor in program.inputs:
            is_float = int(tensor.element == "f32")
            lines.append(f"  fill(io_{tensor.name}, {tensor.size_bytes}, {is_float});")
        for tensor in program.outputs:
            lines.append(f"  memset(io_{tensor.name}, 0xA5, {tensor.size_bytes});")
        inputs = ", ".join(f".{t.name} = io_{t.name}" for t in program.inputs)
        outputs = ", ".join(f".{t.name} = io_{t.name}" for t in program.outputs)
        lines.append(f"  struct {p}_inputs inputs = {{ {inputs} }};")
        lines.append(f"  struct {p}_outputs outputs = {{ {outputs} }};")
        pools_argument = ", pools_pointer" if uses_pools else ""
        lines.append(f"  int32_t status = {p}_run(&inputs, &outputs{pools_argument});")
    lines.append('  printf("status %d\\n", (int)status);')
    for tensor in program.outputs:
        lines.append(f'  dump("{tensor.name}", outputs.{tensor.name}, {tensor.size_bytes});')
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


@dataclass(frozen=True)
class RunResult:
    """What one compiled lowering printed (or why it did not run)."""

    algorithm: str
    ok: bool
    output: str
    """The program's stdout when ok, else the compiler's or the run's diagnostics."""
    stage: str = "run"
    warnings: str = ""
    """gcc's diagnostics when the C only compiled without -Werror (the run still counts)."""


def compile_and_run(
    directory: Path, lowered: Lowered, harness: str, sanitize: bool, cc: str
) -> RunResult:
    """Writes the files to `directory`, compiles and runs them."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{PREFIX}.c").write_text(lowered.source)
    (directory / f"{PREFIX}.h").write_text(lowered.header)
    (directory / "harness.c").write_text(harness)
    executable = directory / "program"
    command = [
        cc,
        *strict_flags(cc),
        *(SANITIZE_FLAGS if sanitize else REFERENCE_FLAGS),
        "-I",
        str(directory),
        str(directory / f"{PREFIX}.c"),
        str(directory / "harness.c"),
        "-o",
        str(executable),
        "-lm",
    ]
    built = subprocess.run(command, capture_output=True, text=True, check=False)
    warnings = ""
    if built.returncode and "[-Werror=" in built.stderr:
        # A warning is a finding of its own; compile without -Werror to still compare outputs.
        warnings = _tail(built.stderr)
        lenient = [flag for flag in command if flag != "-Werror"]
        built = subprocess.run(lenient, capture_output=True, text=True, check=False)
    if built.returncode:
        return RunResult(lowered.algorithm, False, _tail(built.stderr), "gcc")
    environment = dict(os.environ)
    environment["ASAN_OPTIONS"] = "detect_leaks=0"
    environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    try:
        ran = subprocess.run(
            [str(executable)],
            capture_output=True,
            text=True,
            check=False,
            timeout=RUN_TIMEOUT_S,
            env=environment,
        )
    except subprocess.TimeoutExpired:
        return RunResult(lowered.algorithm, False, f"timed out after {RUN_TIMEOUT_S} s", "run")
    if ran.returncode or ran.stderr.strip():
        detail = f"exit code {ran.returncode}: {_tail(ran.stderr)}"
        return RunResult(lowered.algorithm, False, detail, "run")
    return RunResult(lowered.algorithm, True, ran.stdout, warnings=warnings)


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


@dataclass(frozen=True)
class Finding:
    """A difference or a failure for one program and one algorithm."""

    seed: int
    algorithm: str
    kind: str
    """"mismatch" (outputs differ), "lowering" (a pass or the C printer failed), "gcc" (the C
    does not compile), "gcc-warning" (it compiles only without -Werror), "run" (crash, sanitizer
    report, timeout), "reference" (the no_reuse lowering failed), "generator" (invalid IR)."""
    detail: str


@dataclass(frozen=True)
class ProgramReport:
    seed: int
    use_case: str
    algorithms: tuple[str, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings


def _first_difference(expected: str, actual: str) -> str:
    for want, got in zip(expected.splitlines(), actual.splitlines(), strict=False):
        if want != got:
            name = want.split(" ", 1)[0]
            want_bytes, got_bytes = want.split()[1:], got.split()[1:]
            positions = [
                i for i, (a, b) in enumerate(zip(want_bytes, got_bytes, strict=False)) if a != b
            ]
            return (
                f"output '{name}' differs at {len(positions)} byte(s), first at byte "
                f"{positions[0] if positions else '?'}"
            )
    return "outputs differ in length"


@dataclass
class PendingProgram:
    """A program whose lowerings are compiling and running in the executor."""

    program: GeneratedProgram
    algorithms: tuple[str, ...]
    directory: Path
    findings: list[Finding]
    futures: dict[str, Future[RunResult]]
    lowerings: dict[str, Lowered]

    def finish(self, keep: bool = False) -> ProgramReport:
        """Waits for the runs and compares every planned output with the reference's. The
        files of a program with findings are kept (with each lowering's planned IR)."""
        program = self.program
        findings = list(self.findings)
        results = {name: future.result() for name, future in self.futures.items()}
        reference = results.get(REFERENCE_ALGORITHM)
        if reference is not None and not reference.ok:
            findings.append(
                Finding(program.seed, REFERENCE_ALGORITHM, "reference", reference.output)
            )
        for algorithm in [REFERENCE_ALGORITHM, *self.algorithms]:
            result = results.get(algorithm)
            if result is not None and result.warnings:
                findings.append(Finding(program.seed, algorithm, "gcc-warning", result.warnings))
        for algorithm in self.algorithms:
            result = results.get(algorithm)
            if result is None:
                continue
            if not result.ok:
                findings.append(Finding(program.seed, algorithm, result.stage, result.output))
            elif reference is not None and reference.ok and result.output != reference.output:
                detail = _first_difference(reference.output, result.output)
                findings.append(Finding(program.seed, algorithm, "mismatch", detail))
        if findings:
            for algorithm, lowered in self.lowerings.items():
                directory = self.directory / algorithm
                directory.mkdir(parents=True, exist_ok=True)
                (directory / "planned.mlir").write_text(str(lowered.module))
            (self.directory / "program.mlir").write_text(program.text)
        elif not keep:
            shutil.rmtree(self.directory, ignore_errors=True)
        return ProgramReport(program.seed, program.use_case, self.algorithms, tuple(findings))


def start_differential(
    program: GeneratedProgram, algorithms: Sequence[str], executor: Executor, workdir: Path
) -> PendingProgram:
    """Lowers `program` with the reference and each of `algorithms` (in this thread) and hands
    the compilations and runs to `executor`. Files go to `workdir/seed<N>/<algorithm>/`."""
    cc = gcc_path()
    if cc is None:
        raise RuntimeError("gcc not found (set USMP_DIFFERENTIAL_CC)")
    pending = PendingProgram(
        program, tuple(algorithms), workdir / f"seed{program.seed}", [], {}, {}
    )
    try:
        parsed = parse(program)
    except LoweringError as error:
        pending.findings.append(Finding(program.seed, "-", "generator", str(error)))
        return pending
    # Every other program with flag-expressible pools has them declared by the pool flags for
    # the planned lowerings (the reference keeps the declarations of the text).
    flagged = parsed
    if program.seed % 2 and pool_flags(program) is not None:
        try:
            flagged = parse(program, declare_by_flags=True)
        except LoweringError as error:
            pending.findings.append(Finding(program.seed, "-", "pool-flags", str(error)))
            return pending
    data_seed = program.seed * 7919 + 17
    for algorithm in [REFERENCE_ALGORITHM, *algorithms]:
        try:
            source = parsed if algorithm == REFERENCE_ALGORITHM else flagged
            lowered = lower(program, algorithm, parsed=source)
        except LoweringError as error:
            kind = "reference" if algorithm == REFERENCE_ALGORITHM else "lowering"
            pending.findings.append(Finding(program.seed, algorithm, kind, str(error)))
            continue
        pending.lowerings[algorithm] = lowered
        pending.futures[algorithm] = executor.submit(
            compile_and_run,
            pending.directory / algorithm,
            lowered,
            harness_source(program, lowered, data_seed),
            algorithm != REFERENCE_ALGORITHM,
            cc,
        )
    return pending


def run_differential(
    program: GeneratedProgram,
    algorithms: Sequence[str],
    executor: Executor | None = None,
    workdir: Path | None = None,
    keep: bool = False,
) -> ProgramReport:
    """Runs `program` lowered with each of `algorithms` and with the reference; reports every
    mismatch or failure (files in `workdir`, a temporary directory by default)."""
    own_executor = executor is None
    pool = executor or ThreadPoolExecutor(max_workers=2)
    root = Path(tempfile.mkdtemp(prefix="usmp-diff-")) if workdir is None else workdir
    try:
        report = start_differential(program, algorithms, pool, root).finish(keep)
    finally:
        if own_executor:
            pool.shutdown()
    if workdir is None and report.ok and not keep:
        shutil.rmtree(root, ignore_errors=True)
    return report


def rotate(algorithms: Sequence[str], index: int, count: int) -> list[str]:
    """`count` algorithms starting at position `index * count` (cyclically): spreads the
    algorithms over a batch of programs."""
    if count >= len(algorithms):
        return list(algorithms)
    start = (index * count) % len(algorithms)
    return [algorithms[(start + k) % len(algorithms)] for k in range(count)]


def describe(findings: Iterable[Finding]) -> str:
    return "\n".join(f"seed {f.seed} [{f.algorithm}] {f.kind}: {f.detail}" for f in findings)
