"""Compare two runs: rows matched by id (or input), per-check deltas with a paired bootstrap.

The statistics are pure (:func:`paired_bootstrap`, :func:`compare_check`); only
:func:`compare_runs` reads the store. The bootstrap resamples the matched rows
with a fixed seed, so the same two runs always give the same interval.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.errors import InvalidRequestError
from engine.storage import Run, RunStore
from engine.storage.records import StoredResult

#: Bootstrap resamples (enough for a stable 95% interval on a few thousand rows).
RESAMPLES = 1000
SEED = 20261123
#: Changed rows listed per check (pass -> fail first).
CHANGED_LIMIT = 200
#: At most this many matched rows take part in a comparison (the rest are counted, not read).
MAX_MATCHED = 100_000


@dataclass(frozen=True)
class Interval:
    """A delta (b - a) with its 95% bootstrap interval; significant when 0 lies outside."""

    delta: float
    low: float
    high: float

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0


@dataclass(frozen=True)
class ChangedRow:
    """A matched row whose result differs between the two runs."""

    key: str
    row_a: int
    row_b: int
    status_a: str
    status_b: str
    score_a: bool | int | float | None
    score_b: bool | int | float | None
    kind: str  # pass_to_fail | fail_to_pass | status | score
    passed_a: bool | None = None  # the pass flag (a check's own, else a bool score)
    passed_b: bool | None = None


@dataclass(frozen=True)
class CheckComparison:
    """One check's comparison over the matched rows."""

    check: str
    matched: int
    scored: int  # matched rows with an ok numeric score on both sides
    mean_a: float | None
    mean_b: float | None
    mean_delta: Interval | None
    pass_rate_a: float | None
    pass_rate_b: float | None
    pass_rate_delta: Interval | None
    changed: list[ChangedRow] = field(default_factory=list)
    changed_total: int = 0


@dataclass(frozen=True)
class RunComparison:
    run_a: str
    run_b: str
    matched_by: str  # id | input
    matched: int
    only_a: int
    only_b: int
    checks: list[CheckComparison]


def _quantile(ordered: Sequence[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def paired_bootstrap(
    a: Sequence[float], b: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED
) -> Interval:
    """Mean of ``b - a`` over paired values, with a 95% percentile bootstrap interval."""
    if len(a) != len(b) or not a:
        raise ValueError("paired_bootstrap needs two non-empty sequences of the same length")
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    # statistics, not secrecy: a fixed seed makes the interval reproducible
    rng = random.Random(seed)  # nosec B311
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    return Interval(sum(diffs) / n, _quantile(means, 0.025), _quantile(means, 0.975))


def _number(result: StoredResult) -> float | None:
    if result.status != "ok" or result.score is None:
        return None
    return float(result.score)


def passed(result: StoredResult) -> bool | None:
    """Whether an ok result passes: the check's own pass flag (promptfoo, graders) where it
    has one, else a bool score; None for a number score or a row that did not score."""
    if result.status != "ok":
        return None
    if result.passed is not None:
        return result.passed
    return result.score if isinstance(result.score, bool) else None


def _kind(a: StoredResult, b: StoredResult) -> str | None:
    flag_a, flag_b = passed(a), passed(b)
    if flag_a is not None and flag_b is not None:
        if flag_a and not flag_b:
            return "pass_to_fail"
        if flag_b and not flag_a:
            return "fail_to_pass"
        return None if a.score == b.score else "score"
    if a.status != b.status:
        return "status"
    if a.score != b.score:
        return "score"
    return None


# the order changed rows are listed in ("pass" here is a test outcome, not a password)
_ORDER = {"pass_to_fail": 0, "status": 1, "score": 2, "fail_to_pass": 3}  # nosec B105


def compare_check(
    check: str,
    pairs: Sequence[tuple[str, StoredResult, StoredResult]],
    resamples: int = RESAMPLES,
) -> CheckComparison:
    """Deltas of one check over matched ``(key, result in a, result in b)`` pairs."""
    xs: list[float] = []
    ys: list[float] = []
    pa: list[float] = []
    pb: list[float] = []
    changed: list[ChangedRow] = []
    for key, ra, rb in pairs:
        x, y = _number(ra), _number(rb)
        if x is not None and y is not None:
            xs.append(x)
            ys.append(y)
        flag_a, flag_b = passed(ra), passed(rb)
        if flag_a is not None and flag_b is not None:
            pa.append(float(flag_a))
            pb.append(float(flag_b))
        kind = _kind(ra, rb)
        if kind is not None:
            changed.append(
                ChangedRow(
                    key,
                    ra.row_index,
                    rb.row_index,
                    ra.status,
                    rb.status,
                    ra.score,
                    rb.score,
                    kind,
                    flag_a,
                    flag_b,
                )
            )
    changed.sort(key=lambda c: (_ORDER[c.kind], c.row_a))
    mean_delta = paired_bootstrap(xs, ys, resamples) if xs else None
    pass_delta = paired_bootstrap(pa, pb, resamples) if pa else None
    return CheckComparison(
        check=check,
        matched=len(pairs),
        scored=len(xs),
        mean_a=sum(xs) / len(xs) if xs else None,
        mean_b=sum(ys) / len(ys) if ys else None,
        mean_delta=mean_delta,
        pass_rate_a=sum(pa) / len(pa) if pa else None,
        pass_rate_b=sum(pb) / len(pb) if pb else None,
        pass_rate_delta=pass_delta,
        changed=changed[:CHANGED_LIMIT],
        changed_total=len(changed),
    )


def _input_key(data: Mapping[str, Any]) -> str:
    fields = {k: data.get(k) for k in ("model_input", "scenario_input", "scenario_result")}
    return hashlib.sha256(json.dumps(fields, sort_keys=True, default=str).encode()).hexdigest()


def match_rows(
    rows_a: Mapping[int, Mapping[str, Any]], rows_b: Mapping[int, Mapping[str, Any]]
) -> tuple[str, list[tuple[str, int, int]]]:
    """Pairs ``(key, row in a, row in b)``: by client id when both runs have ids, else by input."""
    use_ids = all(d.get("id") is not None for d in rows_a.values()) and all(
        d.get("id") is not None for d in rows_b.values()
    )

    def key(data: Mapping[str, Any]) -> str:
        return str(data["id"]) if use_ids else _input_key(data)

    index_b: dict[str, int] = {}
    for i, data in sorted(rows_b.items()):
        index_b.setdefault(key(data), i)
    pairs: list[tuple[str, int, int]] = []
    seen: set[str] = set()
    for i, data in sorted(rows_a.items()):
        k = key(data)
        if k in index_b and k not in seen:
            seen.add(k)
            pairs.append((k if use_ids else f"row {i}", i, index_b[k]))
    return ("id" if use_ids else "input"), pairs


def _results(store: RunStore, run: Run, check_index: int) -> dict[int, StoredResult]:
    out: dict[int, StoredResult] = {}
    offset = 0
    while offset < MAX_MATCHED:
        page = store.results_page(run.id, offset, 5000, check_index)
        if not page:
            break
        out.update((r.row_index, r) for r in page)
        offset += len(page)
    return out


def compare_runs(store: RunStore, tenant_id: str, run_a: str, run_b: str) -> RunComparison:
    """Compare two of a tenant's runs on the checks they share (by name). 404 for another's run."""
    a = store.get_run(tenant_id, run_a)
    b = store.get_run(tenant_id, run_b)
    names_b = {c.name: i for i, c in enumerate(b.checks)}
    shared = [(i, c.name, names_b[c.name]) for i, c in enumerate(a.checks) if c.name in names_b]
    if not shared:
        raise InvalidRequestError(
            f"runs {a.id} and {b.id} share no check: compare two runs of the same checks"
        )
    limit_a = list(range(min(a.row_count, MAX_MATCHED)))
    limit_b = list(range(min(b.row_count, MAX_MATCHED)))
    matched_by, pairs = match_rows(store.load_rows(a.id, limit_a), store.load_rows(b.id, limit_b))
    checks = []
    for ia, name, ib in shared:
        ra, rb = _results(store, a, ia), _results(store, b, ib)
        triples = [(k, ra[x], rb[y]) for k, x, y in pairs if x in ra and y in rb]
        checks.append(compare_check(name, triples))
    return RunComparison(
        run_a=a.id,
        run_b=b.id,
        matched_by=matched_by,
        matched=len(pairs),
        only_a=a.row_count - len(pairs),
        only_b=b.row_count - len(pairs),
        checks=checks,
    )
