"""Benchmark result files shared by several scripts: each script owns one `## ` section of the
markdown file and replaces only that one."""

from __future__ import annotations

from pathlib import Path


def write_section(output: Path, section: str, title: str = "") -> None:
    """Replaces the section of `output` headed by the first line of `section` (up to the next
    `## ` heading), or appends it; a new file starts with `title`."""
    heading = section.splitlines()[0]
    text = output.read_text() if output.exists() else title
    start = text.find(heading + "\n")
    if start < 0:
        output.write_text((text.rstrip("\n") + "\n\n" if text.strip() else "") + section)
        return
    end = text.find("\n## ", start + len(heading))
    rest = text[end + 1 :] if end >= 0 else ""
    output.write_text(text[:start] + section + ("\n" + rest if rest else ""))
