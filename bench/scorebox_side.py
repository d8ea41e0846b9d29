"""scorebox measured through its public Python API, in this process.

Everything here goes through names users rely on: ``engine.run_check``, the
runner class of ``engine.sandbox.runner`` (``SandboxRunner``, or ``Engine`` before it),
``CodeCheck`` and ``Settings`` fields such as ``reuse``, ``pool_size`` and
``runtime``. A setting this build does not know is recorded as missing rather
than silently ignored.
"""

from __future__ import annotations

import importlib
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bench import workload
from bench.measure import PeakRSS, call_latencies

LABEL = "scorebox.bench"


class BenchError(RuntimeError):
    """A measured system did not do what it was asked (a wrong or failed result)."""


def setting_names() -> set[str]:
    from engine.settings import Settings

    return set(Settings.model_fields)


def make_settings(**updates: Any) -> Any:
    """``Settings`` from the environment, the bench label, and the ``updates`` this build knows."""
    from engine.settings import Settings

    known = setting_names()
    missing = sorted(set(updates) - known)
    if missing:
        raise BenchError(f"this scorebox has no setting {', '.join(missing)}")
    labels = {**Settings().container_labels, LABEL: "1"}
    return Settings(container_labels=labels, **updates)


def reuse_check() -> dict[str, Any]:
    """Settings for warm per-check workers; BenchError when this build has none."""
    if "reuse" not in setting_names():
        raise BenchError("this scorebox has no SCOREBOX_REUSE (warm per-check workers)")
    return {"reuse": "check"}


def reuse_never() -> dict[str, Any]:
    """Settings for one container per job (what every job got before SCOREBOX_REUSE)."""
    return {"reuse": "never"} if "reuse" in setting_names() else {}


def open_runner(settings: Any) -> Any:
    """The runner class behind ``engine.run_check`` (``SandboxRunner``, or ``Engine`` before it)."""
    module = importlib.import_module("engine.sandbox.runner")
    cls = getattr(module, "SandboxRunner", None) or module.Engine
    return cls(settings)


def code_check(source: str) -> Any:
    from engine.sandbox.runner import CodeCheck

    return CodeCheck(source=source)


def expect_ok(results: Sequence[Any], count: int) -> None:
    """Every one of ``count`` results is ``ok``; otherwise BenchError with the first failure."""
    if len(results) != count:
        raise BenchError(f"{len(results)} results for {count} rows")
    for result in results:
        if str(getattr(result.status, "value", result.status)) != "ok":
            raise BenchError(f"a row ended {result.status}: {result.error}")


ONE_ROW = workload.distinct_rows()[7]


def in_process_latency(calls: int) -> list[float]:
    """One row of the trivial check called directly in this process: the limit."""
    evaluate = workload.load(workload.TRIVIAL)
    text = ONE_ROW["model_output"]
    return call_latencies(lambda: evaluate(model_output=text), calls)


def run_check_latency(calls: int) -> list[float]:
    """``engine.run_check(source, [row])`` called again and again, as a notebook would."""
    import engine

    def once() -> None:
        expect_ok(
            engine.run_check(workload.TRIVIAL, [{"model_output": ONE_ROW["model_output"]}]), 1
        )

    return call_latencies(once, calls)


def runner_latency(settings: Any, calls: int, warmup: int = 3) -> list[float]:
    """One row a call on one open runner made with ``settings``."""
    runner = open_runner(settings)
    check = code_check(workload.TRIVIAL)
    row = [{"model_output": ONE_ROW["model_output"]}]
    try:
        return call_latencies(lambda: expect_ok(runner.run_check(check, row), 1), calls, warmup)
    finally:
        runner.close()


def in_process_throughput(kind: str, count: int) -> tuple[float, float]:
    """(seconds, peak RSS MB) of the plain loop over ``count`` rows in this process."""
    evaluate = workload.load(workload.CHECKS[kind])
    params = workload.PARAMS[kind]
    data = workload.rows(count)
    with PeakRSS() as memory:
        started = time.perf_counter()
        out = [evaluate(**{p: row[p] for p in params}) for row in data]
        elapsed = time.perf_counter() - started
    if len(out) != count:
        raise BenchError("the in-process loop lost rows")
    return elapsed, memory.peak_mb


def cpu_seconds() -> float:
    """CPU seconds (user and system, every thread) this process has used so far."""
    return time.process_time()


def runner_throughput(settings: Any, kind: str, count: int) -> tuple[float, float]:
    """(seconds, peak RSS MB of this process) scoring ``count`` rows on a fresh runner."""
    seconds, peak, _ = runner_throughput_cpu(settings, kind, count)
    return seconds, peak


def runner_throughput_cpu(settings: Any, kind: str, count: int) -> tuple[float, float, float]:
    """(seconds, peak RSS MB, CPU seconds of this process) of ``runner.run_check`` on
    ``count`` rows on a fresh runner.

    The runner is opened (and a first one-row job run, so the image and pool are
    ready) before the clock starts; the rows exist before it too, so the figure is
    the runner's own cost.
    """
    runner = open_runner(settings)
    check = code_check(workload.CHECKS[kind])
    data = workload.rows(count)
    try:
        expect_ok(runner.run_check(check, data[:1]), 1)
        return _timed(lambda: expect_ok(runner.run_check(check, data), count))
    finally:
        runner.close()


def _timed(score: Callable[[], None]) -> tuple[float, float, float]:
    """(seconds, peak RSS MB, CPU seconds of this process) of ``score()``."""
    with PeakRSS() as memory:
        cpu = cpu_seconds()
        started = time.perf_counter()
        score()
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds() - cpu
    return elapsed, memory.peak_mb, cpu


def columns(kind: str, count: int) -> dict[str, list[str]]:
    """``count`` rows of the workload as columns: one list per field the ``kind`` check takes."""
    data = workload.rows(count)
    return {p: [row[p] for row in data] for p in workload.PARAMS[kind]}


def expect_table_ok(table: Any, count: int) -> None:
    """A ``ScoreTable`` of ``count`` rows, every one ``ok``; otherwise BenchError."""
    if len(table) != count:
        raise BenchError(f"{len(table)} results for {count} rows")
    counts = table.counts()
    if counts != {"ok": count}:
        first = next((i for i, s in enumerate(table.status) if str(s) != "ok"), None)
        why = f": {table.error[first]}" if first is not None else ""
        raise BenchError(f"rows ended {counts}{why}")


def table_throughput(settings: Any, kind: str, count: int) -> tuple[float, float, float]:
    """(seconds, peak RSS MB, CPU seconds of this process) of ``runner.score_table`` on
    ``count`` rows given as columns, on a fresh runner.

    Measured as :func:`runner_throughput_cpu`: the runner has scored one row and the
    columns exist before the clock starts; every row must come back ``ok``.
    """
    runner = open_runner(settings)
    if not hasattr(runner, "score_table"):
        runner.close()
        raise BenchError("this scorebox has no score_table")
    check = code_check(workload.CHECKS[kind])
    data = columns(kind, count)
    try:
        expect_table_ok(runner.score_table(check, {k: v[:1] for k, v in data.items()}), 1)
        return _timed(lambda: expect_table_ok(runner.score_table(check, data), count))
    finally:
        runner.close()


def remove_own_containers(pid: int | None = None) -> int:
    """Remove the sandbox containers that process ``pid`` (default: this one) left behind."""
    import os

    owner = f"{socket.gethostname()}:{pid or os.getpid()}"
    ids = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=scorebox.owner={owner}"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], capture_output=True, check=False)
    return len(ids)


def docker_runtimes() -> list[str]:
    """The OCI runtimes the Docker engine offers (empty when Docker does not answer)."""
    import json

    out = subprocess.run(
        ["docker", "info", "--format", "{{json .Runtimes}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return []
    try:
        runtimes: Mapping[str, Any] = json.loads(out.stdout)
    except ValueError:
        return []
    return sorted(runtimes)
