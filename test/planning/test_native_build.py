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


def test_a_library_built_from_other_sources_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """An editable install does not rebuild by itself: a library whose ABI number differs from
    native.h's must fall back to numpy rather than be called with the wrong arguments."""
    if native.load() is None:
        pytest.skip("native core not built")
    native.load.cache_clear()
    monkeypatch.setattr(native, "NATIVE_ABI", native.NATIVE_ABI + 1)
    try:
        assert native.load() is None
    finally:
        native.load.cache_clear()


def test_abi_number_matches_the_header() -> None:
    header = (Path(native.__file__).parent / "csrc" / "native.h").read_text()
    assert f"#define USMP_NATIVE_ABI {native.NATIVE_ABI}\n" in header
