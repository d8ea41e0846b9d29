"""Export records and the one-file HTML report use a check's own pass flag."""

from __future__ import annotations

from engine.runs.export import FIELDS, check_value, html_report, passed, record, to_csv


def _result(**fields: object) -> dict[str, object]:
    return {"row_id": "r", "check": "tone", "version": 1, "status": "ok", **fields}


def test_passed_is_the_checks_flag_else_a_bool_score() -> None:
    assert passed(_result(score=0.9, passed=False)) is False
    assert passed(_result(score=0.1, passed=True)) is True
    assert passed(_result(score=True)) is True
    assert passed(_result(score=0.5)) is None
    assert passed({"status": "error", "score": None}) is None


def test_a_record_has_every_column_and_keeps_full_precision() -> None:
    out = record(3, _result(score=0.7926000000000001, model="m", metadata={"a": 1}), None)
    assert list(out) == list(FIELDS)
    assert out["score"] == 0.7926000000000001
    assert "0.7926000000000001" in to_csv([out])


def test_the_report_lists_a_row_that_failed_its_own_pass_flag() -> None:
    records = [
        record(0, _result(row_id="kept", score=0.95, passed=False), {"model_output": "x"}),
        record(1, _result(row_id="fine", score=0.2, passed=True), {"model_output": "y"}),
    ]
    page = html_report(records, "report")
    failing = page.split("<h2>Failing rows</h2>", 1)[1]
    assert "kept" in failing
    assert "fine" not in failing
    assert check_value(records) == 0.5  # the pass rate of the flags, not the mean score
