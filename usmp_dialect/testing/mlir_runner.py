"""Running programs with LLVM's MLIR tools (Debian's `mlir-22-tools`): a check of planned
programs that does not go through our C printer.

* `bufferize`: tensor programs through `mlir-opt --one-shot-bufferize` (upstream's default,
  buffers returned from functions);
* `run_entry`: a module plus a generated `@main` driver, lowered to the LLVM dialect with the
  pipeline of SPEC §10 (`LOWER_TO_LLVM`) and executed by `mlir-runner`. The driver fills every
  argument of the entry function with a fixed pattern, calls it and prints the arguments that
  are not pools, then its results, each element as an integer (floats by their bits), so two
  runs print the same text exactly when they compute the same bytes.

`scripts/install_mlir_tools.sh` installs the tools.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import (
    AnyFloat,
    Float32Type,
    Float64Type,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.parser import Parser

from usmp_dialect.passes.convert_pool_to_memref import DATA_SUFFIX

LLVM_BIN = Path("/usr/lib/llvm-22/bin")
LLVM_LIB = Path("/usr/lib/llvm-22/lib")
BUFFERIZE = (
    "--one-shot-bufferize=bufferize-function-boundaries "
    "function-boundary-type-conversion=identity-layout-map"
)
LOWER_TO_LLVM = (
    "--convert-linalg-to-loops",
    "--lower-affine",
    "--convert-scf-to-cf",
    "--expand-strided-metadata",
    "--finalize-memref-to-llvm",
    "--convert-arith-to-llvm",
    "--convert-math-to-llvm",
    "--convert-cf-to-llvm",
    "--convert-func-to-llvm",
    "--reconcile-unrealized-casts",
)
"""SPEC §10's lowering of the converted program to the LLVM dialect."""
TIMEOUT_S = 60.0


def _tool(name: str) -> str | None:
    installed = LLVM_BIN / name
    if installed.is_file() and os.access(installed, os.X_OK):
        return str(installed)
    return shutil.which(f"{name}-22")


def mlir_opt_path() -> str | None:
    """LLVM 22's `mlir-opt` (None when `mlir-22-tools` is not installed)."""
    return _tool("mlir-opt")


def mlir_runner_path() -> str | None:
    """LLVM 22's `mlir-runner` (None when `mlir-22-tools` is not installed)."""
    return _tool("mlir-runner")


def runner_libraries() -> list[str]:
    """The runner-utils libraries the drivers' print functions live in."""
    found: list[str] = []
    for name in ("mlir_runner_utils", "mlir_c_runner_utils"):
        # The unversioned .so link comes with libmlir-22-dev; the tools ship .so.22.1.
        candidates = [LLVM_LIB / f"lib{name}.so", *sorted(LLVM_LIB.glob(f"lib{name}.so.*"))]
        found.append(str(next((c for c in candidates if c.exists()), candidates[0])))
    return found


SKIP_REASON = (
    "LLVM 22's mlir-opt/mlir-runner not found (/usr/lib/llvm-22/bin or mlir-opt-22 on PATH): "
    "run scripts/install_mlir_tools.sh"
)


class ToolError(Exception):
    """An MLIR tool failed (its stderr is the message)."""


def run_tool(command: Sequence[str], text: str) -> str:
    """Runs `command` with `text` on stdin; its stdout, or ToolError with its stderr."""
    result = subprocess.run(
        list(command), input=text, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    if result.returncode != 0:
        raise ToolError(f"{Path(command[0]).name} failed:\n{result.stderr.strip()}")
    return result.stdout


def mlir_opt(text: str, *options: str) -> str:
    path = mlir_opt_path()
    assert path is not None, SKIP_REASON
    return run_tool([path, *options], text)


def bufferize(text: str) -> str:
    """The tensor program `text` bufferized as upstream does by default (functions return
    freshly allocated buffers)."""
    return mlir_opt(text, BUFFERIZE)


@dataclass(frozen=True)
class EntrySignature:
    """What the driver needs about the entry function."""

    arguments: tuple[MemRefType, ...]
    results: tuple[MemRefType, ...]
    printed_arguments: int
    """The leading arguments the driver prints (the trailing ones are pools)."""
    argument_data: tuple[tuple[int, str], ...] = ()
    """(argument, global): arguments the driver fills from a global instead of the pattern
    (external constant pools from their `@<pool>_data`)."""


def entry_signature(
    module: ModuleOp, entry: str, printed_arguments: int | None = None
) -> EntrySignature:
    """The signature of `entry` in `module` (every argument printed unless told)."""
    for op in module.walk():
        if isinstance(op, func.FuncOp) and op.sym_name.data == entry:
            inputs = tuple(op.function_type.inputs.data)
            outputs = tuple(op.function_type.outputs.data)
            for t in (*inputs, *outputs):
                if not isinstance(t, MemRefType):
                    raise ValueError(f"@{entry} takes or returns a {t}: only memrefs")
            count = len(inputs) if printed_arguments is None else printed_arguments
            globals_ = {g.sym_name.data for g in module.walk() if isinstance(g, memref.GlobalOp)}
            data = tuple(
                (k, f"{argument.name_hint}{DATA_SUFFIX}")
                for k, argument in enumerate(op.body.block.args)
                if k >= count and f"{argument.name_hint}{DATA_SUFFIX}" in globals_
            )
            return EntrySignature(inputs, outputs, count, data)  # pyright: ignore[reportArgumentType]
    raise ValueError(f"no function @{entry}")


def parse_module(text: str) -> ModuleOp:
    from usmp_dialect.testing.harness import pipeline_context

    return Parser(pipeline_context(), text).parse_module()


def _type(memref_type: MemRefType) -> str:
    shape = "x".join(str(d) for d in memref_type.get_shape())
    return (
        f"memref<{shape}x{memref_type.element_type}>"
        if shape
        else f"memref<{memref_type.element_type}>"
    )


def _parallel(rank: int) -> str:
    return ", ".join(['"parallel"'] * rank)


def _print_width(memref_type: MemRefType) -> int:
    element = memref_type.element_type
    if isinstance(element, Float64Type) or (
        isinstance(element, IntegerType) and element.width.data > 32
    ):
        return 64
    return 32


def _fill(lines: list[str], value: str, memref_type: MemRefType, salt: int) -> None:
    """Writes a fixed pattern of small values into `value` (floats: multiples of 1/8)."""
    rank = len(memref_type.get_shape())
    element = memref_type.element_type
    shape = memref_type.get_shape()
    dims = ", ".join(f"d{i}" for i in range(rank))
    lines.append(
        f"    linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({dims})>], "
        f"iterator_types = [{_parallel(rank)}]}} outs({value} : "
        f"{_type(memref_type)}) {{"
    )
    lines.append(f"    ^bb0(%old: {element}):")
    lines.append("      %lin0 = arith.constant 0 : index")
    previous = "%lin0"
    for i in range(rank):
        lines.append(f"      %i{i} = linalg.index {i} : index")
        lines.append(f"      %n{i} = arith.constant {shape[i]} : index")
        lines.append(f"      %s{i} = arith.muli {previous}, %n{i} : index")
        lines.append(f"      %lin{i + 1} = arith.addi %s{i}, %i{i} : index")
        previous = f"%lin{i + 1}"
    lines.append(f"      %x = arith.index_cast {previous} : index to i32")
    lines.append("      %k37 = arith.constant 37 : i32")
    lines.append(f"      %k11 = arith.constant {11 + salt} : i32")
    lines.append("      %k23 = arith.constant 23 : i32")
    lines.append("      %m = arith.muli %x, %k37 : i32")
    lines.append("      %a = arith.addi %m, %k11 : i32")
    lines.append("      %r = arith.remui %a, %k23 : i32")
    lines.append("      %kc = arith.constant 11 : i32")
    lines.append("      %v = arith.subi %r, %kc : i32")
    result = "%e"
    if isinstance(element, AnyFloat):
        lines.append(f"      %f = arith.sitofp %v : i32 to {element}")
        lines.append(f"      %eighth = arith.constant 0.125 : {element}")
        lines.append(f"      %e = arith.mulf %f, %eighth : {element}")
    elif isinstance(element, IntegerType) and element.width.data < 32:
        lines.append(f"      %e = arith.trunci %v : i32 to {element}")
    elif isinstance(element, IntegerType) and element.width.data > 32:
        lines.append(f"      %e = arith.extsi %v : i32 to {element}")
    else:
        result = "%v"
    lines.append(f"      linalg.yield {result} : {element}")
    lines.append("    }")


def _print(lines: list[str], value: str, memref_type: MemRefType, index: int) -> None:
    """Prints `value` element by element as integers of the print width."""
    width = _print_width(memref_type)
    element = memref_type.element_type
    shape = memref_type.get_shape()
    rank = len(shape)
    as_int = f"memref<{'x'.join(str(d) for d in shape)}xi{width}>"
    dims = ", ".join(f"d{i}" for i in range(rank))
    name = f"%bits{index}"
    lines.append(f"    {name} = memref.alloc() : {as_int}")
    lines.append(
        f"    linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({dims})>, "
        f"affine_map<({dims}) -> ({dims})>], iterator_types = "
        f"[{_parallel(rank)}]}} ins({value} : {_type(memref_type)}) "
        f"outs({name} : {as_int}) {{"
    )
    lines.append(f"    ^bb0(%x: {element}, %o: i{width}):")
    result = "%b"
    if isinstance(element, Float32Type | Float64Type):
        lines.append(f"      %b = arith.bitcast %x : {element} to i{width}")
    elif isinstance(element, IntegerType) and element.width.data < width:
        lines.append(f"      %b = arith.extsi %x : {element} to i{width}")
    elif isinstance(element, IntegerType):
        result = "%x"
    else:
        raise ValueError(f"cannot print elements of type {element}")
    lines.append(f"      linalg.yield {result} : i{width}")
    lines.append("    }")
    lines.append(f"    %unranked{index} = memref.cast {name} : {as_int} to memref<*xi{width}>")
    lines.append(
        f"    func.call @printMemrefI{width}(%unranked{index}) : (memref<*xi{width}>) -> ()"
    )


def driver(entry: str, signature: EntrySignature) -> str:
    """A `@main` that fills the entry's arguments, calls it and prints what it computed."""
    lines = ["  func.func @main() {"]
    arguments: list[str] = []
    data = dict(signature.argument_data)
    for k, argument_type in enumerate(signature.arguments):
        name = f"%arg_{k}"
        lines.append(f"    {name} = memref.alloc() : {_type(argument_type)}")
        if k in data:
            text_type = _type(argument_type)
            lines.append(f"    %data_{k} = memref.get_global @{data[k]} : {text_type}")
            lines.append(f"    memref.copy %data_{k}, {name} : {text_type} to {text_type}")
        else:
            _fill(lines, name, argument_type, salt=k)
        arguments.append(name)
    results = [f"%res_{k}" for k in range(len(signature.results))]
    argument_types = ", ".join(_type(t) for t in signature.arguments)
    result_types = ", ".join(_type(t) for t in signature.results)
    call = f"func.call @{entry}({', '.join(arguments)}) : ({argument_types}) -> ({result_types})"
    lines.append(f"    {', '.join(results)} = {call}" if results else f"    {call}")
    printed = [
        *zip(arguments[: signature.printed_arguments], signature.arguments, strict=False),
        *zip(results, signature.results, strict=True),
    ]
    for index, (value, value_type) in enumerate(printed):
        _print(lines, value, value_type, index)
    lines.append("    func.return")
    lines.append("  }")
    lines.append("  func.func private @printMemrefI32(memref<*xi32>)")
    lines.append("  func.func private @printMemrefI64(memref<*xi64>)")
    return "\n".join(lines) + "\n"


def with_driver(module_text: str, entry: str, signature: EntrySignature) -> str:
    """`module_text` (one printed module) with the driver added at its end."""
    end = module_text.rstrip().rfind("}")
    if end < 0:
        raise ValueError("not a printed module")
    return module_text[:end] + driver(entry, signature) + "}\n"


def run_entry(module_text: str, entry: str, signature: EntrySignature) -> str:
    """Lowers `module_text` with its driver to LLVM and runs it: what the driver printed."""
    runner = mlir_runner_path()
    assert runner is not None, SKIP_REASON
    lowered = mlir_opt(with_driver(module_text, entry, signature), *LOWER_TO_LLVM)
    libraries = ",".join(runner_libraries())
    output = run_tool(
        [runner, "-e", "main", "-entry-point-result=void", f"-shared-libs={libraries}"], lowered
    )
    # printMemref's header line carries the buffer's address: keep only the data.
    return "\n".join(line for line in output.splitlines() if not line.startswith("Unranked"))


def unplanned_and_planned_outputs(module_text: str) -> tuple[str, str]:
    """What `mlir-runner` prints for an imported model's module (its entry `@main`) as it is
    (allocations, views) and after `usmp-import-memref,convert-linalg-to-loops,usmp,
    convert-pool-to-memref`: the planned program must print the same."""
    from usmp_dialect.validation.host import usmp_opt

    entry = "model"  # the runner's driver is `@main`
    text = module_text.replace("func.func @main(", f"func.func @{entry}(")
    reference = run_entry(text, entry, entry_signature(parse_module(text), entry))
    pipeline = (
        f"usmp-import-memref,convert-linalg-to-loops,usmp{{entry={entry}}},"
        f"convert-pool-to-memref{{entry={entry}}}"
    )
    planned = run_tool([*usmp_opt(), "-p", pipeline], text)
    if "memref.alloc" in planned:
        raise ToolError("the planned module still allocates")
    return reference, run_entry(planned, entry, entry_signature(parse_module(planned), entry))
