"""Loading a Python file that is not in a package (a helper beside a test file, a benchmark
script): the tests run with pytest's importlib import mode, where test folders are not
packages."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_file(path: Path) -> ModuleType:
    """The module of the file at `path`, loaded once per process under a name made from its
    folder and stem (registered in sys.modules: dataclasses look their module up by name)."""
    name = f"{path.parent.name}_{path.stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
