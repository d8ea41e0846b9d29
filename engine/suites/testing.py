"""Fail a test suite on a check's threshold: ``assert_scores`` and ``assert_suite``.

Both score rows here, through the same code path as ``scorebox run --local``
(built-ins in process, ``.py`` checks in the Docker sandbox, LLM judges on
``SCOREBOX_LLM_BASE_URL`` with the judge cache), apply the same gates as the
CLI (``fail_on``, thresholds, ``max_failures``) and raise ``AssertionError``
listing the broken gates and the failing rows::

    from engine.suites.testing import assert_scores

    def test_answers_mention_paris() -> None:
        assert_scores(
            [{"model_output": "Paris is the capital."}, {"model_output": "Lyon."}],
            [{"name": "regex_match", "params": {"pattern": "Paris"}, "threshold": 0.9}],
        )

``pytest --scorebox`` (:mod:`engine.suites.pytest_plugin`) runs ``scorebox.yaml`` the same way.
A misused helper (unknown check, bad params, bad rows) raises
:class:`engine.errors.InvalidRequestError`, an error rather than a test failure.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import InvalidRequestError
from engine.runs.export import Gates, check_value, evaluate
from engine.suites.names import DEFAULT_FAIL_ON

#: Failing rows shown per check in a failure message.
SHOW_ROWS = 10


@dataclass(frozen=True)
class ScoreReport:
    """What a passing :func:`assert_scores` returns: summaries, per-row records, values."""

    summaries: list[dict[str, Any]]
    records: list[dict[str, Any]]

    def value(self, check: str) -> float | None:
        """The gated value of ``check``: pass rate (bool) or mean score (numeric)."""
        return check_value([r for r in self.records if r.get("check") == check])


def _split_checks(
    checks: Sequence[str | Mapping[str, Any]],
) -> tuple[list[str | dict[str, Any]], dict[str, float]]:
    from engine.suites.file import threshold_key  # noqa: PLC0415 (pydantic only when used)

    refs: list[str | dict[str, Any]] = []
    thresholds: dict[str, float] = {}
    for check in checks:
        if isinstance(check, str):
            refs.append(check)
            continue
        ref = dict(check)
        if not isinstance(ref.get("name"), str):
            raise InvalidRequestError(f"{check!r}: a check mapping needs a name")
        threshold = ref.pop("threshold", None)
        if threshold is not None:
            thresholds[threshold_key(ref["name"])] = float(threshold)
        refs.append(ref)
    return refs, thresholds


def _short(value: Any, width: int = 100) -> str:
    """One line: the first of a multi-line text (an error's message, not its traceback)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return text if len(text) <= width else text[: width - 3] + "..."


def _failing(
    records: Sequence[Mapping[str, Any]], gates: Gates, check: str, whole: bool
) -> list[Mapping[str, Any]]:
    """``check``'s rows that broke a gate: a fail_on status; with ``whole`` (its threshold
    or max_failures broke) also false, or a numeric score below its threshold."""
    minimum = gates.thresholds.get(check)
    out = []
    for r in records:
        if r.get("check") != check:
            continue
        status, score = r.get("status"), r.get("score")
        below = (
            minimum is not None
            and isinstance(score, int | float)
            and not isinstance(score, bool)
            and score < minimum
        )
        if status in gates.fail_on or (whole and status == "ok" and (score is False or below)):
            out.append(r)
    return out


def _broken_thresholds(records: Sequence[Mapping[str, Any]], gates: Gates) -> set[str]:
    broken = set()
    for name, minimum in gates.thresholds.items():
        value = check_value([r for r in records if r.get("check") == name])
        if value is None or value < minimum:
            broken.add(name)
    return broken


def failure_message(records: Sequence[Mapping[str, Any]], gates: Gates) -> str | None:
    """The message of a failed gate check (None when every gate passes): the broken gates,
    then up to :data:`SHOW_ROWS` rows per check that broke them (a fail_on status; for a
    check below its threshold, or when max_failures broke: false, or a numeric score
    below the threshold)."""
    problems = evaluate(records, gates)
    if not problems:
        return None
    lines = [f"scorebox: {len(problems)} gate(s) failed"]
    lines += [f"  {p}" for p in problems]
    broken = _broken_thresholds(records, gates)
    every = gates.max_failures is not None
    checks = list(dict.fromkeys(str(r.get("check")) for r in records))
    for check in checks:
        failing = _failing(records, gates, check, whole=every or check in broken)
        if not failing:
            continue
        value = check_value([r for r in records if r.get("check") == check])
        shown = "-" if value is None else f"{value:.4g}"
        lines.append(f"{check} (value {shown}): {len(failing)} failing row(s)")
        for r in failing[:SHOW_ROWS]:
            rid = "" if r.get("row_id") is None else f" id={r['row_id']}"
            outcome = (
                f"score={r.get('score')!r}" if r.get("status") == "ok" else str(r.get("status"))
            )
            why = r.get("error") or r.get("explanation")
            lines.append(
                f"  row {r.get('row_index')}{rid}: {outcome}"
                + (f" ({_short(why)})" if why else "")
                + f"; model_output={_short(r.get('model_output') or '', 60)!r}"
            )
        if len(failing) > SHOW_ROWS:
            lines.append(f"  ... {len(failing) - SHOW_ROWS} more")
    return "\n".join(lines)


def _score(
    refs: Sequence[str | Mapping[str, Any]], rows: list[dict[str, Any]], no_cache: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    from engine.suites.local import run_local  # noqa: PLC0415 (the local scoring path)

    refs_list = [r if isinstance(r, str) else dict(r) for r in refs]
    return run_local(refs_list, rows, progress=False, no_cache=no_cache)


def load_rows(
    rows: Sequence[Mapping[str, Any]] | str | Path, mapping: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Rows as given, or read from a data file (.jsonl, .json, .csv, .tsv, .parquet)."""
    if isinstance(rows, str | Path):
        from engine.suites.data import read_rows  # noqa: PLC0415 (the data file reader)

        try:
            return read_rows(Path(rows), mapping)
        except OSError as exc:
            raise InvalidRequestError(f"{rows}: cannot read: {exc}") from exc
    if mapping:
        renamed = {column: field for field, column in mapping.items()}
        return [{renamed.get(k, k): v for k, v in row.items()} for row in rows]
    return [dict(row) for row in rows]


def assert_scores(
    rows: Sequence[Mapping[str, Any]] | str | Path,
    checks: Sequence[str | Mapping[str, Any]],
    *,
    thresholds: Mapping[str, float] | None = None,
    fail_on: Iterable[str] = DEFAULT_FAIL_ON,
    max_failures: int | None = None,
    mapping: Mapping[str, str] | None = None,
    no_cache: bool = False,
) -> ScoreReport:
    """Score ``rows`` with ``checks`` locally; raise ``AssertionError`` when a gate fails.

    ``rows``: row dicts, or a data file's path. ``checks``: what ``--check`` takes (a
    .py file, a built-in name, ``builtin:NAME``) or a mapping ``{name, params,
    threshold}``. ``thresholds``: ``{check: minimum}`` compared with the pass rate of a
    bool check or the mean score of a numeric one. ``fail_on``: statuses that fail the
    test on any row (``()`` for none). ``max_failures``: allow up to N failing rows
    instead. ``mapping``: row field -> column, like ``--map``.
    """
    __tracebackhide__ = True  # pytest shows the caller's line, not this helper's
    refs, inline = _split_checks(checks)
    gates = Gates(tuple(fail_on), {**inline, **(thresholds or {})}, max_failures)
    summaries, records = _score(refs, load_rows(rows, mapping), no_cache)
    message = failure_message(records, gates)
    if message is not None:
        raise AssertionError(message)
    return ScoreReport(summaries, records)


def assert_suite(path: str | Path = "scorebox.yaml", *, no_cache: bool = False) -> ScoreReport:
    """:func:`assert_scores` with everything from a suite file (data, map, checks with
    params and thresholds, fail_on, max_failures); outputs are not written."""
    __tracebackhide__ = True
    from engine.suites.file import load_suite  # noqa: PLC0415 (pydantic only when used)

    plan = load_suite(Path(path))
    if plan.data is None:
        raise InvalidRequestError(f"{path}: data: a suite run from a test needs `data:`")
    suite = plan.suite
    gates = Gates(tuple(suite.fail_on), dict(plan.thresholds), suite.max_failures)
    summaries, records = _score(
        plan.checks, load_rows(plan.data, {str(k): v for k, v in suite.map.items()}), no_cache
    )
    message = failure_message(records, gates)
    if message is not None:
        raise AssertionError(f"{path}: {message}")
    return ScoreReport(summaries, records)
