"""A rule's series: per check version, per time bucket, the count, mean and pass rate of
its scores. Pure: the points come from the score store."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence

__all__ = ["parse_bucket", "series"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
#: The most buckets one answer may have.
MAX_BUCKETS = 10_000

Point = tuple[str, int | None, int, float | None, bool | None]
Bucket = tuple[int, int, float | None, float | None]


def parse_bucket(text: str) -> int:
    """A bucket width such as ``5m``, ``1h`` or ``1d`` in nanoseconds."""
    found = re.fullmatch(r"(\d+)([smhd])", text)
    if found is None or int(found.group(1)) <= 0:
        raise ValueError("bucket: a positive number and a unit, s, m, h or d (e.g. 1h)")
    return int(found.group(1)) * _UNITS[found.group(2)] * 1_000_000_000


def series(
    points: Sequence[Point], width: int
) -> list[tuple[tuple[str, int | None], list[Bucket]]]:
    """Group (check, check version, start, score, passed) points: per check version, the
    buckets by start, each (bucket start, count, mean of scores, pass rate among scores
    with a verdict)."""
    groups: dict[tuple[str, int | None], dict[int, list[tuple[float | None, bool | None]]]]
    groups = defaultdict(lambda: defaultdict(list))
    for check, version, start, score, passed in points:
        groups[(check, version)][start - start % width].append((score, passed))
    out = []
    for key in sorted(groups, key=lambda k: (k[0], k[1] or 0)):
        buckets: list[Bucket] = []
        for start in sorted(groups[key]):
            values = groups[key][start]
            scores = [s for s, _ in values if s is not None]
            verdicts = [p for _, p in values if p is not None]
            buckets.append(
                (
                    start,
                    len(values),
                    sum(scores) / len(scores) if scores else None,
                    sum(verdicts) / len(verdicts) if verdicts else None,
                )
            )
        out.append((key, buckets))
    return out
