"""Timing, statistics and peak memory: what every figure of ``python -m bench`` is made of."""

from __future__ import annotations

import json
import math
import os
import re
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def percentile(samples: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``samples``, linearly interpolated."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class Figure:
    """One measured line: samples in ``unit`` and what they are.

    ``kind`` is ``latency`` (samples are per-call milliseconds: report p50/p95),
    ``rate`` (samples are repeats of a throughput: report the median and min-max)
    or ``value`` (samples are repeats of any other quantity).
    """

    section: str
    name: str
    unit: str
    kind: str
    samples: list[float]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def p95(self) -> float:
        return percentile(self.samples, 95)

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "section": self.section,
            "name": self.name,
            "unit": self.unit,
            "kind": self.kind,
            "n": len(self.samples),
            "median": self.median,
            "min": self.low,
            "max": self.high,
            **self.extra,
        }
        if self.kind == "latency":
            out["p95"] = self.p95
        return out


def call_latencies(fn: Callable[[], object], calls: int, warmup: int = 3) -> list[float]:
    """Milliseconds of each of ``calls`` sequential calls of ``fn``, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _status_kib(field_name: str) -> int | None:
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field_name}:\s+(\d+)\s+kB", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def rss_mb() -> float:
    """This process's resident memory now, in MB (0 where /proc is missing)."""
    kib = _status_kib("VmRSS")
    return (kib or 0) / 1024


class PeakRSS:
    """The peak resident memory of this process over a ``with`` block, in MB.

    Linux resets the high-water mark (``VmHWM``) when 5 is written to
    ``/proc/self/clear_refs``; where that is refused a 20 ms sampling thread
    stands in (it can miss a short spike).
    """

    def __init__(self) -> None:
        self.peak_mb = 0.0
        self.before_mb = 0.0
        self._exact = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeakRSS:
        self.before_mb = rss_mb()
        try:
            Path("/proc/self/clear_refs").write_text("5")
            self._exact = _status_kib("VmHWM") is not None
        except OSError:
            self._exact = False
        if not self._exact:
            self._thread = threading.Thread(target=self._sample, daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak_mb = max(self.peak_mb, rss_mb())

    def __exit__(self, *exc: object) -> None:
        if self._exact:
            self.peak_mb = (_status_kib("VmHWM") or 0) / 1024
        else:
            self._stop.set()
            if self._thread is not None:
                self._thread.join()
            self.peak_mb = max(self.peak_mb, rss_mb())


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """``with stopwatch() as t:`` leaves the elapsed seconds in ``t[0]``."""
    box: list[float] = []
    started = time.perf_counter()
    try:
        yield box
    finally:
        box.append(time.perf_counter() - started)


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages (zeros where unknown)."""
    try:
        return os.getloadavg()
    except OSError:
        return (0.0, 0.0, 0.0)


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (field 3 onwards)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2 :].split()


def process_cpu_seconds(pid: int) -> float:
    """CPU seconds (utime + stime) process ``pid`` and its live descendants have used.

    Read from ``/proc/<pid>/stat`` in clock ticks (``SC_CLK_TCK``); OSError where
    ``/proc`` is missing or the process is gone.
    """
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int(_stat_fields(int(entry.name))[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    total = 0
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            fields = _stat_fields(current)
        except OSError:
            if current == pid:
                raise
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
        todo += children.get(current, [])
    return total / tick


def write_result(out: Path, stem: str, result: dict[str, Any], text: str) -> None:
    """A bench module's figures as ``<stem>.json`` and its report as ``<stem>.md`` in
    ``out``, and the report on stdout."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n")
    (out / f"{stem}.md").write_text(text)
    print(text)
