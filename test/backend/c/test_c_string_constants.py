"""`-t c{constants=string}`: constant pools as C string literals hold exactly their bytes
(every byte value, escapes followed by digits, quotes, backslashes and `?`, lines and chunks
of any length), as gcc compiles them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from usmp_dialect.backend.c import program


@pytest.mark.parametrize("line_bytes", [3, 128])
def test_string_literal_round_trips_through_gcc(
    line_bytes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    monkeypatch.setattr(program, "_LINE_BYTES", line_bytes)
    rng = np.random.default_rng(0)
    data = bytes(range(256)) + b'"\\??=9\x0012' + rng.integers(0, 256, 40000, np.uint8).tobytes()
    size = len(data) + 5  # zero padded
    literal = program._string_literal(data, size)
    pragmas = '#pragma GCC diagnostic push\n#pragma GCC diagnostic ignored "-Woverlength-strings"\n'
    source = tmp_path / "lit.c"
    source.write_text(
        "#include <stdio.h>\n"
        f"{pragmas}static const unsigned char pool[{size + 1}] =\n  {literal};\n"
        "#pragma GCC diagnostic pop\n"
        "int main(int argc, char** argv) {\n"
        "  (void)argc;\n"
        '  FILE* f = fopen(argv[1], "wb");\n'
        f"  fwrite(pool, 1, {size}, f);\n"
        "  fclose(f);\n"
        "  return 0;\n"
        "}\n"
    )
    executable = tmp_path / "lit"
    subprocess.run(
        [
            "gcc",
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Wpedantic",
            "-Werror",
            str(source),
            "-o",
            str(executable),
        ],
        check=True,
    )
    out = tmp_path / "out.bin"
    subprocess.run([str(executable), str(out)], check=True)
    assert out.read_bytes() == data + bytes(5)
