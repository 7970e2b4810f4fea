"""`usmp-opt`: xdsl-opt with the project's names, the pool flags of SPEC §6 and one-line errors.

Our dialects, passes and targets reach the driver only through the `xdsl.universe` entry point
(`usmp_dialect.universe`), exactly as they reach a stock `xdsl-opt`; registering them here again
would fail. This class only overrides `xDSLOptMain`'s hooks:

* `register_all_arguments` adds the pool flags and turns usage errors into one line, exit 1;
* `setup_pipeline` (run once the arguments are parsed) checks the pool flags, the pass pipeline
  and the target options;
* `apply_passes` declares the flags' pools at the start of each module before the passes run;
* `prepare_input`, `prepare_output` and `run` report unreadable input, an unwritable `-o`,
  parse errors and verifier or pass failures as `usmp-opt: error: ...` with exit code 1.
  Output files appear only once everything succeeded: `-o` and the side outputs of passes
  (`usmp-plan{report= svg=}`, held back by `output_file.deferring_output_files`) are written
  atomically at the end, or not at all. `--verify-diagnostics` / `--parsing-diagnostics` keep
  xDSL's behaviour (the diagnostic on stdout, exit 0).
* `-t project` (SPEC §14) writes a directory, not a stream: `-o DIR` is required and checked
  first, the plans are recorded while the passes run (`recording_plans`), and
  `output_resulting_program` assembles the project, which `run` writes atomically at the end
  (`usmp_dialect.project.directory`) and summarises on stdout (with TFLM's arena for a
  `.tflite` model when `tflite-micro` is installed).
* A model file (a frontend's extension or `-f`) without `-p` gets the canonical pipeline
  (`CANONICAL_PIPELINE`) for the targets that need a planned module (`c`, `c-header`,
  `project`); `.mlir` input keeps the pipeline it is given.

`main` turns anything else (a bug) into one line `usmp-opt: internal error: ...` with exit code
2; `USMP_DEBUG=1` also prints the traceback (see `internal_error`).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Sequence
from io import StringIO
from pathlib import Path
from typing import IO, TYPE_CHECKING, NoReturn, cast, get_type_hints

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline, parse_spec
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from usmp_dialect import __version__
from usmp_dialect.frontends import Importer, get_all_frontends
from usmp_dialect.frontends.errors import ModelImportError
from usmp_dialect.frontends.options import (
    FUSE_MODES,
    HYBRID_MODES,
    IN_PLACE_MODES,
    ImportOptions,
)
from usmp_dialect.passes.plan import PlanRecord, recording_plans
from usmp_dialect.planning import PlanOptions
from usmp_dialect.tools.analyze import ANALYZE_PASSES, analyse_module, analysis_table
from usmp_dialect.tools.internal_error import reported_as_one_line
from usmp_dialect.tools.output_file import (
    OutputFileError,
    check_writable,
    deferring_output_files,
    write_text_atomically,
)
from usmp_dialect.tools.pool_flags import (
    PoolDeclaration,
    PoolFlagError,
    add_pool_arguments,
    declare_pools,
    pool_declarations,
    workspace_size_hint_bytes,
)
from usmp_dialect.tools.progress import (
    clear_progress,
    current_progress,
    progress,
    reporting_progress,
)
from usmp_dialect.tools.symbol_index import indexed_symbol_lookup

if TYPE_CHECKING:
    from usmp_dialect.project.compiled import CompiledModel

PROG = "usmp-opt"
CANONICAL_PIPELINE = "usmp-import-memref,convert-linalg-to-loops,usmp"
"""The pipeline of imported models (README, SPEC §9)."""
PLANNED_TARGETS = ("c", "c-header", "project")
"""Targets that print a planned module: a model file without `-p` gets the canonical pipeline."""
PROJECT_TARGET = "project"
EXIT_STATUS_HELP = (
    "Exit status: 0 on success, 1 on a user error (one line 'usmp-opt: error: ...'), 2 on an "
    "internal error (please report it; USMP_DEBUG=1 prints the traceback)."
)


def fail(message: str) -> NoReturn:
    """Reports a user error as one line on stderr and exits with code 1."""
    sys.stdout.flush()
    clear_progress()
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def one_line(message: str) -> str:
    """A multi-line message (xDSL's diagnostics) as one line."""
    return " ".join(line.strip() for line in message.splitlines() if line.strip())


_EXPECTED_VALUES = {
    "<class 'bool'>": "true or false",
    "<class 'int'>": "an integer",
    "<class 'float'>": "a number",
    "int | float": "a number",
    "<class 'str'>": 'a string ("...")',
    "str | None": 'a string ("...")',
    "int | None": "an integer",
    "float | None": "a number",
}


def _option_type_error(specs: Sequence[tuple[ArgSpec, type]], error: ValueError) -> str | None:
    """Names the option behind xDSL's "Incompatible types: given (...), expected T", given the
    pass or target specs with their classes."""
    message = str(error)
    if not message.startswith("Incompatible types: given "):
        return None
    expected = message.rpartition(", expected ")[2]
    for spec, spec_class in specs:
        hints = get_type_hints(spec_class)
        for option, values in spec.parameters.items():
            hint = hints.get(option.replace("-", "_"))
            if str(hint) == expected and message.startswith(
                f"Incompatible types: given {values}, "
            ):
                given = ",".join(
                    str(value).lower() if isinstance(value, bool) else repr(value)
                    for value in values
                )
                wanted = _EXPECTED_VALUES.get(expected, expected)
                return f"option {option} of '{spec.name}' must be {wanted}, not {given or 'empty'}"
    return None


def _spec_error(flag: str, spec: str, error: ArgSpecParseError) -> str:
    """One line for a pipeline/target spec that does not parse (xDSL prints it with carets)."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    message = lines[-1].strip() if lines else "does not parse"
    columns = [line.index("^") + 1 for line in lines if set(line.strip()) == {"^"}]
    where = f" at column {columns[-1]}" if columns else ""
    return f"invalid {flag} '{spec}'{where}: {message}"


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps help text at spaces, never inside a name: `usmp-assign-pools` stays whole (and a
    comma-separated list such as xDSL's "Available passes are: a,b,c" wraps after its commas).
    The description and epilog keep their lines (the overview is a table); a long line wraps
    under its own indentation."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        text = " ".join(text.replace(",", ", ").split())
        return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            body = line.lstrip()
            # A table row ("  name    text") wraps under its text, other indented lines by 2.
            row = re.match(r"\s+\S+\s{2,}", line)
            leading = len(line) - len(body)
            hanging = len(row.group()) if row else leading + (2 if leading else 0)
            lines += textwrap.wrap(
                body,
                width,
                initial_indent=indent + " " * leading,
                subsequent_indent=indent + " " * hanging,
                break_on_hyphens=False,
                break_long_words=False,
            ) or [""]
        return "\n".join(lines)


CANONICAL_PIPELINE = "usmp-import-memref,convert-linalg-to-loops,usmp"


def _summary(factory: Callable[[], type]) -> str:
    """The first line of a registered class's docstring (without a leading "`-t NAME`: ")."""
    doc = (factory().__doc__ or "").strip()
    first = doc.splitlines()[0] if doc else ""
    return first.split("`: ", 1)[1] if first.startswith("`-t ") and "`: " in first else first


def _table(rows: dict[str, str]) -> list[str]:
    width = max(len(name) for name in rows) + 2
    return [f"  {name.ljust(width)}{text}" for name, text in rows.items()]


def overview() -> str:
    """The start of `usmp-opt --help`: what the tool is for, then this project's passes,
    targets and model frontends (read from their registries, so new ones appear here), and the
    canonical pipeline. Loading every pass and target to read its docstring takes a second, so
    this is built only when the help is printed."""
    from usmp_dialect.backend import get_all_targets
    from usmp_dialect.passes import get_all_passes

    passes = {name: _summary(factory) for name, factory in get_all_passes().items()}
    targets = {name: _summary(factory) for name, factory in get_all_targets().items()}
    frontends = {
        f".{name}": f"-f {name}; needs pip install 'usmp-dialect[{name}]'"
        for name in get_all_frontends()
    }
    return "\n".join(
        [
            "usmp-opt compiles ML models and MLIR programs for microcontrollers: it reads a "
            ".tflite or .onnx model (or MLIR), plans every buffer into memory pools (usmp) and "
            "prints the planned MLIR or C (-t c). It is xdsl-opt with this project's passes, "
            "targets and frontends, plus the pool flags below.",
            "",
            "usmp passes (-p):",
            *_table(passes),
            "",
            "usmp targets (-t, options in braces: -t 'c{prefix=net}'):",
            *_table(targets),
            "",
            "model frontends (by file extension, or -f NAME):",
            *_table(frontends),
            "",
            "canonical pipeline (a model to C; usmp-validate MODEL checks it against TFLM):",
            f"  usmp-opt model.tflite -p '{CANONICAL_PIPELINE}' -t 'c{{prefix=net}}' -o net.c",
            f"  usmp-opt model.tflite -p '{CANONICAL_PIPELINE}' -t 'c-header{{prefix=net}}' "
            "-o net.h",
            "",
            "xDSL's own passes and targets follow ours in the -p and -t lists below.",
        ]
    )


class _ArgumentParser(argparse.ArgumentParser):
    """xDSL's argument parser with the overview at the start of the help."""

    def format_help(self) -> str:
        self.description = overview()
        return super().format_help()


class _OutputBuffer(StringIO):
    """Collects the output for `-o`. `xDSLOptMain.run` closes its output stream even when it
    fails, so closing keeps the text; `UsmpOptMain.run` writes it out only on success."""

    def close(self) -> None:
        pass


class UsmpOptMain(xDSLOptMain):
    """The xDSL optimizer driver with the pool flags; our names come from the universe."""

    version_format = f"{PROG} {__version__} built from xdsl version {{xdsl_version}}"

    pool_declarations: tuple[PoolDeclaration, ...] = ()
    """The pools the flags declare in every module."""

    _output_buffer: _OutputBuffer | None = None
    _analysis_text: str = ""
    _chunk_start_line: int = 1
    _model_bytes: bytes | None = None
    """The bytes of a model file a frontend read (for the project's metadata)."""
    _plans: list[PlanRecord] | None = None
    _project: CompiledModel | None = None

    def __init__(
        self,
        description: str = "usmp-dialect modular optimizer driver",
        args: Sequence[str] | None = None,
    ):
        try:
            super().__init__(description, args)
        except ArgSpecParseError as error:
            # The pass pipeline is checked in setup_pipeline, so this is the -t spec.
            fail(_spec_error("-t", self.args.target, error))

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        add_pool_arguments(arg_parser)
        # xDSLOptMain builds a plain ArgumentParser; ours builds the overview for --help only.
        arg_parser.__class__ = _ArgumentParser
        arg_parser.add_argument(
            "--in-place",
            choices=IN_PLACE_MODES,
            default="all",
            help=(
                "model import: which operators write their output over an input they read last "
                "(all: elementwise ones, and depthwise convolutions where that lowers the peak; "
                "none: no operator in place)"
            ),
        )
        arg_parser.add_argument(
            "--analyze",
            action="store_true",
            help=(
                "plan the module (after the -p passes, by default "
                f"'{ANALYZE_PASSES}') and print its memory per operator instead of the module: "
                "MACs, input/output/scratch bytes, live bytes, the peak and the tensors live "
                "then; no C"
            ),
        )
        arg_parser.add_argument(
            "--hybrid",
            choices=HYBRID_MODES,
            default=HYBRID_MODES[0],
            help=(
                "TFLite layers with int8 weights and float activations: 'quantize' computes "
                "as LiteRT's hybrid kernels (input quantised on the fly; default), "
                "'dequantize' in float with the weights dequantised at import"
            ),
        )
        arg_parser.add_argument(
            "--fuse",
            choices=FUSE_MODES,
            default=FUSE_MODES[0],
            help=(
                "program transformations of a model frontend that lower memory: 'rows' "
                "(default: fused row streaming where it lowers the peak, and TFLite PADs "
                "folded into the window of the layer that reads them) or 'none' (one "
                "function per model operator, as imported)"
            ),
        )
        arg_parser.prog = PROG
        arg_parser.usage = (
            "%(prog)s [-p PASSES] [-t TARGET] [-o OUTPUT_FILE] [options] [input_file]"
        )
        arg_parser.formatter_class = _HelpFormatter
        arg_parser.epilog = EXIT_STATUS_HELP
        arg_parser.error = fail  # usage errors: one line and exit code 1, like the others

    def _target_name(self) -> str:
        return parse_spec(self.args.target).name

    def _model_frontend_name(self) -> str | None:
        """The model frontend that reads the input (None for MLIR text)."""
        name = self.args.frontend
        if name is None and self.args.input_file is not None:
            name = Path(self.args.input_file).suffix.removeprefix(".")
        return name if name in get_all_frontends() else None

    def setup_pipeline(self) -> None:
        """Runs once the arguments are parsed: checks the pool flags, -t and -p."""
        try:
            self.pool_declarations = pool_declarations(self.args)
        except PoolFlagError as error:
            fail(str(error))
        if self.args.analyze:
            self._check_analyze_options()
        self._check_target_options()
        if (
            not self.args.passes
            and self._target_name() in PLANNED_TARGETS
            and self._model_frontend_name() is not None
        ):
            self.args.passes = CANONICAL_PIPELINE
        try:
            super().setup_pipeline()
        except ArgSpecParseError as error:
            fail(_spec_error("-p", self.args.passes, error))
        except (ValueError, DiagnosticException) as error:
            described = None
            if isinstance(error, ValueError):
                specs = [
                    (spec, self.available_passes[spec.name]())
                    for spec in parse_pipeline(self.args.passes)
                    if spec.name in self.available_passes
                ]
                described = _option_type_error(specs, error)
            fail(f"invalid -p '{self.args.passes}': {described or one_line(str(error))}")

    def _check_analyze_options(self) -> None:
        """`--analyze` plans by itself and prints a table: -p may only prepare the module."""
        if self.args.target != "mlir":
            fail("--analyze prints a table, not a target: drop -t")
        if not self.args.passes:
            self.args.passes = ANALYZE_PASSES
            return
        planning = {"usmp", "usmp-plan", "usmp-convert-to-pool-offsets", "convert-pool-to-memref"}
        try:
            names = [spec.name for spec in parse_pipeline(self.args.passes)]
        except ArgSpecParseError:
            return  # reported by setup_pipeline
        for name in names:
            if name in planning:
                fail(
                    f"--analyze plans the module itself: give -p only the passes before "
                    f"planning (not '{name}'; default '{ANALYZE_PASSES}')"
                )

    def _check_target_options(self) -> None:
        """Fails now, not after the passes ran, when `-t` has options its target lacks."""
        spec = parse_spec(self.args.target)
        factory = self.available_targets[spec.name]
        if inspect.signature(factory).parameters:
            return  # an old-style target function: it takes no options
        target_class = cast(Callable[[], type[Target]], factory)()
        try:
            target_class.from_spec(spec)
        except (ValueError, DiagnosticException) as error:
            described = None
            if isinstance(error, ValueError):
                described = _option_type_error([(spec, target_class)], error)
            fail(f"invalid -t '{self.args.target}': {described or one_line(str(error))}")

    def register_all_frontends(self) -> None:
        """xDSL's MLIR frontend plus the model frontends (`.tflite`), by file extension."""
        super().register_all_frontends()
        for extension, factory in get_all_frontends().items():
            self.available_frontends[extension] = self._model_frontend(extension, factory)

    def _model_frontend(
        self, name: str, factory: Callable[[], Importer]
    ) -> Callable[[IO[bytes]], ModuleOp]:
        def parse_model(stream: IO[bytes]) -> ModuleOp:
            self._model_bytes = stream.read()
            importer = factory()
            options = ImportOptions(
                fuse=self.args.fuse,
                in_place=self.args.in_place,
                hybrid=self.args.hybrid,
                workspace_size_hint_bytes=workspace_size_hint_bytes(self.pool_declarations),
                workspace_io=self._workspace_io(),
            )
            try:
                module = importer(self._model_bytes, self.get_input_name(), options)
            except ModelImportError as error:
                fail(str(error))
            module.verify()
            return module

        return parse_model

    def _workspace_io(self) -> bool:
        """Whether the pipeline plans the model's inputs and outputs in the workspace (U4)."""
        from usmp_dialect.passes.create_io_allocates import UsmpCreateIoAllocatesPass
        from usmp_dialect.passes.usmp import UsmpPass

        return any(
            isinstance(spec, UsmpCreateIoAllocatesPass)
            or (isinstance(spec, UsmpPass) and spec.workspace_io)
            for spec in self.pipeline.passes
        )

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except OSError as error:
            fail(f"cannot read input file '{self.get_input_name()}': {error.strerror}")
        except ValueError as error:  # an input file extension without a frontend
            fail(f"{error}; choose a frontend with -f")

    def prepare_output(self) -> IO[str]:
        if self._target_name() == PROJECT_TARGET:
            return self._prepare_project_directory()
        if self.args.output_file is None:
            return sys.stdout
        try:  # fail before the passes run, not after
            check_writable(self.args.output_file)
        except OSError as error:
            fail(f"cannot write output file '{self.args.output_file}': {error.strerror}")
        self._output_buffer = _OutputBuffer()
        return self._output_buffer

    def _prepare_project_directory(self) -> IO[str]:
        """Checks `-o DIR` of `-t project` before any work; the text stream is unused."""
        from usmp_dialect.project.directory import ProjectDirectoryError, check_project_directory

        if self.args.output_file is None:
            fail("-t project writes a directory: give it with -o DIR")
        if self.args.split_input_file:
            fail("-t project writes one model's project: --split-input-file is not supported")
        try:
            check_project_directory(self.args.output_file)
        except ProjectDirectoryError as error:
            fail(str(error))
        return _OutputBuffer()

    def output_resulting_program(self, prog: ModuleOp) -> str:
        if self.args.analyze:
            return self._analysis_text
        if self._target_name() != PROJECT_TARGET:
            return super().output_resulting_program(prog)
        from usmp_dialect.backend.project import ProjectTarget
        from usmp_dialect.project.compiled import assemble
        from usmp_dialect.project.facts import model_identity

        target = ProjectTarget.from_spec(parse_spec(self.args.target))
        data = self._model_bytes
        if data is None:
            data = Path(self.args.input_file).read_bytes() if self.args.input_file else b""
        self._project = assemble(
            self.ctx,
            prog,
            target.prefix,
            target.entry,
            self._plans or [],
            model_identity(data, self.get_input_name()),
            target.constants,
        )
        return ""

    def _write_project(self, project: CompiledModel) -> None:
        """Writes the project directory and prints its summary."""
        from usmp_dialect.project.compiled import summary
        from usmp_dialect.project.directory import ProjectDirectoryError

        directory = self.args.output_file
        try:
            project.write_project(directory)
        except ProjectDirectoryError as error:
            fail(str(error))
        arena = None
        if self._model_frontend_name() == "tflite" and self.args.input_file is not None:
            arena = _tflm_arena(self.args.input_file)
        print(summary(directory, project, arena), end="")

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self._chunk_start_line = start_offset + 1
        return super().parse_chunk(chunk, file_extension, start_offset)

    def setup_pipeline_progress(self) -> None:
        """Names each pass on the progress line as it starts (a terminal only)."""
        callback = self.pipeline.callback

        def reporting(
            previous: ModulePass | None, module: ModuleOp, next_pass: ModulePass | None
        ) -> None:
            if callback is not None:
                callback(previous, module, next_pass)
            if next_pass is not None:
                progress(f"running {next_pass.name}")

        self.pipeline = dataclasses.replace(self.pipeline, callback=reporting)

    def apply_passes(self, prog: ModuleOp) -> None:
        declare_pools(prog, self.pool_declarations)
        super().apply_passes(prog)
        if self.args.analyze:
            self._analyze(prog)

    def _analyze(self, prog: ModuleOp) -> None:
        """Plans `prog` and keeps the `--analyze` table; when planning fails, the table goes
        to stdout (when no -o) before the error."""
        options = PlanOptions(progress=current_progress())
        source = self.get_input_name()
        result, error = analyse_module(self.ctx, prog, source, "main", options)
        self._analysis_text = analysis_table(result)
        if error is not None:
            if self._output_buffer is None:
                clear_progress()
                sys.stdout.write(self._analysis_text)
            raise error

    def _where(self) -> str:
        """The input (and with --split-input-file the chunk) being processed."""
        where = self.get_input_name()
        if self.args.split_input_file:
            where += f" (chunk starting at line {self._chunk_start_line})"
        return where

    def run(self) -> None:
        """Processes the input; user errors end the process with one line and exit code 1."""
        project = self._target_name() == PROJECT_TARGET
        recording = recording_plans() if project else contextlib.nullcontext(None)
        with (
            deferring_output_files() as side_outputs,
            reporting_progress(sys.stderr, PROG),
            recording as plans,
        ):
            self._plans = plans
            self.setup_pipeline_progress()
            try:
                super().run()
            except ParseError as error:
                fail(f"{error.span.get_location()}: {one_line(error.msg)}")
            except UnicodeDecodeError:
                fail(f"{self._where()}: not UTF-8 text")
            except DiagnosticException as error:
                fail(f"{self._where()}: {one_line(str(error))}")
            try:
                side_outputs.commit()
            except OutputFileError as error:
                fail(str(error))
        if self._project is not None:
            self._write_project(self._project)
        if self._output_buffer is not None:
            try:
                write_text_atomically(self.args.output_file, self._output_buffer.getvalue())
            except OSError as error:
                fail(f"cannot write output file '{self.args.output_file}': {error.strerror}")


def _tflm_arena(model: str) -> tuple[int, int] | None:
    """TFLM's arena (head, total) for a `.tflite` file, when PyPI `tflite-micro` is installed
    and runs the model (None otherwise)."""
    import subprocess

    from usmp_dialect.testing import tflm

    if not tflm.available():
        return None
    try:
        arena = tflm.arena(Path(model))
    except (subprocess.CalledProcessError, RuntimeError, OSError):
        return None
    return arena.head_bytes, arena.total_bytes


def main() -> None:
    indexed_symbol_lookup()
    with reported_as_one_line(PROG):
        UsmpOptMain().run()


if __name__ == "__main__":
    main()
