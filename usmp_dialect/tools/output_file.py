"""Output files that appear only when a run succeeds, complete or not at all.

* `write_text_atomically` replaces a file through a temporary file: readers see the old file or
  the whole new one, never a prefix.
* `check_writable` fails early, before any work, for the usual mistakes (missing directory, a
  directory given as the file, a read-only file or directory).
* `write_output_file` is what passes call for their side outputs (`usmp-plan{report= svg=}`).
  Inside `deferring_output_files()` (the `usmp-opt` driver uses it) the text is only checked and
  held back; the driver writes everything with `DeferredOutputFiles.commit` once the whole run
  succeeded, so a later failing pass or target leaves no report behind. Outside it (a stock
  `xdsl-opt`, the API) the file is written atomically at once.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


class OutputFileError(Exception):
    """An output file that cannot be written; the message is one line naming it."""

    def __init__(self, path: str, error: OSError, option: str | None = None) -> None:
        self.path = path
        reason = error.strerror or str(error)
        what = f"{option}='{path}'" if option else f"output file '{path}'"
        super().__init__(f"cannot write {what}: {reason}")


def _os_error(code: int, path: str) -> OSError:
    return OSError(code, os.strerror(code), path)


def check_writable(path: str) -> None:
    """Raises `OSError` (with `strerror`) when `path` certainly cannot be written as a file."""
    if not path:
        raise _os_error(errno.ENOENT, path)
    if os.path.isdir(path):
        raise _os_error(errno.EISDIR, path)
    if os.path.exists(path) and not os.path.isfile(path):
        if not os.access(path, os.W_OK):  # a device or pipe is written in place
            raise _os_error(errno.EACCES, path)
        return
    destination = os.path.realpath(path)
    if os.path.exists(destination) and not os.access(destination, os.W_OK):
        raise _os_error(errno.EACCES, path)  # a read-only file stays read-only
    directory = os.path.dirname(destination) or os.curdir
    if not os.path.exists(directory):
        raise _os_error(errno.ENOENT, path)
    if not os.path.isdir(directory):
        raise _os_error(errno.ENOTDIR, path)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise _os_error(errno.EACCES, path)


_SLICE = 1 << 24


def _write_in_slices(stream: IO[Any], text: str | bytes) -> None:
    """Writes `text` a slice at a time: encoding a large C source (hundreds of MB of
    constants) at once would hold a second copy of it."""
    for start in range(0, len(text), _SLICE):
        stream.write(text[start : start + _SLICE])


def write_text_atomically(path: str, text: str | bytes) -> None:
    """Writes `text` (or bytes) to `path` so that readers see either the old file or the
    complete new one.

    A regular file (or a new one) is replaced through a temporary file in the same directory;
    anything else (`/dev/stdout`, a pipe) is written in place. Raises `OSError`.
    """
    if os.path.exists(path) and not os.path.isfile(path):
        if os.path.isdir(path):
            raise _os_error(errno.EISDIR, path)
        with open(path, "wb" if isinstance(text, bytes) else "w") as stream:
            stream.write(text)
        return
    destination = os.path.realpath(path)  # replace a symlink's target, not the link
    if os.path.exists(destination):
        mode = os.stat(destination).st_mode & 0o7777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    descriptor, temporary = tempfile.mkstemp(
        dir=os.path.dirname(destination), prefix=f".{os.path.basename(destination)}."
    )
    try:
        with os.fdopen(descriptor, "wb" if isinstance(text, bytes) else "w") as stream:
            _write_in_slices(stream, text)
        os.chmod(temporary, mode)
        os.replace(temporary, destination)
    except BaseException:
        os.unlink(temporary)
        raise


class DeferredOutputFiles:
    """Output files held back until the run succeeded (the last text given for a path wins)."""

    def __init__(self) -> None:
        self._texts: dict[str, tuple[str, str | None]] = {}

    def add(self, path: str, text: str, option: str | None) -> None:
        self._texts.pop(path, None)
        self._texts[path] = (text, option)

    def commit(self) -> None:
        """Writes every held file atomically, in the order given; raises `OutputFileError`."""
        texts, self._texts = self._texts, {}
        for path, (text, option) in texts.items():
            try:
                write_text_atomically(path, text)
            except OSError as error:
                raise OutputFileError(path, error, option) from None


_deferred: DeferredOutputFiles | None = None


@contextmanager
def deferring_output_files() -> Iterator[DeferredOutputFiles]:
    """Within this block `write_output_file` only checks and holds files; commit them at the end
    of a successful run (leaving the block without committing discards them)."""
    global _deferred
    previous, _deferred = _deferred, DeferredOutputFiles()
    try:
        yield _deferred
    finally:
        _deferred = previous


def write_output_file(path: str, text: str, option: str | None = None) -> None:
    """Writes (or, inside `deferring_output_files`, checks and holds) a side output file.

    Raises `OutputFileError`, whose one-line message names the file by the pass `option` that
    gave it (`report='out/plan.json'`) or as an output file.
    """
    try:
        check_writable(path)
        if _deferred is not None:
            _deferred.add(path, text, option)
        else:
            write_text_atomically(path, text)
    except OSError as error:
        raise OutputFileError(path, error, option) from None
