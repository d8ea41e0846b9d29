"""What the host tells the harness of a check's source, so that the check's process need
not work it out again on every job: whether its format is Okareo's.

The harness's child finds a check's format from its syntax tree (engine/contract/formats),
and parsing the source in a process just forked costs it most of a millisecond of copied
pages, on every job. The host finds the format the same way, with the same code, once per
source and entry; where it is Okareo's (``evaluate`` or a ``Check`` class), the job says so
and the child goes straight to the entry. Anything else (another format, a source the
formats cannot place) is left to the child, as before.
"""

from __future__ import annotations

import ast
import functools

from engine.contract import formats

#: Distinct check sources remembered (each is a check version the node scored lately).
REMEMBERED_SOURCES = 256


@functools.lru_cache(maxsize=REMEMBERED_SOURCES)
def okareo_source(source: str, entry: str | None) -> bool:
    """Whether ``source`` (with the entry named at upload) is an Okareo check, as the
    harness's child would find it (:func:`engine.harness.child.load_check`)."""
    try:
        tree = ast.parse(source)
        detected = formats.detect(*formats.shapes_of(tree), entry=entry)
    except (SyntaxError, ValueError, RecursionError, MemoryError, formats.FormatError):
        return False
    return detected.format is formats.Format.OKAREO
