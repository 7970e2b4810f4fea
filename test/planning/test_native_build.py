"""The native core's C sources compile cleanly, and the core is built where CI says it must be
(so that its tests cannot be skipped unnoticed)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from usmp_dialect.planning import native

SOURCES = sorted((Path(native.__file__).parent / "csrc").glob("*.c"))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
@pytest.mark.parametrize("source", [s for s in SOURCES if s.name != "module.c"], ids=str)
def test_sources_compile_without_warnings(source: Path) -> None:
    result = subprocess.run(
        ["gcc", "-std=c11", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-fsyntax-only",
         str(source)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_native_core_is_built_when_required() -> None:
    """scripts/test.sh sets USMP_REQUIRE_NATIVE=1: CI machines have a C compiler."""
    if os.environ.get("USMP_REQUIRE_NATIVE") != "1":
        pytest.skip("USMP_REQUIRE_NATIVE is not set")
    assert native.load() is not None, "the native core was not built (pip install -e . again)"
