"""The contract of a model file the frontends refuse (TFLite and ONNX alike): `usmp-opt` run
as a user runs it ends with one line `usmp-opt: error: FILE: ...` naming the problem, exit code
1, no traceback, nothing on stdout and no output file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PIPELINE = "usmp-import-memref,convert-linalg-to-loops,usmp"


def run_usmp_opt(*args: str) -> subprocess.CompletedProcess[str]:
    """`usmp-opt ARGS` in a subprocess of this interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "usmp_dialect.tools.usmp_opt", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def assert_refused_in_one_line(model: Path, expected: str) -> None:
    """Compiling `model` to C (the README's pipeline) fails with one line containing
    `expected`, and writes nothing."""
    output = model.parent / "out.c"
    ran = run_usmp_opt(str(model), "-p", PIPELINE, "-t", "c", "-o", str(output))
    assert ran.returncode == 1, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1, ran.stderr
    assert lines[0].startswith(f"usmp-opt: error: {model}: "), lines[0]
    assert expected in lines[0]
    assert "Traceback" not in ran.stderr
    assert ran.stdout == ""
    assert not output.exists()
