"""The README's "From model to firmware" section: its Python example runs as printed, and the
first command of the README writes the kws project."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tflite")

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def test_the_python_example_runs(tmp_path: Path) -> None:
    (example,) = re.findall(r"```python\n(.*?)```", _section("From model to firmware"), re.S)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "example.py").write_text(example)
    ran = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0] == "5696 33584"  # as the comment in the example says
    assert lines[1] == "[1, 49, 10, 1] 5696"
    written = tmp_path / "kws-from-python"
    assert (written / "kws.c").is_file() and (written / "metadata.json").is_file()
    assert (written / "cortex-m" / "arm-none-eabi.cmake").is_file()


def test_the_first_command_writes_the_kws_project() -> None:
    first = README.split("```sh\n", 1)[1].splitlines()[0]
    assert first.endswith(
        ".venv/bin/usmp-opt examples/mlperf_tiny/kws_ref_model.tflite "
        "-t 'project{prefix=kws}' -o kws"
    )
    assert "pip install -q -e '.[tflm]'" in first
