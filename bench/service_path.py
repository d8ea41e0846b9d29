"""The service path alone: ``--rows`` rows of the trivial check through ``POST /v1/runs``.

    python -m bench.service_path                        # SQLite, 100,000 rows
    python -m bench.service_path --database postgresql+psycopg://user:pw@host/db
    python -m bench.service_path --rows 20000 --json

The same measurement as ``python -m bench``'s service-path line (``http_side.service_run``):
a real ``scorebox serve`` in embedded mode, a one-row run first, then rows/s from the
submit until ``GET /v1/runs/{id}`` says succeeded and the server process's CPU (utime +
stime) per row. ``--database`` points the server at a database of your own (an empty one:
a tenant named ``bench`` is created in it); without it, SQLite in a temporary directory.
It needs Docker and the sandbox image, like the service.
"""

from __future__ import annotations

import argparse
import json
import os

from bench import http_side


def measure(rows: int, database: str | None = None, clients: int = 8) -> dict[str, float]:
    """One service-path run: seconds, rows/s and server CPU µs a row, with the load average."""
    env = {"SCOREBOX_DATABASE_URL": database} if database else None
    with http_side.Server(env=env, concurrent_jobs=clients) as server:
        seconds, cpu = http_side.service_run(server, rows)
    return {
        "rows": rows,
        "seconds": seconds,
        "rows_per_s": rows / seconds,
        "server_cpu_us_per_row": cpu / rows * 1e6,
        "load_1m": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the run")
    parser.add_argument("--database", help="a database URL (default: SQLite in a temp dir)")
    parser.add_argument("--clients", type=int, default=8, help="the tenant's concurrent jobs")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    result = measure(args.rows, args.database, args.clients)
    if args.json:
        print(json.dumps(result))
        return
    backend = "PostgreSQL" if args.database else "SQLite"
    print(
        f"{backend}: {result['rows']:,} rows in {result['seconds']:.2f} s "
        f"({result['rows_per_s']:,.0f} rows/s), server CPU "
        f"{result['server_cpu_us_per_row']:.1f} µs/row (load {result['load_1m']:.2f})"
    )


if __name__ == "__main__":
    main()
