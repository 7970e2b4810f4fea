"""Everything the pipeline outputs for some generated programs, as one JSON document.

    python -m usmp_dialect.testing.determinism --cases 10:hill_climb,11:auto

For each case (generator seed : algorithm): the planned IR of
`usmp{algorithm=A workspace-io=...}`, the C source and header, and the plan report of
`usmp{report=...}` without its `plan_time_s` (a wall time). Running this in processes with
different `PYTHONHASHSEED` values and comparing the documents checks that the output depends on
the input alone.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

from usmp_dialect.testing.generator import GeneratedProgram, generate_program
from usmp_dialect.testing.harness import PREFIX, parse, pipeline_context

VOLATILE_KEYS = frozenset({"plan_time_s"})


def without_volatile(value: object) -> object:
    """`value` (parsed JSON) without the keys whose values are wall times."""
    if isinstance(value, dict):
        return {k: without_volatile(v) for k, v in value.items() if k not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [without_volatile(v) for v in value]
    return value


def artifacts(cases: list[tuple[int, str]]) -> dict[str, object]:
    from usmp_dialect.backend.c.target import CHeaderTarget, CTarget
    from usmp_dialect.passes.usmp import UsmpPass

    ctx = pipeline_context()
    result: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="usmp-determinism-") as directory:
        parsed_programs: dict[int, tuple[GeneratedProgram, ModuleOp]] = {}
        for seed, algorithm in cases:
            if seed not in parsed_programs:
                program = generate_program(seed)
                parsed_programs[seed] = (program, parse(program))
            program, parsed = parsed_programs[seed]
            module = parsed.clone()
            report_path = Path(directory) / f"{seed}-{algorithm}.json"
            UsmpPass(
                algorithm=algorithm, workspace_io=program.workspace_io, report=str(report_path)
            ).apply(ctx, module)
            source = io.StringIO()
            CTarget(prefix=PREFIX).emit(ctx, module, source)
            header = io.StringIO()
            CHeaderTarget(prefix=PREFIX).emit(ctx, module, header)
            report = json.loads(report_path.read_text())
            result[f"{seed}/{algorithm}"] = {
                "ir": str(module),
                "c": source.getvalue(),
                "h": header.getvalue(),
                "report": without_volatile(report),
                "report_keys": sorted(report),
            }
    return result


def parse_cases(text: str) -> list[tuple[int, str]]:
    """`SEED:ALGORITHM,...` as pairs."""
    pairs = [item.split(":", 1) for item in text.split(",") if item]
    return [(int(seed), algorithm) for seed, algorithm in pairs]


def format_cases(cases: list[tuple[int, str]]) -> str:
    return ",".join(f"{seed}:{algorithm}" for seed, algorithm in cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--cases", default="3:auto", help="comma-separated SEED:ALGORITHM (generator seed)"
    )
    args = parser.parse_args(argv)
    json.dump(artifacts(parse_cases(args.cases)), sys.stdout, sort_keys=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
