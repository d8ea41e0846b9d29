"""What a finished run tells a person: why rows did not score, which gates broke, and the
rows that broke them.

``scorebox run`` prints :func:`row_reasons` under its summary table and, when a gate
fails, :func:`broken_gates` and :func:`failing_rows`; ``assert_scores`` raises with the
same lines (:func:`engine.suites.testing.failure_message`). One rendering, so a CI log
and a pytest failure read alike.

Besides the gates of :func:`engine.runs.export.evaluate` (``fail_on``, thresholds,
``max_failures``), a check none of whose rows scored ``ok`` breaks the run whenever some
``fail_on`` status is set (the default): a check returning ``"PASS"`` gets
``invalid_score`` on every row and must not pass CI.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from engine.runs.export import Gates, check_value, evaluate

#: Failing rows shown per check in a failure message.
SHOW_ROWS = 10
#: Distinct messages shown per check under the summary table.
SHOW_MESSAGES = 3
#: Row references shown per message.
SHOW_ROW_REFS = 5


def short(value: Any, width: int = 100) -> str:
    """One line: the first of a multi-line text (an error's message, not its traceback)."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    text = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return text if len(text) <= width else text[: width - 3] + "..."


def _reason(error: str, width: int = 160) -> str:
    """An error's first line and, if the harness gave one, the check's last frame."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    head = short(error, width)
    frames = [line for line in lines[1:] if line.startswith("line ")]
    return f"{head} ({frames[-1]})" if frames else head


def _checks(records: Sequence[Mapping[str, Any]]) -> list[str]:
    return list(dict.fromkeys(str(r.get("check")) for r in records))


def _counts(rows: Sequence[Mapping[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in rows:
        counts[str(r.get("status"))] = counts.get(str(r.get("status")), 0) + 1
    return ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))


def never_scored(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """The checks of ``records`` none of whose rows scored ``ok``."""
    return [
        check
        for check in _checks(records)
        if not any(r.get("status") == "ok" for r in records if str(r.get("check")) == check)
    ]


def broken_gates(records: Sequence[Mapping[str, Any]], gates: Gates) -> list[str]:
    """Every broken gate, one line each: :func:`~engine.runs.export.evaluate`'s, then each
    check with no ``ok`` row (unless ``fail_on`` is empty, ``--fail-on none``, or a
    ``fail_on`` line already names its rows)."""
    problems = evaluate(records, gates)
    if gates.fail_on:
        for check in never_scored(records):
            mine = [r for r in records if str(r.get("check")) == check]
            if gates.max_failures is None and any(r.get("status") in gates.fail_on for r in mine):
                continue  # the fail_on line above already broke the run for these rows
            problems.append(
                f"{check}: no row scored ok ({_counts(mine)}); a check that never scores "
                "cannot pass"
            )
    return problems


def _row_ref(r: Mapping[str, Any]) -> str:
    rid = r.get("row_id")
    return f"{r.get('row_index')}" + ("" if rid is None else f" (id={rid})")


def row_reasons(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Per check, its first :data:`SHOW_MESSAGES` distinct messages of rows that did not
    score (error, invalid_score, judge_error, ...), each with the rows that gave it.
    Empty when every row scored."""
    lines: list[str] = []
    for check in _checks(records):
        bad = [
            r
            for r in records
            if str(r.get("check")) == check and r.get("status") not in ("ok", None)
        ]
        if not bad:
            continue
        by_reason: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for r in bad:
            reason = _reason(str(r.get("error") or r.get("explanation") or "(no message)"))
            by_reason.setdefault((str(r.get("status")), reason), []).append(r)
        total = sum(1 for r in records if str(r.get("check")) == check)
        lines.append(f"{check}: {len(bad)} of {total} rows did not score ({_counts(bad)})")
        for (status, reason), rows in list(by_reason.items())[:SHOW_MESSAGES]:
            refs = ", ".join(_row_ref(r) for r in rows[:SHOW_ROW_REFS])
            more = f" and {len(rows) - SHOW_ROW_REFS} more" if len(rows) > SHOW_ROW_REFS else ""
            noun = "row" if len(rows) == 1 else "rows"
            lines.append(f"  {status}, {noun} {refs}{more}: {reason}")
        if len(by_reason) > SHOW_MESSAGES:
            lines.append(f"  ... {len(by_reason) - SHOW_MESSAGES} more distinct message(s)")
    return lines


def _failing(
    records: Sequence[Mapping[str, Any]], gates: Gates, check: str, whole: bool, unscored: bool
) -> list[Mapping[str, Any]]:
    """``check``'s rows that broke a gate: a fail_on status; with ``whole`` (its threshold
    or max_failures broke) also false, or a numeric score below its threshold; with
    ``unscored`` (no row scored ok) every row."""
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
        if (
            unscored
            or status in gates.fail_on
            or (whole and status == "ok" and (score is False or below))
        ):
            out.append(r)
    return out


def _broken_thresholds(records: Sequence[Mapping[str, Any]], gates: Gates) -> set[str]:
    broken = set()
    for name, minimum in gates.thresholds.items():
        value = check_value([r for r in records if r.get("check") == name])
        if value is None or value < minimum:
            broken.add(name)
    return broken


def failing_rows(records: Sequence[Mapping[str, Any]], gates: Gates) -> list[str]:
    """Up to :data:`SHOW_ROWS` rows per check that broke a gate: a fail_on status; for a
    check below its threshold, or when max_failures broke, also false or a numeric score
    below the threshold; for a check that never scored, every row."""
    broken = _broken_thresholds(records, gates)
    unscored = set(never_scored(records)) if gates.fail_on else set()
    every = gates.max_failures is not None
    lines: list[str] = []
    for check in _checks(records):
        failing = _failing(
            records, gates, check, whole=every or check in broken, unscored=check in unscored
        )
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
                + (f" ({short(why)})" if why else "")
                + f"; model_output={short(r.get('model_output') or '', 60)!r}"
            )
        if len(failing) > SHOW_ROWS:
            lines.append(f"  ... {len(failing) - SHOW_ROWS} more")
    return lines
