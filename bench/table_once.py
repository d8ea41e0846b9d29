"""One ``score_table`` line in a process of its own.

``python -m bench.table_once KIND ROWS [--reuse check]`` scores ``ROWS`` rows of the
``KIND`` workload check through ``runner.score_table`` (as
:func:`bench.scorebox_side.table_throughput` does: a fresh runner that has scored one
row, the columns built before the clock starts) and prints one JSON object:
``{"seconds": ..., "peak_rss_mb": ..., "cpu_seconds": ...}``.

The bench runs each repeat of its ``score_table`` lines this way so that the peak RSS is
that of a process doing only this (Python, scorebox, the rows' columns and the call),
not of the bench process carrying what its earlier lines left on its heap.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

from bench import scorebox_side as sb
from bench import workload


def measure(kind: str, rows: int, reuse: str) -> dict[str, float]:
    """The figures of one ``score_table`` over ``rows`` rows in this process."""
    updates = sb.reuse_check() if reuse == "check" else {}
    seconds, peak, cpu = sb.table_throughput(sb.make_settings(**updates), kind, rows)
    return {"seconds": seconds, "peak_rss_mb": peak, "cpu_seconds": cpu}


def in_child(kind: str, rows: int, reuse: str) -> tuple[float, float, float]:
    """(seconds, peak RSS MB, CPU seconds) of :func:`measure` run by a fresh interpreter
    of this tree; :class:`bench.scorebox_side.BenchError` with the child's error."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    command = [sys.executable, "-m", "bench.table_once", kind, str(rows), "--reuse", reuse]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise sb.BenchError(f"score_table in a fresh process failed: {last}")
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures["seconds"], figures["peak_rss_mb"], figures["cpu_seconds"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("kind", choices=sorted(workload.CHECKS))
    parser.add_argument("rows", type=int)
    parser.add_argument("--reuse", choices=["check", "default"], default="check")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.kind, args.rows, args.reuse)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
