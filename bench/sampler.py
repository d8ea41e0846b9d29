"""A sampling profile of every thread of this process (cProfile sees only one thread).

Every ``interval`` seconds it records each thread's stack; a function's *self*
share is how often it was on top, its *total* share how often it was anywhere on
a stack. Threads parked on a lock or a queue (idle pool workers, a caller joining
its futures) are counted as ``idle`` and left out of the shares; a thread blocked
reading a socket stays in (it waits on a container, which is the point).
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

_IDLE_FILES = frozenset({"threading.py", "queue.py"})
# a pool worker blocked in SimpleQueue.get (C code: its own frame is on top)
_IDLE_TOPS = frozenset({("thread.py", "_worker")})


def _where(frame: FrameType) -> str:
    code = frame.f_code
    path = Path(code.co_filename)
    short = "/".join(path.parts[-2:]) if len(path.parts) >= 2 else path.name
    return f"{code.co_name} ({short}:{code.co_firstlineno})"


@dataclass
class Profile:
    """Counts of samples per function, self and total, over every thread but the sampler."""

    samples: int = 0
    idle: int = 0
    self_counts: Counter[str] = field(default_factory=Counter)
    total_counts: Counter[str] = field(default_factory=Counter)

    def top(self, count: int = 15) -> list[tuple[str, float, float]]:
        """(function, self share, total share) of the ``count`` functions most often on top."""
        if not self.samples:
            return []
        return [
            (name, n / self.samples, self.total_counts[name] / self.samples)
            for name, n in self.self_counts.most_common(count)
        ]


class Sampler:
    """``with Sampler() as s: ...`` then ``s.profile.top()``."""

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.profile = Profile()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval):
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                file = Path(frame.f_code.co_filename).name
                if file in _IDLE_FILES or (file, frame.f_code.co_name) in _IDLE_TOPS:
                    self.profile.idle += 1
                    continue
                self.profile.samples += 1
                self.profile.self_counts[_where(frame)] += 1
                seen: set[str] = set()
                current: FrameType | None = frame
                while current is not None:
                    name = _where(current)
                    if name not in seen:
                        seen.add(name)
                        self.profile.total_counts[name] += 1
                    current = current.f_back
