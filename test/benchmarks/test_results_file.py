"""Benchmark scripts sharing one results file: each replaces only its own section."""

from __future__ import annotations

from pathlib import Path

from usmp_dialect.testing.results_file import write_section


def test_a_section_replaces_only_itself(tmp_path: Path) -> None:
    results = tmp_path / "onnx_models.md"
    results.write_text("# Title\n\n## A\n\ntable a\n")
    write_section(results, "## The IREE route\n\nfirst\n")
    assert results.read_text() == "# Title\n\n## A\n\ntable a\n\n## The IREE route\n\nfirst\n"
    results.write_text(results.read_text() + "\n## B\n\ntable b\n")
    write_section(results, "## The IREE route\n\nsecond\n")
    assert results.read_text() == (
        "# Title\n\n## A\n\ntable a\n\n## The IREE route\n\nsecond\n\n## B\n\ntable b\n"
    )
    write_section(results, "## A\n\nnew a\n")
    assert results.read_text().startswith("# Title\n\n## A\n\nnew a\n\n## The IREE route\n")


def test_a_new_file_starts_with_the_title(tmp_path: Path) -> None:
    results = tmp_path / "new.md"
    write_section(results, "## A\n\ntable a\n", title="# Title\n")
    assert results.read_text() == "# Title\n\n## A\n\ntable a\n"
    write_section(results, "## B\n\ntable b\n", title="# Other\n")
    assert results.read_text() == "# Title\n\n## A\n\ntable a\n\n## B\n\ntable b\n"


def test_a_heading_that_only_starts_another_is_not_it(tmp_path: Path) -> None:
    results = tmp_path / "r.md"
    results.write_text("## Float graphs, before\n\nold\n")
    write_section(results, "## Float graphs\n\nnew\n")
    assert results.read_text() == "## Float graphs, before\n\nold\n\n## Float graphs\n\nnew\n"
