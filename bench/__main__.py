"""``python -m bench``: scorebox beside the in-process limit and its peers, in one run.

Writes ``bench/results/latest.md`` (tables and the targets, met or not),
``latest.png`` (chart) and ``latest.json`` (every sample's summary). See bench/README.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
from pathlib import Path

from bench.suite import QUICK, Bench, Config

RESULTS = Path(__file__).resolve().parent / "results"


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part.replace("_", "").replace(",", "")) for part in text.split(":"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: give row counts like 10000:100000") from exc
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: row counts must be positive")
    return sizes


def parse(argv: list[str] | None = None) -> tuple[Config, Path, bool]:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few calls (a smoke test)"
    )
    parser.add_argument("--calls", type=int, help="single-row calls per latency line (default 200)")
    parser.add_argument(
        "--sizes", type=_sizes, help="throughput row counts, e.g. 10000:100000:1000000"
    )
    parser.add_argument("--kinds", help="checks to run: trivial,realistic (default both)")
    parser.add_argument(
        "--repeats", type=int, help="repeats of every throughput figure (default 5/3/1 by size)"
    )
    parser.add_argument(
        "--never-max-rows", type=int, help="skip REUSE=never above this many rows (it is slow)"
    )
    parser.add_argument("--no-peers", action="store_true", help="skip epicbox and llm-sandbox")
    parser.add_argument("--no-http", action="store_true", help="skip POST /v1/score")
    parser.add_argument(
        "--runsc", choices=("auto", "yes", "no"), help="runc/runsc lines (default auto)"
    )
    parser.add_argument("--runsc-rows", type=int, help="rows of the runc/runsc throughput line")
    parser.add_argument(
        "--distributed",
        action=argparse.BooleanOptionalAction,
        help="bench_distributed's table (default: on, off with --quick)",
    )
    parser.add_argument("--distributed-rows", type=int, help="rows of the distributed runs")
    parser.add_argument(
        "--online",
        action=argparse.BooleanOptionalAction,
        help="OTLP ingestion and online scoring's freshness and backfill (default: on)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="stop at the first failed measurement"
    )
    parser.add_argument("--no-chart", action="store_true", help="skip latest.png (no matplotlib)")
    parser.add_argument(
        "--out", type=Path, default=RESULTS, help=f"output directory (default {RESULTS})"
    )
    args = parser.parse_args(argv)
    config = dataclasses.replace(QUICK) if args.quick else Config()
    updates = {
        "calls": args.calls,
        "sizes": args.sizes,
        "kinds": tuple(args.kinds.split(",")) if args.kinds else None,
        "repeats_override": args.repeats,
        "runsc": args.runsc,
        "runsc_rows": args.runsc_rows,
        "distributed_rows": args.distributed_rows,
        "never_max_rows": args.never_max_rows,
    }
    config = dataclasses.replace(config, **{k: v for k, v in updates.items() if v is not None})
    if args.no_peers:
        config.peers = False
    if args.no_http:
        config.http = False
    if args.distributed is not None:
        config.distributed = args.distributed
    if args.online is not None:
        config.online = args.online
    if args.strict:
        config.strict = True
    return config, args.out, not args.no_chart


def main(argv: list[str] | None = None) -> int:
    from bench import report

    config, out, with_chart = parse(argv)
    # SIGTERM acts as Ctrl-C: what was measured is written, the serve child and this
    # run's containers are removed
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    previous = report.read_previous(out)
    results = Bench(config, log=lambda line: print(line, file=sys.stderr, flush=True)).run()
    results.previous = previous
    for path in report.write(results, out, with_chart=with_chart):
        print(path)
    return 1 if results.failures and config.strict else 0


if __name__ == "__main__":
    sys.exit(main())
