"""One builder per environment key on a host.

A thread lock serialises this process's builders of a key; a file lock beside the cache
serialises the host's processes (API servers and workers sharing a Docker engine). Both
are waited for up to one deadline; whoever gets the key second finds the image built.
"""

from __future__ import annotations

import contextlib
import fcntl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

#: How often a waiter tries the file lock again.
_POLL_SECONDS = 0.2


class KeyLocks:
    """The build locks of one cache: ``<root>/<key>.lock`` files, and a thread lock per key."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def path(self, key: str) -> Path:
        """The file lock of ``key``."""
        return self.root / f"{key}.lock"

    @contextlib.contextmanager
    def hold(
        self, key: str, wait_seconds: float, timed_out: Callable[[], Exception]
    ) -> Iterator[None]:
        """Hold ``key`` in this process and on this host; after ``wait_seconds`` without
        it, raise ``timed_out()``."""
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        deadline = time.monotonic() + wait_seconds
        if not lock.acquire(timeout=wait_seconds):
            raise timed_out()
        try:
            path = self.path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as handle:
                while True:
                    try:
                        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise timed_out() from None
                        time.sleep(_POLL_SECONDS)
                try:
                    yield
                finally:
                    fcntl.flock(handle, fcntl.LOCK_UN)
        finally:
            lock.release()

    def held_elsewhere(self, key: str) -> bool:
        """Whether another holder (a process on this host) has ``key``'s file lock."""
        path = self.path(key)
        if not path.exists():
            return False
        with path.open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
        return False
