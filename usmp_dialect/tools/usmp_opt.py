"""`usmp-opt`: xdsl-opt with the project's names, the pool flags of SPEC §6 and one-line errors.

Our dialects, passes and targets reach the driver only through the `xdsl.universe` entry point
(`usmp_dialect.universe`), exactly as they reach a stock `xdsl-opt`; registering them here again
would fail. This class only overrides `xDSLOptMain`'s hooks:

* `register_all_arguments` adds the pool flags and turns usage errors into one line, exit 1;
* `setup_pipeline` (run once the arguments are parsed) checks the pool flags, the pass pipeline
  and the target options;
* `apply_passes` declares the flags' pools at the start of each module before the passes run;
* `prepare_input`, `prepare_output` and `run` report unreadable input, parse errors and
  verifier or pass failures as `usmp-opt: error: ...` with exit code 1, and write `-o` only
  once everything succeeded. `--verify-diagnostics` / `--parsing-diagnostics` keep xDSL's
  behaviour (the diagnostic on stdout, exit 0).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import textwrap
from collections.abc import Callable, Sequence
from io import StringIO
from typing import IO, NoReturn, cast

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.arg_spec import parse_spec
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException, ParseError
from xdsl.utils.target import Target
from xdsl.xdsl_opt_main import xDSLOptMain

from usmp_dialect import __version__
from usmp_dialect.tools.output_file import write_text_atomically
from usmp_dialect.tools.pool_flags import (
    PoolDeclaration,
    PoolFlagError,
    add_pool_arguments,
    declare_pools,
    pool_declarations,
)

PROG = "usmp-opt"


def fail(message: str) -> NoReturn:
    """Reports a user error as one line on stderr and exits with code 1."""
    sys.stdout.flush()
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(1)


def _one_line(message: str) -> str:
    return " ".join(line.strip() for line in message.splitlines() if line.strip())


def _spec_error(flag: str, spec: str, error: ArgSpecParseError) -> str:
    """One line for a pipeline/target spec that does not parse (xDSL prints it with carets)."""
    lines = [line for line in str(error).splitlines() if line.strip()]
    message = lines[-1].strip() if lines else "does not parse"
    columns = [line.index("^") + 1 for line in lines if set(line.strip()) == {"^"}]
    where = f" at column {columns[-1]}" if columns else ""
    return f"invalid {flag} '{spec}'{where}: {message}"


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps help text at spaces, never inside a name: `usmp-assign-pools` stays whole (and a
    comma-separated list such as xDSL's "Available passes are: a,b,c" wraps after its commas)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        text = " ".join(text.replace(",", ", ").split())
        return textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)


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
    _chunk_start_line: int = 1

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
        arg_parser.prog = PROG
        arg_parser.formatter_class = _HelpFormatter
        arg_parser.error = fail  # usage errors: one line and exit code 1, like the others

    def setup_pipeline(self) -> None:
        """Runs once the arguments are parsed: checks the pool flags, -t and -p."""
        try:
            self.pool_declarations = pool_declarations(self.args)
        except PoolFlagError as error:
            fail(str(error))
        self._check_target_options()
        try:
            super().setup_pipeline()
        except ArgSpecParseError as error:
            fail(_spec_error("-p", self.args.passes, error))
        except (ValueError, DiagnosticException) as error:
            fail(f"invalid -p '{self.args.passes}': {_one_line(str(error))}")

    def _check_target_options(self) -> None:
        """Fails now, not after the passes ran, when `-t` has options its target lacks."""
        spec = parse_spec(self.args.target)
        factory = self.available_targets[spec.name]
        if inspect.signature(factory).parameters:
            return  # an old-style target function: it takes no options
        try:
            cast(Callable[[], type[Target]], factory)().from_spec(spec)
        except (ValueError, DiagnosticException) as error:
            fail(f"invalid -t '{self.args.target}': {_one_line(str(error))}")

    def prepare_input(self) -> tuple[list[tuple[IO[bytes], int]], str]:
        try:
            return super().prepare_input()
        except OSError as error:
            fail(f"cannot read input file '{self.get_input_name()}': {error.strerror}")
        except ValueError as error:  # an input file extension without a frontend
            fail(f"{error}; choose a frontend with -f")

    def prepare_output(self) -> IO[str]:
        if self.args.output_file is None:
            return sys.stdout
        self._output_buffer = _OutputBuffer()
        return self._output_buffer

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        self._chunk_start_line = start_offset + 1
        return super().parse_chunk(chunk, file_extension, start_offset)

    def apply_passes(self, prog: ModuleOp) -> None:
        declare_pools(prog, self.pool_declarations)
        super().apply_passes(prog)

    def run(self) -> None:
        """Processes the input; user errors end the process with one line and exit code 1."""
        try:
            super().run()
        except ParseError as error:
            fail(f"{error.span.get_location()}: {_one_line(error.msg)}")
        except DiagnosticException as error:
            where = self.get_input_name()
            if self.args.split_input_file:
                where += f" (chunk starting at line {self._chunk_start_line})"
            fail(f"{where}: {_one_line(str(error))}")
        if self._output_buffer is not None:
            try:
                write_text_atomically(self.args.output_file, self._output_buffer.getvalue())
            except OSError as error:
                fail(f"cannot write output file '{self.args.output_file}': {error.strerror}")


def main() -> None:
    UsmpOptMain().run()


if __name__ == "__main__":
    main()
