"""Writing a project directory all at once, or not at all.

The files are written into a fresh temporary directory next to the destination, which is then
renamed into place: a reader (or a failed run) never sees a half-written project. A directory
that already holds a project written by usmp-dialect (its `metadata.json` names the generator)
is replaced the same way (renamed aside, then removed); an empty directory is replaced too. Any
other existing path is refused, so a mistyped `-o` cannot delete someone's files.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path


class ProjectDirectoryError(Exception):
    """The project directory cannot be written; the message is one line naming it."""


def _is_project(path: Path) -> bool:
    try:
        metadata = json.loads((path / "metadata.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(metadata, dict) and str(metadata.get("generator", "")).startswith(
        "usmp-dialect"
    )


def check_project_directory(directory: str) -> None:
    """Raises `ProjectDirectoryError` when `directory` cannot become the project (before any
    work is done)."""
    path = Path(directory)
    if not directory:
        raise ProjectDirectoryError("cannot write project directory '': no name")
    if Path.cwd().resolve().is_relative_to(path.resolve()):
        raise ProjectDirectoryError(
            f"cannot write project directory '{directory}': it is the current directory or "
            "one of its parents"
        )
    if path.exists() or path.is_symlink():
        if not path.is_dir():
            raise ProjectDirectoryError(
                f"cannot write project directory '{directory}': it exists and is not a directory"
            )
        if any(path.iterdir()) and not _is_project(path):
            raise ProjectDirectoryError(
                f"cannot write project directory '{directory}': it exists and is not empty "
                "(only a project written by usmp-opt is replaced)"
            )
    parent = path.resolve().parent
    if not parent.is_dir():
        raise ProjectDirectoryError(
            f"cannot write project directory '{directory}': no directory '{parent}'"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ProjectDirectoryError(
            f"cannot write project directory '{directory}': '{parent}' is not writable"
        )


def write_project_directory(directory: str | os.PathLike[str], files: Mapping[str, str]) -> None:
    """Writes `files` (relative path -> text) as the directory `directory`, atomically."""
    check_project_directory(str(directory))
    path = Path(directory)
    destination = path.resolve()
    parent = destination.parent
    staging = Path(tempfile.mkdtemp(dir=parent, prefix=f".{destination.name}."))
    try:
        for name, text in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "w", encoding="utf-8", newline="\n") as stream:
                stream.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)
        if destination.exists():
            aside = Path(tempfile.mkdtemp(dir=parent, prefix=f".{destination.name}.old."))
            os.replace(destination, aside / "project")
            try:
                os.replace(staging, destination)
            except BaseException:
                os.replace(aside / "project", destination)
                raise
            finally:
                shutil.rmtree(aside, ignore_errors=True)
        else:
            os.replace(staging, destination)
    except OSError as error:
        raise ProjectDirectoryError(
            f"cannot write project directory '{directory}': {error.strerror or error}"
        ) from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
