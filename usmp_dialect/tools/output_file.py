"""Writing a command's output file only once the whole output is known."""

import os
import tempfile


def write_text_atomically(path: str, text: str) -> None:
    """Writes `text` to `path` so that readers see either the old file or the complete new one.

    A regular file (or a new one) is replaced through a temporary file in the same directory;
    anything else (`/dev/stdout`, a pipe) is written in place. Raises `OSError`.
    """
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "w") as stream:
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
        with os.fdopen(descriptor, "w") as stream:
            stream.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, destination)
    except BaseException:
        os.unlink(temporary)
        raise
