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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import InvalidRequestError
from engine.names import DEFAULT_FAIL_ON
from engine.runs.export import Gates, check_value
from engine.suites.gates import broken_gates, failing_rows


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


def failure_message(records: Sequence[Mapping[str, Any]], gates: Gates) -> str | None:
    """The message of a failed gate check (None when every gate passes): the broken gates
    (:func:`engine.suites.gates.broken_gates`), then the rows that broke them
    (:func:`engine.suites.gates.failing_rows`)."""
    problems = broken_gates(records, gates)
    if not problems:
        return None
    lines = [f"scorebox: {len(problems)} gate(s) failed"]
    lines += [f"  {p}" for p in problems]
    lines += failing_rows(records, gates)
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
