"""Benchmark: a full agreement report on 10,000 labelled rows with 2,000 bootstrap resamples.

Run: ``.venv/bin/python -m bench.bench_calibration [--rows N] [--resamples N] [--repeats N]``.
Writes ``bench/results/calibration.md``. Goal: under 2 s per report. Three reports: a
pass/fail check against bool labels, a float check against bool labels (AUC, the sweep
and a threshold on a split), a 1-5 check against ordinal labels with 5 % of the rows
labelled twice (alpha and pairwise kappa). The first call also imports scipy, timed apart.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.calibration.report import LabelledItem, LabelSpec, ReportOptions, agreement_report

RESULTS = Path(__file__).resolve().parent / "results" / "calibration.md"
GOAL_S = 2.0


def _bool_items(n: int, rng: np.random.Generator) -> list[LabelledItem]:
    human = rng.random(n) < 0.5
    check = np.where(rng.random(n) < 0.8, human, ~human)
    return [
        LabelledItem({"run": "r", "row": i}, [("ann", bool(h))], score=bool(c))
        for i, (h, c) in enumerate(zip(human, check, strict=True))
    ]


def _float_items(n: int, rng: np.random.Generator) -> list[LabelledItem]:
    human = rng.random(n) < 0.5
    scores = np.round(human * 0.3 + rng.random(n) * 0.7, 3)
    return [
        LabelledItem({"run": "r", "row": i}, [("ann", bool(h))], score=float(s))
        for i, (h, s) in enumerate(zip(human, scores, strict=True))
    ]


def _ordinal_items(n: int, rng: np.random.Generator) -> list[LabelledItem]:
    human = rng.integers(1, 6, n)
    check = np.clip(human + rng.integers(-1, 2, n), 1, 5)
    items = []
    for i, (h, c) in enumerate(zip(human, check, strict=True)):
        labels = [("ann", int(h))]
        if i % 20 == 0:
            labels.append(("bob", int(np.clip(h + rng.integers(-1, 2), 1, 5))))
        items.append(LabelledItem({"run": "r", "row": i}, labels, score=int(c)))
    return items


CASES: dict[str, tuple[LabelSpec, Callable[[int, np.random.Generator], list[LabelledItem]]]] = {
    "pass/fail check, bool labels": (LabelSpec("helpful", "bool"), _bool_items),
    "float check, bool labels": (LabelSpec("helpful", "bool"), _float_items),
    "1-5 check, ordinal labels, 5 % twice": (
        LabelSpec("quality", "ordinal", (1, 2, 3, 4, 5)),
        _ordinal_items,
    ),
}


def main(argv: list[str] | None = None) -> int:
    """Time each report ``--repeats`` times; print and write the medians."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_calibration")
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    options = ReportOptions(n_resamples=args.resamples)
    start = time.perf_counter()
    import scipy.stats  # type: ignore[import-untyped]  # noqa: F401  # timed: once a process

    import_s = time.perf_counter() - start
    lines = [
        "# Agreement report: time per report",
        "",
        f"{args.rows:,} labelled rows, {args.resamples:,} bootstrap resamples (BCa), "
        f"median of {args.repeats}; goal under {GOAL_S:.0f} s. "
        f"`import scipy.stats` once per process: {import_s:.2f} s.",
        "",
        "| report | median s | min s | goal met |",
        "|---|---:|---:|---|",
    ]
    for name, (spec, make) in CASES.items():
        items = make(args.rows, np.random.default_rng(0))
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            agreement_report(items, spec, options)
            times.append(time.perf_counter() - t0)
        median = statistics.median(times)
        lines.append(
            f"| {name} | {median:.3f} | {min(times):.3f} | {'yes' if median < GOAL_S else 'no'} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
