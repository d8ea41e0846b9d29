"""Output files of a run (``-o``, a suite's ``output:``), made ready before any scoring.

A run that scored everything must not be lost to a typo in an output path: the parent
directories are created and each file is opened for writing up front, so an unwritable
path stops the run before its first row, with one line that names the path.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

from engine.errors import InvalidRequestError


class OutputPathError(InvalidRequestError):
    """Raised when an output file of a run cannot be written (checked before scoring)."""


def describe_os_error(exc: OSError) -> str:
    """One line: the path (or paths) and the system's reason, without a traceback."""
    reason = exc.strerror or str(exc)
    names = [str(n) for n in (exc.filename, exc.filename2) if n is not None]
    return f"{' -> '.join(names)}: {reason}" if names else reason


def prepare_outputs(paths: Iterable[Path]) -> None:
    """Create each path's parent directories and make sure the file can be written.

    A file that did not exist is created and removed again, so a run that stops later
    leaves nothing behind; an existing one is opened for appending (not truncated).
    Raises :class:`OutputPathError` naming the path and the reason.
    """
    for path in paths:
        try:
            if path.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
            for parent in path.parents:
                if parent.exists() and not parent.is_dir():
                    raise NotADirectoryError(
                        errno.ENOTDIR, "a file where a directory is needed", str(parent)
                    )
            path.parent.mkdir(parents=True, exist_ok=True)
            existed = path.exists()
            with path.open("ab"):
                pass
            if not existed:
                path.unlink()
        except OSError as exc:
            raise OutputPathError(
                f"cannot write the output file {path}: {describe_os_error(exc)} "
                "(fix the path or its permissions; nothing was scored)"
            ) from exc
