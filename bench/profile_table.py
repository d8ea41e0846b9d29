"""Profile ``score_table`` on the host: wall time, peak RSS and where the host's CPU goes.

Run ``python -m bench.profile_table --rows 1000000`` (Docker and the sandbox image as for
``python -m bench``). The trivial check scores ``--rows`` rows given as columns on a fresh
runner with warm per-check containers (``REUSE=check``), as the bench's score_table line
does: the runner scores one row and the columns exist before the clock starts.

It prints the wall time, the peak RSS of this process over the call (``VmHWM``, reset
before it) and over its life (``ru_maxrss``), the load average, the host CPU per row and,
with ``--profile``, a cProfile of every thread that ran a job plus the caller's (the
profiler's own cost inflates the wall time of that run, so the figures come from a run
without it).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench import scorebox_side as sb
from bench import workload
from bench.measure import PeakRSS


@contextmanager
def profiled_jobs(sink: list[cProfile.Profile]) -> Iterator[None]:
    """Every ``run_job`` call (one per job, on the runner's threads) under its own profiler."""
    from engine.sandbox.runner import SandboxRunner

    original = SandboxRunner.run_job
    lock = threading.Lock()

    def run_job(self: Any, *args: Any, **kwargs: Any) -> Any:
        profile = cProfile.Profile()
        try:
            return profile.runcall(original, self, *args, **kwargs)
        finally:
            with lock:
                sink.append(profile)

    SandboxRunner.run_job = run_job  # type: ignore[method-assign]
    try:
        yield
    finally:
        SandboxRunner.run_job = original  # type: ignore[method-assign]


def run(rows: int, profile: bool, top: int) -> dict[str, Any]:
    """One ``score_table`` over ``rows`` trivial rows; the figures (and the profile text)."""
    reuse = sb.reuse_check()
    runner = sb.open_runner(sb.make_settings(**reuse))
    check = sb.code_check(workload.CHECKS["trivial"])
    data = sb.columns("trivial", rows)
    profiles: list[cProfile.Profile] = []
    try:
        sb.expect_table_ok(runner.score_table(check, {k: v[:1] for k, v in data.items()}), 1)
        load = os.getloadavg()[0]
        call: Callable[[], None] = lambda: sb.expect_table_ok(  # noqa: E731
            runner.score_table(check, data), rows
        )
        with PeakRSS() as memory:
            cpu = time.process_time()
            started = time.perf_counter()
            if profile:
                main = cProfile.Profile()
                with profiled_jobs(profiles):
                    main.runcall(call)
                profiles.append(main)
            else:
                call()
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu
    finally:
        runner.close()
    out: dict[str, Any] = {
        "rows": rows,
        "wall_s": round(wall, 2),
        "rows_per_s": round(rows / wall),
        "host_cpu_us_per_row": round(cpu / rows * 1e6, 2),
        "peak_rss_mb": round(memory.peak_mb),
        "rss_before_mb": round(memory.before_mb),
        "ru_maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    if profiles:
        stats = pstats.Stats(profiles[0], stream=io.StringIO())
        for more in profiles[1:]:
            stats.add(more)
        text = io.StringIO()
        stats.stream = text  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(top)
        out["profile"] = text.getvalue()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--profile", action="store_true", help="also a cProfile run")
    parser.add_argument("--top", type=int, default=35, help="functions the profile lists")
    args = parser.parse_args()
    figures = run(args.rows, profile=False, top=args.top)
    print({k: v for k, v in figures.items() if k != "profile"}, flush=True)
    if args.profile:
        profiled = run(args.rows, profile=True, top=args.top)
        print(profiled["profile"])


if __name__ == "__main__":
    main()
