"""The cyclic garbage collector held off while a run's rows are read in bulk.

Submitting a run of 100,000 rows makes several objects a row (the parsed JSON, a Row, its
stored dump) that all live until the rows are stored. Every 700 of them start a young
collection, and as they pile up the collector's full collections walk the whole heap (the
app's modules, the rows so far) again and again: a fifth of the server's CPU a row on the
service path. None of these objects is garbage in a cycle, so the collector finds nothing
to free. :func:`paused_gc` turns it off for such a phase; reference counting still frees
everything as usual, and the collector runs again as soon as the last phase ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
#: Phases under way (several requests at once share one pause); the state before the first.
_paused = 0
_was_enabled = False


@contextmanager
def paused_gc() -> Iterator[None]:
    """Hold off the cyclic garbage collector until the block (and any other paused block
    under way in this process) ends; one that was already off stays off."""
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
