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
import hashlib

from engine.contract import formats

#: Distinct check sources remembered (each is a check version the node scored lately),
#: by digest: a source may be 256 KiB, and the answer is one bit.
REMEMBERED_SOURCES = 1024

_found: dict[tuple[bytes, str | None], bool] = {}


def okareo_source(source: str, entry: str | None) -> bool:
    """Whether ``source`` (with the entry named at upload) is an Okareo check, as the
    harness's child would find it (:func:`engine.harness.child.load_check`)."""
    digest = hashlib.blake2b(source.encode(errors="surrogatepass"), digest_size=16).digest()
    key = (digest, entry)
    found = _found.get(key)
    if found is None:
        found = _is_okareo(source, entry)
        if len(_found) >= REMEMBERED_SOURCES:
            _found.clear()  # scoring threads may race here: forgetting is always safe
        _found[key] = found
    return found


def _is_okareo(source: str, entry: str | None) -> bool:
    try:
        detected = formats.detect(*formats.shapes_of(ast.parse(source)), entry=entry)
    except (SyntaxError, ValueError, RecursionError, MemoryError, formats.FormatError):
        return False
    return detected.format is formats.Format.OKAREO
