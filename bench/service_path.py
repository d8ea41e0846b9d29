"""The service path alone: ``--rows`` rows of the trivial check through ``POST /v1/runs``.

    python -m bench.service_path                        # SQLite, 100,000 rows
    python -m bench.service_path --database postgresql+psycopg://user:pw@host/db
    python -m bench.service_path --rows 20000 --json
    python -m bench.service_path --stages               # and the server's CPU by stage

The same measurement as ``python -m bench``'s service-path line (``http_side.service_run``):
a real ``scorebox serve`` in embedded mode, a one-row run first, then rows/s from the
submit until ``GET /v1/runs/{id}`` says succeeded and the server process's CPU (utime +
stime) per row. ``--database`` points the server at a database of your own (an empty one:
a tenant named ``bench`` is created in it); without it, SQLite in a temporary directory.
It needs Docker and the sandbox image, like the service.

``--stages`` also gives the server's CPU (and wall time) a row by stage of the run: storing
it, reading a chunk's rows, the sandbox job's host side, the container's socket, writing
results, and the rest (``bench.stage_cpu`` says how). The wrappers cost a little: read the
CPU a row of a run without ``--stages`` as the service path's figure.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import http_side, stage_cpu


def measure(
    rows: int, database: str | None = None, clients: int = 8, *, stages: bool = False
) -> dict[str, Any]:
    """One service-path run: seconds, rows/s and server CPU µs a row, with the load average;
    with ``stages``, the server's CPU by stage (:func:`bench.stage_cpu.per_row`) too."""
    env = {"SCOREBOX_DATABASE_URL": database} if database else None
    with tempfile.TemporaryDirectory(prefix="scorebox-stages-") as tmp:
        sums = Path(tmp) / "stages.json"
        prelude = stage_cpu.PRELUDE.format(path=str(sums)) if stages else None
        reads: list[dict[str, dict[str, float]]] = []

        def probe() -> None:
            time.sleep(1.0)  # the sums are written twice a second
            reads.append(stage_cpu.read(sums))

        with http_side.Server(env=env, concurrent_jobs=clients, prelude=prelude) as server:
            seconds, cpu = http_side.service_run(server, rows, probe=probe if stages else None)
    result: dict[str, Any] = {
        "rows": rows,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "server_cpu_us_per_row": cpu / rows * 1e6,
        "load_1m": os.getloadavg()[0],
    }
    if stages:
        result["stages"] = stage_cpu.per_row(reads[0], reads[1], rows, cpu)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the run")
    parser.add_argument("--database", help="a database URL (default: SQLite in a temp dir)")
    parser.add_argument("--clients", type=int, default=8, help="the tenant's concurrent jobs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--stages", action="store_true", help="also the server's CPU a row by stage of the run"
    )
    args = parser.parse_args()
    result = measure(args.rows, args.database, args.clients, stages=args.stages)
    if args.json:
        print(json.dumps(result))
        return
    backend = "PostgreSQL" if args.database else "SQLite"
    print(
        f"{backend}: {result['rows']:,} rows in {result['seconds']:.2f} s "
        f"({result['rows_per_s']:,.0f} rows/s), server CPU "
        f"{result['server_cpu_us_per_row']:.1f} µs/row (load {result['load_1m']:.2f})"
    )
    for line in result.get("stages", []):
        wall = line["wall_us_per_row"]
        print(
            f"  {line['cpu_us_per_row']:6.2f} µs/row CPU"
            + (f", {wall:6.2f} wall" if wall is not None else " " * 13)
            + f"  {line['stage']}"
            + (
                f" ({line['calls']:,} call{'' if line['calls'] == 1 else 's'})"
                if line["calls"] is not None
                else ""
            )
        )


if __name__ == "__main__":
    main()
