"""``python -m bench.bench_stream``: ``engine.run_check`` beside ``engine.iter_check`` on N rows.

Each way scores the same generated rows with the bench's trivial check in a
process of its own (so each peak RSS is its own), side by side in one run:
seconds, rows/s and peak RSS. ``run_check`` holds every row and result;
``iter_check`` reads the rows as it goes and keeps a few jobs of them.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from bench.workload import TRIVIAL


def _score(way: str, rows: int) -> dict[str, float]:
    import engine

    data = ({"id": i, "model_output": f"answer {i}"} for i in range(rows))
    started = time.perf_counter()
    scored = (
        engine.iter_check(TRIVIAL, data) if way == "iter_check" else engine.run_check(TRIVIAL, data)
    )
    ok = sum(1 for r in scored if r.status.value == "ok")
    seconds = time.perf_counter() - started
    if ok != rows:
        raise SystemExit(f"{way}: {ok} of {rows} rows ok")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"seconds": seconds, "peak_rss_mb": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--child", choices=("run_check", "iter_check"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_score(args.child, args.rows)))
        return
    print("| way | rows | seconds | rows/s | peak RSS |\n| --- | ---: | ---: | ---: | ---: |")
    for way in ("run_check", "iter_check"):
        out = subprocess.run(
            [sys.executable, "-m", "bench.bench_stream", "--rows", str(args.rows), "--child", way],
            capture_output=True,
            text=True,
            check=True,
        )
        got = json.loads(out.stdout.strip().splitlines()[-1])
        rate = args.rows / got["seconds"]
        print(
            f"| engine.{way} | {args.rows:,} | {got['seconds']:.1f} | {rate:,.0f} | "
            f"{got['peak_rss_mb']:,.0f} MB |"
        )


if __name__ == "__main__":
    main()
